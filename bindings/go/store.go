package toolnexus

/*
#include <stdint.h>
#include <stdlib.h>
#include "toolnexus.h"

tn_status tngo_store_register(const char *name, const char *options_json, uintptr_t handle, char **out_error);
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"runtime/cgo"
	"time"
)

// Store is a host's own place for durable records (issue 27): the tasks of
// a served A2A agent, the conversations Ask keeps, checkpoints. Registered
// with RegisterStore under a name, it is the store selector "host:<name>"
// names: a client's "store" config key, an A2A block's "store".
//
// kind is "task", "conversation" or "checkpoint"; ids are unique per kind.
// Get returns nil for a record never saved; Save replaces the record
// (return once it is durable: the library acknowledges what it saved);
// Delete reports whether there was one. An error (or a panic, recovered)
// fails the operation that needed the store with an error naming it:
// `store "host:<name>": save failed: <error>`. The methods may be called
// from many goroutines at once. The operation waits for a method at most
// 30 s (WithStoreTimeout sets another wait), then fails with
// `store "host:<name>": get did not answer within 30000 ms`; the method's
// late answer is dropped.
type Store interface {
	Get(kind, id string) (json.RawMessage, error)
	Save(kind, id string, record json.RawMessage) error
	Delete(kind, id string) (bool, error)
}

// StoreOption tunes RegisterStore.
type StoreOption func(*storeOptions)

type storeOptions struct {
	timeout time.Duration
}

// WithStoreTimeout sets how long an operation waits for the store's
// method before it fails naming the store, the operation and the wait
// (default 30 s; from 1 ms to 24 h, rounded down to whole milliseconds).
// A method that blocks past it keeps its goroutine until it returns, but
// no longer holds up the request that needed the store.
func WithStoreTimeout(d time.Duration) StoreOption {
	return func(o *storeOptions) { o.timeout = d }
}

// RegisterStore makes s the store "host:<name>" names, in this process. A
// name already registered is an error (UnregisterStore it first), as is an
// empty one, or a timeout out of range.
func RegisterStore(name string, s Store, opts ...StoreOption) error {
	if s == nil {
		return &Error{Code: "null_argument", Status: StatusNullArgument, Message: "RegisterStore: the store is nil"}
	}
	bname, err := cBorrowed("store name", name)
	if err != nil {
		return err
	}
	var o storeOptions
	for _, opt := range opts {
		opt(&o)
	}
	var coptions *C.char
	if o.timeout != 0 {
		ms := o.timeout.Milliseconds()
		if ms == 0 && o.timeout > 0 {
			ms = 1
		}
		options, _ := json.Marshal(map[string]int64{"timeoutMs": ms})
		boptions, _ := cBorrowed("store options", string(options))
		coptions = cPtr(boptions)
	}
	h := cgo.NewHandle(s)
	var cerr *C.char
	// The library owns the handle from here: it is deleted by the release
	// callback, at once when the registration is refused.
	if status := C.tngo_store_register(cPtr(bname), coptions, C.uintptr_t(h), &cerr); status != C.TN_OK {
		return statusError(status, takeString(cerr))
	}
	return nil
}

// UnregisterStore forgets the store registered as name: the selector
// "host:<name>" is refused from now on, while the clients and servers
// already using the store keep it until they are closed. An unknown name is
// an error.
func UnregisterStore(name string) error {
	bname, err := cBorrowed("store name", name)
	if err != nil {
		return err
	}
	var cerr *C.char
	if status := C.tn_store_unregister(cPtr(bname), &cerr); status != C.TN_OK {
		return statusError(status, takeString(cerr))
	}
	return nil
}

//export goStoreCall
func goStoreCall(handle C.uintptr_t, event *C.char, reply *C.tn_reply) {
	answer, err := func() (answer any, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("the Go store panicked: %v", p)
			}
		}()
		s, ok := cgo.Handle(handle).Value().(Store)
		if !ok {
			return nil, fmt.Errorf("the Go store is gone")
		}
		var ev struct {
			Op     string          `json:"op"`
			Kind   string          `json:"kind"`
			ID     string          `json:"id"`
			Record json.RawMessage `json:"record"`
		}
		if err := json.Unmarshal([]byte(C.GoString(event)), &ev); err != nil {
			return nil, err
		}
		switch ev.Op {
		case "get":
			rec, err := s.Get(ev.Kind, ev.ID)
			if err != nil || rec == nil {
				return json.RawMessage("null"), err
			}
			return rec, nil
		case "save":
			return nil, s.Save(ev.Kind, ev.ID, ev.Record)
		case "delete":
			return s.Delete(ev.Kind, ev.ID)
		}
		return nil, fmt.Errorf("unknown store operation %q", ev.Op)
	}()
	if err != nil {
		replyError(reply, err.Error())
		return
	}
	if err := replyJSON(reply, answer); err != nil {
		replyError(reply, "the Go store's answer does not encode as JSON: "+err.Error())
	}
}

//export goStoreRelease
func goStoreRelease(handle C.uintptr_t) {
	cgo.Handle(handle).Delete()
}
