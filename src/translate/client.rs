//! The provider call: one POST through a shared connection pool, retried on
//! 429/500/502/503/504 and network errors with exponential backoff and jitter,
//! bounded by a whole-call timeout, and abortable through a [`CancelToken`].

use super::wire::{self, Stop};
use super::CancelToken;
use crate::error::{Error, ErrorCode};
use crate::http_tool::transport::{self, Failure};
use http::header::{HeaderMap, HeaderName, HeaderValue};
use std::time::{Duration, Instant};

/// The statuses worth another attempt.
const RETRYABLE: [u16; 5] = [429, 500, 502, 503, 504];

/// The widest Retry-After (in seconds) that is honoured; larger values fall
/// back to the backoff.
const RETRY_AFTER_MAX_SECONDS: u64 = 2_147_483_647;

/// How much of a provider's error body an error message quotes.
const BODY_QUOTE_LIMIT: usize = 4096;

/// One prepared provider request.
#[derive(Debug, Clone)]
pub struct Call {
    /// The endpoint as text, for messages.
    pub url: String,
    pub target: url::Url,
    pub headers: HeaderMap,
    pub body: bytes::Bytes,
    /// Extra attempts after the first.
    pub retries: u32,
    pub retry_base_ms: u64,
    pub timeout_ms: Option<u64>,
    /// The API key, only so that it can be kept out of error messages.
    pub secret: Option<String>,
}

/// Builds a header map, the later entries replacing earlier ones of the same
/// (case-insensitive) name. Values are never echoed in errors: they may be
/// credentials.
pub fn header_map(pairs: &[(String, String)]) -> Result<HeaderMap, Error> {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            Error::invalid_config(format!(
                "client.headers: '{name}' is not a valid HTTP header name"
            ))
        })?;
        let v = HeaderValue::from_str(value).map_err(|_| {
            Error::invalid_config(format!(
                "client: the value for header '{name}' is not a valid HTTP header value"
            ))
        })?;
        map.insert(n, v);
    }
    Ok(map)
}

/// A 2xx answer, not yet decoded.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: bytes::Bytes,
}

/// What one attempt came to.
enum Attempt {
    /// A 2xx answer.
    Ok(Reply),
    /// A non-2xx answer.
    Status {
        status: u16,
        body: String,
        retry_after_ms: Option<u64>,
    },
    /// The request never got an answer.
    Transport(Failure),
    /// A 2xx answer that is not JSON.
    Malformed { status: u16, reason: String },
}

/// Sends the call, retrying as configured, and returns the provider's 2xx
/// answer (which the caller decodes, reporting a body that is not JSON with
/// [`malformed`]). Runs on the calling thread; `timeoutMs` bounds the whole
/// of it, backoffs included, and the token can end it at any point.
pub fn send(call: &Call, cancel: Option<&CancelToken>) -> Result<Reply, Error> {
    let deadline = call
        .timeout_ms
        .map(|ms| Instant::now() + Duration::from_millis(ms));
    send_until(call, deadline, cancel, &mut |info| {
        Ok(default_verdict(info))
    })
}

/// What one failed attempt came to, for a retry classifier (SPEC §8
/// `onError`): the HTTP status of a non-2xx answer, or what went wrong on the
/// way; the zero-based attempt; whether the default policy would retry.
#[derive(Debug, Clone)]
pub struct FailedAttempt {
    pub status: Option<u16>,
    /// The provider's body text for a status, the transport failure in words
    /// otherwise.
    pub error: String,
    pub attempt: u32,
    pub retryable: bool,
}

/// Retry, or give up now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Retry,
    Fail,
}

/// The default classifier: retry what is retryable.
pub fn default_verdict(info: &FailedAttempt) -> Verdict {
    if info.retryable {
        Verdict::Retry
    } else {
        Verdict::Fail
    }
}

/// [`send`] with an absolute `deadline` over the whole of it and a
/// classifier consulted after every failed attempt. A `Retry` is still
/// bounded by `call.retries`; aborts (deadline, cancel) never reach the
/// classifier; a classifier error ends the call with that error.
pub fn send_until(
    call: &Call,
    deadline: Option<Instant>,
    cancel: Option<&CancelToken>,
    verdict_of: &mut dyn FnMut(&FailedAttempt) -> Result<Verdict, Error>,
) -> Result<Reply, Error> {
    let outgoing = wire::Outgoing::post(&call.target, &call.headers, &call.body)
        .map_err(|f| failure(call, Attempt::Transport(f), 1))?;
    let mut attempt: u32 = 0;
    loop {
        if cancel.is_some_and(CancelToken::is_cancelled) {
            return Err(cancelled());
        }
        let outcome = match wire::exchange(&call.target, &outgoing, deadline, cancel) {
            Ok(answer) => classify(answer),
            Err(Stop::Cancelled) => return Err(cancelled()),
            Err(Stop::TimedOut) => return Err(timed_out(call)),
            Err(Stop::Failed(f)) => Attempt::Transport(f),
        };
        let (retryable, retry_after_ms) = match &outcome {
            Attempt::Ok(_) => (false, None),
            Attempt::Status {
                status,
                retry_after_ms,
                ..
            } => (RETRYABLE.contains(status), *retry_after_ms),
            // An answer too large to read would be as large again.
            Attempt::Transport(failure) => (*failure != Failure::TooLarge, None),
            Attempt::Malformed { .. } => (false, None),
        };
        if let Attempt::Ok(reply) = outcome {
            return Ok(reply);
        }
        let info = FailedAttempt {
            status: match &outcome {
                Attempt::Status { status, .. } => Some(*status),
                _ => None,
            },
            error: match &outcome {
                Attempt::Status { body, .. } => body.clone(),
                Attempt::Transport(f) => transport_reason(*f).to_string(),
                Attempt::Malformed { reason, .. } => reason.clone(),
                Attempt::Ok(_) => String::new(),
            },
            attempt,
            retryable,
        };
        let verdict = verdict_of(&info)?;
        if verdict == Verdict::Fail || attempt >= call.retries {
            return Err(failure(call, outcome, attempt + 1));
        }
        let wait = Duration::from_millis(
            retry_after_ms.unwrap_or_else(|| backoff_ms(call.retry_base_ms, attempt)),
        );
        // A backoff that would outlast the deadline ends at it.
        let (pause, times_out) = match deadline {
            Some(d) if Instant::now() + wait >= d => {
                (d.saturating_duration_since(Instant::now()), true)
            }
            _ => (wait, false),
        };
        let interrupted = match cancel {
            Some(token) => token.sleep(pause),
            None => {
                std::thread::sleep(pause);
                false
            }
        };
        if interrupted {
            return Err(cancelled());
        }
        if times_out {
            return Err(timed_out(call));
        }
        attempt += 1;
    }
}

fn cancelled() -> Error {
    Error::new(ErrorCode::Cancelled, "the translate call was cancelled")
}

fn timed_out(call: &Call) -> Error {
    let ms = call.timeout_ms.unwrap_or(0);
    Error::new(
        ErrorCode::Timeout,
        format!(
            "the provider call to {} did not finish within timeoutMs ({ms} ms)",
            call.url
        ),
    )
}

fn classify(answer: wire::Answer) -> Attempt {
    let status = answer.status;
    if (200..300).contains(&status) {
        return Attempt::Ok(Reply {
            status,
            body: answer.body,
        });
    }
    Attempt::Status {
        status,
        body: String::from_utf8_lossy(&answer.body).into_owned(),
        retry_after_ms: answer.retry_after.as_deref().and_then(retry_after_ms),
    }
}

/// The error for a 2xx answer whose body is not JSON (`e` says why); such an
/// answer is never retried.
pub fn malformed(call: &Call, status: u16, e: &serde_json::Error, body: &[u8]) -> Error {
    let reason = format!(
        "{e}; the body was: {}",
        quote(&String::from_utf8_lossy(body))
    );
    failure(call, Attempt::Malformed { status, reason }, 1)
}

/// `Retry-After` in its delay-seconds form (digits only, 0 included) as
/// milliseconds; the HTTP-date form and anything else give `None`, so the
/// caller falls back to its backoff.
pub fn retry_after_ms(value: &str) -> Option<u64> {
    let v = value.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = v.parse().ok()?;
    (secs <= RETRY_AFTER_MAX_SECONDS).then(|| secs * 1000)
}

/// `base * 2^attempt` plus a uniform 0–99 ms of jitter, so many callers
/// retrying one upstream do not collide in lockstep.
pub fn backoff_ms(base_ms: u64, attempt: u32) -> u64 {
    let factor = 1u64.checked_shl(attempt.min(62)).unwrap_or(u64::MAX);
    base_ms
        .saturating_mul(factor)
        .saturating_add(fastrand::u64(0..100))
}

/// What a failed exchange came to, in words.
fn transport_reason(failure: Failure) -> &'static str {
    match failure {
        Failure::Dns => "could not resolve the host name",
        Failure::ConnectFailed => "could not connect",
        Failure::Timeout => "timed out",
        Failure::Transport | Failure::TooLarge => {
            "the connection failed before a whole response arrived"
        }
    }
}

fn quote(body: &str) -> String {
    if body.len() <= BODY_QUOTE_LIMIT {
        return body.to_string();
    }
    let mut end = BODY_QUOTE_LIMIT;
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &body[..end], body.len())
}

/// The error a failed call ends with, naming the endpoint, the HTTP status and
/// the provider's own words, with the API key blotted out should the provider
/// have echoed it.
fn failure(call: &Call, outcome: Attempt, attempts: u32) -> Error {
    let tries = if attempts > 1 {
        format!(" after {attempts} attempts")
    } else {
        String::new()
    };
    let message = match outcome {
        Attempt::Ok(_) => String::new(),
        Attempt::Status { status, body, .. } => format!(
            "the provider at {} answered HTTP {status}{tries}: {}",
            call.url,
            quote(&body)
        ),
        Attempt::Transport(Failure::TooLarge) => format!(
            "the provider at {} answered with more than {} MiB, which was not read",
            call.url,
            transport::MAX_BODY_BYTES >> 20
        ),
        Attempt::Transport(failure) => format!(
            "the provider at {} could not be reached{tries}: {}",
            call.url,
            transport_reason(failure)
        ),
        Attempt::Malformed { status, reason } => format!(
            "the provider at {} answered HTTP {status} with a body that is not JSON: {reason}",
            call.url
        ),
    };
    let message = match call.secret.as_deref() {
        Some(key) if !key.is_empty() => message.replace(key, "[redacted]"),
        _ => message,
    };
    Error::new(ErrorCode::ProviderError, message)
}
