//! The served A2A agent's reading of a request (src/a2a/mod.rs, SPEC §7B):
//! fuzzed bytes POSTed as JSON-RPC bodies to an agent (upstream's,
//! the 0.3 and the 1.0 wire, told apart by the method and the
//! `A2A-Version` header), through the agent's own `Beside::answer` as the
//! HTTP server calls it: the body parsed, the method classified, a
//! `message/send` / `SendMessage`'s params and message read (its text, its
//! `contextId`), the task stored and rendered for the wire. Each body
//! after the first may name the task the one before made as `$TASK`, so
//! `GetTask` / `tasks/cancel` reach a stored task.
//!
//! Nothing may panic; every answer is a 200 whose body is a JSON-RPC 2.0
//! response object (one of `result` / `error`, an integer error code and a
//! message, the request's `id` echoed when the request had one) or, for a streaming
//! send, server-sent events whose data is such an object; a `1.0` answer
//! carries the `A2A-Version` header. The runner answers at once (echoing
//! the message's text), so tasks end on their own.
//!
//! The first byte picks the `A2A-Version` header (bits 0-1: none, `1.0`,
//! `0.3`, ` 1`); the rest is up to four bodies separated by NUL bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use std::sync::{Arc, OnceLock};
use toolnexus::a2a::{A2aConfig, Agent, Runner, Turn};
use toolnexus::error::Error;
use toolnexus::mcp_server::{Beside, BesideRequest};
use toolnexus::toolkit::Toolkit;

fn toolkit() -> &'static Toolkit {
    static TK: OnceLock<Toolkit> = OnceLock::new();
    TK.get_or_init(|| {
        Toolkit::build_from_json(
            r#"{"builtins": false, "skills": [{"name": "hello", "description": "Says hello.", "content": "Hi."}]}"#,
        )
        .expect("the toolkit builds")
    })
}

/// Answers at once: done with the text, pending or failed as it says.
fn runner() -> Runner {
    Arc::new(|turn: Turn<'_>| {
        if turn.text.starts_with("pending") {
            return Ok(json!({"status": "pending", "pending": {"prompt": turn.text}}));
        }
        if turn.text.starts_with("fail") {
            return Err(Error::invalid_argument(turn.text));
        }
        Ok(json!({"status": "done", "text": turn.text}))
    })
}

/// The JSON-RPC response object `v` must be, for a request `req`.
fn check_response(v: &Value, req: Option<&Value>) {
    let Value::Object(m) = v else {
        panic!("the answer is no object: {v}");
    };
    assert_eq!(m.get("jsonrpc"), Some(&json!("2.0")), "{v}");
    assert!(m.contains_key("id"), "no id: {v}");
    assert!(
        m.contains_key("result") != m.contains_key("error"),
        "not one of result / error: {v}"
    );
    if let Some(e) = m.get("error") {
        assert!(e["code"].is_i64(), "{v}");
        assert!(e["message"].is_string(), "{v}");
    }
    // (A float id may not read back bit for bit: serde_json's float parse.)
    if let Some(id) = req.and_then(|r| r.get("id")).filter(|id| !id.is_f64()) {
        assert_eq!(&m["id"], id, "the id is not echoed: {v}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let mut headers = http::HeaderMap::new();
    match pick & 3 {
        1 => headers.insert("a2a-version", http::HeaderValue::from_static("1.0")),
        2 => headers.insert("a2a-version", http::HeaderValue::from_static("0.3")),
        3 => headers.insert("a2a-version", http::HeaderValue::from_static(" 1")),
        _ => None,
    };
    // A fresh agent (and memory store) per input: nothing piles up.
    let agent = Agent::new(A2aConfig::default(), toolkit(), runner(), None).expect("an agent");
    let mut last_task = String::new();
    for body in rest.split(|b| *b == 0).take(4) {
        let body = if last_task.is_empty() {
            body.to_vec()
        } else {
            String::from_utf8_lossy(body)
                .replace("$TASK", &last_task)
                .into_bytes()
        };
        let req = serde_json::from_slice::<Value>(&body).ok();
        let answer = agent.answer(&BesideRequest {
            method: "POST",
            path: "/",
            headers: &headers,
            body: &body,
            base: "http://127.0.0.1:9",
        });
        assert_eq!(answer.status, 200);
        let first = match answer.content_type {
            "application/json" => {
                let v: Value = serde_json::from_slice(&answer.body).expect("the answer is JSON");
                check_response(&v, req.as_ref());
                v
            }
            "text/event-stream" => {
                let text = std::str::from_utf8(&answer.body).expect("events are UTF-8");
                let data = text
                    .strip_prefix("data: ")
                    .and_then(|t| t.strip_suffix("\n\n"))
                    .unwrap_or_else(|| panic!("no one event: {text:?}"));
                let v: Value = serde_json::from_str(data).expect("the event is JSON");
                check_response(&v, req.as_ref());
                v
            }
            other => panic!("a {other} answer"),
        };
        let v10 = answer
            .headers
            .iter()
            .any(|(k, v)| *k == "a2a-version" && v == "1.0");
        let method = req
            .as_ref()
            .and_then(|r| r.get("method"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let names_v10 = headers
            .get("a2a-version")
            .is_some_and(|v| v.to_str().is_ok_and(|v| v.trim().starts_with('1')));
        if v10 {
            assert!(names_v10, "a 1.0 answer to a request that asked for none");
        }
        if names_v10 && req.is_some() && !method.contains('/') {
            assert!(v10, "a 1.0 request answered without the header");
        }
        let result = &first["result"];
        let task = result.get("task").unwrap_or(result);
        if let Some(id) = task.get("id").and_then(Value::as_str) {
            last_task = id.to_string();
        }
    }
});
