package toolnexus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// openaiCall is an OpenAI chat completion asking for tool calls.
func openaiCall(calls ...[3]string) cannedResponse {
	var tcs []map[string]any
	for _, c := range calls {
		tcs = append(tcs, map[string]any{"id": c[0], "type": "function",
			"function": map[string]any{"name": c[1], "arguments": c[2]}})
	}
	body, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{
		"index": 0, "finish_reason": "tool_calls",
		"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": tcs}}}})
	return cannedResponse{Status: 200, Body: body}
}

func openaiText(text string) cannedResponse {
	body, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{
		"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}},
		"usage": map[string]any{"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
	return cannedResponse{Status: 200, Body: body}
}

func textResponse(status int, text string) cannedResponse {
	return cannedResponse{Status: status, BodyText: &text}
}

// loopWorld is a mock provider and a client for it.
func loopWorld(t *testing.T, extra map[string]any, opts ClientOptions, responses ...cannedResponse) (*mockServer, *Client) {
	t.Helper()
	srv, err := startMockServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.close)
	srv.setResponses(responses)
	cfg := map[string]any{"baseUrl": srv.base(), "style": "openai", "model": "m", "apiKey": "k", "retries": 0}
	for k, v := range extra {
		cfg[k] = v
	}
	opts.Config = cfg
	c, err := NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, c
}

func questionToolkit(t *testing.T) *Toolkit {
	t.Helper()
	tk, err := Build(context.Background(), `{"builtins":{"tools":{"apply_patch":false,"bash":false,"edit":false,"glob":false,"grep":false,"read":false,"todowrite":false,"webfetch":false,"write":false}}}`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	return tk
}

const askName = `{"questions":[{"question":"What is your name?"}]}`

// lastToolMessage is the content of the last "tool" message sent in the
// provider request i.
func lastToolMessage(t *testing.T, srv *mockServer, i int) string {
	t.Helper()
	reqs := srv.recorded()
	if len(reqs) <= i {
		t.Fatalf("%d provider requests, want more than %d", len(reqs), i)
	}
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(reqs[i].Body, &body); err != nil {
		t.Fatal(err)
	}
	for j := len(body.Messages) - 1; j >= 0; j-- {
		if body.Messages[j]["role"] == "tool" {
			s, _ := body.Messages[j]["content"].(string)
			return s
		}
	}
	t.Fatalf("no tool message in request %d", i)
	return ""
}

func TestRunWaitForAnsweredReRunsTheToolWithTheAnswer(t *testing.T) {
	var asked []Request
	srv, c := loopWorld(t, nil, ClientOptions{WaitFor: func(ctx context.Context, req Request) (Answer, error) {
		asked = append(asked, req)
		return Answer{OK: true, Data: json.RawMessage(`{"answers":[["Ada"]]}`)}, nil
	}}, openaiCall([3]string{"c1", "question", askName}), openaiText("Hi Ada."))
	res, err := c.Run(context.Background(), questionToolkit(t), "Ask my name.")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "done" || res.Text != "Hi Ada." || res.Turns != 2 {
		t.Fatalf("got %s", res.Raw)
	}
	if len(asked) != 1 || asked[0].Kind != "question" || asked[0].Prompt != "What is your name?" {
		t.Fatalf("waitFor saw %+v", asked)
	}
	if got := lastToolMessage(t, srv, 1); got != `{"answers":[["Ada"]]}` {
		t.Fatalf("fed back %q", got)
	}
	if res.ToolCalls[0].IsError || res.Usage.TotalTokens != 5 {
		t.Fatalf("got %s", res.Raw)
	}
}

func TestRunWaitForDeclinedFeedsBackDeclined(t *testing.T) {
	srv, c := loopWorld(t, nil, ClientOptions{WaitFor: func(ctx context.Context, req Request) (Answer, error) {
		return Answer{ID: req.ID, OK: false, Reason: "declined"}, nil
	}}, openaiCall([3]string{"c1", "question", askName}), openaiText("OK."))
	res, err := c.Run(context.Background(), questionToolkit(t), "Ask.")
	if err != nil {
		t.Fatal(err)
	}
	if got := lastToolMessage(t, srv, 1); got != "declined/expired: What is your name?" {
		t.Fatalf("fed back %q", got)
	}
	if !res.ToolCalls[0].IsError || res.Status != "done" {
		t.Fatalf("got %s", res.Raw)
	}
}

func TestRunASecondSuspensionIsUnresolved(t *testing.T) {
	tk := questionToolkit(t)
	var runs atomic.Int32
	err := tk.RegisterResult("login", "needs a login", nil, func(ctx context.Context, args json.RawMessage) (*ToolResult, error) {
		runs.Add(1)
		return &ToolResult{Output: "Login required", IsError: true, Metadata: map[string]any{
			"pending": map[string]any{"id": "auth-1", "kind": "authorization", "prompt": "Log in", "url": "https://example.invalid/login"}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, c := loopWorld(t, nil, ClientOptions{WaitFor: func(ctx context.Context, req Request) (Answer, error) {
		if req.URL != "https://example.invalid/login" {
			t.Errorf("request %s", req.Raw)
		}
		return Answer{OK: true}, nil
	}}, openaiCall([3]string{"c1", "login", "{}"}), openaiText("Still locked."))
	if _, err := c.Run(context.Background(), tk, "Go."); err != nil {
		t.Fatal(err)
	}
	if got := lastToolMessage(t, srv, 1); got != "unresolved: Log in" {
		t.Fatalf("fed back %q", got)
	}
	if runs.Load() != 2 {
		t.Fatalf("the tool ran %d times, want 2 (once, then once with the answer)", runs.Load())
	}
}

func TestRunHaltsPendingAndResumes(t *testing.T) {
	tk := questionToolkit(t)
	srv, c := loopWorld(t, nil, ClientOptions{},
		openaiCall([3]string{"c1", "question", askName}, [3]string{"c2", "question", askName}),
		openaiText("Thanks, Ada."))
	halted, err := c.Run(context.Background(), tk, "Ask.")
	if err != nil {
		t.Fatal(err)
	}
	if halted.Status != "pending" || halted.Pending == nil || halted.Text != "What is your name?" {
		t.Fatalf("got %s", halted.Raw)
	}
	// The halt keeps the first call's placeholder only.
	var msgs []map[string]any
	_ = json.Unmarshal(halted.Messages, &msgs)
	if len(msgs) != 3 || msgs[2]["content"] != "What is your name?" {
		t.Fatalf("halted transcript %s", halted.Messages)
	}

	if _, err := c.Resume(context.Background(), tk, halted.Messages, *halted.Pending, Answer{ID: "other", OK: true}); !errors.Is(err, &Error{Code: "invalid_argument"}) {
		t.Fatalf("a mismatched answer id gave %v", err)
	}
	res, err := c.Resume(context.Background(), tk, halted.Messages, *halted.Pending,
		Answer{OK: true, Data: json.RawMessage(`{"answers":[["Ada"]]}`)})
	if err != nil {
		t.Fatal(err)
	}
	// The second call suspends again and, without waitFor, halts again: its
	// slot is its placeholder, the first call's is the answer.
	if res.Status != "pending" {
		t.Fatalf("got %s", res.Raw)
	}
	_ = json.Unmarshal(res.Messages, &msgs)
	if len(msgs) != 4 || msgs[2]["content"] != `{"answers":[["Ada"]]}` || msgs[3]["tool_call_id"] != "c2" {
		t.Fatalf("resumed transcript %s", res.Messages)
	}
	final, err := c.Resume(context.Background(), tk, res.Messages, *res.Pending, Answer{OK: false, Reason: "cancelled"})
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != "done" || final.Text != "Thanks, Ada." {
		t.Fatalf("got %s", final.Raw)
	}
	if got := lastToolMessage(t, srv, 1); got != "declined/expired: What is your name?" {
		t.Fatalf("fed back %q", got)
	}
	if n := len(srv.recorded()); n != 2 {
		t.Fatalf("%d provider requests, want 2 (no new user turn, no extra call)", n)
	}
}

func TestRunHooksRewriteArgsAndReplaceResults(t *testing.T) {
	tk := questionToolkit(t)
	if err := tk.Register("echo", "echoes", nil, func(ctx context.Context, args json.RawMessage) (string, error) {
		return string(args), nil
	}); err != nil {
		t.Fatal(err)
	}
	var turns []int
	srv, c := loopWorld(t, nil, ClientOptions{Hooks: Hooks{
		BeforeLLM: func(ctx context.Context, ev LLMEvent) (*LLMOverride, error) {
			turns = append(turns, ev.Turn)
			if ev.Turn == 1 {
				return &LLMOverride{Tools: json.RawMessage(`[]`)}, nil
			}
			return nil, nil
		},
		BeforeTool: func(ctx context.Context, ev ToolEvent) (*ToolOverride, error) {
			return &ToolOverride{Args: json.RawMessage(`{"x":2}`)}, nil
		},
		AfterTool: func(ctx context.Context, ev ToolEvent) (*ToolResult, error) {
			return &ToolResult{Output: "after:" + ev.Result.Output + ":" + string(ev.Args)}, nil
		},
	}}, openaiCall([3]string{"c1", "echo", `{"x":1}`}), openaiText("done"))
	res, err := c.Run(context.Background(), tk, "Echo.")
	if err != nil {
		t.Fatal(err)
	}
	if got := lastToolMessage(t, srv, 1); got != `after:{"x":2}:{"x":2}` {
		t.Fatalf("fed back %q", got)
	}
	if string(res.ToolCalls[0].Args) != `{"x":2}` || len(turns) != 2 {
		t.Fatalf("got %s, turns %v", res.Raw, turns)
	}
	var second map[string]any
	_ = json.Unmarshal(srv.recorded()[1].Body, &second)
	if _, has := second["tools"]; has {
		t.Fatalf("tools were sent after beforeLLM dropped them: %s", srv.recorded()[1].Body)
	}
}

var errDenied = errors.New("denied by the host")

func TestRunACallbackErrorEndsTheRunWithIt(t *testing.T) {
	tk := questionToolkit(t)
	_, c := loopWorld(t, nil, ClientOptions{Hooks: Hooks{
		BeforeTool: func(ctx context.Context, ev ToolEvent) (*ToolOverride, error) { return nil, errDenied },
	}}, openaiCall([3]string{"c1", "question", askName}), openaiText("never"))
	_, err := c.Run(context.Background(), tk, "Ask.")
	if !errors.Is(err, errDenied) || !errors.Is(err, &Error{Code: "callback_error"}) {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "beforeTool") {
		t.Fatalf("the error does not name the slot: %v", err)
	}
}

func TestRunAPanickingHookPanicsInTheCaller(t *testing.T) {
	_, c := loopWorld(t, nil, ClientOptions{Hooks: Hooks{
		BeforeLLM: func(ctx context.Context, ev LLMEvent) (*LLMOverride, error) { panic("hook bug") },
	}}, openaiText("never"))
	defer func() {
		if p := recover(); p != "hook bug" {
			t.Fatalf("recovered %v, want the hook's panic", p)
		}
	}()
	_, _ = c.Run(context.Background(), nil, "Hi.")
	t.Fatal("Run returned; the hook's panic should have reached the caller")
}

func TestRunOnErrorRetriesAndFails(t *testing.T) {
	var seen []ErrorInfo
	srv, c := loopWorld(t, map[string]any{"retries": 2, "retryBaseMs": 1}, ClientOptions{
		OnError: func(ctx context.Context, info ErrorInfo) (string, error) {
			seen = append(seen, info)
			return "retry", nil // even a 400, which the default would not retry
		}}, textResponse(400, "bad"), openaiText("recovered"))
	res, err := c.Run(context.Background(), nil, "Hi.")
	if err != nil || res.Text != "recovered" {
		t.Fatalf("got %v %v", res, err)
	}
	if len(seen) != 1 || seen[0].Status != 400 || seen[0].Retryable || seen[0].Error != "bad" {
		t.Fatalf("onError saw %+v", seen)
	}
	if n := len(srv.recorded()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}

	srv2, c2 := loopWorld(t, map[string]any{"retries": 3, "retryBaseMs": 1}, ClientOptions{
		OnError: func(ctx context.Context, info ErrorInfo) (string, error) { return "fail", nil },
	}, textResponse(503, "busy"), openaiText("never"))
	_, err = c2.Run(context.Background(), nil, "Hi.")
	if !errors.Is(err, &Error{Code: "provider_error"}) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("got %v", err)
	}
	if n := len(srv2.recorded()); n != 1 {
		t.Fatalf("%d requests, want 1 (fail skips the retries)", n)
	}

	// A retry verdict is still bounded by retries.
	srv3, c3 := loopWorld(t, map[string]any{"retries": 1, "retryBaseMs": 1}, ClientOptions{
		OnError: func(ctx context.Context, info ErrorInfo) (string, error) { return "retry", nil },
	}, textResponse(500, "a"), textResponse(500, "b"), openaiText("never"))
	if _, err := c3.Run(context.Background(), nil, "Hi."); !errors.Is(err, &Error{Code: "provider_error"}) {
		t.Fatalf("got %v", err)
	}
	if n := len(srv3.recorded()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

func TestRunCancelledFromAnotherGoroutine(t *testing.T) {
	slow := openaiText("late")
	slow.DelayMs = 30000
	_, c := loopWorld(t, nil, ClientOptions{}, slow)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	_, err := c.Run(ctx, nil, "Hi.")
	if !errors.Is(err, &Error{Code: "cancelled"}) {
		t.Fatalf("got %v", err)
	}
}

// dripServer's answer takes about 3 s to arrive: a head, then 60 spaces one
// every 50 ms, then a whole final answer. Without a deadline over the whole
// response, a run against it succeeds.
func dripServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); ln.Close() })
	answer := openaiText("late").Body
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func(conn net.Conn) {
				defer conn.Close()
				buf := make([]byte, 64*1024)
				_, _ = conn.Read(buf)
				fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n", 60+len(answer))
				for i := 0; i < 60; i++ {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
				}
				_, _ = conn.Write(answer)
			}(conn)
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestRunTimeoutBoundsASlowDripResponse(t *testing.T) {
	base := dripServer(t)
	c, err := NewClient(ClientOptions{Config: map[string]any{
		"baseUrl": base, "style": "openai", "model": "m", "apiKey": "k", "retries": 0, "timeoutMs": 300}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Run(context.Background(), nil, "Hi.")
	if !errors.Is(err, &Error{Code: "timeout"}) || !strings.Contains(err.Error(), "timeoutMs") {
		t.Fatalf("got %v", err)
	}
}

func TestRunOnAClosedClientFails(t *testing.T) {
	_, c := loopWorld(t, nil, ClientOptions{}, openaiText("x"))
	c.Close()
	c.Close()
	if _, err := c.Run(context.Background(), nil, "Hi."); !errors.Is(err, &Error{Code: "invalid_argument"}) {
		t.Fatalf("got %v", err)
	}
}

func TestNewClientRejectsABadConfig(t *testing.T) {
	_, err := NewClient(ClientOptions{Config: `{"baseUrl":"http://127.0.0.1:1","model":"m","maxTurn":3}`})
	if !errors.Is(err, &Error{Code: "invalid_config"}) || !strings.Contains(err.Error(), "maxTurn") {
		t.Fatalf("got %v", err)
	}
}
