package toolnexus

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toolnexus.h"

tn_status tngo_build_set_skill_provider(tn_build_options *opts, uintptr_t handle, char **out_error);
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/cgo"
	"unsafe"
)

// SkillDef is a skill given as data (SPEC §3 S1), the shape of the config's
// "skills" entries: Base defaults to skill://<name>/, Resources are logical
// file names listed in the skill tool's output.
type SkillDef struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Content     string   `json:"content,omitempty"`
	Resources   []string `json:"resources,omitempty"`
	Base        string   `json:"base,omitempty"`
}

// BuildOption adds a host extension to Build.
type BuildOption func(*buildOptions)

type buildOptions struct {
	skillProvider func(ctx context.Context) ([]SkillDef, error)
	waitFor       WaitForFunc             // elicit.go
	authorize     AuthorizeFunc           // authorize.go
	toolsChanged  func(ToolsChangedEvent) // tools_changed.go
}

// WithSkillProvider supplies skills from Go at build time (SPEC §3 S1), for
// skills kept in a database or a bundle. The provider runs once per Build,
// on the building goroutine's thread, with Build's ctx. Its skills load
// after the config's "skills" (the first skill of a name wins). A provider
// that returns an error or panics fails neither the build nor the other
// skill sources: its message is the status error "skillProvider"
// (Render("status")).
func WithSkillProvider(provider func(ctx context.Context) ([]SkillDef, error)) BuildOption {
	return func(o *buildOptions) { o.skillProvider = provider }
}

// buildCall is what a skill provider's cgo.Handle points at.
type buildCall struct {
	ctx      context.Context
	provider func(ctx context.Context) ([]SkillDef, error)
}

// build runs tn_toolkit_build_with: ctx's cancellation or deadline
// triggers the build's cancel token, so a build hung on an MCP server ends
// promptly (TN_CANCELLED), with every child process it started gone.
func build(ctx context.Context, cconf *C.char, opts []BuildOption) (*C.tn_toolkit, error) {
	var o buildOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	copts := C.tn_build_options_new()
	if copts == nil {
		return nil, &Error{Code: "internal", Status: StatusInternal, Message: "tn_build_options_new returned NULL"}
	}
	defer C.tn_build_options_free(copts)
	if o.skillProvider != nil {
		h := cgo.NewHandle(&buildCall{ctx: ctx, provider: o.skillProvider})
		var cerr *C.char
		// The library owns the handle from here: its release deletes it.
		status := C.tngo_build_set_skill_provider(copts, C.uintptr_t(h), &cerr)
		body := takeString(cerr)
		if status != C.TN_OK {
			return nil, statusError(status, body)
		}
	}
	if err := setWaitFor(copts, o.waitFor); err != nil {
		return nil, err
	}
	if err := setAuthorize(copts, o.authorize); err != nil {
		return nil, err
	}
	if err := setToolsChanged(copts, o.toolsChanged); err != nil {
		return nil, err
	}
	var ptr *C.tn_toolkit
	err := withCancelToken(ctx, func(token *C.tn_cancel) error {
		if token != nil {
			if status := C.tn_build_options_set_cancel(copts, token); status != C.TN_OK {
				return statusError(status, nil)
			}
		}
		var cerr *C.char
		status := C.tn_toolkit_build_with(cconf, copts, &ptr, &cerr)
		body := takeString(cerr)
		if status != C.TN_OK {
			return statusError(status, body)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ptr == nil {
		return nil, &Error{Code: "internal", Status: StatusInternal, Message: "tn_toolkit_build_with returned ok without a toolkit"}
	}
	return ptr, nil
}

//export goBuildCallback
func goBuildCallback(handle C.uintptr_t, reply *C.tn_reply) {
	call, _ := cgo.Handle(handle).Value().(*buildCall)
	fail := func(msg string) {
		cmsg := C.CString(msg)
		C.tn_reply_set_error(reply, cmsg)
		C.free(unsafe.Pointer(cmsg))
	}
	if call == nil {
		fail("the skill provider is gone")
		return
	}
	skills, err := func() (s []SkillDef, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panicked: %v", p)
			}
		}()
		return call.provider(call.ctx)
	}()
	if err != nil {
		fail(err.Error())
		return
	}
	if skills == nil {
		skills = []SkillDef{}
	}
	b, err := json.Marshal(skills)
	if err != nil {
		fail("the skills do not encode as JSON: " + err.Error())
		return
	}
	b = append(b, 0)
	C.tn_reply_set_json(reply, (*C.char)(unsafe.Pointer(&b[0])))
}

//export goBuildRelease
func goBuildRelease(handle C.uintptr_t) {
	cgo.Handle(handle).Delete()
}
