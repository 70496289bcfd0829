//! `Toolkit::build_with` (issue 17): a cancel token that ends a build hung
//! on an MCP server promptly, leaving no child process behind, and a skill
//! provider whose skills join the catalog (SPEC §3 S1).

mod mcp_support;
mod quiet_panic;

use mcp_support::{alive, all_dead_soon, server_script};
use serde_json::{json, Value};
use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolnexus::cancel::CancelToken;
use toolnexus::config::ToolkitConfig;
use toolnexus::error::ErrorCode;
use toolnexus::tool::ExecContext;
use toolnexus::toolkit::{BuildOptions, Toolkit};

fn config(v: Value) -> ToolkitConfig {
    ToolkitConfig::from_json_text(&v.to_string()).unwrap_or_else(|e| panic!("config: {e}"))
}

fn status(tk: &Toolkit) -> Value {
    serde_json::from_str(&tk.render("status").unwrap_or_default()).unwrap_or_default()
}

/// Waits (bounded) for `path` to hold whitespace-separated pids.
fn read_pids(path: &Path, want: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let pids: Vec<u32> = std::fs::read_to_string(path)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.len() == want {
            return pids;
        }
        assert!(
            Instant::now() < deadline,
            "{} never held the pids",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Cancels `token` from another thread once `ready` says so (bounded).
fn cancel_when(
    token: &CancelToken,
    ready: impl FnOnce() + Send + 'static,
) -> std::thread::JoinHandle<()> {
    let token = token.clone();
    std::thread::spawn(move || {
        ready();
        token.cancel();
    })
}

#[test]
fn cancelling_ends_a_build_hung_on_initialize_and_kills_every_child() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mute_pids = dir.path().join("mute.pids");
    let stubborn_gc = dir.path().join("stubborn.pid");
    // "a" serves normally (and is likely connected when the cancel comes),
    // "b" never answers initialize within its 20 s: only the cancel ends
    // the build.
    let cfg = config(json!({
        "builtins": false,
        "mcpConfig": {"mcpServers": {
            "a": {"command": ["python3", server_script("ignore_eof.py"),
                              stubborn_gc.to_string_lossy()], "timeout": 20000},
            "b": {"command": ["python3", server_script("silent_init_pids.py"),
                              mute_pids.to_string_lossy()], "timeout": 20000}
        }}
    }));
    let token = CancelToken::new();
    let (pids_path, gc_path) = (mute_pids.clone(), stubborn_gc.clone());
    let canceller = cancel_when(&token, move || {
        read_pids(&pids_path, 2);
        read_pids(&gc_path, 1);
    });
    let opts = BuildOptions::default().with_cancel(token.clone());
    let err = Toolkit::build_with(&cfg, &opts).expect_err("a cancelled build is an error");
    let _ = canceller.join();
    assert_eq!(err.code, ErrorCode::Cancelled, "{err}");
    assert!(
        err.message.contains("cancelled") && err.message.contains("MCP"),
        "{}",
        err.message
    );

    let pids = read_pids(&mute_pids, 2);
    // The server the build started is reaped by the time it returns: no
    // /proc entry at all, not even a zombie.
    assert!(
        !Path::new(&format!("/proc/{}", pids[0])).exists(),
        "server {} still has a /proc entry after the cancelled build",
        pids[0]
    );
    // Its grandchild (SIGTERM ignored) went with the group; the connected
    // server's grandchild too.
    let mut all = pids.clone();
    all.extend(read_pids(&stubborn_gc, 1));
    assert!(
        all_dead_soon(&all),
        "still alive: {:?}",
        all.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
    );
}

#[test]
fn cancelling_ends_a_build_waiting_on_an_http_server_that_never_answers() {
    cancel_a_build_on_a_mute_http_server(None);
}

#[test]
fn cancelling_ends_a_build_waiting_on_a_legacy_sse_server_that_never_answers() {
    cancel_a_build_on_a_mute_http_server(Some("sse"));
}

/// A server on 127.0.0.1 that accepts one connection, reads and never
/// answers; the build (streamable HTTP, or `"type"` given) is cancelled
/// once it connected, and the server must then see the connection closed.
fn cancel_a_build_on_a_mute_http_server(kind: Option<&str>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let accepted = Arc::new(AtomicBool::new(false));
    let (seen, closed_tx) = (Arc::clone(&accepted), std::sync::mpsc::channel::<bool>());
    let (closed_tx, closed_rx) = closed_tx;
    // Accepts one connection, reads what comes and never answers; reports
    // whether the client closed its end.
    std::thread::spawn(move || {
        let Ok((mut conn, _)) = listener.accept() else {
            return;
        };
        seen.store(true, Ordering::SeqCst);
        let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
        let mut buf = [0u8; 4096];
        let closed = loop {
            match conn.read(&mut buf) {
                Ok(0) => break true,
                Ok(_) => continue,
                Err(_) => break false,
            }
        };
        let _ = closed_tx.send(closed);
    });
    let cfg = config(json!({
        "builtins": false,
        "mcpConfig": {"mcpServers": {
            "remote": {"url": format!("http://127.0.0.1:{port}/mcp"), "timeout": 20000, "type": kind}
        }}
    }));
    let token = CancelToken::new();
    let canceller = cancel_when(&token, move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !accepted.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let err = Toolkit::build_with(&cfg, &BuildOptions::default().with_cancel(token))
        .expect_err("a cancelled build is an error");
    let _ = canceller.join();
    assert_eq!(err.code, ErrorCode::Cancelled, "{err}");
    // The request the build had in flight was ended: the server saw EOF.
    assert_eq!(
        closed_rx.recv_timeout(Duration::from_secs(15)),
        Ok(true),
        "the connection of the cancelled build was not closed"
    );
}

#[test]
fn a_token_cancelled_before_the_build_starts_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pids = dir.path().join("never.pids");
    let cfg = config(json!({
        "mcpConfig": {"mcpServers": {
            "b": {"command": ["python3", server_script("silent_init_pids.py"),
                              pids.to_string_lossy()], "timeout": 20000}
        }}
    }));
    let token = CancelToken::new();
    token.cancel();
    let err = Toolkit::build_with(&cfg, &BuildOptions::default().with_cancel(token))
        .expect_err("cancelled");
    assert_eq!(err.code, ErrorCode::Cancelled);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!pids.exists(), "a server was started by a cancelled build");
}

#[test]
fn cancelling_while_the_skill_provider_runs_cancels_the_build() {
    let token = CancelToken::new();
    let seen = token.clone();
    let opts = BuildOptions::default()
        .with_cancel(token.clone())
        .with_skill_provider(move || {
            // A provider that gives up once the build is cancelled.
            let deadline = Instant::now() + Duration::from_secs(20);
            while !seen.is_cancelled() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(json!([{"name": "late", "content": "x"}]))
        });
    let canceller = cancel_when(&token, || std::thread::sleep(Duration::from_millis(50)));
    let err = Toolkit::build_with(&config(json!({})), &opts).expect_err("cancelled");
    let _ = canceller.join();
    assert_eq!(err.code, ErrorCode::Cancelled);
    assert!(err.message.contains("skill provider"), "{}", err.message);
}

#[test]
fn a_cancel_after_the_build_leaves_the_toolkit_working() {
    let token = CancelToken::new();
    let tk = Toolkit::build_with(
        &config(json!({"skills": [{"name": "s", "content": "body"}]})),
        &BuildOptions::default().with_cancel(token.clone()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    token.cancel();
    let r = tk.execute("skill", json!({"name": "s"}), &ExecContext::default());
    assert!(!r.is_error && r.output.contains("body"), "{}", r.output);
}

#[test]
fn provider_skills_join_the_catalog_after_the_config_ones() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let opts = BuildOptions::default().with_skill_provider(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok(json!([
            {"name": "from-db", "description": "kept in a database", "content": "DB BODY",
             "resources": ["notes.md"]},
            {"name": "dup", "description": "the provider's copy", "content": "PROVIDER"}
        ]))
    });
    let cfg = config(json!({
        "builtins": false,
        "skills": [{"name": "dup", "description": "the config's copy", "content": "CONFIG"}]
    }));
    let tk = Toolkit::build_with(&cfg, &opts).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "resolved once, at build");

    let prompt = tk.skills_prompt();
    assert!(
        prompt.contains("from-db") && prompt.contains("kept in a database"),
        "{prompt}"
    );
    let r = tk.execute("skill", json!({"name": "from-db"}), &ExecContext::default());
    assert!(!r.is_error, "{}", r.output);
    assert!(
        r.output.contains("DB BODY") && r.output.contains("notes.md"),
        "{}",
        r.output
    );
    assert!(r.output.contains("skill://from-db/"), "{}", r.output);
    // First wins: the config's skill beats the provider's of the same name.
    let r = tk.execute("skill", json!({"name": "dup"}), &ExecContext::default());
    assert!(
        r.output.contains("CONFIG") && !r.output.contains("PROVIDER"),
        "{}",
        r.output
    );
    let st = status(&tk);
    assert!(st["skipped"].to_string().contains("duplicate-name"), "{st}");
    assert_eq!(tk.tool_names(), vec!["skill"]);
}

#[test]
fn a_provider_alone_makes_a_skill_source() {
    let opts = BuildOptions::default()
        .with_skill_provider(|| Ok(json!([{"name": "only", "content": "ONLY"}])));
    let tk = Toolkit::build_with(&config(json!({"builtins": false})), &opts)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(tk.has_skill_source());
    let loaded: Value =
        serde_json::from_str(&tk.render("skills").unwrap_or_default()).unwrap_or_default();
    assert!(loaded.to_string().contains("\"only\""), "{loaded}");
}

#[test]
fn a_failing_provider_is_isolated_and_named_in_the_status() {
    let cfg = config(json!({
        "builtins": false,
        "skills": [{"name": "kept", "content": "still here"}]
    }));
    type Case = (
        &'static str,
        Box<dyn Fn() -> Result<Value, String> + Send + Sync>,
    );
    let cases: Vec<Case> = vec![
        (
            "database down",
            Box::new(|| Err("database down".to_string())),
        ),
        (
            "panicked: provider bug",
            Box::new(|| quiet_panic::quietly(|| panic!("provider bug"))),
        ),
        (
            "expected an array of skill objects, got an object",
            Box::new(|| Ok(json!({"name": "x"}))),
        ),
        (
            "skills[1]: expected an object, got a string",
            Box::new(|| Ok(json!([{"name": "y"}, "z"]))),
        ),
    ];
    for (want, provider) in cases {
        let opts = BuildOptions::default().with_skill_provider(provider);
        let tk = Toolkit::build_with(&cfg, &opts).unwrap_or_else(|e| panic!("{want}: {e}"));
        let st = status(&tk);
        let msg = st["errors"]["skillProvider"].as_str().unwrap_or_default();
        assert!(
            msg.contains("skill provider") && msg.contains(want),
            "{want}: {st}"
        );
        let r = tk.execute("skill", json!({"name": "kept"}), &ExecContext::default());
        assert!(r.output.contains("still here"), "{want}: {}", r.output);
        // Nothing of a rejected answer is half-loaded.
        let loaded = tk.render("skills").unwrap_or_default();
        assert!(
            loaded.contains("\"kept\"") && !loaded.contains("\"y\""),
            "{want}: {loaded}"
        );
    }
}

#[test]
fn build_is_build_with_the_defaults() {
    let cfg = config(json!({"skills": [{"name": "s", "content": "c"}]}));
    let a = Toolkit::build(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let b = Toolkit::build_with(&cfg, &BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a.tool_names(), b.tool_names());
    assert_eq!(a.render("status").ok(), b.render("status").ok());
}
