package toolnexus

/*
#include <stdlib.h>
#include "toolnexus.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"unsafe"
)

// ToolInfo is one tool as an MCP server lists it, under its own name.
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// McpInventory is what ListMcpTools found: per server, its tools (original
// names, unfiltered by the server's tools allow-list), its status
// ("connected", "disabled" or "failed") and, for a failed one, why.
type McpInventory struct {
	Tools  map[string][]ToolInfo `json:"tools"`
	Status map[string]string     `json:"status"`
	Errors map[string]string     `json:"errors"`
}

// ListMcpTools (SPEC §2 Gap 6) connects to every enabled server of an MCP
// config, lists its tools and disconnects: no toolkit, nothing left running.
// config is what a toolkit's mcpConfig takes: a value to marshal, JSON text
// of an object, or json.RawMessage of a JSON string holding an mcp.json path.
// A server that fails is a "failed" status, never an error of the call.
func ListMcpTools(config any) (*McpInventory, error) {
	text, err := jsonText(config)
	if err != nil {
		return nil, fmt.Errorf("toolnexus: mcp config: %w", err)
	}
	cconf, err := cString("config", text)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cconf))
	var cout *C.char
	status := C.tn_mcp_list_tools(cconf, &cout)
	body := takeString(cout)
	if status != C.TN_OK {
		return nil, statusError(status, body)
	}
	var inv McpInventory
	if err := json.Unmarshal(body, &inv); err != nil {
		return nil, fmt.Errorf("toolnexus: inventory JSON: %w", err)
	}
	return &inv, nil
}
