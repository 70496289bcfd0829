//! The gateway carries a proxied server's results and requests through to
//! the calling MCP client (issue 28), over streamable HTTP and stdio, with
//! the official MCP Python SDK as the calling client and
//! tests/mcp_servers/conformance_fixture.py (the same SDK) as the proxied
//! server:
//!
//! - an embedded resource part (alone, or among text and an image) reaches
//!   the client as the server sent it;
//! - the server's `sampling/createMessage` and `elicitation/create` during a
//!   call go to the client that made the call, and its answer back;
//! - a client that did not declare the capability gets the documented
//!   refusal in the tool's result (the server's request answered -32601);
//! - a client that never answers holds the call no longer than its timeout.

mod mcp_support;

use mcp_support::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolnexus::mcp_server::{self, CallEvent, OnCall, ServeConfig};
use toolnexus::toolkit::Toolkit;

const BIN: &str = env!("CARGO_BIN_EXE_toolnexus");

fn fixture(timeout_ms: u64) -> Value {
    json!({"command": [python(), server_script("conformance_fixture.py")], "timeout": timeout_ms})
}

/// A gateway over the fixture, served in-process over HTTP (its calls
/// heard) or as `toolnexus serve --stdio`; `run` drives the SDK client
/// against it.
enum Gateway {
    Http {
        server: mcp_server::Server,
        calls: Arc<Mutex<Vec<CallEvent>>>,
    },
    Stdio {
        _dir: tempfile::TempDir,
        config: String,
    },
}

impl Gateway {
    fn http(timeout_ms: u64) -> Gateway {
        let tk = Toolkit::build_from_json(
            &json!({"mcpConfig": {"mcpServers": {"fx": fixture(timeout_ms)}}}).to_string(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let calls: Arc<Mutex<Vec<CallEvent>>> = Arc::default();
        let sink = Arc::clone(&calls);
        let on_call: OnCall = Arc::new(move |e: &CallEvent| {
            if let Ok(mut v) = sink.lock() {
                v.push(e.clone());
            }
        });
        let cfg =
            ServeConfig::from_value(&json!({"addr": "127.0.0.1:0", "mcp": {"unprefixed": true}}))
                .unwrap_or_else(|e| panic!("{e}"));
        let server =
            mcp_server::serve(Arc::new(tk), &cfg, Some(on_call)).unwrap_or_else(|e| panic!("{e}"));
        Gateway::Http { server, calls }
    }

    fn stdio(timeout_ms: u64) -> Gateway {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("mcp.json");
        let config = json!({"mcpServers": {"fx": fixture(timeout_ms)},
                            "mcpServer": {"unprefixed": true}});
        std::fs::write(&path, config.to_string()).unwrap_or_else(|e| panic!("{e}"));
        Gateway::Stdio {
            config: path.to_string_lossy().into_owned(),
            _dir: dir,
        }
    }

    fn both(timeout_ms: u64) -> [Gateway; 2] {
        [Gateway::http(timeout_ms), Gateway::stdio(timeout_ms)]
    }

    fn run(&self, plan: &Value) -> Vec<Value> {
        match self {
            Gateway::Http { server, .. } => {
                sdk_client(plan, &["http", server.url().unwrap_or_default()])
            }
            Gateway::Stdio { config, .. } => sdk_client(
                plan,
                &[
                    "stdio",
                    BIN,
                    "serve",
                    "--stdio",
                    "--config",
                    config,
                    "--no-builtins",
                ],
            ),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Gateway::Http { .. } => "http",
            Gateway::Stdio { .. } => "stdio",
        }
    }
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"op": "call", "name": name, "arguments": arguments})
}

const EMBEDDED: &str = "This is an embedded resource content.";

#[test]
fn an_embedded_resource_reaches_the_client_as_the_server_sent_it() {
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
    let steps = json!([
        call("test_embedded_resource", json!({})),
        call("test_multiple_content_types", json!({}))
    ]);
    for gw in Gateway::both(20000) {
        // Without capabilities (the plain paths) and with them (rmcp's).
        for answers in [json!({}), json!({"sampling": {}, "elicitation": {}})] {
            let out = gw.run(&json!({"steps": steps, "answers": answers}));
            let ctx = format!("{} {answers}: {out:?}", gw.name());
            assert_eq!(
                out[0],
                json!({"isError": false, "content": [{"type": "resource", "resource": {
                    "uri": "test://embedded-resource", "mimeType": "text/plain", "text": EMBEDDED}}]}),
                "{ctx}"
            );
            assert_eq!(
                out[1]["content"],
                json!([
                    {"type": "text", "text": "Multiple content types test:"},
                    {"type": "image", "data": png, "mimeType": "image/png"},
                    {"type": "resource", "resource": {"uri": "test://mixed-content-resource",
                        "mimeType": "application/json", "text": "{\"test\": \"data\", \"value\": 123}"}}
                ]),
                "{ctx}"
            );
        }
    }
}

#[test]
fn sampling_and_elicitation_are_relayed_to_the_calling_client_and_answered() {
    let answers = json!({
        "sampling": {"role": "assistant", "model": "test-model",
                     "content": {"type": "text", "text": "the client's answer"}},
        "elicitation": {"action": "accept", "content": {"username": "ada", "email": "ada@x.org"}}
    });
    for gw in Gateway::both(20000) {
        let out = gw.run(&json!({"answers": answers, "steps": [
            call("test_sampling", json!({"prompt": "What is 2+2?"})),
            call("test_elicitation", json!({"message": "Who are you?"})),
            {"op": "asked"}
        ]}));
        let ctx = format!("{}: {out:?}", gw.name());
        assert_eq!(
            text_of(&out[0]),
            "LLM response: the client's answer",
            "{ctx}"
        );
        assert_eq!(
            text_of(&out[1]),
            "Elicitation completed: action=accept, content={\"username\": \"ada\", \"email\": \"ada@x.org\"}",
            "{ctx}"
        );
        let asked = out[2].as_array().cloned().unwrap_or_default();
        assert_eq!(asked.len(), 2, "{ctx}");
        assert_eq!(asked[0]["method"], "sampling/createMessage", "{ctx}");
        assert_eq!(
            asked[0]["params"]["messages"][0]["content"]["text"], "What is 2+2?",
            "{ctx}"
        );
        assert_eq!(asked[0]["params"]["maxTokens"], 100, "{ctx}");
        assert_eq!(asked[1]["method"], "elicitation/create", "{ctx}");
        assert_eq!(asked[1]["params"]["message"], "Who are you?", "{ctx}");
        assert_eq!(
            asked[1]["params"]["requestedSchema"]["required"],
            json!(["username", "email"]),
            "{ctx}"
        );
    }
}

#[test]
fn a_decline_goes_back_as_it_is() {
    for gw in Gateway::both(20000) {
        let out = gw.run(
            &json!({"answers": {"elicitation": {"action": "decline"}}, "steps": [
                call("test_elicitation", json!({"message": "Who are you?"}))
            ]}),
        );
        assert_eq!(
            text_of(&out[0]),
            "Elicitation completed: action=decline, content=null",
            "{}: {out:?}",
            gw.name()
        );
    }
}

/// A client that declared neither: the server's request is refused with
/// -32601 (what the gateway did before it relayed anything), which the
/// fixture passes on as the error of its tools/call; the gateway serves on.
#[test]
fn a_client_without_the_capability_gets_the_servers_refusal() {
    for gw in Gateway::both(20000) {
        let out = gw.run(&json!({"steps": [
            call("test_sampling", json!({"prompt": "hi"})),
            call("test_elicitation", json!({"message": "hi"})),
            call("test_simple_text", json!({})),
            {"op": "asked"}
        ]}));
        let ctx = format!("{}: {out:?}", gw.name());
        assert_eq!(out[0]["isError"], true, "{ctx}");
        assert!(
            text_of(&out[0]).contains("rpc-error (code -32601)"),
            "{ctx}"
        );
        assert_eq!(out[1]["isError"], true, "{ctx}");
        assert!(
            text_of(&out[1]).contains("rpc-error (code -32601)"),
            "{ctx}"
        );
        assert_eq!(
            text_of(&out[2]),
            "This is a simple text response for testing.",
            "{ctx}"
        );
        assert_eq!(out[3], json!([]), "{ctx}");
    }
}

/// A client that never answers holds the call no longer than the proxied
/// server's timeout (8 s here: it bounds the fixture's start as well, which
/// a loaded machine can stretch past 2 s): the call ends as a timeout
/// error, and the gateway serves the next call.
#[test]
fn a_client_that_never_answers_is_bounded_by_the_calls_timeout() {
    for gw in Gateway::both(8000) {
        let started = Instant::now();
        let out = gw.run(
            &json!({"answers": {"elicitation": {"sleep": 20}}, "steps": [
                call("test_elicitation", json!({"message": "anyone?"})),
                call("test_simple_text", json!({}))
            ]}),
        );
        let ctx = format!("{}: {out:?}", gw.name());
        assert_eq!(out[0]["isError"], true, "{ctx}");
        assert!(text_of(&out[0]).contains("fx"), "{ctx}");
        assert_eq!(
            text_of(&out[1]),
            "This is a simple text response for testing.",
            "{ctx}"
        );
        if let Gateway::Http { calls, .. } = &gw {
            let calls = calls.lock().map(|c| c.clone()).unwrap_or_default();
            assert!(calls[0].is_error, "{calls:?}");
            assert!(
                calls[0].ms < 15000,
                "the unanswered call took {} ms: {calls:?}",
                calls[0].ms
            );
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{ctx}");
    }
}

/// Two calls at once, each asking its client: over HTTP the gateway
/// relays one request at a time and matches each answer by its id; both
/// calls get theirs.
#[test]
fn two_calls_that_ask_at_once_each_get_an_answer() {
    let answers = json!({
        "sampling": {"role": "assistant", "model": "m", "content": {"type": "text", "text": "sampled"}},
        "elicitation": {"action": "accept", "content": {"username": "u", "email": "e"}}
    });
    for gw in Gateway::both(20000) {
        let out = gw.run(&json!({"answers": answers, "steps": [
            {"op": "parallel", "calls": [
                {"name": "test_sampling", "arguments": {"prompt": "one"}},
                {"name": "test_elicitation", "arguments": {"message": "two"}},
                {"name": "test_sampling", "arguments": {"prompt": "three"}}
            ]},
            {"op": "asked"}
        ]}));
        let ctx = format!("{}: {out:?}", gw.name());
        assert_eq!(text_of(&out[0][0]), "LLM response: sampled", "{ctx}");
        assert_eq!(
            text_of(&out[0][1]),
            "Elicitation completed: action=accept, content={\"username\": \"u\", \"email\": \"e\"}",
            "{ctx}"
        );
        assert_eq!(text_of(&out[0][2]), "LLM response: sampled", "{ctx}");
        assert_eq!(out[1].as_array().map(Vec::len), Some(3), "{ctx}");
    }
}

/// What passes through is redacted as the toolkit's own reading is: a
/// remote server's header secret echoed in its result never reaches the
/// gateway's client.
#[test]
fn a_passed_through_result_is_redacted() {
    let secret = "tn-relay-secret-4f1c9a";
    std::env::set_var("TN_RELAY_TEST_SECRET", secret);
    let http = HttpServer::start("streamable-http");
    let tk = Toolkit::build_from_json(
        &json!({"mcpConfig": {"mcpServers": {"py": {
            "url": format!("http://127.0.0.1:{}/mcp", http.port),
            "headers": {"X-Test-Key": "${TN_RELAY_TEST_SECRET}"},
            "timeout": 20000
        }}}})
        .to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let cfg =
        ServeConfig::from_value(&json!({"addr": "127.0.0.1:0"})).unwrap_or_else(|e| panic!("{e}"));
    let server = mcp_server::serve(Arc::new(tk), &cfg, None).unwrap_or_else(|e| panic!("{e}"));
    let text = format!("say {secret} twice: {secret}");
    for answers in [json!({}), json!({"elicitation": {}})] {
        let out = sdk_client(
            &json!({"answers": answers, "steps": [call("py_echo", json!({"text": text}))]}),
            &["http", server.url().unwrap_or_default()],
        );
        let got = out[0].to_string();
        assert!(!got.contains(secret), "the secret leaked: {got}");
        assert!(got.contains("[redacted]"), "{got}");
    }
}

/// A gateway whose toolkit has a host `waitFor`: a calling client that
/// declared elicitation answers (the host is not asked); one that did not
/// leaves the question to the host, as before the gateway relayed.
#[test]
fn without_a_declaring_client_the_hosts_wait_for_answers() {
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = Arc::clone(&asked);
    let wait_for: toolnexus::mcp::WaitFor = Arc::new(move |request: &Value, _stop| {
        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(json!({"id": request["id"], "ok": true, "data": {"username": "host", "email": "h@x"}}))
    });
    let cfg = toolnexus::config::ToolkitConfig::from_value(
        &json!({"builtins": false, "mcpConfig": {"mcpServers": {"fx": fixture(20000)}}}),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let opts = toolnexus::toolkit::BuildOptions {
        wait_for: Some(wait_for),
        ..Default::default()
    };
    let tk = Toolkit::build_with(&cfg, &opts).unwrap_or_else(|e| panic!("{e}"));
    let serve =
        ServeConfig::from_value(&json!({"addr": "127.0.0.1:0", "mcp": {"unprefixed": true}}))
            .unwrap_or_else(|e| panic!("{e}"));
    let server = mcp_server::serve(Arc::new(tk), &serve, None).unwrap_or_else(|e| panic!("{e}"));
    let url = server.url().unwrap_or_default();
    let ask = call("test_elicitation", json!({"message": "who?"}));
    let by_client = sdk_client(
        &json!({"answers": {"elicitation": {"action": "accept",
                "content": {"username": "client", "email": "c@x"}}}, "steps": [ask]}),
        &["http", url],
    );
    assert_eq!(
        text_of(&by_client[0]),
        "Elicitation completed: action=accept, content={\"username\": \"client\", \"email\": \"c@x\"}"
    );
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 0);
    let by_host = sdk_client(&json!({"steps": [ask]}), &["http", url]);
    assert_eq!(
        text_of(&by_host[0]),
        "Elicitation completed: action=accept, content={\"username\": \"host\", \"email\": \"h@x\"}"
    );
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
}
