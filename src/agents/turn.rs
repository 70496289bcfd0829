//! One turn of a handle: the §8 client loop (the crate's own [`Client`])
//! run on the turn's input with the handle's soul, model, `maxTurns`,
//! scoped tools and transcript, its LLM calls through the turn gate and
//! rolled up into the budget ledger; then the outcome settles the handle.

use super::harness;
use super::state::{Inner, Job, St, State, TaskResult, TraceEvent};
use crate::client::callbacks::{with_stop, RunStop};
use crate::client::shape::{call_count, Usage};
use crate::client::{
    Callbacks, Client, Exchange, HostFn, Provider, RunData, RunOutcome, RunRequest, RunStatus, Slot,
};
use crate::error::{Error, ErrorCode, Result};
use crate::store::Kind;
use serde_json::Value;
use std::sync::{Arc, MutexGuard};

/// The hook slots a handle's runs take from the runtime.
const HOOK_SLOTS: [Slot; 6] = [
    Slot::BeforeLlm,
    Slot::AfterLlm,
    Slot::BeforeTool,
    Slot::AfterTool,
    Slot::OnError,
    Slot::OnMetric,
];

/// The provider of one handle's runs: the runtime's, behind the global turn
/// gate (held for the call only), with each answer's usage rolled up.
struct Gated {
    inner: Arc<Inner>,
    index: usize,
}

/// A turn-gate slot, given back when dropped (also on unwind).
struct Slot_<'a>(&'a Inner);

impl Drop for Slot_<'_> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.turns_in_flight = st.turns_in_flight.saturating_sub(1);
        self.0.wake_shared(&st);
    }
}

impl Provider for Gated {
    fn complete(&self, exchange: Exchange<'_>) -> Result<Value> {
        let style = exchange.body.style;
        let cancel = exchange.cancel.clone();
        let slot = {
            let mut st = self.inner.lock();
            while st.turns_in_flight >= self.inner.max_concurrent_turns {
                if cancel.is_cancelled() {
                    return Err(Error::new(ErrorCode::Cancelled, "the run was cancelled"));
                }
                st = self.inner.sleep(st, None);
            }
            st.turns_in_flight += 1;
            st.max_observed_turns = st.max_observed_turns.max(st.turns_in_flight);
            Slot_(&self.inner)
        };
        let outcome = self.inner.provider.complete(exchange);
        drop(slot);
        if let Ok(raw) = &outcome {
            let mut usage = Usage::default();
            usage.add(style, raw);
            let calls = call_count(style, raw) as u64;
            roll_up(&mut self.inner.lock(), self.index, usage.total, calls);
        }
        outcome
    }

    fn streams(&self) -> bool {
        false
    }
}

/// The ledger: a call's tokens and tool calls added to the usage and taken
/// from the pools of the handle and every ancestor.
fn roll_up(st: &mut St, i: usize, tokens: u64, calls: u64) {
    st.handles[i].own_tokens += tokens;
    st.handles[i].turn_calls += 1;
    let t = i64::try_from(tokens).unwrap_or(i64::MAX);
    let c = i64::try_from(calls).unwrap_or(i64::MAX);
    let mut at = Some(i);
    while let Some(a) = at {
        let h = &mut st.handles[a];
        h.tokens += tokens;
        h.tool_calls += calls;
        h.pool_tokens = h.pool_tokens.map(|p| p.saturating_sub(t));
        h.pool_tool_calls = h.pool_tool_calls.map(|p| p.saturating_sub(c));
        at = h.parent;
    }
}

/// The `waitFor` of a handle whose chain has an interpreter: the nearest
/// one answers, and the handle shows suspended while it does.
fn escalator(inner: &Arc<Inner>, i: usize, gen: u64, interpreter: usize, f: HostFn) -> HostFn {
    let inner = Arc::clone(inner);
    Arc::new(move |request: &Value, data: RunData| {
        let kind = request
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        {
            let mut st = inner.lock();
            if st.handles[i].gen != gen {
                return Err("the turn was interrupted".into());
            }
            st.handles[i].state = State::Suspended;
            st.handles[i].escalating = true;
            st.trace(i, format_args!("running→suspended (pending \"{kind}\")"));
            let who = if interpreter == i {
                "self".to_string()
            } else {
                st.handles[interpreter].id.to_string()
            };
            st.trace(
                i,
                format_args!("escalate → {who} answers (\"nearest interpreter\")"),
            );
            inner.notify(&mut st);
        }
        let answer = f(request, data);
        let mut st = inner.lock();
        if st.handles[i].gen == gen && st.handles[i].state == State::Suspended {
            st.handles[i].state = State::Running;
            st.handles[i].escalating = false;
            let ok = match &answer {
                Ok(Some(a)) => a.get("ok").and_then(Value::as_bool).unwrap_or(false),
                _ => false,
            };
            st.trace(i, format_args!("suspended→running (Answer ok={ok})"));
            inner.notify(&mut st);
        }
        answer
    })
}

/// A resume's one-shot interpreter: the Answer, once.
fn one_shot(answer: Value) -> HostFn {
    let cell = std::sync::Mutex::new(Some(answer));
    Arc::new(move |_: &Value, _: RunData| {
        let taken = cell
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match taken {
            Some(a) => Ok(Some(a)),
            None => Err("the resume Answer was already used".into()),
        }
    })
}

/// Runs the turn and settles the handle with its outcome.
pub(crate) fn run(inner: Arc<Inner>, mut job: Job) {
    let i = job.index;
    let prepared = {
        let mut st = inner.lock();
        if st.handles[i].gen != job.gen {
            return;
        }
        let Some(def) = st.handles[i].def.clone() else {
            return;
        };
        let made = match &st.handles[i].made {
            Some(m) => Arc::clone(m),
            None => match inner.def_parts(&def) {
                Ok(m) => {
                    st.handles[i].made = Some(Arc::clone(&m));
                    m
                }
                Err(e) => {
                    settle(&inner, st, &job, Err(Error::new(ErrorCode::Internal, e)));
                    return;
                }
            },
        };
        let h = &st.handles[i];
        let history = st.store.get(&h.id).cloned();
        let id = h.id.clone();
        let interpreter = st.chain(i).find(|&a| {
            st.handles[a]
                .def
                .as_ref()
                .is_some_and(|d| d.wait_for.is_some())
        });
        (def, history, id, interpreter, made, h.eff.turns())
    };
    let (def, history, id, interpreter, made, max_turns) = prepared;
    // A transcript this runtime has not held yet may be in its store (one
    // an earlier runtime on the same store wrote), read outside the lock.
    let history = match (history, &inner.durable) {
        (Some(m), _) => m,
        (None, None) => Vec::new(),
        (None, Some(d)) => match d.load(Kind::Conversation, &id) {
            Ok(Some(Value::Array(m))) => m,
            Ok(_) => Vec::new(),
            Err(e) => {
                let why = format!(
                    "cannot load the transcript of {id} from the agents store {}: {e}",
                    d.selector()
                );
                let st = inner.lock();
                settle(&inner, st, &job, Err(Error::new(ErrorCode::Internal, why)));
                return;
            }
        },
    };
    let provider = Arc::new(Gated {
        inner: Arc::clone(&inner),
        index: i,
    });
    // The definition's hook over the runtime's, slot by slot (contract
    // §4.7: replaced, never merged).
    let hook = |slot: Slot| def.hooks.get(slot).or_else(|| inner.hooks.get(slot));
    let mut callbacks = Callbacks::default();
    for slot in HOOK_SLOTS {
        if let Some(f) = hook(slot) {
            callbacks.set(slot, Some(Arc::clone(f)));
        }
    }
    if !def.guardrails.is_empty() {
        let before = hook(Slot::BeforeTool).map(Arc::clone);
        callbacks.set(Slot::BeforeTool, harness::guard(&def.guardrails, before));
    }
    let wait_for = match (&job.answer, interpreter) {
        (Some(a), _) => Some(one_shot(a.clone())),
        (None, Some(at)) => {
            let f = {
                let st = inner.lock();
                st.handles[at].def.as_ref().and_then(|d| d.wait_for.clone())
            };
            f.map(|f| escalator(&inner, i, job.gen, at, f))
        }
        (None, None) => None,
    };
    callbacks.set(Slot::WaitFor, wait_for);
    let client = Client::assembled(
        Arc::clone(&made.config),
        u32::try_from(max_turns).unwrap_or(u32::MAX),
        provider,
        callbacks,
        Arc::clone(&inner.metrics),
    )
    .tagging_runs(i as u64);
    // The input goes into the run and comes back after it (a checkpoint
    // keeps it), not copied.
    let request = RunRequest {
        prompt: std::mem::take(&mut job.input),
        history,
    };
    // The turn's cancel is what a host callback called outside the loop's
    // own hooks (the in-process `generate`, the completion gate's verifier)
    // stops waiting on: an interrupt or a close does not wait for a
    // callback that never answers.
    let stop = RunStop {
        cancel: job.cancel.clone(),
        deadline: None,
    };
    let outcome = with_stop(stop, || match &def.completion {
        Some(gate) => harness::run_gated(
            &client,
            &made.kit,
            &request,
            &job.cancel,
            RunData::default(),
            gate,
        )
        .map(Ended::from_json),
        None => client
            .run_outcome(&made.kit, &request, &job.cancel, RunData::default())
            .map(Ended::from_outcome),
    });
    job.input = request.prompt;
    let st = inner.lock();
    settle(&inner, st, &job, outcome);
}

/// What settling a handle reads of a run's end: the loop's outcome, or
/// the RunResult of a gated run (the completion gate judges the JSON).
struct Ended {
    turns: u64,
    text: String,
    messages: Option<Vec<Value>>,
    end: End,
}

/// How the turn's run ended.
enum End {
    Done,
    /// Halted on this Request.
    Pending(Value),
    /// Stopped by this limit (`maxTurns`, or `completion` for the gate).
    Incomplete(String),
}

impl Ended {
    fn from_outcome(run: RunOutcome) -> Ended {
        let end = match run.status {
            RunStatus::Done => End::Done,
            RunStatus::Pending(request) => End::Pending(request),
            RunStatus::Incomplete => End::Incomplete("maxTurns".to_string()),
        };
        Ended {
            turns: u64::from(run.turns),
            text: run.text,
            messages: Some(run.messages),
            end,
        }
    }

    fn from_json(mut run: Value) -> Ended {
        let text =
            |run: &Value, key: &str| run.get(key).and_then(Value::as_str).map(str::to_string);
        let end = match text(&run, "status").as_deref() {
            None | Some("done") => End::Done,
            Some("pending") => {
                End::Pending(run.get_mut("pending").map_or(Value::Null, Value::take))
            }
            Some(_) => {
                End::Incomplete(text(&run, "limit").unwrap_or_else(|| "maxTurns".to_string()))
            }
        };
        let messages = match run.get_mut("messages").map(Value::take) {
            Some(Value::Array(m)) => Some(m),
            _ => None,
        };
        Ended {
            turns: run.get("turns").and_then(Value::as_u64).unwrap_or(0),
            text: text(&run, "text").unwrap_or_default(),
            messages,
            end,
        }
    }
}

fn settle(inner: &Inner, mut st: MutexGuard<'_, St>, job: &Job, outcome: Result<Ended>) {
    let i = job.index;
    if st.handles[i].gen != job.gen || st.handles[i].state != State::Running {
        return;
    }
    st.handles[i].cancel = None;
    st.handles[i].escalating = false;
    inner.release_slot(&mut st, i);
    let run = match outcome {
        Ok(run) => run,
        Err(e) => {
            st.handles[i].state = State::Idle;
            inner.turn_over(&mut st, i, job.gen);
            inner.restore_drained(&mut st, i);
            let (status, text) = if e.code == ErrorCode::Cancelled {
                ("interrupted", "interrupted".to_string())
            } else {
                ("error", e.message.clone())
            };
            st.trace(i, format_args!("running→idle ({status}: {})", e.message));
            inner.settle(&mut st, i, TaskResult::new(status, text, true));
            return;
        }
    };
    st.handles[i].turns += run.turns;
    let Ended {
        text,
        messages,
        end,
        ..
    } = run;
    let id = st.handles[i].id.clone();
    match end {
        End::Pending(mut request) => {
            // Rewind: the stored transcript stays as it was before the
            // turn; the turn's input is the checkpoint to replay.
            super::state::with_path(&mut request, &id);
            let kind = request
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let h = &mut st.handles[i];
            h.state = State::Suspended;
            h.pending = Some(request.clone());
            h.checkpoint = Some(job.input.clone());
            inner.checkpoint_saved(&st, i);
            st.trace(
                i,
                format_args!("running→suspended (pending \"{kind}\", durable)"),
            );
            let mut r = TaskResult::new("pending", text, false);
            r.pending = Some(request);
            inner.settle(&mut st, i, r);
        }
        end => {
            if let Some(m) = messages {
                if let Some(d) = &inner.durable {
                    d.save(Kind::Conversation, &id, Value::Array(m.clone()));
                }
                st.store.insert(id, m);
            }
            st.handles[i].state = State::Idle;
            inner.turn_over(&mut st, i, job.gen);
            let h = &mut st.handles[i];
            h.drained.clear();
            let (turns, tokens) = (h.turns, h.tokens);
            let r = if let End::Incomplete(limit) = end {
                st.trace(i, format_args!("running→idle (incomplete: {limit})"));
                // The completion gate's text names what failed to verify.
                let text = if limit == "completion" {
                    text
                } else {
                    format!("hit {limit} without a final answer")
                };
                let mut r = TaskResult::new("incomplete", text, true);
                r.limit = Some(limit);
                r
            } else {
                st.trace_event(i, TraceEvent::Done { turns, tokens });
                TaskResult::new("done", text, false)
            };
            inner.settle(&mut st, i, r);
        }
    }
}
