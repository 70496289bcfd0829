//! Streamable HTTP on an address the host gives: hyper's HTTP/1 server in
//! front of rmcp's stateless streamable-HTTP service, at `/mcp` only.
//!
//! A plain `tools/call` or `tools/list` POST (see [`plain_post`] and
//! [`crate::jsonrpc::plain`]) is answered here, without the service, loop task and
//! handler task rmcp's stateless service makes per POST: the same gateway
//! call, the same JSON-RPC message, the same HTTP answer (200,
//! `application/json`; with `with_json_response` rmcp answers a call that
//! sends nothing before its result that way too). Everything else
//! (initialize, notifications, GET/DELETE, batches, other headers or
//! versions) goes to rmcp's service.

use super::{Beside, BesideRequest, Done, Gateway, Handler, Server, SetOnDrop};
use crate::error::{Error, Result};
use crate::jsonrpc::plain::{self, Plain};
use crate::tool::Relay;
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// The one path the server answers on.
pub const PATH: &str = "/mcp";

type Service = StreamableHttpService<Handler, NeverSessionManager>;

/// The request-body caps of one HTTP server (see `ServeLimits`).
#[derive(Debug, Clone, Copy)]
pub struct BodyCaps {
    /// A POST to `/mcp` (`maxRequestBytes`, at most rmcp's 4 MiB).
    pub mcp: usize,
    /// A request to the routes beside `/mcp`.
    pub beside: usize,
}

pub fn serve(
    gateway: Arc<Gateway>,
    addr: &str,
    caps: BodyCaps,
    beside: Option<Arc<dyn Beside>>,
) -> Result<Server> {
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| Error::invalid_config(format!("addr: cannot listen on '{addr}': {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::invalid_config(format!("addr: cannot listen on '{addr}': {e}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::invalid_config(format!("addr: cannot listen on '{addr}': {e}")))?;
    let runtime = crate::runtime::get();
    let listener = {
        let _inside = runtime.enter();
        tokio::net::TcpListener::from_std(listener)
            .map_err(|e| Error::invalid_config(format!("addr: cannot listen on '{addr}': {e}")))?
    };

    let stop = CancellationToken::new();
    let config = service_config(local, stop.child_token());
    let server_gateway = Arc::clone(&gateway);
    let routes = Arc::new(Routes {
        max_body: caps.mcp,
        beside_body: caps.beside,
        hosts: config.allowed_hosts.clone(),
        stop: stop.child_token(),
        gateway: Arc::clone(&gateway),
        beside: beside.clone(),
        base: base_url(local),
        service: StreamableHttpService::new(
            move || Ok(Handler(Arc::clone(&gateway))),
            Arc::new(NeverSessionManager::default()),
            config,
        ),
    });
    let done = Arc::new(Done::default());
    let ended = SetOnDrop(Arc::clone(&done));
    let ct = stop.clone();
    runtime.spawn(async move {
        let _ended = ended;
        accept_loop(listener, routes, ct).await;
    });
    Ok(Server {
        url: Some(format!("http://{local}{PATH}")),
        stop,
        done,
        gateway: server_gateway,
        beside,
    })
}

/// Stateless (SPEC §7C), plain JSON answers where a call needs no stream,
/// and the Host check of rmcp (DNS-rebinding protection) kept: loopback
/// names, plus the address bound when it is a specific one.
fn service_config(local: SocketAddr, ct: CancellationToken) -> StreamableHttpServerConfig {
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    let ip = local.ip();
    if !ip.is_unspecified() && !ip.is_loopback() {
        hosts.push(ip.to_string());
    }
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_cancellation_token(ct);
    if ip.is_unspecified() {
        // Bound to every interface: the host decides who may reach it.
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(hosts)
    }
}

/// What every connection routes with.
struct Routes {
    /// The largest request body taken (`maxRequestBytes`, at most rmcp's
    /// 4 MiB).
    max_body: usize,
    /// The largest request body the routes beside `/mcp` take.
    beside_body: usize,
    /// rmcp's allowed Host names (empty: any).
    hosts: Vec<String>,
    /// The server's stop, as rmcp's service sees it.
    stop: CancellationToken,
    gateway: Arc<Gateway>,
    /// What answers every other path (404 without it).
    beside: Option<Arc<dyn Beside>>,
    /// `http://host:port` as peers reach it.
    base: String,
    service: Service,
}

/// `http://host:port` of the bound address; a wildcard bind is reported as
/// loopback (what a peer on this machine reaches).
fn base_url(local: SocketAddr) -> String {
    let ip = if local.ip().is_unspecified() {
        std::net::IpAddr::from([127, 0, 0, 1])
    } else {
        local.ip()
    };
    format!("http://{}", SocketAddr::new(ip, local.port()))
}

/// A request for the routes beside `/mcp`, answered on a blocking thread
/// (or here, when they never wait: [`Beside::waits`]).
async fn answer_beside(
    beside: &Arc<dyn Beside>,
    base: &str,
    max_body: usize,
    req: hyper::Request<Incoming>,
) -> Answer {
    let (parts, body) = req.into_parts();
    let body = match http_body_util::Limited::new(body, max_body).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return text_answer(
                hyper::StatusCode::PAYLOAD_TOO_LARGE,
                "request body too large\n".into(),
            )
        }
        Err(e) => {
            return text_answer(
                hyper::StatusCode::BAD_REQUEST,
                format!("cannot read the request body: {e}\n"),
            )
        }
    };
    let answered = if beside.waits() {
        let (beside, base) = (Arc::clone(beside), base.to_string());
        tokio::task::spawn_blocking(move || {
            beside.answer(&BesideRequest {
                method: parts.method.as_str(),
                path: parts.uri.path(),
                headers: &parts.headers,
                body: &body,
                base: &base,
            })
        })
        .await
        .ok()
    } else {
        // Never waits: answered here, a panic caught as the blocking
        // thread's join would have caught it.
        catch_unwind(AssertUnwindSafe(|| {
            beside.answer(&BesideRequest {
                method: parts.method.as_str(),
                path: parts.uri.path(),
                headers: &parts.headers,
                body: &body,
                base,
            })
        }))
        .ok()
    };
    let Some(a) = answered else {
        return text_answer(
            hyper::StatusCode::INTERNAL_SERVER_ERROR,
            "internal error\n".into(),
        );
    };
    let mut res = match a.stream {
        None => hyper::Response::new(Full::new(Bytes::from(a.body)).boxed()),
        Some(rx) => {
            let first = (!a.body.is_empty()).then(|| Bytes::from(a.body));
            hyper::Response::new(BodyExt::boxed(http_body_util::StreamBody::new(Frames {
                first,
                rx,
            })))
        }
    };
    *res.status_mut() =
        hyper::StatusCode::from_u16(a.status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    res.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(a.content_type),
    );
    for (name, value) in a.headers {
        if let Ok(v) = hyper::header::HeaderValue::from_str(&value) {
            res.headers_mut().insert(name, v);
        }
    }
    res
}

/// A streamed body: its first bytes, if any, then each frame its channel
/// gives until the channel ends. One type for both channels that feed one:
/// a streamed answer's (unbounded, its chunks as they come) and a `GET /mcp`
/// stream's (bounded by [`crate::limits::GET_STREAM_QUEUED`]).
struct Frames<R> {
    first: Option<Bytes>,
    rx: R,
}

/// What a [`Frames`] reads from.
trait FrameSource: Unpin {
    fn poll_frame(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Bytes>>;
}

impl FrameSource for tokio::sync::mpsc::UnboundedReceiver<Vec<u8>> {
    fn poll_frame(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Bytes>> {
        self.poll_recv(cx).map(|c| c.map(Bytes::from))
    }
}

impl FrameSource for tokio::sync::mpsc::Receiver<Bytes> {
    fn poll_frame(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Bytes>> {
        self.poll_recv(cx)
    }
}

impl<R: FrameSource> futures_core::Stream for Frames<R> {
    type Item = std::result::Result<hyper::body::Frame<Bytes>, Infallible>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let next = match self.first.take() {
            Some(first) => std::task::Poll::Ready(Some(first)),
            None => self.rx.poll_frame(cx),
        };
        next.map(|b| b.map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

/// How long a connection may take to send a request's head (its request
/// line and headers), counted from when the server starts waiting for it:
/// a client that sends nothing, or dribbles its headers, is closed after
/// this. It also bounds how long a kept-alive connection may sit idle
/// between requests (the wait for the next head).
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The most connections served at once. One past it is accepted and closed
/// at once (so it does not wait in the listen queue holding nothing), and
/// a client that retries gets in as soon as one ends; with
/// [`HEADER_TIMEOUT`] a flood of slow connections holds the server for at
/// most that long. Well under the usual 1,024 descriptors per process.
pub const MAX_CONNECTIONS: usize = 512;

async fn accept_loop(
    listener: tokio::net::TcpListener,
    routes: Arc<Routes>,
    stop: CancellationToken,
) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            a = listener.accept() => a,
            // Reap finished connections so the set stays small.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let Ok((stream, _peer)) = accepted else {
            // Out of descriptors and the like: wait a moment, go on.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        // Reap what ended meanwhile before counting.
        while connections.try_join_next().is_some() {}
        if connections.len() >= MAX_CONNECTIONS {
            drop(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        let routes = Arc::clone(&routes);
        connections.spawn(async move {
            let route = hyper::service::service_fn(move |req| {
                let routes = Arc::clone(&routes);
                async move { Ok::<_, Infallible>(route(&routes, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), route)
                .await;
        });
    }
    // Dropping the set aborts every connection; rmcp's token (a child of
    // `stop`) has cancelled the calls in flight.
    connections.shutdown().await;
}

type Answer = hyper::Response<BoxBody<Bytes, Infallible>>;

async fn route(routes: &Routes, req: hyper::Request<Incoming>) -> Answer {
    if req.uri().path() != PATH {
        if let Some(beside) = &routes.beside {
            return answer_beside(beside, &routes.base, routes.beside_body, req).await;
        }
        let mut res = hyper::Response::new(Full::new(Bytes::from_static(b"not found\n")).boxed());
        *res.status_mut() = hyper::StatusCode::NOT_FOUND;
        return res;
    }
    if req.method() != hyper::Method::POST {
        if req.method() == hyper::Method::GET {
            if let Some(stream) = change_stream(routes, req.headers()) {
                return stream;
            }
        }
        return routes.service.handle(req).await;
    }
    if announced_length(req.headers()).is_some_and(|l| l > routes.max_body) {
        return too_large(routes.max_body);
    }
    let plain_headers = plain_post(req.headers(), &routes.hosts);
    let (parts, body) = req.into_parts();
    // Never more than the cap, announced or not (a chunked body too).
    let body = match http_body_util::Limited::new(body, routes.max_body)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return too_large(routes.max_body),
        // What rmcp answers a body that breaks off.
        Err(e) => {
            return text_answer(
                hyper::StatusCode::INTERNAL_SERVER_ERROR,
                format!("Failed to read request body: {e}"),
            )
        }
    };
    if routes.gateway.waits_for_answers() {
        // A client's answer to a request the gateway relayed to it.
        if let Ok(message) = serde_json::from_slice::<Value>(&body) {
            let is_answer = message.get("method").is_none()
                && (message.get("result").is_some() || message.get("error").is_some());
            if is_answer && routes.gateway.answered(message) {
                let mut res = hyper::Response::new(Full::new(Bytes::new()).boxed());
                *res.status_mut() = hyper::StatusCode::ACCEPTED;
                return res;
            }
        }
    }
    if plain_headers && plain::is_batch(&body) {
        // What rmcp's refusal of a batch becomes (see not_a_message), without
        // rmcp's parse, which holds a tree of the whole body to refuse it.
        return refused_answer(plain::reject_batch(&body));
    }
    if plain_headers {
        if let Some(plain) = plain::read_request(&body) {
            if crate::jsonrpc::plain_path_takes(&plain, routes.gateway.streams()) {
                return answer_plain(routes, plain).await;
            }
        }
    }
    let req = hyper::Request::from_parts(parts, Full::new(body.clone()));
    let answer = routes.service.handle(req).await;
    if answer.status() == hyper::StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return not_a_message(answer, &body).await;
    }
    answer
}

/// rmcp answers a body that is no JSON-RPC message (bad JSON, invalid
/// UTF-8, nesting past the parser's depth, an empty body, a batch) with 415
/// and a line of text; a JSON-RPC client wants a JSON-RPC error. Such an
/// answer becomes 400 with the error rmcp's parse implies (see
/// [`plain::reject`]: parse error, or invalid request with the id);
/// any other 415 (a wrong Content-Type) stays rmcp's.
async fn not_a_message(answer: Answer, body: &[u8]) -> Answer {
    let (parts, text) = answer.into_parts();
    let text = text
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let refused = text.starts_with(b"fail to deserialize request body");
    let err = serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(body).err();
    match (refused, err) {
        (true, Some(err)) => refused_answer(plain::reject(body, &err)),
        _ => hyper::Response::from_parts(parts, Full::new(text).boxed()),
    }
}

/// 400 with the JSON-RPC answer to a body that is no message (or none, for
/// a notification or a batch of them: nothing to say).
fn refused_answer(answer: Option<Vec<u8>>) -> Answer {
    let mut res = match answer {
        Some(json) => json_answer(json),
        None => hyper::Response::new(Full::new(Bytes::new()).boxed()),
    };
    *res.status_mut() = hyper::StatusCode::BAD_REQUEST;
    res
}

/// The Content-Length of a request, when it gives exactly one.
fn announced_length(headers: &hyper::HeaderMap) -> Option<usize> {
    let mut lengths = headers.get_all(hyper::header::CONTENT_LENGTH).iter();
    match (lengths.next(), lengths.next()) {
        (Some(v), None) => v.to_str().ok().and_then(|l| l.parse::<usize>().ok()),
        _ => None,
    }
}

/// 413 with the JSON-RPC error of a request past `maxRequestBytes`
/// (invalid request, id null: nothing of it was read).
fn too_large(max: usize) -> Answer {
    let body = plain::error_line(
        serde_json::Value::Null,
        plain::INVALID_REQUEST,
        &format!(
            "request too large: the body is over {max} bytes, the most this server takes \
             (maxRequestBytes)"
        ),
    );
    let mut res = json_answer(body);
    *res.status_mut() = hyper::StatusCode::PAYLOAD_TOO_LARGE;
    res
}

/// Whether a POST's headers are ones rmcp's service takes with nothing
/// more to say: a Host it allows, an Accept naming JSON and SSE plainly (no
/// parameters, no quoting), a JSON Content-Type, a Content-Length within
/// rmcp's limit (no chunked body), and no `MCP-Protocol-Version` or one of
/// the known versions before the 2026-07-28 standard headers (whose
/// `Mcp-Method`/`Mcp-Param-*` checks and request `_meta` rules stay
/// rmcp's). Anything else is rmcp's to answer, its way.
fn plain_post(headers: &hyper::HeaderMap, hosts: &[String]) -> bool {
    use hyper::header::{
        HeaderName, ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST, TRANSFER_ENCODING,
    };
    // Looked up by these names, not by &str: a &str is parsed into a
    // header name at each lookup (a fifth of the gateway's instructions for
    // a builtin call over HTTP went there, callgrind).
    const VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
    // The one value of a header given once (rmcp reads the first).
    let one = |name: &HeaderName| {
        let mut all = headers.get_all(name).iter();
        match (all.next(), all.next()) {
            (Some(v), None) => v.to_str().ok(),
            _ => None,
        }
    };
    let host_ok = host_allowed(one(&HOST), hosts);
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        if value.contains([';', '"']) {
            return false;
        }
        for essence in value.split(',').map(str::trim) {
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    let type_ok = one(&CONTENT_TYPE).is_some_and(|t| {
        t.split_once(';')
            .map_or(t, |(essence, _)| essence)
            .trim()
            .eq_ignore_ascii_case("application/json")
    });
    let length_ok = !headers.contains_key(TRANSFER_ENCODING)
        && one(&CONTENT_LENGTH)
            .and_then(|l| l.parse::<usize>().ok())
            .is_some_and(|l| l <= crate::limits::HTTP_REQUEST_BYTES);
    let version_ok = match headers.get_all(&VERSION).iter().count() {
        0 => true,
        1 => one(&VERSION).is_some_and(crate::jsonrpc::plain_path_named),
        _ => false,
    };
    host_ok && json && sse && type_ok && length_ok && version_ok
}

/// Whether the one `Host` given names an allowed host (any, when `hosts`
/// is empty): rmcp's DNS-rebinding check, made here for the requests
/// answered without its service.
fn host_allowed(host: Option<&str>, hosts: &[String]) -> bool {
    host.and_then(|h| h.parse::<hyper::http::uri::Authority>().ok())
        .is_some_and(|a| {
            let host = a.host().trim_matches('[').trim_matches(']');
            hosts.is_empty() || hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
        })
}

/// `GET /mcp` from a client of a revision before 2026-07-28
/// (`Accept: text/event-stream`, an allowed `Host`, no later
/// `MCP-Protocol-Version`): the stream a server sends unasked messages on.
/// The gateway is stateless, so all it sends there is what no request
/// asked for: `notifications/tools/list_changed` after every change of
/// the toolkit's MCP tools, and the `prompts/` and `resources/` ones when
/// a proxied server announced those, as the stdio gateway tells its
/// client. `None` (rmcp answers, 405) for a toolkit without MCP servers
/// and for any other GET.
fn change_stream(routes: &Routes, headers: &hyper::HeaderMap) -> Option<Answer> {
    use hyper::header::{HeaderName, HeaderValue, ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HOST};
    const VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
    let mut hosts = headers.get_all(HOST).iter();
    let host = match (hosts.next(), hosts.next()) {
        (Some(h), None) => h.to_str().ok(),
        _ => None,
    };
    let streams = headers.get_all(ACCEPT).iter().any(|v| {
        v.to_str().is_ok_and(|v| {
            v.split(',').any(|t| {
                let essence = t.split_once(';').map_or(t, |(e, _)| e);
                essence.trim().eq_ignore_ascii_case("text/event-stream")
            })
        })
    });
    let version_ok = headers
        .get_all(&VERSION)
        .iter()
        .all(|v| v.to_str().is_ok_and(crate::jsonrpc::plain_path_named));
    if !(streams && version_ok && host_allowed(host, &routes.hosts)) {
        return None;
    }
    let changes = routes.gateway.toolkit.mcp_changes()?;
    let (tx, rx) = tokio::sync::mpsc::channel(crate::limits::GET_STREAM_QUEUED);
    tokio::spawn(forward_changes(changes, tx, routes.stop.clone()));
    let mut res = hyper::Response::new(BodyExt::boxed(http_body_util::StreamBody::new(Frames {
        first: None,
        rx,
    })));
    let h = res.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Some(res)
}

/// Sends one `GET /mcp` stream the list changes after it opened, one SSE
/// `message` event each, until the client goes or the server stops.
async fn forward_changes(
    mut changes: tokio::sync::watch::Receiver<crate::mcp::Generations>,
    tx: tokio::sync::mpsc::Sender<Bytes>,
    stop: CancellationToken,
) {
    let mut told = *changes.borrow_and_update();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tx.closed() => return,
            changed = changes.changed() => if changed.is_err() { return },
        }
        let now = *changes.borrow_and_update();
        for (was, is, kind) in [
            (told.tools, now.tools, "tools"),
            (told.prompts, now.prompts, "prompts"),
            (told.resources, now.resources, "resources"),
        ] {
            if was == is {
                continue;
            }
            let event = format!(
                "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/{kind}/list_changed\"}}\n\n"
            );
            tokio::select! {
                () = stop.cancelled() => return,
                sent = tx.send(Bytes::from(event)) => if sent.is_err() { return },
            }
        }
        told = now;
    }
}

/// Runs a plain request as rmcp's handler would and answers it as rmcp's
/// stateless service does with JSON responses on.
async fn answer_plain(routes: &Routes, plain: Plain) -> Answer {
    // Every request taken here speaks a version before 2026-07-28 (the
    // header's, or 2025-03-26 without one): rmcp's handler gives such a
    // peer the legacy shape of a result.
    let body = match plain {
        Plain::List { id } => serde_json::to_vec(&plain::list_answer(routes.gateway.list(), id)),
        Plain::NotAnObject { id, .. } => serde_json::to_vec(&plain::unknown_call_answer(id)),
        Plain::Call {
            id,
            name,
            arguments,
        } => {
            let args = Value::Object(arguments.unwrap_or_default());
            // On a task of its own, as rmcp's handler: a client that hangs
            // up drops this future, the guard cancels the call, and the
            // call goes on to its end (telling its MCP server) there.
            let cancel = CancellationToken::new();
            let gateway = Arc::clone(&routes.gateway);
            let token = cancel.clone();
            let relay = Relay::default().keeping();
            let kept = relay.clone();
            let mut call =
                tokio::spawn(async move { gateway.run(name, args, token, Some(kept)).await });
            let hang_up = cancel.drop_guard();
            let outcome = tokio::select! {
                r = &mut call => r.ok(),
                // Stopping: rmcp's answer to a call cut short (the guard
                // cancels the call).
                _ = routes.stop.cancelled() => None,
            };
            if outcome.is_some() {
                hang_up.disarm();
            } else {
                drop(hang_up);
            }
            match outcome {
                Some(outcome) => plain::call_answer_kept(id, outcome, relay.raw_result()),
                None => {
                    return text_answer(
                        hyper::StatusCode::INTERNAL_SERVER_ERROR,
                        "Encounter an error when empty response: no response message received from handler".into(),
                    )
                }
            }
        }
    };
    match body {
        Ok(body) => json_answer(body),
        Err(e) => text_answer(
            hyper::StatusCode::INTERNAL_SERVER_ERROR,
            format!("Encounter an error when serialize json response: {e}"),
        ),
    }
}

/// 200 with a JSON-RPC message as its `application/json` body.
fn json_answer(body: Vec<u8>) -> Answer {
    let mut res = hyper::Response::new(Full::new(Bytes::from(body)).boxed());
    res.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    res
}

fn text_answer(status: hyper::StatusCode, text: String) -> Answer {
    let mut res = hyper::Response::new(Full::new(Bytes::from(text)).boxed());
    *res.status_mut() = status;
    res
}
