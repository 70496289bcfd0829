package toolnexus

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// CountTokens (tn_count_tokens, CONTRACT §6A) against a mock provider on
// 127.0.0.1: the count read back, the call it made, a provider error typed.

func TestCountTokensAnthropicStyle(t *testing.T) {
	srv := mockProvider(t, cannedResponse{Status: 200, Body: json.RawMessage(`{"input_tokens": 42}`)})
	tk := mustBuild(t, `{"builtins":false,"skills":[{"name":"greet","description":"Greets.","content":"Say hello."}]}`)
	client := map[string]any{"baseUrl": srv.base(), "style": "anthropic", "model": "claude-test", "apiKey": "test-key", "retries": 0}
	request := map[string]any{"messages": []map[string]any{{"role": "user", "content": "Hi"}}, "maxTokens": 100}
	out, err := CountTokens(context.Background(), client, request, tk)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["inputTokens"] != float64(42) || got["style"] != "anthropic" || got["model"] != "claude-test" {
		t.Fatalf("answer %s", out)
	}
	reqs := srv.recorded()
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/v1/messages/count_tokens" {
		t.Fatalf("requests %+v", reqs)
	}
	if key := reqs[0].Headers["x-api-key"]; len(key) != 1 || key[0] != "test-key" {
		t.Fatalf("x-api-key %q", key)
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	// The toolkit's tools are counted; the generation-only max_tokens is not sent.
	if _, ok := body["max_tokens"]; ok || body["model"] != "claude-test" || !strings.Contains(string(reqs[0].Body), `"name":"skill"`) {
		t.Fatalf("body %s", reqs[0].Body)
	}
}

func TestCountTokensChatStyleCountsAtResponsesInputTokens(t *testing.T) {
	srv := mockProvider(t, cannedResponse{Status: 200, Body: json.RawMessage(`{"object":"response.input_tokens","input_tokens":9}`)})
	client := map[string]any{"baseUrl": srv.base() + "/v1", "style": "openai", "model": "gpt-test", "apiKey": "k", "retries": 0}
	out, err := CountTokens(context.Background(), client, `{"messages":[{"role":"user","content":"Hi"}]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"inputTokens":9,"style":"openai","model":"gpt-test"}` {
		t.Fatalf("answer %s", out)
	}
	if reqs := srv.recorded(); len(reqs) != 1 || reqs[0].Path != "/v1/responses/input_tokens" {
		t.Fatalf("requests %+v", reqs)
	}
}

func TestCountTokensProviderErrorIsTyped(t *testing.T) {
	body := "no such model"
	srv := mockProvider(t, cannedResponse{Status: 404, BodyText: &body})
	client := map[string]any{"baseUrl": srv.base(), "style": "anthropic", "model": "m", "apiKey": "k", "retries": 0}
	_, err := CountTokens(context.Background(), client, `{"messages":[{"role":"user","content":"Hi"}]}`, nil)
	e := wantCode(t, err, "provider_error", StatusProviderError)
	if !strings.Contains(e.Message, "404") || !strings.Contains(e.Message, body) {
		t.Fatalf("message does not carry the status and the body: %s", e.Message)
	}
}

func TestCountTokensBadClientIsInvalidConfig(t *testing.T) {
	_, err := CountTokens(context.Background(), map[string]any{"baseUrl": "http://127.0.0.1:1", "style": "klingon", "model": "m"},
		`{"messages":[{"role":"user","content":"Hi"}]}`, nil)
	wantCode(t, err, "invalid_config", StatusInvalidConfig)
}

// A context already done is never sent.
func TestCountTokensCancelledContextIsNotStarted(t *testing.T) {
	srv := mockProvider(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := CountTokens(ctx, map[string]any{"baseUrl": srv.base(), "style": "anthropic", "model": "m"},
		`{"messages":[{"role":"user","content":"Hi"}]}`, nil)
	wantCode(t, err, "cancelled", StatusCancelled)
	if n := len(srv.recorded()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
