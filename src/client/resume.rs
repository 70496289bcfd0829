//! SPEC §10 durable resume: the way back into a run that halted with
//! `status:"pending"`, given its transcript, the Request and the Answer.
//!
//! The halted turn is the last assistant message with tool calls; the
//! results after it are the ones the halt kept (the calls before the halted
//! one) and the halted call's placeholder, which is the last of them. The
//! resume replaces the placeholder with the answered result (the call re-run
//! once with `ctx.answer`, or `declined/expired`), runs the calls the halt
//! left out — through the hooks, and with the suspension rule, so one of
//! them may halt the run again — and goes on with the loop. The transcript
//! sent on is balanced: one result per call, in call order.

use super::observe::Event;
use super::run::{Phase, Settled};
use super::shape::{self, Call, Fed};
use super::{Client, ResumeRequest, RunData};
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::provider::Style;
use crate::toolkit::Toolkit;
use serde_json::Value;
use std::collections::HashMap;

/// A result already in the transcript: an openai `tool` message, an
/// anthropic `tool_result` block or a gemini `functionResponse` part with
/// the media parts after it (an array), kept verbatim.
struct Kept(Value);

/// Where the halted turn is and what it holds.
struct Halted {
    /// Index of the assistant message with the tool calls.
    index: usize,
    calls: Vec<Call>,
    /// Results present after it, by call id, in transcript order.
    present: Vec<(String, Kept)>,
}

fn result_id(style: Style, v: &Value) -> Option<String> {
    let key = match style {
        Style::OpenAi | Style::Responses => "tool_call_id",
        Style::Anthropic => "tool_use_id",
        Style::Gemini => {
            return v
                .pointer("/functionResponse/id")?
                .as_str()
                .map(str::to_string)
        }
    };
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn not_halted(why: &str) -> Error {
    Error::invalid_argument(format!(
        "resume: history does not end in a halted tool turn ({why})"
    ))
}

fn find_halted(style: Style, history: &[Value]) -> Result<Halted> {
    let index = history
        .iter()
        .rposition(|m| {
            matches!(
                m.get("role").and_then(Value::as_str),
                Some("assistant" | "model")
            ) && !shape::calls_of(style, m).is_empty()
        })
        .ok_or_else(|| not_halted("no assistant message with tool calls"))?;
    let calls = shape::calls_of(style, &history[index]);
    let mut present = Vec::new();
    for m in &history[index + 1..] {
        let role = m.get("role").and_then(Value::as_str);
        match (style, role) {
            (Style::OpenAi, Some("tool")) => {
                let id = result_id(style, m)
                    .ok_or_else(|| not_halted("a tool message without tool_call_id"))?;
                present.push((id, Kept(m.clone())));
            }
            (Style::Anthropic, Some("user")) => {
                let blocks = m.get("content").and_then(Value::as_array).ok_or_else(|| {
                    not_halted(
                        "a user message after the tool calls that holds no tool_result blocks",
                    )
                })?;
                for b in blocks {
                    if b.get("type").and_then(Value::as_str) != Some("tool_result") {
                        return Err(not_halted(
                            "a user message after the tool calls that is not tool results",
                        ));
                    }
                    let id = result_id(style, b)
                        .ok_or_else(|| not_halted("a tool_result block without tool_use_id"))?;
                    present.push((id, Kept(b.clone())));
                }
            }
            (Style::Gemini, Some("user")) => {
                let parts = m.get("parts").and_then(Value::as_array).ok_or_else(|| {
                    not_halted("a user content after the function calls without parts")
                })?;
                for p in parts {
                    if p.get("functionResponse").is_some() {
                        // A response without an id answers the call in its
                        // position (Gemini sent that call no id either).
                        let id = result_id(style, p).unwrap_or_else(|| {
                            format!(
                                "{}{}",
                                crate::provider::gemini::SYNTHETIC_ID_PREFIX,
                                present.len()
                            )
                        });
                        present.push((id, Kept(Value::Array(vec![p.clone()]))));
                    } else if let Some((_, Kept(Value::Array(group)))) = present.last_mut() {
                        group.push(p.clone());
                    } else {
                        return Err(not_halted(
                            "a user content after the function calls that is not function responses",
                        ));
                    }
                }
            }
            _ => return Err(not_halted("a message after the tool results")),
        }
    }
    if let Some((id, _)) = present
        .iter()
        .find(|(id, _)| !calls.iter().any(|c| c.id == *id))
    {
        return Err(not_halted(&format!(
            "a result for '{id}', which the halted turn did not call"
        )));
    }
    Ok(Halted {
        index,
        calls,
        present,
    })
}

/// One call's slot in the resumed turn.
enum Slot {
    Kept(Kept),
    Answered(Settled),
    Now(usize),
}

pub(super) fn resume(
    client: &Client,
    toolkit: &Toolkit,
    request: &ResumeRequest,
    cancel: &CancelToken,
    data: RunData,
) -> Result<Value> {
    let pending_id = request.pending.get("id");
    match (pending_id, request.answer.get("id")) {
        (Some(Value::String(p)), Some(Value::String(a))) if p == a => {}
        (Some(Value::String(p)), Some(a)) => {
            return Err(Error::invalid_argument(format!(
                "resume: the answer's id {a} does not echo the pending request's id \"{p}\""
            )))
        }
        (Some(Value::String(_)), None) => {
            return Err(Error::invalid_argument(
                "resume: the answer has no id; it must echo the pending request's id",
            ))
        }
        _ => {
            return Err(Error::invalid_argument(
                "resume: pending.id must be the Request's id (a string)",
            ))
        }
    }
    if !matches!(request.answer.get("ok"), Some(Value::Bool(_))) {
        return Err(Error::invalid_argument(
            "resume: answer.ok must be a boolean",
        ));
    }
    let style = client.config.style;
    if style == Style::Responses {
        return Err(Error::invalid_argument(
            "resume: a run of the responses style cannot be resumed yet (its transcript is flat items, not messages)",
        ));
    }
    let halted = find_halted(style, &request.history)?;
    // The halted call: the one of the last result present (its
    // placeholder), or the first call when none is.
    let h = halted
        .present
        .last()
        .and_then(|(id, _)| halted.calls.iter().position(|c| c.id == *id))
        .unwrap_or(0);
    let mut present: HashMap<String, Kept> = halted.present.into_iter().collect();

    let system = client.system_text(toolkit);
    let messages = request.history[..=halted.index].to_vec();
    let mut run = client.start(toolkit, cancel, data, messages, system)?;
    run.check_abort()?;

    let mut slots = Vec::with_capacity(halted.calls.len());
    let mut now = Vec::new();
    for (i, call) in halted.calls.into_iter().enumerate() {
        if i == h {
            let result = run.answered(&call, &request.pending, request.answer.clone(), 0)?;
            slots.push(Slot::Answered(Settled {
                call,
                result,
                ms: 0,
            }));
        } else if let Some(kept) = present.remove(&call.id).filter(|_| i < h) {
            slots.push(Slot::Kept(kept));
        } else {
            slots.push(Slot::Now(now.len()));
            now.push(call);
        }
    }
    let Phase { settled, halt } = if now.is_empty() {
        Phase {
            settled: Vec::new(),
            halt: None,
        }
    } else {
        run.tool_phase(now, 0)?
    };
    // A new halt keeps the calls up to it; the ones after it re-suspend on
    // the next resume.
    let mut fresh: Vec<Option<Settled>> = settled.into_iter().map(Some).collect();
    let mut kept_messages = Vec::new();
    let mut fed_blocks = Vec::new();
    let mut records = Vec::new();
    for slot in slots {
        let settled = match slot {
            Slot::Kept(Kept(v)) => {
                match (style, v) {
                    (Style::OpenAi | Style::Responses, v) => kept_messages.push(v),
                    (Style::Gemini, Value::Array(group)) => fed_blocks.extend(group),
                    (_, v) => fed_blocks.push(v),
                }
                continue;
            }
            Slot::Answered(s) => s,
            Slot::Now(i) => match fresh.get_mut(i).and_then(Option::take) {
                Some(s) => s,
                None => break,
            },
        };
        let fed = Fed {
            id: &settled.call.id,
            name: &settled.call.name,
            output: &settled.result.output,
            is_error: settled.result.is_error,
            parts: &settled.result.parts,
        };
        match style {
            Style::OpenAi | Style::Responses => {
                kept_messages.extend(shape::result_messages(style, &[fed]))
            }
            Style::Anthropic => fed_blocks.push(shape::anthropic_block(&fed)),
            Style::Gemini => fed_blocks.extend(shape::gemini_parts(&fed)),
        }
        run.emit(|| Event::ToolResult {
            id: &settled.call.id,
            name: &settled.call.name,
            result: &settled.result,
            ms: settled.ms,
        });
        records.push(settled.record());
    }
    match style {
        Style::OpenAi | Style::Responses => run.messages.extend(kept_messages),
        Style::Anthropic => run.messages.push(serde_json::json!({
            "role": "user",
            "content": fed_blocks,
        })),
        Style::Gemini => run.messages.push(serde_json::json!({
            "role": "user",
            "parts": fed_blocks,
        })),
    }
    run.tool_calls.extend(records);
    let outcome = match halt {
        Some(request) => Ok(run.halted(request)),
        None => run.drive(0),
    };
    run.report(&outcome);
    outcome
}
