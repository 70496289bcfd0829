//! The HTTP connection layer under HTTP tools and the provider wire: opening
//! a connection (DNS, TCP, TLS) and keeping idle ones per origin
//! ([`open`], [`IdlePool`], [`origin_key`]), the classification of transport
//! failures ([`Failure`]), and the HTTP tools' call itself: one shared
//! keep-alive connection pool, redirects, the timeout ([`run`]).
//!
//! hyper is driven directly rather than through reqwest because reqwest adds
//! `accept: */*` to every request and offers no way to leave it out, while the
//! recorded requests (http.json) carry no Accept.
//!
//! A call runs on the calling thread inside `runtime::block_on` of the shared
//! runtime, and it drives its own connection there: the connection is taken
//! out of the pool, polled together with the request until the response body
//! is read, and put back. No connection task is spawned, which saves two
//! thread hand-offs per call; no lock is held while a request is in flight.

use crate::cancel::CancelToken;
use crate::limits::RESPONSE_BODY_BYTES;
use crate::runtime;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE, HOST, LOCATION};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::client::conn::http1::{self, Connection, SendRequest};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder, MaybeHttpsStream};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::error::Error as StdError;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tower_service::Service;
use url::Url;

/// How long an idle pooled connection is kept for the next call.
const POOL_IDLE: Duration = Duration::from_secs(90);

/// Idle connections kept per origin.
const POOL_MAX_IDLE_PER_ORIGIN: usize = 64;

/// A connected stream, TLS or not.
pub(crate) type Io = MaybeHttpsStream<TokioIo<tokio::net::TcpStream>>;

/// A request ready to send. `headers` hold the expanded (sensitive) values.
pub(crate) struct Prepared {
    pub method: Method,
    pub url: String,
    pub headers: HeaderMap,
    pub body: Option<String>,
}

/// What came back: a response, or the reason there was none.
pub(crate) enum Outcome {
    Response {
        status: u16,
        body: String,
    },
    Failed(Failure),
    /// The caller's cancel token fired first; the request was dropped
    /// (its connection closed) mid-flight.
    Cancelled,
}

/// Why no response arrived. Only the kind is ever reported; the underlying
/// error text is dropped so nothing of the request can leak through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    Timeout,
    Dns,
    ConnectFailed,
    Transport,
    /// The response body passed [`RESPONSE_BODY_BYTES`].
    TooLarge,
}

/// Sends `prepared` (following redirects) and reads the body, all within
/// `timeout`, on the shared runtime; a triggered `cancel` drops the request
/// at once. Safe to call from any thread.
///
/// The request's future and the connection's are boxed: they run on the
/// caller's thread, and left inline their state (tens of KB, TLS included)
/// was laid out again in each poll frame that built or moved it. A call
/// needed more than 96 KiB of a host thread's stack that way, and now works
/// on 48 KiB (`bindings/c/tests/hostile.c`, `small_stack`).
pub(crate) fn run(prepared: Prepared, timeout: Duration, cancel: Option<&CancelToken>) -> Outcome {
    block_on(Box::pin(async move {
        let sent = tokio::time::timeout(timeout, Box::pin(send(prepared)));
        let outcome = match cancel {
            None => sent.await,
            Some(cancel) => tokio::select! {
                r = sent => r,
                _ = cancel.cancelled() => return Outcome::Cancelled,
            },
        };
        outcome.unwrap_or(Outcome::Failed(Failure::Timeout))
    }))
}

/// `runtime::wait_anywhere` (from a host thread, a task on the shared
/// runtime or another runtime alike); a wait that could not run, or whose
/// future panicked, is a transport failure.
fn block_on<F>(fut: F) -> Outcome
where
    F: Future<Output = Outcome> + Send,
{
    runtime::wait_anywhere("toolnexus-http-wait", fut)
        .unwrap_or(Outcome::Failed(Failure::Transport))
}

/// The TLS-capable connector every HTTP tool shares. `None` when TLS could
/// not be set up (then every call is a transport failure).
fn connector() -> Option<&'static HttpsConnector<HttpConnector>> {
    static CONNECTOR: OnceLock<Option<HttpsConnector<HttpConnector>>> = OnceLock::new();
    CONNECTOR
        .get_or_init(|| {
            let mut http = HttpConnector::new();
            http.enforce_http(false);
            http.set_nodelay(true);
            let https = HttpsConnectorBuilder::new()
                .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
                .ok()?
                .https_or_http()
                .enable_http1()
                .wrap_connector(http);
            Some(https)
        })
        .as_ref()
}

/// An open HTTP/1.1 connection. `io` does the reading and writing and is
/// polled only by the call that holds the connection.
struct Conn {
    sender: SendRequest<Full<Bytes>>,
    io: Connection<Io, Full<Bytes>>,
    /// Whether `io` has finished (it must not be polled again).
    closed: bool,
    /// Whether it came out of the pool (then a failure before the request
    /// went out is worth one retry on a fresh connection).
    reused: bool,
}

/// Idle keep-alive connections by origin (`scheme://host:port`), each kept
/// for [`POOL_IDLE`] at most, [`POOL_MAX_IDLE_PER_ORIGIN`] per origin. Shared
/// by HTTP tools (hyper connections) and translate's provider exchange
/// (blocking sockets), each with a pool of its own.
pub(crate) struct IdlePool<C> {
    idle: Mutex<HashMap<String, Vec<(C, Instant)>>>,
}

impl<C> IdlePool<C> {
    pub(crate) fn new() -> Self {
        IdlePool {
            idle: Mutex::new(HashMap::new()),
        }
    }

    /// The most recently idle connection to `origin` that `usable` accepts;
    /// expired or refused ones are dropped on the way.
    pub(crate) fn take(&self, origin: &str, mut usable: impl FnMut(&mut C) -> bool) -> Option<C> {
        loop {
            let (mut conn, since) = {
                let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
                idle.get_mut(origin)?.pop()?
            };
            if since.elapsed() < POOL_IDLE && usable(&mut conn) {
                return Some(conn);
            }
        }
    }

    /// Keeps `conn` for the next call to `origin`, if there is room.
    pub(crate) fn put(&self, origin: &str, conn: C) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let list = match idle.get_mut(origin) {
            Some(list) => list,
            None => idle.entry(origin.to_string()).or_default(),
        };
        list.retain(|(_, since)| since.elapsed() < POOL_IDLE);
        if list.len() < POOL_MAX_IDLE_PER_ORIGIN {
            list.push((conn, Instant::now()));
        }
    }
}

/// The pool of HTTP tools' connections.
fn pool() -> &'static IdlePool<Conn> {
    static POOL: OnceLock<IdlePool<Conn>> = OnceLock::new();
    POOL.get_or_init(IdlePool::new)
}

/// The key of `url`'s origin in an [`IdlePool`].
pub(crate) fn origin_key(url: &Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or(0)
    )
}

impl Conn {
    /// Polls the connection once without waiting: `true` if it has closed
    /// (the server hung up, or the last response asked to close).
    fn has_closed(&mut self) -> bool {
        if !self.closed {
            let mut cx = Context::from_waker(Waker::noop());
            self.closed = Pin::new(&mut self.io).poll(&mut cx).is_ready();
        }
        self.closed
    }
}

/// A live idle connection to `key`, if the pool has one.
fn checkout(key: &str) -> Option<Conn> {
    let mut conn = pool().take(key, |c| !c.has_closed() && c.sender.is_ready())?;
    conn.reused = true;
    Some(conn)
}

fn checkin(key: String, mut conn: Conn) {
    if conn.has_closed() || !conn.sender.is_ready() {
        return;
    }
    pool().put(&key, conn);
}

/// A new connection to `url`'s origin (name lookup, TCP, TLS when https),
/// through the connector every HTTP tool shares. Must run inside the shared
/// runtime.
pub(crate) async fn open(url: &Url) -> Result<Io, Failure> {
    let Some(connector) = connector() else {
        return Err(Failure::Transport);
    };
    let uri: Uri = url.as_str().parse().map_err(|_| Failure::Transport)?;
    let mut connector = connector.clone();
    poll_fn(|cx| connector.poll_ready(cx))
        .await
        .map_err(|e| classify_connect(e.as_ref()))?;
    connector
        .call(uri)
        .await
        .map_err(|e| classify_connect(e.as_ref()))
}

async fn connect(url: &Url) -> Result<Conn, Failure> {
    let stream = open(url).await?;
    let (sender, io) = http1::handshake(stream)
        .await
        .map_err(|_| Failure::ConnectFailed)?;
    Ok(Conn {
        sender,
        io,
        closed: false,
        reused: false,
    })
}

type Exchanged = (StatusCode, HeaderMap, Bytes);

/// Why an exchange on a connection failed.
enum ExchangeError {
    /// Not one byte of a response head came back.
    NoResponse(hyper::Error),
    Hyper(hyper::Error),
    TooLarge,
    /// Any other failure of the body.
    Other,
}

/// One request on `conn`, driving the connection until the whole response
/// body has arrived (at most [`RESPONSE_BODY_BYTES`] of it).
async fn exchange(
    conn: &mut Conn,
    request: Request<Full<Bytes>>,
) -> Result<Exchanged, ExchangeError> {
    let Conn {
        sender, io, closed, ..
    } = conn;
    let mut work = pin!(async move {
        let response = sender
            .send_request(request)
            .await
            .map_err(ExchangeError::NoResponse)?;
        let (parts, body) = response.into_parts();
        // An announced size past the cap fails before the body is read.
        let announced = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if announced.is_some_and(|n| n > RESPONSE_BODY_BYTES as u64) {
            return Err(ExchangeError::TooLarge);
        }
        let body = match Limited::new(body, RESPONSE_BODY_BYTES).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<LengthLimitError>() => return Err(ExchangeError::TooLarge),
            Err(e) => {
                // Limited raises only its own error and the body's (hyper's).
                return Err(match e.downcast::<hyper::Error>() {
                    Ok(h) => ExchangeError::Hyper(*h),
                    Err(_) => ExchangeError::Other,
                });
            }
        };
        Ok((parts.status, parts.headers, body))
    });
    poll_fn(|cx| {
        if let Poll::Ready(r) = work.as_mut().poll(cx) {
            return Poll::Ready(r);
        }
        if !*closed && Pin::new(&mut *io).poll(cx).is_ready() {
            *closed = true;
        }
        // The connection may just have handed the request its response.
        work.as_mut().poll(cx)
    })
    .await
}

async fn send(prepared: Prepared) -> Outcome {
    let Prepared {
        mut method,
        url,
        mut headers,
        body,
    } = prepared;
    let Ok(mut url) = Url::parse(&url) else {
        return Outcome::Failed(Failure::Transport);
    };
    let mut body = body.map(Bytes::from);
    let mut redirects = 0;
    loop {
        let (status, response_headers, response_body) =
            match round_trip(&method, &url, &headers, body.clone()).await {
                Ok(r) => r,
                Err(failure) => return Outcome::Failed(failure),
            };
        let next = if status.is_redirection() && redirects < crate::limits::REDIRECTS {
            redirect_target(&url, response_headers.get(LOCATION))
        } else {
            None
        };
        let Some(next) = next else {
            return Outcome::Response {
                status: status.as_u16(),
                body: String::from_utf8_lossy(&response_body).into_owned(),
            };
        };

        redirects += 1;
        // 301/302/303 turn into a bodiless GET (as browsers, curl and reqwest
        // do); 307/308 repeat the request as it was.
        if matches!(
            status,
            StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND | StatusCode::SEE_OTHER
        ) && method != Method::HEAD
        {
            method = Method::GET;
            body = None;
            headers.remove(CONTENT_TYPE);
        }
        // Declared headers may carry credentials meant for the declared
        // origin only: they do not follow a redirect to another origin.
        if next.origin() != url.origin() {
            let content_type = headers.remove(CONTENT_TYPE);
            headers.clear();
            if let Some(ct) = content_type {
                headers.insert(CONTENT_TYPE, ct);
            }
        }
        url = next;
    }
}

/// One request and its response on a pooled (or new) connection to `url`'s
/// origin. A pooled connection that the server closed or reset before any
/// of a response came back (it closed the idle connection as the request
/// went out: the keep-alive race) is replaced once, whatever the method, as
/// the provider calls' transport does; one that failed mid-body is replaced
/// only for an idempotent method.
async fn round_trip(
    method: &Method,
    url: &Url,
    headers: &HeaderMap,
    body: Option<Bytes>,
) -> Result<Exchanged, Failure> {
    let key = origin_key(url);
    let outgoing = Outgoing::new(method, url, headers, body)?;
    let mut conn = match checkout(&key) {
        Some(c) => c,
        None => Box::pin(connect(url)).await?,
    };
    match exchange(&mut conn, outgoing.request()).await {
        Ok(r) => {
            checkin(key, conn);
            Ok(r)
        }
        Err(e) if conn.reused && stale(&e, method) => {
            let mut fresh = Box::pin(connect(url)).await?;
            let r = exchange(&mut fresh, outgoing.request())
                .await
                .map_err(failure_of)?;
            checkin(key, fresh);
            Ok(r)
        }
        Err(e) => Err(failure_of(e)),
    }
}

/// Whether a reused connection's failure is the keep-alive race rather
/// than an answer: closed or reset before a response head (a head that
/// did not parse is an answer), or cut short mid-body for a method that
/// may be sent again.
fn stale(e: &ExchangeError, method: &Method) -> bool {
    match e {
        ExchangeError::NoResponse(e) => !(e.is_parse() || e.is_parse_status() || e.is_user()),
        ExchangeError::Hyper(e) => {
            e.is_canceled() || (e.is_incomplete_message() && is_idempotent(method))
        }
        ExchangeError::TooLarge | ExchangeError::Other => false,
    }
}

fn failure_of(e: ExchangeError) -> Failure {
    match e {
        ExchangeError::NoResponse(_) | ExchangeError::Hyper(_) | ExchangeError::Other => {
            Failure::Transport
        }
        ExchangeError::TooLarge => Failure::TooLarge,
    }
}

fn is_idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::PUT | Method::DELETE | Method::OPTIONS | Method::TRACE
    )
}

/// A request as HTTP/1.1 sends it: origin-form target (`/path?query`) plus
/// the Host header. Kept whole so it can be sent a second time.
struct Outgoing {
    method: Method,
    target: Uri,
    headers: HeaderMap,
    body: Bytes,
}

impl Outgoing {
    fn new(
        method: &Method,
        url: &Url,
        headers: &HeaderMap,
        body: Option<Bytes>,
    ) -> Result<Outgoing, Failure> {
        let target = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        let host = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            (None, _) => return Err(Failure::Transport),
        };
        let mut headers = headers.clone();
        headers.insert(
            HOST,
            HeaderValue::from_str(&host).map_err(|_| Failure::Transport)?,
        );
        Ok(Outgoing {
            method: method.clone(),
            target: target.parse().map_err(|_| Failure::Transport)?,
            headers,
            body: body.unwrap_or_default(),
        })
    }

    fn request(&self) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(self.body.clone()));
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.target.clone();
        *request.headers_mut() = self.headers.clone();
        request
    }
}

/// The absolute http(s) URL a redirect points to, if it points anywhere.
fn redirect_target(current: &Url, location: Option<&HeaderValue>) -> Option<Url> {
    let location = location?.to_str().ok()?;
    let next = current.join(location).ok()?;
    matches!(next.scheme(), "http" | "https").then_some(next)
}

fn classify_connect(err: &(dyn StdError + Send + Sync + 'static)) -> Failure {
    // hyper-util's connector reports a failed name lookup as "dns error".
    let mut source: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = source {
        if e.to_string().starts_with("dns error") {
            return Failure::Dns;
        }
        source = e.source();
    }
    Failure::ConnectFailed
}
