package toolnexus

/*
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toolnexus.h"

tn_status tngo_set_callback(const tn_client *client, const char *slot, uintptr_t handle, char **out_error);
tn_status tngo_run(const tn_client *client, const tn_toolkit *toolkit, const char *request_json,
                   const tn_cancel *cancel, uintptr_t run, char **out_json);
tn_status tngo_run_resume(const tn_client *client, const tn_toolkit *toolkit, const char *resume_json,
                          const tn_cancel *cancel, uintptr_t run, char **out_json);
tn_status tngo_ask(const tn_client *client, const tn_toolkit *toolkit, const char *ask_json, bool stream,
                   const tn_cancel *cancel, uintptr_t run, char **out_json);
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// Request is a suspension's question (SPEC §10), keys as on the wire. Raw is
// the Request exactly as the library sent it.
type Request struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Prompt    string          `json:"prompt"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	ExpiresAt string          `json:"expiresAt,omitempty"`
	Raw       json.RawMessage `json:"-"`
}

// Answer is the host's resolution of a Request (SPEC §10). ID must echo the
// Request's (WaitFor may leave it empty: the Request's is used). Reason
// ("declined", "cancelled", "expired") only when OK is false.
type Answer struct {
	ID     string          `json:"id,omitempty"`
	OK     bool            `json:"ok"`
	Data   json.RawMessage `json:"data,omitempty"`
	Reason string          `json:"reason,omitempty"`
}

// LLMEvent is what BeforeLLM sees before each provider call: the transcript
// and the declarations in the provider's shape, the model, the turn (from 0).
type LLMEvent struct {
	Messages json.RawMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools"`
	Model    string          `json:"model"`
	Turn     int             `json:"turn"`
	Raw      json.RawMessage `json:"-"`
}

// LLMOverride replaces the transcript and/or the tools for the rest of the
// run; a nil field changes nothing, `[]` for Tools sends none.
type LLMOverride struct {
	Messages json.RawMessage `json:"messages,omitempty"`
	Tools    json.RawMessage `json:"tools,omitempty"`
}

// LLMResponseEvent is what AfterLLM sees: the provider's raw answer.
type LLMResponseEvent struct {
	Response json.RawMessage `json:"response"`
	Model    string          `json:"model"`
	Turn     int             `json:"turn"`
	Raw      json.RawMessage `json:"-"`
}

// ToolEvent is what BeforeTool and AfterTool see; Result is set for AfterTool.
type ToolEvent struct {
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	ID     string          `json:"id"`
	Turn   int             `json:"turn"`
	Result *ToolResult     `json:"result,omitempty"`
	Raw    json.RawMessage `json:"-"`
}

// ToolOverride is BeforeTool's answer: Result short-circuits the call (the
// tool never runs; a result whose Metadata["pending"] is a Request is a
// suspension), Args rewrites the call.
type ToolOverride struct {
	Result *ToolResult     `json:"result,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
}

// Hooks are the SPEC §8 lifecycle hooks. Each may be nil; a nil answer
// observes. An error ends the run with it (wrapped in an *Error with code
// "callback_error"). The hooks of one turn's tool calls run concurrently.
type Hooks struct {
	BeforeLLM  func(ctx context.Context, ev LLMEvent) (*LLMOverride, error)
	AfterLLM   func(ctx context.Context, ev LLMResponseEvent) error
	BeforeTool func(ctx context.Context, ev ToolEvent) (*ToolOverride, error)
	AfterTool  func(ctx context.Context, ev ToolEvent) (*ToolResult, error)
}

// ErrorInfo describes one failed provider attempt, for OnError.
type ErrorInfo struct {
	Status    int    `json:"status,omitempty"`
	Error     string `json:"error"`
	Attempt   int    `json:"attempt"`
	Retryable bool   `json:"retryable"`
}

// ClientOptions builds a Client. Config is the client JSON (a string, []byte
// or a value to marshal): baseUrl, style, model, apiKey, headers,
// systemPrompt, retries, retryBaseMs, timeoutMs (the whole run),
// requestParams, maxTurns.
type ClientOptions struct {
	Config any
	Hooks  Hooks
	// WaitFor resolves a suspension inline (SPEC §10). Nil: a suspension
	// halts the run with Status "pending".
	WaitFor func(ctx context.Context, req Request) (Answer, error)
	// OnError classifies a failed provider attempt: "retry" or "fail" ("" is
	// the default policy); retries stay bounded by the client's retries.
	OnError func(ctx context.Context, info ErrorInfo) (string, error)
	// OnMetric gets each SPEC §8 metric event (llm, tool, run); it observes.
	OnMetric func(ev MetricEvent)
	// HTTPClient makes the runs' LLM calls in the library's stead (the
	// httpClient slot, SPEC §8 Gap 2; docs/client-loop.md, "Request
	// transforms"). Nil: the library's own HTTP client.
	HTTPClient HTTPClientFunc
	// Store keeps Ask's conversations; nil: in memory, for the client's life.
	Store ConversationStore
}

// ToolCall is one executed call of a run.
type ToolCall struct {
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Output   string          `json:"output"`
	IsError  bool            `json:"isError"`
	Metadata map[string]any  `json:"metadata"`
}

// Usage is token usage summed over a run.
type Usage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
}

// RunResult is the outcome of a run (CONTRACT §8). Messages is the whole
// transcript in the provider's shape, ready to pass back WithHistory. Raw is
// the RunResult JSON as the library gave it.
type RunResult struct {
	Text          string          `json:"text"`
	Messages      json.RawMessage `json:"messages"`
	ToolCalls     []ToolCall      `json:"toolCalls"`
	ToolCallCount int             `json:"toolCallCount"`
	Turns         int             `json:"turns"`
	Usage         Usage           `json:"usage"`
	Model         string          `json:"model"`
	Status        string          `json:"status"`
	Limit         string          `json:"limit,omitempty"`
	Pending       *Request        `json:"pending,omitempty"`
	// Upstream is the upstream of a client with upstreams that answered the
	// last turn (ordered failover, docs/providers.md); nil without.
	Upstream *Upstream       `json:"upstream,omitempty"`
	Raw      json.RawMessage `json:"-"`
}

// Upstream names one entry of a client's upstreams: its place in the list
// and who it is.
type Upstream struct {
	Index   int    `json:"index"`
	BaseURL string `json:"baseUrl"`
	Model   string `json:"model"`
	Style   string `json:"style"`
}

// Client runs the SPEC §8 loop. Safe for concurrent Runs; Close when done
// (a cleanup frees a forgotten client, but only eventually).
type Client struct {
	state   *clientState
	cleanup runtime.Cleanup
}

// clientState is apart from Client so that the GC cleanup can free the C
// client without resurrecting the Client.
type clientState struct {
	mu       sync.Mutex
	idle     sync.Cond
	ptr      *C.tn_client
	inFlight int
	closing  bool
}

// slotFunc is what a registered slot's cgo.Handle points at.
type slotFunc struct {
	name string
	call func(ctx context.Context, event []byte) (any, error)
}

// runState is what a run's cgo.Handle points at: its context, and the first
// Go error or panic of its callbacks.
type runState struct {
	ctx   context.Context
	mu    sync.Mutex
	err   error
	panic any
}

func (r *runState) fail(err error, p any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
	if p != nil && r.panic == nil {
		r.panic = p
	}
}

// eventSlot adapts a typed Go callback to a slot: the event JSON decoded
// into E, with its Raw field (named by raw) holding a copy of the JSON.
func eventSlot[E any](name string, raw func(*E) *json.RawMessage, f func(context.Context, E) (any, error)) slotFunc {
	return slotFunc{name, func(ctx context.Context, ev []byte) (any, error) {
		var e E
		if err := json.Unmarshal(ev, &e); err != nil {
			return nil, err
		}
		*raw(&e) = append(json.RawMessage(nil), ev...)
		return f(ctx, e)
	}}
}

// answer turns a hook's (*R, error) into a slot's answer. A nil *R is "no
// answer": it must become a nil interface, not a typed nil inside one (which
// would be encoded as JSON null and taken as a reply).
func answer[R any](r *R, err error) (any, error) {
	if r == nil || err != nil {
		return nil, err
	}
	return r, nil
}

func (o *ClientOptions) slots() []slotFunc {
	var s []slotFunc
	if f := o.WaitFor; f != nil {
		s = append(s, eventSlot("waitFor", func(r *Request) *json.RawMessage { return &r.Raw },
			func(ctx context.Context, req Request) (any, error) {
				a, err := f(ctx, req)
				if err != nil {
					return nil, err
				}
				if a.ID == "" {
					a.ID = req.ID
				}
				return a, nil
			}))
	}
	llmRaw := func(e *LLMEvent) *json.RawMessage { return &e.Raw }
	toolRaw := func(e *ToolEvent) *json.RawMessage { return &e.Raw }
	if f := o.Hooks.BeforeLLM; f != nil {
		s = append(s, eventSlot("beforeLLM", llmRaw, func(ctx context.Context, e LLMEvent) (any, error) {
			return answer(f(ctx, e))
		}))
	}
	if f := o.Hooks.AfterLLM; f != nil {
		s = append(s, eventSlot("afterLLM", func(e *LLMResponseEvent) *json.RawMessage { return &e.Raw },
			func(ctx context.Context, e LLMResponseEvent) (any, error) { return nil, f(ctx, e) }))
	}
	if f := o.Hooks.BeforeTool; f != nil {
		s = append(s, eventSlot("beforeTool", toolRaw, func(ctx context.Context, e ToolEvent) (any, error) {
			return answer(f(ctx, e))
		}))
	}
	if f := o.Hooks.AfterTool; f != nil {
		s = append(s, eventSlot("afterTool", toolRaw, func(ctx context.Context, e ToolEvent) (any, error) {
			r, err := f(ctx, e)
			if r == nil || err != nil {
				return nil, err
			}
			return map[string]any{"result": r}, nil
		}))
	}
	if f := o.OnError; f != nil {
		s = append(s, slotFunc{"onError", func(ctx context.Context, ev []byte) (any, error) {
			var info ErrorInfo
			if err := json.Unmarshal(ev, &info); err != nil {
				return nil, err
			}
			v, err := f(ctx, info)
			if v == "" || err != nil {
				return nil, err
			}
			return v, nil
		}})
	}
	if f := o.HTTPClient; f != nil {
		s = append(s, httpClientSlot(f))
	}
	return append(s, o.extSlots()...)
}

var liveSlots = struct {
	sync.RWMutex
	m map[cgo.Handle]struct{}
}{m: map[cgo.Handle]struct{}{}}

func releaseSlot(h cgo.Handle) {
	liveSlots.Lock()
	_, ok := liveSlots.m[h]
	delete(liveSlots.m, h)
	liveSlots.Unlock()
	if ok {
		h.Delete()
	}
}

func lookupHandle[T any](h cgo.Handle, live bool) *T {
	if h == 0 {
		return nil
	}
	if live {
		liveSlots.RLock()
		_, ok := liveSlots.m[h]
		liveSlots.RUnlock()
		if !ok {
			return nil
		}
	}
	v, _ := h.Value().(*T)
	return v
}

// NewClient builds a client from opts.Config and registers the callbacks
// opts gives.
func NewClient(opts ClientOptions) (*Client, error) {
	text, err := jsonText(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("toolnexus: client config: %w", err)
	}
	cconf, err := cString("client config", text)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cconf))
	var ptr *C.tn_client
	var cerr *C.char
	status := C.tn_client_new(cconf, &ptr, &cerr)
	body := takeString(cerr)
	if status != C.TN_OK {
		return nil, statusError(status, body)
	}
	return withSlots(wrapClient(ptr), opts.slots())
}

// withSlots registers each slot on the new client c; on a failure c is
// closed and the error returned.
func withSlots(c *Client, slots []slotFunc) (*Client, error) {
	ptr := c.state.ptr
	for _, s := range slots {
		s := s
		h := cgo.NewHandle(&s)
		liveSlots.Lock()
		liveSlots.m[h] = struct{}{}
		liveSlots.Unlock()
		cname := C.CString(s.name)
		var serr *C.char
		st := C.tngo_set_callback(ptr, cname, C.uintptr_t(h), &serr)
		C.free(unsafe.Pointer(cname))
		b := takeString(serr)
		if st != C.TN_OK {
			releaseSlot(h) // idempotent: the library may have released it already
			c.Close()
			return nil, statusError(st, b)
		}
	}
	return c, nil
}

// NewACPClient builds a client whose model is an Agent Client Protocol
// agent, a child process spoken to in JSON-RPC over its stdin and stdout
// (tn_client_new_acp; docs/client-loop.md, "ACP agents as models"). cfg is
// JSON text or a value to marshal: {command, args?, cwd?, env?,
// protocolVersion?, permissionTimeoutMs?, mode?, model?, systemPrompt?,
// maxTurns?} (docs/config.md). The agent is started and its session opened
// here; an unknown key or a value of the wrong type is an *Error with code
// "invalid_config", an agent that cannot start or fails the handshake
// "provider_error" ("timeout" when a handshake call takes too long). Each
// turn of Run is one prompt on that session; Stream is refused. Close ends
// the agent.
//
// options, at most one, registers callbacks as NewClient does: the Hooks
// (BeforeLLM sees the transcript the agent is prompted with, and may
// replace it; AfterLLM the agent's answer), WaitFor, OnError (it hears of
// a failed turn, which is never sent twice), OnMetric and Store. Its Config
// must be nil (cfg is the config) and its HTTPClient too (an agent is no
// HTTP endpoint).
func NewACPClient(cfg any, options ...ClientOptions) (*Client, error) {
	var opts ClientOptions
	switch {
	case len(options) > 1:
		return nil, fmt.Errorf("toolnexus: NewACPClient takes at most one ClientOptions, got %d", len(options))
	case len(options) == 1:
		opts = options[0]
		if opts.Config != nil {
			return nil, errors.New("toolnexus: NewACPClient: ClientOptions.Config must be nil (the ACP config is cfg)")
		}
		if opts.HTTPClient != nil {
			return nil, errors.New("toolnexus: NewACPClient: ClientOptions.HTTPClient does not apply (an ACP agent is a child process, not an HTTP endpoint)")
		}
	}
	text, err := jsonText(cfg)
	if err != nil {
		return nil, fmt.Errorf("toolnexus: acp config: %w", err)
	}
	cconf, err := cString("acp config", text)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cconf))
	var ptr *C.tn_client
	var cerr *C.char
	status := C.tn_client_new_acp(cconf, &ptr, &cerr)
	body := takeString(cerr)
	if status != C.TN_OK {
		return nil, statusError(status, body)
	}
	return withSlots(wrapClient(ptr), opts.slots())
}

// wrapClient gives a native client its Go owner, freed by Close or, as a
// safety net, once unreachable.
func wrapClient(ptr *C.tn_client) *Client {
	st := &clientState{ptr: ptr}
	st.idle.L = &st.mu
	c := &Client{state: st}
	c.cleanup = runtime.AddCleanup(c, func(s *clientState) { s.free() }, st)
	return c
}

// Close frees the client, waiting for runs in flight; idempotent. A callback
// must not Close its own client.
func (c *Client) Close() error {
	if c == nil || c.state == nil {
		return nil
	}
	c.cleanup.Stop()
	c.state.free()
	return nil
}

// free refuses new runs, waits for those in flight, then frees the client.
func (s *clientState) free() {
	s.mu.Lock()
	s.closing = true
	for s.inFlight > 0 {
		s.idle.Wait()
	}
	ptr := s.ptr
	s.ptr = nil
	s.mu.Unlock()
	if ptr != nil {
		C.tn_client_free(ptr)
	}
}

func (c *Client) acquire() *C.tn_client {
	if c == nil || c.state == nil {
		return nil
	}
	s := c.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.ptr == nil {
		return nil
	}
	s.inFlight++
	return s.ptr
}

func (c *Client) release() {
	s := c.state
	s.mu.Lock()
	s.inFlight--
	if s.inFlight == 0 {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
}

// RunOption adds to a run's request.
type RunOption func(req map[string]any) error

// WithHistory continues a prior transcript (RunResult.Messages, or any
// provider-shaped message list as JSON text or a value to marshal).
func WithHistory(history any) RunOption {
	return func(req map[string]any) error {
		text, err := jsonText(history)
		if err != nil {
			return fmt.Errorf("toolnexus: history: %w", err)
		}
		req["history"] = json.RawMessage(text)
		return nil
	}
}

// Run runs the loop for prompt against tk (nil: no tools). Cancelling ctx
// cancels the run (an *Error with code "cancelled"); a provider failure after
// the retries is "provider_error", the client's timeoutMs "timeout".
func (c *Client) Run(ctx context.Context, tk *Toolkit, prompt string, options ...RunOption) (*RunResult, error) {
	req := map[string]any{"prompt": prompt}
	for _, o := range options {
		if err := o(req); err != nil {
			return nil, err
		}
	}
	return c.call(ctx, tk, req, callRun)
}

// Resume continues a run that halted with Status "pending" (SPEC §10 durable
// resume): history is its Messages, pending its Pending Request, answer the
// resolution (whose ID must echo pending.ID; empty means pending.ID).
func (c *Client) Resume(ctx context.Context, tk *Toolkit, history json.RawMessage, pending Request, answer Answer) (*RunResult, error) {
	if answer.ID == "" {
		answer.ID = pending.ID
	}
	p := any(pending)
	if len(pending.Raw) > 0 {
		p = pending.Raw
	}
	req := map[string]any{"history": history, "pending": p, "answer": answer}
	return c.call(ctx, tk, req, callResume)
}

// RunWithAnswer continues a run that halted with Status "pending" by
// filling, not re-running (the SPEC §10 addendum's runWithAnswer; resume
// mode "fill"): every open tool-result slot of the halted turn takes its
// result from answer — Data {"results": [{id, output, isError}]} by call id
// (RelayAnswer builds it), or the one-call shorthand {"output", "isError"}
// — and no tool runs again; a slot left without one gets the error result
// "no result supplied on resume for <name>". It is the resume of relay tools
// (RelayCallsOf reads their calls off the Request). Resume instead re-runs
// the halted call with the Answer.
func (c *Client) RunWithAnswer(ctx context.Context, tk *Toolkit, history json.RawMessage, pending Request, answer Answer) (*RunResult, error) {
	if answer.ID == "" {
		answer.ID = pending.ID
	}
	p := any(pending)
	if len(pending.Raw) > 0 {
		p = pending.Raw
	}
	req := map[string]any{"history": history, "pending": p, "answer": answer, "mode": "fill"}
	return c.call(ctx, tk, req, callResume)
}

// RelayKind is the Request kind of a relay tool's call ("tool_call").
const RelayKind = "tool_call"

// RelayCall is one call of a relay tool, as a "tool_call" Request carries
// it in Data {"calls": [...]}: the provider's call id, the tool name, the
// arguments as an object and as the model's raw JSON text.
type RelayCall struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Input     map[string]any `json:"input"`
	Arguments string         `json:"arguments"`
}

// RelayResult is the host's result for one relayed call, by call id.
type RelayResult struct {
	ID      string `json:"id"`
	Output  string `json:"output"`
	IsError bool   `json:"isError"`
}

// RelayCallsOf reads the relayed calls off a Request, in call order; nil
// when it is not a relay Request (Kind "tool_call").
func RelayCallsOf(req Request) []RelayCall {
	if req.Kind != RelayKind || len(req.Data) == 0 {
		return nil
	}
	var d struct {
		Calls []RelayCall `json:"calls"`
	}
	if json.Unmarshal(req.Data, &d) != nil {
		return nil
	}
	return d.Calls
}

// RelayAnswer is the Answer to a relay Request with one result per call,
// for RunWithAnswer.
func RelayAnswer(requestID string, results []RelayResult) Answer {
	if results == nil {
		results = []RelayResult{}
	}
	data, _ := json.Marshal(map[string]any{"results": results}) // plain structs always marshal
	return Answer{ID: requestID, OK: true, Data: data}
}

// callMode is which entry point a call goes through.
type callMode int

const (
	callRun callMode = iota
	callResume
	callAsk
	callStream
)

func (c *Client) call(ctx context.Context, tk *Toolkit, req map[string]any, mode callMode) (*RunResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Code: "cancelled", Status: StatusCancelled, Message: "the run was not started: " + err.Error()}
	}
	text, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("toolnexus: run request: %w", err)
	}
	creq, err := cBorrowed("run request", string(text))
	if err != nil {
		return nil, err
	}
	ptr := c.acquire()
	if ptr == nil {
		return nil, &Error{Code: "invalid_argument", Status: StatusInvalidArgument, Message: "client is closed"}
	}
	defer c.release()

	state := &runState{ctx: ctx}
	rh := cgo.NewHandle(state)
	defer rh.Delete()
	var out []byte
	var status C.tn_status
	body := func(tkp *C.tn_toolkit) error {
		return withCancelToken(ctx, func(token *C.tn_cancel) error {
			var cout *C.char
			switch mode {
			case callResume:
				status = C.tngo_run_resume(ptr, tkp, cPtr(creq), token, C.uintptr_t(rh), &cout)
			case callAsk, callStream:
				status = C.tngo_ask(ptr, tkp, cPtr(creq), C.bool(mode == callStream), token, C.uintptr_t(rh), &cout)
			default:
				status = C.tngo_run(ptr, tkp, cPtr(creq), token, C.uintptr_t(rh), &cout)
			}
			out = takeString(cout)
			return nil
		})
	}
	if tk == nil {
		_ = body(nil)
	} else if err := tk.with(body); err != nil {
		return nil, err
	}
	runtime.KeepAlive(c)
	state.mu.Lock()
	cause, panicked := state.err, state.panic
	state.mu.Unlock()
	if panicked != nil {
		panic(panicked)
	}
	if status != C.TN_OK {
		e := statusError(status, out)
		if cause != nil && status == C.TN_CALLBACK_ERROR {
			return nil, fmt.Errorf("%w: %w", e, cause)
		}
		return nil, e
	}
	return decodeRunResult(out)
}

// decodeRunResult reads a RunResult JSON, keeping it (and its pending
// Request) raw as well.
func decodeRunResult(out []byte) (*RunResult, error) {
	var res RunResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("toolnexus: RunResult: %w", err)
	}
	res.Raw = append(json.RawMessage(nil), out...)
	if res.Pending != nil {
		var raw struct {
			Pending json.RawMessage `json:"pending"`
		}
		if json.Unmarshal(out, &raw) == nil {
			res.Pending.Raw = raw.Pending
		}
	}
	return &res, nil
}

var errNoRun = errors.New("toolnexus: callback outside a run")

//export goClientCallback
func goClientCallback(handle, run C.uintptr_t, event *C.char, reply *C.tn_reply) {
	s := lookupHandle[slotFunc](cgo.Handle(handle), true)
	var state *runState
	if run == 0 {
		// A run the library started itself (a served A2A task, Serve): no
		// Go call waits on it, so it has a context of its own.
		state = &runState{ctx: context.Background()}
	} else {
		state = lookupHandle[runState](cgo.Handle(run), false)
	}
	if s == nil || state == nil {
		msg := C.CString(errNoRun.Error())
		C.tn_reply_set_error(reply, msg)
		C.free(unsafe.Pointer(msg))
		return
	}
	ev := C.GoBytes(unsafe.Pointer(event), C.int(C.strlen(event)))
	answer, err := func() (v any, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%s callback panicked: %v", s.name, p)
				state.fail(err, p)
			}
		}()
		return s.call(state.ctx, ev)
	}()
	if err != nil {
		state.fail(err, nil)
		replyError(reply, err.Error())
		return
	}
	if err := replyJSON(reply, answer); err != nil {
		state.fail(err, nil)
		replyError(reply, s.name+" answer does not encode as JSON: "+err.Error())
	}
}

//export goClientRelease
func goClientRelease(handle C.uintptr_t) {
	releaseSlot(cgo.Handle(handle))
}
