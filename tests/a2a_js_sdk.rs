//! The A2A JavaScript SDK (`@a2a-js/sdk`, pinned and installed by
//! scripts/setup.sh into target/test-tools/a2a-js) as a second real client
//! of the served agent, beside the Python SDK of tests/a2a_sdk.rs: its 0.3
//! line over the 0.3 wire, its 1.x line over the 1.0 wire and (through its
//! v0.3 compatibility layer) over the 0.3 wire. Each resolves our card, sends and
//! gets a task, streams one, and cancels one mid-stream
//! (tests/a2a_clients/js_client.mjs). Without node or the installed SDK the
//! tests fail naming scripts/setup.sh (they never pass silently).

#[path = "common/a2a_agent.rs"]
mod a2a_agent;

use a2a_agent::{kinds_and_states, served};
use serde_json::{json, Value};
use std::process::Command;

/// Runs js_client.mjs with the SDK line `sdk` ("0.3", "1", "1-compat")
/// against `base` and returns the one JSON line it prints.
fn js_client(sdk: &str, base: &str, mode: &str, text: &str) -> Value {
    let root = env!("CARGO_MANIFEST_DIR");
    let script = format!("{root}/tests/a2a_clients/js_client.mjs");
    let out = match Command::new("node")
        .args([&script, sdk, base, mode, text])
        .output()
    {
        Ok(out) => out,
        Err(e) => panic!("node is not runnable ({e}): run scripts/setup.sh"),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() != Some(3),
        "the A2A JavaScript SDK is missing: run scripts/setup.sh\n{stderr}"
    );
    assert!(
        out.status.success(),
        "js client ({sdk}, {mode}) failed:\n{stderr}"
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Each SDK line, the wire it is tried on, and the card version it
/// should resolve.
const MATRIX: [(&str, &str, &str); 3] = [
    ("0.3", "0.3", "0.3.0"),
    ("1", "1.0", "1.0"),
    ("1-compat", "0.3", "0.3.0"),
];

#[test]
fn the_js_sdk_sends_and_gets_a_task() {
    for (sdk, protocol, card) in MATRIX {
        let (_server, base) = served(json!({"protocol": protocol}));
        let r = js_client(sdk, &base, "send", "hello js");
        let at = format!("{sdk} on {protocol}: {r}");
        assert_eq!(r["protocolVersion"], card, "{at}");
        assert_eq!(r["sendState"], "TASK_STATE_SUBMITTED", "{at}");
        assert_eq!(r["state"], "TASK_STATE_COMPLETED", "{at}");
        assert_eq!(r["text"], "echo: hello js", "{at}");
        let r = js_client(sdk, &base, "send", "explode now");
        let at = format!("{sdk} on {protocol}: {r}");
        assert_eq!(r["state"], "TASK_STATE_FAILED", "{at}");
        assert!(
            r["text"]
                .as_str()
                .is_some_and(|t| t.contains("the model exploded")),
            "{at}"
        );
    }
}

#[test]
fn the_js_sdk_streams_a_task() {
    for (sdk, protocol, _) in MATRIX {
        let (_server, base) = served(json!({"protocol": protocol}));
        let r = js_client(sdk, &base, "stream", "use a tool");
        let at = format!("{sdk} on {protocol}: {r}");
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
            "{at}"
        );
        assert_eq!(r["events"][2]["text"], "calling note", "{at}");
        assert_eq!(r["events"][3]["text"], "note done", "{at}");
        assert_eq!(r["after"], "TASK_STATE_COMPLETED", "{at}");
        // A failing run: its last event is the failure, with the error.
        let r = js_client(sdk, &base, "stream", "explode");
        let at = format!("{sdk} on {protocol}: {r}");
        let last = r["events"].as_array().and_then(|e| e.last()).cloned();
        let last = last.unwrap_or_default();
        assert_eq!(last["state"], "TASK_STATE_FAILED", "{at}");
        assert!(
            last["text"]
                .as_str()
                .is_some_and(|t| t.contains("the model exploded")),
            "{at}"
        );
        assert_eq!(r["after"], "TASK_STATE_FAILED", "{at}");
    }
}

#[test]
fn the_js_sdk_cancels_a_streamed_task() {
    for (sdk, protocol, _) in MATRIX {
        let (_server, base) = served(json!({"protocol": protocol}));
        let r = js_client(sdk, &base, "cancel", "slow work");
        let at = format!("{sdk} on {protocol}: {r}");
        assert_eq!(r["canceled"], "TASK_STATE_CANCELED", "{at}");
        let last = r["events"].as_array().and_then(|e| e.last()).cloned();
        assert_eq!(
            last.unwrap_or_default()["state"],
            "TASK_STATE_CANCELED",
            "{at}"
        );
        assert_eq!(r["after"], "TASK_STATE_CANCELED", "{at}");
    }
}
