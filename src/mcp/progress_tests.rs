//! Progress-aware timeouts (issue 28) on both stdio paths, the direct one
//! (`super::super::direct`) and rmcp's, against a server of the official
//! Python SDK (tests/mcp_servers/sdk_progress_server.py): a call that
//! reports progress outlives its `timeout`, a silent one ends at it, the
//! `maxTotalTimeout` ends a call however much it reports, progress on a
//! token the call did not send changes nothing, and the server is told
//! `notifications/cancelled` of every call given up. Timings are generous
//! (1,500 ms against progress every 100 ms): the tests assert outcomes,
//! not durations.

use super::*;
use crate::runtime;
use std::path::Path;

/// The timeout of each call (the execute context's `timeoutMs`, which
/// replaces the server's for a call); connecting has the server's 20 s,
/// for a Python that starts slowly under load.
const TIMEOUT: Duration = Duration::from_millis(1500);

/// sdk_progress_server.py over stdio with `extra` keys in its entry; its
/// calls go direct or (`direct: false`) through rmcp.
async fn open(direct: bool, extra: Value) -> Session {
    let script = format!(
        "{}/tests/mcp_servers/sdk_progress_server.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let python = std::env::var("TOOLNEXUS_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut entry = json!({"command": [python, script, "stdio"], "timeout": 20000});
    if let (Some(e), Value::Object(x)) = (entry.as_object_mut(), extra) {
        e.extend(x);
    }
    let cfg = json!({"mcpServers": {"p": entry}});
    let mut parsed = super::super::parse_config(&cfg).unwrap_or_else(|e| panic!("{e:?}"));
    let cfg = parsed.servers.remove(0);
    let (mut session, _) = connect(&cfg, &PhaseCell::new(), None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        session.direct.is_some(),
        "the SDK's stdio session goes direct"
    );
    if !direct {
        session.direct = None;
    }
    session
}

async fn call(s: &Session, tool: &str, steps: u64, log: &Path) -> ToolResult {
    let a = json!({"steps": steps, "log": log.to_string_lossy()});
    let Value::Object(a) = a else { unreachable!() };
    s.call_tool(tool, a, TIMEOUT, None).await
}

/// The lines of the server's log, once it holds `want` (waited for a
/// while: the cancel reaches the server after the call returned).
async fn log_with(log: &Path, want: &str) -> String {
    for _ in 0..200 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().any(|l| l == want) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{want:?} never came: {:?}",
        std::fs::read_to_string(log).unwrap_or_default()
    )
}

fn path_name(go_direct: bool) -> &'static str {
    if go_direct {
        "direct"
    } else {
        "rmcp"
    }
}

#[test]
fn progress_restarts_the_timeout_and_a_silent_call_still_ends_at_it() {
    runtime::block_on(async {
        for go_direct in [true, false] {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let log = dir.path().join("log");
            let s = open(go_direct, json!({})).await;
            let path = path_name(go_direct);
            // 2.5 s of work against a 1.5 s timeout, progress every 100 ms.
            let worked = call(&s, "work", 25, &log).await;
            // (SDK 2.x answers `{"result": ...}`, 1.x the text alone.)
            assert!(
                worked.output.contains("done 25") && !worked.is_error,
                "{path}: {worked:?}"
            );
            // The same length without a word: ended at the timeout, with
            // the timeout's text, and the server told.
            let silent = call(&s, "silent", 25, &log).await;
            assert!(silent.is_error, "{path}");
            assert_eq!(
                silent.output,
                "mcp server \"p\" failed at tools/call: timeout (no answer within 1500 ms)",
                "{path}"
            );
            let text = log_with(&log, "cancelled silent").await;
            assert_eq!(text, "ended work\ncancelled silent\n", "{path}");
            s.close().await;
        }
    });
}

#[test]
fn progress_on_a_token_the_call_did_not_send_does_not_restart_the_timeout() {
    runtime::block_on(async {
        for go_direct in [true, false] {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let log = dir.path().join("log");
            let s = open(go_direct, json!({})).await;
            let stray = call(&s, "stray", 25, &log).await;
            assert_eq!(
                stray.output,
                "mcp server \"p\" failed at tools/call: timeout (no answer within 1500 ms)",
                "{}",
                path_name(go_direct)
            );
            log_with(&log, "cancelled stray").await;
            s.close().await;
        }
    });
}

#[test]
fn the_total_cap_ends_a_call_that_keeps_reporting_progress() {
    runtime::block_on(async {
        for go_direct in [true, false] {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let log = dir.path().join("log");
            let s = open(go_direct, json!({"maxTotalTimeout": 4000})).await;
            // 10 s of work, progress all along: the cap ends it.
            let capped = call(&s, "work", 100, &log).await;
            assert!(capped.is_error);
            assert_eq!(
                capped.output,
                "mcp server \"p\" failed at tools/call: \
                 timeout (no answer within the maxTotalTimeout of 4000 ms)",
                "{}",
                path_name(go_direct)
            );
            log_with(&log, "cancelled work").await;
            // Under the cap a progressing call still outlives `timeout`.
            let worked = call(&s, "work", 20, &log).await;
            assert!(
                worked.output.contains("done 20") && !worked.is_error,
                "{worked:?}"
            );
            s.close().await;
        }
    });
}

#[test]
fn without_reset_on_progress_a_progressing_call_ends_at_the_timeout() {
    runtime::block_on(async {
        for go_direct in [true, false] {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let log = dir.path().join("log");
            let s = open(go_direct, json!({"resetTimeoutOnProgress": false})).await;
            let ended = call(&s, "work", 25, &log).await;
            assert_eq!(
                ended.output,
                "mcp server \"p\" failed at tools/call: timeout (no answer within 1500 ms)",
                "{}",
                path_name(go_direct)
            );
            log_with(&log, "cancelled work").await;
            s.close().await;
        }
    });
}

#[test]
fn a_host_cancel_tells_the_server_on_both_paths() {
    runtime::block_on(async {
        for go_direct in [true, false] {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let log = dir.path().join("log");
            let s = open(go_direct, json!({})).await;
            let cancel = CancelToken::new();
            let trigger = cancel.clone();
            let a = json!({"steps": 50, "log": log.to_string_lossy()});
            let Value::Object(a) = a else { unreachable!() };
            let (cancelled, ()) =
                tokio::join!(s.call_tool("work", a, TIMEOUT, Some(&cancel)), async {
                    tokio::time::sleep(Duration::from_millis(600)).await;
                    trigger.cancel();
                });
            assert_eq!(
                cancelled.output,
                "mcp server \"p\" failed at tools/call: cancelled (the caller cancelled the call)"
            );
            log_with(&log, "cancelled work").await;
            s.close().await;
        }
    });
}
