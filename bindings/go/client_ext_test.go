package toolnexus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	toolnexus "github.com/toolnexus/toolnexus-rs/bindings/go"
)

// sseProvider answers like an OpenAI endpoint that streams: a tool call to
// add(2, 3), then (once the result is back) "The sum is 5." in two deltas.
// A request without stream gets the number of its messages as the answer.
func sseProvider(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Stream   bool             `json:"stream"`
			Messages []map[string]any `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		if !req.Stream {
			w.Header().Set("content-type", "application/json")
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"%d"},"finish_reason":"stop"}]}`, len(req.Messages))
			return
		}
		answered := false
		for _, m := range req.Messages {
			if m["role"] == "tool" {
				answered = true
			}
		}
		w.Header().Set("content-type", "text/event-stream")
		var events []string
		if !answered {
			events = []string{
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"2,\"b\":3}"}}]}}]}`,
				`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}`,
			}
		} else {
			events = []string{
				`{"choices":[{"index":0,"delta":{"content":"The sum "}}]}`,
				`{"choices":[{"index":0,"delta":{"content":"is 5."},"finish_reason":"stop"}]}`,
				`{"choices":[],"usage":{"prompt_tokens":6,"completion_tokens":1,"total_tokens":7}}`,
			}
		}
		f, _ := w.(http.Flusher)
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			if f != nil {
				f.Flush()
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func adderToolkit(t *testing.T) *toolnexus.Toolkit {
	t.Helper()
	tk, err := toolnexus.Build(context.Background(), map[string]any{"builtins": false})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	err = tk.Register("add", "adds a and b", map[string]any{"type": "object"}, func(ctx context.Context, args json.RawMessage) (string, error) {
		var a struct{ A, B float64 }
		if err := json.Unmarshal(args, &a); err != nil {
			return "", err
		}
		return fmt.Sprint(a.A + a.B), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func newStreamClient(t *testing.T, srv *httptest.Server, opts toolnexus.ClientOptions) *toolnexus.Client {
	t.Helper()
	opts.Config = map[string]any{"baseUrl": srv.URL + "/v1", "style": "openai", "model": "m", "apiKey": "k"}
	c, err := toolnexus.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestStreamYieldsEachEventInOrder(t *testing.T) {
	srv := sseProvider(t)
	tk := adderToolkit(t)
	c := newStreamClient(t, srv, toolnexus.ClientOptions{})
	var seen []string
	var result *toolnexus.RunResult
	for ev, err := range c.Stream(context.Background(), tk, "add 2 and 3") {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case "text":
			seen = append(seen, "text:"+ev.Delta)
		case "tool_call":
			seen = append(seen, "tool_call:"+ev.Name+string(ev.Args))
		case "tool_result":
			seen = append(seen, "tool_result:"+ev.Output)
		case "usage":
			seen = append(seen, fmt.Sprintf("usage:%d", ev.Usage.TotalTokens))
		case "done":
			seen = append(seen, "done")
			result = ev.Result
		}
	}
	want := []string{`tool_call:add{"a":2,"b":3}`, "tool_result:5", "text:The sum ", "text:is 5.", "usage:16", "done"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Fatalf("events %q, want %q", seen, want)
	}
	if result == nil || result.Text != "The sum is 5." || result.ToolCallCount != 1 {
		t.Fatalf("result %+v", result)
	}
}

func TestBreakingOutOfAStreamEndsTheRun(t *testing.T) {
	srv := sseProvider(t)
	tk := adderToolkit(t)
	c := newStreamClient(t, srv, toolnexus.ClientOptions{})
	n := 0
	for range c.Stream(context.Background(), tk, "add 2 and 3") {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("got %d events", n)
	}
	// The client is still usable afterwards.
	r, err := c.Ask(context.Background(), tk, "hi")
	if err != nil || r.Text != "1" {
		t.Fatalf("ask after a broken stream: %v %+v", err, r)
	}
}

func TestAskStreamGivesTextDeltasAndTheResult(t *testing.T) {
	srv := sseProvider(t)
	tk := adderToolkit(t)
	c := newStreamClient(t, srv, toolnexus.ClientOptions{})
	var deltas []string
	r, err := c.AskStream(context.Background(), tk, "add 2 and 3", func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(deltas, "|") != "The sum |is 5." || r.Text != "The sum is 5." {
		t.Fatalf("deltas %q result %q", deltas, r.Text)
	}
}

type mapStore struct {
	mu    sync.Mutex
	m     map[string]json.RawMessage
	saves int
}

func (s *mapStore) Get(ctx context.Context, id string) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id], nil
}

func (s *mapStore) Save(ctx context.Context, id string, messages json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = append(json.RawMessage(nil), messages...)
	s.saves++
	return nil
}

func TestAskWithAnIDRemembersInMemoryAndInAHostStore(t *testing.T) {
	srv := sseProvider(t)
	tk := adderToolkit(t)
	for _, store := range []*mapStore{nil, {m: map[string]json.RawMessage{}}} {
		opts := toolnexus.ClientOptions{}
		if store != nil {
			opts.Store = store
		}
		c := newStreamClient(t, srv, opts)
		for i, want := range []string{"1", "3", "5"} {
			r, err := c.Ask(context.Background(), tk, fmt.Sprint("q", i), toolnexus.WithID("t1"))
			if err != nil || r.Text != want {
				t.Fatalf("ask %d: %v %+v (want %s)", i, err, r, want)
			}
		}
		if r, err := c.Ask(context.Background(), tk, "other"); err != nil || r.Text != "1" {
			t.Fatalf("stateless ask: %v %+v", err, r)
		}
		if store != nil && store.saves != 3 {
			t.Fatalf("host store saved %d times", store.saves)
		}
	}
}

func TestMetricsAndOnMetricFollowARun(t *testing.T) {
	srv := sseProvider(t)
	tk := adderToolkit(t)
	var mu sync.Mutex
	var events []toolnexus.MetricEvent
	c := newStreamClient(t, srv, toolnexus.ClientOptions{OnMetric: func(ev toolnexus.MetricEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}})
	before, err := c.Metrics()
	if err != nil || strings.Contains(before, "\ntoolnexus_") || !strings.HasSuffix(before, "counter\n") {
		t.Fatalf("metrics before: %v %q", err, before)
	}
	if _, err := c.AskStream(context.Background(), tk, "add 2 and 3", nil); err != nil {
		t.Fatal(err)
	}
	text, err := c.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"\ntoolnexus_llm_requests_total{model=\"m\",status=\"ok\"} 2\n",
		"\ntoolnexus_llm_tokens_total{type=\"prompt\"} 11\n",
		"\ntoolnexus_tool_calls_total{tool=\"add\",source=\"native\",is_error=\"false\",pending=\"false\"} 1\n",
	} {
		if !strings.Contains(text, line) {
			t.Fatalf("missing %q in\n%s", line, text)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Event)
	}
	if strings.Join(kinds, ",") != "llm,tool,llm,run" {
		t.Fatalf("metric events %v", kinds)
	}
	if last := events[len(events)-1]; last.Turns != 2 || last.ToolCalls != 1 || last.TotalTokens != 16 {
		t.Fatalf("run event %+v", last)
	}
}
