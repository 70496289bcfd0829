//! Helpers shared by the MCP integration tests.
#![allow(dead_code)]

use serde_json::Value;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use toolnexus::mcp::{self, McpSource};
use toolnexus::tool::{ExecContext, Tool, ToolResult};

/// tests/mcp_servers/NAME
pub fn server_script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp_servers")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Builds the source from an mcpConfig value through the public API.
pub fn connect(config: Value) -> McpSource {
    let cfg = mcp::parse_config(&config).unwrap_or_else(|e| panic!("parse_config failed: {e}"));
    mcp::connect(&cfg)
}

pub fn tool<'a>(source: &'a McpSource, name: &str) -> &'a Tool {
    source
        .tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}; have {:?}", names(source)))
}

pub fn names(source: &McpSource) -> Vec<String> {
    source.tools.iter().map(|t| t.name.clone()).collect()
}

pub fn call(source: &McpSource, name: &str, args: Value) -> ToolResult {
    tool(source, name)
        .exec
        .execute(&args, &ExecContext::default())
}

pub fn status<'a>(source: &'a McpSource, server: &str) -> &'a str {
    source
        .statuses
        .iter()
        .find(|(s, _)| s == server)
        .map(|(_, st)| st.as_str())
        .unwrap_or("<absent>")
}

pub fn error<'a>(source: &'a McpSource, server: &str) -> &'a str {
    source
        .errors
        .iter()
        .find(|(s, _)| s == server)
        .map(|(_, e)| e.as_str())
        .unwrap_or("")
}

/// Whether a process is alive: present in /proc and not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            // "pid (comm) S ..." — the state follows the last ')'.
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
    }
}

/// Waits (a bounded while) for the processes to be gone; the reaper of an
/// orphaned grandchild can trail its death by a moment.
pub fn all_dead_soon(pids: &[u32]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if pids.iter().all(|p| !alive(*p)) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

/// A Python SDK server on 127.0.0.1, killed when dropped.
pub struct HttpServer {
    child: Child,
    pub port: u16,
}

impl HttpServer {
    /// `mode` is "streamable-http" or "sse".
    pub fn start(mode: &str) -> HttpServer {
        let port = free_port();
        let child = Command::new("python3")
            .arg(server_script("sdk_server.py"))
            .arg(mode)
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the SDK server: {e}"));
        let server = HttpServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the SDK {mode} server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
