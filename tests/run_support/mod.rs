//! Running one recorded `run` case (tests/conformance/README.md, op run):
//! the scratch directory, the mock provider (with `/tool/` answered from
//! `serverResponses`), the client, and the hooks and `waitFor` the case
//! describes as data turned into real callbacks that record what they saw.
#![allow(dead_code)]

use crate::common;
use crate::translate_mock::{Canned, MockProvider, Recorded};
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};
use toolnexus::cancel::CancelToken;
use toolnexus::client::{Client, HostFn, RunData, RunRequest, Slot};
use toolnexus::error::Error;
use toolnexus::toolkit::Toolkit;

pub const KEY_VARS: [&str; 3] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"];

/// What running a case gave.
pub struct Ran {
    pub outcome: Result<Value, Error>,
    pub provider_requests: Vec<Recorded>,
    pub tool_requests: Vec<Recorded>,
    pub hook_calls: Vec<Value>,
    pub wait_requests: Vec<Value>,
    /// Every regular file under the scratch root after the run.
    pub files: Map<String, Value>,
    /// The case with `${ROOT}` and `${BASE}` replaced.
    pub case: Value,
    /// The toolkit's `skillsPrompt` render, taken while the case ran.
    pub skills_prompt: String,
}

/// The first matching rule's reply (the rule without `name` and `turn`), or
/// none.
fn rule_reply(rules: &[Value], event: &Value) -> Option<Value> {
    rules
        .iter()
        .find(|r| {
            r.get("name").is_none_or(|n| Some(n) == event.get("name"))
                && r.get("turn").is_none_or(|t| Some(t) == event.get("turn"))
        })
        .map(|r| {
            let mut reply = r.as_object().cloned().unwrap_or_default();
            reply.remove("name");
            reply.remove("turn");
            Value::Object(reply)
        })
}

fn hook(name: &'static str, rules: Vec<Value>, log: Arc<Mutex<Vec<Value>>>) -> HostFn {
    Arc::new(move |event: &Value, _: RunData| {
        let mut rec = event.as_object().cloned().unwrap_or_default();
        rec.insert("hook".into(), json!(name));
        log.lock()
            .map_err(|e| e.to_string())?
            .push(Value::Object(rec));
        Ok(rule_reply(&rules, event))
    })
}

/// `waitFor` as data: `{answer}` for every Request, or `{answers}` in order
/// (the last repeats). The Answer is `{id, ok, data?, reason? (not ok only)}`.
fn wait_for(spec: &Value, log: Arc<Mutex<Vec<Value>>>) -> HostFn {
    let answers: Vec<Value> = match (spec.get("answer"), spec.get("answers")) {
        (Some(a), _) => vec![a.clone()],
        (None, Some(Value::Array(list))) => list.clone(),
        _ => vec![json!({"ok": false})],
    };
    Arc::new(move |request: &Value, _: RunData| {
        let mut seen = log.lock().map_err(|e| e.to_string())?;
        let given = &answers[seen.len().min(answers.len() - 1)];
        seen.push(request.clone());
        let ok = given.get("ok") == Some(&Value::Bool(true));
        let mut a = Map::new();
        a.insert(
            "id".into(),
            request.get("id").cloned().unwrap_or(Value::Null),
        );
        a.insert("ok".into(), json!(ok));
        if let Some(d) = given.get("data") {
            a.insert("data".into(), d.clone());
        }
        if !ok {
            if let Some(r) = given.get("reason") {
                a.insert("reason".into(), r.clone());
            }
        }
        Ok(Some(Value::Object(a)))
    })
}

const HOOK_ORDER: [&str; 4] = ["beforeLLM", "afterLLM", "beforeTool", "afterTool"];

/// Hook calls sorted as README says: turn, then hook, then call id.
pub fn sort_hook_calls(calls: &mut [Value]) {
    let key = |v: &Value| {
        (
            v["turn"].as_u64().unwrap_or(0),
            HOOK_ORDER
                .iter()
                .position(|h| v["hook"] == *h)
                .unwrap_or(HOOK_ORDER.len()),
            v["id"].as_str().unwrap_or("").to_string(),
        )
    };
    calls.sort_by_key(key);
}

fn list_files(root: &std::path::Path, rel: &str, out: &mut Map<String, Value>) {
    let Ok(entries) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let path = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        match e.file_type() {
            Ok(t) if t.is_dir() => list_files(root, &path, out),
            Ok(t) if t.is_file() => {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                out.insert(path, Value::String(text));
            }
            _ => {}
        }
    }
}

/// Runs a case. Must not run concurrently with another (it changes the
/// working directory and the environment).
pub fn run_case(original: &Value) -> Ran {
    for k in KEY_VARS {
        std::env::remove_var(k);
    }
    let dir = common::lay_out(original);
    let root = common::root_of(&dir);
    // The answers may name ${BASE}, known once the mock listens.
    let mock = MockProvider::start(Vec::new()).with_tool_responses(Vec::new());
    let case = common::substitute(original, &root, &mock.base());
    let canned = |key: &str| -> Vec<Canned> {
        case[key]
            .as_array()
            .map(|l| l.iter().map(Canned::from_vector).collect())
            .unwrap_or_default()
    };
    mock.push_responses(canned("providerResponses"));
    let mock = mock.with_tool_responses(canned("serverResponses"));

    let old_dir = std::env::current_dir().ok();
    let _ = std::env::set_current_dir(&root);
    let hook_log = Arc::new(Mutex::new(Vec::new()));
    let wait_log = Arc::new(Mutex::new(Vec::new()));
    let mut skills_prompt = String::new();
    let outcome = (|| {
        let toolkit = Toolkit::build_from_json(&case["toolkit"].to_string())?;
        skills_prompt = toolkit.skills_prompt();
        let client = Client::from_json(&case["client"])?;
        if let Some(hooks) = case["hooks"].as_object() {
            for (key, slot) in [
                ("beforeLLM", Slot::BeforeLlm),
                ("beforeTool", Slot::BeforeTool),
                ("afterTool", Slot::AfterTool),
                ("afterLLM", Slot::AfterLlm),
            ] {
                if let Some(rules) = hooks.get(key).and_then(Value::as_array) {
                    let name = HOOK_ORDER
                        .iter()
                        .find(|h| **h == key)
                        .copied()
                        .unwrap_or("");
                    client
                        .set_callback(slot, Some(hook(name, rules.clone(), Arc::clone(&hook_log))));
                }
            }
        }
        if case.get("waitFor").is_some_and(|w| !w.is_null()) {
            client.set_callback(
                Slot::WaitFor,
                Some(wait_for(&case["waitFor"], Arc::clone(&wait_log))),
            );
        }
        let request = RunRequest {
            prompt: case["prompt"].as_str().unwrap_or("").to_string(),
            history: case["history"].as_array().cloned().unwrap_or_default(),
        };
        let result = client.run(&toolkit, &request, &CancelToken::new(), RunData::default());
        toolkit.close();
        result
    })();
    if let Some(d) = old_dir {
        let _ = std::env::set_current_dir(d);
    }
    let mut files = Map::new();
    list_files(dir.path(), "", &mut files);
    let mut hook_calls = hook_log.lock().map(|l| l.clone()).unwrap_or_default();
    sort_hook_calls(&mut hook_calls);
    let wait_requests = wait_log.lock().map(|l| l.clone()).unwrap_or_default();
    Ran {
        outcome,
        provider_requests: mock.requests(),
        tool_requests: mock.tool_requests(),
        hook_calls,
        wait_requests,
        files,
        case,
        skills_prompt,
    }
}

/// JSON text standing for a value compares as that value; `metadata: null`
/// is the same as no metadata.
pub fn normal(v: &Value) -> Value {
    match v {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(p @ (Value::Object(_) | Value::Array(_))) => normal(&p),
            _ => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(normal).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, x)| !(k.as_str() == "metadata" && x.is_null()))
                .map(|(k, x)| (k.clone(), normal(x)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Drops the dot-path `path` (relative to the value) if present.
pub fn drop_path(v: &mut Value, path: &str) {
    let mut parts: Vec<&str> = path.split('.').collect();
    let Some(last) = parts.pop() else { return };
    let mut cur = v;
    for p in parts {
        let next = match cur {
            Value::Object(o) => o.get_mut(p),
            Value::Array(a) => p.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    if let Value::Object(o) = cur {
        o.remove(last);
    }
}

/// The recorded RunResult in this library's keys.
pub fn our_keys(result: &Value) -> Value {
    let mut out = Map::new();
    for (k, v) in result.as_object().cloned().unwrap_or_default() {
        let k = match k.as_str() {
            "tool-calls" => "toolCalls".to_string(),
            "tool-call-count" => "toolCallCount".to_string(),
            _ => k,
        };
        let v = if k == "usage" {
            let mut u = Map::new();
            for (from, to) in [
                ("prompt-tokens", "promptTokens"),
                ("completion-tokens", "completionTokens"),
                ("total-tokens", "totalTokens"),
            ] {
                if let Some(x) = v.get(from) {
                    u.insert(to.into(), x.clone());
                }
            }
            Value::Object(u)
        } else {
            v
        };
        out.insert(k, v);
    }
    Value::Object(out)
}

/// The status and provider text of a recorded `LLM <status>: <body>`.
pub fn recorded_status_and_body(message: &str) -> Option<(String, String)> {
    let rest = message.strip_prefix("LLM ")?;
    let (status, body) = rest.split_once(": ")?;
    status
        .chars()
        .all(|c| c.is_ascii_digit())
        .then(|| (status.to_string(), body.to_string()))
}

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
        if let Some(d) = common::diff(
            &format!("request {i} body"),
            &normal(&e["body"]),
            &normal(&g.json_body()),
        ) {
            problems.push(d);
        }
    }
}

fn compare_server_requests(expected: &[Value], got: &[Recorded], problems: &mut Vec<String>) {
    if expected.len() != got.len() {
        problems.push(format!(
            "{} tool requests, expected {}",
            got.len(),
            expected.len()
        ));
        return;
    }
    for (i, (e, g)) in expected.iter().zip(got).enumerate() {
        let (path, query) = match g.path.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (g.path.as_str(), None),
        };
        if e["method"].as_str() != Some(g.method.as_str()) || e["path"].as_str() != Some(path) {
            problems.push(format!("tool request {i}: {} {}", g.method, g.path));
        }
        if e["query"].as_str() != query {
            problems.push(format!("tool request {i}: query {query:?}"));
        }
        if let Some(h) = e["headers"].as_object() {
            for (name, value) in h {
                if g.header(name) != value.as_str() {
                    problems.push(format!("tool request {i}: header {name}"));
                }
            }
        }
        if let Some(b) = e["body"].as_str() {
            let body = String::from_utf8_lossy(&g.body);
            if normal(&json!(b)) != normal(&json!(body)) {
                problems.push(format!("tool request {i}: body {body:?}"));
            }
        }
    }
}

/// Every difference between a run and its case's expectations (README op
/// run "How to compare").
pub fn problems(ran: &Ran) -> Vec<String> {
    let case = &ran.case;
    let mut expect = case["expect"].clone();
    let mut got = json!({
        "result": match &ran.outcome {
            Ok(v) => v.clone(),
            Err(e) => json!({"error": e.to_string()}),
        },
        "waitForRequests": ran.wait_requests,
        "hookCalls": ran.hook_calls,
    });
    for path in case["volatile"].as_array().into_iter().flatten() {
        let p = path.as_str().unwrap_or("");
        drop_path(&mut expect, p);
        drop_path(&mut got, p);
    }
    let mut problems = Vec::new();
    let wanted = &expect["result"];
    match (&ran.outcome, wanted.get("error").and_then(Value::as_str)) {
        (Err(e), Some(recorded)) => {
            use toolnexus::error::ErrorCode;
            if !matches!(e.code, ErrorCode::ProviderError | ErrorCode::Timeout) {
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
        (Ok(r), Some(recorded)) => problems.push(format!(
            "succeeded ({r}) where the recording failed: {recorded}"
        )),
        (Ok(_), None) => {
            if let Some(d) = common::diff(
                "result",
                &normal(&our_keys(wanted)),
                &normal(&got["result"]),
            ) {
                problems.push(d);
            }
        }
    }
    for key in ["waitForRequests", "hookCalls"] {
        if let Some(want) = expect.get(key) {
            if let Some(d) = common::diff(key, &normal(want), &normal(&got[key])) {
                problems.push(d);
            }
        }
    }
    let expected_requests = expect["providerRequests"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    compare_requests(&expected_requests, &ran.provider_requests, &mut problems);
    if let Some(want) = case["expectServerRequests"].as_array() {
        compare_server_requests(want, &ran.tool_requests, &mut problems);
    }
    if let Some(want) = case["expectFiles"].as_object() {
        if *want != ran.files {
            problems.push(format!(
                "files {:?}, expected {:?}",
                ran.files.keys().collect::<Vec<_>>(),
                want.keys().collect::<Vec<_>>()
            ));
        }
    }
    problems
}
