//! The one provider round trip of a turn, behind [`Provider`], so that
//! something other than an HTTP endpoint can answer: a host `generate`
//! callback (an in-process model) or a streaming call assembling the same
//! answer from SSE deltas.

use super::callbacks::{HostFn, RunData};
use super::shape::Body;
use super::{inprocess, stream};
use crate::cancel::CancelToken;
use crate::error::{Error, ErrorCode, Result};
use crate::provider::http::{self, FailedAttempt, Verdict};
use crate::provider::{self, ClientConfig};
use serde_json::Value;
use std::time::Instant;

/// What a provider needs for one round trip.
pub struct Exchange<'a> {
    /// The request body, in the client style's own shape.
    pub body: &'a Body<'a>,
    /// The zero-based turn of the run.
    pub turn: u32,
    /// The whole run's deadline, if it has one.
    pub deadline: Option<Instant>,
    pub cancel: &'a CancelToken,
    /// Consulted after each failed attempt (SPEC §8 `onError`).
    pub classify: &'a mut dyn FnMut(&FailedAttempt) -> Result<Verdict>,
    /// For a streamed turn (SPEC §8 Streaming): gets each text delta as it
    /// arrives. The body then asks for a stream (`body.stream`).
    pub on_text: Option<&'a mut dyn FnMut(&str)>,
    /// The run's host data, for a provider that calls the host.
    pub data: RunData,
    /// The body as the client's `bodyTransform` left it (SPEC §8 Gap 1),
    /// sent in `body`'s stead; `None` without one.
    pub transformed: Option<Value>,
    /// The client's `httpClient` (SPEC §8 Gap 2), in the socket pool's
    /// stead.
    pub transport: Option<http::Transport>,
}

/// Answers one turn with the provider's decoded response, in the style's
/// shape (OpenAI `choices[0].message`, Anthropic `content` blocks). Failures
/// after the retries are `provider_error` / `timeout` / `cancelled` errors.
pub trait Provider: Send + Sync {
    fn complete(&self, exchange: Exchange<'_>) -> Result<Value>;

    /// Whether a turn can be streamed (an in-process model cannot).
    fn streams(&self) -> bool {
        true
    }

    /// Whether the client's `upstreams` are called in its stead (ordered
    /// failover): only an HTTP provider's are.
    fn fails_over(&self) -> bool {
        false
    }
}

/// The provider at the client's `baseUrl`, through translate's exchange
/// (pooled blocking sockets, retries with backoff, `Retry-After`).
pub struct HttpProvider {
    pub config: ClientConfig,
}

impl Provider for HttpProvider {
    fn complete(&self, exchange: Exchange<'_>) -> Result<Value> {
        complete_at(&self.config, exchange, &|| {})
    }

    fn fails_over(&self) -> bool {
        true
    }
}

/// One round trip to the provider `config` names (a client of one
/// upstream: the client itself, or one of its `upstreams`); `answered` is
/// called once a 2xx answer is in (from then on it is this upstream's).
pub(crate) fn complete_at(
    config: &ClientConfig,
    exchange: Exchange<'_>,
    answered: &dyn Fn(),
) -> Result<Value> {
    let encoded = match &exchange.transformed {
        Some(body) => serde_json::to_vec(body).unwrap_or_default(),
        None => exchange.body.encode(),
    };
    let mut call = provider::prepare_for(config, encoded, exchange.on_text.is_some())?;
    call.transport = exchange.transport;
    let reply = match exchange.on_text {
        None => http::send_until(
            &call,
            exchange.deadline,
            Some(exchange.cancel),
            exchange.classify,
        )?,
        Some(on_text) => stream::send_streamed_until(
            &call,
            config.style,
            exchange.deadline,
            Some(exchange.cancel),
            exchange.classify,
            on_text,
        )?,
    };
    answered();
    serde_json::from_slice(&reply.body)
        .map_err(|e| http::malformed(&call, reply.status, &e, &reply.body))
}

/// SPEC §8 in-process models: the host's `generate` answers each turn (see
/// [`inprocess`]). A failure is final unless `onError` says to retry
/// (bounded by `retries`): no wire means no transient failure.
pub struct GenerateProvider {
    pub generate: HostFn,
    pub retries: u32,
}

fn generate_failed(message: &str) -> Error {
    Error::new(
        ErrorCode::CallbackError,
        format!("the generate callback failed: {message}"),
    )
}

impl Provider for GenerateProvider {
    fn complete(&self, exchange: Exchange<'_>) -> Result<Value> {
        if exchange.on_text.is_some() {
            return Err(Error::invalid_argument(
                "an in-process client cannot stream: its generate function returns whole answers (use tn_run or tn_ask without stream)",
            ));
        }
        let body = match exchange.transformed {
            Some(body) => body,
            None => exchange.body.to_value(),
        };
        let request = inprocess::request_of(&body, exchange.turn);
        let mut attempt = 0;
        loop {
            if exchange.cancel.is_cancelled() {
                return Err(Error::new(ErrorCode::Cancelled, "the run was cancelled"));
            }
            let outcome = match (self.generate)(&request, exchange.data) {
                Ok(Some(answer)) => inprocess::response_of(&answer)
                    .map_err(|why| format!("its answer is unusable: {why}")),
                Ok(None) => Err("it set no answer".to_string()),
                Err(message) => Err(message),
            };
            let message = match outcome {
                Ok(response) => return Ok(response),
                Err(m) => m,
            };
            let info = FailedAttempt {
                status: None,
                error: message.clone(),
                attempt,
                retryable: false,
                retry_after_ms: None,
            };
            let verdict = (exchange.classify)(&info)?;
            if verdict == Verdict::Fail || attempt >= self.retries {
                return Err(generate_failed(&message));
            }
            attempt += 1;
        }
    }

    fn streams(&self) -> bool {
        false
    }
}
