package toolnexus

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A toolkit built WithToolsChanged over an official-SDK server whose tools
// change while it runs (tests/mcp_servers/sdk_changing_server.py) hears the
// change and serves the new tool.
func TestToolsChangedHearsAServerThatAddsATool(t *testing.T) {
	server, err := filepath.Abs("../../tests/mcp_servers/sdk_changing_server.py")
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan ToolsChangedEvent, 16)
	tk, err := Build(context.Background(), map[string]any{
		"builtins": false,
		"mcpConfig": map[string]any{"mcpServers": map[string]any{
			"live": map[string]any{"command": []string{"python3", server, "stdio"}, "timeout": 20000}}},
	}, WithToolsChanged(func(e ToolsChangedEvent) { events <- e }))
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	r, err := tk.Execute(context.Background(), "live_add", map[string]any{"name": "extra"})
	if err != nil || r.IsError || r.Output != "added extra" {
		t.Fatalf("live_add: %+v %v", r, err)
	}
	var e ToolsChangedEvent
	select {
	case e = <-events:
	case <-time.After(60 * time.Second):
		t.Fatal("no toolsChanged event")
	}
	if e.Server != "live" || !slices.Equal(e.Added, []string{"live_extra"}) || len(e.Removed) != 0 || e.Generation < 1 {
		t.Fatalf("event: %+v", e)
	}
	raw, err := tk.Render("toolNames")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil || !slices.Contains(names, "live_extra") {
		t.Fatalf("toolNames: %s %v", raw, err)
	}
	r, err = tk.Execute(context.Background(), "live_extra", map[string]any{})
	if err != nil || r.Output != "I am extra" {
		t.Fatalf("live_extra: %+v %v", r, err)
	}
}
