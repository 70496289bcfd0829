//! Test helpers shared by the builtin test binaries: a canned HTTP server on
//! 127.0.0.1 and a file-tree snapshot.
#![allow(dead_code)]

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// One canned answer: status, body bytes, extra headers, delay before it.
#[derive(Clone, Debug)]
pub struct Canned {
    pub status: u16,
    pub body: Vec<u8>,
    pub headers: Vec<(String, String)>,
    pub delay: Duration,
}

impl Canned {
    pub fn new(status: u16, body: &str) -> Canned {
        Canned {
            status,
            body: body.as_bytes().to_vec(),
            headers: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Canned {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn delay_ms(mut self, ms: u64) -> Canned {
        self.delay = Duration::from_millis(ms);
        self
    }

    /// A vector's `serverResponse`: `{status, body | bodyText, headers?, delayMs?}`.
    pub fn from_vector(v: &Value) -> Canned {
        let status = v["status"].as_u64().unwrap_or(200) as u16;
        let mut c = match (v.get("bodyText"), v.get("body")) {
            (Some(Value::String(t)), _) => Canned::new(status, t),
            (_, Some(body)) => {
                Canned::new(status, &body.to_string()).header("content-type", "application/json")
            }
            _ => Canned::new(status, ""),
        };
        if let Some(Value::Object(h)) = v.get("headers") {
            for (k, val) in h {
                c = c.header(k, val.as_str().unwrap_or_default());
            }
        }
        if let Some(ms) = v.get("delayMs").and_then(Value::as_u64) {
            c = c.delay_ms(ms);
        }
        c
    }
}

/// What the server received: method, raw path, raw query, headers, body.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// A server on 127.0.0.1 answering the canned responses in order, then 404.
pub struct MockServer {
    pub base: String,
    pub received: Arc<Mutex<Vec<Received>>>,
}

impl MockServer {
    pub fn start(answers: Vec<Canned>) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let base = format!("http://{}", listener.local_addr().expect("local addr"));
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let queue = Arc::new(Mutex::new(answers.into_iter()));
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, queue) = (Arc::clone(&log), Arc::clone(&queue));
                thread::spawn(move || serve(stream, &log, &queue));
            }
        });
        MockServer { base, received }
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().expect("log").clone()
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Received>>, queue: &Mutex<std::vec::IntoIter<Canned>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let target = parts.next().unwrap_or_default().to_string();
        let mut headers = Vec::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
                if k == "content-length" {
                    length = v.parse().unwrap_or(0);
                }
                headers.push((k, v));
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (target.clone(), None),
        };
        log.lock().expect("log").push(Received {
            method,
            path,
            query,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
        let answer = queue
            .lock()
            .expect("queue")
            .next()
            .unwrap_or_else(|| Canned::new(404, ""));
        thread::sleep(answer.delay);
        let mut head = format!(
            "HTTP/1.1 {} Canned\r\ncontent-length: {}\r\n",
            answer.status,
            answer.body.len()
        );
        for (k, v) in &answer.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut out = stream.try_clone().expect("clone stream");
        if out.write_all(head.as_bytes()).is_err() || out.write_all(&answer.body).is_err() {
            return;
        }
        let _ = out.flush();
    }
}

/// Every regular file under `root`: relative path -> content.
pub fn snapshot(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                let rel = p.strip_prefix(root).expect("under root");
                let content = std::fs::read(&p).unwrap_or_default();
                out.insert(
                    rel.to_string_lossy().into_owned(),
                    String::from_utf8_lossy(&content).into_owned(),
                );
            }
        }
    }
    out
}

/// A snapshot as the JSON object `expectFiles` records.
pub fn snapshot_json(root: &Path) -> Value {
    let m: Map<String, Value> = snapshot(root)
        .into_iter()
        .map(|(k, v)| (k, json!(v)))
        .collect();
    Value::Object(m)
}
