package toolnexus

import (
	"context"
	"encoding/json"
	"testing"
)

// Follows the Python port's test_consumer_issues_86_93.py::
// test_d4_answer_output_constructor and ::test_d4_the_answer_reaches_the_tool_itself
// (here the question builtin, the tool the ABI re-runs with an answer).
func TestAnswerOutputReachesTheQuestionTool(t *testing.T) {
	tk := mustBuild(t, map[string]any{"builtins": true})
	args := map[string]any{"questions": []map[string]any{{"question": "Which environment?"}}}
	res, err := tk.ExecuteWithContext(context.Background(), "question", args, map[string]any{"answer": AnswerOutput("req-1", "staging")})
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]string
	if err := json.Unmarshal([]byte(res.Output), &data); err != nil || res.IsError || data["output"] != "staging" {
		t.Fatalf("result %+v (%v)", res, err)
	}
}

// Follows ::test_d4_a_non_string_output_errors_loudly and
// ::test_d4_a9_answer_declined_constructor.
func TestAnswerOutputMustBeAString(t *testing.T) {
	tk := mustBuild(t, map[string]any{"builtins": true})
	args := map[string]any{"questions": []map[string]any{{"question": "Which environment?"}}}
	bad := map[string]any{"answer": map[string]any{"id": "req-1", "ok": true, "data": map[string]any{"output": map[string]any{"value": "staging"}}}}
	_, err := tk.ExecuteWithContext(context.Background(), "question", args, bad)
	wantCode(t, err, "invalid_argument", StatusInvalidArgument)

	a, err := AnswerDeclined("req-1", "cancelled")
	if err != nil || a.OK || a.Reason != "cancelled" {
		t.Fatalf("declined %+v %v", a, err)
	}
	if a, err := AnswerDeclined("req-1", ""); err != nil || a.Reason != "declined" {
		t.Fatalf("default reason %+v %v", a, err)
	}
	_, err = AnswerDeclined("req-1", "nope")
	wantCode(t, err, "invalid_argument", StatusInvalidArgument)
}
