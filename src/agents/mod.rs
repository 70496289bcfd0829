//! SPEC §7D sub-agents: a runtime that runs a tree of agents, each a handle
//! with its own transcript, inbox and budget, whose turns are runs of the
//! §8 client loop. A model delegates through the `task` tool; a suspension
//! escalates to the nearest interpreter or parks durably for
//! [`Runtime::resume`].
//!
//! This room sits above the client loop (`crate::client`) and the toolkit;
//! nothing below imports it, and the loop does not know it exists: a turn
//! is a plain [`crate::client::Client`] run whose provider is the runtime's
//! behind the turn gate, whose `waitFor` is the escalator and whose toolkit
//! holds the agent's scoped tools plus `task`.
//!
//! Map of the files:
//!
//! - `def.rs` — agent definitions as data (`AgentDef`, `Budget`,
//!   `Registry`), read from JSON and validated (unknown tool or agent, team
//!   cycle, bad budget field).
//! - `clock.rs` — the injectable clock: `SystemClock`, and `ManualClock`
//!   the host advances.
//! - `inbox.rs` — inbox items and the drain block a turn's input ends with.
//! - `state.rs` — the handle tree under one lock, the trace, the
//!   bookkeeping behind the six verbs (spawn, post, wake, wait, interrupt,
//!   close) and durable `resume`, the concurrency gate and the budget walk;
//!   it starts turns and builds `task` tools through two function pointers
//!   the runtime sets, so it names neither `turn.rs` nor `task.rs`.
//! - `runtime.rs` — `Runtime`: built from `RuntimeOptions` (which wires
//!   the state to `turn.rs` and `task.rs`), the verbs, `list`/`inspect`,
//!   the trace, `as_tool`.
//! - `turn.rs` — one turn on its own thread: the client loop with the
//!   handle's soul, model, `maxTurns`, tools and stored transcript; the
//!   turn gate around each LLM call; the roll-up; the escalator; settling
//!   the outcome (done, incomplete, pending with rewind, error).
//! - `task.rs` — the `task` tool: team-only delegation with reattach by key.
//! - `durable.rs` — the store behind a runtime: the records (transcripts,
//!   checkpoints, the suspended tree a restarted runtime carries on) and
//!   the one writer thread that writes them in order.
//! - `calls.rs` — the runtime as JSON (contract §4.12): built from one
//!   config object, its verbs as `(verb, args) → JSON` calls by handle id;
//!   what the C ABI drives.
//! - `compaction.rs` — §7F: the compactor (summary + kept tail) and its
//!   `beforeLLM` hook.
//! - `harness.rs` — contract §7: the completion gate (on a plain client
//!   run, and on every turn of an agent whose definition has one), the
//!   built-in `allTodosDone` verifier, guardrails compiled into one
//!   `beforeTool` where the first deny wins.
//! - `home.rs` — §7E: a persona from a directory (bootstrap files in order,
//!   per-file cap), the file-backed `memory` tool, the heartbeat.

pub mod calls;
pub mod clock;
pub mod compaction;
pub mod def;
mod durable;
pub mod harness;
pub mod home;
pub mod inbox;
mod runtime;
mod state;
mod task;
mod turn;

pub use clock::{Clock, ManualClock, SystemClock};
pub use def::{AgentDef, Budget, Registry};
pub use inbox::{drain_block, InboxItem};
pub use runtime::{Llm, Runtime, RuntimeOptions};
pub use state::{HandleView, OnClose, OnSpawn, State, TaskResult};
pub use task::description as task_description;

#[cfg(test)]
mod tests;

use crate::cancel::CancelToken;
use std::time::Duration;

/// Blocks until `token` is cancelled or `max` has passed; `true` if it was
/// cancelled. For a provider (a mock model among them) that holds a call
/// until the runtime aborts it.
pub fn wait_cancelled(token: &CancelToken, max: Duration) -> bool {
    if token.is_cancelled() {
        return true;
    }
    crate::runtime::block_on(async { tokio::time::timeout(max, token.cancelled()).await.is_ok() })
}
