//! SPEC §8 Streaming over the wire: streamed provider answers of both styles
//! read from a raw SSE server on 127.0.0.1 that writes its answer in pieces
//! (lines, events and tool-call arguments split across reads), framed by
//! chunked coding, by Content-Length or by closing the connection; the text
//! deltas arrive as they are sent and the assembled answer is the one a
//! non-streamed call would have given.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;
use toolnexus::cancel::CancelToken;
use toolnexus::client::stream::send_streamed;
use toolnexus::error::ErrorCode;
use toolnexus::translate::client::{header_map, Call};
use toolnexus::translate::Style;

/// What the server writes for one request: a head, then body pieces, each
/// flushed on its own with a short pause so the client reads them apart.
#[derive(Clone)]
struct Answer {
    head: String,
    pieces: Vec<Vec<u8>>,
    /// Close the connection after the last piece.
    close: bool,
    /// After the pieces, keep writing this until the client hangs up.
    endless: Option<Vec<u8>>,
}

struct Server {
    port: u16,
    connections: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Server {
    fn start(script: impl Fn(usize) -> Answer + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("addr").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(script);
        let (c, r, b) = (
            Arc::clone(&connections),
            Arc::clone(&requests),
            Arc::clone(&bodies),
        );
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                c.fetch_add(1, Ordering::SeqCst);
                let (r, b, script) = (Arc::clone(&r), Arc::clone(&b), Arc::clone(&script));
                thread::spawn(move || serve(stream, &r, &b, &*script));
            }
        });
        Server {
            port,
            connections,
            requests,
            bodies,
        }
    }

    fn call(&self, body: &Value) -> Call {
        let url = format!("http://127.0.0.1:{}/v1/chat/completions", self.port);
        Call {
            target: url::Url::parse(&url).expect("url"),
            url,
            headers: header_map(&[("content-type".into(), "application/json".into())])
                .expect("headers"),
            body: serde_json::to_vec(body).expect("body").into(),
            retries: 2,
            retry_base_ms: 1,
            retryable_statuses: Vec::new(),
            timeout_ms: Some(10_000),
            transport: None,
            secret: None,
        }
    }
}

fn serve(
    stream: TcpStream,
    requests: &AtomicUsize,
    bodies: &Mutex<Vec<Value>>,
    script: &(dyn Fn(usize) -> Answer + Sync),
) {
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
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
            return;
        }
        if let Ok(v) = serde_json::from_slice(&body) {
            bodies.lock().expect("bodies").push(v);
        }
        let answer = script(requests.fetch_add(1, Ordering::SeqCst));
        if out.write_all(answer.head.as_bytes()).is_err() {
            return;
        }
        for piece in &answer.pieces {
            if out.write_all(piece).and_then(|_| out.flush()).is_err() {
                return;
            }
            thread::sleep(Duration::from_millis(2));
        }
        if let Some(unit) = &answer.endless {
            while out.write_all(unit).is_ok() {
                thread::sleep(Duration::from_millis(1));
            }
            return;
        }
        if answer.close {
            return;
        }
    }
}

/// `text` cut into pieces of `n` bytes.
fn cut(text: &str, n: usize) -> Vec<Vec<u8>> {
    text.as_bytes().chunks(n).map(<[u8]>::to_vec).collect()
}

/// The pieces as chunks of the chunked coding, with the last chunk.
fn chunked(pieces: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = pieces
        .into_iter()
        .map(|p| {
            let mut c = format!("{:x}\r\n", p.len()).into_bytes();
            c.extend_from_slice(&p);
            c.extend_from_slice(b"\r\n");
            c
        })
        .collect();
    out.push(b"0\r\n\r\n".to_vec());
    out
}

const SSE_CHUNKED: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

fn openai_stream() -> String {
    let chunks = [
        json!({"id":"c1","model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":"Let "}}]}),
        json!({"id":"c1","choices":[{"index":0,"delta":{"content":"me add."}}]}),
        json!({"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[
            {"index":0,"id":"call_1","type":"function","function":{"name":"add","arguments":"{\"a\": 2"}}]}}]}),
        json!({"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[
            {"index":0,"function":{"arguments":", \"b\": 3}"}}]}}]}),
        json!({"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        json!({"id":"c1","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}),
    ];
    let mut s = String::from(": keep-alive\n\n");
    for c in chunks {
        s.push_str(&format!("data: {c}\r\n\r\n"));
    }
    s.push_str("data: [DONE]\n\n");
    s
}

fn openai_assembled() -> Value {
    json!({"id":"c1","model":"gpt-x","object":"chat.completion",
           "choices":[{"index":0,"message":{"role":"assistant","content":"Let me add.",
                "tool_calls":[{"id":"call_1","type":"function",
                               "function":{"name":"add","arguments":"{\"a\": 2, \"b\": 3}"}}]},
                       "finish_reason":"tool_calls"}],
           "usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}})
}

fn stream_of(
    server: &Server,
    style: Style,
) -> (Result<Value, toolnexus::error::Error>, Vec<String>) {
    let mut texts = Vec::new();
    let call = server.call(&json!({"model":"m","stream":true}));
    let reply = send_streamed(&call, style, None, &mut |t| texts.push(t.to_string()));
    let value = reply.map(|r| serde_json::from_slice(&r.body).expect("assembled JSON"));
    (value, texts)
}

#[test]
fn an_openai_stream_in_small_chunks_assembles_text_tool_call_and_usage() {
    // 5-byte pieces split lines, events and the tool arguments' JSON.
    let server = Server::start(|_| Answer {
        head: SSE_CHUNKED.into(),
        pieces: chunked(cut(&openai_stream(), 5)),
        close: false,
        endless: None,
    });
    let (answer, texts) = stream_of(&server, Style::OpenAi);
    assert_eq!(answer.expect("streamed answer"), openai_assembled());
    assert_eq!(texts, ["Let ", "me add."]);
    // A second stream on the same connection: a chunked stream read to its
    // end leaves it reusable.
    let (answer, _) = stream_of(&server, Style::OpenAi);
    assert_eq!(answer.expect("second answer"), openai_assembled());
    assert_eq!(server.connections(), 1);
    assert_eq!(server.bodies.lock().expect("bodies")[0]["stream"], true);
}

impl Server {
    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

#[test]
fn text_deltas_reach_the_caller_while_the_stream_is_still_open() {
    // The server sends one delta, then waits until the test has seen it
    // before it sends the rest.
    let (seen_tx, seen_rx) = mpsc::channel::<()>();
    let seen_rx = Mutex::new(seen_rx);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        let mut out = stream.try_clone().expect("clone");
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        let mut length = 0;
        while reader.read_line(&mut line).is_ok() && line != "\r\n" {
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            line.clear();
        }
        let mut body = vec![0; length];
        let _ = reader.read_exact(&mut body);
        let first = "data: {\"choices\":[{\"delta\":{\"content\":\"first\"}}]}\n\n";
        let _ = out.write_all(format!("{SSE_CHUNKED}{:x}\r\n{first}\r\n", first.len()).as_bytes());
        let _ = out.flush();
        let waited = seen_rx
            .lock()
            .expect("rx")
            .recv_timeout(Duration::from_secs(5));
        let rest = if waited.is_ok() {
            "second"
        } else {
            "timed-out"
        };
        let last = format!(
            "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{rest}\"}}}}]}}\n\ndata: [DONE]\n\n"
        );
        let _ = out.write_all(format!("{:x}\r\n{last}\r\n0\r\n\r\n", last.len()).as_bytes());
    });
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let call = Call {
        target: url::Url::parse(&url).expect("url"),
        url,
        headers: header_map(&[]).expect("headers"),
        body: b"{}".to_vec().into(),
        retries: 0,
        retry_base_ms: 1,
        retryable_statuses: Vec::new(),
        timeout_ms: Some(10_000),
        transport: None,
        secret: None,
    };
    let mut texts = Vec::new();
    let reply = send_streamed(&call, Style::OpenAi, None, &mut |t| {
        if texts.is_empty() {
            let _ = seen_tx.send(());
        }
        texts.push(t.to_string());
    })
    .expect("stream");
    assert_eq!(texts, ["first", "second"]);
    let answer: Value = serde_json::from_slice(&reply.body).expect("json");
    assert_eq!(answer["choices"][0]["message"]["content"], "firstsecond");
}

fn anthropic_stream() -> String {
    let events = [
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",
               "model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,
               "usage":{"input_tokens":12,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Adding"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"add","input":{}}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" 2, \"b\": 3}"}}),
        json!({"type":"content_block_stop","index":1}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}),
        json!({"type":"message_stop"}),
    ];
    let mut s = String::new();
    for e in events {
        s.push_str(&format!(
            "event: {}\ndata: {e}\n\n",
            e["type"].as_str().unwrap_or("")
        ));
        if e["type"] == "content_block_start" {
            s.push_str("event: ping\ndata: {\"type\": \"ping\"}\n\n");
        }
    }
    s
}

fn anthropic_assembled() -> Value {
    json!({"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
           "content":[{"type":"text","text":"Adding"},
                      {"type":"tool_use","id":"toolu_1","name":"add","input":{"a":2,"b":3}}],
           "stop_reason":"tool_use","stop_sequence":null,
           "usage":{"input_tokens":12,"output_tokens":30}})
}

#[test]
fn an_anthropic_stream_ended_by_closing_the_connection_assembles_a_message() {
    let server = Server::start(|_| Answer {
        head: "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
            .into(),
        pieces: cut(&anthropic_stream(), 3),
        close: true,
        endless: None,
    });
    let (answer, texts) = stream_of(&server, Style::Anthropic);
    assert_eq!(answer.expect("streamed answer"), anthropic_assembled());
    assert_eq!(texts, ["Adding"]);
}

#[test]
fn a_stream_framed_by_content_length_keeps_its_connection() {
    let body = anthropic_stream();
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let server = Server::start(move |_| Answer {
        head: head.clone(),
        pieces: cut(&body, 64),
        close: false,
        endless: None,
    });
    for _ in 0..2 {
        let (answer, _) = stream_of(&server, Style::Anthropic);
        assert_eq!(answer.expect("streamed answer"), anthropic_assembled());
    }
    assert_eq!(server.connections(), 1);
}

#[test]
fn a_429_before_the_stream_is_retried_and_its_body_is_not_streamed() {
    let server = Server::start(|n| {
        if n == 0 {
            let body = "{\"error\":{\"message\":\"slow down\"}}";
            return Answer {
                head: format!(
                    "HTTP/1.1 429 Too Many Requests\r\nretry-after: 0\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                ),
                pieces: vec![],
                close: false,
                endless: None,
            };
        }
        Answer {
            head: SSE_CHUNKED.into(),
            pieces: chunked(cut(&openai_stream(), 40)),
            close: false,
            endless: None,
        }
    });
    let (answer, texts) = stream_of(&server, Style::OpenAi);
    assert_eq!(answer.expect("answer after a retry"), openai_assembled());
    assert_eq!(texts, ["Let ", "me add."]);
    assert_eq!(server.requests(), 2);
}

#[test]
fn a_stream_cut_off_midway_fails_and_is_not_retried() {
    let stream = openai_stream();
    let half = stream.len() / 2;
    let server = Server::start(move |_| {
        // Chunked, but the connection closes before the last chunk.
        let mut pieces = chunked(cut(&stream[..half], 20));
        pieces.pop();
        Answer {
            head: SSE_CHUNKED.into(),
            pieces,
            close: true,
            endless: None,
        }
    });
    let (answer, texts) = stream_of(&server, Style::OpenAi);
    let e = answer.expect_err("a cut-off stream");
    assert_eq!(e.code, ErrorCode::ProviderError);
    assert!(e.message.contains("127.0.0.1"), "{}", e.message);
    assert!(!texts.is_empty(), "the text before the cut was delivered");
    assert_eq!(server.requests(), 1, "what was streamed is not asked again");
}

#[test]
fn an_error_event_in_the_stream_fails_the_call_with_the_providers_words() {
    let server = Server::start(|_| {
        Answer {
        head: SSE_CHUNKED.into(),
        pieces: chunked(vec![
            b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".to_vec(),
        ]),
        close: false,
        endless: None,
    }
    });
    let (answer, _) = stream_of(&server, Style::Anthropic);
    let e = answer.expect_err("an error event");
    assert_eq!(e.code, ErrorCode::ProviderError);
    assert!(e.message.contains("Overloaded"), "{}", e.message);
}

#[test]
fn a_plain_json_answer_to_a_streamed_request_is_read_whole() {
    let body = json!({"choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}).to_string();
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let server = Server::start(move |_| Answer {
        head: head.clone(),
        pieces: cut(&body, 9),
        close: false,
        endless: None,
    });
    let (answer, texts) = stream_of(&server, Style::OpenAi);
    assert_eq!(
        answer.expect("answer")["choices"][0]["message"]["content"],
        "whole"
    );
    assert_eq!(texts, ["whole"]);
}

#[test]
fn cancelling_ends_an_endless_stream() {
    let server = Server::start(|_| Answer {
        head: SSE_CHUNKED.into(),
        pieces: vec![],
        close: false,
        endless: Some(
            chunked(vec![
                b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n".to_vec(),
            ])
            .remove(0),
        ),
    });
    let token = CancelToken::new();
    let call = server.call(&json!({}));
    let mut seen = 0usize;
    let canceller = token.clone();
    let e = send_streamed(&call, Style::OpenAi, Some(&token), &mut |_| {
        seen += 1;
        if seen == 3 {
            canceller.cancel();
        }
    })
    .expect_err("cancelled");
    assert_eq!(e.code, ErrorCode::Cancelled);
    assert!(seen >= 3);
}

/// An endless stream of `unit` events after the head; the call must end
/// with the answer-size cap long before its 10 s timeout.
fn endless_answer_is_refused_at_the_cap(style: Style, unit: Vec<u8>) {
    let server = Server::start(move |_| Answer {
        head: SSE_CHUNKED.into(),
        pieces: vec![],
        close: false,
        endless: Some(chunked(vec![unit.clone()]).remove(0)),
    });
    let call = server.call(&json!({}));
    let started = std::time::Instant::now();
    let e = send_streamed(&call, style, None, &mut |_| {}).expect_err("refused");
    let took = started.elapsed();
    assert_eq!(e.code, ErrorCode::ProviderError, "{}", e.message);
    assert!(e.message.contains("64 MiB"), "{}", e.message);
    assert!(took < Duration::from_secs(9), "took {took:?}");
}

/// One MiB of `x`.
fn mib() -> String {
    "x".repeat(1 << 20)
}

#[test]
fn an_endless_stream_of_text_ends_at_the_answer_cap() {
    let event = json!({"choices":[{"index":0,"delta":{"content": mib()}}]});
    endless_answer_is_refused_at_the_cap(Style::OpenAi, format!("data: {event}\n\n").into_bytes());
}

#[test]
fn an_endless_stream_of_tool_arguments_ends_at_the_answer_cap() {
    let event = json!({"choices":[{"index":0,"delta":{"tool_calls":[
        {"index":0,"function":{"arguments": mib()}}]}}]});
    endless_answer_is_refused_at_the_cap(Style::OpenAi, format!("data: {event}\n\n").into_bytes());
}

#[test]
fn an_endless_anthropic_stream_of_text_or_thinking_ends_at_the_answer_cap() {
    let event = json!({"type":"content_block_delta","index":0,
                       "delta":{"type":"text_delta","text": mib()}});
    endless_answer_is_refused_at_the_cap(
        Style::Anthropic,
        format!("event: content_block_delta\ndata: {event}\n\n").into_bytes(),
    );
    let event = json!({"type":"content_block_delta","index":0,
                       "delta":{"type":"thinking_delta","thinking": mib()}});
    endless_answer_is_refused_at_the_cap(
        Style::Anthropic,
        format!("event: content_block_delta\ndata: {event}\n\n").into_bytes(),
    );
    let event = json!({"type":"content_block_delta","index":3,
                       "delta":{"type":"input_json_delta","partial_json": mib()}});
    endless_answer_is_refused_at_the_cap(
        Style::Anthropic,
        format!("event: content_block_delta\ndata: {event}\n\n").into_bytes(),
    );
}

#[test]
fn an_event_of_a_hundred_thousand_tool_calls_fails_fast_with_the_call_cap() {
    let pieces: Vec<Value> = (0..100_000).map(|i| json!({"index": i})).collect();
    let event = json!({"choices":[{"index":0,"delta":{"tool_calls": pieces}}]});
    let stream = format!("data: {event}\n\ndata: [DONE]\n\n");
    let server = Server::start(move |_| Answer {
        head: SSE_CHUNKED.into(),
        pieces: chunked(cut(&stream, 1 << 16)),
        close: false,
        endless: None,
    });
    let mut call = server.call(&json!({}));
    call.timeout_ms = Some(5_000);
    let started = std::time::Instant::now();
    let e = send_streamed(&call, Style::OpenAi, None, &mut |_| {}).expect_err("refused");
    assert_eq!(e.code, ErrorCode::ProviderError, "{}", e.message);
    assert!(e.message.contains("at most 1024"), "{}", e.message);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );

    // The same many tool_use blocks in the Anthropic style.
    let mut stream = String::new();
    for i in 0..2_000 {
        let start = json!({"type":"content_block_start","index":i,
            "content_block":{"type":"tool_use","id":format!("t{i}"),"name":"n","input":{}}});
        stream.push_str(&format!("event: content_block_start\ndata: {start}\n\n"));
    }
    let server = Server::start(move |_| Answer {
        head: SSE_CHUNKED.into(),
        pieces: chunked(cut(&stream, 1 << 16)),
        close: false,
        endless: None,
    });
    let e = send_streamed(
        &server.call(&json!({})),
        Style::Anthropic,
        None,
        &mut |_| {},
    )
    .expect_err("refused");
    assert_eq!(e.code, ErrorCode::ProviderError, "{}", e.message);
    assert!(e.message.contains("at most 1024"), "{}", e.message);
}

#[test]
fn an_answer_of_exactly_the_call_cap_is_assembled_whole() {
    let pieces: Vec<Value> = (0..1024)
        .map(|i| json!({"index": i, "id": format!("c{i}"), "function": {"name": "f", "arguments": "{}"}}))
        .collect();
    let event = json!({"choices":[{"index":0,"delta":{"tool_calls": pieces}}]});
    let stream = format!("data: {event}\n\ndata: [DONE]\n\n");
    let server = Server::start(move |_| Answer {
        head: SSE_CHUNKED.into(),
        pieces: chunked(cut(&stream, 1 << 16)),
        close: false,
        endless: None,
    });
    let (answer, _) = stream_of(&server, Style::OpenAi);
    let answer = answer.expect("assembled");
    let calls = answer["choices"][0]["message"]["tool_calls"]
        .as_array()
        .expect("calls");
    assert_eq!(calls.len(), 1024);
    assert_eq!(calls[1023]["id"], "c1023");
}

#[test]
fn a_body_that_is_neither_events_nor_json_is_malformed_not_an_empty_answer() {
    for (body, want) in [
        (
            "<html><body>hello from a proxy</body></html>",
            "neither server-sent events nor JSON; the body was: <html><body>hello from a proxy",
        ),
        ("", "answered with an empty body"),
        ("\r\n  \n", "answered with an empty body"),
    ] {
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        let pieces = cut(body, 9);
        let server = Server::start(move |_| Answer {
            head: head.clone(),
            pieces: pieces.clone(),
            close: false,
            endless: None,
        });
        for style in [Style::OpenAi, Style::Anthropic] {
            let (answer, texts) = stream_of(&server, style);
            let e = answer.expect_err("a body with no event is no answer");
            assert!(e.message.contains(want), "{body:?}: {}", e.message);
            assert!(texts.is_empty());
        }
    }
}
