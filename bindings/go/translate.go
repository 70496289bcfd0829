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
	if err := ctx.Err(); err != nil {
		return nil, &Error{Code: "cancelled", Status: StatusCancelled, Message: "translate was not started: " + err.Error()}
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

	call := func(p *C.tn_toolkit) (json.RawMessage, error) {
		var out json.RawMessage
		err := withCancelToken(ctx, func(token *C.tn_cancel) error {
			var cout *C.char
			status := C.tn_translate(cclient, crequest, p, token, &cout)
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
		out, err := call(nil)
		runtime.KeepAlive(tk)
		return out, err
	}
	var out json.RawMessage
	err = tk.with(func(p *C.tn_toolkit) error {
		var err error
		out, err = call(p)
		return err
	})
	return out, err
}
