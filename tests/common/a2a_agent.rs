//! The served agent the A2A SDK tests talk to (tests/a2a_sdk.rs for the
//! Python SDK, tests/a2a_js_sdk.rs for the JavaScript SDK): a toolkit of
//! `examples/skills` and two tools, and a scripted model.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::sync::Arc;
use toolnexus::a2a;
use toolnexus::client::{Client, HostFn, RunData};
use toolnexus::mcp_server::{ServeConfig, Server};
use toolnexus::toolkit::Toolkit;

/// A toolkit of `examples/skills` and two tools: `note` (answers at once)
/// and `wait` (returns only once its call is cancelled, 60 s at most).
fn toolkit() -> Toolkit {
    use toolnexus::tool::{ExecContext, Source, Tool, ToolResult};
    let skills = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills");
    let tk = Toolkit::build_from_json(&json!({"skillsDir": skills}).to_string()).expect("toolkit");
    let note = |_: &Value, _: &ExecContext| ToolResult::ok("noted");
    let wait = |_: &Value, ctx: &ExecContext| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            if ctx.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
                return ToolResult::error("cancelled");
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        ToolResult::error("never cancelled")
    };
    tk.register(Tool::new(
        "note",
        "a test tool",
        None,
        Source::Native,
        Arc::new(note),
    ));
    tk.register(Tool::new(
        "wait",
        "a test tool",
        None,
        Source::Native,
        Arc::new(wait),
    ));
    tk
}

/// An agent served on a free loopback port with the `a2a` block `block`,
/// and its base URL (no `/mcp`).
pub fn served(block: Value) -> (Server, String) {
    let tk = Arc::new(toolkit());
    // "explode" fails the run; "tool" calls `note` first, "slow" calls
    // `wait` first; then the answer is `echo: <text>`.
    let model: HostFn = Arc::new(|req: &Value, _: RunData| {
        let messages = req["messages"].as_array().cloned().unwrap_or_default();
        let last = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string();
        if last.contains("explode") {
            return Err("the model exploded".into());
        }
        let fed = messages.iter().any(|m| m["role"] == "tool");
        for (word, tool) in [("tool", "note"), ("slow", "wait")] {
            if last.contains(word) && !fed {
                return Ok(Some(
                    json!({"toolCalls": [{"name": tool, "arguments": {}}]}),
                ));
            }
        }
        Ok(Some(json!({"content": format!("echo: {last}")})))
    });
    let client = Arc::new(Client::in_process(&json!({"model": "m"}), model).expect("client"));
    let cfg = ServeConfig::from_value(&json!({"addr": "127.0.0.1:0", "a2a": block})).expect("cfg");
    let runner = a2a::client_runner(client, Arc::clone(&tk));
    let server = a2a::serve(tk, &cfg, None, Some(runner), None).expect("serve");
    let base = server
        .url()
        .and_then(|u| u.strip_suffix("/mcp"))
        .expect("url")
        .to_string();
    (server, base)
}

/// `kind:state-or-text` of each event of a stream an SDK client gave
/// (its `events` list).
pub fn kinds_and_states(r: &Value) -> Vec<String> {
    r["events"]
        .as_array()
        .map(|evs| {
            evs.iter()
                .map(|e| {
                    let what = e["state"].as_str().or(e["text"].as_str()).unwrap_or("");
                    format!("{}:{what}", e["kind"].as_str().unwrap_or("?"))
                })
                .collect()
        })
        .unwrap_or_default()
}
