//! An expanded `${ENV}` header value reaches the server and nothing else: not
//! a ToolResult, an error, a log line or a panic message.
//!
//! The scenarios run in a child process (this test binary, re-run on the
//! ignored test below) that prints every result and error it gets, in every
//! format; the parent then searches the child's whole stdout and stderr for
//! the secret.

mod http_tool_mock;
mod ports;

use http_tool_mock::{MockServer, Reply};
use serde_json::{json, Value};
use std::process::Command;
use std::time::Duration;
use toolnexus::http_tool::http_tool;
use toolnexus::tool::{ExecContext, Tool, ToolResult};

const SECRET: &str = "s3cr3t-Tn-7f9e2c41";
const SCENARIOS: [&str; 10] = [
    "success",
    "non-2xx",
    "echo-401",
    "echo-200",
    "connect-failed",
    "timeout",
    "redirect-elsewhere",
    "bad-value-after-expansion",
    "bad-config",
    "debug-of-tool",
];

fn show(scenario: &str, r: &ToolResult) {
    println!("[{scenario}] {} | {r:?} | {}", r.to_json(), r.output);
}

fn build(decl: Value) -> Tool {
    match http_tool(0, &decl) {
        Ok(t) => t,
        Err(e) => panic!("declaration rejected: {e}"),
    }
}

fn run(t: &Tool, timeout_ms: Option<u64>) -> ToolResult {
    let ctx = ExecContext {
        timeout_ms,
        ..Default::default()
    };
    t.exec.execute(&json!({"q": "x"}), &ctx)
}

fn declared(url: String) -> Value {
    json!({
        "name": "guarded", "url": url, "method": "POST", "query": ["q"],
        "headers": {"Authorization": "Bearer ${TN_HTTP_SECRET}", "X-Api-Key": "${TN_HTTP_SECRET}"}
    })
}

#[test]
#[ignore = "the child half of an_expanded_header_value_never_appears_in_any_output"]
fn secret_scenarios_in_a_child_process() {
    std::env::set_var("TN_HTTP_SECRET", SECRET);
    std::env::set_var("TN_HTTP_SECRET_BAD", format!("{SECRET}\r\nX-Injected: 1"));

    // success; the server must see the expanded value, or this proves nothing
    let server = MockServer::with_replies(vec![Reply::text(200, "fine")]);
    let r = run(&build(declared(format!("{}/ok", server.base()))), None);
    show("success", &r);
    assert_eq!(r.output, "fine");
    let seen = server.requests();
    assert_eq!(seen[0].header("x-api-key").as_deref(), Some(SECRET));
    assert!(seen[0]
        .header("authorization")
        .is_some_and(|v| v.ends_with(SECRET)));

    let server = MockServer::with_replies(vec![Reply::text(401, "denied")]);
    let r = run(&build(declared(format!("{}/no", server.base()))), None);
    show("non-2xx", &r);
    assert_eq!(r.output, "HTTP 401: denied");

    // A server that echoes the request's headers back, as a debug endpoint
    // or a 401 page quoting the request does (issue 14).
    for (scenario, status) in [("echo-401", 401), ("echo-200", 200)] {
        let server = MockServer::with_responder(move |req| {
            let echoed: Vec<String> = req
                .headers
                .iter()
                .map(|(n, v)| format!("{n}: {v}"))
                .collect();
            Reply::text(status, &echoed.join("\n")).header("x-echo", &echoed.join(" | "))
        });
        let r = run(&build(declared(format!("{}/echo", server.base()))), None);
        show(scenario, &r);
        assert_eq!(r.is_error, status != 200);
        assert!(
            r.output.contains("authorization: Bearer [redacted]"),
            "the echo was not redacted in place"
        );
        assert!(r.output.contains("x-api-key: [redacted]"));
    }

    let (_held, port) = ports::refused_port();
    let r = run(&build(declared(format!("http://127.0.0.1:{port}/x"))), None);
    show("connect-failed", &r);
    assert_eq!(r.output, "HTTP transport failure: connect-failed");

    let server = MockServer::with_replies(vec![
        Reply::text(200, "late").delayed(Duration::from_millis(800))
    ]);
    let r = run(
        &build(declared(format!("{}/slow", server.base()))),
        Some(50),
    );
    show("timeout", &r);
    assert_eq!(r.output, "HTTP transport failure: timeout");

    let other = MockServer::with_replies(vec![Reply::text(200, "landed")]);
    let server = MockServer::with_replies(vec![
        Reply::text(307, "").header("location", &format!("{}/l", other.base()))
    ]);
    let r = run(&build(declared(format!("{}/r", server.base()))), None);
    show("redirect-elsewhere", &r);
    assert_eq!(r.output, "landed");
    assert!(other.requests()[0].header("x-api-key").is_none());

    let server = MockServer::with_replies(vec![Reply::text(200, "never")]);
    let bad = json!({
        "name": "guarded", "url": format!("{}/b", server.base()),
        "headers": {"Authorization": "Bearer ${TN_HTTP_SECRET_BAD}"}
    });
    let r = run(&build(bad), None);
    show("bad-value-after-expansion", &r);
    assert!(r.is_error);
    assert!(server.requests().is_empty());

    // Declarations with the secret written out literally, each with a fault.
    let faulty = [
        json!({"name": "t", "url": "http://h/", "headers": {"Authorization": format!("Bearer {SECRET}")}, "timeout": -1}),
        json!({"name": "t", "url": "http://h/", "headers": {"Authorization": format!("Bearer {SECRET}\n")}}),
        json!({"name": "t", "url": "http://h/", "headers": {"Authorization": format!("Bearer {SECRET}"), "authorization": SECRET}}),
        json!({"name": "t", "url": "http://h/", "headers": {"Authorization": format!("Bearer {SECRET}"), "X-N": 1}}),
        json!({"name": "t", "url": "http://h/", "headers": {"Authorization": format!("Bearer {SECRET}")}, "surprise": true}),
    ];
    for decl in faulty {
        match http_tool(0, &decl) {
            Ok(t) => panic!("accepted: {t:?}"),
            Err(e) => println!("[bad-config] {e} | {e:?} | {}", e.to_json()),
        }
    }

    let t = build(declared("http://h/".into()));
    println!("[debug-of-tool] {t:?} | {}", t.declaration());
    for scenario in SCENARIOS {
        println!("scenario done: {scenario}");
    }
}

#[test]
fn an_expanded_header_value_never_appears_in_any_output() {
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(exe)
        .args([
            "secret_scenarios_in_a_child_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "child failed (output withheld: it may hold the secret)"
    );
    for scenario in SCENARIOS {
        assert!(
            stdout.contains(&format!("scenario done: {scenario}")),
            "scenario {scenario} did not run"
        );
    }
    assert!(!stdout.contains(SECRET), "the secret is in stdout");
    assert!(!stderr.contains(SECRET), "the secret is in stderr");
}

/// L6 for HTTP tools: a `${ENV}` value with `"` and `\` in it, echoed back
/// by the server JSON-escaped, percent-encoded and inside a Basic
/// credential's base64, is taken out of the result in each spelling.
#[test]
fn an_expanded_value_echoed_in_any_encoding_is_redacted() {
    use base64::Engine;
    let secret = r#"tn-"q"\b/s+7f9e"#;
    std::env::set_var("TN_HTTP_SECRET_ENCODED", secret);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let heard = std::sync::Arc::clone(&seen);
    let server = MockServer::with_responder(move |req| {
        let v = req.header("x-api-key").unwrap_or_default();
        *heard.lock().unwrap_or_else(|p| p.into_inner()) = Some(v.clone());
        let json = serde_json::to_string(&v).unwrap_or_default();
        let url = percent_encoding::utf8_percent_encode(&v, percent_encoding::NON_ALPHANUMERIC)
            .to_string();
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("user:{v}"));
        Reply::text(
            401,
            &format!(r#"{{"echo":{json},"url":"/x?key={url}","authorization":"Basic {basic}"}}"#),
        )
    });
    let decl = json!({
        "name": "guarded", "url": format!("{}/echo", server.base()), "method": "POST",
        "headers": {"X-Api-Key": "${TN_HTTP_SECRET_ENCODED}"}
    });
    let r = run(&build(decl), None);
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(seen.as_deref(), Some(secret), "the server must see it");
    assert!(r.is_error);
    let json = serde_json::to_string(secret).unwrap_or_default();
    let url = percent_encoding::utf8_percent_encode(secret, percent_encoding::NON_ALPHANUMERIC)
        .to_string();
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("user:{secret}"));
    for (what, form) in [
        ("JSON-escaped", &json[1..json.len() - 1]),
        ("percent-encoded", url.as_str()),
        ("base64", &b64[8..b64.len() - 4]),
        ("raw", secret),
    ] {
        assert!(!r.output.contains(form), "{what} secret in the output");
    }
    assert!(r.output.matches("[redacted]").count() >= 3, "{}", r.output);
}
