package toolnexus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// rpc POSTs one JSON-RPC request to a stateless streamable-HTTP server and
// returns the decoded answer.
func rpc(t *testing.T, url string, id int, method string, params any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("accept", "application/json, text/event-stream")
	req.Header.Set("mcp-protocol-version", "2025-06-18")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var answer map[string]any
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatalf("%s: HTTP %d, not JSON: %q", method, res.StatusCode, raw)
	}
	return answer
}

func TestServeExposesTheToolkitOverStreamableHTTP(t *testing.T) {
	tk := mustBuild(t, map[string]any{"builtins": map[string]any{"tools": map[string]any{"bash": true}}})
	err := tk.Register("shout", "Upper-case the text.", `{"type":"object","properties":{"text":{"type":"string"}}}`,
		func(ctx context.Context, args json.RawMessage) (string, error) {
			var a struct{ Text string }
			_ = json.Unmarshal(args, &a)
			return strings.ToUpper(a.Text), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var heard []CallEvent
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := tk.Serve(ctx, ServeOptions{
		Addr: "127.0.0.1:0", Name: "go-gw", Version: "3.0.0",
		Tools: []string{"shout", "bash", "ghost"},
		OnCall: func(e CallEvent) {
			mu.Lock()
			heard = append(heard, e)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL()
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("URL() = %q", url)
	}

	init := rpc(t, url, 1, "initialize", map[string]any{"protocolVersion": "2025-06-18",
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "go-test", "version": "1"}})
	info, _ := init["result"].(map[string]any)["serverInfo"].(map[string]any)
	if info["name"] != "go-gw" || info["version"] != "3.0.0" {
		t.Fatalf("serverInfo = %v", init)
	}
	list := rpc(t, url, 2, "tools/list", map[string]any{})
	var names []string
	for _, tool := range list["result"].(map[string]any)["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "bash,shout" {
		t.Fatalf("tools/list names = %v", names)
	}
	call := rpc(t, url, 3, "tools/call", map[string]any{"name": "shout", "arguments": map[string]any{"text": "hey"}})
	content := call["result"].(map[string]any)["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["text"] != "HEY" {
		t.Fatalf("tools/call = %v", call)
	}
	unknown := rpc(t, url, 4, "tools/call", map[string]any{"name": "read", "arguments": map[string]any{}})
	if code := unknown["error"].(map[string]any)["code"]; code != float64(-32602) {
		t.Fatalf("an unexposed tool: %v", unknown)
	}
	mu.Lock()
	got := append([]CallEvent(nil), heard...)
	mu.Unlock()
	if len(got) != 1 || got[0].Name != "shout" || got[0].Source != "native" || got[0].IsError {
		t.Fatalf("OnCall heard %+v", got)
	}

	// Cancelling the context closes the server.
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("still listening after the context was cancelled")
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.Close() // idempotent
	if n := func() int { liveHooks.Lock(); defer liveHooks.Unlock(); return len(liveHooks.m) }(); n != 0 {
		t.Fatalf("%d OnCall handles outlived their server", n)
	}
}

func TestServeErrorsNameTheOptionAndClosingTheToolkitStopsItsServers(t *testing.T) {
	tk, err := Build(context.Background(), map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tk.Serve(context.Background(), ServeOptions{Addr: "not-an-address", OnCall: func(CallEvent) {}})
	e := wantCode(t, err, "invalid_config", StatusInvalidConfig)
	if !strings.Contains(e.Message, "not-an-address") {
		t.Fatalf("message %q does not name the address", e.Message)
	}
	srv, err := tk.Serve(context.Background(), ServeOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(srv.URL(), "http://"), "/mcp")
	tk.Close()
	if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		c.Close()
		t.Fatal("a server outlived its toolkit's Close")
	}
	srv.Close()
}

// SetIOThreads before the library's runtime starts takes effect (the refusal
// afterwards names the count running); in a child process of its own, since
// any earlier test of this binary has started the runtime already.
func TestSetIOThreadsBeforeTheFirstBuildSetsTheWorkerCount(t *testing.T) {
	const name = "TestSetIOThreadsBeforeTheFirstBuildSetsTheWorkerCount"
	if os.Getenv("TN_GO_IO_THREADS_CHILD") != name {
		cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "TN_GO_IO_THREADS_CHILD="+name)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
			t.Fatalf("the child failed: %v\n%s", err, out)
		}
		return
	}
	for _, bad := range []int{0, 65, -1} {
		var e *Error
		if err := SetIOThreads(bad); !errors.As(err, &e) || e.Code != "invalid_argument" ||
			!strings.Contains(e.Message, "threads must be 1 to 64") {
			t.Fatalf("SetIOThreads(%d) = %v", bad, err)
		}
	}
	if err := SetIOThreads(1); err != nil {
		t.Fatalf("SetIOThreads(1) before any build: %v", err)
	}
	tk, err := Build(context.Background(), map[string]any{"builtins": true})
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	srv, err := tk.Serve(context.Background(), ServeOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	err = SetIOThreads(3)
	var e *Error
	if !errors.As(err, &e) || e.Code != "invalid_argument" ||
		!strings.Contains(e.Message, "already running with 1 worker thread:") {
		t.Fatalf("SetIOThreads(3) once running = %v", err)
	}
}
