//! The runtime's state and its six verbs (SPEC §7D): the handle tree, one
//! lock over it, one condition variable every waiter sleeps on, the trace,
//! and spawn / post / wake / wait / interrupt / close / resume with their
//! checks in the documented order. A turn runs on a thread of its own
//! ([`super::turn`]); everything here is bookkeeping under the lock.

use super::clock::{Clock, SystemClock};
use super::def::{AgentDef, Budget, Registry};
use super::inbox::{drain_block, InboxItem};
use super::turn;
use crate::cancel::CancelToken;
use crate::client::provider::GenerateProvider;
use crate::client::{Callbacks, HostFn, HttpProvider, Provider};
use crate::error::{Error, Result};
use crate::toolkit::Toolkit;
use crate::translate::ClientConfig;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};

/// The state of a handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Idle,
    Running,
    Suspended,
    Closed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Running => "running",
            State::Suspended => "suspended",
            State::Closed => "closed",
        }
    }
}

/// What a task (one handle's work) came to (SPEC §7D, the closed
/// vocabulary `done pending incomplete interrupted closed timeout error`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskResult {
    pub text: String,
    pub is_error: bool,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<Value>,
    /// The handle's own round trips so far (turns never roll up).
    pub turns: u64,
    /// Tokens of the handle's whole subtree.
    pub total_tokens: u64,
    /// Tokens of the handle's own calls.
    pub own_tokens: u64,
    /// Which limit stopped it, when `status` is `incomplete` or `timeout`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
}

impl TaskResult {
    pub(crate) fn new(status: &str, text: impl Into<String>, is_error: bool) -> TaskResult {
        TaskResult {
            text: text.into(),
            is_error,
            status: status.to_string(),
            pending: None,
            turns: 0,
            total_tokens: 0,
            own_tokens: 0,
            limit: None,
        }
    }

    fn limited(mut self, limit: &str) -> TaskResult {
        self.limit = Some(limit.to_string());
        self
    }
}

/// A read-only view of one handle.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HandleView {
    pub id: String,
    pub state: State,
    /// Rolled-up tokens of its subtree.
    pub tokens: u64,
    pub own_tokens: u64,
    pub turns: u64,
    /// Items waiting in its inbox.
    pub inbox: usize,
    /// What is left of its token pool (`None`: unlimited).
    pub pool_tokens: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_kind: Option<String>,
}

/// Called with `(handle id, reason)` as a handle closes.
pub type OnClose = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// Called with a new handle's id, once, before its first turn.
pub type OnSpawn = Arc<dyn Fn(&str) + Send + Sync>;

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
        }
    }
}

/// Token or tool-call pool: `None` is unlimited.
pub(crate) type Pool = Option<i64>;

fn show_pool(p: Pool) -> String {
    p.map_or_else(|| "Infinity".to_string(), |n| n.to_string())
}

fn carve(own: Option<u64>, parent: Pool) -> Pool {
    let own = own.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    match (own, parent) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

pub(crate) struct Handle {
    pub id: String,
    pub def: Option<Arc<AgentDef>>,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    pub depth: u64,
    /// Children ever spawned here (the `.n` of their ids).
    pub spawned: u64,
    pub state: State,
    pub inbox: VecDeque<InboxItem>,
    /// Items the turn in flight drained, held until it completes.
    pub drained: Vec<InboxItem>,
    pub eff: Budget,
    pub pool_tokens: Pool,
    pub pool_tool_calls: Pool,
    pub pool_children: Option<u64>,
    pub wall_deadline: Option<u64>,
    pub tokens: u64,
    pub own_tokens: u64,
    pub tool_calls: u64,
    pub turns: u64,
    pub running_children: u64,
    /// Wakes waiting for a slot of this handle's concurrency: (child, prompt).
    pub queue: VecDeque<(usize, Option<String>)>,
    pub queued: bool,
    pub result: Option<TaskResult>,
    /// Counts the results recorded, so a waiter sees a new one.
    pub seq: u64,
    /// Counts the turns started; a turn whose number is not current any
    /// more (interrupted, closed) discards its outcome.
    pub gen: u64,
    pub cancel: Option<CancelToken>,
    /// The durable suspension: the Request and the turn input to replay.
    pub pending: Option<Value>,
    pub checkpoint: Option<String>,
    /// Suspended inline while an interpreter answers (not durable).
    pub escalating: bool,
    pub task_key: Option<String>,
    pub toolkit: Arc<Toolkit>,
}

pub(crate) struct St {
    pub handles: Vec<Handle>,
    pub index: HashMap<String, usize>,
    pub trace: Vec<String>,
    pub turns_in_flight: usize,
    pub max_observed_turns: usize,
    /// Waiters asleep in `wait` right now.
    pub sleepers: usize,
    /// The one conversation store: each handle's transcript by its id.
    pub store: HashMap<String, Vec<Value>>,
}

impl St {
    pub fn trace(&mut self, i: usize, line: impl std::fmt::Display) {
        let id = &self.handles[i].id;
        self.trace.push(format!("{id}: {line}"));
    }

    /// `i` and its ancestors, nearest first.
    pub fn chain(&self, i: usize) -> Vec<usize> {
        let mut out = vec![i];
        let mut at = i;
        while let Some(p) = self.handles[at].parent {
            out.push(p);
            at = p;
        }
        out
    }

    pub fn view(&self, i: usize) -> HandleView {
        let h = &self.handles[i];
        HandleView {
            id: h.id.clone(),
            state: h.state,
            tokens: h.tokens,
            own_tokens: h.own_tokens,
            turns: h.turns,
            inbox: h.inbox.len(),
            pool_tokens: h.pool_tokens,
            pending_kind: h
                .pending
                .as_ref()
                .and_then(|p| p.get("kind"))
                .and_then(Value::as_str)
                .map(str::to_string),
        }
    }
}

pub(crate) struct Inner {
    pub st: Mutex<St>,
    pub cv: Condvar,
    pub registry: Registry,
    pub config: ClientConfig,
    pub provider: Arc<dyn Provider>,
    pub toolkit: Option<Arc<Toolkit>>,
    pub inbox_cap: usize,
    pub max_concurrent_turns: usize,
    pub shutdown_ms: u64,
    pub clock: Arc<dyn Clock>,
    pub hooks: Callbacks,
    pub on_close: Option<OnClose>,
    pub on_spawn: Option<OnSpawn>,
    pub me: Weak<Inner>,
}

impl Inner {
    pub fn lock(&self) -> MutexGuard<'_, St> {
        self.st.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sleeps on the condition variable until told, or until `deadline_ms`
    /// on the runtime clock (a manual clock wakes its waiters as it moves).
    pub fn sleep<'a>(&self, g: MutexGuard<'a, St>, deadline_ms: Option<u64>) -> MutexGuard<'a, St> {
        match deadline_ms {
            Some(d) if !self.clock.is_manual() => {
                let left = d.saturating_sub(self.clock.now_ms());
                match self
                    .cv
                    .wait_timeout(g, std::time::Duration::from_millis(left.max(1)))
                {
                    Ok((g, _)) => g,
                    Err(p) => p.into_inner().0,
                }
            }
            _ => self.cv.wait(g).unwrap_or_else(PoisonError::into_inner),
        }
    }

    fn find(&self, st: &St, id: &str) -> std::result::Result<usize, String> {
        st.index
            .get(id)
            .copied()
            .ok_or_else(|| format!("unknown handle \"{id}\""))
    }

    /// Records a handle's result (with its counters) and wakes waiters.
    pub fn settle(&self, st: &mut St, i: usize, mut r: TaskResult) {
        let h = &mut st.handles[i];
        r.turns = h.turns;
        r.total_tokens = h.tokens;
        r.own_tokens = h.own_tokens;
        h.result = Some(r);
        h.seq += 1;
        self.cv.notify_all();
    }

    /// The budget walk over `i` and its ancestors: the first pool spent or
    /// wall deadline passed, by its limit name.
    fn exhausted(&self, st: &St, i: usize) -> Option<&'static str> {
        let now = self.clock.now_ms();
        st.chain(i).into_iter().find_map(|a| {
            let h = &st.handles[a];
            if h.pool_tokens.is_some_and(|t| t <= 0) {
                Some("maxTokens")
            } else if h.pool_tool_calls.is_some_and(|t| t <= 0) {
                Some("maxToolCalls")
            } else if h.wall_deadline.is_some_and(|d| now >= d) {
                Some("maxWallMs")
            } else {
                None
            }
        })
    }

    /// Admission of a wake, as one step under the lock: the live budget
    /// walk, the parent's slot, the drain, the flip to running, the turn.
    fn admit(&self, st: &mut St, i: usize, prompt: Option<String>, why: &str) {
        if let Some(limit) = self.exhausted(st, i) {
            st.trace(i, format!("wake REFUSED (budget exhausted ({limit}))"));
            let r = TaskResult::new(
                "incomplete",
                format!("budget exhausted ({limit}); partial work preserved"),
                true,
            )
            .limited(limit);
            self.settle(st, i, r);
            return;
        }
        let items: Vec<InboxItem> = st.handles[i].inbox.drain(..).collect();
        let input = format!("{}{}", prompt.unwrap_or_default(), drain_block(&items));
        st.handles[i].drained = items;
        self.start(st, i, input, None, why);
    }

    /// Takes the parent's slot, flips `i` to running and starts its turn
    /// on `input` (with `answer` as a one-shot interpreter on a resume).
    pub fn start(&self, st: &mut St, i: usize, input: String, answer: Option<Value>, why: &str) {
        if let Some(p) = st.handles[i].parent {
            st.handles[p].running_children += 1;
        }
        let cancel = CancelToken::new();
        let h = &mut st.handles[i];
        h.state = State::Running;
        h.gen += 1;
        h.cancel = Some(cancel.clone());
        let gen = h.gen;
        st.trace(i, format!("idle→running ({why})"));
        self.cv.notify_all();
        let Some(inner) = self.me.upgrade() else {
            return;
        };
        let job = turn::Job {
            index: i,
            gen,
            input,
            cancel,
            answer,
        };
        let spawned = std::thread::Builder::new()
            .name("toolnexus-agent".into())
            .spawn(move || turn::run(inner, job));
        if let Err(e) = spawned {
            self.fail_start(st, i, gen, &format!("cannot start a turn thread: {e}"));
        }
    }

    fn fail_start(&self, st: &mut St, i: usize, gen: u64, why: &str) {
        if st.handles[i].gen == gen {
            st.handles[i].state = State::Idle;
            self.restore_drained(st, i);
            self.release_slot(st, i);
            st.trace(i, format!("running→idle (error: {why})"));
            self.settle(st, i, TaskResult::new("error", why, true));
        }
    }

    /// The drained items back at the front of the inbox.
    pub fn restore_drained(&self, st: &mut St, i: usize) {
        let h = &mut st.handles[i];
        for item in h.drained.drain(..).rev() {
            h.inbox.push_front(item);
        }
    }

    /// Gives back the parent's slot `i` held and admits queued sibling
    /// wakes, in order, while slots are free.
    pub fn release_slot(&self, st: &mut St, i: usize) {
        let Some(p) = st.handles[i].parent else {
            return;
        };
        let ph = &mut st.handles[p];
        ph.running_children = ph.running_children.saturating_sub(1);
        while st.handles[p].running_children < st.handles[p].eff.concurrent() {
            let Some((next, prompt)) = st.handles[p].queue.pop_front() else {
                break;
            };
            if !st.handles[next].queued || st.handles[next].state != State::Idle {
                st.handles[next].queued = false;
                continue;
            }
            st.handles[next].queued = false;
            st.trace(next, "DEQUEUED wake (slot freed)");
            self.admit(st, next, prompt, "dequeued");
        }
    }

    pub fn spawn(
        &self,
        parent: &str,
        def_name: &str,
        budget: Option<&Budget>,
    ) -> std::result::Result<String, String> {
        let def = self.registry.get(def_name).cloned().ok_or_else(|| {
            format!(
                "unknown agent \"{def_name}\" (known: {})",
                self.registry.names().join(", ")
            )
        })?;
        let mut st = self.lock();
        let p = self.find(&st, parent)?;
        let ph = &st.handles[p];
        if ph.state == State::Closed {
            return Err(format!("parent closed: {parent}"));
        }
        if ph.depth + 1 > ph.eff.depth() {
            return Err(format!(
                "maxDepth {} exceeded: {parent} cannot spawn below depth {}",
                ph.eff.depth(),
                ph.depth
            ));
        }
        if let Some(max) = ph.pool_children {
            if ph.spawned + 1 > max {
                return Err(format!(
                    "maxChildren {max} exceeded: {parent} has spawned {}",
                    ph.spawned
                ));
            }
        }
        if let Some(limit) = self.exhausted(&st, p) {
            return Err(format!("budget exhausted ({limit}): {parent} cannot spawn"));
        }
        let eff = match budget {
            Some(b) => def.budget.merged(b),
            None => def.budget,
        };
        let toolkit = self.handle_toolkit(&def, st.handles.len())?;
        let ph = &mut st.handles[p];
        ph.spawned += 1;
        let id = format!("{}/{}.{}", ph.id, def.name, ph.spawned);
        let now = self.clock.now_ms();
        let wall = match (
            eff.max_wall_ms.map(|w| now.saturating_add(w)),
            ph.wall_deadline,
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let h = Handle {
            id: id.clone(),
            def: Some(def),
            parent: Some(p),
            children: Vec::new(),
            depth: ph.depth + 1,
            spawned: 0,
            state: State::Idle,
            inbox: VecDeque::new(),
            drained: Vec::new(),
            eff,
            pool_tokens: carve(eff.max_tokens, ph.pool_tokens),
            pool_tool_calls: carve(eff.max_tool_calls, ph.pool_tool_calls),
            pool_children: eff.max_children,
            wall_deadline: wall,
            tokens: 0,
            own_tokens: 0,
            tool_calls: 0,
            turns: 0,
            running_children: 0,
            queue: VecDeque::new(),
            queued: false,
            result: None,
            seq: 0,
            gen: 0,
            cancel: None,
            pending: None,
            checkpoint: None,
            escalating: false,
            task_key: None,
            toolkit,
        };
        let (depth, pool) = (h.depth, h.pool_tokens);
        let i = st.handles.len();
        st.handles.push(h);
        st.handles[p].children.push(i);
        st.index.insert(id.clone(), i);
        st.trace(
            i,
            format!("spawned (depth {depth}, tokens {})", show_pool(pool)),
        );
        self.cv.notify_all();
        drop(st);
        if let Some(f) = &self.on_spawn {
            f(&id);
        }
        Ok(id)
    }

    /// The toolkit of a handle of `def`: its tools from the runtime's
    /// toolkit, plus `task` when it has a team. Builtins never.
    fn handle_toolkit(
        &self,
        def: &AgentDef,
        index: usize,
    ) -> std::result::Result<Arc<Toolkit>, String> {
        let kit = Toolkit::build_from_json(r#"{"builtins":false}"#).map_err(|e| e.to_string())?;
        if !def.team.is_empty() {
            let team = def
                .team
                .iter()
                .map(|n| {
                    let does = self
                        .registry
                        .get(n)
                        .map(|d| d.does.clone())
                        .unwrap_or_default();
                    (n.clone(), does)
                })
                .collect();
            kit.register(super::task::tool(self.me.clone(), index, team));
        }
        for name in &def.tools {
            let tool = self
                .toolkit
                .as_ref()
                .and_then(|t| t.find(name))
                .ok_or_else(|| format!("agent \"{}\": unknown tool \"{name}\"", def.name))?;
            kit.register(crate::tool::Tool::clone(&tool));
        }
        Ok(Arc::new(kit))
    }

    pub fn post(&self, id: &str, item: InboxItem) -> std::result::Result<(), String> {
        let mut st = self.lock();
        let i = self.find(&st, id)?;
        if st.handles[i].state == State::Closed {
            return Err(format!("inbox closed: {id}"));
        }
        if st.handles[i].inbox.len() >= self.inbox_cap {
            let cap = self.inbox_cap;
            st.trace(
                i,
                format!("post REJECTED (inbox full, cap {cap}) from {}", item.from),
            );
            self.cv.notify_all();
            return Err(format!("inbox full: {id} (cap {cap})"));
        }
        st.handles[i].inbox.push_back(item);
        Ok(())
    }

    pub fn wake(&self, id: &str, prompt: Option<String>) -> std::result::Result<(), String> {
        let mut st = self.lock();
        let i = self.find(&st, id)?;
        self.wake_locked(&mut st, i, prompt)
    }

    pub fn wake_locked(
        &self,
        st: &mut St,
        i: usize,
        prompt: Option<String>,
    ) -> std::result::Result<(), String> {
        let h = &st.handles[i];
        match h.state {
            State::Closed => return Err(format!("closed: {}", h.id)),
            State::Running | State::Suspended => return Ok(()),
            State::Idle if h.queued => return Ok(()),
            State::Idle => {}
        }
        if let Some(p) = h.parent {
            let max = st.handles[p].eff.concurrent();
            if st.handles[p].running_children >= max {
                st.handles[p].queue.push_back((i, prompt));
                st.handles[i].queued = true;
                st.trace(i, format!("wake QUEUED (parent concurrency {max})"));
                self.cv.notify_all();
                return Ok(());
            }
        }
        self.admit(st, i, prompt, "wake");
        Ok(())
    }

    /// Waits for `i`'s next result (or its settled one), up to `timeout_ms`
    /// on the runtime clock; `cancel` ends the wait early as `interrupted`.
    pub fn wait_index(
        &self,
        mut st: MutexGuard<'_, St>,
        i: usize,
        timeout_ms: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> TaskResult {
        let deadline = timeout_ms.map(|t| self.clock.now_ms().saturating_add(t));
        let start_seq = st.handles[i].seq;
        loop {
            let h = &st.handles[i];
            match h.state {
                State::Closed => {
                    return h.result.clone().unwrap_or_else(closed_result);
                }
                State::Suspended if !h.escalating => {
                    let mut r = TaskResult::new(
                        "pending",
                        h.pending
                            .as_ref()
                            .and_then(|p| p.get("prompt"))
                            .and_then(Value::as_str)
                            .unwrap_or(""),
                        false,
                    );
                    r.pending = h.pending.clone();
                    r.turns = h.turns;
                    r.total_tokens = h.tokens;
                    r.own_tokens = h.own_tokens;
                    return r;
                }
                State::Idle if !h.queued && (h.seq != start_seq || h.result.is_some()) => {
                    if let Some(r) = &h.result {
                        return r.clone();
                    }
                }
                _ => {}
            }
            if cancel.is_some_and(CancelToken::is_cancelled) {
                return TaskResult::new("interrupted", "interrupted", true);
            }
            if let Some(d) = deadline {
                if self.clock.now_ms() >= d {
                    let t = timeout_ms.unwrap_or(0);
                    return TaskResult::new(
                        "timeout",
                        format!(
                            "wait timeout after {t}ms (child still {})",
                            h.state.as_str()
                        ),
                        true,
                    )
                    .limited("timeout");
                }
            }
            st.sleepers += 1;
            self.cv.notify_all();
            st = self.sleep(st, deadline);
            st.sleepers -= 1;
        }
    }

    /// Aborts the turn in flight on `i` (already known running): the
    /// drained items back in front, the slot given back, `state` set.
    fn abort(&self, st: &mut St, i: usize) {
        if let Some(c) = st.handles[i].cancel.take() {
            c.cancel();
        }
        st.handles[i].gen += 1;
        st.handles[i].escalating = false;
        self.restore_drained(st, i);
        self.release_slot(st, i);
        self.cv.notify_all();
    }

    pub fn interrupt(&self, id: &str) -> std::result::Result<(), String> {
        let mut st = self.lock();
        let i = self.find(&st, id)?;
        let h = &st.handles[i];
        match h.state {
            State::Suspended if !h.escalating => {
                let kind = kind_of(h.pending.as_ref());
                let h = &mut st.handles[i];
                h.pending = None;
                h.checkpoint = None;
                h.state = State::Idle;
                self.restore_drained(&mut st, i);
                st.trace(
                    i,
                    format!("suspended→idle (interrupt cancelled pending \"{kind}\")"),
                );
                self.settle(
                    &mut st,
                    i,
                    TaskResult::new("interrupted", "interrupted", true),
                );
            }
            State::Running | State::Suspended => {
                let from = h.state;
                self.abort(&mut st, i);
                st.handles[i].state = State::Idle;
                let n = st.handles[i].inbox.len();
                st.trace(
                    i,
                    format!(
                        "{}→idle (interrupted; inbox intact: {n} items)",
                        from.as_str()
                    ),
                );
                self.settle(
                    &mut st,
                    i,
                    TaskResult::new("interrupted", "interrupted", true),
                );
            }
            State::Idle | State::Closed => {}
        }
        Ok(())
    }

    pub fn close(
        &self,
        id: &str,
        force: bool,
        reason: Option<&str>,
    ) -> std::result::Result<(), String> {
        let i = {
            let st = self.lock();
            self.find(&st, id)?
        };
        let reason = reason
            .unwrap_or(if force { "interrupted" } else { "closed" })
            .to_string();
        self.close_index(i, force, &reason);
        Ok(())
    }

    fn close_index(&self, i: usize, force: bool, reason: &str) {
        let children = {
            let st = self.lock();
            if st.handles[i].state == State::Closed {
                return;
            }
            st.handles[i].children.clone()
        };
        for c in children {
            self.close_index(c, force, reason);
        }
        let mut st = self.lock();
        if st.handles[i].state == State::Closed {
            return;
        }
        if st.handles[i].state == State::Running && !force {
            let deadline = self.clock.now_ms().saturating_add(self.shutdown_ms);
            while st.handles[i].state == State::Running && self.clock.now_ms() < deadline {
                st = self.sleep(st, Some(deadline));
            }
        }
        let from = st.handles[i].state;
        let mut interrupted = false;
        match from {
            State::Running | State::Suspended if st.handles[i].pending.is_none() => {
                self.abort(&mut st, i);
                interrupted = true;
            }
            State::Suspended => {
                st.handles[i].pending = None;
                st.handles[i].checkpoint = None;
                self.restore_drained(&mut st, i);
            }
            _ => {}
        }
        if st.handles[i].queued {
            st.handles[i].queued = false;
            if let Some(p) = st.handles[i].parent {
                st.handles[p].queue.retain(|(c, _)| *c != i);
            }
        }
        st.handles[i].state = State::Closed;
        st.trace(i, format!("{}→closed ({reason})", from.as_str()));
        if interrupted || from == State::Suspended || st.handles[i].result.is_none() {
            self.settle(&mut st, i, closed_result());
        } else {
            self.cv.notify_all();
        }
        let id = st.handles[i].id.clone();
        drop(st);
        if i != 0 {
            if let Some(f) = &self.on_close {
                f(&id, reason);
            }
        }
    }

    /// SPEC §10 durable resume: the deepest suspended handle replays its
    /// checkpoint with `answer`, then each suspended ancestor below the root
    /// replays its own (its `task` call reattaches to the finished child).
    pub fn resume(&self, answer: Value) -> std::result::Result<TaskResult, String> {
        let ok = answer.get("ok").and_then(Value::as_bool).unwrap_or(false);
        let mut st = self.lock();
        let leaf = deepest_suspended(&st, 0).ok_or_else(|| "no suspended handle".to_string())?;
        let turns = st.handles[leaf].turns;
        st.trace(
            leaf,
            format!("resume with Answer(ok={ok}) at checkpoint (turns so far: {turns})"),
        );
        self.replay(&mut st, leaf, Some(answer));
        let mut r = self.wait_index(st, leaf, None, None);
        let mut at = leaf;
        loop {
            if r.status == "pending" {
                return Ok(r);
            }
            let st = self.lock();
            let Some(p) = st.handles[at].parent.filter(|p| *p != 0) else {
                return Ok(r);
            };
            if st.handles[p].state != State::Suspended || st.handles[p].pending.is_none() {
                return Ok(r);
            }
            let mut st = st;
            self.replay(&mut st, p, None);
            r = self.wait_index(st, p, None, None);
            at = p;
        }
    }

    fn replay(&self, st: &mut St, i: usize, answer: Option<Value>) {
        let h = &mut st.handles[i];
        h.pending = None;
        h.state = State::Idle;
        let input = h.checkpoint.take().unwrap_or_default();
        st.trace(i, "suspended→idle (resume)");
        self.start(st, i, input, answer, "resume");
    }
}

fn kind_of(pending: Option<&Value>) -> String {
    pending
        .and_then(|p| p.get("kind"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn closed_result() -> TaskResult {
    TaskResult::new("closed", "closed", true)
}

fn deepest_suspended(st: &St, i: usize) -> Option<usize> {
    for &c in &st.handles[i].children {
        if let Some(found) = deepest_suspended(st, c) {
            return Some(found);
        }
    }
    let h = &st.handles[i];
    (h.state == State::Suspended && h.pending.is_some()).then_some(i)
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
        let root = Handle {
            id: "root".into(),
            def: None,
            parent: None,
            children: Vec::new(),
            depth: 0,
            spawned: 0,
            state: State::Idle,
            inbox: VecDeque::new(),
            drained: Vec::new(),
            eff: Budget::default(),
            pool_tokens: None,
            pool_tool_calls: None,
            pool_children: None,
            wall_deadline: None,
            tokens: 0,
            own_tokens: 0,
            tool_calls: 0,
            turns: 0,
            running_children: 0,
            queue: VecDeque::new(),
            queued: false,
            result: None,
            seq: 0,
            gen: 0,
            cancel: None,
            pending: None,
            checkpoint: None,
            escalating: false,
            task_key: None,
            toolkit: Arc::new(Toolkit::build_from_json(r#"{"builtins":false}"#)?),
        };
        let clock = opts.clock;
        let inner = Arc::new_cyclic(|me| Inner {
            st: Mutex::new(St {
                handles: vec![root],
                index: HashMap::from([("root".to_string(), 0)]),
                trace: Vec::new(),
                turns_in_flight: 0,
                max_observed_turns: 0,
                sleepers: 0,
                store: HashMap::new(),
            }),
            cv: Condvar::new(),
            registry: opts.registry,
            config,
            provider,
            toolkit: opts.toolkit,
            inbox_cap: opts.inbox_cap,
            max_concurrent_turns: opts.max_concurrent_turns,
            shutdown_ms: opts.shutdown_ms,
            clock: Arc::clone(&clock),
            hooks: opts.hooks,
            on_close: opts.on_close,
            on_spawn: opts.on_spawn,
            me: me.clone(),
        });
        let weak = Arc::downgrade(&inner);
        clock.subscribe(Box::new(move || {
            if let Some(inner) = weak.upgrade() {
                let _g = inner.lock();
                inner.cv.notify_all();
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
            st = match self.inner.cv.wait_timeout(st, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// Waits until a trace line contains `needle`, for at most `max` of
    /// real time; whether one does. (Waiters are woken by every transition,
    /// spawn, queued wake and rejected post.)
    pub fn await_trace(&self, needle: &str, max: std::time::Duration) -> bool {
        let until = std::time::Instant::now() + max;
        let mut st = self.inner.lock();
        let mut seen = 0;
        loop {
            if st.trace[seen..].iter().any(|l| l.contains(needle)) {
                return true;
            }
            seen = st.trace.len();
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            st = match self.inner.cv.wait_timeout(st, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
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
            st = match self.inner.cv.wait_timeout(st, left) {
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

    /// The transition trace, one line per event.
    pub fn trace(&self) -> Vec<String> {
        self.inner.lock().trace.clone()
    }

    /// A handle's stored transcript (empty when none).
    pub fn transcript(&self, id: &str) -> Vec<Value> {
        self.inner.lock().store.get(id).cloned().unwrap_or_default()
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
