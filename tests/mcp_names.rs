//! MCP tool names checked after sanitizing: two servers whose names
//! sanitize alike give tools of one name, which the status names as a
//! warning (the later replaces the earlier, as the conformance vectors pin,
//! or with `nameCollisions: "rename"` the later is served as `NAME_2`); a
//! name longer than 64 characters is capped, also with a warning. Servers:
//! tests/mcp_servers/sdk_server.py on the official Python SDK.

mod mcp_support;

use mcp_support::*;
use serde_json::{json, Value};
use toolnexus::tool::ExecContext;
use toolnexus::toolkit::Toolkit;

fn sdk() -> Value {
    json!({"command": [python(), server_script("sdk_server.py"), "stdio"], "timeout": 20000})
}

fn build(mcp: Value) -> (Toolkit, Value) {
    let tk = Toolkit::build_from_json(&json!({"builtins": false, "mcpConfig": mcp}).to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    let status: Value =
        serde_json::from_str(&tk.render("status").unwrap_or_default()).unwrap_or_default();
    (tk, status)
}

fn warnings(status: &Value) -> Vec<String> {
    status["warnings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|w| w.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_collision_after_sanitizing_is_a_warning_and_the_later_server_wins() {
    let (tk, status) = build(json!({"mcpServers": {"p y": sdk(), "p.y": sdk()}}));
    assert_eq!(tk.tool_names(), ["p_y_add", "p_y_echo", "p_y_explode"]);
    let w = warnings(&status);
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(
        w.iter().any(|w| w.contains(
            "server \"p.y\" tool \"echo\" replaces server \"p y\" tool \"echo\" as \"p_y_echo\""
        )),
        "{w:?}"
    );
}

#[test]
fn with_rename_both_tools_stay_and_the_later_is_renamed() {
    let (tk, status) = build(json!({
        "mcpServers": {"p y": sdk(), "p.y": sdk()},
        "nameCollisions": "rename"
    }));
    assert_eq!(
        tk.tool_names(),
        [
            "p_y_add",
            "p_y_add_2",
            "p_y_echo",
            "p_y_echo_2",
            "p_y_explode",
            "p_y_explode_2"
        ]
    );
    let w = warnings(&status);
    assert!(
        w.iter()
            .any(|w| w.contains("the later is served as \"p_y_echo_2\"")),
        "{w:?}"
    );
    // Each name reaches its own server's tool.
    for name in ["p_y_echo", "p_y_echo_2"] {
        let r = tk.execute(name, json!({"text": name}), &ExecContext::default());
        assert!(!r.is_error, "{name}: {}", r.output);
        assert!(r.output.contains(name), "{name}: {}", r.output);
    }
}

#[test]
fn a_name_longer_than_64_characters_is_capped_and_reported() {
    let server = "s".repeat(70);
    let (tk, status) = build(json!({"mcpServers": {server.clone(): sdk()}}));
    let names = tk.tool_names();
    assert_eq!(names.len(), 3, "{names:?}");
    for n in &names {
        assert_eq!(n.len(), 64, "{n}");
    }
    let w = warnings(&status);
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(w[0].contains("longer than 64 characters"), "{w:?}");
    let echo = tk
        .tools()
        .into_iter()
        .find(|t| t.description == "Echo the text argument.")
        .map(|t| t.name)
        .unwrap_or_default();
    let r = tk.execute(&echo, json!({"text": "hi"}), &ExecContext::default());
    assert!(
        !r.is_error && r.output.contains("hi"),
        "{echo}: {}",
        r.output
    );
}

#[test]
fn a_bad_name_collisions_value_is_a_config_error_in_the_status() {
    let (_, status) = build(json!({"mcpServers": {}, "nameCollisions": "merge"}));
    let e = status["errors"]["<config>"].as_str().unwrap_or_default();
    assert!(e.contains("nameCollisions"), "{status}");
}
