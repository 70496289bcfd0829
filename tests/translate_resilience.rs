//! Retries, Retry-After, the whole-call timeout, cancellation, concurrency and
//! input validation of `translate`, against a mock provider on 127.0.0.1.
//! Every client here carries its own apiKey, so the environment never matters.

mod endless_server;
mod translate_mock;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use toolnexus::cancel::CancelToken;
use toolnexus::error::ErrorCode;
use toolnexus::translate::client::retry_after_ms;
use toolnexus::translate::translate;
use translate_mock::{Canned, MockProvider};

fn ok_reply(text: &str) -> Canned {
    Canned::json(
        200,
        &json!({"choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}),
    )
}

fn hi() -> Value {
    json!({"messages": [{"role": "user", "content": "Hi"}]})
}

fn client(mock: &MockProvider, extra: Value) -> Value {
    let mut c = json!({"baseUrl": mock.base(), "model": "gpt-test", "apiKey": "sk-secret-123"});
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        c.extend(extra.clone());
    }
    c
}

#[test]
fn retryable_statuses_are_retried_until_an_answer_comes() {
    // 529 since upstream 0.21 (test_d5_must_not_regress_429_is_retried).
    for status in [429, 500, 502, 503, 504, 529] {
        let mock = MockProvider::start(vec![Canned::text(status, "busy"), ok_reply("recovered")]);
        let result = translate(&client(&mock, json!({"retryBaseMs": 1})), &hi(), &[], None)
            .unwrap_or_else(|e| panic!("{status}: {e}"));
        assert_eq!(result["text"], "recovered");
        assert_eq!(mock.requests().len(), 2, "status {status}");
    }
}

#[test]
fn an_answer_past_64_mib_fails_once_without_retries() {
    let server = endless_server::EndlessServer::start();
    let client = json!({"baseUrl": format!("http://127.0.0.1:{}", server.port),
                        "model": "gpt-test", "apiKey": "sk-secret-123", "retryBaseMs": 1});
    let err = translate(&client, &hi(), &[], None).expect_err("the answer is too large");
    assert_eq!(err.code, ErrorCode::ProviderError);
    assert!(
        err.message.contains("more than 64 MiB") && err.message.contains("/chat/completions"),
        "{}",
        err.message
    );
    assert_eq!(
        server.requests(),
        1,
        "an answer too large to read is not asked for again"
    );
}

#[test]
fn retries_default_to_two_and_the_last_failure_is_reported() {
    let mock = MockProvider::start(vec![
        Canned::text(500, "down 1"),
        Canned::text(503, "down 2"),
        Canned::text(502, "down 3"),
        ok_reply("never reached"),
    ]);
    let err = translate(&client(&mock, json!({"retryBaseMs": 1})), &hi(), &[], None)
        .expect_err("three failures exhaust the default budget");
    assert_eq!(err.code, ErrorCode::ProviderError);
    assert!(
        err.message.contains("502") && err.message.contains("down 3"),
        "{}",
        err.message
    );
    assert!(err.message.contains("3 attempts"), "{}", err.message);
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn other_statuses_fail_at_once_with_the_status_and_the_providers_text() {
    for (status, body) in [
        (400, "{\"error\":\"bad\"}"),
        (404, "missing"),
        (501, "not implemented"),
    ] {
        let mock = MockProvider::start(vec![Canned::text(status, body), ok_reply("never")]);
        let err = translate(&client(&mock, json!({"retryBaseMs": 1})), &hi(), &[], None)
            .expect_err("a non-retryable status fails");
        assert_eq!(err.code, ErrorCode::ProviderError);
        assert!(err.message.contains(&status.to_string()), "{}", err.message);
        assert!(err.message.contains(body), "{}", err.message);
        assert_eq!(mock.requests().len(), 1);
    }
}

#[test]
fn the_api_key_never_appears_in_an_error_even_when_the_provider_echoes_it() {
    let mock = MockProvider::start(vec![Canned::text(400, "invalid key sk-secret-123 for org")]);
    let err = translate(&client(&mock, json!({})), &hi(), &[], None).expect_err("400 fails");
    assert!(!err.message.contains("sk-secret-123"), "{}", err.message);
    assert!(
        err.message.contains("400") && err.message.contains("invalid key"),
        "{}",
        err.message
    );
    let body = err
        .provider
        .as_ref()
        .map(|p| p.body.clone())
        .unwrap_or_default();
    assert!(
        body.contains("invalid key") && !body.contains("sk-secret-123"),
        "{body}"
    );
}

#[test]
fn a_network_error_is_retried() {
    let mock = MockProvider::start(vec![Canned::hangup(), ok_reply("after hangup")]);
    let result = translate(&client(&mock, json!({"retryBaseMs": 1})), &hi(), &[], None)
        .expect("the retry succeeds");
    assert_eq!(result["text"], "after hangup");
}

#[test]
fn an_unreachable_provider_is_a_provider_error_naming_the_endpoint() {
    let c = json!({"baseUrl": "http://127.0.0.1:1", "model": "m", "apiKey": "k", "retries": 0});
    let err = translate(&c, &hi(), &[], None).expect_err("nothing listens on port 1");
    assert_eq!(err.code, ErrorCode::ProviderError);
    assert!(
        err.message.contains("http://127.0.0.1:1/chat/completions"),
        "{}",
        err.message
    );
}

#[test]
fn a_malformed_2xx_body_is_a_provider_error_quoting_it() {
    let mock = MockProvider::start(vec![Canned::text(200, "this is not json")]);
    let err = translate(&client(&mock, json!({})), &hi(), &[], None).expect_err("not JSON");
    assert_eq!(err.code, ErrorCode::ProviderError);
    assert!(
        err.message.contains("200") && err.message.contains("this is not json"),
        "{}",
        err.message
    );
    assert_eq!(
        mock.requests().len(),
        1,
        "a malformed answer is not retried"
    );
}

#[test]
fn retry_after_is_read_in_its_delay_seconds_form_only() {
    assert_eq!(retry_after_ms("0"), Some(0));
    assert_eq!(retry_after_ms("7"), Some(7000));
    assert_eq!(retry_after_ms(" 12 "), Some(12000));
    assert_eq!(retry_after_ms("2147483647"), Some(2_147_483_647_000));
    assert_eq!(retry_after_ms("2147483648"), None);
    assert_eq!(retry_after_ms("99999999999999999999999"), None);
    for bad in [
        "",
        "-1",
        "1.5",
        "+3",
        "soon",
        "Wed, 21 Oct 2015 07:28:00 GMT",
    ] {
        assert_eq!(retry_after_ms(bad), None, "{bad:?}");
    }
}

#[test]
fn retry_after_zero_is_honoured_over_a_long_backoff() {
    // The backoff alone would wait a minute; Retry-After: 0 retries at once,
    // well inside the 20 s budget.
    let mock = MockProvider::start(vec![
        Canned::text(429, "slow down").header("retry-after", "0"),
        ok_reply("ok"),
    ]);
    let c = client(&mock, json!({"retryBaseMs": 60000, "timeoutMs": 20000}));
    let result = translate(&c, &hi(), &[], None).expect("Retry-After: 0 retries at once");
    assert_eq!(result["text"], "ok");
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn retry_after_seconds_are_honoured_over_a_short_backoff() {
    // The backoff alone would retry within 100 ms and succeed; Retry-After:
    // 30 makes the call outlast its 1 s budget instead.
    let mock = MockProvider::start(vec![
        Canned::text(503, "later").header("retry-after", "30"),
        ok_reply("too soon"),
    ]);
    let c = client(&mock, json!({"retryBaseMs": 1, "timeoutMs": 1000}));
    let err = translate(&c, &hi(), &[], None).expect_err("waits for the provider's 30 s");
    assert_eq!(err.code, ErrorCode::Timeout);
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn an_http_date_retry_after_falls_back_to_the_backoff() {
    // A date long past would mean "retry now" if it were honoured; the one
    // minute backoff applies instead, so the 1 s budget runs out.
    let mock = MockProvider::start(vec![
        Canned::text(503, "later").header("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"),
        ok_reply("too soon"),
    ]);
    let c = client(&mock, json!({"retryBaseMs": 60000, "timeoutMs": 1000}));
    let err = translate(&c, &hi(), &[], None).expect_err("the backoff outlasts the budget");
    assert_eq!(err.code, ErrorCode::Timeout);
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn timeout_ms_bounds_a_slow_answer() {
    let mock = MockProvider::start(vec![ok_reply("too late").delay(10_000)]);
    let c = client(&mock, json!({"timeoutMs": 200, "retries": 0}));
    let err = translate(&c, &hi(), &[], None).expect_err("times out");
    assert_eq!(err.code, ErrorCode::Timeout);
    assert!(err.message.contains("timeoutMs"), "{}", err.message);
}

#[test]
fn timeout_ms_bounds_the_whole_call_across_retries() {
    let mock = MockProvider::start(vec![Canned::text(500, "flaky").repeating()]);
    let c = client(
        &mock,
        json!({"timeoutMs": 400, "retries": 1000000, "retryBaseMs": 20}),
    );
    let err = translate(&c, &hi(), &[], None).expect_err("the budget runs out before the retries");
    assert_eq!(err.code, ErrorCode::Timeout);
    assert!(mock.requests().len() >= 2);
}

#[test]
fn cancelling_from_another_thread_aborts_the_call_in_flight() {
    let mock = MockProvider::start(vec![ok_reply("too late").delay(30_000)]);
    let c = client(&mock, json!({"retries": 0}));
    let token = CancelToken::new();
    let worker = {
        let token = token.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            (translate(&c, &hi(), &[], Some(&token)), started.elapsed())
        })
    };
    // Wait until the request is on the wire, then cancel.
    while mock.requests().is_empty() {
        std::thread::sleep(Duration::from_millis(5));
    }
    token.cancel();
    let (outcome, elapsed) = worker.join().expect("worker thread");
    let err = outcome.expect_err("cancelled");
    assert_eq!(err.code, ErrorCode::Cancelled);
    assert!(
        elapsed < Duration::from_secs(10),
        "the call waited for the provider: {elapsed:?}"
    );
    assert!(token.is_cancelled());
}

#[test]
fn cancelling_during_a_backoff_aborts_it() {
    let mock = MockProvider::start(vec![
        Canned::text(503, "later").header("retry-after", "600"),
        ok_reply("x"),
    ]);
    let c = client(&mock, json!({}));
    let token = CancelToken::new();
    let worker = {
        let token = token.clone();
        std::thread::spawn(move || translate(&c, &hi(), &[], Some(&token)))
    };
    while mock.requests().is_empty() {
        std::thread::sleep(Duration::from_millis(5));
    }
    token.cancel();
    let err = worker
        .join()
        .expect("worker thread")
        .expect_err("cancelled");
    assert_eq!(err.code, ErrorCode::Cancelled);
}

#[test]
fn a_token_cancelled_beforehand_sends_nothing() {
    let mock = MockProvider::start(vec![ok_reply("x")]);
    let token = CancelToken::new();
    token.cancel();
    let err =
        translate(&client(&mock, json!({})), &hi(), &[], Some(&token)).expect_err("cancelled");
    assert_eq!(err.code, ErrorCode::Cancelled);
    assert!(mock.requests().is_empty());
}

#[test]
fn many_threads_translate_at_once_through_one_pool() {
    let mock = MockProvider::start(vec![ok_reply("same").repeating()]);
    let c = client(&mock, json!({}));
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    for _ in 0..5 {
                        let r = translate(&c, &hi(), &[], None).expect("translate succeeds");
                        assert_eq!(r["text"], "same");
                        assert_eq!(
                            r["usage"],
                            json!({"promptTokens": 3, "completionTokens": 2, "totalTokens": 5})
                        );
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("worker thread");
        }
    });
    assert_eq!(mock.requests().len(), 40);
}

#[test]
fn translate_works_when_called_from_inside_an_async_runtime() {
    let mock = MockProvider::start(vec![ok_reply("from async")]);
    let c = client(&mock, json!({}));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let result = rt.block_on(async { translate(&c, &hi(), &[], None) });
    assert_eq!(result.expect("translate succeeds")["text"], "from async");
}

#[test]
fn unknown_keys_and_bad_types_are_invalid_config_naming_the_key() {
    let mock = MockProvider::start(Vec::new());
    let base = mock.base();
    let cases = [
        (
            json!({"baseUrl": base, "model": "m", "temperature": 1}),
            hi(),
            "temperature",
        ),
        (
            json!({"baseUrl": base, "model": "m", "retries": "2"}),
            hi(),
            "retries",
        ),
        (
            json!({"baseUrl": base, "model": "m", "retries": -1}),
            hi(),
            "retries",
        ),
        (
            json!({"baseUrl": base, "model": "m", "timeoutMs": 1.5}),
            hi(),
            "timeoutMs",
        ),
        (
            json!({"baseUrl": base, "model": "m", "headers": {"x": 1}}),
            hi(),
            "headers.x",
        ),
        (
            json!({"baseUrl": base, "model": "m", "requestParams": []}),
            hi(),
            "requestParams",
        ),
        (
            json!({"baseUrl": base, "model": "m", "style": "cohere"}),
            hi(),
            "style",
        ),
        (json!({"baseUrl": base}), hi(), "model"),
        (json!({"model": "m"}), hi(), "baseUrl"),
        (
            json!({"baseUrl": "not a url", "model": "m"}),
            hi(),
            "baseUrl",
        ),
        (
            json!({"baseUrl": base, "model": "m"}),
            json!({"messages": [], "temperature": 1}),
            "temperature",
        ),
        (
            json!({"baseUrl": base, "model": "m"}),
            json!({"messages": [], "toolkit": {}}),
            "toolkit",
        ),
        (
            json!({"baseUrl": base, "model": "m"}),
            json!({}),
            "messages",
        ),
        (
            json!({"baseUrl": base, "model": "m"}),
            json!({"messages": {}}),
            "messages",
        ),
        (
            json!({"baseUrl": base, "model": "m"}),
            json!({"messages": [], "tools": {}}),
            "tools",
        ),
        (
            json!({"baseUrl": base, "model": "m"}),
            json!({"messages": [], "system": 3}),
            "system",
        ),
        (
            json!({"baseUrl": base, "model": "m"}),
            json!({"messages": [], "maxTokens": "9"}),
            "maxTokens",
        ),
    ];
    for (c, r, key) in cases {
        let err = translate(&c, &r, &[], None).expect_err("refused");
        assert_eq!(err.code, ErrorCode::InvalidConfig, "{key}: {}", err.message);
        assert!(err.message.contains(key), "{key}: {}", err.message);
    }
    assert!(mock.requests().is_empty());
}

#[test]
fn a_header_value_that_cannot_be_sent_is_refused_without_echoing_it() {
    let mock = MockProvider::start(Vec::new());
    let c = json!({"baseUrl": mock.base(), "model": "m", "headers": {"x-token": "secret\nvalue"}});
    let err = translate(&c, &hi(), &[], None).expect_err("refused");
    assert_eq!(err.code, ErrorCode::InvalidConfig);
    assert!(
        err.message.contains("x-token") && !err.message.contains("secret"),
        "{}",
        err.message
    );
}

#[test]
fn toolkit_declarations_come_before_request_tools_and_nothing_runs() {
    let declared = vec![json!({"type": "function", "function": {
        "name": "from_toolkit", "description": "", "parameters": {"type": "object"}}})];
    let request = json!({"messages": [{"role": "user", "content": "Hi"}],
                         "tools": [{"type": "function", "function": {"name": "from_request", "parameters": {"type": "object"}}}]});
    let reply = json!({"content": [{"type": "tool_use", "id": "t1", "name": "from_toolkit", "input": {"a": 1}}],
                       "stop_reason": "tool_use", "usage": {"input_tokens": 4, "output_tokens": 6}});

    let mock = MockProvider::start(vec![Canned::json(200, &reply)]);
    let c = json!({"baseUrl": mock.base(), "style": "anthropic", "model": "claude", "apiKey": "k"});
    let result = translate(&c, &request, &declared, None).expect("translate succeeds");
    let body = mock.requests()[0].json_body();
    assert_eq!(
        body["tools"],
        json!([{"name": "from_toolkit", "description": "", "input_schema": {"type": "object"}},
               {"name": "from_request", "input_schema": {"type": "object"}}])
    );
    assert_eq!(
        result["toolCalls"],
        json!([{"id": "t1", "name": "from_toolkit", "arguments": "{\"a\":1}"}])
    );
    assert_eq!(result["finishReason"], "tool_calls");
    assert_eq!(
        result["usage"],
        json!({"promptTokens": 4, "completionTokens": 6, "totalTokens": 10})
    );
    assert_eq!(result["model"], "claude");
    assert_eq!(result["raw"], reply);

    let mock = MockProvider::start(vec![ok_reply("x")]);
    let c = client(&mock, json!({}));
    translate(&c, &request, &declared, None).expect("translate succeeds");
    let body = mock.requests()[0].json_body();
    let names: Vec<&Value> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| &t["function"]["name"])
        .collect();
    assert_eq!(names, vec!["from_toolkit", "from_request"]);
}

#[test]
fn request_params_cannot_set_messages_tools_or_stream() {
    let mock = MockProvider::start(vec![ok_reply("x")]);
    let c = client(
        &mock,
        json!({"requestParams": {"messages": [], "tools": [1], "stream": true, "temperature": 0.5, "model": "other"}}),
    );
    let result = translate(&c, &hi(), &[], None).expect("translate succeeds");
    let body = mock.requests()[0].json_body();
    assert_eq!(
        body,
        json!({"model": "other", "messages": [{"role": "user", "content": "Hi"}], "temperature": 0.5})
    );
    assert_eq!(
        result["model"], "other",
        "the result names the model that was asked for"
    );
}
