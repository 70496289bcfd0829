//! The pure SPEC §11 helpers: reading OpenAI-shaped messages, tools and tool
//! choices, and writing them in Anthropic's shape. Nothing here does I/O; every
//! function takes JSON values and gives JSON values, and none of them fails:
//! input of the wrong shape is read the way every toolnexus port reads it
//! (skipped, or taken as empty), which the translate_helpers vectors pin.

use crate::json::display_string;
use serde_json::{Map, Value};

/// A value Clojure would treat as true: anything but `null` and `false`.
fn truthy(v: Option<&Value>) -> bool {
    !matches!(v, None | Some(Value::Null) | Some(Value::Bool(false)))
}

/// `display_string` of a value that may be missing (missing reads as "").
fn text_of(v: Option<&Value>) -> String {
    v.map(display_string).unwrap_or_default()
}

/// Whether a string is empty or only whitespace.
pub fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// Maps a provider stop reason onto an OpenAI finish reason. A turn that
/// emitted any tool call is always "tool_calls"; otherwise max_tokens/length
/// give "length", refusal/content_filter give "content_filter", and anything
/// else (including nothing) gives "stop".
pub fn finish_reason_for(has_tool_calls: bool, provider_stop: Option<&Value>) -> &'static str {
    if has_tool_calls {
        return "tool_calls";
    }
    match text_of(provider_stop).as_str() {
        "max_tokens" | "length" => "length",
        "refusal" | "content_filter" => "content_filter",
        _ => "stop",
    }
}

/// The text of an OpenAI `content` value: a string as it is, a parts array as
/// the concatenation of its parts' string `text` fields, anything else "".
pub fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Tool-call arguments as an object, from either wire form. A string that is
/// not JSON text of an object (malformed, blank, an array, trailing garbage)
/// gives `{}`, as does any other non-object value.
pub fn args_object(args: Option<&Value>) -> Value {
    match args {
        Some(v @ Value::Object(_)) => v.clone(),
        Some(Value::String(s)) if !is_blank(s) => match serde_json::from_str::<Value>(s.trim()) {
            Ok(v @ Value::Object(_)) => v,
            _ => Value::Object(Map::new()),
        },
        _ => Value::Object(Map::new()),
    }
}

/// Tool-call arguments as the JSON string the OpenAI wire carries: a string
/// verbatim (even a malformed one), an object encoded, anything else "{}".
pub fn args_string(args: Option<&Value>) -> String {
    match args {
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Object(_)) => v.to_string(),
        _ => "{}".to_string(),
    }
}

/// A message's role as text ("" when absent).
fn role_of(message: &Value) -> String {
    text_of(message.get("role"))
}

/// The tool calls of an assistant message as `[{id, name, arguments}]`, with
/// `arguments` a JSON string. Entries without a `function` object are skipped.
pub fn tool_calls_of(message: &Value) -> Vec<Value> {
    let Some(calls) = message.get("tool_calls").and_then(Value::as_array) else {
        return Vec::new();
    };
    calls
        .iter()
        .filter_map(|tc| {
            let function = tc.get("function").filter(|f| f.is_object())?;
            let mut m = Map::new();
            m.insert("id".into(), Value::String(text_of(tc.get("id"))));
            m.insert("name".into(), Value::String(text_of(function.get("name"))));
            m.insert(
                "arguments".into(),
                Value::String(args_string(function.get("arguments"))),
            );
            Some(Value::Object(m))
        })
        .collect()
}

/// Whether any message has the role "system" or "developer" (case-sensitive).
pub fn has_system_message(messages: &[Value]) -> bool {
    messages
        .iter()
        .any(|m| matches!(role_of(m).as_str(), "system" | "developer"))
}

/// OpenAI `tool_choice` in Anthropic's shape, or `None` when nothing should be
/// sent ("auto", absent, empty function name, anything unrecognised).
pub fn openai_tool_choice_to_anthropic(choice: Option<&Value>) -> Option<Value> {
    let mut m = Map::new();
    match choice? {
        Value::String(s) => match s.as_str() {
            "required" | "any" => {
                m.insert("type".into(), Value::String("any".into()));
            }
            "none" => {
                m.insert("type".into(), Value::String("none".into()));
            }
            _ => return None,
        },
        Value::Object(obj) => {
            let name = obj.get("function").and_then(|f| f.get("name"));
            if text_of(name).is_empty() {
                return None;
            }
            m.insert("type".into(), Value::String("tool".into()));
            m.insert("name".into(), name.cloned().unwrap_or(Value::Null));
        }
        _ => return None,
    }
    Some(Value::Object(m))
}

/// `{"type":"object","properties":{}}`, the schema of a tool that gave none.
fn empty_object_schema() -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String("object".into()));
    m.insert("properties".into(), Value::Object(Map::new()));
    Value::Object(m)
}

/// OpenAI `tools` as Anthropic declarations. An entry that is already
/// Anthropic-shaped (a `name`, no `function`) passes through; entries with an
/// empty name or of no recognisable shape are skipped; an empty description
/// is left out; missing or non-object `parameters` become an empty object
/// schema.
pub fn openai_tools_to_anthropic(tools: &[Value]) -> Vec<Value> {
    tools
        .iter()
        .filter_map(|t| {
            let obj = t.as_object()?;
            let Some(function) = obj.get("function").filter(|f| f.is_object()) else {
                return truthy(obj.get("name")).then(|| t.clone());
            };
            let name = function.get("name");
            if text_of(name).is_empty() {
                return None;
            }
            let mut m = Map::new();
            m.insert("name".into(), name.cloned().unwrap_or(Value::Null));
            let description = function.get("description");
            if !text_of(description).is_empty() {
                m.insert(
                    "description".into(),
                    description.cloned().unwrap_or(Value::Null),
                );
            }
            let schema = match function.get("parameters") {
                Some(p @ Value::Object(_)) => p.clone(),
                _ => empty_object_schema(),
            };
            m.insert("input_schema".into(), schema);
            Some(Value::Object(m))
        })
        .collect()
}

/// A translate result's tool calls as an OpenAI `tool_calls` array, ready to
/// put on an assistant message. Missing fields come out as `null`.
pub fn tool_calls_json(result: &Value) -> Vec<Value> {
    let Some(calls) = result.get("toolCalls").and_then(Value::as_array) else {
        return Vec::new();
    };
    calls
        .iter()
        .map(|tc| {
            let field = |k: &str| tc.get(k).cloned().unwrap_or(Value::Null);
            let mut function = Map::new();
            function.insert("name".into(), field("name"));
            function.insert("arguments".into(), field("arguments"));
            let mut m = Map::new();
            m.insert("id".into(), field("id"));
            m.insert("type".into(), Value::String("function".into()));
            m.insert("function".into(), Value::Object(function));
            Value::Object(m)
        })
        .collect()
}

/// One message of the Anthropic conversation: `{role, content}`.
fn turn(role: &str, content: Value) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), Value::String(role.into()));
    m.insert("content".into(), content);
    Value::Object(m)
}

/// `{type, text}`.
fn text_block(text: String) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String("text".into()));
    m.insert("text".into(), Value::String(text));
    Value::Object(m)
}

/// An OpenAI conversation converted for Anthropic.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub messages: Vec<Value>,
    /// The hoisted system/developer texts, joined with a blank line.
    pub system: String,
}

impl Converted {
    /// `{"messages": [...], "system": "..."}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("messages".into(), Value::Array(self.messages.clone()));
        m.insert("system".into(), Value::String(self.system.clone()));
        Value::Object(m)
    }
}

/// Builds the Anthropic conversation turn by turn.
#[derive(Default)]
struct Conversation {
    out: Vec<Value>,
    system: Vec<String>,
    /// Tool results waiting to be closed off as one user turn.
    pending: Vec<Value>,
}

impl Conversation {
    /// Closes the pending tool results as ONE user turn: providers expect one
    /// result-bearing turn answering the assistant turn before it.
    fn drain(&mut self) {
        if !self.pending.is_empty() {
            let results = std::mem::take(&mut self.pending);
            self.out.push(turn("user", Value::Array(results)));
        }
    }

    fn add_system(&mut self, m: &Value) {
        self.drain();
        let text = content_text(m.get("content"));
        if !text.is_empty() {
            self.system.push(text);
        }
    }

    fn add_tool_result(&mut self, m: &Value) {
        let mut block = Map::new();
        block.insert("type".into(), Value::String("tool_result".into()));
        let id = m.get("tool_call_id");
        if truthy(id) {
            let id = text_of(id);
            if !id.is_empty() {
                block.insert("tool_use_id".into(), Value::String(id));
            }
        }
        block.insert(
            "content".into(),
            Value::String(content_text(m.get("content"))),
        );
        self.pending.push(Value::Object(block));
    }

    fn add_assistant(&mut self, m: &Value) {
        self.drain();
        let text = content_text(m.get("content"));
        let mut blocks = Vec::new();
        if !text.is_empty() {
            blocks.push(text_block(text));
        }
        for call in tool_calls_of(m) {
            let mut b = Map::new();
            b.insert("type".into(), Value::String("tool_use".into()));
            b.insert("id".into(), call["id"].clone());
            b.insert("name".into(), call["name"].clone());
            b.insert("input".into(), args_object(call.get("arguments")));
            blocks.push(Value::Object(b));
        }
        // An assistant turn with neither text nor tool calls would be rejected.
        if !blocks.is_empty() {
            self.out.push(turn("assistant", Value::Array(blocks)));
        }
    }

    fn add_user(&mut self, m: &Value) {
        self.drain();
        let content = m.get("content");
        let text = content_text(content);
        if !text.is_empty() {
            self.out.push(turn("user", Value::String(text)));
        } else if let Some(parts) = content.filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
        {
            // A parts array with no text (an image alone) goes through as given.
            self.out.push(turn("user", parts.clone()));
        }
    }
}

/// OpenAI `messages` converted for Anthropic: assistant `tool_calls` become
/// `tool_use` blocks with their arguments parsed to objects; consecutive
/// `tool` results merge into one user turn of `tool_result` blocks;
/// system/developer messages are hoisted out and joined with a blank line;
/// any other role is a user turn. Entries that are not objects are skipped.
pub fn openai_messages_to_anthropic(messages: &[Value]) -> Converted {
    let mut conv = Conversation::default();
    for m in messages.iter().filter(|m| m.is_object()) {
        match role_of(m).as_str() {
            "system" | "developer" => conv.add_system(m),
            "tool" | "function" => conv.add_tool_result(m),
            "assistant" => conv.add_assistant(m),
            _ => conv.add_user(m),
        }
    }
    conv.drain();
    Converted {
        messages: conv.out,
        system: conv.system.join("\n\n"),
    }
}
