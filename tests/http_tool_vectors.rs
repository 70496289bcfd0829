//! Runs every case of the http.json conformance vectors (recorded from the
//! upstream Clojure port) against a mock server on 127.0.0.1 and compares the
//! ToolResult and the requests the server received. Cases listed in
//! divergences.json are counted, not compared; tests/http_tool.rs asserts
//! the decision taken for each of them.
//!
//! `TN_CONFORMANCE_DIR` names another directory of vectors in the same format.

mod http_tool_mock;

use http_tool_mock::{MockServer, Recorded, Reply};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use toolnexus::http_tool::http_tool;
use toolnexus::tool::ExecContext;

/// Headers the recording compares besides those a tool declares.
const RECORDED_HEADERS: [&str; 5] = [
    "content-type",
    "authorization",
    "x-api-key",
    "accept",
    "anthropic-version",
];

fn conformance_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

fn read_json(path: &PathBuf) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn divergence_ids() -> Vec<String> {
    ["divergences.json", "proposed-divergences.json"]
        .iter()
        .map(|f| conformance_dir().join(f))
        .filter(|p| p.exists())
        .flat_map(|p| {
            read_json(&p)["divergences"]
                .as_object()
                .map(|m| m.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .collect()
}

fn replies_of(case: &Value) -> Vec<Reply> {
    let list: Vec<Value> = match (&case["serverResponse"], &case["serverResponses"]) {
        (Value::Object(_), _) => vec![case["serverResponse"].clone()],
        (_, Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    list.iter()
        .map(|r| {
            let status = r["status"].as_u64().unwrap_or(200) as u16;
            let mut reply = match r.get("bodyText") {
                Some(Value::String(t)) => Reply::text(status, t),
                _ => Reply::json(status, &r["body"]),
            };
            if let Some(h) = r["headers"].as_object() {
                for (k, v) in h {
                    reply = reply.header(k, v.as_str().unwrap_or_default());
                }
            }
            if let Some(ms) = r["delayMs"].as_u64() {
                reply = reply.delayed(Duration::from_millis(ms));
            }
            reply
        })
        .collect()
}

/// Sets the case's environment; returns what to restore afterwards.
fn apply_env(case: &Value) -> Vec<(String, Option<String>)> {
    let mut saved = Vec::new();
    if let Some(env) = case["env"].as_object() {
        for (k, v) in env {
            saved.push((k.clone(), std::env::var(k).ok()));
            match v {
                Value::String(s) => std::env::set_var(k, s),
                _ => std::env::remove_var(k),
            }
        }
    }
    saved
}

fn restore_env(saved: Vec<(String, Option<String>)>) {
    for (k, v) in saved {
        match v {
            Some(v) => std::env::set_var(k, v),
            None => std::env::remove_var(k),
        }
    }
}

fn compare_requests(case: &Value, decl: &Value, got: &[Recorded]) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(expected) = case["expectServerRequests"].as_array() else {
        if !got.is_empty() {
            problems.push(format!("expected no request, server got {}", got.len()));
        }
        return problems;
    };
    if expected.len() != got.len() {
        problems.push(format!(
            "server got {} requests, expected {}: {got:?}",
            got.len(),
            expected.len()
        ));
        return problems;
    }
    let mut names: Vec<String> = RECORDED_HEADERS.iter().map(|s| s.to_string()).collect();
    if let Some(h) = decl["headers"].as_object() {
        names.extend(h.keys().map(|k| k.to_ascii_lowercase()));
    }
    for (i, (want, have)) in expected.iter().zip(got).enumerate() {
        if want["method"] != have.method.as_str() {
            problems.push(format!(
                "request {i}: method {} != {}",
                have.method, want["method"]
            ));
        }
        if want["path"] != have.path.as_str() {
            problems.push(format!(
                "request {i}: path {} != {}",
                have.path, want["path"]
            ));
        }
        let query = have.query.clone().map_or(Value::Null, Value::String);
        if want["query"] != query {
            problems.push(format!("request {i}: query {query} != {}", want["query"]));
        }
        let want_headers: BTreeMap<String, Value> = want["headers"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let have_headers: BTreeMap<String, Value> = names
            .iter()
            .filter_map(|n| have.header(n).map(|v| (n.clone(), Value::String(v))))
            .collect();
        if want_headers != have_headers {
            problems.push(format!(
                "request {i}: headers {have_headers:?} != {want_headers:?}"
            ));
        }
        let want_body = want["body"].as_str().unwrap_or_default();
        let is_json = want_headers
            .get("content-type")
            .and_then(Value::as_str)
            .is_some_and(|ct| ct.contains("json"));
        let same_body = if is_json {
            serde_json::from_str::<Value>(want_body).ok()
                == serde_json::from_str::<Value>(&have.body).ok()
        } else {
            want_body == have.body
        };
        if !same_body {
            problems.push(format!(
                "request {i}: body {:?} != {want_body:?}",
                have.body
            ));
        }
    }
    problems
}

fn run_case(case: &Value) -> Vec<String> {
    let server = MockServer::with_replies(replies_of(case));
    let root = tempfile::tempdir().expect("scratch dir");
    let text = case
        .to_string()
        .replace("${BASE}", &server.base())
        .replace("${ROOT}", &root.path().to_string_lossy());
    let case: Value = serde_json::from_str(&text).expect("case stays JSON");

    let name = case["name"].as_str().unwrap_or_default();
    let decls = case["toolkit"]["httpTools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let Some((index, decl)) = decls
        .iter()
        .enumerate()
        .find(|(_, d)| d["name"].as_str() == Some(name))
    else {
        return vec![format!("no httpTools entry named {name}")];
    };
    let tool = match http_tool(index, decl) {
        Ok(t) => t,
        Err(e) => return vec![format!("declaration rejected: {e}")],
    };

    let saved = apply_env(&case);
    let result = tool.exec.execute(&case["args"], &ExecContext::default());
    restore_env(saved);

    let mut problems = Vec::new();
    let got = result.to_json();
    let expect = &case["expect"];
    if case.get("hostSpecific").is_some() {
        if got["isError"] != expect["isError"] {
            problems.push(format!("isError: got {got}, expected {expect}"));
        }
    } else if decl["resultMode"] == "json" {
        let mut g: Map<String, Value> = got.as_object().cloned().unwrap_or_default();
        let mut e: Map<String, Value> = expect.as_object().cloned().unwrap_or_default();
        let go = g.remove("output").unwrap_or_default();
        let eo = e.remove("output").unwrap_or_default();
        let parse = |v: &Value| serde_json::from_str::<Value>(v.as_str().unwrap_or_default()).ok();
        if g != e || parse(&go) != parse(&eo) || parse(&go).is_none() {
            problems.push(format!("result: got {got}, expected {expect}"));
        }
    } else if &got != expect {
        problems.push(format!("result: got {got}, expected {expect}"));
    }
    problems.extend(compare_requests(&case, decl, &server.requests()));
    problems
}

/// Every case in one test: `env` is process-wide, so the cases run one after
/// another.
#[test]
fn http_vectors_match_the_recording() {
    let dir = std::env::var_os("TN_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| conformance_dir().join("vectors"));
    let vectors = read_json(&dir.join("http.json"));
    let cases = vectors["cases"].as_array().expect("http.json has cases");
    let divergences = divergence_ids();

    let (mut passed, mut failed, mut diverged) = (0, 0, 0);
    let mut report = Vec::new();
    for case in cases {
        let id = case["id"].as_str().unwrap_or("?");
        if divergences.iter().any(|d| d == id) {
            diverged += 1;
            continue;
        }
        let problems = run_case(case);
        if problems.is_empty() {
            passed += 1;
        } else {
            failed += 1;
            report.push(format!("{id}:\n  {}", problems.join("\n  ")));
        }
    }
    println!("http parity: {passed} passed, {failed} failed, {diverged} divergences");
    assert!(failed == 0, "http vectors failed:\n{}", report.join("\n"));
    assert!(passed > 0, "no http vector ran");
}
