//! MCP servers as tools (SPEC §2): stdio children and remote servers
//! (streamable HTTP, falling back to legacy HTTP+SSE), connected in
//! parallel, each bounded, each isolated: a server that fails shows up in
//! the status and never fails the build.
//!
//! - `mod.rs`          parse the config, connect every server, the `McpSource`
//! - `config.rs`       which servers exist and how to reach them
//! - `session.rs`      one live session: connect, list, call, close
//! - `stdio.rs`        the child process behind a stdio server
//! - `lines.rs`        the stdio transport: one JSON-RPC message per line
//! - `direct.rs`       `tools/call` on a stdio session without rmcp's loop
//! - `direct_tests.rs` the direct path against a real server process
//! - `progress_tests.rs` progress-aware timeouts on both stdio paths
//! - `sse.rs`          the legacy HTTP+SSE transport
//! - `guarded.rs`      rmcp's streamable HTTP client, requests ended on drop
//! - `known_ids.rs`    drops answers to requests never sent
//! - `elicit.rs`       the elicitation bridge onto the host's `waitFor`
//! - `fault.rs`        what went wrong with a server, as an enum
//! - `auth.rs`         OAuth 2.1 (MCP authorization) for streamable HTTP
//! - `resource_tools.rs` resources and prompts as tools (`resourcesAsTools`)
//! - `refresh.rs`      `list_changed`: a server's tools listed again, live
//!
//! `parse_config` reads `mcpConfig`; `connect` turns it into an `McpSource`
//! of tools named `sanitize(server)_sanitize(tool)` plus statuses, errors and
//! the live sessions, which close (ending every child process tree) on drop.

pub mod auth;
pub mod config;
mod direct;
pub mod elicit;
mod fault;
mod guarded;
mod known_ids;
mod lines;
mod proxy;
mod refresh;
mod relay;
mod resource_tools;
mod session;
mod sse;
mod stdio;

pub use auth::Authorize;
pub use config::{parse_config, McpConfig, ServerConfig, Transport, DEFAULT_TIMEOUT_MS};
pub use elicit::WaitFor;
pub use proxy::Upstreams;
pub use refresh::{Generations, Live, ToolsChanged};
pub use session::RemoteTool;

use crate::cancel::CancelToken;
use crate::json::normalize_args;
use crate::runtime::block_on_anywhere;
use crate::tool::{ExecContext, Execute, Tool, ToolFuture, ToolResult};
use serde_json::Value;
use session::{PhaseCell, Session, SERVER_SLACK};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// What connecting the configured servers produced.
#[derive(Default)]
pub struct McpSource {
    /// Source `Mcp`, named `sanitize(server)_sanitize(tool)` (capped at
    /// [`MAX_NAME`]), in server order then list order; when two tools get
    /// the same name the later one wins, or with `nameCollisions: "rename"`
    /// is served as `NAME_2`; either way `warnings` says so. The list as
    /// connected: later `list_changed` refreshes change the sessions' live
    /// layer ([`McpSessions::live`]), which a toolkit serves.
    pub tools: Vec<Tool>,
    /// server → `connected` | `failed` | `disabled`, in config order.
    pub statuses: Vec<(String, String)>,
    /// server → message (never containing header values).
    pub errors: Vec<(String, String)>,
    /// connected server → the protocol revision negotiated in `initialize`.
    pub protocols: Vec<(String, String)>,
    /// Name clashes and renames, one sentence each.
    pub warnings: Vec<String>,
    /// Owns every live session.
    pub sessions: McpSessions,
}

/// The live sessions of one toolkit. Closing (explicitly or on drop) closes
/// every session and ends every child process tree: stdin closed, a grace
/// period, SIGTERM, SIGKILL. Tools of a closed session answer with an error.
#[derive(Default)]
pub struct McpSessions {
    sessions: Vec<Arc<Session>>,
    /// The MCP tools as the servers list them now (`refresh`).
    live: Option<Arc<refresh::Live>>,
}

impl McpSessions {
    /// The live servers, for the gateway to pass resources, prompts,
    /// completions and logging through.
    pub fn upstreams(&self) -> Upstreams {
        Upstreams::new(self.sessions.clone())
    }

    /// `(toolkit name, the tool's own name on its server)` of every MCP tool.
    pub fn origins(&self) -> Vec<(String, String)> {
        self.live.as_ref().map_or_else(Vec::new, |l| {
            l.origins().into_iter().map(|(n, _, t)| (n, t)).collect()
        })
    }

    /// The live MCP layer: its tools now, its generations, its changes.
    pub fn live(&self) -> Option<Arc<refresh::Live>> {
        self.live.clone()
    }

    /// The process ids of the stdio servers still owned (for diagnostics and
    /// tests that check nothing survives).
    pub fn pids(&self) -> Vec<u32> {
        self.sessions.iter().filter_map(|s| s.pid()).collect()
    }

    /// Closes every session in parallel. Idempotent.
    pub fn close(&mut self) {
        let sessions = std::mem::take(&mut self.sessions);
        if sessions.is_empty() {
            return;
        }
        let work = async move {
            let closing: Vec<_> = sessions
                .into_iter()
                .map(|s| tokio::spawn(async move { s.close().await }))
                .collect();
            for c in closing {
                let _ = c.await;
            }
        };
        block_on_anywhere(work);
    }
}

impl Drop for McpSessions {
    fn drop(&mut self) {
        self.close();
    }
}

/// A tool that routes to tools/call on its server.
struct McpTool {
    session: Arc<Session>,
    remote: String,
}

impl McpTool {
    /// The tools/call of `args` as a future that owns what it needs, or the
    /// result at once when the arguments cannot be sent.
    fn call(
        &self,
        args: &Value,
        ctx: &ExecContext,
    ) -> std::result::Result<
        impl std::future::Future<Output = ToolResult> + Send + 'static,
        ToolResult,
    > {
        let args = match normalize_args(args.clone()) {
            Value::Object(m) => m,
            other => {
                return Err(ToolResult::error(format!(
                    "mcp tool \"{}\" of server \"{}\": arguments must be a JSON object, got {}",
                    self.remote,
                    self.session.name,
                    crate::json::type_name(&other)
                )))
            }
        };
        // The host's timeout is a deadline for the call (CONTRACT.md §5);
        // the server's restarts on its progress.
        let limit = match ctx.timeout_ms {
            Some(ms) => session::Limit::Total(Duration::from_millis(ms)),
            None => session::Limit::Idle(self.session.timeout),
        };
        let session = Arc::clone(&self.session);
        let remote = self.remote.clone();
        let cancel = ctx.cancel.clone();
        let relay = ctx.relay.clone();
        Ok(async move {
            session
                .call_tool_relayed(&remote, args, limit, cancel.as_ref(), relay.as_ref())
                .await
        })
    }
}

impl Execute for McpTool {
    fn execute(&self, args: &Value, ctx: &ExecContext) -> ToolResult {
        match self.call(args, ctx) {
            Ok(call) => block_on_anywhere(call),
            Err(refused) => refused,
        }
    }

    fn execute_async<'a>(
        &'a self,
        args: &'a Value,
        ctx: &'a ExecContext,
    ) -> Option<ToolFuture<'a>> {
        Some(match self.call(args, ctx) {
            Ok(call) => Box::pin(call),
            Err(refused) => Box::pin(std::future::ready(refused)),
        })
    }
}

enum Outcome {
    Disabled,
    Connected(Box<Session>, Vec<session::RemoteTool>),
    Failed(String),
}

/// Connects every enabled server in parallel (each bounded by its timeout per
/// phase and timeout + 500 ms overall) and never fails.
pub fn connect(config: &McpConfig) -> McpSource {
    connect_cancellable(config, None, None).unwrap_or_default()
}

/// [`connect`], abandoned as soon as `cancel` is triggered: then `None`,
/// after every attempt still running was dropped (its request ended, its
/// child process group killed), every session already made was dropped the
/// same way, and every child this call started has been reaped. A server's
/// `list_changed` refreshes its tools in the sessions' live layer
/// (`refresh`), and `on_change` hears of each change.
pub fn connect_cancellable(
    config: &McpConfig,
    cancel: Option<&CancelToken>,
    on_change: Option<ToolsChanged>,
) -> Option<McpSource> {
    if cancel.is_some_and(CancelToken::is_cancelled) {
        return None;
    }
    let started = prestart_all(config);
    block_on_anywhere(connect_all(config, started, cancel, on_change))
}

/// The longest tool name served (what OpenAI's API takes).
pub const MAX_NAME: usize = 64;

/// `name` within [`MAX_NAME`] bytes: a longer one keeps its first 55 bytes
/// (names are sanitized ASCII) and ends `_` + 8 hex digits of a hash of the
/// whole name, so two long names that share a start stay apart, the same
/// way on every run.
fn capped(name: String) -> String {
    if name.len() <= MAX_NAME {
        return name;
    }
    // FNV-1a, 32 bits: stable across builds and platforms.
    let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    let keep = MAX_NAME - 9;
    let start = name.get(..keep).unwrap_or(&name);
    format!("{start}_{hash:08x}")
}

/// `name_2`, `name_3`, ... (capped): the first no tool has yet.
fn free_name(name: &str, tools: &[Tool]) -> String {
    (2..)
        .map(|n| {
            let suffix = format!("_{n}");
            let base = name
                .get(..MAX_NAME.saturating_sub(suffix.len()))
                .unwrap_or(name);
            format!("{base}{suffix}")
        })
        .find(|c| !tools.iter().any(|t| &t.name == c))
        .unwrap_or_else(|| name.to_string())
}

/// How long a cancelled connect waits for a killed child to be reaped.
const REAP_LIMIT: Duration = Duration::from_secs(2);

/// Every enabled stdio server's process started on the calling thread, in
/// config order, before the runtime is entered ([`session::prestart`]):
/// on a toolkit's first build the servers start while the runtime's worker
/// thread does, instead of after it.
fn prestart_all(config: &McpConfig) -> Vec<session::Prestarted> {
    config.servers.iter().map(session::prestart).collect()
}

async fn connect_all(
    config: &McpConfig,
    started: Vec<session::Prestarted>,
    cancel: Option<&CancelToken>,
    on_change: Option<ToolsChanged>,
) -> Option<McpSource> {
    let phases: Vec<PhaseCell> = config.servers.iter().map(|_| PhaseCell::new()).collect();
    let mut attempts: Vec<JoinHandle<Outcome>> = config
        .servers
        .iter()
        .zip(&phases)
        .zip(started)
        .map(|((cfg, phase), pre)| spawn_connect(cfg, phase, pre))
        .collect();
    let Some(outcomes) = gather(config, &mut attempts, cancel).await else {
        abandon(attempts, &phases).await;
        return None;
    };
    let mut source = McpSource::default();
    let mut served: Vec<refresh::Served> = Vec::new();
    for (cfg, outcome) in config.servers.iter().zip(outcomes) {
        match outcome {
            Outcome::Disabled => source.statuses.push((cfg.name.clone(), "disabled".into())),
            Outcome::Failed(msg) => {
                crate::log::emit(crate::log::Level::Warn, "mcp", || msg.clone());
                source.statuses.push((cfg.name.clone(), "failed".into()));
                source.errors.push((cfg.name.clone(), msg));
            }
            Outcome::Connected(session, remote) => {
                source.statuses.push((cfg.name.clone(), "connected".into()));
                if let Some(v) = session.protocol_version() {
                    source.protocols.push((cfg.name.clone(), v));
                }
                let session: Arc<Session> = Arc::from(session);
                source.sessions.sessions.push(Arc::clone(&session));
                served.push(refresh::Served {
                    cfg: cfg.clone(),
                    session,
                    remote,
                });
            }
        }
    }
    let live = refresh::Live::new(served, config.rename_collisions, on_change);
    let (_, tools) = live.tools();
    source.tools = tools.iter().map(|t| Tool::clone(t)).collect();
    source.warnings = live.warnings();
    live.follow_all();
    source.sessions.live = Some(live);
    Some(source)
}

/// Every attempt's outcome in config order, or `None` once `cancel` fires
/// (the outcomes gathered so far are dropped then: a session dropped kills
/// its child's group).
async fn gather(
    config: &McpConfig,
    attempts: &mut [JoinHandle<Outcome>],
    cancel: Option<&CancelToken>,
) -> Option<Vec<Outcome>> {
    let mut outcomes = Vec::with_capacity(attempts.len());
    for (cfg, attempt) in config.servers.iter().zip(attempts.iter_mut()) {
        let joined = match cancel {
            None => attempt.await,
            Some(token) => tokio::select! {
                biased;
                _ = token.cancelled() => return None,
                joined = attempt => joined,
            },
        };
        outcomes.push(joined.unwrap_or_else(|e| {
            Outcome::Failed(session::failure(
                &cfg.name,
                "connect",
                format!("internal ({e})"),
            ))
        }));
    }
    Some(outcomes)
}

/// Ends a cancelled connect: every attempt aborted and awaited (its future,
/// with any child handle or session it held, is dropped by then), then each
/// child started waited on until it is reaped (bounded).
async fn abandon(attempts: Vec<JoinHandle<Outcome>>, phases: &[PhaseCell]) {
    for attempt in &attempts {
        attempt.abort();
    }
    for attempt in attempts {
        // A finished attempt's outcome (a session, say) is dropped with its
        // handle; one still running is awaited until its future is gone.
        if !attempt.is_finished() {
            let _ = attempt.await;
        }
    }
    for phase in phases {
        if let Some(child) = phase.child() {
            child.reaped_within(REAP_LIMIT).await;
        }
    }
}

/// What [`list_tools`] found (SPEC §2 Gap 6).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inventory {
    /// Per connected server, its tools under their original names, in the
    /// server's order, unfiltered by the server's `tools` allow-list (the
    /// inventory exists to write those lists).
    pub tools: Vec<(String, Vec<RemoteTool>)>,
    /// `connected` | `disabled` | `failed`, per server in config order.
    pub statuses: Vec<(String, String)>,
    pub errors: Vec<(String, String)>,
}

impl Inventory {
    /// `{"tools": {server: [{name, description, inputSchema}]}, "status":
    /// {server: status}, "errors": {server: message}}`.
    pub fn to_json(&self) -> Value {
        let tools: serde_json::Map<String, Value> = self
            .tools
            .iter()
            .map(|(server, defs)| {
                let defs = defs
                    .iter()
                    .map(|d| {
                        serde_json::json!({
                            "name": d.name,
                            "description": d.description,
                            "inputSchema": d.input_schema,
                        })
                    })
                    .collect();
                (server.clone(), Value::Array(defs))
            })
            .collect();
        let pairs = |v: &[(String, String)]| -> serde_json::Map<String, Value> {
            v.iter()
                .map(|(k, s)| (k.clone(), Value::from(s.as_str())))
                .collect()
        };
        serde_json::json!({
            "tools": tools,
            "status": pairs(&self.statuses),
            "errors": pairs(&self.errors),
        })
    }
}

/// Connects to every enabled server, lists its tools and disconnects
/// (SPEC §2 Gap 6): no toolkit, nothing left running when it returns. A
/// server that fails is a `failed` status with its message, never an error
/// for the whole call.
pub fn list_tools(config: &McpConfig) -> Inventory {
    let started = prestart_all(config);
    block_on_anywhere(async {
        let attempts: Vec<_> = config
            .servers
            .iter()
            .zip(started)
            .map(|(cfg, pre)| spawn_connect(cfg, &PhaseCell::new(), pre))
            .collect();
        let mut inv = Inventory::default();
        for (cfg, attempt) in config.servers.iter().zip(attempts) {
            let outcome = attempt.await.unwrap_or_else(|e| {
                Outcome::Failed(session::failure(
                    &cfg.name,
                    "connect",
                    format!("internal ({e})"),
                ))
            });
            let status = match outcome {
                Outcome::Disabled => "disabled",
                Outcome::Failed(msg) => {
                    inv.errors.push((cfg.name.clone(), msg));
                    "failed"
                }
                Outcome::Connected(session, tools) => {
                    session.close().await;
                    inv.tools.push((cfg.name.clone(), tools));
                    "connected"
                }
            };
            inv.statuses.push((cfg.name.clone(), status.into()));
        }
        inv
    })
}

/// Starts a stdio server's process now, or adopts the one `pre` started
/// ([`session::start_process`]), and its connect in a task of its own. The
/// connect's future (tens of KB) is made on the heap inside its task, not on
/// the calling thread's stack and moved from there: a host thread with a
/// 64 KiB stack can build (bindings/c/tests/hostile.c, `small_stack`).
fn spawn_connect(
    cfg: &ServerConfig,
    phase: &PhaseCell,
    pre: session::Prestarted,
) -> JoinHandle<Outcome> {
    let (cfg, phase) = (cfg.clone(), phase.clone());
    let started = session::start_process(&cfg, &phase, pre);
    tokio::spawn(async move { Box::pin(connect_one(&cfg, &phase, started)).await })
}

async fn connect_one(cfg: &ServerConfig, phase: &PhaseCell, started: session::Started) -> Outcome {
    if !cfg.enabled {
        return Outcome::Disabled;
    }
    // The time the host spends in an OAuth `authorize` is not counted.
    let connected = phase
        .clock()
        .bound(
            cfg.timeout + SERVER_SLACK,
            session::connect(cfg, phase, started),
        )
        .await;
    match connected {
        Some(Ok((session, tools))) => Outcome::Connected(Box::new(session), tools),
        Some(Err(msg)) => Outcome::Failed(msg),
        None => Outcome::Failed(session::failure(
            &cfg.name,
            phase.get(),
            fault::Fault::no_answer_within(cfg.timeout),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::session::shape_call_result;
    use serde_json::{json, Value};

    #[test]
    fn the_source_can_live_in_a_shared_toolkit() {
        fn shared<T: Send + Sync>() {}
        shared::<super::McpSource>();
        shared::<super::McpConfig>();
    }

    #[test]
    fn call_results_are_shaped_as_spec_section_2_says() {
        let r = shape_call_result(&json!({"content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "x", "mimeType": "image/png"},
            {"type": "text", "text": "second"}]}));
        assert_eq!((r.output.as_str(), r.is_error), ("first\nsecond", false));
        let r = shape_call_result(
            &json!({"isError": true, "content": [{"type": "text", "text": "bad"}]}),
        );
        assert_eq!((r.output.as_str(), r.is_error), ("bad", true));
        let r = shape_call_result(&json!({"content": [], "structuredContent": {"z": 1, "a": 2}}));
        assert_eq!(r.output, r#"{"z":1,"a":2}"#);
        let r = shape_call_result(&json!({"content": []}));
        assert_eq!((r.output.as_str(), r.is_error), ("", false));
        assert!(r.parts.is_empty());
    }

    /// Media in a call result becomes §1B parts on every branch (upstream
    /// 0.21 mcp_source._collect_parts; test_multimodal.py's MCP cases).
    #[test]
    fn media_in_call_results_becomes_parts() {
        let r = shape_call_result(&json!({"content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///n.txt", "text": "embedded note"}},
            {"type": "resource", "resource": {"uri": "file:///b.pdf", "blob": "JVBERg==", "mimeType": "application/pdf"}},
            {"type": "resource_link", "uri": "https://h/r.bin", "name": "r.bin"},
            {"type": "audio", "data": "SUQz", "mimeType": "audio/mpeg"}]}));
        assert_eq!(r.output, "first\nembedded note");
        let parts: Vec<Value> = r.parts.iter().map(|p| p.to_value()).collect();
        assert_eq!(
            parts,
            vec![
                json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}),
                json!({"type": "file", "mimeType": "application/pdf", "data": "JVBERg==", "name": "file:///b.pdf"}),
                json!({"type": "file", "mimeType": "application/octet-stream", "url": "https://h/r.bin", "name": "r.bin"}),
                json!({"type": "audio", "mimeType": "audio/mpeg", "data": "SUQz"}),
            ]
        );
        // Media alone: output says what came back instead of "".
        let r = shape_call_result(&json!({"content": [
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]}));
        assert_eq!(r.output, "image (image/png, 8 bytes)");
        // The error and structuredContent branches keep their media too.
        let r = shape_call_result(&json!({"isError": true, "content": [
            {"type": "text", "text": "bad"},
            {"type": "image", "data": "AA==", "mimeType": "image/gif"}]}));
        assert_eq!(
            (r.output.as_str(), r.is_error, r.parts.len()),
            ("bad", true, 1)
        );
        let r = shape_call_result(&json!({"structuredContent": {"a": 1}, "content": [
            {"type": "image", "data": "AA==", "mimeType": "image/gif"}]}));
        assert_eq!((r.output.as_str(), r.parts.len()), (r#"{"a":1}"#, 1));
    }
}

#[cfg(test)]
mod name_tests {
    use super::*;

    #[test]
    fn long_names_are_capped_at_64_with_a_stable_hash() {
        let short = "s_".to_string() + &"x".repeat(62);
        assert_eq!(capped(short.clone()), short);
        let a = capped(format!("s_{}", "y".repeat(80)));
        let b = capped(format!("s_{}z", "y".repeat(80)));
        assert_eq!(a.len(), MAX_NAME);
        assert_eq!(b.len(), MAX_NAME);
        assert_ne!(a, b);
        assert_eq!(a, capped(format!("s_{}", "y".repeat(80))));
        assert!(a.starts_with(&format!("s_{}", "y".repeat(53))), "{a}");
    }
}
