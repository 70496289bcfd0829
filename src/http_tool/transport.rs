//! The network half of HTTP tools: one shared keep-alive client, redirects,
//! the timeout, and the classification of transport failures.
//!
//! hyper's pooled client is driven directly rather than through reqwest
//! because reqwest adds `accept: */*` to every request and offers no way to
//! leave it out, while the recorded requests (http.json) carry no Accept.

use crate::runtime;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE, LOCATION};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::error::Error as StdError;
use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;
use url::Url;

/// Redirects followed before the last response is taken as the answer.
const MAX_REDIRECTS: usize = 10;

/// How long an idle pooled connection is kept for the next call.
const POOL_IDLE: Duration = Duration::from_secs(90);

type HttpsClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A request ready to send. `headers` hold the expanded (sensitive) values.
pub(super) struct Prepared {
    pub method: Method,
    pub url: String,
    pub headers: HeaderMap,
    pub body: Option<String>,
}

/// What came back: a response, or the reason there was none.
pub(super) enum Outcome {
    Response { status: u16, body: String },
    Failed(Failure),
}

/// Why no response arrived. Only the kind is ever reported; the underlying
/// error text is dropped so nothing of the request can leak through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    Timeout,
    Dns,
    ConnectFailed,
    Transport,
}

/// Sends `prepared` (following redirects) and reads the body, all within
/// `timeout`, on the shared runtime. Safe to call from any thread.
pub(super) fn run(prepared: Prepared, timeout: Duration) -> Outcome {
    block_on(async move {
        match tokio::time::timeout(timeout, send(prepared)).await {
            Ok(outcome) => outcome,
            Err(_) => Outcome::Failed(Failure::Timeout),
        }
    })
}

/// `runtime::block_on` from a host thread. A caller that is itself running
/// inside a tokio runtime cannot block on another one in place, so the wait
/// moves to a short-lived thread of its own.
fn block_on<F>(fut: F) -> Outcome
where
    F: Future<Output = Outcome> + Send,
{
    if tokio::runtime::Handle::try_current().is_err() {
        return runtime::block_on(fut);
    }
    std::thread::scope(|scope| {
        match std::thread::Builder::new()
            .name("toolnexus-http-wait".into())
            .spawn_scoped(scope, || runtime::block_on(fut))
        {
            Ok(handle) => handle.join().unwrap_or(Outcome::Failed(Failure::Transport)),
            Err(_) => Outcome::Failed(Failure::Transport),
        }
    })
}

/// The one client every HTTP tool shares, so connections are kept alive and
/// reused across calls and threads. `None` when TLS could not be set up.
fn shared_client() -> Option<&'static HttpsClient> {
    static CLIENT: OnceLock<Option<HttpsClient>> = OnceLock::new();
    CLIENT
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
            Some(
                Client::builder(TokioExecutor::new())
                    .pool_timer(TokioTimer::new())
                    .pool_idle_timeout(POOL_IDLE)
                    .build(https),
            )
        })
        .as_ref()
}

async fn send(prepared: Prepared) -> Outcome {
    let Some(client) = shared_client() else {
        return Outcome::Failed(Failure::Transport);
    };
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
        let Ok(uri) = url.as_str().parse::<Uri>() else {
            return Outcome::Failed(Failure::Transport);
        };
        let mut request = Request::new(Full::new(body.clone().unwrap_or_default()));
        *request.method_mut() = method.clone();
        *request.uri_mut() = uri;
        *request.headers_mut() = headers.clone();

        let response = match client.request(request).await {
            Ok(r) => r,
            Err(e) => return Outcome::Failed(classify(&e)),
        };
        let status = response.status();
        let next = if status.is_redirection() && redirects < MAX_REDIRECTS {
            redirect_target(&url, response.headers().get(LOCATION))
        } else {
            None
        };
        let collected = response.into_body().collect().await;
        let Some(next) = next else {
            return match collected {
                Ok(c) => Outcome::Response {
                    status: status.as_u16(),
                    body: String::from_utf8_lossy(&c.to_bytes()).into_owned(),
                },
                Err(_) => Outcome::Failed(Failure::Transport),
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

/// The absolute http(s) URL a redirect points to, if it points anywhere.
fn redirect_target(current: &Url, location: Option<&HeaderValue>) -> Option<Url> {
    let location = location?.to_str().ok()?;
    let next = current.join(location).ok()?;
    matches!(next.scheme(), "http" | "https").then_some(next)
}

fn classify(err: &hyper_util::client::legacy::Error) -> Failure {
    if !err.is_connect() {
        return Failure::Transport;
    }
    // hyper-util's connector reports a failed name lookup as "dns error".
    let mut source: Option<&(dyn StdError + 'static)> = err.source();
    while let Some(e) = source {
        if e.to_string().starts_with("dns error") {
            return Failure::Dns;
        }
        source = e.source();
    }
    Failure::ConnectFailed
}
