package toolnexus

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// stressCalls is the number of calls per goroutine: TN_STRESS_CALLS, else
// the 10,000 (about 10 s here), or 1,000 under -race (a few seconds).
func stressCalls(t *testing.T) int {
	if v := os.Getenv("TN_STRESS_CALLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("TN_STRESS_CALLS must be a positive integer, got %q", v)
		}
		return n
	}
	if raceEnabled {
		return 1000
	}
	return 10000
}

// 16 goroutines share one toolkit and mix a Go tool, an HTTP tool against a
// keep-alive server on 127.0.0.1 and the skill tool; every result is checked
// against what that call must return.
func TestStressMixedTools(t *testing.T) {
	const goroutines = 16
	calls := stressCalls(t)

	var served atomic.Int64
	var conns atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, ok := strings.CutPrefix(r.URL.Path, "/echo/")
			if !ok || r.Method != http.MethodGet {
				http.Error(w, "no route", http.StatusNotFound)
				return
			}
			served.Add(1)
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("echo:" + id))
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	config := map[string]any{
		"builtins": false,
		"skills":   []map[string]any{{"name": "greet", "description": "Greets.", "content": "Say hello."}},
		"httpTools": []map[string]any{{
			"name": "echo", "description": "Echoes an id.", "method": "GET",
			"url": "http://" + ln.Addr().String() + "/echo/{id}",
		}},
	}
	tk, err := Build(context.Background(), config)
	if err != nil {
		t.Fatal(err)
	}
	handlesBefore := LiveHandles()
	var hostCalls atomic.Int64
	err = tk.Register("double", "Doubles n.", map[string]any{"type": "object"}, func(_ context.Context, args json.RawMessage) (string, error) {
		hostCalls.Add(1)
		var in struct{ N int64 }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		return strconv.FormatInt(2*in.N, 10), nil
	})
	if err != nil {
		t.Fatal(err)
	}

	var failures atomic.Int64
	fail := func(format string, a ...any) {
		if failures.Add(1) <= 20 {
			t.Errorf(format, a...)
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				id := int64(g)*1_000_000 + int64(i)
				switch (i + g) % 3 {
				case 0:
					out, err := tk.ExecuteJSON(context.Background(), "double", fmt.Sprintf(`{"n":%d}`, id), nil)
					want := fmt.Sprintf(`{"output":"%d","isError":false}`, 2*id)
					if err != nil || string(out) != want {
						fail("goroutine %d call %d (double): %s %v, want %s", g, i, out, err, want)
					}
				case 1:
					res, err := tk.Execute(context.Background(), "echo", map[string]string{"id": strconv.FormatInt(id, 10)})
					if err != nil || res.IsError || res.Output != "echo:"+strconv.FormatInt(id, 10) ||
						fmt.Sprint(res.Metadata["status"]) != "200" {
						fail("goroutine %d call %d (echo): %+v %v", g, i, res, err)
					}
				default:
					res, err := tk.Execute(context.Background(), "skill", map[string]string{"name": "greet"})
					if err != nil || res.IsError || !strings.Contains(res.Output, "Say hello.") {
						fail("goroutine %d call %d (skill): %+v %v", g, i, res, err)
					}
				}
			}
		}(g)
	}
	wg.Wait()

	var wantHost, wantHTTP int64
	for g := 0; g < goroutines; g++ {
		for i := 0; i < calls; i++ {
			switch (i + g) % 3 {
			case 0:
				wantHost++
			case 1:
				wantHTTP++
			}
		}
	}
	if hostCalls.Load() != wantHost {
		t.Errorf("the Go tool ran %d times, want %d", hostCalls.Load(), wantHost)
	}
	if served.Load() != wantHTTP {
		t.Errorf("the server answered %d requests, want %d", served.Load(), wantHTTP)
	}
	// Keep-alive: connections are reused, never one per call.
	if c := conns.Load(); c > 2*goroutines {
		t.Errorf("%d connections for %d HTTP calls: keep-alive is not working", c, wantHTTP)
	}
	if err := tk.Close(); err != nil {
		t.Fatal(err)
	}
	if LiveHandles() != handlesBefore {
		t.Errorf("live handles %d after Close, want %d", LiveHandles(), handlesBefore)
	}
	t.Logf("%d goroutines x %d calls: %d Go tool, %d HTTP over %d connection(s), %d skill",
		goroutines, calls, wantHost, wantHTTP, conns.Load(), int64(goroutines*calls)-wantHost-wantHTTP)
}
