//! The wire styles of the loop (SPEC §8): the request body, the
//! assistant turn and tool calls read off a response, the tool results fed
//! back, and the usage. Messages stay in the provider's own shape throughout:
//! the transcript is what the provider sent and will be sent back verbatim.

use crate::provider::anthropic::DEFAULT_MAX_TOKENS as ANTHROPIC_MAX_TOKENS;
use crate::provider::{gemini, responses, Style, RESERVED_PARAMS};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{json, Map, Value};

/// One provider request body, borrowing the run's transcript and tools.
/// openai: `{model, messages, tools?, tool_choice:"auto"?}` with the system
/// text already a message; anthropic: `{model, max_tokens, system, messages,
/// tools?}`; gemini: `{contents, systemInstruction?, tools?}` (the model is in
/// the URL, the transcript is the `contents`, the tools are the
/// declarations in one `functionDeclarations` wrapper).
/// `requestParams` are merged last and win (SPEC §8 Gap 1); on gemini they
/// are mapped by [`gemini::merge_params`].
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

/// A body value: borrowed from the run or made here.
enum Part<'a> {
    Str(&'a str),
    Values(&'a [Value]),
    Value(&'a Value),
    Number(u64),
    Bool(bool),
    Owned(Value),
}

impl Serialize for Part<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Part::Str(t) => s.serialize_str(t),
            Part::Values(v) => v.serialize(s),
            Part::Value(v) => v.serialize(s),
            Part::Number(n) => s.serialize_u64(*n),
            Part::Bool(b) => s.serialize_bool(*b),
            Part::Owned(v) => v.serialize(s),
        }
    }
}

impl<'a> Body<'a> {
    fn entries(&self) -> Vec<(&'a str, Part<'a>)> {
        let mut e: Vec<(&'a str, Part<'a>)> = Vec::with_capacity(6 + self.params.len());
        e.push(("model", Part::Str(self.model)));
        match self.style {
            Style::OpenAi => {
                e.push(("messages", Part::Values(self.messages)));
                if !self.tools.is_empty() {
                    e.push(("tools", Part::Values(self.tools)));
                    e.push(("tool_choice", Part::Str("auto")));
                }
            }
            Style::Gemini => return self.gemini_entries(),
            Style::Responses => return self.responses_entries(),
            Style::Anthropic => {
                e.push(("max_tokens", Part::Number(ANTHROPIC_MAX_TOKENS)));
                e.push(("system", Part::Str(self.system)));
                e.push(("messages", Part::Values(self.messages)));
                if !self.tools.is_empty() {
                    e.push(("tools", Part::Values(self.tools)));
                }
            }
        }
        if self.stream {
            e.push(("stream", Part::Bool(true)));
            if self.style == Style::OpenAi {
                e.push(("stream_options", Part::Value(include_usage())));
            }
        }
        for (k, v) in self.params {
            if RESERVED_PARAMS.contains(&k.as_str()) {
                continue;
            }
            match e.iter_mut().find(|(name, _)| *name == k.as_str()) {
                Some(slot) => slot.1 = Part::Value(v),
                None => e.push((k.as_str(), Part::Value(v))),
            }
        }
        e
    }

    /// The gemini body (streaming is the endpoint's business, not the
    /// body's).
    fn gemini_entries(&self) -> Vec<(&'a str, Part<'a>)> {
        let mut e: Vec<(&'a str, Part<'a>)> = Vec::with_capacity(4 + self.params.len());
        e.push(("contents", Part::Values(self.messages)));
        if !self.system.trim().is_empty() {
            e.push((
                "systemInstruction",
                Part::Owned(gemini::system_instruction(self.system)),
            ));
        }
        if let Some(t) = gemini::tools_value(self.tools) {
            e.push(("tools", Part::Owned(t)));
        }
        let mut mapped = Map::new();
        gemini::merge_params(&mut mapped, self.params, &RESERVED_PARAMS);
        for (k, v) in mapped {
            // Every mapped key is a param's own or generationConfig.
            let k: &'a str = match self.params.get_key_value(&k) {
                _ if k == "generationConfig" => "generationConfig",
                Some((key, _)) => key.as_str(),
                None => continue,
            };
            match e.iter_mut().find(|(name, _)| *name == k) {
                Some(slot) => slot.1 = Part::Owned(v),
                None => e.push((k, Part::Owned(v))),
            }
        }
        e
    }

    /// The responses body: `{model, input, instructions?, tools?,
    /// tool_choice:"auto"?, stream?}`, then the mapped `requestParams`.
    fn responses_entries(&self) -> Vec<(&'a str, Part<'a>)> {
        let mut e: Vec<(&'a str, Part<'a>)> = Vec::with_capacity(6 + self.params.len());
        e.push(("model", Part::Str(self.model)));
        e.push(("input", Part::Values(self.messages)));
        if !self.system.trim().is_empty() {
            e.push(("instructions", Part::Str(self.system)));
        }
        if !self.tools.is_empty() {
            e.push(("tools", Part::Values(self.tools)));
            e.push(("tool_choice", Part::Str("auto")));
        }
        if self.stream {
            e.push(("stream", Part::Bool(true)));
        }
        let mut mapped = Map::new();
        responses::merge_params(&mut mapped, self.params, &RESERVED_PARAMS);
        for (k, v) in mapped {
            // Every mapped key is a param's own or one of these.
            let k: &'a str = match self.params.get_key_value(&k) {
                _ if k == "max_output_tokens" => "max_output_tokens",
                _ if k == "reasoning" => "reasoning",
                _ if k == "text" => "text",
                Some((key, _)) => key.as_str(),
                None => continue,
            };
            match e.iter_mut().find(|(name, _)| *name == k) {
                Some(slot) => slot.1 = Part::Owned(v),
                None => e.push((k, Part::Owned(v))),
            }
        }
        e
    }

    /// The body as JSON bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1024);
        // Serialising borrowed JSON values into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, self);
        out
    }

    /// The body as a JSON value (for a provider that is not HTTP).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let entries = self.entries();
        let mut map = s.serialize_map(Some(entries.len()))?;
        for (k, v) in &entries {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// `{"include_usage": true}`, made once.
fn include_usage() -> &'static Value {
    static V: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    V.get_or_init(|| json!({"include_usage": true}))
}

/// One tool call the model made.
#[derive(Debug, Clone)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub args: Value,
}

fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Arguments as the wire carries them: a JSON string holding an object
/// (blank, malformed or not an object ⇒ `{}`), or an object.
fn args_of(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(o @ Value::Object(_)) => o,
            _ => Value::Object(Map::new()),
        },
        Some(o @ Value::Object(_)) => o.clone(),
        _ => Value::Object(Map::new()),
    }
}

/// The OpenAI message of a response: `choices[0].message`.
fn openai_message(raw: &Value) -> Option<&Value> {
    raw.get("choices")?.get(0)?.get("message")
}

/// The assistant turn to append, verbatim in the provider's shape.
pub fn assistant_message(style: Style, raw: &Value) -> Value {
    match style {
        Style::OpenAi => openai_message(raw)
            .cloned()
            .unwrap_or_else(|| json!({"role": "assistant", "content": null})),
        Style::Anthropic => json!({
            "role": "assistant",
            "content": raw.get("content").cloned().unwrap_or(Value::Array(Vec::new())),
        }),
        // The candidate's content as Gemini sent it: every part, thought
        // signatures included, goes back verbatim on later steps.
        Style::Gemini => gemini::model_content(raw),
        // Every output item (reasoning, messages, calls); the loop appends
        // them to its transcript one by one (see [`append_turn`]).
        Style::Responses => Value::Array(responses::output(raw).to_vec()),
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

/// The tool calls of an assistant message, in order.
pub fn calls_of(style: Style, message: &Value) -> Vec<Call> {
    match style {
        Style::OpenAi => message
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .map(|tc| {
                        let f = tc.get("function");
                        Call {
                            id: text_of(tc.get("id")),
                            name: text_of(f.and_then(|f| f.get("name"))),
                            args: args_of(f.and_then(|f| f.get("arguments"))),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default(),
        Style::Anthropic => message
            .get("content")
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
                    .map(|b| Call {
                        id: text_of(b.get("id")),
                        name: text_of(b.get("name")),
                        args: match b.get("input") {
                            None | Some(Value::Null) => Value::Object(Map::new()),
                            Some(i) => i.clone(),
                        },
                    })
                    .collect()
            })
            .unwrap_or_default(),
        Style::Responses => {
            let items = match message {
                Value::Array(items) => items.as_slice(),
                item => std::slice::from_ref(item),
            };
            responses::calls_of(items)
                .into_iter()
                .map(|c| Call {
                    args: args_of(Some(&Value::String(c.arguments))),
                    id: c.call_id,
                    name: c.name,
                })
                .collect()
        }
        Style::Gemini => gemini::calls_of(message)
            .into_iter()
            .map(|c| Call {
                id: c.id,
                name: c.name,
                args: c.args,
            })
            .collect(),
    }
}

/// The final text of an answer: OpenAI's message content (text parts joined
/// when it is a list), Anthropic's text blocks joined.
pub fn final_text(style: Style, raw: &Value) -> String {
    let join_texts = |parts: &[Value], kind: &str| -> String {
        parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some(kind))
            .map(|p| text_of(p.get("text")))
            .collect()
    };
    match style {
        Style::OpenAi => match openai_message(raw).and_then(|m| m.get("content")) {
            Some(Value::Array(parts)) => join_texts(parts, "text"),
            other => text_of(other),
        },
        Style::Anthropic => raw
            .get("content")
            .and_then(Value::as_array)
            .map(|blocks| join_texts(blocks, "text"))
            .unwrap_or_default(),
        Style::Gemini => gemini::text_of(&gemini::model_content(raw)),
        Style::Responses => responses::text_of(responses::output(raw)),
    }
}

/// The text at the turn limit: the last assistant message's string content
/// (openai), always "" (anthropic), as the recorded port does; the last
/// model turn's visible text (gemini).
pub fn text_at_limit(style: Style, messages: &[Value]) -> String {
    match style {
        Style::Anthropic => String::new(),
        Style::Gemini => messages
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("model"))
            .map(gemini::text_of)
            .unwrap_or_default(),
        Style::Responses => messages
            .iter()
            .rev()
            .find(|m| {
                m.get("type").and_then(Value::as_str) == Some("message")
                    && m.get("role").and_then(Value::as_str) == Some("assistant")
            })
            .map(|m| responses::text_of(std::slice::from_ref(m)))
            .unwrap_or_default(),
        Style::OpenAi => messages
            .iter()
            .rev()
            .find_map(|m| {
                (m.get("role").and_then(Value::as_str) == Some("assistant"))
                    .then(|| m.get("content").and_then(Value::as_str))
                    .flatten()
            })
            .unwrap_or_default()
            .to_string(),
    }
}

/// Token usage summed over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
    pub total: u64,
}

fn count(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(|f| f as u64)
        }),
        _ => None,
    }
}

impl Usage {
    /// Adds one response's usage: OpenAI prompt/completion/total_tokens,
    /// Anthropic input/output_tokens (total = their sum).
    pub fn add(&mut self, style: Style, raw: &Value) {
        let counted = match style {
            Style::Gemini => Some(gemini::usage(raw)).map(|u| (u.prompt, u.completion, u.total)),
            Style::Responses => {
                Some(responses::usage(raw)).map(|u| (u.prompt, u.completion, u.total))
            }
            _ => None,
        };
        if let Some((p, c, t)) = counted {
            self.prompt = self.prompt.saturating_add(p);
            self.completion = self.completion.saturating_add(c);
            self.total = self.total.saturating_add(t);
            return;
        }
        let Some(u) = raw.get("usage").filter(|u| u.is_object()) else {
            return;
        };
        let (p, c) = match style {
            Style::OpenAi => ("prompt_tokens", "completion_tokens"),
            _ => ("input_tokens", "output_tokens"),
        };
        let p = count(u.get(p)).unwrap_or(0);
        let c = count(u.get(c)).unwrap_or(0);
        let t = match style {
            Style::OpenAi => count(u.get("total_tokens")).unwrap_or(p.saturating_add(c)),
            _ => p.saturating_add(c),
        };
        self.prompt = self.prompt.saturating_add(p);
        self.completion = self.completion.saturating_add(c);
        self.total = self.total.saturating_add(t);
    }

    pub fn to_json(self) -> Value {
        json!({
            "promptTokens": self.prompt,
            "completionTokens": self.completion,
            "totalTokens": self.total,
        })
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

fn parts_value(parts: &[crate::parts::Part]) -> Value {
    Value::Array(parts.iter().map(crate::parts::Part::to_value).collect())
}

/// The anthropic `tool_result` block of one result, with `parts` when the
/// tool returned any (the transcript keeps canonical parts; the request
/// carries them as blocks, see [`crate::parts::wire_messages`]).
pub fn anthropic_block(f: &Fed) -> Value {
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": f.id,
        "content": f.output,
        "is_error": f.is_error,
    });
    if !f.parts.is_empty() {
        block["parts"] = parts_value(f.parts);
    }
    block
}

/// The gemini `functionResponse` part of one result, followed by its
/// media parts as `inlineData` (or `fileData` for a linked one); text parts
/// are already in the output.
pub fn gemini_parts(f: &Fed) -> Vec<Value> {
    let mut parts = vec![gemini::function_response(
        f.id, f.name, f.output, f.is_error,
    )];
    for p in f.parts {
        let mime = p.mime_type.as_deref().unwrap_or("application/octet-stream");
        match (&p.data, &p.url) {
            (Some(data), _) => {
                parts.push(json!({"inlineData": {"mimeType": mime, "data": data}}));
            }
            (None, Some(url)) => {
                parts.push(json!({"fileData": {"mimeType": mime, "fileUri": url}}));
            }
            _ => {}
        }
    }
    parts
}

/// The provider's tool-result shape: openai one `tool` message per call,
/// anthropic one `user` message of `tool_result` blocks, gemini one `user`
/// content of `functionResponse` parts (the output wrapped in an object).
pub fn result_messages(style: Style, fed: &[Fed]) -> Vec<Value> {
    match style {
        Style::OpenAi => fed
            .iter()
            .map(|f| {
                let mut m = json!({"role": "tool", "tool_call_id": f.id, "content": f.output});
                if !f.parts.is_empty() {
                    m["parts"] = parts_value(f.parts);
                    m["name"] = Value::from(f.name);
                }
                m
            })
            .collect(),
        Style::Anthropic => vec![json!({
            "role": "user",
            "content": fed.iter().map(anthropic_block).collect::<Vec<_>>(),
        })],
        Style::Gemini => vec![json!({
            "role": "user",
            "parts": fed.iter().flat_map(gemini_parts).collect::<Vec<_>>(),
        })],
        Style::Responses => fed
            .iter()
            .map(|f| json!({"type": "function_call_output", "call_id": f.id, "output": f.output}))
            .collect(),
    }
}

/// The system message openai runs start with.
pub fn system_message(system: &str) -> Value {
    json!({"role": "system", "content": system})
}

pub fn user_message(prompt: &str) -> Value {
    json!({"role": "user", "content": prompt})
}

/// The user turn a run starts with, in the style's shape.
pub fn user_message_for(style: Style, prompt: &str) -> Value {
    match style {
        Style::Gemini => json!({"role": "user", "parts": [{"text": prompt}]}),
        _ => user_message(prompt),
    }
}
