//! Hostile and broken MCP servers: none can fail the build, hang the host
//! or leave a process behind (issue 5, SPEC §0.3 isolation).

mod mcp_support;
mod ports;

use mcp_support::*;
use serde_json::json;
use std::time::{Duration, Instant};
use toolnexus::tool::ExecContext;

fn stdio(script: &str, extra: &[&str], timeout_ms: u64) -> serde_json::Value {
    let mut command = vec![json!("python3"), json!(server_script(script))];
    command.extend(extra.iter().map(|a| json!(a)));
    json!({"command": command, "timeout": timeout_ms})
}

#[test]
fn a_server_flooding_stderr_still_answers() {
    let source = connect(json!({"mcpServers": {"noisy": stdio("stderr_flood.py", &[], 20000)}}));
    assert_eq!(status(&source, "noisy"), "connected", "{:?}", source.errors);
    for _ in 0..3 {
        let r = call(&source, "noisy_ping", json!({}));
        assert_eq!((r.output.as_str(), r.is_error), ("pong", false));
    }
}

#[test]
fn a_five_megabyte_single_line_answer_is_read_whole() {
    let source = connect(json!({"mcpServers": {"big": stdio("huge_line.py", &[], 20000)}}));
    assert_eq!(status(&source, "big"), "connected", "{:?}", source.errors);
    let r = call(&source, "big_ping", json!({}));
    assert!(!r.is_error, "{}", &r.output[..r.output.len().min(300)]);
    assert_eq!(r.output.len(), 5 * 1024 * 1024);
    assert!(r.output.starts_with("aaaa") && r.output.ends_with('z'));
}

#[test]
fn a_server_exiting_mid_call_is_an_error_naming_the_server_and_its_status() {
    // A one-minute timeout: the answer must come from the exit, not the clock.
    let source = connect(json!({"mcpServers": {"quitter": stdio("exit_mid_call.py", &[], 60000)}}));
    assert_eq!(
        status(&source, "quitter"),
        "connected",
        "{:?}",
        source.errors
    );
    let r = call(&source, "quitter_ping", json!({}));
    assert!(r.is_error);
    assert_eq!(
        r.output,
        "mcp server \"quitter\" failed at tools/call: peer-exited (status 7)"
    );
    // A second call on the dead server fails the same way.
    let again = call(&source, "quitter_ping", json!({}));
    assert_eq!(again.output, r.output);
}

#[test]
fn a_server_that_never_answers_initialize_fails_at_its_timeout() {
    let started = Instant::now();
    let source = connect(json!({"mcpServers": {
        "mute": stdio("silent_init.py", &[], 1000),
        "ok": stdio("hang_call.py", &[], 20000),
    }}));
    // Far below the 30 s default: the server's own timeout bounded it.
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(status(&source, "mute"), "failed");
    assert!(
        error(&source, "mute").starts_with("mcp server \"mute\" failed at initialize: timeout"),
        "{}",
        error(&source, "mute")
    );
    assert_eq!(status(&source, "ok"), "connected");
    assert_eq!(names(&source), vec!["ok_ping"]);
}

#[test]
fn garbage_on_stdout_is_skipped() {
    let source = connect(json!({"mcpServers": {"junk": stdio("garbage_stdout.py", &[], 20000)}}));
    assert_eq!(status(&source, "junk"), "connected", "{:?}", source.errors);
    let r = call(&source, "junk_ping", json!({}));
    assert_eq!((r.output.as_str(), r.is_error), ("pong", false));
}

#[test]
fn a_call_honours_the_context_timeout() {
    let source = connect(json!({"mcpServers": {"slow": stdio("hang_call.py", &[], 60000)}}));
    assert_eq!(status(&source, "slow"), "connected", "{:?}", source.errors);
    let ctx = ExecContext {
        timeout_ms: Some(300),
        ..Default::default()
    };
    let r = tool(&source, "slow_ping").exec.execute(&json!({}), &ctx);
    assert!(r.is_error);
    assert_eq!(
        r.output,
        "mcp server \"slow\" failed at tools/call: timeout (no answer within 300 ms)"
    );
}

#[test]
fn a_repeated_cursor_fails_the_server_instead_of_looping() {
    let source = connect(json!({"mcpServers": {"loop": stdio("repeated_cursor.py", &[], 20000)}}));
    assert_eq!(status(&source, "loop"), "failed");
    assert!(source.tools.is_empty());
    assert!(
        error(&source, "loop").contains("failed at tools/list")
            && error(&source, "loop").contains("repeated the cursor \"again\""),
        "{}",
        error(&source, "loop")
    );
}

#[test]
fn no_process_survives_closing_even_one_ignoring_eof_and_sigterm() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let pid_file = dir.path().join("grandchild.pid");
    let pid_file = pid_file.to_string_lossy();
    let mut source = connect(json!({"mcpServers": {
        "stubborn": stdio("ignore_eof.py", &[&pid_file], 20000),
        "plain": stdio("hang_call.py", &[], 20000),
        "noisy": stdio("stderr_flood.py", &[], 20000),
    }}));
    for s in ["stubborn", "plain", "noisy"] {
        assert_eq!(status(&source, s), "connected", "{:?}", source.errors);
    }
    let mut pids = source.sessions.pids();
    assert_eq!(pids.len(), 3);
    let grandchild: u32 = std::fs::read_to_string(&*pid_file)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("the stubborn server wrote no grandchild pid"));
    pids.push(grandchild);
    assert!(pids.iter().all(|p| alive(*p)));

    source.sessions.close();
    // Gone when close returns, not soon after: a host may check at once.
    let running: Vec<&u32> = pids.iter().filter(|p| alive(**p)).collect();
    assert!(running.is_empty(), "still running after close: {running:?}");
    // Tools of a closed session answer at once with an error.
    let r = call(&source, "plain_ping", json!({}));
    assert!(r.is_error);
    assert!(
        r.output
            .starts_with("mcp server \"plain\" failed at tools/call: closed"),
        "{}",
        r.output
    );
}

#[test]
fn dropping_the_source_ends_every_child() {
    let source = connect(json!({"mcpServers": {
        "a": stdio("hang_call.py", &[], 20000),
        "b": stdio("garbage_stdout.py", &[], 20000),
    }}));
    let pids = source.sessions.pids();
    assert_eq!(pids.len(), 2, "{:?}", source.errors);
    drop(source);
    assert!(all_dead_soon(&pids));
}

#[test]
fn each_stdio_server_is_started_once_and_one_that_cannot_start_is_named() {
    // The build starts stdio servers' processes before their connect tasks
    // run; each must still start exactly once, and a command that does not
    // exist fails its server only, with the reason.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let log = dir.path().join("starts");
    let logged = |name: &str| {
        let line = format!(
            "echo {name} >> '{}'; exec python3 '{}'",
            log.to_string_lossy(),
            server_script("odd_tools.py")
        );
        json!({"command": ["sh", "-c", line], "timeout": 20000})
    };
    let source = connect(json!({"mcpServers": {
        "a": logged("a"),
        "b": logged("b"),
        "missing": {"command": ["/nonexistent/toolnexus-server"], "timeout": 20000},
        "off": {"command": ["/nonexistent/never-run"], "enabled": false},
    }}));
    assert_eq!(status(&source, "a"), "connected", "{:?}", source.errors);
    assert_eq!(status(&source, "b"), "connected", "{:?}", source.errors);
    assert_eq!(status(&source, "off"), "disabled");
    assert_eq!(status(&source, "missing"), "failed");
    let why = source
        .errors
        .iter()
        .find(|(s, _)| s == "missing")
        .map(|(_, m)| m.as_str())
        .unwrap_or("");
    assert!(
        why.contains("missing") && why.contains("cannot start '/nonexistent/toolnexus-server'"),
        "{why}"
    );
    let mut starts: Vec<String> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    starts.sort();
    assert_eq!(starts, ["a", "b"]);
}

#[test]
fn a_server_started_from_a_thread_that_blocks_signals_inherits_none() {
    // A host that takes its signals on one thread blocks them on the others;
    // a server started from such a thread must still hear a close's SIGTERM.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let out = dir.path().join("sigblk");
    let probe = format!(
        "import os\nline = [l for l in open('/proc/self/status') if l.startswith('SigBlk:')][0]\n\
         open({:?}, 'w').write(line.split()[1])\nos.execvp('python3', ['python3', {:?}])",
        out.to_string_lossy(),
        server_script("odd_tools.py")
    );
    let mask = std::thread::spawn(move || {
        let mut set = nix::sys::signal::SigSet::empty();
        set.add(nix::sys::signal::Signal::SIGTERM);
        set.add(nix::sys::signal::Signal::SIGUSR1);
        set.thread_block().unwrap_or_else(|e| panic!("block: {e}"));
        let source = connect(json!({"mcpServers": {
            "probe": {"command": ["python3", "-c", probe], "timeout": 20000}
        }}));
        assert_eq!(status(&source, "probe"), "connected", "{:?}", source.errors);
        std::fs::read_to_string(&out).unwrap_or_default()
    })
    .join()
    .unwrap_or_else(|_| panic!("the building thread panicked"));
    assert_eq!(
        u64::from_str_radix(mask.trim(), 16).ok(),
        Some(0),
        "the server started with signals blocked: {mask:?}"
    );
}

#[test]
fn a_failed_connect_leaves_no_process_behind() {
    // The server is killed when its initialize deadline passes.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let marker = dir.path().join("pid");
    let script = format!(
        "import os,sys,time; f=open({:?},'w'); f.write(str(os.getpid())); f.close(); sys.stdin.read(); time.sleep(600)",
        marker.to_string_lossy()
    );
    let source = connect(
        json!({"mcpServers": {"mute": {"command": ["python3", "-c", script], "timeout": 3000}}}),
    );
    assert_eq!(status(&source, "mute"), "failed", "{:?}", source.errors);
    let pid: u32 = std::fs::read_to_string(&marker)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("the server wrote no pid"));
    assert!(all_dead_soon(&[pid]));
}

#[test]
fn tools_without_description_or_schema_get_defaults_and_pages_are_followed() {
    let source = connect(json!({"mcpServers": {"odd": {
        "command": ["python3", server_script("odd_tools.py")],
        "tools": {"drop": false}
    }}}));
    assert_eq!(status(&source, "odd"), "connected", "{:?}", source.errors);
    let decls: Vec<_> = source.tools.iter().map(|t| t.declaration()).collect();
    assert_eq!(
        serde_json::Value::Array(decls),
        json!([
            {"name": "odd_bare", "description": "", "inputSchema": {"type": "object"}, "source": "mcp"},
            {"name": "odd_keep", "description": "d", "inputSchema": {"type": "object"}, "source": "mcp"}
        ])
    );
}

#[test]
fn an_allow_list_keeps_only_the_named_tools_and_schema_key_order_is_kept() {
    let source = connect(json!({"mcpServers": {"odd": {
        "command": ["python3", server_script("odd_tools.py")],
        "tools": {"drop": true, "keep": false}
    }}}));
    assert_eq!(names(&source), vec!["odd_drop"]);
    let schema = serde_json::to_string(&tool(&source, "odd_drop").input_schema).unwrap_or_default();
    assert_eq!(schema, r#"{"type":"object","properties":{"b":{},"a":{}}}"#);
}

#[test]
fn header_values_never_appear_in_errors() {
    std::env::set_var("TN_MCP_TEST_SECRET", "s3cr3t-value-xyz");
    // Something that answers HTTP 404 to every request (streamable and SSE).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 8192];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\nconnection: close\r\n\r\nnot found");
        }
    });
    // Bound, never listening: refused, and no other test can take it.
    let (_held, closed) = ports::refused_port();
    let source = connect(json!({"mcpServers": {
        "notfound": {"url": format!("http://127.0.0.1:{port}/mcp"), "timeout": 3000,
                     "headers": {"Authorization": "Bearer ${TN_MCP_TEST_SECRET}"}},
        "nothing": {"url": format!("http://127.0.0.1:{closed}/mcp"), "timeout": 3000,
                    "headers": {"x-api-key": "${TN_MCP_TEST_SECRET}"}},
    }}));
    assert_eq!(status(&source, "notfound"), "failed");
    assert_eq!(status(&source, "nothing"), "failed");
    assert!(
        error(&source, "nothing")
            .starts_with("mcp server \"nothing\" failed at initialize: transport (connect-failed)"),
        "{}",
        error(&source, "nothing")
    );
    assert!(
        error(&source, "notfound").contains("404"),
        "{}",
        error(&source, "notfound")
    );
    for (_, e) in &source.errors {
        assert!(!e.contains("s3cr3t"), "{e}");
    }
}

#[test]
fn tools_work_and_close_from_inside_the_runtime_too() {
    let source = connect(json!({"mcpServers": {"junk": stdio("garbage_stdout.py", &[], 20000)}}));
    let pids = source.sessions.pids();
    // A host (or the toolkit) that is itself inside the shared runtime.
    let output = toolnexus::runtime::block_on(async {
        let r = call(&source, "junk_ping", json!({}));
        drop(source);
        r
    });
    assert_eq!((output.output.as_str(), output.is_error), ("pong", false));
    assert!(all_dead_soon(&pids));
}

#[test]
fn a_server_that_closed_its_stdin_fails_each_call_at_once_with_a_broken_pipe() {
    // A one-minute timeout: the answer must come from the failed write.
    let source = connect(json!({"mcpServers": {"deaf": stdio("closed_stdin.py", &[], 60000)}}));
    assert_eq!(status(&source, "deaf"), "connected", "{:?}", source.errors);
    for _ in 0..3 {
        let r = call(&source, "deaf_ping", json!({}));
        assert!(r.is_error);
        assert_eq!(
            r.output,
            "mcp server \"deaf\" failed at tools/call: \
             transport (send failed: broken pipe (the server closed its stdin))"
        );
    }
}

#[test]
fn a_server_that_exits_before_initialize_is_named_by_its_exit_status() {
    // Whether the child is gone before initialize is written (a broken pipe)
    // or after (EOF), the status names its exit; never a raw transport error.
    for _ in 0..10 {
        let source =
            connect(json!({"mcpServers": {"gone": {"command": ["/bin/true"], "timeout": 5000}}}));
        assert_eq!(status(&source, "gone"), "failed");
        assert_eq!(
            error(&source, "gone"),
            "mcp server \"gone\" failed at initialize: peer-exited (status 0)"
        );
    }
}

#[test]
fn a_six_megabyte_binary_preamble_before_the_first_message_is_skipped() {
    // Thousands of preamble lines look like JSON values; none may make the
    // client write (and block) while the server is still writing.
    let source = connect(json!({"mcpServers": {"noisy": stdio("binary_preamble.py", &[], 10000)}}));
    assert_eq!(status(&source, "noisy"), "connected", "{:?}", source.errors);
    let r = call(&source, "noisy_ping", json!({}));
    assert_eq!((r.output.as_str(), r.is_error), ("pong", false));
}

#[test]
fn a_server_does_not_inherit_the_blocked_sigpipe_of_the_runtime_threads() {
    // The library blocks SIGPIPE on its own threads; a server started from
    // one must see the default mask, or its pipelines break differently.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let mask = dir.path().join("mask");
    let mask_file = mask.to_string_lossy();
    let source =
        connect(json!({"mcpServers": {"m": stdio("mask_report.py", &[&mask_file], 20000)}}));
    assert_eq!(status(&source, "m"), "connected", "{:?}", source.errors);
    let line = std::fs::read_to_string(&mask).unwrap_or_default();
    let hex = line.trim().trim_start_matches("SigBlk:").trim();
    let blocked = u64::from_str_radix(hex, 16).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    assert_eq!(
        blocked & (1 << (13 - 1)),
        0,
        "SIGPIPE is blocked in the server: {line}"
    );
}

#[test]
fn a_server_echoing_the_request_in_its_error_never_puts_a_header_secret_in_the_status() {
    std::env::set_var("TN_MCP_ECHO_SECRET", "echo-s3cr3t-Zq93");
    // Answers every request (streamable POST and the SSE fallback's GET)
    // with a 401 whose body is the request itself, headers included.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 8192];
            let n = conn.read(&mut buf).unwrap_or(0);
            let body = &buf[..n];
            let head = format!(
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(body);
        }
    });
    let source = connect(json!({"mcpServers": {"echo": {
        "url": format!("http://127.0.0.1:{port}/mcp"), "timeout": 3000,
        "headers": {"Authorization": "Bearer ${TN_MCP_ECHO_SECRET}"}}}}));
    assert_eq!(status(&source, "echo"), "failed");
    let e = error(&source, "echo");
    assert!(e.contains("http-status (401)"), "{e}");
    assert!(
        !e.contains("echo-s3cr3t"),
        "the secret is in the status: {e}"
    );
}
