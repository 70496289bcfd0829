//! The served stdio transport's fast path: once a session is initialized, a
//! plain `tools/call` or `tools/list` line is run and answered by the
//! transport itself, not by rmcp's service. Driven over JSON-RPC lines
//! (`serve_lines` on an in-memory pipe) with the lines a client writes.

mod mcp_support;
mod quiet_panic;

use mcp_support::*;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use toolnexus::mcp_server::{self, CallEvent, OnCall, Profile};
use toolnexus::tool::{ExecContext, Source, Tool, ToolResult};
use toolnexus::toolkit::Toolkit;

type Lines = tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>;

/// One client session over `serve_lines`.
struct Session {
    server: mcp_server::Server,
    to: Option<tokio::io::WriteHalf<tokio::io::DuplexStream>>,
    from: Lines,
    calls: Arc<Mutex<Vec<CallEvent>>>,
    /// Lines read while waiting for another answer.
    seen: Vec<String>,
}

impl Session {
    fn start(tk: &Arc<Toolkit>, profile: &Profile) -> Session {
        let calls: Arc<Mutex<Vec<CallEvent>>> = Arc::default();
        let sink = Arc::clone(&calls);
        let on_call: OnCall = Arc::new(move |e: &CallEvent| {
            if let Ok(mut v) = sink.lock() {
                v.push(e.clone());
            }
        });
        let (client, server_end) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(server_end);
        let server = mcp_server::serve_lines(Arc::clone(tk), profile, Some(on_call), read, write);
        let (from, to) = tokio::io::split(client);
        Session {
            server,
            to: Some(to),
            from: tokio::io::BufReader::new(from).lines(),
            calls,
            seen: Vec::new(),
        }
    }

    async fn send(&mut self, line: &str) {
        self.send_bytes(line.as_bytes()).await;
    }

    /// One line of any bytes (a newline added).
    async fn send_bytes(&mut self, line: &[u8]) {
        if let Some(to) = self.to.as_mut() {
            let line = [line, b"\n"].concat();
            to.write_all(&line).await.unwrap_or_else(|e| panic!("{e}"));
        }
    }

    /// The next line the server writes (None at its end), within a bounded
    /// while.
    async fn next_line(&mut self) -> Option<String> {
        tokio::time::timeout(Duration::from_secs(30), self.from.next_line())
            .await
            .unwrap_or_else(|_| panic!("no line from the server; saw {:?}", self.seen))
            .ok()
            .flatten()
    }

    /// The raw line answering `id`, keeping every other line in `seen`.
    async fn answer(&mut self, id: &Value) -> String {
        if let Some(i) = self.seen.iter().position(|l| answers(l, id)) {
            return self.seen.remove(i);
        }
        loop {
            let line = self
                .next_line()
                .await
                .unwrap_or_else(|| panic!("the server ended before answering {id}"));
            if answers(&line, id) {
                return line;
            }
            self.seen.push(line);
        }
    }

    /// `initialize` with `version`, then `notifications/initialized`.
    async fn open(&mut self, version: &str) -> Value {
        let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "lines", "version": "0"}}});
        self.send(&init.to_string()).await;
        let answer = self.answer(&json!("init")).await;
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        serde_json::from_str(&answer).unwrap_or_default()
    }

    /// Ends the input and reads what the server still writes until it
    /// closes its output.
    async fn close_and_drain(&mut self) -> Vec<String> {
        if let Some(mut to) = self.to.take() {
            let _ = to.shutdown().await;
        }
        let mut rest = std::mem::take(&mut self.seen);
        while let Some(line) = self.next_line().await {
            rest.push(line);
        }
        rest
    }

    fn events(&self) -> Vec<CallEvent> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

fn answers(line: &str, id: &Value) -> bool {
    let v: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("the server wrote a line that is not JSON ({e}): {line:?}"));
    &v["id"] == id && (v.get("result").is_some() || v.get("error").is_some())
}

fn native(
    name: &str,
    run: impl Fn(&Value, &ExecContext) -> ToolResult + Send + Sync + 'static,
) -> Tool {
    Tool::new(
        name,
        "A host tool of the test.",
        Some(json!({"type": "object"})),
        Source::Native,
        Arc::new(run),
    )
}

/// A toolkit with the builtins, the lean line server of
/// tests/mcp_servers/cancel_report.py (`slow_ping`), and host tools.
fn toolkit() -> Arc<Toolkit> {
    let server =
        json!({"command": [python(), server_script("cancel_report.py")], "timeout": 20000});
    let tk = Toolkit::build_from_json(
        &json!({"mcpConfig": {"mcpServers": {"slow": server}}}).to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    tk.register(native("shout", |args, _| {
        let text = args["text"].as_str().unwrap_or_default();
        if text == "boom" {
            ToolResult::error("it went boom")
        } else {
            ToolResult::ok(text.to_uppercase())
        }
    }));
    tk.register(native("host_panics", |_, _| {
        quiet_panic::quietly(|| panic!("the host tool blew up"))
    }));
    Arc::new(tk)
}

/// `line` with its id replaced, to compare two answers modulo id.
fn with_id(line: &str, from: &str, to: &str) -> String {
    line.replacen(
        &format!("\"id\":\"{from}\""),
        &format!("\"id\":\"{to}\""),
        1,
    )
}

#[test]
fn a_plain_line_gets_the_bytes_rmcp_writes_for_the_same_request() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("small.txt");
    std::fs::write(&file, "sixty bytes or so\n").unwrap_or_else(|e| panic!("{e}"));
    let tk = toolkit();
    let profile = Profile {
        tools: Some(
            ["read", "slow_ping", "shout", "host_panics"]
                .map(String::from)
                .to_vec(),
        ),
        ..Profile::default()
    };
    // (params of a tools/call, or None for a tools/list)
    let cases: Vec<Option<Value>> = vec![
        Some(json!({"name": "read", "arguments": {"path": file}})),
        Some(json!({"name": "slow_ping", "arguments": {}})),
        Some(json!({"name": "shout", "arguments": {"text": "a\"b\u{e9}"}})),
        Some(json!({"name": "shout", "arguments": {"text": "boom"}})),
        Some(json!({"name": "shout"})),
        Some(json!({"name": "host_panics", "arguments": {}})),
        Some(json!({"name": "nope", "arguments": {}})),
        // Known to the toolkit, not exposed by the profile.
        Some(json!({"name": "bash", "arguments": {"command": "echo no"}})),
        None,
    ];
    // Each version rmcp can negotiate over `initialize` (2026-07-28 has
    // none: rmcp answers with its newest that has), and one it does not
    // know.
    for version in [
        "2024-11-05",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
        "1999-01-01",
    ] {
        let mut s = Session::start(&tk, &profile);
        toolnexus::runtime::block_on(async {
            let init = s.open(version).await;
            assert!(init["result"]["serverInfo"].is_object(), "{init}");
            for (i, params) in cases.iter().enumerate() {
                let (fast_id, rmcp_id) = (format!("f{i}"), format!("r{i}"));
                let (plain, via_rmcp) = match params {
                    Some(p) => {
                        let mut meta = p.clone();
                        meta["_meta"] = json!({});
                        (
                            json!({"jsonrpc": "2.0", "id": fast_id, "method": "tools/call", "params": p}),
                            json!({"jsonrpc": "2.0", "id": rmcp_id, "method": "tools/call", "params": meta}),
                        )
                    }
                    None => (
                        json!({"jsonrpc": "2.0", "id": fast_id, "method": "tools/list"}),
                        json!({"jsonrpc": "2.0", "id": rmcp_id, "method": "tools/list", "params": {"_meta": {}}}),
                    ),
                };
                s.send(&plain.to_string()).await;
                s.send(&via_rmcp.to_string()).await;
                let fast = s.answer(&json!(fast_id)).await;
                let rmcp = s.answer(&json!(rmcp_id)).await;
                assert_eq!(
                    with_id(&fast, &fast_id, &rmcp_id),
                    rmcp,
                    "{version}, {plain}"
                );
                let v: Value = serde_json::from_str(&fast).unwrap_or_default();
                match i {
                    0 => assert!(
                        v["result"]["content"][0]["text"]
                            .as_str()
                            .unwrap_or_default()
                            .contains("sixty bytes"),
                        "{v}"
                    ),
                    1 => assert_eq!(v["result"]["content"][0]["text"], json!("pong"), "{v}"),
                    2 => assert_eq!(
                        v["result"]["content"][0]["text"],
                        json!("A\"B\u{c9}"),
                        "{v}"
                    ),
                    3 | 5 => assert_eq!(v["result"]["isError"], json!(true), "{v}"),
                    4 => assert_eq!(v["result"]["isError"], json!(false), "{v}"),
                    6 | 7 => assert_eq!(v["error"]["code"], json!(-32602), "{v}"),
                    _ => assert_eq!(
                        v["result"]["tools"].as_array().map(Vec::len),
                        Some(4),
                        "{v}"
                    ),
                }
            }
            // The server lived through the panicking tool.
            s.send(r#"{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"shout","arguments":{"text":"still"}}}"#).await;
            let last: Value =
                serde_json::from_str(&s.answer(&json!("last")).await).unwrap_or_default();
            assert_eq!(last["result"]["content"][0]["text"], json!("STILL"));
            assert!(s.close_and_drain().await.is_empty());
        });
        // One event per call that reached a tool, either way: six calls
        // twice, and the last one.
        let events = s.events();
        assert_eq!(events.len(), 13, "{version}: {events:?}");
        assert_eq!(
            events.iter().filter(|e| e.is_error).count(),
            4,
            "{version}: {events:?}"
        );
        assert!(s.server.wait_for(Some(Duration::from_secs(20))));
    }
}

/// Where a parse error says the line went wrong.
fn parse_error_column(answer: &str) -> Option<usize> {
    let v: Value = serde_json::from_str(answer).ok()?;
    let message = v["error"]["message"].as_str()?;
    message.strip_prefix("parse error: ")?;
    message.rsplit_once("column ")?.1.parse().ok()
}

/// `line` as rmcp's parse alone takes it: an empty `_meta` in its params
/// keeps it off the fast path and means nothing to the tool.
fn via_rmcp(line: &[u8]) -> Option<Vec<u8>> {
    let at = line.windows(10).position(|w| w == br#""params":{"#)? + 10;
    Some([&line[..at], br#""_meta":{},"#, &line[at..]].concat())
}

#[test]
fn a_tricky_plain_line_gets_the_bytes_rmcp_writes_for_it() {
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    tk.register(native("shout", |args, _| {
        ToolResult::ok(args["text"].as_str().unwrap_or("no text").to_uppercase())
    }));
    let call = |id: &str, params: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#)
            .into_bytes()
    };
    let plain = r#"{"name":"shout","arguments":{"text":"x"}}"#;
    // (the line, the id its answer carries, what the answer says)
    let mut cases: Vec<(Vec<u8>, Value, Value)> = Vec::new();
    let shouted = |t: &str| json!({"content": [{"type": "text", "text": t}], "isError": false});
    for (id, answered) in [
        ("\"s\"", json!("s")),
        ("\"\"", json!("")),
        ("\"\\u00e9\"", json!("\u{e9}")),
        ("7.0", json!(7)),
        ("8e0", json!(8)),
        ("-7", json!(-7)),
        ("-0", json!(0)),
        ("9223372036854775807", json!(i64::MAX)),
        ("-9223372036854775808", json!(i64::MIN)),
    ] {
        cases.push((call(id, plain), answered, shouted("X")));
    }
    let invalid = json!({"code": -32600});
    // A tools/call whose params rmcp cannot read: an error, whatever its
    // code (rmcp says -32601 and the method name, where JSON-RPC has
    // -32602 for invalid params; not pinned here).
    let unknown = json!({"code": "any"});
    for (id, answered) in [
        ("9223372036854775808", json!(9_223_372_036_854_775_808_u64)),
        ("7.5", json!(7.5)),
        ("null", Value::Null),
    ] {
        cases.push((call(id, plain), answered, invalid.clone()));
    }
    for (params, says) in [
        (
            r#"{"name":"shout","arguments":{"text":"a","text":"b"}}"#,
            shouted("B"),
        ),
        (
            r#"{"name":"shout","arguments":{"text":"a","n":1,"text":"c"}}"#,
            shouted("C"),
        ),
        (
            r#"{"\u006eame":"sh\u006fut","arguments":{"t\u0065xt":"\ud83d\ude00 \u00e9"}}"#,
            shouted("\u{1F600} \u{c9}"),
        ),
        (
            r#"{"name":"shout","arguments":{"text":"n","n":123456789012345678901234567890,"f":-0.0}}"#,
            shouted("N"),
        ),
        (r#"{"name":"shout","arguments":null}"#, shouted("NO TEXT")),
        (r#"{"name":"shout","arguments":[1,2]}"#, unknown.clone()),
        (r#"{"name":"shout","arguments":"x"}"#, unknown.clone()),
        (
            r#"{"name":"shout","arguments":{},"extra":1}"#,
            shouted("NO TEXT"),
        ),
        (r#"{"name":"shout","name":"other"}"#, unknown.clone()),
    ] {
        cases.push((call("1", params), json!(1), says));
    }
    // Not JSON a tree can hold: a parse error, without an id.
    for params in [
        r#"{"name":"shout","arguments":{"text":"\ud800"}}"#,
        r#"{"name":"shout","arguments":{"n":1e400}}"#,
    ] {
        cases.push((call("1", params), Value::Null, json!({"code": -32700})));
    }
    cases.push((
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shout\",\"arguments\":{\"text\":\"\xff\"}}}".to_vec(),
        Value::Null,
        json!({"code": -32700}),
    ));
    let mut s = Session::start(&tk, &Profile::default());
    let mut wrong = Vec::new();
    toolnexus::runtime::block_on(async {
        s.open("2025-06-18").await;
        for (line, id, says) in &cases {
            let shown = String::from_utf8_lossy(line).into_owned();
            s.send_bytes(line).await;
            let fast = s.answer(id).await;
            let Some(rmcp_line) = via_rmcp(line) else {
                panic!("no params in {shown}");
            };
            s.send_bytes(&rmcp_line).await;
            let rmcp = s.answer(id).await;
            // A parse error says where: 11 bytes on in the line with `_meta`.
            let rmcp = match parse_error_column(&rmcp) {
                Some(at) => rmcp.replace(&format!("column {at}"), &format!("column {}", at - 11)),
                None => rmcp,
            };
            if fast != rmcp {
                wrong.push(format!("{shown}:\n  fast {fast}\n  rmcp {rmcp}"));
            }
            let v: Value = serde_json::from_str(&fast).unwrap_or_default();
            let got = match says.get("code") {
                Some(code) if code == "any" && v["error"]["code"].is_i64() => says.clone(),
                Some(_) => json!({"code": v["error"]["code"]}),
                None => v["result"].clone(),
            };
            if &got != says {
                wrong.push(format!("{shown}: says {fast}"));
            }
        }
        // A call whose params are an array is no call: rmcp's answer.
        s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":["shout",{"text":"x"}]}"#)
            .await;
        let v: Value = serde_json::from_str(&s.answer(&json!(2)).await).unwrap_or_default();
        assert_eq!(v["error"]["code"], json!(-32600), "{v}");
        // Nor is a line that is an array of a call's fields in order: a
        // batch of four values that are no requests, answered as JSON-RPC
        // 2.0 answers such a batch, four invalid requests, id null.
        s.send(r#"["2.0",3,"tools/call",{"name":"shout","arguments":{"text":"x"}}]"#)
            .await;
        let line = s.next_line().await.unwrap_or_default();
        let v: Value = serde_json::from_str(&line).unwrap_or_default();
        let codes: Vec<Value> = v
            .as_array()
            .map(|a| a.iter().map(|m| m["error"]["code"].clone()).collect())
            .unwrap_or_default();
        assert_eq!(codes, vec![json!(-32600); 4], "{v}");
        assert!(s.close_and_drain().await.is_empty());
    });
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn thirty_two_concurrent_plain_calls_each_get_their_own_answer() {
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    // Each call waits (a bounded while) until all 32 are running at once:
    // answered only if they run side by side.
    let running = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&running);
    tk.register(native("gather", move |args, _| {
        count.fetch_add(1, Ordering::SeqCst);
        let until = Instant::now() + Duration::from_secs(20);
        while count.load(Ordering::SeqCst) < 32 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let n = args["n"].as_u64().unwrap_or(0);
        if count.load(Ordering::SeqCst) >= 32 {
            ToolResult::ok(format!("call {n} met all 32"))
        } else {
            ToolResult::error(format!("call {n} ran alone"))
        }
    }));
    let mut s = Session::start(&tk, &Profile::default());
    toolnexus::runtime::block_on(async {
        s.open("2025-06-18").await;
        let mut burst = String::new();
        for n in 0..32 {
            burst.push_str(
                &json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                        "params": {"name": "gather", "arguments": {"n": n}}})
                .to_string(),
            );
            burst.push('\n');
        }
        s.send(burst.trim_end()).await;
        for n in (0..32).rev() {
            let v: Value = serde_json::from_str(&s.answer(&json!(n)).await).unwrap_or_default();
            assert_eq!(
                v["result"],
                json!({"content": [{"type": "text", "text": format!("call {n} met all 32")}], "isError": false}),
                "{v}"
            );
        }
        assert!(s.close_and_drain().await.is_empty());
    });
    assert_eq!(s.events().len(), 32);
}

/// A host tool that runs until it is cancelled (at most 20 s), noting
/// whether it saw the cancel.
fn until_cancelled(tk: &Toolkit, started: &Arc<AtomicBool>, saw: &Arc<AtomicBool>) {
    let (started, saw) = (Arc::clone(started), Arc::clone(saw));
    tk.register(native("wait", move |_, ctx| {
        started.store(true, Ordering::SeqCst);
        let until = Instant::now() + Duration::from_secs(20);
        while Instant::now() < until {
            if ctx.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
                saw.store(true, Ordering::SeqCst);
                return ToolResult::error("cancelled");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        ToolResult::ok("never cancelled")
    }));
}

async fn until(flag: &AtomicBool) -> bool {
    let end = tokio::time::Instant::now() + Duration::from_secs(20);
    while !flag.load(Ordering::SeqCst) && tokio::time::Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    flag.load(Ordering::SeqCst)
}

#[test]
fn a_cancelled_plain_call_sees_the_cancel_and_gets_no_answer() {
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    let (started, saw) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    until_cancelled(&tk, &started, &saw);
    let mut s = Session::start(&tk, &Profile::default());
    let rest = toolnexus::runtime::block_on(async {
        s.open("2025-06-18").await;
        s.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait","arguments":{}}}"#)
            .await;
        assert!(until(&started).await, "the call never started");
        // A cancel naming no running call goes to rmcp, which ignores it.
        s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}"#)
            .await;
        s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"enough"}}"#)
            .await;
        assert!(until(&saw).await, "the tool never saw the cancel");
        // The same id again is a new call, answered.
        let (started_again, saw_again) = (Arc::clone(&started), Arc::clone(&saw));
        started_again.store(false, Ordering::SeqCst);
        saw_again.store(false, Ordering::SeqCst);
        s.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read","arguments":{"path":"/nonexistent/x"}}}"#)
            .await;
        let again: Value = serde_json::from_str(&s.answer(&json!(5)).await).unwrap_or_default();
        assert_eq!(again["result"]["isError"], json!(true), "{again}");
        s.close_and_drain().await
    });
    // Nothing else was written: no answer for the cancelled call, none for
    // the cancel of an unknown id.
    assert!(rest.is_empty(), "{rest:?}");
    let events = s.events();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events.iter().all(|e| e.is_error), "{events:?}");
}

/// The client's input ends while a plain call of a proxied tool runs: the
/// call is cancelled at once, the proxied server hears
/// notifications/cancelled (its stdin stays open: the toolkit lives on),
/// and the server ends without rmcp's 5 s wait for answers.
#[test]
fn the_input_ending_mid_call_cancels_the_call_after_the_grace_and_tells_its_server() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (started, cancelled) = (dir.path().join("started"), dir.path().join("cancelled"));
    let tk = toolkit();
    let (host_started, host_saw) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    until_cancelled(&tk, &host_started, &host_saw);
    let mut s = Session::start(&tk, &Profile::default());
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "slow_ping", "arguments": {"hang": true, "started": started, "cancelled": cancelled}}});
    let ended = toolnexus::runtime::block_on(async {
        s.open("2025-06-18").await;
        s.send(&call.to_string()).await;
        s.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait","arguments":{}}}"#)
            .await;
        let end = tokio::time::Instant::now() + Duration::from_secs(20);
        while !started.exists() && tokio::time::Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(until(&host_started).await, "the host call never started");
        let closed = Instant::now();
        // Answers may still come (the client only closed its input); each
        // is the cancelled call's error result.
        let rest = s.close_and_drain().await;
        for line in &rest {
            let v: Value = serde_json::from_str(line).unwrap_or_default();
            assert_eq!(v["result"]["isError"], json!(true), "{v}");
        }
        closed
    });
    assert!(started.exists(), "the proxied call never started");
    assert!(
        s.server.wait_for(Some(Duration::from_secs(20))),
        "the server never ended after its input did"
    );
    // Not a speed figure: rmcp alone waits 5 s for answers before it
    // cancels anything; the fast path cancels a call still running
    // EOF_GRACE (1 s) after the input ended.
    assert!(
        ended.elapsed() < Duration::from_secs(4),
        "{:?}",
        ended.elapsed()
    );
    assert!(
        host_saw.load(Ordering::SeqCst),
        "the host tool never saw the cancel"
    );
    let end = Instant::now() + Duration::from_secs(15);
    while !cancelled.exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        cancelled.exists(),
        "the proxied server never heard notifications/cancelled"
    );
}

#[test]
fn plain_and_other_lines_mixed_are_each_answered_by_whoever_takes_them() {
    let tk = toolkit();
    let mut s = Session::start(&tk, &Profile::default());
    toolnexus::runtime::block_on(async {
        // Before `initialize` answers and `initialized` comes, a plain call
        // is rmcp's (which wants `initialize` first).
        s.open("2025-11-25").await;
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shout","arguments":{"text":"one"}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"shout","arguments":{"text":"three"},"_meta":{"progressToken":7}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"c"}}"#,
            "{not json",
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":6,"nethod":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow_ping","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":8,"method":"resources/list"}"#,
            "",
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"nope"}}"#,
        ];
        s.send(&lines.join("\n")).await;
        let get = |line: String| serde_json::from_str::<Value>(&line).unwrap_or_default();
        assert_eq!(
            get(s.answer(&json!(1)).await)["result"]["content"][0]["text"],
            json!("ONE")
        );
        assert_eq!(get(s.answer(&json!(2)).await)["result"], json!({}));
        assert_eq!(
            get(s.answer(&json!(3)).await)["result"]["content"][0]["text"],
            json!("THREE")
        );
        assert!(get(s.answer(&json!(4)).await)["result"]["tools"].is_array());
        assert!(get(s.answer(&json!(5)).await)["result"]["tools"].is_array());
        assert_eq!(
            get(s.answer(&json!(6)).await)["error"]["code"],
            json!(-32600)
        );
        assert_eq!(
            get(s.answer(&json!(7)).await)["result"]["content"][0]["text"],
            json!("pong")
        );
        // rmcp's answer to a method this server does not offer.
        let other = get(s.answer(&json!(8)).await);
        assert!(
            other.get("error").is_some() || other.get("result").is_some(),
            "{other}"
        );
        assert_eq!(
            get(s.answer(&json!(9)).await)["error"]["code"],
            json!(-32602)
        );
        let parse = s.answer(&Value::Null).await;
        assert_eq!(get(parse)["error"]["code"], json!(-32700));
        assert!(s.close_and_drain().await.is_empty());
    });
    assert_eq!(s.events().len(), 3);
}

#[test]
fn a_plain_call_before_the_session_is_initialized_is_left_to_rmcp() {
    let tk = toolkit();
    let mut s = Session::start(&tk, &Profile::default());
    toolnexus::runtime::block_on(async {
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shout","arguments":{"text":"early"}}}"#;
        // No initialize: rmcp wants the request's own _meta.
        s.send(call).await;
        let early: Value = serde_json::from_str(&s.answer(&json!(1)).await).unwrap_or_default();
        assert_eq!(early["error"]["code"], json!(-32602), "{early}");
        // Initialized by rmcp's answer, before notifications/initialized:
        // rmcp answers (it does not wait for the notification).
        let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "lines", "version": "0"}}});
        s.send(&init.to_string()).await;
        s.answer(&json!("init")).await;
        s.send(&call.replace("\"id\":1", "\"id\":2")).await;
        let v: Value = serde_json::from_str(&s.answer(&json!(2)).await).unwrap_or_default();
        assert_eq!(v["result"]["content"][0]["text"], json!("EARLY"), "{v}");
        assert!(s.close_and_drain().await.is_empty());
    });
    assert_eq!(s.events().len(), 1);
}

/// A call that ignores its cancel and outlives the server (which waits 5 s
/// for its calls once its input ended) writes nothing after the server has ended: the
/// served stdout may be back in blocking mode then, and nobody reads it.
#[test]
fn a_call_that_outlives_the_server_writes_no_answer() {
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    let (started, finished) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (on_start, on_finish) = (Arc::clone(&started), Arc::clone(&finished));
    tk.register(native("stubborn", move |_, _| {
        on_start.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(7000));
        on_finish.store(true, Ordering::SeqCst);
        ToolResult::ok("too late")
    }));
    let mut s = Session::start(&tk, &Profile::default());
    let rest = toolnexus::runtime::block_on(async {
        s.open("2025-06-18").await;
        s.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stubborn","arguments":{}}}"#)
            .await;
        assert!(until(&started).await, "the call never started");
        // Read until the server's output closes: after the call is done.
        s.close_and_drain().await
    });
    assert!(
        finished.load(Ordering::SeqCst),
        "the output closed before the call ended"
    );
    assert!(
        s.server.ended(),
        "the output closed before the server ended"
    );
    assert!(rest.is_empty(), "{rest:?}");
}
