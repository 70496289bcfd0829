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
//! [`ChunkWriter`] is a [`Pieces`] sink: streaming translate drives a
//! [`super::stream::Assembler`] with it, so the dialect's `StreamState`
//! (the one reader of its events, the same that assembles the loop's
//! streamed turns) hands it each piece as it arrives. A relayed stream is
//! therefore bounded as the loop's is: the answer it gathers holds at most
//! [`crate::limits::RESPONSE_BODY_BYTES`] and at most
//! [`super::gather::MAX_TOOL_CALLS`] tool calls, past either the stream
//! fails with the cap's `provider_error` (no `[DONE]` is written).
//! [`write_whole`] re-tells a whole (non-streamed) answer the same way.

use super::gather::{Pieces, Usage};
use crate::error::{Error, ErrorCode};
use serde_json::{json, Map, Value};

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

/// The pieces of a stream, written as chunks as they come (the role chunk
/// first, once; empty text and argument pieces write nothing).
impl Pieces for ChunkWriter<'_> {
    /// The role chunk, once.
    fn begin(&mut self) -> Result<(), Error> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        self.chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]),
            None,
        )
    }

    fn text(&mut self, t: &str) -> Result<(), Error> {
        if t.is_empty() {
            return Ok(());
        }
        self.delta(json!({ "content": t }))
    }

    fn reasoning(&mut self, t: &str) -> Result<(), Error> {
        if t.is_empty() {
            return Ok(());
        }
        self.delta(json!({ "reasoning_content": t }))
    }

    /// Starts a tool call; gives its index. `extra` goes on the call's
    /// first piece (a Gemini thought signature as `extra_content`).
    fn tool_start(
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

    fn tool_args(&mut self, index: usize, fragment: &str) -> Result<(), Error> {
        if fragment.is_empty() {
            return Ok(());
        }
        self.delta(json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}))
    }

    /// Records the finish reason (the last one given wins).
    fn finish(&mut self, reason: &'static str) {
        self.finish = Some(reason);
    }

    fn usage(&mut self, u: Usage) {
        self.usage = u;
    }
}

fn n(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_u64).unwrap_or(0)
}

fn s(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or("")
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
