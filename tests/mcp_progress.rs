//! Progress-aware timeouts for MCP tool calls (issue 28) through the public
//! API, against a server of the official Python SDK
//! (tests/mcp_servers/sdk_progress_server.py). Over streamable HTTP: the
//! server's `timeout` is an idle timeout that its progress on the call
//! restarts, its `maxTotalTimeout` caps the call, progress on a token the
//! call did not send changes nothing, and the server is told
//! `notifications/cancelled` of every call given up; every progress
//! reaches the execute context's relay, in order, before the call's answer. Over stdio and HTTP: the host's
//! `timeoutMs` is a deadline that progress does not move. (Both stdio
//! paths' idle timeouts are tested on the session, src/mcp/progress_tests.rs,
//! where a call's timeout can be shorter than a Python's start.) Timings
//! are generous (3,000 ms against progress every 100 ms): the tests assert
//! outcomes and order, not durations.

mod mcp_support;

use mcp_support::*;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolnexus::mcp::McpSource;
use toolnexus::tool::{ExecContext, Relay, ToolResult};

const SCRIPT: &str = "sdk_progress_server.py";

/// The server over `transport` ("stdio" or "http", the latter on `port`),
/// with `extra` keys in its entry (a `timeout` of 20 s unless they say).
fn source(transport: &str, port: u16, extra: Value) -> McpSource {
    let mut entry = match transport {
        "stdio" => json!({"command": [python(), server_script(SCRIPT), "stdio"]}),
        _ => json!({"url": format!("http://127.0.0.1:{port}/mcp")}),
    };
    if let (Some(e), Value::Object(x)) = (entry.as_object_mut(), extra) {
        e.insert("timeout".into(), json!(20000));
        e.extend(x);
    }
    let s = connect(json!({"mcpServers": {"p": entry}}));
    assert_eq!(status(&s, "p"), "connected", "{:?}", s.errors);
    s
}

/// Calls `p_TOOL`, with the host's `timeoutMs` when given; the relay,
/// when given, hears the call's server notifications.
fn call_p(
    s: &McpSource,
    tool_name: &str,
    steps: u64,
    log: &Path,
    timeout_ms: Option<u64>,
    relay: Option<Relay>,
) -> ToolResult {
    let ctx = ExecContext {
        timeout_ms,
        relay,
        ..ExecContext::default()
    };
    tool(s, &format!("p_{tool_name}"))
        .exec
        .execute(&json!({"steps": steps, "log": log.to_string_lossy()}), &ctx)
}

/// The server's log once it holds the line `want` (the cancel reaches the
/// server after the call returned).
fn log_with(log: &Path, want: &str) -> String {
    for _ in 0..200 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().any(|l| l == want) {
            return text;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "{want:?} never came: {:?}",
        std::fs::read_to_string(log).unwrap_or_default()
    )
}

fn timed_out(ms: u64) -> String {
    format!("mcp server \"p\" failed at tools/call: timeout (no answer within {ms} ms)")
}

type Heard = Arc<Mutex<Vec<(String, Value)>>>;

fn recording() -> (Relay, Heard) {
    let heard: Heard = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&heard);
    let relay = Relay::new(Arc::new(move |m: &str, p: Value| {
        if let Ok(mut v) = log.lock() {
            v.push((m.to_string(), p));
        }
    }));
    (relay, heard)
}

fn start_http() -> (std::process::Child, u16) {
    let (child, port) = spawn_on_own_port(SCRIPT, "streamable-http");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, port)
}

#[test]
fn progress_aware_timeouts_over_streamable_http() {
    let (mut child, port) = start_http();
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("log");
    let s = source("http", port, json!({"timeout": 3000}));

    // 5 s of work against a 3 s timeout, progress every 100 ms: done, and
    // the progress reached the relay, in order, without the token.
    let (relay, heard) = recording();
    let worked = call_p(&s, "work", 50, &log, None, Some(relay));
    assert!(
        !worked.is_error && worked.output.contains("done 50"),
        "{worked:?}"
    );
    let heard = heard.lock().map(|h| h.clone()).unwrap_or_default();
    let progress: Vec<&Value> = heard
        .iter()
        .filter(|(m, _)| m == "notifications/progress")
        .map(|(_, p)| p)
        .collect();
    // Every step, in order, each before the call's answer: the session
    // hands a progress to the relay as the transport receives it (rmcp's
    // own handler, a task of its own per notification, could run after
    // the answer had ended the call, and lose the last).
    assert_eq!(
        progress.first(),
        Some(&&json!({"progress": 1.0, "total": 50.0, "message": "step 1"})),
        "{heard:?}"
    );
    let steps: Vec<f64> = progress
        .iter()
        .filter_map(|p| p["progress"].as_f64())
        .collect();
    let want: Vec<f64> = (1..=50).map(f64::from).collect();
    assert_eq!(steps, want, "{heard:?}");

    // The same length without a word: ended at the timeout, with its text.
    let silent = call_p(&s, "silent", 50, &log, None, None);
    assert_eq!(silent.output, timed_out(3000));
    assert!(silent.is_error);
    log_with(&log, "cancelled silent");

    // Progress on a token the call never sent restarts nothing.
    let stray = call_p(&s, "stray", 50, &log, None, None);
    assert_eq!(stray.output, timed_out(3000));
    log_with(&log, "cancelled stray");
    drop(s);

    // The cap ends a call that keeps reporting progress, naming the cap.
    let capped = source(
        "http",
        port,
        json!({"timeout": 3000, "maxTotalTimeout": 5000}),
    );
    let ended = call_p(&capped, "work", 100, &log, None, None);
    assert_eq!(
        ended.output,
        "mcp server \"p\" failed at tools/call: \
         timeout (no answer within the maxTotalTimeout of 5000 ms)"
    );
    let text = log_with(&log, "cancelled work");
    assert_eq!(
        text,
        "ended work\ncancelled silent\ncancelled stray\ncancelled work\n"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// The host's `timeoutMs` (a deadline for the call, CONTRACT.md §5) ends
/// a call however much progress it reports, with the timeout's text; the
/// progress still reaches the relay, and the server is told.
fn the_hosts_timeout_is_a_deadline_over(transport: &str, port: u16) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("log");
    let s = source(transport, port, json!({}));
    let (relay, heard) = recording();
    let ended = call_p(&s, "work", 50, &log, Some(1500), Some(relay));
    assert_eq!(ended.output, timed_out(1500), "{transport}");
    log_with(&log, "cancelled work");
    let heard = heard.lock().map(|h| h.len()).unwrap_or_default();
    assert!(heard > 0, "{transport}: no progress relayed");
}

#[test]
fn the_hosts_timeout_is_a_deadline_over_stdio() {
    the_hosts_timeout_is_a_deadline_over("stdio", 0);
}

#[test]
fn the_hosts_timeout_is_a_deadline_over_streamable_http() {
    let (mut child, port) = start_http();
    the_hosts_timeout_is_a_deadline_over("http", port);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_bad_progress_setting_names_the_key() {
    for (extra, want) in [
        (
            json!({"maxTotalTimeout": 0}),
            "maxTotalTimeout: expected a positive number of milliseconds, got 0",
        ),
        (
            json!({"resetTimeoutOnProgress": "yes"}),
            "resetTimeoutOnProgress: expected true or false, got a string",
        ),
    ] {
        let mut entry = json!({"command": ["true"]});
        if let (Some(e), Value::Object(x)) = (entry.as_object_mut(), extra) {
            e.extend(x);
        }
        let s = connect(json!({"mcpServers": {"p": entry}}));
        assert!(error(&s, "p").contains(want), "{}", error(&s, "p"));
    }
}
