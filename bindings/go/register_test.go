package toolnexus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestRegisterGoFunc(t *testing.T) {
	tk, err := Build(context.Background(), `{"builtins":false}`)
	if err != nil {
		t.Fatal(err)
	}
	before := LiveHandles()
	schema := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}}
	err = tk.Register("add", "Add two numbers.", schema, func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct{ A, B float64 }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		return fmt.Sprint(in.A + in.B), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = tk.Register("fails", "Always fails.", nil, func(context.Context, json.RawMessage) (string, error) {
		return "", errors.New("the disk is on fire")
	})
	if err != nil {
		t.Fatal(err)
	}
	err = tk.Register("panics", "Always panics.", nil, func(context.Context, json.RawMessage) (string, error) {
		panic("boom")
	})
	if err != nil {
		t.Fatal(err)
	}
	if LiveHandles() != before+3 {
		t.Fatalf("live handles %d, want %d", LiveHandles(), before+3)
	}

	tools, err := tk.Render("tools")
	if err != nil {
		t.Fatal(err)
	}
	var listed []struct {
		Name, Description, Source string
		InputSchema               map[string]any
	}
	if err := json.Unmarshal(tools, &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 3 || listed[0].Name != "add" || listed[0].Source != "native" || listed[0].Description != "Add two numbers." {
		t.Fatalf("tools %s", tools)
	}
	if listed[0].InputSchema["properties"] == nil || listed[1].InputSchema["type"] != "object" {
		t.Fatalf("schemas %s", tools)
	}

	res, err := tk.Execute(context.Background(), "add", map[string]int{"a": 2, "b": 40})
	if err != nil || res.IsError || res.Output != "42" {
		t.Fatalf("add: %+v %v", res, err)
	}
	// The OpenAI wire form: arguments as a JSON string holding the object.
	res, err = tk.Execute(context.Background(), "add", `"{\"a\":1,\"b\":2}"`)
	if err != nil || res.IsError || res.Output != "3" {
		t.Fatalf("add (string args): %+v %v", res, err)
	}
	res, err = tk.Execute(context.Background(), "fails", nil)
	if err != nil || !res.IsError || res.Output != "the disk is on fire" {
		t.Fatalf("fails: %+v %v", res, err)
	}
	res, err = tk.Execute(context.Background(), "panics", nil)
	if err != nil || !res.IsError || !strings.Contains(res.Output, "boom") {
		t.Fatalf("panics: %+v %v", res, err)
	}

	tk.Close()
	if LiveHandles() != before {
		t.Fatalf("live handles after Close: %d, want %d", LiveHandles(), before)
	}
}

func TestRegisterRejectsBadInput(t *testing.T) {
	tk := mustBuild(t, `{"builtins":false}`)
	before := LiveHandles()
	err := tk.Register("bad", "", `{"type":`, func(context.Context, json.RawMessage) (string, error) { return "", nil })
	wantCode(t, err, "invalid_json", StatusInvalidJSON)
	if LiveHandles() != before {
		t.Fatalf("a failed registration leaked its handle: %d, want %d", LiveHandles(), before)
	}
	if err := tk.Register("nil", "", nil, nil); err == nil {
		t.Fatal("nil fn accepted")
	}
}

// A Go tool may call back into the same toolkit while it runs.
func TestRegisteredToolCallsBackIntoTheToolkit(t *testing.T) {
	tk := mustBuild(t, `{"builtins":false}`)
	if err := tk.Register("inner", "", nil, func(context.Context, json.RawMessage) (string, error) { return "inner ok", nil }); err != nil {
		t.Fatal(err)
	}
	if err := tk.Register("outer", "", nil, func(context.Context, json.RawMessage) (string, error) {
		names, err := tk.Render("toolNames")
		if err != nil {
			return "", err
		}
		r, err := tk.Execute(context.Background(), "inner", nil)
		if err != nil {
			return "", err
		}
		return string(names) + " " + r.Output, nil
	}); err != nil {
		t.Fatal(err)
	}
	res, err := tk.Execute(context.Background(), "outer", nil)
	if err != nil || res.IsError || res.Output != `["inner","outer"] inner ok` {
		t.Fatalf("outer: %+v %v", res, err)
	}
}

// Many goroutines call Go tools at once; run under -race.
func TestRegisteredToolsConcurrently(t *testing.T) {
	tk, err := Build(context.Background(), `{"builtins":false}`)
	if err != nil {
		t.Fatal(err)
	}
	before := LiveHandles()
	var mu sync.Mutex
	calls := 0
	if err := tk.Register("count", "", nil, func(_ context.Context, args json.RawMessage) (string, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		var in struct{ N int }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		return fmt.Sprint(in.N * 2), nil
	}); err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				n := g*each + i
				res, err := tk.Execute(context.Background(), "count", map[string]int{"n": n})
				if err != nil || res.IsError || res.Output != fmt.Sprint(n*2) {
					errs <- fmt.Errorf("n=%d: %+v %v", n, res, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if calls != goroutines*each {
		t.Fatalf("calls %d, want %d", calls, goroutines*each)
	}
	tk.Close()
	if LiveHandles() != before {
		t.Fatalf("live handles after Close: %d, want %d", LiveHandles(), before)
	}
}

// Close waits for a Go tool still running; a call that tool makes back into
// the toolkit meanwhile is refused instead of deadlocking.
func TestCloseWaitsForARunningToolAndRefusesItsCallbacks(t *testing.T) {
	tk, err := Build(context.Background(), `{"builtins":false}`)
	if err != nil {
		t.Fatal(err)
	}
	started, proceed := make(chan struct{}), make(chan struct{})
	if err := tk.Register("slow", "", nil, func(context.Context, json.RawMessage) (string, error) {
		close(started)
		<-proceed
		if _, err := tk.Render("toolNames"); err != nil {
			return "callback refused: " + err.Error(), nil
		}
		return "callback ran", nil
	}); err != nil {
		t.Fatal(err)
	}
	result := make(chan *ToolResult, 1)
	go func() {
		r, _ := tk.Execute(context.Background(), "slow", nil)
		result <- r
	}()
	<-started
	closed := make(chan struct{})
	go func() {
		tk.Close()
		close(closed)
	}()
	for {
		tk.state.mu.Lock()
		closing := tk.state.closing
		tk.state.mu.Unlock()
		if closing {
			break
		}
		runtime.Gosched()
	}
	select {
	case <-closed:
		t.Fatal("Close returned while a tool was still running")
	default:
	}
	close(proceed)
	r := <-result
	<-closed
	if r == nil || !strings.Contains(r.Output, "callback refused") || !strings.Contains(r.Output, "closed") {
		t.Fatalf("result %+v", r)
	}
}

func TestRegisterResultCarriesMetadata(t *testing.T) {
	tk := mustBuild(t, `{"builtins":false}`)
	err := tk.RegisterResult("lookup", "", nil, func(_ context.Context, args json.RawMessage) (*ToolResult, error) {
		return &ToolResult{Output: "not found\x00here \xff", IsError: true, Metadata: map[string]any{"status": 404}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tk.Execute(context.Background(), "lookup", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.Output != "not found\x00here \uFFFD" || res.Metadata["status"] != float64(404) {
		t.Fatalf("result %+v", res)
	}
}
