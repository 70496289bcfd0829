package toolnexus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// agentsConfig is a coordinator whose team is the explorers, on the manual
// clock, with an in-process model.
const agentsConfig = `{"clock":"manual","client":{"model":"local"},"agents":{
 "coordinator":{"does":"splits work","soul":"You coordinate.","team":["explore"]},
 "explore":{"does":"read-only research","soul":"You explore.","tools":["lookup"]}}}`

// treeModel is the in-process model of the tree: the coordinator delegates
// "find A" and "find B" in one turn, then sums up what came back; an
// explorer looks its question up once, then reports it.
func treeModel(calls *atomic.Int32) func(ctx context.Context, event json.RawMessage) (any, error) {
	return func(ctx context.Context, event json.RawMessage) (any, error) {
		calls.Add(1)
		ev := string(event)
		usage := map[string]any{"promptTokens": 3, "completionTokens": 2}
		switch {
		case strings.Contains(ev, "You explore."):
			if strings.Contains(ev, `"turn":0`) {
				q := "A"
				if strings.Contains(ev, "find B") {
					q = "B"
				}
				return map[string]any{"toolCalls": []any{map[string]any{"name": "lookup",
					"arguments": map[string]any{"q": q}}}, "usage": usage}, nil
			}
			for _, q := range []string{"A", "B"} {
				if strings.Contains(ev, "looked up "+q) {
					return map[string]any{"content": "found " + q, "usage": usage}, nil
				}
			}
			return nil, errors.New("the lookup result is missing")
		case strings.Contains(ev, "You coordinate."):
			if strings.Contains(ev, `"turn":0`) {
				return map[string]any{"toolCalls": []any{
					map[string]any{"name": "task", "arguments": map[string]any{"agent": "explore", "prompt": "find A"}},
					map[string]any{"name": "task", "arguments": map[string]any{"agent": "explore", "prompt": "find B"}},
				}, "usage": usage}, nil
			}
			got := func(q string) string {
				if strings.Contains(ev, "found "+q) {
					return q
				}
				return "-"
			}
			return map[string]any{"content": "summary: " + got("A") + " + " + got("B"), "usage": usage}, nil
		}
		return nil, fmt.Errorf("no such agent in this model")
	}
}

func lookupToolkit(t *testing.T) *Toolkit {
	t.Helper()
	tk, err := Build(context.Background(), `{"builtins":false}`)
	if err != nil {
		t.Fatal(err)
	}
	err = tk.Register("lookup", "Looks a question up.", nil, func(ctx context.Context, args json.RawMessage) (string, error) {
		var a struct{ Q string }
		if err := json.Unmarshal(args, &a); err != nil {
			return "", err
		}
		return "looked up " + a.Q, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func liveSlotCount() int {
	liveSlots.RLock()
	defer liveSlots.RUnlock()
	return len(liveSlots.m)
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAgentsRunATreeWithGoToolsAndGenerate(t *testing.T) {
	slotsBefore := liveSlotCount()
	tk := lookupToolkit(t)
	var calls atomic.Int32
	a, err := NewAgents(AgentsOptions{Config: agentsConfig, Toolkit: tk, Generate: treeModel(&calls)})
	if err != nil {
		t.Fatal(err)
	}
	// The runtime holds its own reference to the toolkit.
	tk.Close()
	ctx := context.Background()
	id, r, err := a.Run(ctx, "coordinator", "survey A and B")
	if err != nil {
		t.Fatal(err)
	}
	if id != "root/coordinator.1" {
		t.Errorf("id %q", id)
	}
	if r.Status != "done" || r.IsError || r.Text != "summary: A + B" {
		t.Fatalf("result %+v", r)
	}
	// Two coordinator calls and two per explorer, 5 tokens each.
	if r.TotalTokens != 30 || r.OwnTokens != 10 || r.Turns != 2 {
		t.Errorf("usage %s", r.Raw)
	}
	if calls.Load() != 6 {
		t.Errorf("model calls %d", calls.Load())
	}
	trace, err := a.Trace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(trace, "\n")
	for _, want := range []string{
		"root/coordinator.1: idle→running (wake)",
		"root/coordinator.1/explore.",
		"root/coordinator.1: running→idle (done, turns=2, tokens=30)",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("trace lacks %q:\n%s", want, joined)
		}
	}
	views, err := a.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 3 || views[0].ID != "root/coordinator.1" || views[0].State != "idle" {
		t.Errorf("list %+v", views)
	}
	v, err := a.Inspect(ctx, id)
	if err != nil || v.Turns != 2 || v.Tokens != 30 {
		t.Errorf("inspect %+v %v", v, err)
	}
	out, err := a.Call(ctx, "transcript", map[string]any{"id": id})
	if err != nil || !strings.Contains(string(out), "survey A and B") || !strings.Contains(string(out), "found B") {
		t.Errorf("transcript %s %v", out, err)
	}
	if err := a.CloseHandle(ctx, id, false, ""); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	// The generate handle goes once the last turn thread lets it go.
	eventually(t, "the generate handle is released", func() bool { return liveSlotCount() <= slotsBefore })
	if _, err := a.List(ctx); !errors.Is(err, errAgentsClosed) {
		t.Errorf("a call after Close: %v", err)
	}
}

func TestAgentsWaitEndsOnCtxAndOnTheManualClock(t *testing.T) {
	var calls atomic.Int32
	a, err := NewAgents(AgentsOptions{Config: agentsConfig, Toolkit: lookupToolkitClosed(t), Generate: treeModel(&calls)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	id, err := a.Spawn(context.Background(), "explore", "")
	if err != nil {
		t.Fatal(err)
	}
	// Never woken: the wait ends only by its ctx.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *TaskResult, 1)
	go func() {
		r, err := a.Wait(ctx, id, 0)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	cancel()
	select {
	case r := <-done:
		if r == nil || r.Status != "interrupted" {
			t.Fatalf("wait: %+v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled wait did not end")
	}
	// A deadline ends it too.
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	if r, err := a.Wait(dctx, id, 0); err != nil || r.Status != "interrupted" {
		t.Fatalf("wait past its deadline: %+v %v", r, err)
	}
	// A timeout on the manual clock is virtual: it ends when the clock moves.
	go func() {
		r, err := a.Wait(context.Background(), id, 500)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	deadline := time.After(20 * time.Second)
	for {
		if err := a.Advance(context.Background(), 100); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			if r == nil || r.Status != "timeout" {
				t.Fatalf("wait: %+v", r)
			}
			return
		case <-deadline:
			t.Fatal("the timed wait did not end")
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func lookupToolkitClosed(t *testing.T) *Toolkit {
	tk := lookupToolkit(t)
	t.Cleanup(func() { tk.Close() })
	return tk
}

func TestAgentsCloseEndsWaitsInFlight(t *testing.T) {
	release := make(chan struct{})
	var entered sync.Once
	inModel := make(chan struct{})
	a, err := NewAgents(AgentsOptions{
		Config: `{"client":{"model":"local"},"agents":{"g":{"does":"d"}}}`,
		Generate: func(ctx context.Context, _ json.RawMessage) (any, error) {
			entered.Do(func() { close(inModel) })
			select {
			case <-release:
			case <-ctx.Done(): // Close cancels Generate's ctx
			}
			return `{"content":"late"}`, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	running, err := a.Spawn(ctx, "g", "")
	if err != nil {
		t.Fatal(err)
	}
	idle, err := a.Spawn(ctx, "g", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Wake(ctx, running, "go"); err != nil {
		t.Fatal(err)
	}
	<-inModel
	var wg sync.WaitGroup
	results := make([]string, 2)
	for i, id := range []string{running, idle} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := a.Wait(ctx, id, 0)
			switch {
			case errors.Is(err, errAgentsClosed):
				results[i] = "refused"
			case err != nil:
				results[i] = err.Error()
			default:
				results[i] = r.Status
			}
		}()
	}
	a.Close()
	wg.Wait()
	close(release)
	for i, s := range results {
		if s != "interrupted" && s != "closed" && s != "refused" {
			t.Errorf("wait %d after Close: %s", i, s)
		}
	}
}

func TestAgentsCloseFromInsideGenerate(t *testing.T) {
	slotsBefore := liveSlotCount()
	var a *Agents
	var ready sync.WaitGroup
	ready.Add(1)
	var generated atomic.Int32
	a, err := NewAgents(AgentsOptions{
		Config: `{"client":{"model":"local"},"agents":{"g":{"does":"d"}}}`,
		Generate: func(ctx context.Context, _ json.RawMessage) (any, error) {
			ready.Wait()
			generated.Add(1)
			a.Close() // must neither deadlock nor free what a call uses
			if ctx.Err() == nil {
				t.Error("Generate's ctx is not cancelled by Close")
			}
			return map[string]any{"content": "after close"}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ready.Done()
	_, r, err := a.Run(context.Background(), "g", "go")
	switch {
	case errors.Is(err, errAgentsClosed):
		// Close ran before the wait began.
	case err != nil:
		t.Fatal(err)
	case r.Status != "interrupted" && r.Status != "closed":
		t.Fatalf("result %+v", r)
	}
	if generated.Load() != 1 {
		t.Errorf("model calls %d", generated.Load())
	}
	eventually(t, "the generate handle is released", func() bool { return liveSlotCount() <= slotsBefore })
}

func TestAgentsOverTheMockProviderOverHTTP(t *testing.T) {
	srv, err := startMockServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.close)
	srv.setResponses([]cannedResponse{openaiText("hello from the wire")})
	cfg := map[string]any{
		"client": map[string]any{"baseUrl": srv.base(), "style": "openai", "model": "m", "apiKey": "k", "retries": 0},
		"agents": map[string]any{"greeter": map[string]any{"does": "greets", "soul": "You greet."}},
	}
	a, err := NewAgents(AgentsOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, r, err := a.Run(context.Background(), "greeter", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "done" || r.Text != "hello from the wire" || r.TotalTokens != 5 {
		t.Fatalf("result %s", r.Raw)
	}
	reqs := srv.recorded()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "You greet.") {
		t.Fatalf("requests %+v", reqs)
	}
}

func TestAgentsErrors(t *testing.T) {
	var calls atomic.Int32
	slotsBefore := liveSlotCount()
	_, err := NewAgents(AgentsOptions{Config: `{"agents":{"x":{"does":"d","team":["ghost"]}}}`, Generate: treeModel(&calls)})
	var e *Error
	if !errors.As(err, &e) || e.Code != "invalid_config" || !strings.Contains(e.Message, "ghost") {
		t.Fatalf("a team naming an unknown agent: %v", err)
	}
	if liveSlotCount() != slotsBefore {
		t.Error("a failed build keeps the generate handle")
	}
	if _, err := NewAgents(AgentsOptions{Config: `{"agents":{}}`}); !errors.As(err, &e) || e.Code != "invalid_config" {
		t.Fatalf("no model at all: %v", err)
	}
	if _, err := NewAgents(AgentsOptions{Config: `{"agents":{"x":{"does":"d","tools":["lookup"]}}}`,
		Generate: treeModel(&calls)}); !errors.As(err, &e) || !strings.Contains(e.Message, "lookup") {
		t.Fatalf("a tool without a toolkit: %v", err)
	}
	a, err := NewAgents(AgentsOptions{Config: agentsConfig, Toolkit: lookupToolkitClosed(t), Generate: treeModel(&calls)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	if _, err := a.Spawn(ctx, "ghost", ""); !errors.As(err, &e) || e.Code != "invalid_argument" || !strings.Contains(e.Message, "ghost") {
		t.Errorf("spawn of an unknown agent: %v", err)
	}
	if _, err := a.Call(ctx, "dance", nil); !errors.As(err, &e) || !strings.Contains(e.Message, "unknown verb") {
		t.Errorf("unknown verb: %v", err)
	}
	if _, err := a.Wait(ctx, "root/nobody.9", 0); !errors.As(err, &e) || !strings.Contains(e.Message, "root/nobody.9") {
		t.Errorf("wait on an unknown handle: %v", err)
	}
	if _, err := a.Call(ctx, "spawn", `{"agent":`); !errors.As(err, &e) || e.Code != "invalid_json" {
		t.Errorf("bad JSON: %v", err)
	}
	if _, err := a.Call(ctx, "spawn\x00", nil); !errors.As(err, &e) || e.Code != "invalid_argument" {
		t.Errorf("a NUL in the verb: %v", err)
	}
	// A Generate error fails the turn, not the runtime.
	b, err := NewAgents(AgentsOptions{Config: `{"client":{"model":"local"},"agents":{"g":{"does":"d"}}}`,
		Generate: func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("model down") }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, r, err := b.Run(ctx, "g", "go")
	if err != nil || !r.IsError || r.Status != "error" || !strings.Contains(r.Text, "model down") {
		t.Fatalf("a failing Generate: %+v %v", r, err)
	}
	// So does a panic.
	c, err := NewAgents(AgentsOptions{Config: `{"client":{"model":"local"},"agents":{"g":{"does":"d"}}}`,
		Generate: func(context.Context, json.RawMessage) (any, error) { panic("boom") }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, r, err = c.Run(ctx, "g", "go")
	if err != nil || !r.IsError || !strings.Contains(r.Text, "boom") {
		t.Fatalf("a panicking Generate: %+v %v", r, err)
	}
}

// restartModel is the in-process model of the restart test: the parent
// delegates to the asker, whose relay tool "check" halts the run until the
// host answers it; then each sums up what came back.
func restartModel(_ context.Context, event json.RawMessage) (any, error) {
	ev := string(event)
	usage := map[string]any{"promptTokens": 3, "completionTokens": 2}
	switch {
	case strings.Contains(ev, "You ask.") && strings.Contains(ev, "secret-token"):
		return map[string]any{"content": "asker-done: secret-token", "usage": usage}, nil
	case strings.Contains(ev, "You ask."):
		return map[string]any{"toolCalls": []any{map[string]any{"name": "check", "arguments": map[string]any{}}}, "usage": usage}, nil
	case strings.Contains(ev, "asker-done: secret-token"):
		return map[string]any{"content": "parent-final: asker-done: secret-token", "usage": usage}, nil
	}
	return map[string]any{"toolCalls": []any{map[string]any{"name": "task",
		"arguments": map[string]any{"agent": "asker", "prompt": "get it"}}}, "usage": usage}, nil
}

// restartRuntime is a runtime of the restart test's agents on store ("":
// none).
func restartRuntime(t *testing.T, store string) *Agents {
	t.Helper()
	config := map[string]any{"client": map[string]any{"model": "local"}, "agents": map[string]any{
		"parent": map[string]any{"does": "delegates", "soul": "You delegate.", "team": []string{"asker"}},
		"asker":  map[string]any{"does": "asks first", "soul": "You ask.", "tools": []string{"check"}}}}
	if store != "" {
		config["store"] = store
	}
	tk, err := Build(context.Background(), `{"builtins":false,"relayTools":[{"name":"check"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	a, err := NewAgents(AgentsOptions{Config: config, Toolkit: tk, Generate: restartModel})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAgentsRestartOnTheStoreResumesTheParkedTree: a runtime on a file
// store parks the tree on the relay call and is closed (a process that
// exits); a new runtime on the same store lists it suspended and resumes
// it to the result an uninterrupted run gives, the parent's task call
// reattaching to the same asker (issue 26).
func TestAgentsRestartOnTheStoreResumesTheParkedTree(t *testing.T) {
	ctx := context.Background()
	answer := AnswerOutput("", "secret-token")
	park := func(a *Agents) *Request {
		id, r, err := a.Run(ctx, "parent", "go")
		if err != nil || id != "root/parent.1" || r.Status != "pending" || r.Pending == nil || r.Pending.Kind != "tool_call" {
			t.Fatalf("parked: %s %+v %v", id, r, err)
		}
		return r.Pending
	}
	once := restartRuntime(t, "")
	park(once)
	want, err := once.Resume(ctx, answer)
	if err != nil || want.Status != "done" || want.Text != "parent-final: asker-done: secret-token" {
		t.Fatalf("uninterrupted: %+v %v", want, err)
	}
	once.Close()

	store := "file:" + t.TempDir()
	first := restartRuntime(t, store)
	parked := park(first)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	again := restartRuntime(t, store)
	defer again.Close()
	views, err := again.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range views {
		got = append(got, v.ID+" "+v.State+" "+v.PendingKind)
	}
	if fmt.Sprint(got) != "[root/parent.1 suspended tool_call root/parent.1/asker.1 suspended tool_call]" {
		t.Fatalf("the parked tree: %v", got)
	}
	w, err := again.Wait(ctx, "root/parent.1", 0)
	if err != nil || w.Status != "pending" || w.Pending == nil || w.Pending.ID != parked.ID {
		t.Fatalf("wait on the restored parent: %+v %v", w, err)
	}
	r, err := again.Resume(ctx, answer)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != want.Status || r.Text != want.Text || r.Turns != want.Turns ||
		r.TotalTokens != want.TotalTokens || r.OwnTokens != want.OwnTokens || r.IsError {
		t.Fatalf("after the restart %+v, uninterrupted %+v", r, want)
	}
	views, _ = again.List(ctx)
	if len(views) != 2 {
		t.Fatalf("no second spawn: %+v", views)
	}
	lines, _ := again.Trace(ctx)
	if !strings.Contains(strings.Join(lines, "\n"), "root/parent.1: task replay → REATTACH to root/parent.1/asker.1 (state idle)") {
		t.Fatalf("the task call reattaches: %v", lines)
	}
}
