package toolnexus

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toolnexus.h"
#include "shim.h"

tn_status tngo_register(const tn_toolkit *toolkit, const char *name, const char *description,
                        const char *schema, uintptr_t handle, char **out_error);
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/cgo"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// ToolFunc is a Go function served as a tool. args is the arguments JSON
// object. Returning an error makes an isError result whose output is the
// error's text; a panic is recovered into an isError result too.
type ToolFunc func(ctx context.Context, args json.RawMessage) (string, error)

// ResultFunc is a Go tool that returns a whole ToolResult, metadata included.
type ResultFunc func(ctx context.Context, args json.RawMessage) (*ToolResult, error)

type goTool struct {
	name   string
	text   ToolFunc   // set by Register: the result crosses as output text
	result ResultFunc // set by RegisterResult: the result crosses as JSON
}

// liveHandles tracks every cgo.Handle handed to the library, so a handle is
// deleted exactly once (by the library's user_data_free, or here when the
// registration failed) and tests can see the table drain after Close.
// The tool is kept beside its handle, so a call finds it with one map
// lookup under the read lock instead of a second one in h.Value.
var liveHandles = struct {
	sync.RWMutex
	m map[cgo.Handle]*goTool
}{m: map[cgo.Handle]*goTool{}}

func newToolHandle(t *goTool) cgo.Handle {
	h := cgo.NewHandle(t)
	liveHandles.Lock()
	liveHandles.m[h] = t
	liveHandles.Unlock()
	return h
}

func releaseToolHandle(h cgo.Handle) {
	liveHandles.Lock()
	_, ok := liveHandles.m[h]
	delete(liveHandles.m, h)
	liveHandles.Unlock()
	if ok {
		h.Delete()
	}
}

// lookupTool returns the tool behind a live handle, or nil: Value on a deleted
// handle would panic, and that panic must not cross into C.
func lookupTool(h cgo.Handle) *goTool {
	liveHandles.RLock()
	t := liveHandles.m[h]
	liveHandles.RUnlock()
	return t
}

// LiveHandles reports how many Go tool functions the library still holds. It
// returns to zero once every toolkit they were registered on is closed.
func LiveHandles() int {
	liveHandles.Lock()
	defer liveHandles.Unlock()
	return len(liveHandles.m)
}

// Register adds a Go function as a tool (source "native"). schema is the
// input JSON schema: JSON text, a value to marshal, or nil for
// {"type":"object"}. fn may be called from many goroutines at once, and may
// itself call Execute or Render on the same toolkit.
func (tk *Toolkit) Register(name, description string, schema any, fn ToolFunc) error {
	if fn == nil {
		return &Error{Code: "null_argument", Status: StatusNullArgument, Message: "Register " + name + ": fn is nil"}
	}
	return tk.register(&goTool{name: name, text: fn}, description, schema)
}

// RegisterResult is Register for a function that returns a whole ToolResult
// (isError and metadata of its own choosing). A nil result with a nil error
// is an empty successful output.
func (tk *Toolkit) RegisterResult(name, description string, schema any, fn ResultFunc) error {
	if fn == nil {
		return &Error{Code: "null_argument", Status: StatusNullArgument, Message: "Register " + name + ": fn is nil"}
	}
	return tk.register(&goTool{name: name, result: fn}, description, schema)
}

func (tk *Toolkit) register(tool *goTool, description string, schema any) error {
	name := tool.name
	cname, err := cString("name", name)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cname))
	cdesc, err := cString("description", description)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cdesc))
	var cschema *C.char
	if schema != nil {
		text, err := jsonText(schema)
		if err != nil {
			return fmt.Errorf("toolnexus: schema of %s: %w", name, err)
		}
		if cschema, err = cString("schema", text); err != nil {
			return err
		}
		defer C.free(unsafe.Pointer(cschema))
	}
	return tk.with(func(p *C.tn_toolkit) error {
		h := newToolHandle(tool)
		var cerr *C.char
		status := C.tngo_register(p, cname, cdesc, cschema, C.uintptr_t(h), &cerr)
		body := takeString(cerr)
		if status != C.TN_OK {
			// Whether or not the library already ran user_data_free, the
			// handle is gone after this (release is idempotent).
			releaseToolHandle(h)
			return statusError(status, body)
		}
		return nil
	})
}

// invoke runs the tool function, turning an error or a panic into an isError
// result: a Go panic must never unwind into the Rust frames below us.
func (t *goTool) invoke(ctx context.Context, args []byte) (res *ToolResult) {
	defer func() {
		if r := recover(); r != nil {
			res = &ToolResult{Output: fmt.Sprintf("tool %s panicked: %v", t.name, r), IsError: true}
		}
	}()
	if t.text != nil {
		out, err := t.text(ctx, json.RawMessage(args))
		if err != nil {
			return &ToolResult{Output: err.Error(), IsError: true}
		}
		return &ToolResult{Output: out}
	}
	res, err := t.result(ctx, json.RawMessage(args))
	switch {
	case err != nil:
		return &ToolResult{Output: err.Error(), IsError: true}
	case res == nil:
		return &ToolResult{}
	}
	return res
}

// encodeResult writes a ToolResult as the library reads it. Output text that
// is not valid UTF-8 is repaired (JSON cannot carry it); metadata that does
// not marshal becomes an isError result saying so.
func encodeResult(r *ToolResult) []byte {
	r.Output = strings.ToValidUTF8(r.Output, "\uFFFD")
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(&ToolResult{Output: "tool result does not encode as JSON: " + err.Error(), IsError: true})
	}
	return b
}

//export goToolCall
func goToolCall(handle C.uintptr_t, args *C.char, argsLen C.size_t, call *C.tn_call,
	deadlineMs C.int64_t, cancellable C.bool, out *C.char, outCap C.size_t) C.int {
	var argBytes []byte
	if args != nil {
		argBytes = make([]byte, int(argsLen))
		copy(argBytes, unsafe.Slice((*byte)(unsafe.Pointer(args)), int(argsLen)))
	}
	var res *ToolResult
	if t := lookupTool(cgo.Handle(handle)); t != nil {
		// The call's deadline (timeoutMs of Execute) becomes the context's:
		// a function that honours ctx stops in time; a late answer is dropped
		// by the library either way.
		ctx := context.Background()
		if ms := int64(deadlineMs); ms >= 0 {
			var cancel context.CancelFunc
			// One millisecond more than the whole milliseconds the library
			// reports: the Go deadline must not fall before the library's,
			// or a tool that stops on ctx.Done() would answer "in time" with
			// its context error instead of the call's timeout result.
			ctx, cancel = context.WithTimeout(ctx, time.Duration(ms+1)*time.Millisecond)
			defer cancel()
		}
		if cancellable {
			// The caller may cancel (Execute's ctx): the function's context
			// is cancelled with it. The watcher is done before this returns,
			// since call is valid only during the callback.
			var stop func()
			ctx, stop = watchCancelled(ctx, call)
			defer stop()
		}
		res = t.invoke(ctx, argBytes)
	} else {
		res = &ToolResult{Output: "toolnexus: stale Go tool handle", IsError: true}
	}
	res.Output = strings.ToValidUTF8(res.Output, "\uFFFD")
	if res.Metadata == nil && len(res.Parts) == 0 && strings.IndexByte(res.Output, 0) < 0 {
		// The common case: plain text, no JSON on either side.
		if len(res.Output) < int(outCap) {
			// Into the trampoline's buffer (C memory), which sets it.
			dst := unsafe.Slice((*byte)(unsafe.Pointer(out)), int(outCap))
			dst[copy(dst, res.Output)] = 0
			if res.IsError {
				return C.TNGO_OUT_ERROR
			}
			return C.TNGO_OUT_OK
		}
		// Borrowed Go memory (the library copies it): no C malloc, no free.
		b := make([]byte, len(res.Output)+1)
		copy(b, res.Output)
		C.tn_call_set_output(call, (*C.char)(unsafe.Pointer(&b[0])), C.bool(res.IsError))
		return C.TNGO_SET_BY_GO
	}
	result := append(encodeResult(res), 0) // JSON text: no NUL inside
	C.tn_call_set_result_json(call, (*C.char)(unsafe.Pointer(&result[0])))
	return C.TNGO_SET_BY_GO
}

// cancelPoll is how often a running Go tool's watcher asks the library
// whether its call was cancelled.
const cancelPoll = 5 * time.Millisecond

// watchCancelled returns a context cancelled once tn_call_cancelled turns
// true, and the function that ends the watch (waiting for the watcher).
func watchCancelled(parent context.Context, call *C.tn_call) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(cancelPoll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if C.tn_call_cancelled(call) {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, func() {
		cancel()
		<-done
	}
}

//export goToolRelease
func goToolRelease(handle C.uintptr_t) {
	releaseToolHandle(cgo.Handle(handle))
}
