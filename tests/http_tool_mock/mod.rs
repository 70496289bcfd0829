//! A small HTTP/1.1 server on 127.0.0.1 for the HTTP tool tests and bench
//! (the mock of tests/conformance/README.md): it answers canned replies in
//! order (404 once they run out), or every request through one function, and
//! records what it received: method, raw path, raw query, headers, body.
//! Connections are kept alive, so a client's connection pool is exercised.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

/// One canned answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
    pub headers: Vec<(String, String)>,
    pub delay: Duration,
    /// Hang up after answering, without saying so in a header.
    pub hang_up: bool,
    /// Reset the connection (RST) instead of answering.
    pub reset: bool,
}

impl Reply {
    /// A body sent verbatim, with no content-type.
    pub fn text(status: u16, body: &str) -> Reply {
        Reply {
            status,
            body: body.as_bytes().to_vec(),
            headers: Vec::new(),
            delay: Duration::ZERO,
            hang_up: false,
            reset: false,
        }
    }

    /// A JSON body sent compact, with `content-type: application/json`.
    pub fn json(status: u16, body: &serde_json::Value) -> Reply {
        Reply {
            status,
            body: body.to_string().into_bytes(),
            headers: vec![("content-type".into(), "application/json".into())],
            delay: Duration::ZERO,
            hang_up: false,
            reset: false,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn delayed(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }

    pub fn hang_up(mut self) -> Reply {
        self.hang_up = true;
        self
    }

    /// No answer: the request is read, then the connection is reset (RST,
    /// not FIN), as a server does that closes an idle kept-alive
    /// connection just as a request arrives on it.
    pub fn reset() -> Reply {
        Reply {
            reset: true,
            ..Reply::text(0, "")
        }
    }
}

/// What the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// Header names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    /// Every value sent under `name` (case-insensitive).
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The values under `name` joined with ", ", as a server framework shows
    /// a repeated header.
    pub fn header(&self, name: &str) -> Option<String> {
        let values = self.header_values(name);
        (!values.is_empty()).then(|| values.join(", "))
    }
}

type Responder = dyn Fn(&Recorded) -> Reply + Send + Sync;

struct Shared {
    queue: Mutex<VecDeque<Reply>>,
    responder: Option<Box<Responder>>,
    record: bool,
    requests: Mutex<Vec<Recorded>>,
    connections: AtomicUsize,
    stop: AtomicBool,
}

pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl MockServer {
    /// Answers `replies` in order, then 404; records every request.
    pub fn with_replies(replies: Vec<Reply>) -> MockServer {
        MockServer::start(replies.into(), None, true)
    }

    /// Answers every request with `f`; records nothing (for load).
    pub fn with_responder(f: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> MockServer {
        MockServer::start(VecDeque::new(), Some(Box::new(f)), false)
    }

    fn start(
        queue: VecDeque<Reply>,
        responder: Option<Box<Responder>>,
        record: bool,
    ) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            queue: Mutex::new(queue),
            responder,
            record,
            requests: Mutex::new(Vec::new()),
            connections: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
        let accept_shared = Arc::clone(&shared);
        thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                accept_shared.connections.fetch_add(1, Ordering::SeqCst);
                let conn_shared = Arc::clone(&accept_shared);
                thread::spawn(move || serve_connection(stream, &conn_shared));
            }
        });
        MockServer { addr, shared }
    }

    /// `http://127.0.0.1:<port>`
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve_connection(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    // A short read timeout lets an idle kept-alive connection notice that
    // the server was dropped.
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let Some((request, close)) = read_request(&mut reader, shared) else {
            return;
        };
        if shared.record {
            lock(&shared.requests).push(request.clone());
        }
        let reply = match &shared.responder {
            Some(f) => f(&request),
            None => lock(&shared.queue)
                .pop_front()
                .unwrap_or_else(|| Reply::text(404, "not found")),
        };
        if reply.reset {
            let _ = socket2::SockRef::from(&writer).set_linger(Some(Duration::ZERO));
            return;
        }
        if !reply.delay.is_zero() {
            thread::sleep(reply.delay);
        }
        if writer.write_all(&encode_reply(&reply)).is_err() || close || reply.hang_up {
            let _ = writer.shutdown(std::net::Shutdown::Both);
            return;
        }
    }
}

/// Reads one line, riding out read timeouts unless the server is stopping.
/// `None` at end of stream or on stop.
fn read_line(reader: &mut BufReader<TcpStream>, shared: &Shared) -> Option<String> {
    let mut buf = Vec::new();
    loop {
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => return None,
            Ok(_) => {
                return Some(
                    String::from_utf8_lossy(&buf)
                        .trim_end_matches(['\r', '\n'])
                        .to_string(),
                )
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if shared.stop.load(Ordering::SeqCst) {
                    return None;
                }
            }
            Err(_) => return None,
        }
    }
}

fn read_exact(reader: &mut BufReader<TcpStream>, shared: &Shared, n: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; n];
    let mut filled = 0;
    while filled < n {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => return None,
            Ok(k) => filled += k,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if shared.stop.load(Ordering::SeqCst) {
                    return None;
                }
            }
            Err(_) => return None,
        }
    }
    Some(buf)
}

fn read_request(reader: &mut BufReader<TcpStream>, shared: &Shared) -> Option<(Recorded, bool)> {
    let line = read_line(reader, shared)?;
    let mut parts = line.splitn(3, ' ');
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (target, None),
    };
    let mut headers = Vec::new();
    loop {
        let h = read_line(reader, shared)?;
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    let body = if get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        let mut body = Vec::new();
        loop {
            let size_line = read_line(reader, shared)?;
            let size = usize::from_str_radix(size_line.split(';').next()?.trim(), 16).ok()?;
            if size == 0 {
                // trailers, then the blank line
                while !read_line(reader, shared)?.is_empty() {}
                break;
            }
            body.extend(read_exact(reader, shared, size)?);
            read_line(reader, shared)?;
        }
        body
    } else {
        let len = get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        read_exact(reader, shared, len)?
    };
    let close = get("connection").is_some_and(|v| v == "close");
    Some((
        Recorded {
            method,
            path,
            query,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        },
        close,
    ))
}

fn encode_reply(reply: &Reply) -> Vec<u8> {
    let reason = match reply.status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut out = format!(
        "HTTP/1.1 {} {reason}\r\ncontent-length: {}\r\n",
        reply.status,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&reply.body);
    bytes
}
