//! A streamed answer of any style re-told as OpenAI `chat.completion.chunk`
//! server-sent events (what `tn_translate_stream` emits).
//!
//! The rules an OpenAI client relies on: one stable `id` for the whole
//! stream; the first chunk carries `role: "assistant"`; a tool call's first
//! piece carries its `index`, `id`, `type` and `function.name` (with empty
//! `arguments`), later pieces only `index` and argument fragments; calls
//! are numbered 0, 1, … in the order they start, whatever the upstream
//! numbering; `finish_reason` is null on every chunk but the last choice
//! chunk; then one chunk with `choices: []` and the `usage`
//! (`prompt_tokens_details.cached_tokens` and
//! `completion_tokens_details.reasoning_tokens` when counted); then
//! `data: [DONE]`. Thinking goes out as `reasoning_content`.
//!
//! [`Upstream`] reads one style's events (the same events
//! [`super::stream`] assembles) and drives a [`ChunkWriter`].

use super::{gemini, Style};
use crate::error::{Error, ErrorCode};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// Token counts for the usage chunk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
    pub total: Option<u64>,
    pub cached: u64,
    pub reasoning: u64,
}

/// Writes the chunks of one stream through `out` (which gets whole SSE
/// events, `data: …\n\n`; it answers `false` to stop the stream).
pub struct ChunkWriter<'a> {
    id: String,
    created: u64,
    model: String,
    out: &'a mut dyn FnMut(&str) -> bool,
    started: bool,
    tools: usize,
    finish: Option<&'static str>,
    usage: Usage,
    /// How many events were written.
    pub written: usize,
}

fn stopped() -> Error {
    Error::new(
        ErrorCode::Cancelled,
        "the host's chunk callback stopped the stream",
    )
}

impl<'a> ChunkWriter<'a> {
    pub fn new(id: String, model: &str, out: &'a mut dyn FnMut(&str) -> bool) -> Self {
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        ChunkWriter {
            id,
            created,
            model: model.to_string(),
            out,
            started: false,
            tools: 0,
            finish: None,
            usage: Usage::default(),
            written: 0,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    fn write(&mut self, data: &str) -> Result<(), Error> {
        self.written += 1;
        if (self.out)(&super::sse::event(data)) {
            Ok(())
        } else {
            Err(stopped())
        }
    }

    fn chunk(&mut self, choices: Value, usage: Option<Value>) -> Result<(), Error> {
        let mut c = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        });
        if let Some(u) = usage {
            c["usage"] = u;
        }
        self.write(&c.to_string())
    }

    fn delta(&mut self, delta: Value) -> Result<(), Error> {
        self.begin()?;
        self.chunk(
            json!([{"index": 0, "delta": delta, "finish_reason": null}]),
            None,
        )
    }

    /// The role chunk, once.
    pub fn begin(&mut self) -> Result<(), Error> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        self.chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]),
            None,
        )
    }

    pub fn text(&mut self, t: &str) -> Result<(), Error> {
        if t.is_empty() {
            return Ok(());
        }
        self.delta(json!({ "content": t }))
    }

    pub fn reasoning(&mut self, t: &str) -> Result<(), Error> {
        if t.is_empty() {
            return Ok(());
        }
        self.delta(json!({ "reasoning_content": t }))
    }

    /// Starts a tool call; gives its index. `extra` goes on the call's
    /// first piece (a Gemini thought signature as `extra_content`).
    pub fn tool_start(
        &mut self,
        id: &str,
        name: &str,
        extra: Option<(&str, Value)>,
    ) -> Result<usize, Error> {
        let index = self.tools;
        self.tools += 1;
        let mut call = json!({"index": index, "id": id, "type": "function",
            "function": {"name": name, "arguments": ""}});
        if let Some((k, v)) = extra {
            call[k] = v;
        }
        self.delta(json!({ "tool_calls": [call] }))?;
        Ok(index)
    }

    pub fn tool_args(&mut self, index: usize, fragment: &str) -> Result<(), Error> {
        if fragment.is_empty() {
            return Ok(());
        }
        self.delta(json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}))
    }

    /// Records the finish reason (the last one given wins).
    pub fn finish(&mut self, reason: &'static str) {
        self.finish = Some(reason);
    }

    pub fn usage(&mut self, u: Usage) {
        self.usage = u;
    }

    /// The last choice chunk (`tool_calls` whenever a call was made), the
    /// usage chunk and `[DONE]`; gives the finish reason.
    pub fn end(&mut self) -> Result<&'static str, Error> {
        self.begin()?;
        let finish = if self.tools > 0 {
            "tool_calls"
        } else {
            self.finish.unwrap_or("stop")
        };
        self.chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
            None,
        )?;
        let u = self.usage;
        let mut usage = json!({
            "prompt_tokens": u.prompt,
            "completion_tokens": u.completion,
            "total_tokens": u.total.unwrap_or(u.prompt.saturating_add(u.completion)),
        });
        if u.cached > 0 {
            usage["prompt_tokens_details"] = json!({ "cached_tokens": u.cached });
        }
        if u.reasoning > 0 {
            usage["completion_tokens_details"] = json!({ "reasoning_tokens": u.reasoning });
        }
        self.chunk(json!([]), Some(usage))?;
        self.write("[DONE]")?;
        Ok(finish)
    }
}

fn n(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_u64).unwrap_or(0)
}

fn s(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or("")
}

fn upstream_error(detail: &Value) -> Error {
    let message = detail
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| detail.to_string(), str::to_string);
    Error::new(
        ErrorCode::ProviderError,
        format!("the provider's stream reported an error: {message}"),
    )
}

/// One upstream style's stream, read event by event.
#[derive(Debug)]
pub struct Upstream {
    style: Style,
    /// Upstream tool numbering (OpenAI `index`, Anthropic block `index`,
    /// Responses `output_index`) → ours.
    tools: HashMap<u64, usize>,
    /// Anthropic: the kind of each open block.
    blocks: HashMap<u64, String>,
    usage: Usage,
    /// Gemini calls seen (for synthetic ids).
    calls: usize,
    pub done: bool,
}

impl Upstream {
    pub fn new(style: Style) -> Self {
        Upstream {
            style,
            tools: HashMap::new(),
            blocks: HashMap::new(),
            usage: Usage::default(),
            calls: 0,
            done: false,
        }
    }

    /// Takes one upstream event.
    pub fn event(&mut self, name: &str, data: &str, w: &mut ChunkWriter) -> Result<(), Error> {
        if self.done {
            return Ok(());
        }
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let ev: Value = match serde_json::from_str(data) {
            Ok(v @ Value::Object(_)) => v,
            _ if self.style == Style::Gemini => {
                return Err(Error::new(
                    ErrorCode::ProviderError,
                    "the provider's stream sent an event that is not a JSON object (a stream cut mid-event?)",
                ))
            }
            _ => return Ok(()),
        };
        match self.style {
            Style::OpenAi => self.openai(&ev, w),
            Style::Anthropic => self.anthropic(name, &ev, w),
            Style::Gemini => self.gemini(&ev, w),
            Style::Responses => self.responses(name, &ev, w),
        }
    }

    fn openai(&mut self, ev: &Value, w: &mut ChunkWriter) -> Result<(), Error> {
        if let Some(e) = ev.get("error").filter(|e| !e.is_null()) {
            return Err(upstream_error(e));
        }
        if let Some(u) = ev.get("usage").filter(|u| u.is_object()) {
            w.usage(Usage {
                prompt: n(u.get("prompt_tokens")),
                completion: n(u.get("completion_tokens")),
                total: u.get("total_tokens").and_then(Value::as_u64),
                cached: n(u.pointer("/prompt_tokens_details/cached_tokens")),
                reasoning: n(u.pointer("/completion_tokens_details/reasoning_tokens")),
            });
        }
        let Some(choice) = ev.pointer("/choices/0") else {
            return Ok(());
        };
        if let Some(d) = choice.get("delta") {
            if let Some(t) = d.get("reasoning_content").and_then(Value::as_str) {
                w.reasoning(t)?;
            }
            if let Some(t) = d.get("content").and_then(Value::as_str) {
                w.text(t)?;
            }
            for (k, piece) in d
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let up = piece
                    .get("index")
                    .and_then(Value::as_u64)
                    .unwrap_or(k as u64);
                let f = piece.get("function");
                let at = match self.tools.get(&up) {
                    Some(&at) => at,
                    None => {
                        let at = w.tool_start(
                            s(piece.get("id")),
                            s(f.and_then(|f| f.get("name"))),
                            None,
                        )?;
                        self.tools.insert(up, at);
                        at
                    }
                };
                w.tool_args(at, s(f.and_then(|f| f.get("arguments"))))?;
            }
        }
        if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
            w.finish(match r {
                "length" => "length",
                "content_filter" => "content_filter",
                "tool_calls" | "function_call" => "tool_calls",
                _ => "stop",
            });
        }
        Ok(())
    }

    fn anthropic(&mut self, name: &str, ev: &Value, w: &mut ChunkWriter) -> Result<(), Error> {
        let kind = ev.get("type").and_then(Value::as_str).unwrap_or(name);
        let index = n(ev.get("index"));
        match kind {
            "message_start" => {
                w.begin()?;
                if let Some(u) = ev.pointer("/message/usage") {
                    let read = n(u.get("cache_read_input_tokens"));
                    self.usage.prompt = n(u.get("input_tokens"))
                        .saturating_add(read)
                        .saturating_add(n(u.get("cache_creation_input_tokens")));
                    self.usage.cached = read;
                    self.usage.completion = n(u.get("output_tokens"));
                    w.usage(self.usage);
                }
            }
            "content_block_start" => {
                let block = ev.get("content_block").cloned().unwrap_or(json!({}));
                let t = s(block.get("type")).to_string();
                if t == "tool_use" {
                    let at = w.tool_start(s(block.get("id")), s(block.get("name")), None)?;
                    self.tools.insert(index, at);
                } else if t == "text" {
                    w.text(s(block.get("text")))?;
                }
                self.blocks.insert(index, t);
            }
            "content_block_delta" => {
                let d = ev.get("delta").cloned().unwrap_or(json!({}));
                match s(d.get("type")) {
                    "text_delta" => w.text(s(d.get("text")))?,
                    "thinking_delta" => w.reasoning(s(d.get("thinking")))?,
                    "input_json_delta" => {
                        if let Some(&at) = self.tools.get(&index) {
                            w.tool_args(at, s(d.get("partial_json")))?;
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = ev.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    w.finish(match r {
                        "max_tokens" => "length",
                        "tool_use" => "tool_calls",
                        "refusal" => "content_filter",
                        _ => "stop",
                    });
                }
                if let Some(u) = ev.get("usage") {
                    if let Some(o) = u.get("output_tokens").and_then(Value::as_u64) {
                        self.usage.completion = o;
                    }
                    w.usage(self.usage);
                }
            }
            "message_stop" => self.done = true,
            "error" => return Err(upstream_error(ev.get("error").unwrap_or(ev))),
            _ => {}
        }
        Ok(())
    }

    fn gemini(&mut self, ev: &Value, w: &mut ChunkWriter) -> Result<(), Error> {
        if let Some(e) = ev.get("error").filter(|e| !e.is_null()) {
            return Err(upstream_error(e));
        }
        if ev.get("usageMetadata").is_some() {
            let u = gemini::usage(ev);
            w.usage(Usage {
                prompt: u.prompt,
                completion: u.completion,
                total: Some(u.total),
                cached: u.cached,
                reasoning: u.thoughts,
            });
        }
        let content = gemini::model_content(ev);
        for part in gemini::parts_of(&content) {
            if let Some(t) = part.get("text").and_then(Value::as_str) {
                if part.get("thought").and_then(Value::as_bool) == Some(true) {
                    w.reasoning(t)?;
                } else {
                    w.text(t)?;
                }
            }
            if let Some(fc) = part.get("functionCall") {
                let id = fc
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|i| !i.is_empty())
                    .map_or_else(
                        || format!("{}{}", gemini::SYNTHETIC_ID_PREFIX, self.calls),
                        str::to_string,
                    );
                self.calls += 1;
                let extra = part.get("thoughtSignature").map(|sig| {
                    (
                        "extra_content",
                        json!({"google": {"thought_signature": sig}}),
                    )
                });
                let at = w.tool_start(&id, s(fc.get("name")), extra)?;
                let args = match fc.get("args") {
                    Some(o @ Value::Object(_)) => o.to_string(),
                    _ => "{}".to_string(),
                };
                w.tool_args(at, &args)?;
            }
        }
        if ev.pointer("/candidates/0/finishReason").is_some() {
            w.finish(gemini::finish_reason(ev, false));
        }
        Ok(())
    }

    fn responses(&mut self, name: &str, ev: &Value, w: &mut ChunkWriter) -> Result<(), Error> {
        let kind = ev.get("type").and_then(Value::as_str).unwrap_or(name);
        let index = n(ev.get("output_index"));
        match kind {
            "response.created" => w.begin()?,
            "response.output_item.added" => {
                let item = ev.get("item").cloned().unwrap_or(json!({}));
                if s(item.get("type")) == "function_call" {
                    let at = w.tool_start(s(item.get("call_id")), s(item.get("name")), None)?;
                    self.tools.insert(index, at);
                    w.tool_args(at, s(item.get("arguments")))?;
                }
            }
            "response.output_text.delta" => w.text(s(ev.get("delta")))?,
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                w.reasoning(s(ev.get("delta")))?;
            }
            "response.function_call_arguments.delta" => {
                if let Some(&at) = self.tools.get(&index) {
                    w.tool_args(at, s(ev.get("delta")))?;
                }
            }
            "response.completed" | "response.incomplete" => {
                let r = ev.get("response").cloned().unwrap_or(json!({}));
                let u = super::responses::usage(&r);
                w.usage(Usage {
                    prompt: u.prompt,
                    completion: u.completion,
                    total: Some(u.total),
                    cached: u.cached,
                    reasoning: u.reasoning,
                });
                w.finish(super::responses::finish_reason(&r, false));
                self.done = true;
            }
            "response.failed" => {
                let detail = ev
                    .pointer("/response/error")
                    .filter(|e| !e.is_null())
                    .unwrap_or(ev);
                return Err(upstream_error(detail));
            }
            "error" => return Err(upstream_error(ev.get("error").unwrap_or(ev))),
            _ => {}
        }
        Ok(())
    }
}

/// Writes a whole (non-streamed) answer, already read into OpenAI shape
/// (`{text, toolCalls, finishReason, usage}` as translate gives it), as
/// chunks: the text, each call whole, the finish and the usage.
pub fn write_whole(answer: &Value, w: &mut ChunkWriter) -> Result<&'static str, Error> {
    w.begin()?;
    w.text(s(answer.get("text")))?;
    for c in answer
        .get("toolCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let extra = c.get("extra_content").map(|x| ("extra_content", x.clone()));
        let at = w.tool_start(s(c.get("id")), s(c.get("name")), extra)?;
        w.tool_args(at, s(c.get("arguments")))?;
    }
    w.finish(match s(answer.get("finishReason")) {
        "length" => "length",
        "content_filter" => "content_filter",
        "tool_calls" => "tool_calls",
        _ => "stop",
    });
    let u = answer
        .get("usage")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    w.usage(Usage {
        prompt: n(u.get("promptTokens")),
        completion: n(u.get("completionTokens")),
        total: u.get("totalTokens").and_then(Value::as_u64),
        cached: n(u.get("cachedTokens")),
        reasoning: n(u.get("reasoningTokens")),
    });
    w.end()
}
