//! A small mock LLM provider on 127.0.0.1 for the translate tests and the
//! benchmark. It answers its canned responses in order, one per request
//! (404 once they run out), keeps connections alive, and records every
//! request it receives.
#![allow(dead_code)]

use serde_json::Value;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// One canned answer.
#[derive(Debug, Clone)]
pub struct Canned {
    pub status: u16,
    pub body: Vec<u8>,
    /// Whether to send `content-type: application/json`.
    pub json: bool,
    pub headers: Vec<(String, String)>,
    pub delay_ms: u64,
    /// Answer this same response to every request instead of once.
    pub repeat: bool,
    /// Close the connection without answering.
    pub hangup: bool,
}

impl Canned {
    /// A JSON answer, sent compact in the value's key order.
    pub fn json(status: u16, body: &Value) -> Canned {
        Canned {
            status,
            body: body.to_string().into_bytes(),
            json: true,
            headers: Vec::new(),
            delay_ms: 0,
            repeat: false,
            hangup: false,
        }
    }

    /// A verbatim text answer with no content type.
    pub fn text(status: u16, body: &str) -> Canned {
        Canned {
            status,
            body: body.as_bytes().to_vec(),
            json: false,
            headers: Vec::new(),
            delay_ms: 0,
            repeat: false,
            hangup: false,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Canned {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn delay(mut self, ms: u64) -> Canned {
        self.delay_ms = ms;
        self
    }

    /// A connection closed without an answer (a network error).
    pub fn hangup() -> Canned {
        let mut c = Canned::text(0, "");
        c.hangup = true;
        c
    }

    pub fn repeating(mut self) -> Canned {
        self.repeat = true;
        self
    }

    /// A vector's `{status, body}` or `{status, bodyText}`, with optional
    /// `headers` and `delayMs`.
    pub fn from_vector(v: &Value) -> Canned {
        let status = v["status"].as_u64().unwrap_or(200) as u16;
        let mut c = match (v.get("body"), v.get("bodyText")) {
            (Some(body), _) => Canned::json(status, body),
            (None, Some(Value::String(t))) => Canned::text(status, t),
            _ => Canned::text(status, ""),
        };
        if let Some(h) = v.get("headers").and_then(Value::as_object) {
            for (k, val) in h {
                c = c.header(k, val.as_str().unwrap_or_default());
            }
        }
        if let Some(ms) = v.get("delayMs").and_then(Value::as_u64) {
            c = c.delay(ms);
        }
        c
    }
}

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// The value of a header by (case-insensitive) name; `None` if absent.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json_body(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

#[derive(Default)]
struct State {
    responses: VecDeque<Canned>,
    requests: Vec<Recorded>,
    /// Answers for paths under `/tool/` (HTTP tools in a run), and what
    /// arrived there; empty unless [`MockProvider::with_tool_responses`].
    tool_responses: VecDeque<Canned>,
    tool_requests: Vec<Recorded>,
    routed: bool,
    /// Whether requests are kept for `requests()` (benchmarks turn it off,
    /// or the log would grow by a request per iteration).
    record: bool,
}

/// The running mock.
pub struct MockProvider {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl MockProvider {
    pub fn start(responses: Vec<Canned>) -> MockProvider {
        MockProvider::start_with(responses, true)
    }

    /// A mock that keeps no log of what it received, for benchmarks.
    pub fn start_unrecorded(responses: Vec<Canned>) -> MockProvider {
        MockProvider::start_with(responses, false)
    }

    fn start_with(responses: Vec<Canned>, record: bool) -> MockProvider {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local addr").port();
        let state = Arc::new(Mutex::new(State {
            responses: responses.into(),
            requests: Vec::new(),
            record,
            ..State::default()
        }));
        let shared = Arc::clone(&state);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let st = Arc::clone(&shared);
                thread::spawn(move || serve(stream, st));
            }
        });
        MockProvider { port, state }
    }

    /// The canned responses of a vector case: `providerResponses`, or the one
    /// `providerResponse`, or none.
    pub fn for_case(case: &Value) -> MockProvider {
        let responses = match (case.get("providerResponses"), case.get("providerResponse")) {
            (Some(Value::Array(list)), _) => list.iter().map(Canned::from_vector).collect(),
            (_, Some(one)) if one.is_object() => vec![Canned::from_vector(one)],
            _ => Vec::new(),
        };
        MockProvider::start(responses)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state
            .lock()
            .map(|s| s.requests.clone())
            .unwrap_or_default()
    }

    /// From now on, requests whose path starts with `/tool/` are answered
    /// from `responses` and kept apart ([`MockProvider::tool_requests`]).
    pub fn with_tool_responses(self, responses: Vec<Canned>) -> Self {
        if let Ok(mut st) = self.state.lock() {
            st.routed = true;
            st.tool_responses = responses.into();
        }
        self
    }

    /// Queues more provider answers (after those given at start).
    pub fn push_responses(&self, responses: Vec<Canned>) {
        if let Ok(mut st) = self.state.lock() {
            st.responses.extend(responses);
        }
    }

    pub fn tool_requests(&self) -> Vec<Recorded> {
        self.state
            .lock()
            .map(|s| s.tool_requests.clone())
            .unwrap_or_default()
    }
}

fn serve(stream: TcpStream, state: Arc<Mutex<State>>) {
    let _ = stream.set_nodelay(true);
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut writer = write_half;
    let mut reader = BufReader::new(stream);
    loop {
        let Some(req) = read_request(&mut reader) else {
            return;
        };
        let canned = {
            let Ok(mut st) = state.lock() else { return };
            if st.routed && req.path.starts_with("/tool/") {
                st.tool_requests.push(req);
                st.tool_responses.pop_front()
            } else {
                if st.record {
                    st.requests.push(req);
                }
                match st.responses.front() {
                    Some(c) if c.repeat => Some(c.clone()),
                    _ => st.responses.pop_front(),
                }
            }
        };
        let canned = canned.unwrap_or_else(|| Canned::text(404, "no more canned responses"));
        if canned.delay_ms > 0 {
            thread::sleep(Duration::from_millis(canned.delay_ms));
        }
        if canned.hangup {
            let _ = writer.shutdown(std::net::Shutdown::Both);
            return;
        }
        let mut head = format!(
            "HTTP/1.1 {} {}\r\ncontent-length: {}\r\n",
            canned.status,
            reason(canned.status),
            canned.body.len()
        );
        if canned.json {
            head.push_str("content-type: application/json\r\n");
        }
        for (k, v) in &canned.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&canned.body);
        if writer.write_all(&out).is_err() || writer.flush().is_err() {
            return;
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end_matches(['\r', '\n']);
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':')?;
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim().to_string();
        if name == "content-length" {
            length = value.parse().ok()?;
        }
        headers.push((name, value));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}
