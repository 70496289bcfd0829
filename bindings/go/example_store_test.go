package toolnexus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	toolnexus "github.com/toolnexus/toolnexus-rs/bindings/go"
)

// exampleStore is a Store in a map: what a host would back with its own
// database.
type exampleStore struct {
	mu      sync.Mutex
	records map[string]json.RawMessage
}

func (s *exampleStore) Get(kind, id string) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records[kind+"/"+id], nil
}

func (s *exampleStore) Save(kind, id string, record json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[kind+"/"+id] = append(json.RawMessage(nil), record...)
	return nil
}

func (s *exampleStore) Delete(kind, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, had := s.records[kind+"/"+id]
	delete(s.records, kind+"/"+id)
	return had, nil
}

func ExampleRegisterStore() {
	store := &exampleStore{records: map[string]json.RawMessage{}}
	if err := toolnexus.RegisterStore("example-notes", store); err != nil {
		panic(err)
	}
	defer func() { _ = toolnexus.UnregisterStore("example-notes") }()

	model := fakeModel()
	defer model.Close()
	// The client's "store" key names the host store: Ask keeps its
	// conversations there.
	c, err := toolnexus.NewClient(toolnexus.ClientOptions{Config: map[string]any{
		"baseUrl": model.URL, "style": "openai", "model": "fake", "store": "host:example-notes"}})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if _, err := c.Ask(context.Background(), nil, "Hi.", toolnexus.WithID("chat-7")); err != nil {
		panic(err)
	}
	kept, _ := store.Get("conversation", "chat-7")
	fmt.Println(len(kept) > 0)
	// Output: true
}

func ExampleUnregisterStore() {
	_ = toolnexus.RegisterStore("example-gone", &exampleStore{records: map[string]json.RawMessage{}})
	fmt.Println(toolnexus.UnregisterStore("example-gone") == nil)
	// The name is free again; a second unregister is an error.
	fmt.Println(toolnexus.UnregisterStore("example-gone") != nil)
	// Output:
	// true
	// true
}

func ExampleWithToolsChanged() {
	// Called when an MCP server's tools change (notifications/tools/
	// list_changed) and the new list is served; this toolkit has no MCP
	// server, so nothing is heard.
	tk, err := toolnexus.Build(context.Background(), map[string]any{"builtins": false},
		toolnexus.WithToolsChanged(func(ev toolnexus.ToolsChangedEvent) {
			fmt.Println(ev.Server, ev.Added, ev.Removed)
		}))
	if err != nil {
		panic(err)
	}
	defer tk.Close()
	status, _ := tk.Render("status")
	var s struct {
		Generation uint64 `json:"toolsGeneration"`
	}
	_ = json.Unmarshal(status, &s)
	fmt.Println(s.Generation)
	// Output: 0
}

// slowStore is a Store whose Get waits for a database that never answers
// in time.
type slowStore struct {
	exampleStore
	release chan struct{}
}

func (s *slowStore) Get(kind, id string) (json.RawMessage, error) {
	<-s.release
	return nil, nil
}

func ExampleWithStoreTimeout() {
	store := &slowStore{exampleStore{records: map[string]json.RawMessage{}}, make(chan struct{})}
	// A Get still blocked ends when the host shuts its database down.
	defer close(store.release)
	err := toolnexus.RegisterStore("example-slow", store, toolnexus.WithStoreTimeout(100*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer func() { _ = toolnexus.UnregisterStore("example-slow") }()

	model := fakeModel()
	defer model.Close()
	c, err := toolnexus.NewClient(toolnexus.ClientOptions{Config: map[string]any{
		"baseUrl": model.URL, "style": "openai", "model": "fake", "store": "host:example-slow"}})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	// Ask reads the conversation first: the store does not answer in time.
	_, err = c.Ask(context.Background(), nil, "Hi.", toolnexus.WithID("chat-8"))
	var e *toolnexus.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code)
		fmt.Println(e.Message)
	}
	// Output:
	// callback_error
	// store "host:example-slow": get did not answer within 100 ms
}
