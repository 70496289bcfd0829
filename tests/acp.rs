//! ACP agents as models (contract §10): the session against a scripted
//! agent over real pipes (tests/acp_agents/scripted_agent.py, standard
//! library only), the client built by `tn_client_new_acp`, and one agent
//! written on the official ACP Python SDK (`agent-client-protocol`, pinned
//! in tests/requirements.txt). Without the SDK the last test fails naming
//! the setup step (it never passes silently).

use serde_json::{json, Value};
use std::ffi::{c_char, CStr, CString};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolnexus::cancel::CancelToken;
use toolnexus::client::{Client, RunData, RunRequest};
use toolnexus::error::ErrorCode;
use toolnexus::ffi;
use toolnexus::provider::acp::{AcpOptions, AcpSession, CLOSE_GRACE, EOF_MESSAGE};

const AGENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acp_agents");

fn python() -> String {
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python3");
    if std::path::Path::new(venv).exists() {
        venv.into()
    } else {
        "python3".into()
    }
}

fn scripted(scenario: &str) -> AcpOptions {
    let mut o = AcpOptions::new(python());
    o.args = vec![
        format!("{AGENTS}/scripted_agent.py"),
        "--scenario".into(),
        scenario.into(),
    ];
    o.permission_timeout = Duration::from_secs(5);
    o
}

fn connect(scenario: &str) -> AcpSession {
    AcpSession::connect(&scripted(scenario)).expect("the agent starts")
}

fn ask(session: &AcpSession, text: &str) -> toolnexus::error::Result<Value> {
    session.generate(
        &json!({"messages": [{"role": "user", "content": text}]}),
        None,
        None,
    )
}

fn diagnostics(session: &AcpSession) -> Value {
    session
        .call("x/diagnostics", json!({}))
        .expect("diagnostics")
}

/// Whether a process (a zombie included) still has its /proc entry.
fn exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn the_handshake_sends_an_absolute_cwd_and_one_session_serves_three_turns() {
    let mut o = scripted("default");
    o.cwd = Some("tests".into());
    o.env = vec![("ACP_PROBE".into(), "merged".into())];
    o.mode = Some("code".into());
    let session = AcpSession::connect(&o).expect("connect");
    assert_eq!(session.session_id(), &json!("s-1"));
    for (i, text) in ["hi", "again", "third"].iter().enumerate() {
        let answer = ask(&session, text).expect("a turn");
        assert_eq!(
            answer,
            json!({"content": format!("echo:{text}")}),
            "turn {i}"
        );
    }
    let seen = diagnostics(&session);
    let cwd = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");
    assert_eq!(seen["session_new"], json!([{"cwd": cwd, "mcpServers": []}]));
    assert_eq!(seen["cwd"], cwd, "the child runs in the session's cwd");
    assert_eq!(
        seen["initialize"],
        json!({"protocolVersion": 1,
               "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}}})
    );
    assert_eq!(
        seen["set_mode"],
        json!({"sessionId": "s-1", "modeId": "code"})
    );
    assert_eq!(seen["env_probe"], "merged");
    assert_eq!(seen["prompts"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        seen["prompts"][1],
        "user: again\nSUPERSEDES-ALL-PRIOR: again"
    );
    assert_eq!(
        seen["ids"],
        json!(["c-1", "c-2", "c-3", "c-4", "c-5", "c-6", "c-7"])
    );
}

#[test]
fn only_message_chunks_make_the_answer() {
    let session = connect("noisy");
    let answer = ask(&session, "42").expect("a turn");
    assert_eq!(answer["content"], r#"{"answer":"42"}"#);
}

#[test]
fn a_permission_request_is_answered_at_once_with_the_first_allow_option() {
    let mut o = scripted("permission");
    o.permission_timeout = Duration::from_secs(10);
    let session = AcpSession::connect(&o).expect("connect");
    let started = Instant::now();
    let answer = ask(&session, "delete the build").expect("a turn");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(answer["content"], "PERMITTED:allow-once");
    assert_eq!(
        diagnostics(&session)["answers"]["permission"],
        json!({"outcome": "selected", "optionId": "allow-once"})
    );
}

#[test]
fn any_other_request_from_the_agent_is_answered_empty() {
    let session = connect("ask_other");
    assert_eq!(ask(&session, "x").expect("a turn")["content"], "OTHER:{}");
}

#[test]
fn a_turn_that_hangs_is_bounded_by_the_permission_timeout() {
    let mut o = scripted("hang");
    o.permission_timeout = Duration::from_millis(500);
    let session = AcpSession::connect(&o).expect("connect");
    let started = Instant::now();
    let e = ask(&session, "hello").expect_err("no reply");
    let took = started.elapsed();
    assert_eq!(e.code, ErrorCode::Timeout);
    assert_eq!(
        e.message,
        "acp: turn hung waiting on a reply (possibly an unanswered session/request_permission) after 0.5s"
    );
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(2),
        "{took:?}"
    );
    // The session still answers calls afterwards.
    assert_eq!(
        diagnostics(&session)["prompts"].as_array().map(Vec::len),
        Some(1)
    );
}

#[test]
fn a_cancelled_turn_sends_session_cancel_and_stops_waiting() {
    let mut o = scripted("hang");
    o.permission_timeout = Duration::from_secs(30);
    let session = AcpSession::connect(&o).expect("connect");
    let cancel = CancelToken::new();
    let trigger = cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        trigger.cancel();
    });
    let started = Instant::now();
    let e = session
        .generate(
            &json!({"messages": [{"role": "user", "content": "hello"}]}),
            Some(&cancel),
            None,
        )
        .expect_err("cancelled");
    canceller.join().expect("canceller");
    assert_eq!(e.code, ErrorCode::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(diagnostics(&session)["cancels"], 1);
    // A token cancelled before the turn sends nothing.
    let e = session
        .generate(&json!({"messages": []}), Some(&cancel), None)
        .expect_err("cancelled");
    assert_eq!(e.code, ErrorCode::Cancelled);
    assert_eq!(
        diagnostics(&session)["prompts"].as_array().map(Vec::len),
        Some(1)
    );
}

#[test]
fn what_a_given_up_turn_still_says_never_joins_the_next_answer() {
    // Cancelled: the agent answers the cancel 0.2 s later, with a chunk.
    let session = connect("late");
    let cancel = CancelToken::new();
    let trigger = cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        trigger.cancel();
    });
    let e = session
        .generate(
            &json!({"messages": [{"role": "user", "content": "first"}]}),
            Some(&cancel),
            None,
        )
        .expect_err("cancelled");
    canceller.join().expect("canceller");
    assert_eq!(e.code, ErrorCode::Cancelled);
    assert_eq!(
        ask(&session, "next").expect("turn 2")["content"],
        "echo:next"
    );
    // Timed out: the agent answers 1.4 s after the prompt, 0.4 s too late
    // (and takes 0.5 s over the next one).
    let mut o = scripted("late");
    o.permission_timeout = Duration::from_millis(1000);
    let session = AcpSession::connect(&o).expect("connect");
    let e = ask(&session, "first").expect_err("too late");
    assert_eq!(e.code, ErrorCode::Timeout);
    assert_eq!(
        ask(&session, "next").expect("turn 2")["content"],
        "echo:next"
    );
}

#[test]
fn the_supersedes_line_keeps_the_answer_fresh() {
    let session = connect("stale");
    let first = ask(&session, "What is the capital of France?").expect("turn 1");
    assert_eq!(first["content"], "FRESH:What is the capital of France?");
    let second = session
        .generate(
            &json!({"messages": [
                {"role": "user", "content": "What is the capital of France?"},
                {"role": "assistant", "content": first["content"]},
                {"role": "user", "content": [{"type": "text", "text": "What is the capital "},
                                             {"type": "text", "text": "of Japan?"}]},
            ]}),
            None,
            None,
        )
        .expect("turn 2");
    assert_eq!(second["content"], "FRESH:What is the capital of Japan?");
    let prompts = diagnostics(&session)["prompts"].clone();
    assert_eq!(
        prompts[1],
        "user: What is the capital of France?\nassistant: FRESH:What is the capital of France?\n\
         user: What is the capital of Japan?\nSUPERSEDES-ALL-PRIOR: What is the capital of Japan?"
    );
}

#[test]
fn concurrent_turns_take_their_turn() {
    let session = Arc::new(connect("serialize"));
    let runs: Vec<_> = ["alpha", "beta", "gamma"]
        .into_iter()
        .map(|text| {
            let session = Arc::clone(&session);
            std::thread::spawn(move || (text, ask(&session, text)))
        })
        .collect();
    for run in runs {
        let (text, answer) = run.join().expect("a thread");
        assert_eq!(answer.expect("a turn")["content"], format!("echo:{text}"));
    }
    let seen = diagnostics(&session);
    assert_eq!(seen["overlap"], false);
    assert_eq!(seen["prompts"].as_array().map(Vec::len), Some(3));
}

#[test]
fn close_is_idempotent_and_the_child_is_gone() {
    let session = connect("default");
    ask(&session, "hi").expect("a turn");
    let pid = session.pid();
    assert!(session.is_alive() && exists(pid));
    session.close();
    assert!(!session.is_alive());
    assert!(!exists(pid), "the child {pid} is gone and reaped");
    session.close();
    let e = ask(&session, "after").expect_err("closed");
    assert_eq!(e.code, ErrorCode::ProviderError);
    drop(session);
}

#[test]
fn an_agent_that_ignores_sigterm_is_killed_after_the_grace() {
    let session = connect("stubborn");
    assert_eq!(ask(&session, "hi").expect("a turn")["content"], "echo:hi");
    let pid = session.pid();
    let started = Instant::now();
    session.close();
    let took = started.elapsed();
    assert!(took >= CLOSE_GRACE && took < CLOSE_GRACE * 2, "{took:?}");
    assert!(!session.is_alive() && !exists(pid), "killed and reaped");
}

#[test]
fn a_child_that_exits_mid_turn_fails_the_turn_and_every_later_call() {
    let session = connect("exit");
    let e = ask(&session, "go").expect_err("the child exits");
    assert_eq!(e.code, ErrorCode::ProviderError);
    assert_eq!(e.message, EOF_MESSAGE);
    let e = session.call("x/diagnostics", json!({})).expect_err("gone");
    assert_eq!(e.message, EOF_MESSAGE);
    let deadline = Instant::now() + Duration::from_secs(5);
    while session.is_alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!session.is_alive() && !exists(session.pid()));
}

#[test]
fn a_json_rpc_error_fails_the_turn_with_its_code_and_message() {
    let session = connect("error");
    let e = ask(&session, "go").expect_err("an error reply");
    assert_eq!(e.code, ErrorCode::ProviderError);
    assert_eq!(e.message, "acp error -32603: agent exploded");
    let e = session.call("no/such", json!({})).expect_err("unknown");
    assert_eq!(e.message, "acp error -32601: Method not found");
}

#[test]
fn a_line_that_is_not_json_is_skipped() {
    let session = connect("big_line");
    assert_eq!(ask(&session, "x").expect("a turn")["content"], "echo:x");
}

#[test]
fn an_agent_that_cannot_start_or_dies_at_once_fails_the_connect() {
    let e = AcpSession::connect(&AcpOptions::new("/no/such/agent")).expect_err("no program");
    assert_eq!(e.code, ErrorCode::ProviderError);
    assert!(
        e.message.starts_with("acp: cannot start '/no/such/agent'"),
        "{}",
        e.message
    );
    let mut o = AcpOptions::new(python());
    o.args = vec!["-c".into(), "pass".into()];
    let e = AcpSession::connect(&o).expect_err("exits");
    assert_eq!(e.message, EOF_MESSAGE);
}

// ---- the C ABI -------------------------------------------------------------

/// `tn_client_new_acp` on raw bytes: the status and the client or the
/// error JSON.
fn new_acp(json: Option<&[u8]>) -> (i32, *mut ffi::tn_client, Value) {
    let owned = json.map(|b| CString::new(b).expect("no NUL"));
    let mut client = std::ptr::null_mut();
    let mut error: *mut c_char = std::ptr::null_mut();
    // SAFETY: a NUL-terminated string or NULL, and two writable out-pointers.
    let status = unsafe {
        ffi::tn_client_new_acp(
            owned.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
            &mut client,
            &mut error,
        )
    };
    let error = if error.is_null() {
        Value::Null
    } else {
        // SAFETY: the library's string, freed once here.
        let text = unsafe { CStr::from_ptr(error) }
            .to_string_lossy()
            .into_owned();
        unsafe { ffi::tn_string_free(error) };
        serde_json::from_str(&text).expect("error JSON")
    };
    (status, client, error)
}

fn agent_json(scenario: &str, extra: Value) -> Value {
    let mut v = json!({
        "command": python(),
        "args": [format!("{AGENTS}/scripted_agent.py"), "--scenario", scenario],
    });
    if let (Some(v), Value::Object(extra)) = (v.as_object_mut(), extra) {
        v.extend(extra);
    }
    v
}

#[test]
fn tn_client_new_acp_refuses_what_every_constructor_refuses() {
    let (s, c, e) = new_acp(None);
    assert_eq!((s, c.is_null()), (ffi::TN_NULL_ARGUMENT, true));
    assert_eq!(e["error"]["message"], "acp_json is NULL");
    let (s, _, e) = new_acp(Some(b"{\"command\":\"\xff\"}"));
    assert_eq!(s, ffi::TN_INVALID_UTF8);
    assert_eq!(e["error"]["code"], "invalid_utf8");
    let (s, _, e) = new_acp(Some(b"{"));
    assert_eq!(
        (s, e["error"]["code"].as_str()),
        (ffi::TN_INVALID_JSON, Some("invalid_json"))
    );
    for (json, names) in [
        (json!([]), "acp client must be a JSON object"),
        (
            json!({"command": "x", "baseUrl": "http://x"}),
            "unknown key 'baseUrl'",
        ),
        (json!({}), "acp.command is required"),
        (json!({"command": 5}), "acp.command must be a string"),
        (
            json!({"command": "x", "args": "a b"}),
            "acp.args must be an array",
        ),
        (
            json!({"command": "x", "args": ["a", 1]}),
            "acp.args[1] must be a string",
        ),
        (
            json!({"command": "x", "cwd": true}),
            "acp.cwd must be a string",
        ),
        (
            json!({"command": "x", "env": {"A": 1}}),
            "acp.env.A must be a string",
        ),
        (
            json!({"command": "x", "env": []}),
            "acp.env must be an object",
        ),
        (
            json!({"command": "x", "protocolVersion": "1"}),
            "acp.protocolVersion must be",
        ),
        (
            json!({"command": "x", "protocolVersion": 70000}),
            "acp.protocolVersion must be",
        ),
        (
            json!({"command": "x", "permissionTimeoutMs": -1}),
            "acp.permissionTimeoutMs must be",
        ),
        (
            json!({"command": "x", "permissionTimeoutMs": 0}),
            "acp.permissionTimeoutMs must be more than 0",
        ),
        (
            json!({"command": "x", "mode": 1}),
            "acp.mode must be a string",
        ),
        (
            json!({"command": "x", "model": []}),
            "acp.model must be a string",
        ),
        (
            json!({"command": "x", "systemPrompt": 1}),
            "acp.systemPrompt must be a string",
        ),
        (
            json!({"command": "x", "maxTurns": "3"}),
            "acp.maxTurns must be",
        ),
    ] {
        let (s, c, e) = new_acp(Some(json.to_string().as_bytes()));
        assert_eq!((s, c.is_null()), (ffi::TN_INVALID_CONFIG, true), "{json}");
        let message = e["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(names), "{json}: {message}");
    }
    let (s, c, e) = new_acp(Some(br#"{"command":"/no/such/agent"}"#));
    assert_eq!((s, c.is_null()), (ffi::TN_PROVIDER_ERROR, true), "{e}");
    // NULL out-pointers: refused before the agent is started.
    let json = CString::new(r#"{"command":"/no/such/agent"}"#).expect("cstr");
    let mut client = std::ptr::null_mut();
    let mut error: *mut c_char = std::ptr::null_mut();
    // SAFETY: NULL out-pointers are part of the contract.
    let s = unsafe { ffi::tn_client_new_acp(json.as_ptr(), std::ptr::null_mut(), &mut error) };
    assert_eq!(s, ffi::TN_NULL_ARGUMENT);
    assert!(!error.is_null());
    // SAFETY: the library's string, freed once here.
    unsafe { ffi::tn_string_free(error) };
    let s = unsafe { ffi::tn_client_new_acp(json.as_ptr(), &mut client, std::ptr::null_mut()) };
    assert_eq!((s, client.is_null()), (ffi::TN_NULL_ARGUMENT, true));
}

#[test]
fn a_client_runs_turns_on_the_agent_and_its_free_ends_the_agent() {
    let dir = std::env::temp_dir().join(format!("tn-acp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let pid_file = dir.join("pid");
    let config = agent_json(
        "default",
        json!({"env": {"ACP_PID_FILE": pid_file.to_string_lossy()},
               "systemPrompt": "be brief", "model": "scripted", "maxTurns": 2}),
    );
    let (s, client, e) = new_acp(Some(config.to_string().as_bytes()));
    assert_eq!(s, ffi::TN_OK, "{e}");
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    assert!(exists(pid));
    for prompt in ["one", "two"] {
        let request = CString::new(json!({"prompt": prompt}).to_string()).expect("cstr");
        let mut out: *mut c_char = std::ptr::null_mut();
        // SAFETY: a live client, a NULL toolkit and cancel, a writable out.
        let status = unsafe {
            ffi::tn_run(
                client,
                std::ptr::null(),
                request.as_ptr(),
                std::ptr::null(),
                std::ptr::null_mut(),
                &mut out,
            )
        };
        // SAFETY: the library's string, freed once here.
        let text = unsafe { CStr::from_ptr(out) }
            .to_string_lossy()
            .into_owned();
        unsafe { ffi::tn_string_free(out) };
        assert_eq!(status, ffi::TN_OK, "{text}");
        let result: Value = serde_json::from_str(&text).expect("RunResult");
        assert_eq!(result["text"], format!("echo:{prompt}"));
    }
    // SAFETY: from tn_client_new_acp, freed once.
    unsafe { ffi::tn_client_free(client) };
    assert!(
        !exists(pid),
        "tn_client_free ended and reaped the agent {pid}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- a real peer: the official SDK -------------------------------------------

#[test]
fn an_agent_on_the_official_sdk_answers_two_turns_of_a_client_run() {
    let probe = std::process::Command::new(python())
        .args(["-c", "import acp"])
        .output()
        .expect("run python3");
    assert!(
        probe.status.success(),
        "the agent-client-protocol package is missing: run scripts/setup.sh (or .venv/bin/pip install -r tests/requirements.txt): {}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let pid_file = std::env::temp_dir().join(format!("tn-acp-sdk-{}", std::process::id()));
    let config = json!({
        "command": python(),
        "args": [format!("{AGENTS}/sdk_echo_agent.py")],
        "env": {"ACP_PID_FILE": pid_file.to_string_lossy()},
        "permissionTimeoutMs": 10000,
    });
    let client = Client::acp(&config).expect("the SDK agent completes the handshake");
    let toolkit = toolnexus::client::empty_toolkit();
    let cancel = CancelToken::new();
    for prompt in ["hi there", "and again"] {
        let request = RunRequest {
            prompt: prompt.into(),
            history: Vec::new(),
        };
        let result = client
            .run(toolkit, &request, &cancel, RunData(0))
            .expect("a run");
        // The thought chunk the agent sends first is not in the answer.
        assert_eq!(
            result["text"],
            format!("ECHO[SUPERSEDES-ALL-PRIOR: {prompt}]")
        );
    }
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    let _ = std::fs::remove_file(&pid_file);
    assert!(exists(pid));
    let started = Instant::now();
    drop(client);
    assert!(!exists(pid), "the SDK agent {pid} is gone and reaped");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "closed cleanly, without waiting out the SIGKILL grace: {:?}",
        started.elapsed()
    );
}
