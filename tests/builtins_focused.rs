//! What a caller of the builtins sees beyond the recorded vectors: the bash
//! process group dies with a timeout, pipes never deadlock, bad arguments
//! are clear errors that write nothing, and every tool runs concurrently.
//! Every path here is absolute: no test depends on the process cwd.

mod builtins_support;

use builtins_support::{snapshot, Canned, MockServer};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use toolnexus::builtin::{run, NAMES};
use toolnexus::tool::{ExecContext, ToolResult};

fn call(name: &str, args: Value) -> ToolResult {
    run(name, &args, &ExecContext::default())
}

fn root() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().canonicalize().expect("canonical");
    let s = path.to_string_lossy().into_owned();
    (dir, s)
}

/// "R (running)", "Z (zombie)", ... or None once the pid is gone.
fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state follows the parenthesised command name.
    stat.rsplit_once(") ")?.1.chars().next()
}

/// Waits (boundedly) for `pid` to stop running. A dead process may linger
/// as a zombie until its new parent (pid 1) reaps it; it no longer runs.
fn is_dead(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match process_state(pid) {
            None | Some('Z') | Some('X') => return true,
            Some(_) if Instant::now() > deadline => return false,
            Some(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn read_pid(path: &str) -> i32 {
    std::fs::read_to_string(path)
        .expect("pid file")
        .trim()
        .parse()
        .expect("a pid")
}

#[test]
fn bash_timeout_kills_the_whole_process_group() {
    let (_d, root) = root();
    let cmd = "echo $$ > shell.pid; sleep 30 & echo $! > child.pid; sleep 30";
    let r = call(
        "bash",
        // Long enough for a loaded machine to reach `sleep` and write both
        // pid files before the deadline.
        json!({"command": cmd, "timeout": 3000, "workdir": root}),
    );
    assert!(r.is_error);
    assert_eq!(r.output, "command timed out after 3000ms");
    let shell = read_pid(&format!("{root}/shell.pid"));
    let grandchild = read_pid(&format!("{root}/child.pid"));
    // The shell was our child: it is reaped, not even a zombie.
    assert_eq!(process_state(shell), None, "the shell is reaped");
    // The background sleep was the shell's child: killed with the group.
    assert!(is_dead(grandchild), "the grandchild still runs");
}

#[test]
fn bash_background_job_does_not_outlive_the_command() {
    let (_d, root) = root();
    let cmd = "sleep 30 >/dev/null 2>&1 & echo $! > child.pid; echo done";
    let r = call("bash", json!({"command": cmd, "workdir": root}));
    assert!(!r.is_error, "{}", r.output);
    assert_eq!(r.output, "done\n");
    assert!(is_dead(read_pid(&format!("{root}/child.pid"))), "no orphan");
}

/// When a call returns, nothing of its group runs any more: not "soon",
/// already (a server's stop counts on it). A background job with its own
/// output closes no pipe of ours as it dies, so only the group tells.
#[test]
fn bash_background_job_is_gone_when_the_call_returns() {
    let (_d, root) = root();
    for round in 0..10 {
        let cmd = "sleep 30 >/dev/null 2>&1 & echo $!";
        let r = call("bash", json!({"command": cmd, "workdir": root}));
        assert!(!r.is_error, "{}", r.output);
        let pid: i32 = r.output.trim().parse().expect("a pid");
        let state = process_state(pid);
        assert!(
            matches!(state, None | Some('Z') | Some('X')),
            "round {round}: the background job is still in state {state:?}"
        );
    }
}

#[test]
fn bash_host_timeout_applies_when_shorter() {
    let ctx = ExecContext {
        timeout_ms: Some(200),
        answer: None,
        ..Default::default()
    };
    let r = run("bash", &json!({"command": "sleep 10"}), &ctx);
    assert!(r.is_error);
    assert_eq!(r.output, "command timed out after 200ms");
}

#[test]
fn bash_large_output_on_both_pipes_does_not_deadlock() {
    // Each stream stays under the 1 MiB it keeps whole.
    let cmd = "head -c 900000 /dev/zero | tr '\\0' a; head -c 800000 /dev/zero | tr '\\0' b >&2; echo -n end";
    let r = call("bash", json!({"command": cmd}));
    assert!(!r.is_error);
    assert_eq!(r.output.len(), 1_700_003);
    assert!(r.output.starts_with("aaa"));
    assert!(r.output[..900_003].ends_with("end"), "stdout first");
    assert!(r.output.ends_with("bbb"), "then stderr");
}

/// The dropped-bytes line bash puts between the head and the tail it keeps.
fn dropped_marker(bytes: usize, stream: &str) -> String {
    format!(
        "\n[toolnexus: {bytes} bytes of {stream} dropped; bash keeps the first and the last 512 KiB of each stream]\n"
    )
}

#[test]
fn bash_keeps_the_head_and_the_tail_of_a_huge_output_and_says_what_it_dropped() {
    // 64 MiB of NULs, then a line to recognise the tail by; on stderr 3 MB
    // and an exit code. The command runs to its end: nothing blocks it.
    let cmd = "head -c 67108864 /dev/zero; echo tail-of-stdout; \
               head -c 3000000 /dev/zero | tr '\\0' e >&2; exit 4";
    let r = call("bash", json!({"command": cmd}));
    assert!(r.is_error);
    let half = 512 * 1024;
    let out_total = 67_108_864 + "tail-of-stdout\n".len();
    let want_head = "\0".repeat(half);
    let marker = dropped_marker(out_total - 2 * half, "stdout");
    assert!(
        r.output.starts_with(&(want_head + &marker)),
        "head, then the marker"
    );
    let rest = &r.output[half + marker.len()..];
    let (stdout_tail, stderr_part) = rest.split_at(half);
    assert!(
        stdout_tail.ends_with("\0tail-of-stdout\n"),
        "the tail is the end of stdout"
    );
    let err_marker = dropped_marker(3_000_000 - 2 * half, "stderr");
    assert_eq!(
        stderr_part,
        format!(
            "{}{err_marker}{}exit code 4",
            "e".repeat(half),
            "e".repeat(half)
        )
    );
}

#[test]
fn bash_output_of_an_endless_command_is_bounded_until_its_timeout() {
    // `cat /dev/zero` never ends: its timeout does, with bounded output.
    let r = call("bash", json!({"command": "cat /dev/zero", "timeout": 1500}));
    assert!(r.is_error);
    assert!(
        r.output.ends_with("command timed out after 1500ms"),
        "{}",
        &r.output[r.output.len() - 80..]
    );
    assert!(
        r.output.len() < 1024 * 1024 + 200,
        "kept {} bytes",
        r.output.len()
    );
    assert!(r.output.contains(" bytes of stdout dropped; "));
}

/// Follows upstream 0.21 test_host_boundary.py `orphan_command`: the
/// grandchild writes the marker, `sleep 0.2` keeps the shell from exec-ing
/// the single command away.
fn orphan_command(marker: &str) -> String {
    format!("sleep 0.2; sh -c 'sleep 1; touch {marker}'")
}

#[test]
fn bash_timeout_kills_the_whole_job_and_its_control_writes_the_marker() {
    // Follows test_timeout_kills_the_whole_job and
    // test_control_the_probe_command_can_write_the_marker.
    let (_d, root) = root();
    let killed = format!("{root}/orphan.marker");
    let r = call(
        "bash",
        json!({"command": orphan_command(&killed), "timeout": 300}),
    );
    assert!(r.is_error);
    assert_eq!(r.output, "command timed out after 300ms");
    let control = format!("{root}/control.marker");
    let r = call(
        "bash",
        json!({"command": orphan_command(&control), "timeout": 20000}),
    );
    assert!(!r.is_error, "{}", r.output);
    assert!(
        Path::new(&control).exists(),
        "the probe command cannot write its marker"
    );
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !Path::new(&killed).exists(),
        "the grandchild outlived the kill"
    );
}

#[test]
fn bash_timeout_asks_with_sigterm_first() {
    // ADR 0034: a job that cleans up on SIGTERM gets to do so.
    let (_d, root) = root();
    let cmd = "trap 'echo cleaned > cleaned.txt; exit 0' TERM; sleep 30 & wait";
    let r = call(
        "bash",
        json!({"command": cmd, "timeout": 500, "workdir": root}),
    );
    assert!(r.is_error);
    assert_eq!(r.output, "command timed out after 500ms");
    let cleaned = std::fs::read_to_string(format!("{root}/cleaned.txt"));
    assert_eq!(
        cleaned.ok().as_deref(),
        Some("cleaned\n"),
        "the job saw SIGTERM"
    );
}

#[test]
fn bash_timeout_insists_with_sigkill_after_the_grace() {
    // A job that ignores SIGTERM (its children inherit that) is killed once
    // the 2,000 ms grace is over; the call returns with it dead.
    let (_d, root) = root();
    let cmd = "trap '' TERM; echo $$ > shell.pid; sleep 30 & echo $! > child.pid; wait";
    let r = call(
        "bash",
        json!({"command": cmd, "timeout": 500, "workdir": root}),
    );
    assert!(r.is_error);
    assert_eq!(r.output, "command timed out after 500ms");
    assert_eq!(process_state(read_pid(&format!("{root}/shell.pid"))), None);
    assert!(
        is_dead(read_pid(&format!("{root}/child.pid"))),
        "the child still runs"
    );
}

fn toolkit(config: Value) -> toolnexus::toolkit::Toolkit {
    toolnexus::toolkit::Toolkit::build_from_json(&config.to_string())
        .unwrap_or_else(|e| panic!("build {config}: {e}"))
}

#[test]
fn builtins_shell_is_used_verbatim() {
    // Follows test_host_supplied_shell_is_used_verbatim; python3 proves the
    // prefix, not sh, ran the command.
    let tk = toolkit(json!({"builtins": {"shell": ["/bin/sh", "-c"]}}));
    let r = tk.execute(
        "bash",
        json!({"command": "echo verbatim"}),
        &ExecContext::default(),
    );
    assert_eq!((r.output.as_str(), r.is_error), ("verbatim\n", false));
    let tk = toolkit(json!({"builtins": {"shell": ["python3", "-c"]}}));
    let r = tk.execute(
        "bash",
        json!({"command": "print(6 * 7)"}),
        &ExecContext::default(),
    );
    assert_eq!((r.output.as_str(), r.is_error), ("42\n", false));
    let tk = toolkit(json!({"builtins": {"shell": ["/no/such/shell", "-c"]}}));
    let r = tk.execute("bash", json!({"command": "true"}), &ExecContext::default());
    assert!(r.is_error);
    assert!(
        r.output.starts_with("bash: cannot start /no/such/shell: "),
        "{}",
        r.output
    );
}

#[test]
fn builtins_shell_is_detected_and_bash_can_be_disabled() {
    // Follows test_builtin_shell_reports_detection_and_bash_can_be_disabled
    // (the no-shell-found error is a unit test of builtin::bash).
    let tk = toolkit(json!({}));
    let r = tk.execute(
        "bash",
        json!({"command": "echo detected"}),
        &ExecContext::default(),
    );
    assert_eq!((r.output.as_str(), r.is_error), ("detected\n", false));
    let tk = toolkit(json!({"builtins": {"tools": {"bash": false}}}));
    assert!(!tk.tool_names().contains(&"bash".to_string()));
    let e = toolnexus::toolkit::Toolkit::build_from_json(r#"{"builtins":{"shell":"sh"}}"#)
        .err()
        .map(|e| e.message)
        .unwrap_or_default();
    assert!(
        e.starts_with("builtins.shell: expected an array of strings"),
        "{e}"
    );
}

#[test]
fn bash_reports_a_missing_workdir_and_a_signal_death() {
    let r = call(
        "bash",
        json!({"command": "true", "workdir": "/no/such/dir"}),
    );
    assert!(r.is_error);
    assert!(r.output.contains("workdir") && r.output.contains("/no/such/dir"));

    let r = call("bash", json!({"command": "kill -9 $$"}));
    assert!(r.is_error);
    assert_eq!(r.output, "exit code 137");
}

#[test]
fn wrong_argument_types_name_the_field_and_the_type() {
    let cases = [
        (
            "read",
            json!({"path": "/x", "offset": "2"}),
            "read: offset must be a number, got a string",
        ),
        (
            "read",
            json!({"path": "/x", "limit": [1]}),
            "read: limit must be a number, got an array",
        ),
        (
            "bash",
            json!({"command": "echo x", "timeout": "1000"}),
            "bash: timeout must be a number, got a string",
        ),
        (
            "glob",
            json!({"pattern": "*", "limit": "2"}),
            "glob: limit must be a number, got a string",
        ),
        (
            "grep",
            json!({"pattern": "x", "limit": true}),
            "grep: limit must be a number, got a boolean",
        ),
        (
            "webfetch",
            json!({"url": "http://127.0.0.1:9/", "timeout": {}}),
            "webfetch: timeout must be a number, got an object",
        ),
        (
            "todowrite",
            json!({"todos": 5}),
            "todowrite: todos must be an array, got a number",
        ),
        (
            "question",
            json!({"questions": {"q": 1}}),
            "question: questions must be an array, got an object",
        ),
    ];
    for (tool, args, want) in cases {
        let r = call(tool, args);
        assert!(r.is_error, "{tool}");
        assert_eq!(r.output, want);
    }
}

#[test]
fn args_that_are_not_an_object_write_nothing_and_never_panic() {
    let (_d, root) = root();
    for args in [
        json!([1, 2]),
        json!(null),
        json!("text"),
        json!(7),
        json!(true),
    ] {
        for name in NAMES {
            if name == "bash" || name == "webfetch" || name == "grep" || name == "glob" {
                continue; // these default to the cwd or need a URL; covered below
            }
            let _ = run(name, &args, &ExecContext::default());
        }
    }
    // bash with no command runs nothing; webfetch without url is an error.
    assert!(!call("bash", json!([1])).is_error);
    let r = call("webfetch", json!([1]));
    assert!(r.is_error);
    assert_eq!(r.output, "webfetch: url is required (a string)");
    let r = call("write", json!({"content": "x"}));
    assert!(r.is_error);
    assert!(r.output.contains("path"));
    assert!(snapshot(Path::new(&root)).is_empty());
}

#[test]
fn read_refuses_non_utf8_and_directories_by_name() {
    let (_d, root) = root();
    let bad = format!("{root}/latin1.txt");
    std::fs::write(&bad, b"caf\xe9\n").expect("write");
    let r = call("read", json!({"path": bad}));
    assert!(r.is_error);
    assert_eq!(r.output, format!("read: {bad} is not valid UTF-8 text"));
    let r = call("read", json!({"path": root}));
    assert!(r.is_error);
    assert!(r.output.contains(&root) && r.output.contains("directory"));
}

#[test]
fn grep_skips_binary_and_non_utf8_files() {
    let (_d, root) = root();
    std::fs::write(format!("{root}/bin.dat"), b"needle\0\x01\x02").expect("write");
    std::fs::write(format!("{root}/latin1.txt"), b"needle caf\xe9\n").expect("write");
    std::fs::write(format!("{root}/late-nul.txt"), {
        let mut v = b"needle\n".to_vec();
        v.extend(std::iter::repeat_n(b'x', 200_000));
        v.push(0);
        v
    })
    .expect("write");
    std::fs::write(format!("{root}/text.txt"), "a\nneedle\n").expect("write");
    let r = call("grep", json!({"pattern": "needle", "path": root}));
    assert!(!r.is_error);
    assert_eq!(r.output, "text.txt:2:needle");
}

#[test]
fn grep_orders_by_code_point_path_then_line_and_caps() {
    let (_d, root) = root();
    for (rel, body) in [
        ("a/x.txt", "hit 1\nmiss\nhit 3\n"),
        ("a-b/x.txt", "hit\n"),
        ("B.txt", "hit\n"),
        ("é.txt", "hit\n"),
        ("a/y.txt", "hit\r\nhit\r\n"),
    ] {
        let p = Path::new(&root).join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, body).expect("write");
    }
    let r = call("grep", json!({"pattern": "^hit", "path": root}));
    let want = [
        "B.txt:1:hit",
        "a-b/x.txt:1:hit",
        "a/x.txt:1:hit 1",
        "a/x.txt:3:hit 3",
        "a/y.txt:1:hit",
        "a/y.txt:2:hit",
        "é.txt:1:hit",
    ]
    .join("\n");
    assert_eq!(r.output, want);
    let r = call("grep", json!({"pattern": "hit$", "path": root, "limit": 2}));
    assert_eq!(r.output, "B.txt:1:hit\na-b/x.txt:1:hit");
}

#[test]
fn grep_and_glob_report_bad_patterns_and_paths() {
    let (_d, root) = root();
    let r = call("grep", json!({"pattern": "(", "path": root}));
    assert!(r.is_error);
    assert!(
        r.output.starts_with("grep: invalid regex \"(\""),
        "{}",
        r.output
    );
    let r = call("glob", json!({"pattern": "[a", "path": root}));
    assert!(r.is_error);
    assert!(r.output.contains("[a"), "{}", r.output);
    let r = call(
        "glob",
        json!({"pattern": "*", "path": format!("{root}/missing")}),
    );
    assert!(r.is_error);
    assert!(r.output.contains(&format!("{root}/missing")));
}

#[test]
fn question_ids_are_unique_and_a_declined_answer_asks_again() {
    let args = json!({"questions": [{"question": "Proceed?"}]});
    let a = call("question", args.clone());
    let b = call("question", args.clone());
    let id = |r: &ToolResult| r.metadata.as_ref().expect("metadata")["pending"]["id"].clone();
    assert!(id(&a).is_string());
    assert_ne!(id(&a), id(&b));
    let ctx = ExecContext {
        timeout_ms: None,
        answer: Some(json!({"id": id(&a), "ok": false, "reason": "declined"})),
        ..Default::default()
    };
    let again = run("question", &args, &ctx);
    assert!(again.is_error);
    assert_eq!(again.output, "Waiting for a response.");
    assert_eq!(
        again.metadata.expect("metadata")["pending"]["prompt"],
        "Proceed?"
    );
}

#[test]
fn webfetch_text_format_and_timeout() {
    let server = MockServer::start(vec![
        Canned::new(200, "<p>a  <b>b</b>\t c</p>\n"),
        Canned::new(200, "late").delay_ms(3000),
    ]);
    let r = call(
        "webfetch",
        json!({"url": format!("{}/t", server.base), "format": "text"}),
    );
    assert_eq!(r.output, "a b c");
    let r = call(
        "webfetch",
        json!({"url": format!("{}/slow", server.base), "timeout": 1}),
    );
    assert!(r.is_error);
    assert_eq!(r.output, "webfetch: transport failure: timeout");
    let r = call("webfetch", json!({"url": "not a url"}));
    assert!(r.is_error);
    assert!(r.output.contains("not a url"), "{}", r.output);
}

#[test]
fn apply_patch_validates_every_file_before_writing_any() {
    let (_d, root) = root();
    let keep = format!("{root}/keep.txt");
    std::fs::write(&keep, "one\ntwo\n").expect("write");
    let patch = format!(
        "*** Begin Patch\n*** Update File: {keep}\n-one\n+ONE\n*** Add File: {keep}\n+dup\n*** End Patch"
    );
    let r = call("apply_patch", json!({"patchText": patch}));
    assert!(r.is_error);
    assert_eq!(
        r.output,
        format!("apply_patch: Add File target already exists: {keep}")
    );
    assert_eq!(std::fs::read_to_string(&keep).expect("read"), "one\ntwo\n");

    let moved = format!("*** Begin Patch\n*** Update File: {keep}\n*** Move to: {root}/b.txt\n-one\n+1\n*** End Patch");
    let r = call("apply_patch", json!({"patchText": moved}));
    assert!(r.is_error);
    assert!(r.output.contains("Move to"), "{}", r.output);
    assert_eq!(snapshot(Path::new(&root)).len(), 1);
}

#[test]
fn every_builtin_runs_concurrently() {
    let (_d, root) = root();
    let server = MockServer::start(
        (0..16)
            .map(|i| Canned::new(200, &format!("page {i}")))
            .collect(),
    );
    std::thread::scope(|s| {
        for i in 0..16 {
            let (root, base) = (root.clone(), server.base.clone());
            s.spawn(move || {
                let dir = format!("{root}/t{i}");
                let f = format!("{dir}/f.txt");
                let w = call("write", json!({"path": f, "content": format!("id {i}\nneedle {i}\n")}));
                assert_eq!(w.output, format!("Wrote {} bytes to {f}", 12 + 2 * i.to_string().len()));
                let e = call("edit", json!({"path": f, "oldString": "id", "newString": "ID"}));
                assert!(!e.is_error, "{}", e.output);
                let r = call("read", json!({"path": f, "offset": 1, "limit": 1}));
                assert_eq!(r.output, format!("ID {i}"));
                let g = call("grep", json!({"pattern": "needle", "path": dir}));
                assert_eq!(g.output, format!("f.txt:2:needle {i}"));
                let gl = call("glob", json!({"pattern": "**/*.txt", "path": dir}));
                assert_eq!(gl.output, "f.txt");
                let b = call("bash", json!({"command": "cat f.txt | wc -l", "workdir": dir}));
                assert_eq!(b.output.trim(), "2");
                let p = call("apply_patch", json!({"patchText": format!(
                    "*** Begin Patch\n*** Update File: {f}\n-needle {i}\n+pin {i}\n*** End Patch")}));
                assert!(!p.is_error, "{}", p.output);
                let t = call("todowrite", json!({"todos": [{"id": "1", "text": "x", "completed": true}]}));
                assert_eq!(t.output, "- [x] x");
                let q = call("question", json!({"questions": [{"question": "q"}]}));
                assert!(q.metadata.is_some());
                let wf = call("webfetch", json!({"url": format!("{base}/p{i}"), "format": "html"}));
                assert!(wf.output.starts_with("page "), "{}", wf.output);
                assert_eq!(std::fs::read_to_string(&f).expect("read"), format!("ID {i}\npin {i}\n"));
            });
        }
    });
}

/// Random, deterministic inputs assembled from the grammar's own pieces:
/// whatever they are, every call returns a result (no panic) and nothing
/// lands outside the scratch directory.
#[test]
fn malformed_inputs_never_panic() {
    let (_d, root) = root();
    let fragments = [
        "*** Begin Patch",
        "*** End Patch",
        "*** Add File: a.txt",
        "*** Update File: a.txt",
        "*** Delete File: a.txt",
        "*** Add File: ",
        "*** Move to: b.txt",
        "*** End of File",
        "@@",
        "@@ x",
        "+x",
        "-x",
        " x",
        "",
        "+",
        "-",
        "é",
        "😀😀",
        "\r",
    ];
    let mut rng = fastrand::Rng::with_seed(20261129);
    std::fs::write(format!("{root}/a.txt"), "x\ny\nx\n").expect("write");
    for _ in 0..400 {
        let n = rng.usize(0..8);
        let lines: Vec<String> = (0..n)
            .map(|_| {
                let f = fragments[rng.usize(0..fragments.len())];
                f.replace("a.txt", &format!("{root}/a.txt"))
                    .replace("b.txt", &format!("{root}/b.txt"))
            })
            .collect();
        let patch = lines.join(if rng.bool() { "\n" } else { "\r\n" });
        let _ = call("apply_patch", json!({"patchText": patch}));
        let num = |rng: &mut fastrand::Rng| match rng.usize(0..5) {
            0 => json!(rng.i64(-5..10)),
            1 => json!(rng.f64() * 10.0 - 3.0),
            2 => json!(i64::MAX),
            3 => json!(-1e300),
            _ => Value::Null,
        };
        let _ = call(
            "read",
            json!({"path": format!("{root}/a.txt"), "offset": num(&mut rng), "limit": num(&mut rng)}),
        );
        let old = fragments[rng.usize(0..fragments.len())];
        let _ = call(
            "edit",
            json!({"path": format!("{root}/a.txt"), "oldString": old, "newString": "x", "replaceAll": rng.bool()}),
        );
        let pat = fragments[rng.usize(0..fragments.len())];
        let _ = call(
            "grep",
            json!({"pattern": pat, "path": root, "include": pat, "limit": num(&mut rng)}),
        );
        let _ = call(
            "glob",
            json!({"pattern": pat, "path": root, "limit": num(&mut rng)}),
        );
    }
    for (rel, _) in snapshot(Path::new(&root)) {
        assert!(rel == "a.txt" || rel == "b.txt", "unexpected file {rel}");
    }
}

/// Issue 25 L9: a path of megabytes is refused with its length and its
/// first bytes, never echoed whole in the error.
#[test]
fn a_huge_path_is_refused_without_echoing_it_whole() {
    let huge = "a".repeat(50 << 20);
    let cases = [
        ("read", json!({"path": huge})),
        ("write", json!({"path": huge, "content": "x"})),
        (
            "edit",
            json!({"path": huge, "oldString": "a", "newString": "b"}),
        ),
        ("grep", json!({"pattern": "x", "path": huge})),
        ("glob", json!({"pattern": "*", "path": huge})),
        ("bash", json!({"command": "true", "workdir": huge})),
    ];
    for (name, args) in cases {
        let r = call(name, args);
        assert!(r.is_error, "{name}");
        assert!(r.output.len() < 1024, "{name}: {} bytes", r.output.len());
        assert!(
            r.output
                .contains("is too long (52428800 bytes, at most 4096)")
                && r.output.ends_with("… [52428600 more bytes]"),
            "{name}: {}",
            r.output
        );
    }
}
