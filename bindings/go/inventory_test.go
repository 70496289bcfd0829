package toolnexus

import (
	"errors"
	"path/filepath"
	"sort"
	"testing"
)

func TestListMcpToolsListsEveryServerAndIsolatesFailures(t *testing.T) {
	server, err := filepath.Abs("../../tests/mcp_servers/sdk_server.py")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := ListMcpTools(map[string]any{"mcpServers": map[string]any{
		"sdk":  map[string]any{"command": []string{"python3", server, "stdio"}, "tools": map[string]bool{"add": true}, "timeout": 20000},
		"dead": map[string]any{"command": []string{"/nonexistent/tn-server"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Status["sdk"] != "connected" || inv.Status["dead"] != "failed" || inv.Errors["dead"] == "" {
		t.Fatalf("status %v errors %v", inv.Status, inv.Errors)
	}
	var names []string
	for _, ti := range inv.Tools["sdk"] {
		names = append(names, ti.Name)
	}
	sort.Strings(names)
	if len(names) != 3 || names[0] != "add" || names[1] != "echo" || names[2] != "explode" {
		t.Fatalf("tools %v: want the unfiltered original names", names)
	}
}

func TestListMcpToolsNamesABadConfig(t *testing.T) {
	_, err := ListMcpTools(`5`)
	var e *Error
	if !errors.As(err, &e) || e.Code != "invalid_config" {
		t.Fatalf("err %v: want invalid_config", err)
	}
	_, err = ListMcpTools(`{not json`)
	if !errors.As(err, &e) || e.Code != "invalid_json" {
		t.Fatalf("err %v: want invalid_json", err)
	}
}
