//! What every dialect's stream reader (`openai::StreamState`,
//! `anthropic::StreamState`, `gemini::StreamState`,
//! `responses::StreamState`) is built from: the caps of an assembled
//! answer, the `Budget` that counts it against them and watches the
//! deadline and the cancel token, the reading of one event (its data as a
//! JSON object, its kind), the error a provider's `error` event becomes,
//! the appending of string pieces, and [`Pieces`]: what a stream says as it
//! arrives. [`super::stream`] drives the dialects' states with these.
//!
//! A dialect's `StreamState` is the one reader of its events: it gathers
//! the answer the provider would have sent whole and, from the same parse
//! of the same event, hands each piece on to a [`Pieces`] sink — the loop's
//! ([`OnText`], which passes the text to its callback) or streaming
//! translate's ([`super::chunks::ChunkWriter`], which re-tells the pieces
//! as OpenAI `chat.completion.chunk` events). Both are bounded by the same
//! caps.

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

/// Token counts as a stream reports them, in OpenAI's terms (what the
/// usage chunk of a relayed stream carries).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
    /// The provider's total, when it gave one (else prompt + completion).
    pub total: Option<u64>,
    pub cached: u64,
    pub reasoning: u64,
}

impl Usage {
    /// The total: the provider's, else prompt + completion.
    pub fn total_tokens(&self) -> u64 {
        self.total
            .unwrap_or_else(|| self.prompt.saturating_add(self.completion))
    }
}

/// What a stream says as it arrives, in the order it says it: each
/// dialect's `StreamState` hands these on while it gathers the answer. The
/// finish reason is already OpenAI's (`stop`, `length`, `tool_calls`,
/// `content_filter`); tool calls are numbered by the sink, in the order
/// they start ([`Pieces::tool_start`] gives the number its argument pieces
/// are sent with). A method's error stops the stream. Every method does
/// nothing by default, so a sink implements only what it needs.
pub trait Pieces {
    /// The answer begins (OpenAI's role chunk; Anthropic's `message_start`,
    /// Responses' `response.created`).
    fn begin(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// A piece of assistant text (possibly empty).
    fn text(&mut self, _text: &str) -> Result<(), Error> {
        Ok(())
    }

    /// A piece of thinking (possibly empty).
    fn reasoning(&mut self, _text: &str) -> Result<(), Error> {
        Ok(())
    }

    /// A tool call starts; gives its number. `extra` is a key and value
    /// for the call's first piece (a Gemini thought signature as
    /// `extra_content`).
    fn tool_start(
        &mut self,
        _id: &str,
        _name: &str,
        _extra: Option<(&str, Value)>,
    ) -> Result<usize, Error> {
        Ok(0)
    }

    /// A fragment of the arguments of call `at` (possibly empty).
    fn tool_args(&mut self, _at: usize, _fragment: &str) -> Result<(), Error> {
        Ok(())
    }

    /// The finish reason so far (the last one given wins).
    fn finish(&mut self, _reason: &'static str) {}

    /// The token counts so far (the last ones given win).
    fn usage(&mut self, _usage: Usage) {}
}

/// The loop's sink: each piece of assistant text that is not empty goes to
/// the callback; nothing else is wanted.
pub struct OnText<'a>(pub &'a mut dyn FnMut(&str));

impl Pieces for OnText<'_> {
    fn text(&mut self, text: &str) -> Result<(), Error> {
        if !text.is_empty() {
            (self.0)(text);
        }
        Ok(())
    }
}

/// What to do with an event whose data is not a JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotObject {
    /// Skip it (a keep-alive comment or anything newer).
    Skip,
    /// Fail the stream (Gemini: each event is a whole answer, so one that
    /// does not parse is a stream cut mid-event).
    Fail,
}

/// One event of a stream, read once.
#[derive(Debug)]
pub(crate) struct Event<'a> {
    /// The event's data: always a JSON object.
    pub(crate) value: Value,
    /// The SSE event name.
    name: &'a str,
}

impl Event<'_> {
    /// The object's field `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        self.value.get(key)
    }

    /// The event's kind: its `type` field, else the SSE event name.
    pub(crate) fn kind(&self) -> &str {
        self.get("type")
            .and_then(Value::as_str)
            .unwrap_or(self.name)
    }
}

/// Reads one event's data as a JSON object (the one parse of the event);
/// `None` when it is not one and `not_object` says skip it.
pub(crate) fn read_event<'a>(
    name: &'a str,
    data: &str,
    not_object: NotObject,
) -> Result<Option<Event<'a>>, Error> {
    match serde_json::from_str::<Value>(data) {
        Ok(value @ Value::Object(_)) => Ok(Some(Event { value, name })),
        _ if not_object == NotObject::Skip => Ok(None),
        _ => Err(Error::new(
            ErrorCode::ProviderError,
            format!(
                "the provider's stream sent an event that is not a JSON object (a stream cut mid-event?): {}",
                data.chars().take(200).collect::<String>()
            ),
        )),
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
