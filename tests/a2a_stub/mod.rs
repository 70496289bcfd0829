//! A stub A2A agent on loopback (upstream's test agent, rewritten): card
//! `{name: "reviewer", url: <self>/, skills: [review, plan, fail]}`;
//! `SendMessage` answers a `submitted` task `t<N>`; `GetTask` answers
//! `working` once, then the end the message text chose:
//!
//! - `fail` → `failed`, status message "boom";
//! - `slow` → `working` for ever;
//! - `hangsend` / `hangpoll` → the SendMessage / GetTask reply waits 5 s,
//!   then is a 500;
//! - anything else → `completed` with the artifact text `REVIEWED`.
//!
//! Every request is reported on a channel as it arrives (before the reply),
//! so a test can act at a known point without sleeping.

#![allow(dead_code)]

use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the stub saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The JSON-RPC method of a POST (`""` for a GET).
    pub rpc: String,
    pub authorization: Option<String>,
    pub body: Value,
}

#[derive(Default)]
struct Tasks {
    /// task id → (mode, GetTask answers given)
    by_id: HashMap<String, (String, u32)>,
}

pub struct Stub {
    pub base: String,
    seen: Mutex<Receiver<Seen>>,
    log: Arc<Mutex<Vec<Seen>>>,
}

/// What the card says, beyond the defaults.
#[derive(Clone)]
pub enum CardKind {
    Reviewer,
    NotJson,
    NoSkills,
    Status(u16),
    Many(usize),
    /// Skills `re view`, `re.view` and `re_view`: one tool name after
    /// sanitizing.
    Colliding,
}

impl Stub {
    pub fn start() -> Stub {
        Stub::with_card(CardKind::Reviewer)
    }

    pub fn with_card(card: CardKind) -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let (tx, rx) = channel();
        let log = Arc::new(Mutex::new(Vec::new()));
        let tasks = Arc::new(Mutex::new(Tasks::default()));
        let next = Arc::new(AtomicU64::new(1));
        {
            let (base, log) = (base.clone(), Arc::clone(&log));
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    let Ok(conn) = conn else { continue };
                    let (tx, log, tasks, next, base, card) = (
                        tx.clone(),
                        Arc::clone(&log),
                        Arc::clone(&tasks),
                        Arc::clone(&next),
                        base.clone(),
                        card.clone(),
                    );
                    std::thread::spawn(move || {
                        let mut reader = BufReader::new(conn);
                        let Some(mut seen) =
                            serve(&mut reader, &tx, &log, &tasks, &next, &base, &card)
                        else {
                            return;
                        };
                        // The client closes its end once it has read the
                        // whole reply (Connection: close): then report it.
                        let conn = reader.get_ref();
                        let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
                        let mut rest = Vec::new();
                        let _ = reader.read_to_end(&mut rest);
                        seen.rpc = format!("{}:read", seen.rpc);
                        let _ = tx.send(seen);
                    });
                }
            });
        }
        Stub {
            base,
            seen: Mutex::new(rx),
            log,
        }
    }

    pub fn card_url(&self) -> String {
        format!("{}/.well-known/agent-card.json", self.base)
    }

    /// Every request so far.
    pub fn log(&self) -> Vec<Seen> {
        self.log.lock().expect("log").clone()
    }

    pub fn count(&self, rpc: &str) -> usize {
        self.log().iter().filter(|s| s.rpc == rpc).count()
    }

    /// Waits (30 s at most) for the next request with this JSON-RPC method.
    pub fn wait_for(&self, rpc: &str) -> Seen {
        let seen = self.seen.lock().expect("seen");
        loop {
            let s = seen
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no {rpc} request within 30 s"));
            if s.rpc == rpc {
                return s;
            }
        }
    }
}

/// Method, path, headers (lower-case names) and body.
type Request = (String, String, HashMap<String, String>, Vec<u8>);

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut words = line.split_whitespace();
    let method = words.next()?.to_string();
    let path = words.next()?.to_string();
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some((method, path, headers, body))
}

fn respond(conn: &mut TcpStream, status: u16, body: &str) {
    let reason = if status == 200 { "OK" } else { "Error" };
    let _ = write!(
        conn,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.flush();
}

fn task(id: &str, state: &str) -> Value {
    json!({"id": id, "status": {"state": state}})
}

#[allow(clippy::too_many_arguments)]
fn serve(
    reader: &mut BufReader<TcpStream>,
    tx: &Sender<Seen>,
    log: &Mutex<Vec<Seen>>,
    tasks: &Mutex<Tasks>,
    next: &AtomicU64,
    base: &str,
    card: &CardKind,
) -> Option<Seen> {
    let mut writer = reader.get_ref().try_clone().expect("clone");
    let (method, path, headers, body) = read_request(reader)?;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let seen = Seen {
        method: method.clone(),
        path,
        rpc: body
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        authorization: headers.get("authorization").cloned(),
        body: body.clone(),
    };
    log.lock().expect("log").push(seen.clone());
    let _ = tx.send(seen.clone());
    if method == "GET" {
        let skill = |id: &str, d: &str| json!({"id": id, "name": id, "description": d});
        let text = match card {
            CardKind::Reviewer => json!({"name": "reviewer", "url": format!("{base}/"),
                "skills": [skill("review", "Reviews a text"), skill("plan", "Plans work"),
                           skill("fail", "Always fails")]})
            .to_string(),
            CardKind::NotJson => "<html>not a card</html>".into(),
            CardKind::NoSkills => json!({"name": "empty", "url": format!("{base}/")}).to_string(),
            CardKind::Status(s) => {
                respond(&mut writer, *s, "{\"error\":\"no card here\"}");
                return Some(seen);
            }
            CardKind::Colliding => json!({"name": "reviewer", "url": format!("{base}/"),
                "skills": [skill("re view", "first"), skill("re.view", "second"),
                           skill("re_view", "third")]})
            .to_string(),
            CardKind::Many(n) => json!({"name": "many", "url": format!("{base}/"),
                "skills": (0..*n).map(|i| skill(&format!("s{i}"), "d")).collect::<Vec<_>>()})
            .to_string(),
        };
        respond(&mut writer, 200, &text);
        return Some(seen);
    }
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    match seen.rpc.as_str() {
        "SendMessage" => {
            let text = body
                .pointer("/params/message/parts/0/text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if text.contains("hangsend") {
                std::thread::sleep(Duration::from_secs(5));
                respond(&mut writer, 500, "hung");
                return Some(seen);
            }
            let task_id = format!("t{}", next.fetch_add(1, Ordering::SeqCst));
            tasks
                .lock()
                .expect("tasks")
                .by_id
                .insert(task_id.clone(), (text, 0));
            respond(&mut writer, 200, &answer(task(&task_id, "submitted")));
        }
        "GetTask" => {
            let task_id = body
                .pointer("/params/id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let (mode, n) = {
                let mut t = tasks.lock().expect("tasks");
                let Some(entry) = t.by_id.get_mut(&task_id) else {
                    let e = json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32001, "message": format!("Task not found: {task_id}")}});
                    respond(&mut writer, 200, &e.to_string());
                    return Some(seen);
                };
                entry.1 += 1;
                (entry.0.clone(), entry.1)
            };
            if mode.contains("hangpoll") {
                std::thread::sleep(Duration::from_secs(5));
                respond(&mut writer, 500, "hung");
                return Some(seen);
            }
            let result = if n < 2 || mode.contains("slow") {
                task(&task_id, "working")
            } else if mode.contains("fail") {
                json!({"id": task_id, "status": {"state": "failed", "message":
                    {"role": "agent", "parts": [{"kind": "text", "text": "boom"}]}}})
            } else {
                json!({"id": task_id, "status": {"state": "completed"}, "artifacts":
                    [{"artifactId": "a1", "parts": [{"kind": "text", "text": "REVIEWED"}]}]})
            };
            respond(&mut writer, 200, &answer(result));
        }
        other => {
            let e = json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("Method not found: {other}")}});
            respond(&mut writer, 200, &e.to_string());
        }
    }
    Some(seen)
}
