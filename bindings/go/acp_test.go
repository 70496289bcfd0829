package toolnexus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// NewACPClient (tn_client_new_acp; docs/client-loop.md, "ACP agents as
// models") against tests/acp_agents/sdk_echo_agent.py, an echo agent on the
// official ACP Python SDK.

// acpPython is the repository's .venv python when there is one (as
// tests/acp.rs finds it), else python3 on PATH; either must have the
// agent-client-protocol package.
func acpPython(t *testing.T) string {
	t.Helper()
	python := "python3"
	if venv, err := filepath.Abs("../../.venv/bin/python3"); err == nil {
		if _, err := os.Stat(venv); err == nil {
			python = venv
		}
	}
	if out, err := exec.Command(python, "-c", "import acp").CombinedOutput(); err != nil {
		t.Fatalf("the agent-client-protocol package is missing from %s: run scripts/setup.sh (or .venv/bin/pip install -r tests/requirements.txt): %v %s", python, err, out)
	}
	return python
}

func TestACPClientRunsOnTheSDKAgent(t *testing.T) {
	agent, err := filepath.Abs("../../tests/acp_agents/sdk_echo_agent.py")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewACPClient(map[string]any{"command": acpPython(t), "args": []string{agent}, "permissionTimeoutMs": 10000})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, prompt := range []string{"hi there", "and again"} {
		res, err := c.Run(context.Background(), nil, prompt)
		if err != nil {
			t.Fatal(err)
		}
		// The thought chunk the agent sends first is not in the answer.
		if want := "ECHO[SUPERSEDES-ALL-PRIOR: " + prompt + "]"; res.Text != want || res.Status != "done" {
			t.Fatalf("got %q (%s), want %q", res.Text, res.Status, want)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(context.Background(), nil, "after close")
	wantCode(t, err, "invalid_argument", StatusInvalidArgument)
}

func TestACPClientBadConfigIsInvalidConfig(t *testing.T) {
	for cfg, names := range map[string]string{
		`{"command":"x","baseUrl":"http://x"}`: "unknown key 'baseUrl'",
		`{}`:                                   "acp.command is required",
		`{"command":"x","args":"a b"}`:         "acp.args must be an array",
	} {
		c, err := NewACPClient(cfg)
		if c != nil {
			t.Fatalf("%s: a client", cfg)
		}
		if e := wantCode(t, err, "invalid_config", StatusInvalidConfig); !strings.Contains(e.Message, names) {
			t.Fatalf("%s: message %q does not name %q", cfg, e.Message, names)
		}
	}
	// Not JSON at all.
	_, err := NewACPClient("{")
	wantCode(t, err, "invalid_json", StatusInvalidJSON)
}

func TestACPClientTakesTheHooksAndCallbacksOfNewClient(t *testing.T) {
	agent, err := filepath.Abs("../../tests/acp_agents/sdk_echo_agent.py")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	note := func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}
	c, err := NewACPClient(map[string]any{"command": acpPython(t), "args": []string{agent}, "permissionTimeoutMs": 10000},
		ClientOptions{
			Hooks: Hooks{
				// The transcript the agent is prompted with is the hook's.
				BeforeLLM: func(ctx context.Context, ev LLMEvent) (*LLMOverride, error) {
					note(fmt.Sprintf("beforeLLM %s turn %d %s", ev.Model, ev.Turn, ev.Messages))
					return &LLMOverride{Messages: json.RawMessage(`[{"role":"user","content":"rewritten"}]`)}, nil
				},
				AfterLLM: func(ctx context.Context, ev LLMResponseEvent) error {
					note("afterLLM " + string(ev.Response))
					return nil
				},
			},
			OnMetric: func(m MetricEvent) { note("metric " + m.Event + " " + m.Model) },
		})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Run(context.Background(), nil, "hi there")
	if err != nil {
		t.Fatal(err)
	}
	if want := "ECHO[SUPERSEDES-ALL-PRIOR: rewritten]"; res.Text != want {
		t.Fatalf("got %q, want %q", res.Text, want)
	}
	mu.Lock()
	got := strings.Join(seen, "\n")
	mu.Unlock()
	for _, want := range []string{"beforeLLM acp turn 0 ", `"hi there"`, "afterLLM ", "ECHO[SUPERSEDES-ALL-PRIOR: rewritten]",
		"metric llm acp", "metric run acp"} {
		if !strings.Contains(got, want) {
			t.Fatalf("%q missing from what the callbacks saw:\n%s", want, got)
		}
	}

	// A hook's error ends the run with it, as on any client.
	failing, err := NewACPClient(map[string]any{"command": acpPython(t), "args": []string{agent}, "permissionTimeoutMs": 10000},
		ClientOptions{Hooks: Hooks{BeforeLLM: func(context.Context, LLMEvent) (*LLMOverride, error) { return nil, errDenied }}})
	if err != nil {
		t.Fatal(err)
	}
	defer failing.Close()
	_, err = failing.Run(context.Background(), nil, "hi")
	if !errors.Is(err, errDenied) || !errors.Is(err, &Error{Code: "callback_error"}) || !strings.Contains(err.Error(), "beforeLLM") {
		t.Fatalf("got %v", err)
	}
}

func TestACPClientRefusesOptionsThatDoNotApply(t *testing.T) {
	cfg := map[string]any{"command": "/nonexistent/agent"}
	for name, opts := range map[string][]ClientOptions{
		"at most one": {{}, {}},
		"Config":      {{Config: cfg}},
		"HTTPClient": {{HTTPClient: func(context.Context, HTTPRequest) (HTTPResponse, error) {
			return HTTPResponse{}, nil
		}}},
	} {
		c, err := NewACPClient(cfg, opts...)
		if c != nil || err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("%s: got %v, %v", name, c, err)
		}
	}
}
