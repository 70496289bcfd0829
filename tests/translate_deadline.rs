//! `timeoutMs` is a deadline for the whole call (issue 14): retries,
//! backoffs and a provider that drips its answer a byte at a time all end
//! at it. Each test runs a raw TCP server on 127.0.0.1 that drips bytes and
//! records whether it got to send its whole answer; none asserts a time.
//! Absurd `retries` / `retryBaseMs` are clamped.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;
use toolnexus::error::ErrorCode;
use toolnexus::translate::client::{backoff_ms, MAX_BACKOFF_MS};
use toolnexus::translate::{translate, ClientConfig, MAX_RETRIES, MAX_RETRY_BASE_MS};

/// A server that answers every request with `answer`, written one byte
/// every `gap_ms` after the first `fast` bytes.
struct Drip {
    port: u16,
    requests: Arc<AtomicUsize>,
    /// Set when a whole answer was written.
    finished: Arc<AtomicBool>,
    /// Set when the server stopped writing (finished or hung up on).
    done: Arc<AtomicBool>,
}

impl Drip {
    fn start(answer: String, fast: usize, gap_ms: u64) -> Drip {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(AtomicUsize::new(0));
        let finished = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let (r, f, d) = (
            Arc::clone(&requests),
            Arc::clone(&finished),
            Arc::clone(&done),
        );
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                r.fetch_add(1, Ordering::SeqCst);
                let all = serve(stream, answer.as_bytes(), fast, gap_ms);
                if all {
                    f.store(true, Ordering::SeqCst);
                }
                d.store(true, Ordering::SeqCst);
            }
        });
        Drip {
            port,
            requests,
            finished,
            done,
        }
    }

    fn client(&self, extra: Value) -> Value {
        let mut c = json!({"baseUrl": format!("http://127.0.0.1:{}/v1", self.port),
                           "model": "gpt-test", "apiKey": "sk-drip"});
        if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
            c.extend(extra.clone());
        }
        c
    }

    /// Waits (bounded) for the server to stop writing, then says whether it
    /// wrote its whole answer.
    fn wrote_everything(&self) -> bool {
        for _ in 0..400 {
            if self.done.load(Ordering::SeqCst) {
                break;
            }
            thread::sleep(Duration::from_millis(50));
        }
        self.finished.load(Ordering::SeqCst)
    }
}

/// Reads one request, then drips `answer`; true when all of it was written.
fn serve(stream: TcpStream, answer: &[u8], fast: usize, gap_ms: u64) -> bool {
    let Ok(mut out) = stream.try_clone() else {
        return false;
    };
    let mut reader = BufReader::new(stream);
    let mut length = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return false;
    }
    let (head, tail) = answer.split_at(fast.min(answer.len()));
    if out.write_all(head).is_err() {
        return false;
    }
    for b in tail {
        thread::sleep(Duration::from_millis(gap_ms));
        if out.write_all(&[*b]).and_then(|_| out.flush()).is_err() {
            return false;
        }
    }
    true
}

fn answer_bytes(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn ok_body() -> String {
    let padding = " ".repeat(200);
    format!(
        r#"{{"choices":[{{"index":0,"finish_reason":"stop","message":{{"role":"assistant","content":"late"}}}}]{padding}}}"#
    )
}

fn hi() -> Value {
    json!({"messages": [{"role": "user", "content": "Hi"}]})
}

// The probe of issue 14: a body dripped one byte every 100 ms would take
// over 20 s; the call ends at its 1,000 ms deadline instead, and the server
// never gets to write the whole answer.
#[test]
fn a_body_dripped_a_byte_at_a_time_ends_at_the_deadline() {
    let answer = answer_bytes(&ok_body());
    let head_len = answer.find("\r\n\r\n").map_or(0, |i| i + 4);
    let server = Drip::start(answer, head_len, 100);
    let e = translate(
        &server.client(json!({"timeoutMs": 1000, "retries": 0})),
        &hi(),
        &[],
        None,
    )
    .expect_err("the deadline passes mid-body");
    assert_eq!(e.code, ErrorCode::Timeout, "{e}");
    assert!(e.message.contains("timeoutMs (1000 ms)"), "{}", e.message);
    assert!(!server.wrote_everything(), "the client read the whole drip");
}

// The same for a response head that never finishes arriving.
#[test]
fn a_head_dripped_a_byte_at_a_time_ends_at_the_deadline() {
    let server = Drip::start(answer_bytes(&ok_body()), 0, 50);
    let e = translate(
        &server.client(json!({"timeoutMs": 500, "retries": 0})),
        &hi(),
        &[],
        None,
    )
    .expect_err("the deadline passes mid-head");
    assert_eq!(e.code, ErrorCode::Timeout, "{e}");
    assert!(!server.wrote_everything(), "the client read the whole drip");
}

// The deadline is the whole call's: a timeout is never retried, however
// many retries are left.
#[test]
fn a_timed_out_attempt_is_not_retried() {
    let server = Drip::start(answer_bytes(&ok_body()), 0, 50);
    let e = translate(
        &server.client(json!({"timeoutMs": 400, "retries": 5, "retryBaseMs": 1})),
        &hi(),
        &[],
        None,
    )
    .expect_err("times out");
    assert_eq!(e.code, ErrorCode::Timeout);
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
}

// A drip that finishes well inside the deadline is read whole: the
// deadline is not a per-read timeout in disguise.
#[test]
fn a_slow_answer_inside_the_deadline_is_read_whole() {
    let answer = answer_bytes(&ok_body());
    let head_len = answer.find("\r\n\r\n").map_or(0, |i| i + 4);
    let fast = answer.len() - 5;
    let server = Drip::start(answer, fast.max(head_len), 20);
    let r = translate(
        &server.client(json!({"timeoutMs": 20000, "retries": 0})),
        &hi(),
        &[],
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r["text"], "late");
    assert!(server.wrote_everything());
}

#[test]
fn absurd_retries_and_retry_base_ms_are_clamped() {
    let c = ClientConfig::from_json(&json!({"baseUrl": "http://127.0.0.1:9/v1", "model": "m",
        "retries": 4_000_000_000_000u64, "retryBaseMs": 1_000_000_000_000u64}))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.retries, MAX_RETRIES);
    assert_eq!(c.retry_base_ms, MAX_RETRY_BASE_MS);
    for attempt in [0, 5, 40, 200] {
        assert!(backoff_ms(MAX_RETRY_BASE_MS, attempt) < MAX_BACKOFF_MS + 100);
    }
}

// With no timeoutMs, a huge `retries` still ends: after MAX_RETRIES extra
// attempts the last failure is reported.
#[test]
fn a_huge_retries_makes_at_most_the_clamped_number_of_attempts() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = Arc::clone(&seen);
            thread::spawn(move || {
                let Ok(mut out) = stream.try_clone() else {
                    return;
                };
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                loop {
                    let mut length = 0usize;
                    loop {
                        line.clear();
                        match reader.read_line(&mut line) {
                            Ok(0) | Err(_) => return,
                            Ok(_) if line == "\r\n" => break,
                            Ok(_) => {
                                if let Some(v) =
                                    line.to_ascii_lowercase().strip_prefix("content-length:")
                                {
                                    length = v.trim().parse().unwrap_or(0);
                                }
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    seen.fetch_add(1, Ordering::SeqCst);
                    let reply = "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbusy";
                    if out.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let client = json!({"baseUrl": format!("http://127.0.0.1:{port}/v1"), "model": "m",
                        "apiKey": "k", "retries": 1_000_000, "retryBaseMs": 0});
    let e = translate(&client, &hi(), &[], None).expect_err("503 every time");
    assert_eq!(e.code, ErrorCode::ProviderError);
    assert_eq!(count.load(Ordering::SeqCst), MAX_RETRIES as usize + 1);
}
