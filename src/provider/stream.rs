//! SPEC §8 Streaming, the provider half: a streamed answer (server-sent
//! events) read as it arrives, its text deltas handed on at once, and the
//! whole of it assembled into the very JSON the provider would have sent
//! without `stream` — so the loop reads a streamed turn exactly as it reads
//! any other.
//!
//! - OpenAI: `stream: true` with `stream_options.include_usage`; `data:`
//!   chunks of `choices[0].delta` (content, and tool calls whose pieces are
//!   gathered by `index`), usage in the last chunk, then `data: [DONE]`.
//! - Anthropic: `stream: true`; `message_start`, `content_block_start` /
//!   `_delta` / `_stop` (text, `input_json_delta` for tool input, and any
//!   other block's string deltas), `message_delta` (stop reason, usage) and
//!   `message_stop`; an `error` event fails the call.
//!
//! - Gemini: `:streamGenerateContent?alt=sse`; each `data:` is a whole
//!   `GenerateContentResponse` holding the next parts (function calls come
//!   whole). Parts are kept in order; a text part is appended to the text
//!   part before it when neither carries a `thoughtSignature` and both are
//!   thoughts or both are not, so a signature stays on the part it came
//!   on. The last `finishReason` and `usageMetadata` win; an event that is
//!   not a JSON object (a stream cut mid-event) or an `error` fails the call.
//!
//! - Responses: `stream: true`; `response.created`, items started by
//!   `response.output_item.added` and grown by their `output_index`
//!   (`response.output_text.delta`, `response.function_call_arguments.delta`,
//!   interleaved or not), `response.output_item.done` (the whole item),
//!   then `response.completed` (or `response.incomplete`), whose response
//!   is the answer, its `output` filled from the items when it holds none;
//!   `response.failed` or an `error` event fails the call.
//!
//! A provider that answers a streamed request with a plain JSON body is
//! read as that body.
//!
//! Bounds: the assembled answer holds at most [`RESPONSE_BODY_BYTES`] (the
//! cap of a non-streamed body; text, tool arguments, thinking and every
//! other piece counted together, each new key or call at least
//! [`ENTRY_BYTES`]) and at most [`MAX_TOOL_CALLS`] tool calls; past either
//! the call fails with a `provider_error` naming the cap. Pieces are found
//! by index in constant time, and the deadline and the cancel token are
//! checked while one event's pieces are gathered.

use super::http::{self as client, Call, FailedAttempt, Reply, Verdict};
use super::sse::{too_large, SseParser};
use super::Style;
use crate::cancel::CancelToken;
use crate::error::{Error, ErrorCode};
use crate::limits::RESPONSE_BODY_BYTES;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

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
const CHECK_EVERY: usize = 64;

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
struct Budget {
    /// Bytes held by the answer, as counted by [`Budget::take`].
    held: usize,
    deadline: Option<Instant>,
    cancel: Option<CancelToken>,
}

impl Budget {
    /// Counts `n` more bytes of the answer.
    fn take(&mut self, n: usize) -> Result<(), Error> {
        self.held = self.held.saturating_add(n);
        if self.held > RESPONSE_BODY_BYTES {
            return Err(answer_too_large());
        }
        Ok(())
    }

    /// Fails once the deadline passed or the token was cancelled.
    fn check(&self) -> Result<(), Error> {
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

// ---------------------------------------------------------------------------
// assembly
// ---------------------------------------------------------------------------

/// One tool call of an OpenAI stream, gathered from its pieces.
#[derive(Debug, Default)]
struct OpenAiCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Debug, Default)]
struct OpenAiState {
    /// `id`, `model`, `created`, `system_fingerprint` as first sent.
    top: Map<String, Value>,
    content: Option<String>,
    /// Other string fields of the delta (`refusal`, `reasoning_content`).
    extra: Map<String, Value>,
    calls: Vec<OpenAiCall>,
    /// Where the call of each `index` is in `calls`.
    by_index: HashMap<u64, usize>,
    finish_reason: Option<Value>,
    usage: Option<Value>,
}

/// One content block of an Anthropic stream.
#[derive(Debug)]
struct AnthropicBlock {
    index: u64,
    block: Map<String, Value>,
    /// `input_json_delta` pieces of a tool_use block.
    json: Option<String>,
}

#[derive(Debug, Default)]
struct AnthropicState {
    message: Option<Map<String, Value>>,
    blocks: Vec<AnthropicBlock>,
    /// Where the block of each `index` is in `blocks`.
    by_index: HashMap<u64, usize>,
    /// How many of the blocks are `tool_use`.
    tool_uses: usize,
    stop_reason: Option<Value>,
    stop_sequence: Option<Value>,
    usage: Map<String, Value>,
}

impl AnthropicState {
    /// Starts (or starts again) the block of `index`, returning where it is
    /// in `blocks`; fails past [`MAX_TOOL_CALLS`] `tool_use` blocks.
    fn start_block(&mut self, index: u64, block: Map<String, Value>) -> Result<usize, Error> {
        let is_tool =
            |b: &Map<String, Value>| b.get("type").and_then(Value::as_str) == Some("tool_use");
        let tool = is_tool(&block);
        let entry = AnthropicBlock {
            index,
            block,
            json: None,
        };
        match self.by_index.get(&index) {
            Some(&at) => {
                let was_tool = is_tool(&self.blocks[at].block);
                if tool && !was_tool {
                    self.count_tool_use()?;
                } else if was_tool && !tool {
                    self.tool_uses -= 1;
                }
                self.blocks[at] = entry;
                Ok(at)
            }
            None => {
                if tool {
                    self.count_tool_use()?;
                }
                self.blocks.push(entry);
                self.by_index.insert(index, self.blocks.len() - 1);
                Ok(self.blocks.len() - 1)
            }
        }
    }

    fn count_tool_use(&mut self) -> Result<(), Error> {
        if self.tool_uses >= MAX_TOOL_CALLS {
            return Err(too_many_calls(self.tool_uses + 1));
        }
        self.tool_uses += 1;
        Ok(())
    }
}

#[derive(Debug, Default)]
struct GeminiState {
    /// `responseId`, `modelVersion`, `createTime` as first sent, the last
    /// `promptFeedback`.
    top: Map<String, Value>,
    parts: Vec<Map<String, Value>>,
    calls: usize,
    finish_reason: Option<Value>,
    usage: Option<Value>,
}

#[derive(Debug, Default)]
struct ResponsesState {
    response: Option<Map<String, Value>>,
    /// The output items by their `output_index`, in arrival order.
    items: Vec<(u64, Map<String, Value>)>,
    by_index: HashMap<u64, usize>,
    calls: usize,
}

impl ResponsesState {
    /// The item of `index`, started empty when no event started it.
    fn item(&mut self, index: u64, kind: &str) -> &mut Map<String, Value> {
        let at = match self.by_index.get(&index) {
            Some(&at) => at,
            None => {
                let mut m = Map::new();
                m.insert("type".into(), Value::String(kind.into()));
                self.items.push((index, m));
                self.by_index.insert(index, self.items.len() - 1);
                self.items.len() - 1
            }
        };
        &mut self.items[at].1
    }

    /// Sets the item of `index` (counting function calls).
    fn set_item(&mut self, index: u64, item: Map<String, Value>) -> Result<(), Error> {
        let is_call =
            |m: &Map<String, Value>| m.get("type").and_then(Value::as_str) == Some("function_call");
        let was_call = self
            .by_index
            .get(&index)
            .is_some_and(|&at| is_call(&self.items[at].1));
        if is_call(&item) && !was_call {
            if self.calls >= MAX_TOOL_CALLS {
                return Err(too_many_calls(self.calls + 1));
            }
            self.calls += 1;
        }
        *self.item(index, "message") = item;
        Ok(())
    }
}

/// Whether a text part can take more text appended: plain text (or a
/// thought) with no signature.
fn open_text(p: &Map<String, Value>) -> bool {
    p.get("text").is_some_and(Value::is_string)
        && p.get("thoughtSignature").is_none()
        && p.keys().all(|k| matches!(k.as_str(), "text" | "thought"))
}

/// Gathers the events of one streamed answer into the answer the provider
/// would have sent whole.
#[derive(Debug)]
pub struct Assembler {
    style: Style,
    openai: OpenAiState,
    anthropic: AnthropicState,
    gemini: GeminiState,
    responses: ResponsesState,
    budget: Budget,
    /// `[DONE]` or `message_stop` was seen: later events are ignored.
    done: bool,
    /// Any event at all was taken: a body without one is no stream.
    seen: bool,
}

fn provider_stream_error(detail: &Value) -> Error {
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
fn append_strings(
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
fn append_string(
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

impl Assembler {
    pub fn new(style: Style) -> Self {
        Assembler {
            style,
            openai: OpenAiState::default(),
            anthropic: AnthropicState::default(),
            gemini: GeminiState::default(),
            responses: ResponsesState::default(),
            budget: Budget::default(),
            done: false,
            seen: false,
        }
    }

    /// Makes [`Assembler::event`] fail with a `timeout` error once
    /// `deadline` has passed and with a `cancelled` error once `cancel` is
    /// cancelled, checked while an event's pieces are gathered.
    pub fn watch(&mut self, deadline: Option<Instant>, cancel: Option<&CancelToken>) {
        self.budget.deadline = deadline;
        self.budget.cancel = cancel.cloned();
    }

    /// Takes one event; `on_text` gets each piece of assistant text.
    pub fn event(
        &mut self,
        name: &str,
        data: &str,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<(), Error> {
        self.seen = true;
        if self.done {
            return Ok(());
        }
        self.budget.check()?;
        match self.style {
            Style::OpenAi => self.openai_event(data, on_text),
            Style::Anthropic => self.anthropic_event(name, data, on_text),
            Style::Gemini => self.gemini_event(data, on_text),
            Style::Responses => self.responses_event(name, data, on_text),
        }
    }

    fn responses_event(
        &mut self,
        name: &str,
        data: &str,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<(), Error> {
        let Ok(Value::Object(ev)) = serde_json::from_str::<Value>(data) else {
            return Ok(());
        };
        let kind = ev.get("type").and_then(Value::as_str).unwrap_or(name);
        let s = &mut self.responses;
        let budget = &mut self.budget;
        let index = ev.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        let delta = ev.get("delta").and_then(Value::as_str).unwrap_or("");
        match kind {
            "response.created" | "response.in_progress" => {
                if let Some(Value::Object(r)) = ev.get("response") {
                    budget.take(ENTRY_BYTES + data.len())?;
                    s.response = Some(r.clone());
                }
            }
            "response.output_item.added" | "response.output_item.done" => {
                if let Some(Value::Object(item)) = ev.get("item") {
                    budget.take(ENTRY_BYTES + data.len())?;
                    s.set_item(index, item.clone())?;
                }
            }
            "response.output_text.delta" => {
                budget.take(delta.len())?;
                let part = ev.get("content_index").and_then(Value::as_u64).unwrap_or(0);
                let item = s.item(index, "message");
                item.entry("role")
                    .or_insert_with(|| Value::String("assistant".into()));
                let content = item
                    .entry("content")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(parts) = content {
                    let at = usize::try_from(part).unwrap_or(usize::MAX);
                    if at >= parts.len() && at < MAX_TOOL_CALLS {
                        budget.take(ENTRY_BYTES * (at + 1 - parts.len()))?;
                        parts.resize_with(
                            at + 1,
                            || serde_json::json!({"type": "output_text", "text": ""}),
                        );
                    }
                    if let Some(Value::Object(p)) = parts.get_mut(at) {
                        append_string(p, "text", delta, budget)?;
                    }
                }
                if !delta.is_empty() {
                    on_text(delta);
                }
            }
            "response.function_call_arguments.delta" => {
                budget.take(delta.len())?;
                if !s.by_index.contains_key(&index) {
                    let mut call = Map::new();
                    call.insert("type".into(), Value::String("function_call".into()));
                    s.set_item(index, call)?;
                }
                append_string(s.item(index, "function_call"), "arguments", delta, budget)?;
            }
            "response.completed" | "response.incomplete" => {
                if let Some(Value::Object(r)) = ev.get("response") {
                    budget.take(ENTRY_BYTES + data.len())?;
                    s.response = Some(r.clone());
                }
                self.done = true;
            }
            "response.failed" => {
                let detail = ev
                    .get("response")
                    .and_then(|r| r.get("error"))
                    .filter(|e| !e.is_null())
                    .cloned()
                    .unwrap_or(Value::Object(ev.clone()));
                return Err(provider_stream_error(&detail));
            }
            "error" => {
                let detail = ev.get("error").cloned().unwrap_or(Value::Object(ev));
                return Err(provider_stream_error(&detail));
            }
            _ => {}
        }
        Ok(())
    }

    fn gemini_event(&mut self, data: &str, on_text: &mut dyn FnMut(&str)) -> Result<(), Error> {
        let chunk = match serde_json::from_str::<Value>(data) {
            Ok(Value::Object(c)) => c,
            _ => {
                return Err(Error::new(
                    ErrorCode::ProviderError,
                    format!(
                        "the provider's stream sent an event that is not a JSON object (a stream cut mid-event?): {}",
                        data.chars().take(200).collect::<String>()
                    ),
                ))
            }
        };
        if let Some(e) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(provider_stream_error(e));
        }
        let s = &mut self.gemini;
        let budget = &mut self.budget;
        for key in ["responseId", "modelVersion", "createTime"] {
            if let Some(v) = chunk.get(key).filter(|v| !v.is_null()) {
                if !s.top.contains_key(key) {
                    budget.take(ENTRY_BYTES + data.len())?;
                    s.top.insert(key.into(), v.clone());
                }
            }
        }
        if let Some(f) = chunk.get("promptFeedback").filter(|f| f.is_object()) {
            budget.take(ENTRY_BYTES)?;
            s.top.insert("promptFeedback".into(), f.clone());
        }
        if let Some(u) = chunk.get("usageMetadata").filter(|u| u.is_object()) {
            s.usage = Some(u.clone());
        }
        let Some(candidate) = chunk.get("candidates").and_then(|c| c.get(0)) else {
            return Ok(());
        };
        if let Some(f) = candidate.get("finishReason").filter(|f| !f.is_null()) {
            s.finish_reason = Some(f.clone());
        }
        let parts = candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for (n, part) in parts.iter().enumerate() {
            if n % CHECK_EVERY == CHECK_EVERY - 1 {
                budget.check()?;
            }
            let Value::Object(part) = part else { continue };
            let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
            if let Some(text) = part.get("text").and_then(Value::as_str) {
                if !thought && !text.is_empty() {
                    on_text(text);
                }
                let joins = open_text(part)
                    && s.parts.last().is_some_and(|last| {
                        open_text(last)
                            && (last.get("thought").and_then(Value::as_bool) == Some(true))
                                == thought
                    });
                if joins {
                    budget.take(text.len())?;
                    if let Some(Value::String(t)) =
                        s.parts.last_mut().and_then(|l| l.get_mut("text"))
                    {
                        t.push_str(text);
                    }
                    continue;
                }
                budget.take(ENTRY_BYTES + text.len())?;
            } else {
                if part.contains_key("functionCall") {
                    if s.calls >= MAX_TOOL_CALLS {
                        return Err(too_many_calls(s.calls + 1));
                    }
                    s.calls += 1;
                }
                // At most the whole event was copied.
                budget.take(ENTRY_BYTES + data.len().min(RESPONSE_BODY_BYTES))?;
            }
            s.parts.push(part.clone());
        }
        Ok(())
    }

    fn openai_event(&mut self, data: &str, on_text: &mut dyn FnMut(&str)) -> Result<(), Error> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        // A keep-alive or anything else that is not a JSON chunk is skipped.
        let Ok(Value::Object(chunk)) = serde_json::from_str::<Value>(data) else {
            return Ok(());
        };
        let s = &mut self.openai;
        let budget = &mut self.budget;
        if let Some(e) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(provider_stream_error(e));
        }
        for key in ["id", "model", "created", "system_fingerprint"] {
            if let Some(v) = chunk.get(key).filter(|v| !v.is_null()) {
                if !s.top.contains_key(key) {
                    // At most the whole event was copied.
                    budget.take(ENTRY_BYTES + data.len())?;
                    s.top.insert(key.into(), v.clone());
                }
            }
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            s.usage = Some(u.clone());
        }
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        let Some(choice) = choice else {
            return Ok(());
        };
        if let Some(f) = choice.get("finish_reason").filter(|f| !f.is_null()) {
            s.finish_reason = Some(f.clone());
        }
        let Some(delta) = choice.get("delta").and_then(Value::as_object) else {
            return Ok(());
        };
        for (k, v) in delta {
            match (k.as_str(), v) {
                ("content", Value::String(text)) => {
                    budget.take(text.len())?;
                    s.content.get_or_insert_with(String::new).push_str(text);
                    if !text.is_empty() {
                        on_text(text);
                    }
                }
                ("tool_calls", Value::Array(calls)) => {
                    for (n, c) in calls.iter().enumerate() {
                        if n % CHECK_EVERY == CHECK_EVERY - 1 {
                            budget.check()?;
                        }
                        Self::openai_call_piece(&mut s.calls, &mut s.by_index, c, budget)?;
                    }
                }
                ("role" | "content" | "tool_calls", _) => {}
                (_, Value::String(piece)) => append_string(&mut s.extra, k, piece, budget)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// One piece of a tool call: found by its `index` (by a new `id` when a
    /// provider sends no index), its name and arguments appended.
    fn openai_call_piece(
        calls: &mut Vec<OpenAiCall>,
        by_index: &mut HashMap<u64, usize>,
        piece: &Value,
        budget: &mut Budget,
    ) -> Result<(), Error> {
        let index = piece.get("index").and_then(Value::as_u64);
        let id = piece.get("id").and_then(Value::as_str).unwrap_or("");
        let found = match index {
            Some(i) => by_index.get(&i).copied(),
            None => match calls.last() {
                Some(last) if id.is_empty() || last.id.is_empty() || last.id == id => {
                    Some(calls.len() - 1)
                }
                _ => None,
            },
        };
        let at = match found {
            Some(at) => at,
            None => {
                if calls.len() >= MAX_TOOL_CALLS {
                    return Err(too_many_calls(calls.len() + 1));
                }
                budget.take(ENTRY_BYTES)?;
                calls.push(OpenAiCall::default());
                if let Some(i) = index {
                    by_index.insert(i, calls.len() - 1);
                }
                calls.len() - 1
            }
        };
        let call = &mut calls[at];
        if !id.is_empty() && call.id.is_empty() {
            budget.take(id.len())?;
            call.id = id.to_string();
        }
        if let Some(f) = piece.get("function") {
            if let Some(n) = f.get("name").and_then(Value::as_str) {
                budget.take(n.len())?;
                call.name.push_str(n);
            }
            if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                budget.take(a.len())?;
                call.arguments.push_str(a);
            }
        }
        Ok(())
    }

    fn anthropic_event(
        &mut self,
        name: &str,
        data: &str,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<(), Error> {
        let Ok(Value::Object(ev)) = serde_json::from_str::<Value>(data) else {
            return Ok(());
        };
        let kind = ev.get("type").and_then(Value::as_str).unwrap_or(name);
        let s = &mut self.anthropic;
        let budget = &mut self.budget;
        let index = ev.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(Value::Object(m)) = ev.get("message") {
                    // At most the whole event was copied.
                    budget.take(ENTRY_BYTES + data.len())?;
                    if let Some(Value::Object(u)) = m.get("usage") {
                        s.usage.extend(u.clone());
                    }
                    s.message = Some(m.clone());
                }
            }
            "content_block_start" => {
                let block = match ev.get("content_block") {
                    Some(Value::Object(b)) => b.clone(),
                    _ => Map::new(),
                };
                budget.take(ENTRY_BYTES + data.len())?;
                s.start_block(index, block)?;
            }
            "content_block_delta" => {
                let Some(Value::Object(delta)) = ev.get("delta") else {
                    return Ok(());
                };
                let at = match s.by_index.get(&index) {
                    Some(&at) => at,
                    // A delta for a block never started starts it.
                    None => {
                        let t = match delta.get("type").and_then(Value::as_str) {
                            Some("input_json_delta") => "tool_use",
                            _ => "text",
                        };
                        let mut block = Map::new();
                        block.insert("type".into(), Value::String(t.into()));
                        budget.take(ENTRY_BYTES)?;
                        s.start_block(index, block)?
                    }
                };
                let b = &mut s.blocks[at];
                match delta.get("type").and_then(Value::as_str) {
                    Some("input_json_delta") => {
                        let piece = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        budget.take(piece.len())?;
                        b.json.get_or_insert_with(String::new).push_str(piece);
                    }
                    kind => {
                        append_strings(&mut b.block, delta, budget)?;
                        if kind == Some("text_delta") {
                            if let Some(t) = delta.get("text").and_then(Value::as_str) {
                                if !t.is_empty() {
                                    on_text(t);
                                }
                            }
                        }
                    }
                }
            }
            "content_block_stop" => {
                if let Some(&at) = s.by_index.get(&index) {
                    Self::close_block(&mut s.blocks[at]);
                }
            }
            "message_delta" => {
                if let Some(Value::Object(d)) = ev.get("delta") {
                    if let Some(r) = d.get("stop_reason").filter(|r| !r.is_null()) {
                        s.stop_reason = Some(r.clone());
                    }
                    if let Some(q) = d.get("stop_sequence").filter(|q| !q.is_null()) {
                        s.stop_sequence = Some(q.clone());
                    }
                }
                if let Some(Value::Object(u)) = ev.get("usage") {
                    for (k, v) in u {
                        if !v.is_null() {
                            if !s.usage.contains_key(k) {
                                budget.take(ENTRY_BYTES + k.len())?;
                            }
                            s.usage.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                let detail = ev.get("error").cloned().unwrap_or(Value::Object(ev));
                return Err(provider_stream_error(&detail));
            }
            // ping and anything newer.
            _ => {}
        }
        Ok(())
    }

    /// A finished tool_use block takes its gathered input (`{}` when the
    /// pieces do not make a JSON object: CONTRACT §5 reads malformed
    /// arguments as none).
    fn close_block(b: &mut AnthropicBlock) {
        let Some(json) = b.json.take() else { return };
        let input = if json.trim().is_empty() {
            b.block
                .get("input")
                .cloned()
                .unwrap_or(Value::Object(Map::new()))
        } else {
            match serde_json::from_str::<Value>(&json) {
                Ok(v @ Value::Object(_)) => v,
                _ => Value::Object(Map::new()),
            }
        };
        b.block.insert("input".into(), input);
    }

    /// The answer as the provider would have sent it whole.
    pub fn finish(mut self) -> Value {
        match self.style {
            Style::Responses => {
                let s = self.responses;
                let mut out = s.response.unwrap_or_default();
                out.entry("object")
                    .or_insert_with(|| Value::String("response".into()));
                let has_output = out
                    .get("output")
                    .and_then(Value::as_array)
                    .is_some_and(|o| !o.is_empty());
                if !has_output {
                    let mut items = s.items;
                    items.sort_by_key(|(i, _)| *i);
                    let items = items.into_iter().map(|(_, m)| Value::Object(m)).collect();
                    out.insert("output".into(), Value::Array(items));
                }
                Value::Object(out)
            }
            Style::Gemini => {
                let s = self.gemini;
                let mut candidate = Map::new();
                let parts = s.parts.into_iter().map(Value::Object).collect();
                candidate.insert(
                    "content".into(),
                    serde_json::json!({"role": "model", "parts": Value::Array(parts)}),
                );
                if let Some(f) = s.finish_reason {
                    candidate.insert("finishReason".into(), f);
                }
                candidate.insert("index".into(), Value::from(0));
                let mut out = Map::new();
                out.insert(
                    "candidates".into(),
                    Value::Array(vec![Value::Object(candidate)]),
                );
                if let Some(u) = s.usage {
                    out.insert("usageMetadata".into(), u);
                }
                out.extend(s.top);
                Value::Object(out)
            }
            Style::OpenAi => {
                let s = self.openai;
                let mut message = Map::new();
                message.insert("role".into(), Value::String("assistant".into()));
                message.insert(
                    "content".into(),
                    s.content.map_or(Value::Null, Value::String),
                );
                message.extend(s.extra);
                if !s.calls.is_empty() {
                    let calls = s
                        .calls
                        .into_iter()
                        .map(|c| {
                            serde_json::json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments},
                            })
                        })
                        .collect();
                    message.insert("tool_calls".into(), Value::Array(calls));
                }
                let mut out = s.top;
                out.insert("object".into(), Value::String("chat.completion".into()));
                let mut choice = Map::new();
                choice.insert("index".into(), Value::from(0));
                choice.insert("message".into(), Value::Object(message));
                choice.insert(
                    "finish_reason".into(),
                    s.finish_reason.unwrap_or(Value::Null),
                );
                out.insert("choices".into(), Value::Array(vec![Value::Object(choice)]));
                if let Some(u) = s.usage {
                    out.insert("usage".into(), u);
                }
                Value::Object(out)
            }
            Style::Anthropic => {
                let s = &mut self.anthropic;
                for b in &mut s.blocks {
                    Self::close_block(b);
                }
                s.blocks.sort_by_key(|b| b.index);
                let mut out = s.message.take().unwrap_or_default();
                out.entry("type")
                    .or_insert_with(|| Value::String("message".into()));
                out.entry("role")
                    .or_insert_with(|| Value::String("assistant".into()));
                let content = std::mem::take(&mut s.blocks)
                    .into_iter()
                    .map(|b| Value::Object(b.block))
                    .collect();
                out.insert("content".into(), Value::Array(content));
                out.insert(
                    "stop_reason".into(),
                    s.stop_reason.take().unwrap_or(Value::Null),
                );
                out.insert(
                    "stop_sequence".into(),
                    s.stop_sequence.take().unwrap_or(Value::Null),
                );
                out.insert("usage".into(), Value::Object(std::mem::take(&mut s.usage)));
                Value::Object(out)
            }
        }
    }
}

// ---------------------------------------------------------------------------
// the call
// ---------------------------------------------------------------------------

/// How much of a streamed body is kept to quote when it holds no event.
const HEAD_BYTES: usize = 512;

/// What the body turned out to be, decided by its first byte that is not
/// white space.
enum Body {
    Undecided,
    /// The events, and the body's first bytes (for the error when no event
    /// comes of it).
    Events(Box<(SseParser, Assembler, Vec<u8>)>),
    /// A plain JSON answer to a streamed request.
    Whole(Vec<u8>),
}

/// The text of a whole (non-streamed) answer, for the one delta it makes.
fn whole_text(style: Style, answer: &Value) -> String {
    match style {
        Style::OpenAi => answer
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        Style::Anthropic => answer
            .get("content")
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default(),
        Style::Gemini => super::gemini::text_of(&super::gemini::model_content(answer)),
        Style::Responses => super::responses::text_of(super::responses::output(answer)),
    }
}

/// Makes a streamed provider call (its body already asks for a stream, as
/// `shape::Body` writes it with `stream` set): `on_text` gets each text
/// delta as it arrives; the reply's body is the assembled answer as JSON,
/// which the caller decodes as it decodes a non-streamed reply. Retries, the
/// deadline and the cancel token work as in [`client::send`], except that
/// nothing is retried once any of the answer arrived.
pub fn send_streamed(
    call: &Call,
    style: Style,
    cancel: Option<&CancelToken>,
    on_text: &mut dyn FnMut(&str),
) -> Result<Reply, Error> {
    let deadline = call
        .timeout_ms
        .map(|ms| Instant::now() + Duration::from_millis(ms));
    let mut classify = |info: &FailedAttempt| Ok(client::default_verdict(info));
    send_streamed_until(call, style, deadline, cancel, &mut classify, on_text)
}

/// [`send_streamed`] with an absolute deadline and a retry classifier, as
/// [`client::send_until`] takes them.
pub fn send_streamed_until(
    call: &Call,
    style: Style,
    deadline: Option<Instant>,
    cancel: Option<&CancelToken>,
    classify: &mut dyn FnMut(&FailedAttempt) -> Result<Verdict, Error>,
    on_text: &mut dyn FnMut(&str),
) -> Result<Reply, Error> {
    let mut body = Body::Undecided;
    let mut failed: Option<Error> = None;
    let mut sink = |mut piece: &[u8]| -> bool {
        if let Body::Undecided = body {
            let start = piece.iter().position(|b| !b.is_ascii_whitespace());
            let Some(start) = start else { return true };
            piece = &piece[start..];
            body = if piece[0] == b'{' {
                Body::Whole(Vec::new())
            } else {
                let mut assembler = Assembler::new(style);
                assembler.watch(deadline, cancel);
                Body::Events(Box::new((SseParser::new(), assembler, Vec::new())))
            };
        }
        let result = match &mut body {
            Body::Undecided => Ok(()),
            Body::Whole(all) if all.len() + piece.len() > RESPONSE_BODY_BYTES => Err(too_large()),
            Body::Whole(all) => {
                all.extend_from_slice(piece);
                Ok(())
            }
            Body::Events(events) => {
                let (parser, assembler, head) = &mut **events;
                if head.len() < HEAD_BYTES {
                    let room = HEAD_BYTES - head.len();
                    head.extend_from_slice(&piece[..piece.len().min(room)]);
                }
                parser.feed(piece, &mut |name, data| {
                    assembler.event(name, data, on_text)
                })
            }
        };
        match result {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        }
    };
    let reply = client::send_streaming_until(call, deadline, cancel, classify, &mut sink)?;
    // The assembler's own look at the clock and the token ends the call as
    // the exchange's would.
    let stopped = |e: Error| match e.code {
        ErrorCode::Timeout => client::timed_out(call),
        ErrorCode::Cancelled => client::cancelled(),
        _ => e,
    };
    if let Some(e) = failed {
        return Err(stopped(e));
    }
    let answer = match body {
        Body::Undecided => return Err(client::malformed_stream(call, reply.status, b"")),
        Body::Events(events) => {
            let (mut parser, mut assembler, head) = *events;
            parser
                .finish(&mut |name, data| assembler.event(name, data, on_text))
                .map_err(stopped)?;
            if !assembler.seen {
                return Err(client::malformed_stream(call, reply.status, &head));
            }
            assembler.finish()
        }
        Body::Whole(all) => {
            let answer: Value = serde_json::from_slice(&all)
                .map_err(|e| client::malformed(call, reply.status, &e, &all))?;
            let text = whole_text(style, &answer);
            if !text.is_empty() {
                on_text(&text);
            }
            answer
        }
    };
    let bytes = serde_json::to_vec(&answer)
        .map_err(|e| Error::new(ErrorCode::Internal, format!("assembling a stream: {e}")))?;
    Ok(Reply {
        status: reply.status,
        body: bytes.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assemble(style: Style, stream: &str) -> (Value, Vec<String>) {
        let mut p = SseParser::new();
        let mut a = Assembler::new(style);
        let mut texts = Vec::new();
        let mut on_text = |t: &str| texts.push(t.to_string());
        for piece in stream.as_bytes().chunks(7) {
            p.feed(piece, &mut |n, d| a.event(n, d, &mut on_text))
                .expect("feed");
        }
        p.finish(&mut |n, d| a.event(n, d, &mut on_text))
            .expect("finish");
        (a.finish(), texts)
    }

    fn sse(events: &[Value]) -> String {
        let mut s: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        s.push_str("data: [DONE]\n\n");
        s
    }

    #[test]
    fn openai_text_deltas_and_usage_assemble_into_a_chat_completion() {
        let stream = sse(&[
            json!({"id":"c1","model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}),
            json!({"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"}}]}),
            json!({"id":"c1","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}),
            json!({"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}),
            json!({"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}),
        ]);
        let (answer, texts) = assemble(Style::OpenAi, &stream);
        assert_eq!(texts, ["Hel", "lo"]);
        assert_eq!(
            answer,
            json!({"id":"c1","model":"gpt-x","object":"chat.completion",
                   "choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],
                   "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})
        );
    }

    #[test]
    fn openai_tool_call_pieces_are_gathered_by_index() {
        let stream = sse(&[
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[
                {"index":0,"id":"call_a","type":"function","function":{"name":"add","arguments":""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[
                {"index":1,"id":"call_b","type":"function","function":{"name":"echo","arguments":"{\"te"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"2,\"b\":3}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"xt\":\"hi\"}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        ]);
        let (answer, texts) = assemble(Style::OpenAi, &stream);
        assert!(texts.is_empty());
        assert_eq!(
            answer["choices"][0]["message"],
            json!({"role":"assistant","content":null,"tool_calls":[
                {"id":"call_a","type":"function","function":{"name":"add","arguments":"{\"a\":2,\"b\":3}"}},
                {"id":"call_b","type":"function","function":{"name":"echo","arguments":"{\"text\":\"hi\"}"}}]})
        );
        assert_eq!(answer["choices"][0]["finish_reason"], "tool_calls");
        assert!(answer.get("usage").is_none());
    }

    #[test]
    fn openai_tool_calls_without_an_index_are_told_apart_by_id() {
        let stream = sse(&[
            json!({"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":"{"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]}),
        ]);
        let (answer, _) = assemble(Style::OpenAi, &stream);
        let calls = &answer["choices"][0]["message"]["tool_calls"];
        assert_eq!(calls[0]["function"], json!({"name":"x","arguments":"{}"}));
        assert_eq!(calls[1]["id"], "b");
        assert_eq!(calls[1]["function"], json!({"name":"y","arguments":"{}"}));
    }

    #[test]
    fn an_error_chunk_fails_the_stream_with_the_providers_words() {
        let mut a = Assembler::new(Style::OpenAi);
        let e = a
            .event(
                "message",
                r#"{"error":{"message":"quota exceeded","type":"insufficient_quota"}}"#,
                &mut |_| {},
            )
            .expect_err("an error chunk");
        assert_eq!(e.code, ErrorCode::ProviderError);
        assert!(e.message.contains("quota exceeded"), "{}", e.message);
        let mut a = Assembler::new(Style::Anthropic);
        let e = a
            .event(
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                &mut |_| {},
            )
            .expect_err("an error event");
        assert!(e.message.contains("overloaded_error") && e.message.contains("Overloaded"));
    }

    /// One event of `n` pieces of tool call 0, each one byte of arguments.
    fn many_pieces(n: usize) -> String {
        let piece = r#"{"index":0,"function":{"arguments":"x"}}"#;
        let pieces = vec![piece; n].join(",");
        format!(r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{pieces}]}}}}]}}"#)
    }

    #[test]
    fn a_deadline_passing_while_one_event_is_gathered_ends_it_there() {
        let data = many_pieces(30_000);
        let mut a = Assembler::new(Style::OpenAi);
        // Parsing the event alone takes longer than this (the parse itself is
        // one step; the deadline is looked at while its pieces are gathered).
        let deadline = Instant::now() + Duration::from_millis(5);
        a.watch(Some(deadline), None);
        let e = a
            .event("message", &data, &mut |_| {})
            .expect_err("timed out");
        assert_eq!(e.code, ErrorCode::Timeout, "{}", e.message);
        // Unwatched, the same event is gathered whole.
        let mut a = Assembler::new(Style::OpenAi);
        a.event("message", &data, &mut |_| {}).expect("gathered");
        let answer = a.finish();
        let args = &answer["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"];
        assert_eq!(args.as_str().map(str::len), Some(30_000));
    }

    #[test]
    fn a_cancel_is_seen_while_one_event_is_gathered() {
        let data = many_pieces(1_000);
        let token = CancelToken::new();
        let mut a = Assembler::new(Style::OpenAi);
        a.watch(None, Some(&token));
        a.event("message", &data, &mut |_| {})
            .expect("not cancelled");
        token.cancel();
        let e = a
            .event("message", &data, &mut |_| {})
            .expect_err("cancelled");
        assert_eq!(e.code, ErrorCode::Cancelled);
    }

    #[test]
    fn empty_pieces_and_new_keys_count_against_the_answer_cap() {
        // Each new key of the delta holds nothing, but still counts.
        let mut a = Assembler::new(Style::OpenAi);
        let per_event = 100;
        let long = "k".repeat(10_000);
        let events = RESPONSE_BODY_BYTES / (per_event * (ENTRY_BYTES + long.len())) + 1;
        let mut failed = None;
        for e in 0..events {
            let delta: Map<String, Value> = (0..per_event)
                .map(|k| (format!("{long}{e}_{k}"), Value::String(String::new())))
                .collect();
            let data = json!({"choices":[{"index":0,"delta": delta}]}).to_string();
            if let Err(err) = a.event("message", &data, &mut |_| {}) {
                failed = Some(err);
                break;
            }
        }
        let e = failed.expect("refused at the cap");
        assert_eq!(e.code, ErrorCode::ProviderError);
        assert!(e.message.contains("64 MiB"), "{}", e.message);
    }

    fn anthropic_sse(events: &[Value]) -> String {
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
            .collect()
    }

    #[test]
    fn anthropic_blocks_deltas_and_message_delta_assemble_into_a_message() {
        let stream = anthropic_sse(&[
            json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
                   "content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"ping"}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"add."}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"add","input":{}}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 2, \"b\""}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":": 3}"}}),
            json!({"type":"content_block_stop","index":1}),
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":25}}),
            json!({"type":"message_stop"}),
        ]);
        let (answer, texts) = assemble(Style::Anthropic, &stream);
        assert_eq!(texts, ["Let me ", "add."]);
        assert_eq!(
            answer,
            json!({"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
                   "content":[{"type":"text","text":"Let me add."},
                              {"type":"tool_use","id":"toolu_1","name":"add","input":{"a":2,"b":3}}],
                   "stop_reason":"tool_use","stop_sequence":null,
                   "usage":{"input_tokens":10,"output_tokens":25}})
        );
    }

    #[test]
    fn anthropic_thinking_blocks_keep_their_text_and_signature() {
        let stream = anthropic_sse(&[
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{broken"}}),
            json!({"type":"message_stop"}),
        ]);
        let (answer, texts) = assemble(Style::Anthropic, &stream);
        assert!(texts.is_empty());
        assert_eq!(
            answer["content"],
            json!([{"type":"thinking","thinking":"hm","signature":"sig"},
                   {"type":"tool_use","id":"t","name":"n","input":{}}])
        );
        assert_eq!(answer["stop_reason"], Value::Null);
    }
}
