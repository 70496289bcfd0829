package toolnexus

// Answer is the SPEC §10 resolution of a suspended tool, as the "answer" of
// an execute context takes it: ExecuteWithContext(name, args,
// map[string]any{"answer": AnswerOutput(id, "staging")}).
type Answer struct {
	ID     string         `json:"id"`
	OK     bool           `json:"ok"`
	Data   map[string]any `json:"data,omitempty"`
	Reason string         `json:"reason,omitempty"`
}

// AnswerOutput is the answer that supplies output as the result of request
// id: data {"output": output}, the one spelling the library reads (upstream
// D4, #89). The library refuses a non-string output in an execute context.
func AnswerOutput(id, output string) Answer {
	return Answer{ID: id, OK: true, Data: map[string]any{"output": output}}
}

// AnswerDeclined is the answer that refuses request id; reason is
// "declined" (also for ""), "cancelled" or "expired", anything else an
// invalid_argument *Error.
func AnswerDeclined(id, reason string) (Answer, error) {
	args := []any{id}
	if reason != "" {
		args = append(args, reason)
	}
	if _, err := Helper("answerDeclined", args); err != nil {
		return Answer{}, err
	}
	if reason == "" {
		reason = "declined"
	}
	return Answer{ID: id, OK: false, Reason: reason}, nil
}
