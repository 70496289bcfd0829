//! The official A2A Python SDK (`a2a-sdk`, pinned in tests/requirements.txt)
//! as a real peer of the served agent: its client resolves our card, sends
//! a message and polls the task, over the 0.3 wire (upstream's card) and the
//! 1.0 wire (a card with `"protocol": "1.0"`). Without the SDK installed the
//! test fails naming the setup step (it never passes silently).

#[path = "common/a2a_agent.rs"]
mod a2a_agent;

use a2a_agent::{kinds_and_states, served};
use serde_json::{json, Value};
use std::process::Command;
use toolnexus::toolkit::Toolkit;

fn python() -> String {
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python3");
    if std::path::Path::new(venv).exists() {
        venv.into()
    } else {
        "python3".into()
    }
}

fn sdk_client(base: &str, text: &str) -> Value {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/a2a_clients/sdk_client.py"
    );
    let out = Command::new(python())
        .args([script, base, text])
        .output()
        .expect("run python3");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'a2a'"),
        "the a2a-sdk package is missing: run scripts/setup.sh (or .venv/bin/pip install -r tests/requirements.txt)"
    );
    assert!(out.status.success(), "sdk client failed:\n{stderr}");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn the_sdk_client_talks_to_our_agent_over_0_3() {
    let (_server, base) = served(json!({}));
    let r = sdk_client(&base, "hello sdk");
    assert_eq!(r["protocolVersion"], "0.3.0", "{r}");
    assert_eq!(r["state"], "TASK_STATE_COMPLETED", "{r}");
    assert_eq!(r["text"], "echo: hello sdk", "{r}");
    let r = sdk_client(&base, "explode now");
    assert_eq!(r["state"], "TASK_STATE_FAILED", "{r}");
    assert!(
        r["text"]
            .as_str()
            .is_some_and(|t| t.contains("the model exploded")),
        "{r}"
    );
}

#[test]
fn the_sdk_client_talks_to_our_agent_over_1_0() {
    let (_server, base) = served(json!({"protocol": "1.0"}));
    let r = sdk_client(&base, "hello one");
    assert_eq!(r["protocolVersion"], "1.0", "{r}");
    assert_eq!(r["sendState"], "TASK_STATE_SUBMITTED", "{r}");
    assert_eq!(r["state"], "TASK_STATE_COMPLETED", "{r}");
    assert_eq!(r["text"], "echo: hello one", "{r}");
}

fn sdk_stream(base: &str, text: &str, cancel: bool) -> Value {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/a2a_clients/sdk_stream.py"
    );
    let mut cmd = Command::new(python());
    cmd.args([script, base, text]);
    if cancel {
        cmd.arg("cancel");
    }
    let out = cmd.output().expect("run python3");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'a2a'"),
        "the a2a-sdk package is missing: run scripts/setup.sh (or .venv/bin/pip install -r tests/requirements.txt)"
    );
    assert!(out.status.success(), "sdk stream client failed:\n{stderr}");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn the_sdk_client_streams_a_task_over_0_3_and_1_0() {
    for protocol in ["0.3", "1.0"] {
        let (_server, base) = served(json!({"protocol": protocol}));
        let r = sdk_stream(&base, "use a tool", false);
        assert_eq!(
            kinds_and_states(&r),
            [
                "task:TASK_STATE_SUBMITTED",
                "status:TASK_STATE_WORKING",
                "status:TASK_STATE_WORKING",
                "status:TASK_STATE_WORKING",
                "artifact:echo: use a tool",
                "status:TASK_STATE_COMPLETED",
            ],
            "{protocol}: {r}"
        );
        assert_eq!(r["events"][2]["text"], "calling note", "{protocol}: {r}");
        assert_eq!(r["events"][3]["text"], "note done", "{protocol}: {r}");
        assert_eq!(r["after"], "TASK_STATE_COMPLETED", "{protocol}: {r}");
        // A failing run: its last event is the failure, with the error.
        let r = sdk_stream(&base, "explode", false);
        let last = r["events"].as_array().and_then(|e| e.last()).cloned();
        let last = last.unwrap_or_default();
        assert_eq!(last["state"], "TASK_STATE_FAILED", "{protocol}: {r}");
        assert!(
            last["text"]
                .as_str()
                .is_some_and(|t| t.contains("the model exploded")),
            "{protocol}: {r}"
        );
    }
}

#[test]
fn the_sdk_client_cancels_a_streamed_task_over_0_3_and_1_0() {
    for protocol in ["0.3", "1.0"] {
        let (_server, base) = served(json!({"protocol": protocol}));
        let r = sdk_stream(&base, "slow work", true);
        assert_eq!(r["canceled"], "TASK_STATE_CANCELED", "{protocol}: {r}");
        let last = r["events"].as_array().and_then(|e| e.last()).cloned();
        assert_eq!(
            last.unwrap_or_default()["state"],
            "TASK_STATE_CANCELED",
            "{protocol}: {r}"
        );
        assert_eq!(r["after"], "TASK_STATE_CANCELED", "{protocol}: {r}");
    }
}

/// The SDK's server on a free port, killed on drop.
struct SdkServer {
    child: std::process::Child,
    card: String,
}

impl Drop for SdkServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sdk_server() -> SdkServer {
    use std::io::BufRead;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/a2a_clients/sdk_server.py"
    );
    let mut child = Command::new(python())
        .arg(script)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run python3");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    let _ = std::io::BufReader::new(stdout).read_line(&mut line);
    let Some(port) = line.trim().strip_prefix("PORT ") else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the a2a-sdk server did not start (is a2a-sdk installed? run scripts/setup.sh); said: {line:?}");
    };
    let card = format!("http://127.0.0.1:{port}/.well-known/agent-card.json");
    SdkServer { child, card }
}

fn caller(card: &str, protocol: Option<&str>) -> Toolkit {
    let mut agent = json!({"card": card, "pollEvery": 20});
    if let Some(p) = protocol {
        agent["protocol"] = json!(p);
    }
    let tk =
        Toolkit::build_from_json(&json!({"builtins": false, "agents": {"sdk": agent}}).to_string())
            .expect("toolkit");
    let status = tk.render("status").expect("status");
    assert_eq!(tk.tool_names(), ["sdkagent_echo"], "{status}");
    tk
}

#[test]
fn our_outbound_tool_uses_an_sdk_agent_over_1_0_and_0_3() {
    use toolnexus::tool::ExecContext;
    let server = sdk_server();
    // The card is a 1.0 card: 1.0 is spoken without being asked for.
    for protocol in [None, Some("1.0"), Some("0.3")] {
        let tk = caller(&server.card, protocol);
        let r = tk.execute(
            "sdkagent_echo",
            json!({"task": "hello"}),
            &ExecContext::default(),
        );
        assert!(!r.is_error, "{protocol:?}: {r:?}");
        assert_eq!(r.output, "SDK: hello", "{protocol:?}");
        let md = r.metadata.clone().expect("metadata");
        assert_eq!(md["agent"], "sdkagent");
        assert_eq!(md["state"], "completed", "{protocol:?}");
        let r = tk.execute(
            "sdkagent_echo",
            json!({"task": "please fail"}),
            &ExecContext::default(),
        );
        assert!(r.is_error, "{protocol:?}: {r:?}");
        let id = r
            .metadata
            .as_ref()
            .map(|m| m["taskId"].clone())
            .unwrap_or_default();
        assert_eq!(
            r.output,
            format!("A2A task {} failed: boom", id.as_str().unwrap_or_default()),
            "{protocol:?}"
        );
    }
    // Upstream's own wire is what a stock SDK server refuses (contract §3.5).
    let tk = caller(&server.card, Some("toolnexus"));
    let r = tk.execute(
        "sdkagent_echo",
        json!({"task": "hello"}),
        &ExecContext::default(),
    );
    assert!(r.is_error, "{r:?}");
}
