//! The runtime's state (SPEC §7D): the handle tree, one lock over it, one
//! condition variable every waiter sleeps on, the trace, and the
//! bookkeeping behind spawn / post / wake / wait / interrupt / close /
//! resume with their checks in the documented order. A turn runs on a
//! thread of its own; this file does not name the file that runs it (nor
//! the one that builds the `task` tool): [`Inner::run_turn`] and
//! [`Inner::task_tool`] are set by the runtime when it builds the state,
//! so no two files of the room import each other.

use super::clock::Clock;
use super::def::{AgentDef, Budget, Registry};
use super::durable::{SavedHandle, SavedTree, TREE};
use super::inbox::{drain_block, InboxItem};
use crate::cancel::CancelToken;
use crate::client::{Callbacks, Provider};
use crate::store::Kind;
use crate::tool::Tool;
use crate::toolkit::Toolkit;
use crate::translate::ClientConfig;
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// A turn to run.
pub(crate) struct Job {
    pub index: usize,
    pub gen: u64,
    pub input: String,
    pub cancel: CancelToken,
    /// A resume's Answer: the one-shot interpreter of this turn.
    pub answer: Option<Value>,
    /// Marks the handle's turn as out while the job lives.
    pub _out: Out,
}

/// Counts a handle's turns out (run by a thread, or waiting to be) for as
/// long as it lives, dropped on every path: a closed handle is forgotten,
/// and its slot given to a new handle, only once none is out, so that no
/// thread still holds its index.
pub(crate) struct Out(Arc<AtomicUsize>);

impl Out {
    fn new(count: &Arc<AtomicUsize>) -> Out {
        count.fetch_add(1, Ordering::SeqCst);
        Out(Arc::clone(count))
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs a turn on the calling thread and settles its handle.
pub(crate) type RunTurn = fn(Arc<Inner>, Job);

/// Builds the `task` tool of the handle at an index, for a team of
/// `(name, does)`.
pub(crate) type TaskTool = fn(Weak<Inner>, Vec<(String, String)>) -> Tool;

/// Token or tool-call pool: `None` is unlimited.
pub(crate) type Pool = Option<i64>;

fn show_pool(p: Pool) -> String {
    p.map_or_else(|| "Infinity".to_string(), |n| n.to_string())
}

/// One line of the transition trace (`<id>: <event>`), kept as its parts
/// and written out when read: the four lines every handle's life makes
/// (spawned, started, done, closed) cost a `format!` each when they were
/// text from the start.
/// What the turns of one agent definition share (see [`Inner::def_kits`]).
pub struct DefKit {
    /// The generation of the runtime toolkit's tools `kit` was built from.
    pub generation: u64,
    pub kit: Arc<Toolkit>,
    pub config: Arc<ClientConfig>,
}

pub(crate) struct TraceLine {
    id: Arc<str>,
    event: TraceEvent,
}

/// What a [`TraceLine`] says.
pub(crate) enum TraceEvent {
    /// Any other line, written when traced.
    Text(String),
    /// `spawned (depth D, tokens T)`.
    Spawned { depth: u64, pool: Pool },
    /// `idle→running (why)`.
    Running(&'static str),
    /// `running→idle (done, turns=N, tokens=T)`.
    Done { turns: u64, tokens: u64 },
    /// `<from>→closed (reason)`.
    Closed {
        from: State,
        reason: Cow<'static, str>,
    },
}

impl std::fmt::Display for TraceLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let id = &self.id;
        match &self.event {
            TraceEvent::Text(line) => write!(f, "{id}: {line}"),
            TraceEvent::Spawned { depth, pool } => {
                write!(
                    f,
                    "{id}: spawned (depth {depth}, tokens {})",
                    show_pool(*pool)
                )
            }
            TraceEvent::Running(why) => write!(f, "{id}: idle→running ({why})"),
            TraceEvent::Done { turns, tokens } => {
                write!(
                    f,
                    "{id}: running→idle (done, turns={turns}, tokens={tokens})"
                )
            }
            TraceEvent::Closed { from, reason } => {
                write!(f, "{id}: {}→closed ({reason})", from.as_str())
            }
        }
    }
}

fn carve(own: Option<u64>, parent: Pool) -> Pool {
    let own = own.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    match (own, parent) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

pub(crate) struct Handle {
    pub id: Arc<str>,
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
    /// The input of the turn in flight, kept only on a runtime with a
    /// store: what a parent whose `task` call waits on a parked child
    /// replays after a restart (see [`Inner::parked`]).
    pub turn_input: Option<String>,
    /// The LLM calls of the turn in flight so far (added to `turns` when
    /// it ends).
    pub turn_calls: u64,
    /// The turn (the parent's `gen`) whose `task` call waits on this child.
    pub awaited_in: Option<u64>,
    /// What its turns run with (its definition's toolkit and client
    /// configuration), taken at its first turn: an idle handle holds none,
    /// so 10,000 idle handles stay small.
    pub made: Option<Arc<DefKit>>,
    /// Its turns out (see [`Out`]); made at its first turn.
    pub out: Option<Arc<AtomicUsize>>,
    /// Told apart from an earlier handle in the same slot.
    pub serial: u64,
}

impl Handle {
    /// The toolkit of its turns, once it has run one.
    #[cfg(test)]
    pub(crate) fn toolkit(&self) -> Option<Arc<Toolkit>> {
        self.made.as_ref().map(|m| Arc::clone(&m.kit))
    }

    /// A handle that has done nothing yet: idle, no definition or parent,
    /// an empty inbox, no budget of its own and every count at zero.
    pub(crate) fn fresh(id: impl Into<Arc<str>>) -> Handle {
        Handle {
            id: id.into(),
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
            turn_input: None,
            turn_calls: 0,
            awaited_in: None,
            made: None,
            out: None,
            serial: 0,
        }
    }

    /// Whether a turn of this handle is out (see [`Out`]).
    pub(crate) fn busy(&self) -> bool {
        self.out
            .as_ref()
            .is_some_and(|o| o.load(Ordering::SeqCst) > 0)
    }
}

/// What a `wait` on a handle looks at, besides its token and deadline: a
/// change of any of these may end it.
type Awaited = (State, bool, bool, u64);

fn awaited(h: &Handle) -> Awaited {
    (h.state, h.escalating, h.queued, h.seq)
}

/// The waiters of one handle: they sleep on a variable of their own, woken
/// when what they look at changes, so that a change of one handle does not
/// wake every waiter of the runtime (in a tree, a parent's `task` call
/// waits on each child at once).
pub(crate) struct Waited {
    cv: Arc<Condvar>,
    waiters: usize,
    /// What the waiters last saw.
    seen: Awaited,
}

pub(crate) struct St {
    /// Each handle in a box of its own: a handle is several hundred bytes,
    /// and a vector of them would grow by copies past 1 KiB, each a
    /// request from glibc's large bins that first consolidates its fast
    /// bins (four a 13-handle tree).
    #[allow(clippy::vec_box)]
    pub handles: Vec<Box<Handle>>,
    pub index: HashMap<Arc<str>, usize>,
    /// The latest [`AGENT_TRACE_LINES`](crate::limits::AGENT_TRACE_LINES)
    /// lines of the transition trace (see [`St::trace`]).
    pub trace: VecDeque<TraceLine>,
    /// Trace lines dropped from the front so far.
    pub trace_dropped: u64,
    pub trace_cap: usize,
    /// Closed handles still holding their transcript and inbox, the one
    /// closed longest ago first, by slot and serial (see [`St::retire`]).
    pub closed: VecDeque<(usize, u64)>,
    pub closed_kept: usize,
    /// Closed handles past the kept ones that could not be forgotten yet
    /// (a turn of theirs, or of their parent, still out; a waiter on
    /// them), tried again as later handles close.
    pub lingering: VecDeque<(usize, u64)>,
    /// Slots of forgotten handles, given to the next spawns.
    pub free: Vec<usize>,
    /// The last serial given.
    pub serials: u64,
    pub turns_in_flight: usize,
    pub max_observed_turns: usize,
    /// Waiters asleep in `wait` right now.
    pub sleepers: usize,
    /// Threads asleep on [`Inner::cv`] right now: a change with none to
    /// wake leaves the variable alone (a `notify_all` is a system call
    /// even when nobody waits, and a tree makes dozens of changes).
    pub shared_sleepers: usize,
    /// The handles someone waits on in `wait`, by index.
    pub waited: HashMap<usize, Waited>,
    /// The one conversation store: each handle's transcript by its id.
    pub store: HashMap<Arc<str>, Vec<Value>>,
    /// Set by a `task` call around its wake of a child: the turn [`start`]
    /// would hand to a pooled thread is left in `captured` instead, for the
    /// calling thread to run (see [`Inner::start`]).
    ///
    /// [`start`]: Inner::start
    pub capture: bool,
    pub captured: Option<Job>,
    /// The host is letting the runtime go: a suspension that ends by that
    /// (every handle closed) stays in the store, for a later runtime.
    pub releasing: bool,
    /// Why the suspended tree an earlier runtime left in the store could
    /// not be carried on here: what `resume` answers when nothing here is
    /// suspended.
    pub restore_error: Option<String>,
    /// The store's [`TREE`] record could not be read when the runtime
    /// started: it is left as it is, never overwritten by this runtime.
    pub tree_not_ours: bool,
}

impl St {
    pub fn trace(&mut self, i: usize, line: impl std::fmt::Display) {
        self.trace_event(i, TraceEvent::Text(line.to_string()));
    }

    /// Traces `event` of handle `i`, written out only when the trace is
    /// read.
    pub fn trace_event(&mut self, i: usize, event: TraceEvent) {
        let id = self.handles[i].id.clone();
        if self.trace.len() >= self.trace_cap {
            self.trace.pop_front();
            self.trace_dropped += 1;
        }
        self.trace.push_back(TraceLine { id, event });
    }

    /// Handle `i` has just closed: it lets go of what only a turn could
    /// use (its toolkit) at once. Past the
    /// [`closed_kept`](St::closed_kept) latest closed handles, the one
    /// closed longest ago lets go of its transcript and unread inbox and
    /// is forgotten (see [`St::forget`]); until then its id, state,
    /// counts and result stay, for `inspect`, `list` and `wait`.
    pub fn retire(&mut self, i: usize) {
        self.handles[i].made = None;
        let serial = self.handles[i].serial;
        self.closed.push_back((i, serial));
        while self.closed.len() > self.closed_kept {
            let Some((j, serial)) = self.closed.pop_front() else {
                break;
            };
            if self.handles[j].serial != serial {
                continue;
            }
            let h = &mut self.handles[j];
            h.inbox = VecDeque::new();
            h.drained = Vec::new();
            h.queue = VecDeque::new();
            h.turn_input = None;
            self.store.remove(&h.id);
            self.forget_or_linger(j);
        }
        // A few that could not be forgotten before, each time.
        for _ in 0..2 {
            let Some((j, serial)) = self.lingering.pop_front() else {
                break;
            };
            if self.handles[j].serial == serial {
                self.forget_or_linger(j);
            }
        }
    }

    fn forget_or_linger(&mut self, j: usize) {
        let parent_open = self.handles[j]
            .parent
            .is_some_and(|p| p != 0 && self.handles[p].state != State::Closed);
        // Under a parent still open it is forgotten with that parent.
        if !parent_open && !self.forget(j) {
            let serial = self.handles[j].serial;
            self.lingering.push_back((j, serial));
        }
    }

    /// Forgets closed handle `j` and its subtree, children first: gone
    /// from the index, `list` and its parent, its slot free for a new
    /// handle. Only when nothing can still hold its index: no turn of its
    /// own or of its parent out, no waiter on it, its parent the root or
    /// closed. `false` (nothing forgotten of `j`) otherwise.
    pub fn forget(&mut self, j: usize) -> bool {
        let h = &self.handles[j];
        let quiet = |h: &Handle| h.state == State::Closed && !h.busy();
        let Some(p) = h.parent else {
            return false;
        };
        if j == 0
            || !quiet(h)
            || self.waited.contains_key(&j)
            || (p != 0 && !quiet(&self.handles[p]))
        {
            return false;
        }
        while let Some(&c) = self.handles[j].children.last() {
            if !self.forget(c) {
                return false;
            }
        }
        self.handles[p].children.retain(|&c| c != j);
        let h: &mut Handle = &mut self.handles[j];
        let vacant = Handle {
            gen: h.gen + 1,
            seq: h.seq + 1,
            state: State::Closed,
            ..Handle::fresh(String::new())
        };
        let gone = std::mem::replace(h, vacant);
        self.index.remove(&gone.id);
        self.store.remove(&gone.id);
        self.free.push(j);
        true
    }

    /// Puts a new handle in a forgotten handle's slot, or after the last;
    /// its index. Its turn and result counters go on from the slot's, so
    /// nothing of an earlier handle there matches it.
    pub fn place(&mut self, mut h: Handle) -> usize {
        self.serials += 1;
        h.serial = self.serials;
        match self.free.pop() {
            Some(i) => {
                h.gen = self.handles[i].gen;
                h.seq = self.handles[i].seq;
                *self.handles[i] = h;
                i
            }
            None => {
                self.handles.push(Box::new(h));
                self.handles.len() - 1
            }
        }
    }

    /// The handles under the root, each before its children.
    pub fn tree_order(&self) -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack: Vec<usize> = self.handles[0].children.iter().rev().copied().collect();
        while let Some(i) = stack.pop() {
            out.push(i);
            stack.extend(self.handles[i].children.iter().rev());
        }
        out
    }

    /// `i` and its ancestors, nearest first.
    pub fn chain(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(Some(i), |&at| self.handles[at].parent)
    }

    pub fn view(&self, i: usize) -> HandleView {
        let h = &self.handles[i];
        HandleView {
            id: h.id.to_string(),
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
    /// Woken by every change a waiter may be waiting for.
    pub cv: Condvar,
    /// Woken when a waiter falls asleep in `wait` (what a test waits on to
    /// know a wait's deadline is fixed). Its own variable: a waiter going to
    /// sleep must not wake the others, or two waiters wake each other for
    /// as long as both wait. Only tests wait on it.
    #[cfg(test)]
    pub sleepers_cv: Condvar,
    pub registry: Registry,
    pub config: ClientConfig,
    pub provider: Arc<dyn Provider>,
    pub toolkit: Option<Arc<Toolkit>>,
    /// The toolkit of each agent definition, built for its first turn and
    /// shared by every handle of it (the `task` tool finds its caller in the
    /// run's tag), with the generation of the runtime toolkit's tools it
    /// was built from: a definition with `tools` gets a new one once those
    /// change. Beside it, the client configuration of its turns.
    pub def_kits: Mutex<HashMap<String, Arc<DefKit>>>,
    /// The metrics every turn's client records into (one registry for the
    /// runtime rather than one built and dropped per turn).
    pub metrics: Arc<crate::client::metrics::Registry>,
    pub inbox_cap: usize,
    pub max_concurrent_turns: usize,
    pub shutdown_ms: u64,
    pub clock: Arc<dyn Clock>,
    pub hooks: Callbacks,
    pub on_close: Option<OnClose>,
    pub on_spawn: Option<OnSpawn>,
    /// The store transcripts and checkpoints are written through to.
    pub durable: Option<super::durable::Durable>,
    pub me: Weak<Inner>,
    /// Runs a turn (set by the runtime to the turn file's runner).
    pub run_turn: RunTurn,
    /// Builds a handle's `task` tool (set by the runtime).
    pub task_tool: TaskTool,
}

impl Inner {
    pub fn lock(&self) -> MutexGuard<'_, St> {
        self.st.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes handle `i`'s checkpoint record (it has just suspended) and
    /// the suspended tree to the runtime's store.
    pub fn checkpoint_saved(&self, st: &St, i: usize) {
        if let Some(d) = &self.durable {
            let parked = Parked::own(&st.handles[i]);
            let record = serde_json::to_value(saved_handle(st, i, self.clock.now_ms(), parked));
            d.save(
                Kind::Checkpoint,
                &st.handles[i].id,
                record.unwrap_or_default(),
            );
            self.tree_changed(st, d);
        }
    }

    /// Removes handle `i`'s checkpoint record from the runtime's store and
    /// the handle from the suspended tree (its suspension is over) — unless
    /// the host is letting the runtime go, when both stay for a later one.
    pub fn checkpoint_done(&self, st: &St, i: usize) {
        if let Some(d) = &self.durable {
            if st.releasing {
                return;
            }
            self.tree_changed(st, d);
            d.delete(Kind::Checkpoint, &st.handles[i].id);
        }
    }

    /// Handle `i`'s turn of number `gen` ended other than pending (done,
    /// failed, interrupted, closed): when its `task` call waited on a parked
    /// child, the suspended tree holds it as waiting on that call no more.
    pub fn turn_over(&self, st: &mut St, i: usize, gen: u64) {
        let Some(d) = &self.durable else {
            return;
        };
        st.handles[i].turn_input = None;
        let waited = st.handles[i]
            .children
            .iter()
            .any(|&c| st.handles[c].awaited_in == Some(gen));
        if waited && !st.releasing {
            self.tree_changed(st, d);
        }
    }

    /// What each handle waits on, as the suspended tree records it (see
    /// [`Parked`]); one pass over the tree order backwards sees each
    /// child before its parent.
    fn parked(st: &St) -> Vec<Option<Parked>> {
        let mut out: Vec<Option<Parked>> = vec![None; st.handles.len()];
        for i in st.tree_order().into_iter().rev() {
            let h = &st.handles[i];
            if durably_suspended(h) {
                out[i] = Parked::own(h);
                continue;
            }
            let (State::Running, false, Some(input)) = (h.state, h.escalating, &h.turn_input)
            else {
                continue;
            };
            let child = h.children.iter().find_map(|&c| {
                let parked = out[c].as_ref()?;
                (st.handles[c].awaited_in == Some(h.gen)).then_some(parked)
            });
            if let Some(c) = child {
                let mut pending = c.pending.clone();
                with_path(&mut pending, &h.id);
                out[i] = Some(Parked {
                    input: input.clone(),
                    pending,
                    calls: h.turn_calls,
                });
            }
        }
        out
    }

    /// The suspended tree's record as it is now; gone with the last
    /// suspension.
    fn tree_changed(&self, st: &St, d: &super::durable::Durable) {
        if st.tree_not_ours {
            return;
        }
        let now = self.clock.now_ms();
        let mut parked = Self::parked(st);
        let kept: Vec<usize> = {
            let mut keep = vec![false; st.handles.len()];
            for (i, p) in parked.iter().enumerate() {
                if p.is_some() {
                    for a in st.chain(i) {
                        keep[a] = true;
                    }
                }
            }
            // Parents before children.
            st.tree_order().into_iter().filter(|&i| keep[i]).collect()
        };
        if kept.is_empty() {
            d.delete(Kind::Checkpoint, TREE);
            return;
        }
        let tree = SavedTree {
            id: TREE.to_string(),
            spawned: st.handles[0].spawned,
            handles: kept
                .iter()
                .map(|&i| saved_handle(st, i, now, parked[i].take()))
                .collect(),
        };
        d.save(
            Kind::Checkpoint,
            TREE,
            serde_json::to_value(tree).unwrap_or_default(),
        );
    }

    /// Carries on the suspended tree an earlier runtime left in the store
    /// (`loaded`: the [`TREE`] record as read), under the same ids, each
    /// handle as it was; a record that cannot be read or carried on leaves
    /// the runtime as it is, with the reason kept for `resume`. Such a
    /// record is never overwritten: one that was read moves aside, to the
    /// first free id `root.unrestored.<n>`; one that could not be read
    /// stays, and this runtime writes no tree record of its own.
    pub fn restore(&self, loaded: std::result::Result<Option<Value>, String>, selector: &str) {
        let what = format!("checkpoint \"{TREE}\" in the agents store {selector}");
        let (record, tree) = match loaded {
            Ok(None) => return,
            Ok(Some(v)) => {
                let tree = serde_json::from_value::<SavedTree>(v.clone())
                    .map_err(|e| format!("{what} is not a suspended tree: {e}"));
                (Some(v), tree)
            }
            Err(e) => (None, Err(format!("cannot read {what}: {e}"))),
        };
        let restored = {
            let mut st = self.lock();
            tree.and_then(|t| self.rebuild(&mut st, &t, &what, selector))
        };
        let Err(e) = restored else {
            return;
        };
        let aside = record.and_then(|v| self.set_aside(v));
        let mut st = self.lock();
        match aside {
            Some(id) => {
                st.trace(
                    0,
                    format_args!("{what} not restored, kept as checkpoint \"{id}\": {e}"),
                );
                st.restore_error = Some(format!("{e} (the record is kept as checkpoint \"{id}\")"));
            }
            None => {
                st.tree_not_ours = true;
                st.trace(
                    0,
                    format_args!("{what} not restored and left as it is; this runtime saves no suspended tree: {e}"),
                );
                st.restore_error = Some(format!(
                    "{e} (the record is left as it is; this runtime saves no suspended tree)"
                ));
            }
        }
    }

    /// Moves the tree record `record` to the first free id
    /// `root.unrestored.<n>`; `None` when no free id can be found.
    fn set_aside(&self, record: Value) -> Option<String> {
        let d = self.durable.as_ref()?;
        for n in 1..=crate::limits::AGENT_UNRESTORED_TREES {
            let id = format!("{TREE}.unrestored.{n}");
            match d.load(Kind::Checkpoint, &id) {
                Ok(None) => {
                    d.save(Kind::Checkpoint, &id, record);
                    d.delete(Kind::Checkpoint, TREE);
                    return Some(id);
                }
                Ok(Some(_)) => {}
                Err(_) => return None,
            }
        }
        None
    }

    /// Adds the handles of `tree` under the root, all or none.
    fn rebuild(
        &self,
        st: &mut St,
        tree: &SavedTree,
        what: &str,
        selector: &str,
    ) -> std::result::Result<(), String> {
        let now = self.clock.now_ms();
        // The tree's handles go after the runtime's own, in its order.
        let base = st.handles.len();
        let mut index: HashMap<&str, usize> = HashMap::from([(TREE, 0)]);
        let mut built: Vec<Handle> = Vec::new();
        for s in &tree.handles {
            let malformed = |why: String| format!("{what} is not a suspended tree: {why}");
            let p = *index.get(s.parent.as_str()).ok_or_else(|| {
                malformed(format!("{} comes before its parent {}", s.id, s.parent))
            })?;
            if !s.id.starts_with(&format!("{}/", s.parent)) {
                return Err(malformed(format!("{} under {}", s.id, s.parent)));
            }
            if index.contains_key(s.id.as_str()) || st.index.contains_key(s.id.as_str()) {
                return Err(malformed(format!("{} twice", s.id)));
            }
            if s.pending.is_some() != s.input.is_some() {
                return Err(malformed(format!(
                    "{} has a pending Request without its turn input, or the other way round",
                    s.id
                )));
            }
            let def = self.registry.get(&s.agent).cloned().ok_or_else(|| {
                format!(
                    "{what}: {} is an agent \"{}\" this runtime does not define (known: {})",
                    s.id,
                    s.agent,
                    self.registry.names().join(", ")
                )
            })?;
            let eff = Budget::from_json(&s.budget, &format!("{what}: {}'s budget", s.id))
                .map_err(|e| e.message)?;
            let depth = if p == 0 { 1 } else { built[p - base].depth + 1 };
            index.insert(&s.id, base + built.len());
            built.push(Handle {
                def: Some(def),
                parent: Some(p),
                depth,
                spawned: s.spawned,
                state: if s.pending.is_some() {
                    State::Suspended
                } else {
                    State::Idle
                },
                eff,
                pool_tokens: s.pool_tokens,
                pool_tool_calls: s.pool_tool_calls,
                pool_children: s.pool_children,
                wall_deadline: s.wall_left_ms.map(|l| now.saturating_add(l)),
                tokens: s.tokens,
                own_tokens: s.own_tokens,
                tool_calls: s.tool_calls,
                turns: s.turns,
                pending: s.pending.clone(),
                checkpoint: s.input.clone(),
                task_key: s.task_key.clone(),
                ..Handle::fresh(s.id.clone())
            });
        }
        st.handles[0].spawned = st.handles[0].spawned.max(tree.spawned);
        // Pushed after the runtime's own (the indices above count on it),
        // never into a forgotten handle's slot.
        for mut h in built {
            let i = st.handles.len();
            st.serials += 1;
            h.serial = st.serials;
            if let Some(p) = h.parent {
                st.handles[p].children.push(i);
            }
            st.index.insert(h.id.clone(), i);
            let line = match &h.pending {
                Some(p) => format!(
                    "restored from the agents store {selector} (suspended, pending \"{}\", turns so far: {})",
                    kind_of(Some(p)),
                    h.turns
                ),
                None => format!("restored from the agents store {selector} (idle)"),
            };
            st.handles.push(Box::new(h));
            st.trace(i, line);
        }
        self.notify(st);
        Ok(())
    }

    /// Sleeps on the condition variable until told, or until `deadline_ms`
    /// on the runtime clock (a manual clock wakes its waiters as it moves).
    pub fn sleep<'a>(&self, g: MutexGuard<'a, St>, deadline_ms: Option<u64>) -> MutexGuard<'a, St> {
        match deadline_ms {
            Some(d) if !self.clock.is_manual() => {
                let left = d.saturating_sub(self.clock.now_ms());
                self.sleep_for(g, Some(std::time::Duration::from_millis(left.max(1))))
            }
            _ => self.sleep_for(g, None),
        }
    }

    /// Sleeps on the condition variable until told, or for at most `max`
    /// of real time; counted in [`St::shared_sleepers`] meanwhile.
    pub fn sleep_for<'a>(
        &self,
        mut g: MutexGuard<'a, St>,
        max: Option<std::time::Duration>,
    ) -> MutexGuard<'a, St> {
        g.shared_sleepers += 1;
        let mut g = match max {
            Some(max) => match self.cv.wait_timeout(g, max) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            },
            None => self.cv.wait(g).unwrap_or_else(PoisonError::into_inner),
        };
        g.shared_sleepers -= 1;
        g
    }

    /// Wakes whoever sleeps on the shared variable, if anyone does.
    pub fn wake_shared(&self, st: &St) {
        if st.shared_sleepers > 0 {
            self.cv.notify_all();
        }
    }

    /// Wakes the runtime's waiters after a change: every waiter on the
    /// shared variable, and the waiters of each handle whose awaited
    /// fields changed. Every change of a handle's state ends with this.
    pub fn notify(&self, st: &mut St) {
        self.wake_shared(st);
        let St {
            handles, waited, ..
        } = st;
        for (&i, w) in waited.iter_mut() {
            let now = awaited(&handles[i]);
            if now != w.seen {
                w.seen = now;
                w.cv.notify_all();
            }
        }
    }

    /// Wakes every waiter, on the shared variable and on each handle (the
    /// clock moved, a wait's token was cancelled, the runtime shuts down).
    pub fn notify_everyone(&self, st: &St) {
        self.wake_shared(st);
        for w in st.waited.values() {
            w.cv.notify_all();
        }
    }

    /// [`Inner::sleep`] for a waiter of handle `i`, on that handle's
    /// variable.
    fn sleep_on<'a>(
        &self,
        mut g: MutexGuard<'a, St>,
        i: usize,
        deadline_ms: Option<u64>,
    ) -> MutexGuard<'a, St> {
        let seen = awaited(&g.handles[i]);
        let w = g.waited.entry(i).or_insert_with(|| Waited {
            cv: Arc::new(Condvar::new()),
            waiters: 0,
            seen,
        });
        w.waiters += 1;
        w.seen = seen;
        let cv = Arc::clone(&w.cv);
        let mut g = match deadline_ms {
            Some(d) if !self.clock.is_manual() => {
                let left = d.saturating_sub(self.clock.now_ms());
                match cv.wait_timeout(g, std::time::Duration::from_millis(left.max(1))) {
                    Ok((g, _)) => g,
                    Err(p) => p.into_inner().0,
                }
            }
            _ => cv.wait(g).unwrap_or_else(PoisonError::into_inner),
        };
        if let Some(w) = g.waited.get_mut(&i) {
            w.waiters -= 1;
            if w.waiters == 0 {
                g.waited.remove(&i);
            }
        }
        g
    }

    pub fn find(&self, st: &St, id: &str) -> std::result::Result<usize, String> {
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
        self.notify(st);
    }

    /// The budget walk over `i` and its ancestors: the first pool spent or
    /// wall deadline passed, by its limit name.
    fn exhausted(&self, st: &St, i: usize) -> Option<&'static str> {
        let now = self.clock.now_ms();
        st.chain(i).find_map(|a| {
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
    fn admit(&self, st: &mut St, i: usize, prompt: Option<String>, why: &'static str) {
        if let Some(limit) = self.exhausted(st, i) {
            st.trace(i, format_args!("wake REFUSED (budget exhausted ({limit}))"));
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
        // The prompt itself, moved, when nothing was waiting in the inbox.
        let mut input = prompt.unwrap_or_default();
        if !items.is_empty() {
            input.push_str(&drain_block(&items));
        }
        st.handles[i].drained = items;
        self.start(st, i, input, None, why);
    }

    /// Takes the parent's slot, flips `i` to running and starts its turn
    /// on `input` (with `answer` as a one-shot interpreter on a resume): on
    /// a pooled thread, or, while `st.capture` is set, left in
    /// `st.captured` for the caller to run.
    pub fn start(
        &self,
        st: &mut St,
        i: usize,
        input: String,
        answer: Option<Value>,
        why: &'static str,
    ) {
        if let Some(p) = st.handles[i].parent {
            st.handles[p].running_children += 1;
        }
        let cancel = CancelToken::new();
        let h = &mut st.handles[i];
        h.state = State::Running;
        h.gen += 1;
        h.turn_calls = 0;
        if self.durable.is_some() {
            h.turn_input = Some(input.clone());
        }
        h.cancel = Some(cancel.clone());
        let gen = h.gen;
        let out = Out::new(h.out.get_or_insert_with(Default::default));
        st.trace_event(i, TraceEvent::Running(why));
        self.notify(st);
        let job = Job {
            index: i,
            gen,
            input,
            cancel,
            answer,
            _out: out,
        };
        if st.capture {
            st.captured = Some(job);
            return;
        }
        let Some(inner) = self.me.upgrade() else {
            return;
        };
        let spawned = crate::runtime::run_pooled(
            "toolnexus-agent",
            Box::new(move || (inner.run_turn)(inner, job)),
        );
        if let Err(e) = spawned {
            self.fail_start(st, i, gen, &format!("cannot start a turn thread: {e}"));
        }
    }

    fn fail_start(&self, st: &mut St, i: usize, gen: u64, why: &str) {
        if st.handles[i].gen == gen {
            st.handles[i].state = State::Idle;
            self.restore_drained(st, i);
            self.release_slot(st, i);
            st.trace(i, format_args!("running→idle (error: {why})"));
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
        self.check_tools(&def)?;
        let ph = &mut st.handles[p];
        ph.spawned += 1;
        // Made to size (`format!` guesses from its literals and grows).
        let mut id = String::with_capacity(ph.id.len() + def.name.len() + 22);
        let _ = std::fmt::Write::write_fmt(
            &mut id,
            format_args!("{}/{}.{}", ph.id, def.name, ph.spawned),
        );
        let now = self.clock.now_ms();
        let wall = match (
            eff.max_wall_ms.map(|w| now.saturating_add(w)),
            ph.wall_deadline,
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let h = Handle {
            def: Some(def),
            parent: Some(p),
            depth: ph.depth + 1,
            eff,
            pool_tokens: carve(eff.max_tokens, ph.pool_tokens),
            pool_tool_calls: carve(eff.max_tool_calls, ph.pool_tool_calls),
            pool_children: eff.max_children,
            wall_deadline: wall,
            ..Handle::fresh(id.as_str())
        };
        let (depth, pool) = (h.depth, h.pool_tokens);
        let shared = Arc::clone(&h.id);
        let i = st.place(h);
        st.handles[p].children.push(i);
        st.index.insert(shared, i);
        st.trace_event(i, TraceEvent::Spawned { depth, pool });
        self.notify(&mut st);
        drop(st);
        if let Some(f) = &self.on_spawn {
            f(&id);
        }
        Ok(id)
    }

    /// Fails when `def` names a tool the runtime's toolkit does not have
    /// (checked at spawn; the toolkit itself is built for the first turn).
    fn check_tools(&self, def: &AgentDef) -> std::result::Result<(), String> {
        for name in &def.tools {
            if self.toolkit.as_ref().and_then(|t| t.find(name)).is_none() {
                return Err(format!("agent \"{}\": unknown tool \"{name}\"", def.name));
            }
        }
        Ok(())
    }

    /// The toolkit a handle of `def` runs with: its `task` tool when it has
    /// a team, then its `tools` from the runtime's toolkit; builtins never
    /// (see [`Inner::def_kits`]).
    #[cfg(test)]
    pub(crate) fn def_toolkit(&self, def: &AgentDef) -> std::result::Result<Arc<Toolkit>, String> {
        self.def_parts(def).map(|made| Arc::clone(&made.kit))
    }

    /// [`Inner::def_toolkit`] and the client configuration of `def`'s
    /// turns: the runtime's, with the definition's model and its soul as
    /// the system prompt, made once per definition.
    pub(crate) fn def_parts(&self, def: &AgentDef) -> std::result::Result<Arc<DefKit>, String> {
        let generation = match (&self.toolkit, def.tools.is_empty()) {
            (Some(t), false) => t.tools_generation(),
            _ => 0,
        };
        let mut kits = self.def_kits.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(made) = kits.get(&def.name) {
            if made.generation == generation {
                return Ok(Arc::clone(made));
            }
        }
        let cfg = crate::config::ToolkitConfig {
            builtins: Some(serde_json::Value::Bool(false)),
            ..Default::default()
        };
        let kit = Toolkit::build(&cfg).map_err(|e| e.to_string())?;
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
            kit.register((self.task_tool)(self.me.clone(), team));
        }
        for name in &def.tools {
            let tool = self
                .toolkit
                .as_ref()
                .and_then(|t| t.find(name))
                .ok_or_else(|| format!("agent \"{}\": unknown tool \"{name}\"", def.name))?;
            kit.register(crate::tool::Tool::clone(&tool));
        }
        let mut config = self.config.clone();
        if let Some(m) = &def.model {
            config.model = m.clone();
        }
        config.system_prompt = (!def.soul.is_empty()).then(|| def.soul.clone());
        let made = Arc::new(DefKit {
            generation,
            kit: Arc::new(kit),
            config: Arc::new(config),
        });
        kits.insert(def.name.clone(), Arc::clone(&made));
        Ok(made)
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
                format_args!("post REJECTED (inbox full, cap {cap}) from {}", item.from),
            );
            self.notify(&mut st);
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
                st.trace(i, format_args!("wake QUEUED (parent concurrency {max})"));
                self.notify(st);
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
            // Only `Runtime::await_sleepers` (tests) waits on it.
            #[cfg(test)]
            self.sleepers_cv.notify_all();
            st = self.sleep_on(st, i, deadline);
            st.sleepers -= 1;
        }
    }

    /// Aborts the turn in flight on `i` (already known running): the
    /// drained items back in front, the slot given back, `state` set.
    fn abort(&self, st: &mut St, i: usize) {
        if let Some(c) = st.handles[i].cancel.take() {
            c.cancel();
        }
        let gen = st.handles[i].gen;
        st.handles[i].gen += 1;
        self.turn_over(st, i, gen);
        st.handles[i].escalating = false;
        self.restore_drained(st, i);
        self.release_slot(st, i);
        // The turn's token is cancelled: a `task` call of that turn waits on
        // a child whose own state did not change, so every waiter looks.
        self.notify(st);
        self.notify_everyone(st);
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
                self.checkpoint_done(&st, i);
                self.restore_drained(&mut st, i);
                st.trace(
                    i,
                    format_args!("suspended→idle (interrupt cancelled pending \"{kind}\")"),
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
                    format_args!(
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
        let (i, serial) = {
            let st = self.lock();
            let i = self.find(&st, id)?;
            (i, st.handles[i].serial)
        };
        let reason = match reason {
            Some(r) => Cow::Owned(r.to_string()),
            None => Cow::Borrowed(if force { "interrupted" } else { "closed" }),
        };
        self.close_index(i, serial, force, reason);
        Ok(())
    }

    /// Closes handle `i` (the one of this serial: between the lock's
    /// holds, a closed handle may be forgotten and its slot given to a new
    /// one, which this leaves alone) and its subtree, leaf first.
    fn close_index(&self, i: usize, serial: u64, force: bool, reason: Cow<'static, str>) {
        let open = |st: &St| st.handles[i].serial == serial && st.handles[i].state != State::Closed;
        let children: Vec<(usize, u64)> = {
            let st = self.lock();
            if !open(&st) {
                return;
            }
            let h = &st.handles[i];
            h.children
                .iter()
                .map(|&c| (c, st.handles[c].serial))
                .collect()
        };
        for (c, serial) in children {
            self.close_index(c, serial, force, reason.clone());
        }
        let mut st = self.lock();
        if !open(&st) {
            return;
        }
        if st.handles[i].state == State::Running && !force {
            let deadline = self.clock.now_ms().saturating_add(self.shutdown_ms);
            while open(&st)
                && st.handles[i].state == State::Running
                && self.clock.now_ms() < deadline
            {
                st = self.sleep(st, Some(deadline));
            }
            if !open(&st) {
                return;
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
                self.checkpoint_done(&st, i);
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
        st.trace_event(
            i,
            TraceEvent::Closed {
                from,
                reason: reason.clone(),
            },
        );
        st.retire(i);
        if interrupted || from == State::Suspended || st.handles[i].result.is_none() {
            self.settle(&mut st, i, closed_result());
        } else {
            self.notify(&mut st);
        }
        let id = st.handles[i].id.clone();
        drop(st);
        if i != 0 {
            if let Some(f) = &self.on_close {
                f(&id, &reason);
            }
        }
    }

    /// SPEC §10 durable resume: the deepest suspended handle replays its
    /// checkpoint with `answer`, then each suspended ancestor below the root
    /// replays its own (its `task` call reattaches to the finished child).
    ///
    /// The store's writes wait for the resume's end (see
    /// [`super::durable::Durable::hold`]): then the suspended tree as it is
    /// lands first, and the rest after it. Until then the store holds the
    /// tree as before the resume, from which a runtime restarted after a
    /// crash does the same resume again, its `task` calls reattaching.
    pub fn resume(&self, answer: Value) -> std::result::Result<TaskResult, String> {
        let Some(d) = &self.durable else {
            return self.resume_chain(answer);
        };
        d.hold();
        let r = self.resume_chain(answer);
        if r.is_ok() {
            let st = self.lock();
            if !st.releasing {
                self.tree_changed(&st, d);
            }
        }
        d.release((Kind::Checkpoint, TREE));
        r
    }

    fn resume_chain(&self, answer: Value) -> std::result::Result<TaskResult, String> {
        let ok = answer.get("ok").and_then(Value::as_bool).unwrap_or(false);
        let mut st = self.lock();
        let Some(leaf) = deepest_suspended(&st, 0) else {
            // Nothing suspended here: an earlier runtime's tree this one
            // could not carry on says why.
            return Err(st
                .restore_error
                .clone()
                .unwrap_or_else(|| "no suspended handle".to_string()));
        };
        let turns = st.handles[leaf].turns;
        st.trace(
            leaf,
            format_args!("resume with Answer(ok={ok}) at checkpoint (turns so far: {turns})"),
        );
        self.replay(&mut st, leaf, Some(answer));
        let mut at = (leaf, st.handles[leaf].serial);
        let mut r = self.wait_index(st, leaf, None, None);
        loop {
            if r.status == "pending" {
                return Ok(r);
            }
            let st = self.lock();
            // Closed and forgotten meanwhile: nothing above it to carry on.
            if st.handles[at.0].serial != at.1 {
                return Ok(r);
            }
            let Some(p) = st.handles[at.0].parent.filter(|p| *p != 0) else {
                return Ok(r);
            };
            if st.handles[p].state != State::Suspended || st.handles[p].pending.is_none() {
                return Ok(r);
            }
            let mut st = st;
            at = (p, st.handles[p].serial);
            self.replay(&mut st, p, None);
            r = self.wait_index(st, p, None, None);
        }
    }

    fn replay(&self, st: &mut St, i: usize, answer: Option<Value>) {
        let h = &mut st.handles[i];
        h.pending = None;
        h.state = State::Idle;
        let input = h.checkpoint.take().unwrap_or_default();
        self.checkpoint_done(st, i);
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

/// Suspended with no interpreter anywhere: parked until `resume`.
fn durably_suspended(h: &Handle) -> bool {
    h.state == State::Suspended && h.pending.is_some()
}

/// What a handle of the suspended tree waits on: the turn input it
/// replays, the Request, and the LLM calls its turn in flight made (a
/// parent whose `task` call waits on a parked child has not counted them in
/// its turns yet).
#[derive(Clone)]
struct Parked {
    input: String,
    pending: Value,
    calls: u64,
}

impl Parked {
    /// A handle parked on its own Request: its checkpoint (the turn input
    /// it replays) and that Request; `None` when it holds no Request.
    fn own(h: &Handle) -> Option<Parked> {
        Some(Parked {
            input: h.checkpoint.clone().unwrap_or_default(),
            pending: h.pending.clone()?,
            calls: 0,
        })
    }
}

/// Sets `request`'s `data.path` to the segments of handle `id`.
pub(crate) fn with_path(request: &mut Value, id: &str) {
    let path: Vec<Value> = id
        .split('/')
        .map(|s| Value::String(s.to_string()))
        .collect();
    if let Value::Object(req) = request {
        let data = req
            .entry("data")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if !data.is_object() {
            *data = Value::Object(serde_json::Map::new());
        }
        if let Value::Object(d) = data {
            d.insert("path".into(), Value::Array(path));
        }
    }
}

/// Handle `i` as its checkpoint record holds it, `parked` on what it waits.
fn saved_handle(st: &St, i: usize, now: u64, parked: Option<Parked>) -> SavedHandle {
    let h = &st.handles[i];
    let calls = parked.as_ref().map_or(0, |p| p.calls);
    let (input, pending) = parked.map(|p| (p.input, p.pending)).unzip();
    SavedHandle {
        id: h.id.to_string(),
        agent: h.def.as_ref().map(|d| d.name.clone()).unwrap_or_default(),
        parent: h
            .parent
            .map(|p| st.handles[p].id.to_string())
            .unwrap_or_default(),
        task_key: h.task_key.clone(),
        spawned: h.spawned,
        turns: h.turns + calls,
        tokens: h.tokens,
        own_tokens: h.own_tokens,
        tool_calls: h.tool_calls,
        budget: h.eff.to_json(),
        pool_tokens: h.pool_tokens,
        pool_tool_calls: h.pool_tool_calls,
        pool_children: h.pool_children,
        wall_left_ms: h.wall_deadline.map(|d| d.saturating_sub(now)),
        input,
        pending,
    }
}

fn deepest_suspended(st: &St, i: usize) -> Option<usize> {
    for &c in &st.handles[i].children {
        if let Some(found) = deepest_suspended(st, c) {
            return Some(found);
        }
    }
    durably_suspended(&st.handles[i]).then_some(i)
}
