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
//! Each dialect's events are read by its own `StreamState` in its dialect
//! file (`openai.rs`, `anthropic.rs`, `gemini.rs`, `responses.rs`), built
//! from [`super::gather`]: the one reader of those events. Each event is
//! parsed once; the same read gathers the answer and hands its pieces
//! (text, thinking, tool-call starts and argument fragments, the finish
//! reason, the usage) to a [`Pieces`] sink as they arrive — the loop's
//! [`OnText`] (its text callback) or streaming translate's
//! [`super::chunks::ChunkWriter`] (the relay as OpenAI chunks). The
//! [`Assembler`] here picks the style's state, looks at the deadline and
//! the token before each event, and stops at the style's last event.
//!
//! A provider that answers a streamed request with a plain JSON body is
//! read as that body.
//!
//! Bounds: the assembled answer holds at most [`RESPONSE_BODY_BYTES`] (the
//! cap of a non-streamed body; text, tool arguments, thinking and every
//! other piece counted together, each new key or call at least
//! [`ENTRY_BYTES`]) and at most [`MAX_TOOL_CALLS`] tool calls; past either
//! the call fails with a `provider_error` naming the cap (a relayed stream
//! too, as it is read by the same assembler). Pieces are found
//! by index in constant time, and the deadline and the cancel token are
//! checked while one event's pieces are gathered.

use super::gather::Budget;
pub use super::gather::{too_many_calls, OnText, Pieces, ENTRY_BYTES, MAX_TOOL_CALLS};
use super::http::{self as client, Call, FailedAttempt, Reply, Verdict};
use super::sse::{too_large, SseParser};
use super::{anthropic, gemini, openai, responses, Style};
use crate::cancel::CancelToken;
use crate::error::{Error, ErrorCode};
use crate::limits::RESPONSE_BODY_BYTES;
use serde_json::Value;
use std::time::{Duration, Instant};

/// One dialect's stream gathered so far.
#[derive(Debug)]
enum State {
    OpenAi(openai::StreamState),
    Anthropic(anthropic::StreamState),
    Gemini(gemini::StreamState),
    Responses(responses::StreamState),
}

/// Gathers the events of one streamed answer into the answer the provider
/// would have sent whole.
#[derive(Debug)]
pub struct Assembler {
    state: State,
    budget: Budget,
    /// `[DONE]` or `message_stop` was seen: later events are ignored.
    done: bool,
    /// Any event at all was taken: a body without one is no stream.
    seen: bool,
}

impl Assembler {
    pub fn new(style: Style) -> Self {
        let state = match style {
            Style::OpenAi => State::OpenAi(Default::default()),
            Style::Anthropic => State::Anthropic(Default::default()),
            Style::Gemini => State::Gemini(Default::default()),
            Style::Responses => State::Responses(Default::default()),
        };
        Assembler {
            state,
            budget: Budget::default(),
            done: false,
            seen: false,
        }
    }

    /// Makes [`Assembler::event`] fail with a `timeout` error once
    /// `deadline` has passed and with a `cancelled` error once `cancel` is
    /// cancelled, checked while an event's pieces are gathered.
    pub fn watch(&mut self, deadline: Option<Instant>, cancel: Option<&CancelToken>) {
        self.budget.watch(deadline, cancel);
    }

    /// Takes one event; `sink` gets what it says as it arrives (the loop's
    /// [`OnText`] its text, streaming translate's
    /// [`super::chunks::ChunkWriter`] every piece).
    pub fn event(&mut self, name: &str, data: &str, sink: &mut dyn Pieces) -> Result<(), Error> {
        self.seen = true;
        if self.done {
            return Ok(());
        }
        self.budget.check()?;
        let budget = &mut self.budget;
        let last = match &mut self.state {
            State::OpenAi(s) => s.event(data, budget, sink)?,
            State::Anthropic(s) => s.event(name, data, budget, sink)?,
            State::Gemini(s) => s.event(data, budget, sink)?,
            State::Responses(s) => s.event(name, data, budget, sink)?,
        };
        if last {
            self.done = true;
        }
        Ok(())
    }

    /// The answer as the provider would have sent it whole.
    pub fn finish(self) -> Value {
        match self.state {
            State::OpenAi(s) => s.finish(),
            State::Anthropic(s) => s.finish(),
            State::Gemini(s) => s.finish(),
            State::Responses(s) => s.finish(),
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
        Style::OpenAi => openai::whole_text(answer),
        Style::Anthropic => anthropic::whole_text(answer),
        Style::Gemini => gemini::text_of(&gemini::model_content(answer)),
        Style::Responses => responses::text_of(responses::output(answer)),
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
                    assembler.event(name, data, &mut OnText(&mut *on_text))
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
                .finish(&mut |name, data| assembler.event(name, data, &mut OnText(&mut *on_text)))
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
    use serde_json::Map;

    fn assemble(style: Style, stream: &str) -> (Value, Vec<String>) {
        let mut p = SseParser::new();
        let mut a = Assembler::new(style);
        let mut texts = Vec::new();
        let mut on_text = |t: &str| texts.push(t.to_string());
        let mut sink = OnText(&mut on_text);
        for piece in stream.as_bytes().chunks(7) {
            p.feed(piece, &mut |n, d| a.event(n, d, &mut sink))
                .expect("feed");
        }
        p.finish(&mut |n, d| a.event(n, d, &mut sink))
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
                &mut OnText(&mut |_| {}),
            )
            .expect_err("an error chunk");
        assert_eq!(e.code, ErrorCode::ProviderError);
        assert!(e.message.contains("quota exceeded"), "{}", e.message);
        let mut a = Assembler::new(Style::Anthropic);
        let e = a
            .event(
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                &mut OnText(&mut |_| {}),
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
            .event("message", &data, &mut OnText(&mut |_| {}))
            .expect_err("timed out");
        assert_eq!(e.code, ErrorCode::Timeout, "{}", e.message);
        // Unwatched, the same event is gathered whole.
        let mut a = Assembler::new(Style::OpenAi);
        a.event("message", &data, &mut OnText(&mut |_| {}))
            .expect("gathered");
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
        a.event("message", &data, &mut OnText(&mut |_| {}))
            .expect("not cancelled");
        token.cancel();
        let e = a
            .event("message", &data, &mut OnText(&mut |_| {}))
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
            if let Err(err) = a.event("message", &data, &mut OnText(&mut |_| {})) {
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

    /// Writes down each piece as a line.
    #[derive(Default)]
    struct Told(Vec<String>, usize);

    impl Pieces for Told {
        fn begin(&mut self) -> Result<(), Error> {
            self.0.push("begin".into());
            Ok(())
        }
        fn text(&mut self, t: &str) -> Result<(), Error> {
            self.0.push(format!("text {t}"));
            Ok(())
        }
        fn reasoning(&mut self, t: &str) -> Result<(), Error> {
            self.0.push(format!("reasoning {t}"));
            Ok(())
        }
        fn tool_start(
            &mut self,
            id: &str,
            name: &str,
            extra: Option<(&str, Value)>,
        ) -> Result<usize, Error> {
            let extra = extra.map_or(String::new(), |(k, v)| format!(" {k}={v}"));
            self.0.push(format!("call {} {id} {name}{extra}", self.1));
            self.1 += 1;
            Ok(self.1 - 1)
        }
        fn tool_args(&mut self, at: usize, f: &str) -> Result<(), Error> {
            self.0.push(format!("args {at} {f}"));
            Ok(())
        }
        fn finish(&mut self, r: &'static str) {
            self.0.push(format!("finish {r}"));
        }
        fn usage(&mut self, u: crate::provider::gather::Usage) {
            let total = u.total.map_or("-".into(), |t| t.to_string());
            self.0.push(format!(
                "usage {} {} {total} {} {}",
                u.prompt, u.completion, u.cached, u.reasoning
            ));
        }
    }

    fn told(style: Style, stream: &str) -> Vec<String> {
        let mut p = SseParser::new();
        let mut a = Assembler::new(style);
        let mut sink = Told::default();
        p.feed(stream.as_bytes(), &mut |n, d| a.event(n, d, &mut sink))
            .expect("feed");
        p.finish(&mut |n, d| a.event(n, d, &mut sink))
            .expect("finish");
        sink.0
    }

    #[test]
    fn each_dialect_hands_on_its_pieces_in_openai_terms() {
        // OpenAI: thinking before text whatever the key order; the finish
        // mapped; usage with its details; nothing after [DONE].
        let mut stream = sse(&[
            json!({"choices":[{"delta":{"content":"a","reasoning_content":"r"},"finish_reason":"function_call"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,
                "prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":{"reasoning_tokens":2}}}),
        ]);
        stream.push_str("data: {\"choices\":[{\"delta\":{\"content\":\"late\"}}]}\n\n");
        assert_eq!(
            told(Style::OpenAi, &stream),
            [
                "reasoning r",
                "text a",
                "finish tool_calls",
                "usage 3 4 - 1 2"
            ]
        );
        // Anthropic: prompt = input + cache read + cache creation, cached =
        // cache read; a text block's opening text; refusal → content_filter.
        let stream = anthropic_sse(&[
            json!({"type":"message_start","message":{"usage":{"input_tokens":10,
                "cache_read_input_tokens":5,"cache_creation_input_tokens":7,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hi"}}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"n"}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{}"}}),
            json!({"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":9}}),
            json!({"type":"message_stop"}),
        ]);
        assert_eq!(
            told(Style::Anthropic, &stream),
            [
                "begin",
                "usage 22 1 - 5 0",
                "text Hi",
                "call 0 t n",
                "args 0 {}",
                "finish content_filter",
                "usage 22 9 - 5 0"
            ]
        );
        // Gemini: synthetic ids by the call's place in the stream, the
        // signature as extra_content, the finish of the event's candidate.
        let stream = [
            json!({"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","id":"own"}}]}}]}),
            json!({"candidates":[{"content":{"parts":[{"functionCall":{"name":"g","args":{"x":1}},
                "thoughtSignature":"U0lH"}]},"finishReason":"SAFETY"}]}),
        ]
        .iter()
        .map(|e| format!("data: {e}\n\n"))
        .collect::<String>();
        assert_eq!(
            told(Style::Gemini, &stream),
            [
                "call 0 own f",
                "args 0 {}",
                r#"call 1 tn-gemini-call-1 g extra_content={"google":{"thought_signature":"U0lH"}}"#,
                r#"args 1 {"x":1}"#,
                "finish content_filter"
            ]
        );
        // Responses: usage and finish at response.incomplete.
        let stream = anthropic_sse(&[
            json!({"type":"response.created","response":{}}),
            json!({"type":"response.reasoning_text.delta","delta":"r"}),
            json!({"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"},
                "usage":{"input_tokens":3,"output_tokens":4,"output_tokens_details":{"reasoning_tokens":2}}}}),
        ]);
        assert_eq!(
            told(Style::Responses, &stream),
            ["begin", "reasoning r", "usage 3 4 7 0 2", "finish length"]
        );
    }
}
