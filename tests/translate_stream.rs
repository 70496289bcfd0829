//! Streaming translate (`tn_translate_stream`): an Anthropic SSE replay, a
//! Gemini SSE replay, an OpenAI one, a Responses one and a whole JSON
//! answer, each re-told as OpenAI `chat.completion.chunk` events. The
//! chunk rules are checked here; then the official `openai` Python SDK
//! consumes the output (stream=True with tool-call accumulation, and its
//! own accumulating `.stream()` helper) through a loopback gateway. The C
//! entry point is driven once through its callback.
//!
//! The relay is the loop's stream reader (`provider::stream::Assembler`)
//! with the chunk writer as its sink: the pieces each replay yields are
//! pinned as the separate re-teller it replaced wrote them, and a relayed
//! stream stops at the loop's tool-call cap.

mod translate_mock;

use serde_json::{json, Value};
use std::ffi::{c_char, c_void, CStr, CString};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use toolnexus::error::{Error, ErrorCode};
use toolnexus::provider::gather::{Pieces, Usage, MAX_TOOL_CALLS};
use toolnexus::provider::sse::SseParser;
use toolnexus::provider::stream::Assembler;
use toolnexus::provider::Style;
use toolnexus::translate::translate_stream_json;
use translate_mock::{Canned, MockProvider};

fn sse(events: &[Value]) -> String {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

fn named(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

fn anthropic_replay() -> String {
    named(&[
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "content": [], "model": "claude", "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Two sums."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Adding "}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "both."}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_a", "name": "add", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"a\": 2,"}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": " \"b\": 3}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_b", "name": "add", "input": {}}}),
        json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{\"a\": 1, \"b\": 1}"}}),
        json!({"type": "content_block_stop", "index": 3}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}),
        json!({"type": "message_stop"}),
    ])
}

fn gemini_replay() -> String {
    sse(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Thinking", "thought": true}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Adding "}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "both."}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "add", "args": {"a": 2, "b": 3}}, "thoughtSignature": "U0lH"},
            {"functionCall": {"name": "add", "args": {"a": 1, "b": 1}}}
        ]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 15, "candidatesTokenCount": 20, "thoughtsTokenCount": 10,
                "cachedContentTokenCount": 5, "totalTokenCount": 45}}),
    ])
}

fn openai_replay() -> String {
    let mut s = sse(&[
        json!({"id": "up1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        json!({"id": "up1", "choices": [{"index": 0, "delta": {"content": "Adding both."}}]}),
        json!({"id": "up1", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 5, "id": "c_a", "type": "function", "function": {"name": "add", "arguments": "{\"a\":2,"}}]}}]}),
        json!({"id": "up1", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 9, "id": "c_b", "type": "function", "function": {"name": "add", "arguments": "{\"a\":1,\"b\":1}"}}]}}]}),
        json!({"id": "up1", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 5, "function": {"arguments": "\"b\":3}"}}]}}]}),
        json!({"id": "up1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"id": "up1", "choices": [], "usage": {"prompt_tokens": 15, "completion_tokens": 30, "total_tokens": 45,
            "prompt_tokens_details": {"cached_tokens": 5}}}),
    ]);
    s.push_str("data: [DONE]\n\n");
    s
}

fn responses_replay() -> String {
    named(&[
        json!({"type": "response.created", "response": {"id": "resp_1", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Adding both."}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "call_id": "c_a", "name": "add", "arguments": ""}}),
        json!({"type": "response.output_item.added", "output_index": 2, "item": {"type": "function_call", "call_id": "c_b", "name": "add", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"a\":2,"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "{\"a\":1,\"b\":1}"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "\"b\":3}"}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": [],
            "usage": {"input_tokens": 15, "output_tokens": 30, "total_tokens": 45, "input_tokens_details": {"cached_tokens": 5}}}}),
    ])
}

fn client_for(style: &str, base: &str) -> Value {
    json!({"baseUrl": base, "style": style, "model": "up-model", "apiKey": "k", "retries": 0})
}

const REQUEST: &str = r#"{"messages":[{"role":"user","content":"add 2+3 and 1+1"}],
    "tools":[{"type":"function","function":{"name":"add","parameters":{"type":"object",
    "properties":{"a":{"type":"number"},"b":{"type":"number"}}}}}]}"#;

/// Runs streaming translate against a mock answering `reply`; gives the
/// chunk events, the outcome and the mock.
fn relay(style: &str, reply: Canned) -> (Vec<String>, Result<Value, Error>, MockProvider) {
    let mock = MockProvider::start(vec![reply]);
    let mut chunks = Vec::new();
    let outcome = translate_stream_json(
        &client_for(style, &mock.base()),
        REQUEST,
        &[],
        None,
        &mut |c: &str| {
            chunks.push(c.to_string());
            true
        },
    );
    (chunks, outcome, mock)
}

/// [`relay`] of a stream that must succeed; gives the chunk events and the
/// summary.
fn stream_of(style: &str, reply: Canned) -> (Vec<String>, Value, MockProvider) {
    let (chunks, outcome, mock) = relay(style, reply);
    (chunks, outcome.expect("stream"), mock)
}

/// Checks the chunk rules; gives the accumulated {content, reasoning,
/// calls, finish, usage}.
fn check_rules(chunks: &[String]) -> Value {
    assert!(chunks
        .iter()
        .all(|c| c.starts_with("data: ") && c.ends_with("\n\n")));
    assert_eq!(chunks.last().unwrap(), "data: [DONE]\n\n");
    let events: Vec<Value> = chunks[..chunks.len() - 1]
        .iter()
        .map(|c| serde_json::from_str(c.trim_start_matches("data: ").trim()).expect("chunk json"))
        .collect();
    let id = events[0]["id"].clone();
    assert!(id.as_str().unwrap().starts_with("chatcmpl-"));
    for e in &events {
        assert_eq!(e["id"], id, "one stable id");
        assert_eq!(e["object"], "chat.completion.chunk");
        assert_eq!(e["model"], "up-model");
    }
    assert_eq!(
        events[0]["choices"][0]["delta"]["role"], "assistant",
        "role first"
    );
    let usage_chunk = events.last().unwrap();
    assert_eq!(
        usage_chunk["choices"],
        json!([]),
        "the usage chunk has no choices"
    );
    let choice_chunks = &events[..events.len() - 1];
    let (last, before) = choice_chunks.split_last().unwrap();
    assert!(before
        .iter()
        .all(|e| e["choices"][0]["finish_reason"].is_null()));
    assert!(last["choices"][0]["finish_reason"].is_string());
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut calls: Vec<Value> = Vec::new();
    for e in choice_chunks {
        let d = &e["choices"][0]["delta"];
        content += d["content"].as_str().unwrap_or("");
        reasoning += d["reasoning_content"].as_str().unwrap_or("");
        for tc in d["tool_calls"].as_array().into_iter().flatten() {
            let i = tc["index"].as_u64().expect("index on every piece") as usize;
            if i == calls.len() {
                assert!(tc["id"].is_string() && tc["function"]["name"].is_string());
                assert_eq!(tc["type"], "function");
                assert_eq!(tc["function"]["arguments"], "");
                calls
                    .push(json!({"id": tc["id"], "name": tc["function"]["name"], "arguments": ""}));
            } else {
                assert!(i < calls.len(), "a piece for a call never started");
                assert!(
                    tc.get("id").is_none(),
                    "only the first piece names the call"
                );
                let a = calls[i]["arguments"].as_str().unwrap().to_string()
                    + tc["function"]["arguments"].as_str().unwrap();
                calls[i]["arguments"] = json!(a);
            }
        }
    }
    json!({"content": content, "reasoning": reasoning, "calls": calls,
        "finish": last["choices"][0]["finish_reason"], "usage": usage_chunk["usage"]})
}

fn args(v: &Value) -> Value {
    serde_json::from_str(v.as_str().unwrap()).unwrap()
}

#[test]
fn each_upstream_style_becomes_openai_chunks_by_the_rules() {
    let cases = [
        (
            "anthropic",
            Canned::text(200, &anthropic_replay()),
            "/v1/messages",
        ),
        (
            "gemini",
            Canned::text(200, &gemini_replay()),
            "/v1beta/models/up-model:streamGenerateContent?alt=sse",
        ),
        (
            "openai",
            Canned::text(200, &openai_replay()),
            "/chat/completions",
        ),
        (
            "responses",
            Canned::text(200, &responses_replay()),
            "/responses",
        ),
    ];
    for (style, reply, path) in cases {
        let (chunks, summary, mock) = stream_of(style, reply);
        let got = check_rules(&chunks);
        assert_eq!(got["content"], "Adding both.", "{style}");
        assert_eq!(got["finish"], "tool_calls", "{style}");
        assert_eq!(summary["finishReason"], "tool_calls");
        let calls = got["calls"].as_array().unwrap();
        assert_eq!(calls.len(), 2, "{style}: {got}");
        assert_eq!(
            args(&calls[0]["arguments"]),
            json!({"a": 2, "b": 3}),
            "{style}"
        );
        assert_eq!(
            args(&calls[1]["arguments"]),
            json!({"a": 1, "b": 1}),
            "{style}"
        );
        assert_eq!(got["usage"]["prompt_tokens"], 15, "{style}: {got}");
        assert_eq!(got["usage"]["completion_tokens"], 30, "{style}");
        assert_eq!(
            got["usage"]["prompt_tokens_details"]["cached_tokens"], 5,
            "{style}"
        );
        let req = &mock.requests()[0];
        assert_eq!(req.path, path, "{style}");
        let body = req.json_body();
        if style == "gemini" {
            assert!(body.get("stream").is_none());
        } else {
            assert_eq!(body["stream"], true, "{style}");
        }
        match style {
            "anthropic" => assert_eq!(got["reasoning"], "Two sums."),
            "gemini" => {
                assert_eq!(got["reasoning"], "Thinking");
                assert_eq!(
                    got["usage"]["completion_tokens_details"]["reasoning_tokens"],
                    10
                );
            }
            _ => {}
        }
    }
}

#[test]
fn a_whole_json_answer_is_retold_as_chunks_too() {
    let whole = json!({"content": [{"type": "text", "text": "Hi."}], "stop_reason": "max_tokens",
        "usage": {"input_tokens": 2, "output_tokens": 3}});
    let (chunks, summary, _mock) = stream_of("anthropic", Canned::json(200, &whole));
    let got = check_rules(&chunks);
    assert_eq!(got["content"], "Hi.");
    assert_eq!(got["finish"], "length");
    assert_eq!(summary["finishReason"], "length");
    assert_eq!(got["usage"]["total_tokens"], 5);
}

#[test]
fn the_host_can_stop_the_stream_and_an_upstream_error_ends_it() {
    let mock = MockProvider::start(vec![Canned::text(200, &anthropic_replay())]);
    let mut n = 0;
    let err = translate_stream_json(
        &client_for("anthropic", &mock.base()),
        REQUEST,
        &[],
        None,
        &mut |_: &str| {
            n += 1;
            n < 3
        },
    )
    .expect_err("stopped");
    assert_eq!(err.code, toolnexus::error::ErrorCode::Cancelled, "{err}");
    assert_eq!(n, 3, "nothing after the callback said stop");
    assert_eq!(mock.requests().len(), 1, "not retried");

    let broken = named(&[
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "par"}}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ]);
    let (chunks, outcome, mock) = relay("anthropic", Canned::text(200, &broken));
    let err = outcome.expect_err("upstream error");
    assert!(err.message.contains("Overloaded"), "{err}");
    assert!(!chunks.iter().any(|c| c.contains("[DONE]")));
    assert_eq!(mock.requests().len(), 1, "nothing retried after output");
}

// ---------------------------------------------------------------------------
// the one reader's pieces
// ---------------------------------------------------------------------------

/// A sink that writes down each piece, numbering tool calls 0, 1, … as
/// the chunk writer does.
#[derive(Default)]
struct Recorder {
    pieces: Vec<Value>,
    tools: usize,
}

impl Pieces for Recorder {
    fn begin(&mut self) -> Result<(), Error> {
        self.pieces.push(json!(["begin"]));
        Ok(())
    }
    fn text(&mut self, text: &str) -> Result<(), Error> {
        self.pieces.push(json!(["text", text]));
        Ok(())
    }
    fn reasoning(&mut self, text: &str) -> Result<(), Error> {
        self.pieces.push(json!(["reasoning", text]));
        Ok(())
    }
    fn tool_start(
        &mut self,
        id: &str,
        name: &str,
        extra: Option<(&str, Value)>,
    ) -> Result<usize, Error> {
        let extra = extra.map_or(Value::Null, |(k, v)| json!({ k: v }));
        self.pieces.push(json!(["tool_start", id, name, extra]));
        self.tools += 1;
        Ok(self.tools - 1)
    }
    fn tool_args(&mut self, at: usize, fragment: &str) -> Result<(), Error> {
        self.pieces.push(json!(["tool_args", at, fragment]));
        Ok(())
    }
    fn finish(&mut self, reason: &'static str) {
        self.pieces.push(json!(["finish", reason]));
    }
    fn usage(&mut self, u: Usage) {
        self.pieces.push(json!([
            "usage",
            u.prompt,
            u.completion,
            u.total,
            u.cached,
            u.reasoning
        ]));
    }
}

/// The pieces the style's stream reader hands on for `stream`, fed in
/// pieces of 5 bytes.
fn pieces_of(style: Style, stream: &str) -> Vec<Value> {
    let mut parser = SseParser::new();
    let mut assembler = Assembler::new(style);
    let mut sink = Recorder::default();
    for piece in stream.as_bytes().chunks(5) {
        parser
            .feed(piece, &mut |n, d| assembler.event(n, d, &mut sink))
            .expect("feed");
    }
    parser
        .finish(&mut |n, d| assembler.event(n, d, &mut sink))
        .expect("finish");
    assert!(assembler.finish().is_object());
    sink.pieces
}

/// Each replay yields, in order, the pieces the separate re-teller
/// (`chunks::Upstream`, before the stream states became the one reader)
/// wrote for it: the same text, thinking, tool numbering, finish and usage
/// figures (Anthropic's prompt = input + cache read, Gemini's synthetic ids
/// and signature, Responses' usage and finish at `response.completed`).
#[test]
fn the_one_reader_hands_on_the_pieces_the_relay_wrote_before() {
    let anthropic = json!([
        ["begin"],
        ["usage", 15, 1, null, 5, 0],
        ["reasoning", "Two sums."],
        ["text", ""],
        ["text", "Adding "],
        ["text", "both."],
        ["tool_start", "toolu_a", "add", null],
        ["tool_args", 0, "{\"a\": 2,"],
        ["tool_args", 0, " \"b\": 3}"],
        ["tool_start", "toolu_b", "add", null],
        ["tool_args", 1, "{\"a\": 1, \"b\": 1}"],
        ["finish", "tool_calls"],
        ["usage", 15, 30, null, 5, 0]
    ]);
    let gemini = json!([
            ["reasoning", "Thinking"],
            ["text", "Adding "],
            ["text", "both."],
            ["usage", 15, 30, 45, 5, 10],
            ["tool_start", "tn-gemini-call-0", "add", {"extra_content": {"google": {"thought_signature": "U0lH"}}}],
            ["tool_args", 0, "{\"a\":2,\"b\":3}"],
            ["tool_start", "tn-gemini-call-1", "add", null],
            ["tool_args", 1, "{\"a\":1,\"b\":1}"],
            ["finish", "stop"]
    ]);
    let openai = json!([
        ["text", ""],
        ["text", "Adding both."],
        ["tool_start", "c_a", "add", null],
        ["tool_args", 0, "{\"a\":2,"],
        ["tool_start", "c_b", "add", null],
        ["tool_args", 1, "{\"a\":1,\"b\":1}"],
        ["tool_args", 0, "\"b\":3}"],
        ["finish", "tool_calls"],
        ["usage", 15, 30, 45, 5, 0]
    ]);
    let responses = json!([
        ["begin"],
        ["text", "Adding both."],
        ["tool_start", "c_a", "add", null],
        ["tool_args", 0, ""],
        ["tool_start", "c_b", "add", null],
        ["tool_args", 1, ""],
        ["tool_args", 0, "{\"a\":2,"],
        ["tool_args", 1, "{\"a\":1,\"b\":1}"],
        ["tool_args", 0, "\"b\":3}"],
        ["usage", 15, 30, 45, 5, 0],
        ["finish", "stop"]
    ]);
    let cases = [
        (Style::Anthropic, anthropic_replay(), anthropic),
        (Style::Gemini, gemini_replay(), gemini),
        (Style::OpenAi, openai_replay(), openai),
        (Style::Responses, responses_replay(), responses),
    ];
    for (style, stream, want) in cases {
        assert_eq!(Value::Array(pieces_of(style, &stream)), want, "{style:?}");
    }
}

#[test]
fn a_relayed_stream_past_the_tool_call_cap_fails_with_the_caps_error() {
    let mut events: Vec<Value> = (0..=MAX_TOOL_CALLS)
        .map(|i| {
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "id": format!("c{i}"), "type": "function",
                 "function": {"name": "add", "arguments": "{}"}}]}}]})
        })
        .collect();
    events.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
    let mut stream = sse(&events);
    stream.push_str("data: [DONE]\n\n");
    let (chunks, outcome, mock) = relay("openai", Canned::text(200, &stream));
    let err = outcome.expect_err("past the cap");
    assert_eq!(err.code, ErrorCode::ProviderError, "{err}");
    assert_eq!(
        err.message,
        toolnexus::provider::gather::too_many_calls(MAX_TOOL_CALLS + 1).message
    );
    // The calls up to the cap went out; the one past it and the end did not.
    let started = chunks
        .iter()
        .filter(|c| c.contains(r#""name":"add""#))
        .count();
    assert_eq!(started, MAX_TOOL_CALLS);
    assert!(!chunks.iter().any(|c| c.contains("[DONE]")));
    assert_eq!(mock.requests().len(), 1, "not retried");
}

// ---------------------------------------------------------------------------
// the C entry point
// ---------------------------------------------------------------------------

unsafe extern "C" fn collect(user_data: *mut c_void, chunk: *const c_char) -> i32 {
    // SAFETY: user_data is the Vec below; chunk is a live C string.
    let out = unsafe { &mut *(user_data as *mut Vec<String>) };
    out.push(
        unsafe { CStr::from_ptr(chunk) }
            .to_string_lossy()
            .into_owned(),
    );
    0
}

#[test]
fn tn_translate_stream_hands_each_chunk_to_the_callback() {
    let mock = MockProvider::start(vec![Canned::text(200, &gemini_replay())]);
    let client = CString::new(client_for("gemini", &mock.base()).to_string()).unwrap();
    let request = CString::new(REQUEST).unwrap();
    let mut chunks: Vec<String> = Vec::new();
    let mut out: *mut c_char = std::ptr::null_mut();
    // SAFETY: valid strings, a live Vec as user_data, a writable out.
    let status = unsafe {
        toolnexus::ffi::tn_translate_stream(
            client.as_ptr(),
            request.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            Some(collect),
            &mut chunks as *mut Vec<String> as *mut c_void,
            &mut out,
        )
    };
    // SAFETY: set by the call.
    let summary: Value =
        serde_json::from_str(&unsafe { CStr::from_ptr(out) }.to_string_lossy()).unwrap();
    unsafe { toolnexus::ffi::tn_string_free(out) };
    assert_eq!(status as i32, 0, "{summary}");
    assert_eq!(summary["finishReason"], "tool_calls");
    assert_eq!(summary["chunks"], chunks.len());
    let got = check_rules(&chunks);
    assert_eq!(got["calls"][0]["id"], "tn-gemini-call-0");
}

// ---------------------------------------------------------------------------
// the official openai SDK as the consumer
// ---------------------------------------------------------------------------

/// A gateway on 127.0.0.1: every POST is answered with streaming
/// translate's chunks from a fresh mock upstream replaying `replay`.
fn gateway(style: &'static str, replay: fn() -> String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let l = line.trim_end().to_ascii_lowercase();
                    if l.is_empty() {
                        break;
                    }
                    if let Some(v) = l.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                let mut out = stream;
                let _ = out.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
                );
                let upstream = MockProvider::start(vec![Canned::text(200, &replay())]);
                let _ = translate_stream_json(
                    &client_for(style, &upstream.base()),
                    REQUEST,
                    &[],
                    None,
                    &mut |c: &str| {
                        out.write_all(c.as_bytes())
                            .and_then(|_| out.flush())
                            .is_ok()
                    },
                );
            });
        }
    });
    format!("http://127.0.0.1:{port}/v1")
}

fn python() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python3");
    let ok = p.exists()
        && std::process::Command::new(&p)
            .args(["-c", "import openai"])
            .status()
            .is_ok_and(|s| s.success());
    ok.then_some(p)
}

fn sdk_consumes(style: &'static str, replay: fn() -> String) {
    let Some(py) = python() else {
        eprintln!("skipped: no .venv with the openai SDK (scripts/setup.sh installs tests/requirements.txt)");
        return;
    };
    let base = gateway(style, replay);
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/translate_stream/consume.py");
    let out = std::process::Command::new(py)
        .arg(script)
        .arg(&base)
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).expect("consumer json");
    let raw = &got["raw"];
    let ids: Vec<&Value> = raw["ids"].as_array().unwrap().iter().collect();
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "{style}: one id");
    assert_eq!(raw["roles"], json!(["assistant"]), "{style}");
    assert_eq!(raw["content"], "Adding both.", "{style}");
    let finishes: Vec<&Value> = raw["finish"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finishes, [&json!("tool_calls")], "{style}");
    assert_eq!(
        args(&raw["calls"]["0"]["arguments"]),
        json!({"a": 2, "b": 3})
    );
    assert_eq!(
        args(&raw["calls"]["1"]["arguments"]),
        json!({"a": 1, "b": 1})
    );
    assert_eq!(raw["calls"]["0"]["name"], "add");
    assert_eq!(raw["usage"]["prompt_tokens"], 15, "{style}: {raw}");
    assert_eq!(raw["usage"]["prompt_tokens_details"]["cached_tokens"], 5);
    let helper = &got["helper"];
    assert_eq!(helper["finish"], "tool_calls");
    assert_eq!(helper["content"], "Adding both.");
    let calls = helper["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{helper}");
    assert_eq!(args(&calls[0]["arguments"]), json!({"a": 2, "b": 3}));
    assert_eq!(args(&calls[1]["arguments"]), json!({"a": 1, "b": 1}));
    if style == "anthropic" {
        assert_eq!(raw["reasoning"], "Two sums.");
        assert_eq!(raw["calls"]["0"]["id"], "toolu_a");
    } else {
        assert_eq!(
            raw["calls"]["0"]["extra"],
            json!({"google": {"thought_signature": "U0lH"}})
        );
        assert_eq!(raw["calls"]["1"]["id"], "tn-gemini-call-1");
    }
}

#[test]
fn the_openai_sdk_consumes_a_stream_fed_by_an_anthropic_replay() {
    sdk_consumes("anthropic", anthropic_replay);
}

#[test]
fn the_openai_sdk_consumes_a_stream_fed_by_a_gemini_replay() {
    sdk_consumes("gemini", gemini_replay);
}
