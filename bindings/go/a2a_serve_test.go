package toolnexus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// a2aModel is an OpenAI-style chat endpoint for served A2A tasks: a prompt
// with "shout" asks for the shout tool, one with "ask" for the question
// builtin, one with "boom" fails (HTTP 500); a tool result is echoed back
// ("The tool said: ..."), anything else answered "served: <prompt>".
func a2aModel(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		last := req.Messages[len(req.Messages)-1]
		text, _ := last.Content.(string)
		msg := map[string]any{"role": "assistant"}
		finish := "stop"
		call := func(name, args string) {
			msg["tool_calls"] = []any{map[string]any{"id": "c1", "type": "function",
				"function": map[string]any{"name": name, "arguments": args}}}
			finish = "tool_calls"
		}
		switch {
		case last.Role == "tool":
			msg["content"] = "The tool said: " + text
		case strings.Contains(text, "boom"):
			http.Error(w, `{"error":{"message":"model down"}}`, http.StatusInternalServerError)
			return
		case strings.Contains(text, "shout"):
			call("shout", `{"text":"hi"}`)
		case strings.Contains(text, "ask"):
			call("question", `{"questions":[{"question":"Your name?"}]}`)
		default:
			msg["content"] = "served: " + text
		}
		w.Header().Set("content-type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "x", "model": "fake",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// a2aWorld is a toolkit (the shout tool, the question builtin, one skill)
// and a client of a2aModel.
func a2aWorld(t *testing.T, opts ClientOptions) (*Toolkit, *Client) {
	t.Helper()
	model := a2aModel(t)
	tk := mustBuild(t, map[string]any{
		"builtins": map[string]any{"tools": map[string]any{
			"bash": false, "read": false, "write": false, "edit": false, "grep": false, "glob": false,
			"webfetch": false, "apply_patch": false, "todowrite": false}},
		"skills": []map[string]any{
			{"name": "haiku", "description": "Write a haiku.", "content": "Three lines."},
			{"name": "limerick", "description": "Write a limerick.", "content": "Five lines."},
		},
	})
	err := tk.Register("shout", "Upper-case the text.", nil, func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct{ Text string }
		_ = json.Unmarshal(args, &in)
		return strings.ToUpper(in.Text), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	opts.Config = map[string]any{"baseUrl": model.URL, "style": "openai", "model": "m", "apiKey": "k", "retries": 0}
	c, err := NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return tk, c
}

// a2aBase is the agent's address: the server's URL without /mcp.
func a2aBase(srv *Server) string { return strings.TrimSuffix(srv.URL(), "/mcp") }

// a2aCall POSTs one JSON-RPC request to the agent (with A2A-Version when
// version is set) and decodes the answer.
func a2aCall(t *testing.T, base, version, method string, params any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequest("POST", base+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("content-type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var answer map[string]any
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatalf("%s: HTTP %d, not JSON: %q", method, res.StatusCode, raw)
	}
	return answer
}

func a2aCard(t *testing.T, base string) map[string]any {
	t.Helper()
	res, err := http.Get(base + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var card map[string]any
	if err := json.NewDecoder(res.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	return card
}

// a2aSend sends text on upstream's wire and returns the task id.
func a2aSend(t *testing.T, base, text string) string {
	t.Helper()
	sent := a2aCall(t, base, "", "SendMessage", map[string]any{"message": map[string]any{
		"role": "user", "messageId": "m1", "parts": []any{map[string]any{"kind": "text", "text": text}}}})
	task, _ := sent["result"].(map[string]any)
	if task == nil || task["status"].(map[string]any)["state"] != "submitted" {
		t.Fatalf("SendMessage: %v", sent)
	}
	return task["id"].(string)
}

// a2aSettled polls GetTask (upstream's wire) until the task leaves
// submitted and working.
func a2aSettled(t *testing.T, base, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := a2aCall(t, base, "", "GetTask", map[string]any{"id": id})
		task, _ := got["result"].(map[string]any)
		if task == nil {
			t.Fatalf("GetTask: %v", got)
		}
		switch task["status"].(map[string]any)["state"] {
		case "submitted", "working":
		default:
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s never settled: %v", id, task)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func artifactText(task map[string]any) string {
	arts, _ := task["artifacts"].([]any)
	if len(arts) == 0 {
		return ""
	}
	parts, _ := arts[0].(map[string]any)["parts"].([]any)
	if len(parts) == 0 {
		return ""
	}
	text, _ := parts[0].(map[string]any)["text"].(string)
	return text
}

func TestServeA2AAgentCardSendMessageGetTaskAndOnTask(t *testing.T) {
	var hooked atomic.Int32
	tk, client := a2aWorld(t, ClientOptions{Hooks: Hooks{
		// The library runs a served task itself: the hook still runs.
		BeforeTool: func(_ context.Context, e ToolEvent) (*ToolOverride, error) {
			hooked.Add(1)
			return nil, nil
		},
	}})
	var mu sync.Mutex
	var tasks []TaskEvent
	var calls []CallEvent
	srv, err := tk.Serve(context.Background(), ServeOptions{
		Addr: "127.0.0.1:0",
		A2A: &A2AOptions{Name: "go-agent", Description: "Serves from Go.", Version: "2.1.0",
			Provider: &A2AProvider{Organization: "Acme", URL: "https://acme.example"},
			Skills:   []string{"haiku"}, Store: "memory"},
		Client: client,
		OnCall: func(e CallEvent) { mu.Lock(); calls = append(calls, e); mu.Unlock() },
		OnTask: func(e TaskEvent) {
			mu.Lock()
			tasks = append(tasks, e)
			mu.Unlock()
			panic("a host's OnTask panics: recovered, the server keeps serving")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// The server holds the client: closing ours changes nothing for it.
	client.Close()
	base := a2aBase(srv)

	card := a2aCard(t, base)
	if card["name"] != "go-agent" || card["description"] != "Serves from Go." || card["version"] != "2.1.0" ||
		card["protocolVersion"] != "0.3.0" || card["url"] != base+"/" {
		t.Fatalf("card %v", card)
	}
	if p := card["provider"].(map[string]any); p["organization"] != "Acme" || p["url"] != "https://acme.example" {
		t.Fatalf("provider %v", card["provider"])
	}
	skills := card["skills"].([]any)
	if len(skills) != 1 || skills[0].(map[string]any)["id"] != "haiku" {
		t.Fatalf("skills %v (only the listed skill, never raw tools)", skills)
	}

	id := a2aSend(t, base, "please shout")
	done := a2aSettled(t, base, id)
	if done["status"].(map[string]any)["state"] != "completed" || artifactText(done) != "The tool said: HI" {
		t.Fatalf("task %v", done)
	}
	if hooked.Load() != 1 {
		t.Fatalf("BeforeTool ran %d times", hooked.Load())
	}

	// A failing run is a failed task; an unanswered question input-required.
	failed := a2aSettled(t, base, a2aSend(t, base, "boom"))
	if failed["status"].(map[string]any)["state"] != "failed" {
		t.Fatalf("a failing run: %v", failed)
	}
	asked := a2aSettled(t, base, a2aSend(t, base, "ask me"))
	if asked["status"].(map[string]any)["state"] != "input-required" ||
		!strings.Contains(fmt.Sprint(asked["status"]), "Your name?") {
		t.Fatalf("a suspended run: %v", asked)
	}
	if e := a2aCall(t, base, "", "GetTask", map[string]any{"id": "nope"}); e["error"].(map[string]any)["code"] != float64(-32001) {
		t.Fatalf("unknown id: %v", e)
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(tasks)
		mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("OnTask heard %d tasks", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	byID := map[string]TaskEvent{}
	for _, e := range tasks {
		byID[e.ID] = e
	}
	heardCalls := append([]CallEvent(nil), calls...)
	mu.Unlock()
	ok := byID[id]
	if ok.State != "completed" || ok.Result == nil || ok.Result.Text != "The tool said: HI" ||
		ok.Result.ToolCallCount != 1 || len(ok.Result.Raw) == 0 || !strings.Contains(string(ok.Task), id) {
		t.Fatalf("OnTask for the completed task: %+v", ok)
	}
	if byID[failed["id"].(string)].State != "failed" || byID[asked["id"].(string)].State != "input-required" {
		t.Fatalf("OnTask states: %+v", byID)
	}
	if len(heardCalls) != 0 {
		t.Fatalf("OnCall hears /mcp tools/calls, not a task's tool calls: %+v", heardCalls)
	}
	srv.Close()
	if n := func() int { liveHooks.Lock(); defer liveHooks.Unlock(); return len(liveHooks.m) }(); n != 0 {
		t.Fatalf("%d hook handles outlived their server", n)
	}
}

func TestServeA2AProfiles(t *testing.T) {
	tk, client := a2aWorld(t, ClientOptions{})
	srv, err := tk.Serve(context.Background(), ServeOptions{
		Addr: "127.0.0.1:0", A2A: &A2AOptions{Protocol: "1.0", Skills: []string{}}, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := a2aBase(srv)
	card := a2aCard(t, base)
	ifaces, _ := card["supportedInterfaces"].([]any)
	if card["name"] != "toolnexus-agent" || len(ifaces) != 1 ||
		ifaces[0].(map[string]any)["protocolVersion"] != "1.0" || len(card["skills"].([]any)) != 0 {
		t.Fatalf("1.0 card %v", card)
	}

	// A2A 1.0: SendMessage / GetTask with the header.
	sent := a2aCall(t, base, "1.0", "SendMessage", map[string]any{"message": map[string]any{
		"role": "ROLE_USER", "messageId": "m", "parts": []any{map[string]any{"text": "one oh"}}}})
	task := sent["result"].(map[string]any)["task"].(map[string]any)
	if task["status"].(map[string]any)["state"] != "TASK_STATE_SUBMITTED" {
		t.Fatalf("1.0 send %v", sent)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := a2aCall(t, base, "1.0", "GetTask", map[string]any{"id": task["id"]})["result"].(map[string]any)
		if got["status"].(map[string]any)["state"] == "TASK_STATE_COMPLETED" {
			if artifactText(got) != "served: one oh" {
				t.Fatalf("1.0 task %v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("1.0 task never completed: %v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A2A 0.3 on the same endpoint: message/send and tasks/get.
	sent = a2aCall(t, base, "", "message/send", map[string]any{"message": map[string]any{
		"role": "user", "messageId": "m", "kind": "message", "parts": []any{map[string]any{"kind": "text", "text": "zero three"}}}})
	task = sent["result"].(map[string]any)
	if task["kind"] != "task" {
		t.Fatalf("0.3 send %v", sent)
	}
	for {
		got := a2aCall(t, base, "", "tasks/get", map[string]any{"id": task["id"]})["result"].(map[string]any)
		if got["status"].(map[string]any)["state"] == "completed" {
			if artifactText(got) != "served: zero three" {
				t.Fatalf("0.3 task %v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("0.3 task never completed: %v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// /mcp is still the MCP server.
	list := rpc(t, srv.URL(), 2, "tools/list", map[string]any{})
	if _, ok := list["result"].(map[string]any)["tools"]; !ok {
		t.Fatalf("/mcp beside the agent: %v", list)
	}
}

func TestServeA2ARefusals(t *testing.T) {
	tk, client := a2aWorld(t, ClientOptions{})
	_, err := tk.Serve(context.Background(), ServeOptions{Addr: "127.0.0.1:0", A2A: &A2AOptions{}})
	if e := wantCode(t, err, "invalid_config", StatusInvalidConfig); !strings.Contains(e.Message, "needs a client") {
		t.Fatalf("no client: %q", e.Message)
	}
	_, err = tk.Serve(context.Background(), ServeOptions{Addr: "127.0.0.1:0", A2A: &A2AOptions{Protocol: "2.0"}, Client: client,
		OnTask: func(TaskEvent) {}})
	if e := wantCode(t, err, "invalid_config", StatusInvalidConfig); !strings.Contains(e.Message, "a2a.protocol") {
		t.Fatalf("unknown protocol: %q", e.Message)
	}
	_, err = tk.Serve(context.Background(), ServeOptions{Addr: "127.0.0.1:0", A2A: &A2AOptions{Store: "redis://x"}, Client: client})
	if e := wantCode(t, err, "invalid_config", StatusInvalidConfig); !strings.Contains(e.Message, "unknown A2A store") {
		t.Fatalf("unknown store: %q", e.Message)
	}
	// A client without A2A is harmless: plain MCP serving.
	srv, err := tk.Serve(context.Background(), ServeOptions{Addr: "127.0.0.1:0", Client: client})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	client.Close()
	_, err = tk.Serve(context.Background(), ServeOptions{Addr: "127.0.0.1:0", A2A: &A2AOptions{}, Client: client})
	wantCode(t, err, "invalid_argument", StatusInvalidArgument)
	if n := func() int { liveHooks.Lock(); defer liveHooks.Unlock(); return len(liveHooks.m) }(); n != 0 {
		t.Fatalf("%d hook handles outlived refused servers", n)
	}
}
