//! Live tool lists (issue 28): a server's `notifications/tools/list_changed`
//! makes the toolkit list that server's tools again and serve the new list.
//!
//! - Every connected session has a follower task. The session's notification
//!   handler (`super::elicit::Handler`, the one place every transport's
//!   notifications arrive: stdio on the direct and rmcp paths alike,
//!   streamable HTTP, legacy SSE) sets a flag per kind of list and wakes it
//!   (`super::relay::Relays::list_changed`).
//! - Debounced: the follower waits until the server has been quiet for
//!   [`LIST_CHANGED_QUIET`] (at most [`LIST_CHANGED_MAX_DELAY`] after the
//!   first announcement), and never starts two re-lists of one server less
//!   than [`LIST_CHANGED_MIN_INTERVAL`] apart. What waits meanwhile is one
//!   flag per kind: a server announcing a thousand times a second costs at
//!   most two re-lists a second and no memory.
//! - A re-list that answers replaces that server's tools: the whole MCP
//!   layer is assembled again from every server's latest list ([`assemble`],
//!   the names, caps and collision handling of the build), the generation
//!   goes up, the gateway hears it ([`Live::subscribe`]) and the host's
//!   `toolsChanged` callback gets `{server, added, removed, tools,
//!   generation}`. A list equal to the one served changes nothing.
//! - A re-list that fails keeps the server's tools as they were; the
//!   failure is the server's status error until a later re-list answers.
//! - On a session negotiated at 2026-07-28 the server sends its changes only
//!   on a `subscriptions/listen` stream: the session's connect opens one
//!   (rmcp's `Peer::listen`) for the lists the server advertised
//!   `listChanged` for, and its listener ([`listen`]) sets the same flags.
//! - `prompts/list_changed` and `resources/list_changed` change no tool
//!   (the `resourcesAsTools` tools ask the server each time); they are
//!   counted for the gateway to pass on.

use super::config::ServerConfig;
use super::relay::{LISTED_PROMPTS, LISTED_RESOURCES, LISTED_TOOLS};
use super::session::{RemoteTool, Session};
use super::{capped, free_name, resource_tools, McpTool, MAX_NAME};
use crate::limits::{LIST_CHANGED_MAX_DELAY, LIST_CHANGED_MIN_INTERVAL, LIST_CHANGED_QUIET};
use crate::tool::{sanitize, Source, Tool};
use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient, Subscription, SubscriptionEnd};
use serde_json::{json, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use tokio::time::Instant;

/// The host's `toolsChanged` callback: the event `{server, added, removed,
/// tools, generation}` after a server's tools changed. Called on a thread
/// of the library's blocking pool, one event of a server at a time.
pub type ToolsChanged = Arc<dyn Fn(&Value) + Send + Sync>;

/// How many times each kind of list changed since the toolkit was built:
/// what the gateway watches to pass changes on to its clients.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Generations {
    /// The toolkit's MCP tools (bumped when a re-list changed them).
    pub tools: u64,
    /// A server announced a change of its prompts.
    pub prompts: u64,
    /// A server announced a change of its resources.
    pub resources: u64,
}

/// One connected server, as the MCP tools are made from it.
pub(super) struct Served {
    pub cfg: ServerConfig,
    pub session: Arc<Session>,
    pub remote: Vec<RemoteTool>,
}

/// The MCP layer made from every connected server's latest list.
#[derive(Default)]
pub(super) struct Assembled {
    pub tools: Vec<Arc<Tool>>,
    /// (tool name, server, the tool's own name) of every tool kept.
    pub origins: Vec<(String, String, String)>,
    /// Name clashes, renames and capped names, one sentence each.
    pub warnings: Vec<String>,
}

/// Names every server's tools `sanitize(server)_sanitize(tool)` (capped at
/// [`MAX_NAME`]), in server order then list order; when two get one name
/// the later wins or, with `rename`, is served as `NAME_2`; then the
/// `resourcesAsTools` tools.
pub(super) fn assemble(servers: &[Served], rename: bool) -> Assembled {
    let mut out = Assembled::default();
    let mut tools: Vec<Tool> = Vec::new();
    let mut offered: Vec<(String, Arc<Session>)> = Vec::new();
    for served in servers {
        let cfg = &served.cfg;
        let prefix = sanitize(&cfg.name);
        for rt in served.remote.iter().filter(|t| cfg.keeps_tool(&t.name)) {
            let name = capped(format!("{prefix}_{}", sanitize(&rt.name)));
            if name.len() < prefix.len() + 1 + sanitize(&rt.name).len() {
                out.warnings.push(format!(
                    "mcp server \"{}\": the name of its tool \"{}\" is longer than \
                     {MAX_NAME} characters once prefixed; it is served as \"{name}\"",
                    cfg.name, rt.name
                ));
            }
            let name = match out.origins.iter().find(|o| o.0 == name) {
                None => name,
                Some((_, server, tool)) if rename => {
                    let renamed = free_name(&name, &tools);
                    out.warnings.push(format!(
                        "mcp tool name collision: server \"{}\" tool \"{}\" and server \
                         \"{server}\" tool \"{tool}\" are both \"{name}\"; the later \
                         is served as \"{renamed}\"",
                        cfg.name, rt.name
                    ));
                    renamed
                }
                Some((_, server, tool)) => {
                    // SPEC §4 as recorded: a later server's tool replaces
                    // an earlier one of the same final name.
                    out.warnings.push(format!(
                        "mcp tool name collision: server \"{}\" tool \"{}\" replaces \
                         server \"{server}\" tool \"{tool}\" as \"{name}\" (set \
                         mcpConfig.nameCollisions to \"rename\" to keep both)",
                        cfg.name, rt.name
                    ));
                    name
                }
            };
            tools.retain(|t| t.name != name);
            out.origins.retain(|o| o.0 != name);
            out.origins
                .push((name.clone(), cfg.name.clone(), rt.name.clone()));
            let exec = Arc::new(McpTool {
                session: Arc::clone(&served.session),
                remote: rt.name.clone(),
            });
            tools.push(Tool::new(
                name,
                rt.description.clone(),
                Some(rt.input_schema.clone()),
                Source::Mcp,
                exec,
            ));
        }
        if cfg.resources_as_tools {
            offered.push((cfg.name.clone(), Arc::clone(&served.session)));
        }
    }
    for tool in resource_tools::tools(offered) {
        if tools.iter().any(|t| t.name == tool.name) {
            out.warnings.push(format!(
                "mcp tool name collision: \"{}\" (resourcesAsTools) replaces a server's tool \
                 of that name",
                tool.name
            ));
            tools.retain(|t| t.name != tool.name);
            out.origins.retain(|o| o.0 != tool.name);
        }
        tools.push(tool);
    }
    out.tools = tools.into_iter().map(Arc::new).collect();
    out
}

/// The live MCP layer of one toolkit: what every server listed last, the
/// tools made of it, and who hears when it changes.
pub struct Live {
    state: Mutex<State>,
    rename: bool,
    on_change: Option<ToolsChanged>,
    changes: tokio::sync::watch::Sender<Generations>,
    /// The tools generation, read without a lock on every toolkit lookup.
    tools_generation: AtomicU64,
}

struct State {
    servers: Vec<Served>,
    assembled: Assembled,
    generations: Generations,
    /// server → why its last re-list failed (cleared when one answers).
    failures: Vec<(String, String)>,
}

impl Live {
    pub(super) fn new(
        servers: Vec<Served>,
        rename: bool,
        on_change: Option<ToolsChanged>,
    ) -> Arc<Live> {
        let assembled = assemble(&servers, rename);
        Arc::new(Live {
            state: Mutex::new(State {
                servers,
                assembled,
                generations: Generations::default(),
                failures: Vec::new(),
            }),
            rename,
            on_change,
            changes: tokio::sync::watch::channel(Generations::default()).0,
            tools_generation: AtomicU64::new(0),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tools generation (how many times the MCP tools changed since the
    /// build) and the MCP tools of that generation.
    pub fn tools(&self) -> (u64, Vec<Arc<Tool>>) {
        let state = self.state();
        (state.generations.tools, state.assembled.tools.clone())
    }

    /// How many times the MCP tools changed so far (one atomic load).
    pub fn tools_generation(&self) -> u64 {
        self.tools_generation.load(Ordering::Acquire)
    }

    /// How many times each kind of list changed so far.
    pub fn generations(&self) -> Generations {
        *self.changes.borrow()
    }

    /// Hears every change of [`Live::generations`] (the latest one only,
    /// when several came before it looked).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<Generations> {
        self.changes.subscribe()
    }

    /// `(toolkit name, server, the tool's own name)` of every MCP tool.
    pub fn origins(&self) -> Vec<(String, String, String)> {
        self.state().assembled.origins.clone()
    }

    /// The naming warnings of the tools served now.
    pub fn warnings(&self) -> Vec<String> {
        self.state().assembled.warnings.clone()
    }

    /// server → why its last re-list failed.
    pub fn failures(&self) -> Vec<(String, String)> {
        self.state().failures.clone()
    }

    /// Starts the follower of every server (on the library's runtime).
    pub(super) fn follow_all(self: &Arc<Self>) {
        let sessions: Vec<Arc<Session>> = self
            .state()
            .servers
            .iter()
            .map(|s| Arc::clone(&s.session))
            .collect();
        for (index, session) in sessions.into_iter().enumerate() {
            let (relays, stopped) = (Arc::clone(session.relays()), session.stopped().clone());
            if let Some(stream) = session.take_listening() {
                let (peer, relays) = (session.peer().clone(), Arc::clone(&relays));
                let (name, stopped) = (session.name.clone(), stopped.clone());
                crate::runtime::get().spawn(async move {
                    tokio::select! {
                        _ = stopped.cancelled() => {}
                        () = listen(&name, peer, stream, relays) => {}
                    }
                });
            }
            let live = Arc::downgrade(self);
            let session = Arc::downgrade(&session);
            crate::runtime::get().spawn(async move {
                tokio::select! {
                    _ = stopped.cancelled() => {}
                    () = follow(live, index, session, relays) => {}
                }
            });
        }
    }

    /// Bumps the prompts or resources generation.
    fn announced(&self, kinds: u8) {
        self.changes.send_modify(|g| {
            if kinds & LISTED_PROMPTS != 0 {
                g.prompts += 1;
            }
            if kinds & LISTED_RESOURCES != 0 {
                g.resources += 1;
            }
        });
    }

    /// Takes the outcome of a re-list of server `index`: the events for
    /// the host when tools changed — one per server whose toolkit names
    /// changed (a new clash may rename another server's tool), or one for
    /// this server when only its declarations did.
    fn relisted(&self, index: usize, listed: Result<Vec<RemoteTool>, String>) -> Vec<Value> {
        let mut state = self.state();
        let Some(server) = state.servers.get(index).map(|s| s.cfg.name.clone()) else {
            return Vec::new();
        };
        let remote = match listed {
            Ok(remote) => remote,
            Err(message) => {
                crate::log::emit(crate::log::Level::Warn, "mcp", || {
                    format!("{message} (after list_changed; its tools are kept as they were)")
                });
                state.failures.retain(|(s, _)| *s != server);
                state.failures.push((server, message));
                return Vec::new();
            }
        };
        state.failures.retain(|(s, _)| *s != server);
        if state.servers[index].remote == remote {
            return Vec::new();
        }
        state.servers[index].remote = remote;
        let assembled = assemble(&state.servers, self.rename);
        let before = std::mem::replace(&mut state.assembled, assembled);
        state.generations.tools += 1;
        let generation = state.generations.tools;
        self.tools_generation.store(generation, Ordering::Release);
        let names = |a: &Assembled, server: &str| -> Vec<String> {
            a.origins
                .iter()
                .filter(|o| o.1 == server)
                .map(|o| o.0.clone())
                .collect()
        };
        let mut events = Vec::new();
        for s in &state.servers {
            let name = &s.cfg.name;
            let (was, now) = (names(&before, name), names(&state.assembled, name));
            if was == now && *name != server {
                continue;
            }
            let added: Vec<&String> = now.iter().filter(|n| !was.contains(n)).collect();
            let removed: Vec<&String> = was.iter().filter(|n| !now.contains(n)).collect();
            crate::log::emit(crate::log::Level::Info, "mcp", || {
                format!(
                    "mcp server \"{name}\": tools changed (generation {generation}): {} added, \
                     {} removed",
                    added.len(),
                    removed.len()
                )
            });
            events.push(json!({
                "server": name,
                "added": added,
                "removed": removed,
                "tools": now,
                "generation": generation,
            }));
        }
        drop(state);
        self.changes.send_modify(|g| g.tools = generation);
        events
    }

    /// Tells the host (when it gave a `toolsChanged`), on the blocking pool;
    /// a callback that panics is ignored.
    async fn tell(&self, event: Value) {
        let Some(f) = self.on_change.clone() else {
            return;
        };
        let told = tokio::task::spawn_blocking(move || {
            let _ = catch_unwind(AssertUnwindSafe(|| f(&event)));
        });
        let _ = told.await;
    }
}

/// One server's follower: waits for its announcements, debounced, and
/// re-lists its tools. Ends when the toolkit or the session is gone (and,
/// through its caller, when the session closes).
async fn follow(
    live: Weak<Live>,
    index: usize,
    session: Weak<Session>,
    relays: Arc<super::relay::Relays>,
) {
    let mut last: Option<Instant> = None;
    loop {
        relays.list_change().await;
        if let Some(at) = last {
            tokio::time::sleep_until(at + LIST_CHANGED_MIN_INTERVAL).await;
        }
        // Quiet for LIST_CHANGED_QUIET, or LIST_CHANGED_MAX_DELAY in all.
        let deadline = Instant::now() + LIST_CHANGED_MAX_DELAY;
        loop {
            tokio::select! {
                () = tokio::time::sleep(LIST_CHANGED_QUIET) => break,
                () = tokio::time::sleep_until(deadline) => break,
                () = relays.list_change() => {}
            }
        }
        let kinds = relays.take_changed();
        let Some(live_now) = live.upgrade() else {
            return;
        };
        if kinds & (LISTED_PROMPTS | LISTED_RESOURCES) != 0 {
            live_now.announced(kinds);
        }
        if kinds & LISTED_TOOLS == 0 {
            continue;
        }
        drop(live_now);
        last = Some(Instant::now());
        let Some(s) = session.upgrade() else {
            return;
        };
        let listed = s.relist().await;
        drop(s);
        let Some(live_now) = live.upgrade() else {
            return;
        };
        for event in live_now.relisted(index, listed) {
            live_now.tell(event).await;
        }
    }
}

/// The flags of the lists `filter` names.
fn kinds_of(filter: &SubscriptionFilter) -> u8 {
    let mut kinds = 0;
    for (on, kind) in [
        (filter.tools_list_changed, LISTED_TOOLS),
        (filter.prompts_list_changed, LISTED_PROMPTS),
        (filter.resources_list_changed, LISTED_RESOURCES),
    ] {
        if on == Some(true) {
            kinds |= kind;
        }
    }
    kinds
}

/// A 2026-07-28 session's listener on `stream`, the `subscriptions/listen`
/// stream its connect opened (before its tools/list, so no change between
/// the two is lost): each change sets the session's flag as a 2025
/// server's unasked notification does (the follower does the rest). A
/// stream that lagged or broke is opened again after
/// [`LIST_CHANGED_MAX_DELAY`], every list it listens to then counted as
/// changed (a change may have come between); one the server ended or
/// refused is not. Ends when the session closes (its caller) or the
/// session's transport is gone.
async fn listen(
    server: &str,
    peer: Peer<RoleClient>,
    mut stream: Subscription,
    relays: Arc<super::relay::Relays>,
) {
    let filter = stream.acknowledged().clone();
    loop {
        loop {
            match stream.next().await {
                Ok(Some(note)) => match note {
                    ServerNotification::ToolListChangedNotification(_) => {
                        relays.list_changed(LISTED_TOOLS);
                    }
                    ServerNotification::PromptListChangedNotification(_) => {
                        relays.list_changed(LISTED_PROMPTS);
                    }
                    ServerNotification::ResourceListChangedNotification(_) => {
                        relays.list_changed(LISTED_RESOURCES);
                    }
                    _ => {}
                },
                Ok(None) => break,
                Err(e) => {
                    crate::log::emit(crate::log::Level::Warn, "mcp", || {
                        format!(
                            "mcp server \"{server}\": its subscriptions/listen stream failed \
                             ({e})"
                        )
                    });
                    break;
                }
            }
        }
        match stream.end() {
            Some(SubscriptionEnd::Lagged { .. } | SubscriptionEnd::Abrupt) | None => {}
            Some(_) => return,
        }
        drop(stream);
        if peer.is_transport_closed() {
            return;
        }
        tokio::time::sleep(LIST_CHANGED_MAX_DELAY).await;
        stream = match peer.listen(filter.clone()).await {
            Ok(stream) => stream,
            Err(e) => {
                crate::log::emit(crate::log::Level::Warn, "mcp", || {
                    format!(
                        "mcp server \"{server}\": subscriptions/listen failed again ({e}); \
                         its list changes are no longer heard"
                    )
                });
                return;
            }
        };
        let kinds = kinds_of(stream.acknowledged());
        if kinds != 0 {
            relays.list_changed(kinds);
        }
    }
}
