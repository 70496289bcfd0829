//! The provider call: one POST through a shared connection pool, retried on
//! 429/500/502/503/504/529 (plus any `retryableStatuses`) and network errors
//! with exponential backoff and jitter, bounded by a whole-call timeout, and
//! abortable through a [`CancelToken`].
//!
//! A provider's error status ends as a typed error (upstream ADR 0027): the
//! status, the body as it may be read (a 401/403 body never, the values of
//! account identifiers replaced by [`REDACTED`]) and the raw `Retry-After`;
//! the message quotes at most [`MAX_ERROR_BODY`] characters of that body.

use super::wire::{self, Stop};
use crate::cancel::CancelToken;
use crate::error::{Error, ErrorCode, ProviderStatus};
use crate::net::transport::Failure;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use std::time::{Duration, Instant};

/// The statuses worth another attempt (upstream's `_RETRYABLE`; 529 is
/// Anthropic's "overloaded", which says to retry with backoff).
pub const RETRYABLE: [u16; 6] = [429, 500, 502, 503, 504, 529];

/// The widest Retry-After (in seconds) that is honoured; larger values fall
/// back to the backoff.
const RETRY_AFTER_MAX_SECONDS: u64 = 2_147_483_647;

/// How many characters of a provider's error body an error message quotes
/// (upstream's `MAX_ERROR_BODY`); the typed `body` carries all of it.
pub const MAX_ERROR_BODY: usize = 200;

/// What replaces the value of an account identifier in an error body.
pub const REDACTED: &str = "«redacted»";

/// Keys whose values a provider reflects back and an error never shows.
const REDACTED_KEYS: [&str; 4] = ["user_id", "account_id", "org_id", "organization"];

/// The host's HTTP transport for the LLM calls (SPEC §8 Gap 2, a client's
/// `httpClient`): each attempt's POST goes to it instead of the socket
/// pool, and its answer is read as the wire's would be (retries, statuses
/// and `Retry-After` included; a 2xx answer to a streamed request is the
/// whole SSE text). `Err` is final: the host's transport failed.
#[derive(Clone)]
pub struct Transport(pub std::sync::Arc<TransportFn>);

/// What a [`Transport`] calls.
pub type TransportFn = dyn Fn(&TransportRequest<'_>) -> Result<TransportReply, Error> + Send + Sync;

/// One POST handed to a [`Transport`].
pub struct TransportRequest<'a> {
    pub url: &'a str,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
    /// Whether the request asks for a stream (its 2xx answer is SSE).
    pub stream: bool,
}

/// A [`Transport`]'s answer.
pub struct TransportReply {
    pub status: u16,
    /// The answer's `Retry-After`, when it has one.
    pub retry_after: Option<String>,
    pub body: bytes::Bytes,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Transport")
    }
}

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
    /// Retried besides [`RETRYABLE`].
    pub retryable_statuses: Vec<u16>,
    pub timeout_ms: Option<u64>,
    /// The host's transport, in the socket pool's stead.
    pub transport: Option<Transport>,
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
        /// The raw header, as the response sent it.
        retry_after: Option<String>,
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
    send_until(call, deadline_of(call), cancel, &mut |info| {
        Ok(default_verdict(info))
    })
}

/// The deadline a call's own `timeout_ms` sets, from now.
fn deadline_of(call: &Call) -> Option<Instant> {
    call.timeout_ms
        .map(|ms| Instant::now() + Duration::from_millis(ms))
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
    /// The answer's `Retry-After`, in its delay-seconds form, as
    /// milliseconds.
    pub retry_after_ms: Option<u64>,
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
    send_to(call, deadline, cancel, verdict_of, None)
}

/// [`send_until`] for a streamed answer (SPEC §8 Streaming): the body of
/// the 2xx answer goes to `sink` piece by piece as it arrives, and the
/// reply's body is empty. A sink answering `false` stops the reading there.
/// Retries stop once any piece reached the sink: what was streamed cannot be
/// taken back.
pub fn send_streaming_until(
    call: &Call,
    deadline: Option<Instant>,
    cancel: Option<&CancelToken>,
    verdict_of: &mut dyn FnMut(&FailedAttempt) -> Result<Verdict, Error>,
    sink: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<Reply, Error> {
    send_to(call, deadline, cancel, verdict_of, Some(sink))
}

fn send_to(
    call: &Call,
    deadline: Option<Instant>,
    cancel: Option<&CancelToken>,
    verdict_of: &mut dyn FnMut(&FailedAttempt) -> Result<Verdict, Error>,
    mut sink: Option<&mut wire::Sink<'_>>,
) -> Result<Reply, Error> {
    let mut streamed = false;
    let outgoing = wire::Outgoing::post(&call.target, &call.headers, &call.body)
        .map_err(|f| failure(call, Attempt::Transport(f), 1))?;
    let mut attempt: u32 = 0;
    loop {
        if cancel.is_some_and(CancelToken::is_cancelled) {
            return Err(cancelled());
        }
        let answer = match (&call.transport, sink.as_deref_mut()) {
            (Some(transport), sink) => {
                let streams = sink.is_some();
                let reply = (transport.0)(&TransportRequest {
                    url: &call.url,
                    headers: &call.headers,
                    body: &call.body,
                    stream: streams,
                })?;
                let mut answer = wire::Answer {
                    status: reply.status,
                    retry_after: reply.retry_after,
                    body: reply.body,
                };
                // A streamed 2xx answer goes to the sink, as the wire's
                // would, piece by piece being one piece here.
                if let (Some(sink), true) = (sink, (200..300).contains(&answer.status)) {
                    streamed = true;
                    sink(&answer.body);
                    answer.body = bytes::Bytes::new();
                }
                Ok(answer)
            }
            (None, None) => wire::exchange(&call.target, &outgoing, deadline, cancel),
            (None, Some(sink)) => {
                let mut noted = |piece: &[u8]| {
                    streamed = true;
                    sink(piece)
                };
                wire::exchange_streaming(&call.target, &outgoing, deadline, cancel, &mut noted)
            }
        };
        let outcome = match answer {
            Ok(answer) => classify(answer),
            Err(Stop::Cancelled) => return Err(cancelled()),
            Err(Stop::TimedOut) => return Err(timed_out(call)),
            Err(Stop::Failed(f)) => Attempt::Transport(f),
        };
        let (retryable, retry_after_ms) = match &outcome {
            Attempt::Ok(_) => (false, None),
            Attempt::Status {
                status,
                retry_after,
                ..
            } => (
                RETRYABLE.contains(status) || call.retryable_statuses.contains(status),
                retry_after.as_deref().and_then(retry_after_ms),
            ),
            // An answer too large to read would be as large again.
            Attempt::Transport(failure) => (*failure != Failure::TooLarge && !streamed, None),
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
            retry_after_ms,
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

pub(crate) fn cancelled() -> Error {
    Error::new(ErrorCode::Cancelled, "the translate call was cancelled")
}

pub(crate) fn timed_out(call: &Call) -> Error {
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
        retry_after: answer.retry_after,
    }
}

/// The error for a 2xx answer whose body is not JSON (`e` says why); such an
/// answer is never retried.
pub fn malformed(call: &Call, status: u16, e: &serde_json::Error, body: &[u8]) -> Error {
    malformed_because(call, status, &e.to_string(), body)
}

/// [`malformed`] for an answer that parsed but lacks what the call reads
/// off it; `what` says what is missing.
pub fn malformed_because(call: &Call, status: u16, what: &str, body: &[u8]) -> Error {
    let reason = format!(
        "{what}; the body was: {}",
        capped(&safe_error_body(status, &String::from_utf8_lossy(body)))
    );
    failure(call, Attempt::Malformed { status, reason }, 1)
}

/// A 2xx answer to a streamed request whose body held no server-sent event
/// and was no JSON object either (an HTML page, plain text, nothing at all):
/// malformed, as an unreadable whole answer is, never an empty answer.
pub fn malformed_stream(call: &Call, status: u16, head: &[u8]) -> Error {
    let reason = if head.iter().all(u8::is_ascii_whitespace) {
        "a streamed request was answered with an empty body".to_string()
    } else {
        format!(
            "a streamed request was answered with neither server-sent events nor JSON; the body was: {}",
            capped(&safe_error_body(status, &String::from_utf8_lossy(head)))
        )
    };
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

/// The longest backoff between two attempts, before jitter.
pub const MAX_BACKOFF_MS: u64 = 60_000;

/// `base * 2^attempt` (at most [`MAX_BACKOFF_MS`]) plus a uniform 0–99 ms
/// of jitter, so many callers retrying one upstream do not collide in
/// lockstep.
pub fn backoff_ms(base_ms: u64, attempt: u32) -> u64 {
    let factor = 1u64.checked_shl(attempt.min(62)).unwrap_or(u64::MAX);
    base_ms
        .saturating_mul(factor)
        .min(MAX_BACKOFF_MS)
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

/// The provider's body as an error may show it (upstream's
/// `safe_error_body`): nothing of a 401 or 403 body (gateways reflect the
/// credential they were sent), else the whole body with the values of
/// account identifiers replaced, trimmed.
pub fn safe_error_body(status: u16, body: &str) -> String {
    if status == 401 || status == 403 {
        return String::new();
    }
    redact_identifiers(body).trim().to_string()
}

/// `body` cut to [`MAX_ERROR_BODY`] characters, with `…` when cut (the
/// message form; upstream's `capped_error_body`).
pub fn capped(body: &str) -> String {
    match body.char_indices().nth(MAX_ERROR_BODY) {
        Some((end, _)) => format!("{}…", &body[..end]),
        None => body.to_string(),
    }
}

/// `text` with the value after every `"user_id"`, `"account_id"`,
/// `"org_id"` or `"organization"` key replaced by `"«redacted»"`, the keys
/// kept (upstream's `redact_identifiers`: a quoted value up to the first
/// quote not after a backslash on the same line, else the run of characters
/// up to a comma, brace or space).
pub fn redact_identifiers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'scan: while let Some(at) = rest.find('"') {
        let after_quote = &rest[at + 1..];
        for key in REDACTED_KEYS {
            let Some(tail) = after_quote
                .strip_prefix(key)
                .and_then(|t| t.strip_prefix('"'))
            else {
                continue;
            };
            let colon = tail.trim_start();
            let Some(value) = colon.strip_prefix(':') else {
                continue;
            };
            let value = value.trim_start();
            let Some(len) = value_len(value) else {
                continue;
            };
            // Everything up to the value (`value` is a suffix of `rest`).
            out.push_str(&rest[..rest.len() - value.len()]);
            out.push('"');
            out.push_str(REDACTED);
            out.push('"');
            rest = &value[len..];
            continue 'scan;
        }
        out.push_str(&rest[..at + 1]);
        rest = after_quote;
    }
    out.push_str(rest);
    out
}

/// The length of the identifier value `value` starts with, if it holds one.
fn value_len(value: &str) -> Option<usize> {
    if let Some(body) = value.strip_prefix('"') {
        let bytes = body.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'\n' => break,
                b'"' if i == 0 || bytes[i - 1] != b'\\' => return Some(i + 2),
                _ => {}
            }
        }
    }
    let len = value
        .find(|c: char| c == ',' || c == '}' || c.is_whitespace())
        .unwrap_or(value.len());
    (len > 0).then_some(len)
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
    let message = match &outcome {
        Attempt::Ok(_) => String::new(),
        Attempt::Status { status, body, .. } => {
            let shown = capped(&safe_error_body(*status, body));
            if shown.is_empty() {
                format!("the provider at {} answered HTTP {status}{tries}", call.url)
            } else {
                format!(
                    "the provider at {} answered HTTP {status}{tries}: {shown}",
                    call.url
                )
            }
        }
        Attempt::Transport(Failure::TooLarge) => format!(
            "the provider at {} answered with more than {} MiB, which was not read",
            call.url,
            crate::limits::RESPONSE_BODY_BYTES >> 20
        ),
        Attempt::Transport(failure) => format!(
            "the provider at {} could not be reached{tries}: {}",
            call.url,
            transport_reason(*failure)
        ),
        Attempt::Malformed { status, reason } => format!(
            "the provider at {} answered HTTP {status} with a body that is not JSON: {reason}",
            call.url
        ),
    };
    // Every spelling of the key, not only the raw one: a provider's error
    // page may echo the request JSON-escaped, percent-encoded or in base64.
    let mut secrets = crate::env::Secrets::default();
    if let Some(key) = call.secret.as_deref() {
        secrets.remember(key);
    }
    let hide = |text: String| secrets.redact(&text).into_owned();
    let error = Error::new(ErrorCode::ProviderError, hide(message));
    match outcome {
        Attempt::Status {
            status,
            body,
            retry_after,
        } => error.with_provider(ProviderStatus {
            status,
            body: hide(safe_error_body(status, &body)),
            retry_after,
        }),
        _ => error,
    }
}
