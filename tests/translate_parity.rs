//! Parity with the recorded vectors: every translate_helpers.json case through
//! `call_helper`, and every translate.json case against a mock provider on
//! 127.0.0.1. Cases listed in divergences.json (or the proposed ones) are
//! counted, not compared: tests/translate_divergences.rs asserts the decisions.
//! Set TN_CONFORMANCE_DIR to run another directory of vectors.

mod translate_mock;

use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::PathBuf;
use toolnexus::builtin::{self, Selection};
use toolnexus::error::ErrorCode;
use toolnexus::translate::{call_helper, translate};
use translate_mock::{MockProvider, Recorded};

const KEY_VARS: [&str; 3] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"];

fn vectors_dir() -> PathBuf {
    std::env::var_os("TN_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/vectors")
        })
}

fn load(path: PathBuf) -> Value {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Case ids whose decision differs from the recording (adopted and proposed).
fn divergences() -> BTreeSet<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut ids = BTreeSet::new();
    for file in ["divergences.json", "proposed-divergences.json"] {
        let path = root.join(file);
        if path.exists() {
            if let Some(d) = load(path)["divergences"].as_object() {
                ids.extend(d.keys().cloned());
            }
        }
    }
    ids
}

fn cases(file: &str) -> Vec<Value> {
    let path = vectors_dir().join(file);
    if !path.exists() {
        return Vec::new();
    }
    load(path)["cases"].as_array().cloned().unwrap_or_default()
}

/// JSON text standing for a value is compared as that value: a string that
/// parses as a JSON object or array is replaced by what it parses to.
fn as_values(v: &Value) -> Value {
    match v {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(p @ (Value::Object(_) | Value::Array(_))) => p,
            _ => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(as_values).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| (k.clone(), as_values(x))).collect())
        }
        other => other.clone(),
    }
}

#[test]
fn every_translate_helpers_case_matches_the_recording() {
    let skip = divergences();
    let (mut passed, mut failed, mut diverged) = (0, 0, 0);
    let mut failures = Vec::new();
    for case in cases("translate_helpers.json") {
        let id = case["id"].as_str().unwrap_or_default().to_string();
        if skip.contains(&id) {
            diverged += 1;
            continue;
        }
        let name = case["fn"].as_str().unwrap_or_default();
        let args = case["args"].as_array().cloned().unwrap_or_default();
        let expect = &case["expect"];
        let ok = match call_helper(name, &args) {
            // argsString and toolCallsJson give JSON text: compare as values.
            Ok(got) if matches!(name, "argsString" | "toolCallsJson") => {
                as_values(&got) == as_values(expect)
            }
            Ok(got) => got == *expect,
            Err(e) => {
                failures.push(format!("{id}: error {e}"));
                false
            }
        };
        if ok {
            passed += 1;
        } else {
            failed += 1;
            failures.push(format!("{id}: {:?}", call_helper(name, &args)));
        }
    }
    println!("translate helpers parity: {passed} passed, {failed} failed, {diverged} divergences");
    assert!(
        passed > 0,
        "no helper vectors were found in {}",
        vectors_dir().display()
    );
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}

/// Replaces `${BASE}` everywhere in a value.
fn with_base(v: &Value, base: &str) -> Value {
    serde_json::from_str(&v.to_string().replace("${BASE}", base)).unwrap_or(Value::Null)
}

/// A recorded usage (`prompt-tokens`, …) in this library's keys.
fn map_usage(expect: &Value) -> Value {
    let mut e = expect.clone();
    if let Some(u) = e.get("usage").and_then(Value::as_object) {
        let mut m = Map::new();
        for (from, to) in [
            ("prompt-tokens", "promptTokens"),
            ("completion-tokens", "completionTokens"),
            ("total-tokens", "totalTokens"),
        ] {
            if let Some(v) = u.get(from) {
                m.insert(to.into(), v.clone());
            }
        }
        e["usage"] = Value::Object(m);
    }
    e
}

/// The toolkit a case declares, rendered in OpenAI shape. Only the builtin
/// toggles are understood here; `None` for anything else.
fn declared_for(toolkit: &Value) -> Option<Vec<Value>> {
    let obj = toolkit.as_object()?;
    if obj.keys().any(|k| k != "builtins") {
        return None;
    }
    let mut sel = Selection::default();
    match obj.get("builtins") {
        None | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => sel.source_on = false,
        Some(Value::Object(b)) => {
            if b.get("disabled") == Some(&Value::Bool(true))
                || b.get("enabled") == Some(&Value::Bool(false))
            {
                sel.source_on = false;
            }
            if let Some(tools) = b.get("tools").and_then(Value::as_object) {
                sel.off = tools
                    .iter()
                    .filter(|(_, on)| **on == Value::Bool(false))
                    .map(|(n, _)| n.clone())
                    .collect();
            }
        }
        Some(_) => return None,
    }
    Some(
        builtin::tools(&sel)
            .unwrap_or_else(|e| panic!("builtin tools: {e}"))
            .iter()
            .map(|t| {
                serde_json::json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema}})
            })
            .collect(),
    )
}

/// Differences between what the mock received and what the case recorded.
fn compare_requests(expected: &[Value], got: &[Recorded], problems: &mut Vec<String>) {
    if expected.len() != got.len() {
        problems.push(format!(
            "{} provider requests, expected {}",
            got.len(),
            expected.len()
        ));
        return;
    }
    for (i, (e, g)) in expected.iter().zip(got).enumerate() {
        if e["method"].as_str() != Some(g.method.as_str()) {
            problems.push(format!("request {i}: method {}", g.method));
        }
        if e["path"].as_str() != Some(g.path.as_str()) {
            problems.push(format!("request {i}: path {}", g.path));
        }
        if let Some(h) = e["headers"].as_object() {
            for (name, value) in h {
                if g.header(name) != value.as_str() {
                    problems.push(format!("request {i}: header {name} = {:?}", g.header(name)));
                }
            }
        }
        if e.get("body").is_some() && g.json_body() != e["body"] {
            problems.push(format!("request {i}: body {}", g.json_body()));
        }
    }
}

/// The status and provider text a recorded `LLM <status>: <body>` message
/// carries.
fn recorded_status_and_body(message: &str) -> Option<(String, String)> {
    let rest = message.strip_prefix("LLM ")?;
    let (status, body) = rest.split_once(": ")?;
    status
        .chars()
        .all(|c| c.is_ascii_digit())
        .then(|| (status.to_string(), body.to_string()))
}

/// Runs one translate case; returns the problems found.
fn run_case(case: &Value) -> Result<Vec<String>, String> {
    let mock = MockProvider::for_case(case);
    let base = mock.base();
    let client = with_base(&case["client"], &base);
    let mut request = with_base(&case["request"], &base);
    let declared = match request.as_object_mut().and_then(|r| r.remove("toolkit")) {
        Some(tk) => declared_for(&tk).ok_or("toolkit config beyond builtins")?,
        None => Vec::new(),
    };
    let saved: Vec<(String, Option<String>)> = case["env"]
        .as_object()
        .map(|env| {
            env.iter()
                .map(|(k, v)| {
                    let old = std::env::var(k).ok();
                    match v.as_str() {
                        Some(val) => std::env::set_var(k, val),
                        None => std::env::remove_var(k),
                    }
                    (k.clone(), old)
                })
                .collect()
        })
        .unwrap_or_default();
    let outcome = translate(&client, &request, &declared, None);
    for (k, old) in saved {
        match old {
            Some(v) => std::env::set_var(&k, v),
            None => std::env::remove_var(&k),
        }
    }

    let mut problems = Vec::new();
    let expect = &case["expect"];
    let wanted = &expect["result"];
    match (&outcome, wanted.get("error").and_then(Value::as_str)) {
        (Err(e), Some(recorded)) => {
            let code_ok = if recorded.contains("timeout") {
                e.code == ErrorCode::Timeout
            } else {
                e.code == ErrorCode::ProviderError
            };
            if !code_ok {
                problems.push(format!("error code {:?} for recorded '{recorded}'", e.code));
            }
            if let Some((status, body)) = recorded_status_and_body(recorded) {
                if !e.message.contains(&status) || !e.message.contains(&body) {
                    problems.push(format!(
                        "message '{}' lacks '{status}' or '{body}'",
                        e.message
                    ));
                }
            }
        }
        (Err(e), None) => problems.push(format!("failed: {e}")),
        (Ok(got), Some(recorded)) => problems.push(format!(
            "succeeded ({got}) where the recording failed: {recorded}"
        )),
        (Ok(got), None) => {
            let mut got = got.clone();
            let raw = got.as_object_mut().and_then(|o| o.remove("raw"));
            if as_values(&got) != as_values(&map_usage(wanted)) {
                problems.push(format!("result {got}"));
            }
            let served = case
                .get("providerResponses")
                .and_then(|r| r.as_array()?.last().cloned())
                .or_else(|| case.get("providerResponse").cloned())
                .and_then(|r| r.get("body").cloned());
            if served.is_some() && raw != served {
                problems.push(format!("raw {raw:?}"));
            }
        }
    }
    let expected_requests: Vec<Value> = match (
        expect.get("providerRequests"),
        expect.get("providerRequest"),
    ) {
        (Some(Value::Array(list)), _) => list.clone(),
        (_, Some(Value::Null)) | (_, None) => Vec::new(),
        (_, Some(one)) => vec![one.clone()],
    };
    compare_requests(&expected_requests, &mock.requests(), &mut problems);
    Ok(problems)
}

#[test]
fn every_translate_case_matches_the_recording() {
    let skip = divergences();
    // The recording ran with no provider keys in the environment.
    for k in KEY_VARS {
        std::env::remove_var(k);
    }
    let (mut passed, mut failed, mut diverged, mut skipped) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for case in cases("translate.json") {
        let id = case["id"].as_str().unwrap_or_default().to_string();
        if case["op"] != "translate" {
            continue;
        }
        if skip.contains(&id) {
            diverged += 1;
            continue;
        }
        match run_case(&case) {
            Ok(problems) if problems.is_empty() => passed += 1,
            Ok(problems) => {
                failed += 1;
                failures.push(format!("{id}:\n  {}", problems.join("\n  ")));
            }
            Err(why) => {
                skipped += 1;
                println!("skipped {id}: {why}");
            }
        }
    }
    println!("translate parity: {passed} passed, {failed} failed, {diverged} divergences, {skipped} skipped");
    assert!(
        passed > 0,
        "no translate vectors were found in {}",
        vectors_dir().display()
    );
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}
