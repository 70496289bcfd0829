//! `ctx.timeoutMs` is honoured by every file builtin and by host tools
//! (issue 14). A deadline of 0 ms has passed before the tool looks at it,
//! so each case is decided without measuring time: the tool must answer
//! with its timeout result and change nothing on disk.

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use toolnexus::native::native_tool;
use toolnexus::tool::{ExecContext, ToolResult};
use toolnexus::toolkit::Toolkit;

fn expired() -> ExecContext {
    ExecContext {
        timeout_ms: Some(0),
        ..Default::default()
    }
}

fn run(name: &str, args: Value, ctx: &ExecContext) -> ToolResult {
    let tk = Toolkit::build_from_json("{}").expect("build");
    tk.execute(name, args, ctx)
}

fn assert_timed_out(r: &ToolResult, tool: &str, ms: u64) {
    assert!(r.is_error, "{tool}: {r:?}");
    assert_eq!(
        r.output,
        format!("{tool}: timed out after {ms} ms (timeoutMs)")
    );
    assert_eq!(r.metadata.as_ref().expect("metadata")["error"], "timeout");
}

fn tree() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_string_lossy().into_owned();
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    std::fs::write(dir.path().join("a.txt"), "needle\n").expect("write");
    std::fs::write(dir.path().join("sub/b.txt"), "needle\n").expect("write");
    (dir, root)
}

#[test]
fn read_honours_an_expired_deadline() {
    let (_d, root) = tree();
    let r = run("read", json!({"path": format!("{root}/a.txt")}), &expired());
    assert_timed_out(&r, "read", 0);
}

#[test]
fn write_honours_an_expired_deadline_and_writes_nothing() {
    let (_d, root) = tree();
    let path = format!("{root}/a.txt");
    let r = run("write", json!({"path": path, "content": "x"}), &expired());
    assert_timed_out(&r, "write", 0);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "needle\n");
}

#[test]
fn edit_honours_an_expired_deadline_and_changes_nothing() {
    let (_d, root) = tree();
    let path = format!("{root}/a.txt");
    let r = run(
        "edit",
        json!({"path": path, "oldString": "needle", "newString": "pin"}),
        &expired(),
    );
    assert_timed_out(&r, "edit", 0);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "needle\n");
}

#[test]
fn grep_and_glob_honour_an_expired_deadline() {
    let (_d, root) = tree();
    let r = run(
        "grep",
        json!({"pattern": "needle", "path": root}),
        &expired(),
    );
    assert_timed_out(&r, "grep", 0);
    let r = run(
        "glob",
        json!({"pattern": "**/*.txt", "path": root}),
        &expired(),
    );
    assert_timed_out(&r, "glob", 0);
}

#[test]
fn apply_patch_honours_an_expired_deadline_and_applies_nothing() {
    let (_d, root) = tree();
    let patch = format!("*** Begin Patch\n*** Add File: {root}/new.txt\n+x\n*** End Patch");
    let r = run("apply_patch", json!({"patchText": patch}), &expired());
    assert_timed_out(&r, "apply_patch", 0);
    assert!(!std::path::Path::new(&format!("{root}/new.txt")).exists());
}

#[test]
fn a_generous_deadline_changes_nothing() {
    let (_d, root) = tree();
    let ctx = ExecContext {
        timeout_ms: Some(60_000),
        ..Default::default()
    };
    let r = run("grep", json!({"pattern": "needle", "path": root}), &ctx);
    assert!(!r.is_error, "{}", r.output);
    assert_eq!(r.output.lines().count(), 2);
}

#[test]
fn a_native_tool_sees_its_deadline_and_a_late_answer_is_dropped() {
    let tk = Toolkit::build_from_json("{\"builtins\": false}").expect("build");
    tk.register(native_tool(
        "late",
        "",
        None,
        Arc::new(|args: &Value, ctx: &ExecContext| {
            let sleep = args["sleepMs"].as_u64().unwrap_or(0);
            std::thread::sleep(Duration::from_millis(sleep));
            let left = ctx.remaining().map(|d| d.as_millis() as u64);
            ToolResult::ok(format!("{left:?}"))
        }),
    ));
    let ctx = ExecContext {
        timeout_ms: Some(50),
        ..Default::default()
    };
    let r = tk.execute("late", json!({"sleepMs": 400}), &ctx);
    assert_timed_out(&r, "late", 50);

    let ctx = ExecContext {
        timeout_ms: Some(60_000),
        ..Default::default()
    };
    let r = tk.execute("late", json!({}), &ctx);
    assert!(!r.is_error);
    let left: u64 = r
        .output
        .trim_start_matches("Some(")
        .trim_end_matches(')')
        .parse()
        .expect("Some(ms)");
    assert!(left <= 60_000, "{left}");
    let r = tk.execute("late", json!({}), &ExecContext::default());
    assert_eq!(r.output, "None");
}
