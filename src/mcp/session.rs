//! One live MCP session: connect (each phase bounded), list every page of
//! tools, call a tool, close.
//!
//! Every failure is a sentence `mcp server "NAME" failed at PHASE: DETAIL`,
//! where DETAIL is a [`Fault`] and starts with a stable name (`transport
//! (...)`, `timeout`, `peer-exited (status N)`, `peer-eof`, `rpc-error (code
//! N)`, `http-status (N)`, `malformed-result`, `closed`). Header values
//! never appear in it.

use super::auth::{AuthClock, OAuth, SessionTies};
use super::config::{Lifecycle, ServerConfig, Transport as ServerTransport};
use super::direct::{self, Direct, Timing};
use super::elicit::{self, Calls, WaitFor};
use super::fault::{is_stdin_closed, Fault};
use super::guarded::GuardedClient;
use super::known_ids::KnownIds;
use super::relay::{RelayGuard, Relays};
use super::{lines, sse, stdio};
use crate::cancel::CancelToken;
pub use crate::jsonrpc::shape::shape_call_result;
use crate::tool::{default_schema, Relay, Stop, ToolResult};
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientRequest, CustomRequest, ServerResult,
    SubscriptionFilter,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, Peer, PeerRequestOptions,
    RoleClient, RunningService, ServiceError, Subscription,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{IntoTransport, StreamableHttpClientTransport};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};

/// The reason of the cancel a gateway's forwarded request ends with.
const CANCELLED: &str = "cancelled";

/// The extra time a whole server may take beyond its per-phase timeout.
pub const SERVER_SLACK: Duration = Duration::from_millis(500);

/// The longest a connect waits for a streamable HTTP server to answer the
/// standalone stream's GET.
const STREAM_SETTLE: Duration = Duration::from_secs(3);

type Service = RunningService<RoleClient, elicit::Handler>;

/// A tool as the server listed it (original name).
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// How long a tools/call may take.
#[derive(Debug, Clone, Copy)]
pub enum Limit {
    /// The server's kind of timeout: `timeout` without a word from the
    /// server, each progress on the call starting it again (when its
    /// `resetTimeoutOnProgress` holds), within its `maxTotalTimeout`.
    Idle(Duration),
    /// A deadline the host fixed for the call (the execute context's
    /// `timeoutMs`, a run's deadline): progress does not move it.
    Total(Duration),
}

/// A connected server.
pub struct Session {
    pub name: String,
    pub timeout: Duration,
    /// The server's `resetTimeoutOnProgress` and `maxTotalTimeout`.
    reset_on_progress: bool,
    max_total: Option<Duration>,
    peer: Peer<RoleClient>,
    service: Mutex<Option<Service>>,
    child: Option<stdio::ChildProc>,
    /// tools/call without rmcp's loop (`super::direct`): stdio sessions
    /// whose protocol version has an initialize handshake.
    direct: Option<Arc<Direct>>,
    /// Expanded `${ENV}` header values, redacted from everything we report.
    secrets: crate::env::Secrets,
    closed: AtomicBool,
    closing: Notify,
    /// The tool calls in flight, which a server's elicitation waits on.
    calls: Arc<Calls>,
    /// Where the server's progress and log notifications go.
    relays: Arc<Relays>,
    /// Cancelled on close: ends every elicitation still waiting.
    stopped: CancellationToken,
    /// Ends the requests of a streamable HTTP session's client when the
    /// session goes (see `super::guarded`).
    _requests: Option<DropGuard>,
    /// The server's OAuth state: its tokens are redacted from results too.
    auth: Option<Arc<OAuth>>,
    /// A 2026-07-28 session's `subscriptions/listen` stream, opened by the
    /// connect, until its listener takes it (`super::refresh`).
    listening: Mutex<Option<Subscription>>,
}

/// Where a connect attempt is, so a deadline can name the phase it hit, the
/// exit watch of the child it started (if any), so a build cancelled
/// mid-connect can wait until that child is reaped, and the time it spent
/// waiting on the host's OAuth `authorize`, which no deadline counts.
#[derive(Clone)]
pub struct PhaseCell(
    Arc<Mutex<&'static str>>,
    Arc<Mutex<Option<stdio::ExitWatch>>>,
    Arc<AuthClock>,
);

impl PhaseCell {
    pub fn new() -> Self {
        PhaseCell(
            Arc::new(Mutex::new("connect")),
            Arc::new(Mutex::new(None)),
            Arc::default(),
        )
    }
    fn set(&self, phase: &'static str) {
        if let Ok(mut p) = self.0.lock() {
            *p = phase;
        }
    }
    pub fn get(&self) -> &'static str {
        self.0.lock().map(|p| *p).unwrap_or("connect")
    }
    fn track(&self, child: &stdio::ChildProc) {
        if let Ok(mut w) = self.1.lock() {
            *w = Some(child.exit_watch());
        }
    }
    /// The exit watch of the child this attempt started, if it started one.
    pub fn child(&self) -> Option<stdio::ExitWatch> {
        self.1.lock().ok().and_then(|w| w.clone())
    }
    /// The attempt's clock: its deadlines leave the host's `authorize` out.
    pub fn clock(&self) -> &AuthClock {
        &self.2
    }
}

/// `mcp server "NAME" failed at PHASE: DETAIL`.
pub fn failure(server: &str, phase: &str, detail: impl std::fmt::Display) -> String {
    format!("mcp server \"{server}\" failed at {phase}: {detail}")
}

/// What one session's client side needs: the host's `waitFor` (SPEC §2's
/// elicitation bridge; `None`: elicitation not advertised) and the state
/// its handler shares with the session.
#[derive(Clone)]
struct Side {
    server: String,
    wait_for: Option<WaitFor>,
    calls: Arc<Calls>,
    relays: Arc<Relays>,
    stopped: CancellationToken,
}

impl Side {
    /// A handler for one connection attempt.
    fn handler(&self) -> elicit::Handler {
        elicit::Handler::new(
            &self.server,
            self.wait_for.clone(),
            Arc::clone(&self.calls),
            Arc::clone(&self.relays),
            self.stopped.clone(),
        )
    }

    /// Starts a session on `transport` as the server's `protocolVersion`
    /// says: `initialize` offering 2025-11-25, or `server/discover` first
    /// (rmcp's lifecycle modes; `Auto` falls back to that `initialize`).
    async fn start<T, E, A>(
        &self,
        transport: T,
        lifecycle: Lifecycle,
    ) -> Result<Service, ClientInitializeError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let modern = vec![rmcp::model::ProtocolVersion::V_2026_07_28];
        let mode = match lifecycle {
            Lifecycle::Initialize => ClientLifecycleMode::Initialize,
            Lifecycle::Auto => ClientLifecycleMode::Auto {
                preferred_versions: modern,
                legacy_version: Some(elicit::OFFERED_VERSION),
            },
            Lifecycle::Discover => ClientLifecycleMode::Discover {
                preferred_versions: modern,
            },
        };
        self.handler().serve_with_lifecycle(transport, mode).await
    }
}

/// A stdio server's process, started by [`start_process`] before the task
/// that connects to it runs.
pub type Started = Option<Result<stdio::Spawned, Fault>>;

/// A stdio server's process started by [`prestart`], before the runtime.
pub type Prestarted = Option<Result<stdio::Started, Fault>>;

/// Starts an enabled stdio server's process on the calling thread, before
/// the runtime is touched (a toolkit's first build starts the runtime's
/// worker thread next, while the server starts). `None` for any other
/// server. [`start_process`] hands it to the runtime.
pub fn prestart(cfg: &ServerConfig) -> Prestarted {
    match &cfg.transport {
        ServerTransport::Stdio { command, env, cwd } if cfg.enabled => {
            Some(stdio::start(command, env, cwd.as_deref()))
        }
        _ => None,
    }
}

/// Starts an enabled stdio server's process now, on the calling thread
/// (inside the runtime), or adopts the one [`prestart`] started: its
/// start-up then overlaps whatever comes before its connect task runs (on a
/// toolkit's first build, the runtime's worker thread starting) instead of
/// following it. `None` for any other server; [`connect`] starts those
/// itself.
pub fn start_process(cfg: &ServerConfig, phase: &PhaseCell, pre: Prestarted) -> Started {
    let started = pre.or_else(|| prestart(cfg))?;
    Some(adopt_tracked(cfg, started, phase))
}

/// Hands a started process to the runtime, its exit watch kept in `phase`
/// (a cancelled build reaps it from there).
fn adopt_tracked(
    cfg: &ServerConfig,
    started: Result<stdio::Started, Fault>,
    phase: &PhaseCell,
) -> Result<stdio::Spawned, Fault> {
    phase.set("connect");
    let spawned = started?.adopt(&cfg.name)?;
    phase.track(&spawned.child);
    Ok(spawned)
}

/// Connects one server and lists its tools. The caller bounds the whole
/// attempt by `timeout + SERVER_SLACK`; each phase here is bounded by
/// `timeout`. Errors are complete status messages. `started` is the
/// server's process when [`start_process`] started it already.
pub async fn connect(
    cfg: &ServerConfig,
    phase: &PhaseCell,
    started: Started,
) -> Result<(Session, Vec<RemoteTool>), String> {
    let secrets = match &cfg.transport {
        ServerTransport::Remote { secrets, .. } => &secrets.0,
        _ => &crate::env::Secrets::default(),
    };
    let side = Side {
        server: cfg.name.clone(),
        wait_for: cfg.wait_for.0.clone(),
        calls: Arc::new(Calls::default()),
        relays: Arc::default(),
        stopped: CancellationToken::new(),
    };
    connect_inner(cfg, phase, secrets, side, started)
        .await
        .map_err(|e| secrets.redact(&e).into_owned())
}

async fn connect_inner(
    cfg: &ServerConfig,
    phase: &PhaseCell,
    secrets: &crate::env::Secrets,
    side: Side,
    started: Started,
) -> Result<(Session, Vec<RemoteTool>), String> {
    let fail = |phase: &str, detail: Fault| failure(&cfg.name, phase, detail);
    let (service, child, requests, direct, auth) = match &cfg.transport {
        ServerTransport::Invalid(msg) => {
            return Err(fail("connect", Fault::InvalidConfig(msg.clone())));
        }
        ServerTransport::Stdio { command, env, cwd } => {
            let spawned = started
                .unwrap_or_else(|| {
                    adopt_tracked(cfg, stdio::start(command, env, cwd.as_deref()), phase)
                })
                .map_err(|d| fail("connect", d))?;
            phase.set("initialize");
            let transport = lines::ClientLineTransport::new(spawned.stdout, spawned.stdin)
                .with_call_tokens(cfg.reset_timeout_on_progress)
                .with_notes(Arc::clone(&side.relays));
            let direct = Direct::new(transport.pipe());
            let transport = transport.with_taker(Arc::clone(&direct) as Arc<dyn lines::Taker>);
            let init = tokio::time::timeout(
                cfg.timeout,
                side.start(KnownIds::new(transport), cfg.lifecycle),
            )
            .await;
            match init {
                Ok(Ok(service)) => {
                    let direct = goes_direct(service.peer()).then_some(direct);
                    if let Some(direct) = &direct {
                        // A progress on a direct call's token restarts its
                        // timeout (`Relays::progress`).
                        let direct = Arc::downgrade(direct);
                        side.relays.tick_direct(Box::new(move |token| {
                            if let (Some(d), Some(id)) = (direct.upgrade(), direct::token_id(token))
                            {
                                d.extend(id);
                            }
                        }));
                    }
                    (service, Some(spawned.child), None, direct, None)
                }
                Ok(Err(e)) => {
                    let mut detail = describe_init_error(&e);
                    // A server that exited before reading initialize shows as
                    // EOF or as a broken pipe, whichever came first: name
                    // the exit instead.
                    if matches!(detail, Fault::PeerEof(_)) || detail.stdin_closed() {
                        if let Some(status) = spawned
                            .child
                            .exit_status_within(Duration::from_millis(250))
                            .await
                        {
                            detail = Fault::PeerExited(status);
                        }
                    }
                    return Err(fail("initialize", detail));
                }
                Err(_) => return Err(fail("initialize", Fault::no_answer_within(cfg.timeout))),
            }
        }
        ServerTransport::Remote {
            url,
            headers,
            sse_only,
            ..
        } => {
            phase.set("initialize");
            let (service, requests, auth) =
                connect_remote(cfg, url, headers, *sse_only, phase, &side).await?;
            (service, None, requests, None, auth)
        }
    };
    let peer = service.peer().clone();
    // Before tools/list: a change between the two is then not lost.
    let listening = match listen_filter(&peer) {
        Some(filter) => open_listen(&cfg.name, &peer, filter, cfg.timeout / 4).await,
        None => None,
    };
    phase.set("tools/list");
    let tools = match phase
        .clock()
        .bound(cfg.timeout, list_tools(&peer))
        .await
        .ok_or(())
    {
        Ok(Ok(tools)) => tools,
        Ok(Err(detail)) => {
            let detail = match &child {
                Some(c) => match c.exit_status_within(Duration::from_millis(250)).await {
                    Some(status) if matches!(detail, Fault::PeerEof(_)) => {
                        Fault::PeerExited(status)
                    }
                    _ => detail,
                },
                None => detail,
            };
            return Err(fail("tools/list", detail));
        }
        Err(_) => return Err(fail("tools/list", Fault::no_answer_within(cfg.timeout))),
    };
    Ok((
        Session {
            name: cfg.name.clone(),
            timeout: cfg.timeout,
            reset_on_progress: cfg.reset_timeout_on_progress,
            max_total: cfg.max_total_timeout,
            peer,
            service: Mutex::new(Some(service)),
            child,
            direct,
            secrets: secrets.clone(),
            closed: AtomicBool::new(false),
            closing: Notify::new(),
            calls: side.calls,
            relays: side.relays,
            stopped: side.stopped,
            _requests: requests,
            auth,
            listening: Mutex::new(listening),
        },
        tools,
    ))
}

impl Session {
    /// The protocol revision negotiated: the one the server answered
    /// `initialize` with, or the one chosen from its `server/discover`.
    pub fn protocol_version(&self) -> Option<String> {
        self.peer
            .peer_info()
            .map(|info| info.protocol_version.to_string())
    }

    /// What the server advertised in `initialize`, as JSON.
    pub fn capabilities(&self) -> Value {
        self.peer
            .peer_info()
            .and_then(|info| serde_json::to_value(&info.capabilities).ok())
            .unwrap_or(Value::Null)
    }

    /// One request passed through as it is (the gateway's resources,
    /// prompts, completions and logging): the server's result as JSON, or
    /// its JSON-RPC error as it sent it. Anything else (a closed session, a
    /// timeout, a transport failure) is an internal error naming the server
    /// and never a header value.
    pub async fn forward(
        &self,
        method: &str,
        params: Option<Value>,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, rmcp::ErrorData> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(rmcp::ErrorData::internal_error(
                failure(&self.name, method, Fault::Closed),
                None,
            ));
        }
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(self.timeout);
        let req = ClientRequest::CustomRequest(CustomRequest::new(method, params));
        let outcome = async {
            let handle = self.peer.send_request_with_option(req, options).await?;
            let id = handle.id.clone();
            let waited = handle.await_response();
            match cancel {
                None => waited.await,
                Some(cancel) => tokio::select! {
                    r = waited => r,
                    _ = cancel.cancelled() => {
                        let note = CancelledNotification::new(CancelledNotificationParam::new(
                            Some(id),
                            Some("the calling client cancelled".into()),
                        ));
                        let _ = self.peer.send_notification(note.into()).await;
                        Err(ServiceError::Cancelled { reason: Some(CANCELLED.into()) })
                    }
                },
            }
        }
        .await;
        match outcome {
            Ok(ServerResult::CustomResult(custom)) => Ok(custom.0),
            Ok(other) => serde_json::to_value(&other).map_err(|e| {
                rmcp::ErrorData::internal_error(
                    failure(&self.name, method, Fault::Malformed(Some(e.to_string()))),
                    None,
                )
            }),
            Err(ServiceError::McpError(mut data)) => {
                if let Some(auth) = &self.auth {
                    data.message = auth.redact(&data.message).into();
                }
                Err(data)
            }
            Err(e) => Err(rmcp::ErrorData::internal_error(
                self.secrets
                    .redact(&failure(&self.name, method, describe_service_error(&e)))
                    .into_owned(),
                None,
            )),
        }
    }
}

/// On a session negotiated at 2026-07-28 (no `initialize`: servers send
/// list changes only on a `subscriptions/listen` stream), the changes to
/// listen for: the lists the server advertised `listChanged` for. `None`
/// on a session of 2025, where they come unasked, and when the server
/// advertised none.
fn listen_filter(peer: &Peer<RoleClient>) -> Option<SubscriptionFilter> {
    let info = peer.peer_info()?;
    if info.protocol_version.has_initialize() {
        return None;
    }
    let caps = &info.capabilities;
    let mut filter = SubscriptionFilter::default();
    if caps.tools.as_ref().and_then(|c| c.list_changed) == Some(true) {
        filter.tools_list_changed = Some(true);
    }
    if caps.prompts.as_ref().and_then(|c| c.list_changed) == Some(true) {
        filter.prompts_list_changed = Some(true);
    }
    if caps.resources.as_ref().and_then(|c| c.list_changed) == Some(true) {
        filter.resources_list_changed = Some(true);
    }
    (filter != SubscriptionFilter::default()).then_some(filter)
}

/// Opens the session's `subscriptions/listen` stream, bounded by `timeout`
/// (a quarter of the server's: its tools/list still fits the connect's
/// bound). A server that refuses it (or never acknowledges it)
/// stays connected, its changes unheard: a warning says so.
async fn open_listen(
    server: &str,
    peer: &Peer<RoleClient>,
    filter: SubscriptionFilter,
    timeout: Duration,
) -> Option<Subscription> {
    let failed = match tokio::time::timeout(timeout, peer.listen(filter)).await {
        Ok(Ok(stream)) => return Some(stream),
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no acknowledgment within {} ms", timeout.as_millis()),
    };
    crate::log::emit(crate::log::Level::Warn, "mcp", || {
        format!(
            "mcp server \"{server}\": subscriptions/listen failed ({failed}); its list changes \
             are not heard"
        )
    });
    None
}

/// Whether a stdio session's tools/calls can go direct: its protocol has an
/// initialize handshake, so rmcp adds no per-request `_meta` and lets the
/// server ask for elicitation whenever (see `super::direct`).
fn goes_direct(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info()
        .is_some_and(|info| crate::jsonrpc::plain_path(&info.protocol_version))
}

async fn connect_remote(
    cfg: &ServerConfig,
    url: &str,
    headers: &[(String, String)],
    sse_only: bool,
    phase: &PhaseCell,
    side: &Side,
) -> Result<(Service, Option<DropGuard>, Option<Arc<OAuth>>), String> {
    let fail = |phase: &str, detail: Fault| failure(&cfg.name, phase, detail);
    let streamable_err = if sse_only {
        None
    } else {
        // Dropped on every way out but success (a timeout, a cancelled
        // build): rmcp's worker then gives up the request it has in flight.
        let auth =
            oauth(cfg, url, headers, phase, side).map_err(|d| fail("connect", Fault::Auth(d)))?;
        let (transport, requests, watch) =
            streamable_transport(url, headers, cfg.timeout, auth.clone())
                .map_err(|d| fail("connect", d))?;
        let served = phase
            .clock()
            .bound(
                cfg.timeout,
                side.start(
                    KnownIds::new(transport).with_notes(Arc::clone(&side.relays)),
                    cfg.lifecycle,
                ),
            )
            .await
            .ok_or(());
        match served {
            Ok(Ok(service)) => {
                // A server's request sent before its standalone stream is
                // open is lost (an elicitation in the first call, say).
                watch.settled(cfg.timeout.min(STREAM_SETTLE)).await;
                return Ok((service, Some(requests), auth));
            }
            Ok(Err(e)) => {
                let detail = describe_init_error(&e);
                // Nothing listening, or an authorization that failed: the
                // legacy transport cannot help.
                if matches!(detail, Fault::ConnectFailed | Fault::Auth(_)) {
                    return Err(fail("initialize", detail));
                }
                Some(detail)
            }
            Err(_) => return Err(fail("initialize", Fault::no_answer_within(cfg.timeout))),
        }
    };
    // The MCP backwards-compatibility rule: a server that rejects the
    // streamable POST may be a legacy HTTP+SSE server.
    phase.set("connect");
    let report = |detail: Fault| match streamable_err {
        Some(first) => fail(
            "initialize",
            Fault::FallbackFailed {
                first: Box::new(first),
                then: Box::new(detail),
            },
        ),
        None => fail("connect", detail),
    };
    let transport = sse::connect(url, headers, cfg.timeout)
        .await
        .map_err(report)?;
    phase.set("initialize");
    // HTTP+SSE is the transport of 2024-11-05: no server there has
    // `server/discover`.
    let legacy = side.start(
        KnownIds::new(transport).with_notes(Arc::clone(&side.relays)),
        Lifecycle::Initialize,
    );
    match tokio::time::timeout(cfg.timeout, legacy).await {
        Ok(Ok(service)) => Ok((service, None, None)),
        Ok(Err(e)) => Err(fail("initialize", describe_init_error(&e))),
        Err(_) => Err(fail("initialize", Fault::no_answer_within(cfg.timeout))),
    }
}

/// The OAuth state of a remote server, when its `auth` setting (or the
/// host's `authorize` callback) asks for one.
fn oauth(
    cfg: &ServerConfig,
    url: &str,
    headers: &[(String, String)],
    phase: &PhaseCell,
    side: &Side,
) -> Result<Option<Arc<OAuth>>, String> {
    let ServerTransport::Remote { auth, secrets, .. } = &cfg.transport else {
        return Ok(None);
    };
    let authorize = cfg.authorize.0.clone();
    let Some(config) = auth.effective(authorize.is_some(), headers) else {
        return Ok(None);
    };
    let ties = SessionTies {
        timeout: cfg.timeout,
        clock: phase.2.clone(),
        closing: side.stopped.clone(),
    };
    OAuth::new(&cfg.name, url, config, authorize, &secrets.0, ties).map(|a| Some(Arc::new(a)))
}

fn streamable_transport(
    url: &str,
    headers: &[(String, String)],
    timeout: Duration,
    auth: Option<Arc<OAuth>>,
) -> Result<
    (
        StreamableHttpClientTransport<GuardedClient>,
        DropGuard,
        Arc<super::guarded::StreamWatch>,
    ),
    Fault,
> {
    let mut map = HashMap::new();
    for (k, v) in headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes()).map_err(|_| {
            Fault::InvalidConfig(format!("headers: '{k}' is not a valid header name"))
        })?;
        let value = reqwest::header::HeaderValue::from_str(v).map_err(|_| {
            Fault::InvalidConfig(format!(
                "headers.{k}: the value is not a valid header value"
            ))
        })?;
        map.insert(name, value);
    }
    let (client, requests) = GuardedClient::new(http_client(timeout)?, auth);
    let watch = client.watch();
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
        .custom_headers(map)
        .max_json_response_size(crate::limits::RESPONSE_BODY_BYTES)
        .max_sse_event_size(crate::limits::EVENT_BYTES);
    Ok((
        StreamableHttpClientTransport::with_client(client, config),
        requests,
        watch,
    ))
}

/// The crate's reqwest client (rustls on ring, webpki roots).
fn http_client(timeout: Duration) -> Result<reqwest::Client, Fault> {
    crate::net::reqwest_builder()
        .map_err(|e| Fault::transport(e.to_string()))?
        .connect_timeout(timeout)
        .build()
        .map_err(|e| Fault::transport(format!("client: {e}")))
}

/// The detail of a failed initialize, classified by the error's root cause.
fn describe_init_error(e: &rmcp::service::ClientInitializeError) -> Fault {
    use rmcp::service::ClientInitializeError as E;
    match e {
        // `protocolVersion: "auto"`: the fallback's failure is the one to tell.
        E::LegacyFallbackFailed { fallback, .. } => return describe_init_error(fallback),
        E::ConnectionClosed(_) => return Fault::PeerEof("the server closed the connection"),
        E::JsonRpcError(data) => return Fault::RpcError(data.code.0),
        E::TransportError { error, .. } => {
            if let Some(http) = error.error.downcast_ref::<HttpError>() {
                return describe_http_error(http);
            }
            if let Some(io) = error.error.downcast_ref::<std::io::Error>() {
                return Fault::Transport {
                    what: io.to_string(),
                    stdin_closed: is_stdin_closed(io),
                };
            }
        }
        _ => {}
    }
    let mut src: Option<&dyn std::error::Error> = Some(e);
    let mut deepest = e.to_string();
    while let Some(s) = src {
        if let Some(re) = s.downcast_ref::<reqwest::Error>() {
            if re.is_connect() {
                return Fault::ConnectFailed;
            }
            if re.is_timeout() {
                return Fault::Timeout(None);
            }
            if let Some(status) = re.status() {
                return Fault::HttpStatus(status.as_u16());
            }
        }
        deepest = s.to_string();
        src = s.source();
    }
    Fault::Transport {
        what: deepest,
        stdin_closed: is_stdin_closed(e),
    }
}

type HttpError = rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>;

fn describe_http_error(e: &HttpError) -> Fault {
    match e {
        HttpError::Client(re) => {
            if re.is_connect() {
                Fault::ConnectFailed
            } else if re.is_timeout() {
                Fault::Timeout(None)
            } else if let Some(status) = re.status() {
                Fault::HttpStatus(status.as_u16())
            } else {
                Fault::transport(innermost(re))
            }
        }
        HttpError::HttpStatus(h) => Fault::HttpStatus(h.status),
        // An OAuth step that failed (`super::auth`, already worded and
        // redacted), or one of rmcp's own.
        HttpError::Auth(rmcp::transport::auth::AuthError::AuthorizationFailed(text))
            if text.starts_with("auth (") =>
        {
            Fault::Auth(text.clone())
        }
        HttpError::Auth(_) => Fault::Auth("auth (the authorization failed)".into()),
        HttpError::AuthRequired(_) => Fault::HttpStatusWhy(
            401,
            "the server requires OAuth authorization (give the server an `auth` setting, or \
             the toolkit an `authorize` callback)",
        ),
        HttpError::InsufficientScope(_) => {
            Fault::HttpStatusWhy(403, "the token lacks a scope the server requires")
        }
        // rmcp's text for a 4xx answer carries the body, which may echo the
        // request (headers included): the status alone names the failure.
        HttpError::UnexpectedServerResponse(text) => match status_of(text) {
            Some(status) => Fault::HttpStatus(status),
            None => Fault::transport(format!("unexpected server response: {text}")),
        },
        other => Fault::transport(other.to_string()),
    }
}

/// The status of rmcp's `HTTP 401 Unauthorized: <body>` text.
fn status_of(text: &str) -> Option<u16> {
    let rest = text.strip_prefix("HTTP ")?;
    let digits = rest.get(..3)?;
    digits
        .parse()
        .ok()
        .filter(|_| digits.bytes().all(|b| b.is_ascii_digit()))
}

/// The innermost cause of an error: a reqwest error's own text carries the
/// URL, its causes do not.
fn innermost(e: &dyn std::error::Error) -> String {
    let mut text = String::from("request failed");
    let mut src = e.source();
    while let Some(s) = src {
        text = s.to_string();
        src = s.source();
    }
    text
}

/// The detail of a failed request after initialize.
pub(super) fn describe_service_error(e: &ServiceError) -> Fault {
    match e {
        ServiceError::McpError(data) => Fault::RpcError(data.code.0),
        ServiceError::TransportClosed => Fault::PeerEof("the connection is closed"),
        ServiceError::Timeout { timeout } => Fault::no_answer_within(*timeout),
        ServiceError::TransportSend(e) => match e.error.downcast_ref::<HttpError>() {
            Some(http) => describe_http_error(http),
            None => Fault::Transport {
                what: format!("send failed: {}", e.error),
                stdin_closed: is_stdin_closed(&*e.error),
            },
        },
        ServiceError::UnexpectedResponse => Fault::Malformed(None),
        other => Fault::transport(other.to_string()),
    }
}

/// A result as plain JSON: a tools/call answer as it came
/// (`lines::fast_call_result`), any typed one written back.
fn result_json(result: ServerResult) -> Result<Value, Fault> {
    match result {
        ServerResult::CustomResult(custom) => Ok(custom.0),
        other => serde_json::to_value(&other).map_err(|e| Fault::Malformed(Some(e.to_string()))),
    }
}

/// One raw request: `method` with `params`, the result as rmcp typed it
/// ([`result_json`] makes it plain JSON).
async fn request(
    peer: &Peer<RoleClient>,
    method: &str,
    params: Option<Value>,
    timing: Option<Timing>,
    cancel: Option<&CancelToken>,
    relay: Option<&RelayGuard<'_>>,
) -> Result<ServerResult, Fault> {
    let mut options = PeerRequestOptions::no_options();
    if let Some(t) = timing {
        // rmcp restarts the timeout on each progress for its token, and
        // tells the server `notifications/cancelled` when either ends.
        options.timeout = Some(t.timeout);
        options.reset_timeout_on_progress = t.reset;
        options.max_total_timeout = t.cap;
    }
    let req = ClientRequest::CustomRequest(CustomRequest::new(method, params));
    let handle = peer
        .send_request_with_option(req, options)
        .await
        .map_err(|e| describe_service_error(&e))?;
    if let (Some(relay), Ok(token)) = (relay, serde_json::to_value(&handle.progress_token)) {
        // rmcp puts a progress token of its own on every request.
        relay.watch(&token);
    }
    let id = handle.id.clone();
    let waited = handle.await_response();
    match cancel {
        None => waited.await,
        Some(cancel) => tokio::select! {
            r = waited => r,
            _ = cancel.cancelled() => {
                // The caller gave up: tell the server, so it can stop too.
                let note = CancelledNotification::new(CancelledNotificationParam::new(
                    Some(id),
                    Some("the caller cancelled the call".into()),
                ));
                let _ = peer.send_notification(note.into()).await;
                return Err(Fault::Cancelled);
            }
        },
    }
    .map_err(|e| match (e, timing) {
        // rmcp words both ends alike: the cap is the one of its length.
        (ServiceError::Timeout { timeout }, Some(t))
            if Some(timeout) == t.cap && timeout != t.timeout =>
        {
            Fault::total_timeout(timeout)
        }
        (e, _) => describe_service_error(&e),
    })
}

/// The backstop of a tools/call on rmcp's path: `timeout` and a slack past
/// the last progress (`ticked`, when the timeout restarts on progress),
/// and the cap and a slack in all.
async fn backstop(t: Timing, ticked: &Notify) -> Fault {
    let cap = async {
        match t.cap {
            Some(cap) => tokio::time::sleep(cap + SERVER_SLACK).await,
            None => std::future::pending().await,
        }
    };
    let idle = async {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(t.timeout + SERVER_SLACK) => return,
                _ = ticked.notified(), if t.reset => {}
            }
        }
    };
    tokio::select! {
        _ = cap => Fault::total_timeout(t.cap.unwrap_or_default()),
        () = idle => Fault::no_answer_within(t.timeout),
    }
}

/// A direct tools/call (`super::direct`), its failures worded as
/// [`request`] words them.
async fn direct_call(
    direct: &Arc<Direct>,
    tool: &str,
    args: &Map<String, Value>,
    timing: Timing,
    cancel: Option<&CancelToken>,
    progress: direct::Progress<'_>,
    shape: impl FnOnce(Value) -> ToolResult,
) -> Result<ToolResult, Fault> {
    direct
        .call(tool, args, timing, cancel, progress)
        .await
        .map(|reply| match reply {
            direct::Reply::Shaped(result) => result,
            direct::Reply::Json(result) => shape(result),
        })
        .map_err(|failure| match failure {
            direct::Failure::Service(e) => describe_service_error(&e),
            direct::Failure::Malformed(why) => Fault::Malformed(Some(why)),
            direct::Failure::Cancelled => Fault::Cancelled,
            direct::Failure::TotalTimeout(cap) => Fault::total_timeout(cap),
        })
}

/// tools/list through every page. A cursor seen before is an error, not a loop.
async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<RemoteTool>, Fault> {
    let mut tools = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
        let next = match request(peer, "tools/list", params, None, None, None).await? {
            // Read as the JSON it writes back would be, without writing it.
            ServerResult::ListToolsResult(page) => {
                tools.extend(page.tools.into_iter().map(typed_remote_tool));
                page.next_cursor
            }
            other => {
                let page = result_json(other)?;
                let Some(list) = page.get("tools").and_then(Value::as_array) else {
                    return Err(Fault::Malformed(Some(
                        "the tools/list result has no tools array".into(),
                    )));
                };
                tools.extend(list.iter().filter_map(remote_tool));
                match page.get("nextCursor") {
                    Some(Value::String(next)) => Some(next.clone()),
                    _ => None,
                }
            }
        };
        match next {
            Some(next) if !next.is_empty() => {
                if !seen.insert(next.clone()) {
                    return Err(Fault::Malformed(Some(format!(
                        "tools/list repeated the cursor \"{next}\""
                    ))));
                }
                cursor = Some(next);
            }
            _ => return Ok(tools),
        }
    }
}

/// [`remote_tool`] of a tool rmcp typed: what it reads of the tool's JSON.
fn typed_remote_tool(t: rmcp::model::Tool) -> RemoteTool {
    RemoteTool {
        name: t.name.into_owned(),
        description: t.description.map(Cow::into_owned).unwrap_or_default(),
        input_schema: Value::Object(Arc::unwrap_or_clone(t.input_schema)),
    }
}

fn remote_tool(v: &Value) -> Option<RemoteTool> {
    let name = v.get("name")?.as_str()?.to_string();
    let description = v
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let input_schema = match v.get("inputSchema") {
        Some(s @ Value::Object(_)) => s.clone(),
        _ => default_schema(),
    };
    Some(RemoteTool {
        name,
        description,
        input_schema,
    })
}

impl Session {
    /// Where the server's notifications land (its list changes among
    /// them), for the session's follower (`super::refresh`).
    pub(super) fn relays(&self) -> &Arc<Relays> {
        &self.relays
    }

    /// Cancelled once the session closes.
    pub(super) fn stopped(&self) -> &CancellationToken {
        &self.stopped
    }

    /// The session's peer (for its `subscriptions/listen`).
    pub(super) fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    /// The `subscriptions/listen` stream the connect opened, once.
    pub(super) fn take_listening(&self) -> Option<Subscription> {
        self.listening.lock().ok().and_then(|mut l| l.take())
    }

    /// tools/list again (after the server announced a change), bounded by
    /// the server's timeout: the tools, or the failure as a status message.
    pub(super) async fn relist(&self) -> Result<Vec<RemoteTool>, String> {
        let fail = |detail: Fault| {
            self.secrets
                .redact(&failure(&self.name, "tools/list", detail))
                .into_owned()
        };
        if self.closed.load(Ordering::SeqCst) {
            return Err(fail(Fault::Closed));
        }
        match tokio::time::timeout(self.timeout, list_tools(&self.peer)).await {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(detail)) => Err(fail(detail)),
            Err(_) => Err(fail(Fault::no_answer_within(self.timeout))),
        }
    }

    /// The process id of a stdio server.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(stdio::ChildProc::pid)
    }

    /// The direct tools/calls waiting for an answer; None when this
    /// session's calls go through rmcp.
    #[cfg(test)]
    pub fn direct_pending(&self) -> Option<usize> {
        self.direct.as_deref().map(Direct::pending)
    }

    /// tools/call. Never waits out the timeout on a transport that is
    /// already gone: a dead child or a closed session ends the wait at once.
    #[cfg(test)]
    pub async fn call_tool(
        &self,
        tool: &str,
        args: Map<String, Value>,
        timeout: Duration,
        cancel: Option<&CancelToken>,
    ) -> ToolResult {
        self.call_tool_relayed(tool, args, Limit::Idle(timeout), cancel, None)
            .await
    }

    /// [`Session::call_tool`] bounded by `limit`, with the server's
    /// progress on this call and its log lines while it runs sent to
    /// `relay` (the call then carries a progress token).
    pub async fn call_tool_relayed(
        &self,
        tool: &str,
        args: Map<String, Value>,
        limit: Limit,
        cancel: Option<&CancelToken>,
        relay: Option<&Relay>,
    ) -> ToolResult {
        let result = self.call_tool_inner(tool, args, limit, cancel, relay).await;
        let result = self.secrets.redact_result(result);
        match &self.auth {
            // Tokens, codes and client secrets the server may echo.
            Some(auth) => auth.redact_result(result),
            None => result,
        }
    }

    async fn call_tool_inner(
        &self,
        tool: &str,
        args: Map<String, Value>,
        limit: Limit,
        cancel: Option<&CancelToken>,
        relay: Option<&Relay>,
    ) -> ToolResult {
        let fail = |detail: Fault| ToolResult::error(failure(&self.name, "tools/call", detail));
        // In flight until this returns, however the call ends.
        let _in_flight = self.calls.enter();
        // Registered when the server's doings during the call matter:
        // relayed (notifications, requests), or, on rmcp's path, its
        // progress restarting the backstop. A relay that only keeps the
        // raw result is not, nor a direct call that only wants its
        // progress: its token names it (`direct::token`).
        let routed = relay.filter(|r| r.routes());
        let token = routed.is_some() || self.reset_on_progress;
        let relayed = (routed.is_some() || (token && self.direct.is_none()))
            .then(|| self.relays.follow(routed));
        let timing = match limit {
            Limit::Idle(timeout) => Timing {
                timeout,
                reset: self.reset_on_progress,
                cap: self.max_total,
            },
            Limit::Total(timeout) => Timing {
                timeout,
                reset: false,
                cap: None,
            },
        };
        // rmcp's path ends on its own timer; this backstop (a server that
        // never lets the request go out, say) follows the call's progress.
        let ticked = self.direct.is_none().then(|| Arc::new(Notify::new()));
        if let (Some(ticked), Some(guard)) = (&ticked, &relayed) {
            let ticked = Arc::clone(ticked);
            guard.on_progress(Arc::new(move || ticked.notify_one()));
        }
        if self.closed.load(Ordering::SeqCst) {
            return fail(Fault::Closed);
        }
        if let Some(status) = self.child.as_ref().and_then(stdio::ChildProc::exit_status) {
            return fail(Fault::PeerExited(status));
        }
        let call = async {
            match &self.direct {
                Some(direct) => {
                    let shape = |v: Value| self.shaped_owned(v, relay);
                    let progress = match &relayed {
                        Some(guard) => direct::Progress::Relayed(guard),
                        None if token => direct::Progress::Token,
                        None => direct::Progress::None,
                    };
                    direct_call(direct, tool, &args, timing, cancel, progress, shape).await
                }
                None => {
                    let params = json!({"name": tool, "arguments": Value::Object(args)});
                    // Boxed: far bigger than the direct call, and this
                    // future is moved into a box per call.
                    Box::pin(request(
                        &self.peer,
                        "tools/call",
                        Some(params),
                        Some(timing),
                        cancel,
                        relayed.as_ref(),
                    ))
                    .await
                    .and_then(result_json)
                    .map(|result| self.shaped(&result, relay))
                }
            }
        };
        let child_exit = async {
            match &self.child {
                Some(c) => c.exited().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            res = call => match res {
                Ok(result) => result,
                Err(Fault::Cancelled) => {
                    fail(Fault::Cancelled).with_metadata(Stop::Cancelled.metadata())
                }
                // Closing ends the child too: the call failed because of
                // the close, whichever of the two it saw first.
                Err(_) if self.closed.load(Ordering::SeqCst) => fail(Fault::Closed),
                Err(detail) => {
                    let detail = match &self.child {
                        // A live server that closed its stdin: say so now.
                        Some(c) if detail.stdin_closed() => match c.exit_status() {
                            Some(status) => Fault::PeerExited(status),
                            None => detail,
                        },
                        Some(c) if matches!(detail, Fault::PeerEof(_)) => {
                            match c.exit_status_within(Duration::from_millis(250)).await {
                                Some(status) => Fault::PeerExited(status),
                                None => detail,
                            }
                        }
                        _ => detail,
                    };
                    fail(detail)
                }
            },
            // Closing kills the child: name the close, not the exit.
            _ = self.closing.notified() => fail(Fault::Closed),
            status = child_exit => fail(Fault::PeerExited(status)),
            // The backstop of rmcp's path; a direct call bounds itself
            // (its write too), and one timer a call fewer is a tokio timer
            // registration and its wake-up saved.
            detail = async {
                match &ticked {
                    None => std::future::pending().await,
                    Some(ticked) => backstop(timing, ticked).await,
                }
            } => fail(detail),
        }
    }

    /// A call's result as the library reads it; a relay that keeps the
    /// raw result gets it too, redacted as the result is.
    fn shaped(&self, result: &Value, relay: Option<&Relay>) -> ToolResult {
        match relay.filter(|r| r.wants_raw()) {
            Some(_) => self.shaped_owned(result.clone(), relay),
            None => shape_call_result(result),
        }
    }

    /// [`Session::shaped`] of a result this owns: a relay that keeps the
    /// raw result gets it without a copy.
    fn shaped_owned(&self, result: Value, relay: Option<&Relay>) -> ToolResult {
        let shaped = shape_call_result(&result);
        if let Some(relay) = relay.filter(|r| r.wants_raw()) {
            let mut raw = result;
            self.secrets.redact_value(&mut raw);
            if let Some(auth) = &self.auth {
                auth.redact_value(&mut raw);
            }
            relay.keep(crate::tool::RawResult {
                result: raw,
                parts: shaped.parts.len(),
            });
        }
        shaped
    }

    /// Closes the session: the transport first (stdin EOF for a child), then
    /// the child's process tree. Idempotent.
    pub async fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        self.closing.notify_waiters();
        self.stopped.cancel();
        let service = self.service.lock().ok().and_then(|mut s| s.take());
        if let Some(service) = service {
            let _ = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
        }
        if let Some(child) = &self.child {
            child.terminate().await;
        }
    }
}

#[cfg(test)]
#[path = "direct_tests.rs"]
mod direct_tests;

#[cfg(test)]
#[path = "progress_tests.rs"]
mod progress_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_tools_list_page_reads_as_the_json_it_writes_back() {
        // list_tools reads a typed page's tools directly; the tools must be
        // what reading the page's JSON (the path of any other result) gives.
        let pages = [
            json!({"tools": [
                {"name": "a", "inputSchema": {"type": "object"}},
                {"name": "b", "description": null, "inputSchema": {}},
                {"name": "c", "title": "C", "description": "does c\u{2028}",
                 "inputSchema": {"type": "object", "properties": {"n": {"type": "number", "maximum": 1.5e300}}, "required": ["n"]},
                 "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true},
                 "_meta": {"k": [1, -0, 12345678901234567890u64]}},
                {"name": "\u{e9}\u{1F600}", "description": "", "inputSchema": {"a": null, "b": [true, {}]}}
            ], "nextCursor": "n"}),
            json!({"tools": []}),
        ];
        for page in pages {
            let Ok(ServerResult::ListToolsResult(typed)) =
                serde_json::from_value::<ServerResult>(page.clone())
            else {
                panic!("not typed as a tools/list page: {page}");
            };
            let from_json: Vec<RemoteTool> =
                result_json(ServerResult::ListToolsResult(typed.clone())).unwrap()["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(remote_tool)
                    .collect();
            let direct: Vec<RemoteTool> = typed.tools.into_iter().map(typed_remote_tool).collect();
            assert_eq!(direct, from_json, "{page}");
            assert_eq!(direct.len(), page["tools"].as_array().unwrap().len());
        }
    }
}
