package toolnexus

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

const openaiAnswer = `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-test-2024",
 "choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hello there"}}],
 "usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`

func mockProvider(t *testing.T, responses ...cannedResponse) *mockServer {
	t.Helper()
	srv, err := startMockServer()
	if err != nil {
		t.Fatal(err)
	}
	srv.setResponses(responses)
	t.Cleanup(srv.close)
	return srv
}

func TestTranslateOpenAIStyle(t *testing.T) {
	srv := mockProvider(t, cannedResponse{Status: 200, Body: json.RawMessage(openaiAnswer)})
	tk := mustBuild(t, `{"builtins":false,"skills":[{"name":"greet","description":"Greets.","content":"Say hello."}]}`)
	client := map[string]any{"baseUrl": srv.base(), "style": "openai", "model": "gpt-test", "apiKey": "test-key"}
	request := map[string]any{"messages": []map[string]any{{"role": "user", "content": "Hi"}}}
	out, err := Translate(context.Background(), client, request, tk)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Text         string
		FinishReason string
		ToolCalls    []any
		Usage        struct{ PromptTokens, CompletionTokens, TotalTokens int }
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if res.Text != "hello there" || res.FinishReason != "stop" || len(res.ToolCalls) != 0 || res.Usage.TotalTokens != 15 {
		t.Fatalf("result %s", out)
	}
	reqs := srv.recorded()
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/chat/completions" {
		t.Fatalf("requests %+v", reqs)
	}
	if got := reqs[0].Headers["authorization"]; len(got) != 1 || got[0] != "Bearer test-key" {
		t.Fatalf("authorization %q", got)
	}
	// The toolkit's tools are declared to the provider, never executed.
	if !strings.Contains(string(reqs[0].Body), `"name":"skill"`) {
		t.Fatalf("toolkit tools not declared: %s", reqs[0].Body)
	}
}

func TestTranslateProviderErrorIsTyped(t *testing.T) {
	body := "no such model"
	srv := mockProvider(t, cannedResponse{Status: 400, BodyText: &body})
	client := map[string]any{"baseUrl": srv.base(), "style": "openai", "model": "m", "apiKey": "k", "retries": 0}
	_, err := Translate(context.Background(), client, `{"messages":[{"role":"user","content":"Hi"}]}`, nil)
	e := wantCode(t, err, "provider_error", StatusProviderError)
	if !strings.Contains(e.Message, "400") || !strings.Contains(e.Message, body) {
		t.Fatalf("message does not carry the status and the body: %s", e.Message)
	}
}

// Cancelling the context aborts the call in flight: the provider here would
// answer only after a minute.
func TestTranslateCancelledByContext(t *testing.T) {
	srv := mockProvider(t, cannedResponse{Status: 200, Body: json.RawMessage(openaiAnswer), DelayMs: 60_000})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(srv.recorded()) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	client := map[string]any{"baseUrl": srv.base(), "style": "openai", "model": "m", "apiKey": "k"}
	_, err := Translate(ctx, client, `{"messages":[{"role":"user","content":"Hi"}]}`, nil)
	wantCode(t, err, "cancelled", StatusCancelled)
	cancel()
}

func TestTranslateWithCancelledContextSendsNothing(t *testing.T) {
	srv := mockProvider(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	client := map[string]any{"baseUrl": srv.base(), "style": "openai", "model": "m"}
	_, err := Translate(ctx, client, `{"messages":[]}`, nil)
	wantCode(t, err, "cancelled", StatusCancelled)
	if n := len(srv.recorded()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
