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
//!
//! In fill mode (`mode: "fill"`, the §10 addendum's `runWithAnswer`) no
//! tool runs: every open slot takes its result from the Answer —
//! `data.results: [{id, output, isError?}]` by call id, or the shorthand
//! `data.output` / `data.isError` for the halted call — a result the halt
//! kept stays unless the Answer gives that id, a declined Answer gives the
//! halted call `declined/expired: <prompt>`, and a slot left without one
//! gets `no result supplied on resume for <name>` (an error result).

use super::observe::Event;
use super::outcome::Settled;
use super::run::Phase;
use super::shape::{self, Call, Fed};
use super::{Client, ResumeRequest, RunData};
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::provider::{anthropic, gemini, Style};
use crate::tool::ToolResult;
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
                let id = shape::result_id(style, m)
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
                    let id = shape::result_id(style, b)
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
                        let id = shape::result_id(style, p).unwrap_or_else(|| {
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
    if request.fill {
        let filled = Filled::read(&request.answer)?;
        for (i, call) in halted.calls.iter().cloned().enumerate() {
            if let Some(kept) = present.remove(&call.id).filter(|_| i < h) {
                if !filled.by_id.contains_key(&call.id) {
                    slots.push(Slot::Kept(kept));
                    continue;
                }
            }
            let result = if !filled.ok && i == h {
                run.answered(&call, &request.pending, request.answer.clone(), 0)?
            } else {
                filled.result(&call, i == h)
            };
            slots.push(Slot::Answered(Settled {
                call,
                result,
                ms: 0,
            }));
        }
    }
    for (i, call) in halted
        .calls
        .into_iter()
        .enumerate()
        .filter(|_| !request.fill)
    {
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
            Style::Anthropic => fed_blocks.push(anthropic::result_block(&fed)),
            Style::Gemini => fed_blocks.extend(gemini::result_parts(&fed)),
        }
        run.emit(|| Event::ToolResult {
            id: &settled.call.id,
            name: &settled.call.name,
            result: &settled.result,
            ms: settled.ms,
        });
        records.push(settled.kept());
    }
    match style {
        Style::OpenAi | Style::Responses => run.messages.extend(kept_messages),
        Style::Anthropic => run.messages.push(anthropic::results_message(fed_blocks)),
        Style::Gemini => run.messages.push(gemini::results_content(fed_blocks)),
    }
    run.tool_calls.extend(records);
    let outcome = match halt {
        Some(request) => Ok(run.halted(request)),
        None => run.drive(0),
    };
    run.report(&outcome);
    outcome.map(super::RunOutcome::into_json)
}

/// What a fill-mode Answer supplies.
struct Filled {
    ok: bool,
    by_id: HashMap<String, ToolResult>,
    shorthand: Option<ToolResult>,
}

fn bad_results(why: &str) -> Error {
    Error::invalid_argument(format!(
        "resume (fill): answer.data.results must be [{{id, output, isError?}}] ({why})"
    ))
}

impl Filled {
    fn read(answer: &Value) -> Result<Filled> {
        let ok = answer.get("ok") == Some(&Value::Bool(true));
        let data = answer.get("data");
        let is_error = |v: &Value| v.get("isError").and_then(Value::as_bool).unwrap_or(false);
        let mut by_id = HashMap::new();
        match data.and_then(|d| d.get("results")) {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) => {
                for (i, r) in list.iter().enumerate() {
                    let id = r
                        .get("id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad_results(&format!("[{i}] has no string id")))?;
                    let output = r
                        .get("output")
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad_results(&format!("[{i}] has no string output")))?;
                    let result = if is_error(r) {
                        ToolResult::error(output)
                    } else {
                        ToolResult::ok(output)
                    };
                    by_id.insert(id.to_string(), result);
                }
            }
            Some(_) => return Err(bad_results("not an array")),
        }
        let shorthand = match data.and_then(|d| d.get("output")) {
            None | Some(Value::Null) => None,
            Some(Value::String(o)) => Some(if data.is_some_and(is_error) {
                ToolResult::error(o.as_str())
            } else {
                ToolResult::ok(o.as_str())
            }),
            Some(_) => {
                return Err(Error::invalid_argument(
                    "resume (fill): answer.data.output must be a string",
                ))
            }
        };
        Ok(Filled {
            ok,
            by_id,
            shorthand,
        })
    }

    /// The result for `call`'s slot (`halted`: the call the Request is for).
    fn result(&self, call: &Call, halted: bool) -> ToolResult {
        if let Some(r) = self.by_id.get(&call.id) {
            return r.clone();
        }
        if let Some(r) = self.shorthand.as_ref().filter(|_| halted && self.ok) {
            return r.clone();
        }
        let name = if call.name.is_empty() {
            &call.id
        } else {
            &call.name
        };
        ToolResult::error(format!("no result supplied on resume for {name}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{Exchange, Provider, RunRequest};
    use crate::native::native_tool;
    use crate::tool::ExecContext;
    use crate::translate::ClientConfig;
    use serde_json::{json, Map};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    /// Turn 0 calls echo, ask, ask; any later turn answers with the tool
    /// results it was sent, in order.
    #[derive(Default)]
    struct Model {
        sent: Mutex<Vec<Value>>,
    }

    impl Provider for Model {
        fn complete(&self, ex: Exchange<'_>) -> Result<Value> {
            let body = ex.body.to_value();
            self.sent.lock().expect("lock").push(body.clone());
            let msgs = body["messages"].as_array().cloned().unwrap_or_default();
            let results: Vec<String> = msgs
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| {
                    format!(
                        "{}={}",
                        m["tool_call_id"].as_str().unwrap_or(""),
                        m["content"].as_str().unwrap_or("")
                    )
                })
                .collect();
            let message = if results.is_empty() {
                let call = |id: &str, name: &str| json!({"id": id, "type": "function", "function": {"name": name, "arguments": "{}"}});
                json!({"role": "assistant", "content": null,
                       "tool_calls": [call("c0", "echo"), call("c1", "ask"), call("c2", "ask")]})
            } else {
                json!({"role": "assistant", "content": results.join(" | ")})
            };
            Ok(json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}))
        }

        fn streams(&self) -> bool {
            false
        }
    }

    struct World {
        client: Client,
        toolkit: Toolkit,
        asks: Arc<AtomicUsize>,
        echoes: Arc<AtomicUsize>,
    }

    fn world() -> World {
        let toolkit = Toolkit::build_from_json(r#"{"builtins":false}"#).expect("toolkit");
        let (asks, echoes) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let n = Arc::clone(&asks);
        toolkit.register(native_tool(
            "ask",
            "asks the host",
            None,
            Arc::new(move |_: &Value, _: &ExecContext| {
                n.fetch_add(1, Ordering::SeqCst);
                let mut md = Map::new();
                md.insert(
                    "pending".into(),
                    json!({"id": "r1", "kind": "tool_call", "prompt": "run ask for me"}),
                );
                ToolResult::error("run ask for me").with_metadata(md)
            }),
        ));
        let n = Arc::clone(&echoes);
        toolkit.register(native_tool(
            "echo",
            "echoes",
            None,
            Arc::new(move |_: &Value, _: &ExecContext| {
                n.fetch_add(1, Ordering::SeqCst);
                ToolResult::ok("echoed")
            }),
        ));
        let config = ClientConfig::from_json(
            &json!({"baseUrl": "http://model.invalid", "style": "openai", "model": "m"}),
        )
        .expect("config");
        World {
            client: Client::with_provider(config, 8, Arc::new(Model::default())),
            toolkit,
            asks,
            echoes,
        }
    }

    /// The halted run's resume request with `answer`, in `mode`.
    fn halted(w: &World, mode: &str, answer: Value) -> ResumeRequest {
        let cancel = CancelToken::new();
        let run = w
            .client
            .run(
                &w.toolkit,
                &RunRequest {
                    prompt: "go".into(),
                    history: vec![],
                },
                &cancel,
                RunData::default(),
            )
            .expect("run");
        assert_eq!(run["status"], "pending");
        ResumeRequest::from_json(
            &json!({"history": run["messages"], "pending": run["pending"],
                                         "answer": answer, "mode": mode}),
        )
        .expect("resume request")
    }

    fn resumed(w: &World, req: &ResumeRequest) -> Value {
        w.client
            .resume(&w.toolkit, req, &CancelToken::new(), RunData::default())
            .expect("resume")
    }

    #[test]
    fn fill_mode_fills_every_open_slot_and_runs_no_tool_again() {
        let w = world();
        let req = halted(
            &w,
            "fill",
            json!({"id": "r1", "ok": true, "data": {"output": "one",
                   "results": [{"id": "c2", "output": "two", "isError": true}]}}),
        );
        assert!(req.fill);
        let r = resumed(&w, &req);
        assert_eq!(r["status"], "done", "{r}");
        assert_eq!(r["text"], "c0=echoed | c1=one | c2=two");
        // The halted turn ran its three calls at once; the resume ran nothing.
        assert_eq!(
            (
                w.asks.load(Ordering::SeqCst),
                w.echoes.load(Ordering::SeqCst)
            ),
            (2, 1)
        );
        let calls = r["toolCalls"].as_array().cloned().unwrap_or_default();
        let c2 = calls
            .iter()
            .find(|c| c["output"] == "two")
            .expect("c2 recorded");
        assert_eq!(c2["isError"], true);
    }

    #[test]
    fn fill_mode_names_a_missing_result_and_a_declined_answer() {
        let w = world();
        let r = resumed(
            &w,
            &halted(
                &w,
                "fill",
                json!({"id": "r1", "ok": true, "data": {"output": "one"}}),
            ),
        );
        assert_eq!(
            r["text"],
            "c0=echoed | c1=one | c2=no result supplied on resume for ask"
        );
        let r = resumed(
            &w,
            &halted(
                &w,
                "fill",
                json!({"id": "r1", "ok": false, "reason": "declined",
                                       "data": {"output": "ignored"}}),
            ),
        );
        assert_eq!(
            r["text"],
            "c0=echoed | c1=declined/expired: run ask for me | c2=no result supplied on resume for ask"
        );
        assert_eq!(
            w.asks.load(Ordering::SeqCst),
            4,
            "only the two halted turns ran ask"
        );
    }

    #[test]
    fn rerun_stays_the_default_and_bad_fill_answers_are_refused() {
        let w = world();
        // The default re-runs the halted call and runs the left-out one.
        let r = resumed(&w, &halted(&w, "rerun", json!({"id": "r1", "ok": true})));
        assert_eq!(r["status"], "pending", "ask suspends again: {r}");
        // The halted turn's two, then the re-run and the left-out call.
        assert_eq!(w.asks.load(Ordering::SeqCst), 4);
        for (answer, says) in [
            (
                json!({"id": "r1", "ok": true, "data": {"results": {}}}),
                "not an array",
            ),
            (
                json!({"id": "r1", "ok": true, "data": {"results": [{"output": "x"}]}}),
                "no string id",
            ),
            (
                json!({"id": "r1", "ok": true, "data": {"output": 3}}),
                "must be a string",
            ),
        ] {
            let req = halted(&w, "fill", answer);
            let e = w
                .client
                .resume(&w.toolkit, &req, &CancelToken::new(), RunData::default())
                .expect_err("refused");
            assert!(e.message.contains(says), "{}", e.message);
        }
        let e = ResumeRequest::from_json(&json!({"history": [], "pending": {"id": "r1"},
                                                 "answer": {"id": "r1", "ok": true}, "mode": "replay"}))
        .expect_err("bad mode");
        assert!(e.message.contains("\"rerun\" or \"fill\""), "{}", e.message);
    }
}
