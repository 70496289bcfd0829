//! The Gemini style (`style: "gemini"`) against a mock Gemini server on
//! 127.0.0.1: translate in both directions (thought signatures handed to
//! the host and taken back), the client loop (the model's parts sent back
//! verbatim, signatures on the exact part), a streamed run over
//! `streamGenerateContent?alt=sse`, and bad streams.

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
    let mut cfg = json!({"baseUrl": base, "style": "gemini", "model": "gemini-test",
        "apiKey": "g-key", "retries": 0});
    if let (Some(c), Some(e)) = (cfg.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    cfg
}

/// A Gemini answer: the parts, the finish reason, the usage.
fn answer(parts: Value, finish: &str, usage: Value) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": parts},
        "finishReason": finish, "index": 0}],
        "usageMetadata": usage, "modelVersion": "gemini-test-001", "responseId": "r1"})
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
        Some(
            json!({"type":"object","$defs":{"n":{"type":["number","null"]}},
            "properties":{"a":{"$ref":"#/$defs/n"},"b":{"type":"number"}},
            "additionalProperties":false}),
        ),
        Source::Native,
        Arc::new(add),
    ));
    tk
}

#[test]
fn translate_builds_a_gemini_request_and_reads_the_answer_back() {
    let signature = "c2lnbmF0dXJlLW9uZQ==";
    let mock = MockProvider::start(vec![Canned::json(
        200,
        &answer(
            json!([
                {"text": "pondering", "thought": true},
                {"text": "Let me look."},
                {"functionCall": {"name": "lookup", "args": {"q": "rust"}}, "thoughtSignature": signature},
                {"functionCall": {"name": "lookup", "args": {"q": "go"}, "id": "fc-2"}}
            ]),
            "STOP",
            json!({"promptTokenCount": 11, "candidatesTokenCount": 4, "thoughtsTokenCount": 6,
                "cachedContentTokenCount": 3, "totalTokenCount": 21}),
        ),
    )]);
    let client = client_json(
        &mock.base(),
        json!({"requestParams": {"temperature": 0.5, "stop": ["END"], "safetySettings": []}}),
    );
    let request = json!({
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "find"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
        ]}],
        "tools": [{"type": "function", "function": {"name": "lookup", "description": "looks up",
            "parameters": {"type": "object", "properties": {"q": {"type": "string", "minLength": 1,
                "$comment": "dropped"}}, "required": ["q"]}}}],
        "toolChoice": "required",
        "maxTokens": 100
    });
    let out = translate(&client, &request, &[], None).expect("translate");
    assert_eq!(out["text"], "Let me look.");
    assert_eq!(
        out["finishReason"], "tool_calls",
        "a call on STOP is tool_calls"
    );
    assert_eq!(out["model"], "gemini-test");
    assert_eq!(
        out["toolCalls"],
        json!([
            {"id": "tn-gemini-call-0", "name": "lookup", "arguments": "{\"q\":\"rust\"}",
             "extra_content": {"google": {"thought_signature": signature}}},
            {"id": "fc-2", "name": "lookup", "arguments": "{\"q\":\"go\"}"}
        ])
    );
    assert_eq!(
        out["usage"],
        json!({"promptTokens": 11, "completionTokens": 10, "totalTokens": 21,
            "reasoningTokens": 6, "cachedTokens": 3})
    );

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1beta/models/gemini-test:generateContent");
    assert_eq!(r.header("x-goog-api-key"), Some("g-key"));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(
        r.json_body(),
        json!({
            "contents": [{"role": "user", "parts": [{"text": "find"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]}],
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "tools": [{"functionDeclarations": [{"name": "lookup", "description": "looks up",
                "parameters": {"type": "object", "properties": {"q": {"type": "string", "minLength": 1}},
                    "required": ["q"]}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
            "safetySettings": [],
            "generationConfig": {"maxOutputTokens": 100, "temperature": 0.5, "stopSequences": ["END"]}
        })
    );

    // The host sends the turn back in OpenAI shape: the signature goes back
    // on the part it came on; the string outputs are wrapped in objects.
    let mock2 = MockProvider::start(vec![Canned::json(
        200,
        &answer(json!([{"text": "Done."}]), "STOP", json!({})),
    )]);
    let calls: Vec<Value> = out["toolCalls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let mut tc = json!({"id": c["id"], "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]}});
            if let Some(x) = c.get("extra_content") {
                tc["extra_content"] = x.clone();
            }
            tc
        })
        .collect();
    let second = json!({"messages": [
        {"role": "user", "content": "find"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "tn-gemini-call-0", "content": "rust: a language"},
        {"role": "tool", "tool_call_id": "fc-2", "content": "go: a game"}
    ]});
    let out2 =
        translate(&client_json(&mock2.base(), json!({})), &second, &[], None).expect("second step");
    assert_eq!(out2["text"], "Done.");
    assert_eq!(out2["finishReason"], "stop");
    assert_eq!(
        out2["usage"],
        json!({"promptTokens": 0, "completionTokens": 0, "totalTokens": 0})
    );
    assert_eq!(
        mock2.requests()[0].json_body()["contents"],
        json!([
            {"role": "user", "parts": [{"text": "find"}]},
            {"role": "model", "parts": [
                {"text": "Let me look."},
                {"functionCall": {"name": "lookup", "args": {"q": "rust"}}, "thoughtSignature": signature},
                {"functionCall": {"name": "lookup", "args": {"q": "go"}, "id": "fc-2"}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "lookup", "response": {"output": "rust: a language"}}},
                {"functionResponse": {"name": "lookup", "id": "fc-2", "response": {"output": "go: a game"}}}
            ]}
        ])
    );
}

#[test]
fn finish_reasons_and_odd_calls_map_as_openai_clients_expect() {
    let mock = MockProvider::start(vec![
        Canned::json(
            200,
            &answer(json!([{"text": "cut"}]), "MAX_TOKENS", json!({})),
        ),
        Canned::json(200, &answer(json!([]), "SAFETY", json!({}))),
        Canned::json(
            200,
            &json!({"promptFeedback": {"blockReason": "OTHER"}, "usageMetadata": {"promptTokenCount": 2}}),
        ),
        Canned::json(
            200,
            &answer(
                json!([{"functionCall": {"name": "f", "args": [1, 2]}}]),
                "STOP",
                json!({}),
            ),
        ),
    ]);
    let client = client_json(&mock.base(), json!({}));
    let req = json!({"messages": [{"role": "user", "content": "x"}]});
    let reasons: Vec<Value> = (0..4)
        .map(|_| translate(&client, &req, &[], None).expect("translate"))
        .collect();
    assert_eq!(reasons[0]["finishReason"], "length");
    assert_eq!(reasons[1]["finishReason"], "content_filter");
    assert_eq!(reasons[2]["finishReason"], "content_filter");
    assert_eq!(reasons[2]["usage"]["promptTokens"], 2);
    assert_eq!(reasons[3]["finishReason"], "tool_calls");
    assert_eq!(
        reasons[3]["toolCalls"][0]["arguments"], "{}",
        "non-object args read as none"
    );
}

#[test]
fn a_provider_error_status_is_a_provider_error() {
    let mock = MockProvider::start(vec![Canned::json(
        400,
        &json!({"error": {"code": 400, "message": "Function call is missing a thought_signature",
            "status": "INVALID_ARGUMENT"}}),
    )]);
    let err = translate(
        &client_json(&mock.base(), json!({})),
        &json!({"messages": [{"role": "user", "content": "x"}]}),
        &[],
        None,
    )
    .expect_err("400");
    assert_eq!(err.code, ErrorCode::ProviderError, "{err}");
    assert!(err.message.contains("thought_signature"), "{err}");
}

#[test]
fn the_loop_sends_the_models_parts_back_verbatim_with_their_signatures() {
    let first_parts = json!([
        {"text": "I'll add.", "thoughtSignature": "dGV4dC1zaWc="},
        {"functionCall": {"name": "add", "args": {"a": 2, "b": 3}}, "thoughtSignature": "Y2FsbC1zaWc="},
        {"functionCall": {"name": "add", "args": {"a": 1, "b": 1}}}
    ]);
    let mock = MockProvider::start(vec![
        Canned::json(
            200,
            &answer(
                first_parts.clone(),
                "STOP",
                json!({"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}),
            ),
        ),
        Canned::json(
            200,
            &answer(
                json!([{"text": "5 and 2."}]),
                "STOP",
                json!({"promptTokenCount": 20, "candidatesTokenCount": 3, "thoughtsTokenCount": 2, "totalTokenCount": 25}),
            ),
        ),
    ]);
    let client = Client::from_json(&client_json(
        &mock.base(),
        json!({"systemPrompt": "You add.", "requestParams": {"max_tokens": 50}}),
    ))
    .expect("client");
    let tk = adder();
    let result = client
        .run(
            &tk,
            &RunRequest {
                prompt: "add 2+3 and 1+1".into(),
                history: Vec::new(),
            },
            &CancelToken::new(),
            RunData::default(),
        )
        .expect("run");
    assert_eq!(result["text"], "5 and 2.");
    assert_eq!(result["turns"], 2);
    assert_eq!(result["toolCalls"][0]["output"], "5");
    assert_eq!(result["toolCalls"][1]["output"], "2");
    assert_eq!(
        result["usage"],
        json!({"promptTokens": 30, "completionTokens": 10, "totalTokens": 40})
    );

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(r.path, "/v1beta/models/gemini-test:generateContent");
        assert_eq!(r.header("x-goog-api-key"), Some("g-key"));
    }
    let first = reqs[0].json_body();
    assert!(first.get("model").is_none(), "the model is in the URL");
    assert_eq!(
        first["systemInstruction"],
        json!({"parts": [{"text": "You add."}]})
    );
    assert_eq!(first["generationConfig"], json!({"maxOutputTokens": 50}));
    assert_eq!(
        first["tools"],
        json!([{"functionDeclarations": [{"name": "add", "description": "adds a and b",
            "parameters": {"type": "object", "properties": {
                "a": {"type": "number", "nullable": true}, "b": {"type": "number"}}}}]}])
    );
    assert_eq!(
        first["contents"],
        json!([{"role": "user", "parts": [{"text": "add 2+3 and 1+1"}]}])
    );
    let second = reqs[1].json_body();
    assert_eq!(
        second["contents"],
        json!([
            {"role": "user", "parts": [{"text": "add 2+3 and 1+1"}]},
            {"role": "model", "parts": first_parts},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "add", "response": {"output": "5"}}},
                {"functionResponse": {"name": "add", "response": {"output": "2"}}}
            ]}
        ])
    );
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("data: {e}\r\n\r\n"))
        .collect()
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

#[test]
fn a_streamed_run_reads_server_sent_responses_and_keeps_signatures() {
    let turn1 = sse(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Add"}]}}],
            "responseId": "s1", "modelVersion": "gemini-test-001"}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "ing."}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "add", "args": {"a": 2, "b": 3}, "id": "c1"}, "thoughtSignature": "U0lH"}]},
            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 4, "totalTokenCount": 11}}),
    ]);
    let turn2 = sse(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "The sum "}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "is 5."}]},
            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 3, "totalTokenCount": 12}}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "", "thoughtSignature": "RU5E"}]}}]}),
    ]);
    let mock = MockProvider::start(vec![Canned::text(200, &turn1), Canned::text(200, &turn2)]);
    let client = Client::from_json(&client_json(&mock.base(), json!({}))).expect("client");
    let (on_event, events) = recorder();
    client.set_callback(Slot::OnEvent, Some(on_event));
    let tk = adder();
    let result = client
        .ask(
            &tk,
            &AskRequest {
                prompt: "add 2 and 3".into(),
                id: None,
                history: Vec::new(),
            },
            &CancelToken::new(),
            RunData(0),
            true,
        )
        .expect("streamed run");
    assert_eq!(result["text"], "The sum is 5.");
    assert_eq!(result["turns"], 2);
    assert_eq!(result["toolCalls"][0]["output"], "5");
    let texts: Vec<Value> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["delta"].clone())
        .collect();
    assert_eq!(
        texts,
        [
            json!("Add"),
            json!("ing."),
            json!("The sum "),
            json!("is 5.")
        ]
    );
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(
            r.path,
            "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
        );
        assert!(r.json_body().get("stream").is_none());
    }
    // The streamed turn goes back whole: text joined, the call's part with
    // its signature and id.
    assert_eq!(
        reqs[1].json_body()["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "Adding."},
            {"functionCall": {"name": "add", "args": {"a": 2, "b": 3}, "id": "c1"}, "thoughtSignature": "U0lH"}
        ]})
    );
    assert_eq!(
        reqs[1].json_body()["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "add", "id": "c1", "response": {"output": "5"}}}]})
    );
}

#[test]
fn a_stream_cut_mid_event_or_reporting_an_error_fails_the_call() {
    let cut = "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hel\"}]}}]}\n\ndata: {\"candidates\": [{\"content\": {\"par";
    let error = sse(&[
        json!({"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}),
        json!({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}),
    ]);
    let mock = MockProvider::start(vec![Canned::text(200, cut), Canned::text(200, &error)]);
    let client = Client::from_json(&client_json(&mock.base(), json!({}))).expect("client");
    let tk = adder();
    let ask = AskRequest {
        prompt: "hi".into(),
        id: None,
        history: Vec::new(),
    };
    let err = client
        .ask(&tk, &ask, &CancelToken::new(), RunData(0), true)
        .expect_err("cut stream");
    assert_eq!(err.code, ErrorCode::ProviderError, "{err}");
    assert!(err.message.contains("not a JSON object"), "{err}");
    let err = client
        .ask(&tk, &ask, &CancelToken::new(), RunData(0), true)
        .expect_err("error event");
    assert_eq!(err.code, ErrorCode::ProviderError, "{err}");
    assert!(err.message.contains("overloaded"), "{err}");
}

#[test]
fn a_halted_gemini_run_resumes_with_its_results_in_order() {
    // The style's own transcript goes through durable resume: a model turn
    // with two calls (no ids), the first result kept, the second run now.
    let mock = MockProvider::start(vec![Canned::json(
        200,
        &answer(json!([{"text": "both done"}]), "STOP", json!({})),
    )]);
    let client = Client::from_json(&client_json(&mock.base(), json!({}))).expect("client");
    let tk = adder();
    let history = json!([
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}, "thoughtSignature": "QQ=="},
            {"functionCall": {"name": "add", "args": {"a": 3, "b": 4}}}
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "add", "response": {"output": "pending"}}}]}
    ]);
    let request = toolnexus::client::ResumeRequest::from_json(&json!({
        "history": history,
        "pending": {"id": "q1", "toolCallId": "tn-gemini-call-0", "tool": "add"},
        "answer": {"id": "q1", "ok": true, "value": "yes"}
    }))
    .expect("resume request");
    let result = client
        .resume(&tk, &request, &CancelToken::new(), RunData::default())
        .expect("resume");
    assert_eq!(result["text"], "both done");
    let sent = mock.requests()[0].json_body();
    let contents = sent["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3);
    assert_eq!(contents[1], history[1], "the model turn goes back verbatim");
    let parts = contents[2]["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2, "{}", contents[2]);
    assert_eq!(parts[0]["functionResponse"]["response"]["output"], "3");
    assert_eq!(parts[1]["functionResponse"]["response"]["output"], "7");
}

/// Translate keeps the Gemini declarations it made (a request carries the
/// same tools turn after turn): a tool given again is declared the same,
/// and a tool that differs by one byte, or is too long to keep, is
/// declared afresh — never another tool's declaration.
#[test]
fn the_declaration_memo_never_answers_for_another_tool() {
    use toolnexus::provider::gemini::declaration;
    use toolnexus::translate::{node, provider_body, ClientConfig, Request};
    let client =
        ClientConfig::from_json(&client_json("http://127.0.0.1:9", json!({}))).expect("client");
    let tool = |desc: &str, prop: &str| {
        json!({"type": "function", "function": {"name": "f", "description": desc,
            "parameters": {"type": "object", "$defs": {"e": {"type": "string", "format": "email"}},
                "properties": {prop: {"$ref": "#/$defs/e"}, "n": {"type": ["integer", "null"]}}}}})
    };
    let declared = |t: &Value| -> Value {
        let text =
            json!({"messages": [{"role": "user", "content": "hi"}], "tools": [t]}).to_string();
        let bump = bumpalo::Bump::new();
        let (n, _) = node::parse_source(&bump, &text).expect("json");
        let request = Request::from_node(n).expect("request");
        provider_body(&bump, &client, &request, &[]).to_value()["tools"][0]["functionDeclarations"]
            [0]
        .clone()
    };
    let long = "d".repeat(20_000);
    for t in [
        tool("one", "x"),
        tool("one", "x"),
        tool("onf", "x"),
        tool("one", "y"),
        tool(&long, "x"),
        tool(&long, "x"),
    ] {
        assert_eq!(declared(&t), declaration(&t), "{t}");
    }
    assert_eq!(declared(&tool("onf", "x"))["description"], "onf");
    assert!(declared(&tool("one", "y"))["parameters"]["properties"]["y"].is_object());
}
