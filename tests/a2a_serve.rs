//! A toolkit served as an A2A agent (SPEC §7B) over real loopback HTTP,
//! fulfilled by an in-process client (a scripted model, no network):
//! the card, the JSON-RPC errors, a round trip from our own outbound A2A
//! tool, a failing run, a suspended run, `contextId` conversations, the
//! `onTask` events, `/mcp` beside it, and a SQLite store across a restart.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolnexus::a2a::{self, OnTask};
use toolnexus::client::{Client, HostFn, RunData};
use toolnexus::mcp_server::{ServeConfig, Server};
use toolnexus::tool::{ExecContext, Source, Tool, ToolResult};
use toolnexus::toolkit::Toolkit;

/// A scripted model: "explode" fails the run, "ask me" calls the `confirm`
/// tool (which suspends), anything else answers `echo: <last user text>`
/// (the number of user messages it saw after a `|`).
fn model() -> HostFn {
    Arc::new(|req: &Value, _: RunData| {
        let messages = req["messages"].as_array().cloned().unwrap_or_default();
        let users: Vec<&str> = messages
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_str())
            .collect();
        let last = users.last().copied().unwrap_or_default();
        if last.contains("explode") {
            return Err("the model exploded".into());
        }
        if last.contains("ask me") && !messages.iter().any(|m| m["role"] == "tool") {
            return Ok(Some(
                json!({"toolCalls": [{"name": "confirm", "arguments": {}}]}),
            ));
        }
        Ok(Some(
            json!({"content": format!("echo: {last}|{}", users.len())}),
        ))
    })
}

fn toolkit() -> Arc<Toolkit> {
    let skills = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills");
    let tk = Toolkit::build_from_json(&json!({"skillsDir": skills}).to_string())
        .unwrap_or_else(|e| panic!("toolkit: {e}"));
    let confirm = |_: &Value, _: &ExecContext| {
        let md = json!({"pending": {"kind": "confirm", "prompt": "Which colour?"}});
        ToolResult::error("waiting").with_metadata(md.as_object().cloned().unwrap_or_default())
    };
    tk.register(Tool::new(
        "confirm",
        "asks the user",
        None,
        Source::Native,
        Arc::new(confirm),
    ));
    Arc::new(tk)
}

struct Served {
    server: Server,
    base: String,
    client: Arc<Client>,
    events: Arc<Mutex<Vec<Value>>>,
}

fn serve_with(a2a_block: Option<Value>) -> Served {
    let mut cfg = json!({"addr": "127.0.0.1:0"});
    if let Some(block) = a2a_block {
        cfg["a2a"] = block;
    }
    serve_config(cfg)
}

/// The agent served with `cfg` as `tn_serve`'s JSON.
fn serve_config(cfg: Value) -> Served {
    serve_model(cfg, model())
}

/// [`serve_config`] with the tasks fulfilled by `model`.
fn serve_model(cfg: Value, model: HostFn) -> Served {
    let tk = toolkit();
    let client = Arc::new(Client::in_process(&json!({"model": "m"}), model).expect("client"));
    let cfg = ServeConfig::from_value(&cfg).expect("serve config");
    let events = Arc::new(Mutex::new(Vec::new()));
    let heard = Arc::clone(&events);
    let on_task: OnTask = Arc::new(move |e: &Value| heard.lock().expect("events").push(e.clone()));
    let runner = a2a::client_runner(Arc::clone(&client), Arc::clone(&tk));
    let server = a2a::serve(tk, &cfg, None, Some(runner), Some(on_task)).expect("serve");
    let base = server
        .url()
        .and_then(|u| u.strip_suffix("/mcp"))
        .expect("url")
        .to_string();
    Served {
        server,
        base,
        client,
        events,
    }
}

fn serve() -> Served {
    serve_with(Some(json!({})))
}

/// One HTTP/1.1 exchange (Connection: close): status and body.
fn http(method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Vec<u8>) {
    let rest = url.strip_prefix("http://").expect("http url");
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let mut s = TcpStream::connect(host).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).expect("write");
    // A peer may answer (413) before reading a large body whole.
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text_end = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&out[..text_end]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let mut body = out[text_end + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (status, body)
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(i) = b.windows(2).position(|w| w == b"\r\n") {
        let n = usize::from_str_radix(String::from_utf8_lossy(&b[..i]).trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.extend_from_slice(&b[i + 2..i + 2 + n]);
        b = &b[i + 4 + n..];
    }
    out
}

fn rpc(base: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (status, out) = http(
        "POST",
        &format!("{base}/"),
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 200);
    serde_json::from_slice(&out).expect("json-rpc answer")
}

fn send(base: &str, text: &str, context: Option<&str>) -> String {
    let mut message = json!({"role": "user", "messageId": "m1",
        "parts": [{"kind": "text", "text": text}]});
    if let Some(c) = context {
        message["contextId"] = json!(c);
    }
    let r = rpc(
        base,
        "SendMessage",
        json!({"message": message, "configuration": {"blocking": false}}),
    );
    assert_eq!(r["result"]["status"]["state"], "submitted", "{r}");
    r["result"]["id"].as_str().expect("task id").to_string()
}

/// Polls GetTask until the task leaves submitted/working (30 s at most).
fn settled(base: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let t = rpc(base, "GetTask", json!({"id": id}))["result"].clone();
        let state = t["status"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if !matches!(state.as_str(), "submitted" | "working") {
            return t;
        }
        assert!(Instant::now() < deadline, "task {id} still {state}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_card_has_upstreams_keys_in_order_and_only_skills() {
    let s = serve();
    let (status, body) = http(
        "GET",
        &format!("{}/.well-known/agent-card.json", s.base),
        &[],
        b"",
    );
    assert_eq!(status, 200);
    let text = String::from_utf8(body).expect("utf-8");
    let card: Value = serde_json::from_str(&text).expect("json");
    let keys: Vec<&str> = card
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "name",
            "description",
            "version",
            "protocolVersion",
            "capabilities",
            "defaultInputModes",
            "defaultOutputModes",
            "skills",
            "url"
        ]
    );
    assert_eq!(card["name"], "toolnexus-agent");
    assert_eq!(card["version"], "0.1.0");
    assert_eq!(card["protocolVersion"], "0.3.0");
    assert_eq!(card["url"], format!("{}/", s.base));
    assert_eq!(
        card["capabilities"],
        json!({"streaming": false, "pushNotifications": false})
    );
    let ids: Vec<&str> = card["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .filter_map(|k| k["id"].as_str())
        .collect();
    assert!(ids.contains(&"hello-world"), "{ids:?}");
    for raw in ["bash", "read", "skill", "confirm"] {
        assert!(!ids.contains(&raw), "{raw} is a tool, not a skill: {ids:?}");
    }
    let hello = &card["skills"][ids.iter().position(|i| *i == "hello-world").unwrap_or(0)];
    assert_eq!(hello["name"], "hello-world");
    assert!(hello["description"]
        .as_str()
        .is_some_and(|d| d.starts_with("Greets someone")));

    let s = serve_with(Some(json!({"name": "helper", "skills": ["release-notes"],
        "provider": {"organization": "Acme", "url": "https://acme.test"}})));
    let (_, body) = http(
        "GET",
        &format!("{}/.well-known/agent-card.json", s.base),
        &[],
        b"",
    );
    let card: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(card["name"], "helper");
    assert_eq!(card["skills"].as_array().map(|a| a.len()), Some(1));
    assert_eq!(card["skills"][0]["id"], "release-notes");
    let last = card.as_object().and_then(|m| m.keys().next_back().cloned());
    assert_eq!(last.as_deref(), Some("provider"));
}

#[test]
fn json_rpc_errors_and_not_found() {
    let s = serve();
    let (status, body) = http("POST", &format!("{}/", s.base), &[], b"{not json");
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).expect("json"),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}})
    );
    assert_eq!(
        rpc(&s.base, "GetTask", json!({"id": "nope"}))["error"],
        json!({"code": -32001, "message": "Task not found: nope"})
    );
    assert_eq!(
        rpc(&s.base, "tasks/resubscribe", json!({}))["error"],
        json!({"code": -32601, "message": "Method not found: tasks/resubscribe"})
    );
    let (status, body) = http("GET", &format!("{}/elsewhere", s.base), &[], b"");
    assert_eq!((status, body.as_slice()), (404, &b"not found"[..]));
    // Without an a2a block there are no A2A routes at all.
    let plain = serve_with(None);
    let (status, _) = http(
        "GET",
        &format!("{}/.well-known/agent-card.json", plain.base),
        &[],
        b"",
    );
    assert_eq!(status, 404);
}

#[test]
fn mcp_is_still_answered_beside_the_agent() {
    let s = serve();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let (status, out) = http(
        "POST",
        &format!("{}/mcp", s.base),
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&out));
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("\"confirm\"") && text.contains("\"bash\""),
        "{text}"
    );
}

#[test]
fn a_task_is_fulfilled_through_the_client_and_heard_once() {
    let s = serve();
    let id = send(&s.base, "hello there", None);
    let t = settled(&s.base, &id);
    assert_eq!(t["status"]["state"], "completed", "{t}");
    assert_eq!(t["id"], id.as_str());
    assert_eq!(
        t["artifacts"][0]["parts"],
        json!([{"kind": "text", "text": "echo: hello there|1"}])
    );
    assert!(t["artifacts"][0]["artifactId"].is_string());
    let deadline = Instant::now() + Duration::from_secs(30);
    while s.events.lock().expect("events").is_empty() {
        assert!(Instant::now() < deadline, "onTask never heard");
        std::thread::sleep(Duration::from_millis(5));
    }
    let events = s.events.lock().expect("events").clone();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["id"], id.as_str());
    assert_eq!(events[0]["state"], "completed");
    assert_eq!(events[0]["result"]["text"], "echo: hello there|1");
}

#[test]
fn a_failing_run_is_a_failed_task_and_the_server_keeps_serving() {
    let s = serve();
    let bad = send(&s.base, "please explode", None);
    let t = settled(&s.base, &bad);
    assert_eq!(t["status"]["state"], "failed", "{t}");
    assert_eq!(t["status"]["message"]["role"], "agent");
    let why = t["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("the model exploded"), "{why}");
    let good = send(&s.base, "still there?", None);
    assert_eq!(settled(&s.base, &good)["status"]["state"], "completed");
}

#[test]
fn a_suspended_run_is_input_required_with_the_prompt() {
    let s = serve();
    let id = send(&s.base, "ask me something", None);
    let t = settled(&s.base, &id);
    assert_eq!(
        t,
        json!({"id": id, "status": {"state": "input-required", "message":
            {"role": "agent", "parts": [{"kind": "text", "text": "Which colour?"}]}}})
    );
}

#[test]
fn a_context_id_is_one_remembered_conversation() {
    let s = serve();
    // The submitted task echoes the contextId.
    let r = rpc(
        &s.base,
        "SendMessage",
        json!({"message": {"role": "user", "messageId": "m",
        "contextId": "ctx-7", "parts": [{"kind": "text", "text": "one"}]}}),
    );
    assert_eq!(r["result"]["contextId"], "ctx-7", "{r}");
    let first = r["result"]["id"].as_str().expect("id").to_string();
    assert_eq!(
        settled(&s.base, &first)["artifacts"][0]["parts"][0]["text"],
        "echo: one|1"
    );
    let second = send(&s.base, "two", Some("ctx-7"));
    assert_eq!(
        settled(&s.base, &second)["artifacts"][0]["parts"][0]["text"],
        "echo: two|2"
    );
    let other = send(&s.base, "three", Some("ctx-8"));
    assert_eq!(
        settled(&s.base, &other)["artifacts"][0]["parts"][0]["text"],
        "echo: three|1"
    );
    let kept = s
        .client
        .conversation("ctx-7")
        .expect("store")
        .expect("saved");
    assert!(kept.len() >= 4, "{kept:?}");
}

#[test]
fn our_outbound_agent_tool_talks_to_our_served_agent() {
    let s = serve();
    let card = format!("{}/.well-known/agent-card.json", s.base);
    let caller = Toolkit::build_from_json(
        &json!({"builtins": false, "agents": {"local": {"card": card, "pollEvery": 10}}})
            .to_string(),
    )
    .expect("caller toolkit");
    assert!(
        caller
            .tool_names()
            .contains(&"toolnexus-agent_hello-world".to_string()),
        "{:?}",
        caller.tool_names()
    );
    let r = caller.execute(
        "toolnexus-agent_hello-world",
        json!({"task": "hi from afar"}),
        &ExecContext::default(),
    );
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.output, "echo: hi from afar|1");
    let md = r.metadata.expect("metadata");
    assert_eq!(md["agent"], "toolnexus-agent");
    assert_eq!(md["state"], "completed");
    // A failing run reaches the caller as the failed task's message.
    let r = caller.execute(
        "toolnexus-agent_hello-world",
        json!({"task": "explode"}),
        &ExecContext::default(),
    );
    assert!(r.is_error);
    assert!(
        r.output.contains(" failed: ") && r.output.contains("the model exploded"),
        "{}",
        r.output
    );
}

#[test]
fn a_sqlite_store_keeps_tasks_across_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = format!("sqlite:{}", dir.path().join("tasks.db").display());
    let s = serve_with(Some(json!({"store": store})));
    let id = send(&s.base, "remember me", None);
    assert_eq!(settled(&s.base, &id)["status"]["state"], "completed");
    let first = send(&s.base, "one", Some("kept-ctx"));
    assert_eq!(
        settled(&s.base, &first)["artifacts"][0]["parts"][0]["text"],
        "echo: one|1"
    );
    s.server.stop();
    drop(s);
    // A new server (a new client, with an empty memory of its own) on the
    // same database: the task is there, and so is the conversation.
    let again = serve_with(Some(json!({"store": store})));
    let t = rpc(&again.base, "GetTask", json!({"id": id}))["result"].clone();
    assert_eq!(t["status"]["state"], "completed", "{t}");
    assert_eq!(t["artifacts"][0]["parts"][0]["text"], "echo: remember me|1");
    let second = send(&again.base, "two", Some("kept-ctx"));
    assert_eq!(
        settled(&again.base, &second)["artifacts"][0]["parts"][0]["text"],
        "echo: two|2"
    );
}

#[test]
fn an_unknown_store_and_a_missing_client_are_refused() {
    let tk = toolkit();
    let cfg =
        ServeConfig::from_value(&json!({"addr": "127.0.0.1:0", "a2a": {"store": "redis://x"}}))
            .expect("config");
    let client = Arc::new(Client::in_process(&json!({"model": "m"}), model()).expect("client"));
    let runner = a2a::client_runner(client, Arc::clone(&tk));
    let e = a2a::serve(Arc::clone(&tk), &cfg, None, Some(runner), None)
        .err()
        .expect("refused");
    assert_eq!(
        e.message,
        "unknown A2A store: \"redis://x\" (expected \"memory\" or \"file:<dir>\")"
    );
    let e = a2a::serve(tk, &cfg, None, None, None)
        .err()
        .expect("refused");
    assert!(e.message.contains("needs a client"), "{}", e.message);
}

#[test]
fn many_unknown_ids_and_a_large_garbage_body_leave_the_server_serving() {
    let s = serve();
    for i in 0..10_000 {
        let r = rpc(&s.base, "GetTask", json!({"id": format!("missing-{i}")}));
        assert_eq!(r["error"]["code"], -32001);
    }
    let garbage = vec![b'x'; 50 << 20];
    let (status, body) = http("POST", &format!("{}/", s.base), &[], &garbage);
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).expect("json")["error"]["code"],
        -32700
    );
    let id = send(&s.base, "after all that", None);
    assert_eq!(settled(&s.base, &id)["status"]["state"], "completed");
}

#[test]
fn the_0_3_and_1_0_wires_on_the_same_endpoint() {
    let s = serve();
    // 0.3: message/send and tasks/get, tasks with kind and a contextId.
    let r = rpc(
        &s.base,
        "message/send",
        json!({"message": {"role": "user", "messageId": "m",
        "kind": "message", "parts": [{"kind": "text", "text": "zero three"}]}}),
    );
    let t = &r["result"];
    assert_eq!(t["kind"], "task", "{r}");
    assert_eq!(t["status"]["state"], "submitted");
    assert!(t["contextId"].is_string());
    let id = t["id"].as_str().expect("id").to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let t = rpc(&s.base, "tasks/get", json!({"id": id}))["result"].clone();
        if t["status"]["state"] == "completed" {
            break t;
        }
        assert!(Instant::now() < deadline, "{t}");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(done["kind"], "task");
    assert_eq!(
        done["artifacts"][0]["parts"],
        json!([{"kind": "text", "text": "echo: zero three|1"}])
    );

    // 1.0: the same method names as upstream, told apart by the header.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message":
        {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "one oh"}]}}});
    let (status, out) = http(
        "POST",
        &format!("{}/", s.base),
        &[("Content-Type", "application/json"), ("A2A-Version", "1.0")],
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 200);
    let r: Value = serde_json::from_slice(&out).expect("json");
    let t = &r["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_SUBMITTED", "{r}");
    let id = t["id"].as_str().expect("id").to_string();
    let get = json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": id}});
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let (_, out) = http(
            "POST",
            &format!("{}/", s.base),
            &[("A2A-Version", "1.0")],
            get.to_string().as_bytes(),
        );
        let t: Value = serde_json::from_slice(&out).expect("json");
        if t["result"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            break t["result"].clone();
        }
        assert!(Instant::now() < deadline, "{t}");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(
        done["artifacts"][0]["parts"],
        json!([{"text": "echo: one oh|1"}])
    );
}

#[test]
fn our_outbound_tool_speaks_0_3_when_told_and_1_0_when_the_card_says() {
    let s = serve();
    let card = format!("{}/.well-known/agent-card.json", s.base);
    let caller = Toolkit::build_from_json(
        &json!({"builtins": false, "agents": {"local": {"card": card, "pollEvery": 10, "protocol": "0.3"}}})
            .to_string(),
    )
    .expect("caller toolkit");
    let r = caller.execute(
        "toolnexus-agent_hello-world",
        json!({"task": "via 0.3"}),
        &ExecContext::default(),
    );
    assert_eq!(r.output, "echo: via 0.3|1", "{r:?}");

    let one = serve_with(Some(json!({"name": "one", "protocol": "1.0"})));
    let card = format!("{}/.well-known/agent-card.json", one.base);
    let caller = Toolkit::build_from_json(
        &json!({"builtins": false, "agents": {"one": {"card": card, "pollEvery": 10}}}).to_string(),
    )
    .expect("caller toolkit");
    let r = caller.execute(
        "one_hello-world",
        json!({"task": "via 1.0"}),
        &ExecContext::default(),
    );
    assert_eq!(r.output, "echo: via 1.0|1", "{r:?}");
    assert_eq!(
        r.metadata.as_ref().map(|m| m["state"].clone()),
        Some(json!("completed"))
    );
    let r = caller.execute(
        "one_hello-world",
        json!({"task": "explode"}),
        &ExecContext::default(),
    );
    assert!(
        r.is_error && r.output.contains(" failed: ") && r.output.contains("exploded"),
        "{r:?}"
    );
}

/// A provider that answers every chat completion with one text.
fn tiny_provider(text: &'static str) -> String {
    held_provider(text, Arc::new(std::sync::atomic::AtomicBool::new(true)))
}

/// [`tiny_provider`] that holds a request whose body says "hold" until
/// `open` is set (60 s at most).
fn held_provider(text: &'static str, open: Arc<std::sync::atomic::AtomicBool>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let open = Arc::clone(&open);
            std::thread::spawn(move || {
                use std::io::BufRead;
                let mut reader = std::io::BufReader::new(conn.try_clone().expect("clone"));
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                let deadline = Instant::now() + Duration::from_secs(60);
                while String::from_utf8_lossy(&body).contains("hold")
                    && !open.load(std::sync::atomic::Ordering::SeqCst)
                    && Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                let answer = json!({"id": "c1", "object": "chat.completion", "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
                .to_string();
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            });
        }
    });
    base
}

#[test]
fn toolnexus_serve_http_with_a2a_and_a_client() {
    use std::io::BufRead;
    let provider = tiny_provider("from the command");
    let client = json!({"baseUrl": provider, "model": "m"}).to_string();
    let skills = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolnexus"))
        .args(["serve", "--http", "127.0.0.1:0", "--skills", skills])
        .args(["--a2a", r#"{"name":"cli-agent"}"#, "--client", &client])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("toolnexus serve");
    let mut line = String::new();
    let _ = std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line);
    let base = line.trim().strip_suffix("/mcp").map(String::from);
    let outcome = std::panic::catch_unwind(|| {
        let base = base.expect("the served URL on stdout");
        let (_, body) = http(
            "GET",
            &format!("{base}/.well-known/agent-card.json"),
            &[],
            b"",
        );
        let card: Value = serde_json::from_slice(&body).expect("card");
        assert_eq!(card["name"], "cli-agent");
        let id = send(&base, "hi", None);
        let t = settled(&base, &id);
        assert_eq!(
            t["artifacts"][0]["parts"][0]["text"], "from the command",
            "{t}"
        );
    });
    let _ = child.kill();
    let _ = child.wait();
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
}

#[test]
fn two_servers_on_one_postgres_answer_each_others_tasks() {
    let Some((url, _)) = postgres("two servers on one postgres") else {
        return;
    };
    let a = serve_with(Some(json!({"store": url})));
    let b = serve_with(Some(json!({"store": url})));
    // A context of this run only: the database outlives the test.
    let ctx = format!("pg-{}", uuid::Uuid::new_v4());
    let id = send(&a.base, "shared", Some(&ctx));
    let t = settled(&b.base, &id);
    assert_eq!(
        t["artifacts"][0]["parts"][0]["text"], "echo: shared|1",
        "{t}"
    );
    // A ends; B still answers, and continues the conversation A began.
    a.server.stop();
    drop(a);
    assert_eq!(
        rpc(&b.base, "GetTask", json!({"id": id}))["result"]["status"]["state"],
        "completed"
    );
    let next = send(&b.base, "again", Some(&ctx));
    assert_eq!(
        settled(&b.base, &next)["artifacts"][0]["parts"][0]["text"],
        "echo: again|2"
    );
}

/// The JSON-RPC answers of a server-sent event stream, read with the
/// crate's one SSE reader.
fn sse_answers(body: &[u8]) -> Vec<Value> {
    let mut parser = toolnexus::provider::sse::SseParser::new();
    let mut out = Vec::new();
    let mut on = |_: &str, data: &str| {
        out.push(serde_json::from_str::<Value>(data).expect("a JSON event"));
        Ok(())
    };
    parser.feed(body, &mut on).expect("sse");
    parser.finish(&mut on).expect("sse end");
    out
}

#[test]
fn a_streamed_send_is_server_sent_events_on_every_wire() {
    let s = serve();
    let message = json!({"role": "user", "messageId": "m",
        "parts": [{"kind": "text", "text": "stream me"}]});
    for (method, headers) in [
        ("SendStreamingMessage", vec![]),
        ("message/stream", vec![]),
        ("SendStreamingMessage", vec![("A2A-Version", "1.0")]),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": 5, "method": method,
            "params": {"message": message}});
        let mut h = vec![("Content-Type", "application/json")];
        h.extend(headers.iter().copied());
        let (status, out) = http(
            "POST",
            &format!("{}/", s.base),
            &h,
            body.to_string().as_bytes(),
        );
        assert_eq!(status, 200);
        let answers = sse_answers(&out);
        assert!(answers.iter().all(|a| a["id"] == 5), "{answers:?}");
        let results: Vec<&Value> = answers.iter().map(|a| &a["result"]).collect();
        assert_eq!(results.len(), 4, "{method} {headers:?}: {results:?}");
        let v10 = !headers.is_empty();
        let (task, working, artifact, last) = (results[0], results[1], results[2], results[3]);
        if v10 {
            assert_eq!(task["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
            let id = &task["task"]["id"];
            assert_eq!(working["statusUpdate"]["taskId"], *id);
            assert_eq!(
                working["statusUpdate"]["status"]["state"],
                "TASK_STATE_WORKING"
            );
            assert_eq!(
                artifact["artifactUpdate"]["artifact"]["parts"],
                json!([{"text": "echo: stream me|1"}])
            );
            assert_eq!(
                last["statusUpdate"]["status"]["state"],
                "TASK_STATE_COMPLETED"
            );
            let got = rpc_v10(&s.base, "GetTask", json!({"id": id}));
            assert_eq!(
                got["result"]["artifacts"][0]["artifactId"],
                artifact["artifactUpdate"]["artifact"]["artifactId"]
            );
        } else {
            assert_eq!(task["status"]["state"], "submitted");
            assert_eq!(working["kind"], "status-update");
            assert_eq!(working["status"]["state"], "working");
            assert_eq!(working["final"], false);
            assert_eq!(artifact["kind"], "artifact-update");
            assert_eq!(
                artifact["artifact"]["parts"],
                json!([{"kind": "text", "text": "echo: stream me|1"}])
            );
            assert_eq!(last["status"]["state"], "completed");
            assert_eq!(last["final"], true);
            assert_eq!(last["taskId"], task["id"]);
        }
    }
    // A suspended run streams its prompt as the last event.
    let body = json!({"jsonrpc": "2.0", "id": 6, "method": "message/stream",
        "params": {"message": {"parts": [{"kind": "text", "text": "ask me"}]}}});
    let (_, out) = http(
        "POST",
        &format!("{}/", s.base),
        &[],
        body.to_string().as_bytes(),
    );
    let answers = sse_answers(&out);
    let texts: Vec<Value> = answers
        .iter()
        .map(|a| a["result"]["status"]["message"]["parts"][0]["text"].clone())
        .collect();
    assert_eq!(
        texts,
        [
            Value::Null,
            Value::Null,
            json!("calling confirm"),
            json!("confirm failed"),
            json!("Which colour?")
        ],
        "{answers:?}"
    );
    let last = &answers[4]["result"];
    assert_eq!(last["status"]["state"], "input-required");
    assert_eq!(last["final"], true);
}

#[test]
fn a_streaming_peer_that_goes_away_leaves_the_task_running() {
    let s = serve();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/stream",
        "params": {"message": {"parts": [{"kind": "text", "text": "left alone"}]}}})
    .to_string();
    let host = s.base.strip_prefix("http://").expect("host");
    let mut conn = TcpStream::connect(host).expect("connect");
    let head = format!(
        "POST / HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).expect("write");
    conn.write_all(body.as_bytes()).expect("write");
    // Read up to the first event (its id), then hang up.
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let id = loop {
        let n = conn.read(&mut buf).expect("read");
        assert!(n > 0, "{}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some(i) = text.find("\"id\":\"") {
            let rest = &text[i + 6..];
            if let Some(end) = rest.find('"') {
                break rest[..end].to_string();
            }
        }
    };
    drop(conn);
    let t = settled(&s.base, &id);
    assert_eq!(t["artifacts"][0]["parts"][0]["text"], "echo: left alone|1");
}

fn rpc_v10(base: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (status, out) = http(
        "POST",
        &format!("{base}/"),
        &[("Content-Type", "application/json"), ("A2A-Version", "1.0")],
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 200);
    serde_json::from_slice(&out).expect("json-rpc answer")
}

/// `toolnexus serve --http 127.0.0.1:0` with an `--a2a` block and a client
/// of `provider`: the child (its stderr piped) and its base URL.
fn spawn_serve(a2a_block: &Value, provider: &str) -> (std::process::Child, Option<String>) {
    use std::io::BufRead;
    let client = json!({"baseUrl": provider, "model": "m"}).to_string();
    let skills = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolnexus"))
        .args(["serve", "--http", "127.0.0.1:0", "--skills", skills])
        .args(["--a2a", &a2a_block.to_string(), "--client", &client])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("toolnexus serve");
    let mut line = String::new();
    let _ = std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line);
    let base = line.trim().strip_suffix("/mcp").map(String::from);
    (child, base)
}

/// Kills the child when dropped (a test that fails leaves no server).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_unreachable_postgres_stops_toolnexus_serve_with_a_clear_error() {
    let provider = tiny_provider("unused");
    let store = "postgres://nobody:hunter2@127.0.0.1:1/none";
    let (mut child, base) = spawn_serve(&json!({"store": store}), &provider);
    assert_eq!(base, None, "it served without its store");
    let status = child.wait().expect("wait");
    let mut err = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err);
    assert!(!status.success(), "{err}");
    assert!(err.contains("cannot connect"), "{err}");
    assert!(err.contains("127.0.0.1:1"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn two_toolnexus_serve_processes_share_one_postgres_and_outlive_each_other() {
    let Some((url, _)) = postgres("two serve processes on one postgres") else {
        return;
    };
    let open = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let provider = held_provider("from postgres", Arc::clone(&open));
    let (a, a_base) = spawn_serve(&json!({"store": url}), &provider);
    let a = Killed(a);
    let (b, b_base) = spawn_serve(&json!({"store": url}), &provider);
    let _b = Killed(b);
    let (a_base, b_base) = (a_base.expect("A serves"), b_base.expect("B serves"));
    // A task created through A is read through B.
    let id = send(&a_base, "plain", None);
    let t = settled(&b_base, &id);
    assert_eq!(
        t["artifacts"][0]["parts"][0]["text"], "from postgres",
        "{t}"
    );
    // A dies mid-task: B still answers for the task A acknowledged.
    let held = send(&a_base, "hold this", None);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let t = rpc(&b_base, "GetTask", json!({"id": held}))["result"].clone();
        if t["status"]["state"] == "working" {
            break;
        }
        assert!(Instant::now() < deadline, "{t}");
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(a);
    let t = rpc(&b_base, "GetTask", json!({"id": held}));
    assert_eq!(t["result"]["status"]["state"], "working", "{t}");
    // B can cancel the orphan; the earlier task is still there too.
    let c = rpc(&b_base, "tasks/cancel", json!({"id": held}));
    assert_eq!(c["result"]["status"]["state"], "canceled", "{c}");
    let t = rpc(&b_base, "GetTask", json!({"id": id}));
    assert_eq!(t["result"]["status"]["state"], "completed", "{t}");
    open.store(true, std::sync::atomic::Ordering::SeqCst);
}

#[test]
fn a_50_mb_json_rpc_send_is_taken_whole_and_one_past_the_cap_is_413() {
    let s = serve();
    let text = "y".repeat(50 << 20);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"parts": [{"kind": "text", "text": text}]}}})
    .to_string();
    drop(text);
    let (status, out) = http(
        "POST",
        &format!("{}/", s.base),
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    drop(body);
    assert_eq!(status, 200);
    let r: Value = serde_json::from_slice(&out).expect("json");
    let id = r["result"]["id"].as_str().expect("a task").to_string();
    let t = settled(&s.base, &id);
    let answer = t["artifacts"][0]["parts"][0]["text"].as_str().unwrap_or("");
    // The model echoed the whole text: nothing was cut.
    assert_eq!(answer.len(), "echo: ".len() + (50 << 20) + "|1".len());
    drop(t);
    // One byte past the served cap: refused before it is read whole.
    let over = vec![b' '; toolnexus::limits::SERVED_REQUEST_BYTES + 1];
    let (status, _) = http("POST", &format!("{}/", s.base), &[], &over);
    assert_eq!(status, 413);
    let id = send(&s.base, "still here", None);
    assert_eq!(settled(&s.base, &id)["status"]["state"], "completed");
}

#[test]
fn a_host_s_max_request_bytes_caps_the_a2a_routes_too() {
    let s = serve_config(json!({"addr": "127.0.0.1:0", "a2a": {}, "maxRequestBytes": 4096}));
    let text = "y".repeat(5000);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"parts": [{"kind": "text", "text": text}]}}})
    .to_string();
    let (status, out) = http(
        "POST",
        &format!("{}/", s.base),
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&out));
    // Within the cap: served as ever.
    let id = send(&s.base, "small", None);
    assert_eq!(settled(&s.base, &id)["status"]["state"], "completed");
}

#[test]
fn many_concurrent_sends_are_all_taken_up_to_the_caps_and_refused_beyond() {
    use toolnexus::limits::{SERVED_TASKS, SERVED_TASKS_QUEUED};
    // A model that holds every run until released.
    let open = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let gate = Arc::clone(&open);
    let model: HostFn = Arc::new(move |_: &Value, _: RunData| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !gate.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(Some(json!({"content": "held"})))
    });
    let tk = toolkit();
    let client = Arc::new(Client::in_process(&json!({"model": "m"}), model).expect("client"));
    let cfg = ServeConfig::from_value(&json!({"addr": "127.0.0.1:0", "a2a": {}})).expect("cfg");
    let runner = a2a::client_runner(client, Arc::clone(&tk));
    let server = a2a::serve(tk, &cfg, None, Some(runner), None).expect("serve");
    let base = server
        .url()
        .and_then(|u| u.strip_suffix("/mcp"))
        .expect("url")
        .to_string();
    // Eight peers at once fill every slot and every place in the queue.
    let taken = SERVED_TASKS + SERVED_TASKS_QUEUED;
    let peers: Vec<_> = (0..8)
        .map(|p| {
            let base = base.clone();
            std::thread::spawn(move || {
                (0..taken)
                    .filter(|i| i % 8 == p)
                    .map(|_| {
                        rpc(
                            &base,
                            "message/send",
                            json!({"message": {"parts": [
                            {"kind": "text", "text": "x"}]}}),
                        )["result"]["id"]
                            .as_str()
                            .expect("taken")
                            .to_string()
                    })
                    .collect::<Vec<String>>()
            })
        })
        .collect();
    let ids: Vec<String> = peers
        .into_iter()
        .flat_map(|p| p.join().expect("peer"))
        .collect();
    assert_eq!(ids.len(), taken);
    // One more is refused, with a JSON-RPC error, and nothing is stored.
    let refused = rpc(&base, "message/send", json!({"message": {"parts": []}}));
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    // GetTask and cancel still answer while every slot is taken.
    let last = ids.last().expect("an id");
    let c = rpc(&base, "tasks/cancel", json!({"id": last}));
    assert_eq!(c["result"]["status"]["state"], "canceled", "{c}");
    open.store(true, std::sync::atomic::Ordering::SeqCst);
    for id in &ids[..ids.len() - 1] {
        let t = settled(&base, id);
        assert_eq!(t["status"]["state"], "completed", "{t}");
    }
    assert_eq!(settled(&base, last)["status"]["state"], "canceled");
    // Room again once they ended.
    let r = rpc(&base, "message/send", json!({"message": {"parts": []}}));
    assert_eq!(r["result"]["status"]["state"], "submitted", "{r}");
}

/// The PostgreSQL server the tests talk to (`TN_TEST_POSTGRES`, else the
/// local default) as (URL, host:port), or `None`, said plainly, when none
/// is there.
fn postgres(test: &str) -> Option<(String, String)> {
    let url = std::env::var("TN_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let hostport = url
        .split('@')
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or("127.0.0.1:5432")
        .to_string();
    if TcpStream::connect(&hostport).is_err() {
        eprintln!("{test}: SKIPPED, no server at {hostport} (set TN_TEST_POSTGRES)");
        return None;
    }
    Some((url, hostport))
}

/// A TCP proxy the test controls between a server and PostgreSQL: `cut`
/// closes every connection through it and refuses new ones (they are
/// accepted and closed at once), `restore` lets them through again.
struct Proxy {
    port: u16,
    cut: Arc<std::sync::atomic::AtomicBool>,
    live: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(upstream: String) -> Proxy {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("addr").port();
        let cut = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let live: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (is_cut, conns) = (Arc::clone(&cut), Arc::clone(&live));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if is_cut.load(Ordering::SeqCst) {
                    let _ = client.shutdown(std::net::Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let mut kept = conns.lock().expect("conns");
                for s in [&client, &server] {
                    if let Ok(c) = s.try_clone() {
                        kept.push(c);
                    }
                }
                drop(kept);
                for (mut from, mut to) in [
                    (client.try_clone(), server.try_clone()),
                    (server.try_clone(), client.try_clone()),
                ]
                .into_iter()
                .filter_map(|(a, b)| Some((a.ok()?, b.ok()?)))
                {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                        let _ = from.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Proxy { port, cut, live }
    }

    fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
        for s in self.live.lock().expect("conns").drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.cut.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn a_postgres_lost_mid_run_is_a_clear_error_and_no_acknowledged_task_is_lost() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let Some((url, hostport)) = postgres("postgres lost mid-run") else {
        return;
    };
    let proxy = Proxy::start(hostport.clone());
    let via = url.replacen(&hostport, &format!("127.0.0.1:{}", proxy.port), 1);
    // "held" waits until the test lets it go: a task acknowledged before
    // the cut whose run ends during it.
    let (release, started) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let held_model: HostFn = {
        let (release, started, plain) = (Arc::clone(&release), Arc::clone(&started), model());
        Arc::new(move |req: &Value, data: RunData| {
            let users = req["messages"].as_array().cloned().unwrap_or_default();
            if users
                .iter()
                .any(|m| m["role"] == "user" && m["content"] == "held")
            {
                started.store(true, Ordering::SeqCst);
                let until = Instant::now() + Duration::from_secs(60);
                while !release.load(Ordering::SeqCst) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            plain(req, data)
        })
    };
    let s = serve_model(
        json!({"addr": "127.0.0.1:0", "a2a": {"store": via}}),
        held_model,
    );
    let kept = send(&s.base, "kept", None);
    assert_eq!(settled(&s.base, &kept)["status"]["state"], "completed");
    let held = send(&s.base, "held", None);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !started.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the held run never started");
        std::thread::sleep(Duration::from_millis(5));
    }

    proxy.cut();
    let shown = format!(
        "store \"postgres://postgres@127.0.0.1:{}/postgres\"",
        proxy.port
    );
    let began = Instant::now();
    let message = json!({"role": "user", "messageId": "m2",
        "parts": [{"kind": "text", "text": "during the cut"}]});
    let refused = rpc(&s.base, "SendMessage", json!({"message": message}));
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let text = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(text.starts_with(&shown), "{refused}");
    let unread = rpc(&s.base, "GetTask", json!({"id": kept}));
    assert_eq!(unread["error"]["code"], -32603, "{unread}");
    let text = unread["error"]["message"].as_str().unwrap_or_default();
    assert!(text.starts_with(&shown), "{unread}");
    // Refused at once (the database is gone, not slow), well inside the
    // store's own bound.
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
    // The server keeps serving what needs no store.
    let (status, _) = http(
        "GET",
        &format!("{}/.well-known/agent-card.json", s.base),
        &[],
        b"",
    );
    assert_eq!(status, 200);
    // The held run ends while the store is gone: its last state waits.
    release.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(300));

    proxy.restore();
    // Back: the store connects again, and every task acknowledged before
    // the cut is there, the one that ended during it as it ended.
    let t = rpc(&s.base, "GetTask", json!({"id": kept}));
    assert_eq!(t["result"]["status"]["state"], "completed", "{t}");
    let t = settled(&s.base, &held);
    assert_eq!(t["artifacts"][0]["parts"][0]["text"], "echo: held|1", "{t}");
    let after = send(&s.base, "after", None);
    assert_eq!(
        settled(&s.base, &after)["artifacts"][0]["parts"][0]["text"],
        "echo: after|1"
    );
}

/// A host's store as the served agent's: its records, and a switch that
/// makes every call fail.
struct HostRecords {
    inner: toolnexus::store::MemoryStore,
    broken: std::sync::atomic::AtomicBool,
    saves: std::sync::atomic::AtomicUsize,
}

impl toolnexus::store::Store for HostRecords {
    fn get(&self, kind: toolnexus::store::Kind, id: &str) -> Result<Option<Value>, String> {
        if self.broken.load(std::sync::atomic::Ordering::SeqCst) {
            return Err("store \"host:rust\": get failed: the disk is gone".into());
        }
        self.inner.get(kind, id)
    }
    fn save(&self, kind: toolnexus::store::Kind, id: &str, record: &Value) -> Result<(), String> {
        if self.broken.load(std::sync::atomic::Ordering::SeqCst) {
            return Err("store \"host:rust\": save failed: the disk is gone".into());
        }
        self.saves.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.save(kind, id, record)
    }
    fn delete(&self, kind: toolnexus::store::Kind, id: &str) -> Result<bool, String> {
        self.inner.delete(kind, id)
    }
    fn selector(&self) -> String {
        "host:rust".into()
    }
}

#[test]
fn a_registered_host_store_keeps_the_agents_tasks_and_conversations() {
    use std::sync::atomic::Ordering;
    use toolnexus::store::{self, Kind, Store};
    let name = format!("a2a-{}", uuid::Uuid::new_v4());
    let records = Arc::new(HostRecords {
        inner: store::MemoryStore::default(),
        broken: false.into(),
        saves: 0.into(),
    });
    store::register(&name, Arc::clone(&records) as Arc<dyn Store>).expect("register");
    let s = serve_with(Some(json!({"store": format!("host:{name}")})));
    // Unregistered while served: the agent keeps its store.
    assert!(store::unregister(&name));
    let id = send(&s.base, "hello", Some("ctx-host"));
    assert_eq!(
        settled(&s.base, &id)["artifacts"][0]["parts"][0]["text"],
        "echo: hello|1"
    );
    let task = records.get(Kind::Task, &id).expect("get").expect("kept");
    assert_eq!(task["status"]["state"], "completed");
    // A store beyond the process keeps the conversation as a record too.
    let convo = records.get(Kind::Conversation, "ctx-host").expect("get");
    let convo = convo.unwrap_or_default();
    let roles: Vec<&str> = convo
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["role"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(roles, ["system", "user", "assistant"], "{convo}");
    assert!(records.saves.load(Ordering::SeqCst) >= 3);
    records.broken.store(true, Ordering::SeqCst);
    let r = rpc(&s.base, "GetTask", json!({"id": id}));
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert_eq!(
        r["error"]["message"],
        "store \"host:rust\": get failed: the disk is gone"
    );
    records.broken.store(false, Ordering::SeqCst);
    assert_eq!(
        rpc(&s.base, "GetTask", json!({"id": id}))["result"]["status"]["state"],
        "completed"
    );
}
