//! What a provider turn of the loop (SPEC §8) is made of, whatever the
//! dialect: the request [`Body`], a tool [`Call`], a result fed back
//! ([`Fed`]), the [`Usage`], and the few readers every dialect shares. The
//! dialect files (`openai.rs`, `anthropic.rs`, `gemini.rs`, `responses.rs`)
//! build on this; [`super::dialect`] picks one of them per style.

use super::node::{self, Node, Num};
use super::{ClientConfig, Style, RESERVED_PARAMS};
use bumpalo::Bump;
use serde::ser::{Serialize, Serializer};
use serde_json::{json, Map, Value};

/// One provider request body, borrowing the run's transcript and tools.
/// openai: `{model, messages, tools?, tool_choice:"auto"?}` with the system
/// text already a message; anthropic: `{model, max_tokens, system, messages,
/// tools?}`; gemini: `{contents, systemInstruction?, tools?}` (the model is in
/// the URL, the transcript is the `contents`, the tools are the
/// declarations in one `functionDeclarations` wrapper); responses: `{model,
/// input, instructions?, tools?, tool_choice:"auto"?}`.
/// `requestParams` are merged last and win (SPEC §8 Gap 1); on gemini and
/// responses they are mapped by the dialect's `merge_params`.
pub struct Body<'a> {
    pub style: Style,
    pub model: &'a str,
    pub system: &'a str,
    pub messages: &'a [Value],
    pub tools: &'a [Value],
    pub params: &'a Map<String, Value>,
    /// SPEC §8 Streaming: `stream: true`, and on the openai style
    /// `stream_options.include_usage` (a `stream_options` in `params` wins).
    pub stream: bool,
}

/// A body value: borrowed from the run or made by the dialect.
pub(crate) enum Field<'a> {
    Str(&'a str),
    Values(&'a [Value]),
    Value(&'a Value),
    Number(u64),
    Bool(bool),
    Owned(Value),
}

/// The entries of a body, in order.
pub(crate) type Entries<'a> = Vec<(&'a str, Field<'a>)>;

impl Serialize for Field<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Str(t) => s.serialize_str(t),
            Field::Values(v) => v.serialize(s),
            Field::Value(v) => v.serialize(s),
            Field::Number(n) => s.serialize_u64(*n),
            Field::Bool(b) => s.serialize_bool(*b),
            Field::Owned(v) => v.serialize(s),
        }
    }
}

/// Sets `key` to `value`: in its place when the body has it, else last.
pub(crate) fn set<'a>(e: &mut Entries<'a>, key: &'a str, value: Field<'a>) {
    match e.iter_mut().find(|(name, _)| *name == key) {
        Some(slot) => slot.1 = value,
        None => e.push((key, value)),
    }
}

/// `requestParams` as they are (the openai and anthropic dialects), merged
/// last so they win, the reserved keys left out.
pub(crate) fn params_last<'a>(e: &mut Entries<'a>, params: &'a Map<String, Value>) {
    for (k, v) in params {
        if !RESERVED_PARAMS.contains(&k.as_str()) {
            set(e, k.as_str(), Field::Value(v));
        }
    }
}

/// One tool call the model made.
#[derive(Debug, Clone)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub args: Value,
}

/// One tool call as a dialect's reader finds it in an answer or a message,
/// its pieces left as views of that JSON: the loop ([`Call`], over
/// `serde_json::Value`) and translate (over the arena node) each make their
/// own strings of them, with the same display rule (a string as it is,
/// `null` or nothing as "", anything else as its JSON text).
#[derive(Debug, Clone, Copy)]
pub struct CallView<V> {
    pub id: Option<V>,
    pub name: Option<V>,
    /// The arguments as given (OpenAI's `function.arguments`, Anthropic's
    /// `input`).
    pub arguments: Option<V>,
}

/// A string as it is, `null` or nothing as "", anything else as its JSON
/// text.
pub(crate) fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// `{"type":"text","text": <the string, or "">}`: the text block of a
/// result's text in the openai and anthropic dialects.
pub(crate) fn text_block(v: Option<&Value>) -> Value {
    let text = v.and_then(Value::as_str).unwrap_or_default();
    json!({"type": "text", "text": text})
}

/// Arguments as the wire carries them: a JSON string holding an object
/// (blank, malformed or not an object ⇒ `{}`), or an object.
pub(crate) fn args_of(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(o @ Value::Object(_)) => o,
            _ => Value::Object(Map::new()),
        },
        Some(o @ Value::Object(_)) => o.clone(),
        _ => Value::Object(Map::new()),
    }
}

/// Appends an assistant turn to a transcript: the responses style's list of
/// items one by one, any other style's message as it is.
pub fn append_turn(messages: &mut Vec<Value>, turn: Value) {
    match turn {
        Value::Array(items) => messages.extend(items),
        message => messages.push(message),
    }
}

/// Token usage summed over a run ([`Usage::add`] is in [`super::dialect`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
    pub total: u64,
}

impl Usage {
    /// Adds one answer's usage, already counted.
    pub fn add_usage(&mut self, other: Usage) {
        self.add_counts((other.prompt, other.completion, other.total));
    }

    /// Adds the counts of one answer.
    pub(crate) fn add_counts(&mut self, (p, c, t): (u64, u64, u64)) {
        self.prompt = self.prompt.saturating_add(p);
        self.completion = self.completion.saturating_add(c);
        self.total = self.total.saturating_add(t);
    }

    pub fn to_json(self) -> Value {
        crate::json::object([
            ("promptTokens", Value::from(self.prompt)),
            ("completionTokens", Value::from(self.completion)),
            ("totalTokens", Value::from(self.total)),
        ])
    }
}

/// One tool's result as it goes back to the provider.
pub struct Fed<'a> {
    pub id: &'a str,
    /// The tool's name: an openai tool message with parts carries it, so the
    /// wire form can say whose output the moved media is (§8A).
    pub name: &'a str,
    pub output: &'a str,
    pub is_error: bool,
    /// The result's §1B parts; none ⇒ the message is exactly as before.
    pub parts: &'a [crate::parts::Part],
}

/// A result's parts as canonical §1B values.
pub(crate) fn parts_value(parts: &[crate::parts::Part]) -> Value {
    Value::Array(parts.iter().map(crate::parts::Part::to_value).collect())
}

/// The system message openai runs start with.
pub fn system_message(system: &str) -> Value {
    crate::json::object([("role", "system".into()), ("content", system.into())])
}

pub fn user_message(prompt: &str) -> Value {
    crate::json::object([("role", "user".into()), ("content", prompt.into())])
}

// ---------------------------------------------------------------------------
// translate's turn: OpenAI-shaped request in, the dialects'
// shared pieces (over the arena tree, `super::node`)
// ---------------------------------------------------------------------------

/// A validated translate request, borrowing from its JSON.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub messages: &'a [Node<'a>],
    pub tools: &'a [Node<'a>],
    pub tool_choice: Option<Node<'a>>,
    pub system: Option<&'a str>,
    pub max_tokens: Option<Num>,
}

impl Request<'_> {
    /// `maxTokens` when it is a positive number (0 and below mean "default").
    pub fn positive_max_tokens(&self) -> Option<Node<'static>> {
        let n = self.max_tokens?;
        (n.as_f64() > 0.0).then_some(Node::Number(n))
    }
}

/// Whether a string is empty or only whitespace.
pub fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// Maps a provider stop reason onto an OpenAI finish reason. A turn that
/// emitted any tool call is always "tool_calls"; otherwise max_tokens/length
/// give "length", refusal/content_filter give "content_filter", and anything
/// else (including nothing) gives "stop".
pub fn finish_reason_for(has_tool_calls: bool, provider_stop: Option<Node>) -> &'static str {
    if has_tool_calls {
        return "tool_calls";
    }
    match node::str_of(provider_stop) {
        "max_tokens" | "length" => "length",
        "refusal" | "content_filter" => "content_filter",
        _ => "stop",
    }
}

/// The system text of a Gemini or Responses body: the request's own, else
/// a non-blank client prompt, else what the dialect hoisted out of the
/// system/developer messages.
pub(crate) fn chosen_system(
    request: &Request<'_>,
    client: &ClientConfig,
    hoisted: String,
) -> String {
    match (request.system, client.system_prompt.as_deref()) {
        (Some(s), _) => s.to_string(),
        (None, Some(p)) if !is_blank(p) => p.to_string(),
        _ => hoisted,
    }
}

pub(crate) fn usage_node(bump: &Bump, prompt: u64, completion: u64, total: u64) -> Node<'_> {
    usage_node_counted(bump, (prompt, completion, total), 0, 0)
}

/// [`usage_node`] plus `reasoningTokens` and `cachedTokens`, each only when
/// counted (Gemini's and Responses' answers).
pub(crate) fn usage_node_counted(
    bump: &Bump,
    (prompt, completion, total): (u64, u64, u64),
    reasoning: u64,
    cached: u64,
) -> Node<'_> {
    let n = |v| Node::Number(Num::Pos(v));
    let mut fields = [
        ("promptTokens", n(prompt)),
        ("completionTokens", n(completion)),
        ("totalTokens", n(total)),
        ("reasoningTokens", n(reasoning)),
        ("cachedTokens", n(cached)),
    ];
    let mut len = 3;
    for (at, counted) in [(3, reasoning), (4, cached)] {
        if counted > 0 {
            fields.swap(len, at);
            len += 1;
        }
    }
    node::object(bump, &fields[..len])
}

/// A provider's decoded answer in OpenAI shape, as every dialect's reader
/// gives it to translate: `{text, toolCalls, finishReason, usage, model,
/// raw}`.
pub(crate) fn answer_node<'a>(
    bump: &'a Bump,
    text: &'a str,
    calls: Node<'a>,
    finish: &'a str,
    usage: Node<'a>,
    model: &'a str,
    raw: Node<'a>,
) -> Node<'a> {
    node::object(
        bump,
        &[
            ("text", Node::Str(text)),
            ("toolCalls", calls),
            ("finishReason", Node::Str(finish)),
            ("usage", usage),
            ("model", Node::Str(model)),
            ("raw", raw),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The usage keys keep their order, with `reasoningTokens` and
    /// `cachedTokens` each only when counted.
    #[test]
    fn a_usage_names_only_what_was_counted_in_order() {
        let bump = Bump::new();
        let keys = |reasoning, cached| {
            let v = usage_node_counted(&bump, (1, 2, 3), reasoning, cached).to_value();
            v.as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>().join(","))
                .unwrap_or_default()
        };
        let base = "promptTokens,completionTokens,totalTokens";
        assert_eq!(keys(0, 0), base);
        assert_eq!(keys(5, 0), format!("{base},reasoningTokens"));
        assert_eq!(keys(0, 4), format!("{base},cachedTokens"));
        assert_eq!(keys(5, 4), format!("{base},reasoningTokens,cachedTokens"));
        let v = usage_node_counted(&bump, (1, 2, 3), 0, 4).to_value();
        assert_eq!(v["cachedTokens"], 4);
        assert_eq!(
            usage_node(&bump, 1, 2, 3).to_value(),
            serde_json::json!({"promptTokens": 1, "completionTokens": 2, "totalTokens": 3})
        );
    }
}
