//! Remote A2A agents as tools (SPEC §7A) against a stub agent on loopback:
//! upstream's behaviours (tool names and schema, the Bearer header expanded
//! at call time, polling to completion, failure, timeout, the three cancel
//! points with their exact texts, `enabled:false`, `addAgent`, a failing
//! agent isolated in the status) and bad cards.

mod a2a_stub;

use a2a_stub::{CardKind, Stub};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use toolnexus::cancel::CancelToken;
use toolnexus::config::ToolkitConfig;
use toolnexus::tool::{ExecContext, ToolResult};
use toolnexus::toolkit::Toolkit;

fn build(cfg: Value) -> Toolkit {
    let cfg = ToolkitConfig::from_value(&cfg).unwrap_or_else(|e| panic!("config: {e}"));
    Toolkit::build(&cfg).unwrap_or_else(|e| panic!("build: {e}"))
}

fn reviewer(stub: &Stub, extra: Value) -> Toolkit {
    let mut agent = json!({"card": stub.card_url(), "pollEvery": 10});
    if let (Some(a), Value::Object(more)) = (agent.as_object_mut(), extra) {
        a.extend(more);
    }
    build(json!({"builtins": false, "agents": {"reviewer": agent}}))
}

fn call(tk: &Toolkit, tool: &str, task: &str, ctx: &ExecContext) -> ToolResult {
    tk.execute(tool, json!({"task": task}), ctx)
}

fn md<'a>(r: &'a ToolResult, key: &str) -> &'a Value {
    r.metadata
        .as_ref()
        .and_then(|m| m.get(key))
        .unwrap_or_else(|| panic!("no metadata {key} in {:?}", r.metadata))
}

fn status(tk: &Toolkit) -> Value {
    serde_json::from_str(&tk.render("status").expect("status")).expect("status json")
}

#[test]
fn each_card_skill_is_a_tool_with_the_pinned_shape() {
    let stub = Stub::start();
    let tk = reviewer(&stub, json!({}));
    assert_eq!(
        tk.tool_names(),
        ["reviewer_fail", "reviewer_plan", "reviewer_review"]
    );
    let decls: Value = serde_json::from_str(&tk.render("tools").expect("tools")).expect("json");
    let review = decls
        .as_array()
        .and_then(|d| d.iter().find(|t| t["name"] == "reviewer_review"))
        .expect("reviewer_review declared");
    assert_eq!(review["source"], "a2a");
    assert_eq!(review["description"], "Reviews a text");
    assert_eq!(
        review["inputSchema"].to_string(),
        r#"{"type":"object","properties":{"task":{"type":"string","description":"The task to send to the agent, in natural language."}},"required":["task"],"additionalProperties":false}"#
    );
    assert_eq!(
        status(&tk)["statuses"]["agents.reviewer"],
        "connected",
        "{}",
        status(&tk)
    );
}

#[test]
fn a_task_is_sent_then_polled_to_completion_with_the_header_expanded_at_call_time() {
    let stub = Stub::start();
    std::env::set_var("TN_A2A_TEST_TOKEN", "built-value");
    let tk = reviewer(
        &stub,
        json!({"headers": {"Authorization": "Bearer ${TN_A2A_TEST_TOKEN}"}}),
    );
    // Expanded when the call is made, not when the toolkit was built.
    std::env::set_var("TN_A2A_TEST_TOKEN", "a2a-secret");
    let r = call(
        &tk,
        "reviewer_review",
        "please review this",
        &ExecContext::default(),
    );
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.output, "REVIEWED");
    assert_eq!(md(&r, "agent"), "reviewer");
    assert_eq!(md(&r, "taskId"), "t1");
    assert_eq!(md(&r, "state"), "completed");
    assert_eq!(md(&r, "polls"), 2);
    assert!(md(&r, "ms").is_u64());
    assert_eq!(stub.count("SendMessage"), 1);
    assert_eq!(stub.count("GetTask"), 2);
    let send = stub
        .log()
        .into_iter()
        .find(|s| s.rpc == "SendMessage")
        .expect("sent");
    assert_eq!(send.authorization.as_deref(), Some("Bearer a2a-secret"));
    assert_eq!(send.path, "/");
    let p = &send.body["params"];
    assert_eq!(p["message"]["role"], "user");
    assert_eq!(
        p["message"]["parts"],
        json!([{"kind": "text", "text": "please review this"}])
    );
    assert!(p["message"]["messageId"].is_string());
    assert_eq!(p["configuration"], json!({"blocking": false}));
    // The secret never comes back in the result.
    assert!(!r.to_json_string().contains("a2a-secret"));
}

#[test]
fn a_failed_task_is_an_error_result_with_the_agents_message() {
    let stub = Stub::start();
    let tk = reviewer(&stub, json!({}));
    let r = call(&tk, "reviewer_fail", "fail please", &ExecContext::default());
    assert!(r.is_error);
    assert_eq!(r.output, "A2A task t1 failed: boom");
    assert_eq!(md(&r, "state"), "failed");
    assert_eq!(md(&r, "polls"), 2);
}

#[test]
fn a_task_that_never_ends_is_bounded_by_the_call_timeout() {
    let stub = Stub::start();
    let tk = reviewer(&stub, json!({}));
    let ctx = ExecContext {
        timeout_ms: Some(300),
        ..ExecContext::default()
    };
    let started = Instant::now();
    let r = call(&tk, "reviewer_review", "slow", &ctx);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(r.is_error);
    assert_eq!(
        r.output,
        "A2A task t1 timed out after 300ms (state=working)"
    );
    assert_eq!(md(&r, "state"), "working");
    assert!(md(&r, "polls").as_u64() >= Some(1));
}

#[test]
fn the_agent_timeout_is_the_budget_without_a_call_timeout() {
    let stub = Stub::start();
    let tk = reviewer(&stub, json!({"timeout": 250}));
    let r = call(&tk, "reviewer_review", "slow", &ExecContext::default());
    assert_eq!(
        r.output,
        "A2A task t1 timed out after 250ms (state=working)"
    );
}

fn cancel_when<F: FnOnce() + Send + 'static>(
    wait: F,
    token: &CancelToken,
) -> std::thread::JoinHandle<()> {
    let token = token.clone();
    std::thread::spawn(move || {
        wait();
        token.cancel();
    })
}

#[test]
fn cancel_between_polls_is_canceled_and_polls_no_more() {
    let stub = std::sync::Arc::new(Stub::start());
    let tk = reviewer(&stub, json!({"pollEvery": 60_000}));
    let token = CancelToken::new();
    let s = std::sync::Arc::clone(&stub);
    // Once the client has read the whole SendMessage reply.
    let canceller = cancel_when(move || drop(s.wait_for("SendMessage:read")), &token);
    let ctx = ExecContext {
        cancel: Some(token),
        ..ExecContext::default()
    };
    let started = Instant::now();
    let r = call(&tk, "reviewer_review", "slow", &ctx);
    canceller.join().expect("canceller");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(r.is_error);
    assert_eq!(r.output, "A2A task t1 canceled");
    assert_eq!(md(&r, "state"), "canceled");
    assert_eq!(md(&r, "polls"), 0);
    assert_eq!(stub.count("GetTask"), 0);
}

#[test]
fn cancel_during_get_task_is_exactly_the_canceled_text() {
    let stub = std::sync::Arc::new(Stub::start());
    let tk = reviewer(&stub, json!({}));
    let token = CancelToken::new();
    let s = std::sync::Arc::clone(&stub);
    let canceller = cancel_when(move || drop(s.wait_for("GetTask")), &token);
    let ctx = ExecContext {
        cancel: Some(token),
        ..ExecContext::default()
    };
    let started = Instant::now();
    let r = call(&tk, "reviewer_review", "hangpoll", &ctx);
    canceller.join().expect("canceller");
    // The hanging reply takes 5 s; the cancel ends the call before it.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.output, "A2A task t1 canceled");
    assert_eq!(md(&r, "state"), "canceled");
    assert_eq!(md(&r, "taskId"), "t1");
}

#[test]
fn cancel_during_send_message_has_no_task_id_and_never_polls() {
    let stub = std::sync::Arc::new(Stub::start());
    let tk = reviewer(&stub, json!({}));
    let token = CancelToken::new();
    let s = std::sync::Arc::clone(&stub);
    let canceller = cancel_when(move || drop(s.wait_for("SendMessage")), &token);
    let ctx = ExecContext {
        cancel: Some(token),
        ..ExecContext::default()
    };
    let started = Instant::now();
    let r = call(&tk, "reviewer_review", "hangsend", &ctx);
    canceller.join().expect("canceller");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    // Two spaces: the task id is empty.
    assert_eq!(r.output, "A2A task  canceled");
    assert_eq!(md(&r, "taskId"), "");
    assert_eq!(stub.count("GetTask"), 0);
}

#[test]
fn a_transport_failure_is_an_error_result_with_metadata() {
    let stub = Stub::start();
    let tk = reviewer(&stub, json!({"timeout": 20_000}));
    let r = call(&tk, "reviewer_review", "hangsend", &ExecContext::default());
    assert!(r.is_error);
    assert_eq!(r.output, "HTTP 500: hung");
    assert_eq!(md(&r, "agent"), "reviewer");
    assert_eq!(md(&r, "state"), "submitted");
}

#[test]
fn disabled_agents_are_skipped_and_a_failing_agent_is_isolated() {
    let good = Stub::start();
    let missing = Stub::with_card(CardKind::Status(404));
    let not_json = Stub::with_card(CardKind::NotJson);
    let no_skills = Stub::with_card(CardKind::NoSkills);
    let off = Stub::start();
    let tk = build(json!({"builtins": false, "agents": {
        "good": {"card": good.card_url(), "pollEvery": 10},
        "missing": {"card": missing.card_url()},
        "notJson": {"card": not_json.card_url()},
        "noSkills": {"card": no_skills.card_url()},
        "off": {"card": off.card_url(), "enabled": false},
        "cardless": {"headers": {}}
    }}));
    assert_eq!(
        tk.tool_names(),
        ["reviewer_fail", "reviewer_plan", "reviewer_review"]
    );
    // The disabled agent's card was never fetched.
    assert!(off.log().is_empty());
    let st = status(&tk);
    assert_eq!(st["statuses"]["agents.good"], "connected", "{st}");
    assert_eq!(
        st["errors"]["agents.missing"], "HTTP 404: {\"error\":\"no card here\"}",
        "{st}"
    );
    assert!(
        st["errors"]["agents.notJson"]
            .as_str()
            .is_some_and(|e| e.contains("is not a JSON object")),
        "{st}"
    );
    assert!(
        st["errors"]["agents.noSkills"]
            .as_str()
            .is_some_and(|e| e.contains("has no \"skills\" array")),
        "{st}"
    );
    let r = call(&tk, "reviewer_review", "go", &ExecContext::default());
    assert_eq!(r.output, "REVIEWED");
}

#[test]
fn add_agent_registers_on_the_live_toolkit_and_the_first_name_wins() {
    let stub = Stub::start();
    let tk = build(json!({"builtins": false}));
    assert!(tk.tool_names().is_empty());
    let mut agent = toolnexus::a2a_tool::Agent::from_card(&stub.card_url());
    agent.poll_every_ms = 10;
    let added = tk.add_agent(&agent, None).expect("added");
    assert_eq!(
        added["added"],
        json!(["reviewer_review", "reviewer_plan", "reviewer_fail"])
    );
    assert_eq!(
        tk.tool_names(),
        ["reviewer_fail", "reviewer_plan", "reviewer_review"]
    );
    assert_eq!(
        call(&tk, "reviewer_plan", "x", &ExecContext::default()).output,
        "REVIEWED"
    );
    let again = tk.add_agent(&agent, None).expect("added again");
    assert_eq!(again["added"], json!([]));
    assert_eq!(again["skipped"].as_array().map(Vec::len), Some(3));
    let bad = Stub::with_card(CardKind::NoSkills);
    let e = tk
        .add_agent(
            &toolnexus::a2a_tool::Agent::from_card(&bad.card_url()),
            None,
        )
        .expect_err("no skills");
    assert_eq!(e.code, toolnexus::error::ErrorCode::InvalidArgument);
}

#[test]
fn a_card_with_ten_thousand_skills_gives_ten_thousand_tools() {
    let stub = Stub::with_card(CardKind::Many(10_000));
    let started = Instant::now();
    let tk = build(json!({"builtins": false, "agents": [stub.card_url()]}));
    assert_eq!(tk.tool_names().len(), 10_000);
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(status(&tk)["statuses"][stub.card_url()], "connected");
}

#[test]
fn skill_ids_colliding_after_sanitizing_are_reported_and_the_first_is_kept() {
    let stub = Stub::with_card(CardKind::Colliding);
    let tk = build(
        json!({"builtins": false, "agents": {"r": {"card": stub.card_url(), "pollEvery": 10}}}),
    );
    // One tool: the first skill's, not shadowed by the later ones.
    assert_eq!(tk.tool_names(), ["reviewer_re_view"]);
    let decl = tk.render("tools").expect("tools");
    assert!(decl.contains("first") && !decl.contains("second"), "{decl}");
    let st = status(&tk);
    let warnings: Vec<&str> = st["warnings"]
        .as_array()
        .map(|w| w.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(warnings.len(), 2, "{st}");
    assert!(
        warnings[0]
            .contains(r#"skills "re view" and "re.view" both become the tool reviewer_re_view"#),
        "{st}"
    );
    assert!(warnings[1].contains(r#""re_view" is left out"#), "{st}");
    assert_eq!(st["statuses"]["agents.r"], "connected", "{st}");
    // The kept tool calls the agent.
    let r = call(&tk, "reviewer_re_view", "go", &ExecContext::default());
    assert_eq!(r.output, "REVIEWED");
    // Through add_agent, the same: reported, not shadowed.
    let live = build(json!({"builtins": false}));
    let added = live
        .add_agent(
            &toolnexus::a2a_tool::Agent::from_card(&stub.card_url()),
            None,
        )
        .expect("added");
    assert_eq!(added["added"], json!(["reviewer_re_view"]));
    assert_eq!(
        added["warnings"].as_array().map(Vec::len),
        Some(2),
        "{added}"
    );
}
