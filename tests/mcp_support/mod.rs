//! Helpers shared by the MCP integration tests.
#![allow(dead_code)]

use serde_json::Value;
use std::net::TcpStream;
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

/// Starts `script` (a Python SDK server of tests/mcp_servers/) in `mode`
/// ("streamable-http" or "sse") on a port it binds itself (own_port.py) and
/// returns the child and that port once it listens. A port picked here and
/// freed could be taken by another test process before the server binds it.
pub fn spawn_on_own_port(script: &str, mode: &str) -> (Child, u16) {
    let mut child = Command::new("python3")
        .arg(server_script(script))
        .arg(mode)
        .arg("0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {script}: {e}"));
    let stdout = child.stdout.take().expect("the server's stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(stdout).lines();
        let port = lines.find_map(|l| {
            l.ok()?
                .strip_prefix("PORT ")
                .and_then(|p| p.trim().parse::<u16>().ok())
        });
        let _ = tx.send(port);
        // Keep reading so the server never writes into a closed pipe.
        for _ in lines {}
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(Some(port)) => (child, port),
        other => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{script} {mode} did not say its port: {other:?}");
        }
    }
}

/// A Python SDK server on 127.0.0.1, killed when dropped.
pub struct HttpServer {
    child: Child,
    pub port: u16,
}

impl HttpServer {
    /// `mode` is "streamable-http" or "sse".
    pub fn start(mode: &str) -> HttpServer {
        let (child, port) = spawn_on_own_port("sdk_server.py", mode);
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

/// The Python that has the official MCP SDK: `TOOLNEXUS_PYTHON` when set
/// (a venv's interpreter, say), else `python3` on the PATH.
pub fn python() -> String {
    std::env::var("TOOLNEXUS_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// tests/mcp_clients/NAME
pub fn client_script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp_clients")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Runs the Python SDK client (tests/mcp_clients/sdk_client.py) with `plan`
/// against `target` (`["http", URL]` or `["stdio", CMD, ARGS...]`) and
/// returns the outcome of each step. Panics with the client's stderr when
/// it fails.
pub fn sdk_client(plan: &Value, target: &[&str]) -> Vec<Value> {
    let out = Command::new(python())
        .arg(client_script("sdk_client.py"))
        .arg(plan.to_string())
        .args(target)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot start the SDK client: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the SDK client failed ({}):\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str::<Vec<Value>>(last)
        .unwrap_or_else(|e| panic!("the SDK client printed no outcome ({e}): {stdout}"))
}

/// The text of a call outcome's single text part.
pub fn text_of(outcome: &Value) -> &str {
    let content = outcome["content"].as_array();
    assert!(
        content.is_some_and(|c| c.len() == 1 && c[0]["type"] == "text"),
        "expected one text part: {outcome}"
    );
    outcome["content"][0]["text"].as_str().unwrap_or_default()
}

/// Waits (a bounded while) for a file to hold a process id, and returns it.
pub fn read_pid_file(path: &std::path::Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} never held a pid",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The process ids whose parent is `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Some(child) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // "pid (comm) S ppid ..." — fields after the last ')'.
        let ppid = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) && alive(child) {
            out.push(child);
        }
    }
    out.sort_unstable();
    out
}

/// `toolnexus serve --http 127.0.0.1:0 ...`, its URL read from stdout;
/// SIGTERM on drop.
pub struct HttpGateway {
    pub child: std::process::Child,
    pub url: String,
}

impl HttpGateway {
    pub fn start(args: &[&str]) -> HttpGateway {
        use std::io::BufRead;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolnexus"))
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let mut url = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut url);
        let url = url.trim().to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "printed {url:?}");
        HttpGateway { child, url }
    }

    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(0));
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        self.child.wait().unwrap_or_else(|e| panic!("{e}"))
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `probe`'s value once it has one, within `patience` (a test failure
/// naming `what` after that).
pub fn wait_until<T>(what: &str, patience: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + patience;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < deadline, "never came: {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}
