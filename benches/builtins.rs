//! read of a 1 MiB file, grep for a regex over a 2,000-file / ~50 MB tree with
//! 80 planted matches, and glob `**/*.txt` over it, each through
//! `builtin::run` with JSON arguments. The tree comes from bench/gen_tree.py
//! (generated on first use under target/bench-tree, or TN_BENCH_TREE).

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use toolnexus::builtin::run;
use toolnexus::tool::ExecContext;

fn bench_root() -> PathBuf {
    let root = std::env::var_os("TN_BENCH_TREE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-tree"));
    if !root.join("read-1mib.txt").exists() {
        let gen = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/gen_tree.py");
        let ok = Command::new("python3")
            .arg(gen)
            .arg(&root)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(
            ok,
            "bench/gen_tree.py failed; run it by hand: python3 bench/gen_tree.py {}",
            root.display()
        );
    }
    root
}

fn builtins(c: &mut Criterion) {
    let root = bench_root();
    let tree = root.join("tree").to_string_lossy().into_owned();
    let file = root.join("read-1mib.txt").to_string_lossy().into_owned();
    let ctx = ExecContext::default();

    let read_args = json!({"path": file});
    let r = run("read", &read_args, &ctx);
    assert_eq!(
        r.output.len(),
        1 << 20,
        "{}",
        r.output.get(..200).unwrap_or("")
    );
    c.bench_function("read 1 MiB", |b| {
        b.iter(|| black_box(run("read", &read_args, &ctx)))
    });

    let grep_args = json!({"pattern": "TNX_NEEDLE_[0-9]+_ZQ", "path": tree});
    let r = run("grep", &grep_args, &ctx);
    assert_eq!(r.output.lines().count(), 80, "80 planted matches");
    c.bench_function("grep regex 2000 files 50 MB", |b| {
        b.iter(|| black_box(run("grep", &grep_args, &ctx)))
    });

    let glob_args = json!({"pattern": "**/*.txt", "path": tree});
    let r = run("glob", &glob_args, &ctx);
    assert_eq!(r.output.lines().count(), 100, "default limit");
    c.bench_function("glob **/*.txt 2000 files", |b| {
        b.iter(|| black_box(run("glob", &glob_args, &ctx)))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = builtins
}
criterion_main!(benches);
