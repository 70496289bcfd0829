//! Upstream 0.21's host boundary for the file builtins (ADR 0034, issues
//! #100–#102) and its grep/glob rules (A24/A28). Each test names the test of
//! `toolnexus-0.21.0/tests/test_host_boundary.py` (or the rule) it follows;
//! the tests themselves are this repository's own.

use serde_json::{json, Value};
use std::path::Path;
use toolnexus::tool::{ExecContext, ToolResult};
use toolnexus::toolkit::Toolkit;

fn toolkit(config: Value) -> Toolkit {
    Toolkit::build_from_json(&config.to_string()).expect("build")
}

fn exec(tk: &Toolkit, name: &str, args: Value) -> ToolResult {
    tk.execute(name, args, &ExecContext::default())
}

fn tempdir() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().canonicalize().expect("canonical");
    let s = path.to_string_lossy().into_owned();
    (dir, s)
}

fn write(root: &str, rel: &str, content: &str) {
    let p = Path::new(root).join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, content).expect("write");
}

// ---------------------------------------------------------------------------
// A24/A28: grep emits the string it sorted by
// ---------------------------------------------------------------------------

/// test_grep_emits_walk_root_relative_forward_slashed_paths (without
/// baseDir: an absolute `path`).
#[test]
fn grep_emits_paths_relative_to_its_path_with_forward_slashes() {
    let (_d, root) = tempdir();
    write(&root, "tree/sub/a.txt", "needle\n");
    let tk = toolkit(json!({}));
    let r = exec(
        &tk,
        "grep",
        json!({"pattern": "needle", "path": format!("{root}/tree")}),
    );
    assert!(!r.is_error, "{}", r.output);
    assert_eq!(r.output, "sub/a.txt:1:needle");
}

/// A24: the walk order is the code-point order of the relative path ('.'
/// U+002E comes before '/' U+002F, so `a.txt` precedes `a/z.txt`), the
/// same string that is shown, so `limit` keeps the same matches on every
/// machine.
#[test]
fn grep_orders_by_the_relative_path_it_shows() {
    let (_d, root) = tempdir();
    for name in ["b.txt", "B.txt", "a/z.txt", "a.txt", "é.txt", "_.txt"] {
        write(&root, name, "hit\n");
    }
    let tk = toolkit(json!({}));
    let r = exec(&tk, "grep", json!({"pattern": "hit", "path": root}));
    assert_eq!(
        r.output,
        "B.txt:1:hit\n_.txt:1:hit\na.txt:1:hit\na/z.txt:1:hit\nb.txt:1:hit\né.txt:1:hit"
    );
    let r = exec(
        &tk,
        "grep",
        json!({"pattern": "hit", "path": root, "limit": 2}),
    );
    assert_eq!(r.output, "B.txt:1:hit\n_.txt:1:hit");
}

/// A `path` that names a file shows that file as given.
#[test]
fn grep_of_a_single_file_shows_it_as_given() {
    let (_d, root) = tempdir();
    write(&root, "one.txt", "x\nneedle\n");
    let tk = toolkit(json!({}));
    let file = format!("{root}/one.txt");
    let r = exec(&tk, "grep", json!({"pattern": "needle", "path": file}));
    assert_eq!(r.output, format!("{file}:2:needle"));
}
