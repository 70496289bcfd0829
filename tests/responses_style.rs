//! The OpenAI Responses style (`style: "responses"`) against a mock
//! Responses server on 127.0.0.1: translate (input items, instructions,
//! flat tools, max_output_tokens, previous_response_id, usage), the client
//! loop (every output item, reasoning included, sent back as it came), and
//! streamed runs whose events interleave two items.

mod translate_mock;

use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use toolnexus::cancel::CancelToken;
use toolnexus::client::{AskRequest, Client, HostFn, RunData, RunRequest, Slot};
use toolnexus::error::ErrorCode;
use toolnexus::tool::{ExecContext, Source, Tool, ToolResult};
use toolnexus::toolkit::Toolkit;
use toolnexus::translate::translate;
use translate_mock::{Canned, MockProvider};

fn client_json(base: &str, extra: Value) -> Value {
    let mut cfg = json!({"baseUrl": format!("{base}/v1"), "style": "responses", "model": "gpt-r",
        "apiKey": "r-key", "retries": 0});
    if let (Some(c), Some(e)) = (cfg.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    cfg
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

fn response(output: Value, usage: Value) -> Value {
    json!({"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-r",
        "output": output, "usage": usage})
}

#[test]
fn translate_builds_a_responses_request_and_reads_the_answer_back() {
    let mock = MockProvider::start(vec![Canned::json(
        200,
        &response(
            json!([
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ENC"},
                {"type": "message", "id": "m1", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup",
                 "arguments": "{\"q\":\"x\"}", "status": "completed"}
            ]),
            json!({"input_tokens": 12, "output_tokens": 8, "total_tokens": 20,
                "input_tokens_details": {"cached_tokens": 4},
                "output_tokens_details": {"reasoning_tokens": 5}}),
        ),
    )]);
    let client = client_json(
        &mock.base(),
        json!({"requestParams": {"previous_response_id": "resp_0", "max_tokens": 64,
            "include": ["reasoning.encrypted_content"]}}),
    );
    let request = json!({
        "messages": [
            {"role": "developer", "content": "Be exact."},
            {"role": "user", "content": "look x up"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_0", "content": "nothing"}
        ],
        "tools": [{"type": "function", "function": {"name": "lookup", "description": "d",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}],
        "toolChoice": {"type": "function", "function": {"name": "lookup"}},
        "maxTokens": 10
    });
    let out = translate(&client, &request, &[], None).expect("translate");
    assert_eq!(out["text"], "Checking.");
    assert_eq!(out["finishReason"], "tool_calls");
    assert_eq!(
        out["toolCalls"],
        json!([{"id": "call_1", "name": "lookup", "arguments": "{\"q\":\"x\"}"}])
    );
    assert_eq!(
        out["usage"],
        json!({"promptTokens": 12, "completionTokens": 8, "totalTokens": 20,
            "reasoningTokens": 5, "cachedTokens": 4})
    );
    let r = &mock.requests()[0];
    assert_eq!(r.path, "/v1/responses");
    assert_eq!(r.header("authorization"), Some("Bearer r-key"));
    assert_eq!(
        r.json_body(),
        json!({
            "model": "gpt-r",
            "input": [
                {"type": "message", "role": "user", "content": "look x up"},
                {"type": "function_call", "call_id": "call_0", "name": "lookup", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_0", "output": "nothing"}
            ],
            "instructions": "Be exact.",
            "tools": [{"type": "function", "name": "lookup", "description": "d",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}],
            "tool_choice": {"type": "function", "name": "lookup"},
            "max_output_tokens": 64,
            "previous_response_id": "resp_0",
            "include": ["reasoning.encrypted_content"]
        })
    );
}

#[test]
fn an_incomplete_answer_is_length() {
    let mut raw = response(
        json!([{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "cu"}]}]),
        json!({"input_tokens": 1, "output_tokens": 2}),
    );
    raw["status"] = json!("incomplete");
    raw["incomplete_details"] = json!({"reason": "max_output_tokens"});
    let mock = MockProvider::start(vec![Canned::json(200, &raw)]);
    let out = translate(
        &client_json(&mock.base(), json!({})),
        &json!({"messages": [{"role": "user", "content": "x"}]}),
        &[],
        None,
    )
    .expect("translate");
    assert_eq!(out["finishReason"], "length");
    assert_eq!(out["usage"]["totalTokens"], 3);
}

#[test]
fn the_loop_sends_every_output_item_back_as_it_came() {
    let first = json!([
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ENC1"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "add", "arguments": "{\"a\":2,\"b\":3}"},
        {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "add", "arguments": "not json"}
    ]);
    let mock = MockProvider::start(vec![
        Canned::json(
            200,
            &response(
                first.clone(),
                json!({"input_tokens": 5, "output_tokens": 5, "total_tokens": 10}),
            ),
        ),
        Canned::json(
            200,
            &response(
                json!([{"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": "5, "}, {"type": "output_text", "text": "and 0."}]}]),
                json!({"input_tokens": 9, "output_tokens": 2, "total_tokens": 11}),
            ),
        ),
    ]);
    let client = Client::from_json(&client_json(
        &mock.base(),
        json!({"systemPrompt": "Add.", "requestParams": {"max_tokens": 99, "store": false}}),
    ))
    .expect("client");
    let result = client
        .run(
            &adder(),
            &RunRequest {
                prompt: "add".into(),
                history: Vec::new(),
            },
            &CancelToken::new(),
            RunData::default(),
        )
        .expect("run");
    assert_eq!(result["text"], "5, and 0.");
    assert_eq!(result["turns"], 2);
    assert_eq!(result["toolCalls"][0]["output"], "5");
    assert_eq!(
        result["toolCalls"][1]["output"], "0",
        "malformed arguments read as none"
    );
    assert_eq!(
        result["usage"],
        json!({"promptTokens": 14, "completionTokens": 7, "totalTokens": 21})
    );
    let reqs = mock.requests();
    let b0 = reqs[0].json_body();
    assert_eq!(b0["instructions"], "Add.");
    assert_eq!(b0["max_output_tokens"], 99);
    assert_eq!(b0["store"], false);
    assert_eq!(b0["tool_choice"], "auto");
    assert_eq!(
        b0["tools"],
        json!([{"type": "function", "name": "add", "description": "adds a and b",
            "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}])
    );
    assert_eq!(b0["input"], json!([{"role": "user", "content": "add"}]));
    let mut want = vec![json!({"role": "user", "content": "add"})];
    want.extend(first.as_array().unwrap().iter().cloned());
    want.push(json!({"type": "function_call_output", "call_id": "call_a", "output": "5"}));
    want.push(json!({"type": "function_call_output", "call_id": "call_b", "output": "0"}));
    assert_eq!(reqs[1].json_body()["input"], Value::Array(want));
}

fn events(list: &[Value]) -> String {
    list.iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

fn recorder() -> (HostFn, Arc<Mutex<Vec<Value>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&log);
    let f: HostFn = Arc::new(move |e: &Value, _: RunData| {
        kept.lock().map_err(|e| e.to_string())?.push(e.clone());
        Ok(None)
    });
    (f, log)
}

#[test]
fn a_streamed_run_gathers_interleaved_items_by_output_index() {
    // Turn 1: text and two calls whose argument deltas interleave; the
    // completed event carries no output, so the items make it.
    let turn1 = events(&[
        json!({"type": "response.created", "response": {"id": "resp_s", "object": "response", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Add"}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "call_id": "c1", "name": "add", "arguments": ""}}),
        json!({"type": "response.output_item.added", "output_index": 2, "item": {"type": "function_call", "call_id": "c2", "name": "add", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "{\"a\":1,"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"a\":2,"}),
        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "ing."}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "\"b\":3}"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "\"b\":1}"}),
        json!({"type": "response.completed", "response": {"id": "resp_s", "object": "response", "status": "completed",
            "output": [], "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}}}),
    ]);
    // Turn 2: the completed response holds the whole output.
    let turn2 = events(&[
        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "5 and 2"}),
        json!({"type": "response.completed", "response": {"id": "resp_t", "object": "response", "status": "completed",
            "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "5 and 2"}]}],
            "usage": {"input_tokens": 6, "output_tokens": 2, "total_tokens": 8}}}),
    ]);
    let mock = MockProvider::start(vec![Canned::text(200, &turn1), Canned::text(200, &turn2)]);
    let client = Client::from_json(&client_json(&mock.base(), json!({}))).expect("client");
    let (on_event, log) = recorder();
    client.set_callback(Slot::OnEvent, Some(on_event));
    let result = client
        .ask(
            &adder(),
            &AskRequest {
                prompt: "add".into(),
                id: None,
                history: Vec::new(),
            },
            &CancelToken::new(),
            RunData(0),
            true,
        )
        .expect("streamed run");
    assert_eq!(result["text"], "5 and 2");
    assert_eq!(result["toolCalls"][0]["output"], "5");
    assert_eq!(result["toolCalls"][1]["output"], "2");
    assert_eq!(
        result["usage"],
        json!({"promptTokens": 9, "completionTokens": 6, "totalTokens": 15})
    );
    let texts: Vec<Value> = log
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["delta"].clone())
        .collect();
    assert_eq!(texts, [json!("Add"), json!("ing."), json!("5 and 2")]);
    let reqs = mock.requests();
    assert_eq!(reqs[0].json_body()["stream"], true);
    let input = reqs[1].json_body()["input"].clone();
    assert_eq!(
        input,
        json!([
            {"role": "user", "content": "add"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Adding."}]},
            {"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{\"a\":2,\"b\":3}"},
            {"type": "function_call", "call_id": "c2", "name": "add", "arguments": "{\"a\":1,\"b\":1}"},
            {"type": "function_call_output", "call_id": "c1", "output": "5"},
            {"type": "function_call_output", "call_id": "c2", "output": "2"}
        ])
    );
}

#[test]
fn a_failed_stream_is_a_provider_error() {
    let failed = events(&[
        json!({"type": "response.created", "response": {"id": "r", "output": []}}),
        json!({"type": "response.failed", "response": {"id": "r", "status": "failed",
            "error": {"code": "server_error", "message": "the model fell over"}}}),
    ]);
    let mock = MockProvider::start(vec![Canned::text(200, &failed)]);
    let client = Client::from_json(&client_json(&mock.base(), json!({}))).expect("client");
    let err = client
        .ask(
            &adder(),
            &AskRequest {
                prompt: "x".into(),
                id: None,
                history: Vec::new(),
            },
            &CancelToken::new(),
            RunData(0),
            true,
        )
        .expect_err("failed");
    assert_eq!(err.code, ErrorCode::ProviderError, "{err}");
    assert!(err.message.contains("the model fell over"), "{err}");
}
