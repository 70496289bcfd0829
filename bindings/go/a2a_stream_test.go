package toolnexus

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// a2aStream POSTs a streaming send of text and reads the answer as
// server-sent events with net/http: the results of the JSON-RPC answers,
// in order, once the server ended the stream.
func a2aStream(t *testing.T, base, version, method, text string) []map[string]any {
	t.Helper()
	part := map[string]any{"kind": "text", "text": text}
	if version == "1.0" {
		part = map[string]any{"text": text}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": method,
		"params": map[string]any{"message": map[string]any{"role": "user", "messageId": "m",
			"parts": []any{part}}}})
	req, err := http.NewRequest("POST", base+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("accept", "text/event-stream")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("content-type"); res.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("%s: HTTP %d, %q", method, res.StatusCode, ct)
	}
	var results []map[string]any
	lines := bufio.NewScanner(res.Body)
	for lines.Scan() {
		data, ok := strings.CutPrefix(lines.Text(), "data:")
		if !ok {
			continue
		}
		var answer struct {
			ID     any            `json:"id"`
			Result map[string]any `json:"result"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &answer); err != nil {
			t.Fatalf("%s: an event that is not JSON: %q", method, data)
		}
		if answer.ID != float64(9) || answer.Result == nil {
			t.Fatalf("%s: an event that is not the answer to request 9: %q", method, data)
		}
		results = append(results, answer.Result)
	}
	// The server closed the stream: no deadline, no reset.
	if err := lines.Err(); err != nil {
		t.Fatalf("%s: the stream did not end cleanly: %v", method, err)
	}
	return results
}

func TestServeA2AStreamedSendIsServerSentEventsOnBothWires(t *testing.T) {
	tk, client := a2aWorld(t, ClientOptions{})
	srv, err := tk.Serve(context.Background(), ServeOptions{Addr: "127.0.0.1:0", A2A: &A2AOptions{}, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := a2aBase(srv)

	// A2A 0.3: message/stream; a task, then its status and artifact updates.
	got := a2aStream(t, base, "", "message/stream", "stream me")
	var kinds, states []string
	for _, r := range got {
		kinds = append(kinds, r["kind"].(string))
		if s, ok := r["status"].(map[string]any); ok {
			states = append(states, s["state"].(string))
		}
	}
	if !reflect.DeepEqual(kinds, []string{"task", "status-update", "artifact-update", "status-update"}) ||
		!reflect.DeepEqual(states, []string{"submitted", "working", "completed"}) {
		t.Fatalf("0.3 stream: kinds %v, states %v: %v", kinds, states, got)
	}
	id := got[0]["id"].(string)
	art := got[2]["artifact"].(map[string]any)["parts"].([]any)[0].(map[string]any)
	if art["kind"] != "text" || art["text"] != "served: stream me" {
		t.Fatalf("0.3 artifact %v", got[2])
	}
	if got[1]["taskId"] != id || got[1]["final"] != false || got[3]["taskId"] != id || got[3]["final"] != true {
		t.Fatalf("0.3 updates %v", got)
	}
	// The streamed task is the stored one.
	if task := a2aSettled(t, base, id); artifactText(task) != "served: stream me" {
		t.Fatalf("GetTask after the stream: %v", task)
	}

	// A2A 1.0: SendStreamingMessage with the header; wrapped results.
	got = a2aStream(t, base, "1.0", "SendStreamingMessage", "stream one oh")
	states = nil
	var text string
	for _, r := range got {
		switch {
		case r["task"] != nil:
			states = append(states, r["task"].(map[string]any)["status"].(map[string]any)["state"].(string))
		case r["statusUpdate"] != nil:
			states = append(states, r["statusUpdate"].(map[string]any)["status"].(map[string]any)["state"].(string))
		case r["artifactUpdate"] != nil:
			parts := r["artifactUpdate"].(map[string]any)["artifact"].(map[string]any)["parts"].([]any)
			text = parts[0].(map[string]any)["text"].(string)
		default:
			t.Fatalf("1.0 stream: an unknown result %v", r)
		}
	}
	if len(got) != 4 || text != "served: stream one oh" ||
		!reflect.DeepEqual(states, []string{"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"}) {
		t.Fatalf("1.0 stream: states %v, artifact %q: %v", states, text, got)
	}
}

// heldModel is an OpenAI-style chat endpoint that holds every request
// until its caller goes away (the run was cancelled) or the test ends;
// arrived hears each request as it comes, gone each caller that left.
func heldModel(t *testing.T) (url string, arrived, gone <-chan struct{}) {
	t.Helper()
	in, out := make(chan struct{}, 16), make(chan struct{}, 16)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read to the end: only then does net/http watch the connection
		// and cancel the request's context when the caller hangs up.
		_, _ = io.Copy(io.Discard, r.Body)
		in <- struct{}{}
		select {
		case <-r.Context().Done():
			out <- struct{}{}
		case <-release:
		case <-time.After(60 * time.Second):
		}
		http.Error(w, `{"error":{"message":"held"}}`, http.StatusServiceUnavailable)
	}))
	// Close waits for the handlers: release them first.
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return srv.URL, in, out
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("never happened: %s", what)
	}
}

func TestServeA2ACancelTaskOfARunningTask(t *testing.T) {
	modelURL, arrived, gone := heldModel(t)
	tk := mustBuild(t, map[string]any{"builtins": false})
	client, err := NewClient(ClientOptions{Config: map[string]any{
		"baseUrl": modelURL, "style": "openai", "model": "m", "apiKey": "k", "retries": 0}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	srv, err := tk.Serve(context.Background(), ServeOptions{Addr: "127.0.0.1:0", A2A: &A2AOptions{}, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := a2aBase(srv)

	id := a2aSend(t, base, "hold on")
	waitFor(t, arrived, "the task's run asked the model")
	got := a2aCall(t, base, "", "GetTask", map[string]any{"id": id})["result"].(map[string]any)
	if got["status"].(map[string]any)["state"] != "working" {
		t.Fatalf("a task whose model is held: %v", got)
	}
	canceled := a2aCall(t, base, "", "CancelTask", map[string]any{"id": id})
	if r, _ := canceled["result"].(map[string]any); r == nil || r["id"] != id ||
		r["status"].(map[string]any)["state"] != "canceled" {
		t.Fatalf("CancelTask: %v", canceled)
	}
	// The run is cancelled: its model request goes away.
	waitFor(t, gone, "the cancelled run let go of the model")
	if task := a2aSettled(t, base, id); task["status"].(map[string]any)["state"] != "canceled" {
		t.Fatalf("GetTask after CancelTask: %v", task)
	}
	// A task already ended cannot be canceled; an unknown one is not found
	// (upstream's wire, 0.3's tasks/cancel, 1.0's CancelTask).
	again := a2aCall(t, base, "", "CancelTask", map[string]any{"id": id})["error"]
	if !reflect.DeepEqual(again, map[string]any{"code": float64(-32002),
		"message": "Task cannot be canceled: " + id + " is canceled"}) {
		t.Fatalf("a second CancelTask: %v", again)
	}
	for _, c := range []struct{ version, method string }{{"", "CancelTask"}, {"", "tasks/cancel"}, {"1.0", "CancelTask"}} {
		e := a2aCall(t, base, c.version, c.method, map[string]any{"id": "nope"})["error"]
		if !reflect.DeepEqual(e, map[string]any{"code": float64(-32001), "message": "Task not found: nope"}) {
			t.Fatalf("%s %s of an unknown id: %v", c.version, c.method, e)
		}
	}
}

// hangingStore is a Store in a map whose Get of the id "hang" blocks until
// released.
type hangingStore struct {
	mu      sync.Mutex
	records map[string]json.RawMessage
	release chan struct{}
}

func (s *hangingStore) Get(kind, id string) (json.RawMessage, error) {
	if id == "hang" {
		<-s.release
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records[kind+"/"+id], nil
}

func (s *hangingStore) Save(kind, id string, record json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[kind+"/"+id] = append(json.RawMessage(nil), record...)
	return nil
}

func (s *hangingStore) Delete(kind, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.records[kind+"/"+id]
	delete(s.records, kind+"/"+id)
	return ok, nil
}

func TestServeA2AOnAHostStoreThatHangsAnswersAtItsTimeout(t *testing.T) {
	store := &hangingStore{records: map[string]json.RawMessage{}, release: make(chan struct{})}
	defer close(store.release)
	if err := RegisterStore("go-hang", store, WithStoreTimeout(-time.Second)); err == nil {
		t.Fatal("a negative timeout was taken")
	} else if e := wantCode(t, err, "invalid_argument", StatusInvalidArgument); !strings.Contains(e.Message, "timeoutMs") {
		t.Fatalf("a negative timeout: %q", e.Message)
	}
	if err := RegisterStore("go-hang", store, WithStoreTimeout(200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = UnregisterStore("go-hang") }()
	tk, client := a2aWorld(t, ClientOptions{})
	srv, err := tk.Serve(context.Background(), ServeOptions{Addr: "127.0.0.1:0",
		A2A: &A2AOptions{Store: "host:go-hang"}, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := a2aBase(srv)

	e := a2aCall(t, base, "", "GetTask", map[string]any{"id": "hang"})["error"]
	if !reflect.DeepEqual(e, map[string]any{"code": float64(-32603),
		"message": `store "host:go-hang": get did not answer within 200 ms`}) {
		t.Fatalf("GetTask on a hanging store: %v", e)
	}
	// The server goes on serving: a task runs to completion in the store.
	id := a2aSend(t, base, "after the hang")
	if task := a2aSettled(t, base, id); artifactText(task) != "served: after the hang" {
		t.Fatalf("the next task: %v", task)
	}
	store.mu.Lock()
	_, kept := store.records["task/"+id]
	store.mu.Unlock()
	if !kept {
		t.Fatal("the task was not kept in the host store")
	}
}
