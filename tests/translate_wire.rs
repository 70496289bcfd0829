//! The provider exchange on the wire: how `translate` reads the HTTP/1.1
//! answers real servers give (chunked bodies, bodies ended by closing the
//! connection, interim 100 responses, answers dripped a byte at a time),
//! how it reuses and replaces keep-alive connections, and how it fails on
//! broken or endless answers. Each test runs a raw TCP server on 127.0.0.1
//! that writes exactly the bytes the test gives it.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use toolnexus::cancel::CancelToken;
use toolnexus::error::ErrorCode;
use toolnexus::translate::translate;

/// What the server does with one request.
#[derive(Clone)]
enum Act {
    /// Writes these bytes and keeps the connection for the next request.
    Keep(Vec<u8>),
    /// Writes these bytes and closes the connection.
    Close(Vec<u8>),
    /// Writes these bytes one at a time, then keeps the connection.
    Drip(Vec<u8>),
    /// Writes this head, then this unit over and over until the client
    /// hangs up.
    Endless(&'static str, Arc<Vec<u8>>),
    /// Waits this long before closing without a word.
    Stall(u64),
}

/// A raw HTTP server: request `n` (counted across connections) gets
/// `script(n)`.
struct Raw {
    port: u16,
    connections: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
}

impl Raw {
    fn start(script: impl Fn(usize) -> Act + Send + Sync + 'static) -> Raw {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let script = Arc::new(script);
        let (conns, reqs) = (Arc::clone(&connections), Arc::clone(&requests));
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                conns.fetch_add(1, Ordering::SeqCst);
                let (reqs, script) = (Arc::clone(&reqs), Arc::clone(&script));
                thread::spawn(move || serve(stream, &reqs, &*script));
            }
        });
        Raw {
            port,
            connections,
            requests,
        }
    }

    fn client(&self) -> Value {
        json!({"baseUrl": format!("http://127.0.0.1:{}/v1", self.port), "model": "gpt-test",
               "apiKey": "sk-wire", "retryBaseMs": 1})
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

fn serve(stream: TcpStream, requests: &AtomicUsize, script: &(dyn Fn(usize) -> Act + Sync)) {
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        // The request head, then as much body as it announces.
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" => break,
                Ok(_) => {
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let n = requests.fetch_add(1, Ordering::SeqCst);
        match script(n) {
            Act::Keep(bytes) => {
                if out.write_all(&bytes).is_err() {
                    return;
                }
            }
            Act::Close(bytes) => {
                let _ = out.write_all(&bytes);
                return;
            }
            Act::Drip(bytes) => {
                for b in bytes {
                    if out.write_all(&[b]).is_err() {
                        return;
                    }
                    thread::sleep(Duration::from_micros(200));
                }
            }
            Act::Endless(head, unit) => {
                if out.write_all(head.as_bytes()).is_err() {
                    return;
                }
                while out.write_all(&unit).is_ok() {}
                return;
            }
            Act::Stall(ms) => {
                thread::sleep(Duration::from_millis(ms));
                return;
            }
        }
    }
}

/// An OpenAI-style answer with this text.
fn answer_json(text: &str) -> String {
    json!({"choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text}}],
           "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
    .to_string()
}

/// A whole 200 response with a Content-Length.
fn ok(text: &str) -> Vec<u8> {
    let body = answer_json(text);
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn hi() -> Value {
    json!({"messages": [{"role": "user", "content": "Hi"}]})
}

fn text_of(server: &Raw) -> String {
    match translate(&server.client(), &hi(), &[], None) {
        Ok(result) => result["text"]
            .as_str()
            .unwrap_or("<not a string>")
            .to_string(),
        Err(e) => panic!("translate failed: {e}"),
    }
}

#[test]
fn a_chunked_answer_is_joined_and_its_trailers_are_skipped() {
    let body = answer_json("from chunks");
    let (a, b) = body.split_at(10);
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n\
         {:x};ext=1\r\n{a}\r\n{:X}\r\n{b}\r\n0\r\nx-trailer: yes\r\n\r\n",
        a.len(),
        b.len()
    );
    let server = Raw::start(move |_| Act::Keep(response.clone().into_bytes()));
    assert_eq!(text_of(&server), "from chunks");
    assert_eq!(text_of(&server), "from chunks");
    assert_eq!(
        server.connections(),
        1,
        "a chunked answer leaves the connection reusable"
    );
}

#[test]
fn an_answer_ended_by_closing_the_connection_is_read_whole() {
    let server = Raw::start(|n| {
        let body = answer_json(&format!("closed {n}"));
        Act::Close(
            format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{body}").into_bytes(),
        )
    });
    assert_eq!(text_of(&server), "closed 0");
    assert_eq!(text_of(&server), "closed 1");
    assert_eq!(server.connections(), 2, "such a connection is not reused");
}

#[test]
fn http_1_0_and_connection_close_answers_are_not_pooled() {
    let server = Raw::start(|n| {
        let body = answer_json("once");
        let head = if n % 2 == 0 {
            "HTTP/1.0 200 OK\r\n".to_string()
        } else {
            "HTTP/1.1 200 OK\r\nconnection: close\r\n".to_string()
        };
        Act::Keep(format!("{head}content-length: {}\r\n\r\n{body}", body.len()).into_bytes())
    });
    for _ in 0..4 {
        assert_eq!(text_of(&server), "once");
    }
    assert_eq!(server.connections(), 4);
}

#[test]
fn an_interim_100_continue_is_skipped() {
    let mut response = b"HTTP/1.1 100 Continue\r\n\r\n".to_vec();
    response.extend(ok("after continue"));
    let server = Raw::start(move |_| Act::Keep(response.clone()));
    assert_eq!(text_of(&server), "after continue");
}

#[test]
fn an_answer_dripped_a_byte_at_a_time_is_read_whole() {
    let server = Raw::start(|_| Act::Drip(ok("slowly")));
    assert_eq!(text_of(&server), "slowly");
}

#[test]
fn keep_alive_connections_are_reused_across_calls() {
    let server = Raw::start(|n| Act::Keep(ok(&format!("call {n}"))));
    for n in 0..5 {
        assert_eq!(text_of(&server), format!("call {n}"));
    }
    assert_eq!(server.connections(), 1);
    assert_eq!(server.requests(), 5);
}

#[test]
fn a_pooled_connection_the_server_closed_is_replaced_without_a_retry() {
    // Every answer claims keep-alive, but the server hangs up after it.
    let server = Raw::start(|n| Act::Close(ok(&format!("fresh {n}"))));
    assert_eq!(text_of(&server), "fresh 0");
    thread::sleep(Duration::from_millis(50));
    assert_eq!(text_of(&server), "fresh 1");
    assert_eq!(server.requests(), 2, "no request was lost or repeated");
    assert_eq!(server.connections(), 2);
}

#[test]
fn an_answer_cut_short_is_a_network_error_and_is_retried() {
    let server = Raw::start(|n| {
        if n == 0 {
            Act::Close(b"HTTP/1.1 200 OK\r\ncontent-length: 500\r\n\r\n{\"choices\":".to_vec())
        } else {
            Act::Keep(ok("second try"))
        }
    });
    assert_eq!(text_of(&server), "second try");
    assert_eq!(server.requests(), 2);
}

#[test]
fn bytes_that_are_not_http_fail_the_call_naming_the_endpoint() {
    let server = Raw::start(|_| Act::Close(b"SSH-2.0-OpenSSH_9.6\r\n\r\n".to_vec()));
    let err = translate(&server.client(), &hi(), &[], None).expect_err("not HTTP");
    assert_eq!(err.code, ErrorCode::ProviderError);
    assert!(
        err.message.contains("/v1/chat/completions")
            && err.message.contains("after 3 attempts")
            && err.message.contains("could not be reached"),
        "{}",
        err.message
    );
    assert_eq!(server.requests(), 3, "network errors are retried twice");
}

#[test]
fn a_conflicting_content_length_fails_the_call() {
    let body = answer_json("two lengths");
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\ncontent-length: 3\r\n\r\n{body}",
        body.len()
    );
    let server = Raw::start(move |_| Act::Close(response.clone().into_bytes()));
    let err = translate(&server.client(), &hi(), &[], None).expect_err("ambiguous framing");
    assert_eq!(err.code, ErrorCode::ProviderError);
}

#[test]
fn endless_chunked_and_unframed_answers_stop_at_64_mib_without_retries() {
    let zeros = vec![b'0'; 1 << 20];
    let mut chunk = b"100000\r\n".to_vec();
    chunk.extend(&zeros);
    chunk.extend(b"\r\n");
    for (head, unit) in [
        (
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
            chunk,
        ),
        (
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n",
            zeros,
        ),
    ] {
        let unit = Arc::new(unit);
        let server = Raw::start(move |_| Act::Endless(head, Arc::clone(&unit)));
        let err = translate(&server.client(), &hi(), &[], None).expect_err("too large");
        assert_eq!(err.code, ErrorCode::ProviderError);
        assert!(err.message.contains("more than 64 MiB"), "{}", err.message);
        assert_eq!(server.requests(), 1, "{head:?}");
    }
}

#[test]
fn a_silent_server_is_bounded_by_timeout_ms() {
    let server = Raw::start(|_| Act::Stall(5_000));
    let mut client = server.client();
    client["timeoutMs"] = json!(300);
    let started = Instant::now();
    let err = translate(&client, &hi(), &[], None).expect_err("times out");
    assert_eq!(err.code, ErrorCode::Timeout);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn cancelling_a_call_blocked_on_a_silent_server_ends_it() {
    let server = Raw::start(|_| Act::Stall(10_000));
    let token = CancelToken::new();
    let trigger = token.clone();
    let client = server.client();
    let call = thread::spawn(move || translate(&client, &hi(), &[], Some(&token)));
    while server.requests() == 0 {
        thread::sleep(Duration::from_millis(5));
    }
    let started = Instant::now();
    trigger.cancel();
    let err = call.join().expect("no panic").expect_err("cancelled");
    assert_eq!(err.code, ErrorCode::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn one_token_cancels_every_call_it_guards() {
    let server = Raw::start(|_| Act::Stall(10_000));
    let token = CancelToken::new();
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let (client, token) = (server.client(), token.clone());
            thread::spawn(move || translate(&client, &hi(), &[], Some(&token)))
        })
        .collect();
    while server.requests() < 4 {
        thread::sleep(Duration::from_millis(5));
    }
    token.cancel();
    for call in calls {
        let err = call.join().expect("no panic").expect_err("cancelled");
        assert_eq!(err.code, ErrorCode::Cancelled);
    }
}

#[test]
fn an_https_endpoint_that_speaks_plain_http_fails_cleanly() {
    let server = Raw::start(|_| Act::Close(ok("plain")));
    let client = json!({"baseUrl": format!("https://127.0.0.1:{}/v1", server.port),
                        "model": "gpt-test", "apiKey": "sk-wire", "retries": 0});
    let err = translate(&client, &hi(), &[], None).expect_err("no TLS there");
    assert_eq!(err.code, ErrorCode::ProviderError);
    assert!(err.message.contains("https://127.0.0.1"), "{}", err.message);
}

#[test]
fn a_pooled_connection_dropped_without_an_answer_is_replaced_once_even_with_no_retries() {
    // The second request arrives on the kept connection and is dropped
    // unanswered, as a server closing an idle connection at that very moment
    // would; the call goes again on a fresh connection.
    let server = Raw::start(|n| match n {
        1 => Act::Close(Vec::new()),
        _ => Act::Keep(ok(&format!("answer {n}"))),
    });
    let mut client = server.client();
    client["retries"] = json!(0);
    for expected in ["answer 0", "answer 2"] {
        let result = translate(&client, &hi(), &[], None).expect("answered");
        assert_eq!(result["text"], expected);
    }
    assert_eq!(server.connections(), 2);
}

#[test]
fn a_fresh_connection_dropped_without_an_answer_is_not_replaced() {
    let server = Raw::start(|_| Act::Close(Vec::new()));
    let mut client = server.client();
    client["retries"] = json!(0);
    let err = translate(&client, &hi(), &[], None).expect_err("no answer");
    assert_eq!(err.code, ErrorCode::ProviderError);
    assert_eq!(server.requests(), 1);
}

#[test]
fn endless_interim_responses_or_chunk_extensions_fail_the_call() {
    for (head, unit) in [
        ("", b"HTTP/1.1 102 Processing\r\n\r\n".to_vec()),
        (
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;",
            vec![b'x'; 64 * 1024],
        ),
    ] {
        let unit = Arc::new(unit);
        let server = Raw::start(move |_| Act::Endless(head, Arc::clone(&unit)));
        let mut client = server.client();
        client["retries"] = json!(0);
        let err = translate(&client, &hi(), &[], None).expect_err("no answer ever comes");
        assert_eq!(err.code, ErrorCode::ProviderError, "{head:?}");
        assert!(
            err.message.contains("could not be reached"),
            "{}",
            err.message
        );
    }
}
