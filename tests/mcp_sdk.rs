//! Real servers built on the official MCP Python SDK (`pip install mcp`),
//! over stdio, streamable HTTP on 127.0.0.1, and the legacy HTTP+SSE transport.

mod mcp_support;

use mcp_support::*;
use serde_json::json;
use toolnexus::mcp::McpSource;

/// What every transport must show for the same server.
fn assert_sdk_server_works(source: &McpSource, server: &str) {
    // We offer 2025-11-25 (the newest revision with an `initialize`) and the
    // SDK agrees to it.
    assert_sdk_server_works_at(source, server, "2025-11-25");
}

/// [`assert_sdk_server_works`] on a session negotiated at `version`.
fn assert_sdk_server_works_at(source: &McpSource, server: &str, version: &str) {
    assert_eq!(status(source, server), "connected", "{:?}", source.errors);
    assert_eq!(
        source.protocols,
        vec![(server.to_string(), version.to_string())]
    );
    let mut got = names(source);
    got.sort();
    assert_eq!(
        got,
        vec![
            format!("{server}_add"),
            format!("{server}_echo"),
            format!("{server}_explode")
        ]
    );
    let echo = tool(source, &format!("{server}_echo"));
    assert_eq!(echo.description, "Echo the text argument.");
    assert_eq!(
        echo.input_schema["properties"]["text"]["type"],
        json!("string")
    );
    assert_eq!(echo.input_schema["required"], json!(["text"]));

    // The SDK returns structuredContent {"result": ...} for typed returns;
    // SPEC §2: structuredContent ⇒ its JSON.
    let sum = call(source, &format!("{server}_add"), json!({"a": 2, "b": 40}));
    assert!(!sum.is_error, "{}", sum.output);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&sum.output).ok(),
        Some(json!({"result": 42}))
    );

    // The OpenAI wire form: arguments as a JSON string.
    let echoed = call(
        source,
        &format!("{server}_echo"),
        json!("{\"text\":\"héllo\"}"),
    );
    assert!(!echoed.is_error, "{}", echoed.output);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&echoed.output).ok(),
        Some(json!({"result": "héllo"}))
    );

    let failed = call(
        source,
        &format!("{server}_explode"),
        json!({"reason": "kaboom"}),
    );
    assert!(failed.is_error);
    // SDK 1.x reports the exception text, 2.x only the tool's name.
    assert!(
        failed.output.contains("kaboom") || failed.output.contains("explode"),
        "{}",
        failed.output
    );
}

/// The toolkit's status names the protocol revision each connected server
/// negotiated.
#[test]
fn status_reports_the_negotiated_protocol_version() {
    let cfg = toolnexus::config::ToolkitConfig::from_value(&json!({
        "builtins": false,
        "mcpConfig": {"mcpServers": {"py": {
            "command": ["python3", server_script("sdk_server.py"), "stdio"],
            "timeout": 20000
        }}}
    }))
    .unwrap_or_else(|e| panic!("config: {e}"));
    let tk = toolnexus::toolkit::Toolkit::build(&cfg).unwrap_or_else(|e| panic!("build: {e}"));
    let status: serde_json::Value =
        serde_json::from_str(&tk.render("status").unwrap_or_default()).unwrap_or_default();
    assert_eq!(status["statuses"]["py"], json!("connected"), "{status}");
    assert_eq!(
        status["protocolVersions"],
        json!({"py": "2025-11-25"}),
        "{status}"
    );
}

#[test]
fn sdk_server_over_stdio() {
    let source = connect(json!({"mcpServers": {"py": {
        "command": ["python3", server_script("sdk_server.py"), "stdio"],
        "timeout": 20000
    }}}));
    assert_sdk_server_works(&source, "py");
}

#[test]
fn sdk_server_over_streamable_http() {
    let server = HttpServer::start("streamable-http");
    let source = connect(json!({"mcpServers": {"web": {
        "url": format!("http://127.0.0.1:{}/mcp", server.port),
        "headers": {"x-trace": "${HOME}"},
        "timeout": 20000
    }}}));
    assert_sdk_server_works(&source, "web");
}

#[test]
fn sdk_server_over_legacy_sse_by_fallback() {
    let server = HttpServer::start("sse");
    let source = connect(json!({"mcpServers": {"old": {
        "url": format!("http://127.0.0.1:{}/sse", server.port),
        "timeout": 20000
    }}}));
    assert_sdk_server_works(&source, "old");
}

#[test]
fn sdk_server_over_legacy_sse_by_type() {
    let server = HttpServer::start("sse");
    let source = connect(json!({"mcpServers": {"old": {
        "type": "sse",
        "url": format!("http://127.0.0.1:{}/sse", server.port),
        "timeout": 20000
    }}}));
    assert_sdk_server_works(&source, "old");
}

#[test]
fn a_dead_http_server_fails_calls_fast_with_the_server_named() {
    let server = HttpServer::start("streamable-http");
    let source = connect(json!({"mcpServers": {"web": {
        "url": format!("http://127.0.0.1:{}/mcp", server.port),
        "timeout": 60000
    }}}));
    assert_eq!(status(&source, "web"), "connected", "{:?}", source.errors);
    drop(server);
    let r = call(&source, "web_add", json!({"a": 1, "b": 2}));
    assert!(r.is_error);
    assert!(
        r.output
            .starts_with("mcp server \"web\" failed at tools/call: "),
        "{}",
        r.output
    );
    assert!(!r.output.contains("timeout"), "{}", r.output);
    // A fresh connection is refused; a pooled keep-alive one the server's
    // death closed fails as a closed connection. Either is immediate.
    assert!(
        r.output.contains("connect-failed") || r.output.contains("connection closed"),
        "{}",
        r.output
    );
}

/// `"protocolVersion": "auto"`: `server/discover` first. This SDK's server
/// (dual-era since mcp 2.x) advertises 2026-07-28 there, so the session is
/// at 2026-07-28 (no `initialize`), over stdio and streamable HTTP alike,
/// and every call works on it; over legacy HTTP+SSE (reached by fallback)
/// there is no discover and the session is 2025-11-25's.
#[test]
fn protocol_version_auto_takes_2026_07_28_where_the_server_advertises_it() {
    let source = connect(json!({"mcpServers": {"py": {
        "command": ["python3", server_script("sdk_server.py"), "stdio"],
        "timeout": 20000, "protocolVersion": "auto"
    }}}));
    assert_sdk_server_works_at(&source, "py", "2026-07-28");
    let server = HttpServer::start("streamable-http");
    let source = connect(json!({"mcpServers": {"web": {
        "url": format!("http://127.0.0.1:{}/mcp", server.port),
        "timeout": 20000, "protocolVersion": "auto"
    }}}));
    assert_sdk_server_works_at(&source, "web", "2026-07-28");
    let server = HttpServer::start("sse");
    let source = connect(json!({"mcpServers": {"old": {
        "url": format!("http://127.0.0.1:{}/sse", server.port),
        "timeout": 20000, "protocolVersion": "auto"
    }}}));
    assert_sdk_server_works_at(&source, "old", "2025-11-25");
}

/// A server of 2024-11-05 answers `server/discover` with `-32601`:
/// `"auto"` falls back to `initialize` and the session is that server's
/// revision; `"2026-07-28"` does not fall back, and the status says why.
#[test]
fn protocol_version_auto_falls_back_to_initialize_and_2026_07_28_does_not() {
    let entry = |version: &str| {
        json!({"mcpServers": {"old": {
            "command": ["python3", server_script("direct_server.py")],
            "timeout": 20000, "protocolVersion": version
        }}})
    };
    let source = connect(entry("auto"));
    assert_eq!(status(&source, "old"), "connected", "{:?}", source.errors);
    assert_eq!(
        source.protocols,
        vec![("old".to_string(), "2024-11-05".to_string())]
    );
    let echoed = call(&source, "old_echo", json!({"text": "still here"}));
    assert_eq!(
        (echoed.output.as_str(), echoed.is_error),
        ("still here", false)
    );

    let source = connect(entry("2026-07-28"));
    assert_eq!(status(&source, "old"), "failed");
    let error = &source.errors[0].1;
    assert!(
        error.starts_with("mcp server \"old\" failed at initialize: rpc-error (code -32601)"),
        "{error}"
    );
}

/// Not a check: the connect cost of `"auto"` beside the default (connect to
/// tools listed, interleaved rounds), printed as medians and ranges, for
/// bench/README.md ("protocolVersion auto at connect"). Run with
/// `cargo test --test mcp_sdk -- --ignored --nocapture auto_connect_cost`.
#[test]
#[ignore]
fn auto_connect_cost() {
    let http = HttpServer::start("streamable-http");
    let url = format!("http://127.0.0.1:{}/mcp", http.port);
    type Entry = Box<dyn Fn(&str) -> serde_json::Value>;
    let cases: Vec<(&str, Entry)> = vec![
        (
            "2024-11-05 stdio (direct_server.py)",
            Box::new(
                |v: &str| json!({"command": ["python3", server_script("direct_server.py")], "protocolVersion": v}),
            ),
        ),
        (
            "SDK stdio (sdk_server.py)",
            Box::new(
                |v: &str| json!({"command": ["python3", server_script("sdk_server.py"), "stdio"], "protocolVersion": v}),
            ),
        ),
        (
            "SDK streamable HTTP (sdk_server.py)",
            Box::new(move |v: &str| json!({"url": url.clone(), "protocolVersion": v})),
        ),
    ];
    for (label, entry) in &cases {
        let mut times: Vec<Vec<f64>> = vec![Vec::new(), Vec::new()];
        for _ in 0..15 {
            for (i, version) in ["2025-11-25", "auto"].iter().enumerate() {
                let mut server = entry(version);
                server["timeout"] = json!(20000);
                let started = std::time::Instant::now();
                let source = connect(json!({"mcpServers": {"s": server}}));
                times[i].push(started.elapsed().as_secs_f64() * 1000.0);
                assert_eq!(status(&source, "s"), "connected", "{:?}", source.errors);
            }
        }
        for (i, version) in ["2025-11-25", "auto"].iter().enumerate() {
            let t = &mut times[i];
            t.sort_by(f64::total_cmp);
            eprintln!(
                "{label}, {version}: median {:.1} ms ({:.1}-{:.1})",
                t[t.len() / 2],
                t[0],
                t[t.len() - 1]
            );
        }
    }
}
