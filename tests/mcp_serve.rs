//! The toolkit served as an MCP server (SPEC §7C) over streamable HTTP,
//! driven by the official MCP Python SDK client: a gateway aggregating an
//! SDK stdio server, skills, builtins and a host tool.

mod mcp_support;
mod quiet_panic;

use mcp_support::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use toolnexus::mcp_server::{self, CallEvent, OnCall, ServeConfig};
use toolnexus::tool::{Source, Tool, ToolResult};
use toolnexus::toolkit::Toolkit;

fn gateway_toolkit() -> Arc<Toolkit> {
    let tk = Toolkit::build_from_json(
        &json!({
            "skillsDir": concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills"),
            "mcpConfig": {"mcpServers": {"py": {
                "command": [python(), server_script("sdk_server.py"), "stdio"],
                "timeout": 20000
            }}}
        })
        .to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let status = tk.render("status").unwrap_or_default();
    assert!(status.contains("\"py\":\"connected\""), "{status}");
    tk.register(Tool::new(
        "host_panics",
        "A host tool that panics.",
        None,
        Source::Native,
        Arc::new(
            |_: &Value, _: &toolnexus::tool::ExecContext| -> ToolResult {
                // Expected (the server turns it into an error result): kept
                // out of the test log.
                quiet_panic::quietly(|| panic!("the host tool blew up"))
            },
        ),
    ));
    Arc::new(tk)
}

struct Served {
    server: mcp_server::Server,
    calls: Arc<Mutex<Vec<CallEvent>>>,
}

fn serve_http(tk: &Arc<Toolkit>, mcp: Value) -> Served {
    let calls: Arc<Mutex<Vec<CallEvent>>> = Arc::default();
    let sink = Arc::clone(&calls);
    let on_call: OnCall = Arc::new(move |e: &CallEvent| {
        if let Ok(mut v) = sink.lock() {
            v.push(e.clone());
        }
    });
    let cfg = ServeConfig::from_value(&json!({"addr": "127.0.0.1:0", "mcp": mcp}))
        .unwrap_or_else(|e| panic!("{e}"));
    let server =
        mcp_server::serve(Arc::clone(tk), &cfg, Some(on_call)).unwrap_or_else(|e| panic!("{e}"));
    Served { server, calls }
}

/// The calls the served gateway reported, once there are `n` (within 15
/// s). A call whose client vanished is reported when it ends, which no
/// answer to anyone orders against the test's next step.
fn calls_once(s: &Served, n: usize) -> Vec<CallEvent> {
    wait_until(
        "the served calls' reports",
        std::time::Duration::from_secs(15),
        || {
            let calls = s.calls.lock().map(|c| c.clone()).unwrap_or_default();
            (calls.len() >= n).then_some(calls)
        },
    )
}

fn url(s: &Served) -> &str {
    s.server.url().unwrap_or_default()
}

/// `host:port` of a served gateway, for raw requests.
fn host_port(s: &Served) -> String {
    url(s)
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string()
}

/// The Accept header the gateway answers on its own route, and the same
/// media types with weights, which go through rmcp's service.
const PLAIN_ACCEPT: &str = "accept: application/json, text/event-stream\r\n";
const WEIGHTED_ACCEPT: &str = "accept: application/json;q=1.0, text/event-stream;q=0.9\r\n";

#[test]
fn the_sdk_client_lists_and_calls_every_source_over_http() {
    let tk = gateway_toolkit();
    let served = serve_http(&tk, Value::Null);
    assert!(
        url(&served).starts_with("http://127.0.0.1:"),
        "{}",
        url(&served)
    );
    assert!(url(&served).ends_with("/mcp"));
    let out = sdk_client(
        &json!({"steps": [
            {"op": "init"},
            {"op": "list"},
            {"op": "call", "name": "py_echo", "arguments": {"text": "héllo"}},
            {"op": "call", "name": "py_explode", "arguments": {"reason": "kaboom"}},
            {"op": "call", "name": "bash", "arguments": {"command": "printf hi"}},
            {"op": "call", "name": "bash", "arguments": {"command": "exit 3"}},
            {"op": "call", "name": "skill", "arguments": {"name": "hello-world"}},
            {"op": "call", "name": "host_panics", "arguments": {}},
            {"op": "call", "name": "no_such_tool", "arguments": {}},
            {"op": "call", "name": "py_add", "arguments": {"a": 2, "b": 40}}
        ]}),
        &["http", url(&served)],
    );

    assert_eq!(
        out[0]["serverInfo"],
        json!({"name": "toolnexus", "version": "0.1.0"})
    );
    assert!(out[0]["capabilities"]["tools"].is_object(), "{}", out[0]);

    // Every toolkit tool, verbatim: name, description, input schema.
    let listed = out[1]["tools"].as_array().cloned().unwrap_or_default();
    let want: Vec<Value> =
        serde_json::from_str(&tk.render("tools").unwrap_or_default()).unwrap_or_default();
    assert_eq!(listed.len(), want.len(), "{listed:?}");
    for (got, want) in listed.iter().zip(&want) {
        assert_eq!(got["name"], want["name"]);
        assert_eq!(got["description"], want["description"]);
        assert_eq!(got["inputSchema"], want["inputSchema"], "{}", want["name"]);
    }
    let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
    for n in ["py_echo", "py_add", "skill", "bash", "read", "host_panics"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }

    let echoed: Value = serde_json::from_str(text_of(&out[2])).unwrap_or_default();
    assert_eq!(echoed, json!({"result": "héllo"}));
    assert_eq!(out[2]["isError"], json!(false));
    assert_eq!(out[3]["isError"], json!(true), "{}", out[3]);
    assert_eq!(text_of(&out[4]), "hi");
    assert_eq!(out[4]["isError"], json!(false));
    assert_eq!(out[5]["isError"], json!(true));
    assert!(text_of(&out[5]).contains("exit code 3"), "{}", out[5]);
    assert!(
        text_of(&out[6]).contains("<skill_content name=\"hello-world\">"),
        "{}",
        out[6]
    );
    assert_eq!(out[7]["isError"], json!(true));
    assert!(
        text_of(&out[7]).contains("the host tool blew up"),
        "{}",
        out[7]
    );
    assert_eq!(out[8]["error"]["code"], json!(-32602), "{}", out[8]);
    assert!(
        out[8]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no_such_tool")),
        "{}",
        out[8]
    );
    // The server lived through the panic and the unknown tool.
    let sum: Value = serde_json::from_str(text_of(&out[9])).unwrap_or_default();
    assert_eq!(sum, json!({"result": 42}));

    let calls = served.calls.lock().map(|c| c.clone()).unwrap_or_default();
    let seen: Vec<(&str, &str, bool)> = calls
        .iter()
        .map(|c| (c.name.as_str(), c.source.as_str(), c.is_error))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("py_echo", "mcp", false),
            ("py_explode", "mcp", true),
            ("bash", "builtin", false),
            ("bash", "builtin", true),
            ("skill", "skill", false),
            ("host_panics", "native", true),
            ("py_add", "mcp", false),
        ]
    );
}

#[test]
fn the_profile_names_the_server_and_narrows_the_tools() {
    let tk = gateway_toolkit();
    let served = serve_http(
        &tk,
        json!({"name": "gw", "version": "9.1.2", "tools": ["py_add", "bash", "not_a_tool"]}),
    );
    let out = sdk_client(
        &json!({"steps": [
            {"op": "init"},
            {"op": "list"},
            {"op": "call", "name": "read", "arguments": {"filePath": "/etc/hostname"}},
            {"op": "call", "name": "bash", "arguments": {"command": "echo ok"}}
        ]}),
        &["http", url(&served)],
    );
    assert_eq!(
        out[0]["serverInfo"],
        json!({"name": "gw", "version": "9.1.2"})
    );
    let names: Vec<&str> = out[1]["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, vec!["bash", "py_add"]);
    assert_eq!(out[2]["error"]["code"], json!(-32602), "{}", out[2]);
    assert_eq!(text_of(&out[3]), "ok\n");
}

#[test]
fn thirty_two_concurrent_calls_over_http_each_get_their_own_answer() {
    let tk = gateway_toolkit();
    let served = serve_http(&tk, Value::Null);
    let calls: Vec<Value> = (0..32)
        .map(|i| {
            if i % 2 == 0 {
                json!({"name": "py_add", "arguments": {"a": i, "b": 1000}})
            } else {
                json!({"name": "bash", "arguments": {"command": format!("sleep 0.2; echo {i}")}})
            }
        })
        .collect();
    let out = sdk_client(
        &json!({"steps": [{"op": "parallel", "calls": calls}]}),
        &["http", url(&served)],
    );
    let results = out[0].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), 32);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["isError"], json!(false), "call {i}: {r}");
        if i % 2 == 0 {
            let v: Value = serde_json::from_str(text_of(r)).unwrap_or_default();
            assert_eq!(v, json!({"result": i + 1000}), "call {i}");
        } else {
            assert_eq!(text_of(r), format!("{i}\n"), "call {i}");
        }
    }
    assert_eq!(served.calls.lock().map(|c| c.len()).unwrap_or(0), 32);
}

#[test]
fn a_client_that_hangs_up_mid_call_cancels_the_tool_and_the_server_goes_on() {
    let tk = gateway_toolkit();
    let served = serve_http(&tk, Value::Null);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let pid_file = dir.path().join("pid");
    let command = format!(
        "echo $$ > {0}.tmp && mv {0}.tmp {0} && exec sleep 30",
        pid_file.display()
    );
    sdk_client(
        &json!({"steps": [{"op": "vanish", "name": "bash",
                 "arguments": {"command": command}, "waitFile": pid_file}]}),
        &["http", url(&served)],
    );
    let pid = read_pid_file(&pid_file);
    assert!(
        all_dead_soon(&[pid]),
        "the command of the abandoned call (pid {pid}) still runs"
    );
    let out = sdk_client(
        &json!({"steps": [{"op": "call", "name": "bash", "arguments": {"command": "echo alive"}}]}),
        &["http", url(&served)],
    );
    assert_eq!(text_of(&out[0]), "alive\n");
    let calls = calls_once(&served, 2);
    assert_eq!(calls.len(), 2, "{calls:?}");
    // The abandoned call may be reported after the one answered since.
    assert_eq!(
        calls.iter().filter(|c| c.is_error).count(),
        1,
        "the cancelled call is an error, the other not: {calls:?}"
    );
}

#[test]
fn content_parts_reach_the_client_as_mcp_media_content() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let png = dir.path().join("chart.png");
    let bytes: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-not-really-an-image";
    std::fs::write(&png, bytes).unwrap_or_else(|e| panic!("{e}"));
    let png = png.to_string_lossy().into_owned();
    let tk = Arc::new(
        Toolkit::build_from_json(
            &json!({"mcpConfig": {"mcpServers": {"media": {
                "command": [python(), server_script("sdk_media_server.py"), &png],
                "timeout": 20000
            }}}})
            .to_string(),
        )
        .unwrap_or_else(|e| panic!("{e}")),
    );
    let served = serve_http(&tk, Value::Null);
    let out = sdk_client(
        &json!({"steps": [
            {"op": "call", "name": "media_chart", "arguments": {}},
            {"op": "call", "name": "media_assorted", "arguments": {}},
            {"op": "call", "name": "read", "arguments": {"path": png}}
        ]}),
        &["http", url(&served)],
    );
    let b64 = toolnexus::parts::encode_base64(bytes);
    // The proxied chart: its caption as the output, its image after it.
    assert_eq!(
        out[0]["content"],
        json!([{"type": "text", "text": "the chart"},
               {"type": "image", "data": b64, "mimeType": "image/png"}])
    );
    // A proxied result reaches the client as its server sent it (issue
    // 28): the embedded text resource stays a resource part, not text.
    let kinds: Vec<&str> = out[1]["content"]
        .as_array()
        .map(|c| c.iter().filter_map(|b| b["type"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        kinds,
        vec!["audio", "resource", "resource", "resource_link"],
        "{}",
        out[1]
    );
    assert_eq!(
        out[1]["content"][1]["resource"],
        json!({"uri": "file:///note.txt", "mimeType": "text/plain", "text": "a note"})
    );
    assert_eq!(out[1]["content"][2]["resource"]["blob"], json!("JVBERg=="));
    assert_eq!(
        out[1]["content"][3]["uri"],
        json!("https://example.invalid/big.bin")
    );
    // The read builtin's image part of a local file.
    assert_eq!(
        out[2]["content"][1],
        json!({"type": "image", "data": b64, "mimeType": "image/png"}),
        "{}",
        out[2]
    );
}

#[test]
fn only_the_mcp_path_is_served_and_stop_closes_the_port() {
    use std::io::{Read, Write};
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    let served = serve_http(&tk, Value::Null);
    let addr = host_port(&served);
    let mut conn = std::net::TcpStream::connect(&addr).unwrap_or_else(|e| panic!("{e}"));
    let _ = conn.write_all(b"GET /other HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n");
    let mut answer = String::new();
    let _ = conn.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    served.server.stop();
    assert!(served.server.ended());
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "still listening after stop"
    );
}

/// One POST to the MCP path over a fresh connection: status, the
/// Content-Type, and the body.
fn post(addr: &str, headers: &str, body: &str) -> (u16, String, String) {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
    let req = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(req.as_bytes());
    let mut answer = String::new();
    let _ = conn.read_to_string(&mut answer);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let content_type = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    (status, content_type, body.to_string())
}

#[test]
fn a_plain_call_or_list_gets_the_answer_rmcp_gives_byte_for_byte() {
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    tk.register(Tool::new(
        "shout",
        "Upper-cases text; fails on 'boom'.",
        Some(json!({"type": "object", "properties": {"text": {"type": "string"}}})),
        Source::Native,
        Arc::new(
            |args: &Value, _: &toolnexus::tool::ExecContext| -> ToolResult {
                let text = args["text"].as_str().unwrap_or_default();
                if text == "boom" {
                    ToolResult::error("it went boom")
                } else {
                    ToolResult::ok(text.to_uppercase())
                }
            },
        ),
    ));
    // A result with parts (an image) takes the typed encoding, not the
    // parts-free line.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let png = dir.path().join("dot.png");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-a-dot").unwrap_or_else(|e| panic!("{e}"));
    let read_png = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                          "params": {"name": "read", "arguments": {"path": png}}})
    .to_string();
    let served = serve_http(&tk, json!({"tools": ["read", "shout"]}));
    let addr = host_port(&served);
    let (plain, weighted) = (PLAIN_ACCEPT, WEIGHTED_ACCEPT);
    let versioned =
        "accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n";
    let cases = [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shout","arguments":{"text":"a\"b"}}}"#,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "A\"B"}], "isError": false}}),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"shout","arguments":{"text":"boom"}}}"#,
            json!({"jsonrpc": "2.0", "id": "e", "result": {"content": [{"type": "text", "text": "it went boom"}], "isError": true}}),
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}"#,
            json!({"code": -32602}),
        ),
        // Known to the toolkit but not exposed by the profile.
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"bash","arguments":{}}}"#,
            json!({"code": -32602}),
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
            json!({"tools": ["read", "shout"]}),
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{}}"#,
            json!({"tools": ["read", "shout"]}),
        ),
        (read_png.as_str(), json!({"parts": ["text", "image"]})),
    ];
    for (body, want) in &cases {
        let fast = post(&addr, plain, body);
        let versioned = post(&addr, versioned, body);
        let rmcp = post(&addr, weighted, body);
        assert_eq!(fast, rmcp, "{body}");
        assert_eq!(versioned, rmcp, "{body}");
        assert_eq!(fast.0, 200, "{body}: {fast:?}");
        assert_eq!(fast.1, "application/json", "{body}: {fast:?}");
        let v: Value = serde_json::from_str(&fast.2).unwrap_or_default();
        if let Some(code) = want.get("code") {
            assert_eq!(&v["error"]["code"], code, "{body}: {v}");
        } else if let Some(kinds) = want.get("parts") {
            let got: Vec<Value> = v["result"]["content"]
                .as_array()
                .map(|a| a.iter().map(|c| c["type"].clone()).collect())
                .unwrap_or_default();
            assert_eq!(&Value::Array(got), kinds, "{body}: {v}");
        } else if let Some(tools) = want.get("tools") {
            let names: Vec<Value> = v["result"]["tools"]
                .as_array()
                .map(|a| a.iter().map(|t| t["name"].clone()).collect())
                .unwrap_or_default();
            assert_eq!(&Value::Array(names), tools, "{body}: {v}");
        } else {
            assert_eq!(&v, want, "{body}");
        }
    }
    // Three answers per call, three calls that ran (the unknown and the
    // unexposed ones never reach a tool).
    let calls = served.calls.lock().map(|c| c.clone()).unwrap_or_default();
    assert_eq!(calls.len(), 9, "{calls:?}");
    assert_eq!(
        calls.iter().filter(|c| c.name == "shout").count(),
        6,
        "{calls:?}"
    );
    assert_eq!(calls.iter().filter(|c| c.is_error).count(), 3, "{calls:?}");
    // Tricky bodies: the same answer either way; an array of a call's
    // fields is no call (rmcp's parse takes it for no message).
    let tricky = [
        (
            r#"{"jsonrpc":"2.0","id":9.0,"method":"tools/call","params":{"name":"shout","arguments":{"text":"f"}}}"#,
            Some("F"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":-9,"method":"tools/call","params":{"name":"shout","arguments":{"text":"a","text":"n"}}}"#,
            Some("N"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"shout","arguments":null}}"#,
            Some(""),
        ),
        (
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":["shout",{"text":"x"}]}"#,
            None,
        ),
        (
            r#"["2.0",12,"tools/call",{"name":"shout","arguments":{"text":"x"}}]"#,
            None,
        ),
    ];
    for (body, shouted) in tricky {
        let fast = post(&addr, plain, body);
        let rmcp = post(&addr, weighted, body);
        assert_eq!(fast, rmcp, "{body}");
        let v: Value = serde_json::from_str(&fast.2).unwrap_or_default();
        let text = v["result"]["content"][0]["text"].as_str();
        assert_eq!(text, shouted, "{body}: {fast:?}");
        if shouted.is_none() {
            // No message: a JSON-RPC error either way (issue 25 L7), not
            // rmcp's 415 text.
            assert_eq!(fast.0, 400, "{body}: {fast:?}");
            assert_eq!(fast.1, "application/json", "{body}: {fast:?}");
            let code = match &v {
                Value::Array(answers) => answers[0]["error"]["code"].clone(),
                one => one["error"]["code"].clone(),
            };
            assert_eq!(code, json!(-32600), "{body}: {fast:?}");
        }
    }
    let calls = served.calls.lock().map(|c| c.len()).unwrap_or_default();
    assert_eq!(
        calls, 15,
        "the nine calls above, and two of each call here that is one"
    );
    // What neither takes stays rmcp's: no Accept of SSE, a notification.
    let (status, _, _) = post(&addr, "accept: application/json\r\n", cases[0].0);
    assert_eq!(status, 406);
    let (status, _, body) = post(
        &addr,
        plain,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!((status, body.as_str()), (202, ""));
}

// ---------------------------------------------------------------------------
// The `toolnexus serve` binary: stdio, and HTTP as a gateway of gateways.
// ---------------------------------------------------------------------------

const BIN: &str = env!("CARGO_BIN_EXE_toolnexus");

fn write_config(dir: &std::path::Path, name: &str, v: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, v.to_string()).unwrap_or_else(|e| panic!("{e}"));
    path.to_string_lossy().into_owned()
}

fn sdk_stdio_server() -> Value {
    json!({"command": [python(), server_script("sdk_server.py"), "stdio"], "timeout": 20000})
}

#[test]
fn the_sdk_client_drives_toolnexus_serve_over_stdio_and_cancels_a_call() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = write_config(
        dir.path(),
        "mcp.json",
        &json!({"mcpServers": {"py": sdk_stdio_server()},
                "mcpServer": {"name": "gw-stdio", "version": "1.2.3"}}),
    );
    let pid_file = dir.path().join("pid");
    let command = format!(
        "echo $$ > {0}.tmp && mv {0}.tmp {0} && exec sleep 30",
        pid_file.display()
    );
    let skills = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills");
    let out = sdk_client(
        &json!({"steps": [
            {"op": "init"},
            {"op": "list"},
            {"op": "call", "name": "py_echo", "arguments": {"text": "over stdio"}},
            {"op": "call", "name": "skill", "arguments": {"name": "hello-world"}},
            {"op": "call", "name": "nope", "arguments": {}},
            {"op": "cancel", "name": "bash", "arguments": {"command": command}, "waitFile": pid_file},
            {"op": "call", "name": "bash", "arguments": {"command": "echo still here"}}
        ]}),
        &[
            "stdio", BIN, "serve", "--stdio", "--config", &config, "--skills", skills,
        ],
    );
    assert_eq!(
        out[0]["serverInfo"],
        json!({"name": "gw-stdio", "version": "1.2.3"})
    );
    assert!(out[0]["capabilities"]["tools"].is_object(), "{}", out[0]);
    let names: Vec<&str> = out[1]["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    for n in [
        "py_add",
        "py_echo",
        "py_explode",
        "skill",
        "bash",
        "apply_patch",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let echoed: Value = serde_json::from_str(text_of(&out[2])).unwrap_or_default();
    assert_eq!(echoed, json!({"result": "over stdio"}));
    assert!(text_of(&out[3]).contains("hello-world"), "{}", out[3]);
    assert_eq!(out[4]["error"]["code"], json!(-32602), "{}", out[4]);
    assert_eq!(out[5], json!({"cancelled": true}));
    let pid = read_pid_file(&pid_file);
    assert!(
        all_dead_soon(&[pid]),
        "the cancelled command (pid {pid}) still runs"
    );
    assert_eq!(text_of(&out[6]), "still here\n");
}

/// A served call of a proxied MCP tool runs on the runtime (no thread of its
/// own): the client's cancellation still reaches the proxied server as
/// notifications/cancelled, and the gateway goes on serving that server.
#[test]
fn cancelling_a_served_call_of_a_proxied_tool_cancels_it_on_its_server() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let server =
        json!({"command": [python(), server_script("cancel_report.py")], "timeout": 20000});
    let config = write_config(
        dir.path(),
        "mcp.json",
        &json!({"mcpServers": {"slow": server}}),
    );
    let (started, cancelled) = (dir.path().join("started"), dir.path().join("cancelled"));
    let args = json!({"hang": true, "started": started, "cancelled": cancelled});
    let out = sdk_client(
        &json!({"steps": [
            {"op": "cancel", "name": "slow_ping", "arguments": args, "waitFile": started},
            {"op": "call", "name": "slow_ping", "arguments": {}}
        ]}),
        &["stdio", BIN, "serve", "--stdio", "--config", &config],
    );
    assert_eq!(out[0], json!({"cancelled": true}));
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !cancelled.exists() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        cancelled.exists(),
        "the proxied server never heard notifications/cancelled for the call"
    );
    assert_eq!(text_of(&out[1]), "pong", "{}", out[1]);
}

/// Reads lines from the child's stdout until one answers `id` (or none
/// comes within a bounded while).
fn answer_to(
    lines: &std::sync::mpsc::Receiver<String>,
    id: &Value,
    seen: &mut Vec<Value>,
) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no answer to id {id}; saw {seen:?}"));
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout held a line that is not JSON ({e}): {line:?}"));
        seen.push(v.clone());
        if &v["id"] == id && (v.get("result").is_some() || v.get("error").is_some()) {
            return v;
        }
    }
}

#[test]
fn a_malformed_line_on_stdio_gets_an_error_answer_and_the_server_reads_on() {
    use std::io::{BufRead, Write};
    let mut child = std::process::Command::new(BIN)
        .args(["serve", "--stdio"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let send = |stdin: &mut std::process::ChildStdin, s: &str| {
        let _ = stdin.write_all(s.as_bytes());
        let _ = stdin.write_all(b"\n");
        let _ = stdin.flush();
    };
    let mut seen = Vec::new();
    send(
        &mut stdin,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
    );
    let init = answer_to(&lines, &json!(1), &mut seen);
    assert_eq!(init["result"]["serverInfo"]["name"], json!("toolnexus"));
    send(
        &mut stdin,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    send(&mut stdin, "{this is not json");
    let parse = answer_to(&lines, &Value::Null, &mut seen);
    assert_eq!(parse["error"]["code"], json!(-32700), "{parse}");
    send(
        &mut stdin,
        r#"{"jsonrpc":"2.0","id":7,"nethod":"tools/list"}"#,
    );
    let invalid = answer_to(&lines, &json!(7), &mut seen);
    assert_eq!(invalid["error"]["code"], json!(-32600), "{invalid}");
    send(
        &mut stdin,
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo after"}}}"#,
    );
    let called = answer_to(&lines, &json!(8), &mut seen);
    assert_eq!(
        called["result"]["content"],
        json!([{"type": "text", "text": "after\n"}])
    );
    drop(stdin);
    // EOF on stdin ends the server, with exit code 0.
    let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "{status}");
}

#[test]
fn a_gateway_serves_its_servers_and_another_gateway_with_one_child_each() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let inner = write_config(
        dir.path(),
        "inner.json",
        &json!({"mcpServers": {"py": sdk_stdio_server()}, "builtins": false}),
    );
    let outer = write_config(
        dir.path(),
        "outer.json",
        &json!({"mcpServers": {
            "a": sdk_stdio_server(),
            "b": sdk_stdio_server(),
            "inner": {"command": [BIN, "serve", "--stdio", "--config", inner], "timeout": 20000}
        }, "mcpServer": {"tools": ["a_echo", "b_add", "inner_py_echo", "inner_py_add"]}}),
    );
    let mut gw = HttpGateway::start(&["--config", &outer]);
    let before = children_of(gw.child.id());
    assert_eq!(before.len(), 3, "a, b and the inner gateway: {before:?}");
    let inner_pid = before
        .iter()
        .copied()
        .find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.contains("inner.json"))
        })
        .unwrap_or_else(|| panic!("no inner gateway among {before:?}"));
    assert_eq!(
        children_of(inner_pid).len(),
        1,
        "the inner gateway's one server"
    );

    let calls: Vec<Value> = (0..12)
        .map(|i| match i % 3 {
            0 => json!({"name": "a_echo", "arguments": {"text": format!("a{i}")}}),
            1 => json!({"name": "b_add", "arguments": {"a": i, "b": 1}}),
            _ => json!({"name": "inner_py_echo", "arguments": {"text": format!("i{i}")}}),
        })
        .collect();
    for _ in 0..2 {
        let out = sdk_client(
            &json!({"steps": [{"op": "list"}, {"op": "parallel", "calls": calls}]}),
            &["http", &gw.url],
        );
        let names: Vec<&str> = out[0]["tools"]
            .as_array()
            .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(
            names,
            vec!["a_echo", "b_add", "inner_py_add", "inner_py_echo"]
        );
        for (i, r) in out[1].as_array().into_iter().flatten().enumerate() {
            let v: Value = serde_json::from_str(text_of(r)).unwrap_or_default();
            let want = match i % 3 {
                0 => json!({"result": format!("a{i}")}),
                1 => json!({"result": i + 1}),
                _ => json!({"result": format!("i{i}")}),
            };
            assert_eq!(v, want, "call {i}: {r}");
        }
    }
    // Every call rode the same three children; none was started per request.
    assert_eq!(children_of(gw.child.id()), before);
    assert_eq!(children_of(inner_pid).len(), 1);

    let mut family = before.clone();
    family.extend(children_of(inner_pid));
    let status = gw.terminate();
    assert!(status.success(), "SIGTERM is a clean stop: {status}");
    assert!(
        all_dead_soon(&family),
        "servers outlived the gateway: {family:?}"
    );
}

/// Waits a bounded while for `path` to exist; whether it does.
fn appears(path: &std::path::Path) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !path.exists() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    path.exists()
}

/// A toolkit over the official SDK's server whose `hang` records being
/// cancelled (tests/mcp_servers/sdk_cancel_server.py).
fn cancel_toolkit() -> Arc<Toolkit> {
    let server =
        json!({"command": [python(), server_script("sdk_cancel_server.py")], "timeout": 20000});
    Arc::new(
        Toolkit::build_from_json(
            &json!({"mcpConfig": {"mcpServers": {"slow": server}}}).to_string(),
        )
        .unwrap_or_else(|e| panic!("{e}")),
    )
}

/// A served client that drops a call of a proxied tool without a word (the
/// HTTP request closed mid-call): the proxied SDK server is told
/// notifications/cancelled and cancels the call, while the toolkit (and so
/// that server's stdin) stays open, so nothing but the notification can have
/// cancelled it.
#[test]
fn an_http_client_that_vanishes_mid_call_cancels_the_proxied_call_on_its_server() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (started, cancelled) = (dir.path().join("started"), dir.path().join("cancelled"));
    let tk = cancel_toolkit();
    let served = serve_http(&tk, Value::Null);
    sdk_client(
        &json!({"steps": [{"op": "vanish", "name": "slow_hang",
                 "arguments": {"started": started, "cancelled": cancelled},
                 "waitFile": started}]}),
        &["http", url(&served)],
    );
    assert!(
        appears(&cancelled),
        "the SDK server never saw the abandoned call cancelled"
    );
    // The server hears the cancellation before the call has ended here.
    let calls = calls_once(&served, 1);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].is_error, "the dropped call is an error: {calls:?}");
}

/// The same over JSON-RPC lines: the client's input ends mid-call. The
/// server ends only after the call it cancelled has told the proxied
/// server, which cancels it (its stdin still open: the toolkit lives on).
#[test]
fn a_lines_client_that_vanishes_mid_call_cancels_the_proxied_call_on_its_server() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (started, cancelled) = (dir.path().join("started"), dir.path().join("cancelled"));
    let tk = cancel_toolkit();
    let (client, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    let server = mcp_server::serve_lines(
        Arc::clone(&tk),
        &mcp_server::Profile::default(),
        None,
        read,
        write,
    );
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "slow_hang", "arguments": {"started": started, "cancelled": cancelled}}});
    let wait_started = started.clone();
    toolnexus::runtime::block_on(async move {
        let (from_server, mut to_server) = tokio::io::split(client);
        let mut lines = tokio::io::BufReader::new(from_server).lines();
        let send = format!(
            "{init}\n{}\n",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        );
        to_server
            .write_all(send.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let answer = tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line())
            .await
            .ok()
            .and_then(|l| l.ok().flatten())
            .unwrap_or_default();
        assert!(answer.contains("serverInfo"), "{answer}");
        to_server
            .write_all(format!("{call}\n").as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let until = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
        while !wait_started.exists() && tokio::time::Instant::now() < until {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        // Both halves dropped: the server reads the end of its input.
    });
    assert!(started.exists(), "the proxied call never started");
    assert!(
        server.wait_for(Some(std::time::Duration::from_secs(20))),
        "the server never ended after its input did"
    );
    assert!(
        appears(&cancelled),
        "the SDK server never saw the abandoned call cancelled"
    );
}

/// `tools/list` follows the toolkit: a tool registered after a first list
/// (the gateway keeps the list it made, per tool set) is in the next one,
/// on the gateway's own route and through rmcp alike, with its schema; a
/// tool registered again under the same name is listed as it is now.
#[test]
fn tools_list_follows_registrations_made_while_serving() {
    let tk = Arc::new(
        Toolkit::build_from_json(r#"{"builtins":false}"#).unwrap_or_else(|e| panic!("{e}")),
    );
    let tool = |name: &str, description: &str, schema: Value| {
        Tool::new(
            name,
            description,
            Some(schema),
            Source::Native,
            Arc::new(|_: &Value, _: &toolnexus::tool::ExecContext| ToolResult::ok("")),
        )
    };
    tk.register(tool("alpha", "first", json!({"type": "object"})));
    let served = serve_http(&tk, json!({}));
    let addr = host_port(&served);
    let (plain, weighted) = (PLAIN_ACCEPT, WEIGHTED_ACCEPT);
    let list = |headers: &str| -> Vec<(String, String, Value)> {
        let (status, _, body) = post(
            &addr,
            headers,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        );
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_default();
        v["result"]["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| {
                        (
                            t["name"].as_str().unwrap_or("?").to_string(),
                            t["description"].as_str().unwrap_or("?").to_string(),
                            t["inputSchema"].clone(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let entry = |n: &str, d: &str, s: Value| (n.to_string(), d.to_string(), s);
    for headers in [plain, weighted] {
        assert_eq!(
            list(headers),
            [entry("alpha", "first", json!({"type": "object"}))]
        );
    }
    tk.register(tool(
        "beta",
        "second",
        json!({"type": "object", "properties": {"x": {"type": "string"}}}),
    ));
    for headers in [plain, weighted, plain] {
        assert_eq!(
            list(headers),
            [
                entry("alpha", "first", json!({"type": "object"})),
                entry(
                    "beta",
                    "second",
                    json!({"type": "object", "properties": {"x": {"type": "string"}}})
                ),
            ]
        );
    }
    tk.register(tool(
        "alpha",
        "first, again",
        json!({"type": "object", "required": []}),
    ));
    for headers in [weighted, plain] {
        assert_eq!(
            list(headers)[0],
            entry(
                "alpha",
                "first, again",
                json!({"type": "object", "required": []})
            )
        );
    }
    served.server.stop();
}
