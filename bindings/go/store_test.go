package toolnexus_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	toolnexus "github.com/toolnexus/toolnexus-rs/bindings/go"
)

// recordStore is a Store in a map, which can be told to fail or panic.
type recordStore struct {
	mu      sync.Mutex
	records map[string]json.RawMessage
	fail    string // "save": Save fails; "panic": Get panics; "garbage": Get answers non-JSON
}

func (s *recordStore) mode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail
}

func (s *recordStore) Get(kind, id string) (json.RawMessage, error) {
	switch s.mode() {
	case "panic":
		panic("the map is on fire")
	case "garbage":
		return json.RawMessage("{not json"), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records[kind+"/"+id], nil
}

func (s *recordStore) Save(kind, id string, record json.RawMessage) error {
	if s.mode() == "save" {
		return errors.New("disk full")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[kind+"/"+id] = append(json.RawMessage(nil), record...)
	return nil
}

func (s *recordStore) Delete(kind, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.records[kind+"/"+id]
	delete(s.records, kind+"/"+id)
	return ok, nil
}

func TestARegisteredStoreKeepsAsksConversationsAndNamesItselfWhenItFails(t *testing.T) {
	srv := sseProvider(t)
	tk := adderToolkit(t)
	store := &recordStore{records: map[string]json.RawMessage{}}
	if err := toolnexus.RegisterStore("go-records", store); err != nil {
		t.Fatal(err)
	}
	var e *toolnexus.Error
	if err := toolnexus.RegisterStore("go-records", store); !errors.As(err, &e) || e.Code != "invalid_argument" {
		t.Fatalf("a second registration: %v", err)
	}
	config := func(selector string) map[string]any {
		return map[string]any{"baseUrl": srv.URL + "/v1", "style": "openai", "model": "m", "apiKey": "k",
			"store": selector}
	}
	if _, err := toolnexus.NewClient(toolnexus.ClientOptions{Config: config("host:nobody")}); !errors.As(err, &e) ||
		e.Code != "invalid_config" || !strings.Contains(e.Message, "host:nobody") {
		t.Fatalf("an unknown host store: %v", err)
	}
	c, err := toolnexus.NewClient(toolnexus.ClientOptions{Config: config("host:go-records")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Unregistered while the client holds it: the client keeps it.
	if err := toolnexus.UnregisterStore("go-records"); err != nil {
		t.Fatal(err)
	}
	if err := toolnexus.UnregisterStore("go-records"); !errors.As(err, &e) || e.Code != "invalid_argument" {
		t.Fatalf("unregistered twice: %v", err)
	}
	for i, want := range []string{"1", "3"} {
		r, err := c.Ask(context.Background(), tk, "q", toolnexus.WithID("conv-1"))
		if err != nil || r.Text != want {
			t.Fatalf("ask %d: %v %+v (want %s)", i, err, r, want)
		}
	}
	store.mu.Lock()
	var saved []map[string]any
	_ = json.Unmarshal(store.records["conversation/conv-1"], &saved)
	store.mu.Unlock()
	if len(saved) != 4 || saved[3]["content"] != "3" {
		t.Fatalf("the store keeps %v", saved)
	}
	for fail, want := range map[string]string{
		"save":    `store "host:go-records": save failed: disk full`,
		"panic":   `store "host:go-records": get failed: the Go store panicked: the map is on fire`,
		"garbage": `store "host:go-records": get failed: the Go store's answer does not encode as JSON`,
	} {
		store.mu.Lock()
		store.fail = fail
		store.mu.Unlock()
		_, err := c.Ask(context.Background(), tk, "q", toolnexus.WithID("conv-1"))
		if !errors.As(err, &e) || e.Code != "callback_error" || !strings.Contains(e.Message, want) {
			t.Fatalf("%s: %v (want %q)", fail, err, want)
		}
	}
	// The name is free again for another store.
	if err := toolnexus.RegisterStore("go-records", &recordStore{records: map[string]json.RawMessage{}}); err != nil {
		t.Fatal(err)
	}
	if err := toolnexus.UnregisterStore("go-records"); err != nil {
		t.Fatal(err)
	}
}
