//! The `run` cases where this port deliberately differs from the recording
//! (tests/conformance/divergences.json, run/*): each test runs the recorded
//! case's own inputs and asserts the decision instead of the recorded output.

mod common;
mod run_support;
mod translate_mock;

use serde_json::Value;
use std::sync::Mutex;

/// The cases change the working directory: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn case(id: &str) -> Value {
    common::cases()
        .into_iter()
        .map(|(_, c)| c)
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no case {id}"))
}

fn system_composed_with_the_skills_prompt(id: &str) {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let ran = run_support::run_case(&case(id));
    let result = ran.outcome.as_ref().expect("the run succeeds");
    assert_eq!(result["status"], "done");
    let system_prompt = ran.case["client"]["systemPrompt"]
        .as_str()
        .expect("a systemPrompt");
    let skills = ran.skills_prompt.clone();
    assert!(skills.contains("hello-world"), "{skills}");
    let want = format!("{system_prompt}\n\n{skills}");
    let body = ran.provider_requests[0].json_body();
    let sent = match ran.case["client"]["style"].as_str() {
        Some("anthropic") => body["system"].clone(),
        _ => {
            assert_eq!(body["messages"][0]["role"], "system");
            body["messages"][0]["content"].clone()
        }
    };
    assert_eq!(sent, Value::String(want));
}

#[test]
fn openai_run_composes_system_prompt_and_skills_prompt() {
    system_composed_with_the_skills_prompt("run/openai/skills-prompt-unwired");
}

#[test]
fn anthropic_run_composes_system_prompt_and_skills_prompt() {
    system_composed_with_the_skills_prompt("run/anthropic/skills-prompt-unwired");
}

#[test]
fn a_run_stopped_by_max_turns_is_incomplete_whatever_its_last_text() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let c = case("run/openai/max-turns-reached-keeps-last-text");
    let ran = run_support::run_case(&c);
    let got = ran.outcome.as_ref().expect("the run succeeds");
    assert_eq!(got["status"], "incomplete");
    assert_eq!(got["limit"], "maxTurns");
    assert_eq!(got["text"], "Working on it.");
    // Everything else is as recorded.
    let want = run_support::our_keys(&ran.case["expect"]["result"]);
    for key in [
        "messages",
        "toolCalls",
        "toolCallCount",
        "turns",
        "usage",
        "model",
    ] {
        assert_eq!(
            run_support::normal(&got[key]),
            run_support::normal(&want[key]),
            "{key}"
        );
    }
    assert_eq!(ran.provider_requests.len(), 1);
}

// Proposed (issue 25 L9; run/openai/malformed-arguments): an arguments
// string that is not JSON still runs the tool with {}, and read's result fed
// back says the path is required instead of "file not found: ". Everything
// else is compared with the recording as the parity test compares it.
#[test]
fn malformed_arguments_feed_back_that_the_path_is_required() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = case("run/openai/malformed-arguments");
    let mut replaced = 0;
    replace_strings(
        &mut c["expect"],
        "read: file not found: ",
        "read: path is required (a non-empty string)",
        &mut replaced,
    );
    assert!(
        replaced >= 2,
        "the recording feeds the result back: {replaced}"
    );
    let ran = run_support::run_case(&c);
    let problems = run_support::problems(&ran);
    assert!(problems.is_empty(), "{problems:#?}");
}

fn replace_strings(v: &mut Value, from: &str, to: &str, n: &mut usize) {
    match v {
        Value::String(s) if s == from => {
            *s = to.to_string();
            *n += 1;
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|i| replace_strings(i, from, to, n)),
        Value::Object(m) => m.values_mut().for_each(|i| replace_strings(i, from, to, n)),
        _ => {}
    }
}
