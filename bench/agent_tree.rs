//! The 3-level agent tree of bench/README.md ("Agent tree"): coordinator →
//! 4 workers → 2 leaves each (13 handles, 18 model calls), on an in-process
//! model that answers at once, so what is measured is the runtime and the
//! loop around each call. Run N trees one after another (N from the
//! command line, default 300) and print the wall time and the process CPU
//! time (every thread, from /proc/self/stat) per tree and per model call.
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

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;
use toolnexus::agents::{Llm, Registry, Runtime, RuntimeOptions};
use toolnexus::client::{Exchange, Provider};
use toolnexus::translate::ClientConfig;

struct Model;

fn message(model: &str, tools: usize) -> Value {
    let task = |agent: &str, prompt: String| {
        json!({"id": prompt.replace(' ', "-"), "type": "function",
               "function": {"name": "task",
                            "arguments": json!({"agent": agent, "prompt": prompt}).to_string()}})
    };
    match (model, tools) {
        ("m-coord", 0) => json!({"role": "assistant", "content": null,
            "tool_calls": (0..4).map(|i| task("worker", format!("part {i}"))).collect::<Vec<_>>()}),
        ("m-worker", 0) => json!({"role": "assistant", "content": null,
            "tool_calls": (0..2).map(|i| task("leaf", format!("piece {i}"))).collect::<Vec<_>>()}),
        ("m-leaf", _) => json!({"role": "assistant", "content": "leaf done"}),
        (m, n) => json!({"role": "assistant", "content": format!("{m} done with {n}")}),
    }
}

impl Provider for Model {
    fn complete(&self, ex: Exchange<'_>) -> toolnexus::error::Result<Value> {
        let body = ex.body.to_value();
        let model = body["model"].as_str().unwrap_or("");
        let tools = body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        let msg = message(model, tools);
        let finish = if msg.get("tool_calls").is_some() {
            "tool_calls"
        } else {
            "stop"
        };
        Ok(
            json!({"choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                  "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}),
        )
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
    let idle_mode = args.peek().is_some_and(|a| a == "idle");
    if idle_mode {
        args.next();
    }
    let n: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(300);
    let config = ClientConfig::from_json(
        &json!({"baseUrl": "http://in-process.invalid", "model": "in-process"}),
    )
    .expect("config");
    if idle_mode {
        idle(n as usize, &config);
        return;
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
    println!(
        "rust runtime build + close alone: wall {:.3} ms, CPU {:.3} ms",
        b0.elapsed().as_secs_f64() * 1e3 / f64::from(n),
        (cpu_seconds() - d0) * 1e3 / f64::from(n)
    );
    println!(
        "rust agent tree: wall {:.3} ms, CPU {:.3} ms per tree ({:.1} us CPU per model call) over {n} trees",
        wall * 1e3,
        cpu * 1e3,
        cpu * 1e6 / 18.0
    );
}
