package toolnexus

import "encoding/json"

// AnswerOutput is the answer that supplies output as the result of request
// id: data {"output": output}, the one spelling the library reads (upstream
// D4, #89). The library refuses a non-string output in an execute context.
//
// The Answer type is the one the client loop's WaitFor returns (client.go).
func AnswerOutput(id, output string) Answer {
	data, _ := json.Marshal(map[string]string{"output": output}) // a string map always marshals
	return Answer{ID: id, OK: true, Data: data}
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
