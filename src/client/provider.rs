//! The one provider round trip of a turn, behind [`Provider`], so that
//! something other than an HTTP endpoint can answer: a host `generate`
//! callback (an in-process model) or a streaming call assembling the same
//! answer from SSE deltas.

use super::shape::Body;
use crate::error::Result;
use crate::translate::client::{self as http, FailedAttempt, Verdict};
use crate::translate::{self, CancelToken, ClientConfig};
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
}

/// Answers one turn with the provider's decoded response, in the style's
/// shape (OpenAI `choices[0].message`, Anthropic `content` blocks). Failures
/// after the retries are `provider_error` / `timeout` / `cancelled` errors.
pub trait Provider: Send + Sync {
    fn complete(&self, exchange: Exchange<'_>) -> Result<Value>;
}

/// The provider at the client's `baseUrl`, through translate's exchange
/// (pooled blocking sockets, retries with backoff, `Retry-After`).
pub struct HttpProvider {
    pub config: ClientConfig,
}

impl Provider for HttpProvider {
    fn complete(&self, exchange: Exchange<'_>) -> Result<Value> {
        let encoded = exchange.body.encode();
        let call = translate::prepare(&self.config, encoded)?;
        let reply = http::send_until(
            &call,
            exchange.deadline,
            Some(exchange.cancel),
            exchange.classify,
        )?;
        serde_json::from_slice(&reply.body)
            .map_err(|e| http::malformed(&call, reply.status, &e, &reply.body))
    }
}
