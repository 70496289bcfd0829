package toolnexus

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
