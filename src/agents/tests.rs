//! The runtime's own tests, after the behaviours upstream's runtime tests
//! assert (contract notes §4.11), on a scripted model and a manual clock.

use super::*;
use crate::client::{Exchange, Provider};
use crate::error::{Error, ErrorCode};
use crate::native::native_tool;
use crate::tool::{ExecContext, ToolResult};
use crate::toolkit::Toolkit;
use crate::translate::ClientConfig;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// A safety net on waits that end anyway; never a timing a test relies on.
const BOUND: Duration = Duration::from_secs(20);

/// The scripted model: answers by model name (see `complete`), records
/// every request.
#[derive(Default)]
struct Mock {
    wire: Mutex<Vec<Value>>,
    released: Mutex<bool>,
    release_cv: Condvar,
}

impl Mock {
    fn release(&self) {
        *self.released.lock().expect("lock") = true;
        self.release_cv.notify_all();
    }

    fn wire(&self) -> Vec<Value> {
        self.wire.lock().expect("lock").clone()
    }

    /// Answers once released (or after [`BOUND`]).
    fn held(&self) -> Value {
        let mut g = self.released.lock().expect("lock");
        while !*g {
            let (next, timeout) = self.release_cv.wait_timeout(g, BOUND).expect("lock");
            g = next;
            if timeout.timed_out() {
                break;
            }
        }
        text("held-done")
    }
}

fn text(s: impl Into<String>) -> Value {
    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": s.into()},
                        "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40}})
}

fn calls(list: &[(&str, Value)]) -> Value {
    let tc: Vec<Value> = list
        .iter()
        .enumerate()
        .map(|(i, (n, a))| {
            json!({"id": format!("c{i}"), "type": "function",
                   "function": {"name": n, "arguments": a.to_string()}})
        })
        .collect();
    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": tc},
                        "finish_reason": "tool_calls"}],
           "usage": {"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40}})
}

impl Provider for Mock {
    fn complete(&self, ex: Exchange<'_>) -> crate::error::Result<Value> {
        let body = ex.body.to_value();
        self.wire.lock().expect("lock").push(body.clone());
        let model = body["model"].as_str().unwrap_or("").to_string();
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let tools: Vec<String> = msgs
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or("").to_string())
            .collect();
        let last = msgs
            .last()
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string();
        Ok(match model.as_str() {
            "m-count" => text(format!("msgs:{}", msgs.len())),
            "m-slow" => {
                if wait_cancelled(ex.cancel, BOUND) {
                    return Err(Error::new(ErrorCode::Cancelled, "the run was cancelled"));
                }
                text("slow-done")
            }
            "m-hold" => self.held(),
            "m-peer" => {
                let n = last
                    .lines()
                    .filter(|l| {
                        let d = l.chars().take_while(char::is_ascii_digit).count();
                        d > 0 && l[d..].starts_with('.')
                    })
                    .count();
                text(format!("processed {n} items"))
            }
            "m-loop" => calls(&[("lookup", json!({"q": "again"}))]),
            "m-delegate-hold" if tools.is_empty() => calls(&[
                ("task", json!({"agent": "explore", "prompt": "find A"})),
                ("task", json!({"agent": "explore", "prompt": "find B"})),
            ]),
            "m-delegate-hold" => self.held(),
            "m-ghost" if tools.is_empty() => {
                calls(&[("task", json!({"agent": "ghost", "prompt": "x"}))])
            }
            "m-ghost" => text(tools[0].clone()),
            "m-coordinator" if tools.is_empty() => calls(&[
                ("task", json!({"agent": "explore", "prompt": "find A"})),
                ("task", json!({"agent": "explore", "prompt": "find B"})),
            ]),
            "m-coordinator" => text(format!("synthesis: {}", tools.join(" + "))),
            "m-explore" if tools.is_empty() => calls(&[("lookup", json!({"q": "x"}))]),
            "m-explore" => text(format!("found:{}", tools[0])),
            "m-parent" if tools.is_empty() => calls(&[(
                "task",
                json!({"agent": "asker", "prompt": "get the secret"}),
            )]),
            "m-parent" => text(format!(
                "parent-final: {}",
                tools.last().cloned().unwrap_or_default()
            )),
            "m-asker" if tools.iter().any(|t| t.contains("secret-token")) => {
                text("asker-done: secret-token")
            }
            "m-asker" => calls(&[("check_secret", json!({}))]),
            // Plans with todowrite: an open item, unless told its work did
            // not verify (then every item done); a text once the list is back.
            "m-planner" | "m-stubborn" => {
                let last_role = msgs.last().map(|m| m["role"].clone());
                if last_role == Some(json!("tool")) {
                    text(format!("planned after {} tool result(s)", tools.len()))
                } else {
                    let fixed = model == "m-planner" && last.contains("did not verify");
                    calls(&[(
                        "todowrite",
                        json!({"todos": [{"text": "write tests", "completed": fixed}]}),
                    )])
                }
            }
            "m-boss" if tools.is_empty() => {
                calls(&[("task", json!({"agent": "planner", "prompt": "plan it"}))])
            }
            "m-boss" => text(format!("boss: {}", tools[0])),
            // `m-via:NAME` delegates once to NAME, then wraps its answer.
            m if m.starts_with("m-via:") && tools.is_empty() => calls(&[(
                "task",
                json!({"agent": &m["m-via:".len()..], "prompt": "go on"}),
            )]),
            m if m.starts_with("m-via:") => text(format!("via({})", tools[0])),
            _ => text("ok"),
        })
    }

    fn streams(&self) -> bool {
        false
    }
}

fn toolkit() -> Arc<Toolkit> {
    let kit = Toolkit::build_from_json(r#"{"builtins":false}"#).expect("toolkit");
    kit.register(native_tool(
        "lookup",
        "",
        None,
        Arc::new(|a: &Value, _: &ExecContext| {
            ToolResult::ok(format!("data({})", a["q"].as_str().unwrap_or("")))
        }),
    ));
    kit.register(native_tool(
        "check_secret",
        "",
        None,
        Arc::new(|_: &Value, ctx: &ExecContext| match &ctx.answer {
            Some(a) if a["ok"] == true => ToolResult::ok("secret-token"),
            Some(_) => ToolResult::error("declined"),
            None => {
                let mut md = Map::new();
                md.insert(
                    "pending".into(),
                    json!({"id": "r1", "kind": "approval", "prompt": "approve secret access?"}),
                );
                ToolResult::error("approve secret access?").with_metadata(md)
            }
        }),
    ));
    Arc::new(kit)
}

struct Fx {
    rt: Runtime,
    mock: Arc<Mock>,
    clock: Arc<ManualClock>,
    closed: Arc<Mutex<Vec<(String, String)>>>,
}

fn fx_with(registry: Value, tune: impl FnOnce(&mut RuntimeOptions)) -> Fx {
    fx_kit(toolkit(), registry, tune)
}

fn fx_kit(kit: Arc<Toolkit>, registry: Value, tune: impl FnOnce(&mut RuntimeOptions)) -> Fx {
    let registry = Registry::from_json(&registry, Some(&kit)).expect("registry");
    let config = ClientConfig::from_json(
        &json!({"baseUrl": "http://mock.invalid", "style": "openai", "model": "m-default"}),
    )
    .expect("config");
    let mock = Arc::new(Mock::default());
    let clock = Arc::new(ManualClock::new());
    let mut opts = RuntimeOptions::new(registry, Llm::Provider(config, mock.clone()));
    opts.toolkit = Some(kit);
    opts.clock = clock.clone();
    let closed = Arc::new(Mutex::new(Vec::new()));
    let c = Arc::clone(&closed);
    opts.on_close = Some(Arc::new(move |id: &str, why: &str| {
        c.lock()
            .expect("lock")
            .push((id.to_string(), why.to_string()));
    }));
    tune(&mut opts);
    Fx {
        rt: Runtime::new(opts).expect("runtime"),
        mock,
        clock,
        closed,
    }
}

fn fx(registry: Value) -> Fx {
    fx_with(registry, |_| {})
}

fn transitions(rt: &Runtime, id: &str) -> Vec<String> {
    let prefix = format!("{id}: ");
    rt.trace()
        .iter()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|r| {
            let w: String = r.chars().take_while(|c| *c != ' ').collect();
            let (a, b) = w.split_once('→')?;
            (!a.is_empty() && !b.is_empty() && a.chars().all(|c| c.is_ascii_lowercase()))
                .then_some(w)
        })
        .collect()
}

fn team() -> Value {
    json!({"coordinator": {"does": "splits and delegates", "model": "m-coordinator", "team": ["explore"]},
           "explore": {"does": "read-only research", "model": "m-explore", "tools": ["lookup"]}})
}

#[test]
fn an_unset_run_sends_the_soul_and_prompt_and_stores_three_messages() {
    let f = fx(json!({"a": {"does": "x", "soul": "soul-a", "model": "m-ok"}}));
    let (id, r) = f.rt.run("a", "hello").expect("run");
    assert_eq!((r.status.as_str(), r.text.as_str()), ("done", "ok"));
    let wire = f.mock.wire();
    assert_eq!(
        wire[0]["messages"],
        json!([{"role": "system", "content": "soul-a"}, {"role": "user", "content": "hello"}])
    );
    let stored: Vec<Value> =
        f.rt.transcript(&id)
            .iter()
            .map(|m| m["role"].clone())
            .collect();
    assert_eq!(
        stored,
        vec![json!("system"), json!("user"), json!("assistant")]
    );
    assert_eq!(
        f.rt.trace(),
        vec![
            "root/a.1: spawned (depth 1, tokens Infinity)",
            "root/a.1: idle→running (wake)",
            "root/a.1: running→idle (done, turns=1, tokens=40)",
        ]
    );
}

#[test]
fn an_idle_handle_holds_no_toolkit_until_its_first_turn_and_then_keeps_one() {
    let f = fx(team());
    let id = f.rt.spawn("root", "explore", None).expect("spawn");
    let i = *f.rt.inner.lock().index.get(id.as_str()).expect("indexed");
    let kit = |f: &Fx| f.rt.inner.lock().handles[i].toolkit();
    assert!(kit(&f).is_none(), "an idle handle builds no toolkit");
    f.rt.wake(&id, Some("go")).expect("wake");
    let r = f.rt.wait(&id, None);
    assert_eq!(
        (r.status.as_str(), r.text.as_str()),
        ("done", "found:data(x)")
    );
    let first = kit(&f).expect("built for the first turn");
    assert!(first.find("lookup").is_some() && first.find("task").is_none());
    f.rt.wake(&id, Some("again")).expect("wake");
    assert_eq!(f.rt.wait(&id, None).status, "done");
    let second = kit(&f).expect("kept");
    assert!(Arc::ptr_eq(&first, &second), "built once, then reused");
}

#[test]
fn the_transcript_survives_turns() {
    let f = fx(json!({"a": {"does": "x", "soul": "s", "model": "m-count"}}));
    let (id, r) = f.rt.run("a", "one").expect("run");
    assert_eq!(r.text, "msgs:2");
    f.rt.wake(&id, Some("two")).expect("wake");
    assert_eq!(f.rt.wait(&id, None).text, "msgs:4");
    assert_eq!(f.rt.transcript(&id).len(), 5);
    assert_eq!(f.rt.inspect(&id).expect("view").turns, 2);
}

#[test]
fn the_list_and_inspect_views_carry_turns_and_tokens() {
    let f = fx(json!({"a": {"does": "x", "model": "m-ok"}}));
    let (id, _) = f.rt.run("a", "hi").expect("run");
    let view = f.rt.inspect(&id).expect("view");
    assert_eq!((view.turns, view.tokens, view.state), (1, 40, State::Idle));
    assert_eq!(f.rt.list(), vec![view]);
    assert!(f.rt.inspect("root/nope.1").is_none());
}

#[test]
fn fanout_rolls_usage_up_and_closes_the_children() {
    let f = fx(team());
    let (id, r) = f.rt.run("coordinator", "go").expect("run");
    assert_eq!(r.status, "done");
    assert_eq!(r.text.matches("found:data(x)").count(), 2);
    assert_eq!((r.turns, r.total_tokens, r.own_tokens), (2, 240, 80));
    let kids: Vec<(String, State)> =
        f.rt.list()
            .into_iter()
            .skip(1)
            .map(|v| (v.id, v.state))
            .collect();
    assert_eq!(
        kids,
        vec![
            (format!("{id}/explore.1"), State::Closed),
            (format!("{id}/explore.2"), State::Closed)
        ]
    );
    // The parent transcript gained exactly one tool message per call.
    let tool_msgs =
        f.rt.transcript(&id)
            .iter()
            .filter(|m| m["role"] == "tool")
            .count();
    assert_eq!(tool_msgs, 2);
}

#[test]
fn only_an_agent_with_a_team_gets_the_task_tool_and_its_team_sorted() {
    let f = fx(json!({
        "lead": {"does": "leads", "model": "m-ok", "team": ["zeta", "alpha"]},
        "zeta": {"does": "last", "model": "m-ok", "tools": ["lookup"]},
        "alpha": {"does": "first", "model": "m-ok"}}));
    f.rt.run("lead", "x").expect("run");
    f.rt.run("zeta", "x").expect("run");
    let wire = f.mock.wire();
    let names = |i: usize| -> Vec<String> {
        wire[i]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(names(0), vec!["task"]);
    assert_eq!(names(1), vec!["lookup"]);
    let desc = wire[0]["tools"][0]["function"]["description"]
        .as_str()
        .unwrap_or("");
    assert!(desc.ends_with("alpha: first; zeta: last"), "{desc}");
}

#[test]
fn an_out_of_team_task_is_refused_naming_the_team() {
    let f = fx(
        json!({"lead": {"does": "x", "model": "m-ghost", "team": ["helper"]},
                      "helper": {"does": "y", "model": "m-ok"}}),
    );
    let (_, r) = f.rt.run("lead", "x").expect("run");
    assert_eq!(
        r.text,
        "agent \"ghost\" is not in this agent's team (available: helper)"
    );
    assert_eq!(f.rt.list().len(), 1, "no child was spawned");
}

#[test]
fn spawn_checks_come_in_order_with_their_texts() {
    let f = fx(json!({"b": {"does": "y", "model": "m-ok"}, "a": {"does": "x", "model": "m-ok"}}));
    let e = f.rt.spawn("root", "zz", None).expect_err("unknown");
    assert_eq!(e, "unknown agent \"zz\" (known: a, b)");
    let shallow = Budget {
        max_depth: Some(1),
        max_children: Some(1),
        ..Budget::default()
    };
    let a = f.rt.spawn("root", "a", Some(&shallow)).expect("a");
    let e = f.rt.spawn(&a, "b", None).expect_err("too deep");
    assert!(e.starts_with("maxDepth 1 exceeded"), "{e}");
    let roomy = Budget {
        max_children: Some(1),
        ..Budget::default()
    };
    let p = f.rt.spawn("root", "a", Some(&roomy)).expect("a.2");
    assert_eq!(p, "root/a.2");
    f.rt.spawn(&p, "b", None).expect("first child");
    let e = f.rt.spawn(&p, "b", None).expect_err("second child");
    assert!(e.starts_with("maxChildren 1 exceeded"), "{e}");
    f.rt.close(&p, false, None).expect("close");
    let e = f.rt.spawn(&p, "b", None).expect_err("closed parent");
    assert!(e.contains("parent closed"), "{e}");
}

#[test]
fn budgets_carve_at_spawn_and_a_spent_ancestor_refuses_loudly() {
    let f = fx(team());
    let small = Budget {
        max_tokens: Some(100),
        ..Budget::default()
    };
    let c = f.rt.spawn("root", "coordinator", Some(&small)).expect("c");
    let big = Budget {
        max_tokens: Some(500),
        ..Budget::default()
    };
    let e1 = f.rt.spawn(&c, "explore", Some(&big)).expect("e1");
    assert_eq!(f.rt.inspect(&e1).and_then(|v| v.pool_tokens), Some(100));
    let e2 = f.rt.spawn(&c, "explore", None).expect("e2");
    for e in [&e1, &e2] {
        f.rt.wake(e, Some("go")).expect("wake");
        assert_eq!(f.rt.wait(e, None).status, "done");
    }
    assert_eq!(f.rt.inspect(&c).and_then(|v| v.pool_tokens), Some(-60));
    f.rt.wake(&e2, Some("again")).expect("wake");
    let r = f.rt.wait(&e2, None);
    assert_eq!(
        (r.status.as_str(), r.limit.as_deref()),
        ("incomplete", Some("maxTokens"))
    );
    assert_eq!(
        r.text,
        "budget exhausted (maxTokens); partial work preserved"
    );
    let e = f.rt.spawn(&c, "explore", None).expect_err("spent");
    assert!(e.contains("budget exhausted"), "{e}");
}

#[test]
fn tool_call_and_wall_budgets_stop_loudly_naming_the_limit() {
    let f = fx(json!({"looper": {"does": "x", "model": "m-loop", "tools": ["lookup"]}}));
    let calls = Budget {
        max_tool_calls: Some(1),
        max_turns: Some(2),
        ..Budget::default()
    };
    let h = f.rt.spawn("root", "looper", Some(&calls)).expect("spawn");
    f.rt.wake(&h, Some("go")).expect("wake");
    let r = f.rt.wait(&h, None);
    assert_eq!(
        (r.status.as_str(), r.limit.as_deref(), r.turns),
        ("incomplete", Some("maxTurns"), 2)
    );
    assert_eq!(r.text, "hit maxTurns without a final answer");
    f.rt.wake(&h, Some("more")).expect("wake");
    let r = f.rt.wait(&h, None);
    assert_eq!(r.limit.as_deref(), Some("maxToolCalls"));
    assert_eq!(r.turns, 2, "a refused wake runs no turn");

    let wall = Budget {
        max_wall_ms: Some(50),
        ..Budget::default()
    };
    let w = f.rt.spawn("root", "looper", Some(&wall)).expect("spawn");
    f.clock.advance(50);
    f.rt.wake(&w, Some("go")).expect("wake");
    let r = f.rt.wait(&w, None);
    assert_eq!(
        (r.status.as_str(), r.limit.as_deref()),
        ("incomplete", Some("maxWallMs"))
    );
}

#[test]
fn a_wait_times_out_on_the_virtual_clock_while_the_child_keeps_running() {
    let f = fx(json!({"slow": {"does": "x", "model": "m-slow"}}));
    let h = f.rt.spawn("root", "slow", None).expect("spawn");
    f.rt.wake(&h, Some("work")).expect("wake");
    assert!(f.rt.await_state(&h, State::Running, BOUND));
    let rt = f.rt.clone();
    let id = h.clone();
    let waiter = std::thread::spawn(move || rt.wait(&id, Some(100)));
    // The waiter sleeps until the clock reaches its deadline.
    assert!(f.rt.await_sleepers(1, BOUND));
    f.clock.advance(99);
    assert!(f.rt.await_sleepers(1, BOUND));
    assert!(
        !waiter.is_finished(),
        "the deadline is not reached at 99 ms"
    );
    f.clock.advance(1);
    let r = waiter.join().expect("waiter");
    assert_eq!(
        (r.status.as_str(), r.limit.as_deref()),
        ("timeout", Some("timeout"))
    );
    assert_eq!(r.text, "wait timeout after 100ms (child still running)");
    assert_eq!(f.rt.inspect(&h).expect("view").state, State::Running);
    f.rt.interrupt(&h).expect("interrupt");
}

#[test]
fn interrupting_a_running_turn_restores_the_inbox_and_tells_the_waiter() {
    let f = fx(json!({"slow": {"does": "x", "model": "m-slow"}}));
    let h = f.rt.spawn("root", "slow", None).expect("spawn");
    f.rt.post(&h, InboxItem::new("external", "external", "for later"))
        .expect("post");
    f.rt.wake(&h, Some("work slowly")).expect("wake");
    assert!(f.rt.await_state(&h, State::Running, BOUND));
    assert_eq!(
        f.rt.inspect(&h).expect("view").inbox,
        0,
        "drained into the turn"
    );
    f.rt.interrupt(&h).expect("interrupt");
    let r = f.rt.wait(&h, None);
    assert_eq!((r.status.as_str(), r.is_error), ("interrupted", true));
    let v = f.rt.inspect(&h).expect("view");
    assert_eq!((v.state, v.inbox), (State::Idle, 1));
    assert_eq!(transitions(&f.rt, &h), vec!["idle→running", "running→idle"]);
    // Interrupting an idle handle is a no-op.
    f.rt.interrupt(&h).expect("no-op");
    assert_eq!(transitions(&f.rt, &h).len(), 2);
}

#[test]
fn the_turn_gate_slot_is_given_back_when_its_holder_is_interrupted() {
    let f = fx_with(
        json!({"slow": {"does": "x", "model": "m-slow"}, "a": {"does": "y", "model": "m-ok"}}),
        |o| o.max_concurrent_turns = 1,
    );
    let s = f.rt.spawn("root", "slow", None).expect("slow");
    f.rt.wake(&s, Some("hold the gate")).expect("wake");
    assert!(f.rt.await_state(&s, State::Running, BOUND));
    let queued = f.rt.spawn("root", "slow", None).expect("slow 2");
    f.rt.wake(&queued, Some("queued on the gate"))
        .expect("wake");
    let a = f.rt.spawn("root", "a", None).expect("a");
    f.rt.wake(&a, Some("hi")).expect("wake");
    // A queued acquirer that is interrupted leaves the queue...
    f.rt.interrupt(&queued).expect("interrupt queued");
    // ...and the holder's slot comes back when it is interrupted.
    f.rt.interrupt(&s).expect("interrupt holder");
    assert_eq!(f.rt.wait(&a, None).status, "done");
    assert_eq!(f.rt.max_observed_concurrent_turns(), 1);
}

#[test]
fn a_team_chain_deeper_than_one_thread_runs_turns_answers_end_to_end() {
    // A `task` call runs its child's turn on its own thread up to
    // AGENT_INLINE_TURNS deep; the levels below go to pooled threads.
    let depth = crate::limits::AGENT_INLINE_TURNS + 3;
    let mut defs = Map::new();
    for l in 0..depth {
        defs.insert(
            format!("l{l}"),
            json!({"does": format!("level {l}"), "model": format!("m-via:l{}", l + 1),
                   "team": [format!("l{}", l + 1)], "budget": {"maxDepth": depth + 1}}),
        );
    }
    defs.insert(
        format!("l{depth}"),
        json!({"does": "the end", "model": "m-ok"}),
    );
    let f = fx(Value::Object(defs));
    let (_, r) = f.rt.run("l0", "start").expect("run");
    assert_eq!(r.status, "done", "{}", r.text);
    assert_eq!(
        r.text,
        format!("{}ok{}", "via(".repeat(depth), ")".repeat(depth))
    );
    assert_eq!(r.total_tokens, 40 * (2 * depth as u64 + 1));
}

#[test]
fn interrupting_a_parent_does_not_wait_for_the_child_turn_its_task_runs() {
    // The child's turn runs on the parent's `task` thread; the parent still
    // goes idle at once, and the child, not interrupted, finishes later.
    let f = fx(
        json!({"p": {"does": "x", "model": "m-via:h", "team": ["h"]},
                      "h": {"does": "holds", "model": "m-hold"}}),
    );
    let p = f.rt.spawn("root", "p", None).expect("spawn");
    f.rt.wake(&p, Some("delegate")).expect("wake");
    let child = format!("{p}/h.1");
    let deadline = std::time::Instant::now() + BOUND;
    while f.rt.inspect(&child).map(|v| v.state) != Some(State::Running) {
        assert!(std::time::Instant::now() < deadline, "the child never ran");
        std::thread::sleep(Duration::from_millis(2));
    }
    f.rt.interrupt(&p).expect("interrupt");
    let r = f.rt.wait(&p, None);
    assert_eq!((r.status.as_str(), r.is_error), ("interrupted", true));
    assert_eq!(f.rt.inspect(&p).expect("view").state, State::Idle);
    assert_eq!(f.rt.inspect(&child).expect("view").state, State::Running);
    f.mock.release();
    let c = f.rt.wait(&child, None);
    assert_eq!((c.status.as_str(), c.text.as_str()), ("done", "held-done"));
}

#[test]
fn a_settled_handle_gives_the_same_result_again() {
    let f = fx(json!({"a": {"does": "x", "model": "m-ok"}}));
    let (id, r) = f.rt.run("a", "hi").expect("run");
    assert_eq!(f.rt.wait(&id, None), r);
    assert_eq!(f.rt.wait(&id, Some(0)), r);
}

#[test]
fn the_inbox_gate_rejects_loudly_and_loses_nothing() {
    let f = fx_with(json!({"peer": {"does": "x", "model": "m-peer"}}), |o| {
        o.inbox_cap = 3
    });
    let h = f.rt.spawn("root", "peer", None).expect("spawn");
    let mut accepted = 0;
    for n in 0..1000 {
        match f
            .rt
            .post(&h, InboxItem::new("root", "peer", &format!("item {n}")))
        {
            Ok(()) => accepted += 1,
            Err(e) => assert_eq!(e, format!("inbox full: {h} (cap 3)")),
        }
    }
    assert_eq!((accepted, f.rt.inspect(&h).expect("view").inbox), (3, 3));
    assert!(f
        .rt
        .trace()
        .iter()
        .any(|l| l.ends_with("post REJECTED (inbox full, cap 3) from root")));
    f.rt.wake(&h, None).expect("wake");
    let r = f.rt.wait(&h, None);
    assert_eq!(r.text, "processed 3 items");
    let wire = f.mock.wire();
    let input = wire[0]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .expect("input")["content"]
        .as_str()
        .unwrap_or("")
        .to_string();
    for n in 0..3 {
        assert!(
            input.contains(&format!("[from=root channel=peer] item {n}")),
            "{input}"
        );
    }
}

#[test]
fn a_post_during_a_turn_waits_for_the_next_drain() {
    let f = fx(
        json!({"h": {"does": "x", "model": "m-hold"}, "peer": {"does": "y", "model": "m-peer"}}),
    );
    let h = f.rt.spawn("root", "h", None).expect("spawn");
    f.rt.wake(&h, Some("start")).expect("wake");
    assert!(f.rt.await_state(&h, State::Running, BOUND));
    f.rt.post(&h, InboxItem::new("external", "external", "late"))
        .expect("post");
    f.mock.release();
    assert_eq!(f.rt.wait(&h, None).text, "held-done");
    assert_eq!(
        f.rt.inspect(&h).expect("view").inbox,
        1,
        "still waiting for a drain"
    );
}

#[test]
fn closing_cascades_leaf_first_and_a_closed_handle_refuses_everything() {
    let f = fx(json!({"peer": {"does": "x", "model": "m-ok"}}));
    let a = f.rt.spawn("root", "peer", None).expect("a");
    let b = f.rt.spawn(&a, "peer", None).expect("b");
    let c = f.rt.spawn(&b, "peer", None).expect("c");
    f.rt.close("root", false, None).expect("close");
    let order: Vec<String> = f
        .closed
        .lock()
        .expect("lock")
        .iter()
        .map(|(i, _)| i.clone())
        .collect();
    assert_eq!(order, vec![c.clone(), b.clone(), a.clone()]);
    assert!(f.rt.list().iter().all(|v| v.state == State::Closed));
    let e =
        f.rt.post(&b, InboxItem::new("x", "peer", "late"))
            .expect_err("closed");
    assert_eq!(e, format!("inbox closed: {b}"));
    assert!(f
        .rt
        .wake(&b, Some("x"))
        .expect_err("closed")
        .contains("closed"));
    assert_eq!(f.rt.wait(&b, None).status, "closed");
    assert_eq!(transitions(&f.rt, &c), vec!["idle→closed"]);
}

#[test]
fn a_forced_close_of_fifty_running_handles_restores_their_inboxes() {
    let f = fx(
        json!({"boss": {"does": "x", "model": "m-ok"}, "slow": {"does": "y", "model": "m-slow"}}),
    );
    let no_cap = Budget {
        max_concurrent: Some(50),
        ..Budget::default()
    };
    let boss = f.rt.spawn("root", "boss", Some(&no_cap)).expect("boss");
    let mut kids = Vec::new();
    for _ in 0..50 {
        let k = f.rt.spawn(&boss, "slow", None).expect("kid");
        f.rt.post(&k, InboxItem::new("root", "peer", "keep me"))
            .expect("post");
        f.rt.wake(&k, Some("work")).expect("wake");
        kids.push(k);
    }
    for k in &kids {
        assert!(f.rt.await_state(k, State::Running, BOUND));
    }
    f.rt.close("root", true, None).expect("close");
    for k in &kids {
        let v = f.rt.inspect(k).expect("view");
        assert_eq!((v.state, v.inbox), (State::Closed, 1));
        assert_eq!(f.rt.wait(k, None).status, "closed");
    }
    let reasons = f.closed.lock().expect("lock");
    assert_eq!(reasons.len(), 51);
    assert!(reasons.iter().all(|(_, why)| why == "interrupted"));
}

fn approvals(wait_for_on: Option<&str>) -> Fx {
    let reg = json!({"parent": {"does": "delegates", "model": "m-parent", "team": ["asker"]},
                     "asker": {"does": "needs approvals", "model": "m-asker", "tools": ["check_secret"]}});
    let who = wait_for_on.map(str::to_string);
    fx_with(reg, move |o| {
        if let Some(name) = who {
            let f: crate::client::HostFn =
                Arc::new(|req: &Value, _| Ok(Some(json!({"id": req["id"].clone(), "ok": true}))));
            o.registry.set_wait_for(&name, Some(f)).expect("waitFor");
        }
    })
}

#[test]
fn the_nearest_interpreter_answers_inline() {
    for (on, who) in [("parent", "root/parent.1"), ("asker", "self")] {
        let f = approvals(Some(on));
        let (_, r) = f.rt.run("parent", "go").expect("run");
        assert_eq!(r.text, "parent-final: asker-done: secret-token");
        let asker = "root/parent.1/asker.1";
        assert!(f.rt.trace().contains(&format!(
            "{asker}: escalate → {who} answers (\"nearest interpreter\")"
        )));
        assert_eq!(
            transitions(&f.rt, asker),
            vec![
                "idle→running",
                "running→suspended",
                "suspended→running",
                "running→idle",
                "idle→closed"
            ]
        );
    }
}

#[test]
fn with_no_interpreter_the_tree_parks_and_resume_reattaches() {
    let f = approvals(None);
    let (id, r) = f.rt.run("parent", "go").expect("run");
    assert_eq!(r.status, "pending");
    assert_eq!(
        r.pending.as_ref().expect("pending")["data"]["path"],
        json!(["root", "parent.1"])
    );
    let asker = format!("{id}/asker.1");
    // Rewound: a suspended handle stores nothing of the turn it parked in.
    assert!(f.rt.transcript(&id).is_empty() && f.rt.transcript(&asker).is_empty());
    let before = f.rt.inspect(&asker).expect("view").tokens;
    let r = f.rt.resume(json!({"ok": true})).expect("resume");
    assert_eq!(
        (r.status.as_str(), r.text.as_str()),
        ("done", "parent-final: asker-done: secret-token")
    );
    assert!(f.rt.inspect(&asker).expect("view").tokens > before);
    let ids: Vec<String> = f.rt.list().into_iter().map(|v| v.id).collect();
    assert_eq!(ids, vec![id.clone(), asker.clone()]);
    let tool_msg =
        f.rt.transcript(&id)
            .into_iter()
            .find(|m| m["role"] == "tool")
            .expect("the real task result");
    assert_eq!(tool_msg["content"], "asker-done: secret-token");
    assert!(f
        .rt
        .trace()
        .iter()
        .any(|l| l.contains("task replay → REATTACH")));
    assert_eq!(
        f.rt.resume(json!({"ok": true})).expect_err("none left"),
        "no suspended handle"
    );
}

#[test]
fn interrupting_a_suspended_handle_drops_its_pending_request() {
    let f = approvals(None);
    let asker = f.rt.spawn("root", "asker", None).expect("asker");
    f.rt.post(&asker, InboxItem::new("root", "peer", "note"))
        .expect("post");
    f.rt.wake(&asker, Some("go")).expect("wake");
    assert_eq!(f.rt.wait(&asker, None).status, "pending");
    f.rt.interrupt(&asker).expect("interrupt");
    let v = f.rt.inspect(&asker).expect("view");
    assert_eq!((v.state, v.inbox, v.pending_kind), (State::Idle, 1, None));
    assert!(f.rt.trace().contains(&format!(
        "{asker}: suspended→idle (interrupt cancelled pending \"approval\")"
    )));
}

#[test]
fn the_concurrency_gate_queues_and_dequeues_in_order() {
    let f =
        fx(json!({"h": {"does": "x", "model": "m-hold"}, "boss": {"does": "y", "model": "m-ok"}}));
    let one = Budget {
        max_concurrent: Some(1),
        ..Budget::default()
    };
    let boss = f.rt.spawn("root", "boss", Some(&one)).expect("boss");
    let a = f.rt.spawn(&boss, "h", None).expect("a");
    let b = f.rt.spawn(&boss, "h", None).expect("b");
    f.rt.wake(&a, Some("first")).expect("wake a");
    f.rt.wake(&b, Some("second")).expect("wake b");
    assert_eq!(f.rt.inspect(&b).expect("view").state, State::Idle, "queued");
    f.mock.release();
    assert_eq!(f.rt.wait(&a, None).status, "done");
    assert_eq!(f.rt.wait(&b, None).status, "done");
    let trace = f.rt.trace();
    assert!(trace.contains(&format!("{b}: wake QUEUED (parent concurrency 1)")));
    assert!(trace.contains(&format!("{b}: DEQUEUED wake (slot freed)")));
}

#[test]
fn an_agent_is_a_tool_returning_only_its_final_text() {
    let f = fx(team());
    let tool = f.rt.as_tool("coordinator").expect("tool");
    assert_eq!(
        (tool.name.as_str(), tool.description.as_str()),
        ("coordinator", "splits and delegates")
    );
    let r = tool
        .exec
        .execute(&json!({"prompt": "go"}), &ExecContext::default());
    assert!(!r.is_error);
    assert_eq!(r.output, "synthesis: found:data(x) + found:data(x)");
    let md = r.metadata.expect("metadata");
    assert_eq!(
        (
            md["agent"].clone(),
            md["turns"].clone(),
            md["totalTokens"].clone()
        ),
        (json!("coordinator"), json!(2), json!(240))
    );
    assert_eq!(
        f.rt.inspect("root/coordinator.1").expect("view").state,
        State::Closed
    );
    assert!(f.rt.as_tool("nobody").is_err());
    let bad = tool.exec.execute(&json!({}), &ExecContext::default());
    assert!(bad.is_error);
}

#[test]
fn on_spawn_runs_once_per_handle_before_its_first_turn() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let f = fx_with(team(), move |o| {
        o.on_spawn = Some(Arc::new(move |id: &str| {
            s.lock().expect("lock").push(id.to_string())
        }));
    });
    f.rt.run("coordinator", "go").expect("run");
    let mut got = seen.lock().expect("lock").clone();
    got.sort();
    assert_eq!(
        got,
        vec![
            "root/coordinator.1",
            "root/coordinator.1/explore.1",
            "root/coordinator.1/explore.2"
        ]
    );
}

/// A toolkit with the todowrite builtin (the one `allTodosDone` reads) and
/// the scripted `lookup`.
fn planning_toolkit() -> Arc<Toolkit> {
    let off: Map<String, Value> = [
        "apply_patch",
        "bash",
        "edit",
        "glob",
        "grep",
        "question",
        "read",
        "webfetch",
        "write",
    ]
    .iter()
    .map(|n| ((*n).to_string(), json!(false)))
    .collect();
    let kit = Toolkit::build_from_json(&json!({"builtins": {"tools": off}}).to_string())
        .expect("toolkit");
    kit.register(native_tool(
        "lookup",
        "",
        None,
        Arc::new(|a: &Value, _: &ExecContext| {
            ToolResult::ok(format!("data({})", a["q"].as_str().unwrap_or("")))
        }),
    ));
    Arc::new(kit)
}

fn planners(stubborn_attempts: u64) -> Value {
    json!({
        "boss": {"does": "delegates planning", "model": "m-boss", "team": ["planner", "stubborn"]},
        "planner": {"does": "plans", "model": "m-planner", "tools": ["todowrite"],
                    "completion": {"verify": "allTodosDone", "maxAttempts": 2}},
        "stubborn": {"does": "never finishes", "model": "m-stubborn", "tools": ["todowrite"],
                     "completion": {"verify": "allTodosDone", "maxAttempts": stubborn_attempts}}
    })
}

#[test]
fn the_completion_gate_blocks_then_passes_on_the_same_conversation() {
    let f = fx_kit(planning_toolkit(), planners(2), |_| {});
    let (id, r) = f.rt.run("planner", "plan the release").expect("run");
    assert_eq!(
        (r.status.as_str(), r.text.as_str()),
        ("done", "planned after 2 tool result(s)")
    );
    // Two attempts of two calls each, in one turn of the handle.
    assert_eq!(r.turns, 4);
    let wire = f.mock.wire();
    assert_eq!(wire.len(), 4);
    let retry = wire[2]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        retry,
        json!({"role": "user", "content":
               "Your work did not verify: 1 item(s) still open: write tests. Fix it and finish."})
    );
    // The second attempt continues the first's conversation.
    assert!(wire[2]["messages"].to_string().contains("plan the release"));
    assert!(transitions(&f.rt, &id).contains(&"running→idle".to_string()));
}

#[test]
fn the_completion_gate_stops_loudly_and_reaches_a_delegated_child() {
    let f = fx_kit(planning_toolkit(), planners(3), |_| {});
    let (id, r) = f.rt.run("stubborn", "plan").expect("run");
    assert_eq!(r.status, "incomplete");
    assert_eq!(r.limit.as_deref(), Some("completion"));
    assert_eq!(
        r.text,
        "completion.verify failed 3x: 1 item(s) still open: write tests"
    );
    assert!(r.is_error);
    assert!(f
        .rt
        .trace()
        .contains(&format!("{id}: running→idle (incomplete: completion)")));
    // Through the task tool: the boss's child is gated by its own definition.
    let g = fx_kit(planning_toolkit(), planners(2), |_| {});
    let (_, r) = g.rt.run("boss", "go").expect("run");
    assert_eq!(r.status, "done");
    assert_eq!(r.text, "boss: planned after 2 tool result(s)");
}

#[test]
fn a_definition_without_a_gate_is_unchanged_and_a_bad_gate_is_the_config_s_error() {
    let f = fx_kit(
        planning_toolkit(),
        json!({"p": {"does": "plans", "model": "m-stubborn", "tools": ["todowrite"]}}),
        |_| {},
    );
    let (_, r) = f.rt.run("p", "plan").expect("run");
    assert_eq!((r.status.as_str(), r.turns), ("done", 2));
    for (completion, says) in [
        (json!({"verify": "allTodosDone"}), "maxAttempts is required"),
        (json!({"verify": "allTodosDone", "maxAttempts": 0}), ">= 1"),
        (json!({"maxAttempts": 1}), "verify is required"),
    ] {
        let e = Registry::from_json(&json!({"p": {"does": "d", "completion": completion}}), None)
            .expect_err("a bad gate");
        assert_eq!(e.code, ErrorCode::InvalidConfig);
        assert!(
            e.message.contains("agent \"p\".completion") && e.message.contains(says),
            "{}",
            e.message
        );
    }
}

#[test]
fn a_definition_s_guardrails_deny_its_tool_calls_before_the_runtime_hook() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let hook_calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&hook_calls);
    let mut defs: Vec<AgentDef> = Vec::new();
    for (name, denies) in [("guarded", true), ("free", false)] {
        let mut d = AgentDef::from_json(
            name,
            &json!({"does": "looks up", "model": "m-explore", "tools": ["lookup"]}),
        )
        .expect("def");
        if denies {
            d.guardrails = vec![
                Arc::new(|_: &Value| "allow".to_string()),
                Arc::new(|e: &Value| {
                    if e["name"] == "lookup" {
                        "no lookups today".to_string()
                    } else {
                        String::new()
                    }
                }),
                Arc::new(|_: &Value| "never reached".to_string()),
            ];
        }
        defs.push(d);
    }
    let kit = planning_toolkit();
    let registry = Registry::new(defs, Some(&kit)).expect("registry");
    let config = ClientConfig::from_json(
        &json!({"baseUrl": "http://mock.invalid", "style": "openai", "model": "m-default"}),
    )
    .expect("config");
    let mut opts = RuntimeOptions::new(registry, Llm::Provider(config, Arc::new(Mock::default())));
    opts.toolkit = Some(kit);
    opts.hooks.set(
        crate::client::Slot::BeforeTool,
        Some(Arc::new(move |_: &Value, _: crate::client::RunData| {
            seen.fetch_add(1, Ordering::SeqCst);
            Ok(None)
        })),
    );
    let rt = Runtime::new(opts).expect("runtime");
    let (_, r) = rt.run("guarded", "look").expect("run");
    assert_eq!(r.text, "found:denied: no lookups today");
    assert_eq!(
        hook_calls.load(Ordering::SeqCst),
        0,
        "the hook ran after a deny"
    );
    let (_, r) = rt.run("free", "look").expect("run");
    assert_eq!(r.text, "found:data(x)");
    assert_eq!(hook_calls.load(Ordering::SeqCst), 1);
}

/// A runtime on a store (`"store"` in the config): the selector's store.
fn sqlite_store(dir: &tempfile::TempDir) -> Arc<dyn crate::store::Store> {
    let path = dir.path().join("agents.db");
    crate::store::resolve(Some(&format!("sqlite:{}", path.display()))).expect("sqlite store")
}

#[test]
fn a_store_holds_every_transcript_and_a_runtime_started_on_it_carries_on() {
    use crate::store::Kind;
    let dir = tempfile::tempdir().expect("tempdir");
    let reg = json!({"a": {"does": "x", "soul": "s", "model": "m-count"}});
    let store = sqlite_store(&dir);
    let first = fx_with(reg.clone(), |o| o.store = Some(Arc::clone(&store)));
    let (id, r) = first.rt.run("a", "one").expect("run");
    assert_eq!(r.text, "msgs:2");
    assert!(first.rt.flush(BOUND));
    drop(first);
    // Another process's view of the same file: the transcript is there.
    let other = sqlite_store(&dir);
    let saved = other
        .get(Kind::Conversation, &id)
        .expect("get")
        .expect("saved");
    assert_eq!(saved.as_array().map(Vec::len), Some(3), "{saved}");
    // A new runtime on the store: the same deterministic id picks up the
    // transcript (the model sees the earlier turn), and reads it before
    // its first turn too.
    let second = fx_with(reg, |o| o.store = Some(other));
    assert_eq!(second.rt.transcript(&id).len(), 3);
    let (again, r) = second.rt.run("a", "two").expect("run");
    assert_eq!((again.as_str(), r.text.as_str()), (id.as_str(), "msgs:4"));
    assert!(second.rt.flush(BOUND));
    let saved = sqlite_store(&dir)
        .get(Kind::Conversation, &id)
        .expect("get")
        .expect("saved");
    assert_eq!(saved.as_array().map(Vec::len), Some(5), "{saved}");
}

#[test]
fn a_suspended_handle_has_its_checkpoint_in_the_store_until_it_resumes() {
    use crate::store::Kind;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = sqlite_store(&dir);
    let reg = json!({"parent": {"does": "delegates", "model": "m-parent", "team": ["asker"]},
                     "asker": {"does": "needs approvals", "model": "m-asker", "tools": ["check_secret"]}});
    let f = fx_with(reg, |o| o.store = Some(Arc::clone(&store)));
    let (id, r) = f.rt.run("parent", "go").expect("run");
    assert_eq!(r.status, "pending");
    let asker = format!("{id}/asker.1");
    assert!(f.rt.flush(BOUND));
    let cp = store
        .get(Kind::Checkpoint, &asker)
        .expect("get")
        .expect("the asker's checkpoint");
    assert_eq!(cp["id"], json!(asker), "{cp}");
    assert_eq!(cp["pending"]["kind"], "approval", "{cp}");
    assert_eq!(
        cp["pending"]["data"]["path"],
        json!(["root", "parent.1", "asker.1"])
    );
    assert!(cp["input"].is_string() && cp["turns"].is_u64(), "{cp}");
    // Rewound: no transcript of the turn that parked.
    assert_eq!(store.get(Kind::Conversation, &asker).expect("get"), None);

    let r = f.rt.resume(json!({"ok": true})).expect("resume");
    assert_eq!(r.text, "parent-final: asker-done: secret-token");
    assert!(f.rt.flush(BOUND));
    for h in [&id, &asker] {
        assert_eq!(store.get(Kind::Checkpoint, h).expect("get"), None, "{h}");
    }
    let parent = store
        .get(Kind::Conversation, &id)
        .expect("get")
        .expect("the parent's transcript");
    assert!(
        parent.to_string().contains("asker-done: secret-token"),
        "{parent}"
    );
}

#[test]
fn interrupting_a_suspended_handle_deletes_its_checkpoint_from_the_store() {
    use crate::store::Kind;
    let store: Arc<dyn crate::store::Store> = Arc::new(crate::store::MemoryStore::default());
    let reg = json!({"asker": {"does": "needs approvals", "model": "m-asker", "tools": ["check_secret"]}});
    let f = fx_with(reg, |o| o.store = Some(Arc::clone(&store)));
    let (id, r) = f.rt.run("asker", "go").expect("run");
    assert_eq!(r.status, "pending");
    assert!(f.rt.flush(BOUND));
    assert!(store.get(Kind::Checkpoint, &id).expect("get").is_some());
    f.rt.interrupt(&id).expect("interrupt");
    assert!(f.rt.flush(BOUND));
    assert_eq!(store.get(Kind::Checkpoint, &id).expect("get"), None);
}

/// A store whose every write fails.
struct Broken;

impl crate::store::Store for Broken {
    fn get(&self, _: crate::store::Kind, _: &str) -> std::result::Result<Option<Value>, String> {
        Ok(None)
    }
    fn save(&self, _: crate::store::Kind, _: &str, _: &Value) -> std::result::Result<(), String> {
        Err("the disk is full".into())
    }
    fn delete(&self, _: crate::store::Kind, _: &str) -> std::result::Result<bool, String> {
        Err("the disk is full".into())
    }
    fn selector(&self) -> String {
        "host:broken".into()
    }
}

/// A store that cannot be read.
struct Unreadable;

impl crate::store::Store for Unreadable {
    fn get(&self, _: crate::store::Kind, _: &str) -> std::result::Result<Option<Value>, String> {
        Err("connection refused".into())
    }
    fn save(&self, _: crate::store::Kind, _: &str, _: &Value) -> std::result::Result<(), String> {
        Ok(())
    }
    fn delete(&self, _: crate::store::Kind, _: &str) -> std::result::Result<bool, String> {
        Ok(false)
    }
    fn selector(&self) -> String {
        "host:unreadable".into()
    }
}

#[test]
fn a_write_the_store_refuses_is_in_the_trace_and_the_turn_keeps_its_result() {
    let f = fx_with(json!({"a": {"does": "x", "model": "m-ok"}}), |o| {
        o.store = Some(Arc::new(Broken));
    });
    let (id, r) = f.rt.run("a", "hi").expect("run");
    assert_eq!((r.status.as_str(), r.text.as_str()), ("done", "ok"));
    assert!(f.rt.flush(BOUND));
    assert!(
        f.rt.trace()
            .contains(&format!("{id}: conversation not saved: the disk is full")),
        "{:?}",
        f.rt.trace()
    );
    assert_eq!(f.rt.transcript(&id).len(), 2, "the runtime's own copy");
}

#[test]
fn a_store_that_cannot_be_read_fails_the_turn_naming_it() {
    let f = fx_with(json!({"a": {"does": "x", "model": "m-ok"}}), |o| {
        o.store = Some(Arc::new(Unreadable));
    });
    let (_, r) = f.rt.run("a", "hi").expect("run");
    assert_eq!(r.status, "error");
    assert_eq!(
        r.text,
        "cannot load the transcript of root/a.1 from the agents store host:unreadable: connection refused"
    );
    assert!(
        f.mock.wire().is_empty(),
        "no model call without the history"
    );
}

/// The durable-resume tree (contract §4.6's fixture): `parent` delegates
/// to `asker`, whose tool asks for an approval; no `waitFor` anywhere.
fn approval_tree() -> Value {
    json!({"parent": {"does": "delegates", "model": "m-parent", "team": ["asker"]},
           "asker": {"does": "needs approvals", "model": "m-asker", "tools": ["check_secret"]}})
}

/// The trace from the resume on.
fn from_resume(rt: &Runtime) -> Vec<String> {
    let trace = rt.trace();
    let at = trace
        .iter()
        .position(|l| l.contains("resume with Answer(ok=true) at checkpoint"))
        .expect("a resume line");
    trace[at..].to_vec()
}

/// Parks the approval tree on `store`, waits for its writes and drops the
/// runtime (a process that exits).
fn park_and_exit(store: Arc<dyn crate::store::Store>) -> String {
    let first = fx_with(approval_tree(), |o| o.store = Some(store));
    let (id, r) = first.rt.run("parent", "go").expect("run");
    assert_eq!(r.status, "pending");
    assert!(first.rt.flush(BOUND));
    id
}

#[test]
fn a_runtime_restarted_on_the_store_resumes_the_suspended_tree() {
    use crate::store::Kind;
    // The same tree in one process, never interrupted.
    let one = fx(approval_tree());
    let (id, r) = one.rt.run("parent", "go").expect("run");
    assert_eq!(r.status, "pending");
    let want = one.rt.resume(json!({"ok": true})).expect("resume");
    assert_eq!(want.text, "parent-final: asker-done: secret-token");
    let asker = format!("{id}/asker.1");

    let dir = tempfile::tempdir().expect("tempdir");
    let selectors = [
        format!("sqlite:{}", dir.path().join("agents.db").display()),
        format!("file:{}", dir.path().join("records").display()),
    ];
    for selector in selectors {
        let open = || crate::store::resolve(Some(&selector)).expect("store");
        assert_eq!(park_and_exit(open()), id);
        let store = open();
        let again = fx_with(approval_tree(), |o| o.store = Some(Arc::clone(&store)));
        // The restarted runtime shows the parked tree before the resume.
        let views: Vec<(String, State, Option<String>)> = again
            .rt
            .list()
            .into_iter()
            .map(|v| (v.id, v.state, v.pending_kind))
            .collect();
        let parked = Some("approval".to_string());
        assert_eq!(
            views,
            vec![
                (id.clone(), State::Suspended, parked.clone()),
                (asker.clone(), State::Suspended, parked)
            ],
            "{selector}"
        );
        let got = again.rt.resume(json!({"ok": true})).expect("resume");
        assert_eq!(got, want, "{selector}");
        let ids: Vec<String> = again.rt.list().into_iter().map(|v| v.id).collect();
        assert_eq!(ids, vec![id.clone(), asker.clone()], "no second spawn");
        assert_eq!(from_resume(&again.rt), from_resume(&one.rt), "{selector}");
        assert!(
            again.rt.trace().contains(&format!(
                "{id}: task replay → REATTACH to {asker} (state idle)"
            )),
            "{:?}",
            again.rt.trace()
        );
        assert!(again.rt.flush(BOUND));
        for record in ["root", id.as_str(), asker.as_str()] {
            assert_eq!(
                store.get(Kind::Checkpoint, record).expect("get"),
                None,
                "{selector} {record}"
            );
        }
        assert_eq!(
            again.rt.resume(json!({"ok": true})).expect_err("none left"),
            "no suspended handle"
        );
        // The restored spawn counter: a new run gets a new id.
        assert_eq!(
            again.rt.spawn("root", "parent", None).expect("spawn"),
            "root/parent.2"
        );
    }
}

#[test]
fn a_host_letting_go_of_the_runtime_leaves_its_suspension_for_the_next() {
    let dir = tempfile::tempdir().expect("tempdir");
    let selector = format!("sqlite:{}", dir.path().join("agents.db").display());
    let first = fx_with(approval_tree(), |o| {
        o.store = Some(crate::store::resolve(Some(&selector)).expect("store"));
    });
    let (id, r) = first.rt.run("parent", "go").expect("run");
    assert_eq!(r.status, "pending");
    // What `tn_agents_free` does: every handle closed, the store flushed.
    first.rt.keep_suspensions();
    first
        .rt
        .close("root", true, Some("runtime freed"))
        .expect("close");
    assert!(first.rt.flush(BOUND));
    drop(first);
    let again = fx_with(approval_tree(), |o| {
        o.store = Some(crate::store::resolve(Some(&selector)).expect("store"));
    });
    let r = again.rt.resume(json!({"ok": true})).expect("resume");
    assert_eq!(
        (r.status.as_str(), r.text.as_str()),
        ("done", "parent-final: asker-done: secret-token")
    );
    assert_eq!(again.rt.list().len(), 2, "{id}: {:?}", again.rt.list());
}

#[test]
fn a_tree_that_cannot_be_carried_on_is_resume_s_error_naming_the_record() {
    use crate::store::Kind;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let selector = format!("sqlite:{}", path.display());
    let what = format!("checkpoint \"root\" in the agents store {selector}");
    // Nothing in the store: today's sentence.
    let empty = fx_with(approval_tree(), |o| o.store = Some(sqlite_store(&dir)));
    assert_eq!(
        empty.rt.resume(json!({"ok": true})).expect_err("nothing"),
        "no suspended handle"
    );
    drop(empty);

    // A definition the new runtime does not have.
    park_and_exit(sqlite_store(&dir));
    let fewer = json!({"parent": {"does": "delegates", "model": "m-parent"}});
    let f = fx_with(fewer, |o| o.store = Some(sqlite_store(&dir)));
    assert_eq!(
        f.rt.resume(json!({"ok": true})).expect_err("no asker"),
        format!("{what}: root/parent.1/asker.1 is an agent \"asker\" this runtime does not define (known: parent) (the record is kept as checkpoint \"root.unrestored.1\")")
    );
    assert!(f.rt.list().is_empty(), "all or nothing: {:?}", f.rt.list());
    drop(f);

    // A record that is not a tree.
    let store = sqlite_store(&dir);
    store
        .save(
            Kind::Checkpoint,
            "root",
            &json!({"id": "root", "handles": 7}),
        )
        .expect("save");
    let f = fx_with(approval_tree(), |o| o.store = Some(store));
    let e = f.rt.resume(json!({"ok": true})).expect_err("corrupt");
    assert!(
        e.starts_with(&format!("{what} is not a suspended tree: ")),
        "{e}"
    );
    drop(f);

    // A store that cannot be read.
    let f = fx_with(approval_tree(), |o| o.store = Some(Arc::new(Unreadable)));
    assert_eq!(
        f.rt.resume(json!({"ok": true})).expect_err("unreadable"),
        "cannot read checkpoint \"root\" in the agents store host:unreadable: connection refused (the record is left as it is; this runtime saves no suspended tree)"
    );
}

#[test]
fn an_ancestor_that_is_not_suspended_comes_back_idle_with_its_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = fx_with(approval_tree(), |o| o.store = Some(sqlite_store(&dir)));
    // The host spawns the asker under a parent that never runs a turn.
    let budget = Budget {
        max_tokens: Some(500),
        ..Budget::default()
    };
    let parent = first
        .rt
        .spawn("root", "parent", Some(&budget))
        .expect("parent");
    let asker = first.rt.spawn(&parent, "asker", None).expect("asker");
    first.rt.wake(&asker, Some("go")).expect("wake");
    assert_eq!(first.rt.wait(&asker, None).status, "pending");
    let before: Vec<HandleView> = first.rt.list();
    assert!(first.rt.flush(BOUND));
    drop(first);

    let again = fx_with(approval_tree(), |o| o.store = Some(sqlite_store(&dir)));
    assert_eq!(again.rt.list(), before, "the same views, pools included");
    assert!(again.rt.trace().contains(&format!(
        "{parent}: restored from the agents store sqlite:{} (idle)",
        dir.path().join("agents.db").display()
    )));
    let r = again.rt.resume(json!({"ok": true})).expect("resume");
    assert_eq!(
        (r.status.as_str(), r.text.as_str()),
        ("done", "asker-done: secret-token")
    );
    let views = again.rt.list();
    assert_eq!(views[0].state, State::Idle);
    // Each call costs 40 (the mock's usage): one before the restart, two
    // after (the replayed tool call, then the answer), rolled up into the
    // parent and taken from its pool.
    assert_eq!(before[0].tokens, 40);
    assert_eq!((views[0].tokens, views[0].pool_tokens), (120, Some(380)));
}

/// A store's writes as `save|delete <kind> <id>` into `log`, and a crash:
/// from write `at` on (counted from 0), none reaches the store.
fn crash_at(at: usize, log: Arc<Mutex<Vec<String>>>) -> super::durable::Crash {
    Box::new(move |kind, id, value| {
        let mut log = log.lock().expect("lock");
        let verb = if value.is_some() { "save" } else { "delete" };
        log.push(format!("{verb} {} {id}", kind.as_str()));
        log.len() > at
    })
}

fn memory_store() -> Arc<dyn crate::store::Store> {
    Arc::new(crate::store::MemoryStore::default())
}

/// The approval tree run and resumed in one process, never interrupted.
fn uninterrupted() -> (String, TaskResult) {
    let one = fx(approval_tree());
    let (id, r) = one.rt.run("parent", "go").expect("run");
    assert_eq!(r.status, "pending");
    let want = one.rt.resume(json!({"ok": true})).expect("resume");
    assert_eq!(want.text, "parent-final: asker-done: secret-token");
    (id, want)
}

/// A runtime on `store` carries the approval tree on: both handles back
/// suspended, the resume's result `want`, the parent's `task` call
/// reattaching to the asker (no second spawn).
fn carries_on(store: &Arc<dyn crate::store::Store>, id: &str, want: &TaskResult, at: &str) {
    let asker = format!("{id}/asker.1");
    let again = fx_with(approval_tree(), |o| o.store = Some(Arc::clone(store)));
    let views: Vec<(String, State)> = again
        .rt
        .list()
        .into_iter()
        .map(|v| (v.id, v.state))
        .collect();
    assert_eq!(
        views,
        vec![
            (id.to_string(), State::Suspended),
            (asker.clone(), State::Suspended)
        ],
        "{at}"
    );
    let got = again.rt.resume(json!({"ok": true})).expect("resume");
    assert_eq!(&got, want, "{at}: {:?}", again.rt.trace());
    let ids: Vec<String> = again.rt.list().into_iter().map(|v| v.id).collect();
    assert_eq!(
        ids,
        vec![id.to_string(), asker.clone()],
        "{at}: no second spawn"
    );
    assert!(
        again.rt.trace().contains(&format!(
            "{id}: task replay → REATTACH to {asker} (state idle)"
        )),
        "{at}: {:?}",
        again.rt.trace()
    );
}

#[test]
fn a_crash_after_the_child_parks_restores_the_parent_waiting_on_its_task_call() {
    use crate::store::Kind;
    let (id, want) = uninterrupted();
    // The first runtime's writes, none lost.
    let log = Arc::new(Mutex::new(Vec::new()));
    {
        let first = fx_with(approval_tree(), |o| o.store = Some(memory_store()));
        first.rt.crash_when(crash_at(usize::MAX, Arc::clone(&log)));
        assert_eq!(
            first.rt.run("parent", "go").expect("run").1.status,
            "pending"
        );
        assert!(first.rt.flush(BOUND));
    }
    let writes = log.lock().expect("lock").clone();
    let tree = writes
        .iter()
        .position(|w| w == "save checkpoint root")
        .expect("a tree record");
    // The asker parks (its checkpoint, the tree) before the parent does.
    assert_eq!(
        writes[..tree + 1].to_vec(),
        vec![
            format!("save checkpoint {id}/asker.1"),
            "save checkpoint root".into()
        ]
    );
    // The process dies before each write in turn.
    for n in 0..=writes.len() {
        let store = memory_store();
        let first = fx_with(approval_tree(), |o| o.store = Some(Arc::clone(&store)));
        first.rt.crash_when(crash_at(n, Arc::default()));
        assert_eq!(
            first.rt.run("parent", "go").expect("run").1.status,
            "pending"
        );
        assert!(first.rt.flush(BOUND));
        drop(first);
        let at = format!("crash before write {n} of {writes:?}");
        if store.get(Kind::Checkpoint, "root").expect("get").is_none() {
            assert!(n <= tree, "{at}");
            let again = fx_with(approval_tree(), |o| o.store = Some(Arc::clone(&store)));
            assert_eq!(
                again
                    .rt
                    .resume(json!({"ok": true}))
                    .expect_err("nothing parked"),
                "no suspended handle",
                "{at}"
            );
            continue;
        }
        carries_on(&store, &id, &want, &at);
    }
}

#[test]
fn a_crash_during_a_resume_leaves_a_tree_the_next_runtime_reattaches_to() {
    use crate::store::Kind;
    let (id, want) = uninterrupted();
    // Parks the tree, then resumes it on a restarted runtime that dies
    // before write `at` of the resume.
    let resume_dying_at = |at: usize, log: Arc<Mutex<Vec<String>>>| {
        let store = memory_store();
        assert_eq!(park_and_exit(Arc::clone(&store)), id);
        let second = fx_with(approval_tree(), |o| o.store = Some(Arc::clone(&store)));
        second.rt.crash_when(crash_at(at, log));
        // In its own memory the runtime goes on.
        let got = second.rt.resume(json!({"ok": true})).expect("resume");
        assert_eq!(got, want);
        assert!(second.rt.flush(BOUND));
        store
    };
    let log = Arc::new(Mutex::new(Vec::new()));
    resume_dying_at(usize::MAX, Arc::clone(&log));
    let writes = log.lock().expect("lock").clone();
    for at in 0..=writes.len() {
        let store = resume_dying_at(at, Arc::default());
        let at = format!("crash before write {at} of {writes:?}");
        if store.get(Kind::Checkpoint, "root").expect("get").is_none() {
            // The resume had ended: nothing left to carry on.
            let again = fx_with(approval_tree(), |o| o.store = Some(Arc::clone(&store)));
            assert_eq!(
                again.rt.resume(json!({"ok": true})).expect_err("none left"),
                "no suspended handle",
                "{at}"
            );
            continue;
        }
        carries_on(&store, &id, &want, &at);
    }
    // The tree's end lands first, the transcripts after it.
    assert_eq!(
        writes.first().map(String::as_str),
        Some("delete checkpoint root"),
        "{writes:?}"
    );
}

#[test]
fn a_tree_a_runtime_cannot_restore_is_kept_aside_never_overwritten() {
    use crate::store::Kind;
    let dir = tempfile::tempdir().expect("tempdir");
    let selector = format!("sqlite:{}", dir.path().join("agents.db").display());
    park_and_exit(sqlite_store(&dir));
    let store = sqlite_store(&dir);
    let parked = store
        .get(Kind::Checkpoint, "root")
        .expect("get")
        .expect("a tree");
    // A runtime without the parent's definition parks a tree of its own.
    let asker_only = json!({"asker": {"does": "needs approvals", "model": "m-asker", "tools": ["check_secret"]}});
    let other = fx_with(asker_only.clone(), |o| o.store = Some(sqlite_store(&dir)));
    let why = format!("checkpoint \"root\" in the agents store {selector}: root/parent.1 is an agent \"parent\" this runtime does not define (known: asker)");
    assert_eq!(
        other
            .rt
            .resume(json!({"ok": true}))
            .expect_err("not restored"),
        format!("{why} (the record is kept as checkpoint \"root.unrestored.1\")")
    );
    assert!(
        other.rt.trace().contains(&format!(
            "root: checkpoint \"root\" in the agents store {selector} not restored, kept as checkpoint \"root.unrestored.1\": {why}"
        )),
        "{:?}",
        other.rt.trace()
    );
    let (own, r) = other.rt.run("asker", "go").expect("run");
    assert_eq!(
        (own.as_str(), r.status.as_str()),
        ("root/asker.1", "pending")
    );
    assert!(other.rt.flush(BOUND));
    drop(other);
    assert_eq!(
        store
            .get(Kind::Checkpoint, "root.unrestored.1")
            .expect("get"),
        Some(parked),
        "the earlier tree, whole"
    );
    // The other runtime's own tree is in `root`, for the next one.
    let next = fx_with(asker_only, |o| o.store = Some(sqlite_store(&dir)));
    let ids: Vec<String> = next.rt.list().into_iter().map(|v| v.id).collect();
    assert_eq!(ids, vec!["root/asker.1".to_string()]);
}

/// A store whose first read of the tree record fails.
struct ReadFailsOnce {
    inner: Arc<dyn crate::store::Store>,
    failed: std::sync::atomic::AtomicBool,
}

impl crate::store::Store for ReadFailsOnce {
    fn get(
        &self,
        kind: crate::store::Kind,
        id: &str,
    ) -> std::result::Result<Option<Value>, String> {
        use std::sync::atomic::Ordering;
        if id == "root" && !self.failed.swap(true, Ordering::SeqCst) {
            return Err("timed out".into());
        }
        self.inner.get(kind, id)
    }
    fn save(
        &self,
        kind: crate::store::Kind,
        id: &str,
        v: &Value,
    ) -> std::result::Result<(), String> {
        self.inner.save(kind, id, v)
    }
    fn delete(&self, kind: crate::store::Kind, id: &str) -> std::result::Result<bool, String> {
        self.inner.delete(kind, id)
    }
    fn selector(&self) -> String {
        "host:flaky".into()
    }
}

#[test]
fn a_tree_that_could_not_be_read_is_left_as_it_is() {
    use crate::store::Kind;
    let store = memory_store();
    park_and_exit(Arc::clone(&store));
    let parked = store.get(Kind::Checkpoint, "root").expect("get");
    assert!(parked.is_some());
    let flaky = Arc::new(ReadFailsOnce {
        inner: Arc::clone(&store),
        failed: Default::default(),
    });
    let asker_only = json!({"asker": {"does": "needs approvals", "model": "m-asker", "tools": ["check_secret"]}});
    let other = fx_with(asker_only, |o| o.store = Some(flaky));
    assert_eq!(
        other.rt.resume(json!({"ok": true})).expect_err("not read"),
        "cannot read checkpoint \"root\" in the agents store host:flaky: timed out (the record is left as it is; this runtime saves no suspended tree)"
    );
    let (_, r) = other.rt.run("asker", "go").expect("run");
    assert_eq!(r.status, "pending");
    assert!(other.rt.flush(BOUND));
    drop(other);
    assert_eq!(
        store.get(Kind::Checkpoint, "root").expect("get"),
        parked,
        "untouched"
    );
    // The next runtime carries the earlier tree on.
    let (id, want) = uninterrupted();
    carries_on(&store, &id, &want, "after the flaky read");
}

/// Waits until no handle has a turn out: a thread that has settled a turn
/// lets go of it a moment later, and a handle is forgotten only after.
fn turns_let_go(f: &Fx) {
    let until = std::time::Instant::now() + BOUND;
    while f.rt.inner.lock().handles.iter().any(|h| h.busy()) {
        assert!(std::time::Instant::now() < until, "a turn still out");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn past_the_kept_closed_handles_the_oldest_is_forgotten_and_its_slot_reused() {
    let f = fx(json!({"a": {"does": "x", "soul": "s", "model": "m-count"}}));
    f.rt.inner.lock().closed_kept = 2;
    let mut ids = Vec::new();
    for n in 0..4 {
        let (id, r) = f.rt.run("a", &format!("hi {n}")).expect("run");
        assert_eq!(r.text, "msgs:2");
        f.rt.post(&id, InboxItem::new("external", "external", "unread"))
            .expect("post");
        ids.push(id);
    }
    let kit = |id: &str| {
        let st = f.rt.inner.lock();
        st.handles[st.index[id]].made.is_some()
    };
    assert!(
        kit(&ids[0]),
        "an idle handle keeps the toolkit of its turns"
    );
    turns_let_go(&f);
    for id in &ids {
        f.rt.close(id, false, None).expect("close");
        let st = f.rt.inner.lock();
        if let Some(&i) = st.index.get(id.as_str()) {
            assert!(st.handles[i].made.is_none(), "{id}");
        }
    }
    for id in &ids[..2] {
        assert_eq!(f.rt.inspect(id), None, "{id} forgotten");
        let r = f.rt.wait(id, None);
        assert_eq!(
            (r.status.as_str(), r.text),
            ("error", format!("unknown handle \"{id}\""))
        );
        assert!(f.rt.transcript(id).is_empty());
        assert!(f.rt.close(id, false, None).is_err());
    }
    for id in &ids[2..] {
        let view = f.rt.inspect(id).expect("kept");
        assert_eq!((view.state, view.turns, view.inbox), (State::Closed, 1, 1));
        assert_eq!(f.rt.transcript(id).len(), 3, "{id}");
        let r = f.rt.wait(id, None);
        assert_eq!(
            (r.status.as_str(), r.text.as_str()),
            ("done", "msgs:2"),
            "{id}"
        );
    }
    let listed: Vec<String> = f.rt.list().into_iter().map(|v| v.id).collect();
    assert_eq!(listed, ids[2..].to_vec());
    // A new handle takes a forgotten one's slot, under a new id, and runs.
    let (id, r) = f.rt.run("a", "again").expect("run");
    assert_eq!((id.as_str(), r.text.as_str()), ("root/a.5", "msgs:2"));
    let st = f.rt.inner.lock();
    assert_eq!(st.handles.len(), 5, "root and four slots");
    assert_eq!((st.index.len(), st.store.len()), (4, 3));
}

#[test]
fn many_trees_run_and_closed_in_one_runtime_hold_a_bounded_number_of_slots() {
    let f = fx(team());
    f.rt.inner.lock().closed_kept = 10;
    for n in 0..200 {
        let (id, r) = f.rt.run("coordinator", "go").expect("run");
        assert_eq!(r.status, "done", "tree {n}: {}", r.text);
        turns_let_go(&f);
        f.rt.close(&id, false, None).expect("close");
    }
    let st = f.rt.inner.lock();
    // Each tree is three handles; ten closed ones kept, the rest forgotten.
    assert!(st.handles.len() <= 1 + 10 + 3, "{} slots", st.handles.len());
    assert_eq!((st.index.len(), st.store.len()), (1 + 10, 10));
    assert!(st.lingering.is_empty());
    drop(st);
    assert_eq!(f.rt.list().len(), 10);
    assert_eq!(
        f.rt.inspect("root/coordinator.200").expect("kept").state,
        State::Closed
    );
}

#[test]
fn a_closed_child_of_an_open_parent_is_forgotten_with_its_parent() {
    let f = fx(team());
    f.rt.inner.lock().closed_kept = 0;
    let (parent, r) = f.rt.run("coordinator", "go").expect("run");
    assert_eq!(r.status, "done");
    let children: Vec<String> = f.rt.list().into_iter().skip(1).map(|v| v.id).collect();
    assert_eq!(children.len(), 2);
    turns_let_go(&f);
    f.rt.close(&children[0], false, None).expect("close");
    assert_eq!(
        f.rt.inspect(&children[0])
            .expect("its parent is open")
            .state,
        State::Closed
    );
    f.rt.close(&parent, false, None).expect("close");
    assert!(f.rt.list().is_empty());
    let st = f.rt.inner.lock();
    assert_eq!(
        (st.index.len(), st.free.len()),
        (1, 3),
        "the whole tree forgotten"
    );
}

#[test]
fn a_closed_handle_whose_turn_is_still_out_lingers_until_it_ends() {
    let f = fx(json!({"h": {"does": "x", "model": "m-hold"},
                      "a": {"does": "x", "model": "m-ok"}}));
    f.rt.inner.lock().closed_kept = 0;
    let h = f.rt.spawn("root", "h", None).expect("spawn");
    f.rt.wake(&h, Some("hold")).expect("wake");
    // Forced: closed at once while its model call is still held.
    f.rt.close(&h, true, None).expect("close");
    assert_eq!(f.rt.inspect(&h).expect("lingers").state, State::Closed);
    assert_eq!(f.rt.inner.lock().lingering.len(), 1);
    f.mock.release();
    // The next close tries it again.
    let (a, _) = f.rt.run("a", "x").expect("run");
    turns_let_go(&f);
    f.rt.close(&a, false, None).expect("close");
    assert_eq!(f.rt.inspect(&h), None);
    assert!(f.rt.inner.lock().lingering.is_empty());
}

#[test]
fn a_tree_in_reused_slots_parks_and_a_restarted_runtime_carries_it_on() {
    let (_, want) = uninterrupted();
    let store = memory_store();
    let id = {
        let first = fx_with(approval_tree(), |o| o.store = Some(Arc::clone(&store)));
        first.rt.inner.lock().closed_kept = 0;
        let spawned: Vec<String> = (0..3)
            .map(|_| first.rt.spawn("root", "parent", None).expect("spawn"))
            .collect();
        for p in &spawned {
            first.rt.close(p, false, None).expect("close");
        }
        // The process dies after the asker's checkpoint and the first
        // tree record: the parent is in it only as waiting on its `task`
        // call.
        first.rt.crash_when(crash_at(2, Arc::default()));
        let (id, r) = first.rt.run("parent", "go").expect("run");
        assert_eq!(r.status, "pending");
        let st = first.rt.inner.lock();
        let (p, c) = (
            st.index[id.as_str()],
            st.index[format!("{id}/asker.1").as_str()],
        );
        assert!(
            c < p,
            "the child in a lower slot than its parent ({c} < {p})"
        );
        drop(st);
        assert!(first.rt.flush(BOUND));
        id
    };
    assert_eq!(id, "root/parent.4");
    carries_on(&store, &id, &want, "a tree in reused slots");
}

#[test]
fn a_store_still_answers_for_the_transcript_a_closed_handle_let_go_of() {
    let f = fx_with(
        json!({"a": {"does": "x", "soul": "s", "model": "m-count"}}),
        |o| o.store = Some(memory_store()),
    );
    f.rt.inner.lock().closed_kept = 0;
    let (id, _) = f.rt.run("a", "hi").expect("run");
    turns_let_go(&f);
    f.rt.close(&id, false, None).expect("close");
    assert_eq!(f.rt.inspect(&id), None, "forgotten");
    assert!(f.rt.inner.lock().store.is_empty(), "let go of in memory");
    assert!(f.rt.flush(BOUND), "the store has it");
    let roles: Vec<Value> =
        f.rt.transcript(&id)
            .iter()
            .map(|m| m["role"].clone())
            .collect();
    assert_eq!(
        roles,
        vec![json!("system"), json!("user"), json!("assistant")]
    );
}

#[test]
fn the_trace_keeps_its_latest_lines_and_a_waiter_still_sees_new_ones() {
    let f = fx(json!({"a": {"does": "x", "model": "m-ok"},
                      "h": {"does": "x", "model": "m-hold"}}));
    f.rt.inner.lock().trace_cap = 4;
    for _ in 0..3 {
        f.rt.run("a", "hi").expect("run");
    }
    assert_eq!(
        f.rt.trace(),
        vec![
            "root/a.2: running→idle (done, turns=1, tokens=40)",
            "root/a.3: spawned (depth 1, tokens Infinity)",
            "root/a.3: idle→running (wake)",
            "root/a.3: running→idle (done, turns=1, tokens=40)",
        ]
    );
    let h = f.rt.spawn("root", "h", None).expect("spawn");
    f.rt.wake(&h, Some("hold")).expect("wake");
    // Released only once the waiter below sleeps: the line it waits for
    // comes after it has looked at a full trace.
    let rt = &f.rt;
    let mock = Arc::clone(&f.mock);
    std::thread::scope(|s| {
        s.spawn(|| {
            let until = std::time::Instant::now() + BOUND;
            while rt.inner.lock().shared_sleepers == 0 && std::time::Instant::now() < until {
                std::thread::yield_now();
            }
            mock.release();
        });
        assert!(rt.await_trace("root/h.4: running→idle (done", BOUND));
    });
    assert_eq!(f.rt.trace().len(), 4);
    assert!(
        !f.rt.await_trace("root/a.1:", Duration::from_millis(1)),
        "dropped"
    );
}

#[test]
fn a_closed_child_is_not_forgotten_while_its_closed_parent_s_turn_is_out() {
    let f = fx(
        json!({"boss": {"does": "x", "model": "m-delegate-hold", "team": ["explore"]},
                      "explore": {"does": "x", "model": "m-ok"}}),
    );
    f.rt.inner.lock().closed_kept = 1;
    let boss = f.rt.spawn("root", "boss", None).expect("spawn");
    f.rt.wake(&boss, Some("go")).expect("wake");
    // Its children have answered; its second model call is held.
    assert!(f
        .rt
        .await_trace("root/boss.1/explore.2: running→idle (done", BOUND));
    f.rt.close(&boss, true, None).expect("close");
    let second = "root/boss.1/explore.2";
    assert_eq!(
        f.rt.inspect(second)
            .expect("its parent's turn is out")
            .state,
        State::Closed
    );
    f.mock.release();
    for _ in 0..2 {
        let (a, _) = f.rt.run("explore", "x").expect("run");
        turns_let_go(&f);
        f.rt.close(&a, false, None).expect("close");
    }
    assert_eq!(f.rt.inspect(second), None);
    assert_eq!(f.rt.inspect(&boss), None);
}

#[test]
fn one_toolkit_serves_every_handle_of_a_definition_and_its_task_needs_a_turn() {
    let f = fx(json!({
        "lead": {"does": "leads", "model": "m-ok", "team": ["helper"]},
        "helper": {"does": "helps", "model": "m-ok", "tools": ["lookup"]}}));
    let inner = &f.rt.inner;
    let lead = inner.registry.get("lead").cloned().expect("lead");
    let first = inner.def_toolkit(&lead).expect("kit");
    let again = inner.def_toolkit(&lead).expect("kit");
    assert!(Arc::ptr_eq(&first, &again), "one toolkit per definition");
    // Outside a turn the call has no run tag, so no handle to spawn under.
    let r = first.execute(
        "task",
        json!({"agent": "helper", "prompt": "x"}),
        &ExecContext::default(),
    );
    assert!(r.is_error);
    assert_eq!(
        r.output,
        "task: called outside a turn of this agent runtime"
    );
    assert!(f.rt.list().is_empty(), "nothing was spawned");
    // A definition with tools gets a new toolkit once the runtime's change.
    let helper = inner.registry.get("helper").cloned().expect("helper");
    let before = inner.def_toolkit(&helper).expect("kit");
    let kit = inner.toolkit.as_ref().expect("runtime toolkit");
    kit.register(native_tool(
        "lookup",
        "",
        None,
        Arc::new(|_: &Value, _: &ExecContext| ToolResult::ok("replaced")),
    ));
    let after = inner.def_toolkit(&helper).expect("kit");
    assert!(!Arc::ptr_eq(&before, &after));
    let out = after.execute("lookup", json!({"q": "a"}), &ExecContext::default());
    assert_eq!(out.output, "replaced");
    assert_eq!(
        before
            .execute("lookup", json!({"q": "a"}), &ExecContext::default())
            .output,
        "data(a)"
    );
}

#[test]
fn the_turns_of_one_definition_share_one_client_configuration() {
    let f = fx(json!({
        "a": {"does": "x", "soul": "soul-a", "model": "m-ok"},
        "b": {"does": "y", "model": "inherit"}}));
    let inner = &f.rt.inner;
    let a = inner.registry.get("a").cloned().expect("a");
    let first = Arc::clone(&inner.def_parts(&a).expect("parts").config);
    let again = Arc::clone(&inner.def_parts(&a).expect("parts").config);
    assert!(
        Arc::ptr_eq(&first, &again),
        "one configuration per definition"
    );
    assert_eq!(first.model, "m-ok");
    assert_eq!(first.system_prompt.as_deref(), Some("soul-a"));
    // Two handles of `a`, then one of `b`: each turn's wire shows its
    // definition's model and soul, `inherit` the runtime's model and no soul.
    for (def, prompt) in [("a", "one"), ("a", "two"), ("b", "three")] {
        let (_, r) = f.rt.run(def, prompt).expect("run");
        assert_eq!(r.status, "done", "{}", r.text);
    }
    let wire = f.mock.wire();
    let seen: Vec<(String, String)> = wire
        .iter()
        .map(|w| {
            let first = &w["messages"][0];
            let system = if first["role"] == "system" {
                first["content"].as_str().unwrap_or("").to_string()
            } else {
                String::new()
            };
            (w["model"].as_str().unwrap_or("").to_string(), system)
        })
        .collect();
    let want = |m: &str, s: &str| (m.to_string(), s.to_string());
    assert_eq!(
        seen,
        vec![
            want("m-ok", "soul-a"),
            want("m-ok", "soul-a"),
            want("m-default", "")
        ]
    );
}
