package toolnexus

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The hostile-world probes of issue 14 that concern a Go host. Each runs in a
// child process (this test binary, re-run with TN_GO_HOSTILE_CHILD set), so a
// probe that kills its host shows up as that child's death, not as a crash of
// the whole test run.

// hostileChild reports whether this process is the child that runs the probe
// named name; in the parent it runs that child and checks how it ended.
func hostileChild(t *testing.T, name string) bool {
	t.Helper()
	if os.Getenv("TN_GO_HOSTILE_CHILD") == name {
		return true
	}
	if signal.Ignored(syscall.SIGPIPE) {
		t.Skip("this process was started with SIGPIPE ignored: a SIGPIPE could not kill the probe")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TN_GO_HOSTILE_CHILD="+name)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("the probe's host was killed by %v\n%s", ws.Signal(), out)
		}
	}
	if err != nil {
		t.Fatalf("the probe failed: %v\n%s", err, out)
	}
	return false
}

// A stdio server that exits at once: in about half of the builds the library
// writes initialize into a pipe with no reader. The Go runtime turns a
// SIGPIPE on a thread it did not start into the death of the process.
func TestHostileSigpipeAtBuildNeverKillsTheHost(t *testing.T) {
	if !hostileChild(t, "TestHostileSigpipeAtBuildNeverKillsTheHost") {
		return
	}
	config := map[string]any{"builtins": false, "mcpConfig": map[string]any{"mcpServers": map[string]any{
		"gone": map[string]any{"command": []string{"/bin/true"}, "timeout": 5000}}}}
	want := `mcp server \"gone\" failed at initialize: peer-exited (status 0)`
	for i := 0; i < 40; i++ {
		tk, err := Build(context.Background(), config)
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
		status, err := tk.Render("status")
		if err != nil || !strings.Contains(string(status), want) {
			t.Errorf("build %d: status %s (%v), want it to contain %s", i, status, err, want)
		}
		tk.Close()
	}
}

// A server that closes its stdin after listing its tools and keeps running:
// every call writes into a dead pipe and fails at once with a broken pipe.
func TestHostileSigpipeAtCallNeverKillsTheHost(t *testing.T) {
	if !hostileChild(t, "TestHostileSigpipeAtCallNeverKillsTheHost") {
		return
	}
	script := filepath.Join(repoRoot(t), "tests", "mcp_servers", "closed_stdin.py")
	config := map[string]any{"builtins": false, "mcpConfig": map[string]any{"mcpServers": map[string]any{
		"deaf": map[string]any{"command": []string{"python3", script}, "timeout": 60000}}}}
	want := `mcp server "deaf" failed at tools/call: transport (send failed: broken pipe (the server closed its stdin))`
	for i := 0; i < 4; i++ {
		tk, err := Build(context.Background(), config)
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
		for j := 0; j < 4; j++ {
			r, err := tk.Execute(context.Background(), "deaf_ping", map[string]any{})
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if !r.IsError || r.Output != want {
				t.Errorf("call %d.%d: %+v, want the error %q", i, j, r, want)
			}
		}
		tk.Close()
	}
}
