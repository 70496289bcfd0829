package toolnexus_test

// Upstream's cross-port runtime fixture subagent-fanout
// (toolnexus-subagent-fixture/v1) through the Go layer: the registry and the
// expectations are read from the fixture file in place (TN_AGENT_FIXTURES,
// else ../shared/upstream-fixtures beside the repository); the mock model is
// this file's own, after the fixture's scripts (contract notes §12.3).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	toolnexus "github.com/toolnexus/toolnexus-rs/bindings/go"
)

// agentFixtures is the fixture directory, or "" (with why) when absent.
func agentFixtures() (string, string) {
	if d := os.Getenv("TN_AGENT_FIXTURES"); d != "" {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d, ""
		}
		return "", "TN_AGENT_FIXTURES=" + d + " is not a directory"
	}
	d, _ := filepath.Abs("../../../shared/upstream-fixtures")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d, ""
	}
	return "", "no " + d + " (set TN_AGENT_FIXTURES to upstream's fixture directory)"
}

// fixtureModel answers as the fixture scripts' m-coordinator and m-explore.
func fixtureModel(ctx context.Context, event json.RawMessage) (any, error) {
	var ev struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(event, &ev); err != nil {
		return nil, err
	}
	var tools []string
	for _, m := range ev.Messages {
		if m.Role == "tool" {
			s, _ := m.Content.(string)
			tools = append(tools, s)
		}
	}
	usage := map[string]any{"promptTokens": 30, "completionTokens": 10}
	call := func(name string, args map[string]any) map[string]any {
		return map[string]any{"name": name, "arguments": args}
	}
	switch {
	case ev.Model == "m-coordinator" && len(tools) == 0:
		return map[string]any{"usage": usage, "toolCalls": []any{
			call("task", map[string]any{"agent": "explore", "prompt": "find A"}),
			call("task", map[string]any{"agent": "explore", "prompt": "find B"}),
		}}, nil
	case ev.Model == "m-coordinator":
		return map[string]any{"usage": usage, "content": "synthesis: " + strings.Join(tools, " + ")}, nil
	case ev.Model == "m-explore" && len(tools) == 0:
		return map[string]any{"usage": usage, "toolCalls": []any{call("lookup", map[string]any{"q": "x"})}}, nil
	case ev.Model == "m-explore":
		return map[string]any{"usage": usage, "content": "found:" + tools[0]}, nil
	}
	return map[string]any{"usage": usage, "content": "ok"}, nil
}

// fixtureTransitions is the "from→to" of each trace line of id, in order.
func fixtureTransitions(trace []string, id string) []string {
	var out []string
	for _, line := range trace {
		rest, ok := strings.CutPrefix(line, id+": ")
		if !ok {
			continue
		}
		word, _, _ := strings.Cut(rest, " ")
		if from, to, ok := strings.Cut(word, "→"); ok && from != "" && to != "" && !strings.ContainsAny(from, "()") {
			out = append(out, word)
		}
	}
	return out
}

func TestUpstreamAgentFixtureFanout(t *testing.T) {
	dir, why := agentFixtures()
	if dir == "" {
		t.Skip("agent fixtures: skipped — " + why)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "subagent-fanout", "fixture.json"))
	if err != nil {
		t.Skip("agent fixtures: skipped — " + err.Error())
	}
	var fx struct {
		Registry map[string]map[string]any `json:"registry"`
		Run      struct{ Entry, Prompt string }
		Expect   struct {
			Status           string         `json:"status"`
			TextContains     []string       `json:"textContains"`
			TextOccurrences  map[string]int `json:"textOccurrences"`
			ParentTurns      int            `json:"parentTurns"`
			ChildIDs         []string       `json:"childIds"`
			ParentUsageTotal int            `json:"parentUsageTotal"`
			ChildrenClosed   bool           `json:"childrenClosedAfterTask"`
			Transitions      map[string][]string
		} `json:"expect"`
	}
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	tk, err := toolnexus.Build(context.Background(), map[string]any{"builtins": false})
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	err = tk.Register("lookup", "looks up", map[string]any{"type": "object",
		"properties": map[string]any{"q": map[string]any{"type": "string"}}},
		func(_ context.Context, args json.RawMessage) (string, error) {
			var in struct{ Q string }
			_ = json.Unmarshal(args, &in)
			return "data(" + in.Q + ")", nil
		})
	if err != nil {
		t.Fatal(err)
	}
	a, err := toolnexus.NewAgents(toolnexus.AgentsOptions{
		Config:   map[string]any{"clock": "manual", "agents": fx.Registry},
		Toolkit:  tk,
		Generate: fixtureModel,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	id, r, err := a.Run(ctx, fx.Run.Entry, fx.Run.Prompt)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	check := func(ok bool, format string, args ...any) {
		if !ok {
			failed = append(failed, fmt.Sprintf(format, args...))
		}
	}
	check(r.Status == fx.Expect.Status, "status %q, want %q", r.Status, fx.Expect.Status)
	for _, s := range fx.Expect.TextContains {
		check(strings.Contains(r.Text, s), "text %q lacks %q", r.Text, s)
	}
	for s, n := range fx.Expect.TextOccurrences {
		check(strings.Count(r.Text, s) == n, "text %q has %q %d times, want %d", r.Text, s, strings.Count(r.Text, s), n)
	}
	check(r.Turns == fx.Expect.ParentTurns, "parent turns %d, want %d", r.Turns, fx.Expect.ParentTurns)
	check(r.TotalTokens == fx.Expect.ParentUsageTotal, "parent tokens %d, want %d", r.TotalTokens, fx.Expect.ParentUsageTotal)
	views, err := a.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, v := range views {
		states[v.ID] = v.State
	}
	for _, c := range fx.Expect.ChildIDs {
		st, ok := states[c]
		check(ok, "no child %s (handles %v)", c, states)
		if fx.Expect.ChildrenClosed {
			check(st == "closed", "child %s is %s, want closed", c, st)
		}
	}
	trace, err := a.Trace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for h, want := range fx.Expect.Transitions {
		got := fixtureTransitions(trace, h)
		ok := len(got) == len(want)
		for i := 0; ok && i < len(want); i++ {
			ok = got[i] == want[i] || (strings.HasPrefix(want[i], "→") && strings.HasSuffix(got[i], want[i]))
		}
		check(ok, "transitions of %s: %v, want %v", h, got, want)
	}
	check(strings.HasPrefix(id, "root/"+fx.Run.Entry), "entry id %s", id)
	if len(failed) > 0 {
		t.Fatalf("subagent-fanout: %d checks failed:\n%s\ntrace:\n%s", len(failed), strings.Join(failed, "\n"), strings.Join(trace, "\n"))
	}
	t.Logf("agent fixtures (Go): 1 passed (subagent-fanout; concurrentTurnsObservedAtLeast is not visible through the C ABI and is not checked here)")
}
