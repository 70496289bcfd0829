//! The MCP elicitation bridge (SPEC §2 onto §10) against a real server on the
//! official Python SDK (tests/mcp_servers/sdk_elicit_server.py) whose tools
//! call `ctx.elicit` (form mode) and `ctx.elicit_url` (URL mode) during
//! `tools/call`. The toolkit is built with a host `waitFor`; what the host
//! answers is what the server's tool sees, and so what the tool returns.

mod mcp_support;
mod quiet_panic;

use mcp_support::*;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolnexus::cancel::CancelToken;
use toolnexus::config::ToolkitConfig;
use toolnexus::mcp::WaitFor;
use toolnexus::tool::{ExecContext, ToolResult};
use toolnexus::toolkit::{BuildOptions, Toolkit};

fn config(mode: &[&str]) -> ToolkitConfig {
    let mut command = vec![
        json!("python3"),
        json!(server_script("sdk_elicit_server.py")),
    ];
    command.extend(mode.iter().map(|m| json!(m)));
    ToolkitConfig::from_value(&json!({
        "builtins": false,
        "mcpConfig": {"mcpServers": {"el": {"command": command, "timeout": 20000}}}
    }))
    .unwrap_or_else(|e| panic!("config: {e}"))
}

/// A toolkit over the stdio server, with `wait_for` (or none).
fn toolkit(wait_for: Option<WaitFor>) -> Toolkit {
    let opts = BuildOptions {
        wait_for,
        ..BuildOptions::default()
    };
    let tk =
        Toolkit::build_with(&config(&["stdio"]), &opts).unwrap_or_else(|e| panic!("build: {e}"));
    assert!(
        tk.tool_names().contains(&"el_ask_name".to_string()),
        "the server did not connect: {}",
        tk.render("status").unwrap_or_default()
    );
    tk
}

/// A waitFor that records each Request and answers with `answer(request)`.
fn recording(
    answer: impl Fn(&Value) -> Result<Value, String> + Send + Sync + 'static,
) -> (WaitFor, Arc<Mutex<Vec<Value>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let f: WaitFor = Arc::new(move |request: &Value, _stop: &CancelToken| {
        log.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request.clone());
        answer(request)
    });
    (f, seen)
}

fn run(tk: &Toolkit, tool: &str) -> ToolResult {
    tk.execute(tool, json!({}), &ExecContext::default())
}

/// The tool's text: the SDK returns a `str` as structuredContent
/// `{"result": text}`, which SPEC §2 makes the output's JSON.
fn text(r: &ToolResult) -> String {
    match serde_json::from_str::<Value>(&r.output) {
        Ok(Value::Object(m)) => match m.get("result") {
            Some(Value::String(s)) => s.clone(),
            _ => r.output.clone(),
        },
        _ => r.output.clone(),
    }
}

fn requests(seen: &Arc<Mutex<Vec<Value>>>) -> Vec<Value> {
    seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

#[test]
fn an_accepted_form_reaches_the_tool_and_the_request_carries_the_schema() {
    let (f, seen) =
        recording(|r| Ok(json!({"id": r["id"], "ok": true, "data": {"name": "Ada", "age": 36}})));
    let tk = toolkit(Some(f));
    let r = run(&tk, "el_ask_name");
    assert!(!r.is_error, "{}", r.output);
    assert_eq!(text(&r), "accepted: name=Ada age=36");

    let asked = requests(&seen);
    assert_eq!(asked.len(), 1, "{asked:?}");
    let q = &asked[0];
    assert_eq!(
        (&q["kind"], &q["prompt"]),
        (&json!("input"), &json!("Who are you?"))
    );
    let schema = &q["data"]["schema"];
    assert_eq!(schema["properties"]["name"]["type"], "string");
    assert_eq!(schema["properties"]["age"]["type"], "integer");
    assert_eq!(schema["required"], json!(["name"]));
    assert!(q.get("url").is_none(), "{q}");
}

#[test]
fn the_capability_is_advertised_only_with_a_wait_for() {
    let (f, _) = recording(|_| Ok(json!({"ok": true})));
    let with = toolkit(Some(f));
    let caps = run(&with, "el_client_caps");
    assert!(!caps.is_error, "{}", caps.output);
    let caps: Value = serde_json::from_str(&text(&caps))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", caps.output));
    assert!(caps.get("form").is_some(), "{caps}");
    assert!(caps.get("url").is_some(), "{caps}");

    let without = toolkit(None);
    assert_eq!(text(&run(&without, "el_client_caps")), "none");
}

#[test]
fn without_a_wait_for_the_server_is_refused_and_its_tool_says_so() {
    let tk = toolkit(None);
    let r = run(&tk, "el_ask_name");
    assert!(!r.is_error, "{}", r.output);
    assert!(text(&r).starts_with("refused: "), "{}", r.output);
    assert!(text(&r).contains("without a waitFor"), "{}", r.output);
}

#[test]
fn declined_is_decline_and_every_other_refusal_is_cancel() {
    // One server, one answer after another.
    let answers = [
        json!({"ok": false, "reason": "declined"}),
        json!({"ok": false, "reason": "expired"}),
        json!({"ok": false, "reason": "cancelled"}),
        json!({"ok": false}),
    ];
    let next = Arc::new(AtomicUsize::new(0));
    let pick = Arc::clone(&next);
    let (f, _) = recording(move |_| Ok(answers[pick.load(Ordering::SeqCst)].clone()));
    let tk = toolkit(Some(f));
    for (i, want) in ["decline", "cancel", "cancel", "cancel"]
        .into_iter()
        .enumerate()
    {
        next.store(i, Ordering::SeqCst);
        assert_eq!(text(&run(&tk, "el_ask_name")), want, "answer {i}");
    }
    // URL mode maps the same way.
    next.store(0, Ordering::SeqCst);
    assert_eq!(text(&run(&tk, "el_login")), "decline");
}

#[test]
fn url_mode_is_an_authorization_request_with_the_link() {
    let (f, seen) = recording(|r| Ok(json!({"id": r["id"], "ok": true})));
    let tk = toolkit(Some(f));
    let r = run(&tk, "el_login");
    assert!(!r.is_error, "{}", r.output);
    assert_eq!(text(&r), "accept");
    let asked = requests(&seen);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["kind"], "authorization");
    assert_eq!(asked[0]["prompt"], "Log in to Acme");
    assert_eq!(asked[0]["url"], "https://auth.example/authorize?client=tn");
    assert!(asked[0].get("data").is_none(), "{}", asked[0]);
}

#[test]
fn a_failing_wait_for_gives_a_clean_result() {
    // One server; the waitFor fails a different way each call.
    let how = Arc::new(AtomicUsize::new(0));
    let pick = Arc::clone(&how);
    let f: WaitFor =
        Arc::new(
            move |_: &Value, _: &CancelToken| match pick.load(Ordering::SeqCst) {
                0 => Err("no human here".into()),
                1 => Ok(json!({"ok": "yes"})),
                _ => quiet_panic::quietly(|| panic!("the host's waitFor panicked on purpose")),
            },
        );
    let tk = toolkit(Some(f));
    for (i, what) in ["an error", "a bad answer", "a panic"]
        .into_iter()
        .enumerate()
    {
        how.store(i, Ordering::SeqCst);
        let r = run(&tk, "el_ask_name");
        // The server's tool got an error reply, caught it and finished.
        assert!(!r.is_error, "{what}: {}", r.output);
        assert!(text(&r).starts_with("refused: "), "{what}: {}", r.output);
        assert!(text(&r).contains("waitFor"), "{what}: {}", r.output);
        // The session is still good for the next call.
        assert!(!run(&tk, "el_client_caps").is_error, "{what}");
    }
}

/// A waitFor that blocks until its stop token fires (bounded), and reports
/// whether it did.
fn blocking() -> (WaitFor, Arc<Mutex<Option<bool>>>) {
    let stopped = Arc::new(Mutex::new(None));
    let flag = Arc::clone(&stopped);
    let f: WaitFor = Arc::new(move |_: &Value, stop: &CancelToken| {
        let mut waited = Duration::ZERO;
        while !stop.is_cancelled() && waited < Duration::from_secs(15) {
            std::thread::sleep(Duration::from_millis(10));
            waited += Duration::from_millis(10);
        }
        *flag.lock().unwrap_or_else(|p| p.into_inner()) = Some(stop.is_cancelled());
        Ok(json!({"ok": true, "data": {"name": "too late"}}))
    });
    (f, stopped)
}

fn wait_stopped(stopped: &Arc<Mutex<Option<bool>>>) -> Option<bool> {
    for _ in 0..1000 {
        if let Some(v) = *stopped.lock().unwrap_or_else(|p| p.into_inner()) {
            return Some(v);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

#[test]
fn the_call_deadline_ends_the_wait() {
    let (f, stopped) = blocking();
    let tk = toolkit(Some(f));
    let ctx = ExecContext {
        timeout_ms: Some(400),
        ..ExecContext::default()
    };
    let r = tk.execute("el_ask_name", json!({}), &ctx);
    assert!(r.is_error, "{}", r.output);
    assert!(r.output.contains("timeout"), "{}", r.output);
    assert_eq!(
        wait_stopped(&stopped),
        Some(true),
        "the waitFor was not told to stop"
    );
}

#[test]
fn cancelling_the_call_ends_the_wait() {
    let (f, stopped) = blocking();
    let tk = toolkit(Some(f));
    let cancel = CancelToken::new();
    let ctx = ExecContext {
        cancel: Some(cancel.clone()),
        ..ExecContext::default()
    };
    let r = std::thread::scope(|s| {
        let call = s.spawn(|| tk.execute("el_ask_name", json!({}), &ctx));
        std::thread::sleep(Duration::from_millis(300));
        cancel.cancel();
        call.join().unwrap_or_else(|_| panic!("the call panicked"))
    });
    assert!(r.is_error, "{}", r.output);
    assert!(r.output.contains("cancelled"), "{}", r.output);
    assert_eq!(
        wait_stopped(&stopped),
        Some(true),
        "the waitFor was not told to stop"
    );
}

#[test]
fn elicitation_works_over_streamable_http() {
    let (mut child, port) = spawn_on_own_port("sdk_elicit_server.py", "streamable-http");
    let mut up = false;
    for _ in 0..400 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let outcome = std::panic::catch_unwind(|| {
        assert!(up, "the server did not start");
        let cfg = ToolkitConfig::from_value(&json!({
            "builtins": false,
            "mcpConfig": {"mcpServers": {"el": {
                "url": format!("http://127.0.0.1:{port}/mcp"), "timeout": 20000}}}
        }))
        .unwrap_or_else(|e| panic!("config: {e}"));
        let (f, _) =
            recording(|r| Ok(json!({"id": r["id"], "ok": true, "data": {"name": "Grace"}})));
        let opts = BuildOptions {
            wait_for: Some(f),
            ..BuildOptions::default()
        };
        let tk = Toolkit::build_with(&cfg, &opts).unwrap_or_else(|e| panic!("{e}"));
        let r = run(&tk, "el_ask_name");
        assert_eq!(
            text(&r),
            "accepted: name=Grace age=0",
            "{}",
            tk.render("status").unwrap_or_default()
        );
    });
    let _ = child.kill();
    let _ = child.wait();
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
}

/// In the client loop (SPEC §8): a model calls the server's tool, the server
/// elicits, and one host function — given to the toolkit here, and the
/// shape a client's `waitFor` slot takes — answers; the model gets the
/// tool's output with the answer in it.
#[test]
fn an_elicitation_inside_a_client_run_reaches_the_model() {
    use toolnexus::client::{Client, HostFn, RunData, RunRequest, Slot};
    let answer =
        |request: &Value| json!({"id": request["id"], "ok": true, "data": {"name": "Lin"}});
    let f: WaitFor = Arc::new(move |request: &Value, _: &CancelToken| Ok(answer(request)));
    let tk = toolkit(Some(f));
    let generate: HostFn = Arc::new(|request: &Value, _: RunData| {
        if request["turn"] == 0 {
            return Ok(Some(
                json!({"toolCalls": [{"name": "el_ask_name", "arguments": {}}]}),
            ));
        }
        let result = request["messages"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["role"] == "tool"))
            .and_then(|m| m["content"].as_str())
            .unwrap_or("?")
            .to_string();
        Ok(Some(json!({"content": format!("the tool said {result}")})))
    });
    let client = Client::in_process(&json!({"model": "local"}), generate)
        .unwrap_or_else(|e| panic!("client: {e}"));
    // The client's own waitFor slot is the same Request → Answer shape.
    let same: HostFn = Arc::new(move |request: &Value, _: RunData| Ok(Some(answer(request))));
    client.set_callback(Slot::WaitFor, Some(same));
    let run = RunRequest {
        prompt: "who am I?".into(),
        history: Vec::new(),
    };
    let result = client
        .run(&tk, &run, &CancelToken::new(), RunData(0))
        .unwrap_or_else(|e| panic!("run: {e}"));
    assert_eq!(result["status"], "done", "{result}");
    let text = result["text"].as_str().unwrap_or_default();
    assert!(text.contains("accepted: name=Lin age=0"), "{text}");
}
