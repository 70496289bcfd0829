//! Anthropic extended thinking round trips, against a mock Anthropic
//! server on 127.0.0.1 that refuses a tool-result turn whose assistant
//! message does not start with the thinking block it was given, signature
//! intact (as the real API does, with its 400 message). The client loop
//! (whole and streamed answers) keeps the blocks by itself; translate hands
//! them to the host (`thinkingBlocks`, `reasoningContent`) and takes them
//! back from the assistant message's `thinking_blocks`. Prompt caching:
//! `cache_control` marks on tools, system parts and message parts reach
//! Anthropic on the matching blocks, at most four of them.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use toolnexus::cancel::CancelToken;
use toolnexus::client::{AskRequest, Client, RunData, RunRequest};
use toolnexus::error::ErrorCode;
use toolnexus::tool::{ExecContext, Source, Tool, ToolResult};
use toolnexus::toolkit::Toolkit;
use toolnexus::translate::translate;

const SIGNATURE: &str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds";

type Handler = dyn Fn(&Value) -> (u16, String) + Send + Sync;

/// A provider whose every answer `handler` makes from the request body;
/// keeps the bodies.
struct Strict {
    base: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Strict {
    fn start(handler: impl Fn(&Value) -> (u16, String) + Send + Sync + 'static) -> Strict {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let kept = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (handler, kept) = (Arc::clone(&handler), Arc::clone(&kept));
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    loop {
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
                        if reader.read_exact(&mut body).is_err() {
                            return;
                        }
                        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        kept.lock().unwrap().push(body.clone());
                        let (status, text) = handler(&body);
                        let kind = if text.starts_with('{') {
                            "application/json"
                        } else {
                            "text/event-stream"
                        };
                        let head = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n",
                            text.len()
                        );
                        let mut out = &stream;
                        if out.write_all(head.as_bytes()).is_err()
                            || out.write_all(text.as_bytes()).is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        Strict { base, bodies }
    }

    fn bodies(&self) -> Vec<Value> {
        self.bodies.lock().unwrap().clone()
    }
}

/// The real API's refusal of a tool-result turn without the thinking block.
fn refusal() -> (u16, String) {
    (
        400,
        json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block."}})
        .to_string(),
    )
}

fn first_turn() -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [
            {"type": "thinking", "thinking": "2+3 needs the tool.", "signature": SIGNATURE},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}}
        ],
        "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 20}})
}

fn final_turn() -> Value {
    json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "claude",
        "content": [{"type": "text", "text": "It is 5."}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 30, "output_tokens": 5}})
}

/// Answers as a thinking model does: the first turn thinks and calls
/// `add`; a turn with a tool result is answered only when the assistant
/// message before it starts with that thinking block, signature intact.
fn thinking_model(body: &Value, streamed: bool) -> (u16, String) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let has_result = messages
        .last()
        .is_some_and(|m| m.to_string().contains("tool_result"));
    let answer = if has_result {
        let assistant = &messages[messages.len() - 2];
        let lead = &assistant["content"][0];
        if lead["type"] != "thinking" || lead["signature"] != SIGNATURE {
            return refusal();
        }
        final_turn()
    } else {
        first_turn()
    };
    if !streamed {
        return (200, answer.to_string());
    }
    (200, as_events(&answer))
}

/// A whole Anthropic message as its stream of events.
fn as_events(m: &Value) -> String {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": m["id"], "type": "message",
        "role": "assistant", "model": m["model"], "content": [], "usage": m["usage"]}}),
    ];
    for (i, b) in m["content"].as_array().unwrap().iter().enumerate() {
        match b["type"].as_str().unwrap() {
            "thinking" => {
                events.push(json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "thinking", "thinking": ""}}));
                events.push(json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "thinking_delta", "thinking": b["thinking"]}}));
                events.push(json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "signature_delta", "signature": b["signature"]}}));
            }
            "tool_use" => {
                events.push(json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}));
                events.push(json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": b["input"].to_string()}}));
            }
            _ => {
                events.push(json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "text", "text": ""}}));
                events.push(json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "text_delta", "text": b["text"]}}));
            }
        }
        events.push(json!({"type": "content_block_stop", "index": i}));
    }
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": m["stop_reason"]},
        "usage": {"output_tokens": m["usage"]["output_tokens"]}}),
    );
    events.push(json!({"type": "message_stop"}));
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

fn adder() -> Toolkit {
    let tk = Toolkit::build_from_json(r#"{"builtins":false}"#).expect("toolkit");
    let add = |args: &Value, _: &ExecContext| {
        let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
        ToolResult::ok(format!("{sum}"))
    };
    tk.register(Tool::new(
        "add",
        "adds a and b",
        Some(json!({"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}})),
        Source::Native,
        Arc::new(add),
    ));
    tk
}

fn client(base: &str) -> Value {
    json!({"baseUrl": base, "style": "anthropic", "model": "claude", "apiKey": "test-key-0451", "retries": 0,
        "requestParams": {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 4096}})
}

#[test]
fn the_loop_sends_the_thinking_block_back_whole_and_streamed() {
    for streamed in [false, true] {
        let server = Strict::start(move |b| thinking_model(b, streamed));
        let c = Client::from_json(&client(&server.base)).expect("client");
        let tk = adder();
        let result = if streamed {
            c.ask(
                &tk,
                &AskRequest {
                    prompt: "2+3?".into(),
                    id: None,
                    history: Vec::new(),
                },
                &CancelToken::new(),
                RunData(0),
                true,
            )
        } else {
            c.run(
                &tk,
                &RunRequest {
                    prompt: "2+3?".into(),
                    history: Vec::new(),
                },
                &CancelToken::new(),
                RunData::default(),
            )
        }
        .unwrap_or_else(|e| panic!("streamed={streamed}: {e}"));
        assert_eq!(result["text"], "It is 5.", "streamed={streamed}");
        let bodies = server.bodies();
        assert_eq!(bodies.len(), 2);
        assert_eq!(
            bodies[0]["thinking"],
            json!({"type": "enabled", "budget_tokens": 1024})
        );
        assert_eq!(
            bodies[1]["messages"][1]["content"][0],
            json!({"type": "thinking", "thinking": "2+3 needs the tool.", "signature": SIGNATURE}),
            "streamed={streamed}"
        );
    }
}

#[test]
fn translate_hands_out_thinking_blocks_and_takes_them_back() {
    let server = Strict::start(|b| thinking_model(b, false));
    let cfg = client(&server.base);
    let ask = json!({"messages": [{"role": "user", "content": "2+3?"}]});
    let out = translate(&cfg, &ask, &[], None).expect("first");
    assert_eq!(out["finishReason"], "tool_calls");
    assert_eq!(out["reasoningContent"], "2+3 needs the tool.");
    assert_eq!(
        out["thinkingBlocks"],
        json!([{"type": "thinking", "thinking": "2+3 needs the tool.", "signature": SIGNATURE}])
    );
    let call = &out["toolCalls"][0];
    let assistant = |with_thinking: bool| {
        let mut m = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": call["id"], "type": "function",
             "function": {"name": call["name"], "arguments": call["arguments"]}}]});
        if with_thinking {
            m["thinking_blocks"] = out["thinkingBlocks"].clone();
        }
        m
    };
    let second = |with_thinking: bool| {
        json!({"messages": [
            {"role": "user", "content": "2+3?"},
            assistant(with_thinking),
            {"role": "tool", "tool_call_id": "toolu_1", "content": "5"}
        ]})
    };
    let done = translate(&cfg, &second(true), &[], None)
        .unwrap_or_else(|e| panic!("{e}: {}", server.bodies().last().unwrap()));
    assert_eq!(done["text"], "It is 5.");
    assert!(
        done.get("thinkingBlocks").is_none(),
        "none when the answer has none"
    );
    let refused = translate(&cfg, &second(false), &[], None).expect_err("without thinking");
    assert_eq!(refused.code, ErrorCode::ProviderError);
    assert!(refused.message.contains("Expected `thinking`"), "{refused}");
}

#[test]
fn cache_control_marks_reach_their_blocks_at_most_four() {
    let server = Strict::start(|_| (200, final_turn().to_string()));
    let eph = json!({"type": "ephemeral"});
    let hour = json!({"type": "ephemeral", "ttl": "1h"});
    let request = json!({
        "tools": [
            {"type": "function", "cache_control": hour, "function": {"name": "a", "description": "d",
                "parameters": {"type": "object", "properties": {"cache_control": {"type": "object"}}}}},
            {"type": "function", "function": {"name": "b", "cache_control": eph,
                "parameters": {"type": "object", "properties": {}}}}
        ],
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "S1"},
                {"type": "text", "text": "S2", "cache_control": eph}]},
            {"role": "user", "content": [{"type": "text", "text": "U1", "cache_control": eph}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "a", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "t1", "content": "r", "cache_control": eph},
            {"role": "user", "content": "U2", "cache_control": eph}
        ]
    });
    let mut cfg = client(&server.base);
    cfg.as_object_mut().unwrap().remove("requestParams");
    translate(&cfg, &request, &[], None).expect("translate");
    let body = server.bodies()[0].clone();
    assert_eq!(body["tools"][0]["cache_control"], hour);
    assert_eq!(body["tools"][1]["cache_control"], eph);
    assert_eq!(
        body["tools"][0]["input_schema"]["properties"]["cache_control"],
        json!({"type": "object"}),
        "a property named cache_control is not a breakpoint"
    );
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "S1"}, {"type": "text", "text": "S2", "cache_control": eph}])
    );
    assert_eq!(
        body["messages"][0],
        json!({"role": "user", "content": [{"type": "text", "text": "U1", "cache_control": eph}]})
    );
    // Six marks asked for: the tool result's and the last user's are past
    // the cap of four and dropped.
    let text = body["messages"].to_string();
    assert_eq!(text.matches("cache_control").count(), 1, "{text}");
    assert_eq!(
        body["messages"][3],
        json!({"role": "user", "content": [{"type": "text", "text": "U2"}]})
    );

    // Without marks the body is as before: system a string, content strings.
    let plain =
        json!({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]});
    translate(&cfg, &plain, &[], None).expect("plain");
    let body = server.bodies()[1].clone();
    assert_eq!(body["system"], "S");
    assert_eq!(body["messages"], json!([{"role": "user", "content": "U"}]));
}
