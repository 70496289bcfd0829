//! Token counting (issue 29): `translate::count_tokens_json` and
//! `tn_count_tokens` against a mock provider on 127.0.0.1 per style. Each
//! test checks the method, path and credentials the count call used and
//! the body it sent — translate's own body for the same request (recorded
//! from a translate call to a second mock) cut to the keys the counting
//! endpoint takes — and the count read back; then provider errors, bad
//! clients, failover, cancel and the C entry point.

mod translate_mock;

use serde_json::{json, Map, Value};
use std::ffi::{c_char, CStr, CString};
use std::sync::Arc;
use toolnexus::cancel::CancelToken;
use toolnexus::error::ErrorCode;
use toolnexus::tool::{ExecContext, Source, Tool, ToolResult};
use toolnexus::toolkit::Toolkit;
use toolnexus::translate::{count_tokens_json, translate};
use translate_mock::{Canned, MockProvider};

fn client_for(style: &str, base: &str, model: &str, extra: Value) -> Value {
    let mut c = json!({"baseUrl": base, "style": style, "model": model,
                       "apiKey": "sk-test", "retries": 0});
    if let (Some(c), Some(e)) = (c.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    c
}

/// A request with everything a count must carry (a system prompt, a
/// conversation with a tool round trip, tools, a tool choice) and a
/// generation-only field (`maxTokens`) it must not.
fn request() -> Value {
    json!({
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "What is 2+3?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "add", "arguments": "{\"a\":2,\"b\":3}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "5"},
            {"role": "user", "content": "And look up rust."}
        ],
        "tools": [{"type": "function", "function": {"name": "lookup", "description": "looks up",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}},
                "required": ["q"]}}}],
        "toolChoice": "required",
        "maxTokens": 100
    })
}

/// The toolkit's declarations (a host tool `add`), as tn_translate gets them.
fn declared() -> Vec<Value> {
    let tk = Toolkit::build_from_json(r#"{"builtins":false}"#).expect("toolkit");
    let add = |_: &Value, _: &ExecContext| ToolResult::ok("5".to_string());
    tk.register(Tool::new(
        "add",
        "adds a and b",
        Some(
            json!({"type": "object", "properties": {"a": {"type": "number"},
            "b": {"type": "number"}}, "required": ["a", "b"]}),
        ),
        Source::Native,
        Arc::new(add),
    ));
    tk.openai_declarations()
}

/// The body translate sends for `request()` with this client, recorded by
/// a mock that answers `answer`.
fn translate_body(
    style: &str,
    base_suffix: &str,
    model: &str,
    extra: Value,
    answer: Value,
) -> Value {
    let mock = MockProvider::start(vec![Canned::json(200, &answer)]);
    let base = format!("{}{base_suffix}", mock.base());
    let client = client_for(style, &base, model, extra);
    translate(&client, &request(), &declared(), None).expect("translate");
    mock.requests()[0].json_body()
}

/// `body` with only `keys`.
fn only(body: &Value, keys: &[&str]) -> Value {
    let kept: Map<String, Value> = body
        .as_object()
        .expect("an object body")
        .iter()
        .filter(|(k, _)| keys.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Value::Object(kept)
}

fn count(client: &Value) -> Result<Value, toolnexus::error::Error> {
    count_tokens_json(client, &request().to_string(), &declared(), None)
        .map(|text| serde_json::from_str(&text).expect("the answer is JSON"))
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .map_or(Vec::new(), |o| o.keys().cloned().collect())
}

// ---------------------------------------------------------------------------
// each style
// ---------------------------------------------------------------------------

#[test]
fn anthropic_counts_at_messages_count_tokens_without_generation_fields() {
    let params = json!({"requestParams": {"temperature": 0.2, "metadata": {"user_id": "u"},
        "thinking": {"type": "enabled", "budget_tokens": 1024}}});
    let sent_by_translate = translate_body(
        "anthropic",
        "",
        "claude-test",
        params.clone(),
        json!({"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 1, "output_tokens": 1}}),
    );
    let mock = MockProvider::start(vec![Canned::json(200, &json!({"input_tokens": 42}))]);
    let client = client_for("anthropic", &mock.base(), "claude-test", params);
    let out = count(&client).expect("count");
    assert_eq!(
        out,
        json!({"inputTokens": 42, "style": "anthropic", "model": "claude-test"})
    );

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/messages/count_tokens");
    assert_eq!(r.header("x-api-key"), Some("sk-test"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("authorization"), None);
    let body = r.json_body();
    assert_eq!(
        body,
        only(
            &sent_by_translate,
            &[
                "model",
                "messages",
                "system",
                "tools",
                "tool_choice",
                "thinking"
            ]
        )
    );
    assert_eq!(
        keys(&body),
        [
            "model",
            "messages",
            "system",
            "tools",
            "tool_choice",
            "thinking"
        ]
    );
    assert_eq!(
        body["system"], "Be brief.",
        "the system prompt is top-level"
    );
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["add", "lookup"], "declared tools first");
    assert!(sent_by_translate.get("max_tokens").is_some());
}

#[test]
fn a_v1_base_is_not_doubled_for_anthropic() {
    let mock = MockProvider::start(vec![Canned::json(200, &json!({"input_tokens": 1}))]);
    let client = client_for(
        "anthropic",
        &format!("{}/v1/", mock.base()),
        "claude-test",
        json!({}),
    );
    count(&client).expect("count");
    assert_eq!(mock.requests()[0].path, "/v1/messages/count_tokens");
}

#[test]
fn gemini_counts_at_count_tokens_with_the_generate_content_request() {
    let params = json!({"requestParams": {"temperature": 0.5, "safetySettings": []}});
    let sent_by_translate = translate_body(
        "gemini",
        "",
        "gemini-test",
        params.clone(),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]},
               "finishReason": "STOP"}]}),
    );
    let mock = MockProvider::start(vec![Canned::json(
        200,
        &json!({"totalTokens": 17, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 17}]}),
    )]);
    let client = client_for("gemini", &mock.base(), "gemini-test", params);
    let out = count(&client).expect("count");
    assert_eq!(
        out,
        json!({"inputTokens": 17, "style": "gemini", "model": "gemini-test"})
    );

    let r = &mock.requests()[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1beta/models/gemini-test:countTokens");
    assert_eq!(r.header("x-goog-api-key"), Some("sk-test"));
    assert_eq!(r.header("authorization"), None);
    let body = r.json_body();
    assert_eq!(keys(&body), ["generateContentRequest"]);
    let inner = &body["generateContentRequest"];
    assert_eq!(inner["model"], "models/gemini-test");
    let mut want = only(
        &sent_by_translate,
        &[
            "contents",
            "systemInstruction",
            "tools",
            "toolConfig",
            "safetySettings",
        ],
    );
    want.as_object_mut()
        .unwrap()
        .insert("model".into(), json!("models/gemini-test"));
    let mut got = inner.clone();
    got.as_object_mut().unwrap().sort_keys();
    want.as_object_mut().unwrap().sort_keys();
    assert_eq!(got, want);
    assert!(inner.get("generationConfig").is_none());
    assert!(sent_by_translate.get("generationConfig").is_some());
    assert_eq!(
        inner["systemInstruction"],
        json!({"parts": [{"text": "Be brief."}]})
    );
    let names: Vec<&str> = inner["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["add", "lookup"]);
}

#[test]
fn a_models_prefix_and_a_versioned_gemini_base_are_taken_as_given() {
    let mock = MockProvider::start(vec![Canned::json(200, &json!({"totalTokens": 3}))]);
    let client = client_for(
        "gemini",
        &format!("{}/v1beta", mock.base()),
        "models/gemini-x",
        json!({}),
    );
    let out = count(&client).expect("count");
    assert_eq!(out["inputTokens"], 3);
    let r = &mock.requests()[0];
    assert_eq!(r.path, "/v1beta/models/gemini-x:countTokens");
    assert_eq!(
        r.json_body()["generateContentRequest"]["model"],
        "models/gemini-x"
    );
}

#[test]
fn responses_counts_at_responses_input_tokens() {
    let params = json!({"requestParams": {"temperature": 0.1, "store": false,
        "metadata": {"k": "v"}, "previous_response_id": "resp_1", "reasoning": {"effort": "low"}}});
    let sent_by_translate = translate_body(
        "responses",
        "/v1",
        "gpt-test",
        params.clone(),
        json!({"output": [{"type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "ok"}]}], "status": "completed"}),
    );
    let mock = MockProvider::start(vec![Canned::json(
        200,
        &json!({"object": "response.input_tokens", "input_tokens": 9}),
    )]);
    let client = client_for(
        "responses",
        &format!("{}/v1", mock.base()),
        "gpt-test",
        params,
    );
    let out = count(&client).expect("count");
    assert_eq!(
        out,
        json!({"inputTokens": 9, "style": "responses", "model": "gpt-test"})
    );
    let r = &mock.requests()[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/responses/input_tokens");
    assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
    let body = r.json_body();
    assert_eq!(
        body,
        only(
            &sent_by_translate,
            &[
                "model",
                "input",
                "instructions",
                "tools",
                "tool_choice",
                "previous_response_id",
                "reasoning"
            ]
        )
    );
    assert_eq!(body["instructions"], "Be brief.");
    for gone in [
        "max_output_tokens",
        "temperature",
        "store",
        "metadata",
        "stream",
    ] {
        assert!(body.get(gone).is_none(), "{gone} is not sent: {body}");
    }
    assert!(sent_by_translate.get("max_output_tokens").is_some());
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "name": "add",
        "description": "adds a and b", "parameters": {"type": "object", "properties":
        {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}})
    );
}

#[test]
fn the_chat_style_counts_the_responses_body_at_responses_input_tokens() {
    let chat_params = json!({"requestParams": {"temperature": 0.1, "max_tokens": 50,
        "response_format": {"type": "json_schema", "json_schema": {"name": "n",
            "schema": {"type": "object"}}}}});
    // What the responses style sends for the same request and params.
    let as_responses = translate_body(
        "responses",
        "/v1",
        "gpt-test",
        chat_params.clone(),
        json!({"output": [], "status": "completed"}),
    );
    let mock = MockProvider::start(vec![Canned::json(
        200,
        &json!({"object": "response.input_tokens", "input_tokens": 31}),
    )]);
    let client = client_for(
        "openai",
        &format!("{}/v1", mock.base()),
        "gpt-test",
        chat_params,
    );
    let out = count(&client).expect("count");
    assert_eq!(
        out,
        json!({"inputTokens": 31, "style": "openai", "model": "gpt-test"})
    );
    let r = &mock.requests()[0];
    assert_eq!(r.path, "/v1/responses/input_tokens");
    assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
    let body = r.json_body();
    assert_eq!(
        body,
        only(
            &as_responses,
            &[
                "model",
                "input",
                "instructions",
                "tools",
                "tool_choice",
                "text"
            ]
        )
    );
    assert!(body.get("messages").is_none(), "Responses input, not chat");
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!(body["text"]["format"]["type"], "json_schema");
    assert!(body.get("max_output_tokens").is_none());
    assert_eq!(
        body["input"][1],
        json!({"type": "function_call", "call_id": "call_1", "name": "add",
               "arguments": "{\"a\":2,\"b\":3}"})
    );
}

// ---------------------------------------------------------------------------
// errors
// ---------------------------------------------------------------------------

#[test]
fn a_400_with_a_body_is_translates_provider_error_and_is_not_retried() {
    for (style, suffix) in [
        ("anthropic", ""),
        ("gemini", ""),
        ("responses", "/v1"),
        ("openai", "/v1"),
    ] {
        let mock = MockProvider::start(vec![Canned::text(400, "bad count request").repeating()]);
        let client = client_for(
            style,
            &format!("{}{suffix}", mock.base()),
            "m",
            json!({"retries": 2, "retryBaseMs": 1}),
        );
        let err = count(&client).expect_err("a 400 fails");
        assert_eq!(err.code, ErrorCode::ProviderError, "{style}: {err}");
        let j = err.to_json();
        assert_eq!(j["error"]["code"], "provider_error");
        assert_eq!(j["error"]["status"], 400, "{style}");
        assert_eq!(j["error"]["body"], "bad count request", "{style}");
        assert_eq!(j["error"]["retryAfter"], Value::Null);
        assert_eq!(mock.requests().len(), 1, "{style}: a 400 is not retried");
    }
}

#[test]
fn a_503_is_retried_as_translate_retries() {
    let mock = MockProvider::start(vec![
        Canned::text(503, "busy"),
        Canned::json(200, &json!({"input_tokens": 5})),
    ]);
    let client = client_for(
        "anthropic",
        &mock.base(),
        "m",
        json!({"retries": 1, "retryBaseMs": 1}),
    );
    assert_eq!(count(&client).expect("count")["inputTokens"], 5);
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn an_answer_without_the_count_is_a_provider_error() {
    let mock = MockProvider::start(vec![Canned::json(200, &json!({"tokens": 5}))]);
    let client = client_for("gemini", &mock.base(), "m", json!({}));
    let err = count(&client).expect_err("no totalTokens");
    assert_eq!(err.code, ErrorCode::ProviderError);
    assert!(err.message.contains("totalTokens"), "{err}");
}

#[test]
fn an_invalid_client_or_request_is_refused_before_any_call() {
    let mock = MockProvider::start(vec![Canned::json(200, &json!({"input_tokens": 1}))]);
    let bad_clients = [
        json!({"baseUrl": mock.base(), "style": "anthropic"}),
        json!({"baseUrl": mock.base(), "style": "cohere", "model": "m"}),
        json!({"baseUrl": "ftp://x", "style": "anthropic", "model": "m"}),
        json!({"baseUrl": mock.base(), "model": "m", "bogus": 1}),
        json!("not an object"),
    ];
    for c in bad_clients {
        let err = count(&c).expect_err("invalid client");
        assert_eq!(err.code, ErrorCode::InvalidConfig, "{c}: {err}");
    }
    let client = client_for("anthropic", &mock.base(), "m", json!({}));
    let err = count_tokens_json(&client, r#"{"messages": 3}"#, &[], None).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidConfig, "{err}");
    let err = count_tokens_json(&client, r#"{"messages": ["#, &[], None).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidJson, "{err}");
    assert!(mock.requests().is_empty());
}

#[test]
fn a_cancelled_token_stops_the_call_before_any_io() {
    let mock = MockProvider::start(vec![Canned::json(200, &json!({"input_tokens": 1}))]);
    let client = client_for("anthropic", &mock.base(), "m", json!({}));
    let token = CancelToken::new();
    token.cancel();
    let err = count_tokens_json(&client, &request().to_string(), &[], Some(&token)).unwrap_err();
    assert_eq!(err.code, ErrorCode::Cancelled, "{err}");
    assert!(mock.requests().is_empty());
}

#[test]
fn timeout_ms_bounds_the_count_call() {
    let mock = MockProvider::start(vec![
        Canned::json(200, &json!({"input_tokens": 1})).delay(3000)
    ]);
    let client = client_for("anthropic", &mock.base(), "m", json!({"timeoutMs": 200}));
    let started = std::time::Instant::now();
    let err = count(&client).expect_err("the provider is too slow");
    assert_eq!(err.code, ErrorCode::Timeout, "{err}");
    assert!(started.elapsed() < std::time::Duration::from_millis(2500));
}

#[test]
fn upstreams_fail_over_and_the_serving_one_is_reported() {
    let a = MockProvider::start(vec![Canned::text(503, "busy").repeating()]);
    let b = MockProvider::start(vec![Canned::json(200, &json!({"totalTokens": 12}))]);
    let client = json!({"retries": 0, "cooldownMs": 0, "upstreams": [
        {"baseUrl": a.base(), "style": "anthropic", "model": "claude-a", "apiKey": "ka"},
        {"baseUrl": b.base(), "style": "gemini", "model": "gemini-b", "apiKey": "kb"}
    ]});
    let out = count(&client).expect("the second upstream counts");
    assert_eq!(out["inputTokens"], 12);
    assert_eq!(out["style"], "gemini");
    assert_eq!(out["model"], "gemini-b");
    assert_eq!(
        out["upstream"],
        json!({"index": 1, "baseUrl": b.base(), "model": "gemini-b", "style": "gemini"})
    );
    assert_eq!(a.requests()[0].path, "/v1/messages/count_tokens");
    assert_eq!(b.requests()[0].path, "/v1beta/models/gemini-b:countTokens");
    assert_eq!(b.requests()[0].header("x-goog-api-key"), Some("kb"));
}

// ---------------------------------------------------------------------------
// the C entry point
// ---------------------------------------------------------------------------

/// `tn_count_tokens` with raw pointers; gives the status and `*out_json`.
fn c_count(
    client: *const c_char,
    request: *const c_char,
    toolkit: *const toolnexus::ffi::tn_toolkit,
) -> (i32, Value) {
    let mut out: *mut c_char = std::ptr::null_mut();
    // SAFETY: the pointers are NULL or live NUL-terminated strings, the
    // toolkit NULL or live, `out` writable.
    let status = unsafe {
        toolnexus::ffi::tn_count_tokens(client, request, toolkit, std::ptr::null(), &mut out)
    };
    assert!(!out.is_null(), "out_json is always set");
    // SAFETY: set by the call; freed once.
    let text = unsafe { CStr::from_ptr(out) }
        .to_string_lossy()
        .into_owned();
    unsafe { toolnexus::ffi::tn_string_free(out) };
    (
        status as i32,
        serde_json::from_str(&text).expect("JSON out"),
    )
}

#[test]
fn tn_count_tokens_counts_with_a_toolkit_and_refuses_bad_arguments() {
    let mock = MockProvider::start(vec![
        Canned::json(200, &json!({"input_tokens": 77})),
        Canned::json(200, &json!({"input_tokens": 3})),
    ]);
    let client =
        CString::new(client_for("anthropic", &mock.base(), "m", json!({})).to_string()).unwrap();
    let req =
        CString::new(json!({"messages": [{"role": "user", "content": "hi"}]}).to_string()).unwrap();

    // A toolkit built through the C API: its tools are declared.
    let mut tk: *mut toolnexus::ffi::tn_toolkit = std::ptr::null_mut();
    let mut err: *mut c_char = std::ptr::null_mut();
    // SAFETY: a valid config string and writable out pointers.
    let st = unsafe { toolnexus::ffi::tn_toolkit_build(c"{}".as_ptr(), &mut tk, &mut err) };
    assert_eq!(st as i32, 0);
    let (status, out) = c_count(client.as_ptr(), req.as_ptr(), tk);
    // SAFETY: built above, freed once.
    unsafe { toolnexus::ffi::tn_toolkit_free(tk) };
    assert_eq!(status, 0, "{out}");
    assert_eq!(
        out,
        json!({"inputTokens": 77, "style": "anthropic", "model": "m"})
    );
    let sent = mock.requests()[0].json_body();
    assert!(
        sent["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "the toolkit's tools are declared: {sent}"
    );

    let (status, out) = c_count(client.as_ptr(), req.as_ptr(), std::ptr::null());
    assert_eq!(status, 0, "{out}");
    assert_eq!(out["inputTokens"], 3);
    assert!(mock.requests()[1].json_body().get("tools").is_none());

    let (status, out) = c_count(std::ptr::null(), req.as_ptr(), std::ptr::null());
    assert_eq!(status, 1, "TN_NULL_ARGUMENT");
    assert_eq!(out["error"]["code"], "null_argument");
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("client_json"));

    let (status, out) = c_count(client.as_ptr(), std::ptr::null(), std::ptr::null());
    assert_eq!(status, 1, "TN_NULL_ARGUMENT");
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("request_json"));

    let bad = [0x7b_u8, 0xff, 0xfe, 0x7d, 0];
    let (status, out) = c_count(bad.as_ptr().cast(), req.as_ptr(), std::ptr::null());
    assert_eq!(status, 2, "TN_INVALID_UTF8");
    assert_eq!(out["error"]["code"], "invalid_utf8");
    let (status, out) = c_count(client.as_ptr(), bad.as_ptr().cast(), std::ptr::null());
    assert_eq!(status, 2, "TN_INVALID_UTF8");
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("request_json"));

    let malformed = c"{\"baseUrl\":";
    let (status, out) = c_count(malformed.as_ptr(), req.as_ptr(), std::ptr::null());
    assert_eq!(status, 3, "TN_INVALID_JSON");
    assert_eq!(out["error"]["code"], "invalid_json");

    let no_model =
        CString::new(json!({"baseUrl": mock.base(), "style": "anthropic"}).to_string()).unwrap();
    let (status, out) = c_count(no_model.as_ptr(), req.as_ptr(), std::ptr::null());
    assert_eq!(status, 4, "TN_INVALID_CONFIG");
    assert_eq!(out["error"]["code"], "invalid_config");

    // A NULL out_json is refused and nothing is written.
    // SAFETY: NULL out is part of the contract.
    let status = unsafe {
        toolnexus::ffi::tn_count_tokens(
            client.as_ptr(),
            req.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(status as i32, 1);
    assert_eq!(mock.requests().len(), 2, "no call for a refused argument");
}
