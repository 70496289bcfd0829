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

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
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
}

impl GuardedClient {
    /// The client, and the guard that ends its requests when dropped.
    pub fn new(inner: reqwest::Client) -> (GuardedClient, DropGuard) {
        let gone = CancellationToken::new();
        let guard = gone.clone().drop_guard();
        let watch = Arc::default();
        (GuardedClient { inner, gone, watch }, guard)
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
        self.guarded(
            self.inner
                .post_message(uri, message, session_id, auth_header, custom_headers),
        )
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
        self.guarded(self.inner.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        ))
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
            .guarded(self.inner.post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            ))
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
        self.guarded(
            self.inner
                .delete_session(uri, session_id, auth_header, custom_headers),
        )
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
        self.guarded(self.inner.get_stream(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
        ))
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
            .guarded(self.inner.get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            ))
            .await;
        self.watch.answered();
        stream
    }
}
