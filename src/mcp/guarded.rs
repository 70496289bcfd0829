//! rmcp's streamable HTTP client, with every request it makes ended when
//! the connect (or session) that owns it goes away.
//!
//! rmcp runs the transport in a worker task of its own and awaits the
//! initialize POST there without watching anything else: a server that
//! never answers would keep that task and its connection alive after we
//! gave up on it (a connect timed out, a build cancelled). Each request
//! here races a token that the owner's [`DropGuard`] cancels when dropped.
//!
//! It also tells the connect when the standalone stream (the GET rmcp opens
//! once a session id is given) is open or refused: a server may send its
//! requests of a call (an elicitation) there, and one sent before the stream
//! is open is lost, so a connect waits for it ([`StreamWatch::settled`]).
//!
//! With OAuth ([`super::auth`]) every request carries the server's bearer
//! token, and a `401` or a `403 insufficient_scope` is answered (a refresh,
//! an authorization) and the request sent again, inside the request, so
//! rmcp's worker sees only the final answer.

use super::auth::{AuthFailure, OAuth, Retry};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::AuthError;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};

/// Whether the server gave a session id, and whether the standalone GET
/// stream that follows has been answered (opened or refused).
#[derive(Default)]
pub struct StreamWatch {
    session: AtomicBool,
    answered: AtomicBool,
    notify: Notify,
}

impl StreamWatch {
    fn saw_session(&self, response: &StreamableHttpPostResponse) {
        if matches!(
            response,
            StreamableHttpPostResponse::Json(_, Some(_))
                | StreamableHttpPostResponse::Sse(_, Some(_))
        ) {
            self.session.store(true, Ordering::SeqCst);
        }
    }

    fn answered(&self) {
        self.answered.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Resolves once the standalone stream was answered, at once when there
    /// is no session (then there is no such stream), or after `limit`.
    pub async fn settled(&self, limit: Duration) {
        let wait = async {
            loop {
                let notified = self.notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if !self.session.load(Ordering::SeqCst) || self.answered.load(Ordering::SeqCst) {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(limit, wait).await;
    }
}

type Failure = StreamableHttpError<reqwest::Error>;
type SseStream = futures_core::stream::BoxStream<'static, Result<sse_stream::Sse, SseError>>;

/// A reqwest client whose requests end once its guard is dropped.
#[derive(Clone)]
pub struct GuardedClient {
    inner: reqwest::Client,
    gone: CancellationToken,
    watch: Arc<StreamWatch>,
    auth: Option<Arc<OAuth>>,
}

/// An OAuth failure as the transport's error (its text is `auth (...)`).
fn auth_failure(f: AuthFailure) -> Failure {
    StreamableHttpError::Auth(AuthError::AuthorizationFailed(f.to_string()))
}

/// Whether a failure is a `401` that came without a challenge.
fn bare_401(e: &Failure) -> bool {
    match e {
        StreamableHttpError::UnexpectedServerResponse(text) => text.starts_with("HTTP 401"),
        StreamableHttpError::Client(re) => re.status().is_some_and(|s| s.as_u16() == 401),
        _ => false,
    }
}

impl GuardedClient {
    /// The client, and the guard that ends its requests when dropped.
    pub fn new(inner: reqwest::Client, auth: Option<Arc<OAuth>>) -> (GuardedClient, DropGuard) {
        let gone = CancellationToken::new();
        let guard = gone.clone().drop_guard();
        let watch = Arc::default();
        (
            GuardedClient {
                inner,
                gone,
                watch,
                auth,
            },
            guard,
        )
    }

    /// Runs `call` with the bearer token (none without OAuth, or when the
    /// config's headers set one), answering what the server refuses: a
    /// `401` by a refresh or an authorization, a `403 insufficient_scope`
    /// by a step-up (`interactive`: POSTs; a GET or DELETE only refreshes).
    async fn authed<T, F, Fut>(
        &self,
        preset: Option<String>,
        interactive: bool,
        call: F,
    ) -> Result<T, Failure>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let Some(auth) = self.auth.as_deref().filter(|_| preset.is_none()) else {
            return call(preset).await;
        };
        let mut token = auth.token().await.map_err(auth_failure)?;
        let (mut flows, mut refreshed) = (0, false);
        loop {
            let out = call(token.clone()).await;
            let retry = match &out {
                Err(StreamableHttpError::AuthRequired(e)) => {
                    let challenge = Some(e.www_authenticate_header.as_str());
                    auth.unauthorized(
                        token.as_deref(),
                        challenge,
                        &mut flows,
                        &mut refreshed,
                        interactive,
                    )
                    .await
                }
                Err(e) if bare_401(e) => {
                    auth.unauthorized(
                        token.as_deref(),
                        None,
                        &mut flows,
                        &mut refreshed,
                        interactive,
                    )
                    .await
                }
                Err(StreamableHttpError::InsufficientScope(e))
                    if interactive && auth.is_insufficient_scope(&e.www_authenticate_header) =>
                {
                    auth.insufficient_scope(&e.www_authenticate_header, &mut flows)
                        .await
                }
                _ => return out,
            };
            match retry {
                Ok(Retry::With(t)) => token = Some(t),
                Ok(Retry::GiveUp) => return out,
                Err(f) => return Err(auth_failure(f)),
            }
        }
    }

    /// The watch on the session's standalone stream.
    pub fn watch(&self) -> Arc<StreamWatch> {
        Arc::clone(&self.watch)
    }

    async fn guarded<T>(
        &self,
        request: impl Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        tokio::select! {
            biased;
            _ = self.gone.cancelled() => Err(StreamableHttpError::TransportChannelClosed),
            out = request => out,
        }
    }
}

impl StreamableHttpClient for GuardedClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.guarded(self.authed(auth_header, true, |token| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        }))
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.guarded(self.authed(auth_header, true, |token| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        }))
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let response = self
            .guarded(self.authed(auth_header, true, |token| {
                self.inner.post_message_with_response_limits(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    token,
                    custom_headers.clone(),
                    limits,
                )
            }))
            .await;
        if let Ok(r) = &response {
            self.watch.saw_session(r);
        }
        response
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        self.guarded(self.authed(auth_header, false, |token| {
            self.inner.delete_session(
                uri.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        }))
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<SseStream, Failure> {
        self.guarded(self.authed(auth_header, false, |token| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        }))
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<SseStream, Failure> {
        let stream = self
            .guarded(self.authed(auth_header, false, |token| {
                self.inner.get_stream_with_max_sse_event_size(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    token,
                    custom_headers.clone(),
                    max_sse_event_size,
                )
            }))
            .await;
        self.watch.answered();
        stream
    }
}
