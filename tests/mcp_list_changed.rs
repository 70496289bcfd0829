//! Live `list_changed` refresh (issue 28) with real peers: a server of the
//! official MCP Python SDK (tests/mcp_servers/sdk_changing_server.py) adds
//! and removes tools while it runs and announces it, over stdio and over
//! streamable HTTP; the toolkit serves the new list, the host's
//! `toolsChanged` hears `{server, added, removed, tools, generation}`, a
//! re-list that fails keeps the old tools and says so in the status, a
//! flood of announcements costs a bounded number of re-lists, and the
//! gateway passes the change on to an SDK client.
//!
//! Every wait is on a condition, with generous bounds; no assertion rests
//! on a duration (the flood's bound counts re-lists against the time the
//! flood really took).

mod mcp_support;

use mcp_support::*;
use serde_json::{json, Value};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolnexus::mcp_server::{self, ServeConfig};
use toolnexus::tool::ExecContext;
use toolnexus::toolkit::{BuildOptions, Toolkit};

const SCRIPT: &str = "sdk_changing_server.py";
const BIN: &str = env!("CARGO_BIN_EXE_toolnexus");
/// How long any condition may take to come true (a loaded machine).
const PATIENCE: Duration = Duration::from_secs(60);

type Events = Arc<Mutex<Vec<Value>>>;

/// The server's entry in mcpServers, over "stdio" or "http".
fn entry(transport: &str, port: u16) -> Value {
    match transport {
        "stdio" => json!({"command": [python(), server_script(SCRIPT), "stdio"], "timeout": 20000}),
        _ => json!({"url": format!("http://127.0.0.1:{port}/mcp"), "timeout": 20000}),
    }
}

/// A toolkit over the server as `live`, and the events its host heard.
struct Live {
    tk: Arc<Toolkit>,
    events: Events,
    _http: Option<KillOnDrop>,
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn live(transport: &str) -> Live {
    live_at(transport, None)
}

/// [`live`] with the server's `protocolVersion` setting.
fn live_at(transport: &str, protocol: Option<&str>) -> Live {
    let (http, port) = match transport {
        "stdio" => (None, 0),
        _ => {
            let (child, port) = spawn_on_own_port(SCRIPT, "streamable-http");
            (Some(KillOnDrop(child)), port)
        }
    };
    let events: Events = Arc::default();
    let sink = Arc::clone(&events);
    let opts = BuildOptions::default().with_tools_changed(move |e: &Value| {
        if let Ok(mut v) = sink.lock() {
            v.push(e.clone());
        }
    });
    let mut server = entry(transport, port);
    if let Some(p) = protocol {
        server["protocolVersion"] = json!(p);
    }
    let cfg = json!({"mcpConfig": {"mcpServers": {"live": server}}});
    let cfg = toolnexus::config::ToolkitConfig::from_json_text(&cfg.to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    let tk = Toolkit::build_with(&cfg, &opts).unwrap_or_else(|e| panic!("{e}"));
    let status = status_of(&tk);
    assert_eq!(status["statuses"]["live"], json!("connected"), "{status}");
    Live {
        tk: Arc::new(tk),
        events,
        _http: http,
    }
}

impl Live {
    fn call(&self, name: &str, args: Value) -> String {
        let r = self.tk.execute(name, args, &ExecContext::default());
        assert!(!r.is_error, "{name}: {}", r.output);
        r.output
    }

    fn has(&self, name: &str) -> bool {
        self.tk.tool_names().iter().any(|n| n == name)
    }

    fn events(&self) -> Vec<Value> {
        self.events.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// The first event that `matches`, once it came.
    fn event(&self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        wait_until(what, PATIENCE, || {
            self.events().into_iter().find(|e| matches(e))
        })
    }

    /// How many tools/list requests the server answered so far.
    fn lists(&self) -> u64 {
        self.call("live_lists", json!({}))
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("lists: {e}"))
    }
}

fn status_of(tk: &Toolkit) -> Value {
    serde_json::from_str(&tk.render("status").unwrap_or_default()).unwrap_or_default()
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn added_and_removed_tools_are_served_live(transport: &str) {
    let l = live(transport);
    // By default a session starts with `initialize` at 2025-11-25, even
    // with a server (this SDK's) that would take 2026-07-28.
    assert_eq!(
        status_of(&l.tk)["protocolVersions"]["live"],
        json!("2025-11-25")
    );
    served_live(&l);
}

/// What [`added_and_removed_tools_are_served_live`] checks, on a toolkit
/// over the changing server.
fn served_live(l: &Live) {
    assert!(
        l.has("live_add") && !l.has("live_extra"),
        "{:?}",
        l.tk.tool_names()
    );

    assert_eq!(l.call("live_add", json!({"name": "extra"})), "added extra");
    let added = l.event("the event of extra added", |e| {
        names(&e["added"]) == ["live_extra"]
    });
    assert_eq!(added["server"], json!("live"), "{added}");
    assert_eq!(added["removed"], json!([]), "{added}");
    assert!(
        names(&added["tools"]).contains(&"live_extra".into()),
        "{added}"
    );
    // Served before the host is told.
    assert!(l.has("live_extra"), "{:?}", l.tk.tool_names());
    assert_eq!(l.call("live_extra", json!({})), "I am extra");
    let generation = added["generation"].as_u64().unwrap_or(0);
    assert!(generation >= 1, "{added}");
    assert!(
        status_of(&l.tk)["toolsGeneration"].as_u64() >= Some(generation),
        "{}",
        status_of(&l.tk)
    );
    // Rendered for a provider too.
    assert!(
        l.tk.render("openai")
            .unwrap_or_default()
            .contains("live_extra"),
        "the openai rendering lacks the new tool"
    );

    assert_eq!(
        l.call("live_remove", json!({"name": "extra"})),
        "removed extra"
    );
    let removed = l.event("the event of extra removed", |e| {
        names(&e["removed"]) == ["live_extra"]
    });
    assert!(
        removed["generation"].as_u64() > Some(generation),
        "{removed}"
    );
    assert!(!l.has("live_extra"), "{:?}", l.tk.tool_names());
    let gone =
        l.tk.execute("live_extra", json!({}), &ExecContext::default());
    assert!(
        gone.is_error && gone.output.contains("unknown tool"),
        "{}",
        gone.output
    );
}

#[test]
fn added_and_removed_tools_are_served_live_over_stdio() {
    added_and_removed_tools_are_served_live("stdio");
}

#[test]
fn added_and_removed_tools_are_served_live_over_streamable_http() {
    added_and_removed_tools_are_served_live("http");
}

/// `"protocolVersion": "auto"` with the SDK's server, which answers
/// `server/discover`: the session is at 2026-07-28, where the server sends
/// its changes only on a `subscriptions/listen` stream (the fixture
/// publishes them on its subscription bus and sends nothing unasked), and
/// the toolkit hears them there.
fn changes_come_on_the_listen_stream(transport: &str) {
    let l = live_at(transport, Some("auto"));
    assert_eq!(
        status_of(&l.tk)["protocolVersions"]["live"],
        json!("2026-07-28"),
        "{}",
        status_of(&l.tk)
    );
    served_live(&l);
}

#[test]
fn changes_come_on_the_listen_stream_over_stdio() {
    changes_come_on_the_listen_stream("stdio");
}

#[test]
fn changes_come_on_the_listen_stream_over_streamable_http() {
    changes_come_on_the_listen_stream("http");
}

/// A re-list that fails keeps the tools served and puts the failure in the
/// status; the next one that answers serves the new list and clears it.
#[test]
fn a_failed_refresh_keeps_the_tools_and_says_so() {
    let l = live("stdio");
    let before = l.tk.tool_names();
    assert_eq!(
        l.call("live_break_list", json!({"broken": true})),
        "broken true"
    );
    l.call("live_add", json!({"name": "hidden"}));
    let error = wait_until("the refresh failure in the status", PATIENCE, || {
        let status = status_of(&l.tk);
        status["errors"]["live"].as_str().map(String::from)
    });
    assert!(
        error.contains("mcp server \"live\" failed at tools/list"),
        "{error}"
    );
    assert_eq!(status_of(&l.tk)["statuses"]["live"], json!("connected"));
    assert_eq!(l.tk.tool_names(), before, "the old tools are kept");
    assert!(l.events().is_empty(), "{:?}", l.events());

    l.call("live_break_list", json!({"broken": false}));
    l.call("live_add", json!({"name": "seen"}));
    let added = l.event("the event after the list works again", |e| {
        names(&e["added"]).contains(&"live_seen".into())
    });
    assert!(
        names(&added["added"]).contains(&"live_hidden".into()),
        "{added}"
    );
    assert!(l.has("live_seen") && l.has("live_hidden"));
    assert!(
        status_of(&l.tk)["errors"].get("live").is_none(),
        "{}",
        status_of(&l.tk)
    );
}

/// A server announcing a change 1,000 times in about a second: the
/// toolkit lists it at most once per `LIST_CHANGED_MIN_INTERVAL` (plus one)
/// over the time the flood really took, answers calls meanwhile, and ends
/// up serving the list as it is.
fn a_flood_costs_a_bounded_number_of_relists(transport: &str, protocol: Option<&str>) {
    let l = live_at(transport, protocol);
    let before = l.lists();
    let started = Instant::now();
    let flooding = {
        let tk = Arc::clone(&l.tk);
        std::thread::spawn(move || {
            tk.execute(
                "live_flood",
                json!({"count": 1000, "ms": 1000}),
                &ExecContext::default(),
            )
        })
    };
    // Responsive throughout: calls answer while the flood goes on.
    let mut answered = 0;
    while !flooding.is_finished() {
        assert!(l.lists() >= before);
        answered += 1;
        assert!(started.elapsed() < PATIENCE * 2, "the flood never ended");
    }
    let flood = flooding
        .join()
        .unwrap_or_else(|_| panic!("the flood panicked"));
    assert_eq!(flood.output, "flooded 1000", "{}", flood.output);
    assert!(answered >= 1);
    // The flood's one change (the tool `flooded`) is served once it settles.
    l.event("the event of flooded", |e| {
        names(&e["added"]).contains(&"live_flooded".into())
    });
    assert!(l.has("live_flooded"));
    let relists = l.lists() - before;
    let took = started.elapsed();
    let min = toolnexus::limits::LIST_CHANGED_MIN_INTERVAL;
    let bound = 2 + (took.as_millis() / min.as_millis()) as u64;
    assert!(
        (1..=bound).contains(&relists),
        "{relists} re-lists in {took:?} (bound {bound}) for 1,000 announcements"
    );
    eprintln!("flood: {relists} re-lists in {took:?}, {answered} calls answered meanwhile");
    // One event per change actually served, never one per announcement.
    assert!(l.events().len() as u64 <= relists, "{:?}", l.events());
}

#[test]
fn a_flood_costs_a_bounded_number_of_relists_over_stdio() {
    a_flood_costs_a_bounded_number_of_relists("stdio", None);
}

/// The same flood on a 2026-07-28 session's listen stream.
#[test]
fn a_flood_on_the_listen_stream_costs_a_bounded_number_of_relists() {
    a_flood_costs_a_bounded_number_of_relists("stdio", Some("auto"));
}

#[test]
fn a_flood_costs_a_bounded_number_of_relists_over_streamable_http() {
    a_flood_costs_a_bounded_number_of_relists("http", None);
}

/// The gateway over stdio advertises `tools.listChanged` and tells its
/// client `notifications/tools/list_changed` when a proxied server's tools
/// changed; the client's next tools/list has the new tool.
#[test]
fn the_stdio_gateway_passes_the_change_on() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("mcp.json");
    let config = json!({"mcpServers": {"live": entry("stdio", 0)}});
    std::fs::write(&path, config.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let config = path.to_string_lossy().into_owned();
    let plan = json!({"steps": [
        {"op": "init"},
        {"op": "call", "name": "live_add", "arguments": {"name": "extra"}},
        {"op": "changed", "method": "notifications/tools/list_changed"},
        {"op": "list"},
        {"op": "call", "name": "live_extra", "arguments": {}},
        {"op": "call", "name": "live_announce", "arguments": {"kind": "prompts"}},
        {"op": "changed", "method": "notifications/prompts/list_changed"},
    ]});
    let out = sdk_client(
        &plan,
        &[
            "stdio",
            BIN,
            "serve",
            "--stdio",
            "--config",
            &config,
            "--no-builtins",
        ],
    );
    let caps = &out[0]["capabilities"];
    assert_eq!(caps["tools"]["listChanged"], json!(true), "{caps}");
    assert_eq!(caps["prompts"]["listChanged"], json!(true), "{caps}");
    assert_eq!(text_of(&out[1]), "added extra");
    assert_eq!(out[2]["came"], json!(true), "{}", out[2]);
    let listed: Vec<&str> = out[3]["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(listed.contains(&"live_extra"), "{listed:?}");
    assert_eq!(text_of(&out[4]), "I am extra");
    assert_eq!(text_of(&out[5]), "announced prompts");
    assert_eq!(out[6]["came"], json!(true), "{}", out[6]);
}

/// Over streamable HTTP the gateway is stateless (no stream to notify
/// on), and every tools/list is the toolkit's list now: a client's next
/// list has the tool a proxied server added.
#[test]
fn the_http_gateway_lists_the_changed_tools() {
    let l = live("stdio");
    let cfg =
        ServeConfig::from_value(&json!({"addr": "127.0.0.1:0"})).unwrap_or_else(|e| panic!("{e}"));
    let server = mcp_server::serve(Arc::clone(&l.tk), &cfg, None).unwrap_or_else(|e| panic!("{e}"));
    let url = server.url().unwrap_or_default().to_string();
    let out = sdk_client(
        &json!({"steps": [
            {"op": "init"},
            {"op": "call", "name": "live_add", "arguments": {"name": "extra"}},
        ]}),
        &["http", &url],
    );
    assert_eq!(out[0]["capabilities"]["tools"]["listChanged"], json!(true));
    assert_eq!(text_of(&out[1]), "added extra");
    l.event("the event of extra added", |e| {
        names(&e["added"]) == ["live_extra"]
    });
    let out = sdk_client(
        &json!({"steps": [{"op": "list"}, {"op": "call", "name": "live_extra", "arguments": {}}]}),
        &["http", &url],
    );
    let listed = out[0]["tools"].to_string();
    assert!(listed.contains("\"live_extra\""), "{listed}");
    assert_eq!(text_of(&out[1]), "I am extra");
}

/// A client handler that counts the tool list changes it is told unasked
/// (those of a listen stream go to the stream, not here).
#[derive(Clone, Default)]
struct Unasked(Arc<std::sync::atomic::AtomicUsize>);

impl rmcp::ClientHandler for Unasked {
    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<rmcp::RoleClient>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The stdio gateway tells a client of 2026-07-28 (rmcp's client,
/// `server/discover` only) each change on its `subscriptions/listen`
/// stream and never unasked, as that revision has it; a client of 2025
/// (`the_stdio_gateway_passes_the_change_on`) is told unasked.
#[test]
fn the_stdio_gateway_tells_a_2026_client_on_its_listen_stream_only() {
    use rmcp::model::{ProtocolVersion, ServerNotification, SubscriptionFilter};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    use toolnexus::mcp_server::Profile;

    let l = live("stdio");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let unasked = Unasked::default();
    let (client, mut stream, _server) = rt.block_on(async {
        let (client_end, server_end) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(server_end);
        let server =
            mcp_server::serve_lines(Arc::clone(&l.tk), &Profile::default(), None, read, write);
        let client = unasked
            .clone()
            .serve_with_lifecycle(
                tokio::io::split(client_end),
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .unwrap_or_else(|e| panic!("discover: {e}"));
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        let stream = tokio::time::timeout(PATIENCE, client.peer().listen(filter))
            .await
            .unwrap_or_else(|_| panic!("no acknowledgment"))
            .unwrap_or_else(|e| panic!("listen: {e}"));
        (client, stream, server)
    });
    for name in ["extra", "more"] {
        assert_eq!(
            l.call("live_add", json!({"name": name})),
            format!("added {name}")
        );
        let tool = format!("live_{name}");
        rt.block_on(async {
            let deadline = tokio::time::Instant::now() + PATIENCE;
            loop {
                let note = tokio::time::timeout_at(deadline, stream.next())
                    .await
                    .unwrap_or_else(|_| panic!("no list_changed on the listen stream"))
                    .unwrap_or_else(|e| panic!("listen stream: {e}"))
                    .unwrap_or_else(|| panic!("the listen stream ended"));
                assert!(
                    matches!(note, ServerNotification::ToolListChangedNotification(_)),
                    "{note:?}"
                );
                let tools = client
                    .peer()
                    .list_all_tools()
                    .await
                    .unwrap_or_else(|e| panic!("tools/list: {e}"));
                if tools.iter().any(|t| t.name == tool.as_str()) {
                    break;
                }
            }
        });
    }
    assert_eq!(
        unasked.0.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "told unasked"
    );
    rt.block_on(async {
        let _ = client.cancel().await;
    });
}

/// Opens `GET /mcp` on `addr` with `host` as its Host; the connection and
/// the head of the answer.
fn get_stream(addr: &str, host: &str) -> (std::net::TcpStream, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
    s.set_read_timeout(Some(Duration::from_secs(30))).ok();
    write!(
        s,
        "GET /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            other => panic!(
                "the head ended early ({other:?}): {:?}",
                String::from_utf8_lossy(&head)
            ),
        }
    }
    (s, String::from_utf8_lossy(&head).into_owned())
}

/// A 2025 client's `GET /mcp` stream on the stateless HTTP gateway hears
/// each change of the MCP tools as `notifications/tools/list_changed`
/// (an SSE `message`); a client that never reads its stream holds back no
/// other; a Host the gateway does not serve gets no stream.
#[test]
fn the_http_gateway_tells_a_2025_client_on_its_get_stream() {
    use std::io::Read;
    let l = live("stdio");
    let cfg =
        ServeConfig::from_value(&json!({"addr": "127.0.0.1:0"})).unwrap_or_else(|e| panic!("{e}"));
    let server = mcp_server::serve(Arc::clone(&l.tk), &cfg, None).unwrap_or_else(|e| panic!("{e}"));
    let url = server.url().unwrap_or_default().to_string();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let (mut stream, head) = get_stream(&addr, &addr);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{head}"
    );
    // A second listener that never reads.
    let (_idle, idle_head) = get_stream(&addr, &addr);
    assert!(idle_head.starts_with("HTTP/1.1 200"), "{idle_head}");
    let (_, refused) = get_stream(&addr, "evil.example:80");
    assert!(!refused.starts_with("HTTP/1.1 200"), "{refused}");
    for name in ["extra", "more"] {
        assert_eq!(
            l.call("live_add", json!({"name": name})),
            format!("added {name}")
        );
        l.event("the event of the tool added", |e| {
            names(&e["added"]) == [format!("live_{name}")]
        });
        let mut seen = Vec::new();
        let mut buf = [0u8; 512];
        while !String::from_utf8_lossy(&seen).contains("notifications/tools/list_changed") {
            match stream.read(&mut buf) {
                Ok(n) if n > 0 => seen.extend_from_slice(&buf[..n]),
                other => panic!(
                    "the stream ended ({other:?}): {:?}",
                    String::from_utf8_lossy(&seen)
                ),
            }
        }
        let seen = String::from_utf8_lossy(&seen).into_owned();
        assert!(
            seen.contains(
                "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
            ),
            "{seen}"
        );
    }
    // The tools are served meanwhile.
    let out = sdk_client(&json!({"steps": [{"op": "list"}]}), &["http", &url]);
    let listed = out[0]["tools"].to_string();
    assert!(listed.contains("\"live_more\""), "{listed}");
}

/// Refreshed tools go through the build's naming: a tool that now clashes
/// after sanitizing with another server's is renamed (`nameCollisions:
/// "rename"`, config order deciding as at build), the status warns, and
/// each server whose names changed gets its event.
#[test]
fn a_clash_after_a_refresh_is_renamed_and_warned() {
    let events: Events = Arc::default();
    let sink = Arc::clone(&events);
    let opts = BuildOptions::default().with_tools_changed(move |e: &Value| {
        if let Ok(mut v) = sink.lock() {
            v.push(e.clone());
        }
    });
    let cfg = json!({"mcpConfig": {"nameCollisions": "rename", "mcpServers": {
        "live": entry("stdio", 0),
        "live_x": entry("stdio", 0),
    }}});
    let cfg = toolnexus::config::ToolkitConfig::from_json_text(&cfg.to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    let l = Live {
        tk: Arc::new(Toolkit::build_with(&cfg, &opts).unwrap_or_else(|e| panic!("{e}"))),
        events,
        _http: None,
    };
    let status = status_of(&l.tk);
    assert_eq!(status["statuses"]["live_x"], json!("connected"), "{status}");

    assert_eq!(l.call("live_x_add", json!({"name": "t"})), "added t");
    l.event("live_x's t", |e| {
        e["server"] == "live_x" && names(&e["added"]) == ["live_x_t"]
    });
    assert_eq!(l.call("live_x_t", json!({})), "I am t");

    // "live" + "x_t" is "live_x_t" too; "live" comes first in the config.
    assert_eq!(l.call("live_add", json!({"name": "x_t"})), "added x_t");
    let moved = l.event("live_x's t renamed", |e| {
        e["server"] == "live_x" && names(&e["added"]) == ["live_x_t_2"]
    });
    assert_eq!(names(&moved["removed"]), ["live_x_t"], "{moved}");
    let took = l.event("live's x_t", |e| {
        e["server"] == "live" && names(&e["added"]) == ["live_x_t"]
    });
    assert_eq!(took["generation"], moved["generation"], "{took} {moved}");
    assert_eq!(l.call("live_x_t", json!({})), "I am x_t");
    assert_eq!(l.call("live_x_t_2", json!({})), "I am t");
    let warnings = status_of(&l.tk)["warnings"].to_string();
    assert!(
        warnings.contains("mcp tool name collision")
            && warnings.contains("is served as \\\"live_x_t_2\\\""),
        "{warnings}"
    );
}

/// A server of 2026-07-28 on rmcp's server side, over streamable HTTP on
/// loopback: it answers `server/discover` (rmcp does), serves `add(name)`
/// and every tool added, and tells a change only on the
/// `subscriptions/listen` streams open at the time (rmcp's
/// `SubscriptionSink`), never unasked.
mod modern {
    use rmcp::handler::server::ServerHandler;
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
        InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
        SubscriptionFilter, Tool,
    };
    use rmcp::service::{RequestContext, RoleServer, SubscriptionContext, SubscriptionSink};
    use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    use serde_json::json;
    use std::convert::Infallible;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    pub struct Modern {
        added: Arc<Mutex<Vec<String>>>,
        sinks: Arc<Mutex<Vec<SubscriptionSink>>>,
        /// How many listen streams were opened.
        pub listens: Arc<Mutex<usize>>,
    }

    fn tool(name: &str, description: &str) -> Tool {
        let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        let serde_json::Value::Object(schema) = schema else {
            unreachable!()
        };
        Tool::new(name.to_string(), description.to_string(), Arc::new(schema))
    }

    impl ServerHandler for Modern {
        fn get_info(&self) -> InitializeResult {
            InitializeResult::new(
                ServerCapabilities::builder()
                    .enable_tools()
                    .enable_tool_list_changed()
                    .build(),
            )
        }

        async fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> Result<ListToolsResult, ErrorData> {
            let mut tools = vec![tool("add", "Add the tool NAME and announce it.")];
            for name in self.added.lock().map(|a| a.clone()).unwrap_or_default() {
                tools.push(tool(&name, "An added tool."));
            }
            Ok(ListToolsResult::with_all_items(tools))
        }

        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            let text = if request.name == "add" {
                let name = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("name"))
                    .and_then(|n| n.as_str())
                    .unwrap_or("unnamed")
                    .to_string();
                if let Ok(mut added) = self.added.lock() {
                    added.push(name.clone());
                }
                let sinks = self.sinks.lock().map(|s| s.clone()).unwrap_or_default();
                for sink in sinks {
                    let _ = sink.notify_tool_list_changed().await;
                }
                format!("added {name}")
            } else {
                format!("I am {}", request.name)
            };
            Ok(CallToolResponse::from(CallToolResult::success(vec![
                ContentBlock::text(text),
            ])))
        }

        fn accepted_subscription_filter(
            &self,
            requested: &SubscriptionFilter,
        ) -> Option<SubscriptionFilter> {
            Some(requested.clone())
        }

        async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
            if let Ok(mut sinks) = self.sinks.lock() {
                sinks.push(context.sink().clone());
            }
            if let Ok(mut n) = self.listens.lock() {
                *n += 1;
            }
            context.cancelled().await;
            Ok(())
        }
    }

    /// The server on a loopback port of its own, on a thread of its own;
    /// it lives as long as the test process.
    pub fn start() -> (u16, Modern) {
        let server = Modern::default();
        let handler = server.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap_or_else(|e| panic!("runtime: {e}"));
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .unwrap_or_else(|e| panic!("bind: {e}"));
                let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
                let service = Arc::new(StreamableHttpService::new(
                    move || Ok(handler.clone()),
                    Arc::new(NeverSessionManager::default()),
                    StreamableHttpServerConfig::default().with_legacy_session_mode(false),
                ));
                let _ = tx.send(port);
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let service = Arc::clone(&service);
                    tokio::spawn(async move {
                        let route = hyper::service::service_fn(move |req| {
                            let service = Arc::clone(&service);
                            async move { Ok::<_, Infallible>(service.handle(req).await) }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), route)
                            .await;
                    });
                }
            });
        });
        let port = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("the modern server did not start: {e}"));
        (port, server)
    }
}

/// A server of 2026-07-28 written on rmcp's server side: with
/// `"protocolVersion": "auto"` the session is at 2026-07-28, the toolkit
/// opens a listen stream, and a tool the server adds and announces there
/// is served, the host told.
#[test]
fn an_rmcp_server_of_2026_is_heard_on_its_listen_stream() {
    let (port, server) = modern::start();
    let events: Events = Arc::default();
    let sink = Arc::clone(&events);
    let opts = BuildOptions::default().with_tools_changed(move |e: &Value| {
        if let Ok(mut v) = sink.lock() {
            v.push(e.clone());
        }
    });
    let cfg = json!({"mcpConfig": {"mcpServers": {"live": {
        "url": format!("http://127.0.0.1:{port}/mcp"), "timeout": 20000,
        "protocolVersion": "auto"}}}});
    let cfg = toolnexus::config::ToolkitConfig::from_json_text(&cfg.to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    let tk = Toolkit::build_with(&cfg, &opts).unwrap_or_else(|e| panic!("{e}"));
    let status = status_of(&tk);
    assert_eq!(status["statuses"]["live"], json!("connected"), "{status}");
    assert_eq!(
        status["protocolVersions"]["live"],
        json!("2026-07-28"),
        "{status}"
    );
    let l = Live {
        tk: Arc::new(tk),
        events,
        _http: None,
    };
    // The listen stream is open before the change, or the change is lost.
    wait_until("the toolkit's listen stream", PATIENCE, || {
        (server.listens.lock().map(|n| *n).unwrap_or(0) >= 1).then_some(())
    });
    assert!(!l.has("live_late"), "{:?}", l.tk.tool_names());
    assert_eq!(l.call("live_add", json!({"name": "late"})), "added late");
    let added = l.event("the event of late added", |e| {
        names(&e["added"]) == ["live_late"]
    });
    assert_eq!(added["server"], json!("live"), "{added}");
    assert!(l.has("live_late"), "{:?}", l.tk.tool_names());
    assert_eq!(l.call("live_late", json!({})), "I am late");
}

/// The HTTP gateway tells a client of 2026-07-28 on its
/// `subscriptions/listen` stream (rmcp's client, `server/discover` only):
/// acknowledged first, then `notifications/tools/list_changed` carrying the
/// subscription's id once a proxied server's tools changed, and the next
/// list has the new tool. A second listener that never reads its stream
/// blocks neither the gateway nor the first listener.
#[test]
fn the_http_gateway_tells_a_2026_client_on_its_listen_stream() {
    use rmcp::model::{GetMeta, ProtocolVersion, ServerNotification, SubscriptionFilter};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    use rmcp::transport::StreamableHttpClientTransport;
    use std::io::Write;

    let l = live("stdio");
    let cfg =
        ServeConfig::from_value(&json!({"addr": "127.0.0.1:0"})).unwrap_or_else(|e| panic!("{e}"));
    let server = mcp_server::serve(Arc::clone(&l.tk), &cfg, None).unwrap_or_else(|e| panic!("{e}"));
    let url = server.url().unwrap_or_default().to_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let (client, mut stream) = rt.block_on(async {
        let client = ()
            .serve_with_lifecycle(
                StreamableHttpClientTransport::with_client(
                    toolnexus::net::reqwest_builder()
                        .and_then(|b| b.build().map_err(|e| e.to_string()))
                        .unwrap_or_else(|e| panic!("reqwest: {e}")),
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                        url.as_str(),
                    ),
                ),
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .unwrap_or_else(|e| panic!("discover: {e}"));
        let info = client.peer().peer_info().unwrap_or_else(|| panic!("no peer info"));
        assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        let stream = tokio::time::timeout(PATIENCE, client.peer().listen(filter))
            .await
            .unwrap_or_else(|_| panic!("no acknowledgment"))
            .unwrap_or_else(|e| panic!("listen: {e}"));
        assert_eq!(stream.acknowledged().tools_list_changed, Some(true));
        (client, stream)
    });

    // A listener that opens its stream and never reads it.
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse::<u16>()
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let mut deaf = std::net::TcpStream::connect(("127.0.0.1", port))
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": {"name": "deaf", "version": "1"},
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let _ = write!(
        deaf,
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: subscriptions/listen\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );

    // Changes, many of them: the flood's announcements and a tool added.
    assert_eq!(
        l.call("live_flood", json!({"count": 200, "ms": 200})),
        "flooded 200"
    );
    assert_eq!(l.call("live_add", json!({"name": "extra"})), "added extra");
    // (With the flood's `flooded` when the two came within one quiet
    // period.)
    l.event("the event of extra added", |e| {
        names(&e["added"]).contains(&"live_extra".into())
    });

    rt.block_on(async {
        let id = stream.id().clone();
        // Coalesced: one or more notifications, each of this subscription,
        // until the list has the new tool.
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let note = tokio::time::timeout_at(deadline, stream.next())
                .await
                .unwrap_or_else(|_| panic!("no list_changed on the listen stream"))
                .unwrap_or_else(|e| panic!("listen stream: {e}"))
                .unwrap_or_else(|| panic!("the listen stream ended: {:?}", stream.end()));
            assert!(
                matches!(note, ServerNotification::ToolListChangedNotification(_)),
                "not a tools list_changed: {note:?}"
            );
            // `_meta["io.modelcontextprotocol/subscriptionId"]`: the listen
            // request's id.
            assert_eq!(note.get_meta().subscription_id().as_ref(), Some(&id));
            let tools = client
                .peer()
                .list_all_tools()
                .await
                .unwrap_or_else(|e| panic!("tools/list: {e}"));
            if tools.iter().any(|t| t.name == "live_extra") {
                break;
            }
        }
        let _ = stream.cancel().await;
        let _ = client.cancel().await;
    });
    drop(deaf);
}

/// `mcpServer.unprefixed` names follow the tools as they are now: a tool a
/// proxied server adds later is served under its own name when no other
/// tool has it, and once a second server adds one of that name both are
/// served prefixed (what a gateway started then would serve).
#[test]
fn a_later_tool_is_served_unprefixed_unless_it_clashes() {
    let events: Events = Arc::default();
    let sink = Arc::clone(&events);
    let opts = BuildOptions::default().with_tools_changed(move |e: &Value| {
        if let Ok(mut v) = sink.lock() {
            v.push(e.clone());
        }
    });
    let cfg = json!({"mcpConfig": {"mcpServers": {
        "live": entry("stdio", 0),
        "other": entry("stdio", 0),
    }}});
    let cfg = toolnexus::config::ToolkitConfig::from_json_text(&cfg.to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    let l = Live {
        tk: Arc::new(Toolkit::build_with(&cfg, &opts).unwrap_or_else(|e| panic!("{e}"))),
        events,
        _http: None,
    };
    let serve =
        ServeConfig::from_value(&json!({"addr": "127.0.0.1:0", "mcp": {"unprefixed": true}}))
            .unwrap_or_else(|e| panic!("{e}"));
    let server =
        mcp_server::serve(Arc::clone(&l.tk), &serve, None).unwrap_or_else(|e| panic!("{e}"));
    let url = server.url().unwrap_or_default().to_string();
    let listed = |steps: Value| -> (Vec<String>, Vec<Value>) {
        let out = sdk_client(&json!({"steps": steps}), &["http", &url]);
        let names = out[0]["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        (names, out)
    };

    // Both servers have `add`: it stays prefixed.
    let (served, _) = listed(json!([{"op": "list"}]));
    assert!(
        served.contains(&"live_add".into()) && served.contains(&"other_add".into()),
        "{served:?}"
    );
    let warned = |tool: &str, remote: &str| {
        let w = format!(
            "mcpServer.unprefixed: \"{tool}\" is served under its prefixed name: \"{remote}\" \
             is another tool's name too"
        );
        status_of(&l.tk)["warnings"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x == &json!(w)))
    };
    assert!(warned("live_add", "add"), "{}", status_of(&l.tk));
    assert_eq!(l.call("live_add", json!({"name": "solo"})), "added solo");
    l.event("live's solo", |e| names(&e["added"]) == ["live_solo"]);
    let (served, out) = listed(json!([
        {"op": "list"},
        {"op": "call", "name": "solo", "arguments": {}}
    ]));
    assert!(
        served.contains(&"solo".into()) && !served.contains(&"live_solo".into()),
        "{served:?}"
    );
    assert!(!warned("live_solo", "solo"), "{}", status_of(&l.tk));
    assert_eq!(text_of(&out[1]), "I am solo");

    // The other server's `solo` clashes: both are served prefixed now.
    assert_eq!(l.call("other_add", json!({"name": "solo"})), "added solo");
    l.event("other's solo", |e| names(&e["added"]) == ["other_solo"]);
    let (served, out) = listed(json!([
        {"op": "list"},
        {"op": "call", "name": "other_solo", "arguments": {}}
    ]));
    assert!(
        served.contains(&"live_solo".into())
            && served.contains(&"other_solo".into())
            && !served.contains(&"solo".into()),
        "{served:?}"
    );
    assert!(
        warned("live_solo", "solo") && warned("other_solo", "solo"),
        "{}",
        status_of(&l.tk)
    );
    assert_eq!(text_of(&out[1]), "I am solo");
}
