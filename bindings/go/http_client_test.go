package toolnexus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	toolnexus "github.com/toolnexus/toolnexus-rs/bindings/go"
)

// ClientOptions.HTTPClient (the httpClient slot, SPEC §8 Gap 2) with the
// typed HTTPRequest and HTTPResponse: runs whose LLM calls go through a Go
// func, forwarded by HTTPRequest.Send to a provider on 127.0.0.1 that
// records what it received.

// received is one request the recording provider got.
type received struct {
	Path    string
	Headers http.Header
	Body    []byte
}

// recordingProvider answers like an OpenAI endpoint: "via <X-Via>" as one
// JSON message, or in two SSE deltas when the request streams; it keeps
// every request.
type recordingProvider struct {
	*httptest.Server
	mu   sync.Mutex
	seen []received
}

func newRecordingProvider(t *testing.T) *recordingProvider {
	t.Helper()
	p := &recordingProvider{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.seen = append(p.seen, received{r.URL.Path, r.Header.Clone(), body})
		p.mu.Unlock()
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		answer := "via " + r.Header.Get("X-Via")
		if !req.Stream {
			w.Header().Set("content-type", "application/json")
			reply, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0,
				"message": map[string]any{"role": "assistant", "content": answer}, "finish_reason": "stop"}}})
			_, _ = w.Write(reply)
			return
		}
		w.Header().Set("content-type", "text/event-stream")
		half := len(answer) / 2
		for _, d := range []string{answer[:half], answer[half:]} {
			chunk, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0,
				"delta": map[string]any{"content": d}}}})
			fmt.Fprintf(w, "data: %s\n\n", chunk)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *recordingProvider) received() []received {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]received(nil), p.seen...)
}

// viaGo is an HTTPClient that keeps each HTTPRequest it is given, sends it
// to the provider in place of the unreachable host of the client's
// baseUrl, with an X-Via header the library never sets; fail, when set,
// answers an attempt instead.
type viaGo struct {
	provider *recordingProvider
	mu       sync.Mutex
	requests []toolnexus.HTTPRequest
	fail     func(n int) (resp toolnexus.HTTPResponse, answered bool, err error)
}

const unreachable = "http://provider.invalid"

func (v *viaGo) do(ctx context.Context, req toolnexus.HTTPRequest) (toolnexus.HTTPResponse, error) {
	v.mu.Lock()
	v.requests = append(v.requests, req)
	n := len(v.requests)
	v.mu.Unlock()
	if v.fail != nil {
		if resp, answered, err := v.fail(n); answered {
			return resp, err
		}
	}
	req.URL = strings.Replace(req.URL, unreachable, v.provider.URL, 1)
	req.Headers["X-Via"] = "go"
	return req.Send(ctx, v.provider.Client())
}

func (v *viaGo) seen() []toolnexus.HTTPRequest {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]toolnexus.HTTPRequest(nil), v.requests...)
}

func viaGoClient(t *testing.T, v *viaGo, extra map[string]any) *toolnexus.Client {
	t.Helper()
	cfg := map[string]any{"baseUrl": unreachable + "/v1", "style": "openai", "model": "m", "apiKey": "sk-go"}
	for k, x := range extra {
		cfg[k] = x
	}
	c, err := toolnexus.NewClient(toolnexus.ClientOptions{Config: cfg, HTTPClient: v.do})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestHTTPClientCarriesARunsCallToTheProvider(t *testing.T) {
	v := &viaGo{provider: newRecordingProvider(t)}
	c := viaGoClient(t, v, nil)
	res, err := c.Run(context.Background(), nil, "hi there")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "via go" || res.Status != "done" {
		t.Fatalf("result %q (%s)", res.Text, res.Status)
	}
	seen := v.seen()
	if len(seen) != 1 {
		t.Fatalf("%d calls through the func, want 1", len(seen))
	}
	req := seen[0]
	if req.Method != "POST" || req.URL != unreachable+"/v1/chat/completions" || req.Stream {
		t.Fatalf("request %s %s stream=%v", req.Method, req.URL, req.Stream)
	}
	if req.Headers["authorization"] != "Bearer sk-go" {
		t.Fatalf("headers %v", req.Headers)
	}
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatalf("body %s: %v", req.Body, err)
	}
	last := body.Messages[len(body.Messages)-1]
	if body.Model != "m" || last.Role != "user" || last.Content != "hi there" {
		t.Fatalf("body %s", req.Body)
	}
	var raw map[string]any
	if err := json.Unmarshal(req.Raw, &raw); err != nil || raw["body"] != string(req.Body) {
		t.Fatalf("raw %s: %v", req.Raw, err)
	}

	// What the provider received: the library's request, byte for byte,
	// with the func's header beside the client's credentials.
	got := v.provider.received()
	if len(got) != 1 {
		t.Fatalf("the provider got %d requests", len(got))
	}
	if got[0].Path != "/v1/chat/completions" || got[0].Headers.Get("Authorization") != "Bearer sk-go" ||
		got[0].Headers.Get("X-Via") != "go" || string(got[0].Body) != string(req.Body) {
		t.Fatalf("the provider got %s %v %s", got[0].Path, got[0].Headers, got[0].Body)
	}
}

func TestHTTPClientRetriesA429AndStreams(t *testing.T) {
	v := &viaGo{provider: newRecordingProvider(t)}
	// The first attempt is answered by the func itself: too many requests.
	v.fail = func(n int) (toolnexus.HTTPResponse, bool, error) {
		if n > 1 {
			return toolnexus.HTTPResponse{}, false, nil
		}
		return toolnexus.HTTPResponse{Status: 429, Headers: map[string]string{"Retry-After": "0"},
			Body: []byte(`{"error":{"message":"slow down"}}`)}, true, nil
	}
	c := viaGoClient(t, v, map[string]any{"retries": 2, "retryBaseMs": 1})
	var deltas []string
	res, err := c.AskStream(context.Background(), nil, "hi", func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "via go" || strings.Join(deltas, "|") != "via| go" {
		t.Fatalf("text %q, deltas %q", res.Text, deltas)
	}
	seen := v.seen()
	if len(seen) != 2 || !seen[0].Stream || !seen[1].Stream {
		t.Fatalf("calls through the func: %+v", seen)
	}
	if got := v.provider.received(); len(got) != 1 || !strings.Contains(string(got[0].Body), `"stream":true`) {
		t.Fatalf("the provider got %+v", got)
	}
}

var errNoRoute = errors.New("no route to the provider")

func TestHTTPClientFailuresEndTheRun(t *testing.T) {
	v := &viaGo{provider: newRecordingProvider(t)}
	v.fail = func(int) (toolnexus.HTTPResponse, bool, error) { return toolnexus.HTTPResponse{}, true, errNoRoute }
	c := viaGoClient(t, v, nil)
	_, err := c.Run(context.Background(), nil, "hi")
	if !errors.Is(err, errNoRoute) || !errors.Is(err, &toolnexus.Error{Code: "callback_error"}) ||
		!strings.Contains(err.Error(), "httpClient") {
		t.Fatalf("got %v", err)
	}

	// An answer without a status is the func's error too, named.
	v.fail = func(int) (toolnexus.HTTPResponse, bool, error) {
		return toolnexus.HTTPResponse{Body: []byte("{}")}, true, nil
	}
	_, err = c.Run(context.Background(), nil, "hi")
	var e *toolnexus.Error
	if !errors.As(err, &e) || e.Code != "callback_error" || !strings.Contains(e.Message, "status") {
		t.Fatalf("got %v", err)
	}

	// A provider's error status, answered through the func, is the run's
	// provider_error with the status.
	v.fail = func(int) (toolnexus.HTTPResponse, bool, error) {
		return toolnexus.HTTPResponse{Status: 400, Body: []byte(`{"error":{"message":"bad model"}}`)}, true, nil
	}
	_, err = c.Run(context.Background(), nil, "hi")
	if !errors.As(err, &e) || e.Code != "provider_error" || !strings.Contains(e.Message, "bad model") {
		t.Fatalf("got %v", err)
	}
	if got := v.provider.received(); len(got) != 0 {
		t.Fatalf("the provider got %d requests", len(got))
	}
}

func ExampleHTTPRequest_Send() {
	// A provider on 127.0.0.1 that says which header reached it.
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"team %s"},"finish_reason":"stop"}]}`,
			r.Header.Get("X-Team"))
	}))
	defer provider.Close()
	c, err := toolnexus.NewClient(toolnexus.ClientOptions{
		Config: map[string]any{"baseUrl": provider.URL + "/v1", "model": "m"},
		// Every LLM call goes through this func: here a header is added and
		// the request sent with net/http.
		HTTPClient: func(ctx context.Context, req toolnexus.HTTPRequest) (toolnexus.HTTPResponse, error) {
			req.Headers["X-Team"] = "blue"
			return req.Send(ctx, nil)
		},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	res, err := c.Run(context.Background(), nil, "hi")
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text)
	// Output: team blue
}
