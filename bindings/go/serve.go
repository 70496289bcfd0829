package toolnexus

/*
#include <stdint.h>
#include <stdlib.h>
#include "toolnexus.h"

tn_status tngo_serve(const tn_toolkit *toolkit, const tn_client *client, const char *serve_json,
                     uintptr_t handle, int on_call, int on_task, tn_server **out_server, char **out_json);
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime/cgo"
	"sync"
)

// ServeOptions says how Serve exposes a toolkit as an MCP server (SPEC §7C)
// and, with A2A and Client, as an A2A agent beside it (SPEC §7B).
type ServeOptions struct {
	// Addr is where the streamable-HTTP server listens, "host:port"
	// ("127.0.0.1:0" picks a free port; URL says which).
	Addr string
	// Stdio serves JSON-RPC lines on the process's stdin and stdout instead
	// of HTTP (Addr must then be empty).
	Stdio bool
	// Name and Version are the advertised serverInfo (defaults "toolnexus",
	// "0.1.0").
	Name, Version string
	// Tools exposes exactly these tool names; nil exposes every tool. A name
	// the toolkit lacks is ignored.
	Tools []string
	// OnCall, if set, hears every tools/call, from many goroutines at once.
	// A panic in it is recovered and dropped.
	OnCall func(CallEvent)

	// A2A, if set, serves the toolkit as an A2A agent too, on the same
	// address: GET /.well-known/agent-card.json and JSON-RPC on any other
	// POST path (docs/a2a.md). It needs Client, which runs the tasks.
	A2A *A2AOptions
	// Client runs each A2A task (a stateless run, or Ask on the
	// conversation of the message's contextId). The server holds it until
	// it is stopped: the Client may be closed before the Server. Its hooks
	// run with a background context.
	Client *Client
	// OnTask, if set, hears each A2A task once, when it is stored
	// completed, failed or input-required; from many goroutines at once. A
	// panic in it is recovered and dropped.
	OnTask func(TaskEvent)
}

// A2AOptions is the a2a block of a served agent: its card fields, the wire
// its card announces, and where its tasks live.
type A2AOptions struct {
	// Name, Description and Version are the card's (defaults
	// "toolnexus-agent", "", "0.1.0").
	Name, Description, Version string
	// Provider, if set, is the card's provider.
	Provider *A2AProvider
	// Skills lists the skill source's skills the card shows; nil shows
	// every skill, an empty non-nil slice none.
	Skills []string
	// Store selects where tasks live: "" or "memory", "file:<dir>",
	// "sqlite:<path>", "postgres://…" or "host:<name>" (RegisterStore).
	Store string
	// Protocol is the wire the card announces: "" or "toolnexus"
	// (upstream's card), "0.3" or "1.0". The endpoint answers all three.
	Protocol string
}

// A2AProvider is the organization behind a served agent, on its card.
type A2AProvider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

// block is the a2a block of the serve config.
func (o *A2AOptions) block() map[string]any {
	b := map[string]any{}
	for k, v := range map[string]string{"name": o.Name, "description": o.Description,
		"version": o.Version, "store": o.Store, "protocol": o.Protocol} {
		if v != "" {
			b[k] = v
		}
	}
	if o.Provider != nil {
		b["provider"] = o.Provider
	}
	if o.Skills != nil {
		b["skills"] = o.Skills
	}
	return b
}

// TaskEvent is what OnTask hears: the task's id, the task as GetTask shows
// it, its state ("completed", "failed" or "input-required") and, when the
// run gave one, its RunResult.
type TaskEvent struct {
	ID     string          `json:"id"`
	Task   json.RawMessage `json:"task"`
	State  string          `json:"state"`
	Result *RunResult      `json:"result,omitempty"`
}

// CallEvent is what OnCall hears after a tools/call.
type CallEvent struct {
	Name    string `json:"name"`
	Source  string `json:"source"`
	Ms      int64  `json:"ms"`
	IsError bool   `json:"isError"`
}

// Server is a running MCP server over a toolkit. Close stops it; closing
// the toolkit stops its servers first.
type Server struct {
	ptr  *C.tn_server
	url  string
	once sync.Once
	tk   *toolkitState
	stop chan struct{}
}

// URL is the server's endpoint, "http://127.0.0.1:PORT/mcp" ("" for stdio).
func (s *Server) URL() string { return s.url }

// Close stops the server: no new request is taken, calls in flight are
// cancelled, the port is closed. Idempotent.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	s.once.Do(func() {
		close(s.stop)
		s.tk.forgetServer(s)
		C.tn_serve_stop(s.ptr)
		s.ptr = nil
	})
	return nil
}

// Serve serves the toolkit as one MCP server: every tool it has, listed
// verbatim, each tools/call run by the toolkit. Cancelling ctx closes the
// server, as Close does.
func (tk *Toolkit) Serve(ctx context.Context, opts ServeOptions) (*Server, error) {
	cfg := map[string]any{}
	if opts.Stdio {
		cfg["transport"] = "stdio"
	} else {
		cfg["transport"] = "http"
		cfg["addr"] = opts.Addr
	}
	profile := map[string]any{}
	if opts.Name != "" {
		profile["name"] = opts.Name
	}
	if opts.Version != "" {
		profile["version"] = opts.Version
	}
	if opts.Tools != nil {
		profile["tools"] = opts.Tools
	}
	cfg["mcp"] = profile
	if opts.A2A != nil {
		cfg["a2a"] = opts.A2A.block()
	}
	text, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("toolnexus: serve options: %w", err)
	}
	bcfg, err := cBorrowed("serve options", string(text))
	if err != nil {
		return nil, err
	}
	var cclient *C.tn_client
	if opts.Client != nil {
		// The library takes its own hold on the client; ours only has to
		// last through the call.
		if cclient = opts.Client.acquire(); cclient == nil {
			return nil, &Error{Code: "invalid_argument", Status: StatusInvalidArgument, Message: "client is closed"}
		}
		defer opts.Client.release()
	}
	var srv *Server
	err = tk.with(func(p *C.tn_toolkit) error {
		var h cgo.Handle
		onCall, onTask := C.int(0), C.int(0)
		if opts.OnCall != nil || opts.OnTask != nil {
			h = newHookHandle(&serveHooks{onCall: opts.OnCall, onTask: opts.OnTask})
		}
		if opts.OnCall != nil {
			onCall = 1
		}
		if opts.OnTask != nil {
			onTask = 1
		}
		var ptr *C.tn_server
		var cout *C.char
		status := C.tngo_serve(p, cclient, cPtr(bcfg), C.uintptr_t(h), onCall, onTask, &ptr, &cout)
		body := takeString(cout)
		if status != C.TN_OK {
			// The library released the hooks already (user_data_free runs on
			// failure too).
			return statusError(status, body)
		}
		var answer struct {
			URL *string `json:"url"`
		}
		_ = json.Unmarshal(body, &answer)
		srv = &Server{ptr: ptr, tk: tk.state, stop: make(chan struct{})}
		if answer.URL != nil {
			srv.url = *answer.URL
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	tk.state.rememberServer(srv)
	if ctx != nil && ctx.Done() != nil {
		go func() {
			select {
			case <-ctx.Done():
				srv.Close()
			case <-srv.stop:
			}
		}()
	}
	return srv, nil
}

// The servers of each toolkit, stopped before the toolkit is freed.
var toolkitServers = struct {
	sync.Mutex
	m map[*toolkitState]map[*Server]struct{}
}{m: map[*toolkitState]map[*Server]struct{}{}}

func (s *toolkitState) rememberServer(srv *Server) {
	toolkitServers.Lock()
	defer toolkitServers.Unlock()
	set := toolkitServers.m[s]
	if set == nil {
		set = map[*Server]struct{}{}
		toolkitServers.m[s] = set
	}
	set[srv] = struct{}{}
}

func (s *toolkitState) forgetServer(srv *Server) {
	toolkitServers.Lock()
	defer toolkitServers.Unlock()
	if set := toolkitServers.m[s]; set != nil {
		delete(set, srv)
		if len(set) == 0 {
			delete(toolkitServers.m, s)
		}
	}
}

// closeServers stops every server still serving the toolkit.
func (s *toolkitState) closeServers() {
	toolkitServers.Lock()
	set := toolkitServers.m[s]
	delete(toolkitServers.m, s)
	toolkitServers.Unlock()
	for srv := range set {
		srv.Close()
	}
}

var liveHooks = struct {
	sync.Mutex
	m map[cgo.Handle]struct{}
}{m: map[cgo.Handle]struct{}{}}

// serveHooks is what a server's hook handle points at.
type serveHooks struct {
	onCall func(CallEvent)
	onTask func(TaskEvent)
}

func newHookHandle(hooks *serveHooks) cgo.Handle {
	h := cgo.NewHandle(hooks)
	liveHooks.Lock()
	liveHooks.m[h] = struct{}{}
	liveHooks.Unlock()
	return h
}

func liveServeHooks(handle C.uintptr_t) *serveHooks {
	h := cgo.Handle(handle)
	liveHooks.Lock()
	_, ok := liveHooks.m[h]
	liveHooks.Unlock()
	if !ok {
		return nil
	}
	hooks, _ := h.Value().(*serveHooks)
	return hooks
}

//export goServeOnCall
func goServeOnCall(handle C.uintptr_t, event *C.char) {
	hooks := liveServeHooks(handle)
	if hooks == nil || hooks.onCall == nil || event == nil {
		return
	}
	var ev CallEvent
	if json.Unmarshal([]byte(C.GoString(event)), &ev) != nil {
		return
	}
	defer func() { _ = recover() }()
	hooks.onCall(ev)
}

//export goServeOnTask
func goServeOnTask(handle C.uintptr_t, event *C.char) {
	hooks := liveServeHooks(handle)
	if hooks == nil || hooks.onTask == nil || event == nil {
		return
	}
	var ev TaskEvent
	raw := []byte(C.GoString(event))
	if json.Unmarshal(raw, &ev) != nil {
		return
	}
	if ev.Result != nil {
		var r struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(raw, &r) == nil {
			if res, err := decodeRunResult(r.Result); err == nil {
				ev.Result = res
			}
		}
	}
	defer func() { _ = recover() }()
	hooks.onTask(ev)
}

//export goServeRelease
func goServeRelease(handle C.uintptr_t) {
	h := cgo.Handle(handle)
	liveHooks.Lock()
	_, ok := liveHooks.m[h]
	delete(liveHooks.m, h)
	liveHooks.Unlock()
	if ok {
		h.Delete()
	}
}

// SetIOThreads sets how many worker threads the library's I/O runtime (MCP
// sessions, HTTP, served toolkits) starts with: 1 to 64, 1 when never set.
// One suits a program that serves a toolkit or proxies MCP servers on a
// small machine (each message then wakes one thread, not two). The runtime
// starts with the first call that needs it (a build with MCP servers, an
// HTTP tool, Translate, a client run, Serve), so call SetIOThreads first;
// once it runs this returns an *Error (code invalid_argument) naming the
// count running, and changes nothing.
func SetIOThreads(n int) error {
	if n < 0 || uint64(n) > math.MaxUint32 {
		n = 0 // refused by the library, with the range in its message
	}
	var errOut *C.char
	status := C.tn_set_io_threads(C.uint32_t(n), &errOut)
	if status != 0 {
		return statusError(status, takeString(errOut))
	}
	return nil
}
