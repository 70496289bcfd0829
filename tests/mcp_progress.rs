//! Progress-aware timeouts for MCP tool calls (issue 28) through the public
//! API, over stdio and streamable HTTP, against a server of the official
//! Python SDK (tests/mcp_servers/sdk_progress_server.py): each call's
//! `timeoutMs` is an idle timeout that the server's progress on the call
//! restarts, the server's `maxTotalTimeout` caps the call, progress on a
//! token the call did not send changes nothing, and the server is told
//! `notifications/cancelled` of every call given up. The progress itself
//! reaches the execute context's relay. Timings are generous (1,500 ms
//! against progress every 100 ms): the tests assert outcomes and order,
//! not durations.

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
/// with `extra` keys in its entry; connecting may take 20 s.
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

/// Calls `p_TOOL` with a 1,500 ms timeout; the relay, when given, hears
/// the call's server notifications.
fn call_p(
    s: &McpSource,
    tool_name: &str,
    steps: u64,
    log: &Path,
    relay: Option<Relay>,
) -> ToolResult {
    let ctx = ExecContext {
        timeout_ms: Some(1500),
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
    let relay = Relay(Arc::new(move |m: &str, p: Value| {
        if let Ok(mut v) = log.lock() {
            v.push((m.to_string(), p));
        }
    }));
    (relay, heard)
}

/// Everything one transport must show.
fn progress_aware_timeouts_over(transport: &str, port: u16) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("log");
    let s = source(transport, port, json!({}));

    // 2.5 s of work against a 1.5 s timeout, progress every 100 ms: done,
    // and the progress reached the relay, in order, without the token.
    let (relay, heard) = recording();
    let worked = call_p(&s, "work", 25, &log, Some(relay));
    assert!(
        !worked.is_error && worked.output.contains("done 25"),
        "{transport}: {worked:?}"
    );
    let heard = heard.lock().map(|h| h.clone()).unwrap_or_default();
    let progress: Vec<&Value> = heard
        .iter()
        .filter(|(m, _)| m == "notifications/progress")
        .map(|(_, p)| p)
        .collect();
    assert_eq!(progress.len(), 25, "{transport}: {heard:?}");
    assert_eq!(
        progress[0],
        &json!({"progress": 1.0, "total": 25.0, "message": "step 1"}),
        "{transport}"
    );
    assert_eq!(progress[24]["progress"], json!(25.0), "{transport}");

    // The same length without a word: ended at the timeout, with its text.
    let silent = call_p(&s, "silent", 25, &log, None);
    assert_eq!(silent.output, timed_out(1500), "{transport}");
    assert!(silent.is_error);
    log_with(&log, "cancelled silent");

    // Progress on a token the call never sent restarts nothing.
    let stray = call_p(&s, "stray", 25, &log, None);
    assert_eq!(stray.output, timed_out(1500), "{transport}");
    log_with(&log, "cancelled stray");
    drop(s);

    // The cap ends a call that keeps reporting progress, naming the cap.
    let capped = source(transport, port, json!({"maxTotalTimeout": 2500}));
    let ended = call_p(&capped, "work", 100, &log, None);
    assert_eq!(
        ended.output,
        "mcp server \"p\" failed at tools/call: \
         timeout (no answer within the maxTotalTimeout of 2500 ms)",
        "{transport}"
    );
    let text = log_with(&log, "cancelled work");
    assert_eq!(
        text, "ended work\ncancelled silent\ncancelled stray\ncancelled work\n",
        "{transport}"
    );
}

#[test]
fn progress_aware_timeouts_over_stdio() {
    progress_aware_timeouts_over("stdio", 0);
}

#[test]
fn progress_aware_timeouts_over_streamable_http() {
    let (mut child, port) = spawn_on_own_port(SCRIPT, "streamable-http");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    progress_aware_timeouts_over("http", port);
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
