package toolnexus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// HTTPRequest is one LLM call a run would make (the httpClient slot's
// event, SPEC §8 Gap 2): a POST of Body, the request's JSON text, to URL
// with Headers, the client's credentials among them. Stream is true for a
// streamed run (Stream, AskStream), whose answer is the provider's whole
// server-sent-events text. Raw is the event JSON as the library sent it.
type HTTPRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    []byte            `json:"-"`
	Stream  bool              `json:"stream"`
	Raw     json.RawMessage   `json:"-"`
}

// HTTPResponse is what the provider answered an HTTPRequest, read as the
// library reads a socket's answer: a 429 or 5xx Status is retried within
// the client's retries (a Retry-After header honoured), any other error
// status is the run's provider_error, and a 2xx Body is the provider's
// answer in the client's style (for a streamed request its whole SSE
// text, whose deltas become the run's text events). Status must be 100 to
// 599.
type HTTPResponse struct {
	Status  int
	Headers map[string]string
	Body    []byte
}

// HTTPClientFunc makes a run's LLM calls in the library's stead
// (ClientOptions.HTTPClient): it may send the request anywhere, by any
// means (HTTPRequest.Send is net/http), or answer it itself. It is called
// once per attempt, on a library thread, with the run's context. An error
// ends the run with it (an *Error with code "callback_error" naming
// httpClient). MCP servers and HTTP tools keep their own transport.
type HTTPClientFunc func(ctx context.Context, req HTTPRequest) (HTTPResponse, error)

// maxHTTPResponseBytes is the most of an answer Send reads: the library's
// own cap on a provider's answer (src/limits.rs RESPONSE_BODY_BYTES).
const maxHTTPResponseBytes = 64 << 20

// Send makes the request with c (nil: http.DefaultClient), bound to ctx,
// and gives the answer as an HTTPResponse: every status is an answer (the
// library decides what an error status means); a response header with
// several values is joined with ", ". An answer past 64 MiB, the library's
// cap, is an error.
func (r HTTPRequest) Send(ctx context.Context, c *http.Client) (HTTPResponse, error) {
	if c == nil {
		c = http.DefaultClient
	}
	method := r.Method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return HTTPResponse{}, err
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return HTTPResponse{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPResponseBytes+1))
	if err != nil {
		return HTTPResponse{}, err
	}
	if len(body) > maxHTTPResponseBytes {
		return HTTPResponse{}, fmt.Errorf("toolnexus: %s answered more than %d MiB", r.URL, maxHTTPResponseBytes>>20)
	}
	headers := make(map[string]string, len(resp.Header))
	for k, v := range resp.Header {
		headers[k] = strings.Join(v, ", ")
	}
	return HTTPResponse{Status: resp.StatusCode, Headers: headers, Body: body}, nil
}

// httpClientSlot adapts f to the httpClient slot: the event
// {method, url, headers, body, stream} decoded into an HTTPRequest, the
// answer sent back as {status, headers, body}.
func httpClientSlot(f HTTPClientFunc) slotFunc {
	return slotFunc{"httpClient", func(ctx context.Context, ev []byte) (any, error) {
		var wire struct {
			HTTPRequest
			Body string `json:"body"`
		}
		if err := json.Unmarshal(ev, &wire); err != nil {
			return nil, err
		}
		req := wire.HTTPRequest
		req.Body = []byte(wire.Body)
		req.Raw = append(json.RawMessage(nil), ev...)
		resp, err := f(ctx, req)
		if err != nil {
			return nil, err
		}
		reply := map[string]any{"status": resp.Status, "body": string(resp.Body)}
		if len(resp.Headers) > 0 {
			reply["headers"] = resp.Headers
		}
		return reply, nil
	}}
}
