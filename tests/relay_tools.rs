//! Relay tools (SPEC §10 addendum, source `relay`) over the real provider
//! path (a canned HTTP model): a call suspends as one `tool_call` Request
//! carrying every relay call of the turn with the provider's call ids,
//! resume in fill mode puts the host's results in every open slot and runs
//! nothing again, an in-process `waitFor` answers each call, and the toolkit
//! refuses a relay tool named like a built-in tool.

mod translate_mock;

use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolnexus::cancel::CancelToken;
use toolnexus::client::{Client, HostFn, ResumeRequest, RunData, RunRequest, Slot};
use toolnexus::error::ErrorCode;
use toolnexus::native::native_tool;
use toolnexus::tool::{ExecContext, ToolResult};
use toolnexus::toolkit::Toolkit;
use translate_mock::{Canned, MockProvider};

fn client(base: &str, style: &str) -> Client {
    Client::from_json(
        &json!({"baseUrl": base, "style": style, "model": "m", "apiKey": "k",
                              "retries": 0}),
    )
    .expect("client")
}

fn openai_calls(calls: &[(&str, &str, &str)]) -> Canned {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    Canned::json(
        200,
        &json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null, "tool_calls": calls}}]}),
    )
}

fn openai_text(text: &str) -> Canned {
    Canned::json(
        200,
        &json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": text}}]}),
    )
}

fn relay_toolkit(names: &[&str]) -> Toolkit {
    let decls: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "description": format!("{n}, run by the caller")}))
        .collect();
    Toolkit::build_from_json(&json!({"builtins": false, "relayTools": decls}).to_string())
        .expect("toolkit")
}

fn run(c: &Client, tk: &Toolkit, prompt: &str) -> Value {
    c.run(
        tk,
        &RunRequest {
            prompt: prompt.into(),
            history: Vec::new(),
        },
        &CancelToken::new(),
        RunData::default(),
    )
    .expect("run")
}

fn fill(c: &Client, tk: &Toolkit, halted: &Value, answer: Value) -> Value {
    let req = ResumeRequest::from_json(&json!({"history": halted["messages"],
        "pending": halted["pending"], "answer": answer, "mode": "fill"}))
    .expect("resume request");
    c.resume(tk, &req, &CancelToken::new(), RunData::default())
        .expect("resume")
}

/// The tool messages of an OpenAI transcript: `(tool_call_id, content)`.
fn tool_messages(messages: &Value) -> Vec<(String, String)> {
    messages
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or("").to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn three_relay_calls_ride_one_request_and_fill_resumes_all_of_them() {
    let model = MockProvider::start(vec![
        openai_calls(&[
            ("c1", "alpha", r#"{"n":1}"#),
            ("c2", "beta", r#"{"n":2}"#),
            ("c3", "gamma", r#"{"n":3}"#),
        ]),
        openai_text("all three answered"),
    ]);
    let c = client(&model.base(), "openai");
    let tk = relay_toolkit(&["alpha", "beta", "gamma"]);
    // Declared like any other tool.
    let declared = tk.render("openai").expect("render");
    assert!(declared.contains("beta, run by the caller"), "{declared}");

    let halted = run(&c, &tk, "go");
    assert_eq!(halted["status"], "pending", "{halted}");
    let pending = &halted["pending"];
    assert_eq!(pending["kind"], "tool_call");
    assert_eq!(
        pending["prompt"],
        "relay tool call alpha to the caller for execution"
    );
    assert_eq!(
        pending["data"]["calls"],
        json!([
            {"id": "c1", "name": "alpha", "input": {"n": 1}, "arguments": "{\"n\":1}"},
            {"id": "c2", "name": "beta", "input": {"n": 2}, "arguments": "{\"n\":2}"},
            {"id": "c3", "name": "gamma", "input": {"n": 3}, "arguments": "{\"n\":3}"},
        ])
    );
    let id = pending["id"].as_str().expect("id");
    let done = fill(
        &c,
        &tk,
        &halted,
        json!({"id": id, "ok": true, "data": {"results": [
            {"id": "c1", "output": "out-alpha"},
            {"id": "c2", "output": "out-beta", "isError": true},
            {"id": "c3", "output": "out-gamma"},
        ]}}),
    );
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["text"], "all three answered");
    // One result per call, in call order; the halt's placeholder is gone.
    assert_eq!(
        tool_messages(&done["messages"]),
        [
            ("c1".to_string(), "out-alpha".to_string()),
            ("c2".into(), "out-beta".into()),
            ("c3".into(), "out-gamma".into())
        ]
    );
    let sent = model.requests()[1].json_body();
    assert!(!sent.to_string().contains("to the caller for execution"));
    assert_eq!(tool_messages(&sent["messages"]).len(), 3);
    assert_eq!(done["toolCalls"][1]["isError"], true);
}

#[test]
fn a_result_the_host_leaves_out_is_an_error_result_and_the_shorthand_fills_one_call() {
    let model = MockProvider::start(vec![
        openai_calls(&[("c1", "alpha", "{}"), ("c2", "beta", "{}")]),
        openai_text("partial"),
        openai_calls(&[("d1", "alpha", "{}")]),
        openai_text("single"),
    ]);
    let c = client(&model.base(), "openai");
    let tk = relay_toolkit(&["alpha", "beta"]);
    let halted = run(&c, &tk, "go");
    let id = halted["pending"]["id"].clone();
    let done = fill(
        &c,
        &tk,
        &halted,
        json!({"id": id, "ok": true, "data": {"results": [{"id": "c1", "output": "only-alpha"}]}}),
    );
    assert_eq!(
        tool_messages(&done["messages"]),
        [
            ("c1".to_string(), "only-alpha".to_string()),
            ("c2".into(), "no result supplied on resume for beta".into())
        ]
    );
    let halted = run(&c, &tk, "again");
    let id = halted["pending"]["id"].clone();
    let done = fill(
        &c,
        &tk,
        &halted,
        json!({"id": id, "ok": true, "data": {"output": "single-out"}}),
    );
    assert_eq!(done["status"], "done");
    assert_eq!(
        tool_messages(&done["messages"]),
        [("d1".to_string(), "single-out".to_string())]
    );
}

#[test]
fn a_mismatched_answer_is_refused() {
    let model = MockProvider::start(vec![openai_calls(&[("c1", "alpha", "{}")])]);
    let c = client(&model.base(), "openai");
    let tk = relay_toolkit(&["alpha"]);
    let halted = run(&c, &tk, "go");
    let req = ResumeRequest::from_json(&json!({"history": halted["messages"],
        "pending": halted["pending"], "mode": "fill",
        "answer": {"id": "not-the-one", "ok": true, "data": {"output": "x"}}}))
    .expect("request");
    let e = c
        .resume(&tk, &req, &CancelToken::new(), RunData::default())
        .expect_err("refused");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("does not echo"), "{e}");
}

#[test]
fn anthropic_relay_calls_are_stamped_with_tool_use_ids_and_filled_as_blocks() {
    let model = MockProvider::start(vec![
        Canned::json(
            200,
            &json!({"role": "assistant", "stop_reason": "tool_use", "content": [
                {"type": "tool_use", "id": "tu_1", "name": "alpha", "input": {"q": "x"}},
                {"type": "tool_use", "id": "tu_2", "name": "beta", "input": {}}]}),
        ),
        Canned::json(
            200,
            &json!({"role": "assistant", "stop_reason": "end_turn",
                    "content": [{"type": "text", "text": "both answered"}]}),
        ),
    ]);
    let c = client(&model.base(), "anthropic");
    let tk = relay_toolkit(&["alpha", "beta"]);
    let halted = run(&c, &tk, "go");
    let ids: Vec<&str> = halted["pending"]["data"]["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["tu_1", "tu_2"]);
    let id = halted["pending"]["id"].clone();
    let done = fill(
        &c,
        &tk,
        &halted,
        json!({"id": id, "ok": true, "data": {"results": [
            {"id": "tu_1", "output": "out-1"}, {"id": "tu_2", "output": "out-2"}]}}),
    );
    assert_eq!(done["status"], "done", "{done}");
    let sent = model.requests()[1].json_body();
    let last = sent["messages"]
        .as_array()
        .expect("messages")
        .last()
        .cloned();
    let blocks = last.expect("a last message")["content"].clone();
    assert_eq!(blocks[0]["tool_use_id"], "tu_1");
    assert_eq!(blocks[0]["content"], "out-1");
    assert_eq!(blocks[1]["tool_use_id"], "tu_2");
}

#[test]
fn an_inline_wait_for_answers_each_relay_call_with_its_own_id() {
    let model = MockProvider::start(vec![
        openai_calls(&[("c1", "alpha", "{}"), ("c2", "alpha", "{}")]),
        openai_text("done"),
    ]);
    let c = client(&model.base(), "openai");
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let wait_for: HostFn = Arc::new(move |req: &Value, _: RunData| {
        let call = req["data"]["calls"][0].clone();
        s.lock().expect("lock").push(call["id"].clone());
        if call["id"] == "c2" {
            return Ok(Some(
                json!({"id": req["id"], "ok": false, "reason": "declined"}),
            ));
        }
        Ok(Some(
            json!({"id": req["id"], "ok": true, "data": {"output": "host ran it"}}),
        ))
    });
    c.set_callback(Slot::WaitFor, Some(wait_for));
    let tk = relay_toolkit(&["alpha"]);
    let done = run(&c, &tk, "go");
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(*seen.lock().expect("lock"), [json!("c1"), json!("c2")]);
    assert_eq!(
        tool_messages(&done["messages"]),
        [
            ("c1".to_string(), "host ran it".to_string()),
            (
                "c2".into(),
                "declined/expired: relay tool call alpha to the caller for execution".into()
            )
        ]
    );
    // A resolved relay call is not a tool error; the declined one is.
    assert_eq!(done["toolCalls"][0]["isError"], false);
    assert_eq!(done["toolCalls"][1]["isError"], true);
}

#[test]
fn a_first_suspension_of_another_kind_is_not_merged_into() {
    let model = MockProvider::start(vec![openai_calls(&[
        ("c1", "login", "{}"),
        ("c2", "alpha", "{}"),
    ])]);
    let c = client(&model.base(), "openai");
    let tk = relay_toolkit(&["alpha"]);
    tk.register(native_tool(
        "login",
        "needs a login",
        None,
        Arc::new(|_: &Value, _: &ExecContext| {
            let mut md = serde_json::Map::new();
            md.insert(
                "pending".into(),
                json!({"id": "auth-1", "kind": "authorization", "prompt": "log in first",
                       "url": "https://example.test/login"}),
            );
            ToolResult::error("log in first").with_metadata(md)
        }),
    ));
    let halted = run(&c, &tk, "go");
    assert_eq!(halted["pending"]["kind"], "authorization");
    assert!(halted["pending"].get("data").is_none(), "{halted}");
}

#[test]
fn a_real_tool_runs_alongside_and_keeps_its_result_before_the_relay_call() {
    let model = MockProvider::start(vec![
        openai_calls(&[("c1", "real", "{}"), ("c2", "alpha", "{}")]),
        openai_text("done"),
    ]);
    let c = client(&model.base(), "openai");
    let tk = relay_toolkit(&["alpha"]);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    tk.register(native_tool(
        "real",
        "runs here",
        None,
        Arc::new(move |_: &Value, _: &ExecContext| {
            r.fetch_add(1, Ordering::SeqCst);
            ToolResult::ok("ran here")
        }),
    ));
    let halted = run(&c, &tk, "go");
    assert_eq!(halted["pending"]["data"]["calls"][0]["id"], "c2");
    let id = halted["pending"]["id"].clone();
    let done = fill(
        &c,
        &tk,
        &halted,
        json!({"id": id, "ok": true, "data": {"results": [{"id": "c2", "output": "relayed"}]}}),
    );
    assert_eq!(
        ran.load(Ordering::SeqCst),
        1,
        "the real tool ran once, before the halt"
    );
    assert_eq!(
        tool_messages(&done["messages"]),
        [
            ("c1".to_string(), "ran here".to_string()),
            ("c2".into(), "relayed".into())
        ]
    );
}

#[test]
fn an_uncalled_relay_tool_is_inert_and_a_builtin_name_is_refused() {
    let model = MockProvider::start(vec![openai_text("plain answer")]);
    let c = client(&model.base(), "openai");
    let done = run(&c, &relay_toolkit(&["never_called"]), "hi");
    assert_eq!(
        (&done["status"], &done["text"], &done["toolCallCount"]),
        (&json!("done"), &json!("plain answer"), &json!(0))
    );
    for builtins in [json!(true), json!(false)] {
        let e = Toolkit::build_from_json(
            &json!({"builtins": builtins, "relayTools": [{"name": "bash"}]}).to_string(),
        )
        .expect_err("a relay tool named bash");
        assert_eq!(e.code, ErrorCode::InvalidConfig);
        assert!(
            e.message
                .starts_with("relay tool name collides with a built-in tool: [bash]"),
            "{e}"
        );
    }
    let e = Toolkit::build_from_json(r#"{"relayTools": {"name": "x"}}"#).expect_err("not a list");
    assert!(
        e.message.starts_with("relayTools: expected an array"),
        "{e}"
    );
}
