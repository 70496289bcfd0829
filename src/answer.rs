//! SPEC §10 answers as upstream 0.21 has them (D4, #89, ADR 0026): the two
//! helpers that build one, and the rule that an answer's output is a string.
//!
//! An answer is `{id, ok, data?, reason?}`, the value a host puts under
//! `answer` in `tn_execute`'s context to re-run a suspended tool. The one
//! recognised spelling of a result is `data.output`, a string: hosts had
//! been guessing keys, and a wrong guess handed the model a fabricated
//! result. So [`output`] refuses anything but a string, and so does an
//! execute context whose answer carries a non-string `data.output`.

use crate::error::{Error, Result};
use crate::json::type_name;
use serde_json::{json, Value};

/// Why an answer refuses (advisory; the rule branches only on `ok`).
pub const REASONS: [&str; 3] = ["declined", "cancelled", "expired"];

/// The answer that supplies `output` as the result of request `id`:
/// `{"id", "ok": true, "data": {"output"}}`. `output` must be a string.
pub fn output(id: &str, output: &Value) -> Result<Value> {
    match output {
        Value::String(s) => Ok(json!({"id": id, "ok": true, "data": {"output": s}})),
        other => Err(Error::invalid_argument(format!(
            "answer output must be a string, got {}",
            type_name(other)
        ))),
    }
}

/// The answer that refuses request `id`: `{"id", "ok": false, "reason"}`,
/// `reason` one of [`REASONS`] (`declined` when not given).
pub fn declined(id: &str, reason: Option<&str>) -> Result<Value> {
    let reason = reason.unwrap_or("declined");
    if !REASONS.contains(&reason) {
        return Err(Error::invalid_argument(format!(
            "answer reason must be \"declined\", \"cancelled\" or \"expired\", got \"{reason}\""
        )));
    }
    Ok(json!({"id": id, "ok": false, "reason": reason}))
}

/// Checks an answer given in an execute context: a `data.output` that is
/// there must be a string.
pub fn check(answer: &Value) -> Result<()> {
    match answer.get("data").and_then(|d| d.get("output")) {
        None | Some(Value::String(_)) => Ok(()),
        Some(other) => Err(Error::invalid_argument(format!(
            "answer.data.output must be a string, got {}",
            type_name(other)
        ))),
    }
}

/// The helpers by their `tn_helper` names: `answerOutput(id, output)` and
/// `answerDeclined(id, reason?)`. `None` for any other name.
pub fn call_helper(name: &str, args: &[Value]) -> Option<Result<Value>> {
    let id = |i: usize| match args.get(i) {
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(other) => Err(Error::invalid_argument(format!(
            "{name}: the id must be a string, got {}",
            type_name(other)
        ))),
        None => Err(Error::invalid_argument(format!(
            "{name}: the id is missing"
        ))),
    };
    Some(match (name, args.len()) {
        ("answerOutput", 2) => id(0).and_then(|id| output(id, &args[1])),
        ("answerDeclined", 1) => id(0).and_then(|id| declined(id, None)),
        ("answerDeclined", 2) => id(0).and_then(|id| match &args[1] {
            Value::Null => declined(id, None),
            Value::String(r) => declined(id, Some(r)),
            other => Err(Error::invalid_argument(format!(
                "answerDeclined: the reason must be a string, got {}",
                type_name(other)
            ))),
        }),
        ("answerOutput", n) => Err(Error::invalid_argument(format!(
            "helper answerOutput takes 2 arguments (id, output), got {n}"
        ))),
        ("answerDeclined", n) => Err(Error::invalid_argument(format!(
            "helper answerDeclined takes 1 or 2 arguments (id, reason?), got {n}"
        ))),
        _ => return None,
    })
}

/// An Answer checked against its Request: an object with a boolean `ok`
/// and, if it has an `id`, the Request's. A missing id is filled in.
pub(crate) fn check_against(
    answer: Value,
    request: &Value,
) -> std::result::Result<Value, (&'static str, Value)> {
    let Value::Object(mut a) = answer else {
        return Err(("not an object", answer));
    };
    if !matches!(a.get("ok"), Some(Value::Bool(_))) {
        return Err(("ok must be a boolean", Value::Object(a)));
    }
    let want = request.get("id").cloned().unwrap_or(Value::Null);
    match a.get("id") {
        None | Some(Value::Null) => {
            a.insert("id".into(), want);
        }
        Some(id) if *id == want => {}
        Some(_) => return Err(("its id must echo the Request's id", Value::Object(a))),
    }
    Ok(Value::Object(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Follows the Python port's test_consumer_issues_86_93.py::test_d4_answer_output_constructor.
    #[test]
    fn output_builds_the_one_recognised_spelling() {
        assert_eq!(
            output("pnd-1", &json!("staging")).ok(),
            Some(json!({"id": "pnd-1", "ok": true, "data": {"output": "staging"}}))
        );
    }

    // Follows ::test_d4_a_non_string_output_errors_loudly.
    #[test]
    fn a_non_string_output_is_refused_naming_its_type() {
        let e = output("pnd-1", &json!({"value": "staging"})).expect_err("refused");
        assert!(e.message.contains("must be a string, got an object"), "{e}");
        assert!(check(&json!({"id": "x", "ok": true, "data": {"output": 3}})).is_err());
        assert!(check(&json!({"id": "x", "ok": true, "data": {"output": "3"}})).is_ok());
        assert!(check(&json!({"id": "x", "ok": true, "data": {"answers": [1]}})).is_ok());
        assert!(check(&json!({"id": "x", "ok": true, "data": "Ada"})).is_ok());
    }

    // Follows ::test_d4_a9_answer_declined_constructor.
    #[test]
    fn declined_takes_the_three_reasons_only() {
        assert_eq!(
            declined("pnd-1", Some("cancelled")).ok(),
            Some(json!({"id": "pnd-1", "ok": false, "reason": "cancelled"}))
        );
        assert_eq!(
            declined("pnd-1", None).ok().map(|a| a["reason"].clone()),
            Some(json!("declined"))
        );
        assert!(declined("pnd-1", Some("nope")).is_err());
    }
}
