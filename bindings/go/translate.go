package toolnexus

/*
#include <stdlib.h>
#include "toolnexus.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"unsafe"
)

// Translate sends one OpenAI-shaped request to the provider the client
// describes (CONTRACT §6) and returns the OpenAI-shaped result JSON
// ({text, toolCalls, finishReason, usage, model, raw}). client and request are
// JSON text or values to marshal. tk, when not nil, contributes its tools as
// declarations; none is executed. Cancelling ctx aborts the call in flight
// and returns an *Error with code "cancelled".
func Translate(ctx context.Context, client, request any, tk *Toolkit) (json.RawMessage, error) {
	return translateCall(ctx, "translate", client, request, tk,
		func(c, r *C.char, p *C.tn_toolkit, token *C.tn_cancel, out **C.char) C.tn_status {
			return C.tn_translate(c, r, p, token, out)
		})
}

// CountTokens asks the provider the client describes how many input tokens
// Translate's request would be, at its style's counting endpoint (CONTRACT
// §6A; docs/providers.md, "Token counting"), and returns {inputTokens, style,
// model} (and upstream for a client with upstreams). client, request and tk
// are as Translate's; errors are Translate's (*Error with code
// "provider_error", "timeout", "invalid_config", ...), and cancelling ctx
// aborts the call in flight with code "cancelled".
func CountTokens(ctx context.Context, client, request any, tk *Toolkit) (json.RawMessage, error) {
	return translateCall(ctx, "count_tokens", client, request, tk,
		func(c, r *C.char, p *C.tn_toolkit, token *C.tn_cancel, out **C.char) C.tn_status {
			return C.tn_count_tokens(c, r, p, token, out)
		})
}

// translateCall is Translate and CountTokens: the JSON in, ctx as a cancel
// token, the toolkit held for the call, the answer or a typed error out.
func translateCall(ctx context.Context, what string, client, request any, tk *Toolkit,
	call func(c, r *C.char, p *C.tn_toolkit, token *C.tn_cancel, out **C.char) C.tn_status) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Code: "cancelled", Status: StatusCancelled, Message: what + " was not started: " + err.Error()}
	}
	clientText, err := jsonText(client)
	if err != nil {
		return nil, fmt.Errorf("toolnexus: client: %w", err)
	}
	requestText, err := jsonText(request)
	if err != nil {
		return nil, fmt.Errorf("toolnexus: request: %w", err)
	}
	cclient, err := cString("client", clientText)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cclient))
	crequest, err := cString("request", requestText)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(crequest))

	run := func(p *C.tn_toolkit) (json.RawMessage, error) {
		var out json.RawMessage
		err := withCancelToken(ctx, func(token *C.tn_cancel) error {
			var cout *C.char
			status := call(cclient, crequest, p, token, &cout)
			body := takeString(cout)
			if status != C.TN_OK {
				return statusError(status, body)
			}
			out = body
			return nil
		})
		return out, err
	}

	if tk == nil {
		out, err := run(nil)
		runtime.KeepAlive(tk)
		return out, err
	}
	var out json.RawMessage
	err = tk.with(func(p *C.tn_toolkit) error {
		var err error
		out, err = run(p)
		return err
	})
	return out, err
}
