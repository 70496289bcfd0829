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
	"unsafe"
)

// Agent is a remote A2A agent (SPEC §7A): its Agent Card URL, headers whose
// ${ENV} references expand at each request, the budget of one call and the
// pause between polls (milliseconds; 0 keeps the defaults, 300000 and
// 1000), and the wire to speak ("", "toolnexus", "0.3" or "1.0"; "" follows
// the card).
type Agent struct {
	Card      string            `json:"card"`
	Headers   map[string]string `json:"headers,omitempty"`
	Timeout   int64             `json:"timeout,omitempty"`
	PollEvery int64             `json:"pollEvery,omitempty"`
	Protocol  string            `json:"protocol,omitempty"`
}

// AgentAdded is what AddAgent registered: the agent's card URL, the tool
// names added, those skipped because the toolkit already had the name, and
// warnings (skills left out).
type AgentAdded struct {
	Agent    string   `json:"agent"`
	Added    []string `json:"added"`
	Skipped  []string `json:"skipped"`
	Warnings []string `json:"warnings"`
}

// AddAgent fetches a remote agent's card and registers one tool per skill
// on the toolkit (source "a2a"; the first tool of a name wins). agent is a
// card URL (string) or an Agent. Cancelling ctx ends the card fetch.
func (tk *Toolkit) AddAgent(ctx context.Context, agent any) (*AgentAdded, error) {
	var v any = agent
	if a, ok := agent.(*Agent); ok {
		v = *a
	}
	text, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("toolnexus: agent: %w", err)
	}
	cagent, err := cString("agent", string(text))
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cagent))
	var added AgentAdded
	err = tk.with(func(p *C.tn_toolkit) error {
		return withCancelToken(ctx, func(token *C.tn_cancel) error {
			var cout *C.char
			status := C.tn_toolkit_add_agent(p, cagent, token, &cout)
			body := takeString(cout)
			if status != C.TN_OK {
				return statusError(status, body)
			}
			return json.Unmarshal(body, &added)
		})
	})
	if err != nil {
		return nil, err
	}
	return &added, nil
}
