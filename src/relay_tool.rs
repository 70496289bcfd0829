//! Relay tools (SPEC §10 addendum, source `relay`): declaration-only tools.
//!
//! A relay tool is declared to the model like any other, but nothing runs
//! here: a call suspends the run with a Request of kind `tool_call` carrying
//! the call (`data.calls: [{id, name, input, arguments}]`), the host runs it
//! itself, and its output comes back as that call's tool result. This is what
//! lets the library sit between a model and a caller that executes its own
//! tools (the OpenAI function-calling posture).
//!
//! - The tool cannot know its provider call id: the loop stamps it
//!   ([`stamp`]), and folds every relay call of one assistant turn into the
//!   first relay Request ([`merge`]), in call order. The run still halts on
//!   the turn's first suspension; when that one is a relay call, the one
//!   Request carries the whole turn's relay calls.
//! - Resolution: a durable host resumes in fill mode
//!   (`{"mode":"fill"}` on `tn_run_resume`, the addendum's `runWithAnswer`),
//!   with `answer.data.results: [{id, output, isError?}]` (or the one-call
//!   shorthand `data.output` / `data.isError`): every open slot is filled and
//!   the relay tool is never run again. An in-process `waitFor`, and a
//!   resume in rerun mode, hand an `ok` Answer to the tool's re-run
//!   instead, which answers from `data.output` / `data.isError` (the loop
//!   answers a declined one itself: `declined/expired: <prompt>`; a direct
//!   execute with a declined Answer gives `relay declined for <name>:
//!   <reason>`).
//! - A relay tool named like a built-in tool fails the toolkit build, with
//!   built-ins on or off ([`check_collisions`]).

use crate::error::{Error, Result};
use crate::json::type_name;
use crate::tool::{ExecContext, Execute, Source, Tool, ToolResult};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The Request kind of a relayed call.
pub const KIND: &str = "tool_call";

/// The keys a `relayTools` entry may carry.
const KEYS: [&str; 3] = ["name", "description", "inputSchema"];

/// Builds the tool declared by `relayTools[index]`:
/// `{name, description?, inputSchema?}`.
pub fn relay_tool(index: usize, decl: &Value) -> Result<Tool> {
    let at = |what: &str| format!("relayTools[{index}]{what}");
    let Value::Object(obj) = decl else {
        return Err(Error::invalid_config(format!(
            "{}: expected an object {{name, description?, inputSchema?}}, got {}",
            at(""),
            type_name(decl)
        )));
    };
    if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(Error::invalid_config(format!(
            "{}: unknown key '{k}' (known keys: {})",
            at(""),
            KEYS.join(", ")
        )));
    }
    let name = match obj.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(other) => {
            return Err(Error::invalid_config(format!(
                "{}: expected a non-empty string, got {}",
                at(".name"),
                type_name(other)
            )))
        }
        None => return Err(Error::invalid_config(format!("{}: missing", at(".name")))),
    };
    let description = match obj.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(Error::invalid_config(format!(
                "{}: expected a string, got {}",
                at(".description"),
                type_name(other)
            )))
        }
    };
    let schema = match obj.get("inputSchema") {
        None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
        Some(s @ Value::Object(_)) => s.clone(),
        Some(other) => {
            return Err(Error::invalid_config(format!(
                "{}: expected a JSON Schema object, got {}",
                at(".inputSchema"),
                type_name(other)
            )))
        }
    };
    let exec = Arc::new(RelayExec { name: name.clone() });
    Ok(Tool::new(
        name,
        description,
        Some(schema),
        Source::Relay,
        exec,
    ))
}

/// Fails when a relay tool is named like a built-in tool, whether built-ins
/// are on or not: a future built-in must not capture a declaration-only
/// tool. A tool of another source may still shadow a built-in.
pub fn check_collisions<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut bad: Vec<&str> = names
        .into_iter()
        .filter(|n| crate::builtin::NAMES.contains(n))
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    bad.sort_unstable();
    bad.dedup();
    Err(Error::invalid_config(format!(
        "relay tool name collides with a built-in tool: [{}] — rename the relay tool \
         (the guard applies even with builtins disabled, so a future builtin cannot \
         capture a declaration-only tool)",
        bad.join(", ")
    )))
}

struct RelayExec {
    name: String,
}

impl Execute for RelayExec {
    fn execute(&self, args: &Value, ctx: &ExecContext) -> ToolResult {
        if let Some(answer) = &ctx.answer {
            return from_answer(&self.name, answer);
        }
        let input = if args.is_object() {
            args.clone()
        } else {
            Value::Object(Map::new())
        };
        let request = json!({
            "id": format!("req-{}", uuid::Uuid::new_v4()),
            "kind": KIND,
            "prompt": format!("relay tool call {} to the caller for execution", self.name),
            "data": {"calls": [{
                "id": "",
                "name": self.name,
                "arguments": input.to_string(),
                "input": input,
            }]},
        });
        let mut meta = Map::new();
        meta.insert("pending".into(), request);
        ToolResult::error("Waiting for the caller to run the tool.").with_metadata(meta)
    }
}

/// The result a re-run with `ctx.answer` gives: the host's output, or the
/// decline as an error result (neither ends the run).
fn from_answer(name: &str, answer: &Value) -> ToolResult {
    if answer.get("ok") != Some(&Value::Bool(true)) {
        let reason = match answer.get("reason") {
            Some(Value::String(r)) if !r.is_empty() => r.as_str(),
            _ => "declined",
        };
        return ToolResult::error(format!("relay declined for {name}: {reason}"));
    }
    let data = answer.get("data");
    let output = data
        .and_then(|d| d.get("output"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let is_error = data
        .and_then(|d| d.get("isError"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if is_error {
        ToolResult::error(output)
    } else {
        ToolResult::ok(output)
    }
}

/// Whether `request` is a relayed call's Request.
pub fn is_relay(request: &Value) -> bool {
    request.get("kind").and_then(Value::as_str) == Some(KIND)
}

/// Gives the relay calls of `request` that have no id yet the provider's
/// call id `id` (the tool could not know it). Any other Request is left as
/// it is.
pub fn stamp(request: &mut Value, id: &str) {
    if !is_relay(request) {
        return;
    }
    let Some(calls) = request
        .pointer_mut("/data/calls")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for call in calls {
        if call
            .get("id")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            if let Some(c) = call.as_object_mut() {
                c.insert("id".into(), Value::String(id.to_string()));
            }
        }
    }
}

/// Appends the relay calls of `other` (a later relay Request of the same
/// turn) to `first`'s `data.calls`. Nothing happens unless both are relay
/// Requests.
pub fn merge(first: &mut Value, other: &Value) {
    if !is_relay(first) || !is_relay(other) {
        return;
    }
    let more = other
        .pointer("/data/calls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(calls) = first
        .pointer_mut("/data/calls")
        .and_then(Value::as_array_mut)
    {
        calls.extend(more);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(decl: Value) -> Tool {
        relay_tool(0, &decl).expect("a relay tool")
    }

    #[test]
    fn a_call_suspends_with_one_tool_call_request() {
        let t = tool(json!({"name": "lookup", "description": "look up"}));
        assert_eq!(t.source, Source::Relay);
        assert_eq!(t.input_schema, json!({"type": "object", "properties": {}}));
        let r = t.exec.execute(&json!({"q": "x"}), &ExecContext::default());
        let pending = &r.metadata.as_ref().expect("metadata")["pending"];
        assert_eq!(pending["kind"], "tool_call");
        assert_eq!(
            pending["prompt"],
            "relay tool call lookup to the caller for execution"
        );
        assert_eq!(
            pending["data"]["calls"],
            json!([{"id": "", "name": "lookup", "input": {"q": "x"}, "arguments": "{\"q\":\"x\"}"}])
        );
    }

    #[test]
    fn a_rerun_answers_from_the_answer() {
        let t = tool(json!({"name": "lookup"}));
        let run = |answer: Value| {
            let ctx = ExecContext {
                answer: Some(answer),
                ..ExecContext::default()
            };
            t.exec.execute(&json!({}), &ctx)
        };
        let ok = run(json!({"id": "r", "ok": true, "data": {"output": "sunny"}}));
        assert_eq!((ok.output.as_str(), ok.is_error), ("sunny", false));
        let failed =
            run(json!({"id": "r", "ok": true, "data": {"output": "500", "isError": true}}));
        assert_eq!((failed.output.as_str(), failed.is_error), ("500", true));
        let declined = run(json!({"id": "r", "ok": false}));
        assert_eq!(declined.output, "relay declined for lookup: declined");
        let expired = run(json!({"id": "r", "ok": false, "reason": "expired"}));
        assert_eq!(expired.output, "relay declined for lookup: expired");
    }

    #[test]
    fn stamp_and_merge_carry_the_turn_in_call_order() {
        let t = tool(json!({"name": "a"}));
        let u = tool(json!({"name": "b"}));
        let pending = |t: &Tool| {
            t.exec
                .execute(&json!({}), &ExecContext::default())
                .metadata
                .expect("md")["pending"]
                .clone()
        };
        let (mut first, mut second) = (pending(&t), pending(&u));
        stamp(&mut first, "c1");
        stamp(&mut second, "c2");
        merge(&mut first, &second);
        let ids: Vec<&str> = first["data"]["calls"]
            .as_array()
            .expect("calls")
            .iter()
            .map(|c| c["id"].as_str().expect("id"))
            .collect();
        assert_eq!(ids, ["c1", "c2"]);
        // Another kind of Request is neither stamped nor merged into.
        let mut auth = json!({"id": "x", "kind": "authorization", "prompt": "log in"});
        stamp(&mut auth, "c3");
        merge(&mut auth, &second);
        assert_eq!(
            auth,
            json!({"id": "x", "kind": "authorization", "prompt": "log in"})
        );
    }

    #[test]
    fn bad_declarations_and_collisions_are_named() {
        let e = relay_tool(2, &json!({"name": ""})).expect_err("empty name");
        assert!(e.message.starts_with("relayTools[2].name"), "{}", e.message);
        let e = relay_tool(0, &json!({"name": "x", "url": "u"})).expect_err("unknown key");
        assert!(e.message.contains("unknown key 'url'"), "{}", e.message);
        let e = check_collisions(["lookup", "bash", "read"]).expect_err("collides");
        assert!(
            e.message
                .starts_with("relay tool name collides with a built-in tool: [bash, read]"),
            "{}",
            e.message
        );
        assert!(check_collisions(["lookup"]).is_ok());
    }
}
