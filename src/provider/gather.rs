//! What every dialect's stream assembler (`openai::StreamState`,
//! `anthropic::StreamState`, `gemini::StreamState`,
//! `responses::StreamState`) is built from: the caps of an assembled
//! answer, the `Budget` that counts it against them and watches the
//! deadline and the cancel token, the error a provider's `error` event
//! becomes, and the appending of string pieces. [`super::stream`] drives
//! the dialects' states with these.

use crate::cancel::CancelToken;
use crate::error::{Error, ErrorCode};
use crate::limits::RESPONSE_BODY_BYTES;
use serde_json::{Map, Value};
use std::time::Instant;

/// The most tool calls one answer may ask for: a turn holds every call and
/// its result and feeds them all back at once (run on the loop's bounded
/// pool, `run::tool_workers`). An answer asking for more fails with a
/// `provider_error` before any call runs, streamed or not.
pub const MAX_TOOL_CALLS: usize = 1024;

/// What one more key, call or block counts against [`RESPONSE_BODY_BYTES`]
/// besides its text: roughly what it occupies in memory, so that many empty
/// pieces cannot hold more than the cap allows.
pub const ENTRY_BYTES: usize = 64;

/// How many tool-call pieces are gathered between two looks at the clock.
pub(crate) const CHECK_EVERY: usize = 64;

/// The error for an answer of more than [`MAX_TOOL_CALLS`] calls.
pub fn too_many_calls(count: usize) -> Error {
    Error::new(
        ErrorCode::ProviderError,
        format!(
            "the provider's answer asks for {count} tool calls; one answer may ask for at most {MAX_TOOL_CALLS}"
        ),
    )
}

fn answer_too_large() -> Error {
    Error::new(
        ErrorCode::ProviderError,
        format!(
            "the provider's streamed answer grew past {} MiB (the cap of a provider answer) and was not read further",
            RESPONSE_BODY_BYTES >> 20
        ),
    )
}

/// What an assembler has taken in so far, and when it must stop.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    /// Bytes held by the answer, as counted by [`Budget::take`].
    held: usize,
    deadline: Option<Instant>,
    cancel: Option<CancelToken>,
}

impl Budget {
    /// Sets the deadline and the token `Budget::check` looks at.
    pub(crate) fn watch(&mut self, deadline: Option<Instant>, cancel: Option<&CancelToken>) {
        self.deadline = deadline;
        self.cancel = cancel.cloned();
    }

    /// Counts `n` more bytes of the answer.
    pub(crate) fn take(&mut self, n: usize) -> Result<(), Error> {
        self.held = self.held.saturating_add(n);
        if self.held > RESPONSE_BODY_BYTES {
            return Err(answer_too_large());
        }
        Ok(())
    }

    /// Fails once the deadline passed or the token was cancelled.
    pub(crate) fn check(&self) -> Result<(), Error> {
        if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Err(Error::new(
                ErrorCode::Cancelled,
                "the streamed answer was cancelled",
            ));
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Error::new(
                ErrorCode::Timeout,
                "the streamed answer was still being assembled at the deadline",
            ));
        }
        Ok(())
    }
}

/// The error a provider's `error` event (or chunk) reports.
pub(crate) fn provider_stream_error(detail: &Value) -> Error {
    let message = detail
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| detail.to_string());
    let kind = detail.get("type").and_then(Value::as_str);
    Error::new(
        ErrorCode::ProviderError,
        match kind {
            Some(k) => format!("the provider's stream reported an error ({k}): {message}"),
            None => format!("the provider's stream reported an error: {message}"),
        },
    )
}

/// Appends every string field of `delta` but `type` to the same field of
/// `target` (how text, thinking and signature deltas grow their block).
pub(crate) fn append_strings(
    target: &mut Map<String, Value>,
    delta: &Map<String, Value>,
    budget: &mut Budget,
) -> Result<(), Error> {
    for (k, v) in delta {
        let Value::String(piece) = v else { continue };
        if k == "type" {
            continue;
        }
        append_string(target, k, piece, budget)?;
    }
    Ok(())
}

/// Appends `piece` to the string field `key` of `target`, counting it.
pub(crate) fn append_string(
    target: &mut Map<String, Value>,
    key: &str,
    piece: &str,
    budget: &mut Budget,
) -> Result<(), Error> {
    match target.get_mut(key) {
        Some(Value::String(s)) => {
            budget.take(piece.len())?;
            s.push_str(piece);
        }
        _ => {
            budget.take(ENTRY_BYTES + key.len() + piece.len())?;
            target.insert(key.to_string(), Value::String(piece.to_string()));
        }
    }
    Ok(())
}
