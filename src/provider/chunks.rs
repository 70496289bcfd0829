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
use crate::json::write_escaped;
use serde_json::{json, Map, Value};

/// Writes the chunks of one stream through `out` (which gets whole SSE
/// events, `data: …\n\n`; it answers `false` to stop the stream).
///
/// Each event is written straight into one buffer the writer keeps, the
/// part every chunk shares (`data: {"id":…,"object":…,"created":…,
/// "model":…,"choices":`) encoded once: byte for byte what encoding the
/// chunk as a `serde_json::Value` gives, without building one per piece.
pub struct ChunkWriter<'a> {
    id: String,
    /// `data: {"id":…,"object":"chat.completion.chunk","created":…,"model":…,"choices":`
    head: Vec<u8>,
    /// The event being written.
    buf: Vec<u8>,
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
        let mut head = Vec::with_capacity(96 + id.len() + model.len());
        head.extend_from_slice(b"data: {\"id\":");
        write_escaped(&mut head, &id);
        head.extend_from_slice(b",\"object\":\"chat.completion.chunk\",\"created\":");
        head.extend_from_slice(created.to_string().as_bytes());
        head.extend_from_slice(b",\"model\":");
        write_escaped(&mut head, model);
        head.extend_from_slice(b",\"choices\":");
        ChunkWriter {
            id,
            head,
            buf: Vec::with_capacity(256),
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

    /// Sends the event in `buf`.
    fn send(&mut self) -> Result<(), Error> {
        self.written += 1;
        let event = std::str::from_utf8(&self.buf)
            .map_err(|e| Error::new(ErrorCode::Internal, format!("a chunk is not UTF-8: {e}")))?;
        if (self.out)(event) {
            Ok(())
        } else {
            Err(stopped())
        }
    }

    /// One chunk: the shared head, `choices` (and `usage`) as `fill`
    /// writes them, the end of the event.
    fn chunk_with(&mut self, fill: impl FnOnce(&mut Vec<u8>)) -> Result<(), Error> {
        self.buf.clear();
        self.buf.extend_from_slice(&self.head);
        fill(&mut self.buf);
        self.buf.extend_from_slice(b"}\n\n");
        self.send()
    }

    fn chunk(&mut self, choices: Value, usage: Option<Value>) -> Result<(), Error> {
        self.chunk_with(|b| {
            b.extend_from_slice(choices.to_string().as_bytes());
            if let Some(u) = usage {
                b.extend_from_slice(b",\"usage\":");
                b.extend_from_slice(u.to_string().as_bytes());
            }
        })
    }

    /// A choice chunk whose delta `fill` writes (`{…}`).
    fn delta_with(&mut self, fill: impl FnOnce(&mut Vec<u8>)) -> Result<(), Error> {
        self.begin()?;
        self.chunk_with(|b| {
            b.extend_from_slice(b"[{\"index\":0,\"delta\":");
            fill(b);
            b.extend_from_slice(b",\"finish_reason\":null}]");
        })
    }

    /// A choice chunk of one string field: `{"<key>":"<text>"}`.
    fn delta_text(&mut self, key: &str, text: &str) -> Result<(), Error> {
        self.delta_with(|b| {
            b.extend_from_slice(b"{\"");
            b.extend_from_slice(key.as_bytes());
            b.extend_from_slice(b"\":");
            write_escaped(b, text);
            b.push(b'}');
        })
    }

    fn delta(&mut self, delta: Value) -> Result<(), Error> {
        self.delta_with(|b| b.extend_from_slice(delta.to_string().as_bytes()))
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
        self.buf.clear();
        self.buf.extend_from_slice(b"data: [DONE]\n\n");
        self.send()?;
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
        self.chunk_with(|b| {
            b.extend_from_slice(
                br#"[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]"#,
            );
        })
    }

    fn text(&mut self, t: &str) -> Result<(), Error> {
        if t.is_empty() {
            return Ok(());
        }
        self.delta_text("content", t)
    }

    fn reasoning(&mut self, t: &str) -> Result<(), Error> {
        if t.is_empty() {
            return Ok(());
        }
        self.delta_text("reasoning_content", t)
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
        self.delta_with(|b| {
            b.extend_from_slice(b"{\"tool_calls\":[{\"index\":");
            b.extend_from_slice(index.to_string().as_bytes());
            b.extend_from_slice(b",\"function\":{\"arguments\":");
            write_escaped(b, fragment);
            b.extend_from_slice(b"}}]}");
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The event a chunk of `choices` (and `usage`) is, as a
    /// `serde_json::Value` encodes it.
    fn expected(
        id: &str,
        created: u64,
        model: &str,
        choices: Value,
        usage: Option<Value>,
    ) -> String {
        let mut c = json!({"id": id, "object": "chat.completion.chunk", "created": created,
                           "model": model, "choices": choices});
        if let Some(u) = usage {
            c["usage"] = u;
        }
        format!("data: {c}\n\n")
    }

    #[test]
    fn every_chunk_is_what_encoding_it_as_a_value_gives() {
        let id = "chatcmpl-\"q\"\\\u{1}é";
        let model = "m\n😀";
        let text = "a \"quoted\" \\ line\nwith\ttabs, \u{7f}, \u{2028} and 😀 \u{0}";
        let mut events: Vec<String> = Vec::new();
        let mut sink = |e: &str| {
            events.push(e.to_string());
            true
        };
        let mut w = ChunkWriter::new(id.to_string(), model, &mut sink);
        let created = {
            let head = String::from_utf8(w.head.clone()).expect("utf-8");
            let at = head.find("\"created\":").expect("created") + 10;
            head[at..]
                .split(',')
                .next()
                .expect("n")
                .parse::<u64>()
                .expect("a number")
        };
        w.text(text).expect("text");
        w.reasoning(text).expect("reasoning");
        let at = w
            .tool_start(
                "call_1",
                "look\"up",
                Some(("extra_content", json!({"k": 1}))),
            )
            .expect("start");
        w.tool_args(at, "{\"q\": \"x\\ny\"}").expect("args");
        w.usage(Usage {
            prompt: 3,
            completion: 4,
            total: None,
            cached: 1,
            reasoning: 2,
        });
        assert_eq!(w.end().expect("end"), "tool_calls");
        let delta = |d: Value| json!([{"index": 0, "delta": d, "finish_reason": null}]);
        let want = vec![
            expected(
                id,
                created,
                model,
                delta(json!({"role": "assistant", "content": ""})),
                None,
            ),
            expected(id, created, model, delta(json!({"content": text})), None),
            expected(
                id,
                created,
                model,
                delta(json!({"reasoning_content": text})),
                None,
            ),
            expected(
                id,
                created,
                model,
                delta(
                    json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "look\"up", "arguments": ""}, "extra_content": {"k": 1}}]}),
                ),
                None,
            ),
            expected(
                id,
                created,
                model,
                delta(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"q\": \"x\\ny\"}"}}]}),
                ),
                None,
            ),
            expected(
                id,
                created,
                model,
                json!([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]),
                None,
            ),
            expected(
                id,
                created,
                model,
                json!([]),
                Some(
                    json!({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7,
                    "prompt_tokens_details": {"cached_tokens": 1},
                    "completion_tokens_details": {"reasoning_tokens": 2}}),
                ),
            ),
            "data: [DONE]\n\n".to_string(),
        ];
        drop(w);
        assert_eq!(events, want);
    }
}
