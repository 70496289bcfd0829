//! Skills benchmarks on the Rust API (the C-ABI twin is bench/c/bench_skills.c):
//! build a toolkit from 1,000 skills, render 1,000 tools per format, execute
//! the skill tool.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::hint::black_box;
use std::process::Command;
use toolnexus::tool::ExecContext;
use toolnexus::toolkit::Toolkit;

fn skills_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let status = Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/gen_skills.py"))
        .arg(dir.path().join("skills"))
        .status()
        .expect("python3 runs the generator");
    assert!(status.success());
    dir
}

fn thousand_tools() -> String {
    let tools: Vec<_> = (0..1000)
        .map(|i| {
            json!({"name": format!("tool_{i:04}"), "description": format!("Benchmark tool {i}."),
                   "url": "http://127.0.0.1:9/x/{id}",
                   "inputSchema": {"type": "object", "properties": {
                       "id": {"type": "string", "description": "Identifier"},
                       "limit": {"type": "number"}}, "required": ["id"]}})
        })
        .collect();
    json!({"builtins": false, "httpTools": tools}).to_string()
}

fn benches(c: &mut Criterion) {
    let tree = skills_tree();
    let cfg = json!({"skillsDir": tree.path().join("skills")}).to_string();
    c.bench_function("build_1000_skills", |b| {
        b.iter(|| Toolkit::build_from_json(black_box(&cfg)).expect("build"))
    });
    let tools = Toolkit::build_from_json(&thousand_tools()).expect("build tools");
    for f in ["openai", "anthropic", "gemini"] {
        c.bench_function(&format!("render_1000_{f}"), |b| {
            b.iter(|| tools.render(black_box(f)).expect("render"))
        });
    }
    let tk = Toolkit::build_from_json(&cfg).expect("build");
    let ctx = ExecContext::default();
    c.bench_function("execute_skill", |b| {
        b.iter(|| tk.execute("skill", json!({"name": "skill-0500"}), &ctx))
    });
}

criterion_group! {
    name = skills;
    config = Criterion::default().sample_size(20);
    targets = benches
}
criterion_main!(skills);
