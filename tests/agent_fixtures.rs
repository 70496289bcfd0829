//! Upstream's cross-port runtime fixtures (`toolnexus-subagent-fixture/v1`)
//! run against the Rust agent runtime. The directory comes from
//! `TN_AGENT_FIXTURES`, else `../shared/upstream-fixtures` beside the crate;
//! every `fixture.json` under it is read in place. The mock model is this
//! file's own, written to the rules of the contract notes §12.3 (every port
//! writes its own: the fixtures give its scripts as prose).
//!
//! A fixture of a kind not built yet, or one asking for a check this runner
//! does not know, is counted as skipped with its reason, never as passed.

use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use toolnexus::agents::{
    Budget, InboxItem, Llm, ManualClock, Registry, Runtime, RuntimeOptions, State, TaskResult,
};
use toolnexus::client::{Exchange, Provider};
use toolnexus::error::{Error, ErrorCode, Result as TnResult};
use toolnexus::native::native_tool;
use toolnexus::tool::{ExecContext, ToolResult};
use toolnexus::toolkit::Toolkit;
use toolnexus::translate::ClientConfig;

/// A bound on waits that must end anyway (a safety net against a hang, not
/// a timing the outcome depends on).
const BOUND: Duration = Duration::from_secs(20);

enum Outcome {
    Pass,
    Fail(Vec<String>),
    Skip(String),
}

// ---------------------------------------------------------------------------
// the mock model (§12.3)
// ---------------------------------------------------------------------------

/// How the mock holds the first `m-explore` calls, so a scenario's
/// interleaving is the one it asserts, whatever the scheduler does.
#[derive(Clone)]
enum Hold {
    /// Until this many are in flight (concurrency is observed).
    InFlight(usize),
    /// The first call, until the runtime's trace shows this (a sibling's
    /// wake was queued behind it).
    Trace(String),
}

struct Mock {
    usage: Value,
    hold: Option<Hold>,
    /// While set, `m-heartbeat` calls wait for [`Mock::release_heartbeat`].
    heartbeat_held: Mutex<bool>,
    heartbeat_cv: Condvar,
    wire: Mutex<Vec<Value>>,
    runtime: Mutex<Option<Runtime>>,
    explore_in: Mutex<usize>,
    explore_cv: Condvar,
    calls: Mutex<usize>,
}

impl Mock {
    fn new(usage: Value, hold: Option<Hold>) -> Mock {
        Mock {
            usage,
            hold,
            heartbeat_held: Mutex::new(false),
            heartbeat_cv: Condvar::new(),
            wire: Mutex::new(Vec::new()),
            runtime: Mutex::new(None),
            explore_in: Mutex::new(0),
            explore_cv: Condvar::new(),
            calls: Mutex::new(0),
        }
    }

    fn set_heartbeat_held(&self, held: bool) {
        *self
            .heartbeat_held
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = held;
        self.heartbeat_cv.notify_all();
    }

    fn hold_heartbeat(&self) {
        let mut g = self
            .heartbeat_held
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let until = std::time::Instant::now() + BOUND;
        while *g {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            g = match self.heartbeat_cv.wait_timeout(g, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    fn hold_for_barrier(&self) {
        let n = match &self.hold {
            None => return,
            Some(Hold::InFlight(n)) => *n,
            Some(Hold::Trace(needle)) => {
                let first = {
                    let mut g = self.explore_in.lock().unwrap_or_else(|p| p.into_inner());
                    *g += 1;
                    *g == 1
                };
                let rt = self
                    .runtime
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                if let (true, Some(rt)) = (first, rt) {
                    rt.await_trace(needle, BOUND);
                }
                return;
            }
        };
        let mut g = self.explore_in.lock().unwrap_or_else(|p| p.into_inner());
        *g += 1;
        self.explore_cv.notify_all();
        let until = std::time::Instant::now() + BOUND;
        while *g < n {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            g = match self.explore_cv.wait_timeout(g, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    fn reply(&self, content: Option<String>, calls: Vec<(&str, Value)>) -> Value {
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        let finish = if calls.is_empty() {
            message.insert("content".into(), json!(content.unwrap_or_default()));
            "stop"
        } else {
            let mut n = self.calls.lock().unwrap_or_else(|p| p.into_inner());
            let list: Vec<Value> = calls
                .into_iter()
                .map(|(name, args)| {
                    *n += 1;
                    json!({"id": format!("call_{n}"), "type": "function",
                           "function": {"name": name, "arguments": args.to_string()}})
                })
                .collect();
            message.insert("content".into(), Value::Null);
            message.insert("tool_calls".into(), Value::Array(list));
            "tool_calls"
        };
        json!({"choices": [{"index": 0, "message": message, "finish_reason": finish}],
               "usage": self.usage})
    }
}

fn content_text(m: &Value) -> String {
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

impl Provider for Mock {
    fn complete(&self, exchange: Exchange<'_>) -> TnResult<Value> {
        let body = exchange.body.to_value();
        self.wire
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(body.clone());
        let model = body["model"].as_str().unwrap_or("").to_string();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let tool_msgs: Vec<String> = messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(content_text)
            .collect();
        let text = |s: String| Ok(self.reply(Some(s), Vec::new()));
        match model.as_str() {
            "m-coordinator" if tool_msgs.is_empty() => Ok(self.reply(
                None,
                vec![
                    ("task", json!({"agent": "explore", "prompt": "find A"})),
                    ("task", json!({"agent": "explore", "prompt": "find B"})),
                ],
            )),
            "m-coordinator" => text(format!("synthesis: {}", tool_msgs.join(" + "))),
            "m-explore" if tool_msgs.is_empty() => {
                self.hold_for_barrier();
                Ok(self.reply(None, vec![("lookup", json!({"q": "x"}))]))
            }
            "m-explore" => text(format!("found:{}", tool_msgs[0])),
            "m-approver-parent" if tool_msgs.is_empty() => Ok(self.reply(
                None,
                vec![(
                    "task",
                    json!({"agent": "asker", "prompt": "get the secret"}),
                )],
            )),
            "m-approver-parent" => text(format!(
                "parent-final: {}",
                tool_msgs.last().cloned().unwrap_or_default()
            )),
            "m-asker" if tool_msgs.iter().any(|t| t.contains("secret-token")) => {
                text("asker-done: secret-token".into())
            }
            "m-asker" => Ok(self.reply(None, vec![("check_secret", json!({}))])),
            "m-peer" => {
                let last = messages.last().map(content_text).unwrap_or_default();
                let n = last
                    .lines()
                    .filter(|l| {
                        let digits = l.chars().take_while(char::is_ascii_digit).count();
                        digits > 0 && l[digits..].starts_with('.')
                    })
                    .count();
                text(format!("processed {n} items"))
            }
            "m-loop" => Ok(self.reply(None, vec![("lookup", json!({"q": "again"}))])),
            "m-slow" => {
                if toolnexus::agents::wait_cancelled(exchange.cancel, BOUND) {
                    Err(Error::new(ErrorCode::Cancelled, "the run was cancelled"))
                } else {
                    text("slow-done".into())
                }
            }
            "m-echo-soul" => {
                let system = messages
                    .first()
                    .filter(|m| m["role"] == "system")
                    .map(content_text)
                    .unwrap_or_default();
                let found: Vec<&str> = toolnexus::agents::home::BOOTSTRAP_ORDER
                    .into_iter()
                    .filter(|f| system.contains(&format!("## {f}")))
                    .collect();
                text(format!("sections:[{}]", found.join(",")))
            }
            "m-remember" if tool_msgs.is_empty() => Ok(self.reply(
                None,
                vec![(
                    "memory",
                    json!({"action": "add", "target": "user", "text": "Prefers dark roast"}),
                )],
            )),
            "m-remember" => text(format!("saved: {}", tool_msgs[0])),
            "m-recall" => {
                let system = messages.first().map(content_text).unwrap_or_default();
                text(if system.contains("Prefers dark roast") {
                    "I recall: dark roast".into()
                } else {
                    "no memory".into()
                })
            }
            "m-heartbeat" => {
                self.hold_heartbeat();
                let system = messages.first().map(content_text).unwrap_or_default();
                let last_user = messages
                    .iter()
                    .rev()
                    .find(|m| m["role"] == "user")
                    .map(content_text)
                    .unwrap_or_default();
                text(
                    if system.contains("remind about the 3pm sync")
                        && last_user.contains("Heartbeat")
                    {
                        "Reminder: 3pm sync 🔔".into()
                    } else {
                        "HEARTBEAT_OK".into()
                    },
                )
            }
            _ => text("ok".into()),
        }
    }

    fn streams(&self) -> bool {
        false
    }
}

// ---------------------------------------------------------------------------
// fixture tools
// ---------------------------------------------------------------------------

fn fixture_toolkit(tools: Option<&Value>) -> Result<Arc<Toolkit>, String> {
    let kit = Toolkit::build_from_json(r#"{"builtins":false}"#).map_err(|e| e.to_string())?;
    let Some(Value::Object(tools)) = tools else {
        return Ok(Arc::new(kit));
    };
    for (name, spec) in tools {
        let schema = spec.get("inputSchema").cloned();
        let f: Arc<toolnexus::native::NativeFn> = match name.as_str() {
            "lookup" => Arc::new(|args: &Value, _: &ExecContext| {
                ToolResult::ok(format!("data({})", args["q"].as_str().unwrap_or("")))
            }),
            "check_secret" => Arc::new(|_: &Value, ctx: &ExecContext| match &ctx.answer {
                Some(a) if a["ok"] == true => ToolResult::ok("secret-token"),
                Some(_) => ToolResult::error("declined"),
                None => {
                    let mut md = Map::new();
                    md.insert(
                        "pending".into(),
                        json!({"id": "fixture-approval-1", "kind": "approval",
                               "prompt": "approve secret access?"}),
                    );
                    ToolResult::error("approve secret access?").with_metadata(md)
                }
            }),
            other => return Err(format!("fixture tool \"{other}\" has no mock here")),
        };
        kit.register(native_tool(name.clone(), "", schema, f));
    }
    Ok(Arc::new(kit))
}

// ---------------------------------------------------------------------------
// one runtime per case
// ---------------------------------------------------------------------------

struct Case {
    mock: Arc<Mock>,
    rt: Runtime,
    clock: Arc<ManualClock>,
    names: HashMap<String, String>,
    closed: Arc<Mutex<Vec<String>>>,
    wait_for_calls: Arc<Mutex<Vec<Value>>>,
    waiters: HashMap<String, std::thread::JoinHandle<TaskResult>>,
    last: Option<(String, TaskResult)>,
}

fn merge(into: &mut Value, over: &Value) {
    match (into, over) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

fn build(fixture: &Value, scenario: Option<&Value>, hold: Option<Hold>) -> Result<Case, String> {
    let mut registry_json = fixture.get("registry").cloned().unwrap_or(json!({}));
    if let Some(over) = scenario.and_then(|s| s.get("registryOverride")) {
        merge(&mut registry_json, over);
    }
    let mut interpreters = Vec::new();
    if let Value::Object(defs) = &mut registry_json {
        for (name, d) in defs.iter_mut() {
            if let Some(w) = d.as_object_mut().and_then(|o| o.remove("waitFor")) {
                let behavior = w.get("behavior").and_then(Value::as_str).unwrap_or("");
                if !behavior.contains("auto-approve") {
                    return Err(format!("waitFor behaviour not mocked here: {behavior}"));
                }
                interpreters.push(name.clone());
            }
        }
    }
    let toolkit = fixture_toolkit(fixture.get("tools"))?;
    let mut registry =
        Registry::from_json(&registry_json, Some(&toolkit)).map_err(|e| e.to_string())?;
    let wait_for_calls = Arc::new(Mutex::new(Vec::new()));
    for name in interpreters {
        let calls = Arc::clone(&wait_for_calls);
        let f: toolnexus::client::HostFn = Arc::new(move |req: &Value, _| {
            calls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(req.clone());
            Ok(Some(
                json!({"id": req.get("id").cloned().unwrap_or(Value::Null), "ok": true}),
            ))
        });
        registry
            .set_wait_for(&name, Some(f))
            .map_err(|e| e.to_string())?;
    }
    let usage = fixture
        .pointer("/mockLLM/usagePerCall")
        .cloned()
        .unwrap_or(json!({"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40}));
    let config = ClientConfig::from_json(
        &json!({"baseUrl": "http://mock.invalid", "style": "openai", "model": "mock-default"}),
    )
    .map_err(|e| e.to_string())?;
    let clock = Arc::new(ManualClock::new());
    let mock = Arc::new(Mock::new(usage, hold));
    let mut opts = RuntimeOptions::new(registry, Llm::Provider(config, mock.clone()));
    opts.toolkit = Some(toolkit);
    opts.clock = clock.clone();
    let closed = Arc::new(Mutex::new(Vec::new()));
    let c = Arc::clone(&closed);
    opts.on_close = Some(Arc::new(move |id: &str, _reason: &str| {
        c.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(id.to_string());
    }));
    if let Some(r) = scenario.and_then(|s| s.get("runtime")) {
        for (k, v) in r.as_object().into_iter().flatten() {
            let n = v
                .as_u64()
                .ok_or_else(|| format!("runtime.{k} is not a count"))?;
            match k.as_str() {
                "inboxCap" => opts.inbox_cap = n as usize,
                "maxConcurrentTurns" => opts.max_concurrent_turns = n as usize,
                "shutdownMs" => opts.shutdown_ms = n,
                other => return Err(format!("runtime option {other} not known here")),
            }
        }
    }
    let rt = Runtime::new(opts).map_err(|e| e.to_string())?;
    *mock.runtime.lock().unwrap_or_else(|p| p.into_inner()) = Some(rt.clone());
    Ok(Case {
        mock,
        rt,
        clock,
        names: HashMap::new(),
        closed,
        wait_for_calls,
        waiters: HashMap::new(),
        last: None,
    })
}

impl Case {
    /// A fixture's handle name (`peer`, `coordinator/peer`, `root/…`) as an
    /// id, spawning the path under the root on first use.
    fn resolve(&mut self, name: &str) -> Result<String, String> {
        if name == "root" || self.rt.inspect(name).is_some() {
            return Ok(name.to_string());
        }
        if let Some(rest) = name.strip_prefix("root/") {
            // An id the fixture spells with a per-definition count
            // (`root/looper.1` after `root/coordinator.1`), where the ids
            // count every child of a parent (`root/looper.2`): the handle
            // of that definition path spawned first.
            let path: Vec<&str> = rest
                .split('/')
                .map(|seg| seg.rsplit_once('.').map_or(seg, |(d, _)| d))
                .collect();
            return self
                .names
                .get(&path.join("/"))
                .cloned()
                .ok_or_else(|| format!("unknown handle \"{name}\""));
        }
        if let Some(id) = self.names.get(name) {
            return Ok(id.clone());
        }
        let (parent, def) = match name.rsplit_once('/') {
            Some((p, d)) => (self.resolve(p)?, d),
            None => ("root".to_string(), name),
        };
        let id = self.rt.spawn(&parent, def, None)?;
        self.names.insert(name.to_string(), id.clone());
        Ok(id)
    }

    fn remember(&mut self, parent: &str, def: &str, id: &str) {
        let key = if parent == "root" {
            def.to_string()
        } else {
            let p = self
                .names
                .iter()
                .find(|(_, v)| v.as_str() == parent)
                .map(|(k, _)| k.clone())
                .unwrap_or_else(|| parent.to_string());
            format!("{p}/{def}")
        };
        self.names.entry(key).or_insert_with(|| id.to_string());
    }
}

// ---------------------------------------------------------------------------
// checks
// ---------------------------------------------------------------------------

struct Checks {
    failures: Vec<String>,
    unknown: Vec<String>,
}

impl Checks {
    fn new() -> Checks {
        Checks {
            failures: Vec::new(),
            unknown: Vec::new(),
        }
    }

    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(what());
        }
    }

    fn outcome(self) -> Outcome {
        if !self.unknown.is_empty() {
            return Outcome::Skip(format!(
                "expectations not understood here: {}",
                self.unknown.join(", ")
            ));
        }
        if self.failures.is_empty() {
            Outcome::Pass
        } else {
            Outcome::Fail(self.failures)
        }
    }
}

/// The `from→to` transitions of `id`, in trace order.
fn transitions(trace: &[String], id: &str) -> Vec<String> {
    let prefix = format!("{id}: ");
    trace
        .iter()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|rest| {
            let word: String = rest.chars().take_while(|c| *c != ' ').collect();
            let (a, b) = word.split_once('→')?;
            let lower = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase());
            (lower(a) && lower(b)).then(|| word.clone())
        })
        .collect()
}

fn check_transitions(c: &mut Checks, trace: &[String], want: &Value) {
    for (id, list) in want.as_object().into_iter().flatten() {
        let got = transitions(trace, id);
        let want: Vec<&str> = list
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let same = got.len() == want.len()
            && got.iter().zip(&want).all(|(g, w)| {
                if w.starts_with('→') {
                    g.ends_with(w)
                } else {
                    g == w
                }
            });
        c.check(same, || {
            format!("transitions of {id}: got {got:?}, want {want:?}")
        });
    }
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

fn check_trace_contains(c: &mut Checks, trace: &[String], want: &Value) {
    for s in strings(want) {
        c.check(trace.iter().any(|l| l.contains(&s)), || {
            format!("trace has no line containing {s:?}")
        });
    }
}

/// The expectations of a `run` (and of scenarios built on one).
fn check_run(c: &mut Checks, case: &Case, id: &str, r: &TaskResult, expect: &Value) {
    let trace = case.rt.trace();
    let descendants: Vec<_> = case
        .rt
        .list()
        .into_iter()
        .filter(|v| v.id.starts_with(&format!("{id}/")))
        .collect();
    for (k, v) in expect.as_object().into_iter().flatten() {
        match k.as_str() {
            "note" => {}
            "status" => c.check(r.status == *v, || {
                format!("status {} (want {v}): {}", r.status, r.text)
            }),
            "textContains" => {
                for s in strings(v) {
                    c.check(r.text.contains(&s), || {
                        format!("text {:?} lacks {s:?}", r.text)
                    });
                }
            }
            "text" => c.check(r.text == *v, || format!("text {:?}, want {v}", r.text)),
            "textOccurrences" => {
                for (s, n) in v.as_object().into_iter().flatten() {
                    let got = r.text.matches(s.as_str()).count() as u64;
                    c.check(Some(got) == n.as_u64(), || {
                        format!("{s:?} occurs {got} times, want {n}")
                    });
                }
            }
            "parentTurns" | "turns" => c.check(Some(r.turns) == v.as_u64(), || {
                format!("turns {}, want {v}", r.turns)
            }),
            "childIds" => {
                let got: Vec<&str> = descendants.iter().map(|d| d.id.as_str()).collect();
                let want = strings(v);
                c.check(got == want, || format!("child ids {got:?}, want {want:?}"));
            }
            "concurrentTurnsObservedAtLeast" => {
                let got = case.rt.max_observed_concurrent_turns() as u64;
                c.check(v.as_u64().is_some_and(|n| got >= n), || {
                    format!("max concurrent turns {got}, want at least {v}")
                });
            }
            "maxObservedConcurrentTurns" => {
                let got = case.rt.max_observed_concurrent_turns() as u64;
                c.check(Some(got) == v.as_u64(), || {
                    format!("max concurrent turns {got}, want {v}")
                });
            }
            "parentUsageTotal" => c.check(Some(r.total_tokens) == v.as_u64(), || {
                format!("rolled-up tokens {}, want {v}", r.total_tokens)
            }),
            "childrenClosedAfterTask" => {
                let open: Vec<&str> = descendants
                    .iter()
                    .filter(|d| d.state != State::Closed)
                    .map(|d| d.id.as_str())
                    .collect();
                c.check(open.is_empty() == (*v == true), || {
                    format!("children still open: {open:?}")
                });
            }
            "transitions" => check_transitions(c, &trace, v),
            "traceContains" => check_trace_contains(c, &trace, v),
            "escalation" => check_escalation(c, case, &trace, &descendants, v),
            _ => c.unknown.push(k.clone()),
        }
    }
}

/// `escalation {answeredBy, childTrace}`: the interpreter that answered,
/// the escalating child's transitions, and one `waitFor` call.
fn check_escalation(
    c: &mut Checks,
    case: &Case,
    trace: &[String],
    descendants: &[toolnexus::agents::HandleView],
    want: &Value,
) {
    for (k, v) in want.as_object().into_iter().flatten() {
        match k.as_str() {
            "answeredBy" => {
                let by = v.as_str().unwrap_or("");
                check_trace_contains(c, trace, &json!(format!("escalate → {by} answers")));
            }
            "childTrace" => {
                let wanted = strings(v);
                let found = descendants.iter().any(|d| {
                    let got = transitions(trace, &d.id);
                    wanted.iter().all(|w| got.contains(w))
                });
                c.check(found, || format!("no child traced all of {wanted:?}"));
            }
            _ => c.unknown.push(format!("escalation.{k}")),
        }
    }
    let calls = case
        .wait_for_calls
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    c.check(calls.len() == 1 && calls[0]["kind"] == "approval", || {
        format!("waitFor calls {calls:?}, want one of kind approval")
    });
}

// ---------------------------------------------------------------------------
// steps
// ---------------------------------------------------------------------------

fn budget_of(v: Option<&Value>) -> Result<Option<Budget>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(b) => Budget::from_json(b, "step budget")
            .map(Some)
            .map_err(|e| e.to_string()),
    }
}

fn run_steps(c: &mut Checks, case: &mut Case, steps: &[Value]) -> Result<(), String> {
    for (n, step) in steps.iter().enumerate() {
        let expect = step.get("expect").cloned().unwrap_or(Value::Null);
        let obj = step.as_object().ok_or("a step is not an object")?;
        let (verb, args) = obj
            .iter()
            .find(|(k, _)| k.as_str() != "expect")
            .ok_or("a step names no verb")?;
        let at = format!("step {} ({verb})", n + 1);
        match verb.as_str() {
            "spawn" => {
                let parent = case.resolve(args["parent"].as_str().unwrap_or("root"))?;
                let def = args["def"].as_str().unwrap_or("");
                let outcome = case
                    .rt
                    .spawn(&parent, def, budget_of(args.get("budget"))?.as_ref());
                if let Ok(id) = &outcome {
                    case.remember(&parent, def, id);
                }
                for (k, v) in expect.as_object().into_iter().flatten() {
                    match (k.as_str(), &outcome) {
                        ("note", _) => {}
                        ("isError", Err(e)) => {
                            let s = v.as_str().unwrap_or("");
                            c.check(e.contains(s), || format!("{at}: error {e:?} lacks {s:?}"));
                        }
                        ("isError", Ok(id)) => c
                            .failures
                            .push(format!("{at}: spawned {id}, want an error")),
                        ("effectiveTokens", Ok(id)) => {
                            let got = case.rt.inspect(id).and_then(|h| h.pool_tokens);
                            c.check(got == v.as_i64(), || {
                                format!("{at}: pool tokens {got:?}, want {v}")
                            });
                        }
                        (_, Err(e)) => c.failures.push(format!("{at}: spawn failed: {e}")),
                        _ => c.unknown.push(format!("{at}.{k}")),
                    }
                }
                if expect.get("isError").is_none() {
                    if let Err(e) = outcome {
                        c.failures.push(format!("{at}: spawn failed: {e}"));
                    }
                }
            }
            "post" => {
                let id = case.resolve(args["handle"].as_str().unwrap_or(""))?;
                let item = InboxItem::new(
                    args["from"].as_str().unwrap_or("external"),
                    args["channel"].as_str().unwrap_or("external"),
                    args["text"].as_str().unwrap_or(""),
                );
                let outcome = case.rt.post(&id, item);
                match (expect.get("rejected") == Some(&json!(true)), &outcome) {
                    (true, Err(e)) => {
                        if let Some(s) = expect.get("errorContains").and_then(Value::as_str) {
                            c.check(e.contains(s), || format!("{at}: error {e:?} lacks {s:?}"));
                        }
                        if let Some(n) = expect.get("inboxLen").and_then(Value::as_u64) {
                            let got = case.rt.inspect(&id).map_or(0, |h| h.inbox) as u64;
                            c.check(got == n, || format!("{at}: inbox {got}, want {n}"));
                        }
                    }
                    (true, Ok(())) => c
                        .failures
                        .push(format!("{at}: post accepted, want rejected")),
                    (false, Err(e)) => c.failures.push(format!("{at}: post rejected: {e}")),
                    (false, Ok(())) => {}
                }
            }
            "wake" => {
                let id = case.resolve(args["handle"].as_str().unwrap_or(""))?;
                case.rt
                    .wake(&id, args.get("prompt").and_then(Value::as_str))?;
                let rt = case.rt.clone();
                let wid = id.clone();
                case.waiters
                    .insert(id, std::thread::spawn(move || rt.wait(&wid, None)));
            }
            "wakeWait" => {
                let id = case.resolve(args["handle"].as_str().unwrap_or(""))?;
                let parent = case
                    .rt
                    .list()
                    .into_iter()
                    .map(|h| h.id)
                    .find(|p| id.rsplit_once('/').is_some_and(|(pp, _)| pp == p));
                case.rt
                    .wake(&id, args.get("prompt").and_then(Value::as_str))?;
                let r = case.rt.wait(&id, None);
                for (k, v) in expect.as_object().into_iter().flatten() {
                    match k.as_str() {
                        "note" => {}
                        "status" => c.check(r.status == *v, || {
                            format!("{at}: status {} ({}), want {v}", r.status, r.text)
                        }),
                        "errorContains" => {
                            let s = v.as_str().unwrap_or("");
                            c.check(r.text.contains(s), || {
                                format!("{at}: text {:?} lacks {s:?}", r.text)
                            });
                        }
                        "parentPoolAfter" => {
                            let got = parent
                                .as_deref()
                                .and_then(|p| case.rt.inspect(p))
                                .and_then(|h| h.pool_tokens);
                            c.check(got == v.as_i64(), || {
                                format!("{at}: parent pool {got:?}, want {v}")
                            });
                        }
                        "turns" => c.check(Some(r.turns) == v.as_u64(), || {
                            format!("{at}: turns {}, want {v}", r.turns)
                        }),
                        _ => c.unknown.push(format!("{at}.{k}")),
                    }
                }
                case.last = Some((id, r));
            }
            "awaitState" => {
                let id = case.resolve(args["handle"].as_str().unwrap_or(""))?;
                let state = match args["state"].as_str().unwrap_or("") {
                    "idle" => State::Idle,
                    "running" => State::Running,
                    "suspended" => State::Suspended,
                    "closed" => State::Closed,
                    other => return Err(format!("{at}: unknown state {other}")),
                };
                if !case.rt.await_state(&id, state, BOUND) {
                    c.failures
                        .push(format!("{at}: {id} never reached {state:?}"));
                }
            }
            "interrupt" => {
                let id = case.resolve(args["handle"].as_str().unwrap_or(""))?;
                case.rt.interrupt(&id)?;
                case.last = Some((id.clone(), TaskResult::default_for(&id)));
            }
            "closeRoot" => case.rt.close("root", false, None)?,
            "close" => {
                let id = case.resolve(args["handle"].as_str().unwrap_or(""))?;
                case.rt.close(&id, args["force"] == true, None)?;
            }
            "advance" => case.clock.advance(args["ms"].as_u64().unwrap_or(0)),
            other => c.unknown.push(format!("step verb {other}")),
        }
    }
    Ok(())
}

trait DefaultFor {
    fn default_for(id: &str) -> Self;
}

impl DefaultFor for TaskResult {
    fn default_for(id: &str) -> TaskResult {
        TaskResult {
            text: id.to_string(),
            is_error: false,
            status: String::new(),
            pending: None,
            turns: 0,
            total_tokens: 0,
            own_tokens: 0,
            limit: None,
        }
    }
}

/// The expectations a scenario puts after its steps.
fn check_after_steps(c: &mut Checks, case: &mut Case, tree: &[String], expect: &Value) {
    for (k, v) in expect.as_object().into_iter().flatten() {
        let last_id = case
            .last
            .as_ref()
            .map(|(id, _)| id.clone())
            .unwrap_or_default();
        match k.as_str() {
            "note" => {}
            "turns" | "text" | "status" => match &case.last {
                Some((_, r)) => {
                    let (got, ok) = match k.as_str() {
                        "turns" => (r.turns.to_string(), Some(r.turns) == v.as_u64()),
                        "text" => (r.text.clone(), r.text == *v),
                        _ => (r.status.clone(), r.status == *v),
                    };
                    c.check(ok, || format!("{k} {got:?}, want {v}"));
                }
                None => c.failures.push(format!("{k}: no result to check")),
            },
            "waiterStatus" => {
                let r = case.waiters.remove(&last_id).map(|w| w.join());
                match r {
                    Some(Ok(r)) => c.check(r.status == *v, || {
                        format!("waiter got {}, want {v}", r.status)
                    }),
                    _ => c.failures.push("no waiter result".into()),
                }
            }
            "finalState" => {
                let got = case
                    .rt
                    .inspect(&last_id)
                    .map(|h| h.state.as_str().to_string());
                c.check(got.as_deref() == v.as_str(), || {
                    format!("final state {got:?}, want {v}")
                });
            }
            "inboxLen" => {
                let got = case.rt.inspect(&last_id).map(|h| h.inbox as u64);
                c.check(got == v.as_u64(), || format!("inbox {got:?}, want {v}"));
            }
            "onCloseOrder" => {
                // Leaf first: the tree as listed, deepest first.
                let mut want: Vec<String> = tree.to_vec();
                want.reverse();
                let got = case
                    .closed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                c.check(got == want, || {
                    format!("onClose order {got:?}, want {want:?}")
                });
            }
            "allStates" => {
                let open: Vec<String> = case
                    .rt
                    .list()
                    .into_iter()
                    .filter(|h| h.state.as_str() != v.as_str().unwrap_or(""))
                    .map(|h| format!("{} {}", h.id, h.state.as_str()))
                    .collect();
                c.check(open.is_empty(), || format!("handles not {v}: {open:?}"));
            }
            _ => c.unknown.push(k.clone()),
        }
    }
}

// ---------------------------------------------------------------------------
// fixture kinds
// ---------------------------------------------------------------------------

fn hold_of(expect: Option<&Value>) -> Option<Hold> {
    let e = expect?;
    if let Some(n) = e
        .get("concurrentTurnsObservedAtLeast")
        .and_then(Value::as_u64)
        .filter(|n| *n >= 2)
    {
        return Some(Hold::InFlight(n as usize));
    }
    let queued = e
        .get("traceContains")
        .map(strings)
        .unwrap_or_default()
        .into_iter()
        .any(|s| s == "wake QUEUED");
    queued.then(|| Hold::Trace("wake QUEUED".into()))
}

fn run_case(fixture: &Value, scenario: &Value, c: &mut Checks) -> Result<(), String> {
    let expect = scenario.get("expect");
    let mut case = build(fixture, Some(scenario), hold_of(expect))?;
    let outcome = run_built(scenario, expect, &mut case, c);
    // The mock held the runtime (to watch its trace): let both go.
    *case.mock.runtime.lock().unwrap_or_else(|p| p.into_inner()) = None;
    let _ = case.rt.close("root", true, None);
    outcome
}

fn run_built(
    scenario: &Value,
    expect: Option<&Value>,
    case: &mut Case,
    c: &mut Checks,
) -> Result<(), String> {
    let mut tree_ids = Vec::new();
    for t in scenario.get("tree").map(strings).unwrap_or_default() {
        tree_ids.push(case.resolve(&t)?);
    }
    if let Some(run) = scenario.get("run") {
        let entry = run["entry"].as_str().ok_or("run.entry is missing")?;
        let prompt = run["prompt"].as_str().unwrap_or("");
        let (id, r) = case.rt.run(entry, prompt)?;
        if std::env::var_os("TN_AGENT_FIXTURES_TRACE").is_some() {
            println!("     result {r:?}");
            for line in case.rt.trace() {
                println!("     | {line}");
            }
        }
        if let Some(e) = expect {
            check_run(c, case, &id, &r, e);
        }
        if let Some(p1) = scenario.get("phase1_expect") {
            phases(c, case, &id, &r, p1, scenario)?;
        }
        return Ok(());
    }
    if let Some(steps) = scenario.get("steps").and_then(Value::as_array) {
        run_steps(c, case, steps)?;
    }
    if let Some(e) = expect {
        check_after_steps(c, case, &tree_ids, e);
    }
    Ok(())
}

fn phases(
    c: &mut Checks,
    case: &mut Case,
    id: &str,
    r: &TaskResult,
    p1: &Value,
    fixture: &Value,
) -> Result<(), String> {
    let leaves_before: HashMap<String, u64> = case
        .rt
        .list()
        .into_iter()
        .map(|h| (h.id, h.tokens))
        .collect();
    for (k, v) in p1.as_object().into_iter().flatten() {
        match k.as_str() {
            "status" => c.check(r.status == *v, || {
                format!("phase 1 status {} ({}), want {v}", r.status, r.text)
            }),
            "pendingKind" => {
                let got = r.pending.as_ref().and_then(|p| p.get("kind")).cloned();
                c.check(got.as_ref() == Some(v), || {
                    format!("pending kind {got:?}, want {v}")
                });
            }
            "pendingDataPathEndsWithin" => {
                let path: Vec<&str> = r
                    .pending
                    .as_ref()
                    .and_then(|p| p.pointer("/data/path"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let joined = path.join("/");
                c.check(Some(joined.as_str()) == v.as_str(), || {
                    format!("pending data.path {joined:?}, want {v}")
                });
            }
            "allHandles" => {
                let off: Vec<String> = case
                    .rt
                    .list()
                    .into_iter()
                    .filter(|h| h.state.as_str() != v.as_str().unwrap_or(""))
                    .map(|h| h.id)
                    .collect();
                c.check(off.is_empty(), || format!("handles not {v}: {off:?}"));
            }
            _ => c.unknown.push(format!("phase1_expect.{k}")),
        }
    }
    let answer = fixture
        .pointer("/resume/answer")
        .cloned()
        .ok_or("no resume.answer")?;
    let r2 = case.rt.resume(answer)?;
    let trace = case.rt.trace();
    let Some(p2) = fixture.get("phase2_expect") else {
        return Ok(());
    };
    let handles = case.rt.list();
    for (k, v) in p2.as_object().into_iter().flatten() {
        match k.as_str() {
            "leafResumedAtCheckpoint" => check_trace_contains(
                c,
                &trace,
                &json!("resume with Answer(ok=true) at checkpoint"),
            ),
            "leafUsageGrewNotReset" => {
                let leaf = handles.iter().max_by_key(|h| h.id.matches('/').count());
                let grew = leaf.is_some_and(|h| {
                    h.tokens > leaves_before.get(&h.id).copied().unwrap_or(0)
                        && leaves_before.get(&h.id).copied().unwrap_or(0) > 0
                });
                c.check(grew == (*v == true), || {
                    "the leaf's usage did not grow from its phase-1 value".into()
                });
            }
            "parentCascadeReattached" => {
                check_trace_contains(c, &trace, &json!("task replay → REATTACH"))
            }
            "noDuplicateChildIds" => {
                let ids: Vec<&str> = handles.iter().map(|h| h.id.as_str()).collect();
                let mut dedup = ids.clone();
                dedup.sort();
                dedup.dedup();
                let kids = ids
                    .iter()
                    .filter(|i| i.starts_with(&format!("{id}/")))
                    .count();
                c.check(dedup.len() == ids.len() && kids == 1, || {
                    format!("handles {ids:?}")
                });
            }
            "finalParentState" => {
                let got = case.rt.inspect(id).map(|h| h.state.as_str().to_string());
                c.check(got.as_deref() == v.as_str(), || {
                    format!("parent state {got:?}, want {v}")
                });
            }
            "transitions" => check_transitions(c, &trace, v),
            "traceContains" => check_trace_contains(c, &trace, v),
            "status" => c.check(r2.status == *v, || {
                format!("phase 2 status {}, want {v}", r2.status)
            }),
            _ => c.unknown.push(format!("phase2_expect.{k}")),
        }
    }
    Ok(())
}

fn run_subagent_fixture(fixture: &Value) -> Outcome {
    let mut c = Checks::new();
    let outcome = match fixture.get("scenarios").and_then(Value::as_object) {
        Some(scenarios) => {
            for (name, s) in scenarios {
                let mut sc = Checks::new();
                if let Err(e) = run_case(fixture, s, &mut sc) {
                    sc.failures.push(e);
                }
                c.failures
                    .extend(sc.failures.into_iter().map(|f| format!("{name}: {f}")));
                c.unknown
                    .extend(sc.unknown.into_iter().map(|f| format!("{name}.{f}")));
            }
            Ok(())
        }
        None => run_case(fixture, fixture, &mut c),
    };
    if let Err(e) = outcome {
        c.failures.push(e);
    }
    c.outcome()
}

fn run_fixture(path: &Path) -> Outcome {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return Outcome::Fail(vec![format!("cannot read: {e}")]),
    };
    let fixture: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return Outcome::Fail(vec![format!("not JSON: {e}")]),
    };
    match fixture.get("$schema").and_then(Value::as_str).unwrap_or("") {
        "toolnexus-subagent-fixture/v1" => {
            let guarded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_subagent_fixture(&fixture)
            }));
            guarded.unwrap_or_else(|_| Outcome::Fail(vec!["the runner panicked".into()]))
        }
        "toolnexus-persona-fixture/v1" => {
            let guarded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_persona_fixture(&fixture)
            }));
            guarded.unwrap_or_else(|_| Outcome::Fail(vec!["the runner panicked".into()]))
        }
        "toolnexus-compaction-fixture/v1" => run_compaction_fixture(&fixture),
        "toolnexus-agent-hooks-fixture/v1" => Outcome::Skip(
            "per-agent hooks and the compactor (agent-hooks) are not built yet".into(),
        ),
        other => Outcome::Skip(format!("unknown fixture schema {other:?}")),
    }
}

// ---------------------------------------------------------------------------
// compaction (`toolnexus-compaction-fixture/v1`)
// ---------------------------------------------------------------------------

/// Expands a generator template: `<i>` is the group number, `<repeat 'x'
/// N times>` is `x` N times.
fn expand(template: &str, i: usize) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        let end = rest[at..]
            .find('>')
            .ok_or("an unclosed <…> in a template")?
            + at;
        let inner = &rest[at + 1..end];
        if inner == "i" {
            out.push_str(&i.to_string());
        } else if let Some(spec) = inner.strip_prefix("repeat '") {
            let (text, times) = spec.rsplit_once("' ").ok_or("a bad <repeat …>")?;
            let n: usize = times
                .strip_suffix(" times")
                .and_then(|t| t.parse().ok())
                .ok_or("a bad <repeat …> count")?;
            out.push_str(&text.repeat(n));
        } else {
            return Err(format!("template part <{inner}> not understood"));
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn expand_value(v: &Value, i: usize) -> Result<Value, String> {
    Ok(match v {
        Value::String(s) => Value::String(expand(s, i)?),
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| expand_value(x, i))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| Ok((k.clone(), expand_value(x, i)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

fn generated_transcript(input: &Value) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    if let Some(sys) = input.get("systemPrompt").and_then(Value::as_str) {
        out.push(json!({"role": "system", "content": sys}));
    }
    let turns = input
        .pointer("/generator/userTurns")
        .and_then(Value::as_u64)
        .ok_or("no userTurns")?;
    let group = input
        .pointer("/generator/group")
        .and_then(Value::as_array)
        .ok_or("no group")?;
    for i in 0..turns as usize {
        for m in group {
            out.push(expand_value(m, i)?);
        }
    }
    Ok(out)
}

fn run_compaction_fixture(fixture: &Value) -> Outcome {
    use toolnexus::agents::compaction::{estimate, Compactor};
    let mut c = Checks::new();
    let input = match fixture.get("input").map(generated_transcript) {
        Some(Ok(t)) => t,
        Some(Err(e)) => return Outcome::Skip(format!("input not understood: {e}")),
        None => return Outcome::Skip("no input".into()),
    };
    let opts = fixture.get("options").cloned().unwrap_or(Value::Null);
    let compactor = |flush: bool| Compactor {
        max_tokens: opts["maxTokens"].as_u64().unwrap_or(0),
        keep_tail: opts["keepTail"].as_u64(),
        flush_to_memory: flush,
        summarize: Arc::new(|older: &[Value]| Ok(format!("summarized {} messages", older.len()))),
        count_tokens: None,
    };
    let out = match compactor(false).compact(&input) {
        Ok(o) => o,
        Err(e) => return Outcome::Fail(vec![format!("compact failed: {e}")]),
    };
    let expect = fixture.get("expect").cloned().unwrap_or(Value::Null);
    let result = out.clone().unwrap_or_else(|| input.clone());
    let content = |m: &Value| m["content"].as_str().unwrap_or("").to_string();
    let first_non_system = result.iter().position(|m| m["role"] != "system");
    for (k, v) in expect.as_object().into_iter().flatten() {
        match k.as_str() {
            "compacts" => c.check(out.is_some() == (*v == true), || {
                format!("compacted: {}", out.is_some())
            }),
            "resultSmallerThanInput" => c.check(
                (estimate(&result) < estimate(&input)) == (*v == true),
                || {
                    format!(
                        "estimate {} vs input {}",
                        estimate(&result),
                        estimate(&input)
                    )
                },
            ),
            "summarySystemMessagePresent" => c.check(
                result
                    .iter()
                    .any(|m| m["role"] == "system" && content(m).starts_with("[Summary"))
                    == (*v == true),
                || "no summary system message".into(),
            ),
            "summaryContentPrefix" => {
                let p = v.as_str().unwrap_or("");
                c.check(
                    result
                        .iter()
                        .any(|m| m["role"] == "system" && content(m).starts_with(p)),
                    || format!("no system message starts with {p:?}"),
                );
            }
            "leadingSystemMessage" => {
                let first = result.first().cloned().unwrap_or(Value::Null);
                let role_ok = v.get("role").is_none_or(|r| first["role"] == *r);
                let has = v["contentContains"].as_str().unwrap_or("");
                c.check(role_ok && content(&first).contains(has), || {
                    format!("first message {first}")
                });
            }
            "firstNonSystemMessageRole" => {
                let got = first_non_system.map(|i| result[i]["role"].clone());
                c.check(got.as_ref() == Some(v), || {
                    format!("first non-system role {got:?}, want {v}")
                });
            }
            "toolPairSafe" => {
                let mut seen = std::collections::HashSet::new();
                let mut orphans = Vec::new();
                for m in &result {
                    for tc in m["tool_calls"].as_array().into_iter().flatten() {
                        seen.insert(tc["id"].as_str().unwrap_or("").to_string());
                    }
                    if m["role"] == "tool" {
                        let id = m["tool_call_id"].as_str().unwrap_or("").to_string();
                        if !seen.contains(&id) {
                            orphans.push(id);
                        }
                    }
                }
                c.check(orphans.is_empty(), || {
                    format!("orphaned tool results {orphans:?}")
                });
            }
            "flushToMemoryVariant" => match compactor(true).compact(&input) {
                Ok(Some(f)) => {
                    let tail = f
                        .iter()
                        .position(|m| m["role"] != "system")
                        .unwrap_or(f.len());
                    let reminder = f[..tail]
                        .iter()
                        .any(|m| m["role"] == "system" && content(m).contains("memory tool"));
                    c.check(reminder, || "no memory reminder before the tail".into());
                }
                other => c.failures.push(format!("flush variant: {other:?}")),
            },
            _ => c.unknown.push(k.clone()),
        }
    }
    // C1: below maxTokens, nothing changes.
    let short: Vec<Value> = input.iter().take(5).cloned().collect();
    c.check(matches!(compactor(false).compact(&short), Ok(None)), || {
        "a short transcript was compacted".into()
    });
    c.outcome()
}

// ---------------------------------------------------------------------------
// agent home (`toolnexus-persona-fixture/v1`)
// ---------------------------------------------------------------------------

fn write_dir(files: &Value) -> Result<tempfile::TempDir, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    for (name, body) in files.as_object().into_iter().flatten() {
        if let Some(b) = body.as_str() {
            std::fs::write(dir.path().join(name), b).map_err(|e| e.to_string())?;
        }
    }
    Ok(dir)
}

/// A runtime over one persona, with the mock model.
fn persona_runtime(
    persona: &toolnexus::agents::home::Persona,
) -> Result<(Runtime, Arc<Mock>, Arc<ManualClock>), String> {
    let kit = Toolkit::build_from_json(r#"{"builtins":false}"#).map_err(|e| e.to_string())?;
    for t in &persona.tools {
        kit.register(t.clone());
    }
    let kit = Arc::new(kit);
    let registry =
        Registry::new(vec![persona.def.clone()], Some(&kit)).map_err(|e| e.to_string())?;
    let config = ClientConfig::from_json(
        &json!({"baseUrl": "http://mock.invalid", "style": "openai", "model": "mock-default"}),
    )
    .map_err(|e| e.to_string())?;
    let mock = Arc::new(Mock::new(
        json!({"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40}),
        None,
    ));
    let clock = Arc::new(ManualClock::new());
    let mut opts = RuntimeOptions::new(registry, Llm::Provider(config, mock.clone()));
    opts.toolkit = Some(kit);
    opts.clock = clock.clone();
    Ok((Runtime::new(opts).map_err(|e| e.to_string())?, mock, clock))
}

fn persona_run(dir: &Path, model: &str, prompt: &str) -> Result<TaskResult, String> {
    let p = toolnexus::agents::home::from_dir(dir, Some(model), true).map_err(|e| e.to_string())?;
    let (rt, _, _) = persona_runtime(&p)?;
    let (_, r) = rt.run(&p.def.name, prompt)?;
    let _ = rt.close("root", true, None);
    Ok(r)
}

/// Beats collected from `onBeat`, with a wait for the next one.
#[derive(Default)]
struct Beats {
    got: Mutex<Vec<String>>,
    cv: Condvar,
}

impl Beats {
    fn wait_for(&self, n: usize) -> Vec<String> {
        let until = std::time::Instant::now() + BOUND;
        let mut g = self.got.lock().unwrap_or_else(|p| p.into_inner());
        while g.len() < n {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            g = match self.cv.wait_timeout(g, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        g.clone()
    }
}

/// A started persona, its mock, its clock and its beats.
type Beating = (
    toolnexus::agents::home::StartedAgent,
    Arc<Mock>,
    Arc<ManualClock>,
    Arc<Beats>,
);

fn heartbeat(dir: &Path) -> Result<Beating, String> {
    use toolnexus::agents::home;
    let p = home::from_dir(dir, Some("m-heartbeat"), true).map_err(|e| e.to_string())?;
    let (rt, mock, clock) = persona_runtime(&p)?;
    let beats = Arc::new(Beats::default());
    let b = Arc::clone(&beats);
    let started = home::start_agent(
        &rt,
        &p.def.name,
        1000,
        Arc::new(move |t: &str| {
            b.got
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(t.to_string());
            b.cv.notify_all();
        }),
    )?;
    Ok((started, mock, clock, beats))
}

fn run_persona_fixture(fixture: &Value) -> Outcome {
    match persona_checks(fixture) {
        Ok(c) => c.outcome(),
        Err(e) => Outcome::Fail(vec![e]),
    }
}

fn persona_checks(fixture: &Value) -> Result<Checks, String> {
    use toolnexus::agents::home::{
        self, compose_soul, memory_tool, HEARTBEAT_PROMPT, TRUNCATED_NOTICE,
    };
    let mut c = Checks::new();
    let files = fixture
        .get("bootstrapDir")
        .cloned()
        .ok_or("no bootstrapDir")?;
    let expect = fixture.get("expect").cloned().unwrap_or(Value::Null);
    if let Some(order) = fixture.get("bootstrapOrder") {
        c.check(strings(order) == home::BOOTSTRAP_ORDER, || {
            format!("bootstrap order {order}")
        });
    }
    if let Some(cap) = fixture.get("maxFileBytes").and_then(Value::as_u64) {
        c.check(cap == home::MAX_BOOTSTRAP_FILE_BYTES, || {
            format!("cap {cap}")
        });
    }
    let ctx = ExecContext::default();
    for (k, v) in expect.as_object().into_iter().flatten() {
        let truthy = *v == true;
        match k.as_str() {
            "H1_composedSoulSectionsInOrder" => {
                let dir = write_dir(&files)?;
                let (_, found) = compose_soul(dir.path()).map_err(|e| e.to_string())?;
                c.check(found == strings(v), || {
                    format!("sections {found:?}, want {v}")
                });
            }
            "H1_soulReachesChildSystemPrompt" if truthy => {
                let dir = write_dir(&files)?;
                let (_, found) = compose_soul(dir.path()).map_err(|e| e.to_string())?;
                let r = persona_run(dir.path(), "m-echo-soul", "who are you?")?;
                let want = format!("sections:[{}]", found.join(","));
                c.check(r.text == want, || {
                    format!("echo {:?}, want {want:?}", r.text)
                });
            }
            "H2_over2MBFileTruncatedWithNotice" if truthy => {
                let dir = write_dir(&files)?;
                let big = "x".repeat(3 * 1024 * 1024);
                std::fs::write(dir.path().join("SOUL.md"), &big).map_err(|e| e.to_string())?;
                let (soul, _) = compose_soul(dir.path()).map_err(|e| e.to_string())?;
                let size = std::fs::metadata(dir.path().join("SOUL.md"))
                    .map_err(|e| e.to_string())?
                    .len();
                c.check(
                    soul.contains(TRUNCATED_NOTICE) && size == big.len() as u64,
                    || {
                        "the 3 MiB SOUL.md was not truncated with the notice, or the disk changed"
                            .into()
                    },
                );
            }
            "H3_memoryAddAppendsEntry"
            | "H3_memoryReplaceSwapsSubstring"
            | "H3_memoryRemoveDeletesEntry"
            | "H3_missingSubstringIsLoudError"
            | "H3_targetUserWritesUSERmd"
                if truthy =>
            {
                let dir = write_dir(&files)?;
                let tool = memory_tool(dir.path());
                let read =
                    |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap_or_default();
                let ok = match k.as_str() {
                    "H3_memoryAddAppendsEntry" => {
                        let r = tool
                            .exec
                            .execute(&json!({"action": "add", "text": "new fact"}), &ctx);
                        !r.is_error && read("MEMORY.md").ends_with("- new fact\n")
                    }
                    "H3_memoryReplaceSwapsSubstring" => {
                        let r = tool.exec.execute(
                            &json!({"action": "replace", "text": "2026-07", "with": "2026-08"}),
                            &ctx,
                        );
                        !r.is_error
                            && read("MEMORY.md").contains("2026-08")
                            && !read("MEMORY.md").contains("2026-07")
                    }
                    "H3_memoryRemoveDeletesEntry" => {
                        let r = tool.exec.execute(
                            &json!({"action": "remove", "text": "- Onboarded 2026-07."}),
                            &ctx,
                        );
                        !r.is_error && !read("MEMORY.md").contains("Onboarded")
                    }
                    "H3_missingSubstringIsLoudError" => {
                        let before = read("MEMORY.md");
                        let r = tool
                            .exec
                            .execute(&json!({"action": "remove", "text": "never written"}), &ctx);
                        r.is_error && r.output.contains("not found") && read("MEMORY.md") == before
                    }
                    _ => {
                        let r = tool.exec.execute(
                            &json!({"action": "add", "target": "user", "text": "Likes tea"}),
                            &ctx,
                        );
                        !r.is_error
                            && read("USER.md").contains("Likes tea")
                            && !read("MEMORY.md").contains("Likes tea")
                    }
                };
                c.check(ok, || format!("{k} did not hold"));
            }
            "H4_writeLandsOnDisk" => {
                let dir = write_dir(&files)?;
                let r = persona_run(dir.path(), "m-remember", "remember my coffee")?;
                let file = v["file"].as_str().unwrap_or("USER.md");
                let has = v["contains"].as_str().unwrap_or("");
                let on_disk = std::fs::read_to_string(dir.path().join(file)).unwrap_or_default();
                c.check(r.status == "done" && on_disk.contains(has), || {
                    format!("{file} is {on_disk:?} after {:?}", r.text)
                });
                if let Some(next) = expect.get("H4_nextSessionSnapshotCarriesMemory") {
                    let model = next["model"].as_str().unwrap_or("m-recall");
                    let r = persona_run(dir.path(), model, "what do I like?")?;
                    c.check(r.text == next["text"], || {
                        format!("next session said {:?}, want {}", r.text, next["text"])
                    });
                }
            }
            "H4_nextSessionSnapshotCarriesMemory" => {
                c.check(expect.get("H4_writeLandsOnDisk").is_some(), || {
                    "H4 needs the write first".into()
                });
            }
            "H5_heartbeatOKisSilent" if truthy => {
                let mut quiet = files.clone();
                let not_due = fixture.get("heartbeatNotDue").ok_or("no heartbeatNotDue")?;
                merge(
                    &mut quiet,
                    &json!({"HEARTBEAT.md": not_due["HEARTBEAT.md"]}),
                );
                let dir = write_dir(&quiet)?;
                let (started, _, clock, beats) = heartbeat(dir.path())?;
                let rt = started.runtime().clone();
                clock.advance(1000);
                let done = rt.await_trace(&format!("{}: running→idle", started.handle), BOUND);
                let r = if done {
                    rt.wait(&started.handle, None)
                } else {
                    rt.wait(&started.handle, Some(0))
                };
                started.stop();
                let got = beats.got.lock().unwrap_or_else(|p| p.into_inner()).clone();
                c.check(done && r.text == "HEARTBEAT_OK" && got.is_empty(), || {
                    format!("a not-due beat: {:?}, onBeat got {got:?}", r.text)
                });
            }
            "H5_dueHeartbeatSurfaces" => {
                let dir = write_dir(&files)?;
                let (started, _, clock, beats) = heartbeat(dir.path())?;
                clock.advance(1000);
                let got = beats.wait_for(1);
                started.stop();
                let has = v["beatContains"].as_str().unwrap_or("");
                c.check(got.len() == 1 && got[0].contains(has), || {
                    format!("onBeat got {got:?}, want {has:?}")
                });
            }
            "H5_ticksCoalesceToOneTurn" if truthy => {
                let dir = write_dir(&files)?;
                let (started, mock, clock, beats) = heartbeat(dir.path())?;
                let rt = started.runtime().clone();
                let id = started.handle.clone();
                mock.set_heartbeat_held(true);
                clock.advance(1000);
                let running = rt.await_state(&id, State::Running, BOUND);
                for _ in 0..3 {
                    rt.post(&id, InboxItem::new("clock", "timer", "tick"))?;
                }
                mock.set_heartbeat_held(false);
                beats.wait_for(1);
                let before = rt.inspect(&id).map_or(0, |v| v.turns);
                let inbox = rt.inspect(&id).map_or(0, |v| v.inbox);
                rt.wake(&id, Some(HEARTBEAT_PROMPT))?;
                let r = rt.wait(&id, None);
                started.stop();
                let wire = mock.wire.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let input = wire
                    .last()
                    .and_then(|b| b["messages"].as_array())
                    .and_then(|m| m.last())
                    .map(content_text)
                    .unwrap_or_default();
                c.check(
                    running && inbox == 3 && r.turns == before + 1 && input.contains("tick (x3 coalesced)"),
                    || format!("ticks during a beat: inbox {inbox}, turns {before}→{}, input {input:?}", r.turns),
                );
            }
            _ if !truthy && v.is_boolean() => {}
            _ => c.unknown.push(k.clone()),
        }
    }
    Ok(c)
}

fn fixtures_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            fixtures_under(&p, out);
        } else if p.file_name().is_some_and(|n| n == "fixture.json") {
            out.push(p);
        }
    }
}

#[test]
fn upstream_agent_fixtures() {
    let dir = match std::env::var_os("TN_AGENT_FIXTURES") {
        Some(d) => PathBuf::from(d),
        // `../shared` beside the crate (a worktree one level deeper looks
        // one level further up).
        None => {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let near = root.join("../shared/upstream-fixtures");
            let far = root.join("../../shared/upstream-fixtures");
            if near.is_dir() || !far.is_dir() {
                near
            } else {
                far
            }
        }
    };
    if !dir.is_dir() {
        println!(
            "agent fixtures: skipped — no fixture directory at {} (set TN_AGENT_FIXTURES)",
            dir.display()
        );
        return;
    }
    let mut files = Vec::new();
    fixtures_under(&dir, &mut files);
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for f in &files {
        let name = f
            .parent()
            .and_then(|p| p.strip_prefix(&dir).ok())
            .map_or_else(|| f.display().to_string(), |p| p.display().to_string());
        match run_fixture(f) {
            Outcome::Pass => {
                passed += 1;
                println!("PASS {name}");
            }
            Outcome::Fail(why) => {
                failed += 1;
                println!("FAIL {name}");
                for w in why {
                    println!("     {w}");
                }
            }
            Outcome::Skip(why) => {
                skipped += 1;
                println!("SKIP {name}: {why}");
            }
        }
    }
    println!("agent fixtures: {passed} passed, {failed} failed, {skipped} skipped");
    assert_eq!(failed, 0, "{failed} agent fixture(s) failed (see above)");
}
