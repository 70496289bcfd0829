//! The client loop's own behaviour beyond the vectors: the whole-run
//! deadline against a provider that drips its answer, cancelling a run from
//! another thread, and a callback that fails.

mod translate_mock;

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;
use toolnexus::cancel::CancelToken;
use toolnexus::client::{empty_toolkit, Client, RunData, RunRequest, Slot};
use toolnexus::error::ErrorCode;
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

/// A run of "Hi" on the empty toolkit, never cancelled.
fn run_hi(c: &Client) -> toolnexus::error::Result<Value> {
    c.run(
        empty_toolkit(),
        &hi(),
        &CancelToken::new(),
        RunData::default(),
    )
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
    let err = run_hi(&c).expect_err("the run times out");
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
    let err = run_hi(&c).expect_err("the callback fails the run");
    assert_eq!(err.code, ErrorCode::CallbackError);
    assert!(
        err.message.contains("afterLLM") && err.message.contains("logger is down"),
        "{err}"
    );
    // Cleared, the same client runs to the end.
    c.set_callback(Slot::AfterLlm, None);
    let mock2 = MockProvider::start(vec![Canned::json(200, &answer)]);
    let c2 = client(&mock2.base(), json!({}));
    let ok = run_hi(&c2).expect("runs");
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
    let err = run_hi(&c).expect_err("bad reply");
    assert_eq!(err.code, ErrorCode::CallbackError);
    assert!(err.message.contains("beforeLLM"), "{err}");
    assert!(
        mock.requests().is_empty(),
        "no provider call after a bad hook reply"
    );
}

/// Collects the kinds (and tool names) of a run's events.
#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<String>>);

impl toolnexus::client::Observer for Recorder {
    fn event(&self, event: &toolnexus::client::Event<'_>) {
        use toolnexus::client::Event;
        let line = match event {
            Event::Llm { raw, .. } => format!("llm ok={}", raw.is_some()),
            Event::Usage { usage } => format!("usage {}", usage.total),
            Event::ToolCall { name, .. } => format!("tool_call {name}"),
            Event::ToolResult { name, result, .. } => {
                format!("tool_result {name} {}", result.is_error)
            }
            Event::Pending { request } => format!("pending {}", request["kind"]),
            Event::Done { result, .. } => format!("done {}", result.to_json()["status"]),
            Event::Failed { error, .. } => format!("failed {:?}", error.code),
        };
        if let Ok(mut v) = self.0.lock() {
            v.push(line);
        }
    }
}

#[test]
fn an_observer_sees_the_run_in_order() {
    let calls = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "todowrite",
                "arguments": "{\"todos\":[{\"id\":\"1\",\"text\":\"a\",\"completed\":false}]}"}},
            {"id": "c2", "type": "function", "function": {"name": "question",
                "arguments": "{\"questions\":[{\"question\":\"Who?\"}]}"}}]}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}});
    let answer = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}});
    let mock = MockProvider::start(vec![Canned::json(200, &calls), Canned::json(200, &answer)]);
    let c = client(&mock.base(), json!({}));
    let rec = Arc::new(Recorder::default());
    c.set_observer(Some(rec.clone()));
    c.set_callback(
        Slot::WaitFor,
        Some(Arc::new(|_: &Value, _: RunData| {
            Ok(Some(json!({"ok": true, "data": "Ada"})))
        })),
    );
    let tk = toolnexus::toolkit::Toolkit::build_from_json(
        r#"{"builtins":{"tools":{"apply_patch":false,"bash":false,"edit":false,"glob":false,"grep":false,"read":false,"webfetch":false,"write":false}}}"#,
    )
    .expect("toolkit");
    let out = c
        .run(&tk, &hi(), &CancelToken::new(), RunData::default())
        .expect("runs");
    assert_eq!(out["status"], "done");
    let seen = rec.0.lock().map(|v| v.clone()).unwrap_or_default();
    assert_eq!(
        seen,
        [
            "llm ok=true",
            "usage 2",
            "tool_call todowrite",
            "tool_call question",
            "pending \"question\"",
            "tool_result todowrite false",
            "tool_result question false",
            "llm ok=true",
            "usage 4",
            "done \"done\"",
        ]
    );
}

#[path = "mcp_support/mod.rs"]
mod mcp_support;

/// The MCP calls of one turn run together on the calling thread
/// (`Toolkit::execute_concurrently`); a turn that mixes in a builtin runs
/// its calls on threads. Either way every call gets its own result, fed
/// back in call order, in `toolCalls` and in the metrics — with the SDK
/// server (official MCP Python SDK) over stdio.
#[test]
fn the_mcp_calls_of_a_turn_come_back_in_call_order() {
    let call = |id: &str, name: &str, args: &str| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}});
    let turns = |calls: Vec<Value>| {
        vec![
            Canned::json(
                200,
                &json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": null, "tool_calls": calls}}]}),
            ),
            Canned::json(
                200,
                &json!({"choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "done"}}]}),
            ),
        ]
    };
    let tk = toolnexus::toolkit::Toolkit::build_from_json(
        &json!({"builtins": {"tools": {"apply_patch": false, "bash": false, "edit": false,
                 "glob": false, "grep": false, "read": false, "webfetch": false,
                 "write": false, "question": false}},
                "mcpConfig": {"mcpServers": {"sdk": {"command": [
                    "python3", mcp_support::server_script("sdk_server.py"), "stdio"],
                    "timeout": 20000}}}})
        .to_string(),
    )
    .expect("toolkit");
    let mcp_only = vec![
        call("c1", "sdk_add", r#"{"a":2,"b":3}"#),
        call("c2", "sdk_explode", r#"{"reason":"on purpose"}"#),
        call("c3", "sdk_echo", r#"{"text":"third"}"#),
        call("c4", "sdk_add", r#"{"a":40,"b":2}"#),
    ];
    let mut mixed = mcp_only.clone();
    mixed.insert(
        1,
        call(
            "c5",
            "todowrite",
            r#"{"todos":[{"id":"1","text":"a","completed":false}]}"#,
        ),
    );
    for (calls, names) in [
        (
            mcp_only,
            vec!["sdk_add", "sdk_explode", "sdk_echo", "sdk_add"],
        ),
        (
            mixed,
            vec!["sdk_add", "todowrite", "sdk_explode", "sdk_echo", "sdk_add"],
        ),
    ] {
        let ids: Vec<String> = calls
            .iter()
            .map(|c| c["id"].as_str().unwrap_or_default().to_string())
            .collect();
        let mock = MockProvider::start(turns(calls));
        let c = client(&mock.base(), json!({}));
        let out = c
            .run(&tk, &hi(), &CancelToken::new(), RunData::default())
            .expect("runs");
        assert_eq!(out["text"], "done");
        let records = out["toolCalls"].as_array().cloned().unwrap_or_default();
        let got: Vec<&str> = records
            .iter()
            .map(|r| r["name"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(got, names);
        let outputs: Vec<(String, bool)> = records
            .iter()
            .filter(|r| r["name"] != "todowrite")
            .map(|r| {
                (
                    r["output"].as_str().unwrap_or_default().to_string(),
                    r["isError"] == true,
                )
            })
            .collect();
        // Results come back as the SDK shapes them (`5` or `{"result":5}`).
        assert!(
            !outputs[0].1 && outputs[0].0.contains('5') && !outputs[0].0.contains("42"),
            "{outputs:?}"
        );
        assert!(
            outputs[1].1 && outputs[1].0.contains("explode"),
            "{outputs:?}"
        );
        assert!(
            !outputs[2].1 && outputs[2].0.contains("third"),
            "{outputs:?}"
        );
        assert!(!outputs[3].1 && outputs[3].0.contains("42"), "{outputs:?}");
        // The second request carries one tool message per call, in call order.
        let sent = mock.requests();
        let body: Value = serde_json::from_slice(&sent[1].body).expect("JSON body");
        let fed: Vec<&str> = body["messages"]
            .as_array()
            .map(|m| {
                m.iter()
                    .filter(|m| m["role"] == "tool")
                    .map(|m| m["tool_call_id"].as_str().unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(fed, ids);
        let metrics = c.metrics_text();
        assert!(
            metrics.contains(
                "toolnexus_tool_calls_total{tool=\"sdk_add\",source=\"mcp\",is_error=\"false\",pending=\"false\"} 2"
            ),
            "{metrics}"
        );
        assert!(
            metrics.contains(
                "toolnexus_tool_calls_total{tool=\"sdk_explode\",source=\"mcp\",is_error=\"true\",pending=\"false\"} 1"
            ),
            "{metrics}"
        );
    }
}

/// More tool calls in one answer than a turn may run: the run fails with
/// the cap before any call runs.
#[test]
fn an_answer_asking_for_more_calls_than_the_cap_fails_the_run() {
    let calls: Vec<Value> = (0..1025)
        .map(|i| {
            json!({"id": format!("c{i}"), "type": "function",
                        "function": {"name": "nothing", "arguments": "{}"}})
        })
        .collect();
    let answer = json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": calls}}]});
    let done = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "ok"}}]});
    let mock = MockProvider::start(vec![Canned::json(200, &answer), Canned::json(200, &done)]);
    let c = client(&mock.base(), json!({}));
    let err = run_hi(&c).expect_err("too many calls");
    assert_eq!(err.code, ErrorCode::ProviderError, "{err}");
    assert!(err.message.contains("1025 tool calls"), "{err}");
    assert!(err.message.contains("at most 1024"), "{err}");
}

#[test]
fn the_calls_of_a_turn_run_on_a_bounded_pool_and_come_back_in_call_order() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use toolnexus::native::native_tool;
    use toolnexus::tool::ToolResult;
    // More calls than the pool holds: 300 calls of a tool that takes 5 ms.
    let n = 300;
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let tk =
        toolnexus::toolkit::Toolkit::build_from_json(r#"{"builtins":false}"#).expect("toolkit");
    let (r, m) = (Arc::clone(&running), Arc::clone(&most));
    tk.register(native_tool(
        "slow",
        "takes a while",
        None,
        Arc::new(move |args: &Value, _ctx: &toolnexus::tool::ExecContext| {
            let now = r.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(5));
            r.fetch_sub(1, Ordering::SeqCst);
            ToolResult::ok(format!("call {}", args["i"]))
        }),
    ));
    let calls: Vec<Value> = (0..n)
        .map(|i| {
            json!({"id": format!("c{i}"), "type": "function",
            "function": {"name": "slow", "arguments": format!("{{\"i\":{i}}}")}})
        })
        .collect();
    let mock = MockProvider::start(vec![
        Canned::json(
            200,
            &json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null, "tool_calls": calls}}]}),
        ),
        Canned::json(
            200,
            &json!({"choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "done"}}]}),
        ),
    ]);
    let c = client(&mock.base(), json!({}));
    let out = c
        .run(&tk, &hi(), &CancelToken::new(), RunData::default())
        .expect("runs");
    assert_eq!(out["text"], "done");
    let most = most.load(Ordering::SeqCst);
    assert!(
        most <= toolnexus::client::tool_workers(),
        "{most} calls ran at once, more than the pool's {}",
        toolnexus::client::tool_workers()
    );
    assert!(most > 1, "the calls of a turn still run in parallel");
    // Fed back in call order, every one of them.
    let second = mock.requests()[1].json_body();
    let fed: Vec<(String, String)> = second["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|x| x["role"] == "tool")
                .map(|x| {
                    (
                        x["tool_call_id"].as_str().unwrap_or_default().to_string(),
                        x["content"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let want: Vec<(String, String)> = (0..n)
        .map(|i| (format!("c{i}"), format!("call {i}")))
        .collect();
    assert_eq!(fed, want);
}
