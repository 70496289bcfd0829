//! The served toolkit against a hostile or careless world (issue 25): a
//! stop that leaves no bash job behind (M4), calls piped in with the end of
//! the input (L10), malformed JSON-RPC over HTTP (L7), and the gateway's
//! caps (M2). Driven through the `toolnexus serve` command, as a host runs
//! it, and in process.

mod quiet_panic;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolnexus::mcp_server::{self, Beside, BesideAnswer, BesideRequest, ServeConfig};
use toolnexus::toolkit::Toolkit;

const BIN: &str = env!("CARGO_BIN_EXE_toolnexus");

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn bash_call(id: u64, command: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "bash", "arguments": {"command": command}}})
    .to_string()
}

/// A job that ignores SIGTERM (the shell and the `sleep` it starts), so
/// only the SIGKILL that follows bash's 2 s grace ends it: it writes its
/// process group id (the shell leads the group) to `file` and sleeps 30 s.
fn stubborn_job(file: &Path) -> String {
    format!(
        "trap '' TERM; echo $$ > {}.tmp && mv {0}.tmp {0}; sleep 30",
        file.display()
    )
}

/// The live (not zombie) processes of process group `pgid`, from /proc.
fn live_members(pgid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) S ppid pgrp ...": the fields after the last ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 3 && fields[0] != "Z" && fields[2].parse() == Ok(pgid) {
            found.push(pid);
        }
    }
    found
}

/// Waits (at most 60 s) until every file holds a group id; the ids.
fn group_ids(files: &[PathBuf]) -> Vec<i32> {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let ids: Vec<i32> = files
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .filter_map(|t| t.trim().parse().ok())
            .collect();
        if ids.len() == files.len() {
            return ids;
        }
        assert!(Instant::now() < end, "only {} jobs started", ids.len());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ends whatever a failed run left (the groups are this test's own).
struct Reaper(Vec<i32>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for pgid in &self.0 {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(*pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

fn sigterm(child: &Child) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(0));
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
}

/// Waits (at most 60 s) for the child to exit; its status code.
fn exit_within(child: &mut Child) -> Option<i32> {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code();
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server did not exit within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_no_group_survives(ids: &[i32]) {
    let alive: Vec<(i32, Vec<i32>)> = ids
        .iter()
        .map(|g| (*g, live_members(*g)))
        .filter(|(_, m)| !m.is_empty())
        .collect();
    assert!(
        alive.is_empty(),
        "bash groups still running after the server stopped: {alive:?}"
    );
}

/// One POST to `addr`'s MCP path over a fresh connection; the raw answer.
fn post(addr: &str, body: &[u8]) -> String {
    let mut conn = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n\
         mcp-protocol-version: 2025-06-18\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body);
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// `toolnexus serve` (stdio, builtins only), its input and output piped.
fn stdio_serve() -> Child {
    Command::new(BIN)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A whole stdio session: `lines` in, the input closed, the server's exit
/// (0) awaited; its output, and each line of it that is JSON.
fn stdio_session(lines: &str) -> (String, Vec<Value>) {
    let mut child = stdio_serve();
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(lines.as_bytes());
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    assert_eq!(exit_within(&mut child), Some(0));
    let answers = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (out, answers)
}

/// `host:port` of a gateway URL (`http://host:port/mcp`).
fn host_port(url: &str) -> String {
    url.trim()
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string()
}

/// `host:port` of an in-process server.
fn served_addr(server: &mcp_server::Server) -> String {
    host_port(server.url().unwrap_or_default())
}

/// `host:port` of the URL a `toolnexus serve --http` child printed first.
fn printed_addr(child: &mut Child) -> String {
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    let addr = host_port(&line);
    assert!(addr.contains(':'), "no URL printed: {line:?}");
    addr
}

/// `toolnexus serve --http 127.0.0.1:0` with builtins only, and the
/// `host:port` it printed.
fn serve_http_cli() -> (Child, String) {
    let mut child = Command::new(BIN)
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = printed_addr(&mut child);
    (child, addr)
}

#[test]
fn sigterm_to_an_http_server_ends_the_bash_groups_of_its_calls_in_flight() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (mut child, addr) = serve_http_cli();
    let files: Vec<PathBuf> = (0..5).map(|i| dir.path().join(format!("g{i}"))).collect();
    let posts: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (addr, body) = (addr.clone(), bash_call(i as u64 + 1, &stubborn_job(f)));
            std::thread::spawn(move || post(&addr, body.as_bytes()))
        })
        .collect();
    let ids = group_ids(&files);
    let _reaper = Reaper(ids.clone());
    sigterm(&child);
    assert_eq!(exit_within(&mut child), Some(0));
    assert_no_group_survives(&ids);
    for p in posts {
        let _ = p.join();
    }
}

#[test]
fn sigterm_to_a_stdio_server_ends_the_bash_groups_of_its_calls_in_flight() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut child = Command::new(BIN)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let files: Vec<PathBuf> = (0..5).map(|i| dir.path().join(format!("g{i}"))).collect();
    let mut lines = format!("{INIT}\n{INITIALIZED}\n");
    for (i, f) in files.iter().enumerate() {
        lines.push_str(&bash_call(i as u64 + 1, &stubborn_job(f)));
        lines.push('\n');
    }
    // The input stays open: the client is there, the host stops.
    let mut stdin = child.stdin.take();
    if let Some(s) = stdin.as_mut() {
        let _ = s.write_all(lines.as_bytes());
        let _ = s.flush();
    }
    let ids = group_ids(&files);
    let _reaper = Reaper(ids.clone());
    sigterm(&child);
    assert_eq!(exit_within(&mut child), Some(0));
    assert_no_group_survives(&ids);
    drop(stdin);
}

#[test]
fn stop_in_process_waits_for_the_bash_groups_of_its_calls_in_flight() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    let (server, addr) = serve_http_with(&tk, json!({}));
    let files: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("g{i}"))).collect();
    let posts: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (addr, body) = (addr.clone(), bash_call(i as u64 + 1, &stubborn_job(f)));
            std::thread::spawn(move || post(&addr, body.as_bytes()))
        })
        .collect();
    let ids = group_ids(&files);
    let _reaper = Reaper(ids.clone());
    let stopping = Instant::now();
    server.stop();
    // Within the documented grace (plus a margin for a loaded machine).
    assert!(
        stopping.elapsed() < mcp_server::STOP_GRACE + Duration::from_secs(5),
        "{:?}",
        stopping.elapsed()
    );
    assert_no_group_survives(&ids);
    for p in posts {
        let _ = p.join();
    }
}

/// Calls piped in together with the end of the input: a client such as
/// `printf ... | toolnexus serve` wants their answers.
#[test]
fn instant_calls_piped_in_with_the_end_of_the_input_are_answered() {
    let mut lines = format!("{INIT}\n{INITIALIZED}\n");
    for i in 1..=3 {
        lines.push_str(&bash_call(i, &format!("echo hi{i}")));
        lines.push('\n');
    }
    let (out, answers) = stdio_session(&lines);
    for i in 1..=3u64 {
        let a = answers
            .iter()
            .find(|a| a["id"] == json!(i))
            .unwrap_or_else(|| panic!("no answer to {i}: {out}"));
        assert_eq!(a["result"]["isError"], json!(false), "{a}");
        assert_eq!(
            a["result"]["content"][0]["text"],
            json!(format!("hi{i}\n")),
            "{a}"
        );
    }
}

/// One POST with a raw body to an in-process server: (status,
/// Content-Type, body).
fn post_raw(addr: &str, body: &[u8]) -> (u16, String, String) {
    let answer = post(addr, body);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let content_type = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    (status, content_type, body.to_string())
}

/// L7: a body that is no JSON-RPC message gets a JSON-RPC error with the
/// code that says why (as JSON, status 400), not HTTP 415 and a line of
/// text.
#[test]
fn malformed_json_rpc_over_http_gets_a_json_rpc_error() {
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    let (server, addr) = serve_http_with(&tk, json!({}));
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let cases: Vec<(&str, Vec<u8>, Value)> = vec![
        ("bad JSON", b"{bad".to_vec(), json!(-32700)),
        ("invalid UTF-8", b"\"\xff\xfe\"".to_vec(), json!(-32700)),
        ("deep nesting", deep.into_bytes(), json!(-32700)),
        ("empty body", Vec::new(), json!(-32700)),
        (
            "no method",
            br#"{"jsonrpc":"2.0","id":4,"nethod":"x"}"#.to_vec(),
            json!(-32600),
        ),
        ("empty batch", b"[]".to_vec(), json!(-32600)),
    ];
    for (what, body, code) in cases {
        let (status, content_type, text) = post_raw(&addr, &body);
        assert_eq!(
            (status, content_type.as_str()),
            (400, "application/json"),
            "{what}: {text}"
        );
        let v: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(v["jsonrpc"], json!("2.0"), "{what}: {text}");
        assert_eq!(v["error"]["code"], code, "{what}: {text}");
        let id = if what == "no method" {
            json!(4)
        } else {
            Value::Null
        };
        assert_eq!(v["id"], id, "{what}: {text}");
    }
    // A batch: one answer per request in it (none for the notification),
    // each the invalid-request error with its id (MCP has no batches).
    let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"ping"}]"#;
    let (status, _, text) = post_raw(&addr, batch);
    assert_eq!(status, 400, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap_or_default();
    let ids: Vec<Value> = v
        .as_array()
        .map(|a| a.iter().map(|m| m["id"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(ids, vec![json!(1), json!("b")], "{text}");
    assert!(
        v.as_array()
            .is_some_and(|a| a.iter().all(|m| m["error"]["code"] == json!(-32600))),
        "{text}"
    );
    // A good request is still served.
    let (status, _, text) = post_raw(&addr, br#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#);
    assert_eq!(status, 200, "{text}");
    server.stop();
}

/// L7 on stdio: a batch line is answered as JSON-RPC 2.0 says, with an
/// array holding one answer per request in it.
#[test]
fn a_batch_on_stdio_gets_one_answer_per_request() {
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"ping"}]"#;
    let lines = format!("{INIT}\n{INITIALIZED}\n{batch}\n[]\n");
    let (out, answers) = stdio_session(&lines);
    let array = answers
        .iter()
        .find(|a| a.is_array())
        .unwrap_or_else(|| panic!("no array answer: {out}"));
    let ids: Vec<Value> = array
        .as_array()
        .map(|a| a.iter().map(|m| m["id"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(ids, vec![json!(1), json!("b")], "{out}");
    // The empty batch: one invalid request, id null.
    assert!(
        answers
            .iter()
            .any(|a| a["id"].is_null() && a["error"]["code"] == json!(-32600)),
        "{out}"
    );
}

/// An in-process HTTP server of `tk` with `extra` in its serve config; its
/// `host:port`.
fn serve_http_with(tk: &Arc<Toolkit>, extra: Value) -> (mcp_server::Server, String) {
    let mut config = json!({"addr": "127.0.0.1:0"});
    if let (Some(c), Value::Object(more)) = (config.as_object_mut(), extra) {
        c.extend(more);
    }
    let cfg = ServeConfig::from_value(&config).unwrap_or_else(|e| panic!("{e}"));
    let server = mcp_server::serve(Arc::clone(tk), &cfg, None).unwrap_or_else(|e| panic!("{e}"));
    let addr = served_addr(&server);
    (server, addr)
}

/// M2: a request over `maxRequestBytes` is refused with a JSON-RPC error
/// (413 over HTTP, announced or chunked), one within it is served.
#[test]
fn a_request_over_the_size_cap_is_refused_over_http() {
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    let (server, addr) = serve_http_with(&tk, json!({"maxRequestBytes": 1000}));
    let big = bash_call(1, &format!("echo {}", "x".repeat(2000)));
    let (status, content_type, text) = post_raw(&addr, big.as_bytes());
    assert_eq!(
        (status, content_type.as_str()),
        (413, "application/json"),
        "{text}"
    );
    let v: Value = serde_json::from_str(&text).unwrap_or_default();
    assert_eq!(v["error"]["code"], json!(-32600), "{text}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("maxRequestBytes")),
        "{text}"
    );
    // The same body chunked, without a length: refused the same way.
    let mut conn = std::net::TcpStream::connect(&addr).unwrap_or_else(|e| panic!("{e}"));
    let head = "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
                accept: application/json, text/event-stream\r\n\
                transfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    let chunk = format!("{:x}\r\n{big}\r\n0\r\n\r\n", big.len());
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(chunk.as_bytes());
    let mut answer = String::new();
    let _ = conn.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    let small = bash_call(2, "echo fits");
    let (status, _, text) = post_raw(&addr, small.as_bytes());
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("fits"), "{text}");
    server.stop();
}

/// M2 on stdio: a line over `maxRequestBytes` is answered as an invalid
/// request and skipped; the next line is served.
#[test]
fn a_line_over_the_size_cap_is_refused_on_stdio() {
    use toolnexus::mcp_server::{Profile, ServeLimits};
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    let limits = ServeLimits {
        max_request_bytes: Some(1000),
        ..ServeLimits::default()
    };
    let (client, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    let server = {
        let _inside = toolnexus::runtime::get().enter();
        mcp_server::serve_lines_limited(tk, &Profile::default(), limits, None, read, write)
    };
    let big = bash_call(1, &format!("echo {}", "x".repeat(2000)));
    let small = bash_call(2, "echo fits");
    let out = toolnexus::runtime::block_on(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut from, mut to) = tokio::io::split(client);
        let lines = format!("{INIT}\n{INITIALIZED}\n{big}\n{small}\n");
        let _ = to.write_all(lines.as_bytes()).await;
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        let end = tokio::time::Instant::now() + Duration::from_secs(30);
        while out.iter().filter(|b| **b == b'\n').count() < 3 && tokio::time::Instant::now() < end {
            match tokio::time::timeout(Duration::from_secs(30), from.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => out.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
        drop(to);
        String::from_utf8_lossy(&out).into_owned()
    });
    let answers: Vec<Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        answers.iter().any(|a| a["id"].is_null()
            && a["error"]["code"] == json!(-32600)
            && a["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("maxRequestBytes"))),
        "{out}"
    );
    assert!(
        answers
            .iter()
            .any(|a| a["id"] == json!(2) && a["result"]["content"][0]["text"] == json!("fits\n")),
        "{out}"
    );
    server.stop();
}

/// M2: a call past `maxCallsInFlight` is answered at once with the
/// JSON-RPC error -32000 (not queued); once a call ends, one is taken again.
#[test]
fn a_call_past_the_calls_in_flight_cap_is_answered_busy() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use toolnexus::tool::{ExecContext, Source, Tool, ToolResult};
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    let (release, running) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicUsize::new(0)),
    );
    let (r, n) = (Arc::clone(&release), Arc::clone(&running));
    tk.register(Tool::new(
        "hold",
        "Runs until the test lets it go (or its call is cancelled).",
        None,
        Source::Native,
        Arc::new(move |_: &Value, ctx: &ExecContext| -> ToolResult {
            n.fetch_add(1, Ordering::SeqCst);
            let end = Instant::now() + Duration::from_secs(60);
            while !r.load(Ordering::SeqCst)
                && !ctx.cancel.as_ref().is_some_and(|c| c.is_cancelled())
                && Instant::now() < end
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            ToolResult::ok("released")
        }),
    ));
    let (server, addr) = serve_http_with(&tk, json!({"maxCallsInFlight": 2}));
    let hold = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "hold", "arguments": {}}})
        .to_string()
    };
    let held: Vec<_> = (1..=2)
        .map(|id| {
            let (addr, body) = (addr.clone(), hold(id));
            std::thread::spawn(move || post_raw(&addr, body.as_bytes()))
        })
        .collect();
    let end = Instant::now() + Duration::from_secs(60);
    while running.load(Ordering::SeqCst) < 2 {
        assert!(Instant::now() < end, "the two calls never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (status, _, text) = post_raw(&addr, hold(3).as_bytes());
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap_or_default();
    assert_eq!(v["id"], json!(3), "{text}");
    assert_eq!(v["error"]["code"], json!(-32000), "{text}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("maxCallsInFlight")),
        "{text}"
    );
    assert_eq!(running.load(Ordering::SeqCst), 2, "the third call ran");
    release.store(true, Ordering::SeqCst);
    for h in held {
        let (status, _, text) = h.join().unwrap_or_default();
        assert_eq!(status, 200, "{text}");
        assert!(text.contains("released"), "{text}");
    }
    let (_, _, text) = post_raw(&addr, hold(4).as_bytes());
    assert!(text.contains("released"), "{text}");
    server.stop();
}

/// M3: under `ulimit -n 1024`, 1,100 connections that send half a request
/// head and then nothing do not keep a legitimate client out: retrying, it
/// gets its `tools/list` answered within the header timeout (5 s; the test
/// allows 10 s on a loaded machine).
#[test]
fn a_flood_of_slow_header_connections_does_not_shut_out_a_client_that_retries() {
    let mut child = Command::new("sh")
        .args([
            "-c",
            "ulimit -n 1024 && exec \"$0\" serve --http 127.0.0.1:0",
            BIN,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = printed_addr(&mut child);
    let mut slow = Vec::new();
    for _ in 0..1100 {
        match std::net::TcpStream::connect(&addr) {
            Ok(mut c) => {
                let _ = c.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n");
                slow.push(c);
            }
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let flooded = Instant::now();
    let answered = loop {
        let attempt = std::net::TcpStream::connect(&addr).ok().and_then(|mut c| {
            let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
            let head = format!(
                "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
                 accept: application/json, text/event-stream\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            c.write_all(head.as_bytes()).ok()?;
            c.write_all(body).ok()?;
            let mut answer = String::new();
            c.read_to_string(&mut answer).ok()?;
            answer.contains("\"tools\"").then_some(answer)
        });
        if attempt.is_some() {
            break true;
        }
        if flooded.elapsed() > Duration::from_secs(10) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let waited = flooded.elapsed();
    drop(slow);
    sigterm(&child);
    let _ = exit_within(&mut child);
    assert!(answered, "no answer within 10 s of the flood");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
}

/// M3: a kept-alive connection that sits idle after its answer is closed
/// once the header timeout passes, as is one that never sends a byte.
#[test]
fn idle_and_silent_connections_are_closed_after_the_header_timeout() {
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    let (server, addr) = serve_http_with(&tk, json!({}));
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let mut idle = std::net::TcpStream::connect(&addr).unwrap_or_else(|e| panic!("{e}"));
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let _ = idle.write_all(head.as_bytes());
    let _ = idle.write_all(body);
    let silent = std::net::TcpStream::connect(&addr).unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    for (what, mut conn) in [("idle", idle), ("silent", silent)] {
        let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
        let mut all = Vec::new();
        let read = conn.read_to_end(&mut all);
        assert!(read.is_ok(), "{what}: not closed within 30 s: {read:?}");
        if what == "idle" {
            assert!(
                String::from_utf8_lossy(&all).contains("\"tools\""),
                "{what}"
            );
        }
    }
    let waited = started.elapsed();
    assert!(
        waited >= mcp_server::HEADER_TIMEOUT - Duration::from_millis(500)
            && waited < mcp_server::HEADER_TIMEOUT + Duration::from_secs(10),
        "{waited:?}"
    );
    server.stop();
}

/// The peak resident set of process `pid` (VmHWM), in kB.
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM for {pid}"))
}

/// `[0,0,…,0]` of `items` zeros: a batch of that many invalid requests,
/// two bytes each.
fn zeros_batch(items: usize) -> Vec<u8> {
    let mut batch = Vec::with_capacity(2 * items + 1);
    batch.push(b'[');
    for i in 0..items {
        batch.extend_from_slice(if i == 0 { b"0" } else { b",0" });
    }
    batch.push(b']');
    batch
}

/// M2, the leaner parse: a 16 MB stdio line `[0,0,…]` (eight million items)
/// used to make the server build a tree of it and an answer per item, a
/// peak of about 1.9 GB and an answer line of over a gigabyte; it is read
/// in one pass that keeps nothing of it, and a batch that would get more
/// than BATCH_ANSWERS answers gets one error saying how many it held. The
/// server's peak stays far below (256 MB allows for the line itself, twice,
/// and the debug build), and it answers the next request.
#[test]
fn a_huge_batch_line_is_refused_without_holding_a_tree_of_it() {
    let items = 8 << 20;
    let mut child = stdio_serve();
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
    let writer = std::thread::spawn(move || {
        let mut input = format!("{INIT}\n{INITIALIZED}\n").into_bytes();
        input.extend_from_slice(&zeros_batch(items));
        input.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}\n");
        let _ = stdin.write_all(&input);
        stdin // kept open until the answers are in
    });
    // Each answer line, of which at most 4 kB is kept.
    let mut lines: Vec<(usize, String)> = Vec::new();
    let mut out = BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("stdout")));
    while lines.len() < 3 {
        let mut line = Vec::new();
        let mut len = 0;
        loop {
            let buf = out.fill_buf().unwrap_or_default();
            if buf.is_empty() {
                break;
            }
            let (chunk, end) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            len += chunk.len();
            let room = 4096usize.saturating_sub(line.len());
            line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            let used = end.unwrap_or(buf.len());
            out.consume(used);
            if end.is_some() {
                break;
            }
        }
        if len == 0 && line.is_empty() {
            break;
        }
        lines.push((len, String::from_utf8_lossy(&line).into_owned()));
    }
    let peak = peak_rss_kb(child.id());
    let stdin = writer.join().unwrap_or_else(|_| panic!("writer"));
    drop(stdin);
    assert_eq!(exit_within(&mut child), Some(0));
    let shown: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(lines.len(), 3, "{shown:?}");
    // The initialize answer, then the batch's and the list's in either order.
    let (len, batch) = lines[1..]
        .iter()
        .find(|(_, l)| !l.contains("\"id\":7"))
        .unwrap_or_else(|| panic!("no answer to the batch: {shown:?}"));
    assert!(*len < 4096, "the batch's answer is {len} bytes: {batch}");
    let batch: Value = serde_json::from_str(batch).unwrap_or_else(|e| panic!("{e}: {batch}"));
    assert_eq!(batch["id"], Value::Null, "{batch}");
    assert_eq!(batch["error"]["code"], json!(-32600), "{batch}");
    assert_eq!(
        batch["error"]["message"],
        json!(format!(
            "invalid request: a batch of {items} requests, answered as one: batches are not \
             supported (MCP has no JSON-RPC batches since 2025-06-18); send each request on its own"
        ))
    );
    let (_, list) = lines[1..]
        .iter()
        .find(|(_, l)| l.contains("\"id\":7"))
        .unwrap_or_else(|| panic!("no answer to the list: {shown:?}"));
    let list: Value = serde_json::from_str(list).unwrap_or_else(|e| panic!("{e}"));
    assert!(list["result"]["tools"].is_array(), "{list}");
    assert!(peak < 256 * 1024, "the server's peak RSS was {peak} kB");
}

/// The same over HTTP: a 4 MiB body `[0,0,…]` (the largest the default cap
/// takes, two million items) is answered 400 with one error, and the
/// server's peak stays far below the gigabyte it used to reach.
#[test]
fn a_huge_batch_body_is_refused_without_holding_a_tree_of_it() {
    let (mut child, addr) = serve_http_cli();
    let items = (4 << 20) / 2 - 1;
    let body = zeros_batch(items);
    assert!(body.len() <= 4 << 20);
    let answer = post(&addr, &body);
    let peak = peak_rss_kb(child.id());
    let list = post(&addr, br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#);
    sigterm(&child);
    let _ = exit_within(&mut child);
    assert!(
        answer.starts_with("HTTP/1.1 400"),
        "{}",
        &answer[..answer.len().min(500)]
    );
    let json = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    assert!(json.len() < 4096, "the answer is {} bytes", json.len());
    let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(v["error"]["code"], json!(-32600), "{v}");
    assert!(
        v["error"]["message"].as_str().is_some_and(
            |m| m.starts_with(&format!("invalid request: a batch of {items} requests"))
        ),
        "{v}"
    );
    assert!(list.contains("\"id\":7"), "{list}");
    assert!(peak < 128 * 1024, "the server's peak RSS was {peak} kB");
}

/// M2, the leaner parse: a 16 MB `tools/call` whose `arguments` are an
/// array `[0,0,…]` (no object, so rmcp reads it as a request of a method it
/// does not know) made rmcp's parse hold the array whole, several times
/// over: a peak of 1.94 GB for a 72-byte answer. The gateway reads the
/// arguments through once, keeps nothing of them, and hands rmcp the
/// request with `[]` in their place; the answer is rmcp's, -32601
/// "tools/call". Over HTTP (4 MiB) the gateway answers it the same.
#[test]
fn a_call_whose_arguments_are_a_huge_array_is_answered_without_holding_them() {
    let items = 8 << 20;
    let mut line =
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":"#
            .to_vec();
    line.extend_from_slice(&zeros_batch(items));
    line.extend_from_slice(b"}}\n");
    let mut child = stdio_serve();
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
    let writer = std::thread::spawn(move || {
        let mut input = format!("{INIT}\n{INITIALIZED}\n").into_bytes();
        input.extend_from_slice(&line);
        let _ = stdin.write_all(&input);
        stdin
    });
    let mut out = BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("stdout")));
    let (mut init, mut answer) = (String::new(), String::new());
    let _ = out.read_line(&mut init);
    let _ = out.read_line(&mut answer);
    let peak = peak_rss_kb(child.id());
    drop(writer.join().unwrap_or_else(|_| panic!("writer")));
    assert_eq!(exit_within(&mut child), Some(0));
    let answer: Value = serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer}"));
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "tools/call"}})
    );
    assert!(peak < 256 * 1024, "the server's peak RSS was {peak} kB");

    let (mut child, addr) = serve_http_cli();
    let mut body =
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":"#
            .to_vec();
    body.extend_from_slice(&zeros_batch((4 << 20) / 2 - 100));
    body.extend_from_slice(b"}}");
    let (status, _, json) = post_raw(&addr, &body);
    let peak = peak_rss_kb(child.id());
    sigterm(&child);
    let _ = exit_within(&mut child);
    let answer: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(
        (status, answer["error"].clone()),
        (200, json!({"code": -32601, "message": "tools/call"}))
    );
    assert!(peak < 128 * 1024, "the server's peak RSS was {peak} kB");
}

/// Routes beside `/mcp` that answer `ok` on `/ok` and panic on `/boom`;
/// `waits` says whether the server runs them on a blocking thread or on
/// the connection's own task.
struct Fragile {
    waits: bool,
}

impl Beside for Fragile {
    fn answer(&self, req: &BesideRequest<'_>) -> BesideAnswer {
        if req.path == "/boom" {
            quiet_panic::quietly(|| panic!("a bug in a route"));
        }
        BesideAnswer {
            status: 200,
            content_type: "text/plain",
            headers: Vec::new(),
            body: b"ok".to_vec(),
            stream: None,
        }
    }

    fn waits(&self) -> bool {
        self.waits
    }
}

/// One GET of `path` from `addr` over a fresh connection: (status, body).
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut conn = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
    let head = format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n");
    let _ = conn.write_all(head.as_bytes());
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok());
    (status.unwrap_or(0), body.to_string())
}

/// A route beside `/mcp` that panics is answered 500 and the server goes
/// on serving, whether its routes run on a blocking thread (a store that
/// may wait) or on the connection's own task (the memory store's A2A
/// agent answers there).
#[test]
fn a_route_beside_mcp_that_panics_is_a_500_and_the_server_goes_on() {
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    let cfg =
        ServeConfig::from_value(&json!({"addr": "127.0.0.1:0"})).unwrap_or_else(|e| panic!("{e}"));
    for waits in [false, true] {
        let routes: Arc<dyn Beside> = Arc::new(Fragile { waits });
        let server = mcp_server::serve_beside(Arc::clone(&tk), &cfg, None, Some(routes))
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = served_addr(&server);
        assert_eq!(get(&addr, "/ok"), (200, "ok".into()), "waits: {waits}");
        assert_eq!(
            get(&addr, "/boom"),
            (500, "internal error\n".into()),
            "waits: {waits}"
        );
        assert_eq!(get(&addr, "/ok"), (200, "ok".into()), "waits: {waits}");
        server.stop();
    }
}
