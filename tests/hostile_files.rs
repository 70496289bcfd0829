//! Special files never hang or exhaust the host (issue 14): `read`, `write`,
//! `edit` and `apply_patch` refuse a FIFO, a device or a socket with an
//! error naming it, and `read` loads at most 64 MiB of one file. Each call
//! runs on a thread of its own with a generous bound, so a regression fails
//! the test instead of hanging the run.

use serde_json::{json, Value};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;
use toolnexus::builtin::run;
use toolnexus::tool::{ExecContext, ToolResult};

/// Runs a builtin on its own thread; `None` if it did not return in 20 s.
fn bounded(name: &'static str, args: Value) -> ToolResult {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(run(name, &args, &ExecContext::default()));
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(r) => r,
        Err(_) => panic!("{name} did not return within 20 s (blocked on a special file)"),
    }
}

fn fifo() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("pipe");
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let s = path.to_string_lossy().into_owned();
    (dir, s)
}

fn assert_refused(r: &ToolResult, tool: &str, path: &str, kind: &str) {
    assert!(r.is_error, "{tool} on {path} should fail: {r:?}");
    assert_eq!(
        r.output,
        format!(
            "{tool}: {path} is {kind}, not a regular file; only regular files are read or written"
        )
    );
}

#[test]
fn read_of_a_fifo_is_refused_without_blocking() {
    let (_d, path) = fifo();
    let r = bounded("read", json!({ "path": path }));
    assert_refused(&r, "read", &path, "a FIFO (named pipe)");
}

#[test]
fn write_to_a_fifo_is_refused_without_blocking() {
    let (_d, path) = fifo();
    let r = bounded("write", json!({ "path": path, "content": "x" }));
    assert_refused(&r, "write", &path, "a FIFO (named pipe)");
}

#[test]
fn edit_of_a_fifo_is_refused_without_blocking() {
    let (_d, path) = fifo();
    let r = bounded(
        "edit",
        json!({ "path": path, "oldString": "a", "newString": "b" }),
    );
    assert_refused(&r, "edit", &path, "a FIFO (named pipe)");
}

#[test]
fn apply_patch_update_of_a_fifo_is_refused_without_blocking() {
    let (_d, path) = fifo();
    let patch = format!("*** Begin Patch\n*** Update File: {path}\n-a\n+b\n*** End Patch");
    let r = bounded("apply_patch", json!({ "patchText": patch }));
    assert!(r.is_error);
    assert_eq!(
        r.output,
        format!("apply_patch: {path} is a FIFO (named pipe), not a regular file; only regular files are read or written")
    );
}

#[test]
fn a_symlink_to_a_fifo_is_refused_too() {
    let (d, path) = fifo();
    let link = d.path().join("link").to_string_lossy().into_owned();
    std::os::unix::fs::symlink(&path, &link).expect("symlink");
    let r = bounded("read", json!({ "path": link }));
    assert_refused(&r, "read", &link, "a FIFO (named pipe)");
}

#[test]
fn read_of_dev_zero_is_refused() {
    let r = bounded("read", json!({ "path": "/dev/zero" }));
    assert_refused(&r, "read", "/dev/zero", "a character device");
}

#[test]
fn write_to_dev_null_is_refused() {
    let r = bounded("write", json!({ "path": "/dev/null", "content": "x" }));
    assert_refused(&r, "write", "/dev/null", "a character device");
}

#[test]
fn read_of_a_file_past_the_cap_is_an_error_and_one_at_the_cap_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = dir.path().join("big.txt");
    // Sparse: no 64 MiB is written to the disk.
    let f = std::fs::File::create(&big).expect("create");
    f.set_len((64 << 20) + 1).expect("set_len");
    let path = big.to_string_lossy().into_owned();
    let r = bounded("read", json!({ "path": path }));
    assert!(r.is_error, "a file past 64 MiB must not be loaded");
    assert_eq!(
        r.output,
        format!("read: {path} is larger than 64 MiB, the most a file tool loads from one file")
    );

    f.set_len(64 << 20).expect("set_len");
    let r = bounded("read", json!({ "path": path, "limit": 1 }));
    assert!(!r.is_error, "{}", &r.output[..r.output.len().min(200)]);
}

#[test]
fn a_regular_file_is_still_overwritten_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("f.txt");
    std::fs::write(&p, "a much longer original text").expect("write");
    let path = p.to_string_lossy().into_owned();
    let r = bounded("write", json!({ "path": path, "content": "short" }));
    assert!(!r.is_error, "{}", r.output);
    assert_eq!(std::fs::read_to_string(&p).expect("read"), "short");
}

/// grep decides whether a file with hits is text in 64 KiB steps instead of
/// loading it whole: a character cut by a step boundary is still text, and
/// a bad byte far from the hit still disqualifies the file.
#[test]
fn grep_checks_text_in_steps_across_boundaries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_string_lossy().into_owned();
    let mut straddle = b"needle\n".to_vec();
    straddle.resize(65_535, b'x');
    straddle.extend_from_slice("é\n".as_bytes()); // bytes 65535 and 65536
    std::fs::write(dir.path().join("a-straddle.txt"), &straddle).expect("write");
    let mut late_bad = b"needle\n".to_vec();
    late_bad.resize(200_000, b'x');
    late_bad.push(0xff);
    std::fs::write(dir.path().join("b-late-bad.txt"), &late_bad).expect("write");
    let mut cut = b"needle\n".to_vec();
    cut.extend_from_slice(&"é".as_bytes()[..1]); // a sequence cut by the end
    std::fs::write(dir.path().join("c-cut.txt"), &cut).expect("write");
    let r = bounded("grep", json!({"pattern": "needle", "path": root}));
    assert_eq!(r.output, "a-straddle.txt:1:needle");
}
