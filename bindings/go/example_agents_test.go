package toolnexus_test

// Examples for the sub-agent runtime (Agents). Each runs on an in-process
// model: Generate answers every turn of every agent with one line of text.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"

	toolnexus "github.com/toolnexus/toolnexus-rs/bindings/go"
)

// newAgents is a runtime of one "worker" definition whose model answers
// "done: <the last prompt>" on the manual clock.
func newAgents() *toolnexus.Agents {
	a, err := toolnexus.NewAgents(toolnexus.AgentsOptions{
		Config: map[string]any{
			"clock": "manual",
			"agents": map[string]any{
				"worker": map[string]any{"does": "answers", "soul": "You answer."},
			},
		},
		Generate: func(ctx context.Context, event json.RawMessage) (any, error) {
			var ev struct {
				Messages []struct {
					Role    string `json:"role"`
					Content any    `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(event, &ev); err != nil {
				return nil, err
			}
			last := ""
			for _, m := range ev.Messages {
				if s, ok := m.Content.(string); ok && m.Role == "user" {
					last = s
				}
			}
			return map[string]any{"content": "done: " + last}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	return a
}

func ExampleNewAgents() {
	a := newAgents()
	defer a.Close()
	_, r, err := a.Run(context.Background(), "worker", "sum 2 and 3")
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Text, r.Status)
	// Output: done: sum 2 and 3 done
}

func ExampleAgents_Run() {
	a := newAgents()
	defer a.Close()
	id, r, err := a.Run(context.Background(), "worker", "hello")
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.HasPrefix(id, "root/worker"), r.Text, r.Turns)
	// Output: true done: hello 1
}

func ExampleAgents_Spawn() {
	a := newAgents()
	defer a.Close()
	id, err := a.Spawn(context.Background(), "worker", "")
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.HasPrefix(id, "root/worker"))
	// Output: true
}

func ExampleAgents_Wake() {
	a := newAgents()
	defer a.Close()
	ctx := context.Background()
	id, _ := a.Spawn(ctx, "worker", "")
	if err := a.Wake(ctx, id, "first"); err != nil {
		panic(err)
	}
	r, _ := a.Wait(ctx, id, 0)
	fmt.Println(r.Text)
	// Output: done: first
}

func ExampleAgents_Wait() {
	a := newAgents()
	defer a.Close()
	ctx := context.Background()
	id, _ := a.Spawn(ctx, "worker", "")
	_ = a.Wake(ctx, id, "wait for me")
	r, err := a.Wait(ctx, id, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Status, r.IsError, r.Text)
	// Output: done false done: wait for me
}

func ExampleAgents_Post() {
	a := newAgents()
	defer a.Close()
	ctx := context.Background()
	id, _ := a.Spawn(ctx, "worker", "")
	err := a.Post(ctx, id, toolnexus.InboxItem{From: "root", Channel: "note", Text: "read this first"})
	fmt.Println(err)
	// Output: <nil>
}

func ExampleAgents_Call() {
	a := newAgents()
	defer a.Close()
	out, err := a.Call(context.Background(), "spawn", map[string]any{"agent": "worker"})
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Contains(string(out), `"id":"root/worker`))
	// Output: true
}

func ExampleAgents_List() {
	a := newAgents()
	defer a.Close()
	ctx := context.Background()
	_, _ = a.Spawn(ctx, "worker", "")
	views, err := a.List(ctx)
	if err != nil {
		panic(err)
	}
	for _, v := range views {
		if strings.HasPrefix(v.ID, "root/worker") {
			fmt.Println(v.State)
		}
	}
	// Output: idle
}

func ExampleAgents_Inspect() {
	a := newAgents()
	defer a.Close()
	ctx := context.Background()
	id, _, _ := a.Run(ctx, "worker", "once")
	v, err := a.Inspect(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println(v.State, v.Turns)
	// Output: idle 1
}

func ExampleAgents_Trace() {
	a := newAgents()
	defer a.Close()
	ctx := context.Background()
	_, _, _ = a.Run(ctx, "worker", "trace me")
	lines, err := a.Trace(ctx)
	if err != nil {
		panic(err)
	}
	woke := false
	for _, l := range lines {
		woke = woke || strings.Contains(l, "idle→running (wake)")
	}
	fmt.Println(woke)
	// Output: true
}

func ExampleAgents_Advance() {
	a := newAgents()
	defer a.Close()
	fmt.Println(a.Advance(context.Background(), 1000))
	// Output: <nil>
}

func ExampleAgents_Interrupt() {
	a := newAgents()
	defer a.Close()
	ctx := context.Background()
	id, _ := a.Spawn(ctx, "worker", "")
	// An idle handle has nothing to interrupt: the call is a no-op.
	fmt.Println(a.Interrupt(ctx, id))
	// Output: <nil>
}

func ExampleAgents_CloseHandle() {
	a := newAgents()
	defer a.Close()
	ctx := context.Background()
	id, _ := a.Spawn(ctx, "worker", "")
	if err := a.CloseHandle(ctx, id, false, "no longer needed"); err != nil {
		panic(err)
	}
	v, _ := a.Inspect(ctx, id)
	fmt.Println(v.State)
	// Output: closed
}

func ExampleAgents_Resume() {
	a := newAgents()
	defer a.Close()
	// Nothing is suspended, so there is nothing to resume.
	_, err := a.Resume(context.Background(), toolnexus.AnswerOutput("q1", "yes"))
	fmt.Println(err != nil)
	// Output: true
}

func ExampleAgents_Close() {
	a := newAgents()
	fmt.Println(a.Close(), a.Close())
	// Output: <nil> <nil>
}

func ExampleToolkit_AddAgent() {
	// A remote A2A agent whose card offers one skill; its tasks complete at
	// once with "REVIEWED".
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			fmt.Fprintf(w, `{"name":"reviewer","url":%q,"skills":[{"id":"review","description":"Reviews a text"}]}`,
				"http://"+r.Host+"/")
			return
		}
		var req struct {
			ID any `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%q,"result":{"id":"t1","status":{"state":"completed"},`+
			`"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"REVIEWED"}]}]}}`, req.ID)
	}))
	defer agent.Close()
	tk, err := toolnexus.Build(context.Background(), map[string]any{"builtins": false})
	if err != nil {
		panic(err)
	}
	defer tk.Close()
	added, err := tk.AddAgent(context.Background(), agent.URL+"/.well-known/agent-card.json")
	if err != nil {
		panic(err)
	}
	r, err := tk.Execute(context.Background(), added.Added[0], map[string]any{"task": "look"})
	if err != nil {
		panic(err)
	}
	fmt.Println(added.Added, r.Output)
	// Output: [reviewer_review] REVIEWED
}

// A host judge for the completion gate: the agent's completion.verify is
// "callback", so the runtime has the slot "verify:worker". The first
// attempt does not verify; the retry, in the same conversation, does.
func ExampleAgents_SetCallback() {
	a, err := toolnexus.NewAgents(toolnexus.AgentsOptions{
		Config: map[string]any{
			"clock": "manual",
			"agents": map[string]any{"worker": map[string]any{"does": "answers",
				"completion": map[string]any{"verify": "callback", "maxAttempts": 2}}},
		},
		Generate: func(ctx context.Context, event json.RawMessage) (any, error) {
			if strings.Contains(string(event), "did not verify") {
				return map[string]any{"content": "checked"}, nil
			}
			return map[string]any{"content": "first try"}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	var attempts atomic.Int32
	err = a.SetCallback("verify:worker", func(ctx context.Context, event json.RawMessage) (any, error) {
		if attempts.Add(1) == 1 {
			return map[string]any{"ok": false, "reason": "unchecked"}, nil
		}
		return map[string]any{"ok": true}, nil
	})
	if err != nil {
		panic(err)
	}
	_, r, err := a.Run(context.Background(), "worker", "do it")
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Status, r.Text, attempts.Load())
	// Output: done checked 2
}
