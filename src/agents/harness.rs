//! The harness of upstream 0.15 (contract §7): the completion gate, which
//! re-runs a finished run until a verifier accepts the accumulated work or
//! the attempts run out, the built-in `allTodosDone` verifier, and
//! guardrails compiled into one `beforeTool` hook where the first deny
//! wins. Both work on a plain [`Client`] run ([`run_gated`], [`guard`]) and
//! on every turn of an agent that carries them in its definition (so they
//! reach delegated children too).

use crate::cancel::CancelToken;
use crate::client::{Client, HostFn, RunData, RunRequest};
use crate::error::{Error, Result};
use crate::json::type_name;
use crate::toolkit::Toolkit;
use serde_json::{json, Value};
use std::sync::Arc;

/// A verifier: sees a finished run's RunResult (its `toolCalls`
/// accumulated over every attempt) and answers `Ok(())` or the reason the
/// work does not verify.
pub type Verify = Arc<dyn Fn(&Value) -> std::result::Result<(), String> + Send + Sync>;

/// A guardrail: sees a `beforeTool` event `{name, args, id, turn}` and
/// answers `""` or `"allow"` to let the call go on, anything else to deny
/// it with that reason.
pub type Guardrail = Arc<dyn Fn(&Value) -> String + Send + Sync>;

/// The completion gate: `verify` judges, at most `max_attempts` runs.
#[derive(Clone)]
pub struct Completion {
    pub verify: Verify,
    pub max_attempts: u32,
}

impl std::fmt::Debug for Completion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completion")
            .field("max_attempts", &self.max_attempts)
            .finish()
    }
}

/// The prompt of every attempt after the first (same conversation).
pub fn retry_prompt(reason: &str) -> String {
    format!("Your work did not verify: {reason}. Fix it and finish.")
}

impl Completion {
    /// A gate; `max_attempts` must be at least 1.
    pub fn new(verify: Verify, max_attempts: u32) -> Result<Completion> {
        if max_attempts < 1 {
            return Err(Error::invalid_config("completion.maxAttempts must be >= 1"));
        }
        Ok(Completion {
            verify,
            max_attempts,
        })
    }

    /// Reads `{"verify": "allTodosDone"|"callback", "maxAttempts": n}`
    /// (`what` names it in errors). `maxAttempts` is required; `"callback"`
    /// is a verifier the host sets afterwards (until then it fails).
    pub fn from_json(v: &Value, what: &str) -> Result<Completion> {
        let obj = v.as_object().ok_or_else(|| {
            Error::invalid_config(format!(
                "{what} must be a JSON object {{verify, maxAttempts}}, got {}",
                type_name(v)
            ))
        })?;
        if let Some(k) = obj
            .keys()
            .find(|k| !matches!(k.as_str(), "verify" | "maxAttempts"))
        {
            return Err(Error::invalid_config(format!(
                "{what}: unknown field '{k}' (known fields: verify, maxAttempts)"
            )));
        }
        let verify = match obj.get("verify") {
            Some(Value::String(s)) if s == "allTodosDone" => Arc::new(all_todos_done) as Verify,
            // The host's verifier, put in by whoever reads the definition
            // (the C ABI's `verify:<agent>` callback); until then it fails.
            Some(Value::String(s)) if s == "callback" => {
                Arc::new(|_: &Value| Err("no verify callback is set".to_string())) as Verify
            }
            None | Some(Value::Null) => {
                return Err(Error::invalid_config(format!(
                    "{what}.verify is required (\"allTodosDone\" or \"callback\")"
                )))
            }
            Some(other) => {
                return Err(Error::invalid_config(format!(
                    "{what}.verify: expected \"allTodosDone\" (the built-in verifier) or \"callback\" (the host's), got {other}"
                )))
            }
        };
        let n = match obj.get("maxAttempts") {
            None | Some(Value::Null) => {
                return Err(Error::invalid_config(format!(
                    "{what}.maxAttempts is required (at least 1)"
                )))
            }
            Some(n) => n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    Error::invalid_config(format!(
                        "{what}.maxAttempts must be a whole number >= 1, got {n}"
                    ))
                })?,
        };
        Completion::new(verify, n)
            .map_err(|e| Error::invalid_config(format!("{what}: {}", e.message)))
    }
}

/// The built-in verifier: the last `todowrite` call of the run decides —
/// every item `completed: true` passes, else it fails naming the open
/// items; a run without one (or whose list is not a list) passes.
pub fn all_todos_done(result: &Value) -> std::result::Result<(), String> {
    let calls = result
        .get("toolCalls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let Some(last) = calls
        .iter()
        .rev()
        .find(|c| c.get("name").and_then(Value::as_str) == Some("todowrite"))
    else {
        return Ok(());
    };
    let Some(todos) = last
        .get("metadata")
        .and_then(|m| m.get("todos"))
        .and_then(Value::as_array)
    else {
        return Ok(());
    };
    let open: Vec<String> = todos
        .iter()
        .filter(|t| t.get("completed") != Some(&Value::Bool(true)))
        .map(|t| match t.get("text") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        })
        .collect();
    if open.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} item(s) still open: {}",
            open.len(),
            open.join("; ")
        ))
    }
}

/// Runs `attempt(prompt, history)` under `gate` (contract §7.1 rule 4):
/// the first attempt on `request`, each next one on [`retry_prompt`] in the
/// same conversation, until the verifier accepts. A run that is not `done`
/// is returned as it is (never verified), its text noting the last failed
/// verification unless it is `pending`; when every attempt fails the
/// result is `incomplete` with `limit: "completion"`. The returned
/// RunResult carries the tool calls and turns of every attempt.
pub fn gated(
    gate: &Completion,
    request: &RunRequest,
    mut attempt: impl FnMut(&RunRequest) -> Result<Value>,
) -> Result<Value> {
    let mut acc: Vec<Value> = Vec::new();
    let mut turns = 0u64;
    let mut req = request.clone();
    let mut failed: Option<(u32, String)> = None;
    for n in 1..=gate.max_attempts {
        let mut run = attempt(&req)?;
        if let Some(Value::Array(calls)) = run.get_mut("toolCalls").map(Value::take) {
            acc.extend(calls);
        }
        turns += run.get("turns").and_then(Value::as_u64).unwrap_or(0);
        run["toolCalls"] = Value::Array(acc.clone());
        run["turns"] = json!(turns);
        let status = run.get("status").and_then(Value::as_str).unwrap_or("done");
        if status != "done" {
            if let Some((at, why)) = failed.as_ref().filter(|_| status != "pending") {
                let text = run.get("text").and_then(Value::as_str).unwrap_or("");
                run["text"] = json!(format!(
                    "{text} [while verifying: attempt {at} last failed: {why}]"
                ));
            }
            return Ok(run);
        }
        match (gate.verify)(&run) {
            Ok(()) => return Ok(run),
            Err(why) => {
                let why = if why.is_empty() {
                    "unspecified".to_string()
                } else {
                    why
                };
                if n == gate.max_attempts {
                    run["status"] = json!("incomplete");
                    run["limit"] = json!("completion");
                    run["text"] = json!(format!(
                        "completion.verify failed {}x: {why}",
                        gate.max_attempts
                    ));
                    return Ok(run);
                }
                req = RunRequest {
                    prompt: retry_prompt(&why),
                    history: run
                        .get("messages")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                };
                failed = Some((n, why));
            }
        }
    }
    // max_attempts >= 1, so the loop always returned.
    Err(Error::invalid_config("completion.maxAttempts must be >= 1"))
}

/// [`Client::run`] under a completion gate.
pub fn run_gated(
    client: &Client,
    toolkit: &Toolkit,
    request: &RunRequest,
    cancel: &CancelToken,
    data: RunData,
    gate: &Completion,
) -> Result<Value> {
    gated(gate, request, |r| client.run(toolkit, r, cancel, data))
}

/// Compiles `guardrails` and an existing `beforeTool` hook into one
/// `beforeTool` (contract §7.1 rule 6): the first guardrail that does not
/// allow the call short-circuits it with `{result: {output: "denied:
/// <reason>", isError: true}}`; `before` runs only when every guardrail
/// allows. No guardrails: `before` unchanged.
pub fn guard(guardrails: &[Guardrail], before: Option<HostFn>) -> Option<HostFn> {
    if guardrails.is_empty() {
        return before;
    }
    let rails: Vec<Guardrail> = guardrails.to_vec();
    Some(Arc::new(move |event: &Value, data: RunData| {
        for g in &rails {
            let verdict = g(event);
            if !(verdict.is_empty() || verdict == "allow") {
                return Ok(Some(json!({
                    "result": {"output": format!("denied: {verdict}"), "isError": true}
                })));
            }
        }
        match &before {
            Some(f) => f(event, data),
            None => Ok(None),
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn todos(items: Value) -> Value {
        json!({"toolCalls": [
            {"name": "todowrite", "metadata": {"todos": [{"text": "old", "completed": false}]}},
            {"name": "read", "metadata": null},
            {"name": "todowrite", "metadata": {"todos": items}}
        ]})
    }

    #[test]
    fn all_todos_done_reads_the_last_todowrite() {
        assert_eq!(all_todos_done(&json!({"toolCalls": []})), Ok(()));
        assert_eq!(
            all_todos_done(&todos(json!([{"text": "a", "completed": true}]))),
            Ok(())
        );
        assert_eq!(
            all_todos_done(&todos(json!([
                {"text": "a", "completed": true},
                {"text": "b"},
                {"text": "c", "completed": false}
            ]))),
            Err("2 item(s) still open: b; c".into())
        );
        assert_eq!(all_todos_done(&todos(json!("not a list"))), Ok(()));
    }

    #[test]
    fn a_completion_needs_a_verifier_and_at_least_one_attempt() {
        let err = |v: Value| Completion::from_json(&v, "agent \"x\".completion").expect_err("bad");
        assert!(err(json!({"verify": "allTodosDone"}))
            .message
            .contains("maxAttempts is required"));
        assert!(err(json!({"verify": "allTodosDone", "maxAttempts": 0}))
            .message
            .contains("must be >= 1"));
        assert!(err(json!({"verify": "allTodosDone", "maxAttempts": -1}))
            .message
            .contains("whole number"));
        assert!(err(json!({"maxAttempts": 2}))
            .message
            .contains("verify is required"));
        assert!(err(json!({"verify": "vibes", "maxAttempts": 2}))
            .message
            .contains("allTodosDone"));
        assert!(
            err(json!({"verify": "allTodosDone", "maxAttempts": 2, "x": 1}))
                .message
                .contains("unknown field 'x'")
        );
        let ok = Completion::from_json(&json!({"verify": "allTodosDone", "maxAttempts": 3}), "c")
            .expect("good");
        assert_eq!(ok.max_attempts, 3);
    }

    /// A scripted run: each attempt answers the next RunResult.
    fn script(runs: Vec<Value>) -> impl FnMut(&RunRequest) -> Result<Value> {
        let mut it = runs.into_iter();
        move |_| Ok(it.next().expect("no more attempts scripted"))
    }

    fn reject_until(calls: usize) -> Verify {
        Arc::new(move |r: &Value| {
            let n = r["toolCalls"].as_array().map_or(0, Vec::len);
            if n >= calls {
                Ok(())
            } else {
                Err(format!("only {n} call(s)"))
            }
        })
    }

    fn done(text: &str, calls: usize) -> Value {
        json!({"status": "done", "text": text, "turns": 1, "messages": [{"role": "user", "content": text}],
               "toolCalls": vec![json!({"name": "t"}); calls]})
    }

    #[test]
    fn the_gate_retries_on_the_same_conversation_with_accumulated_work() {
        let gate = Completion::new(reject_until(2), 3).expect("gate");
        let mut prompts = Vec::new();
        let mut runs = script(vec![done("first", 1), done("second", 1)]);
        let r = gated(
            &gate,
            &RunRequest {
                prompt: "do it".into(),
                history: vec![],
            },
            |req| {
                prompts.push((req.prompt.clone(), req.history.len()));
                runs(req)
            },
        )
        .expect("run");
        assert_eq!(r["status"], "done");
        assert_eq!(r["text"], "second");
        assert_eq!(r["turns"], 2);
        assert_eq!(r["toolCalls"].as_array().map(Vec::len), Some(2));
        assert_eq!(
            prompts,
            vec![
                ("do it".to_string(), 0),
                (retry_prompt("only 1 call(s)"), 1)
            ]
        );
    }

    #[test]
    fn the_gate_stops_loudly_and_never_judges_a_run_that_is_not_done() {
        let request = RunRequest {
            prompt: "p".into(),
            history: vec![],
        };
        let never: Verify = Arc::new(|_: &Value| Err(String::new()));
        let gate = Completion::new(never, 2).expect("gate");
        let r = gated(&gate, &request, script(vec![done("a", 0), done("b", 0)])).expect("run");
        assert_eq!(
            (
                r["status"].as_str(),
                r["limit"].as_str(),
                r["text"].as_str()
            ),
            (
                Some("incomplete"),
                Some("completion"),
                Some("completion.verify failed 2x: unspecified")
            )
        );
        // A budget stop after a failed verification carries both reasons.
        let gate = Completion::new(reject_until(5), 3).expect("gate");
        let stopped = json!({"status": "incomplete", "limit": "maxTurns", "text": "out of turns",
                             "turns": 1, "toolCalls": []});
        let r = gated(&gate, &request, script(vec![done("a", 1), stopped])).expect("run");
        assert_eq!(r["status"], "incomplete");
        assert_eq!(
            r["text"],
            "out of turns [while verifying: attempt 1 last failed: only 1 call(s)]"
        );
        // A suspension is handed back as it is, never judged.
        let pending = json!({"status": "pending", "text": "", "turns": 1, "toolCalls": [],
                             "pending": {"id": "r1"}});
        let r = gated(&gate, &request, script(vec![done("a", 1), pending])).expect("run");
        assert_eq!(
            (r["status"].as_str(), r["text"].as_str()),
            (Some("pending"), Some(""))
        );
    }

    #[test]
    fn the_first_deny_wins_and_the_hook_runs_only_when_all_allow() {
        let hook_ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = Arc::clone(&hook_ran);
        let before: HostFn = Arc::new(move |_: &Value, _: RunData| {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(Some(json!({"args": {"rewritten": true}})))
        });
        let no_bash: Guardrail = Arc::new(|e: &Value| {
            if e["name"] == "bash" {
                "no shell".into()
            } else {
                "allow".into()
            }
        });
        let no_secrets: Guardrail = Arc::new(|e: &Value| {
            if e["args"].to_string().contains("secret") {
                "no secrets".into()
            } else {
                String::new()
            }
        });
        let f = guard(&[no_bash, no_secrets], Some(before)).expect("compiled");
        let deny = f(
            &json!({"name": "bash", "args": {"c": "secret"}}),
            RunData::default(),
        )
        .expect("answer");
        assert_eq!(
            deny,
            Some(json!({"result": {"output": "denied: no shell", "isError": true}}))
        );
        let deny = f(
            &json!({"name": "read", "args": {"p": "secret"}}),
            RunData::default(),
        )
        .expect("answer");
        assert_eq!(
            deny.expect("denied")["result"]["output"],
            "denied: no secrets"
        );
        assert_eq!(hook_ran.load(std::sync::atomic::Ordering::SeqCst), 0);
        let pass = f(&json!({"name": "read", "args": {}}), RunData::default()).expect("answer");
        assert_eq!(pass, Some(json!({"args": {"rewritten": true}})));
        assert_eq!(hook_ran.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(guard(&[], None).is_none());
    }
}
