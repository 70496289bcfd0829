package toolnexus

/*
#include <stdint.h>
#include <stdlib.h>
#include "toolnexus.h"

tn_status tngo_agents_new(const char *config_json, const tn_toolkit *toolkit, uintptr_t handle,
                          tn_agents **out_agents, char **out_error);
tn_status tngo_agents_set_callback(const tn_agents *agents, const char *slot, uintptr_t handle, char **out_error);
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"
)

// AgentsOptions builds a sub-agent runtime (SPEC §7D).
type AgentsOptions struct {
	// Config is the runtime config (a JSON string or []byte, or a value to
	// marshal): {agents: {name: {does, soul?, model?, tools?, team?,
	// budget?, …}}, client?, clock?: "manual"|"system", inboxCap?,
	// maxConcurrentTurns?, shutdownMs?, store?} (store: a store selector).
	Config any
	// Toolkit holds the tools agents name in "tools" (nil: none may be
	// named). The runtime keeps its own reference: the toolkit may be
	// closed first.
	Toolkit *Toolkit
	// Generate, when set, answers every LLM call of every agent in process:
	// event {model, messages, tools, turn}, answer a provider reply in the
	// client's style (JSON text, []byte or a value to marshal), as a Client
	// built on an in-process model. ctx is cancelled when the runtime is
	// closed. An error or a panic fails that call (the turn ends with an
	// error result). Without Generate, Config's "client" is the HTTP
	// client config and is required.
	Generate func(ctx context.Context, event json.RawMessage) (any, error)
}

// TaskResult is what a wait (or a resume) answers: the handle's result.
// Status is "done", "incomplete", "pending", "error", "timeout",
// "interrupted" or "closed".
type TaskResult struct {
	Text        string          `json:"text"`
	IsError     bool            `json:"isError"`
	Status      string          `json:"status"`
	Pending     *Request        `json:"pending,omitempty"`
	Turns       int             `json:"turns"`
	TotalTokens int             `json:"totalTokens"`
	OwnTokens   int             `json:"ownTokens"`
	Limit       string          `json:"limit,omitempty"`
	Raw         json.RawMessage `json:"-"`
}

// HandleView is one handle as List and Inspect show it.
type HandleView struct {
	ID          string `json:"id"`
	State       string `json:"state"`
	Tokens      int    `json:"tokens"`
	OwnTokens   int    `json:"ownTokens"`
	Turns       int    `json:"turns"`
	Inbox       int    `json:"inbox"`
	PoolTokens  *int   `json:"poolTokens"`
	PendingKind string `json:"pendingKind,omitempty"`
}

// InboxItem is a message posted to a handle's inbox.
type InboxItem struct {
	From    string `json:"from"`
	Channel string `json:"channel"`
	Text    string `json:"text"`
}

// Agents is a sub-agent runtime: a tree of handles under "root", driven by
// verbs. Safe for concurrent use; Close when done (a cleanup frees a
// forgotten runtime, but only eventually).
type Agents struct {
	state   *agentsState
	cleanup runtime.Cleanup
}

// agentsState is apart from Agents so that the GC cleanup can free the C
// runtime without resurrecting the Agents.
//
// The C runtime is a reference-counted handle: each tn_agents_call holds it
// while it runs, and tn_agents_free does not wait. What Go must still keep
// from happening is a call *starting* on a pointer whose last reference is
// gone; so calls are counted, and the free is made by Close when none is in
// flight, or else by the last call to return. Close itself never waits: it
// may be called from inside Generate.
type agentsState struct {
	mu       sync.Mutex
	ptr      *C.tn_agents
	inFlight int
	closing  bool
	// ctx is Generate's context and every call's too: cancelled by Close,
	// it ends the waits in flight.
	ctx    context.Context
	cancel context.CancelFunc
}

// agentsGenerate is what the generate callback's cgo.Handle points at.
type agentsGenerate struct {
	ctx context.Context
	f   func(ctx context.Context, event json.RawMessage) (any, error)
}

var errAgentsClosed = &Error{Code: "invalid_argument", Status: StatusInvalidArgument, Message: "agents runtime is closed"}

// NewAgents builds a runtime from opts.
func NewAgents(opts AgentsOptions) (*Agents, error) {
	text, err := jsonText(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("toolnexus: agents config: %w", err)
	}
	cconf, err := cString("agents config", text)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cconf))
	var tk *C.tn_toolkit
	if opts.Toolkit != nil && opts.Toolkit.state != nil {
		if tk = opts.Toolkit.state.acquire(); tk == nil {
			return nil, errClosed
		}
		defer opts.Toolkit.state.release()
	}
	ctx, cancel := context.WithCancel(context.Background())
	var h cgo.Handle
	if opts.Generate != nil {
		h = cgo.NewHandle(&agentsGenerate{ctx: ctx, f: opts.Generate})
		liveSlots.Lock()
		liveSlots.m[h] = struct{}{}
		liveSlots.Unlock()
	}
	var ptr *C.tn_agents
	var cerr *C.char
	// The library releases h (goAgentsRelease) once, also on failure.
	status := C.tngo_agents_new(cconf, tk, C.uintptr_t(h), &ptr, &cerr)
	body := takeString(cerr)
	if status != C.TN_OK {
		cancel()
		return nil, statusError(status, body)
	}
	st := &agentsState{ptr: ptr, ctx: ctx, cancel: cancel}
	a := &Agents{state: st}
	a.cleanup = runtime.AddCleanup(a, func(s *agentsState) { s.close() }, st)
	return a, nil
}

// Close closes every handle (running turns are cancelled, waits in flight
// end with "interrupted" or "closed"; a suspension parked in the runtime's
// store stays there, for a new runtime on the store to Resume) and frees the
// runtime once no call uses it. It does not wait, so Generate may call it;
// idempotent.
func (a *Agents) Close() error {
	if a == nil || a.state == nil {
		return nil
	}
	a.cleanup.Stop()
	a.state.close()
	return nil
}

func (s *agentsState) close() {
	s.mu.Lock()
	if s.closing || s.ptr == nil {
		s.mu.Unlock()
		return
	}
	s.closing = true
	// Close's own turn as a call in flight: the pointer stays valid for
	// the force-close below, whoever frees it.
	s.inFlight++
	ptr := s.ptr
	s.mu.Unlock()
	// What tn_agents_free does first, done now: the free itself may have to
	// wait for the last call in flight to return, but no handle runs on
	// meanwhile and no wait outlasts Close. Before Generate's ctx is
	// cancelled: a Generate that returns on the cancel would otherwise
	// answer its turn, which could then end "done" before the close.
	forceCloseAll(ptr)
	s.cancel()
	s.release()
}

// forceCloseAll closes every handle at once, leaves first, as tn_agents_free
// does; a durable suspension stays in the store, for a later runtime.
func forceCloseAll(ptr *C.tn_agents) {
	_, _ = rawCall(ptr, "shutdown", `{"reason":"runtime closed"}`, nil)
}

// rawCall is one tn_agents_call on a pointer the caller keeps valid.
func rawCall(ptr *C.tn_agents, verb, args string, token *C.tn_cancel) (json.RawMessage, error) {
	cverb, err := cBorrowed("verb", verb)
	if err != nil {
		return nil, err
	}
	cargs, err := cBorrowed("args", args)
	if err != nil {
		return nil, err
	}
	var cout *C.char
	status := C.tn_agents_call(ptr, cPtr(cverb), cPtr(cargs), token, &cout)
	body := takeString(cout)
	if status != C.TN_OK {
		return nil, statusError(status, body)
	}
	return body, nil
}

// takeIfIdle hands out the pointer to free when the runtime is closing and
// no call is in flight; s.mu is held.
func (s *agentsState) takeIfIdle() *C.tn_agents {
	if !s.closing || s.inFlight > 0 || s.ptr == nil {
		return nil
	}
	ptr := s.ptr
	s.ptr = nil
	return ptr
}

func (s *agentsState) acquire() *C.tn_agents {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.ptr == nil {
		return nil
	}
	s.inFlight++
	return s.ptr
}

func (s *agentsState) release() {
	s.mu.Lock()
	s.inFlight--
	ptr := s.takeIfIdle()
	s.mu.Unlock()
	if ptr != nil {
		C.tn_agents_free(ptr)
	}
}

// Call runs one verb with args (JSON text, []byte, a value to marshal, or
// nil for {}) and gives its JSON answer: spawn, post, wake, wait,
// interrupt, close, shutdown, resume, list, inspect, trace, transcript, advance (see
// tn_agents_call in toolnexus.h). Cancelling ctx (or its deadline) ends a
// wait with an "interrupted" result, as Close does. A verb the runtime
// refuses is an *Error with code "invalid_argument".
func (a *Agents) Call(ctx context.Context, verb string, args any) (json.RawMessage, error) {
	if a == nil || a.state == nil {
		return nil, errAgentsClosed
	}
	text := "{}"
	if args != nil {
		t, err := jsonText(args)
		if err != nil {
			return nil, fmt.Errorf("toolnexus: agents %s args: %w", verb, err)
		}
		text = t
	}
	if strings.IndexByte(verb, 0) >= 0 || strings.IndexByte(text, 0) >= 0 {
		return nil, &Error{Code: "invalid_argument", Status: StatusInvalidArgument,
			Message: "agents " + verb + ": the verb or the args contain a NUL byte"}
	}
	s := a.state
	ptr := s.acquire()
	if ptr == nil {
		return nil, errAgentsClosed
	}
	defer s.release()
	// The call's token: ctx's cancellation or the runtime's Close.
	callCtx, stop := context.WithCancel(ctx)
	defer stop()
	unlink := context.AfterFunc(s.ctx, stop)
	defer unlink()
	var out json.RawMessage
	err := withCancelToken(callCtx, func(token *C.tn_cancel) error {
		var err error
		out, err = rawCall(ptr, verb, text, token)
		return err
	})
	return out, err
}

// Spawn starts a handle of the agent definition named agent under parent
// ("" is "root") and gives its id ("root/explore.1").
func (a *Agents) Spawn(ctx context.Context, agent, parent string) (string, error) {
	args := map[string]any{"agent": agent}
	if parent != "" {
		args["parent"] = parent
	}
	out, err := a.Call(ctx, "spawn", args)
	if err != nil {
		return "", err
	}
	var r struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return "", err
	}
	return r.ID, nil
}

// Wake starts a turn of handle id with prompt ("" for none: the turn reads
// its inbox); a no-op on a busy handle.
func (a *Agents) Wake(ctx context.Context, id, prompt string) error {
	args := map[string]any{"id": id}
	if prompt != "" {
		args["prompt"] = prompt
	}
	_, err := a.Call(ctx, "wake", args)
	return err
}

// Post puts item in handle id's inbox.
func (a *Agents) Post(ctx context.Context, id string, item InboxItem) error {
	_, err := a.Call(ctx, "post", map[string]any{"id": id, "item": item})
	return err
}

// Wait blocks until handle id settles and gives its result. A timeout > 0
// bounds the wait on the runtime's clock (Status "timeout"); ctx's
// cancellation, and Close, end it with Status "interrupted" (or "closed").
func (a *Agents) Wait(ctx context.Context, id string, timeoutMs int64) (*TaskResult, error) {
	args := map[string]any{"id": id}
	if timeoutMs > 0 {
		args["timeoutMs"] = timeoutMs
	}
	return a.taskResult(a.Call(ctx, "wait", args))
}

// Resume answers the durably parked tree's pending Request (SPEC §10) and
// gives the resumed tree's result.
func (a *Agents) Resume(ctx context.Context, answer Answer) (*TaskResult, error) {
	return a.taskResult(a.Call(ctx, "resume", map[string]any{"answer": answer}))
}

func (a *Agents) taskResult(out json.RawMessage, err error) (*TaskResult, error) {
	if err != nil {
		return nil, err
	}
	var r TaskResult
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, err
	}
	r.Raw = out
	return &r, nil
}

// Interrupt cancels handle id's running turn (or drops its pending
// request); the handle stays open.
func (a *Agents) Interrupt(ctx context.Context, id string) error {
	_, err := a.Call(ctx, "interrupt", map[string]any{"id": id})
	return err
}

// CloseHandle closes handle id and its subtree: gracefully (a running turn
// may finish within the runtime's shutdownMs), or at once with force.
// reason ("" for the default) is written to the trace.
func (a *Agents) CloseHandle(ctx context.Context, id string, force bool, reason string) error {
	args := map[string]any{"id": id, "force": force}
	if reason != "" {
		args["reason"] = reason
	}
	_, err := a.Call(ctx, "close", args)
	return err
}

// List gives every handle, root first.
func (a *Agents) List(ctx context.Context) ([]HandleView, error) {
	out, err := a.Call(ctx, "list", nil)
	if err != nil {
		return nil, err
	}
	var v []HandleView
	return v, json.Unmarshal(out, &v)
}

// Inspect gives handle id's view.
func (a *Agents) Inspect(ctx context.Context, id string) (*HandleView, error) {
	out, err := a.Call(ctx, "inspect", map[string]any{"id": id})
	if err != nil {
		return nil, err
	}
	var v HandleView
	return &v, json.Unmarshal(out, &v)
}

// Trace gives the transitions so far ("<id>: from→to (why)").
func (a *Agents) Trace(ctx context.Context) ([]string, error) {
	out, err := a.Call(ctx, "trace", nil)
	if err != nil {
		return nil, err
	}
	var v []string
	return v, json.Unmarshal(out, &v)
}

// Advance moves the manual clock (config "clock":"manual") ms forward.
func (a *Agents) Advance(ctx context.Context, ms int64) error {
	_, err := a.Call(ctx, "advance", map[string]any{"ms": ms})
	return err
}

// SetCallback sets (nil f: clears) one of the runtime's host callbacks by
// slot (tn_agents_set_callback in toolnexus.h): "onSpawn" (event {id}),
// "onClose" ({id, reason}) and "onBeat" ({text}) always; the hooks
// ("beforeLLM" … "onMetric"; "<hook>:<agent>" for one agent's own, which
// replaces the runtime's on its turns), "waitFor:<agent>", "guardrail:<agent>"
// (answer "" or "allow" to allow, any other string denies), "summarize"
// ({older} → the summary text) and "countTokens" ({messages} → a number)
// when the config's "callbacks" declares them; "verify:<agent>" (the
// RunResult → {ok, reason}) for an agent whose completion.verify is
// "callback". f's answer is JSON text, []byte or a value to marshal; ctx is
// cancelled when the runtime is closed. A callback called during a turn
// does not hold an Interrupt or a Close: the turn ends without its answer.
func (a *Agents) SetCallback(slot string, f func(ctx context.Context, event json.RawMessage) (any, error)) error {
	if a == nil || a.state == nil {
		return errAgentsClosed
	}
	cslot, err := cString("slot", slot)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cslot))
	s := a.state
	ptr := s.acquire()
	if ptr == nil {
		return errAgentsClosed
	}
	defer s.release()
	var h cgo.Handle
	if f != nil {
		h = cgo.NewHandle(&agentsGenerate{ctx: s.ctx, f: f})
		liveSlots.Lock()
		liveSlots.m[h] = struct{}{}
		liveSlots.Unlock()
	}
	var cerr *C.char
	// The library releases h (goAgentsRelease) once, also on failure.
	status := C.tngo_agents_set_callback(ptr, cslot, C.uintptr_t(h), &cerr)
	body := takeString(cerr)
	if status != C.TN_OK {
		return statusError(status, body)
	}
	return nil
}

// Run spawns agent under the root, wakes it with prompt and waits for its
// result; it gives the handle's id too.
func (a *Agents) Run(ctx context.Context, agent, prompt string) (string, *TaskResult, error) {
	id, err := a.Spawn(ctx, agent, "")
	if err != nil {
		return "", nil, err
	}
	if err := a.Wake(ctx, id, prompt); err != nil {
		return id, nil, err
	}
	r, err := a.Wait(ctx, id, 0)
	return id, r, err
}

//export goAgentsGenerate
func goAgentsGenerate(handle C.uintptr_t, event *C.char, reply *C.tn_reply) {
	g := lookupHandle[agentsGenerate](cgo.Handle(handle), true)
	if g == nil {
		msg := C.CString("the agents runtime is closed")
		C.tn_reply_set_error(reply, msg)
		C.free(unsafe.Pointer(msg))
		return
	}
	ev := json.RawMessage(cBytes(event))
	answer, err := func() (v any, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("generate panicked: %v", p)
			}
		}()
		return g.f(g.ctx, ev)
	}()
	var text string
	if err == nil {
		text, err = jsonText(answer)
	}
	if err != nil {
		msg := C.CString(err.Error())
		C.tn_reply_set_error(reply, msg)
		C.free(unsafe.Pointer(msg))
		return
	}
	b := append([]byte(text), 0)
	C.tn_reply_set_json(reply, (*C.char)(unsafe.Pointer(&b[0])))
}

//export goAgentsRelease
func goAgentsRelease(handle C.uintptr_t) {
	releaseSlot(cgo.Handle(handle))
}
