package toolnexus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readPids waits (bounded) for the "SERVER GRANDCHILD" line that
// tests/mcp_servers/silent_init_pids.py writes once it runs.
func readBuildPids(t *testing.T, path string) (server, grandchild int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			if n, _ := fmt.Sscanf(string(b), "%d %d", &server, &grandchild); n == 2 {
				return server, grandchild
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never held the pids", path)
	return 0, 0
}

// procAlive: a /proc entry that is not a zombie.
func procAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

func muteServerConfig(t *testing.T, pidFile string) map[string]any {
	script := filepath.Join(repoRoot(t), "tests", "mcp_servers", "silent_init_pids.py")
	return map[string]any{
		"builtins": false,
		"mcpConfig": map[string]any{"mcpServers": map[string]any{
			"mute": map[string]any{"command": []string{"python3", script, pidFile}, "timeout": 20000},
		}},
	}
}

func TestBuildCancelledByCtxEndsAHungMcpServer(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "mute.pids")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		readBuildPids(t, pidFile)
		cancel()
	}()
	tk, err := Build(ctx, muteServerConfig(t, pidFile))
	if err == nil {
		tk.Close()
		t.Fatal("a build cancelled while its MCP server hangs succeeded")
	}
	e := wantCode(t, err, "cancelled", StatusCancelled)
	if !strings.Contains(e.Message, "MCP") {
		t.Errorf("message %q does not say where the build was", e.Message)
	}
	server, grandchild := readBuildPids(t, pidFile)
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", server)); err == nil {
		t.Errorf("server %d still has a /proc entry after Build returned", server)
	}
	deadline := time.Now().Add(5 * time.Second)
	for procAlive(grandchild) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if procAlive(grandchild) {
		t.Errorf("grandchild %d of the cancelled server is still alive", grandchild)
	}
}

func TestBuildPastItsDeadlineIsCancelled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "mute.pids")
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	_, err := Build(ctx, muteServerConfig(t, pidFile))
	wantCode(t, err, "cancelled", StatusCancelled)
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("the build returned before its deadline: %v", err)
	}
	if b, rerr := os.ReadFile(pidFile); rerr == nil {
		var server, grandchild int
		if n, _ := fmt.Sscanf(string(b), "%d %d", &server, &grandchild); n == 2 {
			deadline := time.Now().Add(5 * time.Second)
			for (procAlive(server) || procAlive(grandchild)) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if procAlive(server) || procAlive(grandchild) {
				t.Errorf("left running: server %d, grandchild %d", server, grandchild)
			}
		}
	}
}

func TestSkillProviderSkillsRenderAndExecute(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "tenant-7")
	calls := 0
	tk, err := Build(ctx, map[string]any{
		"builtins": false,
		"skills":   []any{map[string]any{"name": "dup", "content": "CONFIG COPY"}},
	}, WithSkillProvider(func(ctx context.Context) ([]SkillDef, error) {
		calls++
		tenant, _ := ctx.Value(key{}).(string)
		return []SkillDef{
			{Name: "from-go", Description: "skills of " + tenant, Content: "GO BODY", Resources: []string{"guide.md"}},
			{Name: "dup", Content: "PROVIDER COPY"},
		}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if calls != 1 {
		t.Fatalf("provider called %d times", calls)
	}
	prompt, err := tk.Render("skillsPrompt")
	if err != nil || !strings.Contains(string(prompt), "skills of tenant-7") {
		t.Fatalf("prompt %s (%v)", prompt, err)
	}
	r, err := tk.Execute(context.Background(), "skill", map[string]any{"name": "from-go"})
	if err != nil || r.IsError || !strings.Contains(r.Output, "GO BODY") || !strings.Contains(r.Output, "guide.md") {
		t.Fatalf("execute: %+v (%v)", r, err)
	}
	r, err = tk.Execute(context.Background(), "skill", map[string]any{"name": "dup"})
	if err != nil || !strings.Contains(r.Output, "CONFIG COPY") || strings.Contains(r.Output, "PROVIDER COPY") {
		t.Fatalf("first of a name should win: %+v (%v)", r, err)
	}
}

func TestSkillProviderThatFailsOrPanicsIsIsolated(t *testing.T) {
	cases := map[string]func(context.Context) ([]SkillDef, error){
		"the skills store is down": func(context.Context) ([]SkillDef, error) {
			return nil, errors.New("the skills store is down")
		},
		"panicked: provider bug": func(context.Context) ([]SkillDef, error) {
			panic("provider bug")
		},
	}
	for want, provider := range cases {
		tk, err := Build(context.Background(), map[string]any{
			"builtins": false,
			"skills":   []any{map[string]any{"name": "kept", "content": "still here"}},
		}, WithSkillProvider(provider))
		if err != nil {
			t.Fatalf("%s: a failing provider failed the build: %v", want, err)
		}
		status, _ := tk.Render("status")
		if !strings.Contains(string(status), `"skillProvider":"skill provider failed: `+want) {
			t.Errorf("%s: status %s", want, status)
		}
		r, err := tk.Execute(context.Background(), "skill", map[string]any{"name": "kept"})
		if err != nil || !strings.Contains(r.Output, "still here") {
			t.Errorf("%s: the config skill is gone: %+v (%v)", want, r, err)
		}
		tk.Close()
	}
}
