//! The `toolnexus` command for a person watching and for a script:
//! `run` streams its answer and shows each tool call as it runs (name, then
//! ok/error and its time) on stderr, `--quiet` shows only the answer, and
//! every subcommand's `--json` prints what a script parses.

#[path = "translate_mock/mod.rs"]
mod translate_mock;

use serde_json::{json, Value};
use std::io::BufRead;
use std::process::{Command, Output, Stdio};
use translate_mock::{Canned, MockProvider};

const BIN: &str = env!("CARGO_BIN_EXE_toolnexus");
const SKILLS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .env_remove("OPENROUTER_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap_or_else(|e| panic!("cannot run toolnexus: {e}"))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// An OpenAI-style streamed answer: one `data:` line per chunk, then usage
/// and `[DONE]`.
fn sse(chunks: &[Value]) -> Canned {
    let mut body = String::new();
    for c in chunks {
        body.push_str(&format!("data: {c}\n\n"));
    }
    body.push_str(&format!(
        "data: {}\n\n",
        json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
    ));
    body.push_str("data: [DONE]\n\n");
    Canned::text(200, &body).header("content-type", "text/event-stream")
}

fn tool_call_turn(id: &str, name: &str, args: &str) -> Canned {
    sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": args}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ])
}

fn text_turn(pieces: &[&str]) -> Canned {
    let mut chunks: Vec<Value> = pieces
        .iter()
        .map(|p| json!({"choices": [{"index": 0, "delta": {"content": p}}]}))
        .collect();
    chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}));
    sse(&chunks)
}

/// Two tools in two turns (one that works, one that fails), then the
/// answer in three pieces.
fn provider() -> MockProvider {
    MockProvider::start(vec![
        tool_call_turn("t1", "bash", r#"{"command":"echo from-the-tool"}"#),
        tool_call_turn(
            "t2",
            "read",
            r#"{"path":"/nonexistent/toolnexus-cli-stream"}"#,
        ),
        text_turn(&["the tool ", "said ", "hi"]),
    ])
}

fn run_once(base: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "--base-url",
        base,
        "--model",
        "m",
        "--api-key",
        "k",
        "--skills",
        SKILLS,
        "--once",
        "say hi",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn run_streams_the_answer_and_shows_each_tool_call_with_its_outcome_and_time() {
    let mock = provider();
    let base = format!("{}/v1", mock.base());
    let o = run_once(&base, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The answer is the streamed pieces, put together, with one newline.
    assert_eq!(stdout(&o), "the tool said hi\n");
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("tool ")).collect();
    assert_eq!(lines.len(), 4, "a line as each call starts and ends: {err}");
    assert_eq!(lines[0], "tool bash ...");
    assert!(
        lines[1].starts_with("tool bash: ok (") && lines[1].ends_with(" ms)"),
        "{err}"
    );
    assert_eq!(lines[2], "tool read ...");
    assert!(
        lines[3].starts_with("tool read: error (") && lines[3].ends_with(" ms)"),
        "{err}"
    );
    let ms: u64 = lines[1]
        .trim_start_matches("tool bash: ok (")
        .trim_end_matches(" ms)")
        .parse()
        .unwrap_or_else(|e| panic!("the time is a number of ms: {e}: {err}"));
    assert!(ms < 60_000, "{ms}");
    assert!(err.contains("source builtin: connected"), "{err}");
    // The provider was asked to stream every turn.
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    for r in &reqs {
        assert_eq!(r.json_body()["stream"], json!(true));
    }
}

#[test]
fn run_quiet_prints_only_the_answer() {
    let mock = provider();
    let base = format!("{}/v1", mock.base());
    let o = run_once(&base, &["--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "the tool said hi\n");
    assert_eq!(stderr(&o), "", "--quiet: nothing on stderr");
}

#[test]
fn run_json_prints_every_event_as_a_line_ending_with_the_run_result() {
    let mock = provider();
    let base = format!("{}/v1", mock.base());
    let o = run_once(&base, &["--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        [
            "tool_call",
            "tool_result",
            "tool_call",
            "tool_result",
            "text",
            "text",
            "text",
            "usage",
            "done"
        ],
        "{}",
        stdout(&o)
    );
    assert_eq!(events[0]["name"], json!("bash"));
    assert_eq!(events[1]["isError"], json!(false));
    assert_eq!(events[3]["isError"], json!(true));
    let result = &events[8]["result"];
    assert_eq!(result["text"], json!("the tool said hi"));
    assert_eq!(result["status"], json!("done"));
    assert_eq!(result["toolCallCount"], json!(2));
}

#[test]
fn run_json_reports_a_failed_prompt_as_an_error_line_and_reads_on() {
    use std::io::Write;
    let mock = MockProvider::start(vec![
        Canned::json(400, &json!({"error": {"message": "bad request"}})),
        text_turn(&["fine"]),
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
            "--json",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"first\nsecond\n");
    }
    let o = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events[0]["type"], json!("error"), "{}", stdout(&o));
    assert_eq!(events[0]["error"]["code"], json!("failed"));
    assert!(
        events[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("400")),
        "{}",
        stdout(&o)
    );
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(json!("done"))
    );
    assert_eq!(
        events.last().map(|e| e["result"]["text"].clone()),
        Some(json!("fine"))
    );
}

#[test]
fn tools_call_completions_and_man_print_json_for_scripts() {
    let o = run(&["tools", "--skills", SKILLS, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}"));
    let tools = v["tools"].as_array().cloned().unwrap_or_default();
    let skill = tools.iter().find(|t| t["name"] == "skill");
    assert_eq!(skill.map(|t| t["source"].clone()), Some(json!("skill")));
    assert!(tools.iter().any(|t| t["name"] == "bash"));
    assert!(
        v["status"].is_object(),
        "the sources' status: {}",
        stdout(&o)
    );

    // A failure is JSON on stdout, with the exit code it also exits with.
    let o = run(&["tools", "--skills", "/nonexistent/skills", "--json"]);
    assert_eq!(o.status.code(), Some(3));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v["error"]["code"], json!("bad_input"));
    assert_eq!(v["error"]["exit"], json!(3));
    assert!(v["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("--skills")));

    let o = run(&["call", "todowrite", "[1]", "--json"]);
    assert_eq!(o.status.code(), Some(3));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v["error"]["code"], json!("bad_input"));
    let o = run(&["call", "todowrite", r#"{"todos":[]}"#, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v["isError"], json!(false));

    let o = run(&["completions", "bash", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v["shell"], json!("bash"));
    assert!(v["script"]
        .as_str()
        .is_some_and(|s| s.contains("_toolnexus()")));

    let o = run(&["man", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}"));
    assert!(v["page"]
        .as_str()
        .is_some_and(|p| p.contains(".TH toolnexus 1")));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let o = run(&["man", "--out-dir", &dir.path().to_string_lossy(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}"));
    let written: Vec<String> = v["written"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p.as_str())
                .map(|p| p.rsplit('/').next().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        written.contains(&"toolnexus.1".to_string())
            && written.contains(&"toolnexus-run.1".to_string()),
        "{written:?}"
    );
}

#[test]
fn serve_http_json_prints_the_url_as_json() {
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--no-builtins",
            "--skills",
            SKILLS,
            "--json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = std::io::BufReader::new(out).read_line(&mut line);
    }
    let _ = child.kill();
    let _ = child.wait();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    let url = v["url"].as_str().unwrap_or_default();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{line}"
    );
}
