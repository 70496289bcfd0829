//! Provider errors as upstream 0.21 reports them (ADR 0027, issues #91/#92):
//! a typed error with the HTTP status, the redacted body and the raw
//! Retry-After; 401/403 bodies never shown; account identifiers redacted;
//! the message's quote capped; 529 retried by default and
//! `retryableStatuses` widening the set. Against a mock provider on
//! 127.0.0.1. Each test names the upstream test (the Python port 0.21.0,
//! tests/test_consumer_issues_86_93.py) it follows.

mod translate_mock;

use serde_json::{json, Value};
use toolnexus::error::{Error, ErrorCode, ProviderStatus};
use toolnexus::translate::client::{
    capped, redact_identifiers, safe_error_body, MAX_ERROR_BODY, REDACTED,
};
use toolnexus::translate::translate;
use translate_mock::{Canned, MockProvider};

fn ok_reply() -> Canned {
    Canned::json(
        200,
        &json!({"choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "ok"}}]}),
    )
}

fn hi() -> Value {
    json!({"messages": [{"role": "user", "content": "Hi"}]})
}

fn client(mock: &MockProvider, extra: Value) -> Value {
    let mut c = json!({"baseUrl": mock.base(), "model": "gpt-test", "apiKey": "sk-live-xyz",
                       "retries": 0, "retryBaseMs": 1});
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        c.extend(extra.clone());
    }
    c
}

fn fail_with(answer: Canned, extra: Value) -> Error {
    let mock = MockProvider::start(vec![answer]);
    translate(&client(&mock, extra), &hi(), &[], None).expect_err("the provider fails")
}

fn provider(e: &Error) -> &ProviderStatus {
    e.provider
        .as_deref()
        .unwrap_or_else(|| panic!("no provider status on {e}"))
}

// Follows test_d5_provider_error_is_typed.
#[test]
fn an_error_status_is_a_typed_error_with_the_raw_retry_after() {
    let e = fail_with(
        Canned::text(429, "slow down").header("retry-after", "2"),
        json!({}),
    );
    assert_eq!(e.code, ErrorCode::ProviderError);
    let p = provider(&e);
    assert_eq!(
        (p.status, p.body.as_str(), p.retry_after.as_deref()),
        (429, "slow down", Some("2"))
    );
    // At the ABI the same fields sit inside `error`.
    let j = e.to_json();
    assert_eq!(j["error"]["code"], "provider_error");
    assert_eq!(j["error"]["status"], 429);
    assert_eq!(j["error"]["body"], "slow down");
    assert_eq!(j["error"]["retryAfter"], "2");
    assert!(j["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("429") && m.contains("slow down")));
}

// Follows test_d5_provider_error_carries_a_non_delay_seconds_retry_after_verbatim.
#[test]
fn an_http_date_retry_after_reaches_the_host_verbatim() {
    let raw = "Wed, 21 Oct 2026 07:28:00 GMT";
    let e = fail_with(
        Canned::text(503, "later").header("retry-after", raw),
        json!({}),
    );
    assert_eq!(provider(&e).retry_after.as_deref(), Some(raw));
    let none = fail_with(Canned::text(500, "down"), json!({}));
    assert_eq!(provider(&none).retry_after, None);
    assert_eq!(none.to_json()["error"]["retryAfter"], Value::Null);
}

// Follows test_d5_account_identifiers_are_redacted_not_merely_capped.
#[test]
fn account_identifiers_are_redacted_in_the_message_and_the_body() {
    let body = r#"{"error":{"message":"no credit","user_id":"user_2abc","org_id":"org_9"}}"#;
    let e = fail_with(Canned::text(402, body), json!({}));
    let p = provider(&e);
    for text in [&e.message, &p.body] {
        assert!(
            !text.contains("user_2abc") && !text.contains("org_9"),
            "{text}"
        );
        assert_eq!(text.matches(REDACTED).count(), 2, "{text}");
        assert!(text.contains("no credit"), "{text}");
    }
    assert!(
        body.len() < MAX_ERROR_BODY,
        "the leak is not a matter of length"
    );
}

#[test]
fn redaction_keeps_keys_and_takes_quoted_and_bare_values() {
    assert_eq!(
        redact_identifiers(r#"{"account_id": 12345, "organization" : "Acme \"Inc\"", "x":1}"#),
        r#"{"account_id": "«redacted»", "organization" : "«redacted»", "x":1}"#
    );
    // Only the exact keys, quoted: a longer key is left alone.
    let other = r#"{"parent_org_id":"p1","org_idx":"p2"}"#;
    assert_eq!(redact_identifiers(other), other);
}

// Follows test_d5_auth_bodies_never_surface.
#[test]
fn a_401_or_403_body_never_surfaces() {
    for status in [401, 403] {
        let e = fail_with(
            Canned::text(status, "Authorization: Bearer sk-live-other rejected"),
            json!({}),
        );
        assert!(
            !e.message.contains("sk-live") && !e.message.contains("Bearer"),
            "{}",
            e.message
        );
        assert!(e.message.contains(&status.to_string()), "{}", e.message);
        assert_eq!(provider(&e).body, "");
    }
    assert_eq!(safe_error_body(401, "Bearer sk-live-xyz"), "");
}

// Follows test_d5_the_cap_is_message_only.
#[test]
fn only_the_message_quote_is_capped() {
    let long = "x".repeat(MAX_ERROR_BODY * 3);
    let e = fail_with(Canned::text(500, &long), json!({}));
    assert_eq!(provider(&e).body.len(), long.len());
    let quoted = format!("{}…", "x".repeat(MAX_ERROR_BODY));
    assert!(e.message.ends_with(&quoted), "{}", e.message);
    assert!(!e.message.contains(&"x".repeat(MAX_ERROR_BODY + 1)));
    assert_eq!(capped(&long).chars().count(), MAX_ERROR_BODY + 1);
    // Characters, not bytes: a multi-byte body is cut on a character.
    assert_eq!(capped(&"é".repeat(300)), format!("{}…", "é".repeat(200)));
}

// Follows test_d5_must_not_regress_429_is_retried (`_RETRYABLE` holds 529).
#[test]
fn overloaded_529_is_retried_by_default() {
    let mock = MockProvider::start(vec![Canned::text(529, "overloaded"), ok_reply()]);
    let r = translate(&client(&mock, json!({"retries": 2})), &hi(), &[], None)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r["text"], "ok");
    assert_eq!(mock.requests().len(), 2);
}

// Follows the `retryable_statuses` of upstream client.py
// (_is_retryable_status: it adds to the default set, never removes) and
// test_d5_must_not_regress_fail_fast_on_a_non_retryable_4xx.
#[test]
fn retryable_statuses_widen_the_set_and_never_narrow_it() {
    let plain = MockProvider::start(vec![Canned::text(520, "origin"), ok_reply()]);
    let e = translate(&client(&plain, json!({"retries": 2})), &hi(), &[], None)
        .expect_err("520 is not retried by default");
    assert_eq!(provider(&e).status, 520);
    assert_eq!(plain.requests().len(), 1);

    let widened = MockProvider::start(vec![
        Canned::text(520, "origin"),
        Canned::text(429, "busy"),
        ok_reply(),
    ]);
    let c = client(&widened, json!({"retries": 2, "retryableStatuses": [520]}));
    let r = translate(&c, &hi(), &[], None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r["text"], "ok");
    assert_eq!(widened.requests().len(), 3);
}

#[test]
fn a_bad_retryable_statuses_is_invalid_config_naming_the_key() {
    let mock = MockProvider::start(vec![]);
    for (bad, names) in [
        (json!("520"), "client.retryableStatuses"),
        (json!([520, 42]), "client.retryableStatuses[1]"),
        (json!([600]), "client.retryableStatuses[0]"),
    ] {
        let e = translate(
            &client(&mock, json!({"retryableStatuses": bad})),
            &hi(),
            &[],
            None,
        )
        .expect_err("refused");
        assert_eq!(e.code, ErrorCode::InvalidConfig);
        assert!(e.message.contains(names), "{}", e.message);
    }
    assert!(mock.requests().is_empty());
}

// Follows test_d5_timeout_message_names_the_budget.
#[test]
fn the_timeout_message_names_timeout_ms() {
    let e = fail_with(ok_reply().delay(5_000), json!({"timeoutMs": 100}));
    assert_eq!(e.code, ErrorCode::Timeout);
    assert!(e.message.contains("timeoutMs (100 ms)"), "{}", e.message);
    assert_eq!(e.provider, None);
}

/// The recorded case `id` of translate.json.
fn vector_case(id: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conformance/vectors/translate.json");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(path).expect("translate.json")).expect("vector JSON");
    doc["cases"]
        .as_array()
        .and_then(|cases| cases.iter().find(|c| c["id"] == id).cloned())
        .unwrap_or_else(|| panic!("no case {id}"))
}

// The case proposed-divergences.json lists: its recorded input, with the
// recorded 529 served on every attempt, is asked retries + 1 times and ends
// with the recorded status and body.
#[test]
fn the_529_vector_case_is_retried_as_0_21_does() {
    let case = vector_case("translate/anthropic/error-529-not-retryable");
    let recorded = &case["providerResponses"][0];
    let mock = MockProvider::start(vec![Canned::from_vector(recorded).repeating()]);
    let client: Value =
        serde_json::from_str(&case["client"].to_string().replace("${BASE}", &mock.base()))
            .expect("client");
    let e = translate(&client, &case["request"], &[], None).expect_err("529 every time");
    let retries = client["retries"].as_u64().unwrap_or_default() as usize;
    assert_eq!(mock.requests().len(), retries + 1);
    assert_eq!(provider(&e).status, 529);
    assert!(
        e.message.contains(&recorded["body"].to_string()),
        "{}",
        e.message
    );
    let want = &case["expect"]["providerRequest"];
    for r in mock.requests() {
        assert_eq!(r.json_body(), want["body"]);
    }
}

#[test]
fn an_api_key_echoed_in_any_encoding_never_reaches_the_error() {
    use base64::Engine;
    let key = r#"sk-"quoted"\back/slash é+more"#;
    let json_escaped = serde_json::to_string(key).expect("json");
    let json_escaped = &json_escaped[1..json_escaped.len() - 1];
    let python_escaped = json_escaped.replace('é', "\\u00e9");
    let url_encoded =
        percent_encoding::utf8_percent_encode(key, percent_encoding::NON_ALPHANUMERIC).to_string();
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("user:{key}"));
    let echo = format!(
        r#"{{"error":{{"message":"bad request","echo":{{"x-api-key":"{json_escaped}","py":"{python_escaped}","url":"/v1?key={url_encoded}","authorization":"Basic {basic}","raw":"{}"}}}}}}"#,
        key.replace('"', "'")
    );
    let e = fail_with(Canned::text(400, &echo), json!({"apiKey": key}));
    let body = &provider(&e).body;
    for (what, form) in [
        ("JSON-escaped", json_escaped.to_string()),
        ("Python-escaped", python_escaped.clone()),
        ("percent-encoded", url_encoded.clone()),
    ] {
        assert!(
            !e.message.contains(&form),
            "{what} key in the message: {}",
            e.message
        );
        assert!(!body.contains(&form), "{what} key in the body: {body}");
    }
    // The Basic credential: no run of its base64 that only the key gives.
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("user:{key}"));
    let core = &b64[8..b64.len() - 4];
    assert!(
        !body.contains(core),
        "base64 of the key in the body: {body}"
    );
    assert!(body.contains("[redacted]"), "{body}");
}
