package toolnexus

/*
#include "toolnexus.h"
*/
import "C"

import "context"

// withCancelToken calls f with a fresh cancel token that ctx's cancellation
// (or deadline) triggers from another goroutine while f blocks in C. The
// token is freed only after the watcher has exited, so a late trigger never
// touches freed memory.
func withCancelToken(ctx context.Context, f func(token *C.tn_cancel) error) error {
	if ctx.Done() == nil {
		// A context that can never be cancelled needs no token: without
		// one, a Go tool runs on the calling thread, not a thread of its own.
		return f(nil)
	}
	token := C.tn_cancel_new()
	if token == nil {
		return &Error{Code: "internal", Status: StatusInternal, Message: "tn_cancel_new returned NULL"}
	}
	if ctx.Err() != nil {
		// Already over: the call must not start its tool at all.
		C.tn_cancel_trigger(token)
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-ctx.Done():
			C.tn_cancel_trigger(token)
		case <-done:
		}
	}()
	err := f(token)
	close(done)
	<-exited
	C.tn_cancel_free(token)
	return err
}
