//! A hostile server never takes the host down (issue 14): webfetch caps the
//! body it reads (an announced 20 GB response fails at once, an endless one
//! once 64 MiB have arrived), HTTP tools say "too-large" instead of a bare
//! `transport`, and webfetch reports a refused connection and a timeout
//! classified as HTTP tools classify them, in its own words (`webfetch:
//! transport failure: <kind>`, SPEC §4A). Every server is on 127.0.0.1.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::Duration;
use toolnexus::builtin::run;
use toolnexus::tool::{ExecContext, ToolResult};
use toolnexus::toolkit::Toolkit;

/// Reads one request head off `stream`.
fn read_head(stream: &TcpStream) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
        if line == "\r\n" {
            return;
        }
        line.clear();
    }
}

/// A server on 127.0.0.1 that answers every connection with `serve`.
fn server(serve: fn(TcpStream)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            thread::spawn(move || serve(stream));
        }
    });
    format!("http://{addr}")
}

/// Announces 20 GB, sends 1 MiB of it, then closes.
fn announce_huge(mut s: TcpStream) {
    read_head(&s);
    let _ = s.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 21474836480\r\n\r\n",
    );
    let _ = s.write_all(&vec![b'a'; 1 << 20]);
}

/// No length, and 100 MiB of body unless the client hangs up first.
fn endless(mut s: TcpStream) {
    read_head(&s);
    let _ =
        s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n");
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..100 {
        if s.write_all(&chunk).is_err() {
            return;
        }
    }
}

/// Reads the request and never answers (until the client gives up).
fn silent(s: TcpStream) {
    read_head(&s);
    thread::sleep(Duration::from_secs(10));
}

fn webfetch(args: Value) -> ToolResult {
    run("webfetch", &args, &ExecContext::default())
}

fn assert_kind(r: &ToolResult, kind: &str, output: &str) {
    assert!(r.is_error, "{r:?}");
    assert_eq!(&r.output[..r.output.len().min(300)], output);
    let md = r.metadata.as_ref().expect("metadata");
    assert_eq!(md["error"], kind);
}

const TOO_LARGE: &str = "webfetch: transport failure: too-large (the response body is larger than 64 MiB, the most one call reads)";
const HTTP_TOO_LARGE: &str = "HTTP transport failure: too-large (the response body is larger than 64 MiB, the most one call reads)";

#[test]
fn webfetch_refuses_an_announced_20_gb_body() {
    let base = server(announce_huge);
    let r = webfetch(json!({"url": format!("{base}/huge"), "format": "html"}));
    assert_kind(&r, "too-large", TOO_LARGE);
}

#[test]
fn webfetch_stops_an_unannounced_body_at_64_mib() {
    let base = server(endless);
    let r = webfetch(json!({"url": format!("{base}/endless"), "format": "html"}));
    assert_kind(&r, "too-large", TOO_LARGE);
}

#[test]
fn webfetch_refused_connection_is_connect_failed() {
    // Port 1 on loopback: nothing listens there.
    let r = webfetch(json!({"url": "http://127.0.0.1:1/x"}));
    assert_kind(
        &r,
        "connect-failed",
        "webfetch: transport failure: connect-failed",
    );
}

#[test]
fn webfetch_timeout_is_the_timeout_kind() {
    let base = server(silent);
    let r = webfetch(json!({"url": format!("{base}/slow"), "timeout": 1}));
    assert_kind(&r, "timeout", "webfetch: transport failure: timeout");
}

#[test]
fn an_http_tool_says_too_large_instead_of_transport() {
    let base = server(announce_huge);
    let cfg = json!({"builtins": false, "httpTools": [
        {"name": "big", "method": "GET", "url": format!("{base}/huge")}
    ]});
    let tk = Toolkit::build_from_json(&cfg.to_string()).expect("build");
    let r = tk.execute("big", json!({}), &ExecContext::default());
    assert_kind(&r, "too-large", HTTP_TOO_LARGE);
}
