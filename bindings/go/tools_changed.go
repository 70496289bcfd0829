package toolnexus

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toolnexus.h"

tn_status tngo_build_set_tools_changed(tn_build_options *opts, uintptr_t handle, char **out_error);
*/
import "C"

import (
	"encoding/json"
	"runtime/cgo"
	"unsafe"
)

// ToolsChangedEvent says that an MCP server's tools changed: it sent
// notifications/tools/list_changed, the toolkit listed its tools again and
// now serves the new list (docs/mcp.md, "Live tool lists"). Added and
// Removed are toolkit names; Tools is every toolkit name of that server now;
// Generation counts the changes of the toolkit's MCP tools since the build
// (Render("status")'s "toolsGeneration").
type ToolsChangedEvent struct {
	Server     string   `json:"server"`
	Added      []string `json:"added"`
	Removed    []string `json:"removed"`
	Tools      []string `json:"tools"`
	Generation uint64   `json:"generation"`
}

// toolkitToolsChanged is what a toolkit's toolsChanged cgo.Handle points at.
type toolkitToolsChanged struct {
	f func(ToolsChangedEvent)
}

// WithToolsChanged gives the toolkit a listener for live MCP tool lists:
// it is called, on a library thread and one event of a server at a time,
// after a server's tools changed and the new list is served. A panic in it
// is recovered and ignored. The toolkit keeps it until Close.
func WithToolsChanged(f func(ToolsChangedEvent)) BuildOption {
	return func(o *buildOptions) { o.toolsChanged = f }
}

// setToolsChanged puts f (if any) in the build's "toolsChanged" slot.
func setToolsChanged(copts *C.tn_build_options, f func(ToolsChangedEvent)) error {
	if f == nil {
		return nil
	}
	h := cgo.NewHandle(&toolkitToolsChanged{f: f})
	liveSlots.Lock()
	liveSlots.m[h] = struct{}{}
	liveSlots.Unlock()
	var cerr *C.char
	// The library owns h from here: it releases it
	// (goToolkitToolsChangedRelease) once the options and every toolkit
	// built with them are freed.
	status := C.tngo_build_set_tools_changed(copts, C.uintptr_t(h), &cerr)
	body := takeString(cerr)
	if status != C.TN_OK {
		return statusError(status, body)
	}
	return nil
}

//export goToolkitToolsChanged
func goToolkitToolsChanged(handle C.uintptr_t, event *C.char) {
	l := lookupHandle[toolkitToolsChanged](cgo.Handle(handle), true)
	if l == nil {
		return
	}
	var e ToolsChangedEvent
	if err := json.Unmarshal(C.GoBytes(unsafe.Pointer(event), C.int(C.strlen(event))), &e); err != nil {
		return
	}
	func() {
		defer func() { _ = recover() }()
		l.f(e)
	}()
}

//export goToolkitToolsChangedRelease
func goToolkitToolsChangedRelease(handle C.uintptr_t) {
	releaseSlot(cgo.Handle(handle))
}
