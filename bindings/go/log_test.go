package toolnexus

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The log callback sees an MCP server's stderr lines (info, target mcp) and
// a failed server (warn); nothing reaches it once logging is off.
func TestSetLoggerDeliversMcpDiagnostics(t *testing.T) {
	server, err := filepath.Abs("../../tests/mcp_servers/sdk_server.py")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	SetLogger(LogInfo, func(level int, target, message string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, target+"|"+message)
		_ = level
	})
	tk, err := Build(context.Background(), map[string]any{"builtins": false, "mcpConfig": map[string]any{"mcpServers": map[string]any{
		"chatty": map[string]any{"command": []string{"sh", "-c", "echo 'hello from stderr' >&2; exec python3 " + server + " stdio"}, "timeout": 20000},
		"gone":   map[string]any{"command": []string{"/nonexistent/tn-server"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	tk.Close()
	SetLogger(LogOff, nil)
	mu.Lock()
	got := strings.Join(lines, "\n")
	mu.Unlock()
	if !strings.Contains(got, `mcp|server "chatty" stderr: hello from stderr`) {
		t.Fatalf("no stderr line in:\n%s", got)
	}
	if !strings.Contains(got, "mcp|") || !strings.Contains(got, "gone") {
		t.Fatalf("no failure of server gone in:\n%s", got)
	}
	before := len(lines)
	tk2, err := Build(context.Background(), map[string]any{"mcpConfig": map[string]any{"mcpServers": map[string]any{
		"gone": map[string]any{"command": []string{"/nonexistent/tn-server"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	tk2.Close()
	if len(lines) != before {
		t.Fatalf("a message arrived with logging off: %v", lines[before:])
	}
}
