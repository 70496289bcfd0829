package toolnexus

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// elicitToolkit builds a toolkit over tests/mcp_servers/sdk_elicit_server.py
// (the official Python MCP SDK; its tools call ctx.elicit and ctx.elicit_url).
func elicitToolkit(t *testing.T, waitFor WaitForFunc) *Toolkit {
	t.Helper()
	server, err := filepath.Abs("../../tests/mcp_servers/sdk_elicit_server.py")
	if err != nil {
		t.Fatal(err)
	}
	tk, err := Build(context.Background(), map[string]any{
		"builtins": false,
		"mcpConfig": map[string]any{"mcpServers": map[string]any{
			"el": map[string]any{"command": []string{"python3", server, "stdio"}, "timeout": 20000}}},
	}, WithWaitFor(waitFor))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	return tk
}

// toolText is the tool's text (the SDK returns a str as {"result": text}).
func toolText(t *testing.T, tk *Toolkit, ctx context.Context, tool string, execCtx any) (string, *ToolResult) {
	t.Helper()
	r, err := tk.ExecuteWithContext(ctx, tool, map[string]any{}, execCtx)
	if err != nil {
		t.Fatal(err)
	}
	var wrapped struct {
		Result string `json:"result"`
	}
	if json.Unmarshal([]byte(r.Output), &wrapped) == nil && wrapped.Result != "" {
		return wrapped.Result, r
	}
	return r.Output, r
}

func TestWaitForAnswersAnMcpServersElicitation(t *testing.T) {
	var asked atomic.Pointer[Request]
	tk := elicitToolkit(t, func(ctx context.Context, req Request) (Answer, error) {
		asked.Store(&req)
		switch {
		case req.Kind == "input":
			return Answer{OK: true, Data: json.RawMessage(`{"name":"Ada","age":36}`)}, nil
		case req.Kind == "authorization" && req.URL != "":
			return Answer{OK: true}, nil
		}
		return Answer{OK: false, Reason: "declined"}, nil
	})
	ctx := context.Background()
	if got, _ := toolText(t, tk, ctx, "el_client_caps", nil); !strings.Contains(got, "form") || !strings.Contains(got, "url") {
		t.Fatalf("capability %q: want form and url", got)
	}
	if got, r := toolText(t, tk, ctx, "el_ask_name", nil); got != "accepted: name=Ada age=36" {
		t.Fatalf("ask_name: %q (%+v)", got, r)
	}
	req := asked.Load()
	var data struct {
		Schema struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"schema"`
	}
	if err := json.Unmarshal(req.Data, &data); err != nil || data.Schema.Properties["name"]["type"] != "string" {
		t.Fatalf("request %s: want data.schema with a string name (%v)", req.Raw, err)
	}
	if req.Prompt != "Who are you?" || req.ID == "" {
		t.Fatalf("request %s", req.Raw)
	}
	if got, _ := toolText(t, tk, ctx, "el_login", nil); got != "accept" {
		t.Fatalf("login: %q", got)
	}
	if req := asked.Load(); req.Kind != "authorization" || req.URL != "https://auth.example/authorize?client=tn" {
		t.Fatalf("request %s: want an authorization request with the link", req.Raw)
	}
}

func TestWaitForRefusalsAndFailuresGiveCleanResults(t *testing.T) {
	var mode atomic.Int32
	tk := elicitToolkit(t, func(ctx context.Context, req Request) (Answer, error) {
		switch mode.Load() {
		case 0:
			return Answer{OK: false, Reason: "declined"}, nil
		case 1:
			return Answer{OK: false, Reason: "cancelled"}, nil
		case 2:
			return Answer{}, errors.New("no human here")
		default:
			panic("the waitFor blew up")
		}
	})
	ctx := context.Background()
	for i, want := range []string{"decline", "cancel", "refused: the waitFor callback failed: no human here", "waitFor panicked: the waitFor blew up"} {
		mode.Store(int32(i))
		got, r := toolText(t, tk, ctx, "el_ask_name", nil)
		if !strings.Contains(got, want) || r.IsError {
			t.Fatalf("mode %d: %q (isError %v), want %q", i, got, r.IsError, want)
		}
	}
}

func TestWithoutWaitForElicitationIsNotAdvertised(t *testing.T) {
	tk := elicitToolkit(t, nil)
	ctx := context.Background()
	if got, _ := toolText(t, tk, ctx, "el_client_caps", nil); got != "none" {
		t.Fatalf("capability %q: want none", got)
	}
	if got, _ := toolText(t, tk, ctx, "el_ask_name", nil); !strings.Contains(got, "without a waitFor") {
		t.Fatalf("ask_name %q: want the refusal", got)
	}
}

func TestWaitForContextEndsWithTheCall(t *testing.T) {
	ended := make(chan error, 1)
	tk := elicitToolkit(t, func(ctx context.Context, req Request) (Answer, error) {
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
		case <-time.After(15 * time.Second):
			ended <- errors.New("never cancelled")
		}
		return Answer{OK: true, Data: json.RawMessage(`{"name":"too late"}`)}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(300 * time.Millisecond)
		cancel()
	}()
	r, err := tk.Execute(ctx, "el_ask_name", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || !strings.Contains(r.Output, "cancelled") {
		t.Fatalf("result %+v: want a cancelled error", r)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("waitFor's ctx: %v", err)
	}
	// The deadline of the call (timeoutMs) ends the wait the same way.
	if _, r := toolText(t, tk, context.Background(), "el_ask_name", map[string]any{"timeoutMs": 400}); !r.IsError || !strings.Contains(r.Output, "timeout") {
		t.Fatalf("result %+v: want a timeout error", r)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("waitFor's ctx: %v", err)
	}
}
