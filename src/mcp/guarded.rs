//! rmcp's streamable HTTP client, with every request it makes ended when
//! the connect (or session) that owns it goes away.
//!
//! rmcp runs the transport in a worker task of its own and awaits the
//! initialize POST there without watching anything else: a server that
//! never answers would keep that task and its connection alive after we
//! gave up on it (a connect timed out, a build cancelled). Each request
//! here races a token that the owner's [`DropGuard`] cancels when dropped.

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use tokio_util::sync::{CancellationToken, DropGuard};

type Failure = StreamableHttpError<reqwest::Error>;
type SseStream = futures_core::stream::BoxStream<'static, Result<sse_stream::Sse, SseError>>;

/// A reqwest client whose requests end once its guard is dropped.
#[derive(Clone)]
pub struct GuardedClient {
    inner: reqwest::Client,
    gone: CancellationToken,
}

impl GuardedClient {
    /// The client, and the guard that ends its requests when dropped.
    pub fn new(inner: reqwest::Client) -> (GuardedClient, DropGuard) {
        let gone = CancellationToken::new();
        let guard = gone.clone().drop_guard();
        (GuardedClient { inner, gone }, guard)
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
        self.guarded(self.inner.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        ))
        .await
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
        self.guarded(self.inner.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        ))
        .await
    }
}
