//! MCP benchmarks against the official-SDK Python server
//! (tests/mcp_servers/sdk_server.py): connect with one stdio server (spawn +
//! initialize + tools/list), with ten in parallel, and a tools/call round
//! trip over stdio and over streamable HTTP. `TN_BENCH_PYTHON` picks the
//! interpreter (default python3). A plain-Python server without the SDK
//! (tests/mcp_servers/hang_call.py) shows the client's own connect overhead; bench/mcp_python.py measures the Python
//! toolnexus port on the same servers.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use std::hint::black_box;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use toolnexus::mcp::{self, McpSource};
use toolnexus::tool::ExecContext;

fn python() -> String {
    std::env::var("TN_BENCH_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn script() -> String {
    format!(
        "{}/tests/mcp_servers/sdk_server.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn stdio_config(n: usize) -> Value {
    let servers: serde_json::Map<String, Value> = (0..n)
        .map(|i| {
            (
                format!("s{i}"),
                json!({"command": [python(), script(), "stdio"]}),
            )
        })
        .collect();
    json!({ "mcpServers": servers })
}

fn connect(config: &Value) -> McpSource {
    let cfg = mcp::parse_config(config).unwrap_or_else(|e| panic!("{e}"));
    let source = mcp::connect(&cfg);
    assert!(source.errors.is_empty(), "{:?}", source.errors);
    source
}

fn call_echo(source: &McpSource, name: &str) {
    let tool = source
        .tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no {name}"));
    let r = tool
        .exec
        .execute(&json!({"text": "ping"}), &ExecContext::default());
    assert!(!r.is_error, "{}", r.output);
    black_box(r);
}

struct HttpServer(Child, u16);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_http() -> HttpServer {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("{e}"));
    let child = Command::new(python())
        .args([script(), "streamable-http".into(), port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let server = HttpServer(child, port);
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the HTTP server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

fn benches(c: &mut Criterion) {
    let one = stdio_config(1);
    c.bench_function("mcp/connect 1 stdio server", |b| {
        b.iter_with_large_drop(|| connect(&one))
    });
    // A plain-Python server (no SDK import): the client's own overhead.
    let minimal = json!({"mcpServers": {"m": {"command": [python(), format!("{}/tests/mcp_servers/hang_call.py", env!("CARGO_MANIFEST_DIR"))]}}});
    c.bench_function("mcp/connect 1 minimal stdio server", |b| {
        b.iter_with_large_drop(|| connect(&minimal))
    });
    let ten = stdio_config(10);
    c.bench_function("mcp/connect 10 stdio servers", |b| {
        b.iter_with_large_drop(|| connect(&ten))
    });

    let source = connect(&one);
    c.bench_function("mcp/tools-call stdio", |b| {
        b.iter(|| call_echo(&source, "s0_echo"))
    });
    drop(source);

    let server = start_http();
    let source = connect(
        &json!({"mcpServers": {"h": {"url": format!("http://127.0.0.1:{}/mcp", server.1)}}}),
    );
    c.bench_function("mcp/tools-call streamable-http", |b| {
        b.iter(|| call_echo(&source, "h_echo"))
    });
    drop(source);
    drop(server);
}

criterion_group! {
    name = mcp_benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = benches
}
criterion_main!(mcp_benches);
