//! The direct tools/call path (`super::super::direct`) against a real
//! process, tests/mcp_servers/direct_server.py: the same ToolResults as
//! rmcp's path, its failures, and no pending call left behind.

use super::*;
use crate::runtime;

fn server_config(name: &str, timeout_ms: u64) -> ServerConfig {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/mcp_servers/direct_server.py"
    );
    let python = std::env::var("TOOLNEXUS_PYTHON").unwrap_or_else(|_| "python3".into());
    let cfg = json!({"mcpServers": {name: {"command": [python, script], "timeout": timeout_ms}}});
    let mut parsed = super::super::parse_config(&cfg).unwrap_or_else(|e| panic!("{e:?}"));
    parsed.servers.remove(0)
}

/// A connected session of direct_server.py; `direct: false` sends its
/// tools/calls through rmcp, as every call went before.
async fn open(direct: bool, timeout_ms: u64) -> Session {
    let cfg = server_config("d", timeout_ms);
    let (mut session, tools) = connect(&cfg, &PhaseCell::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tools.len(), 11, "{tools:?}");
    assert!(
        session.direct.is_some(),
        "a 2024-11-05 stdio session goes direct"
    );
    if !direct {
        session.direct = None;
    }
    session
}

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

async fn call(s: &Session, tool: &str, a: Value) -> ToolResult {
    s.call_tool(tool, args(a), s.timeout, None).await
}

fn report(r: &ToolResult) -> Vec<(i64, String)> {
    serde_json::from_str(&r.output).unwrap_or_else(|e| panic!("{e}: {}", r.output))
}

#[test]
fn the_direct_path_gives_the_same_results_as_rmcps_byte_for_byte() {
    let cases = [
        // The line on the wire, id aside.
        (
            "raw",
            json!({"text": "a\"b\n\u{e9}\u{1F600}\u{7f}", "n": [1, 2.5, null, {"z": true, "a": {}}]}),
        ),
        ("echo", json!({"text": "a\"b\n\u{e9}\u{1F600}"})),
        (
            "shaped",
            json!({"result": {"content": [{"type": "text", "text": "x"}], "isError": true}}),
        ),
        (
            "shaped",
            json!({"result": {"content": [], "structuredContent": {"z": 1, "a": [2]}}}),
        ),
        ("shaped", json!({"result": {"structuredContent": {"z": 1}}})),
        ("shaped", json!({"result": {}})),
        (
            "shaped",
            json!({"result": {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]}}),
        ),
        (
            "shaped",
            json!({"result": {"content": [{"type": "text", "text": "p"}], "protocolVersion": "x"}}),
        ),
        (
            "fail",
            json!({"code": -32000, "message": "nope", "data": {"why": 1}}),
        ),
        (
            "fail",
            json!({"code": -32602, "message": "Unknown tool: x"}),
        ),
        ("numeric_string", json!({"text": "echoed as a string"})),
        ("stray", json!({"text": "real"})),
    ];
    runtime::block_on(async {
        let (direct, rmcp) = (open(true, 20000).await, open(false, 20000).await);
        for (tool, a) in &cases {
            let ours = call(&direct, tool, a.clone()).await;
            let theirs = call(&rmcp, tool, a.clone()).await;
            assert_eq!(ours.to_json_string(), theirs.to_json_string(), "{tool} {a}");
        }
        // The error answers, as rmcp's error is worded.
        let failed = call(&direct, "fail", json!({"code": -32000, "message": "nope"})).await;
        let data = rmcp::model::ErrorData::new(rmcp::model::ErrorCode(-32000), "nope", None);
        let expected = describe_service_error(&ServiceError::McpError(data));
        assert_eq!(expected, "rpc-error (code -32000)");
        assert!(failed.is_error);
        assert_eq!(failed.output, failure("d", "tools/call", &expected));
        let raw = call(&direct, "raw", json!({"k": "v"})).await;
        assert_eq!(
            raw.output,
            r#"{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"raw","arguments":{"k":"v"}}}"#
        );
        // Only the real answer of `stray` was taken.
        let stray = call(&direct, "stray", json!({"text": "real"})).await;
        assert_eq!((stray.output.as_str(), stray.is_error), ("real", false));
        assert_eq!(direct.direct_pending(), Some(0));
        direct.close().await;
        rmcp.close().await;
    });
}

#[test]
fn an_answer_after_the_timeout_is_dropped_and_the_server_told_as_rmcp_tells_it() {
    runtime::block_on(async {
        for go_direct in [true, false] {
            let s = open(go_direct, 20000).await;
            let late = s
                .call_tool(
                    "late",
                    args(json!({"ms": 600, "text": "late"})),
                    Duration::from_millis(150),
                    None,
                )
                .await;
            assert!(late.is_error);
            assert_eq!(
                late.output,
                "mcp server \"d\" failed at tools/call: timeout (no answer within 150 ms)"
            );
            assert_eq!(s.direct_pending(), go_direct.then_some(0));
            // The late answer comes and goes; the next call gets its own.
            tokio::time::sleep(Duration::from_millis(700)).await;
            let next = call(&s, "echo", json!({"text": "next"})).await;
            assert_eq!((next.output.as_str(), next.is_error), ("next", false));
            let seen = report(&call(&s, "report", json!({})).await);
            assert_eq!(seen.len(), 1, "{seen:?}");
            assert_eq!(seen[0].1, "request timeout");
            if go_direct {
                assert!(seen[0].0 >= direct::FIRST_ID, "{seen:?}");
            }
            s.close().await;
        }
    });
}

/// The session's watchdog (`Direct`) sleeps until the earliest deadline
/// it knows; a call with a shorter timeout than one in flight must still
/// end at its own.
#[test]
fn each_call_ends_at_its_own_timeout_whatever_else_is_in_flight() {
    runtime::block_on(async {
        for go_direct in [true, false] {
            let s = Arc::new(open(go_direct, 20000).await);
            let long = {
                let s = Arc::clone(&s);
                tokio::spawn(async move {
                    let a = args(json!({"ms": 3000, "text": "long"}));
                    s.call_tool("late", a, Duration::from_millis(1200), None)
                        .await
                })
            };
            if go_direct {
                while s.direct_pending() != Some(1) {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            let a = args(json!({"ms": 3000, "text": "short"}));
            let short = s
                .call_tool("late", a, Duration::from_millis(150), None)
                .await;
            assert_eq!(
                short.output,
                "mcp server \"d\" failed at tools/call: timeout (no answer within 150 ms)"
            );
            // Over before the long call, which is still waiting.
            assert!(!long.is_finished(), "the long call ended first");
            if go_direct {
                assert_eq!(s.direct_pending(), Some(1));
            }
            let long = long.await.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                long.output,
                "mcp server \"d\" failed at tools/call: timeout (no answer within 1200 ms)"
            );
            assert_eq!(s.direct_pending(), go_direct.then_some(0));
            let next = call(&s, "echo", json!({"text": "next"})).await;
            assert_eq!((next.output.as_str(), next.is_error), ("next", false));
            s.close().await;
        }
    });
}

/// A server that stops reading: a long line fills the pipe, and the call
/// ends at its timeout (its answer timer has not started) or its cancel;
/// the line still goes out whole once the server reads again.
#[test]
fn a_call_whose_line_the_server_does_not_read_ends_at_its_timeout_or_cancel() {
    runtime::block_on(async {
        for go_direct in [true, false] {
            let s = open(go_direct, 20000).await;
            let long_text = "x".repeat(400_000);
            let deaf = call(&s, "deaf", json!({"ms": 1500})).await;
            assert_eq!(deaf.output, "deaf");
            let a = args(json!({"text": long_text}));
            let stuck = s
                .call_tool("echo", a, Duration::from_millis(200), None)
                .await;
            assert_eq!(
                stuck.output,
                "mcp server \"d\" failed at tools/call: timeout (no answer within 200 ms)"
            );
            if go_direct {
                let cancel = CancelToken::new();
                let canceller = cancel.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    canceller.cancel();
                });
                let a = args(json!({"text": "after the long one"}));
                let cancelled = s
                    .call_tool("echo", a, Duration::from_millis(5000), Some(&cancel))
                    .await;
                assert!(cancelled.is_error, "{}", cancelled.output);
                assert!(
                    cancelled.output.contains("cancelled"),
                    "{}",
                    cancelled.output
                );
                assert_eq!(s.direct_pending(), Some(0));
            }
            // Once the server reads again, every line it gets is whole.
            let next = call(&s, "echo", json!({"text": "next"})).await;
            assert_eq!((next.output.as_str(), next.is_error), ("next", false));
            s.close().await;
        }
    });
}

#[test]
fn thirty_two_direct_calls_answered_out_of_order_beside_rmcp_traffic() {
    runtime::block_on(async {
        let s = Arc::new(open(true, 20000).await);
        let calls: Vec<_> = (0..32)
            .map(|i| {
                let s = Arc::clone(&s);
                tokio::spawn(async move { call(&s, "gather", json!({"i": i, "n": 32})).await })
            })
            .collect();
        // The server answers none of them before this tools/list (rmcp's)
        // and its own ping to us (rmcp answers it) have gone through.
        while s.direct_pending() != Some(32) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let listed = tokio::time::timeout(Duration::from_secs(10), list_tools(&s.peer))
            .await
            .unwrap_or_else(|_| panic!("tools/list stalled beside the direct calls"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(listed.len(), 11);
        for (i, c) in calls.into_iter().enumerate() {
            let r = c.await.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((r.output, r.is_error), (i.to_string(), false));
        }
        assert_eq!(s.direct_pending(), Some(0));
        s.close().await;
    });
}

#[test]
fn cancelled_and_dropped_direct_calls_tell_the_server_and_leave_nothing_pending() {
    runtime::block_on(async {
        let s = open(true, 20000).await;
        // The cancel token.
        let cancel = CancelToken::new();
        let run = s.call_tool("hang", Map::new(), s.timeout, Some(&cancel));
        tokio::pin!(run);
        tokio::select! {
            _ = &mut run => panic!("a hanging call answered"),
            _ = tokio::time::sleep(Duration::from_millis(100)) => cancel.cancel(),
        }
        let r = run.await;
        assert!(r.is_error);
        assert_eq!(
            r.output,
            "mcp server \"d\" failed at tools/call: cancelled (the caller cancelled the call)"
        );
        assert_eq!(
            r.metadata.as_ref().and_then(|m| m.get("error")),
            Some(&json!("cancelled"))
        );
        // A future dropped mid-call (a served client that hung up).
        let dropped = tokio::time::timeout(
            Duration::from_millis(100),
            s.call_tool("hang", Map::new(), s.timeout, None),
        )
        .await;
        assert!(dropped.is_err());
        assert_eq!(s.direct_pending(), Some(0));
        tokio::time::sleep(Duration::from_millis(100)).await;
        let seen = report(&call(&s, "report", json!({})).await);
        let reasons: Vec<&str> = seen.iter().map(|(_, r)| r.as_str()).collect();
        assert_eq!(
            reasons,
            ["the caller cancelled the call", "the caller went away"]
        );
        // 10,000 calls cancelled before their answer: none stays pending.
        let cancel = CancelToken::new();
        cancel.cancel();
        for _ in 0..10_000 {
            let r = s
                .call_tool("hang", Map::new(), s.timeout, Some(&cancel))
                .await;
            assert!(r
                .output
                .ends_with("cancelled (the caller cancelled the call)"));
        }
        assert_eq!(s.direct_pending(), Some(0));
        let seen = report(&call(&s, "report", json!({})).await);
        assert_eq!(seen.len(), 10_002);
        s.close().await;
        let after = call(&s, "echo", json!({"text": "x"})).await;
        assert_eq!(
            after.output,
            "mcp server \"d\" failed at tools/call: closed (the toolkit was closed)"
        );
    });
}

#[test]
fn a_direct_call_waiting_when_the_session_closes_ends_closed() {
    runtime::block_on(async {
        let s = Arc::new(open(true, 20000).await);
        let waiting = {
            let s = Arc::clone(&s);
            tokio::spawn(async move { call(&s, "hang", json!({})).await })
        };
        while s.direct_pending() != Some(1) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        s.close().await;
        let r = waiting.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            r.output,
            "mcp server \"d\" failed at tools/call: closed (the toolkit was closed)"
        );
        assert_eq!(s.direct_pending(), Some(0));
    });
}
