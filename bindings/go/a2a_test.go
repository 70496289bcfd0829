package toolnexus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// a stub A2A agent: card "reviewer" with skills review and plan; a task is
// working on its first GetTask and completed with "REVIEWED" on the next.
func stubAgent(t *testing.T) (*httptest.Server, *sync.Map) {
	seen := &sync.Map{}
	polls := map[string]int{}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			fmt.Fprintf(w, `{"name":"reviewer","url":%q,"skills":[{"id":"review","description":"Reviews"},{"id":"plan"}]}`, "http://"+r.Host+"/")
			return
		}
		var req struct {
			ID     any             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		seen.Store(req.Method+":"+r.Header.Get("Authorization"), true)
		mu.Lock()
		defer mu.Unlock()
		switch req.Method {
		case "SendMessage":
			polls["t1"] = 0
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%q,"result":{"id":"t1","status":{"state":"submitted"}}}`, req.ID)
		case "GetTask":
			polls["t1"]++
			if polls["t1"] < 2 {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%q,"result":{"id":"t1","status":{"state":"working"}}}`, req.ID)
				return
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%q,"result":{"id":"t1","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"REVIEWED"}]}]}}`, req.ID)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%q,"error":{"code":-32601,"message":"Method not found"}}`, req.ID)
		}
	}))
	return srv, seen
}

func TestAddAgentRegistersTheCardSkillsAsTools(t *testing.T) {
	srv, seen := stubAgent(t)
	defer srv.Close()
	t.Setenv("TN_GO_A2A_TOKEN", "go-secret")
	tk, err := Build(context.Background(), map[string]any{"builtins": false})
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	added, err := tk.AddAgent(context.Background(), &Agent{
		Card:      srv.URL + "/.well-known/agent-card.json",
		Headers:   map[string]string{"Authorization": "Bearer ${TN_GO_A2A_TOKEN}"},
		PollEvery: 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(added.Added, ",") != "reviewer_review,reviewer_plan" {
		t.Fatalf("added %v", added.Added)
	}
	r, err := tk.Execute(context.Background(), "reviewer_review", map[string]any{"task": "look"})
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError || r.Output != "REVIEWED" {
		t.Fatalf("result %+v", r)
	}
	if _, ok := seen.Load("SendMessage:Bearer go-secret"); !ok {
		t.Fatal("the Authorization header did not reach the agent expanded")
	}
	again, err := tk.AddAgent(context.Background(), srv.URL+"/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Added) != 0 || len(again.Skipped) != 2 {
		t.Fatalf("second add: %+v", again)
	}
	_, err = tk.AddAgent(context.Background(), "http://127.0.0.1:1/none")
	var e *Error
	if err == nil || !errors.As(err, &e) || e.Code != "invalid_argument" {
		t.Fatalf("unreachable card: %v", err)
	}
}
