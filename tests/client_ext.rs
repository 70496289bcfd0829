//! What runs around the client loop (SPEC §8): streamed runs of both styles
//! against an SSE provider on 127.0.0.1 with their events in order, the
//! onMetric events and the Prometheus text after real runs, `ask` with an
//! id over the in-memory and a host store, and the in-process client whose
//! turns a generate function answers.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;
use toolnexus::cancel::CancelToken;
use toolnexus::client::{AskRequest, Client, HostFn, RunData, RunRequest, Slot};
use toolnexus::error::ErrorCode;
use toolnexus::tool::{ExecContext, Source, Tool, ToolResult};
use toolnexus::toolkit::Toolkit;

type Handler = dyn Fn(&Value) -> (&'static str, String) + Send + Sync;

/// A provider on 127.0.0.1: each request's JSON body goes to `handler`,
/// whose answer (content type, body) is written in 7-byte pieces. Keeps
/// every request body.
struct Provider {
    port: u16,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Provider {
    fn start(handler: impl Fn(&Value) -> (&'static str, String) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let kept = Arc::clone(&bodies);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (handler, kept) = (Arc::clone(&handler), Arc::clone(&kept));
                thread::spawn(move || {
                    let Ok(mut out) = stream.try_clone() else {
                        return;
                    };
                    let mut reader = BufReader::new(stream);
                    loop {
                        let mut length = 0usize;
                        let mut line = String::new();
                        loop {
                            line.clear();
                            match reader.read_line(&mut line) {
                                Ok(0) | Err(_) => return,
                                Ok(_) if line == "\r\n" => break,
                                Ok(_) => {
                                    let lower = line.to_ascii_lowercase();
                                    if let Some(v) = lower.strip_prefix("content-length:") {
                                        length = v.trim().parse().unwrap_or(0);
                                    }
                                }
                            }
                        }
                        let mut body = vec![0; length];
                        if reader.read_exact(&mut body).is_err() {
                            return;
                        }
                        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let (kind, answer) = handler(&request);
                        kept.lock().expect("bodies").push(request);
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n",
                            answer.len()
                        );
                        if out.write_all(head.as_bytes()).is_err() {
                            return;
                        }
                        for piece in answer.as_bytes().chunks(7) {
                            if out.write_all(piece).and_then(|_| out.flush()).is_err() {
                                return;
                            }
                            thread::sleep(Duration::from_micros(200));
                        }
                    }
                });
            }
        });
        Provider { port, bodies }
    }

    fn client(&self, style: &str) -> Client {
        let base = match style {
            "anthropic" => format!("http://127.0.0.1:{}", self.port),
            _ => format!("http://127.0.0.1:{}/v1", self.port),
        };
        Client::from_json(&json!({"baseUrl": base, "style": style, "model": "m",
                                  "apiKey": "k", "retryBaseMs": 1}))
        .expect("client")
    }

    fn bodies(&self) -> Vec<Value> {
        self.bodies.lock().expect("bodies").clone()
    }
}

fn sse(events: &[Value]) -> String {
    let mut s: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    s.push_str("data: [DONE]\n\n");
    s
}

fn anthropic_sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

/// Whether the request already carries a tool result.
fn answered(request: &Value) -> bool {
    request["messages"].as_array().is_some_and(|m| {
        m.iter().any(|m| {
            m["role"] == "tool"
                || m["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
        })
    })
}

/// An OpenAI provider that streams: a tool call to `add` split mid-JSON,
/// then (once the result is back) "The sum is 5." in two deltas.
fn openai_streaming(request: &Value) -> (&'static str, String) {
    if !answered(request) {
        return (
            "text/event-stream",
            sse(&[
                json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"Adding."}}]}),
                json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":"}}]}}]}),
                json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"2,\"b\":3}"}}]}}]}),
                json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
                json!({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}),
            ]),
        );
    }
    (
        "text/event-stream",
        sse(&[
            json!({"choices":[{"index":0,"delta":{"content":"The sum "}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"is 5."},"finish_reason":"stop"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":6,"completion_tokens":1,"total_tokens":7}}),
        ]),
    )
}

fn anthropic_streaming(request: &Value) -> (&'static str, String) {
    let start = json!({"type":"message_start","message":{"id":"msg","type":"message","role":"assistant",
        "model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":0}}});
    if !answered(request) {
        return (
            "text/event-stream",
            anthropic_sse(&[
                start,
                json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
                json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Adding."}}),
                json!({"type":"content_block_stop","index":0}),
                json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"c1","name":"add","input":{}}}),
                json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 2,"}}),
                json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"b\": 3}"}}),
                json!({"type":"content_block_stop","index":1}),
                json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":4}}),
                json!({"type":"message_stop"}),
            ]),
        );
    }
    (
        "text/event-stream",
        anthropic_sse(&[
            start,
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The sum "}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"is 5."}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}),
            json!({"type":"message_stop"}),
        ]),
    )
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

/// A callback that keeps every event it gets.
fn recorder() -> (HostFn, Arc<Mutex<Vec<Value>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&log);
    let f: HostFn = Arc::new(move |e: &Value, _: RunData| {
        kept.lock().map_err(|e| e.to_string())?.push(e.clone());
        Ok(None)
    });
    (f, log)
}

fn ask(prompt: &str, id: Option<&str>) -> AskRequest {
    AskRequest {
        prompt: prompt.into(),
        id: id.map(str::to_string),
        history: Vec::new(),
    }
}

/// A streamed `ask` of `prompt` (no conversation id) on `tk`.
fn streamed(client: &Client, tk: &Toolkit, prompt: &str) -> toolnexus::error::Result<Value> {
    client.ask(
        tk,
        &ask(prompt, None),
        &CancelToken::new(),
        RunData(0),
        true,
    )
}

/// The events of a streamed run with their bulky parts left out.
fn outline(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .map(|e| match e["type"].as_str() {
            Some("done") => {
                json!({"type":"done","text":e["result"]["text"],"status":e["result"]["status"]})
            }
            _ => e.clone(),
        })
        .collect()
}

fn streamed_run_gives_its_events_in_order(
    style: &str,
    handler: fn(&Value) -> (&'static str, String),
) {
    let provider = Provider::start(handler);
    let client = provider.client(style);
    let (on_event, events) = recorder();
    client.set_callback(Slot::OnEvent, Some(on_event));
    let tk = adder();
    let result = streamed(&client, &tk, "add 2 and 3").expect("streamed run");
    assert_eq!(result["text"], "The sum is 5.");
    assert_eq!(result["turns"], 2);
    assert_eq!(result["toolCalls"][0]["output"], "5");
    let usage = result["usage"].clone();
    assert_eq!(
        outline(&events.lock().expect("events")),
        [
            json!({"type":"text","delta":"Adding."}),
            json!({"type":"tool_call","id":"c1","name":"add","args":{"a":2,"b":3}}),
            json!({"type":"tool_result","id":"c1","name":"add","output":"5","isError":false}),
            json!({"type":"text","delta":"The sum "}),
            json!({"type":"text","delta":"is 5."}),
            json!({"type":"usage","usage":usage}),
            json!({"type":"done","text":"The sum is 5.","status":"done"}),
        ]
    );
    for body in provider.bodies() {
        assert_eq!(body["stream"], true);
        if style == "openai" {
            assert_eq!(body["stream_options"], json!({"include_usage": true}));
        } else {
            assert!(body.get("stream_options").is_none());
        }
    }
    // The streamed transcript is what a non-streamed one would be: it goes
    // back to the provider as the second turn's messages.
    let second = &provider.bodies()[1]["messages"];
    assert!(second.to_string().contains("Adding."), "{second}");
}

#[test]
fn an_openai_streamed_run_gives_text_tool_and_end_events_in_order() {
    streamed_run_gives_its_events_in_order("openai", openai_streaming);
}

#[test]
fn an_anthropic_streamed_run_gives_text_tool_and_end_events_in_order() {
    streamed_run_gives_its_events_in_order("anthropic", anthropic_streaming);
}

#[test]
fn on_metric_and_the_prometheus_text_follow_real_runs() {
    let provider = Provider::start(openai_streaming);
    let client = provider.client("openai");
    let (on_metric, metrics) = recorder();
    client.set_callback(Slot::OnMetric, Some(on_metric));
    let tk = adder();
    let run = RunRequest {
        prompt: "add".into(),
        history: Vec::new(),
    };
    streamed(&client, &tk, "add").expect("streamed run");
    let events = metrics.lock().expect("metrics").clone();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(kinds, ["llm", "tool", "llm", "run"]);
    assert_eq!(events[0]["promptTokens"], 5);
    assert_eq!(events[0]["completionTokens"], 4);
    assert_eq!(events[0]["status"], "ok");
    assert_eq!(events[1]["tool"], "add");
    assert_eq!(events[1]["source"], "native");
    assert_eq!(events[1]["isError"], false);
    assert_eq!(
        (
            &events[3]["turns"],
            &events[3]["toolCalls"],
            &events[3]["totalTokens"]
        ),
        (&json!(2), &json!(1), &json!(16))
    );
    assert!(events[3].get("error").is_none());

    // A run whose provider fails: an llm error and a run error.
    let failing = Client::from_json(&json!({"baseUrl": "http://127.0.0.1:9/v1", "model": "m",
                                            "apiKey": "k", "retries": 0}))
    .expect("client");
    let e = failing
        .run(&tk, &run, &CancelToken::new(), RunData(0))
        .expect_err("nothing listens on port 9");
    assert_eq!(e.code, ErrorCode::ProviderError);
    let text = failing.metrics_text();
    assert!(
        text.contains("toolnexus_llm_requests_total{model=\"m\",status=\"error\"} 1\n"),
        "{text}"
    );
    assert!(text.ends_with(
        "# TYPE toolnexus_run_errors_total counter\ntoolnexus_run_errors_total{model=\"m\"} 1\n"
    ));

    let text = client.metrics_text();
    for line in [
        "toolnexus_llm_requests_total{model=\"m\",status=\"ok\"} 2\n",
        "toolnexus_llm_tokens_total{type=\"completion\"} 5\n",
        "toolnexus_llm_tokens_total{type=\"prompt\"} 11\n",
        "toolnexus_llm_request_duration_seconds_count{model=\"m\"} 2\n",
        "toolnexus_tool_calls_total{tool=\"add\",source=\"native\",is_error=\"false\",pending=\"false\"} 1\n",
        "toolnexus_tool_duration_seconds_count{tool=\"add\"} 1\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    assert!(text.ends_with("# TYPE toolnexus_run_errors_total counter\n"));
}

/// A provider whose answer is the number of messages it was sent.
fn counting(request: &Value) -> (&'static str, String) {
    let n = request["messages"].as_array().map_or(0, Vec::len);
    (
        "application/json",
        json!({"choices":[{"index":0,"message":{"role":"assistant","content":n.to_string()},"finish_reason":"stop"}]})
            .to_string(),
    )
}

#[test]
fn ask_with_an_id_remembers_the_conversation_and_without_is_stateless() {
    let provider = Provider::start(counting);
    let client = provider.client("openai");
    let tk = adder();
    let go = |prompt: &str, id: Option<&str>| -> String {
        let r = client
            .ask(
                &tk,
                &ask(prompt, id),
                &CancelToken::new(),
                RunData(0),
                false,
            )
            .expect("ask");
        r["text"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(go("solo", None), "1");
    assert_eq!(go("first", Some("s1")), "1");
    assert_eq!(go("second", Some("s1")), "3");
    assert_eq!(go("other", Some("s2")), "1");
    assert_eq!(go("third", Some("s1")), "5");
    let kept = client.conversation("s1").expect("store").expect("s1 saved");
    assert_eq!(kept.len(), 6);
    assert_eq!(kept[4], json!({"role":"user","content":"third"}));
    assert_eq!(client.conversation("never").expect("store"), None);
}

#[test]
fn ask_uses_the_hosts_store_when_both_store_slots_are_set() {
    let provider = Provider::start(counting);
    let client = provider.client("openai");
    let tk = adder();
    let (save, saved) = recorder();
    client.set_callback(Slot::StoreSave, Some(save));
    let e = client
        .ask(
            &tk,
            &ask("q", Some("t")),
            &CancelToken::new(),
            RunData(0),
            false,
        )
        .expect_err("one store slot of two");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("storeGet"), "{}", e.message);
    let kept = Arc::clone(&saved);
    let get: HostFn = Arc::new(move |e: &Value, data: RunData| {
        assert_eq!(data, RunData(7));
        let log = kept.lock().map_err(|e| e.to_string())?;
        Ok(log
            .iter()
            .rev()
            .find(|s| s["id"] == e["id"])
            .map(|s| s["messages"].clone()))
    });
    client.set_callback(Slot::StoreGet, Some(get));
    for (prompt, want) in [("a", "1"), ("b", "3")] {
        let r = client
            .ask(
                &tk,
                &ask(prompt, Some("t")),
                &CancelToken::new(),
                RunData(7),
                false,
            )
            .expect("ask");
        assert_eq!(r["text"], want);
    }
    let saved = saved.lock().expect("saved");
    assert_eq!(saved.len(), 2);
    assert_eq!(saved[1]["id"], "t");
    assert_eq!(saved[1]["messages"].as_array().map(Vec::len), Some(4));
    // The client's own store was not touched.
    assert_eq!(client.conversation("t").expect("store"), None);
}

#[test]
fn an_in_process_client_runs_the_loop_with_no_http() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    let generate: HostFn = Arc::new(move |request: &Value, _: RunData| {
        kept.lock()
            .map_err(|e| e.to_string())?
            .push(request.clone());
        if request["turn"] == 0 {
            Ok(Some(
                json!({"toolCalls": [{"name": "add", "arguments": {"a": 2, "b": 3}}],
                           "usage": {"promptTokens": 4, "completionTokens": 1}}),
            ))
        } else {
            let result = request["messages"]
                .as_array()
                .and_then(|m| m.iter().find(|m| m["role"] == "tool"))
                .map(|m| m["content"].clone())
                .unwrap_or(Value::Null);
            Ok(Some(
                json!({"content": format!("sum is {}", result.as_str().unwrap_or("?"))}),
            ))
        }
    });
    let client = Client::in_process(
        &json!({"model": "local", "systemPrompt": "be brief"}),
        generate,
    )
    .expect("in-process client");
    let tk = adder();
    let run = RunRequest {
        prompt: "add 2 and 3".into(),
        history: Vec::new(),
    };
    let result = client
        .run(&tk, &run, &CancelToken::new(), RunData(0))
        .expect("run");
    assert_eq!(result["text"], "sum is 5");
    assert_eq!(result["toolCallCount"], 1);
    assert_eq!(result["turns"], 2);
    assert_eq!(
        result["usage"],
        json!({"promptTokens":4,"completionTokens":1,"totalTokens":5})
    );
    let seen = seen.lock().expect("seen");
    assert_eq!(seen[0]["model"], "local");
    assert_eq!(
        seen[0]["messages"],
        json!([{"role":"system","content":"be brief"},{"role":"user","content":"add 2 and 3"}])
    );
    assert_eq!(seen[0]["tools"][0]["function"]["name"], "add");
    assert_eq!(seen[1]["messages"][2]["tool_calls"][0]["id"], "call_0");
    assert!(client
        .metrics_text()
        .contains("toolnexus_llm_requests_total{model=\"local\",status=\"ok\"} 2\n"));

    // Streaming is refused; a failing or misshapen generate ends the run.
    let e = client
        .ask(&tk, &ask("q", None), &CancelToken::new(), RunData(0), true)
        .expect_err("no streaming");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    for answer in [
        Err("model not loaded".to_string()),
        Ok(Some(json!({"content": 3}))),
    ] {
        let answer = Arc::new(answer);
        let generate: HostFn = Arc::new(move |_: &Value, _: RunData| (*answer).clone());
        let bad = Client::in_process(&json!({"model": "local"}), generate).expect("client");
        let e = bad
            .run(&tk, &run, &CancelToken::new(), RunData(0))
            .expect_err("failing generate");
        assert_eq!(e.code, ErrorCode::CallbackError);
        assert!(e.message.contains("generate"), "{}", e.message);
    }
    let e = Client::in_process(
        &json!({"model": "local", "baseUrl": "http://x"}),
        Arc::new(|_: &Value, _: RunData| Ok(None)),
    )
    .expect_err("no endpoint keys");
    assert_eq!(e.code, ErrorCode::InvalidConfig);
    assert!(e.message.contains("baseUrl"), "{}", e.message);
}

/// A toolkit whose `login` tool suspends until it is re-run with an answer.
fn suspending() -> Toolkit {
    let tk = Toolkit::build_from_json(r#"{"builtins":false}"#).expect("toolkit");
    let login = |_: &Value, ctx: &ExecContext| match &ctx.answer {
        Some(_) => ToolResult::ok("logged in"),
        None => {
            let mut meta = serde_json::Map::new();
            meta.insert(
                "pending".into(),
                json!({"id": "r1", "kind": "authorization", "prompt": "sign in", "url": "https://x/auth"}),
            );
            ToolResult::ok("waiting").with_metadata(meta)
        }
    };
    tk.register(Tool::new(
        "login",
        "",
        None,
        Source::Native,
        Arc::new(login),
    ));
    tk
}

fn login_then_text(request: &Value) -> (&'static str, String) {
    if !answered(request) {
        return (
            "text/event-stream",
            sse(&[
                json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c9","type":"function","function":{"name":"login","arguments":"{}"}}]}}]}),
            ]),
        );
    }
    (
        "text/event-stream",
        sse(&[json!({"choices":[{"index":0,"delta":{"content":"in"}}]})]),
    )
}

#[test]
fn a_suspension_is_a_pending_event_and_a_pending_metric_never_an_error() {
    // No waitFor: the run halts; the placeholder is no tool_result.
    let provider = Provider::start(login_then_text);
    let client = provider.client("openai");
    let (on_event, events) = recorder();
    client.set_callback(Slot::OnEvent, Some(on_event));
    let tk = suspending();
    let result = streamed(&client, &tk, "log in").expect("halted run");
    assert_eq!(result["status"], "pending");
    let types: Vec<String> = events
        .lock()
        .expect("events")
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(types, ["tool_call", "pending", "usage", "done"]);
    assert_eq!(events.lock().expect("events")[1]["request"]["id"], "r1");
    assert!(client.metrics_text().contains(
        "toolnexus_tool_calls_total{tool=\"login\",source=\"native\",is_error=\"false\",pending=\"true\"} 1\n"
    ));

    // With a waitFor: the pending event comes before waitFor is asked, then
    // the re-run's result.
    let client = provider.client("openai");
    let (on_event, events) = recorder();
    client.set_callback(Slot::OnEvent, Some(on_event));
    let wait: HostFn = Arc::new(move |request: &Value, _: RunData| {
        Ok(Some(json!({"id": request["id"], "ok": true})))
    });
    client.set_callback(Slot::WaitFor, Some(wait));
    let result = streamed(&client, &tk, "log in").expect("resolved run");
    assert_eq!(result["text"], "in");
    let events = events.lock().expect("events");
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        types,
        [
            "tool_call",
            "pending",
            "tool_result",
            "text",
            "usage",
            "done"
        ]
    );
    assert_eq!(events[2]["output"], "logged in");
    let text = client.metrics_text();
    assert!(
        text.contains("pending=\"true\"} 1\n")
            && text.contains("is_error=\"false\",pending=\"false\"} 1\n"),
        "{text}"
    );
}

/// An MCP tool's progress (tests/mcp_servers/sdk_progress_server.py over
/// stdio) comes to `onEvent` as `tool_progress` events, between the call's
/// `tool_call` and its `tool_result`, in order (issue 28).
#[test]
fn an_mcp_tools_progress_is_a_tool_progress_event_of_a_streamed_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("log").to_string_lossy().into_owned();
    let args = json!({"steps": 4, "log": log}).to_string();
    let provider = Provider::start(move |request: &Value| {
        if !answered(request) {
            return (
                "text/event-stream",
                sse(&[
                    json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"p_work","arguments":args}}]}}]}),
                ]),
            );
        }
        (
            "text/event-stream",
            sse(&[json!({"choices":[{"index":0,"delta":{"content":"ok"}}]})]),
        )
    });
    let client = provider.client("openai");
    let (on_event, events) = recorder();
    client.set_callback(Slot::OnEvent, Some(on_event));
    let script = format!(
        "{}/tests/mcp_servers/sdk_progress_server.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let python = std::env::var("TOOLNEXUS_PYTHON").unwrap_or_else(|_| "python3".into());
    let config = json!({"builtins": false, "mcpConfig": {"mcpServers": {"p": {
        "command": [python, script, "stdio"], "timeout": 20000}}}});
    let tk = Toolkit::build_from_json(&config.to_string()).expect("toolkit");
    let result = streamed(&client, &tk, "work").expect("streamed run");
    assert_eq!(result["text"], "ok");
    let events = events.lock().expect("events");
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default())
        .collect();
    // The server's last progress may race its answer (a progress that
    // comes once the call is over is dropped): 1 to 4 of them.
    let heard = kinds.iter().filter(|k| **k == "tool_progress").count();
    assert!((1..=4).contains(&heard), "{events:?}");
    let mut want = vec!["tool_call"];
    want.extend(std::iter::repeat_n("tool_progress", heard));
    want.extend(["tool_result", "text", "usage", "done"]);
    assert_eq!(kinds, want, "{events:?}");
    assert!(
        events[1..=heard].contains(
            &json!({"type": "tool_progress", "id": "c1", "name": "p_work",
                    "progress": 1.0, "total": 4.0, "message": "step 1"})
        ),
        "{events:?}"
    );
}

/// An OpenAI provider that answers whole: a call to `add`, then the sum.
fn openai_whole(request: &Value) -> (&'static str, String) {
    let message = if answered(request) {
        json!({"role":"assistant","content":"The sum is 5."})
    } else {
        json!({"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
            "function":{"name":"add","arguments":"{\"a\":2,\"b\":3}"}}]})
    };
    (
        "application/json",
        json!({"choices":[{"index":0,"message":message,"finish_reason":"stop"}],
               "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})
        .to_string(),
    )
}

fn run_add(client: &Client, streamed: bool) -> toolnexus::error::Result<Value> {
    let request = RunRequest {
        prompt: "add 2 and 3".into(),
        history: Vec::new(),
    };
    let tk = adder();
    if streamed {
        self::streamed(client, &tk, "add 2 and 3")
    } else {
        client.run(&tk, &request, &CancelToken::new(), RunData(0))
    }
}

#[test]
fn body_transform_sees_the_body_after_request_params_and_its_reply_goes_on_the_wire() {
    let provider = Provider::start(openai_whole);
    let base = format!("http://127.0.0.1:{}/v1", provider.port);
    let config = json!({"baseUrl": base, "style": "openai", "model": "m", "apiKey": "k",
                        "requestParams": {"temperature": 0.25}});
    let client = Client::from_json(&config).expect("client");
    let (seen, events) = recorder();
    let transform: HostFn = Arc::new(move |body: &Value, data: RunData| {
        seen(body, data)?;
        let mut body = body.clone();
        body["metadata"] = json!({"via": "bodyTransform"});
        if let Some(m) = body.as_object_mut() {
            m.remove("temperature");
        }
        Ok(Some(body))
    });
    client.set_callback(Slot::BodyTransform, Some(transform));
    let result = run_add(&client, false).expect("run");
    assert_eq!(result["text"], "The sum is 5.");
    // Called once per LLM call, after requestParams were merged.
    let events = events.lock().expect("events").clone();
    assert_eq!(events.len(), 2);
    assert!(
        events.iter().all(|b| b["temperature"] == 0.25),
        "{events:?}"
    );
    assert!(events.iter().all(|b| b["model"] == "m"));
    // What went out is the transform's reply.
    for body in provider.bodies() {
        assert_eq!(body["metadata"], json!({"via": "bodyTransform"}));
        assert!(body.get("temperature").is_none(), "{body}");
    }

    // No reply: the body unchanged; a reply that is not an object: the run
    // fails naming the slot, before anything is sent.
    let plain = Provider::start(openai_whole);
    let config = json!({"baseUrl": format!("http://127.0.0.1:{}/v1", plain.port),
                        "style": "openai", "model": "m", "apiKey": "k"});
    let client = Client::from_json(&config).expect("client");
    run_add(&client, false).expect("run without the slot");
    let (observer, _) = recorder();
    client.set_callback(Slot::BodyTransform, Some(observer));
    run_add(&client, false).expect("run with an observing transform");
    let bodies = plain.bodies();
    assert_eq!(bodies.len(), 4);
    assert_eq!(
        bodies[..2],
        bodies[2..],
        "a transform with no reply changes nothing"
    );
    let bad: HostFn = Arc::new(|_: &Value, _: RunData| Ok(Some(json!([1]))));
    client.set_callback(Slot::BodyTransform, Some(bad));
    let e = run_add(&client, false).expect_err("a non-object body");
    assert_eq!(e.code, ErrorCode::CallbackError);
    assert!(e.message.contains("bodyTransform"), "{}", e.message);
    assert_eq!(plain.bodies().len(), 4, "nothing sent");
}

/// A `httpClient` that answers as `handler` would over HTTP, keeping each
/// event; its first `fail_first` answers are 503s.
fn host_transport(
    handler: fn(&Value) -> (&'static str, String),
    fail_first: usize,
) -> (HostFn, Arc<Mutex<Vec<Value>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&log);
    let f: HostFn = Arc::new(move |event: &Value, _: RunData| {
        let mut log = kept.lock().map_err(|e| e.to_string())?;
        log.push(event.clone());
        if log.len() <= fail_first {
            return Ok(Some(
                json!({"status": 503, "headers": {"Retry-After": "0"}, "body": "busy"}),
            ));
        }
        let body: Value = serde_json::from_str(event["body"].as_str().unwrap_or_default())
            .map_err(|e| e.to_string())?;
        let (kind, text) = handler(&body);
        Ok(Some(
            json!({"status": 200, "headers": {"content-type": kind}, "body": text}),
        ))
    });
    (f, log)
}

#[test]
fn http_client_is_the_llm_transport_whole_streamed_and_retried() {
    // Nothing listens at the baseUrl: every answer is the host's.
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let config = json!({"baseUrl": format!("http://127.0.0.1:{port}/v1"), "style": "openai",
                        "model": "m", "apiKey": "sk-host", "retryBaseMs": 1});
    let client = Client::from_json(&config).expect("client");

    let (transport, events) = host_transport(openai_whole, 0);
    client.set_callback(Slot::HttpClient, Some(transport));
    let result = run_add(&client, false).expect("run");
    assert_eq!(result["text"], "The sum is 5.");
    assert_eq!(result["toolCalls"][0]["output"], "5");
    let first = events.lock().expect("events")[0].clone();
    assert_eq!(first["method"], "POST");
    assert_eq!(
        first["url"],
        format!("http://127.0.0.1:{port}/v1/chat/completions")
    );
    assert_eq!(first["headers"]["authorization"], "Bearer sk-host");
    assert_eq!(first["stream"], false);
    let sent: Value =
        serde_json::from_str(first["body"].as_str().expect("body text")).expect("json");
    assert_eq!(sent["model"], "m");

    // Streamed: the answer is the whole SSE text, read as the socket's.
    let (transport, events) = host_transport(openai_streaming, 0);
    client.set_callback(Slot::HttpClient, Some(transport));
    let (on_event, streamed) = recorder();
    client.set_callback(Slot::OnEvent, Some(on_event));
    let result = run_add(&client, true).expect("streamed run");
    assert_eq!(result["text"], "The sum is 5.");
    assert!(events
        .lock()
        .expect("events")
        .iter()
        .all(|e| e["stream"] == true));
    let deltas: Vec<Value> = streamed
        .lock()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["delta"].clone())
        .collect();
    assert_eq!(
        deltas,
        [json!("Adding."), json!("The sum "), json!("is 5.")]
    );
    client.set_callback(Slot::OnEvent, None);

    // A retryable status from the host's transport is retried as the
    // socket's would be.
    let (transport, events) = host_transport(openai_whole, 2);
    client.set_callback(Slot::HttpClient, Some(transport));
    let result = run_add(&client, false).expect("run after two 503s");
    assert_eq!(result["text"], "The sum is 5.");
    assert_eq!(
        events.lock().expect("events").len(),
        4,
        "2 refused + 2 turns"
    );

    // A failing transport ends the run, naming the slot; a reply without a
    // status as well.
    for reply in [
        Err("no network today".to_string()),
        Ok(Some(json!({"body": "{}"}))),
    ] {
        let f: HostFn = Arc::new(move |_: &Value, _: RunData| reply.clone());
        client.set_callback(Slot::HttpClient, Some(f));
        let e = run_add(&client, false).expect_err("failed transport");
        assert_eq!(e.code, ErrorCode::CallbackError, "{}", e.message);
        assert!(e.message.contains("httpClient"), "{}", e.message);
    }
}
