//! The client loop's own behaviour beyond the vectors: the whole-run
//! deadline against a provider that drips its answer, cancelling a run from
//! another thread, and a callback that fails.

mod translate_mock;

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;
use toolnexus::client::{empty_toolkit, Client, RunData, RunRequest, Slot};
use toolnexus::error::ErrorCode;
use toolnexus::translate::CancelToken;
use translate_mock::{Canned, MockProvider};

fn client(base: &str, extra: Value) -> Client {
    let mut cfg =
        json!({"baseUrl": base, "style": "openai", "model": "m", "apiKey": "k", "retries": 0});
    if let (Some(c), Some(e)) = (cfg.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    Client::from_json(&cfg).expect("client")
}

fn hi() -> RunRequest {
    RunRequest {
        prompt: "Hi".into(),
        history: Vec::new(),
    }
}

/// A server whose answer takes about 3 s to arrive: a head, then 150 spaces
/// one every 20 ms, then a whole final answer. Without a deadline over the
/// whole response, a run against it succeeds.
fn drip_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = [0u8; 65536];
                let _ = stream.read(&mut buf);
                let answer = json!({"choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "late"}}]})
                .to_string();
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    150 + answer.len()
                );
                if stream.write_all(head.as_bytes()).is_err() {
                    return;
                }
                for _ in 0..150 {
                    std::thread::sleep(Duration::from_millis(20));
                    if stream.write_all(b" ").is_err() {
                        return;
                    }
                }
                let _ = stream.write_all(answer.as_bytes());
            });
        }
    });
    format!("http://{addr}")
}

#[test]
fn the_whole_run_deadline_bounds_a_dripping_answer() {
    let c = client(&drip_server(), json!({"timeoutMs": 300}));
    let err = c
        .run(
            empty_toolkit(),
            &hi(),
            &CancelToken::new(),
            RunData::default(),
        )
        .expect_err("the run times out");
    assert_eq!(err.code, ErrorCode::Timeout, "{err}");
    assert!(err.message.contains("timeoutMs (300 ms)"), "{err}");
}

#[test]
fn a_run_is_cancelled_from_another_thread() {
    let slow = Canned::json(200, &json!({"choices": []})).delay(30_000);
    let mock = MockProvider::start(vec![slow]);
    let c = client(&mock.base(), json!({}));
    let token = CancelToken::new();
    let trigger = token.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        trigger.cancel();
    });
    let err = c
        .run(empty_toolkit(), &hi(), &token, RunData::default())
        .expect_err("cancelled");
    assert_eq!(err.code, ErrorCode::Cancelled, "{err}");
    let _ = t.join();
}

#[test]
fn a_failing_callback_ends_the_run_naming_its_slot() {
    let answer = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "hello"}}]});
    let mock = MockProvider::start(vec![Canned::json(200, &answer)]);
    let c = client(&mock.base(), json!({}));
    c.set_callback(
        Slot::AfterLlm,
        Some(Arc::new(|_: &Value, _: RunData| {
            Err("the host's logger is down".to_string())
        })),
    );
    let err = c
        .run(
            empty_toolkit(),
            &hi(),
            &CancelToken::new(),
            RunData::default(),
        )
        .expect_err("the callback fails the run");
    assert_eq!(err.code, ErrorCode::CallbackError);
    assert!(
        err.message.contains("afterLLM") && err.message.contains("logger is down"),
        "{err}"
    );
    // Cleared, the same client runs to the end.
    c.set_callback(Slot::AfterLlm, None);
    let mock2 = MockProvider::start(vec![Canned::json(200, &answer)]);
    let c2 = client(&mock2.base(), json!({}));
    let ok = c2
        .run(
            empty_toolkit(),
            &hi(),
            &CancelToken::new(),
            RunData::default(),
        )
        .expect("runs");
    assert_eq!(ok["text"], "hello");
    assert_eq!(ok["status"], "done");
}

#[test]
fn a_bad_reply_shape_is_a_callback_error() {
    let answer = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "hello"}}]});
    let mock = MockProvider::start(vec![Canned::json(200, &answer)]);
    let c = client(&mock.base(), json!({}));
    c.set_callback(
        Slot::BeforeLlm,
        Some(Arc::new(|_: &Value, _: RunData| {
            Ok(Some(json!({"messages": "not a list"})))
        })),
    );
    let err = c
        .run(
            empty_toolkit(),
            &hi(),
            &CancelToken::new(),
            RunData::default(),
        )
        .expect_err("bad reply");
    assert_eq!(err.code, ErrorCode::CallbackError);
    assert!(err.message.contains("beforeLLM"), "{err}");
    assert!(
        mock.requests().is_empty(),
        "no provider call after a bad hook reply"
    );
}
