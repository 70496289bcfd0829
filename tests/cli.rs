//! The `toolnexus` command: `tools`, `call`, flags and exit codes, as a
//! user at a terminal sees them.

mod mcp_support;
#[path = "translate_mock/mod.rs"]
mod translate_mock;

use mcp_support::*;
use serde_json::{json, Value};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_toolnexus");
const SKILLS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run toolnexus: {e}"))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn config_file(dir: &std::path::Path, v: &Value) -> String {
    let p = dir.join("mcp.json");
    std::fs::write(&p, v.to_string()).unwrap_or_else(|e| panic!("{e}"));
    p.to_string_lossy().into_owned()
}

#[test]
fn tools_lists_every_source_in_each_format_and_reports_status() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let cfg = config_file(
        dir.path(),
        &json!({"mcpServers": {
            "py": {"command": [python(), server_script("sdk_server.py"), "stdio"], "timeout": 20000},
            "dead": {"command": ["/nonexistent/server"], "timeout": 2000}
        }}),
    );
    let names = run(&[
        "tools", "--config", &cfg, "--skills", SKILLS, "--format", "names",
    ]);
    assert!(names.status.success(), "{}", stderr(&names));
    let listed: Vec<String> = stdout(&names).lines().map(String::from).collect();
    for n in ["bash", "py_add", "py_echo", "py_explode", "skill", "write"] {
        assert!(listed.iter().any(|l| l == n), "{n} missing: {listed:?}");
    }
    let err = stderr(&names);
    assert!(err.contains("source builtin: connected"), "{err}");
    assert!(err.contains("source py: connected"), "{err}");
    assert!(
        err.contains("source dead: failed: mcp server \"dead\" failed at connect"),
        "{err}"
    );

    let openai = run(&["tools", "--skills", SKILLS, "--format", "openai"]);
    let decls: Value = serde_json::from_str(&stdout(&openai)).unwrap_or_default();
    let first = &decls[0];
    assert_eq!(first["type"], json!("function"), "{decls}");
    assert!(first["function"]["parameters"].is_object(), "{first}");
    let anthropic = run(&[
        "tools",
        "--no-builtins",
        "--skills",
        SKILLS,
        "--format",
        "anthropic",
    ]);
    let decls: Value = serde_json::from_str(&stdout(&anthropic)).unwrap_or_default();
    assert_eq!(
        decls.as_array().map(Vec::len),
        Some(1),
        "only the skill tool: {decls}"
    );
    assert_eq!(decls[0]["name"], json!("skill"));
    assert!(decls[0]["input_schema"].is_object());
    let gemini = run(&["tools", "--no-builtins", "--format", "gemini"]);
    let decls: Value = serde_json::from_str(&stdout(&gemini)).unwrap_or_default();
    assert_eq!(decls, json!([{"functionDeclarations": []}]));

    let table = run(&["tools", "--skills", SKILLS]);
    let text = stdout(&table);
    assert!(text.starts_with("NAME"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("skill") && l.contains(" skill ")),
        "{text}"
    );
}

#[test]
fn call_prints_the_tool_result_and_the_exit_code_says_how_it_went() {
    let ok = run(&["call", "bash", r#"{"command":"echo hi"}"#]);
    assert_eq!(ok.status.code(), Some(0));
    let r: Value = serde_json::from_str(&stdout(&ok)).unwrap_or_default();
    assert_eq!(r, json!({"output": "hi\n", "isError": false}));

    let failed = run(&["call", "bash", r#"{"command":"exit 4"}"#]);
    assert_eq!(failed.status.code(), Some(1));
    let r: Value = serde_json::from_str(&stdout(&failed)).unwrap_or_default();
    assert_eq!(r, json!({"output": "exit code 4", "isError": true}));

    let skill = run(&[
        "call",
        "skill",
        r#"{"name":"hello-world"}"#,
        "--skills",
        SKILLS,
    ]);
    assert_eq!(skill.status.code(), Some(0), "{}", stderr(&skill));
    assert!(stdout(&skill).contains("hello-world"));

    let unknown = run(&["call", "nope"]);
    assert_eq!(unknown.status.code(), Some(3));
    assert!(stdout(&unknown).is_empty());
    assert!(
        stderr(&unknown).contains("unknown tool 'nope'"),
        "{}",
        stderr(&unknown)
    );

    let bad_args = run(&["call", "bash", "{not json"]);
    assert_eq!(bad_args.status.code(), Some(3));
    assert!(
        stderr(&bad_args).contains("ARGS_JSON"),
        "{}",
        stderr(&bad_args)
    );
}

/// An MCP server's question in the middle of `call` (elicitation, on the
/// official Python SDK): `--elicit decline` declines it, and the server's
/// tool says so; `--elicit none` does not offer elicitation, so the
/// server's question is refused. (The terminal's own answers:
/// `src/bin/toolnexus/elicit.rs`'s tests.)
#[test]
fn call_answers_an_mcp_servers_question_as_elicit_says() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let cfg = config_file(
        dir.path(),
        &json!({"mcpServers": {
            "el": {"command": [python(), server_script("sdk_elicit_server.py"), "stdio"], "timeout": 20000}
        }}),
    );
    let output = |mode: &str| {
        let o = run(&[
            "call",
            "el_ask_name",
            "--config",
            &cfg,
            "--no-builtins",
            "--elicit",
            mode,
        ]);
        assert_eq!(o.status.code(), Some(0), "{mode}: {}", stderr(&o));
        let r: Value = serde_json::from_str(&stdout(&o)).unwrap_or_default();
        let text = r["output"].as_str().unwrap_or_default().to_string();
        // The SDK's tool answers its text as `{"result": ...}` too.
        match serde_json::from_str::<Value>(&text) {
            Ok(v) if v["result"].is_string() => {
                v["result"].as_str().unwrap_or_default().to_string()
            }
            _ => text,
        }
    };
    assert_eq!(output("decline"), "decline");
    let refused = output("none");
    assert!(refused.starts_with("refused:"), "{refused}");
    let caps = run(&[
        "call",
        "el_client_caps",
        "--config",
        &cfg,
        "--no-builtins",
        "--elicit",
        "decline",
    ]);
    assert!(stdout(&caps).contains("form"), "{}", stdout(&caps));
}

#[test]
fn bad_flags_and_files_are_named_on_stderr_with_their_own_exit_codes() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let missing = dir.path().join("absent.json");
    let missing = missing.to_string_lossy();
    let o = run(&["tools", "--config", &missing]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains(&format!("--config {missing}")),
        "{}",
        stderr(&o)
    );

    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"mcpServers\": ").unwrap_or_else(|e| panic!("{e}"));
    let o = run(&["tools", "--config", &broken.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("not valid JSON"), "{}", stderr(&o));

    let profile = config_file(dir.path(), &json!({"mcpServer": {"tools": "bash"}}));
    let o = run(&["serve", "--stdio", "--config", &profile]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("mcpServer.tools"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());

    let o = run(&["tools", "--skills", "/no/such/skills"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("--skills /no/such/skills"),
        "{}",
        stderr(&o)
    );

    let o = run(&["serve", "--http", "not-an-address"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("--http not-an-address"),
        "{}",
        stderr(&o)
    );

    let o = run(&["tools", "--frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--frobnicate"), "{}", stderr(&o));
    let o = run(&["serve", "--stdio", "--http", "127.0.0.1:0"]);
    assert_eq!(o.status.code(), Some(2));

    let v = run(&["--version"]);
    assert_eq!(
        stdout(&v).trim(),
        format!("toolnexus {}", env!("CARGO_PKG_VERSION"))
    );
    let h = run(&["serve", "--help"]);
    assert!(stdout(&h).contains("--stdio") && stdout(&h).contains("--http"));
}

fn openai_reply(message: Value) -> translate_mock::Canned {
    translate_mock::Canned::json(
        200,
        &json!({"id": "c", "model": "m", "choices": [{"index": 0, "message": message,
                "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}),
    )
}

#[test]
fn run_once_drives_the_client_loop_over_the_toolkit() {
    let mock = translate_mock::MockProvider::start(vec![
        openai_reply(
            json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "t1", "type": "function",
            "function": {"name": "bash", "arguments": "{\"command\":\"echo from-the-tool\"}"}}]}),
        ),
        openai_reply(json!({"role": "assistant", "content": "the tool said hi"})),
    ]);
    let base = format!("{}/v1", mock.base());
    let o = Command::new(BIN)
        .args([
            "run",
            "--base-url",
            &base,
            "--style",
            "openai",
            "--model",
            "m1",
            "--system",
            "Be brief.",
            "--skills",
            SKILLS,
            "--once",
            "say hi",
        ])
        .env("OPENAI_API_KEY", "sk-from-env")
        .env_remove("OPENROUTER_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "the tool said hi\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-from-env"));
    let first = reqs[0].json_body();
    assert_eq!(first["model"], json!("m1"));
    let system = first["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(system.starts_with("Be brief."), "{system}");
    assert!(
        system.contains("hello-world"),
        "the skills catalog follows: {system}"
    );
    // The tool ran: its output went back to the model.
    let second = reqs[1].json_body();
    let fed = second["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned();
    assert_eq!(fed.as_ref().map(|m| m["role"].clone()), Some(json!("tool")));
    assert_eq!(
        fed.map(|m| m["content"].clone()),
        Some(json!("from-the-tool\n"))
    );
}

#[test]
fn run_reads_prompts_until_exit_and_a_failed_prompt_does_not_end_it() {
    use std::io::Write;
    let mock = translate_mock::MockProvider::start(vec![
        openai_reply(json!({"role": "assistant", "content": "one"})),
        translate_mock::Canned::json(400, &json!({"error": {"message": "bad request"}})),
        openai_reply(json!({"role": "assistant", "content": "three"})),
    ]);
    let base = format!("{}/v1", mock.base());
    let mut child = Command::new(BIN)
        .args([
            "run",
            "--no-builtins",
            "--base-url",
            &base,
            "--model",
            "m",
            "--api-key",
            "k",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"first\nsecond\n\nthird\nexit\nnever sent\n");
    }
    let o = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "one\nthree\n");
    assert!(stderr(&o).contains("toolnexus: "), "{}", stderr(&o));
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "exit stopped the session");
    // The conversation goes on: the third prompt carries the first exchange.
    let third = reqs[2].json_body();
    let contents: Vec<Value> = third["messages"]
        .as_array()
        .map(|m| m.iter().map(|x| x["content"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(contents, vec![json!("first"), json!("one"), json!("third")]);
    assert_eq!(reqs[0].header("authorization"), Some("Bearer k"));

    let o = run(&[
        "run",
        "--model",
        "m",
        "--base-url",
        "not a url",
        "--once",
        "x",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("--base-url"), "{}", stderr(&o));
    let o = run(&["run", "--model", "m"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `toolnexus ARGS` with stdin closed, killed (and the test failed) if it
/// has not exited within `limit`: the cases below once blocked or read
/// without end.
fn run_within(args: &[&str], limit: std::time::Duration) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run toolnexus: {e}"));
    let start = std::time::Instant::now();
    while child.try_wait().ok().flatten().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("toolnexus {args:?} still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_config_that_is_no_regular_file_or_too_large_is_refused_without_reading_it() {
    let limit = std::time::Duration::from_secs(20);
    let o = run_within(&["tools", "--config", "/dev/zero"], limit);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--config /dev/zero: not a regular file (a character device)"),
        "{}",
        stderr(&o)
    );

    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fifo = dir.path().join("config.fifo");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap_or_else(|e| panic!("mkfifo: {e}"));
    assert!(made.success());
    let fifo = fifo.to_string_lossy();
    let o = run_within(&["tools", "--config", &fifo], limit);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not a regular file (a FIFO)"),
        "{}",
        stderr(&o)
    );

    let o = run_within(&["tools", "--config", &dir.path().to_string_lossy()], limit);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not a regular file (a directory)"),
        "{}",
        stderr(&o)
    );

    // 17 MiB of JSON whitespace before the object: valid JSON, too large.
    let big = dir.path().join("big.json");
    let mut text = vec![b' '; 17 << 20];
    text.extend_from_slice(b"{}");
    std::fs::write(&big, text).unwrap_or_else(|e| panic!("{e}"));
    let o = run_within(&["tools", "--config", &big.to_string_lossy()], limit);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("larger than 16 MiB"), "{}", stderr(&o));

    let file = dir.path().join("SKILL.md");
    std::fs::write(&file, "---\nname: x\n---\n").unwrap_or_else(|e| panic!("{e}"));
    let file = file.to_string_lossy();
    let o = run_within(&["tools", "--skills", &file], limit);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("--skills {file}: not a directory")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_stops_at_its_timeout_when_the_provider_says_retry_after_a_billion_seconds() {
    let mock = translate_mock::MockProvider::start(vec![translate_mock::Canned::json(
        429,
        &json!({"error": {"message": "slow down"}}),
    )
    .header("retry-after", "1000000000")
    .repeating()]);
    let base = format!("{}/v1", mock.base());
    let o = run_within(
        &[
            "run",
            "--no-builtins",
            "--base-url",
            &base,
            "--model",
            "m",
            "--api-key",
            "k",
            "--timeout-ms",
            "500",
            "--once",
            "hi",
        ],
        std::time::Duration::from_secs(30),
    );
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("timeoutMs"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
}

#[test]
fn completions_and_man_pages_cover_every_subcommand() {
    let subcommands = [
        "tools",
        "call",
        "serve",
        "run",
        "count-tokens",
        "agents",
        "completions",
        "man",
    ];
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for (shell, head, flag) in [
        ("bash", "_toolnexus()", "--skills"),
        ("zsh", "#compdef toolnexus", "--skills"),
        ("fish", "complete -c toolnexus", "-l skills"),
    ] {
        let o = run(&["completions", shell]);
        assert!(o.status.success(), "completions {shell}: {}", stderr(&o));
        let script = stdout(&o);
        assert!(script.contains(head), "completions {shell}: {script}");
        for sub in subcommands {
            assert!(script.contains(sub), "completions {shell} lacks {sub}");
        }
        assert!(script.contains(flag), "completions {shell} lacks {flag}");
        if shell == "bash" {
            // The script parses as bash.
            let file = dir.path().join("toolnexus.bash");
            std::fs::write(&file, &script).unwrap_or_else(|e| panic!("{e}"));
            let parsed = Command::new("bash")
                .arg("-n")
                .arg(&file)
                .output()
                .unwrap_or_else(|e| panic!("bash: {e}"));
            assert!(parsed.status.success(), "bash -n: {}", stderr(&parsed));
        }
    }
    let o = run(&["completions", "tcsh"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "an unknown shell is a bad command line"
    );

    let o = run(&["man"]);
    assert!(o.status.success(), "man: {}", stderr(&o));
    let page = stdout(&o);
    assert!(page.contains(".TH toolnexus 1"), "{page}");
    for sub in subcommands {
        assert!(
            page.contains(&format!("toolnexus\\-{}", sub.replace('-', "\\-"))),
            "the man page lacks {sub}: {page}"
        );
    }

    let pages = dir.path().join("man1");
    let o = run(&["man", "--out-dir", &pages.to_string_lossy()]);
    assert!(o.status.success(), "man --out-dir: {}", stderr(&o));
    assert_eq!(stdout(&o), "", "man --out-dir writes files only");
    for name in ["toolnexus.1"]
        .into_iter()
        .map(String::from)
        .chain(subcommands.iter().map(|s| format!("toolnexus-{s}.1")))
    {
        let text =
            std::fs::read_to_string(pages.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            text.starts_with(".ie \\n(.g .ds Aq"),
            "{name} is roff: {text}"
        );
    }
    let page =
        std::fs::read_to_string(pages.join("toolnexus-call.1")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        page.contains("timeout\\-ms"),
        "toolnexus-call.1 lists call's flags: {page}"
    );
}

/// An agents config file whose client is the mock provider.
fn agents_config(dir: &std::path::Path, base: &str) -> String {
    let p = dir.join("agents.json");
    let v = json!({
        "client": {"baseUrl": base, "style": "openai", "model": "m1", "retries": 0},
        "agents": {
            "coordinator": {"does": "splits work", "soul": "You coordinate.", "team": ["explore"]},
            "explore": {"does": "read-only research", "soul": "You explore."}
        }
    });
    std::fs::write(&p, v.to_string()).unwrap_or_else(|e| panic!("{e}"));
    p.to_string_lossy().into_owned()
}

/// The mock's answers for one coordinator run: the coordinator delegates
/// through `task`, the explorer answers, the coordinator sums up.
fn coordinator_run() -> Vec<translate_mock::Canned> {
    vec![
        openai_reply(
            json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "t1", "type": "function",
            "function": {"name": "task", "arguments": "{\"agent\":\"explore\",\"prompt\":\"find A\"}"}}]}),
        ),
        openai_reply(json!({"role": "assistant", "content": "found A"})),
        openai_reply(json!({"role": "assistant", "content": "summary: found A"})),
    ]
}

#[test]
fn agents_run_drives_a_tree_over_the_provider_and_prints_its_answer() {
    let mut canned = coordinator_run();
    canned.extend(coordinator_run());
    let mock = translate_mock::MockProvider::start(canned);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let cfg = agents_config(dir.path(), &format!("{}/v1", mock.base()));
    let agents_run = |extra: &[&str]| {
        let mut args = vec![
            "agents",
            "run",
            "--config",
            &cfg,
            "--agent",
            "coordinator",
            "--prompt",
            "survey A",
            "--no-builtins",
        ];
        args.extend_from_slice(extra);
        Command::new(BIN)
            .args(&args)
            .env("OPENAI_API_KEY", "sk-from-env")
            .env_remove("OPENROUTER_API_KEY")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let o = agents_run(&["--trace"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "summary: found A\n");
    let err = stderr(&o);
    assert!(
        err.contains("root/coordinator.1: idle→running (wake)"),
        "{err}"
    );
    assert!(err.contains("root/coordinator.1/explore.1"), "{err}");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-from-env"));
    // Each agent's soul leads its own conversation; the explorer got the task.
    let soul = |i: usize| reqs[i].json_body()["messages"][0]["content"].clone();
    assert!(soul(0)
        .as_str()
        .unwrap_or_default()
        .contains("You coordinate."));
    assert!(soul(1)
        .as_str()
        .unwrap_or_default()
        .contains("You explore."));
    assert!(reqs[1].json_body().to_string().contains("find A"));
    // The coordinator's tool call came back with the explorer's answer.
    assert!(reqs[2].json_body().to_string().contains("found A"));

    let o = agents_run(&["--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v["id"], json!("root/coordinator.1"));
    assert_eq!(v["result"]["status"], json!("done"));
    assert_eq!(v["result"]["text"], json!("summary: found A"));
    assert_eq!(v["result"]["totalTokens"], json!(6), "{v}");
    assert!(v["trace"].as_array().is_some_and(|t| t.iter().any(|l| l
        .as_str()
        .is_some_and(|l| l.contains("root/coordinator.1: running→idle (done")))));
}

#[test]
fn agents_run_names_a_bad_config_or_agent_and_fails_a_failed_run() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mock = translate_mock::MockProvider::start(vec![translate_mock::Canned::json(
        400,
        &json!({"error": {"message": "bad request"}}),
    )]);
    let cfg = agents_config(dir.path(), &format!("{}/v1", mock.base()));
    let base = [
        "agents",
        "run",
        "--no-builtins",
        "--prompt",
        "p",
        "--config",
    ];
    let with = |cfg: &str, agent: &str| {
        let mut a = base.to_vec();
        a.extend_from_slice(&[cfg, "--agent", agent]);
        run(&a)
    };
    let o = with(&cfg, "ghost");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("ghost"), "{}", stderr(&o));
    // A provider error ends the agent with an error result: exit 4.
    let o = with(&cfg, "explore");
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the agent ended error"),
        "{}",
        stderr(&o)
    );
    // A team naming no agent, and no client at all: the config's errors.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        json!({"client": {"baseUrl": "http://127.0.0.1:9", "model": "m"},
               "agents": {"x": {"does": "d", "team": ["nobody"]}}})
        .to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = with(&bad.to_string_lossy(), "x");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--config") && stderr(&o).contains("nobody"),
        "{}",
        stderr(&o)
    );
    std::fs::write(&bad, json!({"agents": {"x": {"does": "d"}}}).to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    let o = with(&bad.to_string_lossy(), "x");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("client"), "{}", stderr(&o));
}

/// `toolnexus count-tokens ARGS` with `input` on stdin and no provider key
/// in the environment but `env`'s.
fn count_tokens(args: &[&str], input: &str, env: &[(&str, &str)]) -> Output {
    use std::io::Write;
    let mut cmd = Command::new(BIN);
    cmd.arg("count-tokens").args(args);
    for v in ["OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run toolnexus: {e}"));
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input.as_bytes());
    }
    child.wait_with_output().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn count_tokens_asks_the_styles_counting_endpoint_and_prints_the_count() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let request = json!({"system": "Be brief.", "maxTokens": 100,
        "messages": [{"role": "user", "content": "What is 2+3?"}]});
    let file = dir.path().join("request.json");
    std::fs::write(&file, request.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let file = file.to_string_lossy().into_owned();

    // A request file, the provider from the flags.
    let mock = translate_mock::MockProvider::start(vec![translate_mock::Canned::json(
        200,
        &json!({"input_tokens": 42}),
    )]);
    let base = mock.base();
    let o = count_tokens(
        &[
            "--no-builtins",
            "--base-url",
            &base,
            "--style",
            "anthropic",
            "--model",
            "claude-test",
            "--api-key",
            "sk-flag",
            "--request",
            &file,
        ],
        "",
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\"inputTokens\":42,\"style\":\"anthropic\",\"model\":\"claude-test\"}\n"
    );
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].path, "/v1/messages/count_tokens");
    assert_eq!(reqs[0].header("x-api-key"), Some("sk-flag"));
    let body = reqs[0].json_body();
    assert_eq!(body["model"], json!("claude-test"));
    assert!(body["system"].to_string().contains("Be brief."), "{body}");
    assert!(
        body["messages"].to_string().contains("What is 2+3?"),
        "{body}"
    );
    assert!(
        body.get("max_tokens").is_none(),
        "no generation keys: {body}"
    );
    assert!(body.get("tools").is_none(), "no toolkit, no tools: {body}");

    // The request on stdin, the client as JSON, the key from the
    // environment, and the toolkit's tools declared before the request's.
    let mock = translate_mock::MockProvider::start(vec![translate_mock::Canned::json(
        200,
        &json!({"input_tokens": 7}),
    )]);
    let client = json!({"baseUrl": format!("{}/v1", mock.base()), "model": "m1",
                        "headers": {"x-team": "blue"}})
    .to_string();
    let with_tool = json!({"messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "lookup",
            "parameters": {"type": "object", "properties": {}}}}]});
    let o = count_tokens(
        &["--client", &client, "--no-builtins", "--skills", SKILLS],
        &with_tool.to_string(),
        &[("OPENAI_API_KEY", "sk-env")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let answer: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        answer,
        json!({"inputTokens": 7, "style": "openai", "model": "m1"})
    );
    assert!(
        stderr(&o).contains("source builtin: disabled"),
        "the toolkit's status on stderr: {}",
        stderr(&o)
    );
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].path, "/v1/responses/input_tokens");
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-env"));
    assert_eq!(reqs[0].header("x-team"), Some("blue"));
    let names: Vec<Value> = reqs[0].json_body()["tools"]
        .as_array()
        .map(|t| t.iter().map(|t| t["name"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(names, vec![json!("skill"), json!("lookup")]);

    // One prompt, Gemini, --json: stdout holds the answer and nothing else.
    let mock = translate_mock::MockProvider::start(vec![translate_mock::Canned::json(
        200,
        &json!({"totalTokens": 5}),
    )]);
    let base = mock.base();
    let o = count_tokens(
        &[
            "--no-builtins",
            "--base-url",
            &base,
            "--style",
            "gemini",
            "--model",
            "gem",
            "--api-key",
            "g-key",
            "--prompt",
            "hello there",
            "--json",
        ],
        "",
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\"inputTokens\":5,\"style\":\"gemini\",\"model\":\"gem\"}\n"
    );
    let reqs = mock.requests();
    assert_eq!(reqs[0].path, "/v1beta/models/gem:countTokens");
    let body = reqs[0].json_body();
    assert_eq!(
        body["generateContentRequest"]["contents"],
        json!([{"role": "user", "parts": [{"text": "hello there"}]}]),
        "{body}"
    );
}

#[test]
fn count_tokens_names_bad_input_and_prints_nothing_but_the_answer() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mock = translate_mock::MockProvider::start(vec![translate_mock::Canned::json(
        400,
        &json!({"error": {"message": "model not found"}}),
    )]);
    let base = mock.base();
    let provider = [
        "--no-builtins",
        "--base-url",
        base.as_str(),
        "--style",
        "anthropic",
        "--model",
        "m",
        "--api-key",
        "k",
    ];
    let with = |extra: &[&str], input: &str| {
        let mut args = provider.to_vec();
        args.extend_from_slice(extra);
        count_tokens(&args, input, &[])
    };
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("{e}"));
        p.to_string_lossy().into_owned()
    };
    let bad = |o: &Output, code: i32, names: &str| {
        assert_eq!(o.status.code(), Some(code), "{}", stderr(o));
        assert_eq!(stdout(o), "", "nothing on stdout");
        assert!(stderr(o).contains(names), "{names}: {}", stderr(o));
    };

    let missing = dir.path().join("absent.json");
    let missing = missing.to_string_lossy();
    bad(
        &with(&["--request", &missing], ""),
        3,
        &format!("--request {missing}: cannot read it"),
    );
    let broken = file("broken.json", "{\"messages\": [");
    bad(
        &with(&["--request", &broken], ""),
        3,
        &format!("--request {broken}: not valid JSON"),
    );
    let list = file("list.json", "[]");
    bad(
        &with(&["--request", &list], ""),
        3,
        "expected a JSON object",
    );
    let folder = dir.path().to_string_lossy().into_owned();
    bad(
        &with(&["--request", &folder], ""),
        3,
        "not a regular file (a directory)",
    );
    bad(
        &with(&[], "{not json"),
        3,
        "the request on stdin: not valid JSON",
    );
    bad(
        &with(&["--request", "-"], " \n"),
        3,
        "the request on stdin: empty",
    );
    let no_messages = file("empty.json", "{\"system\": \"x\"}");
    bad(
        &with(&["--request", &no_messages], ""),
        3,
        "request.messages is required",
    );
    bad(
        &count_tokens(
            &[
                "--base-url",
                &base,
                "--model",
                "m",
                "--prompt",
                "hi",
                "--style",
                "klingon",
            ],
            "",
            &[],
        ),
        2,
        "klingon",
    );
    let client = json!({"baseUrl": base, "style": "klingon", "model": "m"}).to_string();
    bad(
        &count_tokens(&["--client", &client, "--prompt", "hi"], "", &[]),
        3,
        "client.style",
    );
    bad(
        &count_tokens(&["--client", "{nope", "--prompt", "hi"], "", &[]),
        3,
        "--client: not valid JSON",
    );
    bad(
        &count_tokens(&["--model", "m", "--prompt", "hi"], "", &[]),
        3,
        "client.baseUrl is required",
    );
    bad(
        &with(&["--prompt", "hi", "--request", &list], ""),
        2,
        "--prompt",
    );
    assert!(
        mock.requests().is_empty(),
        "no bad input reached the provider"
    );

    // --json: the failure as JSON on stdout, with the same exit code.
    let o = with(&["--request", &missing, "--json"], "");
    assert_eq!(o.status.code(), Some(3));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v["error"]["code"], json!("bad_input"), "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("--request"));

    // The provider's error status: a failure while running.
    let o = with(&["--prompt", "hi"], "");
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).contains("400"), "{}", stderr(&o));
    assert_eq!(mock.requests().len(), 1);
}
