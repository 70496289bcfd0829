package toolnexus

/*
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toolnexus.h"

tn_status tngo_build_set_wait_for(tn_build_options *opts, uintptr_t handle, char **out_error);
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

// WaitForFunc is the host's SPEC §10 waitFor: a Request in, its Answer out.
// ClientOptions.WaitFor has this shape, so one function can serve both.
type WaitForFunc func(ctx context.Context, req Request) (Answer, error)

// toolkitWaitFor is what a toolkit's waitFor cgo.Handle points at.
type toolkitWaitFor struct {
	f WaitForFunc
}

// WithWaitFor gives the toolkit the host's waitFor for the MCP elicitation
// bridge (SPEC §2): every MCP server of the toolkit is told the client
// supports elicitation, and a server that asks for input during a tool call
// is answered by waitFor while the call waits. A form-mode question is a
// Request of Kind "input" with the form's JSON schema under Data.schema; a
// URL-mode one is Kind "authorization" with URL set. An OK Answer accepts
// (form mode: Data, a JSON object, is what the user entered); Reason
// "declined" declines; any other refusal cancels. An error (or a panic)
// makes the server's request fail, and the tool call still ends with a
// result. waitFor runs on library threads, possibly several at once; its ctx
// is cancelled once nobody waits for the answer any more (the tool call hit
// its deadline or was cancelled, or the toolkit is closing). Without it,
// elicitation is not advertised. The toolkit keeps waitFor until Close.
func WithWaitFor(waitFor WaitForFunc) BuildOption {
	return func(o *buildOptions) { o.waitFor = waitFor }
}

// setWaitFor puts waitFor (if any) in the build's "waitFor" slot.
func setWaitFor(copts *C.tn_build_options, waitFor WaitForFunc) error {
	if waitFor == nil {
		return nil
	}
	h := cgo.NewHandle(&toolkitWaitFor{f: waitFor})
	liveSlots.Lock()
	liveSlots.m[h] = struct{}{}
	liveSlots.Unlock()
	var cerr *C.char
	// The library owns h from here: it releases it (goToolkitWaitForRelease)
	// once the options and every toolkit built with them are freed.
	status := C.tngo_build_set_wait_for(copts, C.uintptr_t(h), &cerr)
	body := takeString(cerr)
	if status != C.TN_OK {
		return statusError(status, body)
	}
	return nil
}

// pollStop cancels ctx once the library says the answer is no longer
// awaited; the returned func stops the polling and waits for it to end (the
// reply is valid only until the callback returns).
func pollStop(reply *C.tn_reply, cancel context.CancelFunc) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if C.tn_reply_cancelled(reply) {
					cancel()
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

//export goToolkitWaitFor
func goToolkitWaitFor(handle C.uintptr_t, event *C.char, reply *C.tn_reply) {
	fail := func(msg string) {
		cmsg := C.CString(msg)
		C.tn_reply_set_error(reply, cmsg)
		C.free(unsafe.Pointer(cmsg))
	}
	w := lookupHandle[toolkitWaitFor](cgo.Handle(handle), true)
	if w == nil {
		fail("toolnexus: the toolkit's waitFor is released")
		return
	}
	ev := C.GoBytes(unsafe.Pointer(event), C.int(C.strlen(event)))
	var req Request
	if err := json.Unmarshal(ev, &req); err != nil {
		fail("toolnexus: the Request does not decode: " + err.Error())
		return
	}
	req.Raw = append(json.RawMessage(nil), ev...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := pollStop(reply, cancel)
	answer, err := func() (a Answer, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("waitFor panicked: %v", p)
			}
		}()
		return w.f(ctx, req)
	}()
	stop()
	if err != nil {
		fail(err.Error())
		return
	}
	if answer.ID == "" {
		answer.ID = req.ID
	}
	b, err := json.Marshal(answer)
	if err != nil {
		fail("waitFor answer does not encode as JSON: " + err.Error())
		return
	}
	b = append(b, 0)
	C.tn_reply_set_json(reply, (*C.char)(unsafe.Pointer(&b[0])))
}

//export goToolkitWaitForRelease
func goToolkitWaitForRelease(handle C.uintptr_t) {
	releaseSlot(cgo.Handle(handle))
}
