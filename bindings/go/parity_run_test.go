package toolnexus

// op run of the parity harness (tests/conformance/README.md "op run"): the
// client loop through NewClient/Run, with the hooks and waitFor a case
// describes as data turned into real Go callbacks that record what they saw.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// runLog is what a run's callbacks saw; a turn's tool calls run in parallel.
type runLog struct {
	mu    sync.Mutex
	hooks []any
	waits []any
}

func (l *runLog) hook(name string, raw json.RawMessage) map[string]any {
	ev, _ := decodeJSON(raw)
	m, _ := ev.(map[string]any)
	rec := map[string]any{"hook": name}
	for k, v := range m {
		rec[k] = v
	}
	l.mu.Lock()
	l.hooks = append(l.hooks, rec)
	l.mu.Unlock()
	return m
}

// ruleReply is the first rule matching the event (optional name, optional
// turn), without those keys; nil when none matches.
func ruleReply(rules []json.RawMessage, event map[string]any) map[string]any {
	for _, raw := range rules {
		var rule map[string]any
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		if dec.Decode(&rule) != nil {
			continue
		}
		if n, ok := rule["name"]; ok && n != event["name"] {
			continue
		}
		if t, ok := rule["turn"]; ok {
			tn, _ := t.(json.Number)
			en, _ := event["turn"].(json.Number)
			if !numEqual(tn, en) {
				continue
			}
		}
		delete(rule, "name")
		delete(rule, "turn")
		return rule
	}
	return nil
}

// remarshal moves a generic reply into one of the hook answer types.
func remarshal(v any, into any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

func hooksFor(c *vectorCase, log *runLog) Hooks {
	var h Hooks
	if rules, ok := c.Hooks["beforeLLM"]; ok {
		h.BeforeLLM = func(_ context.Context, ev LLMEvent) (*LLMOverride, error) {
			r := ruleReply(rules, log.hook("beforeLLM", ev.Raw))
			if r == nil {
				return nil, nil
			}
			var o LLMOverride
			return &o, remarshal(r, &o)
		}
	}
	if rules, ok := c.Hooks["afterLLM"]; ok {
		h.AfterLLM = func(_ context.Context, ev LLMResponseEvent) error {
			ruleReply(rules, log.hook("afterLLM", ev.Raw))
			return nil
		}
	}
	if rules, ok := c.Hooks["beforeTool"]; ok {
		h.BeforeTool = func(_ context.Context, ev ToolEvent) (*ToolOverride, error) {
			r := ruleReply(rules, log.hook("beforeTool", ev.Raw))
			if r == nil {
				return nil, nil
			}
			var o ToolOverride
			return &o, remarshal(r, &o)
		}
	}
	if rules, ok := c.Hooks["afterTool"]; ok {
		h.AfterTool = func(_ context.Context, ev ToolEvent) (*ToolResult, error) {
			r := ruleReply(rules, log.hook("afterTool", ev.Raw))
			if r == nil || r["result"] == nil {
				return nil, nil
			}
			var res ToolResult
			return &res, remarshal(r["result"], &res)
		}
	}
	return h
}

// waitForOf is waitFor as data: {answer} for every Request, or {answers} in
// order (the last repeats); the Answer is {id, ok, data?, reason? (not ok)}.
func waitForOf(spec json.RawMessage, log *runLog) func(context.Context, Request) (Answer, error) {
	if len(spec) == 0 || string(spec) == "null" {
		return nil
	}
	var s struct {
		Answer  *json.RawMessage  `json:"answer"`
		Answers []json.RawMessage `json:"answers"`
	}
	_ = json.Unmarshal(spec, &s)
	answers := s.Answers
	if s.Answer != nil {
		answers = []json.RawMessage{*s.Answer}
	}
	return func(_ context.Context, req Request) (Answer, error) {
		v, _ := decodeJSON(req.Raw)
		log.mu.Lock()
		seen := len(log.waits)
		log.waits = append(log.waits, v)
		log.mu.Unlock()
		var given struct {
			OK     bool            `json:"ok"`
			Data   json.RawMessage `json:"data"`
			Reason string          `json:"reason"`
		}
		if len(answers) > 0 {
			i := seen
			if i >= len(answers) {
				i = len(answers) - 1
			}
			_ = json.Unmarshal(answers[i], &given)
		}
		a := Answer{ID: req.ID, OK: given.OK, Data: given.Data}
		if !given.OK {
			a.Reason = given.Reason
		}
		return a, nil
	}
}

var hookRank = map[string]int{"beforeLLM": 0, "afterLLM": 1, "beforeTool": 2, "afterTool": 3}

// sortHookCalls orders as README says: turn, then hook, then call id.
func sortHookCalls(calls []any) {
	sort.SliceStable(calls, func(i, j int) bool {
		a, _ := calls[i].(map[string]any)
		b, _ := calls[j].(map[string]any)
		ta, _ := a["turn"].(json.Number)
		tb, _ := b["turn"].(json.Number)
		if !numEqual(ta, tb) {
			fa, _ := ta.Float64()
			fb, _ := tb.Float64()
			return fa < fb
		}
		ha, hb := hookRank[fmt.Sprint(a["hook"])], hookRank[fmt.Sprint(b["hook"])]
		if ha != hb {
			return ha < hb
		}
		return fmt.Sprint(a["id"]) < fmt.Sprint(b["id"])
	})
}

// dropNullMetadata: `metadata: null` is the same as no metadata.
func dropNullMetadata(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if m, ok := x["metadata"]; ok && m == nil {
			delete(x, "metadata")
		}
		for k, e := range x {
			x[k] = dropNullMetadata(e)
		}
	case []any:
		for i := range x {
			x[i] = dropNullMetadata(x[i])
		}
	}
	return v
}

// runCmp compares a run's JSON: its volatile paths dropped, strings holding
// JSON objects or arrays as the values they encode.
func runCmp(c *vectorCase) *cmpOpts {
	o := newCmp(c)
	o.jsonStrings = true
	return o
}

func runRun(c *vectorCase, root string, srv *mockServer) ([]string, error) {
	exp, err := decodeJSON(c.Expect)
	if err != nil {
		return nil, err
	}
	em, _ := exp.(map[string]any)
	tk, err := buildToolkit(c)
	if err != nil {
		return nil, err
	}
	defer tk.Close()
	log := &runLog{}
	client, err := NewClient(ClientOptions{
		Config:  c.Client,
		Hooks:   hooksFor(c, log),
		WaitFor: waitForOf(c.WaitFor, log),
	})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	var opts []RunOption
	if len(c.History) > 0 && string(c.History) != "null" {
		opts = append(opts, WithHistory(c.History))
	}
	res, runErr := client.Run(context.Background(), tk, c.Prompt, opts...)
	tk.Close() // ends MCP children before the files are listed

	var diffs []string
	result, _ := em["result"].(map[string]any)
	if wantErr, isErr := result["error"]; isErr && len(result) == 1 {
		if runErr == nil {
			diffs = append(diffs, fmt.Sprintf("want failure %q, got result %s", wantErr, res.Raw))
		} else if e, ok := runErr.(*Error); !ok || (e.Code != "provider_error" && e.Code != "timeout") {
			diffs = append(diffs, fmt.Sprintf("want provider_error or timeout, got %v", runErr))
		} else {
			msg, _ := wantErr.(string)
			if m := llmStatusError.FindStringSubmatch(msg); m != nil {
				if !strings.Contains(e.Message, m[1]) || !strings.Contains(e.Message, m[2]) {
					diffs = append(diffs, fmt.Sprintf("error message %q does not carry status %s and body %q", e.Message, m[1], m[2]))
				}
			}
		}
	} else {
		if runErr != nil {
			return nil, runErr
		}
		act, err := decodeJSON(res.Raw)
		if err != nil {
			return []string{"RunResult is not JSON: " + string(res.Raw)}, nil
		}
		want := renameKeys(result, map[string]string{
			"tool-calls": "toolCalls", "tool-call-count": "toolCallCount",
			"prompt-tokens": "promptTokens", "completion-tokens": "completionTokens", "total-tokens": "totalTokens"})
		diffs = append(diffs, compare("result", dropNullMetadata(want), dropNullMetadata(act), runCmp(c))...)
	}
	if want, ok := em["waitForRequests"]; ok {
		got := append([]any{}, log.waits...)
		diffs = append(diffs, compare("waitForRequests", want, got, runCmp(c))...)
	}
	if want, ok := em["hookCalls"]; ok {
		got := append([]any{}, log.hooks...)
		sortHookCalls(got)
		diffs = append(diffs, compare("hookCalls", dropNullMetadata(want), dropNullMetadata(any(got)), runCmp(c))...)
	}

	var provider, tools []recordedRequest
	if srv != nil {
		for _, r := range srv.recorded() {
			if strings.HasPrefix(r.Path, "/tool/") {
				tools = append(tools, r)
			} else {
				provider = append(provider, r)
			}
		}
	}
	list, _ := em["providerRequests"].([]any)
	if len(list) != len(provider) {
		diffs = append(diffs, fmt.Sprintf("provider requests: got %d, want %d", len(provider), len(list)))
	} else {
		for i, pr := range list {
			diffs = append(diffs, compareProviderRequest(fmt.Sprintf("providerRequests[%d]", i), pr, provider[i])...)
		}
	}
	if c.ExpectServerRequests != nil {
		diffs = append(diffs, compareServerRequests(c.ExpectServerRequests, tools)...)
	}
	if c.ExpectFiles != nil {
		got, err := listFiles(root)
		if err != nil {
			return nil, err
		}
		diffs = append(diffs, compareFiles(c.ExpectFiles, got, false)...)
	}
	return diffs, nil
}
