//! The 3-level agent tree of bench/README.md ("Agent tree"): coordinator →
//! 4 workers → 2 leaves each (13 handles, 18 model calls), on an in-process
//! model that answers at once, so what is measured is the runtime and the
//! loop around each call. Run N trees one after another (N from the
//! command line, default 300) and print the wall time and the process CPU
//! time (every thread, from /proc/self/stat) per tree and per model call;
//! then the same 18 model calls through the plain loop (`Client::run`, no
//! runtime), and the difference per model call: the runtime's overhead
//! over the plain loop.
//! The Python port's figure for the same tree comes from
//! bench/agents_python.py.
//!
//!     cargo run --release --example agent_tree -- 300
//!
//! `idle N` instead spawns N idle `worker` handles (each with its scoped
//! toolkit and `task` tool, never woken) under the root of one runtime and
//! prints the resident memory they add (VmRSS before and after, and the
//! process's peak, from /proc/self/status).
//!
//!     cargo run --release --example agent_tree -- idle 10000
//!
//! `closed N` runs N trees one after another in one long-lived runtime,
//! closing each coordinator (and so its whole tree) once it answers, as a
//! host serving one request per tree would, and prints the resident memory
//! after the first 2,000 trees and after all N: what each closed tree goes
//! on holding.
//!
//!     cargo run --release --example agent_tree -- closed 20000
//!
//! With `AGENT_TREE_ONLY=trees` (or `plain`) it runs N trees through the
//! runtime (or the plain loop) and nothing else, untimed: for callgrind
//! and perf, which count the whole process (two counts of N and 2N trees
//! give the cost of N).

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;
use toolnexus::agents::{Llm, Registry, Runtime, RuntimeOptions};
use toolnexus::cancel::CancelToken;
use toolnexus::client::{Client, Exchange, Provider, RunData, RunRequest};
use toolnexus::native::native_tool;
use toolnexus::tool::{ExecContext, ToolResult};
use toolnexus::toolkit::Toolkit;
use toolnexus::translate::ClientConfig;

struct Model;

/// An object from owned values, moved in (the `json!` macro would copy
/// each interpolated `Value` through `to_value`, a deep copy the model
/// need not make).
fn object<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// A `task` call's arguments.
#[derive(serde::Serialize)]
struct Args<'a> {
    agent: &'a str,
    prompt: &'a str,
}

fn message(model: &str, tools: usize) -> Value {
    let task = |agent: &str, prompt: String| {
        // The arguments' JSON text written at once, as a provider's
        // encoder would (building a `Value` to print it would make an
        // object, its keys and values, and grow the text as it prints).
        let arguments = serde_json::to_string(&Args {
            agent,
            prompt: &prompt,
        })
        .unwrap_or_default();
        object([
            ("id", prompt.replace(' ', "-").into()),
            ("type", "function".into()),
            (
                "function",
                object([("name", "task".into()), ("arguments", arguments.into())]),
            ),
        ])
    };
    let calls = |agent: &str, what: &str, n: usize| {
        object([
            ("role", "assistant".into()),
            ("content", Value::Null),
            (
                "tool_calls",
                (0..n).map(|i| task(agent, format!("{what} {i}"))).collect(),
            ),
        ])
    };
    let says =
        |content: String| object([("role", "assistant".into()), ("content", content.into())]);
    match (model, tools) {
        ("m-coord", 0) => calls("worker", "part", 4),
        ("m-worker", 0) => calls("leaf", "piece", 2),
        ("m-leaf", _) => says("leaf done".to_string()),
        (m, n) => says(format!("{m} done with {n}")),
    }
}

impl Provider for Model {
    fn complete(&self, ex: Exchange<'_>) -> toolnexus::error::Result<Value> {
        // The body as the loop built it (model and transcript, borrowed),
        // not its wire JSON: the model reads what the Python port's
        // in-process model reads (`request["model"]`, `request["messages"]`).
        let model = ex.body.model;
        let tools = ex
            .body
            .messages
            .iter()
            .filter(|m| toolnexus::json::field(m, "role").and_then(Value::as_str) == Some("tool"))
            .count();
        let msg = message(model, tools);
        let finish = if msg.get("tool_calls").is_some() {
            "tool_calls"
        } else {
            "stop"
        };
        let usage = object([
            ("prompt_tokens", 3.into()),
            ("completion_tokens", 2.into()),
            ("total_tokens", 5.into()),
        ]);
        let choice = object([
            ("index", 0.into()),
            ("message", msg),
            ("finish_reason", finish.into()),
        ]);
        Ok(object([
            ("choices", Value::Array(vec![choice])),
            ("usage", usage),
        ]))
    }

    fn streams(&self) -> bool {
        false
    }
}

fn registry() -> Registry {
    Registry::from_json(
        &json!({
            "coordinator": {"does": "splits", "soul": "You coordinate.", "model": "m-coord", "team": ["worker"]},
            "worker": {"does": "works", "soul": "You work.", "model": "m-worker", "team": ["leaf"]},
            "leaf": {"does": "answers", "soul": "You answer.", "model": "m-leaf"}
        }),
        None,
    )
    .expect("registry")
}

fn one_tree(config: &ClientConfig) {
    let opts = RuntimeOptions::new(registry(), Llm::Provider(config.clone(), Arc::new(Model)));
    let rt = Runtime::new(opts).expect("runtime");
    let id = rt.spawn("root", "coordinator", None).expect("spawn");
    rt.wake(&id, Some("go")).expect("wake");
    let r = rt.wait(&id, None);
    assert_eq!(r.status, "done", "{}", r.text);
    assert_eq!(r.total_tokens, 18 * 5);
    rt.close("root", true, None).expect("close");
}

/// The plain loop beside the runtime: the same 18 model calls, with the
/// same model, as 13 `Client::run`s one after another on this thread (a
/// leaf's run, a worker's whose `task` tool answers at once with what a leaf
/// answers, the coordinator's whose `task` answers with what a worker
/// answers). A host driving the loop itself builds its clients and toolkits
/// once, so they are built here before the trees; what the runtime adds over
/// this is its overhead per model call.
struct Plain {
    leaf: (Client, Toolkit),
    worker: (Client, Toolkit),
    coordinator: (Client, Toolkit),
}

impl Plain {
    fn new(config: &ClientConfig) -> Plain {
        let side = |model: &str, soul: &str, answer: Option<&'static str>| {
            let mut c = config.clone();
            c.model = model.to_string();
            c.system_prompt = Some(soul.to_string());
            let client = Client::with_provider(c, 10, Arc::new(Model));
            let kit = Toolkit::build_from_json(r#"{"builtins":false}"#).expect("toolkit");
            if let Some(answer) = answer {
                kit.register(native_tool(
                    "task",
                    "answers at once",
                    None,
                    Arc::new(move |_: &Value, _: &ExecContext| ToolResult::ok(answer)),
                ));
            }
            (client, kit)
        };
        Plain {
            leaf: side("m-leaf", "You answer.", None),
            worker: side("m-worker", "You work.", Some("leaf done")),
            coordinator: side("m-coord", "You coordinate.", Some("m-worker done with 2")),
        }
    }

    fn tree(&self) {
        let cancel = CancelToken::new();
        let run = |(client, kit): &(Client, Toolkit), prompt: &str| {
            let request = RunRequest {
                prompt: prompt.to_string(),
                history: Vec::new(),
            };
            let r = client
                .run(kit, &request, &cancel, RunData::default())
                .expect("run");
            assert_eq!(r["status"], "done", "{r}");
        };
        for _ in 0..8 {
            run(&self.leaf, "piece 0");
        }
        for _ in 0..4 {
            run(&self.worker, "part 0");
        }
        run(&self.coordinator, "go");
    }
}

/// utime + stime of the whole process, in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of the line; `after` starts at field 3.
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// A `kB` field of /proc/self/status (`VmRSS`, `VmHWM`).
fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// N trees run and closed in one runtime: the memory each goes on holding.
fn closed(n: usize, config: &ClientConfig) {
    let opts = RuntimeOptions::new(registry(), Llm::Provider(config.clone(), Arc::new(Model)));
    let rt = Runtime::new(opts).expect("runtime");
    let first = n.min(2_000);
    let tree = |_| {
        let (id, r) = rt.run("coordinator", "go").expect("run");
        assert_eq!(r.status, "done", "{}", r.text);
        rt.close(&id, false, None).expect("close");
    };
    (0..first).for_each(tree);
    let early = status_kb("VmRSS");
    (first..n).for_each(tree);
    let late = status_kb("VmRSS");
    println!(
        "rust closed trees: {n} in one runtime, VmRSS after {first} {early} kB, after {n} {late} kB \
         ({:.0} bytes per closed tree past the first {first}), trace {} lines",
        late.saturating_sub(early) as f64 * 1024.0 / (n - first).max(1) as f64,
        rt.trace().len()
    );
    rt.close("root", true, None).expect("close");
}

/// N idle handles in one runtime: the memory they add.
fn idle(n: usize, config: &ClientConfig) {
    let opts = RuntimeOptions::new(registry(), Llm::Provider(config.clone(), Arc::new(Model)));
    let rt = Runtime::new(opts).expect("runtime");
    let before = status_kb("VmRSS");
    for _ in 0..n {
        rt.spawn("root", "worker", None).expect("spawn");
    }
    let after = status_kb("VmRSS");
    println!(
        "rust idle handles: {n} workers, VmRSS {before} -> {after} kB (+{:.1} MB, {:.0} bytes per handle), peak {} kB",
        after.saturating_sub(before) as f64 / 1024.0,
        after.saturating_sub(before) as f64 * 1024.0 / n.max(1) as f64,
        status_kb("VmHWM")
    );
    rt.close("root", true, None).expect("close");
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let mode = args
        .peek()
        .filter(|a| *a == "idle" || *a == "closed")
        .cloned();
    if mode.is_some() {
        args.next();
    }
    let n: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(300);
    let config = ClientConfig::from_json(
        &json!({"baseUrl": "http://in-process.invalid", "model": "in-process"}),
    )
    .expect("config");
    match mode.as_deref() {
        Some("idle") => return idle(n as usize, &config),
        Some("closed") => return closed(n as usize, &config),
        _ => {}
    }
    // AGENT_TREE_ONLY=trees / plain: that work alone, N times, nothing
    // timed (for callgrind and perf, which count the whole process).
    match std::env::var("AGENT_TREE_ONLY").as_deref() {
        Ok("trees") => {
            (0..n).for_each(|_| one_tree(&config));
            return;
        }
        Ok("plain") => {
            let plain = Plain::new(&config);
            (0..n).for_each(|_| plain.tree());
            return;
        }
        _ => {}
    }
    one_tree(&config);
    let (w0, c0) = (Instant::now(), cpu_seconds());
    for _ in 0..n {
        one_tree(&config);
    }
    let wall = w0.elapsed().as_secs_f64() / f64::from(n);
    let cpu = (cpu_seconds() - c0) / f64::from(n);
    // What building and closing a runtime alone costs (in the tree's
    // figure once per tree).
    let (b0, d0) = (Instant::now(), cpu_seconds());
    for _ in 0..n {
        let rt = Runtime::new(RuntimeOptions::new(
            registry(),
            Llm::Provider(config.clone(), Arc::new(Model)),
        ))
        .expect("runtime");
        rt.close("root", true, None).expect("close");
    }
    let build_wall = b0.elapsed().as_secs_f64() / f64::from(n);
    let build_cpu = (cpu_seconds() - d0) / f64::from(n);
    let plain = Plain::new(&config);
    plain.tree();
    let (p0, q0) = (Instant::now(), cpu_seconds());
    for _ in 0..n {
        plain.tree();
    }
    let plain_wall = p0.elapsed().as_secs_f64() / f64::from(n);
    let plain_cpu = (cpu_seconds() - q0) / f64::from(n);
    println!(
        "rust runtime build + close alone: wall {:.3} ms, CPU {:.3} ms",
        build_wall * 1e3,
        build_cpu * 1e3
    );
    println!(
        "rust agent tree: wall {:.3} ms, CPU {:.3} ms per tree ({:.1} us CPU per model call) over {n} trees",
        wall * 1e3,
        cpu * 1e3,
        cpu * 1e6 / 18.0
    );
    println!(
        "rust plain loop, same 18 calls: wall {:.3} ms, CPU {:.3} ms per tree ({:.1} us CPU per model call)",
        plain_wall * 1e3,
        plain_cpu * 1e3,
        plain_cpu * 1e6 / 18.0
    );
    println!(
        "rust runtime overhead over the plain loop: {:.1} us CPU per model call",
        (cpu - plain_cpu) * 1e6 / 18.0
    );
}
