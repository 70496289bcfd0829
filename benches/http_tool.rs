//! An HTTP tool GET against a local keep-alive server on 127.0.0.1: one call
//! as the host makes it (`execute` from a host thread), including URL
//! assembly, the round trip on the shared runtime and the ToolResult.
//!
//! A second function measures the floor: the same GET written by hand on one
//! blocking socket to the same server. When bench/.venv holds the Python port
//! (toolnexus 0.21.0), the same work is measured there too, by
//! bench/http_python.py against this same server, and its median is printed
//! at the end. Criterion's medians are in
//! target/criterion/<function>/new/estimates.json (`median.point_estimate`, ns).

#[path = "../tests/http_tool_mock/mod.rs"]
mod http_tool_mock;

use criterion::{criterion_group, criterion_main, Criterion};
use http_tool_mock::{MockServer, Reply};
use serde_json::json;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use toolnexus::http_tool::http_tool;
use toolnexus::tool::ExecContext;

fn http_get(c: &mut Criterion) {
    let server = MockServer::with_responder(|_| Reply::text(200, r#"{"ok":true}"#));
    let url = format!("{}/users/{{id}}", server.base());
    let decl =
        json!({"name": "getUser", "description": "Fetch a user.", "method": "GET", "url": url});
    let tool = match http_tool(0, &decl) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    };
    let args = json!({"id": "42"});
    let ctx = ExecContext::default();

    c.bench_function("http_tool GET keep-alive", |b| {
        b.iter(|| {
            let r = tool.exec.execute(black_box(&args), &ctx);
            assert!(!r.is_error, "{}", r.output);
            r
        })
    });

    // The floor: the same GET written by hand on one blocking keep-alive
    // socket, no runtime, no pool. What is left above it is the tool's cost.
    c.bench_function("floor: hand-written GET on a blocking socket", |b| {
        let addr = server.base().trim_start_matches("http://").to_string();
        let stream = TcpStream::connect(&addr).expect("connect to the bench server");
        stream.set_nodelay(true).expect("nodelay");
        let mut writer = stream.try_clone().expect("clone the socket");
        let mut reader = BufReader::new(stream);
        let request = format!("GET /users/42 HTTP/1.1\r\nhost: {addr}\r\n\r\n");
        b.iter(|| {
            writer.write_all(request.as_bytes()).expect("write");
            let mut len = 0usize;
            let mut line = String::new();
            loop {
                line.clear();
                reader.read_line(&mut line).expect("read");
                if line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().expect("length");
                }
            }
            let mut body = vec![0u8; len];
            reader.read_exact(&mut body).expect("body");
            body
        })
    });

    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/.venv/bin/python");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/http_python.py");
    if python.exists() {
        match Command::new(&python)
            .arg(&script)
            .args(["--url", &url])
            .output()
        {
            Ok(out) if out.status.success() => {
                eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim())
            }
            Ok(out) => eprintln!(
                "python bench failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => eprintln!("python bench did not start: {e}"),
        }
    } else {
        eprintln!("python bench skipped: no bench/.venv (pip install toolnexus==0.21.0 into it)");
    }
}

criterion_group!(benches, http_get);
criterion_main!(benches);
