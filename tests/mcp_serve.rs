//! The toolkit served as an MCP server (SPEC §7C) over streamable HTTP,
//! driven by the official MCP Python SDK client: a gateway aggregating an
//! SDK stdio server, skills, builtins and a host tool.

mod mcp_support;

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
                panic!("the host tool blew up")
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

fn url(s: &Served) -> &str {
    s.server.url().unwrap_or_default()
}

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
    let calls = served.calls.lock().map(|c| c.clone()).unwrap_or_default();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls[0].is_error,
        "the cancelled call is an error: {calls:?}"
    );
}

#[test]
fn only_the_mcp_path_is_served_and_stop_closes_the_port() {
    use std::io::{Read, Write};
    let tk = Arc::new(Toolkit::build_from_json("{}").unwrap_or_else(|e| panic!("{e}")));
    let served = serve_http(&tk, Value::Null);
    let addr = url(&served)
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
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

