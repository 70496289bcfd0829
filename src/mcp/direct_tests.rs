//! The direct tools/call path (`super::super::direct`) against a real
//! process, tests/mcp_servers/direct_server.py: the same ToolResults as
//! rmcp's path, its failures, and no pending call left behind.

use super::*;
use crate::runtime;
use std::borrow::Cow;

/// A stdio server of tests/mcp_servers/, run by Python.
fn script_config(name: &str, file: &str, timeout_ms: u64) -> ServerConfig {
    script_config_with(name, file, timeout_ms, json!({}))
}

/// [`script_config`] with `extra` keys in the server's entry.
fn script_config_with(name: &str, file: &str, timeout_ms: u64, extra: Value) -> ServerConfig {
    let script = format!("{}/tests/mcp_servers/{file}", env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var("TOOLNEXUS_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut entry = json!({"command": [python, script], "timeout": timeout_ms});
    if let (Some(e), Value::Object(x)) = (entry.as_object_mut(), extra) {
        e.extend(x);
    }
    let cfg = json!({"mcpServers": {name: entry}});
    let mut parsed = super::super::parse_config(&cfg).unwrap_or_else(|e| panic!("{e:?}"));
    parsed.servers.remove(0)
}

/// A connected session of direct_server.py; `direct: false` sends its
/// tools/calls through rmcp, as every call went before.
async fn open(direct: bool, timeout_ms: u64) -> Session {
    open_with(direct, timeout_ms, json!({})).await
}

/// [`open`] with `extra` keys in the server's entry.
async fn open_with(direct: bool, timeout_ms: u64, extra: Value) -> Session {
    let cfg = script_config_with("d", "direct_server.py", timeout_ms, extra);
    let (mut session, tools) = connect(&cfg, &PhaseCell::new(), None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tools.len(), 12, "{tools:?}");
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
        // Without progress tokens: each path numbers its own.
        let plain = || json!({"resetTimeoutOnProgress": false});
        let (direct, rmcp) = (
            open_with(true, 20000, plain()).await,
            open_with(false, 20000, plain()).await,
        );
        for (tool, a) in &cases {
            let ours = call(&direct, tool, a.clone()).await;
            let theirs = call(&rmcp, tool, a.clone()).await;
            assert_eq!(ours.to_json_string(), theirs.to_json_string(), "{tool} {a}");
        }
        // The error answers, as rmcp's error is worded.
        let failed = call(&direct, "fail", json!({"code": -32000, "message": "nope"})).await;
        let data = rmcp::model::ErrorData::new(rmcp::model::ErrorCode(-32000), "nope", None);
        let expected = describe_service_error(&ServiceError::McpError(data));
        assert_eq!(expected.to_string(), "rpc-error (code -32000)");
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
        assert_eq!(listed.len(), 12);
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

/// Issue 25 M5: calls cancelled while the server reads nothing (stopped by
/// SIGSTOP), so that most of their requests are still behind a full pipe.
/// Every request the server gets once it runs again is followed by its
/// cancel, and no cancel comes without its request.
#[test]
fn a_call_cancelled_while_its_request_waits_on_a_full_pipe_is_followed_by_its_cancel() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    runtime::block_on(async {
        for go_direct in [true, false] {
            let cfg = script_config("t", "cancel_tally.py", 20000);
            let (mut s, _) = connect(&cfg, &PhaseCell::new(), None)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(s.direct.is_some(), "a 2024-11-05 stdio session goes direct");
            if !go_direct {
                s.direct = None;
            }
            let s = Arc::new(s);
            let pid = s.pid().and_then(|p| i32::try_from(p).ok());
            let pid = Pid::from_raw(pid.unwrap_or_else(|| panic!("no pid")));
            kill(pid, Signal::SIGSTOP).unwrap_or_else(|e| panic!("{e}"));
            let cancellers = Arc::new(tokio::sync::Semaphore::new(0));
            let calls: Vec<_> = (0..2_000)
                .map(|_| {
                    let s = Arc::clone(&s);
                    let cancellers = Arc::clone(&cancellers);
                    tokio::spawn(async move {
                        let cancel = CancelToken::new();
                        let canceller = cancel.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_millis(2)).await;
                            canceller.cancel();
                            cancellers.add_permits(1);
                        });
                        s.call_tool("hang", Map::new(), s.timeout, Some(&cancel))
                            .await
                    })
                })
                .collect();
            // Every call cancelled while the server is stopped.
            let all = cancellers.acquire_many(2_000).await;
            drop(all.unwrap_or_else(|e| panic!("{e}")));
            tokio::time::sleep(Duration::from_millis(50)).await;
            kill(pid, Signal::SIGCONT).unwrap_or_else(|e| panic!("{e}"));
            for c in calls {
                let r = c.await.unwrap_or_else(|e| panic!("{e}"));
                assert!(
                    r.output
                        .ends_with("cancelled (the caller cancelled the call)"),
                    "{}",
                    r.output
                );
            }
            assert!(matches!(s.direct_pending(), Some(0) | None));
            let tally = s.call_tool("tally", Map::new(), s.timeout, None).await;
            let tally: Value = serde_json::from_str(&tally.output)
                .unwrap_or_else(|e| panic!("{e}: {}", tally.output));
            assert_eq!(
                tally,
                json!({"requests": 2_000, "followed": 2_000, "orphans": 0}),
                "every request of a cancelled call is followed by its cancel ({go_direct})"
            );
            s.close().await;
        }
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

/// How a hostile answer ends, alike on both paths.
#[derive(Debug)]
enum Ends {
    /// The hostile line was the answer: this output and isError.
    As(Cow<'static, str>, bool),
    /// It was dropped, and the well-formed answer after it was taken.
    Next,
    /// Nothing was taken: the call timed out.
    TimedOut,
}

/// The well-formed answer that follows every hostile one.
const NEXT: &str = "{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"next\"}]}}\n";

/// An answer line with this `result`.
fn answer(result: &str) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"result\":{result}}}\n")
}

/// A plain text answer.
fn text_answer(text: &str) -> String {
    answer(&format!(
        "{{\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}}"
    ))
}

/// An answer line with this `error`.
fn error_answer(error: &str) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"error\":{error}}}\n")
}

/// What a hostile or buggy server may write to a tools/call (the writes
/// of direct_server.py's `hostile`: text with @ID@ for the id and @xHH@
/// for a raw byte, or a pause in ms), and how the call ends.
fn hostile_cases() -> Vec<(&'static str, Vec<Value>, Ends)> {
    let t = |s: String| vec![json!(s)];
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let with_text = |rest: &str| {
        answer(&format!(
            "{{\"content\":[{{\"type\":\"text\",\"text\":\"t\"}}]{rest}}}"
        ))
    };
    let big = "y".repeat(1 << 20);
    let rpc5 = "mcp server \"d\" failed at tools/call: rpc-error (code 5)";
    vec![
        // Ids.
        (
            "the same id answered twice",
            t(text_answer("first") + &text_answer("second")),
            Ends::As("first".into(), false),
        ),
        (
            "the id echoed as a string",
            t(text_answer("s").replace("\"id\":@ID@", "\"id\":\"@ID@\"")),
            Ends::As("s".into(), false),
        ),
        (
            "the id as a float",
            t(text_answer("f").replace("@ID@", "@ID@.0")),
            Ends::As("f".into(), false),
        ),
        (
            "the id in exponent form",
            t(text_answer("e").replace("@ID@", "@ID@e0")),
            Ends::As("e".into(), false),
        ),
        (
            "the id as a string with a plus sign",
            t(text_answer("p").replace("\"id\":@ID@", "\"id\":\"+@ID@\"")),
            Ends::Next,
        ),
        (
            "the id as a string with a leading zero",
            t(text_answer("z").replace("\"id\":@ID@", "\"id\":\"0@ID@\"")),
            Ends::Next,
        ),
        (
            "the id as a string with a space",
            t(text_answer("x").replace("\"id\":@ID@", "\"id\":\" @ID@\"")),
            Ends::Next,
        ),
        (
            "an id nobody asked for",
            t(text_answer("x").replace("@ID@", "@ID@7")),
            Ends::Next,
        ),
        (
            "the id negated",
            t(text_answer("x").replace("@ID@", "-@ID@")),
            Ends::Next,
        ),
        (
            "a null id",
            t(text_answer("x").replace("@ID@", "null")),
            Ends::Next,
        ),
        (
            "an id out of range",
            t(text_answer("x").replace("@ID@", "1e400")),
            Ends::Next,
        ),
        // The result.
        (
            "a result that is an array",
            t(answer("[[{\"type\":\"text\",\"text\":\"in an array\"}]]")),
            Ends::As("".into(), false),
        ),
        (
            "a result that is an array of its fields in order",
            t(answer("[[{\"type\":\"text\",\"text\":\"in an array\"}],null,null]")),
            Ends::As("".into(), false),
        ),
        ("a result that is a string", t(answer("\"str\"")), Ends::As("".into(), false)),
        ("a result that is a number", t(answer("5")), Ends::As("".into(), false)),
        ("a null result", t(answer("null")), Ends::As("".into(), false)),
        (
            "content that is an object",
            t(answer("{\"content\":{\"type\":\"text\",\"text\":\"x\"}}")),
            Ends::As("".into(), false),
        ),
        (
            "a content part that is an array",
            t(answer("{\"content\":[[\"text\",\"in a list\"]]}")),
            Ends::As("".into(), false),
        ),
        (
            "a part of an unknown type",
            t(answer(
                "{\"content\":[{\"type\":\"video\",\"text\":\"v\"},{\"type\":\"text\",\"text\":\"t\"}]}",
            )),
            Ends::As("t".into(), false),
        ),
        (
            "a text that is not a string",
            t(answer(
                "{\"content\":[{\"type\":\"text\",\"text\":5},{\"type\":\"text\",\"text\":\"t\"}]}",
            )),
            Ends::As("t".into(), false),
        ),
        (
            "isError that is a string",
            t(with_text(",\"isError\":\"true\"")),
            Ends::As("t".into(), false),
        ),
        (
            "a text with invalid UTF-8",
            t(text_answer("a@xff@b")),
            Ends::Next,
        ),
        (
            "a text with a lone surrogate",
            t(text_answer("\\ud800")),
            Ends::Next,
        ),
        (
            "structuredContent nested 10,000 deep",
            t(with_text(&format!(",\"structuredContent\":{deep}"))),
            Ends::Next,
        ),
        (
            "structuredContent with a number out of range",
            t(with_text(",\"structuredContent\":{\"n\":1e400}")),
            Ends::Next,
        ),
        (
            "structuredContent with a repeated key",
            t(with_text(",\"structuredContent\":{\"a\":1,\"b\":2,\"a\":3}")),
            Ends::As("{\"a\":3,\"b\":2}".into(), false),
        ),
        // Fields nobody reads still have to be JSON a tree can hold.
        (
            "an unknown result field nested 10,000 deep",
            t(with_text(&format!(",\"_meta\":{{\"k\":{deep}}}"))),
            Ends::Next,
        ),
        (
            "an unknown result field out of range",
            t(with_text(",\"extra\":1e400")),
            Ends::Next,
        ),
        (
            "an unknown result field with invalid UTF-8",
            t(with_text(",\"_meta\":{\"k\":\"@xff@\"}")),
            Ends::Next,
        ),
        (
            "an unknown result field with a lone surrogate",
            t(with_text(",\"_meta\":{\"k\":\"\\udc00\"}")),
            Ends::Next,
        ),
        (
            "a part's unknown field out of range",
            t(answer(
                "{\"content\":[{\"type\":\"text\",\"text\":\"t\",\"annotations\":{\"priority\":1e400}}]}",
            )),
            Ends::Next,
        ),
        (
            "a part's unknown field with invalid UTF-8",
            t(answer(
                "{\"content\":[{\"type\":\"text\",\"text\":\"t\",\"x\":\"@xff@\"}]}",
            )),
            Ends::Next,
        ),
        // Result and error.
        (
            "both result and error",
            t(text_answer("x").replace(
                ",\"result\"",
                ",\"error\":{\"code\":5,\"message\":\"m\"},\"result\"",
            )),
            Ends::Next,
        ),
        (
            "an error with data",
            t(error_answer(
                "{\"code\":5,\"message\":\"m\",\"data\":[1e300,\"x\"]}",
            )),
            Ends::As(rpc5.into(), true),
        ),
        (
            "an error whose code is a string",
            t(error_answer("{\"code\":\"5\",\"message\":\"m\"}")),
            Ends::Next,
        ),
        (
            "an error whose code is a fraction",
            t(error_answer("{\"code\":5.5,\"message\":\"m\"}")),
            Ends::Next,
        ),
        (
            "an error whose code is past i32",
            t(error_answer("{\"code\":2147483648,\"message\":\"m\"}")),
            Ends::Next,
        ),
        (
            "an error without a message",
            t(error_answer("{\"code\":5}")),
            Ends::Next,
        ),
        (
            "an error that is a string",
            t(error_answer("\"boom\"")),
            Ends::Next,
        ),
        ("a null error", t(error_answer("null")), Ends::Next),
        (
            "a part with its text repeated",
            t(answer(
                "{\"content\":[{\"type\":\"text\",\"text\":\"a\",\"text\":\"b\"}]}",
            )),
            Ends::As("b".into(), false),
        ),
        (
            "escaped keys and type",
            t(answer(
                "{\"\\u0063ontent\":[{\"\\u0074ype\":\"te\\u0078t\",\"text\":\"esc\"}]}",
            )),
            Ends::As("esc".into(), false),
        ),
        (
            "an escaped NUL and line separator in the text",
            t(text_answer("\\u0000 \\u2028")),
            Ends::As("\u{0} \u{2028}".into(), false),
        ),
        (
            "a raw control character in the text",
            t(text_answer("a@x01@b")),
            Ends::Next,
        ),
        (
            "an id that is true",
            t(text_answer("x").replace("@ID@", "true")),
            Ends::Next,
        ),
        (
            "an id with a fraction",
            t(text_answer("x").replace("@ID@", "@ID@.5")),
            Ends::Next,
        ),
        // Other traffic with the call's id or beside it.
        (
            "a request from the server with the call's id",
            t("{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"method\":\"ping\"}\n".into()),
            Ends::Next,
        ),
        (
            "a notification before the answer",
            t("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"hi\"}}\n".to_string()
                + &text_answer("after note")),
            Ends::As("after note".into(), false),
        ),
        (
            "lines that are no message before the answer",
            t("garbage\n7\n[]\n{}\n\"x\"\n{\"jsonrpc\":\n".to_string() + &text_answer("after junk")),
            Ends::As("after junk".into(), false),
        ),
        // Lenient as rmcp's path is (`lines::fast_call_result` reads a
        // null `error` or `method` as absent, and skips top-level fields it
        // does not know), where rmcp's own parse drops the answer.
        (
            "a null error beside the result",
            t(with_text("").replace("}}\n", "},\"error\":null}\n")),
            Ends::As("t".into(), false),
        ),
        (
            "a null method beside the result",
            t(with_text("").replace(",\"result\"", ",\"method\":null,\"result\""))
            ,
            Ends::As("t".into(), false),
        ),
        (
            "an unknown top-level field out of range",
            t(with_text("").replace(",\"result\"", ",\"x\":1e400,\"result\"")),
            Ends::As("t".into(), false),
        ),
        // Framing.
        (
            "a line of only whitespace",
            t(" \t \r\n".to_string() + &text_answer("after")),
            Ends::As("after".into(), false),
        ),
        (
            "an answer split across two writes",
            vec![
                json!("{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"result\":{\"cont"),
                json!(100),
                json!("ent\":[{\"type\":\"text\",\"text\":\"split\"}]}}\n"),
            ],
            Ends::As("split".into(), false),
        ),
        (
            "two answers in one write, a stray one first",
            t(text_answer("stray").replace("@ID@", "@ID@7") + &text_answer("real")),
            Ends::As("real".into(), false),
        ),
        (
            "a character split across two writes",
            vec![
                json!("{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"@xc3@"),
                json!(50),
                json!("@xa9@\"}]}}\n"),
            ],
            Ends::As("\u{e9}".into(), false),
        ),
        (
            "an answer in writes of 7 bytes",
            text_answer("trickle")
                .as_bytes()
                .chunks(7)
                .map(|c| json!(String::from_utf8_lossy(c)))
                .collect(),
            Ends::As("trickle".into(), false),
        ),
        (
            "a 1 MiB text, across many reads",
            t(text_answer(&big)),
            Ends::As(big.clone().into(), false),
        ),
        (
            "an answer with a byte-order mark",
            t("\u{feff}".to_string() + &text_answer("bom")),
            Ends::As("bom".into(), false),
        ),
        (
            "an answer ending in CRLF",
            t(text_answer("crlf").replace("}\n", "}\r\n")),
            Ends::As("crlf".into(), false),
        ),
        (
            "an answer with trailing garbage",
            t(text_answer("x").replace("}\n", "}x\n")),
            Ends::Next,
        ),
        (
            "jsonrpc missing",
            t(text_answer("x").replace("\"jsonrpc\":\"2.0\",", "")),
            Ends::Next,
        ),
        (
            "jsonrpc 1.0",
            t(text_answer("x").replace("2.0", "1.0")),
            Ends::Next,
        ),
        (
            "a method beside the result",
            t(text_answer("x").replace(",\"result\"", ",\"method\":\"m\",\"result\"")),
            Ends::Next,
        ),
        (
            "jsonrpc 1.0 and nothing after it",
            t(text_answer("x").replace("2.0", "1.0")),
            Ends::TimedOut,
        ),
    ]
}

/// `hostile` with `a`: whatever it ends in, within a bounded while.
async fn hostile_call(
    s: &Session,
    what: &str,
    a: &Map<String, Value>,
    patience: Duration,
) -> ToolResult {
    let call = s.call_tool("hostile", a.clone(), patience, None);
    tokio::time::timeout(patience + Duration::from_secs(30), call)
        .await
        .unwrap_or_else(|_| panic!("{what}: the call hung"))
}

#[test]
fn hostile_answers_end_alike_on_both_paths_and_the_session_goes_on() {
    let cases = hostile_cases();
    // A call that must time out waits 400 ms (the server never answers it,
    // so load cannot end it otherwise); every other call ends on the line
    // the server writes, so it gets a patience load never runs out.
    let short = Duration::from_millis(400);
    let generous = Duration::from_secs(30);
    runtime::block_on(async {
        let (direct, rmcp) = tokio::join!(open(true, 20000), open(false, 20000));
        let mut wrong = Vec::new();
        for (what, writes, ends) in cases {
            let mut writes = writes;
            if !matches!(ends, Ends::TimedOut) {
                writes.push(json!(NEXT));
            }
            let a = args(json!({ "writes": writes }));
            let patience = match ends {
                Ends::TimedOut => short,
                _ => generous,
            };
            let (ours, theirs) = tokio::join!(
                hostile_call(&direct, what, &a, patience),
                hostile_call(&rmcp, what, &a, patience)
            );
            let expected = match ends {
                Ends::As(ref output, is_error) => (output.as_ref(), is_error),
                Ends::Next => ("next", false),
                Ends::TimedOut => (
                    "mcp server \"d\" failed at tools/call: timeout (no answer within 400 ms)",
                    true,
                ),
            };
            for (path, r) in [("direct", &ours), ("rmcp", &theirs)] {
                if (r.output.as_str(), r.is_error) != expected {
                    wrong.push(format!("{what}: {path} gave {}", r.to_json_string()));
                }
            }
            if ours.to_json_string() != theirs.to_json_string() {
                wrong.push(format!("{what}: the paths differ"));
            }
            if direct.direct_pending() != Some(0) {
                wrong.push(format!("{what}: a direct call left pending"));
            }
            // The session goes on.
            let (a, b) = tokio::join!(
                call(&direct, "echo", json!({"text": "after"})),
                call(&rmcp, "echo", json!({"text": "after"}))
            );
            for r in [a, b] {
                if (r.output.as_str(), r.is_error) != ("after", false) {
                    wrong.push(format!("{what}: the next call gave {}", r.to_json_string()));
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        direct.close().await;
        rmcp.close().await;
    });
}

#[test]
fn a_server_that_exits_mid_answer_ends_the_call_alike_on_both_paths() {
    runtime::block_on(async {
        let (direct, rmcp) = tokio::join!(open(true, 20000), open(false, 20000));
        let half = "{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"result\":{\"content\":[{\"ty";
        let a = args(json!({"writes": [half, {"exit": 3}]}));
        let patience = Duration::from_secs(5);
        let (ours, theirs) = tokio::join!(
            hostile_call(&direct, "exit", &a, patience),
            hostile_call(&rmcp, "exit", &a, patience)
        );
        assert_eq!(ours.to_json_string(), theirs.to_json_string());
        assert!(ours.is_error);
        assert_eq!(
            ours.output,
            "mcp server \"d\" failed at tools/call: peer-exited (status 3)"
        );
        assert_eq!(direct.direct_pending(), Some(0));
        // The session is over: the next call says why at once.
        let (a, b) = tokio::join!(
            call(&direct, "echo", json!({"text": "x"})),
            call(&rmcp, "echo", json!({"text": "x"}))
        );
        assert_eq!(a.to_json_string(), b.to_json_string());
        assert_eq!(a.output, ours.output);
        direct.close().await;
        rmcp.close().await;
    });
}

#[test]
fn every_tools_call_carries_a_progress_token_unless_the_server_turns_it_off() {
    runtime::block_on(async {
        for go_direct in [true, false] {
            let s = open(go_direct, 20000).await;
            let raw = call(&s, "raw", json!({"k": "v"})).await;
            let line: Value = serde_json::from_str(&raw.output.replace("ID", "0"))
                .unwrap_or_else(|e| panic!("{e}: {}", raw.output));
            let token = &line["params"]["_meta"]["progressToken"];
            match go_direct {
                // Ours: a string, never one of rmcp's numbers.
                true => assert!(
                    token.as_str().is_some_and(|t| t.starts_with("tn-")),
                    "{line}"
                ),
                false => assert!(token.is_u64(), "{line}"),
            }
            s.close().await;
            let s = open_with(go_direct, 20000, json!({"resetTimeoutOnProgress": false})).await;
            let raw = call(&s, "raw", json!({"k": "v"})).await;
            assert!(!raw.output.contains("_meta"), "{}", raw.output);
            s.close().await;
        }
    });
}
