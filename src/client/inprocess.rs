//! SPEC §8 In-process models: a client whose turns a host `generate`
//! function answers instead of an HTTP endpoint, so a host with a local
//! model runs the whole loop with no wire at all.
//!
//! Messages are always OpenAI-shaped (there is no wire to be neutral
//! about). `generate` is called with `{model, messages, tools, turn}` — the
//! transcript and the toolkit's OpenAI declarations as the loop would send
//! them, plus the `requestParams` under `params` when there are any — and
//! answers one assistant message: `{content}` or `{toolCalls: [{id?, name,
//! arguments}]}`, with an optional `usage` `{promptTokens,
//! completionTokens, totalTokens?}`. This module turns that answer into
//! the chat-completion envelope the loop reads: `finish_reason` derived,
//! tool arguments encoded unless already a string, missing ids made up.

use crate::json::type_name;
use serde_json::{json, Map, Value};

/// The `generate` event for one turn, from the OpenAI-shaped body the loop
/// built.
pub fn request_of(body: &Value, turn: u32) -> Value {
    let mut out = Map::new();
    out.insert(
        "model".into(),
        body.get("model").cloned().unwrap_or(Value::Null),
    );
    out.insert(
        "messages".into(),
        body.get("messages")
            .cloned()
            .unwrap_or(Value::Array(Vec::new())),
    );
    out.insert(
        "tools".into(),
        body.get("tools")
            .cloned()
            .unwrap_or(Value::Array(Vec::new())),
    );
    out.insert("turn".into(), json!(turn));
    if let Value::Object(b) = body {
        let params: Map<String, Value> = b
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "model" | "messages" | "tools" | "tool_choice"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !params.is_empty() {
            out.insert("params".into(), Value::Object(params));
        }
    }
    Value::Object(out)
}

fn tokens(usage: &Map<String, Value>, camel: &str, snake: &str) -> u64 {
    usage
        .get(camel)
        .or_else(|| usage.get(snake))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The chat-completion envelope of a `generate` answer; `Err` says what is
/// wrong with the answer.
pub fn response_of(answer: &Value) -> Result<Value, String> {
    let Value::Object(a) = answer else {
        return Err(format!(
            "expected an object {{content}} or {{toolCalls}}, got {}",
            type_name(answer)
        ));
    };
    let calls = match a.get("toolCalls").or_else(|| a.get("tool_calls")) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, c)| tool_call(i, c))
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return Err(format!(
                "toolCalls must be an array, got {}",
                type_name(other)
            ))
        }
    };
    let content = match a.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(format!(
                "content must be a string, got {}",
                type_name(other)
            ))
        }
    };
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    let finish = if calls.is_empty() {
        message.insert("content".into(), json!(content.unwrap_or_default()));
        "stop"
    } else {
        message.insert("content".into(), content.map_or(Value::Null, Value::String));
        message.insert("tool_calls".into(), Value::Array(calls));
        "tool_calls"
    };
    let usage = match a.get("usage") {
        Some(Value::Object(u)) => {
            let p = tokens(u, "promptTokens", "prompt_tokens");
            let c = tokens(u, "completionTokens", "completion_tokens");
            let t = match tokens(u, "totalTokens", "total_tokens") {
                0 => p.saturating_add(c),
                t => t,
            };
            json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": t})
        }
        _ => json!({"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}),
    };
    Ok(json!({
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }))
}

/// One flat tool call `{id?, name, arguments}` in OpenAI's shape.
fn tool_call(i: usize, c: &Value) -> Result<Value, String> {
    let name = match c.get("name") {
        Some(Value::String(n)) if !n.is_empty() => n.clone(),
        _ => return Err(format!("toolCalls[{i}].name must be a non-empty string")),
    };
    let id = match c.get("id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => format!("call_{i}"),
    };
    let arguments = match c.get("arguments").or_else(|| c.get("args")) {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    Ok(json!({
        "id": id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_answer_becomes_a_stopped_completion_with_its_usage() {
        let r = response_of(
            &json!({"content": "hi", "usage": {"promptTokens": 3, "completionTokens": 2}}),
        )
        .expect("envelope");
        assert_eq!(
            r,
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                                "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
        );
    }

    #[test]
    fn tool_calls_cross_flat_and_are_encoded_with_ids_made_up() {
        let r = response_of(&json!({"toolCalls": [
            {"name": "add", "arguments": {"a": 2, "b": 3}},
            {"id": "mine", "name": "echo", "arguments": "{\"text\":\"x\"}"},
            {"name": "noargs"}
        ]}))
        .expect("envelope");
        assert_eq!(r["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(
            r["choices"][0]["message"],
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": "add", "arguments": "{\"a\":2,\"b\":3}"}},
                {"id": "mine", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"x\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "noargs", "arguments": "{}"}}
            ]})
        );
        assert_eq!(r["usage"]["total_tokens"], 0);
    }

    #[test]
    fn an_answer_of_the_wrong_shape_says_what_is_wrong() {
        for (answer, says) in [
            (json!("text"), "expected an object"),
            (json!({"toolCalls": {}}), "toolCalls must be an array"),
            (
                json!({"toolCalls": [{"arguments": "{}"}]}),
                "toolCalls[0].name",
            ),
            (json!({"content": 5}), "content must be a string"),
        ] {
            let e = response_of(&answer).expect_err("a bad answer");
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn the_request_carries_messages_tools_turn_and_any_params() {
        let body = json!({"model": "local", "messages": [{"role": "user", "content": "q"}],
                          "tools": [{"type": "function"}], "tool_choice": "auto", "temperature": 0});
        assert_eq!(
            request_of(&body, 2),
            json!({"model": "local", "messages": [{"role": "user", "content": "q"}],
                   "tools": [{"type": "function"}], "turn": 2, "params": {"temperature": 0}})
        );
        let bare = request_of(&json!({"model": "m", "messages": []}), 0);
        assert_eq!(
            bare,
            json!({"model": "m", "messages": [], "tools": [], "turn": 0})
        );
    }
}
