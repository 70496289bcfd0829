//! SPEC §10 answers as upstream 0.21 has them (D4, #89, ADR 0026), through
//! the paths `tn_execute` and `tn_helper` take: the answer helpers, and the
//! rule that an answer's output is a string. Each test names the upstream
//! test (the Python port 0.21.0, tests/test_consumer_issues_86_93.py) it
//! follows.

use serde_json::{json, Value};
use toolnexus::error::ErrorCode;
use toolnexus::toolkit::{parse_context, Toolkit};
use toolnexus::translate::call_helper;

fn question_toolkit() -> Toolkit {
    Toolkit::build_from_json(r#"{"builtins": {"tools": {"question": true}}}"#)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn questions() -> Value {
    json!({"questions": [{"question": "Which environment?"}]})
}

// Follows test_d4_answer_output_constructor and
// test_d4_the_answer_reaches_the_tool_itself: the answer answerOutput builds,
// given as tn_execute's context, re-runs the question tool with it.
#[test]
fn an_answer_output_reaches_the_question_tool() {
    let answer = call_helper("answerOutput", &[json!("req-1"), json!("staging")])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        answer,
        json!({"id": "req-1", "ok": true, "data": {"output": "staging"}})
    );
    let ctx = parse_context(Some(&json!({"answer": answer}).to_string()))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = question_toolkit().execute("question", questions(), &ctx);
    assert!(!r.is_error, "{}", r.output);
    let data: Value = serde_json::from_str(&r.output).unwrap_or_default();
    assert_eq!(data["output"], "staging");
}

// Follows test_d4_a_non_string_output_errors_loudly: the helper refuses a
// non-string output, and so does an execute context carrying one.
#[test]
fn a_non_string_output_is_refused_loudly() {
    let e = call_helper(
        "answerOutput",
        &[json!("req-1"), json!({"value": "staging"})],
    )
    .expect_err("refused");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    let ctx = json!({"answer": {"id": "req-1", "ok": true, "data": {"output": 42}}});
    let e = parse_context(Some(&ctx.to_string())).expect_err("refused");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("answer.data.output"), "{}", e.message);
    // Data without an output key is left as the host gave it.
    let other = json!({"answer": {"id": "req-1", "ok": true, "data": {"answers": [["red"]]}}});
    assert!(parse_context(Some(&other.to_string())).is_ok());
}

// Follows test_d4_a9_answer_declined_constructor.
#[test]
fn an_answer_declined_takes_the_three_reasons() {
    assert_eq!(
        call_helper("answerDeclined", &[json!("req-1")]).ok(),
        Some(json!({"id": "req-1", "ok": false, "reason": "declined"}))
    );
    for reason in ["declined", "cancelled", "expired"] {
        let a = call_helper("answerDeclined", &[json!("req-1"), json!(reason)])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a["reason"], reason);
    }
    let e = call_helper("answerDeclined", &[json!("req-1"), json!("nope")]).expect_err("refused");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    // A declined answer re-runs the question tool into asking again.
    let declined = call_helper("answerDeclined", &[json!("req-1")]).unwrap_or_default();
    let ctx = parse_context(Some(&json!({"answer": declined}).to_string()))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = question_toolkit().execute("question", questions(), &ctx);
    assert!(r.is_error && r.metadata.is_some_and(|m| m.contains_key("pending")));
}
