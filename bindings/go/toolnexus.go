// Package toolnexus is the Go binding of libtoolnexus: one toolkit of uniform
// tools gathered from agent skills, the built-in tools, MCP servers, declared
// HTTP endpoints and Go functions, rendered for OpenAI, Anthropic or Gemini and
// executed by name, plus a one-call OpenAI-to-provider translator.
//
// cgo finds the library through pkg-config (toolnexus.pc): install it first
// with scripts/install.sh from the repository root, under a PREFIX whose
// lib/pkgconfig is on PKG_CONFIG_PATH (docs/bindings.md, "Go"). By default
// the program links the shared library (link_shared.go); built with
// `-tags toolnexus_static` it links the archive libtoolnexus.a instead and
// needs no libtoolnexus at run time (link_static.go).
//
// Every value crossing the boundary is JSON. A *Toolkit is safe for concurrent
// use by many goroutines; Close waits for calls in flight and is idempotent.
package toolnexus

/*
#include <stdlib.h>
#include <string.h>
#include "toolnexus.h"
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// ABIVersion is the C ABI revision this package was written against.
const ABIVersion = 1

// HeaderVersion is the library version named by the header this package was
// compiled with.
const HeaderVersion = C.TOOLNEXUS_VERSION

func init() {
	if err := checkVersion(); err != nil {
		panic(err)
	}
}

// checkVersion refuses to run against a library whose ABI differs from the one
// this package was written for: a mismatch would corrupt memory, not fail.
func checkVersion() error {
	if hdr := uint32(C.TN_ABI_VERSION); hdr != ABIVersion {
		return fmt.Errorf("toolnexus: header ABI version %d, this Go package needs %d", hdr, ABIVersion)
	}
	if got := uint32(C.tn_abi_version()); got != ABIVersion {
		return fmt.Errorf("toolnexus: library ABI version %d, this Go package needs %d", got, ABIVersion)
	}
	lib := Version()
	if major(lib) != major(HeaderVersion) {
		return fmt.Errorf("toolnexus: library version %s does not match header version %s", lib, HeaderVersion)
	}
	return nil
}

func major(v string) string {
	if i := strings.IndexByte(v, '.'); i >= 0 {
		return v[:i]
	}
	return v
}

// Version returns the version of the linked library, e.g. "0.1.0".
func Version() string {
	return C.GoString(C.tn_version())
}

// Status codes of the C ABI (never renumbered).
const (
	StatusOK              = 0
	StatusNullArgument    = 1
	StatusInvalidUTF8     = 2
	StatusInvalidJSON     = 3
	StatusInvalidConfig   = 4
	StatusInvalidArgument = 5
	StatusUnknownFormat   = 6
	StatusProviderError   = 7
	StatusTimeout         = 8
	StatusCancelled       = 9
	StatusInternal        = 10
	StatusCallbackError   = 11
)

// Error is a failure reported by the library: the numeric status, its
// snake_case code ("invalid_config", "provider_error", ...) and a sentence.
type Error struct {
	Code    string
	Status  int
	Message string
	// Set when a provider answered with an error status (code
	// "provider_error"): the HTTP status, the provider's body as it may be
	// read (whole, account identifiers redacted, empty for 401/403) and the
	// raw Retry-After header (nil when the response sent none).
	HTTPStatus int
	Body       string
	RetryAfter *string
}

func (e *Error) Error() string {
	return fmt.Sprintf("toolnexus: %s: %s", e.Code, e.Message)
}

// Is lets errors.Is match on the code: errors.Is(err, &Error{Code: "timeout"}).
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Code == e.Code && (t.Status == 0 || t.Status == e.Status)
}

// ToolResult is what executing a tool gives: its text, whether it failed, and
// any metadata (for example metadata["pending"] for a suspended tool).
type ToolResult struct {
	Output   string         `json:"output"`
	IsError  bool           `json:"isError"`
	Metadata map[string]any `json:"metadata,omitempty"`
	// Parts is the non-text output (SPEC §1B): images, files and audio as
	// base64 bytes or URLs. Output stays what a text-only reader sees.
	Parts []Part `json:"parts,omitempty"`
}

// Part is one content part (SPEC §1B): Type "text" carries Text; "image",
// "file" and "audio" carry MimeType and exactly one of Data (standard
// base64) or URL — never a path.
type Part struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	MimeType string `json:"mimeType,omitempty"`
	Data     string `json:"data,omitempty"`
	URL      string `json:"url,omitempty"`
	Name     string `json:"name,omitempty"`
}

// takeString copies a library-owned string into Go memory and frees it.
func takeString(s *C.char) []byte {
	if s == nil {
		return nil
	}
	b := cBytes(s)
	C.tn_string_free(s)
	return b
}

// cBytes copies the NUL-terminated C string s into Go memory. Its length is
// found in Go (no cgo call for strlen): page by page, so no read goes past
// the page that holds the NUL.
func cBytes(s *C.char) []byte {
	p := unsafe.Pointer(s)
	n := 0
	for {
		room := pageSize - int(uintptr(unsafe.Add(p, n))%pageSize)
		if i := bytes.IndexByte(unsafe.Slice((*byte)(unsafe.Add(p, n)), room), 0); i >= 0 {
			n += i
			break
		}
		n += room
	}
	out := make([]byte, n)
	copy(out, unsafe.Slice((*byte)(p), n))
	return out
}

// pageSize is a lower bound of the memory page size on every platform Go
// supports: a string's bytes up to its NUL never end a page early.
const pageSize = 4096

// statusError turns a failed status and its error JSON into an *Error.
func statusError(status C.tn_status, body []byte) error {
	var env struct {
		Error struct {
			Code       string  `json:"code"`
			Message    string  `json:"message"`
			Status     int     `json:"status"`
			Body       string  `json:"body"`
			RetryAfter *string `json:"retryAfter"`
		} `json:"error"`
	}
	e := &Error{Status: int(status)}
	if err := json.Unmarshal(body, &env); err == nil && env.Error.Code != "" {
		e.Code, e.Message = env.Error.Code, env.Error.Message
		e.HTTPStatus, e.Body, e.RetryAfter = env.Error.Status, env.Error.Body, env.Error.RetryAfter
	} else {
		e.Code = codeOf(int(status))
		e.Message = string(body)
	}
	return e
}

func codeOf(status int) string {
	codes := []string{"ok", "null_argument", "invalid_utf8", "invalid_json", "invalid_config",
		"invalid_argument", "unknown_format", "provider_error", "timeout", "cancelled", "internal", "callback_error"}
	if status >= 0 && status < len(codes) {
		return codes[status]
	}
	return fmt.Sprintf("status_%d", status)
}

// jsonText turns a caller's value into JSON text: a string, []byte or
// json.RawMessage is taken as JSON text already; anything else is marshalled.
func jsonText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case []byte:
		if x == nil {
			return "{}", nil
		}
		return string(x), nil
	case json.RawMessage:
		if x == nil {
			return "{}", nil
		}
		return string(x), nil
	case nil:
		return "{}", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// cString copies s into C memory; a NUL inside s is reported rather than
// silently truncating the text.
func cString(field, s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, &Error{Code: "invalid_argument", Status: StatusInvalidArgument,
			Message: field + " contains a NUL byte"}
	}
	return C.CString(s), nil
}

// Toolkit is a built toolkit. Use it from any number of goroutines; call
// Close when done (a finalizer frees a forgotten toolkit, but only eventually).
// cBorrowed is s, NUL-terminated, in Go memory, for a C call that only
// borrows it for the call (cgo pins it meanwhile): no C malloc, no free.
func cBorrowed(field, s string) ([]byte, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, &Error{Code: "invalid_argument", Status: StatusInvalidArgument,
			Message: field + " contains a NUL byte"}
	}
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b, nil
}

func cPtr(b []byte) *C.char { return (*C.char)(unsafe.Pointer(&b[0])) }

type Toolkit struct {
	state   *toolkitState
	cleanup runtime.Cleanup
}

// toolkitState is kept apart from Toolkit so the GC cleanup can free the C
// toolkit without resurrecting the Toolkit itself. Calls in flight are
// counted rather than read-locked: a Go tool that calls back into its own
// toolkit while Close is waiting gets "toolkit is closed" instead of a
// deadlock.
type toolkitState struct {
	mu       sync.Mutex
	idle     sync.Cond
	ptr      *C.tn_toolkit
	closing  bool
	inFlight int
}

func newToolkitState(ptr *C.tn_toolkit) *toolkitState {
	s := &toolkitState{ptr: ptr}
	s.idle.L = &s.mu
	return s
}

// acquire registers a call in flight; nil when the toolkit is closed.
func (s *toolkitState) acquire() *C.tn_toolkit {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.ptr == nil {
		return nil
	}
	s.inFlight++
	return s.ptr
}

func (s *toolkitState) release() {
	s.mu.Lock()
	s.inFlight--
	if s.inFlight == 0 {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
}

// free refuses new calls, waits for those in flight, then frees the toolkit.
func (s *toolkitState) free() {
	s.closeServers()
	s.mu.Lock()
	s.closing = true
	for s.inFlight > 0 {
		s.idle.Wait()
	}
	ptr := s.ptr
	s.ptr = nil
	s.mu.Unlock()
	if ptr != nil {
		C.tn_toolkit_free(ptr)
	}
}

var errClosed = &Error{Code: "invalid_argument", Status: StatusInvalidArgument, Message: "toolkit is closed"}

// Build builds a toolkit from its config (CONTRACT §3): a JSON string or
// []byte, or any value encoding/json can marshal (a map, a struct). A ctx
// that is already done refuses the build with a cancelled error; one done
// during the build (cancelled, or past its deadline) ends it promptly with
// a cancelled error, even while it waits on an MCP server, and leaves no
// process it started running. opts add host extensions (WithSkillProvider).
func Build(ctx context.Context, config any, opts ...BuildOption) (*Toolkit, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Code: "cancelled", Status: StatusCancelled, Message: "build cancelled: " + err.Error()}
	}
	text, err := jsonText(config)
	if err != nil {
		return nil, fmt.Errorf("toolnexus: config: %w", err)
	}
	cconf, err := cString("config", text)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cconf))
	ptr, err := build(ctx, cconf, opts)
	if err != nil {
		return nil, err
	}
	st := newToolkitState(ptr)
	tk := &Toolkit{state: st}
	tk.cleanup = runtime.AddCleanup(tk, func(s *toolkitState) { s.free() }, st)
	return tk, nil
}

// Close frees the toolkit: it ends MCP child processes and releases the Go
// functions registered on it. It refuses new calls, waits for calls in
// flight, and calling it again does nothing. A Go tool must not Close its own
// toolkit (it would wait for itself).
func (tk *Toolkit) Close() error {
	if tk == nil || tk.state == nil {
		return nil
	}
	tk.cleanup.Stop()
	tk.state.free()
	return nil
}

// with runs f with the toolkit pointer, counted as a call in flight so a
// concurrent Close waits for it.
func (tk *Toolkit) with(f func(p *C.tn_toolkit) error) error {
	if tk == nil || tk.state == nil {
		return errClosed
	}
	p := tk.state.acquire()
	if p == nil {
		return errClosed
	}
	defer tk.state.release()
	err := f(p)
	runtime.KeepAlive(tk)
	return err
}

// Render renders the toolkit in a format: "openai", "anthropic", "gemini",
// "toolNames", "skillsPrompt", "tools", "status", "skills",
// "skillsInventory"; or a JSON object text such as
// {"format":"openai","tools":["write","bash"]} for an explicit subset.
func (tk *Toolkit) Render(format string) (json.RawMessage, error) {
	cfmt, err := cString("format", format)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cfmt))
	var out json.RawMessage
	err = tk.with(func(p *C.tn_toolkit) error {
		var cout *C.char
		status := C.tn_render(p, cfmt, &cout)
		body := takeString(cout)
		if status != C.TN_OK {
			return statusError(status, body)
		}
		out = body
		return nil
	})
	return out, err
}

// RenderTools renders exactly the named tools, in the given order.
func (tk *Toolkit) RenderTools(format string, names []string) (json.RawMessage, error) {
	if names == nil {
		names = []string{}
	}
	spec, err := json.Marshal(struct {
		Format string   `json:"format"`
		Tools  []string `json:"tools"`
	}{format, names})
	if err != nil {
		return nil, err
	}
	return tk.Render(string(spec))
}

// ExecuteJSON runs a tool and returns the ToolResult JSON as the library wrote
// it. args is JSON text (string, []byte) or a value to marshal; execCtx is the
// optional execution context JSON ({"timeoutMs":n,"answer":{...}}) or nil.
// Cancelling ctx (or its deadline passing) ends the call promptly with a
// cancelled ToolResult; what the tool started (a child process, a request)
// is ended too.
func (tk *Toolkit) ExecuteJSON(ctx context.Context, name string, args any, execCtx any) ([]byte, error) {
	argText, err := jsonText(args)
	if err != nil {
		return nil, fmt.Errorf("toolnexus: args of %s: %w", name, err)
	}
	// Name and args borrowed from one Go buffer: "name\x00args\x00".
	for _, f := range [2][2]string{{"name", name}, {"args", argText}} {
		if strings.IndexByte(f[1], 0) >= 0 {
			return nil, &Error{Code: "invalid_argument", Status: StatusInvalidArgument,
				Message: f[0] + " contains a NUL byte"}
		}
	}
	both := make([]byte, len(name)+1+len(argText)+1)
	copy(both, name)
	copy(both[len(name)+1:], argText)
	cname, cargs := cPtr(both), cPtr(both[len(name)+1:])
	var cctx *C.char
	if execCtx != nil {
		ctxText, err := jsonText(execCtx)
		if err != nil {
			return nil, fmt.Errorf("toolnexus: context of %s: %w", name, err)
		}
		bctx, err := cBorrowed("context", ctxText)
		if err != nil {
			return nil, err
		}
		cctx = cPtr(bctx)
	}
	if tk == nil || tk.state == nil {
		return nil, errClosed
	}
	p := tk.state.acquire()
	if p == nil {
		return nil, errClosed
	}
	defer tk.state.release()
	defer runtime.KeepAlive(tk)
	if ctx.Done() == nil {
		// No token, no closure: a Go tool runs on this thread.
		return executeOnce(p, cname, cargs, cctx, nil)
	}
	var out []byte
	err = withCancelToken(ctx, func(token *C.tn_cancel) error {
		var e error
		out, e = executeOnce(p, cname, cargs, cctx, token)
		return e
	})
	return out, err
}

// answerRoom is the size of the buffers an answer of Execute is copied into
// on the C side (tngo_execute), so that it is freed there, with no crossing
// of its own; a longer answer is taken as before.
const answerRoom = 2048

var answerBufs = sync.Pool{New: func() any { return new([answerRoom]byte) }}

// executeOnce is one tn_execute_with_cancel call and its answer.
func executeOnce(p *C.tn_toolkit, cname, cargs, cctx *C.char, token *C.tn_cancel) ([]byte, error) {
	buf := answerBufs.Get().(*[answerRoom]byte)
	a := C.tngo_execute(p, cname, cargs, cctx, token, (*C.char)(unsafe.Pointer(&buf[0])), answerRoom)
	var body []byte
	if a.big != nil {
		body = takeString(a.big)
	} else {
		body = make([]byte, int(a.len))
		copy(body, buf[:a.len])
	}
	answerBufs.Put(buf)
	if a.status != C.TN_OK {
		return nil, statusError(a.status, body)
	}
	return body, nil
}

// Execute runs a tool by name. A tool that fails is not an error here: it is
// a ToolResult with IsError set (an unknown name too). The error is for a call
// the library refused (closed toolkit, malformed args JSON, ...). Cancelling
// ctx ends the call (see ExecuteJSON).
func (tk *Toolkit) Execute(ctx context.Context, name string, args any) (*ToolResult, error) {
	return tk.ExecuteWithContext(ctx, name, args, nil)
}

// ExecuteWithContext is Execute with the optional execution context JSON of
// CONTRACT §5 ({"timeoutMs":n,"answer":{...}}).
func (tk *Toolkit) ExecuteWithContext(ctx context.Context, name string, args any, execCtx any) (*ToolResult, error) {
	body, err := tk.ExecuteJSON(ctx, name, args, execCtx)
	if err != nil {
		return nil, err
	}
	var r ToolResult
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, &Error{Code: "internal", Status: StatusInternal,
			Message: fmt.Sprintf("ToolResult of %s is not valid JSON: %v", name, err)}
	}
	return &r, nil
}

// Helper calls one of the pure translate helpers by name (argsObject,
// argsString, contentText, finishReasonFor, openaiMessagesToAnthropic, ...)
// with its positional arguments as a JSON array (or a []any to marshal).
func Helper(name string, args any) (json.RawMessage, error) {
	argText, err := jsonText(args)
	if err != nil {
		return nil, fmt.Errorf("toolnexus: args of helper %s: %w", name, err)
	}
	cname, err := cString("name", name)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cname))
	cargs, err := cString("args", argText)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cargs))
	var cout *C.char
	status := C.tn_helper(cname, cargs, &cout)
	body := takeString(cout)
	if status != C.TN_OK {
		return nil, statusError(status, body)
	}
	return body, nil
}
