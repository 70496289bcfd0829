//! Ordered failover (issue 29) against loopback mocks: a client with
//! `upstreams` moves on only after a retryable failure (a closed port, a
//! 503, a 429 with Retry-After, an upstream's own timeout), never after a
//! 400 and never once a stream delivered anything; each upstream gets its
//! own model and key; the serving upstream is reported; a failed upstream
//! cools down. Every client but the cooldown tests' sets `cooldownMs: 0`, so
//! no test sees another's cooldown.

mod translate_mock;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use toolnexus::cancel::CancelToken;
use toolnexus::client::{empty_toolkit, Client, RunData, RunRequest, Slot};
use toolnexus::error::ErrorCode;
use toolnexus::translate::{translate, translate_stream_json};
use translate_mock::{Canned, MockProvider};

fn ok_reply(text: &str) -> Canned {
    Canned::json(
        200,
        &json!({"choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}),
    )
}

fn hi() -> Value {
    json!({"messages": [{"role": "user", "content": "Hi"}]})
}

/// A port nothing listens on.
fn closed_port() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

fn up(base: &str, model: &str, key: &str) -> Value {
    json!({"baseUrl": base, "model": model, "apiKey": key})
}

fn client(upstreams: Vec<Value>, extra: Value) -> Value {
    let mut c = json!({"upstreams": upstreams, "retries": 0, "retryBaseMs": 1,
                       "cooldownMs": 0, "timeoutMs": 60000});
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        c.extend(extra.clone());
    }
    c
}

fn models_sent(mock: &MockProvider) -> Vec<String> {
    mock.requests()
        .iter()
        .map(|r| r.json_body()["model"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_closed_port_fails_over_to_the_next_upstream_with_its_own_model_and_key() {
    let b = MockProvider::start(vec![ok_reply("from b")]);
    let c = client(
        vec![
            up(&closed_port(), "model-a", "sk-a"),
            up(&b.base(), "model-b", "sk-b"),
        ],
        json!({}),
    );
    let answer = translate(&c, &hi(), &[], None).expect("the second upstream answers");
    assert_eq!(answer["text"], "from b");
    assert_eq!(answer["model"], "model-b");
    assert_eq!(answer["upstream"]["index"], 1);
    assert_eq!(answer["upstream"]["model"], "model-b");
    assert_eq!(answer["upstream"]["baseUrl"], b.base());
    assert_eq!(models_sent(&b), vec!["model-b"]);
    let req = &b.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer sk-b"));
}

#[test]
fn a_503_spends_its_own_retry_budget_then_the_next_upstream_gets_a_fresh_one() {
    let a = MockProvider::start(vec![Canned::text(503, "busy").repeating()]);
    let b = MockProvider::start(vec![Canned::text(502, "bad gateway"), ok_reply("b")]);
    let c = client(
        vec![
            up(&a.base(), "model-a", "sk-a"),
            up(&b.base(), "model-b", "sk-b"),
        ],
        json!({"retries": 1}),
    );
    let answer = translate(&c, &hi(), &[], None).expect("b answers on its retry");
    assert_eq!(answer["upstream"]["index"], 1);
    assert_eq!(models_sent(&a), vec!["model-a", "model-a"]);
    assert_eq!(models_sent(&b), vec!["model-b", "model-b"]);
}

#[test]
fn a_429_with_retry_after_moves_on_at_once_instead_of_waiting() {
    // An hour's Retry-After: waiting for it would end in the 60 s timeout.
    let a = MockProvider::start(vec![Canned::text(429, "slow down")
        .header("retry-after", "3600")
        .repeating()]);
    let b = MockProvider::start(vec![ok_reply("b")]);
    let c = client(
        vec![
            up(&a.base(), "model-a", "sk-a"),
            up(&b.base(), "model-b", "sk-b"),
        ],
        json!({"retries": 3}),
    );
    let answer = translate(&c, &hi(), &[], None).expect("b answers");
    assert_eq!(answer["upstream"]["index"], 1);
    assert_eq!(a.requests().len(), 1, "no retry of a after its Retry-After");
}

#[test]
fn a_400_does_not_advance() {
    let a = MockProvider::start(vec![Canned::json(
        400,
        &json!({"error": {"message": "bad tool schema"}}),
    )]);
    let b = MockProvider::start(vec![ok_reply("b")]);
    let c = client(
        vec![
            up(&a.base(), "model-a", "sk-a"),
            up(&b.base(), "model-b", "sk-b"),
        ],
        json!({"retries": 2}),
    );
    let err = translate(&c, &hi(), &[], None).expect_err("a 400 is final");
    assert_eq!(err.code, ErrorCode::ProviderError);
    assert_eq!(err.provider.as_ref().map(|p| p.status), Some(400));
    assert!(err.message.contains("bad tool schema"), "{err}");
    assert_eq!(a.requests().len(), 1);
    assert!(b.requests().is_empty(), "the next upstream was never asked");
}

#[test]
fn when_every_upstream_fails_the_error_names_each_failure_and_no_key() {
    let b = MockProvider::start(vec![Canned::text(503, "overloaded b").repeating()]);
    let d = MockProvider::start(vec![Canned::text(500, "broken d").repeating()]);
    let c = client(
        vec![
            up(&closed_port(), "model-a", "sk-secret-aaaa"),
            up(&b.base(), "model-b", "sk-secret-bbbb"),
            up(&d.base(), "model-d", "sk-secret-dddd"),
        ],
        json!({}),
    );
    let err = translate(&c, &hi(), &[], None).expect_err("all fail");
    let m = &err.message;
    assert_eq!(err.code, ErrorCode::ProviderError);
    assert!(m.contains("all 3 upstreams failed"), "{m}");
    assert!(
        m.contains("upstream 0 (model model-a)") && m.contains("could not be reached"),
        "{m}"
    );
    assert!(
        m.contains("upstream 1 (model model-b)") && m.contains("503"),
        "{m}"
    );
    assert!(
        m.contains("upstream 2 (model model-d)") && m.contains("broken d"),
        "{m}"
    );
    assert!(!m.contains("sk-secret"), "{m}");
    assert_eq!(err.provider.as_ref().map(|p| p.status), Some(500));
}

#[test]
fn an_upstream_that_failed_is_tried_last_by_later_calls_until_it_cools_down() {
    let a = MockProvider::start(vec![Canned::text(503, "busy").repeating()]);
    let b = MockProvider::start(vec![ok_reply("b").repeating()]);
    // The default cooldown (30 s) is on.
    let c = json!({"upstreams": [up(&a.base(), "model-a", "sk-a"), up(&b.base(), "model-b", "sk-b")],
                   "retries": 0, "timeoutMs": 60000});
    for _ in 0..3 {
        let answer = translate(&c, &hi(), &[], None).expect("b answers");
        assert_eq!(answer["upstream"]["index"], 1);
    }
    assert_eq!(a.requests().len(), 1, "a was skipped while cooling down");
    assert_eq!(b.requests().len(), 3);

    // Without a cooldown, every call starts at the first upstream again.
    let a2 = MockProvider::start(vec![Canned::text(503, "busy").repeating()]);
    let b2 = MockProvider::start(vec![ok_reply("b").repeating()]);
    let c2 = client(
        vec![
            up(&a2.base(), "model-a", "sk-a"),
            up(&b2.base(), "model-b", "sk-b"),
        ],
        json!({}),
    );
    for _ in 0..3 {
        translate(&c2, &hi(), &[], None).expect("b answers");
    }
    assert_eq!(a2.requests().len(), 3);
}

#[test]
fn a_cooling_upstream_is_still_tried_when_the_others_fail() {
    let a = MockProvider::start(vec![Canned::text(503, "busy"), ok_reply("a again")]);
    let b = MockProvider::start(vec![ok_reply("b"), Canned::text(503, "b busy now")]);
    let c = json!({"upstreams": [up(&a.base(), "model-a", "sk-a"), up(&b.base(), "model-b", "sk-b")],
                   "retries": 0, "timeoutMs": 60000});
    assert_eq!(
        translate(&c, &hi(), &[], None).expect("b")["upstream"]["index"],
        1
    );
    // a cools down, so b goes first; b fails, a is tried last and answers.
    let answer = translate(&c, &hi(), &[], None).expect("a, last");
    assert_eq!(answer["upstream"]["index"], 0);
    assert_eq!(answer["text"], "a again");
}

#[test]
fn mixed_styles_in_translate_each_get_their_own_body() {
    let b = MockProvider::start(vec![Canned::json(
        200,
        &json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                "content": [{"type": "text", "text": "from anthropic"}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}}),
    )]);
    let mut second = up(&b.base(), "claude-x", "sk-ant-b");
    second["style"] = json!("anthropic");
    let c = client(vec![up(&closed_port(), "gpt-a", "sk-a"), second], json!({}));
    let answer = translate(&c, &hi(), &[], None).expect("anthropic answers");
    assert_eq!(answer["text"], "from anthropic");
    assert_eq!(answer["upstream"]["style"], "anthropic");
    let req = &b.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("sk-ant-b"));
    assert_eq!(req.json_body()["model"], "claude-x");
    assert!(req.json_body()["max_tokens"].is_u64(), "an Anthropic body");
}

#[test]
fn an_upstreams_own_timeout_moves_on_before_any_byte() {
    let a = MockProvider::start(vec![ok_reply("too late").delay(20_000)]);
    let b = MockProvider::start(vec![ok_reply("b")]);
    let mut first = up(&a.base(), "model-a", "sk-a");
    first["timeoutMs"] = json!(300);
    let c = client(vec![first, up(&b.base(), "model-b", "sk-b")], json!({}));
    let answer = translate(&c, &hi(), &[], None).expect("b answers");
    assert_eq!(answer["upstream"]["index"], 1);
}

/// A server that answers every request with `raw` and closes.
struct Raw {
    base: String,
    requests: Arc<AtomicUsize>,
}

fn raw_server(raw: &'static [u8]) -> Raw {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&requests);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counted.fetch_add(1, Ordering::SeqCst);
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            let mut w = stream;
            let _ = w.write_all(raw);
            let _ = w.flush();
            // Dropped: the connection closes mid-body.
        }
    });
    Raw { base, requests }
}

const DIES_MID_STREAM: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 100000\r\n\r\n\
data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n";

const STREAM_OK: &str = "data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"fine\"},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
data: [DONE]\n\n";

#[test]
fn a_stream_that_delivered_a_token_fails_as_it_is() {
    let a = raw_server(DIES_MID_STREAM);
    let b = MockProvider::start(vec![Canned::text(200, STREAM_OK)
        .header("content-type", "text/event-stream")
        .repeating()]);
    let c = client(
        vec![
            up(&a.base, "model-a", "sk-a"),
            up(&b.base(), "model-b", "sk-b"),
        ],
        json!({"retries": 2}),
    );
    let mut chunks: Vec<String> = Vec::new();
    let err = translate_stream_json(&c, &hi().to_string(), &[], None, &mut |chunk| {
        chunks.push(chunk.to_string());
        true
    })
    .expect_err("the stream broke after its first token");
    assert_eq!(err.code, ErrorCode::ProviderError, "{err}");
    assert!(chunks.iter().any(|c| c.contains("Hel")), "{chunks:?}");
    assert_eq!(a.requests.load(Ordering::SeqCst), 1, "no retry either");
    assert!(b.requests().is_empty(), "no failover after output");
}

#[test]
fn a_stream_fails_over_before_any_byte() {
    let b = MockProvider::start(vec![
        Canned::text(200, STREAM_OK).header("content-type", "text/event-stream")
    ]);
    let c = client(
        vec![
            up(&closed_port(), "model-a", "sk-a"),
            up(&b.base(), "model-b", "sk-b"),
        ],
        json!({}),
    );
    let mut text = String::new();
    let out = translate_stream_json(&c, &hi().to_string(), &[], None, &mut |chunk| {
        if chunk.contains("fine") {
            text.push_str("fine");
        }
        true
    })
    .expect("b streams");
    assert_eq!(text, "fine");
    assert_eq!(out["upstream"]["index"], 1);
    assert_eq!(out["finishReason"], "stop");
    assert_eq!(b.requests()[0].json_body()["model"], "model-b");
}

#[test]
fn the_loop_fails_over_and_before_llm_sees_each_upstream() {
    let a = MockProvider::start(vec![Canned::text(503, "busy").repeating()]);
    let b = MockProvider::start(vec![ok_reply("from b")]);
    let c = Client::from_json(&client(
        vec![
            up(&a.base(), "model-a", "sk-a"),
            up(&b.base(), "model-b", "sk-b"),
        ],
        json!({}),
    ))
    .expect("client");
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = Arc::clone(&seen);
    c.set_callback(
        Slot::BeforeLlm,
        Some(Arc::new(move |event: &Value, _: RunData| {
            log.lock()
                .expect("lock")
                .push(event["model"].as_str().unwrap_or("").to_string());
            Ok(None)
        })),
    );
    let request = RunRequest {
        prompt: "Hi".into(),
        history: Vec::new(),
    };
    let result = c
        .run(
            empty_toolkit(),
            &request,
            &CancelToken::new(),
            RunData::default(),
        )
        .expect("the run ends");
    assert_eq!(result["text"], "from b");
    assert_eq!(result["model"], "model-b");
    assert_eq!(result["upstream"]["index"], 1);
    assert_eq!(*seen.lock().expect("lock"), vec!["model-a", "model-b"]);
    assert_eq!(models_sent(&a), vec!["model-a"]);
    assert_eq!(models_sent(&b), vec!["model-b"]);
}

#[test]
fn a_looping_client_refuses_upstreams_of_another_style() {
    let mut second = up("http://127.0.0.1:9", "claude-x", "sk-b");
    second["style"] = json!("anthropic");
    let c = client(
        vec![up("http://127.0.0.1:9", "gpt-a", "sk-a"), second],
        json!({}),
    );
    let err = Client::from_json(&c).expect_err("mixed styles in the loop");
    assert_eq!(err.code, ErrorCode::InvalidConfig);
    assert!(err.message.contains("client.upstreams[1].style"), "{err}");
    // translate takes the same config.
    assert!(toolnexus::translate::ClientConfig::from_json(&c).is_ok());
}

#[test]
fn upstreams_config_errors_name_the_key() {
    let cases = [
        (
            json!({"baseUrl": "http://x", "upstreams": [up("http://x", "m", "k")]}),
            "client.baseUrl and client.upstreams",
        ),
        (
            json!({"upstreams": []}),
            "client.upstreams must list 1 to 16",
        ),
        (
            json!({"upstreams": [{"baseUrl": "http://x", "model": "m", "retries": 1}]}),
            "client.upstreams[0]: unknown key 'retries'",
        ),
        (
            json!({"upstreams": [up("http://x", "m", "k"), {"baseUrl": "http://x"}]}),
            "client.upstreams[1].model is required",
        ),
        (
            json!({"baseUrl": "http://x", "model": "m", "cooldownMs": 5}),
            "client.cooldownMs applies only",
        ),
    ];
    for (config, expected) in cases {
        let err = toolnexus::translate::ClientConfig::from_json(&config).expect_err("refused");
        assert_eq!(err.code, ErrorCode::InvalidConfig);
        assert!(err.message.contains(expected), "{expected}: {err}");
    }
}

fn streamed_ask(c: &Client) -> (toolnexus::error::Result<Value>, Vec<String>) {
    let deltas: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = Arc::clone(&deltas);
    c.set_callback(
        Slot::OnEvent,
        Some(Arc::new(move |event: &Value, _: RunData| {
            if event["type"] == "text" {
                log.lock()
                    .expect("lock")
                    .push(event["delta"].as_str().unwrap_or("").to_string());
            }
            Ok(None)
        })),
    );
    let request = toolnexus::client::AskRequest {
        prompt: "Hi".into(),
        ..Default::default()
    };
    let out = c.ask(
        empty_toolkit(),
        &request,
        &CancelToken::new(),
        RunData::default(),
        true,
    );
    let deltas = deltas.lock().expect("lock").clone();
    (out, deltas)
}

#[test]
fn a_streamed_run_fails_over_before_any_byte_but_not_after_a_token() {
    let b = MockProvider::start(vec![Canned::text(200, STREAM_OK)
        .header("content-type", "text/event-stream")
        .repeating()]);
    let c = Client::from_json(&client(
        vec![
            up(&closed_port(), "model-a", "sk-a"),
            up(&b.base(), "model-b", "sk-b"),
        ],
        json!({}),
    ))
    .expect("client");
    let (out, deltas) = streamed_ask(&c);
    let result = out.expect("b streams the turn");
    assert_eq!(result["text"], "fine");
    assert_eq!(result["upstream"]["index"], 1);
    assert_eq!(deltas, vec!["fine"]);

    let a = raw_server(DIES_MID_STREAM);
    let b2 = MockProvider::start(vec![Canned::text(200, STREAM_OK)
        .header("content-type", "text/event-stream")
        .repeating()]);
    let c = Client::from_json(&client(
        vec![
            up(&a.base, "model-a", "sk-a"),
            up(&b2.base(), "model-b", "sk-b"),
        ],
        json!({"retries": 2}),
    ))
    .expect("client");
    let (out, deltas) = streamed_ask(&c);
    let err = out.expect_err("the stream broke after its first token");
    assert_eq!(err.code, ErrorCode::ProviderError, "{err}");
    assert_eq!(deltas, vec!["Hel"]);
    assert_eq!(a.requests.load(Ordering::SeqCst), 1);
    assert!(b2.requests().is_empty(), "no failover after output");
}
