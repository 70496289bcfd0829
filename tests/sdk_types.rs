//! The requests we send to Gemini and Anthropic, validated by the official
//! SDKs' own types (google-genai's pydantic models, which forbid unknown
//! fields; the anthropic SDK's MessageCreateParams): translate with every
//! builtin tool and every tool schema of the conformance vectors declared,
//! with images, tool choices, params, a second step carrying thought
//! signatures / thinking blocks and tool results; and the client loop's
//! turns, whole and streamed; and the token-counting bodies (Anthropic's
//! MessageCountTokensParams, Gemini's generateContentRequest, the openai
//! SDK's InputTokenCountParams). tests/sdk_types/validate.py does the
//! checking.

mod translate_mock;

use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use toolnexus::cancel::CancelToken;
use toolnexus::client::{AskRequest, Client, RunData, RunRequest};
use toolnexus::tool::{ExecContext, Source, Tool, ToolResult};
use toolnexus::toolkit::Toolkit;
use toolnexus::translate::{count_tokens_json, translate};
use translate_mock::{Canned, MockProvider};

fn python() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python3");
    let ok = p.exists()
        && Command::new(&p)
            .args(["-c", "import google.genai, anthropic, openai"])
            .status()
            .is_ok_and(|s| s.success());
    ok.then_some(p)
}

/// Runs the validator over `(style, body)` pairs; panics with its report
/// on the first failure.
fn validate(bodies: &[(&str, Value)]) {
    let Some(py) = python() else {
        eprintln!("skipped: no .venv with google-genai, anthropic and openai (scripts/setup.sh installs tests/requirements.txt)");
        return;
    };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk_types/validate.py");
    let mut child = Command::new(py)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        for (style, body) in bodies {
            writeln!(stdin, "{}", json!({"style": style, "body": body})).expect("write");
        }
    }
    let out = child.wait_with_output().expect("wait");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(report.trim()).expect("report");
    assert_eq!(report["valid"], bodies.len());
}

fn adder(builtins: bool) -> Toolkit {
    let tk = Toolkit::build_from_json(&json!({ "builtins": builtins }).to_string()).expect("tk");
    let add = |args: &Value, _: &ExecContext| {
        let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
        ToolResult::ok(format!("{sum}"))
    };
    tk.register(Tool::new(
        "add",
        "adds a and b",
        Some(json!({"type":"object","properties":{"a":{"type":"number"},"b":{"type":["number","null"]}},
            "required":["a"],"additionalProperties":false})),
        Source::Native,
        Arc::new(add),
    ));
    tk
}

/// Every tool schema in the conformance vectors, as OpenAI tools.
fn vector_tools() -> Vec<Value> {
    fn walk(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if matches!(k.as_str(), "inputSchema" | "input_schema" | "parameters")
                        && x.is_object()
                    {
                        out.push(x.clone());
                    }
                    walk(x, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/vectors");
    let mut schemas = Vec::new();
    for e in std::fs::read_dir(dir).expect("vectors").flatten() {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap();
        walk(&v, &mut schemas);
    }
    schemas
        .into_iter()
        .enumerate()
        .map(|(i, s)| json!({"type": "function", "function": {"name": format!("v{i}"), "parameters": s}}))
        .collect()
}

fn gemini_answer(parts: Value) -> Canned {
    Canned::json(
        200,
        &json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}}),
    )
}

#[test]
fn every_gemini_request_we_send_passes_google_genai_types() {
    let call = json!([{"text": "ok"},
        {"functionCall": {"name": "add", "args": {"a": 2, "b": 3}}, "thoughtSignature": "U0lH"}]);
    let mock = MockProvider::start(vec![
        gemini_answer(call.clone()),
        gemini_answer(json!([{"text": "done"}])),
        gemini_answer(call),
        gemini_answer(json!([{"text": "5"}])),
        Canned::text(
            200,
            &format!(
                "data: {}\n\n",
                json!({"candidates": [{"content": {"role": "model", "parts": [
                    {"functionCall": {"name": "add", "args": {"a": 1, "b": 1}, "id": "c1"}, "thoughtSignature": "QQ=="}]},
                    "finishReason": "STOP"}]})
            ),
        ),
        Canned::text(
            200,
            &format!(
                "data: {}\n\n",
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "2"}]}, "finishReason": "STOP"}]})
            ),
        ),
    ]);
    let cfg = json!({"baseUrl": mock.base(), "style": "gemini", "model": "g", "apiKey": "gk-1", "retries": 0,
        "systemPrompt": "Be brief.",
        "requestParams": {"temperature": 0.3, "top_p": 0.9, "max_tokens": 100, "stop": "END", "seed": 7,
            "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema":
                {"type": "object", "properties": {"n": {"type": "integer"}}}}},
            "reasoning_effort": "low",
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]}});
    let tk = adder(true);
    let mut tools = vector_tools();
    assert!(tools.len() > 100);
    tools.truncate(400);
    let first = translate(
        &cfg,
        &json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}}]}],
            "tools": tools, "toolChoice": {"type": "function", "function": {"name": "add"}}, "maxTokens": 50}),
        &tk.openai_declarations(),
        None,
    )
    .expect("first");
    let tc = &first["toolCalls"][0];
    translate(
        &cfg,
        &json!({"messages": [
            {"role": "user", "content": "add"},
            {"role": "assistant", "content": "ok", "tool_calls": [{"id": tc["id"], "type": "function",
                "function": {"name": "add", "arguments": tc["arguments"]}, "extra_content": tc["extra_content"]}]},
            {"role": "tool", "tool_call_id": tc["id"], "content": "5"}], "toolChoice": "none"}),
        &[],
        None,
    )
    .expect("second");
    let client = Client::from_json(&cfg).expect("client");
    let small = adder(false);
    client
        .run(
            &small,
            &RunRequest {
                prompt: "add".into(),
                history: Vec::new(),
            },
            &CancelToken::new(),
            RunData::default(),
        )
        .expect("run");
    client
        .ask(
            &small,
            &AskRequest {
                prompt: "add".into(),
                id: None,
                history: Vec::new(),
            },
            &CancelToken::new(),
            RunData(0),
            true,
        )
        .expect("streamed");
    let bodies: Vec<(&str, Value)> = mock
        .requests()
        .iter()
        .map(|r| ("gemini", r.json_body()))
        .collect();
    assert_eq!(bodies.len(), 6);
    validate(&bodies);
}

#[test]
fn every_anthropic_request_we_send_passes_the_anthropic_sdk_types() {
    let use_tool = json!({"content": [
        {"type": "thinking", "thinking": "t", "signature": "sig"},
        {"type": "text", "text": "ok"},
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}});
    let done = json!({"content": [{"type": "text", "text": "5"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}});
    let mock = MockProvider::start(vec![
        Canned::json(200, &use_tool),
        Canned::json(200, &done),
        Canned::json(200, &use_tool),
        Canned::json(200, &done),
        Canned::json(200, &done),
    ]);
    let cfg = json!({"baseUrl": mock.base(), "style": "anthropic", "model": "claude", "apiKey": "ak-1",
        "retries": 0, "systemPrompt": "Be brief.",
        "requestParams": {"thinking": {"type": "enabled", "budget_tokens": 1024}, "stop_sequences": ["END"]}});
    let tk = adder(true);
    let first = translate(
        &cfg,
        &json!({"messages": [
            {"role": "system", "content": "hoisted"},
            {"role": "user", "content": [{"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}],
            "toolChoice": "required", "maxTokens": 2048}),
        &tk.openai_declarations(),
        None,
    )
    .expect("first");
    let tc = &first["toolCalls"][0];
    translate(
        &cfg,
        &json!({"messages": [
            {"role": "user", "content": "add"},
            {"role": "assistant", "content": "ok", "thinking_blocks": first["thinkingBlocks"],
             "tool_calls": [{"id": tc["id"], "type": "function",
                "function": {"name": "add", "arguments": tc["arguments"]}}]},
            {"role": "tool", "tool_call_id": tc["id"], "content": "5"}]}),
        &[],
        None,
    )
    .expect("second");
    let client = Client::from_json(&cfg).expect("client");
    client
        .run(
            &adder(false),
            &RunRequest {
                prompt: "add".into(),
                history: Vec::new(),
            },
            &CancelToken::new(),
            RunData::default(),
        )
        .expect("run");
    // Prompt caching marks on a tool, a system part and message parts.
    let eph = json!({"type": "ephemeral"});
    translate(
        &json!({"baseUrl": mock.base(), "style": "anthropic", "model": "claude", "apiKey": "ak-1", "retries": 0}),
        &json!({"tools": [{"type": "function", "cache_control": eph,
                "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}],
            "messages": [
                {"role": "system", "content": [{"type": "text", "text": "S", "cache_control": eph}]},
                {"role": "user", "content": [{"type": "text", "text": "U", "cache_control": eph}]},
                {"role": "assistant", "content": [{"type": "text", "text": "A", "cache_control": eph}]},
                {"role": "user", "content": "again", "cache_control": eph}]}),
        &[],
        None,
    )
    .expect("cached");
    let bodies: Vec<(&str, Value)> = mock
        .requests()
        .iter()
        .map(|r| ("anthropic", r.json_body()))
        .collect();
    assert_eq!(bodies.len(), 5);
    assert!(bodies[4].1.to_string().matches("cache_control").count() == 4);
    validate(&bodies);
}

#[test]
fn every_token_count_body_we_send_passes_the_sdk_count_types() {
    let eph = json!({"type": "ephemeral"});
    let requests = [
        json!({"system": "Be brief.", "maxTokens": 300, "toolChoice": "required",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "look", "cache_control": eph}]},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "add", "arguments": "{\"a\":2,\"b\":3}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "5"}]}),
        json!({"messages": [{"role": "system", "content": "hoisted"},
            {"role": "user", "content": "hi"}]}),
    ];
    let declared = adder(true).openai_declarations();
    let mut bodies: Vec<(&str, Value)> = Vec::new();
    for (style, check, params, answer) in [
        (
            "anthropic",
            "anthropic_count",
            json!({"thinking": {"type": "enabled", "budget_tokens": 1024},
                   "temperature": 0.3, "stop_sequences": ["END"], "metadata": {"user_id": "u"}}),
            json!({"input_tokens": 10}),
        ),
        (
            "gemini",
            "gemini_count",
            json!({"temperature": 0.3, "safetySettings": [], "reasoning_effort": "low"}),
            json!({"totalTokens": 10}),
        ),
        (
            "responses",
            "responses_count",
            json!({"temperature": 0.3, "store": false, "max_tokens": 9,
                   "reasoning_effort": "low"}),
            json!({"input_tokens": 10}),
        ),
        (
            "openai",
            "responses_count",
            json!({"temperature": 0.3, "seed": 1, "max_tokens": 9, "response_format":
                {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object"}}}}),
            json!({"input_tokens": 10}),
        ),
    ] {
        let mock = MockProvider::start(vec![Canned::json(200, &answer).repeating()]);
        let cfg = json!({"baseUrl": mock.base(), "style": style, "model": "m", "apiKey": "k",
            "retries": 0, "requestParams": params});
        for request in &requests {
            count_tokens_json(&cfg, &request.to_string(), &declared, None).expect("count");
        }
        for r in mock.requests() {
            bodies.push((check, r.json_body()));
        }
    }
    assert_eq!(bodies.len(), 8);
    validate(&bodies);
}
