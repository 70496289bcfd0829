//! The runtime (SPEC §7D): how it is built (the options, where its LLM
//! calls go) and its verbs — spawn / post / wake / wait / interrupt /
//! close / resume, `list`/`inspect`, the trace. The state and its
//! bookkeeping under the lock live in [`super::state`]; a turn runs on a
//! thread of its own ([`super::turn`]), and this file is what ties the two
//! together: it hands the state the turn runner and the `task` tool
//! builder when it builds it.

use super::clock::{Clock, SystemClock};
use super::def::{Budget, Registry};
use super::durable::{Durable, TREE};
use super::inbox::InboxItem;
use super::state::{Handle, HandleView, Inner, OnClose, OnSpawn, St, State, TaskResult};
use super::{task, turn};
use crate::cancel::{CancelToken, OnCancel};
use crate::client::provider::GenerateProvider;
use crate::client::{Callbacks, HostFn, HttpProvider, Provider};
use crate::error::{Error, ErrorCode, Result};
use crate::store::Kind;
use crate::toolkit::Toolkit;
use crate::translate::ClientConfig;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, Weak};

/// Where a runtime's LLM calls go: a client config (the HTTP provider), an
/// in-process `generate` function, or any [`Provider`]. The config gives
/// the style and the model `"inherit"` means.
pub enum Llm {
    Http(ClientConfig),
    Generate(ClientConfig, HostFn),
    Provider(ClientConfig, Arc<dyn Provider>),
}

/// How a runtime is built.
pub struct RuntimeOptions {
    pub registry: Registry,
    pub llm: Llm,
    /// The toolkit agents' `tools` are looked up in.
    pub toolkit: Option<Arc<Toolkit>>,
    /// Items an inbox holds (default 8).
    pub inbox_cap: usize,
    /// LLM calls in flight at once across the runtime (default 8).
    pub max_concurrent_turns: usize,
    /// How long a graceful close waits for a running turn (default 200).
    pub shutdown_ms: u64,
    pub clock: Arc<dyn Clock>,
    /// Runtime-wide §8 hooks (`beforeLLM`, `afterLLM`, `beforeTool`,
    /// `afterTool`, `onError`, `onMetric`) every handle's runs get.
    pub hooks: Callbacks,
    pub on_close: Option<OnClose>,
    pub on_spawn: Option<OnSpawn>,
    /// Where transcripts and checkpoints are also written (`None`: this
    /// process's memory only); see `agents::durable`.
    pub store: Option<Arc<dyn crate::store::Store>>,
}

impl RuntimeOptions {
    pub fn new(registry: Registry, llm: Llm) -> RuntimeOptions {
        RuntimeOptions {
            registry,
            llm,
            toolkit: None,
            inbox_cap: 8,
            max_concurrent_turns: 8,
            shutdown_ms: 200,
            clock: Arc::new(SystemClock::default()),
            hooks: Callbacks::default(),
            on_close: None,
            on_spawn: None,
            store: None,
        }
    }
}

/// A runtime: the handle tree of one registry, driven by the six verbs.
/// Cheap to clone; every clone is the same runtime.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("agents", &self.inner.registry.names())
            .finish()
    }
}

impl Runtime {
    /// A runtime with only its root handle (`root`).
    pub fn new(opts: RuntimeOptions) -> Result<Runtime> {
        if opts.inbox_cap == 0 || opts.max_concurrent_turns == 0 {
            return Err(Error::invalid_config(
                "inboxCap and maxConcurrentTurns must be 1 or more",
            ));
        }
        opts.registry.check(opts.toolkit.as_deref())?;
        let (config, provider): (ClientConfig, Arc<dyn Provider>) = match opts.llm {
            Llm::Http(c) => (c.clone(), Arc::new(HttpProvider { config: c })),
            Llm::Generate(c, g) => (
                c,
                Arc::new(GenerateProvider {
                    generate: g,
                    retries: 0,
                }),
            ),
            Llm::Provider(c, p) => (c, p),
        };
        let root = Handle::fresh("root");
        let clock = opts.clock;
        // The store's writer tells the trace of a write that failed, once
        // the runtime it writes for exists.
        let runtime: Arc<std::sync::OnceLock<Weak<Inner>>> = Arc::default();
        let durable = match opts.store {
            None => None,
            Some(store) => {
                let rt = Arc::clone(&runtime);
                let on_failure = Box::new(move |kind: Kind, id: &str, why: &str| {
                    let Some(inner) = rt.get().and_then(Weak::upgrade) else {
                        return;
                    };
                    let mut st = inner.lock();
                    if let Some(&i) = st.index.get(id) {
                        st.trace(i, format_args!("{} not saved: {why}", kind.as_str()));
                    }
                });
                Some(
                    Durable::start(store, on_failure)
                        .map_err(|e| Error::new(ErrorCode::Internal, e))?,
                )
            }
        };
        let inner = Arc::new_cyclic(|me| Inner {
            st: Mutex::new(St {
                handles: vec![Box::new(root)],
                index: HashMap::from([(Arc::from("root"), 0)]),
                // Room for a small tree's lines from the start: growing by
                // copies goes past 1 KiB twice on the way.
                trace: VecDeque::with_capacity(crate::limits::AGENT_TRACE_LINES.min(64)),
                trace_dropped: 0,
                trace_cap: crate::limits::AGENT_TRACE_LINES,
                closed: VecDeque::new(),
                closed_kept: crate::limits::AGENT_CLOSED_KEPT,
                lingering: VecDeque::new(),
                free: Vec::new(),
                serials: 0,
                turns_in_flight: 0,
                max_observed_turns: 0,
                sleepers: 0,
                shared_sleepers: 0,
                waited: HashMap::new(),
                store: HashMap::new(),
                capture: false,
                captured: None,
                releasing: false,
                restore_error: None,
                tree_not_ours: false,
            }),
            cv: Condvar::new(),
            #[cfg(test)]
            sleepers_cv: Condvar::new(),
            registry: opts.registry,
            config,
            provider,
            toolkit: opts.toolkit,
            def_kits: Default::default(),
            metrics: Arc::new(crate::client::metrics::Registry::new()),
            inbox_cap: opts.inbox_cap,
            max_concurrent_turns: opts.max_concurrent_turns,
            shutdown_ms: opts.shutdown_ms,
            clock: Arc::clone(&clock),
            hooks: opts.hooks,
            on_close: opts.on_close,
            on_spawn: opts.on_spawn,
            durable,
            me: me.clone(),
            run_turn: turn::run,
            task_tool: task::tool,
        });
        let _ = runtime.set(Arc::downgrade(&inner));
        // A suspended tree an earlier runtime left in the store is carried
        // on here (read before any turn of this runtime can write one).
        if let Some(d) = &inner.durable {
            inner.restore(d.load(Kind::Checkpoint, TREE), &d.selector());
        }
        let weak = Arc::downgrade(&inner);
        clock.subscribe(Box::new(move || {
            if let Some(inner) = weak.upgrade() {
                let st = inner.lock();
                inner.notify_everyone(&st);
            }
        }));
        Ok(Runtime { inner })
    }

    /// Spawns a handle of `def` under `parent`; its id, or why not.
    pub fn spawn(
        &self,
        parent: &str,
        def: &str,
        budget: Option<&Budget>,
    ) -> std::result::Result<String, String> {
        self.inner.spawn(parent, def, budget)
    }

    /// Appends to a handle's inbox (never a transition).
    pub fn post(&self, id: &str, item: InboxItem) -> std::result::Result<(), String> {
        self.inner.post(id, item)
    }

    /// Starts a turn on an idle handle (queued behind its parent's
    /// concurrency); a no-op on a running or suspended one.
    pub fn wake(&self, id: &str, prompt: Option<&str>) -> std::result::Result<(), String> {
        self.inner.wake(id, prompt.map(str::to_string))
    }

    /// The handle's settled result, or its next one; `timeout_ms` on the
    /// runtime clock ends the wait with a `timeout` result.
    pub fn wait(&self, id: &str, timeout_ms: Option<u64>) -> TaskResult {
        let st = self.inner.lock();
        match self.inner.find(&st, id) {
            Ok(i) => self.inner.wait_index(st, i, timeout_ms, None),
            Err(e) => TaskResult::new("error", e, true),
        }
    }

    /// [`Runtime::wait`], also ended by `cancel` (with an `interrupted`
    /// result) — triggered from any thread, it wakes the wait at once.
    pub fn wait_cancellable(
        &self,
        id: &str,
        timeout_ms: Option<u64>,
        cancel: &CancelToken,
    ) -> TaskResult {
        let hook = Arc::new(WakeWaiters(Arc::downgrade(&self.inner)));
        cancel.register(&hook);
        let st = self.inner.lock();
        let r = match self.inner.find(&st, id) {
            Ok(i) => self.inner.wait_index(st, i, timeout_ms, Some(cancel)),
            Err(e) => TaskResult::new("error", e, true),
        };
        cancel.deregister(&hook);
        r
    }

    /// Aborts a running turn (the inbox restored) or drops a suspension.
    pub fn interrupt(&self, id: &str) -> std::result::Result<(), String> {
        self.inner.interrupt(id)
    }

    /// Closes a handle and its subtree, leaf first. `close("root", …)`
    /// stops everything.
    pub fn close(
        &self,
        id: &str,
        force: bool,
        reason: Option<&str>,
    ) -> std::result::Result<(), String> {
        self.inner.close(id, force, reason)
    }

    /// SPEC §10 durable resume with the host's Answer.
    pub fn resume(&self, answer: Value) -> std::result::Result<TaskResult, String> {
        self.inner.resume(answer)
    }

    /// Spawns `entry` under the root, wakes it with `prompt` and waits.
    pub fn run(
        &self,
        entry: &str,
        prompt: &str,
    ) -> std::result::Result<(String, TaskResult), String> {
        let id = self.spawn("root", entry, None)?;
        self.wake(&id, Some(prompt))?;
        let r = self.wait(&id, None);
        Ok((id, r))
    }

    /// Waits until the handle is in `state`, for at most `max` of real
    /// time; whether it got there.
    pub fn await_state(&self, id: &str, state: State, max: std::time::Duration) -> bool {
        let until = std::time::Instant::now() + max;
        let mut st = self.inner.lock();
        let Some(&i) = st.index.get(id) else {
            return false;
        };
        loop {
            if st.handles[i].state == state {
                return true;
            }
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self.inner.sleep_for(st, Some(left));
        }
    }

    /// Waits until a trace line contains `needle`, for at most `max` of
    /// real time; whether one does. (Waiters are woken by every transition,
    /// spawn, queued wake and rejected post.)
    pub fn await_trace(&self, needle: &str, max: std::time::Duration) -> bool {
        let until = std::time::Instant::now() + max;
        let mut st = self.inner.lock();
        // Lines counted from the first ever traced: the front may drop.
        let mut seen: u64 = 0;
        loop {
            let from = usize::try_from(seen.saturating_sub(st.trace_dropped)).unwrap_or(usize::MAX);
            if st
                .trace
                .iter()
                .skip(from)
                .any(|l| l.to_string().contains(needle))
            {
                return true;
            }
            seen = st.trace_dropped + st.trace.len() as u64;
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self.inner.sleep_for(st, Some(left));
        }
    }

    /// Waits until `n` waiters are asleep in `wait` (their deadlines fixed),
    /// for at most `max` of real time.
    #[cfg(test)]
    pub(crate) fn await_sleepers(&self, n: usize, max: std::time::Duration) -> bool {
        let until = std::time::Instant::now() + max;
        let mut st = self.inner.lock();
        while st.sleepers < n {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            st = match self.inner.sleepers_cv.wait_timeout(st, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        true
    }

    /// SPEC §7D "an Agent is a Tool": a tool named after `entry` (its
    /// description the agent's `does`) that spawns the agent under the
    /// root, runs it on `{prompt}`, closes it and returns only its final
    /// text, with `{agent, turns, totalTokens}` as metadata.
    pub fn as_tool(&self, entry: &str) -> Result<crate::tool::Tool> {
        let def = self.inner.registry.get(entry).cloned().ok_or_else(|| {
            Error::invalid_argument(format!(
                "unknown agent \"{entry}\" (known: {})",
                self.inner.registry.names().join(", ")
            ))
        })?;
        let rt = self.clone();
        let name = def.name.clone();
        let schema = json!({"type": "object", "properties": {"prompt": {"type": "string"}},
                            "required": ["prompt"]});
        Ok(crate::native::native_tool(
            def.name.clone(),
            def.does.clone(),
            Some(schema),
            Arc::new(move |args: &Value, _: &crate::tool::ExecContext| {
                let Some(prompt) = args.get("prompt").and_then(Value::as_str) else {
                    return crate::tool::ToolResult::error(format!(
                        "{name}: prompt must be a string"
                    ));
                };
                let (id, r) = match rt.run(&name, prompt) {
                    Ok(done) => done,
                    Err(e) => return crate::tool::ToolResult::error(e),
                };
                let _ = rt.close(&id, false, None);
                let mut md = serde_json::Map::new();
                md.insert("agent".into(), json!(name));
                md.insert("turns".into(), json!(r.turns));
                md.insert("totalTokens".into(), json!(r.total_tokens));
                let out = if r.is_error {
                    crate::tool::ToolResult::error(r.text)
                } else {
                    crate::tool::ToolResult::ok(r.text)
                };
                out.with_metadata(md)
            }),
        ))
    }

    /// Every handle but the root, in tree order.
    pub fn list(&self) -> Vec<HandleView> {
        let st = self.inner.lock();
        let mut out = Vec::new();
        let mut stack: Vec<usize> = st.handles[0].children.iter().rev().copied().collect();
        while let Some(i) = stack.pop() {
            out.push(st.view(i));
            stack.extend(st.handles[i].children.iter().rev());
        }
        out
    }

    pub fn inspect(&self, id: &str) -> Option<HandleView> {
        let st = self.inner.lock();
        st.index.get(id).map(|&i| st.view(i))
    }

    /// The transition trace, one line per event: the latest
    /// [`AGENT_TRACE_LINES`](crate::limits::AGENT_TRACE_LINES).
    pub fn trace(&self) -> Vec<String> {
        let st = self.inner.lock();
        st.trace.iter().map(ToString::to_string).collect()
    }

    /// A handle's stored transcript (empty when none): this runtime's, or
    /// with a store, what the store holds for a handle of this id that has
    /// not run here.
    pub fn transcript(&self, id: &str) -> Vec<Value> {
        if let Some(m) = self.inner.lock().store.get(id) {
            return m.clone();
        }
        match self
            .inner
            .durable
            .as_ref()
            .map(|d| d.load(Kind::Conversation, id))
        {
            Some(Ok(Some(Value::Array(m)))) => m,
            _ => Vec::new(),
        }
    }

    /// Waits until the runtime's store has every transcript and checkpoint
    /// written so far, at most `within`; `true` when it has (and when
    /// there is no store).
    pub fn flush(&self, within: std::time::Duration) -> bool {
        self.inner.durable.as_ref().is_none_or(|d| d.flush(within))
    }

    /// The host is letting the runtime go: handles closed from now on
    /// leave their suspensions in the store, for a later runtime on it to
    /// resume.
    pub(crate) fn keep_suspensions(&self) {
        self.inner.lock().releasing = true;
    }

    /// A test's stand-in for the process dying at a chosen write of the
    /// store (see `Durable::crash_when`).
    #[cfg(test)]
    pub(crate) fn crash_when(&self, crash: super::durable::Crash) {
        if let Some(d) = &self.inner.durable {
            d.crash_when(crash);
        }
    }

    /// The most LLM calls seen in flight at once.
    pub fn max_observed_concurrent_turns(&self) -> usize {
        self.inner.lock().max_observed_turns
    }

    /// The runtime as JSON views, for hosts that read it so.
    pub fn list_json(&self) -> Value {
        json!(self.list())
    }
}

/// Wakes a runtime's waiters when a wait's token is cancelled, so that the
/// wait sees it.
struct WakeWaiters(Weak<Inner>);

impl OnCancel for WakeWaiters {
    fn on_cancel(&self) {
        if let Some(inner) = self.0.upgrade() {
            let st = inner.lock();
            inner.notify_everyone(&st);
        }
    }
}
