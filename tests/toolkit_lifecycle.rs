//! A toolkit owns what its MCP servers started: freeing it (the path
//! `tn_toolkit_free` takes) ends every child process tree, even a server
//! that ignores stdin EOF and SIGTERM and leaves a grandchild behind.

mod mcp_support;

use mcp_support::{alive, all_dead_soon, server_script};
use serde_json::json;
use toolnexus::tool::ExecContext;
use toolnexus::toolkit::Toolkit;

#[test]
fn freeing_the_toolkit_ends_every_mcp_child_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir
        .path()
        .join("grandchild.pid")
        .to_string_lossy()
        .into_owned();
    let cfg = json!({
        "builtins": false,
        "mcpConfig": {"mcpServers": {
            "stubborn": {"command": ["python3", server_script("ignore_eof.py"), pid_file], "timeout": 20000},
            "plain": {"command": ["python3", server_script("hang_call.py")], "timeout": 20000}
        }}
    });
    let tk = Toolkit::build_from_json(&cfg.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let status: serde_json::Value =
        serde_json::from_str(&tk.render("status").unwrap_or_default()).unwrap_or_default();
    assert_eq!(status["statuses"]["stubborn"], "connected", "{status}");
    assert_eq!(status["statuses"]["plain"], "connected", "{status}");

    let mut pids = tk.mcp_pids();
    assert_eq!(pids.len(), 2);
    let grandchild: u32 = std::fs::read_to_string(&pid_file)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("the stubborn server wrote no grandchild pid"));
    pids.push(grandchild);
    assert!(pids.iter().all(|p| alive(*p)), "all started");

    // A tool of the toolkit works before the free.
    let names = tk.tool_names();
    assert!(names.iter().any(|n| n.starts_with("plain_")), "{names:?}");
    let _ = tk.execute("unknown", json!({}), &ExecContext::default());

    drop(tk);
    assert!(
        all_dead_soon(&pids),
        "still alive after the toolkit was freed: {:?}",
        pids.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
    );
}
