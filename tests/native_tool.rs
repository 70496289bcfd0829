//! Host functions as tools (CONTRACT.md §7): the Tool they become, panics,
//! re-entrant calls, and a 16-thread stress run mixing native and HTTP tools.

#[path = "http_tool_mock/mod.rs"]
mod http_tool_mock;
mod quiet_panic;

use http_tool_mock::{MockServer, Reply};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use toolnexus::http_tool::http_tool;
use toolnexus::native::native_tool;
use toolnexus::tool::{ExecContext, Source, Tool, ToolResult};

fn add() -> Tool {
    native_tool(
        "add",
        "Adds a and b.",
        Some(
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        ),
        Arc::new(
            |args: &Value, _: &ExecContext| match (args["a"].as_i64(), args["b"].as_i64()) {
                (Some(a), Some(b)) => ToolResult::ok((a + b).to_string()),
                _ => ToolResult::error("a and b must be integers"),
            },
        ),
    )
}

#[test]
fn a_host_function_becomes_a_native_tool() {
    let t = add();
    assert_eq!(t.name, "add");
    assert_eq!(t.source, Source::Native);
    assert_eq!(
        t.declaration(),
        json!({
            "name": "add", "description": "Adds a and b.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
            "source": "native"
        })
    );
    let ctx = ExecContext::default();
    assert_eq!(
        t.exec.execute(&json!({"a": 2, "b": 3}), &ctx),
        ToolResult::ok("5")
    );
    assert_eq!(
        t.exec.execute(&json!({"a": "x"}), &ctx),
        ToolResult::error("a and b must be integers")
    );

    let bare = native_tool(
        "bare name.v1",
        "",
        None,
        Arc::new(|_: &Value, _: &ExecContext| ToolResult::ok("")),
    );
    assert_eq!(bare.name, "bare name.v1");
    assert_eq!(bare.input_schema, json!({"type": "object"}));
}

#[test]
fn the_result_and_context_pass_through_untouched() {
    let t = native_tool(
        "ctx",
        "",
        None,
        Arc::new(|args: &Value, ctx: &ExecContext| {
            let mut md = Map::new();
            md.insert("timeoutMs".into(), json!(ctx.timeout_ms));
            md.insert("answer".into(), ctx.answer.clone().unwrap_or(Value::Null));
            ToolResult::ok(args.to_string()).with_metadata(md)
        }),
    );
    let ctx = ExecContext {
        timeout_ms: Some(1234),
        answer: Some(json!({"id": "sus-1", "ok": true})),
        ..Default::default()
    };
    let r = t.exec.execute(&json!({"k": [1, "two"]}), &ctx);
    assert_eq!(
        r.to_json(),
        json!({"output": "{\"k\":[1,\"two\"]}", "isError": false,
               "metadata": {"timeoutMs": 1234, "answer": {"id": "sus-1", "ok": true}}})
    );
}

#[test]
fn a_panicking_host_function_is_an_error_result() {
    let t = native_tool(
        "boom",
        "",
        None,
        Arc::new(|args: &Value, _: &ExecContext| {
            if args["owned"].as_bool() == Some(true) {
                panic!("{} went wrong", "something");
            }
            panic!("static message")
        }),
    );
    let ctx = ExecContext::default();
    let borrowed = quiet_panic::quietly(|| t.exec.execute(&json!({}), &ctx));
    let owned = quiet_panic::quietly(|| t.exec.execute(&json!({"owned": true}), &ctx));
    assert_eq!(
        borrowed,
        ToolResult::error("native tool 'boom' panicked: static message")
    );
    assert_eq!(
        owned,
        ToolResult::error("native tool 'boom' panicked: something went wrong")
    );
}

#[test]
fn a_host_function_may_call_other_tools_while_it_runs() {
    let server = MockServer::with_responder(|req| Reply::text(200, &req.path));
    let fetch = Arc::new(
        http_tool(
            0,
            &json!({"name": "fetch", "url": format!("{}/{{p}}", server.base())}),
        )
        .unwrap_or_else(|e| panic!("{e}")),
    );
    let inner = Arc::clone(&fetch);
    let outer = native_tool(
        "outer",
        "",
        None,
        Arc::new(move |args: &Value, ctx: &ExecContext| {
            let r = inner.exec.execute(args, ctx);
            ToolResult::ok(format!("inner said {}", r.output))
        }),
    );
    let r = outer
        .exec
        .execute(&json!({"p": "deep"}), &ExecContext::default());
    assert_eq!(r.output, "inner said /deep");
}

/// 16 threads × 10,000 executions over shared tools: a native tool, a native
/// tool that calls the HTTP tool, and the HTTP tool itself. Every result is
/// checked against what that call must return.
#[test]
fn sixteen_threads_mix_native_and_http_tools_and_every_result_is_right() {
    const THREADS: usize = 16;
    const CALLS: usize = 10_000;
    let server = MockServer::with_responder(|req| {
        Reply::text(
            200,
            &format!("{}?{}", req.path, req.query.clone().unwrap_or_default()),
        )
    });
    let http = Arc::new(
        http_tool(
            0,
            &json!({"name": "get", "url": format!("{}/n/{{n}}", server.base()), "query": ["t"]}),
        )
        .unwrap_or_else(|e| panic!("{e}")),
    );
    let via_http = {
        let http = Arc::clone(&http);
        native_tool(
            "via_http",
            "",
            None,
            Arc::new(move |args: &Value, ctx: &ExecContext| {
                let r = http.exec.execute(args, ctx);
                ToolResult {
                    output: format!("native<{}>", r.output),
                    ..r
                }
            }),
        )
    };
    let tools: Arc<Vec<Tool>> = Arc::new(vec![add(), (*http).clone(), via_http]);
    let executed = Arc::new(AtomicUsize::new(0));

    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let tools = Arc::clone(&tools);
            let executed = Arc::clone(&executed);
            thread::spawn(move || {
                let ctx = ExecContext::default();
                for n in 0..CALLS {
                    // Mostly native calls; every 8th goes over HTTP, every
                    // 16th through a native tool that calls HTTP.
                    let (tool, want) = match n % 16 {
                        0 => (&tools[2], format!("native</n/{n}?t={t}>")),
                        8 => (&tools[1], format!("/n/{n}?t={t}")),
                        _ => (&tools[0], (n + t).to_string()),
                    };
                    let args = json!({"a": n, "b": t, "n": n, "t": t});
                    let r = tool.exec.execute(&args, &ctx);
                    assert!(
                        !r.is_error,
                        "{} on thread {t} call {n}: {}",
                        tool.name, r.output
                    );
                    assert_eq!(r.output, want, "{} on thread {t} call {n}", tool.name);
                    if tool.source == Source::Http || tool.name == "via_http" {
                        assert_eq!(r.metadata, json!({"status": 200}).as_object().cloned());
                    }
                    executed.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for w in workers {
        if let Err(panic) = w.join() {
            std::panic::resume_unwind(panic);
        }
    }
    assert_eq!(executed.load(Ordering::Relaxed), THREADS * CALLS);
}

/// Records the names of the tools each model call declares, and answers
/// at once.
struct Declared(std::sync::Mutex<Vec<Vec<String>>>);

impl toolnexus::client::Provider for Declared {
    fn complete(&self, ex: toolnexus::client::Exchange<'_>) -> toolnexus::error::Result<Value> {
        let names = ex
            .body
            .tools
            .iter()
            .map(|t| {
                let name = t.pointer("/function/name").or_else(|| t.get("name"));
                name.and_then(Value::as_str).unwrap_or("?").to_string()
            })
            .collect();
        self.0.lock().expect("lock").push(names);
        Ok(json!({"choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": "ok"}}]}))
    }

    fn streams(&self) -> bool {
        false
    }
}

/// A run declares the tools the toolkit holds when it starts: a tool
/// registered (or replaced) between two runs is in the second run's
/// declarations, on every style (the openai declarations are made once per
/// tool set and shared by runs, so a registration must make new ones).
#[test]
fn each_run_declares_the_tools_registered_before_it() {
    use toolnexus::cancel::CancelToken;
    use toolnexus::client::{Client, RunData, RunRequest};
    use toolnexus::toolkit::Toolkit;
    for style in ["openai", "gemini", "responses", "anthropic"] {
        let config = toolnexus::translate::ClientConfig::from_json(&json!({
            "baseUrl": "http://in-process.invalid", "model": "m", "style": style
        }))
        .expect("config");
        let seen = Arc::new(Declared(Default::default()));
        let client = Client::with_provider(config, 4, seen.clone());
        let kit = Toolkit::build_from_json(r#"{"builtins":false}"#).expect("toolkit");
        let request = RunRequest {
            prompt: "go".into(),
            history: vec![],
        };
        let run = |kit: &Toolkit| {
            // The reply is openai's shape: other styles read no text from
            // it, and the run ends at its first model call all the same.
            client
                .run(kit, &request, &CancelToken::new(), RunData::default())
                .expect("run");
        };
        kit.register(add());
        run(&kit);
        run(&kit);
        kit.register(native_tool(
            "sub",
            "Subtracts.",
            None,
            Arc::new(|_: &Value, _: &ExecContext| ToolResult::ok("0")),
        ));
        run(&kit);
        let seen = seen.0.lock().expect("lock").clone();
        assert_eq!(
            seen,
            vec![vec!["add"], vec!["add"], vec!["add", "sub"]],
            "{style}"
        );
    }
}

/// `execute_borrowed` answers what `execute` answers, for arguments in
/// each wire form, and leaves the caller's arguments as they were.
#[test]
fn execute_borrowed_answers_what_execute_answers() {
    let kit = toolnexus::toolkit::Toolkit::build_from_json(r#"{"builtins":false}"#).expect("kit");
    kit.register(native_tool(
        "echo",
        "Echoes its arguments.",
        None,
        Arc::new(|args: &Value, _: &ExecContext| ToolResult::ok(args.to_string())),
    ));
    let ctx = ExecContext::default();
    for args in [
        json!({"a": 1, "b": [true]}),
        json!("{\"a\": 1}"),
        json!("[1]"),
        json!(null),
    ] {
        let kept = args.clone();
        let borrowed = kit.execute_borrowed("echo", &args, &ctx);
        assert_eq!(args, kept, "the arguments are left as they were");
        let owned = kit.execute("echo", args, &ctx);
        assert_eq!(
            (borrowed.output.as_str(), borrowed.is_error),
            (owned.output.as_str(), owned.is_error),
            "{kept}"
        );
    }
    assert_eq!(
        kit.execute_borrowed("echo", &json!("{\"a\": 1}"), &ctx)
            .output,
        r#"{"a":1}"#
    );
    let unknown = kit.execute_borrowed("nope", &json!({}), &ctx);
    assert!(unknown.is_error);
    assert_eq!(unknown.output, "unknown tool: nope");
}
