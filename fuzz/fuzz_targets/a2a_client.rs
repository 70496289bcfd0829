//! The A2A client's reading of what a remote agent sends (src/a2a_tool.rs,
//! SPEC §7A): fuzzed text read as an Agent Card (its name, endpoint and
//! wire, then one tool per skill) and as the JSON-RPC answers of
//! `SendMessage` / `GetTask` on each wire (a 1.0 answer converted to the
//! shape the client reads), then the ended task's answer.
//!
//! Nothing may panic. A card read is either refused with a sentence or
//! gives tools whose names are distinct, `<prefix>_<id>` of `[A-Za-z0-9_-]`;
//! an answer is its `result` or its error's text; on the 1.0 wire a task's
//! state reads without the `TASK_STATE_` form (lower case, no `_`); a
//! non-completed ended task's error names the task and its state.
//!
//! The first byte picks: bits 0-1 the agent's wire (the card's, toolnexus,
//! 0.3, 1.0); the rest is the card, then after a NUL byte the answer, as
//! the HTTP body the client would read (text that is not JSON reads as
//! null, as it does there).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolnexus::a2a_tool::{card_tools, ended, read_card, rpc_result, Agent, Wire};

fn body(bytes: &[u8]) -> Value {
    serde_json::from_str(&String::from_utf8_lossy(bytes)).unwrap_or(Value::Null)
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let mut agent = Agent::from_card("http://127.0.0.1:9/.well-known/agent-card.json");
    agent.protocol = [
        None,
        Some(Wire::Toolnexus),
        Some(Wire::V03),
        Some(Wire::V10),
    ][usize::from(pick & 3)];
    let (card_bytes, answer_bytes) = match rest.iter().position(|b| *b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let wire = match read_card(&agent, body(card_bytes)) {
        Ok(card) => {
            if let Some(w) = agent.protocol {
                assert_eq!(card.wire, w, "the configured wire was not kept");
            }
            if let Ok(loaded) = card_tools(&agent, &card) {
                let mut names = std::collections::HashSet::new();
                for t in &loaded.tools {
                    assert!(
                        t.name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                        "a tool name out of [A-Za-z0-9_-]: {:?}",
                        t.name
                    );
                    assert!(names.insert(t.name.clone()), "two tools {:?}", t.name);
                }
            }
            card.wire
        }
        Err(why) => {
            assert!(!why.is_empty());
            agent.protocol.unwrap_or(Wire::Toolnexus)
        }
    };
    let answer = body(answer_bytes);
    // An error answer is its text; nothing to check beyond not panicking.
    if let Ok(task) = rpc_result(wire, &answer) {
        let state = task
            .pointer("/status/state")
            .and_then(Value::as_str)
            .unwrap_or("submitted")
            .to_string();
        if wire == Wire::V10 {
            assert!(
                !state.contains('_') && state == state.to_ascii_lowercase(),
                "a 1.0 state read as {state:?}"
            );
        }
        let id = task.get("id").and_then(Value::as_str).unwrap_or_default();
        if let Err(text) = ended(id, &state, &task) {
            assert_ne!(state, "completed");
            assert!(
                text.starts_with(&format!("A2A task {id} {state}")),
                "{text}"
            );
        }
    }
});
