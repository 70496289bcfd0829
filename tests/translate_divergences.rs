//! The translate cases where this port deliberately differs from the
//! recording (tests/conformance/divergences.json, translate/*): each test runs
//! the recorded case's own inputs against the mock provider and asserts the
//! decision instead of the recorded output.

mod translate_mock;

use serde_json::{json, Value};
use std::path::PathBuf;
use toolnexus::error::ErrorCode;
use toolnexus::translate::translate;
use translate_mock::{Canned, MockProvider};

fn case(id: &str) -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/vectors/translate.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let all: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    all["cases"]
        .as_array()
        .and_then(|cases| cases.iter().find(|c| c["id"] == id).cloned())
        .unwrap_or_else(|| panic!("no case {id}"))
}

fn with_base(v: &Value, base: &str) -> Value {
    serde_json::from_str(&v.to_string().replace("${BASE}", base)).unwrap_or(Value::Null)
}

/// Runs a recorded case's inputs; returns the outcome and the mock.
fn run(id: &str) -> (Result<Value, toolnexus::error::Error>, MockProvider) {
    let c = case(id);
    let mock = MockProvider::for_case(&c);
    let client = with_base(&c["client"], &mock.base());
    let request = with_base(&c["request"], &mock.base());
    (translate(&client, &request, &[], None), mock)
}

#[test]
fn a_reply_with_tool_calls_finishes_with_tool_calls_even_when_the_provider_says_stop() {
    let (result, _mock) = run("translate/openai/tool-calls-provider-says-stop");
    let result = result.expect("translate succeeds");
    assert_eq!(result["finishReason"], "tool_calls");
    assert_eq!(result["toolCalls"][0]["name"], "get_weather");
    assert_eq!(result["toolCalls"][0]["arguments"], "{\"city\":\"Paris\"}");
}

#[test]
fn an_unknown_openai_finish_reason_is_mapped_to_stop() {
    let (result, _mock) = run("translate/openai/finish-unknown-passthrough");
    let result = result.expect("translate succeeds");
    assert_eq!(result["finishReason"], "stop");
    assert_eq!(result["text"], "x");
}

#[test]
fn openai_finish_reasons_of_its_own_are_kept_and_others_mapped() {
    let mock = MockProvider::start(
        ["length", "content_filter", "function_call", "max_tokens", "refusal", "end_turn"]
            .iter()
            .map(|r| {
                Canned::json(
                    200,
                    &json!({"choices": [{"finish_reason": r, "message": {"role": "assistant", "content": "x"}}]}),
                )
            })
            .collect(),
    );
    let client = json!({"baseUrl": mock.base(), "model": "m", "apiKey": "k"});
    let request = json!({"messages": [{"role": "user", "content": "Hi"}]});
    let got: Vec<Value> = (0..6)
        .map(|_| {
            translate(&client, &request, &[], None).expect("translate succeeds")["finishReason"]
                .clone()
        })
        .collect();
    assert_eq!(
        got,
        vec![
            json!("length"),
            json!("content_filter"),
            json!("function_call"),
            json!("length"),
            json!("content_filter"),
            json!("stop")
        ]
    );
}

#[test]
fn a_message_that_is_not_an_object_is_an_invalid_argument_naming_its_index() {
    let (result, mock) = run("translate/openai/non-map-messages-dropped");
    let err = result.expect_err("translate refuses the request");
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("messages[0]"), "{}", err.message);
    assert!(mock.requests().is_empty(), "nothing may reach the provider");

    // The same holds on the anthropic style, for a later index.
    let mock = MockProvider::start(Vec::new());
    let client = json!({"baseUrl": mock.base(), "style": "anthropic", "model": "m", "apiKey": "k"});
    let request = json!({"messages": [{"role": "user", "content": "Hi"}, {"role": "user", "content": "a"}, 3]});
    let err = translate(&client, &request, &[], None).expect_err("translate refuses the request");
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("messages[2]"), "{}", err.message);
    assert!(mock.requests().is_empty());
}

/// The only test in this binary that touches the provider key variables.
#[test]
fn without_any_key_no_credential_header_is_sent() {
    let c = case("translate/openai/no-api-key");
    let saved: Vec<(String, Option<String>)> = c["env"]
        .as_object()
        .expect("the case lists its env")
        .keys()
        .map(|k| (k.clone(), std::env::var(k).ok()))
        .collect();
    for (k, _) in &saved {
        std::env::remove_var(k);
    }

    let (result, mock) = run("translate/openai/no-api-key");
    assert_eq!(result.expect("translate succeeds")["text"], "ok");
    let sent = mock.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].header("authorization"), None);
    assert_eq!(sent[0].header("content-type"), Some("application/json"));

    let mock = MockProvider::start(vec![Canned::json(
        200,
        &json!({"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}),
    )]);
    let client = json!({"baseUrl": mock.base(), "style": "anthropic", "model": "m"});
    let request = json!({"messages": [{"role": "user", "content": "Hi"}]});
    translate(&client, &request, &[], None).expect("translate succeeds");
    let sent = mock.requests();
    assert_eq!(sent[0].header("x-api-key"), None);
    assert_eq!(sent[0].header("anthropic-version"), Some("2023-06-01"));

    // And the environment is honoured when a key is there: the style's own
    // variable first, then OPENROUTER_API_KEY.
    std::env::set_var("OPENROUTER_API_KEY", "router-key");
    let mock = MockProvider::start(vec![
        Canned::json(200, &json!({"choices": []})),
        Canned::json(200, &json!({"choices": []})),
    ]);
    let client = json!({"baseUrl": mock.base(), "model": "m"});
    translate(&client, &request, &[], None).expect("translate succeeds");
    std::env::set_var("OPENAI_API_KEY", "openai-key");
    translate(&client, &request, &[], None).expect("translate succeeds");
    let sent = mock.requests();
    assert_eq!(sent[0].header("authorization"), Some("Bearer router-key"));
    assert_eq!(sent[1].header("authorization"), Some("Bearer openai-key"));

    for (k, old) in saved {
        match old {
            Some(v) => std::env::set_var(&k, v),
            None => std::env::remove_var(&k),
        }
    }
}

/// The helper's answer for a recorded translate_helpers.json case's args.
fn helper_case(id: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conformance/vectors/translate_helpers.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("vectors"))
        .expect("vectors JSON");
    let case = all["cases"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("no case {id}"))
        .clone();
    let args = case["args"].as_array().expect("args").clone();
    toolnexus::translate::call_helper(case["fn"].as_str().expect("fn"), &args).expect("helper")
}

/// helper/openaiMessagesToAnthropic/user-mixed-parts-flattened and
/// user-image-only-passthrough: an OpenAI `image_url` part reaches
/// Anthropic as an `image` block in its place (the recording dropped it
/// beside text, and passed it through as given alone); a `data:` URL as a
/// base64 source.
#[test]
fn an_image_url_part_is_an_anthropic_image_block() {
    let image = json!({"type": "image", "source": {"type": "url", "url": "http://x/y.png"}});
    assert_eq!(
        helper_case("helper/openaiMessagesToAnthropic/user-mixed-parts-flattened"),
        json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "see"}, image.clone()]}],
            "system": ""})
    );
    assert_eq!(
        helper_case("helper/openaiMessagesToAnthropic/user-image-only-passthrough"),
        json!({"messages": [{"role": "user", "content": [image]}], "system": ""})
    );
    let data = json!([[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "text", "text": "what is it?"}]}]]);
    let got =
        toolnexus::translate::call_helper("openaiMessagesToAnthropic", data.as_array().unwrap())
            .expect("helper");
    assert_eq!(
        got["messages"][0]["content"],
        json!([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
               {"type": "text", "text": "what is it?"}])
    );
}
