//! A cancel token fired while an HTTP tool or webfetch waits for a slow
//! server (issue 17): the call returns the cancelled result, and the server
//! sees the connection closed before it answered. (bash, host and MCP tools
//! are cancelled from C, Go and Python in their binding tests.)

use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use toolnexus::builtin::run;
use toolnexus::cancel::CancelToken;
use toolnexus::http_tool::http_tool;
use toolnexus::tool::{ExecContext, Stop, ToolResult};

/// What the slow server saw.
#[derive(Default)]
struct Seen {
    requests: AtomicUsize,
    ended_early: AtomicUsize,
}

/// A server on 127.0.0.1 that reads a request head, then waits up to 10 s
/// for the client to hang up before answering "late".
fn slow_server() -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Seen::default());
    let s = Arc::clone(&seen);
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut head = Vec::new();
            let mut buf = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            s.requests.fetch_add(1, Ordering::SeqCst);
            let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
            match conn.read(&mut buf) {
                Ok(0) => {
                    s.ended_early.fetch_add(1, Ordering::SeqCst);
                }
                _ => {
                    let _ = conn.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nlate",
                    );
                }
            }
        }
    });
    (base, seen)
}

fn wait_for(limit: Duration, pred: impl Fn() -> bool) -> bool {
    let end = Instant::now() + limit;
    while !pred() && Instant::now() < end {
        thread::sleep(Duration::from_millis(10));
    }
    pred()
}

/// Runs `call` with a token another thread fires once the server has the
/// request; returns the result.
fn cancelled_call(seen: &Arc<Seen>, call: impl FnOnce(&ExecContext) -> ToolResult) -> ToolResult {
    let token = CancelToken::new();
    let ctx = ExecContext {
        cancel: Some(token.clone()),
        ..ExecContext::default()
    };
    let s = Arc::clone(seen);
    let trigger = thread::spawn(move || {
        wait_for(Duration::from_secs(10), || {
            s.requests.load(Ordering::SeqCst) > 0
        });
        token.cancel();
    });
    let start = Instant::now();
    let r = call(&ctx);
    // Far below the 10 s the server would take to answer.
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "the call waited for the answer: {r:?}"
    );
    trigger.join().expect("trigger");
    assert!(
        wait_for(Duration::from_secs(3), || {
            seen.ended_early.load(Ordering::SeqCst) == 1
        }),
        "the server never saw the request ended"
    );
    r
}

fn cancelled(tool: &str) -> ToolResult {
    ExecContext::default().stopped(tool, Stop::Cancelled)
}

#[test]
fn a_cancel_drops_an_http_tools_request() {
    let (base, seen) = slow_server();
    let tool =
        http_tool(0, &json!({"name": "slow", "url": format!("{base}/slow")})).expect("declaration");
    let r = cancelled_call(&seen, |ctx| tool.exec.execute(&json!({}), ctx));
    assert_eq!(r, cancelled("slow"));
    assert_eq!(r.metadata, Some(Stop::Cancelled.metadata()));
}

#[test]
fn a_cancel_drops_webfetchs_request() {
    let (base, seen) = slow_server();
    let r = cancelled_call(&seen, |ctx| {
        run(
            "webfetch",
            &json!({"url": format!("{base}/page"), "format": "text"}),
            ctx,
        )
    });
    assert_eq!(r, cancelled("webfetch"));
}
