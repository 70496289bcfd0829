//! The gateway passes its MCP servers' resources, resource templates,
//! prompts, completions and logging through (and, with `unprefixed`, serves
//! proxied tools and prompts under their own names), driven by the official
//! MCP Python SDK client over streamable HTTP. Behind it: two servers on the
//! official Python SDK, tests/mcp_servers/conformance_fixture.py (tools,
//! resources, prompts, completions, logging) and sdk_server.py (tools only).

mod mcp_support;

use mcp_support::*;
use serde_json::{json, Value};
use std::sync::Arc;
use toolnexus::mcp_server::{self, ServeConfig};
use toolnexus::toolkit::Toolkit;

/// The fixture and sdk_server.py, or (`false`) no MCP server at all.
fn toolkit(with_servers: bool) -> Arc<Toolkit> {
    let mut servers = json!({});
    if with_servers {
        servers["py"] = json!({
            "command": [python(), server_script("sdk_server.py"), "stdio"],
            "timeout": 20000
        });
        servers["fx"] = json!({
            "command": [python(), server_script("conformance_fixture.py")],
            "timeout": 20000
        });
    }
    let tk = Toolkit::build_from_json(&json!({"mcpConfig": {"mcpServers": servers}}).to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    let status = tk.render("status").unwrap_or_default();
    if with_servers {
        assert!(status.contains("\"py\":\"connected\""), "{status}");
        assert!(status.contains("\"fx\":\"connected\""), "{status}");
    }
    Arc::new(tk)
}

fn serve(tk: &Arc<Toolkit>, mcp: Value) -> mcp_server::Server {
    let cfg = ServeConfig::from_value(&json!({"addr": "127.0.0.1:0", "mcp": mcp}))
        .unwrap_or_else(|e| panic!("{e}"));
    mcp_server::serve(Arc::clone(tk), &cfg, None).unwrap_or_else(|e| panic!("{e}"))
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn resources_prompts_completions_and_logging_pass_through_unprefixed() {
    let tk = toolkit(true);
    let server = serve(&tk, json!({"unprefixed": true}));
    let out = sdk_client(
        &json!({"steps": [
            {"op": "init"},
            {"op": "list"},
            {"op": "call", "name": "test_simple_text", "arguments": {}},
            {"op": "call", "name": "echo", "arguments": {"text": "hi"}},
            {"op": "resources"},
            {"op": "templates"},
            {"op": "read", "uri": "test://static-text"},
            {"op": "read", "uri": "test://template/7/data"},
            {"op": "read", "uri": "test://static-binary"},
            {"op": "read", "uri": "test://nowhere"},
            {"op": "prompts"},
            {"op": "prompt", "name": "test_prompt_with_arguments",
             "arguments": {"arg1": "first", "arg2": "second"}},
            {"op": "prompt", "name": "no_such_prompt"},
            {"op": "complete", "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
             "argument": {"name": "arg1", "value": "pa"}},
            {"op": "setLevel", "level": "info"},
            {"op": "subscribe", "uri": "test://watched-resource"},
            {"op": "unsubscribe", "uri": "test://watched-resource"},
            {"op": "call", "name": "fx_test_simple_text", "arguments": {}}
        ]}),
        &["http", server.url().unwrap_or_default()],
    );
    let caps = &out[0]["capabilities"];
    assert!(caps["tools"].is_object(), "{caps}");
    assert_eq!(caps["resources"]["subscribe"], json!(true), "{caps}");
    for kind in ["prompts", "completions", "logging"] {
        assert!(caps[kind].is_object(), "{kind}: {caps}");
    }

    // Proxied tools under their own names (no clash between the two servers).
    let tools = names(&out[1], "tools");
    for n in [
        "test_simple_text",
        "json_schema_2020_12_tool",
        "echo",
        "add",
    ] {
        assert!(tools.contains(&n.to_string()), "{n} missing from {tools:?}");
    }
    assert!(!tools
        .iter()
        .any(|t| t.starts_with("fx_") || t.starts_with("py_")));
    assert_eq!(
        text_of(&out[2]),
        "This is a simple text response for testing."
    );
    assert_eq!(out[3]["isError"], json!(false), "{}", out[3]);

    let uris: Vec<&str> = out[4]["resources"]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r["uri"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        uris,
        [
            "test://static-text",
            "test://static-binary",
            "test://watched-resource"
        ]
    );
    assert_eq!(
        out[5]["resourceTemplates"][0]["uriTemplate"],
        json!("test://template/{id}/data")
    );
    assert_eq!(
        out[6]["contents"][0]["text"],
        json!("This is the content of the static text resource.")
    );
    assert!(
        out[7]["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Data for ID: 7")),
        "{}",
        out[7]
    );
    assert_eq!(out[8]["contents"][0]["mimeType"], json!("image/png"));
    assert!(out[8]["contents"][0]["blob"].is_string(), "{}", out[8]);
    // The server's own error for a resource it does not have.
    assert!(out[9]["error"]["message"].is_string(), "{}", out[9]);

    assert_eq!(
        names(&out[10], "prompts"),
        [
            "test_simple_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image"
        ],
        "{}",
        out[10]
    );
    assert_eq!(
        names(&out[10], "prompts"),
        [
            "test_simple_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image"
        ]
    );
    let got = out[11]["messages"].to_string();
    assert!(
        got.contains("first") && got.contains("second"),
        "{}",
        out[11]
    );
    assert_eq!(out[12]["error"]["code"], json!(-32602), "{}", out[12]);
    assert_eq!(
        out[13]["completion"]["values"],
        json!(["paris", "park", "party"])
    );
    for i in [14, 15, 16] {
        assert!(out[i].get("error").is_none(), "{i}: {}", out[i]);
    }
    // The toolkit's own (prefixed) name still answers, though unlisted.
    assert_eq!(
        text_of(&out[17]),
        "This is a simple text response for testing."
    );
}

#[test]
fn by_default_proxied_prompts_are_prefixed_like_tools() {
    let tk = toolkit(true);
    let server = serve(&tk, Value::Null);
    let out = sdk_client(
        &json!({"steps": [
            {"op": "list"},
            {"op": "prompts"},
            {"op": "prompt", "name": "fx_test_simple_prompt"},
            {"op": "prompt", "name": "test_simple_prompt"},
            {"op": "complete", "ref": {"type": "ref/prompt", "name": "fx_test_prompt_with_arguments"},
             "argument": {"name": "arg1", "value": "par"}}
        ]}),
        &["http", server.url().unwrap_or_default()],
    );
    let tools = names(&out[0], "tools");
    assert!(
        tools.contains(&"fx_test_simple_text".to_string()),
        "{tools:?}"
    );
    assert!(!tools.contains(&"test_simple_text".to_string()));
    assert_eq!(
        names(&out[1], "prompts")[0],
        "fx_test_simple_prompt",
        "{}",
        out[1]
    );
    assert_eq!(
        out[2]["messages"][0]["content"]["text"],
        json!("This is a simple prompt for testing.")
    );
    assert_eq!(out[3]["error"]["code"], json!(-32602), "{}", out[3]);
    assert_eq!(
        out[4]["completion"]["values"],
        json!(["paris", "park", "party"])
    );
}

/// A gateway with no MCP server behind it advertises tools only, and says
/// so when asked for the rest.
#[test]
fn without_servers_that_have_them_only_tools_are_advertised() {
    let tk = toolkit(false);
    let server = serve(&tk, Value::Null);
    let out = sdk_client(
        &json!({"steps": [{"op": "init"}, {"op": "setLevel", "level": "info"}]}),
        &["http", server.url().unwrap_or_default()],
    );
    let caps = &out[0]["capabilities"];
    assert!(caps["tools"].is_object(), "{caps}");
    for kind in ["resources", "prompts", "completions", "logging"] {
        assert!(caps.get(kind).is_none(), "{kind}: {caps}");
    }
    assert_eq!(out[1]["error"]["code"], json!(-32601), "{}", out[1]);
}

/// What a proxied call's server sends while it runs reaches the calling
/// client: progress under the client's own token (the proxied server saw
/// the gateway's), log lines once the client set a level.
fn assert_progress_and_logs_arrive(out: &[Value]) {
    let progress = out[0]["progress"].as_array().cloned().unwrap_or_default();
    let values: Vec<f64> = progress
        .iter()
        .filter_map(|p| p["progress"].as_f64())
        .collect();
    assert_eq!(values, [0.0, 50.0, 100.0], "{}", out[0]);
    assert_eq!(progress[0]["total"], json!(100.0));
    // The server answered with the token it got: the gateway's, not ours.
    assert!(
        text_of(&out[0]).starts_with("Progress test completed (token tn-"),
        "{}",
        out[0]
    );
    assert!(out[1].get("error").is_none(), "{}", out[1]);
    let logs: Vec<&str> = out[2]["logs"]
        .as_array()
        .map(|a| a.iter().filter_map(|l| l["data"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        logs,
        [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed"
        ],
        "{}",
        out[2]
    );
}

fn notified_plan() -> Value {
    json!({"steps": [
        {"op": "notified", "name": "test_tool_with_progress", "arguments": {}},
        {"op": "setLevel", "level": "debug"},
        {"op": "notified", "name": "test_tool_with_logging", "arguments": {}}
    ]})
}

#[test]
fn progress_and_log_notifications_of_a_proxied_call_reach_the_client_over_http() {
    let tk = toolkit(true);
    let server = serve(&tk, json!({"unprefixed": true}));
    let out = sdk_client(
        &notified_plan(),
        &["http", server.url().unwrap_or_default()],
    );
    assert_progress_and_logs_arrive(&out);
}

const BIN: &str = env!("CARGO_BIN_EXE_toolnexus");

#[test]
fn progress_and_log_notifications_of_a_proxied_call_reach_the_client_over_stdio() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = dir.path().join("mcp.json");
    let cfg = json!({
        "mcpServers": {"fx": {
            "command": [python(), server_script("conformance_fixture.py")],
            "timeout": 20000
        }},
        "mcpServer": {"unprefixed": true}
    });
    std::fs::write(&config, cfg.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let out = sdk_client(
        &notified_plan(),
        &[
            "stdio",
            BIN,
            "serve",
            "--stdio",
            "--no-builtins",
            "--config",
            &config.to_string_lossy(),
        ],
    );
    assert_progress_and_logs_arrive(&out);
}

/// A plain client over stdio (no sampling, elicitation or log level: the
/// gateway's own fast path) that gives a call a progress token gets the
/// proxied server's progress under its token, each before the call's
/// answer, and the answer as the server sent it (issue 28).
#[test]
fn a_progress_token_call_on_the_stdio_fast_path_gets_its_progress_before_the_answer() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = dir.path().join("mcp.json");
    let cfg = json!({
        "mcpServers": {"fx": {
            "command": [python(), server_script("conformance_fixture.py")],
            "timeout": 20000
        }},
        "mcpServer": {"unprefixed": true}
    });
    std::fs::write(&config, cfg.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let mut child = std::process::Command::new(BIN)
        .args(["serve", "--stdio", "--no-builtins", "--config"])
        .arg(&config)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        panic!("no pipes");
    };
    let mut lines = BufReader::new(stdout).lines();
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").unwrap_or_else(|e| panic!("{e}"));
        stdin.flush().unwrap_or_else(|e| panic!("{e}"));
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}),
    );
    let init: Value = serde_json::from_str(&lines.next().and_then(Result::ok).unwrap_or_default())
        .unwrap_or_default();
    assert_eq!(init["id"], json!(0), "{init}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for (id, token) in [(1, json!("p-1")), (2, json!(42))] {
        send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "test_tool_with_progress", "arguments": {},
            "_meta": {"progressToken": token}}}),
        );
        let mut progress = Vec::new();
        let answer = loop {
            let line = lines.next().and_then(Result::ok).unwrap_or_default();
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            match v["method"].as_str() {
                Some("notifications/progress") => {
                    assert_eq!(v["params"]["progressToken"], token, "{v}");
                    progress.push(v["params"]["progress"].as_f64());
                }
                Some(other) => panic!("{other}: {v}"),
                None => break v,
            }
        };
        assert_eq!(answer["id"], json!(id), "{answer}");
        assert_eq!(progress, [Some(0.0), Some(50.0), Some(100.0)], "{answer}");
        assert!(
            text_of(&answer["result"]).starts_with("Progress test completed (token tn-"),
            "{answer}"
        );
    }
    drop(stdin);
    let _ = child.wait();
}
