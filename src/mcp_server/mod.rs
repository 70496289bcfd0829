//! The toolkit served as one MCP server (SPEC §7C), built on rmcp's server
//! side: every tool of every source (MCP servers, skills, builtins, HTTP
//! tools, host functions) behind one `tools/list` and `tools/call`.
//!
//! - `mod.rs`    the rmcp server handler over a toolkit, `serve`
//! - `config.rs` the MCP profile and the transport asked for
//! - `http.rs`   streamable HTTP at `/mcp` (hyper in front of rmcp)
//! - `stdio.rs`  JSON-RPC lines on stdin/stdout
//!
//! - `initialize` advertises `serverInfo {name, version}` (defaults
//!   `toolnexus`, `0.1.0`) and `capabilities.tools`.
//! - `tools/list` lists each exposed tool verbatim: its toolkit name,
//!   description and input schema. `Profile::tools` narrows the list to
//!   those names; a name the toolkit lacks is ignored.
//! - `tools/call` runs the tool and answers its output as one text part,
//!   `isError` carried over, and its §1B parts as image, audio, resource
//!   and resource-link content after it; a proxied MCP tool's result as its
//!   server sent it (redacted; see `shape::passed_through`); a tool that
//!   fails or panics is an `isError` result, never a dead server.
//! - A proxied server's `sampling/createMessage` / `elicitation/create`
//!   during a call goes to the client that made the call, when that client
//!   declared the capability in `initialize` (`Asker`, `Gateway::ask`;
//!   docs/mcp.md). An unknown (or unexposed) name is the
//!   JSON-RPC invalid-params error (-32602).
//! - The client's cancellation (`notifications/cancelled`, or an HTTP
//!   client hanging up) reaches the running tool through
//!   [`ExecContext::cancel`].
//! - [`OnCall`] hears `{name, source, ms, isError}` after every call.
//!
//! Transports: streamable HTTP, stateless (every POST is served by a fresh
//! server over the same toolkit, no session id), at `http://ADDR/mcp`; and
//! JSON-RPC lines on stdin/stdout (what local clients spawn).

pub mod config;
mod http;
pub use http::{HEADER_TIMEOUT, MAX_CONNECTIONS};

mod stdio;

pub use config::{
    Profile, ServeConfig, ServeLimits, Transport, CALLS_IN_FLIGHT, DEFAULT_NAME, DEFAULT_VERSION,
    HTTP_REQUEST_BYTES, STDIO_REQUEST_BYTES,
};

use crate::cancel::CancelToken;
use crate::error::Result;
use crate::jsonrpc::shape::{call_result, passed_through};
use crate::tool::{Asked, ExecContext, Relay, Source, ToolResult};
use crate::toolkit::Toolkit;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
#[allow(deprecated)] // logging is deprecated by SEP-2577 and still in 2025-11-25
use rmcp::model::{LoggingMessageNotificationParam, SetLevelRequestParams};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

/// Routes served beside `/mcp` on the same HTTP address (the A2A agent,
/// [`crate::a2a`]): every request whose path is not `/mcp` goes here, so
/// `/mcp` is never shadowed.
pub trait Beside: Send + Sync {
    /// The answer to one request: status, content type, body. `base` is
    /// the server's `http://host:port` (a wildcard bind reads as
    /// `127.0.0.1`). Runs on a blocking thread of the runtime, unless
    /// [`Beside::waits`] says it never waits.
    fn answer(&self, req: &BesideRequest<'_>) -> BesideAnswer;

    /// Whether [`Beside::answer`] may wait on something outside the
    /// process (a disk, a database, a host's callback). When it never does,
    /// the connection's own task answers, without handing each request to
    /// a blocking thread and back (two thread wake-ups per request).
    fn waits(&self) -> bool {
        true
    }

    /// The server is stopping: end the work begun for these routes and
    /// let go of what the host lent them, by `until` at the latest. A
    /// request answered afterwards may be refused.
    fn stop(&self, until: Instant) {
        let _ = until;
    }
}

/// A request for [`Beside::answer`].
pub struct BesideRequest<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub headers: &'a ::http::HeaderMap,
    pub body: &'a [u8],
    pub base: &'a str,
}

/// What [`Beside::answer`] answers.
pub struct BesideAnswer {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
    /// A body that goes on after `body` (a server-sent event stream): each
    /// chunk is written as it arrives, and the body ends when every sender
    /// is dropped. A sender whose peer went away gets an error on `send`.
    pub stream: Option<tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>>,
}

/// What [`OnCall`] hears after each `tools/call`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallEvent {
    pub name: String,
    pub source: Source,
    /// Wall time of the call in whole milliseconds.
    pub ms: u64,
    pub is_error: bool,
}

impl CallEvent {
    /// `{"name","source","ms","isError"}`.
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "source": self.source.as_str(), "ms": self.ms, "isError": self.is_error})
    }
}

/// Called after every `tools/call`, on a thread of the library, possibly
/// for several calls at once. A panic in it is caught and ignored.
pub type OnCall = Arc<dyn Fn(&CallEvent) + Send + Sync>;

/// The state every per-request server shares.
struct Gateway {
    toolkit: Arc<Toolkit>,
    info: ServerConfig,
    exposed: Option<HashSet<String>>,
    /// `Profile::unprefixed`: proxied MCP tools and prompts under their own
    /// names where that clashes with nothing.
    unprefixed: bool,
    /// The `unprefixed` names of the MCP tools as they are now (made again
    /// when the toolkit's MCP tools changed).
    names: Mutex<Arc<Unprefixed>>,
    /// The last `tools/list` answer's tools and the toolkit's tools
    /// generation they were made from: made again only when the tools
    /// changed (no copy of every schema per list).
    listed: Mutex<Option<(u64, Arc<[rmcp::model::Tool]>)>>,
    /// A client asked for log lines (`logging/setLevel`): from then on every
    /// `tools/call` takes rmcp's path, whose answer can stream the proxied
    /// server's log notifications before the result (the plain paths answer
    /// the result alone). Gateway-wide: the stateless HTTP transport has no
    /// session to keep it in.
    logs_wanted: std::sync::atomic::AtomicBool,
    /// What the calling client declared it takes in its `initialize`
    /// ([`ASKS_SAMPLING`], [`ASKS_ELICITATION`]): a proxied server's
    /// requests of those kinds are relayed to it. The last `initialize`
    /// says, gateway-wide, as `logs_wanted` (the stateless HTTP transport has
    /// no session to keep it in). While it is non-zero every `tools/call`
    /// takes rmcp's path, whose answer can carry a request before the result.
    client_asks: std::sync::atomic::AtomicU8,
    /// Stateless HTTP: a relayed request's answer comes back as a POST of
    /// its own, matched here by its id (as JSON text) to the call waiting
    /// for it.
    answers: Mutex<HashMap<String, tokio::sync::oneshot::Sender<Value>>>,
    /// How many `answers` there are, read without the lock on every POST.
    awaited: AtomicUsize,
    /// Stateless HTTP: one relayed request at a time. Every POST is served
    /// by a fresh rmcp server that numbers its requests from 0, so two at
    /// once could share an id.
    asking: tokio::sync::Mutex<()>,
    /// Served over stateless HTTP (rather than one session on stdio).
    stateless: bool,
    /// Taken out (and so released) when the server is stopped.
    on_call: Mutex<Option<OnCall>>,
    in_flight: InFlight,
    /// The `tools/call`s admitted and not yet ended, at most `max_calls`.
    calls: AtomicUsize,
    max_calls: usize,
}

/// The calling client took `sampling/createMessage` (declared `sampling`).
pub const ASKS_SAMPLING: u8 = 1;
/// The calling client took `elicitation/create` (declared `elicitation`).
pub const ASKS_ELICITATION: u8 = 2;

/// Forgets a relayed request's entry in [`Gateway::answers`] however the
/// wait ended.
struct Forget<'a>(&'a Gateway, String);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.0
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.1);
        self.0.awaited.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The calling client of a `tools/call` as its proxied server's requests
/// reach it (see [`Gateway::ask`]).
struct Asker {
    gateway: Arc<Gateway>,
    peer: rmcp::Peer<RoleServer>,
}

impl crate::tool::Ask for Asker {
    fn takes(&self, method: &str) -> bool {
        let bit = match method {
            "sampling/createMessage" => ASKS_SAMPLING,
            "elicitation/create" => ASKS_ELICITATION,
            _ => return false,
        };
        self.gateway.client_asks.load(Ordering::Relaxed) & bit != 0
    }

    fn ask(&self, method: &str, params: Value) -> crate::tool::AskFuture {
        let (gateway, peer, method) = (
            Arc::clone(&self.gateway),
            self.peer.clone(),
            method.to_string(),
        );
        Box::pin(async move { gateway.ask(&peer, &method, params).await })
    }
}

/// A call admitted under [`Gateway::max_calls`], until it ends.
struct Admitted(Arc<Gateway>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The JSON-RPC error of a call past `maxCallsInFlight` (an
/// implementation-defined server error).
pub const BUSY: i32 = -32000;

/// The `tools/call`s running, so that the end of a server waits for the
/// calls it cancelled on the way out (their MCP servers told, their bash
/// process groups ended).
#[derive(Default)]
struct InFlight {
    count: AtomicUsize,
    idle: tokio::sync::Notify,
    /// The same news for a thread that waits outside the runtime
    /// ([`Server::stop`]).
    lock: Mutex<()>,
    idle_sync: Condvar,
}

impl InFlight {
    fn leave(&self) {
        if self.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.idle.notify_waiters();
            let _held = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.idle_sync.notify_all();
        }
    }

    /// Resolves once no call is running.
    async fn idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Blocks until no call is running or `until` passed; whether none is.
    fn wait_idle(&self, until: Instant) -> bool {
        let mut held = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if self.count.load(Ordering::SeqCst) == 0 {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            held = self
                .idle_sync
                .wait_timeout(held, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// A call counted in [`Gateway::in_flight`] from before its task is
/// spawned until that task ends, so the end of a server also waits for a
/// call whose task has not run yet, and for one whose caller is gone.
struct InFlightTask(Arc<Gateway>);

impl InFlightTask {
    fn enter(gateway: &Arc<Gateway>) -> InFlightTask {
        gateway.in_flight.count.fetch_add(1, Ordering::SeqCst);
        InFlightTask(Arc::clone(gateway))
    }
}

impl Drop for InFlightTask {
    fn drop(&mut self) {
        self.0.in_flight.leave();
    }
}

/// Cancels a call when the future waiting for it is dropped (a connection
/// aborted, rmcp dropping its handler): the call itself runs on.
struct CancelOnDrop(CancelToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl Gateway {
    fn new(
        toolkit: Arc<Toolkit>,
        profile: &Profile,
        on_call: Option<OnCall>,
        max_calls: usize,
    ) -> Gateway {
        let live = toolkit.mcp_changes().is_some();
        let info =
            InitializeResult::new(capabilities(&toolkit.mcp_upstreams(), live)).with_server_info(
                Implementation::new(profile.name.clone(), profile.version.clone()),
            );
        let names = match profile.unprefixed {
            true => unprefixed_names(&toolkit),
            false => Unprefixed::default(),
        };
        Gateway {
            toolkit,
            info,
            exposed: profile.tools.as_ref().map(|t| t.iter().cloned().collect()),
            unprefixed: profile.unprefixed,
            names: Mutex::new(Arc::new(names)),
            listed: Mutex::new(None),
            logs_wanted: Default::default(),
            client_asks: Default::default(),
            answers: Mutex::default(),
            awaited: AtomicUsize::new(0),
            asking: tokio::sync::Mutex::new(()),
            stateless: false,
            on_call: Mutex::new(on_call),
            in_flight: InFlight::default(),
            calls: AtomicUsize::new(0),
            max_calls: max_calls.max(1),
        }
    }

    /// Whether a `tools/call` must take rmcp's path (see `logs_wanted`
    /// and `client_asks`).
    fn streams(&self) -> bool {
        self.logs_wanted.load(Ordering::Relaxed) || self.client_asks.load(Ordering::Relaxed) != 0
    }

    /// Puts a proxied server's request (`method`, `params`) to the calling
    /// client on `peer`: its result, or the JSON-RPC error object to answer
    /// the server with. Over stateless HTTP the client's answer comes as a
    /// POST of its own ([`Gateway::answered`]); on stdio rmcp's session
    /// reads it. Unbounded here: the proxied call's end gives it up (the
    /// future is dropped).
    async fn ask(&self, peer: &rmcp::Peer<RoleServer>, method: &str, params: Value) -> Asked {
        let failed = |why: String| {
            json!({"code": rmcp::model::ErrorCode::INTERNAL_ERROR.0,
                   "message": format!("the gateway could not relay {method} to its client: {why}")})
        };
        let request: rmcp::model::ServerRequest =
            match serde_json::from_value(json!({"method": method, "params": params})) {
                Ok(r) => r,
                Err(e) => return Asked::Error(failed(e.to_string())),
            };
        let _one = match self.stateless {
            true => Some(self.asking.lock().await),
            false => None,
        };
        // The call's answer stream ended while this waited its turn.
        if peer.is_transport_closed() {
            return Asked::Gone;
        }
        let handle = match peer
            .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
            .await
        {
            Ok(h) => h,
            Err(rmcp::service::ServiceError::TransportClosed) => return Asked::Gone,
            Err(e) => return Asked::Error(failed(e.to_string())),
        };
        let key = serde_json::to_string(&handle.id).unwrap_or_default();
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone(), tx);
        self.awaited.fetch_add(1, Ordering::SeqCst);
        let _forget = Forget(self, key);
        let from_session = async {
            match handle.rx.await {
                Ok(r) => r,
                // The per-POST server ended: the answer comes by POST.
                Err(_) => std::future::pending().await,
            }
        };
        tokio::select! {
            r = from_session => match r {
                Ok(result) => match serde_json::to_value(result) {
                    Ok(v) => Asked::Answer(v),
                    Err(e) => Asked::Error(failed(e.to_string())),
                },
                Err(rmcp::service::ServiceError::McpError(e)) => {
                    Asked::Error(serde_json::to_value(e).unwrap_or_else(|e| failed(e.to_string())))
                }
                Err(e) => Asked::Error(failed(e.to_string())),
            },
            Ok(mut message) = rx => match message.get_mut("result").map(Value::take) {
                Some(result) => Asked::Answer(result),
                None => Asked::Error(message
                    .get_mut("error")
                    .map(Value::take)
                    .unwrap_or_else(|| failed("an answer with neither result nor error".into()))),
            },
        }
    }

    /// Hands a client's JSON-RPC answer (a POST of its own, stateless HTTP)
    /// to the relayed request waiting for it; whether one was.
    fn answered(&self, message: Value) -> bool {
        let Some(id) = message.get("id") else {
            return false;
        };
        let key = id.to_string();
        let waiting = self
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
        match waiting {
            Some(tx) => tx.send(message).is_ok(),
            None => false,
        }
    }

    /// Whether a relayed request waits for its answer.
    fn waits_for_answers(&self) -> bool {
        self.awaited.load(Ordering::SeqCst) != 0
    }

    /// Takes a call in, or `None` when `max_calls` run already.
    fn admit(self: &Arc<Self>) -> Option<Admitted> {
        self.calls
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max_calls).then_some(n + 1)
            })
            .ok()
            .map(|_| Admitted(Arc::clone(self)))
    }

    /// Whether the toolkit tool `name` (served as `served`) is exposed.
    fn exposes(&self, name: &str, served: &str) -> bool {
        self.exposed
            .as_ref()
            .is_none_or(|set| set.contains(name) || set.contains(served))
    }

    /// The `unprefixed` names of the MCP tools now: those of the last
    /// tools generation seen, or made again from the toolkit's tools when
    /// they changed since (a tool that appeared later gets its own name too
    /// when nothing clashes with it).
    fn names(&self) -> Arc<Unprefixed> {
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        if self.unprefixed {
            let generation = self.toolkit.mcp_tools_generation();
            if names.generation != generation {
                *names = Arc::new(unprefixed_names(&self.toolkit));
            }
        }
        Arc::clone(&names)
    }

    /// The name a toolkit tool is served under (`names` from [`Gateway::names`]).
    fn served_name_in(&self, names: &Unprefixed, name: &str) -> String {
        match names.served_as.get(name) {
            // A tool registered since under the plain name takes it back.
            Some(plain) if self.toolkit.find(plain).is_none() => plain.clone(),
            _ => name.to_string(),
        }
    }

    /// The toolkit tool a served name stands for.
    fn toolkit_name(&self, served: String) -> String {
        if !self.unprefixed || self.toolkit.find(&served).is_some() {
            return served;
        }
        let names = self.names();
        names.served_from.get(&served).cloned().unwrap_or(served)
    }

    /// The served tools, for `tools/list`: made from the toolkit's tools
    /// once per tools generation and kept; each list copies the kept
    /// entries (their schemas are shared).
    fn list(&self) -> Vec<rmcp::model::Tool> {
        let generation = self.toolkit.tools_generation();
        if let Some((made, tools)) = &*self.listed.lock().unwrap_or_else(PoisonError::into_inner) {
            if *made == generation {
                return tools.to_vec();
            }
        }
        let (generation, tools) = self.toolkit.tools_shared();
        let names = self.names();
        let listed: Vec<rmcp::model::Tool> = tools
            .iter()
            .filter_map(|t| {
                let served = self.served_name_in(&names, &t.name);
                if !self.exposes(&t.name, &served) {
                    return None;
                }
                let schema = match &t.input_schema {
                    Value::Object(m) => m.clone(),
                    // A schema that is no object cannot go on the wire as
                    // one; the default says "some object".
                    _ => match crate::tool::default_schema() {
                        Value::Object(m) => m,
                        _ => Map::new(),
                    },
                };
                Some(rmcp::model::Tool::new_with_raw(
                    served,
                    Some(t.description.clone().into()),
                    schema,
                ))
            })
            .collect();
        *self.listed.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((generation, Arc::from(listed.as_slice())));
        listed
    }

    /// A `tools/call` up to the tool's own result (the `onCall` event
    /// heard). The tool runs on a task of its own, counted in
    /// [`Gateway::in_flight`] until it ends: dropping this future (a
    /// connection aborted) cancels the call, which still runs to its end
    /// there (a bash job's group killed, an MCP server told), and a server
    /// that stops waits for it.
    async fn run(
        self: &Arc<Self>,
        name: String,
        args: Value,
        cancelled: CancellationToken,
        relay: Option<Relay>,
    ) -> std::result::Result<ToolResult, ErrorData> {
        let served = name;
        let name = self.toolkit_name(served.clone());
        let source = match self.toolkit.source_of(&name) {
            Some(s) if self.exposes(&name, &served) => s,
            _ => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool: {served}"),
                    None,
                ))
            }
        };
        let Some(admitted) = self.admit() else {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode(BUSY),
                format!(
                    "server busy: {} calls are running, the most this server takes at once \
                     (maxCallsInFlight); try again when one has ended",
                    self.max_calls
                ),
                None,
            ));
        };
        let in_flight = InFlightTask::enter(self);
        let started = Instant::now();
        let cancel = CancelToken::new();
        let ctx = ExecContext {
            cancel: Some(cancel.clone()),
            relay,
            ..ExecContext::default()
        };
        let gateway = Arc::clone(self);
        // An MCP tool's call is awaited on that task (no thread per call);
        // any other tool runs on the blocking pool.
        let mut job = tokio::spawn(async move {
            let _in_flight = in_flight;
            let _admitted = admitted;
            let result = gateway.toolkit.execute_on_runtime(&name, args, &ctx).await;
            gateway.hear(name, source, started, &result);
            result
        });
        let _cancel_on_drop = CancelOnDrop(cancel.clone());
        let joined = tokio::select! {
            r = &mut job => r,
            _ = cancelled.cancelled() => {
                cancel.cancel();
                job.await
            }
        };
        Ok(joined
            .unwrap_or_else(|e| ToolResult::error(format!("the tool failed unexpectedly: {e}"))))
    }

    /// Tells [`OnCall`] about a call that ended (not after the server
    /// stopped: the hook is released then).
    fn hear(&self, name: String, source: Source, started: Instant, result: &ToolResult) {
        let on_call = self
            .on_call
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(on_call) = on_call {
            let event = CallEvent {
                name,
                source,
                ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                is_error: result.is_error,
            };
            let _ = catch_unwind(AssertUnwindSafe(|| on_call(&event)));
        }
    }
}

/// What the gateway advertises: tools, and what its MCP servers have among
/// resources (with subscribe), prompts, completions and logging. With MCP
/// servers behind it (`live`), its tools, prompts and resources lists may
/// change: `listChanged` (see [`pass_changes_on`]).
fn capabilities(up: &crate::mcp::Upstreams, live: bool) -> ServerCapabilities {
    let mut caps = json!({"tools": {}});
    if live {
        caps["tools"]["listChanged"] = json!(true);
    }
    if up.has("resources") {
        caps["resources"] = json!({"subscribe": up.can_subscribe()});
    }
    for kind in ["prompts", "completions", "logging"] {
        if up.has(kind) {
            caps[kind] = json!({});
        }
    }
    if live {
        for kind in ["resources", "prompts"] {
            if let Some(c) = caps.get_mut(kind) {
                c["listChanged"] = json!(true);
            }
        }
    }
    serde_json::from_value(caps)
        .unwrap_or_else(|_| ServerCapabilities::builder().enable_tools().build())
}

/// `Profile::unprefixed`'s names of one tools generation.
#[derive(Default)]
struct Unprefixed {
    /// The toolkit's MCP tools generation they were made from.
    generation: u64,
    /// toolkit name → served name, and back.
    served_as: HashMap<String, String>,
    served_from: HashMap<String, String>,
}

/// `Profile::unprefixed`'s names: each MCP tool under its own name on its
/// server, unless another toolkit tool has that name or two MCP tools share
/// it (then all of them keep their prefixed names, and the toolkit's
/// `status.warnings` names each). A function of the tools now alone: a tool that appears later is
/// named as if it had been there at the start.
fn unprefixed_names(toolkit: &Toolkit) -> Unprefixed {
    let generation = toolkit.mcp_tools_generation();
    let origins = toolkit.mcp_origins();
    let names: HashSet<String> = toolkit.tool_names().into_iter().collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (_, remote) in &origins {
        *counts.entry(remote.as_str()).or_default() += 1;
    }
    let mut served_as = HashMap::new();
    let mut served_from = HashMap::new();
    let mut warnings = Vec::new();
    for (name, remote) in &origins {
        if name == remote {
            continue;
        }
        if counts.get(remote.as_str()) != Some(&1) || names.contains(remote) {
            warnings.push(format!(
                "mcpServer.unprefixed: \"{name}\" is served under its prefixed name: \
                 \"{remote}\" is another tool's name too"
            ));
            continue;
        }
        served_as.insert(name.clone(), remote.clone());
        served_from.insert(remote.clone(), name.clone());
    }
    toolkit.set_served_warnings(warnings);
    Unprefixed {
        generation,
        served_as,
        served_from,
    }
}

/// A relay that passes a proxied call's server notifications on to the
/// calling client, in order: its progress under the client's own token (none
/// when the client gave none), its log lines as they are. The task ends once
/// the relay is dropped and everything sent before was passed on.
fn relay_to(
    peer: rmcp::Peer<RoleServer>,
    token: Option<ProgressToken>,
) -> (Relay, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, Value)>();
    let relay = Relay::new(Arc::new(move |method: &str, params: Value| {
        let _ = tx.send((method.to_string(), params));
    }));
    let forwarding = tokio::spawn(async move {
        while let Some((method, params)) = rx.recv().await {
            match method.as_str() {
                "notifications/progress" => {
                    let Some(token) = &token else { continue };
                    let Some(p) = progress_param(token, &params) else {
                        continue;
                    };
                    let _ = peer.notify_progress(p).await;
                }
                "notifications/message" => {
                    #[allow(deprecated)]
                    if let Ok(p) = serde_json::from_value::<LoggingMessageNotificationParam>(params)
                    {
                        let _ = peer.notify_logging_message(p).await;
                    }
                }
                _ => {}
            }
        }
    });
    (relay, forwarding)
}

/// Tells the client on `peer` `notifications/tools/list_changed` each time
/// the served toolkit's MCP tools change (a proxied server's
/// `list_changed`, re-listed), and `prompts/` / `resources/list_changed`
/// when a proxied server announced those. Changes that come while one is
/// being sent are one notification (the watch holds the latest only).
/// Ends when the toolkit is gone or the client cannot be told.
async fn pass_changes_on(
    peer: rmcp::Peer<RoleServer>,
    mut changes: tokio::sync::watch::Receiver<crate::mcp::Generations>,
) {
    let mut told = *changes.borrow_and_update();
    while changes.changed().await.is_ok() {
        let now = *changes.borrow_and_update();
        // Only a client that began with `initialize` (2025 revisions) is
        // told unasked; one of 2026-07-28 (rmcp keeps no peer info for it)
        // hears changes on its `subscriptions/listen` stream alone.
        let unasked = peer
            .peer_info()
            .is_some_and(|i| i.protocol_version.has_initialize());
        if !unasked {
            told = now;
            continue;
        }
        if now.tools != told.tools && peer.notify_tool_list_changed().await.is_err() {
            return;
        }
        if now.prompts != told.prompts && peer.notify_prompt_list_changed().await.is_err() {
            return;
        }
        if now.resources != told.resources && peer.notify_resource_list_changed().await.is_err() {
            return;
        }
        told = now;
    }
}

/// A pass-through answer as the typed result rmcp sends.
fn typed<T: serde::de::DeserializeOwned>(
    v: std::result::Result<Value, ErrorData>,
) -> std::result::Result<T, ErrorData> {
    let v = v?;
    serde_json::from_value(v).map_err(|e| {
        ErrorData::internal_error(
            format!("an MCP server answered a malformed result: {e}"),
            None,
        )
    })
}

fn params_of<T: serde::Serialize>(p: &T) -> Value {
    serde_json::to_value(p).unwrap_or(Value::Null)
}

/// One server over the shared gateway (cheap: rmcp makes one per HTTP
/// request).
#[derive(Clone)]
struct Handler(Arc<Gateway>);

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        self.0.info.clone()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<InitializeResult, ErrorData> {
        let caps = &request.capabilities;
        let asks = u8::from(caps.sampling.is_some()) * ASKS_SAMPLING
            + u8::from(caps.elicitation.is_some()) * ASKS_ELICITATION;
        self.0.client_asks.store(asks, Ordering::Relaxed);
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.0.list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        // rmcp moves the request's `_meta` into the context.
        let token = context
            .meta
            .get_progress_token()
            .or_else(|| request.meta.as_ref().and_then(|m| m.get_progress_token()));
        let (relay, forwarding) = relay_to(context.peer.clone(), token);
        let asker = Asker {
            gateway: Arc::clone(&self.0),
            peer: context.peer.clone(),
        };
        let relay = relay.with_ask(Arc::new(asker)).keeping();
        let result = self
            .0
            .run(
                request.name.into_owned(),
                args,
                context.ct,
                Some(relay.clone()),
            )
            .await;
        let raw = relay.raw_result();
        drop(relay);
        // Every notification of the call goes out before its answer.
        let _ = forwarding.await;
        result
            .map(|r| passed_through(&r, raw).unwrap_or_else(|| call_result(r)))
            .map(CallToolResponse::from)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, ErrorData> {
        let cancel = context.ct.clone();
        let up = self.0.toolkit.mcp_upstreams();
        typed(Ok(up.list_resources(Some(&cancel)).await))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourceTemplatesResult, ErrorData> {
        let cancel = context.ct.clone();
        let up = self.0.toolkit.mcp_upstreams();
        typed(Ok(up.list_resource_templates(Some(&cancel)).await))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, ErrorData> {
        let cancel = context.ct.clone();
        let up = self.0.toolkit.mcp_upstreams();
        let v = up
            .resource_request("resources/read", params_of(&request), Some(&cancel))
            .await;
        typed::<ReadResourceResult>(v).map(ReadResourceResponse::from)
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        let cancel = context.ct.clone();
        let up = self.0.toolkit.mcp_upstreams();
        up.resource_request("resources/subscribe", params_of(&request), Some(&cancel))
            .await
            .map(|_| ())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        let cancel = context.ct.clone();
        let up = self.0.toolkit.mcp_upstreams();
        up.resource_request("resources/unsubscribe", params_of(&request), Some(&cancel))
            .await
            .map(|_| ())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListPromptsResult, ErrorData> {
        let cancel = context.ct.clone();
        let up = self.0.toolkit.mcp_upstreams();
        typed(Ok(up.list_prompts(self.0.unprefixed, Some(&cancel)).await))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<GetPromptResponse, ErrorData> {
        let cancel = context.ct.clone();
        let up = self.0.toolkit.mcp_upstreams();
        let v = up
            .prompt_request(
                "prompts/get",
                params_of(&request),
                "/name",
                self.0.unprefixed,
                Some(&cancel),
            )
            .await;
        typed::<GetPromptResult>(v).map(GetPromptResponse::from)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CompleteResult, ErrorData> {
        let cancel = context.ct.clone();
        let up = self.0.toolkit.mcp_upstreams();
        typed(
            up.complete(params_of(&request), self.0.unprefixed, Some(&cancel))
                .await,
        )
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        let cancel = context.ct.clone();
        let up = self.0.toolkit.mcp_upstreams();
        if !up.has("logging") {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "logging/setLevel: no MCP server of this toolkit has logging",
                None,
            ));
        }
        up.set_level(params_of(&request), Some(&cancel)).await;
        self.0.logs_wanted.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// A 2026-07-28 client's `subscriptions/listen`: the list changes it
    /// asks for, when the toolkit's MCP tools are live (rmcp keeps only
    /// those the capabilities advertise, and answers `-32601` without).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.0.toolkit.mcp_changes()?;
        let mut accepted = SubscriptionFilter::default();
        accepted.tools_list_changed = requested.tools_list_changed;
        accepted.prompts_list_changed = requested.prompts_list_changed;
        accepted.resources_list_changed = requested.resources_list_changed;
        Some(accepted)
    }

    /// One listen stream (rmcp sent its acknowledgment and stamps each
    /// notification with the subscription's id): every change after it
    /// opened, as [`pass_changes_on`] tells a stdio client of 2025.
    async fn listen(&self, context: SubscriptionContext) -> std::result::Result<(), ErrorData> {
        if let Some(changes) = self.0.toolkit.mcp_changes() {
            let sink = context.sink().clone();
            tokio::select! {
                () = context.cancelled() => {}
                () = listen_on(sink, changes) => {}
            }
        }
        Ok(())
    }
}

/// Tells a listen stream's `sink` each change of `changes` it accepted:
/// the watch holds the latest generations only, so a listener that reads
/// slowly (rmcp's send waits on it) gets the changes coalesced, never a
/// queue. Ends when the toolkit is gone or the stream is.
async fn listen_on(
    sink: rmcp::service::SubscriptionSink,
    mut changes: tokio::sync::watch::Receiver<crate::mcp::Generations>,
) {
    let accepted = sink.accepted().clone();
    let wants = |on: Option<bool>| on == Some(true);
    let mut told = *changes.borrow_and_update();
    while changes.changed().await.is_ok() {
        let now = *changes.borrow_and_update();
        let sent = async {
            if now.tools != told.tools && wants(accepted.tools_list_changed) {
                sink.notify_tool_list_changed().await?;
            }
            if now.prompts != told.prompts && wants(accepted.prompts_list_changed) {
                sink.notify_prompt_list_changed().await?;
            }
            if now.resources != told.resources && wants(accepted.resources_list_changed) {
                sink.notify_resource_list_changed().await?;
            }
            Ok::<(), rmcp::service::SubscriptionSendError>(())
        };
        if sent.await.is_err() {
            return;
        }
        told = now;
    }
}

/// How a [`Server`] ended, for [`Server::wait`].
#[derive(Default)]
struct Done {
    ended: Mutex<bool>,
    signal: Condvar,
}

impl Done {
    fn set(&self) {
        *self.ended.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.signal.notify_all();
    }

    /// Waits until the server ended, at most `limit` (forever for `None`);
    /// `true` if it did.
    fn wait(&self, limit: Option<Duration>) -> bool {
        let mut ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        let until = limit.map(|l| Instant::now() + l);
        while !*ended {
            ended = match until {
                None => self
                    .signal
                    .wait(ended)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(t) => {
                    let left = t.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    self.signal
                        .wait_timeout(ended, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
        true
    }
}

/// Sets [`Done`] when the serving task ends, however it ends.
struct SetOnDrop(Arc<Done>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// A running server. Stopping (explicitly or on drop) ends it: no new
/// connection or message is taken, calls in flight are cancelled and
/// waited for (at most [`STOP_GRACE`]), and the [`OnCall`] hook is
/// released.
pub struct Server {
    url: Option<String>,
    stop: CancellationToken,
    done: Arc<Done>,
    gateway: Arc<Gateway>,
    /// The routes served beside `/mcp`, stopped with the server.
    beside: Option<Arc<dyn Beside>>,
}

/// How long a stdio server whose input ended waits for its calls before
/// it ends (they are cancelled after [`stdio::EOF_GRACE`]; a cancelled
/// bash job may take bash's `KILL_GRACE` to go).
const CALLS_UNWIND: Duration = Duration::from_secs(5);

/// The most [`Server::stop`] waits: for the serving task to wind down and
/// for the calls it cancelled to end. A cancelled bash call ends its
/// process group with SIGTERM, then SIGKILL after
/// bash's `KILL_GRACE` (2 s), so its group is gone within
/// this; a host tool that ignores its cancel token may outlive it (it
/// then answers nobody).
pub const STOP_GRACE: Duration = Duration::from_secs(5);

impl Server {
    /// `http://HOST:PORT/mcp` of an HTTP server (with the port it bound);
    /// `None` for stdio.
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }

    /// Stops the server and waits (at most [`STOP_GRACE`]) for it to end
    /// and for every call it cancelled to finish (a bash call's process
    /// group gone); then releases the [`OnCall`] hook (a hook running at
    /// that moment is released when it returns). Idempotent; safe from any
    /// thread but the server's own calls (see [`Server::begin_stop`]).
    pub fn stop(&self) {
        self.begin_stop();
        let until = Instant::now() + STOP_GRACE;
        self.done.wait(Some(STOP_GRACE));
        self.gateway.in_flight.wait_idle(until);
        if let Some(beside) = &self.beside {
            beside.stop(until);
        }
        let hook = self
            .gateway
            .on_call
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(hook);
    }

    /// Tells the server to stop, without waiting for it to end: what a
    /// caller inside one of the server's own calls can do (waiting there
    /// would wait for itself).
    pub fn begin_stop(&self) {
        self.stop.cancel();
    }

    /// Blocks until the server ends: the stdio client closed its input, or
    /// [`Server::stop`] was called from another thread.
    pub fn wait(&self) {
        self.done.wait(None);
    }

    /// Waits at most `limit` (without limit for `None`) for the server to
    /// end; whether it has.
    pub fn wait_for(&self, limit: Option<Duration>) -> bool {
        self.done.wait(limit)
    }

    /// Whether the server has ended.
    pub fn ended(&self) -> bool {
        self.done.wait(Some(Duration::ZERO))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Serves `toolkit` as `config` says, with `on_call` hearing every call.
/// An HTTP server is listening when this returns (its URL says where).
pub fn serve(
    toolkit: Arc<Toolkit>,
    config: &ServeConfig,
    on_call: Option<OnCall>,
) -> Result<Server> {
    serve_beside(toolkit, config, on_call, None)
}

/// [`serve`] with routes beside `/mcp` (HTTP only; stdio refuses them).
pub fn serve_beside(
    toolkit: Arc<Toolkit>,
    config: &ServeConfig,
    on_call: Option<OnCall>,
    beside: Option<Arc<dyn Beside>>,
) -> Result<Server> {
    let mut gateway = Gateway::new(toolkit, &config.profile, on_call, config.limits.max_calls);
    gateway.stateless = matches!(config.transport, Transport::Http { .. });
    let gateway = Arc::new(gateway);
    let request_bytes = config.limits.request_bytes(&config.transport);
    match &config.transport {
        Transport::Http { addr } => {
            let caps = http::BodyCaps {
                mcp: request_bytes,
                beside: config.limits.beside_bytes(),
            };
            http::serve(gateway, addr, caps, beside)
        }
        Transport::Stdio if beside.is_some() => Err(crate::error::Error::invalid_config(
            "a2a: the A2A agent is served over HTTP only (the stdio transport has no paths)",
        )),
        Transport::Stdio => {
            let (reader, writer, blocking) = {
                let _inside = crate::runtime::get().enter();
                stdio::process_stdio()
            };
            Ok(serve_io(gateway, reader, writer, blocking, request_bytes))
        }
    }
}

/// Serves `toolkit` over JSON-RPC lines on `reader` / `writer` (stdio, a
/// pipe, a socket). The server ends when `reader` reaches its end.
pub fn serve_lines<R, W>(
    toolkit: Arc<Toolkit>,
    profile: &Profile,
    on_call: Option<OnCall>,
    reader: R,
    writer: W,
) -> Server
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_lines_limited(
        toolkit,
        profile,
        ServeLimits::default(),
        on_call,
        reader,
        writer,
    )
}

/// [`serve_lines`] under `limits` (a line past the request cap is answered
/// as invalid and skipped; a call past the calls cap is answered busy).
pub fn serve_lines_limited<R, W>(
    toolkit: Arc<Toolkit>,
    profile: &Profile,
    limits: ServeLimits,
    on_call: Option<OnCall>,
    reader: R,
    writer: W,
) -> Server
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_io(
        Arc::new(Gateway::new(toolkit, profile, on_call, limits.max_calls)),
        reader,
        writer,
        Vec::new(),
        limits.request_bytes(&Transport::Stdio),
    )
}

fn serve_io<R, W>(
    gateway: Arc<Gateway>,
    reader: R,
    writer: W,
    blocking: Vec<stdio::Blocking>,
    request_bytes: usize,
) -> Server
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    use rmcp::ServiceExt;
    let stop = CancellationToken::new();
    let done = Arc::new(Done::default());
    // Plain calls the transport answers itself are cancelled with the
    // server (a child of `stop`) or when its input ends.
    let transport = stdio::ServedLineTransport::new(reader, writer)
        .with_line_cap(request_bytes)
        .with_fast_path(Arc::clone(&gateway), stop.child_token());
    let closer = transport.closer();
    // A child: rmcp's service cancels the token it was given when it ends
    // (its input closed), which must not cancel the fast path's calls
    // before their grace (stdio::EOF_GRACE).
    let ct = stop.child_token();
    let server_gateway = Arc::clone(&gateway);
    let ended = SetOnDrop(Arc::clone(&done));
    crate::runtime::get().spawn(async move {
        let _ended = ended;
        // Dropped after the transport: stdin/stdout blocking again.
        let _blocking = blocking;
        let handler = Handler(Arc::clone(&gateway));
        if let Ok(running) = handler.serve_with_ct(transport, ct).await {
            // The one session of stdio is told of list changes while it lasts.
            let passing = gateway
                .toolkit
                .mcp_changes()
                .map(|changes| tokio::spawn(pass_changes_on(running.peer().clone(), changes)));
            let _ = running.waiting().await;
            if let Some(passing) = passing {
                passing.abort();
            }
        }
        // rmcp ends with the calls it cancelled still unwinding (a client
        // that left mid-call: its input closed and the answers never came
        // within rmcp's drain), and so may the plain calls the transport
        // ran itself, cancelled when the input ended. Each is telling its
        // MCP server notifications/cancelled; ending now would let the host
        // close the toolkit under it first.
        let _ = tokio::time::timeout(CALLS_UNWIND, gateway.in_flight.idle()).await;
        // A call still running past that answers nobody.
        closer.close(CALLS_UNWIND).await;
    });
    Server {
        url: None,
        stop,
        done,
        gateway: server_gateway,
        beside: None,
    }
}

/// A proxied server's `notifications/progress` params re-told under the
/// client's `token` (progress, total, message); None without a numeric
/// progress. The rmcp path and the stdio fast path both send it.
pub(crate) fn progress_param(
    token: &ProgressToken,
    params: &Value,
) -> Option<ProgressNotificationParam> {
    let progress = params.get("progress").and_then(Value::as_f64)?;
    let mut p = ProgressNotificationParam::new(token.clone(), progress);
    if let Some(total) = params.get("total").and_then(Value::as_f64) {
        p = p.with_total(total);
    }
    if let Some(message) = params.get("message").and_then(Value::as_str) {
        p = p.with_message(message);
    }
    Some(p)
}
