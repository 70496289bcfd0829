//! The host's slots of a client (SPEC §8 hooks, §8 `onError`, §10
//! `waitFor`): JSON event in, an optional JSON reply out. The C boundary
//! wraps function pointers as [`HostFn`]s; Rust callers pass closures.
//!
//! A client keeps its slots in one immutable [`Callbacks`] set; a run takes
//! the set in force when it starts, so changing a slot never races a run and
//! no lock is held while a callback runs.

use crate::cancel::CancelToken;
use crate::error::{Error, ErrorCode, Result};
use serde_json::Value;
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

/// One host callback: called with the event JSON and this run's
/// [`RunData`]; `Ok(None)` means "no reply" (an observer), `Err` a failure
/// the run reports as `callback_error` (or `cancelled` when the run was
/// cancelled meanwhile).
pub type HostFn =
    Arc<dyn Fn(&Value, RunData) -> std::result::Result<Option<Value>, String> + Send + Sync>;

/// An opaque value the host gave a run, handed back to every callback of that
/// run (a Go host keeps its per-run context there). Never looked into.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunData(pub usize);

/// The named slots. (`generate` is none of them: an in-process client is
/// built around its generate function.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Slot {
    WaitFor,
    BeforeLlm,
    AfterLlm,
    BeforeTool,
    AfterTool,
    OnError,
    /// SPEC §8 Observability: each `llm`, `tool` and `run` event (observe).
    OnMetric,
    /// SPEC §8 Streaming: each event of a streamed run (observe).
    OnEvent,
    /// SPEC §8 Conversation memory: a host store's `get` and `save`.
    StoreGet,
    StoreSave,
    /// SPEC §8 Gap 1: the LLM request body, last, before the wire.
    BodyTransform,
    /// SPEC §8 Gap 2: the host's HTTP transport for the LLM calls.
    HttpClient,
}

impl Slot {
    pub const ALL: [Slot; 12] = [
        Slot::WaitFor,
        Slot::BeforeLlm,
        Slot::AfterLlm,
        Slot::BeforeTool,
        Slot::AfterTool,
        Slot::OnError,
        Slot::OnMetric,
        Slot::OnEvent,
        Slot::StoreGet,
        Slot::StoreSave,
        Slot::BodyTransform,
        Slot::HttpClient,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Slot::WaitFor => "waitFor",
            Slot::BeforeLlm => "beforeLLM",
            Slot::AfterLlm => "afterLLM",
            Slot::BeforeTool => "beforeTool",
            Slot::AfterTool => "afterTool",
            Slot::OnError => "onError",
            Slot::OnMetric => "onMetric",
            Slot::OnEvent => "onEvent",
            Slot::StoreGet => "storeGet",
            Slot::StoreSave => "storeSave",
            Slot::BodyTransform => "bodyTransform",
            Slot::HttpClient => "httpClient",
        }
    }

    /// A slot by its name; the error lists the known ones.
    pub fn from_name(name: &str) -> Result<Slot> {
        Slot::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Slot::ALL.iter().map(|s| s.name()).collect();
                Error::invalid_argument(format!(
                    "unknown callback slot '{name}' (known slots: {})",
                    known.join(", ")
                ))
            })
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The slots of a client at one moment.
#[derive(Clone, Default)]
pub struct Callbacks {
    slots: [Option<HostFn>; Slot::ALL.len()],
}

impl fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set: Vec<&str> = Slot::ALL
            .iter()
            .filter(|s| self.get(**s).is_some())
            .map(|s| s.name())
            .collect();
        f.debug_struct("Callbacks").field("set", &set).finish()
    }
}

fn index(slot: Slot) -> usize {
    Slot::ALL.iter().position(|s| *s == slot).unwrap_or(0)
}

impl Callbacks {
    pub fn get(&self, slot: Slot) -> Option<&HostFn> {
        self.slots[index(slot)].as_ref()
    }

    /// Sets (or with `None` clears) a slot.
    pub fn set(&mut self, slot: Slot, f: Option<HostFn>) {
        self.slots[index(slot)] = f;
    }

    pub fn with(mut self, slot: Slot, f: HostFn) -> Self {
        self.set(slot, Some(f));
        self
    }
}

/// What a run's callback may stop for (issue 25 M6): the run's cancel
/// token and deadline. A run names them for the length of each callback
/// call (`with_stop`); a host boundary that can run its callback on
/// another thread ([`current_stop`]) stops waiting for it at either, and
/// lets the callback see that its answer is no longer awaited.
#[derive(Clone)]
pub struct RunStop {
    pub cancel: CancelToken,
    pub deadline: Option<Instant>,
}

thread_local! {
    static STOP: RefCell<Option<RunStop>> = const { RefCell::new(None) };
}

/// Runs `f` (one callback call) with `stop` as [`current_stop`] on this
/// thread.
pub(crate) fn with_stop<R>(stop: RunStop, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<RunStop>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            STOP.with(|s| *s.borrow_mut() = previous);
        }
    }
    let _restore = Restore(STOP.with(|s| s.borrow_mut().replace(stop)));
    f()
}

/// The cancel token and deadline of the run whose callback this thread is
/// calling, if any.
pub fn current_stop() -> Option<RunStop> {
    STOP.with(|s| s.borrow().clone())
}

/// The error a failing callback ends a run with.
pub(crate) fn callback_error(slot: Slot, message: &str) -> Error {
    Error::new(
        ErrorCode::CallbackError,
        format!("the {slot} callback failed: {message}"),
    )
}

/// The error a callback that answered the wrong shape ends a run with.
pub(crate) fn bad_reply(slot: Slot, what: &str, got: &Value) -> Error {
    let mut shown = got.to_string();
    if shown.len() > 200 {
        let mut end = 200;
        while !shown.is_char_boundary(end) {
            end -= 1;
        }
        shown.truncate(end);
        shown.push('…');
    }
    Error::new(
        ErrorCode::CallbackError,
        format!("the {slot} callback answered {shown}; expected {what}"),
    )
}
