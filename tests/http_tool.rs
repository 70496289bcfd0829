//! HTTP tools (SPEC §7): the decisions recorded in divergences.json, the
//! declaration errors, timeouts, redirects and concurrent use, each against
//! a real server on 127.0.0.1.

mod endless_server;
mod http_tool_mock;
mod ports;

use http_tool_mock::{MockServer, Reply};
use serde_json::{json, Value};
use std::sync::Arc;
use std::thread;
use std::time::Duration;
use toolnexus::env::expand as expand_env;
use toolnexus::error::ErrorCode;
use toolnexus::http_tool::http_tool;
use toolnexus::tool::{ExecContext, Source, Tool, ToolResult};

fn tool(decl: Value) -> Tool {
    match http_tool(0, &decl) {
        Ok(t) => t,
        Err(e) => panic!("declaration rejected: {e}"),
    }
}

fn call(t: &Tool, args: Value) -> ToolResult {
    t.exec.execute(&args, &ExecContext::default())
}

fn status_md(status: u16) -> Option<serde_json::Map<String, Value>> {
    json!({ "status": status }).as_object().cloned()
}

// ---------------------------------------------------------------------------
// decisions of divergences.json
// ---------------------------------------------------------------------------

/// http/query-appended-to-existing
#[test]
fn query_args_join_an_existing_query_string_with_ampersand() {
    let server = MockServer::with_replies(vec![Reply::text(200, "plain ok")]);
    let t =
        tool(json!({"name": "t", "url": format!("{}/s?fixed=1", server.base()), "query": ["q"]}));
    let r = call(&t, json!({"q": "x"}));
    assert_eq!(
        r,
        ToolResult::ok("plain ok").with_metadata(status_md(200).unwrap_or_default())
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].path, "/s");
    assert_eq!(reqs[0].query.as_deref(), Some("fixed=1&q=x"));
}

/// http/header-content-type-user-and-body
#[test]
fn a_declared_content_type_wins_and_is_sent_once() {
    let server = MockServer::with_replies(vec![Reply::text(200, "plain ok")]);
    let t = tool(json!({
        "name": "t", "method": "POST", "url": format!("{}/ct", server.base()),
        "headers": {"Content-Type": "text/x-custom"}
    }));
    let r = call(&t, json!({"a": 1}));
    assert!(!r.is_error, "{r:?}");
    let reqs = server.requests();
    assert_eq!(reqs[0].header_values("content-type"), vec!["text/x-custom"]);
    assert_eq!(reqs[0].body, r#"{"a":1}"#);
}

/// http/placeholder-astral-cesu8
#[test]
fn placeholder_values_are_percent_encoded_as_utf8() {
    let server = MockServer::with_replies(vec![Reply::text(200, "plain ok")]);
    let t = tool(json!({"name": "t", "url": format!("{}/e/{{emoji}}", server.base())}));
    let r = call(&t, json!({"emoji": "\u{1F600}"}));
    assert!(!r.is_error, "{r:?}");
    assert_eq!(server.requests()[0].path, "/e/%F0%9F%98%80");
}

/// http/placeholder-missing-arg
#[test]
fn a_missing_placeholder_argument_fails_before_any_request_and_is_named() {
    let server = MockServer::with_replies(vec![Reply::text(200, "plain ok")]);
    let t = tool(json!({"name": "t", "url": format!("{}/users/{{id}}/{{tab}}", server.base())}));
    let r = call(&t, json!({"tab": "posts"}));
    assert!(r.is_error);
    assert_eq!(
        r.output,
        "missing argument 'id' for the URL placeholder {id}"
    );
    // null is no value either
    let r = call(&t, json!({"id": null, "tab": null}));
    assert!(r.is_error);
    assert_eq!(
        r.output,
        "missing argument 'id', 'tab' for the URL placeholder {id}, {tab}"
    );
    assert!(server.requests().is_empty(), "a request was sent");
}

/// http/redirect-is-non-2xx: redirects are followed, the final response decides.
#[test]
fn redirects_are_followed_and_the_final_response_decides() {
    // The vector's server: a 301 to /x, and then nothing more (404).
    let server = MockServer::with_replies(vec![Reply::text(301, "moved").header("location", "/x")]);
    let t = tool(json!({"name": "t", "url": format!("{}/moved", server.base())}));
    let r = call(&t, json!({}));
    assert_eq!(
        r,
        ToolResult::error("HTTP 404: not found").with_metadata(status_md(404).unwrap_or_default())
    );
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, vec!["/moved", "/x"]);

    // A redirect to a page that answers 200 is a success.
    let server = MockServer::with_replies(vec![
        Reply::text(302, "moved").header("location", "/there?k=v"),
        Reply::text(200, "arrived"),
    ]);
    let t = tool(json!({"name": "t", "url": format!("{}/here", server.base())}));
    let r = call(&t, json!({}));
    assert_eq!(
        r,
        ToolResult::ok("arrived").with_metadata(status_md(200).unwrap_or_default())
    );
    let reqs = server.requests();
    assert_eq!(reqs[1].path, "/there");
    assert_eq!(reqs[1].query.as_deref(), Some("k=v"));
}

#[test]
fn at_most_ten_redirects_are_followed() {
    let replies = (0..12)
        .map(|i| Reply::text(307, &format!("hop {i}")).header("location", &format!("/r{}", i + 1)))
        .collect();
    let server = MockServer::with_replies(replies);
    let t = tool(json!({"name": "t", "url": format!("{}/r0", server.base())}));
    let r = call(&t, json!({}));
    // The eleventh response is the answer: a 307 the tool does not follow.
    assert_eq!(
        r,
        ToolResult::error("HTTP 307: hop 10").with_metadata(status_md(307).unwrap_or_default())
    );
    assert_eq!(server.requests().len(), 11);
}

#[test]
fn see_other_turns_a_post_into_a_get_and_307_keeps_it() {
    let server = MockServer::with_replies(vec![
        Reply::text(303, "").header("location", "/result"),
        Reply::text(200, "done"),
    ]);
    let t =
        tool(json!({"name": "t", "method": "POST", "url": format!("{}/submit", server.base())}));
    assert!(!call(&t, json!({"a": 1})).is_error);
    let reqs = server.requests();
    assert_eq!(
        (reqs[0].method.as_str(), reqs[0].body.as_str()),
        ("POST", r#"{"a":1}"#)
    );
    assert_eq!(
        (reqs[1].method.as_str(), reqs[1].body.as_str()),
        ("GET", "")
    );
    assert_eq!(reqs[1].header("content-type"), None);

    let server = MockServer::with_replies(vec![
        Reply::text(307, "").header("location", "/again"),
        Reply::text(200, "done"),
    ]);
    let t =
        tool(json!({"name": "t", "method": "POST", "url": format!("{}/submit", server.base())}));
    assert!(!call(&t, json!({"a": 1})).is_error);
    let reqs = server.requests();
    assert_eq!(
        (reqs[1].method.as_str(), reqs[1].body.as_str()),
        ("POST", r#"{"a":1}"#)
    );
    assert_eq!(
        reqs[1].header("content-type").as_deref(),
        Some("application/json")
    );
}

#[test]
fn declared_headers_do_not_follow_a_redirect_to_another_origin() {
    let other = MockServer::with_replies(vec![Reply::text(200, "elsewhere")]);
    let server = MockServer::with_replies(vec![
        Reply::text(302, "").header("location", &format!("{}/landing", other.base()))
    ]);
    let t = tool(json!({
        "name": "t", "url": format!("{}/start", server.base()),
        "headers": {"Authorization": "Bearer abc", "X-Api-Key": "k"}
    }));
    let r = call(&t, json!({}));
    assert_eq!(r.output, "elsewhere");
    assert_eq!(
        server.requests()[0].header("authorization").as_deref(),
        Some("Bearer abc")
    );
    let landed = &other.requests()[0];
    assert_eq!(landed.header("authorization"), None);
    assert_eq!(landed.header("x-api-key"), None);
}

// ---------------------------------------------------------------------------
// requests and results
// ---------------------------------------------------------------------------

#[test]
fn the_declared_result_shapes() {
    let server = MockServer::with_replies(vec![
        Reply::text(200, "{\"z\": 1, \"a\": [1, 2]}"),
        Reply::text(200, "not json"),
        Reply::text(204, ""),
    ]);
    let t = tool(json!({"name": "t", "url": format!("{}/r", server.base()), "resultMode": "json"}));
    let r = call(&t, json!({}));
    let v: Value = serde_json::from_str(&r.output).unwrap_or(Value::Null);
    assert_eq!(v, json!({"z": 1, "a": [1, 2]}));
    assert!(
        !r.output.contains(' '),
        "json mode re-serialises compactly: {}",
        r.output
    );
    // A body that is not JSON comes back unchanged.
    assert_eq!(call(&t, json!({})).output, "not json");
    let t = tool(
        json!({"name": "t", "url": format!("{}/r", server.base()), "resultMode": "status+text"}),
    );
    assert_eq!(
        call(&t, json!({})),
        ToolResult::ok("HTTP 204\n").with_metadata(status_md(204).unwrap_or_default())
    );
}

#[test]
fn get_and_head_send_no_body_and_other_methods_send_the_remaining_args() {
    let server = MockServer::with_replies(vec![
        Reply::text(200, "ok"),
        Reply::text(200, ""),
        Reply::text(200, "ok"),
        Reply::text(200, "ok"),
    ]);
    for method in ["get", "HEAD"] {
        let t = tool(json!({"name": "t", "method": method, "url": format!("{}/m", server.base())}));
        assert!(!call(&t, json!({"x": 1})).is_error);
    }
    let t = tool(
        json!({"name": "t", "method": "put", "url": format!("{}/m/{{id}}", server.base()), "body": "form", "query": ["v"]}),
    );
    assert!(!call(&t, json!({"z": "last", "id": 7, "v": false, "a": "x y"})).is_error);
    let t = tool(
        json!({"name": "t", "method": "OPTIONS", "url": format!("{}/m", server.base()), "body": "raw"}),
    );
    assert!(!call(&t, json!({"b": {"nested": [1]}, "c": 2})).is_error);

    let reqs = server.requests();
    assert_eq!(
        (reqs[0].method.as_str(), reqs[0].body.as_str()),
        ("GET", "")
    );
    assert_eq!(reqs[0].header("content-type"), None);
    assert_eq!(
        (reqs[1].method.as_str(), reqs[1].body.as_str()),
        ("HEAD", "")
    );
    assert_eq!(reqs[2].method, "PUT");
    assert_eq!(reqs[2].path, "/m/7");
    assert_eq!(reqs[2].query.as_deref(), Some("v=false"));
    assert_eq!(reqs[2].body, "a=x%20y&z=last");
    assert_eq!(reqs[3].method, "OPTIONS");
    assert_eq!(reqs[3].body, r#"{"nested":[1]}"#);
    assert_eq!(
        reqs[3].header("content-type").as_deref(),
        Some("text/plain")
    );
}

#[test]
fn arguments_that_are_not_an_object_are_an_error_result() {
    let server = MockServer::with_replies(vec![]);
    let t = tool(json!({"name": "t", "url": format!("{}/x", server.base())}));
    let r = call(&t, json!([1, 2]));
    assert!(r.is_error);
    assert_eq!(r.output, "arguments must be a JSON object, got an array");
    assert!(server.requests().is_empty());
}

#[test]
fn the_context_timeout_overrides_the_declared_one() {
    let server = MockServer::with_replies(vec![
        Reply::text(200, "slow").delayed(Duration::from_millis(1500)),
        Reply::text(200, "slow but in time").delayed(Duration::from_millis(300)),
    ]);
    let t = tool(json!({"name": "t", "url": format!("{}/slow", server.base())}));
    let ctx = ExecContext {
        timeout_ms: Some(100),
        ..Default::default()
    };
    let r = t.exec.execute(&json!({}), &ctx);
    assert_eq!(r.output, "HTTP transport failure: timeout");
    assert_eq!(r.metadata, json!({"error": "timeout"}).as_object().cloned());

    let t = tool(json!({"name": "t", "url": format!("{}/slow", server.base()), "timeout": 50}));
    let ctx = ExecContext {
        timeout_ms: Some(10_000),
        ..Default::default()
    };
    let r = t.exec.execute(&json!({}), &ctx);
    assert_eq!(r.output, "slow but in time");
}

#[test]
fn a_refused_connection_is_connect_failed() {
    // Bound, never listening: the connection is refused.
    let (_held, port) = ports::refused_port();
    let t = tool(json!({"name": "t", "url": format!("http://127.0.0.1:{port}/x")}));
    let r = call(&t, json!({}));
    assert!(r.is_error);
    assert_eq!(r.output, "HTTP transport failure: connect-failed");
    assert_eq!(
        r.metadata,
        json!({"error": "connect-failed"}).as_object().cloned()
    );
}

#[test]
fn a_body_past_64_mib_is_a_too_large_failure_not_unbounded_memory() {
    let server = endless_server::EndlessServer::start();
    let t = tool(json!({"name": "t", "url": format!("http://127.0.0.1:{}/big", server.port)}));
    let r = call(&t, json!({}));
    assert!(r.is_error);
    assert_eq!(
        r.output,
        "HTTP transport failure: too-large (the response body is larger than 64 MiB, the most one call reads)"
    );
    assert_eq!(
        r.metadata,
        json!({"error": "too-large"}).as_object().cloned()
    );
    assert_eq!(server.requests(), 1);
}

#[test]
fn a_kept_alive_connection_the_server_dropped_is_replaced() {
    let server = MockServer::with_replies(vec![
        Reply::text(200, "one").hang_up(),
        Reply::text(200, "two").hang_up(),
        Reply::text(200, "three").header("connection", "close"),
        Reply::text(200, "four"),
        Reply::text(200, "five"),
    ]);
    let t = tool(json!({"name": "t", "url": format!("{}/k", server.base())}));
    let outputs: Vec<String> = (0..5).map(|_| call(&t, json!({})).output).collect();
    assert_eq!(outputs, vec!["one", "two", "three", "four", "five"]);
    // two hang-ups and one announced close: a fourth connection serves the
    // last two calls
    assert_eq!(server.connections(), 4);
}

#[test]
fn a_kept_alive_connection_reset_as_the_next_request_arrives_is_replaced_for_any_method() {
    // The keep-alive race made certain: the server answers on a connection
    // kept alive, then resets it (RST, not FIN) as the next request
    // arrives, without a byte of an answer; a second connection answers.
    for method in ["GET", "POST"] {
        let server = MockServer::with_replies(vec![
            Reply::text(200, "one"),
            Reply::reset(),
            Reply::text(200, "two"),
        ]);
        let t = tool(json!({"name": "t", "method": method,
                            "url": format!("{}/r", server.base())}));
        let outputs: Vec<String> = (0..2).map(|_| call(&t, json!({})).output).collect();
        assert_eq!(outputs, vec!["one", "two"], "{method}");
        assert_eq!(server.connections(), 2, "{method}");
        assert_eq!(server.requests().len(), 3, "{method}: sent again once");
    }
}

#[test]
fn a_failed_tls_handshake_is_connect_failed() {
    // A peer that accepts and hangs up at once: the TLS handshake cannot
    // complete.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().map(|a| a.port()).expect("port");
    let closer = thread::spawn(move || {
        if let Ok((stream, _)) = listener.accept() {
            drop(stream);
        }
    });
    let t = tool(json!({"name": "t", "url": format!("https://127.0.0.1:{port}/x")}));
    let r = call(&t, json!({}));
    assert_eq!(r.output, "HTTP transport failure: connect-failed");
    assert!(r.is_error);
    let _ = closer.join();
}

#[test]
fn a_tool_can_be_called_from_inside_an_async_runtime() {
    let server = MockServer::with_replies(vec![Reply::text(200, "from async")]);
    let t = tool(json!({"name": "t", "url": format!("{}/a", server.base())}));
    let rt = tokio::runtime::Builder::new_current_thread().build();
    let Ok(rt) = rt else {
        panic!("cannot build a test runtime")
    };
    let r = rt.block_on(async { t.exec.execute(&json!({}), &ExecContext::default()) });
    assert_eq!(r.output, "from async");
}

#[test]
fn tasks_on_the_shared_runtime_may_call_tools_without_stalling_it() {
    // More concurrent callers than the runtime has workers: each one blocks
    // its worker for the whole call, so the runtime must keep driving I/O.
    let server = MockServer::with_responder(|req| Reply::text(200, &req.path));
    let t = Arc::new(tool(
        json!({"name": "t", "url": format!("{}/w/{{i}}", server.base())}),
    ));
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..6 {
        let t = Arc::clone(&t);
        let tx = tx.clone();
        toolnexus::runtime::get().spawn(async move {
            let r = t.exec.execute(&json!({"i": i}), &ExecContext::default());
            let _ = tx.send((i, r.output));
        });
    }
    let mut outputs: Vec<(i32, String)> = (0..6)
        .map(|_| {
            rx.recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("a call on the shared runtime never finished"))
        })
        .collect();
    outputs.sort();
    let want: Vec<(i32, String)> = (0..6).map(|i| (i, format!("/w/{i}"))).collect();
    assert_eq!(outputs, want);
}

// ---------------------------------------------------------------------------
// ${ENV} expansion
// ---------------------------------------------------------------------------

#[test]
fn env_expansion_follows_the_recorded_rules() {
    std::env::set_var("TN_HTTP_TEST_A", "alpha");
    std::env::remove_var("TN_HTTP_TEST_UNSET");
    assert_eq!(expand_env("Bearer ${TN_HTTP_TEST_A}"), "Bearer alpha");
    assert_eq!(
        expand_env("${TN_HTTP_TEST_A}-${TN_HTTP_TEST_A}"),
        "alpha-alpha"
    );
    assert_eq!(expand_env("[${TN_HTTP_TEST_UNSET}]"), "[]");
    assert_eq!(
        expand_env("$TN_HTTP_TEST_A ${1BAD} ${NOT CLOSED"),
        "$TN_HTTP_TEST_A ${1BAD} ${NOT CLOSED"
    );
    assert_eq!(expand_env("${}${"), "${}${");
    assert_eq!(expand_env("${_x${TN_HTTP_TEST_A}}"), "${_xalpha}");
    assert_eq!(expand_env("no vars, ünïcode"), "no vars, ünïcode");
}

// ---------------------------------------------------------------------------
// the declaration
// ---------------------------------------------------------------------------

#[test]
fn a_declaration_becomes_an_http_tool_with_defaults() {
    let t = tool(json!({"name": "my tool.v2", "url": "https://api.example.com/x"}));
    assert_eq!(t.name, "my tool.v2");
    assert_eq!(t.description, "");
    assert_eq!(t.input_schema, json!({"type": "object"}));
    assert_eq!(t.source, Source::Http);

    let schema =
        json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]});
    let t = tool(json!({
        "name": "getUser", "description": "Fetch a user.", "method": "get",
        "url": "https://{region}.example.com/users/{id}", "inputSchema": schema,
        "timeout": 1000, "resultMode": "status+text", "body": "raw",
        "headers": {"Authorization": "Bearer ${TOKEN}"}, "query": ["verbose"]
    }));
    assert_eq!(t.description, "Fetch a user.");
    assert_eq!(t.input_schema, schema);
}

#[test]
fn a_bad_declaration_names_the_entry_and_the_key() {
    let cases: Vec<(Value, &str)> = vec![
        (
            json!("nope"),
            "httpTools[3] must be an object, got a string",
        ),
        (json!({"url": "http://h/"}), "httpTools[3].name is required"),
        (
            json!({"name": 5, "url": "http://h/"}),
            "httpTools[3].name must be a string, got a number",
        ),
        (
            json!({"name": "", "url": "http://h/"}),
            "httpTools[3].name must not be empty",
        ),
        (json!({"name": "t"}), "httpTools[3].url is required"),
        (
            json!({"name": "t", "url": "ftp://h/x"}),
            "httpTools[3].url must be an absolute http:// or https:// URL, got 'ftp://h/x'",
        ),
        (
            json!({"name": "t", "url": "/relative"}),
            "httpTools[3].url must be an absolute http:// or https:// URL, got '/relative'",
        ),
        (
            json!({"name": "t", "url": "http://h/", "timeoutMs": 5}),
            "httpTools[3] has an unknown key 'timeoutMs'",
        ),
        (
            json!({"name": "t", "url": "http://h/", "method": "GE T"}),
            "httpTools[3].method 'GE T' is not an HTTP method",
        ),
        (
            json!({"name": "t", "url": "http://h/", "method": 1}),
            "httpTools[3].method must be a string, got a number",
        ),
        (
            json!({"name": "t", "url": "http://h/", "headers": []}),
            "httpTools[3].headers must be an object of header names to values, got an array",
        ),
        (
            json!({"name": "t", "url": "http://h/", "headers": {"X-N": 5}}),
            "httpTools[3].headers.X-N must be a string, got a number",
        ),
        (
            json!({"name": "t", "url": "http://h/", "headers": {"Bad Name": "v"}}),
            "httpTools[3].headers has an invalid header name 'Bad Name'",
        ),
        (
            json!({"name": "t", "url": "http://h/", "headers": {"Accept": "a", "accept": "b"}}),
            "httpTools[3].headers names the header 'accept' twice",
        ),
        (
            json!({"name": "t", "url": "http://h/", "headers": {"X-A": "a\nb"}}),
            "httpTools[3].headers.X-A contains a control character",
        ),
        (
            json!({"name": "t", "url": "http://h/", "query": "q"}),
            "httpTools[3].query must be an array of argument names, got a string",
        ),
        (
            json!({"name": "t", "url": "http://h/", "query": ["q", 1]}),
            "httpTools[3].query[1] must be an argument name (a string), got a number",
        ),
        (
            json!({"name": "t", "url": "http://h/", "body": "xml"}),
            "httpTools[3].body must be one of json, form, raw; got 'xml'",
        ),
        (
            json!({"name": "t", "url": "http://h/", "inputSchema": "x"}),
            "httpTools[3].inputSchema must be a JSON Schema object, got a string",
        ),
        (
            json!({"name": "t", "url": "http://h/", "timeout": 0}),
            "httpTools[3].timeout must be a positive whole number of milliseconds, got 0",
        ),
        (
            json!({"name": "t", "url": "http://h/", "timeout": 2.5}),
            "httpTools[3].timeout must be a positive whole number of milliseconds, got 2.5",
        ),
        (
            json!({"name": "t", "url": "http://h/", "resultMode": "html"}),
            "httpTools[3].resultMode must be one of text, json, status+text; got 'html'",
        ),
    ];
    for (decl, message) in cases {
        match http_tool(3, &decl) {
            Ok(t) => panic!("{decl} was accepted as {t:?}"),
            Err(e) => {
                assert_eq!(e.code, ErrorCode::InvalidConfig, "{decl}");
                assert!(
                    e.message.starts_with(message),
                    "{decl}: got '{}', expected '{message}…'",
                    e.message
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// many threads, one client
// ---------------------------------------------------------------------------

#[test]
fn many_threads_share_one_tool_and_keep_their_connections_alive() {
    const THREADS: usize = 16;
    const CALLS: usize = 250;
    let server = MockServer::with_responder(|req| {
        Reply::text(
            200,
            &format!(
                "{} {}?{}",
                req.method,
                req.path,
                req.query.clone().unwrap_or_default()
            ),
        )
    });
    let t = Arc::new(tool(json!({
        "name": "echo", "url": format!("{}/item/{{id}}", server.base()), "query": ["n"]
    })));
    let workers: Vec<_> = (0..THREADS)
        .map(|thread_no| {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                for n in 0..CALLS {
                    let id = format!("t{thread_no} é");
                    let r = t
                        .exec
                        .execute(&json!({"id": id, "n": n}), &ExecContext::default());
                    let want = format!("GET /item/t{thread_no}%20%C3%A9?n={n}");
                    assert_eq!(
                        r,
                        ToolResult::ok(want).with_metadata(status_md(200).unwrap_or_default())
                    );
                }
                CALLS
            })
        })
        .collect();
    let done: usize = workers.into_iter().map(|w| w.join().unwrap_or(0)).sum();
    assert_eq!(done, THREADS * CALLS);
    // Keep-alive: connections are reused, not opened per call.
    let connections = server.connections();
    assert!(
        connections <= 4 * THREADS,
        "{connections} connections for {done} calls"
    );
}
