package toolnexus

/*
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toolnexus.h"

tn_status tngo_build_set_authorize(tn_build_options *opts, uintptr_t handle, char **out_error);
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/cgo"
	"unsafe"
)

// AuthorizeEvent is what the browser step of MCP authorization is given
// (docs/mcp.md, "MCP authorization"): the server that needs it, the
// authorization URL to open (it carries PKCE S256, state and resource), the
// redirect URI the authorization server will send the browser back to, and
// the MCP server's URL.
type AuthorizeEvent struct {
	Server      string `json:"server"`
	URL         string `json:"url"`
	RedirectURI string `json:"redirectUri"`
	Resource    string `json:"resource"`
}

// AuthorizeFunc completes the browser step: show ev.URL to a human and
// return the full URL the browser was redirected to (with its code and
// state). ctx is cancelled once nobody waits for the answer.
type AuthorizeFunc func(ctx context.Context, ev AuthorizeEvent) (redirectURL string, err error)

// toolkitAuthorize is what a toolkit's authorize cgo.Handle points at.
type toolkitAuthorize struct {
	f AuthorizeFunc
}

// WithAuthorize gives the toolkit the host's authorize for MCP authorization
// (OAuth 2.1): when a remote MCP server answers 401, the toolkit discovers
// its authorization server, registers or uses the configured client, and
// calls authorize with the authorization URL; the redirect URL it returns is
// checked (origin and path of the redirect URI, state, iss) and its code
// exchanged for tokens, which every request then carries (refreshed as they
// expire). An error (or a panic) fails the authorization, and with it the
// server's connect or the call that needed it. With it, every remote server
// without an "auth" setting is authorized on a 401; without it only servers
// with "auth" are (and only client_credentials completes). It runs on a
// library thread; the time it takes does not count against the server's
// timeout (auth.authorizeTimeoutMs bounds it, default 300 s). The toolkit
// keeps authorize until Close.
func WithAuthorize(authorize AuthorizeFunc) BuildOption {
	return func(o *buildOptions) { o.authorize = authorize }
}

// setAuthorize puts authorize (if any) in the build's "authorize" slot.
func setAuthorize(copts *C.tn_build_options, authorize AuthorizeFunc) error {
	if authorize == nil {
		return nil
	}
	h := cgo.NewHandle(&toolkitAuthorize{f: authorize})
	liveSlots.Lock()
	liveSlots.m[h] = struct{}{}
	liveSlots.Unlock()
	var cerr *C.char
	// The library owns h from here: it releases it (goToolkitAuthorizeRelease)
	// once the options and every toolkit built with them are freed.
	status := C.tngo_build_set_authorize(copts, C.uintptr_t(h), &cerr)
	body := takeString(cerr)
	if status != C.TN_OK {
		return statusError(status, body)
	}
	return nil
}

//export goToolkitAuthorize
func goToolkitAuthorize(handle C.uintptr_t, event *C.char, reply *C.tn_reply) {
	fail := func(msg string) {
		cmsg := C.CString(msg)
		C.tn_reply_set_error(reply, cmsg)
		C.free(unsafe.Pointer(cmsg))
	}
	a := lookupHandle[toolkitAuthorize](cgo.Handle(handle), true)
	if a == nil {
		fail("toolnexus: the toolkit's authorize is released")
		return
	}
	ev := C.GoBytes(unsafe.Pointer(event), C.int(C.strlen(event)))
	var e AuthorizeEvent
	if err := json.Unmarshal(ev, &e); err != nil {
		fail("toolnexus: the authorize event does not decode: " + err.Error())
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := pollStop(reply, cancel)
	redirect, err := func() (r string, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("authorize panicked: %v", p)
			}
		}()
		return a.f(ctx, e)
	}()
	stop()
	if err != nil {
		fail(err.Error())
		return
	}
	b, err := json.Marshal(redirect)
	if err != nil {
		fail("authorize's answer does not encode as JSON: " + err.Error())
		return
	}
	b = append(b, 0)
	C.tn_reply_set_json(reply, (*C.char)(unsafe.Pointer(&b[0])))
}

//export goToolkitAuthorizeRelease
func goToolkitAuthorizeRelease(handle C.uintptr_t) {
	releaseSlot(cgo.Handle(handle))
}
