//! What a run reports as it goes, for whoever listens: the §8 stream events
//! (`tool_call`, `tool_result`, `usage`, `pending`, `done`) and the facts the
//! §8 metrics are made of (each provider call, each tool call, each run).
//! A client without an [`Observer`] builds none of these.

use crate::error::Error;
use crate::tool::ToolResult;
use serde_json::Value;

use super::outcome::RunOutcome;
use super::shape::Usage;

/// One thing a run did.
#[derive(Debug)]
pub enum Event<'a> {
    /// A provider round trip ended: `raw` is its answer, `None` when it
    /// failed; `ms` its duration, retries included.
    Llm {
        model: &'a str,
        turn: u32,
        ms: u64,
        raw: Option<&'a Value>,
    },
    /// The usage so far, after each provider answer.
    Usage { usage: Usage },
    /// A tool call about to run (in call order, before the turn's calls run).
    ToolCall {
        id: &'a str,
        name: &'a str,
        args: &'a Value,
    },
    /// A call's result as it is fed back (in call order); `ms` is how long
    /// the tool ran.
    ToolResult {
        id: &'a str,
        name: &'a str,
        result: &'a ToolResult,
        ms: u64,
    },
    /// A tool suspended; sent before `waitFor` is asked (or the run halts).
    Pending { request: &'a Value },
    /// The run ended so ([`RunOutcome::to_json`] gives its RunResult).
    Done { result: &'a RunOutcome, ms: u64 },
    /// The run failed.
    Failed { error: &'a Error, ms: u64 },
}

/// Receives a run's events, on the run's threads (tool results arrive in
/// call order from the run's own thread). Must be cheap and must not fail.
pub trait Observer: Send + Sync {
    fn event(&self, event: &Event<'_>);
}
