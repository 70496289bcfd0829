//! The gateway driven by the MCP Inspector's command-line mode (a client
//! nobody here wrote), over stdio and streamable HTTP: `toolnexus serve`
//! aggregating an SDK stdio server, skills and builtins.
//!
//! scripts/setup.sh installs the pinned Inspector under
//! target/test-tools/inspector; `TOOLNEXUS_INSPECTOR` names another one.

mod mcp_support;

use mcp_support::*;
use serde_json::{json, Value};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_toolnexus");
const SKILLS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills");

fn inspector() -> String {
    std::env::var("TOOLNEXUS_INSPECTOR").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/target/test-tools/inspector/node_modules/.bin/inspector"
        )
        .into()
    })
}

/// `inspector --cli --method ... -- TARGET...`; its stdout as JSON. The
/// Inspector exits 0 for a result, and 5 for one with `isError: true`.
fn inspect(target: &[&str], method: &[&str]) -> Value {
    let path = inspector();
    assert!(
        std::path::Path::new(&path).exists(),
        "no MCP Inspector at {path}: run scripts/setup.sh"
    );
    let out = Command::new(&path)
        .arg("--cli")
        .args(method)
        .arg("--")
        .args(target)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run the Inspector: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("the Inspector printed no JSON ({e}): {stdout}"));
    let want = if v["isError"] == json!(true) { 5 } else { 0 };
    assert_eq!(
        out.status.code(),
        Some(want),
        "the Inspector failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

fn gateway_config(dir: &std::path::Path) -> String {
    let path = dir.join("mcp.json");
    let cfg = json!({"mcpServers": {"py": {
        "command": [python(), server_script("sdk_server.py"), "stdio"], "timeout": 20000
    }}});
    std::fs::write(&path, cfg.to_string()).unwrap_or_else(|e| panic!("{e}"));
    path.to_string_lossy().into_owned()
}

fn assert_lists_every_source(listed: &Value) {
    let tools = listed["tools"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for n in ["py_echo", "py_add", "skill", "bash", "read", "webfetch"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let echo = tools.iter().find(|t| t["name"] == "py_echo");
    assert_eq!(
        echo.map(|t| t["description"].clone()),
        Some(json!("Echo the text argument."))
    );
    assert_eq!(
        echo.map(|t| t["inputSchema"]["required"].clone()),
        Some(json!(["text"]))
    );
}

fn assert_calls_work(target: &[&str]) {
    let echoed = inspect(
        target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "py_echo",
            "--tool-arg",
            "text=inspected",
        ],
    );
    assert_eq!(echoed["isError"], json!(false), "{echoed}");
    let text = echoed["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(
        serde_json::from_str::<Value>(text).ok(),
        Some(json!({"result": "inspected"}))
    );
    let skill = inspect(
        target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "skill",
            "--tool-arg",
            "name=hello-world",
        ],
    );
    assert!(
        skill["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("<skill_content name=\"hello-world\">")),
        "{skill}"
    );
    let failed = inspect(
        target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "bash",
            "--tool-arg",
            "command=echo no >&2; exit 5",
        ],
    );
    assert_eq!(failed["isError"], json!(true), "{failed}");
    assert_eq!(
        failed["content"],
        json!([{"type": "text", "text": "no\nexit code 5"}])
    );
}

#[test]
fn the_inspector_lists_and_calls_the_gateway_over_stdio() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let cfg = gateway_config(dir.path());
    let target = [
        BIN, "serve", "--stdio", "--config", &cfg, "--skills", SKILLS,
    ];
    assert_lists_every_source(&inspect(&target, &["--method", "tools/list"]));
    assert_calls_work(&target);
}

#[test]
fn the_inspector_lists_and_calls_the_gateway_over_streamable_http() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let cfg = gateway_config(dir.path());
    let gw = HttpGateway::start(&["--config", &cfg, "--skills", SKILLS]);
    let target = [gw.url.as_str()];
    assert_lists_every_source(&inspect(
        &target,
        &["--transport", "http", "--method", "tools/list"],
    ));
    assert_calls_work(&target);
}
