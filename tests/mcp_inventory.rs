//! The list-only MCP inventory (SPEC §2 Gap 6; upstream Go ListMcpTools):
//! every enabled server connected, listed and closed, tools under their
//! original names and unfiltered, per-server status, failures isolated.

mod mcp_support;

use mcp_support::{all_dead_soon, server_script};
use serde_json::json;
use toolnexus::mcp::{list_tools, parse_config};

#[test]
fn the_inventory_lists_original_names_unfiltered_and_leaves_nothing_running() {
    let config = parse_config(&json!({"mcpServers": {
        "py.sdk": {"command": ["python3", server_script("sdk_server.py"), "stdio"],
                   "tools": {"echo": true}, "timeout": 20000},
        "gone": {"command": ["/nonexistent/tn-server"]},
        "off": {"command": ["python3", server_script("sdk_server.py"), "stdio"], "disabled": true}
    }}))
    .expect("config");
    let inv = list_tools(&config);
    let v = inv.to_json();
    assert_eq!(
        v["status"],
        json!({"py.sdk": "connected", "gone": "failed", "off": "disabled"})
    );
    // The allow-list keeps only echo in a toolkit; the inventory shows all,
    // under the server's own names (no `py_sdk_` prefix).
    let mut names: Vec<&str> = v["tools"]["py.sdk"]
        .as_array()
        .expect("tools of py.sdk")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "echo", "explode"]);
    let echo = v["tools"]["py.sdk"]
        .as_array()
        .and_then(|a| a.iter().find(|t| t["name"] == "echo"))
        .expect("echo");
    assert_eq!(echo["description"], "Echo the text argument.");
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    assert!(v["tools"].get("gone").is_none());
    assert!(v["errors"]["gone"]
        .as_str()
        .is_some_and(|m| m.contains("gone")));
    assert!(v["errors"].get("py.sdk").is_none());

    // Nothing is left running: every child any thread of ours started is
    // gone (or a zombie).
    let mut pids: Vec<u32> = Vec::new();
    for task in std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .flatten()
    {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        pids.extend(
            children
                .split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    assert!(all_dead_soon(&pids), "children left: {pids:?}");
}
