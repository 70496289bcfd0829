package toolnexus

/*
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include "toolnexus.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
)

// MetricEvent is one SPEC §8 onMetric record: Event is "llm" (Model,
// Status "ok"|"error", Ms, PromptTokens, CompletionTokens), "tool" (Tool,
// Source, IsError, Pending, Ms) or "run" (Model, Turns, ToolCalls,
// TotalTokens, Ms, Error when the run failed). Raw is the event JSON.
type MetricEvent struct {
	Event            string          `json:"event"`
	Model            string          `json:"model,omitempty"`
	Status           string          `json:"status,omitempty"`
	Ms               float64         `json:"ms"`
	PromptTokens     int             `json:"promptTokens,omitempty"`
	CompletionTokens int             `json:"completionTokens,omitempty"`
	Tool             string          `json:"tool,omitempty"`
	Source           string          `json:"source,omitempty"`
	IsError          bool            `json:"isError,omitempty"`
	Pending          bool            `json:"pending,omitempty"`
	Turns            int             `json:"turns,omitempty"`
	ToolCalls        int             `json:"toolCalls,omitempty"`
	TotalTokens      int             `json:"totalTokens,omitempty"`
	Error            string          `json:"error,omitempty"`
	Raw              json.RawMessage `json:"-"`
}

// ConversationStore keeps Ask's conversations (SPEC §8 Conversation
// memory). Get returns nil for an id never saved. Without one, a Client
// keeps them in memory for its lifetime.
type ConversationStore interface {
	Get(ctx context.Context, id string) (json.RawMessage, error)
	Save(ctx context.Context, id string, messages json.RawMessage) error
}

// StreamEvent is one event of a streamed run (SPEC §8 Streaming): Type is
// "text" (Delta), "tool_call" (ID, Name, Args), "tool_progress" (ID,
// Name; an MCP tool's progress, total and message are in Raw),
// "tool_result" (ID, Name, Output, IsError), "pending" (Request), "usage"
// (Usage) or "done" (Result). Raw is the event JSON.
type StreamEvent struct {
	Type    string          `json:"type"`
	Delta   string          `json:"delta,omitempty"`
	ID      string          `json:"id,omitempty"`
	Name    string          `json:"name,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Output  string          `json:"output,omitempty"`
	IsError bool            `json:"isError,omitempty"`
	Request *Request        `json:"request,omitempty"`
	Usage   *Usage          `json:"usage,omitempty"`
	Result  *RunResult      `json:"-"`
	Raw     json.RawMessage `json:"-"`
}

// WithID makes an Ask or a Stream stateful: the transcript saved under id
// is the run's history, and the run's messages are saved back under it.
func WithID(id string) RunOption {
	return func(req map[string]any) error {
		req["id"] = id
		return nil
	}
}

// streamSink is where a streamed run's onEvent events go; it rides on the
// run's context, which every callback of the run gets.
type streamSink struct{}

var errStreamStopped = errors.New("toolnexus: the stream's consumer stopped")

// extSlots are the slots every client registers beside the hooks: onEvent
// (routed to the streaming run's consumer), onMetric, and the store.
func (o *ClientOptions) extSlots() []slotFunc {
	s := []slotFunc{{"onEvent", func(ctx context.Context, ev []byte) (any, error) {
		if sink, ok := ctx.Value(streamSink{}).(func([]byte) error); ok {
			return nil, sink(ev)
		}
		return nil, nil
	}}}
	if f := o.OnMetric; f != nil {
		s = append(s, eventSlot("onMetric", func(m *MetricEvent) *json.RawMessage { return &m.Raw },
			func(_ context.Context, m MetricEvent) (any, error) {
				f(m)
				return nil, nil
			}))
	}
	if st := o.Store; st != nil {
		type storeEvent struct {
			ID       string          `json:"id"`
			Messages json.RawMessage `json:"messages"`
		}
		s = append(s,
			slotFunc{"storeGet", func(ctx context.Context, ev []byte) (any, error) {
				var e storeEvent
				if err := json.Unmarshal(ev, &e); err != nil {
					return nil, err
				}
				m, err := st.Get(ctx, e.ID)
				if m == nil || err != nil {
					return nil, err
				}
				return m, nil
			}},
			slotFunc{"storeSave", func(ctx context.Context, ev []byte) (any, error) {
				var e storeEvent
				if err := json.Unmarshal(ev, &e); err != nil {
					return nil, err
				}
				return nil, st.Save(ctx, e.ID, e.Messages)
			}})
	}
	return s
}

// Ask runs prompt (SPEC §8 ask): WithID(id) remembers the conversation in
// the client's store; without it, Ask is Run.
func (c *Client) Ask(ctx context.Context, tk *Toolkit, prompt string, options ...RunOption) (*RunResult, error) {
	req := map[string]any{"prompt": prompt}
	for _, o := range options {
		if err := o(req); err != nil {
			return nil, err
		}
	}
	return c.call(ctx, tk, req, callAsk)
}

// AskStream is Ask with the provider's answers streamed: onText gets each
// piece of assistant text as it arrives (SPEC §8 ask with on_text), on the
// calling goroutine; the RunResult is returned as by Ask.
func (c *Client) AskStream(ctx context.Context, tk *Toolkit, prompt string, onText func(delta string), options ...RunOption) (*RunResult, error) {
	var result *RunResult
	var failed error
	for ev, err := range c.Stream(ctx, tk, prompt, options...) {
		switch {
		case err != nil:
			failed = err
		case ev.Type == "text" && onText != nil:
			onText(ev.Delta)
		case ev.Type == "done":
			result = ev.Result
		}
	}
	if failed != nil {
		return nil, failed
	}
	return result, nil
}

// Stream runs the loop with the provider's answers streamed (SPEC §8
// Streaming) and yields each event as it happens: text deltas, tool calls
// and their results, suspensions, the usage, then "done" with the
// RunResult. A failed run yields one last (zero event, error) pair.
// Breaking out of the loop cancels the run. WithID makes it stateful, as
// for Ask. Events are yielded on the goroutine that ranges over Stream.
func (c *Client) Stream(ctx context.Context, tk *Toolkit, prompt string, options ...RunOption) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		req := map[string]any{"prompt": prompt}
		for _, o := range options {
			if err := o(req); err != nil {
				yield(StreamEvent{}, err)
				return
			}
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := false
		sink := func(raw []byte) error {
			if stopped {
				return errStreamStopped
			}
			var ev StreamEvent
			if err := json.Unmarshal(raw, &ev); err != nil {
				return err
			}
			ev.Raw = append(json.RawMessage(nil), raw...)
			if ev.Type == "done" {
				var done struct {
					Result json.RawMessage `json:"result"`
				}
				if err := json.Unmarshal(raw, &done); err != nil {
					return err
				}
				r, err := decodeRunResult(done.Result)
				if err != nil {
					return err
				}
				ev.Result = r
			}
			if !yield(ev, nil) {
				stopped = true
				cancel()
				return errStreamStopped
			}
			return nil
		}
		_, err := c.call(context.WithValue(ctx, streamSink{}, sink), tk, req, callStream)
		if err != nil && !stopped {
			yield(StreamEvent{}, err)
		}
	}
}

// Metrics is the client's Prometheus text (SPEC §8 Observability), byte for
// byte as every toolnexus port renders it; mount it at GET /metrics.
func (c *Client) Metrics() (string, error) {
	ptr := c.acquire()
	if ptr == nil {
		return "", &Error{Code: "invalid_argument", Status: StatusInvalidArgument, Message: "client is closed"}
	}
	defer c.release()
	var out *C.char
	status := C.tn_client_metrics(ptr, &out)
	text := takeString(out)
	if status != C.TN_OK {
		return "", statusError(status, text)
	}
	return string(text), nil
}
