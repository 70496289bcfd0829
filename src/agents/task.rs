//! The `task` tool (SPEC §7D): how a model with a team delegates. Present
//! only on agents with a team; it spawns a team member under the calling
//! handle, wakes it with the prompt, waits, closes it and returns its final
//! text. A call whose `agent:prompt` key a child already carries reattaches
//! to that child instead (a replayed turn after a resume): never a second
//! spawn.

use super::state::{Inner, Job, TaskResult};
use crate::native::native_tool;
use crate::tool::{ExecContext, Tool, ToolResult};
use serde_json::{json, Map, Value};
use std::cell::Cell;
use std::sync::{Arc, LazyLock, Weak};

/// The tool's description: the team, sorted by name, as `name: does`.
pub fn description(team: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = team.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let listed: Vec<String> = sorted.iter().map(|(n, d)| format!("{n}: {d}")).collect();
    format!(
        "Delegate a self-contained task to a sub-agent, which works in its own context and returns only its final answer. Available agents — {}",
        listed.join("; ")
    )
}

/// The `task` tool of every handle of a definition with `team`: the calling
/// handle is the one whose run the call belongs to (the run's tag, which
/// the turn sets to the handle's index).
pub(crate) fn tool(inner: Weak<Inner>, team: Vec<(String, String)>) -> Tool {
    let desc = description(&team);
    let mut names: Vec<String> = team.into_iter().map(|(n, _)| n).collect();
    names.sort();
    // Made once: every handle with a team has a `task` tool, and a copy of
    // a made object costs no hashing where building one hashes every key.
    static SCHEMA: LazyLock<Value> = LazyLock::new(|| {
        json!({
            "type": "object",
            "properties": {
                "agent": {"type": "string", "description": "which agent of the team"},
                "prompt": {"type": "string", "description": "the task, self-contained"}
            },
            "required": ["agent", "prompt"]
        })
    });
    let schema = Value::clone(&SCHEMA);
    native_tool(
        "task",
        desc,
        Some(schema),
        Arc::new(move |args: &Value, ctx: &ExecContext| {
            let Some(inner) = inner.upgrade() else {
                return ToolResult::error("task: the runtime is gone");
            };
            call(&inner, &names, args, ctx)
        }),
    )
}

fn call(inner: &Inner, team: &[String], args: &Value, ctx: &ExecContext) -> ToolResult {
    let (Some(agent), Some(prompt)) = (
        args.get("agent").and_then(Value::as_str),
        args.get("prompt").and_then(Value::as_str),
    ) else {
        return ToolResult::error("task: agent and prompt must both be strings");
    };
    if !team.iter().any(|t| t == agent) {
        return ToolResult::error(format!(
            "agent \"{agent}\" is not in this agent's team (available: {})",
            team.join(", ")
        ));
    }
    let mut key = String::with_capacity(agent.len() + 1 + prompt.len());
    key.push_str(agent);
    key.push(':');
    key.push_str(prompt);
    let mut st = inner.lock();
    let Some(parent) = ctx
        .run_tag
        .and_then(|t| usize::try_from(t).ok())
        .filter(|&p| p < st.handles.len())
    else {
        return ToolResult::error("task: called outside a turn of this agent runtime");
    };
    let existing = st.handles[parent]
        .children
        .iter()
        .copied()
        .find(|&c| st.handles[c].task_key.as_deref() == Some(key.as_str()));
    // This turn's call waits on the child: were the child to park, the
    // suspended tree holds this handle as waiting on it (see
    // `Inner::parked`).
    let turn = st.handles[parent].gen;
    let child = match existing {
        Some(c) => {
            st.handles[c].awaited_in = Some(turn);
            let (id, state) = (st.handles[c].id.clone(), st.handles[c].state);
            st.trace(
                parent,
                format_args!("task replay → REATTACH to {id} (state {})", state.as_str()),
            );
            c
        }
        None => {
            let parent_id = st.handles[parent].id.clone();
            drop(st);
            let id = match inner.spawn(&parent_id, agent, None) {
                Ok(id) => id,
                Err(e) => return ToolResult::error(e),
            };
            st = inner.lock();
            let Some(&c) = st.index.get(id.as_str()) else {
                return ToolResult::error(format!("task: {id} vanished"));
            };
            st.handles[c].task_key = Some(key);
            st.handles[c].awaited_in = Some(turn);
            // A child that starts now runs its turn here, on the thread
            // that would otherwise only wait for it (no hand-over to
            // another thread and back), unless this thread already runs
            // turns that deep.
            let here = INLINE.with(Cell::get) < crate::limits::AGENT_INLINE_TURNS;
            st.capture = here;
            let woke = inner.wake_locked(&mut st, c, Some(prompt.to_string()));
            st.capture = false;
            let job = st.captured.take();
            if let Err(e) = woke {
                return ToolResult::error(e);
            }
            if let (Some(job), Some(owner)) = (job, inner.me.upgrade()) {
                drop(st);
                run_here(owner, job);
                st = inner.lock();
            }
            c
        }
    };
    let r = inner.wait_index(st, child, None, ctx.cancel.as_ref());
    if r.status == "pending" {
        let request = r.pending.clone().unwrap_or(Value::Null);
        let mut md = Map::new();
        md.insert("pending".into(), request);
        return ToolResult::error(r.text).with_metadata(md);
    }
    if r.status == "interrupted" && ctx.is_cancelled() {
        return ToolResult::error("task: interrupted");
    }
    let id = inner.lock().handles[child].id.clone();
    let _ = inner.close(&id, false, None);
    settled_result(agent, r)
}

thread_local! {
    /// How many sub-agent turns run inside each other on this thread.
    static INLINE: Cell<usize> = const { Cell::new(0) };
}

/// Runs a child's turn on this thread, counted in [`INLINE`] while it runs.
fn run_here(inner: Arc<Inner>, job: Job) {
    struct Out;
    impl Drop for Out {
        fn drop(&mut self) {
            INLINE.with(|d| d.set(d.get().saturating_sub(1)));
        }
    }
    INLINE.with(|d| d.set(d.get() + 1));
    let _out = Out;
    (inner.run_turn)(Arc::clone(&inner), job);
}

fn settled_result(agent: &str, r: TaskResult) -> ToolResult {
    let output = if r.status == "done" {
        r.text
    } else {
        format!("[{}] {}", r.status, r.text)
    };
    let mut md = Map::new();
    md.insert("agent".into(), json!(agent));
    md.insert("turns".into(), json!(r.turns));
    md.insert("totalTokens".into(), json!(r.total_tokens));
    let result = if r.is_error {
        ToolResult::error(output)
    } else {
        ToolResult::ok(output)
    };
    result.with_metadata(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_lists_the_team_sorted() {
        let d = description(&[
            ("explore".into(), "read-only research".into()),
            ("coder".into(), "writes code".into()),
        ]);
        assert!(
            d.ends_with("Available agents — coder: writes code; explore: read-only research"),
            "{d}"
        );
    }
}
