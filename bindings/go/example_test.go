package toolnexus_test

// Examples for every exported entry point (go doc). The client examples talk
// to fakeModel, an OpenAI-style chat endpoint on 127.0.0.1 that answers a
// prompt mentioning "shout" with one shout tool call, a prompt mentioning
// "ask" with one question tool call, and anything else with text.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	toolnexus "github.com/toolnexus/toolnexus-rs/bindings/go"
)

func Example() {
	tk, err := toolnexus.Build(context.Background(), map[string]any{
		"builtins": false,
		"skills": []map[string]any{
			{"name": "haiku", "description": "Write a haiku.", "content": "Three lines: 5, 7, 5 syllables."},
		},
	})
	if err != nil {
		panic(err)
	}
	defer tk.Close()

	err = tk.Register("shout", "Upper-case the text.", `{"type":"object","properties":{"text":{"type":"string"}}}`,
		func(_ context.Context, args json.RawMessage) (string, error) {
			var in struct{ Text string }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			return strings.ToUpper(in.Text), nil
		})
	if err != nil {
		panic(err)
	}

	names, _ := tk.Render("toolNames")
	fmt.Println(string(names))

	res, _ := tk.Execute(context.Background(), "shout", map[string]string{"text": "old pond"})
	fmt.Println(res.Output, res.IsError)

	res, _ = tk.Execute(context.Background(), "nope", nil)
	fmt.Println(res.Output, res.IsError)
	// Output:
	// ["shout","skill"]
	// OLD POND false
	// unknown tool: nope true
}

// fakeModel answers like OpenAI's chat completions (streamed when asked).
func fakeModel() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		last := req.Messages[len(req.Messages)-1]
		text, _ := last.Content.(string)
		msg := map[string]any{"role": "assistant"}
		var call map[string]any
		switch {
		case last.Role == "tool":
			msg["content"] = "The tool said: " + text
		case strings.Contains(text, "shout"):
			call = map[string]any{"id": "c1", "type": "function",
				"function": map[string]any{"name": "shout", "arguments": `{"text":"hi"}`}}
		case strings.Contains(text, "weather"):
			call = map[string]any{"id": "c7", "type": "function",
				"function": map[string]any{"name": "lookup", "arguments": `{"q":"weather"}`}}
		case strings.Contains(text, "ask"):
			call = map[string]any{"id": "c1", "type": "function",
				"function": map[string]any{"name": "question", "arguments": `{"questions":[{"question":"Your name?"}]}`}}
		default:
			msg["content"] = "Hello."
		}
		finish := "stop"
		if call != nil {
			msg["tool_calls"] = []any{call}
			finish = "tool_calls"
		}
		usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
		if !req.Stream {
			w.Header().Set("content-type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "x", "model": "fake",
				"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
			return
		}
		w.Header().Set("content-type", "text/event-stream")
		send := func(v any) {
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		delta := map[string]any{"role": "assistant"}
		if call != nil {
			call["index"] = 0
			delta["tool_calls"] = []any{call}
		} else {
			delta["content"] = msg["content"]
		}
		send(map[string]any{"model": "fake", "choices": []any{map[string]any{"index": 0, "delta": delta}}})
		send(map[string]any{"model": "fake", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}})
		send(map[string]any{"model": "fake", "choices": []any{}, "usage": usage})
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
}

// shoutToolkit is a toolkit with one host tool, shout, and the question builtin.
func shoutToolkit() *toolnexus.Toolkit {
	tk, err := toolnexus.Build(context.Background(), map[string]any{
		"builtins": map[string]any{"tools": map[string]any{
			"bash": false, "read": false, "write": false, "edit": false, "grep": false, "glob": false,
			"webfetch": false, "apply_patch": false, "todowrite": false}},
	})
	if err != nil {
		panic(err)
	}
	err = tk.Register("shout", "Upper-case the text.", nil, func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct{ Text string }
		_ = json.Unmarshal(args, &in)
		return strings.ToUpper(in.Text), nil
	})
	if err != nil {
		panic(err)
	}
	return tk
}

func newClient(base string, opts toolnexus.ClientOptions) *toolnexus.Client {
	opts.Config = map[string]any{"baseUrl": base, "style": "openai", "model": "fake", "maxTurns": 4}
	c, err := toolnexus.NewClient(opts)
	if err != nil {
		panic(err)
	}
	return c
}

func ExampleVersion() {
	fmt.Println(toolnexus.Version() != "")
	// Output: true
}

func ExampleBuild() {
	tk, err := toolnexus.Build(context.Background(), map[string]any{"skillsDir": "../../examples/skills", "builtins": false})
	if err != nil {
		panic(err)
	}
	defer tk.Close()
	names, _ := tk.Render("toolNames")
	fmt.Println(string(names))
	// Output: ["skill"]
}

func ExampleBuild_invalidConfig() {
	_, err := toolnexus.Build(context.Background(), map[string]any{"nope": 1})
	var e *toolnexus.Error
	fmt.Println(errors.As(err, &e), e.Code)
	// Output: true invalid_config
}

func ExampleError_Is() {
	_, err := toolnexus.Build(context.Background(), `{"skills": 1}`)
	fmt.Println(errors.Is(err, &toolnexus.Error{Code: "invalid_config"}), errors.Is(err, &toolnexus.Error{Code: "timeout"}))
	// Output: true false
}

func ExampleError_Error() {
	_, err := toolnexus.Build(context.Background(), `not json`)
	fmt.Println(strings.HasPrefix(err.Error(), "toolnexus: invalid_json"))
	// Output: true
}

func ExampleToolkit_Close() {
	tk := shoutToolkit()
	fmt.Println(tk.Close())
	// Output: <nil>
}

func ExampleToolkit_Render() {
	tk := shoutToolkit()
	defer tk.Close()
	out, _ := tk.Render("anthropic")
	var decls []struct{ Name string }
	_ = json.Unmarshal(out, &decls)
	fmt.Println(len(decls), decls[0].Name, decls[1].Name)
	// Output: 2 question shout
}

func ExampleToolkit_RenderTools() {
	tk := shoutToolkit()
	defer tk.Close()
	out, err := tk.RenderTools("openai", []string{"shout", "question"})
	if err != nil {
		panic(err)
	}
	var decls []struct{ Function struct{ Name string } }
	_ = json.Unmarshal(out, &decls)
	fmt.Println(len(decls), decls[0].Function.Name, decls[1].Function.Name) // in the order asked
	// Output: 2 shout question
}

func ExampleToolkit_Execute() {
	tk := shoutToolkit()
	defer tk.Close()
	res, _ := tk.Execute(context.Background(), "shout", map[string]string{"text": "quiet"})
	fmt.Println(res.Output, res.IsError)
	// Output: QUIET false
}

func ExampleToolkit_ExecuteWithContext() {
	tk := shoutToolkit()
	defer tk.Close()
	// The execute context: a timeout, or the Answer to a suspension.
	res, _ := tk.ExecuteWithContext(context.Background(), "shout", `{"text":"a"}`, map[string]any{"timeoutMs": 5000})
	fmt.Println(res.Output)
	// Output: A
}

func ExampleToolkit_ExecuteJSON() {
	tk := shoutToolkit()
	defer tk.Close()
	out, _ := tk.ExecuteJSON(context.Background(), "shout", `{"text":"b"}`, nil)
	fmt.Println(string(out))
	// Output: {"output":"B","isError":false}
}

func ExampleToolkit_Register() {
	tk, _ := toolnexus.Build(context.Background(), map[string]any{"builtins": false})
	defer tk.Close()
	_ = tk.Register("add", "Add a and b.", `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`,
		func(_ context.Context, args json.RawMessage) (string, error) {
			var in struct{ A, B float64 }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err // an isError result
			}
			return fmt.Sprint(in.A + in.B), nil
		})
	res, _ := tk.Execute(context.Background(), "add", map[string]int{"a": 2, "b": 3})
	fmt.Println(res.Output)
	// Output: 5
}

func ExampleToolkit_RegisterResult() {
	tk, _ := toolnexus.Build(context.Background(), map[string]any{"builtins": false})
	defer tk.Close()
	_ = tk.RegisterResult("check", "Fails with metadata.", nil,
		func(_ context.Context, _ json.RawMessage) (*toolnexus.ToolResult, error) {
			return &toolnexus.ToolResult{Output: "not ready", IsError: true, Metadata: map[string]any{"retry": true}}, nil
		})
	res, _ := tk.Execute(context.Background(), "check", nil)
	fmt.Println(res.Output, res.IsError, res.Metadata["retry"])
	// Output: not ready true true
}

func ExampleToolkit_Serve() {
	tk := shoutToolkit()
	defer tk.Close()
	srv, err := tk.Serve(context.Background(), toolnexus.ServeOptions{Addr: "127.0.0.1:0", Tools: []string{"shout"}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shout","arguments":{"text":"mcp"}}}`
	req, _ := http.NewRequest("POST", srv.URL(), strings.NewReader(body))
	req.Header.Set("content-type", "application/json")
	req.Header.Set("accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, strings.Contains(string(raw), `"text":"MCP"`))
	// Output: 200 OK true
}

func ExampleToolkit_Serve_a2a() {
	model := fakeModel()
	defer model.Close()
	tk, err := toolnexus.Build(context.Background(), map[string]any{"builtins": false,
		"skills": []map[string]any{{"name": "haiku", "description": "Write a haiku.", "content": "Three lines."}}})
	if err != nil {
		panic(err)
	}
	defer tk.Close()
	client, err := toolnexus.NewClient(toolnexus.ClientOptions{
		Config: map[string]any{"baseUrl": model.URL, "style": "openai", "model": "fake"}})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	done := make(chan toolnexus.TaskEvent, 1)
	srv, err := tk.Serve(context.Background(), toolnexus.ServeOptions{
		Addr:   "127.0.0.1:0",
		A2A:    &toolnexus.A2AOptions{Name: "helper", Store: "memory"}, // Protocol "0.3" or "1.0" for the spec's card
		Client: client,                                                 // runs the tasks
		OnTask: func(e toolnexus.TaskEvent) { done <- e },
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	base := strings.TrimSuffix(srv.URL(), "/mcp") // the agent beside /mcp

	res, err := http.Get(base + "/.well-known/agent-card.json")
	if err != nil {
		panic(err)
	}
	var card struct {
		Name   string
		Skills []struct{ ID string }
	}
	_ = json.NewDecoder(res.Body).Decode(&card)
	res.Body.Close()
	fmt.Println(card.Name, card.Skills[0].ID)

	rpc := func(body string, answer any) {
		res, err := http.Post(base+"/", "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		_ = json.NewDecoder(res.Body).Decode(answer)
	}
	type task struct {
		Result struct {
			ID     string
			Status struct{ State string }
			// The answer, once completed.
			Artifacts []struct{ Parts []struct{ Text string } }
		}
	}
	var sent task
	rpc(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":`+
		`{"role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`, &sent)
	fmt.Println(sent.Result.Status.State)

	ev := <-done // the task is stored by now
	fmt.Println(ev.State, ev.Result.Text)
	var got task
	rpc(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":%q}}`, sent.Result.ID), &got)
	fmt.Println(got.Result.Status.State, got.Result.Artifacts[0].Parts[0].Text)
	// Output:
	// helper haiku
	// submitted
	// completed Hello.
	// completed Hello.
}

func ExampleServer_URL() {
	tk := shoutToolkit()
	defer tk.Close()
	srv, _ := tk.Serve(context.Background(), toolnexus.ServeOptions{Addr: "127.0.0.1:0"})
	defer srv.Close()
	fmt.Println(strings.HasPrefix(srv.URL(), "http://127.0.0.1:"), strings.HasSuffix(srv.URL(), "/mcp"))
	// Output: true true
}

func ExampleServer_Close() {
	tk := shoutToolkit()
	defer tk.Close()
	srv, _ := tk.Serve(context.Background(), toolnexus.ServeOptions{Addr: "127.0.0.1:0"})
	fmt.Println(srv.Close()) // stop a server before closing its toolkit
	// Output: <nil>
}

func ExampleWithSkillProvider() {
	tk, err := toolnexus.Build(context.Background(), map[string]any{"builtins": false},
		toolnexus.WithSkillProvider(func(context.Context) ([]toolnexus.SkillDef, error) {
			return []toolnexus.SkillDef{{Name: "greet", Description: "Greet someone.", Content: "Say hello."}}, nil
		}))
	if err != nil {
		panic(err)
	}
	defer tk.Close()
	res, _ := tk.Execute(context.Background(), "skill", map[string]string{"name": "greet"})
	fmt.Println(strings.Contains(res.Output, "Say hello."))
	// Output: true
}

func ExampleWithWaitFor() {
	// The waitFor answers MCP servers' elicitation requests inline.
	tk, err := toolnexus.Build(context.Background(), map[string]any{"builtins": false},
		toolnexus.WithWaitFor(func(_ context.Context, req toolnexus.Request) (toolnexus.Answer, error) {
			return toolnexus.Answer{ID: req.ID, OK: true, Data: json.RawMessage(`{"name":"Ada"}`)}, nil
		}))
	if err != nil {
		panic(err)
	}
	fmt.Println(tk.Close())
	// Output: <nil>
}

func ExampleWithAuthorize() {
	// authorize completes the browser step of an MCP server's OAuth
	// authorization: open ev.URL for a human, return where the browser was
	// sent back to (the redirect URI with code and state).
	tk, err := toolnexus.Build(context.Background(), map[string]any{"builtins": false},
		toolnexus.WithAuthorize(func(ctx context.Context, ev toolnexus.AuthorizeEvent) (string, error) {
			fmt.Fprintln(os.Stderr, "open", ev.URL)
			return "", errors.New("no browser here")
		}))
	if err != nil {
		panic(err)
	}
	fmt.Println(tk.Close())
	// Output: <nil>
}

func ExampleAnswerOutput() {
	a := toolnexus.AnswerOutput("q1", "staging")
	b, _ := json.Marshal(a)
	fmt.Println(string(b))
	// Output: {"id":"q1","ok":true,"data":{"output":"staging"}}
}

func ExampleAnswerDeclined() {
	a, _ := toolnexus.AnswerDeclined("q1", "expired")
	fmt.Println(a.ID, a.OK, a.Reason)
	_, err := toolnexus.AnswerDeclined("q1", "bored")
	fmt.Println(err != nil)
	// Output:
	// q1 false expired
	// true
}

func ExampleHelper() {
	out, _ := toolnexus.Helper("answerOutput", []string{"q1", "yes"})
	fmt.Println(string(out))
	// Output: {"id":"q1","ok":true,"data":{"output":"yes"}}
}

func ExampleListMcpTools() {
	inv, err := toolnexus.ListMcpTools(map[string]any{"mcpServers": map[string]any{
		"off": map[string]any{"command": "never-started", "disabled": true}}})
	if err != nil {
		panic(err)
	}
	fmt.Println(inv.Status["off"], len(inv.Tools["off"]))
	// Output: disabled 0
}

func ExampleSetLogger() {
	var mu sync.Mutex
	lines := 0
	toolnexus.SetLogger(toolnexus.LogWarn, func(level int, target, message string) {
		mu.Lock()
		lines++
		mu.Unlock()
	})
	defer toolnexus.SetLogger(toolnexus.LogOff, nil)
	// ... build toolkits, run clients: warnings and errors reach the func.
}

func ExampleSetIOThreads() {
	// Only before the library's I/O runtime starts (the first MCP build,
	// HTTP tool, translate, run or serve); afterwards it is an error naming
	// the count running.
	if err := toolnexus.SetIOThreads(4); err != nil {
		fmt.Println("too late:", err != nil)
	}
}

func ExampleLiveHandles() {
	// A leak check for tests: every host function, callback and client
	// holds a handle until it is closed (or its toolkit is).
	before := toolnexus.LiveHandles()
	tk := shoutToolkit()
	tk.Close()
	if leaked := toolnexus.LiveHandles() - before; leaked > 0 {
		fmt.Println("leaked handles:", leaked)
	}
}

func ExampleTranslate() {
	model := fakeModel()
	defer model.Close()
	client := map[string]any{"baseUrl": model.URL, "style": "openai", "model": "fake"}
	request := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	out, err := toolnexus.Translate(context.Background(), client, request, nil)
	if err != nil {
		panic(err)
	}
	var r struct {
		Text         string
		FinishReason string
	}
	_ = json.Unmarshal(out, &r)
	fmt.Println(r.Text, r.FinishReason)
	// Output: Hello. stop
}

func ExampleCountTokens() {
	// A stand-in for Anthropic's POST /v1/messages/count_tokens.
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "application/json")
		_, _ = io.WriteString(w, `{"input_tokens": 12}`)
	}))
	defer model.Close()
	client := map[string]any{"baseUrl": model.URL, "style": "anthropic", "model": "claude-test", "apiKey": "sk-test"}
	request := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	out, err := toolnexus.CountTokens(context.Background(), client, request, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	// Output: {"inputTokens":12,"style":"anthropic","model":"claude-test"}
}

func ExampleNewACPClient() {
	// The repository's echo agent on the official ACP Python SDK
	// (agent-client-protocol, in the repository's .venv).
	python := "python3"
	if _, err := os.Stat("../../.venv/bin/python3"); err == nil {
		python = "../../.venv/bin/python3"
	}
	c, err := toolnexus.NewACPClient(map[string]any{
		"command": python,
		"args":    []string{"../../tests/acp_agents/sdk_echo_agent.py"},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close() // ends the agent
	res, err := c.Run(context.Background(), nil, "hi there")
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text, res.Status)
	// Output: ECHO[SUPERSEDES-ALL-PRIOR: hi there] done
}

func ExampleNewACPClient_hooks() {
	python := "python3"
	if _, err := os.Stat("../../.venv/bin/python3"); err == nil {
		python = "../../.venv/bin/python3"
	}
	// NewClient's hooks and callbacks, on an ACP agent: here BeforeLLM
	// rewrites what the agent is prompted with, and OnMetric counts turns.
	var turns atomic.Int32
	c, err := toolnexus.NewACPClient(map[string]any{
		"command": python,
		"args":    []string{"../../tests/acp_agents/sdk_echo_agent.py"},
	}, toolnexus.ClientOptions{
		Hooks: toolnexus.Hooks{
			BeforeLLM: func(ctx context.Context, ev toolnexus.LLMEvent) (*toolnexus.LLMOverride, error) {
				return &toolnexus.LLMOverride{Messages: json.RawMessage(`[{"role":"user","content":"Be brief. Hi!"}]`)}, nil
			},
		},
		OnMetric: func(m toolnexus.MetricEvent) {
			if m.Event == "llm" {
				turns.Add(1)
			}
		},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	res, err := c.Run(context.Background(), nil, "hi there")
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text, turns.Load())
	// Output: ECHO[SUPERSEDES-ALL-PRIOR: Be brief. Hi!] 1
}

func ExampleNewClient() {
	c, err := toolnexus.NewClient(toolnexus.ClientOptions{
		Config: map[string]any{"baseUrl": "https://api.openai.com/v1", "style": "openai", "model": "gpt-4o", "maxTurns": 8},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Close())
	// Output: <nil>
}

func ExampleClient_Run() {
	model := fakeModel()
	defer model.Close()
	tk := shoutToolkit()
	defer tk.Close()
	c := newClient(model.URL, toolnexus.ClientOptions{})
	defer c.Close()
	res, err := c.Run(context.Background(), tk, "Please shout hi.")
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text, res.Status, res.Turns, res.ToolCalls[0].Name, res.ToolCalls[0].Output)
	// Output: The tool said: HI done 2 shout HI
}

func ExampleClient_Resume() {
	model := fakeModel()
	defer model.Close()
	tk := shoutToolkit()
	defer tk.Close()
	c := newClient(model.URL, toolnexus.ClientOptions{}) // no WaitFor: a question halts the run
	defer c.Close()
	res, _ := c.Run(context.Background(), tk, "Please ask my name.")
	fmt.Println(res.Status, res.Pending.Prompt)
	res, err := c.Resume(context.Background(), tk, res.Messages, *res.Pending, toolnexus.AnswerOutput(res.Pending.ID, "Ada"))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Text)
	// Output:
	// pending Your name?
	// done The tool said: {"output":"Ada"}
}

// A relay tool is declared to the model and run by the host: its call halts
// the run as one "tool_call" Request, and RunWithAnswer fills the result in.
func ExampleClient_RunWithAnswer() {
	model := fakeModel()
	defer model.Close()
	tk, err := toolnexus.Build(context.Background(), map[string]any{
		"builtins":   false,
		"relayTools": []any{map[string]any{"name": "lookup", "description": "Looks things up."}},
	})
	if err != nil {
		panic(err)
	}
	defer tk.Close()
	c := newClient(model.URL, toolnexus.ClientOptions{})
	defer c.Close()
	res, _ := c.Run(context.Background(), tk, "What is the weather?")
	calls := toolnexus.RelayCallsOf(*res.Pending)
	fmt.Println(res.Status, res.Pending.Kind, calls[0].ID, calls[0].Name, calls[0].Arguments)
	answer := toolnexus.RelayAnswer(res.Pending.ID, []toolnexus.RelayResult{{ID: calls[0].ID, Output: "sunny"}})
	res, err = c.RunWithAnswer(context.Background(), tk, res.Messages, *res.Pending, answer)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Text)
	// Output:
	// pending tool_call c7 lookup {"q":"weather"}
	// done The tool said: sunny
}

func ExampleRelayCallsOf() {
	req := toolnexus.Request{ID: "r1", Kind: toolnexus.RelayKind,
		Data: json.RawMessage(`{"calls":[{"id":"c1","name":"lookup","input":{"q":"x"},"arguments":"{\"q\":\"x\"}"}]}`)}
	for _, call := range toolnexus.RelayCallsOf(req) {
		fmt.Println(call.ID, call.Name, call.Input["q"], call.Arguments)
	}
	// Output: c1 lookup x {"q":"x"}
}

func ExampleRelayAnswer() {
	a := toolnexus.RelayAnswer("r1", []toolnexus.RelayResult{{ID: "c1", Output: "sunny"}, {ID: "c2", Output: "no such city", IsError: true}})
	fmt.Println(a.ID, a.OK, string(a.Data))
	// Output: r1 true {"results":[{"id":"c1","output":"sunny","isError":false},{"id":"c2","output":"no such city","isError":true}]}
}

func ExampleClient_Close() {
	c := newClient("http://127.0.0.1:1", toolnexus.ClientOptions{})
	fmt.Println(c.Close())
	// Output: <nil>
}

func ExampleWithHistory() {
	model := fakeModel()
	defer model.Close()
	c := newClient(model.URL, toolnexus.ClientOptions{})
	defer c.Close()
	first, _ := c.Run(context.Background(), nil, "Hi.")
	second, _ := c.Run(context.Background(), nil, "Hi again.", toolnexus.WithHistory(first.Messages))
	var msgs []any
	_ = json.Unmarshal(second.Messages, &msgs)
	fmt.Println(len(msgs))
	// Output: 4
}

func ExampleClient_Ask() {
	model := fakeModel()
	defer model.Close()
	c := newClient(model.URL, toolnexus.ClientOptions{}) // conversations kept in memory
	defer c.Close()
	_, _ = c.Ask(context.Background(), nil, "Hi.", toolnexus.WithID("chat-1"))
	res, _ := c.Ask(context.Background(), nil, "Hi again.", toolnexus.WithID("chat-1"))
	var msgs []any
	_ = json.Unmarshal(res.Messages, &msgs)
	fmt.Println(res.Text, len(msgs))
	// Output: Hello. 4
}

func ExampleWithID() {
	model := fakeModel()
	defer model.Close()
	c := newClient(model.URL, toolnexus.ClientOptions{})
	defer c.Close()
	res, _ := c.Ask(context.Background(), nil, "Hi.", toolnexus.WithID("user-42"))
	fmt.Println(res.Status)
	// Output: done
}

func ExampleClient_AskStream() {
	model := fakeModel()
	defer model.Close()
	c := newClient(model.URL, toolnexus.ClientOptions{})
	defer c.Close()
	var text strings.Builder
	res, err := c.AskStream(context.Background(), nil, "Hi.", func(delta string) { text.WriteString(delta) })
	if err != nil {
		panic(err)
	}
	fmt.Println(text.String(), res.Status)
	// Output: Hello. done
}

func ExampleClient_Stream() {
	model := fakeModel()
	defer model.Close()
	tk := shoutToolkit()
	defer tk.Close()
	c := newClient(model.URL, toolnexus.ClientOptions{})
	defer c.Close()
	for ev, err := range c.Stream(context.Background(), tk, "Please shout hi.") {
		if err != nil {
			panic(err)
		}
		switch ev.Type {
		case "tool_call":
			fmt.Println("call", ev.Name)
		case "tool_result":
			fmt.Println("result", ev.Output)
		case "done":
			fmt.Println("done", ev.Result.Text)
		}
	}
	// Output:
	// call shout
	// result HI
	// done The tool said: HI
}

func ExampleClient_Metrics() {
	model := fakeModel()
	defer model.Close()
	c := newClient(model.URL, toolnexus.ClientOptions{})
	defer c.Close()
	_, _ = c.Run(context.Background(), nil, "Hi.")
	text, _ := c.Metrics()
	fmt.Println(strings.Contains(text, "# TYPE"))
	// Output: true
}
