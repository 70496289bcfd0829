//! The Gemini `generateContent` dialect: its tables and its conversions.
//!
//! - The endpoint is `{base}/v1beta/models/{model}:generateContent`
//!   (`:streamGenerateContent?alt=sse` when streamed); the model is in the
//!   URL, never in the body. The key goes in `x-goog-api-key`.
//! - A conversation is `contents: [{role: "user"|"model", parts}]`; the
//!   system text is `systemInstruction`; tools are one
//!   `{functionDeclarations}` wrapper; a tool call is a `functionCall` part
//!   and its result a `functionResponse` part whose `response` is always an
//!   object (`{"output": text}`, or `{"error": text}` for a failed tool).
//! - A part may carry a `thoughtSignature`. It must go back on the very part
//!   it came on, on every later step of the turn: the client loop keeps
//!   Gemini's own parts verbatim, and translate hands it to the host on the
//!   tool call (`extra_content.google.thought_signature`, as Google's
//!   OpenAI-compatible endpoint does) and takes it back from there.
//!
//! - The loop's side ([`super::turn`]): its body writer, the calls and text
//!   read off a model content, the result parts fed back.
//! - The streamed answer's state (`StreamState`, driven by
//!   [`super::stream`]).
//!
//! Everything here is pure JSON work on [`serde_json::Value`].

use super::gather::{
    provider_stream_error, read_event, too_many_calls, Budget, NotObject, Pieces, Usage,
    CHECK_EVERY, ENTRY_BYTES, MAX_TOOL_CALLS,
};
use super::gemini_schema;
use super::node::{self, Node};
use super::turn::{self, Body, Call, Entries, Fed, Field, Request};
use super::{ClientConfig, RESERVED_PARAMS};
use crate::error::Error;
use crate::json::object;
use crate::limits::RESPONSE_BODY_BYTES;
use bumpalo::Bump;
use serde_json::{json, Map, Value};

/// The environment variable a key is read from when the client sets none.
pub const API_KEY_VAR: &str = "GEMINI_API_KEY";

/// The id given to a function call Gemini sent without one (older models
/// never send ids): this prefix and the call's position in its turn. Such
/// an id is never sent back to Gemini.
pub const SYNTHETIC_ID_PREFIX: &str = "tn-gemini-call-";

/// Whether `id` was made here rather than sent by Gemini.
pub fn is_synthetic_id(id: &str) -> bool {
    id.is_empty() || id.starts_with(SYNTHETIC_ID_PREFIX)
}

/// The endpoint under a client's `baseUrl` (its trailing `/` removed):
/// `{base}/models/{model}:…` when the base already names an API version
/// (`/v1`, `/v1beta`, `/v1alpha`), else `{base}/v1beta/models/{model}:…`.
/// A `models/` prefix of the model is taken as given once; any byte outside
/// the URL-safe set is percent-encoded.
pub fn endpoint(base: &str, model: &str, stream: bool) -> String {
    let method = if stream {
        "streamGenerateContent?alt=sse"
    } else {
        "generateContent"
    };
    endpoint_for(base, model, method)
}

/// The token-counting endpoint: [`endpoint`]'s URL with the `countTokens`
/// method (`POST /v1beta/models/{model}:countTokens`).
pub fn count_endpoint(base: &str, model: &str) -> String {
    endpoint_for(base, model, "countTokens")
}

/// `{base}[/v1beta]/models/{model}:{method}` (see [`endpoint`]).
fn endpoint_for(base: &str, model: &str, method: &str) -> String {
    let versioned = ["/v1", "/v1beta", "/v1alpha"]
        .iter()
        .any(|v| base.ends_with(v));
    let model = model.strip_prefix("models/").unwrap_or(model);
    let mut m = String::with_capacity(model.len());
    for b in model.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            m.push(b as char);
        } else {
            m.push_str(&format!("%{b:02X}"));
        }
    }
    if versioned {
        format!("{base}/models/{m}:{method}")
    } else {
        format!("{base}/v1beta/models/{m}:{method}")
    }
}

/// The credential header: `x-goog-api-key: <key>` (none without a key).
pub fn auth_headers(api_key: Option<&str>, out: &mut Vec<(String, String)>) {
    if let Some(key) = api_key {
        out.push(("x-goog-api-key".into(), key.to_string()));
    }
}

// ---------------------------------------------------------------------------
// tools
// ---------------------------------------------------------------------------

/// One OpenAI-shaped declaration (`{type, function:{name, description,
/// parameters}}`, or the bare function) as a Gemini `FunctionDeclaration`,
/// its schema made Gemini-safe. An object schema without properties is left
/// out (Gemini refuses an empty OBJECT).
pub fn declaration(openai: &Value) -> Value {
    let f = openai.get("function").unwrap_or(openai);
    let mut d = Map::new();
    d.insert(
        "name".into(),
        f.get("name")
            .cloned()
            .unwrap_or(Value::String(String::new())),
    );
    if let Some(desc) = f.get("description").filter(|d| !d.is_null()) {
        d.insert("description".into(), desc.clone());
    }
    if let Some(p) = f.get("parameters").filter(|p| !p.is_null()) {
        let clean = gemini_schema::clean(p);
        let empty = clean
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
        if !empty {
            d.insert("parameters".into(), clean);
        }
    }
    Value::Object(d)
}

/// `tools: [{functionDeclarations: [...]}]` for a list of declarations
/// already in Gemini shape; `None` for none.
pub fn tools_value(declarations: Vec<Value>) -> Option<Value> {
    (!declarations.is_empty()).then(|| {
        Value::Array(vec![object([(
            "functionDeclarations",
            Value::Array(declarations),
        )])])
    })
}

/// OpenAI `tool_choice` as `toolConfig`: `"auto"` → AUTO, `"none"` → NONE,
/// `"required"` → ANY, a named function → ANY limited to that name.
/// Anything else sets nothing.
pub fn tool_config(choice: &Value) -> Option<Value> {
    let (mode, names) = match choice {
        Value::String(s) => match s.as_str() {
            "auto" => ("AUTO", None),
            "none" => ("NONE", None),
            "required" | "any" => ("ANY", None),
            _ => return None,
        },
        Value::Object(o) => {
            let name = o
                .get("function")
                .and_then(|f| f.get("name"))
                .or_else(|| o.get("name"))
                .and_then(Value::as_str)?;
            ("ANY", Some(vec![Value::String(name.to_string())]))
        }
        _ => return None,
    };
    let mut cfg = Map::new();
    cfg.insert("mode".into(), Value::String(mode.into()));
    if let Some(n) = names {
        cfg.insert("allowedFunctionNames".into(), Value::Array(n));
    }
    Some(object([("functionCallingConfig", Value::Object(cfg))]))
}

// ---------------------------------------------------------------------------
// request parameters
// ---------------------------------------------------------------------------

/// Where an OpenAI request parameter goes in `generationConfig`, by name.
fn generation_key(openai: &str) -> Option<&'static str> {
    Some(match openai {
        "temperature" => "temperature",
        "top_p" => "topP",
        "top_k" => "topK",
        "max_tokens" | "max_completion_tokens" => "maxOutputTokens",
        "n" => "candidateCount",
        "seed" => "seed",
        "presence_penalty" => "presencePenalty",
        "frequency_penalty" => "frequencyPenalty",
        "stop" => "stopSequences",
        "logprobs" => "responseLogprobs",
        "top_logprobs" => "logprobs",
        _ => return None,
    })
}

/// OpenAI `reasoning_effort` as a `thinkingConfig`.
fn thinking_config(effort: &str) -> Option<Value> {
    let budget = match effort {
        "none" | "minimal" => 0,
        "low" => 1024,
        "medium" => 8192,
        "high" => 24576,
        _ => return None,
    };
    Some(json!({"thinkingBudget": budget, "includeThoughts": budget > 0}))
}

/// Anthropic's `thinking` parameter (which OpenAI-shaped hosts send for
/// Anthropic and LiteLLM takes for every provider) as a `thinkingConfig`:
/// `{type: "enabled", budget_tokens}` → that budget with the thoughts
/// included, `{type: "disabled"}` → a budget of 0.
fn anthropic_thinking(t: &Map<String, Value>) -> Option<Value> {
    match (
        t.get("type").and_then(Value::as_str),
        t.get("budget_tokens"),
    ) {
        (Some("enabled"), Some(Value::Number(n))) => {
            Some(json!({"thinkingBudget": n, "includeThoughts": true}))
        }
        (Some("disabled"), _) => Some(json!({"thinkingBudget": 0, "includeThoughts": false})),
        _ => None,
    }
}

/// Merges OpenAI-style request parameters into a Gemini body: the sampling
/// ones (`temperature`, `top_p`, `max_tokens`, `stop`, `seed`, …) into
/// `generationConfig` under Gemini's names, `response_format` as
/// `responseMimeType`/`responseSchema`, `reasoning_effort` (and
/// Anthropic's `thinking`) as `thinkingConfig`; every other key (Gemini's own: `generationConfig`,
/// `safetySettings`, `toolConfig`, `cachedContent`, …) is set as given, a
/// `generationConfig` object merged key by key. `skip` names keys the
/// caller owns.
pub fn merge_params(body: &mut Map<String, Value>, params: &Map<String, Value>, skip: &[&str]) {
    let mut gen = match body.remove("generationConfig") {
        Some(Value::Object(g)) => g,
        _ => Map::new(),
    };
    for (k, v) in params {
        if skip.contains(&k.as_str()) || v.is_null() {
            continue;
        }
        if let Some(g) = generation_key(k) {
            let v = match (g, v) {
                ("stopSequences", Value::String(s)) => json!([s]),
                _ => v.clone(),
            };
            gen.insert(g.into(), v);
            continue;
        }
        match (k.as_str(), v) {
            ("response_format", Value::Object(f)) => match f.get("type").and_then(Value::as_str) {
                Some("json_object") => {
                    gen.insert("responseMimeType".into(), json!("application/json"));
                }
                Some("json_schema") => {
                    gen.insert("responseMimeType".into(), json!("application/json"));
                    if let Some(s) = f.get("json_schema").and_then(|j| j.get("schema")) {
                        gen.insert("responseSchema".into(), gemini_schema::clean(s));
                    }
                }
                _ => {}
            },
            ("reasoning_effort", Value::String(e)) => {
                if let Some(t) = thinking_config(e) {
                    gen.insert("thinkingConfig".into(), t);
                }
            }
            ("thinking", Value::Object(t)) => match anthropic_thinking(t) {
                Some(config) => {
                    gen.insert("thinkingConfig".into(), config);
                }
                None => {
                    body.insert(k.clone(), v.clone());
                }
            },
            ("generationConfig", Value::Object(g)) => {
                gen.extend(g.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            _ => {
                body.insert(k.clone(), v.clone());
            }
        }
    }
    if !gen.is_empty() {
        body.insert("generationConfig".into(), Value::Object(gen));
    }
}

// ---------------------------------------------------------------------------
// OpenAI messages → Gemini contents (translate)
// ---------------------------------------------------------------------------

/// The text of an OpenAI `content` (a string, or the `text` of its parts).
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                _ => p.get("text").and_then(Value::as_str),
            })
            .collect(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A media type guessed from a URL's extension (Gemini's `fileData` needs
/// one).
fn mime_of_url(url: &str) -> &'static str {
    let path = url
        .split(['?', '#'])
        .next()
        .unwrap_or(url)
        .to_ascii_lowercase();
    let ext = path.rsplit('.').next().unwrap_or("");
    match ext {
        "png" => "image/png",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "mp3" => "audio/mp3",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        _ => "image/jpeg",
    }
}

/// One OpenAI content part as a Gemini part (`None` for a part with
/// nothing Gemini can take).
fn content_part(p: &Value) -> Option<Value> {
    if let Value::String(s) = p {
        return Some(json!({"text": s}));
    }
    let media = |url: &str| match crate::parts::data_url(url) {
        Some((mime, data)) => json!({"inlineData": {"mimeType": mime, "data": data}}),
        None => json!({"fileData": {"mimeType": mime_of_url(url), "fileUri": url}}),
    };
    match p.get("type").and_then(Value::as_str) {
        Some("text") => p.get("text").map(|t| json!({"text": t})),
        Some("image_url") => {
            let url = match p.get("image_url") {
                Some(Value::String(u)) => u.as_str(),
                Some(o) => o.get("url").and_then(Value::as_str)?,
                None => return None,
            };
            Some(media(url))
        }
        Some("input_audio") => {
            let a = p.get("input_audio")?;
            let data = a.get("data").and_then(Value::as_str)?;
            let format = a.get("format").and_then(Value::as_str).unwrap_or("wav");
            Some(json!({"inlineData": {"mimeType": format!("audio/{format}"), "data": data}}))
        }
        Some("file") => {
            let f = p.get("file")?;
            if let Some(d) = f.get("file_data").and_then(Value::as_str) {
                return Some(media(d));
            }
            f.get("file_id")
                .and_then(Value::as_str)
                .map(|id| json!({"fileData": {"fileUri": id}}))
        }
        _ => p.get("text").map(|t| json!({"text": t})),
    }
}

/// A user message's content as parts.
fn user_parts(content: Option<&Value>) -> Vec<Value> {
    match content {
        Some(Value::Array(parts)) => parts.iter().filter_map(content_part).collect(),
        other => {
            let t = content_text(other);
            if t.is_empty() {
                Vec::new()
            } else {
                vec![json!({"text": t})]
            }
        }
    }
}

/// A tool call's arguments as an object: a JSON string holding an object,
/// or the object itself; anything else is `{}`.
pub fn args_object(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(o @ Value::Object(_)) => o,
            _ => Value::Object(Map::new()),
        },
        Some(o @ Value::Object(_)) => o.clone(),
        _ => Value::Object(Map::new()),
    }
}

/// The thought signature an OpenAI-shaped tool call carries back.
fn signature_of(tool_call: &Value) -> Option<&Value> {
    tool_call
        .pointer("/extra_content/google/thought_signature")
        .filter(|s| s.is_string())
}

/// A tool's output as a `functionResponse.response` object.
pub fn response_object(output: &str, is_error: bool) -> Value {
    if is_error {
        json!({"error": output})
    } else {
        json!({"output": output})
    }
}

/// A `functionResponse` part.
pub fn function_response(id: &str, name: &str, output: &str, is_error: bool) -> Value {
    let mut r = Map::new();
    r.insert("name".into(), Value::String(name.to_string()));
    if !is_synthetic_id(id) {
        r.insert("id".into(), Value::String(id.to_string()));
    }
    r.insert("response".into(), response_object(output, is_error));
    object([("functionResponse", Value::Object(r))])
}

/// OpenAI chat messages as Gemini `contents`, and the system text the
/// system/developer messages hold (joined by a blank line).
///
/// user → `user` parts (text, `inlineData`/`fileData` for images, audio and
/// files); assistant → `model` parts (text, then one `functionCall` per tool
/// call, its thought signature restored); consecutive tool messages → one
/// `user` content of `functionResponse` parts, each named after the call it
/// answers. A message with no parts is left out.
pub fn contents_from_openai(messages: &[Value]) -> (Vec<Value>, String) {
    let mut contents: Vec<Value> = Vec::with_capacity(messages.len());
    let mut system: Vec<String> = Vec::new();
    let mut names: std::collections::HashMap<String, String> = Default::default();
    let mut responses: Vec<Value> = Vec::new();
    let flush = |responses: &mut Vec<Value>, contents: &mut Vec<Value>| {
        if !responses.is_empty() {
            contents.push(role_parts("user", std::mem::take(responses)));
        }
    };
    for m in messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        if role == "tool" {
            let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
            let name = names
                .get(id)
                .cloned()
                .or_else(|| m.get("name").and_then(Value::as_str).map(str::to_string))
                .unwrap_or_default();
            let output = content_text(m.get("content"));
            responses.push(function_response(id, &name, &output, false));
            continue;
        }
        flush(&mut responses, &mut contents);
        match role {
            "system" | "developer" => {
                let t = content_text(m.get("content"));
                if !t.trim().is_empty() {
                    system.push(t);
                }
            }
            "assistant" | "model" => {
                let mut parts = Vec::new();
                let text = content_text(m.get("content"));
                if !text.is_empty() {
                    parts.push(object([("text", Value::String(text))]));
                }
                let calls = m.get("tool_calls").and_then(Value::as_array);
                for tc in calls.into_iter().flatten() {
                    let f = tc.get("function");
                    let id = tc.get("id").and_then(Value::as_str).unwrap_or("");
                    let name = f
                        .and_then(|f| f.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    names.insert(id.to_string(), name.to_string());
                    let mut fc = Map::new();
                    fc.insert("name".into(), Value::String(name.into()));
                    fc.insert(
                        "args".into(),
                        args_object(f.and_then(|f| f.get("arguments"))),
                    );
                    if !is_synthetic_id(id) {
                        fc.insert("id".into(), Value::String(id.into()));
                    }
                    let mut part = Map::new();
                    part.insert("functionCall".into(), Value::Object(fc));
                    if let Some(sig) = signature_of(tc) {
                        part.insert("thoughtSignature".into(), sig.clone());
                    }
                    parts.push(Value::Object(part));
                }
                if !parts.is_empty() {
                    contents.push(role_parts("model", parts));
                }
            }
            _ => {
                let parts = user_parts(m.get("content"));
                if parts.is_empty() {
                    continue;
                }
                // A user message right after another joins its turn (one
                // turn, the parts in order); tool results keep a turn of
                // their own.
                let joins = |c: &Value| {
                    c["role"] == "user"
                        && !c["parts"]
                            .as_array()
                            .is_some_and(|p| p.iter().any(|p| p.get("functionResponse").is_some()))
                };
                match contents.last_mut() {
                    Some(last) if joins(last) => {
                        if let Some(Value::Array(before)) = last.get_mut("parts") {
                            before.extend(parts);
                        }
                    }
                    _ => contents.push(role_parts("user", parts)),
                }
            }
        }
    }
    flush(&mut responses, &mut contents);
    (contents, system.join("\n\n"))
}

/// `systemInstruction` for a system text.
pub fn system_instruction(text: &str) -> Value {
    json!({"parts": [{"text": text}]})
}

// ---------------------------------------------------------------------------
// the answer
// ---------------------------------------------------------------------------

/// The first candidate's content: `{role: "model", parts}` (an empty one
/// when Gemini sent no candidate).
pub fn model_content(raw: &Value) -> Value {
    let mut content = match raw.pointer("/candidates/0/content") {
        Some(Value::Object(c)) => c.clone(),
        _ => Map::new(),
    };
    content.insert("role".into(), Value::String("model".into()));
    if !content.get("parts").is_some_and(Value::is_array) {
        content.insert("parts".into(), Value::Array(Vec::new()));
    }
    Value::Object(content)
}

/// The parts of a content.
pub fn parts_of(content: &Value) -> &[Value] {
    content
        .get("parts")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The visible text of a content: its text parts that are not thoughts.
pub fn text_of(content: &Value) -> String {
    parts_of(content)
        .iter()
        .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect()
}

/// One function call of a content.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionCall {
    /// Gemini's id, or a synthetic one ([`SYNTHETIC_ID_PREFIX`]).
    pub id: String,
    pub name: String,
    /// Always an object (non-object args read as `{}`).
    pub args: Value,
    pub thought_signature: Option<String>,
}

/// The function calls of a content, in order.
pub fn calls_of(content: &Value) -> Vec<FunctionCall> {
    parts_of(content)
        .iter()
        .filter_map(|p| Some((p, p.get("functionCall")?)))
        .enumerate()
        .map(|(i, (part, fc))| FunctionCall {
            id: fc
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map_or_else(|| format!("{SYNTHETIC_ID_PREFIX}{i}"), str::to_string),
            name: fc
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            args: match fc.get("args") {
                Some(o @ Value::Object(_)) => o.clone(),
                _ => Value::Object(Map::new()),
            },
            thought_signature: part
                .get("thoughtSignature")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
        .collect()
}

/// The OpenAI finish reason of an answer: `tool_calls` whenever the turn
/// holds a function call (Gemini says `STOP` for those); `STOP` → `stop`,
/// `MAX_TOKENS` → `length`, the safety family → `content_filter`, a prompt
/// blocked before any candidate → `content_filter`, anything else `stop`.
pub fn finish_reason(raw: &Value, has_calls: bool) -> &'static str {
    if has_calls {
        return "tool_calls";
    }
    // `get` chains, not `pointer`: a pointer's path is unescaped (`~1`,
    // `~0`) on every call, and this runs on every streamed event.
    let reason = raw
        .get("candidates")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("finishReason"))
        .and_then(Value::as_str);
    match reason {
        Some("MAX_TOKENS") => "length",
        Some(
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY"
            | "LANGUAGE",
        ) => "content_filter",
        None if raw
            .get("promptFeedback")
            .and_then(|f| f.get("blockReason"))
            .is_some() =>
        {
            "content_filter"
        }
        _ => "stop",
    }
}

fn count(v: Option<&Value>) -> u64 {
    match v {
        Some(Value::Number(n)) => n.as_u64().unwrap_or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map_or(0, |f| f as u64)
        }),
        _ => 0,
    }
}

/// `usageMetadata` read: prompt = `promptTokenCount`, completion =
/// `candidatesTokenCount + thoughtsTokenCount`, total = `totalTokenCount`
/// (their sum when absent), reasoning = `thoughtsTokenCount` (counted in
/// completion too: OpenAI counts reasoning as completion), cached =
/// `cachedContentTokenCount`. No metadata is all zeros.
pub fn usage(raw: &Value) -> Usage {
    let Some(u) = raw.get("usageMetadata").filter(|u| u.is_object()) else {
        return Usage::default();
    };
    let prompt = count(u.get("promptTokenCount"));
    let thoughts = count(u.get("thoughtsTokenCount"));
    let completion = count(u.get("candidatesTokenCount")).saturating_add(thoughts);
    let total = match u.get("totalTokenCount") {
        Some(t) if t.is_number() => count(Some(t)),
        _ => prompt.saturating_add(completion),
    };
    Usage {
        prompt,
        completion,
        total: Some(total),
        reasoning: thoughts,
        cached: count(u.get("cachedContentTokenCount")),
    }
}

/// An OpenAI-shaped tool call (`{id, name, arguments}` as translate's answer
/// has them), with the thought signature under
/// `extra_content.google.thought_signature` when the part carried one.
pub fn openai_tool_call(c: &FunctionCall) -> Value {
    let mut v = json!({
        "id": c.id,
        "name": c.name,
        "arguments": c.args.to_string(),
    });
    if let Some(sig) = &c.thought_signature {
        v["extra_content"] = json!({"google": {"thought_signature": sig}});
    }
    v
}

// ---------------------------------------------------------------------------
// the loop's turn (`super::turn`)
// ---------------------------------------------------------------------------

/// The loop's body: `{contents, systemInstruction?, tools?}`, then the
/// `requestParams` mapped by [`merge_params`] (streaming is the endpoint's
/// business, not the body's).
pub(crate) fn body_entries<'a>(b: &Body<'a>) -> Entries<'a> {
    let mut e: Entries<'a> = Vec::with_capacity(4 + b.params.len());
    e.push(("contents", Field::Values(b.messages)));
    if !b.system.trim().is_empty() {
        e.push((
            "systemInstruction",
            Field::Owned(system_instruction(b.system)),
        ));
    }
    if let Some(t) = tools_value(b.tools.to_vec()) {
        e.push(("tools", Field::Owned(t)));
    }
    let mut mapped = Map::new();
    merge_params(&mut mapped, b.params, &RESERVED_PARAMS);
    for (k, v) in mapped {
        // Every mapped key is a param's own or generationConfig.
        let k: &'a str = match b.params.get_key_value(&k) {
            _ if k == "generationConfig" => "generationConfig",
            Some((key, _)) => key.as_str(),
            None => continue,
        };
        turn::set(&mut e, k, Field::Owned(v));
    }
    e
}

/// The function calls of a model content as the loop's calls.
pub(crate) fn calls(message: &Value) -> Vec<Call> {
    calls_of(message)
        .into_iter()
        .map(|c| Call {
            id: c.id,
            name: c.name,
            args: c.args,
        })
        .collect()
}

/// The text at the turn limit: the last model turn's visible text.
pub fn text_at_limit(messages: &[Value]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("model"))
        .map(text_of)
        .unwrap_or_default()
}

/// The `functionResponse` part of one result, followed by its media parts
/// as `inlineData` (or `fileData` for a linked one); text parts are already
/// in the output.
pub fn result_parts(f: &Fed) -> Vec<Value> {
    let mut parts = vec![function_response(f.id, f.name, f.output, f.is_error)];
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

/// The one `user` content that carries a turn's result parts.
pub fn results_content(parts: Vec<Value>) -> Value {
    role_parts("user", parts)
}

/// `{"role": role, "parts": parts}`.
fn role_parts(role: &str, parts: Vec<Value>) -> Value {
    object([
        ("role", Value::String(role.into())),
        ("parts", Value::Array(parts)),
    ])
}

/// The user turn a run starts with.
pub fn user_content(prompt: &str) -> Value {
    json!({"role": "user", "parts": [{"text": prompt}]})
}

// ---------------------------------------------------------------------------
// translate's turn: OpenAI-shaped request in, this dialect's body out, its
// answer read back in OpenAI shape (over the arena tree, `super::node`)
// ---------------------------------------------------------------------------

/// The Gemini body: `contents`, `systemInstruction` (request.system, else a
/// non-blank client prompt, else the hoisted system/developer messages),
/// one `functionDeclarations` wrapper with Gemini-safe schemas (declared
/// tools first), `toolConfig` from `toolChoice`, `maxTokens` as
/// `generationConfig.maxOutputTokens`, then `requestParams` mapped by
/// [`merge_params`]. The model is in the URL, not the body.
pub fn request_body<'a>(
    bump: &'a Bump,
    client: &'a ClientConfig,
    request: &Request<'a>,
    declared: &[Node<'a>],
) -> Node<'a> {
    let messages: Vec<Value> = request.messages.iter().map(|m| m.to_value()).collect();
    let (contents, hoisted) = contents_from_openai(&messages);
    let system = turn::chosen_system(request, client, hoisted);
    let declarations: Vec<Node<'a>> = declared
        .iter()
        .chain(request.tools)
        .map(|&t| cached_declaration(bump, t))
        .collect();
    let mut body = node::ObjectBuilder::new(bump);
    body.insert("contents", node::copy_value(bump, &Value::Array(contents)));
    if !turn::is_blank(&system) {
        body.insert(
            "systemInstruction",
            node::copy_value(bump, &system_instruction(&system)),
        );
    }
    if !declarations.is_empty() {
        let wrapper = node::object(
            bump,
            &[(
                "functionDeclarations",
                Node::Array(bump.alloc_slice_copy(&declarations)),
            )],
        );
        body.insert("tools", Node::Array(bump.alloc_slice_copy(&[wrapper])));
    }
    // The small keys go through merge_params's map (it merges into
    // generationConfig and moves it last), then into the body in order,
    // each replacing a key already set in its place.
    let mut rest = Map::new();
    if let Some(c) = request.tool_choice.and_then(|c| tool_config(&c.to_value())) {
        rest.insert("toolConfig".into(), c);
    }
    if let Some(n) = request.positive_max_tokens() {
        rest.insert(
            "generationConfig".into(),
            object([("maxOutputTokens", n.to_value())]),
        );
    }
    merge_params(&mut rest, &client.request_params, &RESERVED_PARAMS);
    for (k, v) in &rest {
        body.insert(bump.alloc_str(k), node::copy_value(bump, v));
    }
    body.build()
}

/// [`declaration`] of a tool in the arena, from a bounded process-wide
/// memo of the declarations already made: a request carries the same tools
/// turn after turn, and cleaning their schemas for Gemini is most of the
/// conversion. Keyed by the tool's exact JSON text, so a hit is the same
/// declaration the tool would give afresh; a tool longer than
/// [`crate::limits::GEMINI_MEMO_TOOL_BYTES`] is not kept, and a full memo
/// ([`crate::limits::GEMINI_MEMO_TOOLS`]) starts over empty.
fn cached_declaration<'a>(bump: &'a Bump, tool: Node<'a>) -> Node<'a> {
    use crate::limits::{GEMINI_MEMO_TOOLS, GEMINI_MEMO_TOOL_BYTES};
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, PoisonError};
    type Memo = Mutex<Option<HashMap<Box<str>, Arc<Value>>>>;
    static MEMO: Memo = Mutex::new(None);
    let text = tool.encode_in(bump);
    if text.len() > GEMINI_MEMO_TOOL_BYTES {
        return node::copy_value(bump, &declaration(&tool.to_value()));
    }
    let lock = || MEMO.lock().unwrap_or_else(PoisonError::into_inner);
    let known = lock().as_ref().and_then(|m| m.get(text).cloned());
    let made = known.unwrap_or_else(|| {
        let made = Arc::new(declaration(&tool.to_value()));
        let mut memo = lock();
        let memo = memo.get_or_insert_with(HashMap::new);
        if memo.len() >= GEMINI_MEMO_TOOLS {
            memo.clear();
        }
        memo.insert(text.into(), Arc::clone(&made));
        made
    });
    node::copy_value(bump, &made)
}

/// The `countTokens` body: translate's `generateContent` body (`body`)
/// as its `generateContentRequest`, with the model it names
/// (`models/{model}`) and without `generationConfig` (nothing in it is
/// input). A bare `contents` would leave out the system instruction and
/// the tools, which count.
pub fn count_body<'a>(bump: &'a Bump, client: &ClientConfig, body: Node<'a>) -> Node<'a> {
    let model = client
        .model
        .strip_prefix("models/")
        .unwrap_or(&client.model);
    let mut entries: Vec<(&'a str, Node<'a>)> = vec![(
        "model",
        Node::Str(bump.alloc_str(&format!("models/{model}"))),
    )];
    if let Node::Object(fields) = body {
        entries.extend(
            fields
                .iter()
                .filter(|(k, _)| !matches!(*k, "generationConfig" | "model"))
                .copied(),
        );
    }
    let request = node::object(bump, &entries);
    node::object(bump, &[("generateContentRequest", request)])
}

/// The count in a `countTokens` answer: [`COUNT_FIELD`], `totalTokens`.
pub fn count_of(raw: Node) -> Option<u64> {
    node::count_at(raw, COUNT_FIELD)
}

/// The field of a token-counting answer that holds the count.
pub const COUNT_FIELD: &str = "totalTokens";

/// A Gemini answer in OpenAI shape. A tool call keeps its part's thought
/// signature under `extra_content.google.thought_signature` (send the
/// assistant message back with it); `usage` adds `reasoningTokens` and
/// `cachedTokens` when Gemini counted any.
pub fn read_answer<'a>(bump: &'a Bump, model: &'a str, raw: Node<'a>) -> Node<'a> {
    let value = raw.to_value();
    let content = model_content(&value);
    let calls = calls_of(&content);
    let finish = finish_reason(&value, !calls.is_empty());
    let u = usage(&value);
    let usage = turn::usage_node_counted(
        bump,
        (u.prompt, u.completion, u.total_tokens()),
        u.reasoning,
        u.cached,
    );
    let calls: Vec<Value> = calls.iter().map(openai_tool_call).collect();
    turn::answer_node(
        bump,
        bump.alloc_str(&text_of(&content)),
        node::copy_value(bump, &Value::Array(calls)),
        finish,
        usage,
        model,
        raw,
    )
}

// ---------------------------------------------------------------------------
// the streamed answer (`super::stream`, built from `super::gather`)
// ---------------------------------------------------------------------------

/// A Gemini stream gathered so far.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    /// `responseId`, `modelVersion`, `createTime` as first sent, the last
    /// `promptFeedback`.
    top: Map<String, Value>,
    parts: Vec<Map<String, Value>>,
    calls: usize,
    finish_reason: Option<Value>,
    usage: Option<Value>,
}

/// Whether a text part can take more text appended: plain text (or a
/// thought) with no signature.
fn open_text(p: &Map<String, Value>) -> bool {
    p.get("text").is_some_and(Value::is_string)
        && p.get("thoughtSignature").is_none()
        && p.keys().all(|k| matches!(k.as_str(), "text" | "thought"))
}

impl StreamState {
    /// Takes one event of the stream; `sink` gets its pieces (the usage,
    /// each part's text, thinking or call, then the finish reason). A call
    /// without an id gets a synthetic one ([`SYNTHETIC_ID_PREFIX`] and its
    /// number in the stream), its thought signature going out as
    /// `extra_content`. `Ok(true)`: the answer's last event (later ones are
    /// ignored).
    pub(crate) fn event(
        &mut self,
        data: &str,
        budget: &mut Budget,
        sink: &mut dyn Pieces,
    ) -> Result<bool, Error> {
        // Never `None`: an event that is not a JSON object fails the stream.
        let Some(ev) = read_event("", data, NotObject::Fail)? else {
            return Ok(false);
        };
        let chunk = ev.value;
        if let Some(e) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(provider_stream_error(e));
        }
        let s = self;
        for key in ["responseId", "modelVersion", "createTime"] {
            if let Some(v) = chunk.get(key).filter(|v| !v.is_null()) {
                if !s.top.contains_key(key) {
                    budget.take(ENTRY_BYTES + data.len())?;
                    s.top.insert(key.into(), v.clone());
                }
            }
        }
        if let Some(f) = chunk.get("promptFeedback").filter(|f| f.is_object()) {
            budget.take(ENTRY_BYTES)?;
            s.top.insert("promptFeedback".into(), f.clone());
        }
        if let Some(u) = chunk.get("usageMetadata") {
            sink.usage(usage(&chunk));
            if u.is_object() {
                s.usage = Some(u.clone());
            }
        }
        let Some(candidate) = chunk.get("candidates").and_then(|c| c.get(0)) else {
            return Ok(false);
        };
        if let Some(f) = candidate.get("finishReason").filter(|f| !f.is_null()) {
            s.finish_reason = Some(f.clone());
        }
        let parts = candidate
            .get("content")
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for (n, part) in parts.iter().enumerate() {
            if n % CHECK_EVERY == CHECK_EVERY - 1 {
                budget.check()?;
            }
            let Value::Object(part) = part else { continue };
            s.part(part, data, budget, sink)?;
        }
        if candidate.get("finishReason").is_some() {
            sink.finish(finish_reason(&chunk, false));
        }
        Ok(false)
    }

    /// One part of an event: handed on, then appended to the text part
    /// before it or kept as a part of its own.
    fn part(
        &mut self,
        part: &Map<String, Value>,
        data: &str,
        budget: &mut Budget,
        sink: &mut dyn Pieces,
    ) -> Result<(), Error> {
        let s = self;
        let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
        let text = part.get("text").and_then(Value::as_str);
        if let Some(text) = text {
            if thought {
                sink.reasoning(text)?;
            } else {
                sink.text(text)?;
            }
        }
        if let Some(fc) = part.get("functionCall") {
            if s.calls >= MAX_TOOL_CALLS {
                return Err(too_many_calls(s.calls + 1));
            }
            let synthetic;
            let id = match fc.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() => id,
                _ => {
                    synthetic = format!("{SYNTHETIC_ID_PREFIX}{}", s.calls);
                    &synthetic
                }
            };
            s.calls += 1;
            let extra = part.get("thoughtSignature").map(|sig| {
                (
                    "extra_content",
                    json!({"google": {"thought_signature": sig}}),
                )
            });
            let name = fc.get("name").and_then(Value::as_str).unwrap_or("");
            let at = sink.tool_start(id, name, extra)?;
            match fc.get("args") {
                Some(o @ Value::Object(_)) => sink.tool_args(at, &o.to_string())?,
                _ => sink.tool_args(at, "{}")?,
            }
        }
        if let Some(text) = text {
            let joins = open_text(part)
                && s.parts.last().is_some_and(|last| {
                    open_text(last)
                        && (last.get("thought").and_then(Value::as_bool) == Some(true)) == thought
                });
            if joins {
                budget.take(text.len())?;
                if let Some(Value::String(t)) = s.parts.last_mut().and_then(|l| l.get_mut("text")) {
                    t.push_str(text);
                }
                return Ok(());
            }
            budget.take(ENTRY_BYTES + text.len())?;
        } else {
            // At most the whole event was copied.
            budget.take(ENTRY_BYTES + data.len().min(RESPONSE_BODY_BYTES))?;
        }
        s.parts.push(part.clone());
        Ok(())
    }

    /// The answer as the provider would have sent it whole.
    pub(crate) fn finish(self) -> Value {
        let s = self;
        let mut candidate = Map::new();
        let parts = s.parts.into_iter().map(Value::Object).collect();
        candidate.insert(
            "content".into(),
            serde_json::json!({"role": "model", "parts": Value::Array(parts)}),
        );
        if let Some(f) = s.finish_reason {
            candidate.insert("finishReason".into(), f);
        }
        candidate.insert("index".into(), Value::from(0));
        let mut out = Map::new();
        out.insert(
            "candidates".into(),
            Value::Array(vec![Value::Object(candidate)]),
        );
        if let Some(u) = s.usage {
            out.insert("usageMetadata".into(), u);
        }
        out.extend(s.top);
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_follow_the_base_and_the_stream() {
        assert_eq!(
            endpoint("http://h", "gemini-2.5-flash", false),
            "http://h/v1beta/models/gemini-2.5-flash:generateContent"
        );
        assert_eq!(
            endpoint("http://h/v1beta", "models/g", true),
            "http://h/v1beta/models/g:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            endpoint("http://h", "a/b?c", false),
            "http://h/v1beta/models/a%2Fb%3Fc:generateContent"
        );
        assert_eq!(
            count_endpoint("http://h/v1", "models/g"),
            "http://h/v1/models/g:countTokens"
        );
    }

    #[test]
    fn a_call_on_stop_is_tool_calls_and_usage_counts_thoughts() {
        let raw = json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"text": "thinking", "thought": true},
                {"text": "ok"},
                {"functionCall": {"name": "f", "args": "not an object"}, "thoughtSignature": "c2ln"}
            ]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3,
                "thoughtsTokenCount": 7, "cachedContentTokenCount": 2, "totalTokenCount": 15}
        });
        let content = model_content(&raw);
        let calls = calls_of(&content);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].args, json!({}));
        assert_eq!(calls[0].id, "tn-gemini-call-0");
        assert_eq!(calls[0].thought_signature.as_deref(), Some("c2ln"));
        assert_eq!(text_of(&content), "ok");
        assert_eq!(finish_reason(&raw, true), "tool_calls");
        assert_eq!(finish_reason(&raw, false), "stop");
        let u = usage(&raw);
        assert_eq!((u.prompt, u.completion, u.total_tokens()), (5, 10, 15));
        assert_eq!((u.reasoning, u.cached), (7, 2));
    }

    #[test]
    fn openai_messages_become_contents_with_signatures_and_wrapped_outputs() {
        let messages = vec![
            json!({"role": "system", "content": "be brief"}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
            ]}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "tn-gemini-call-0", "type": "function", "function": {"name": "a", "arguments": "{\"x\":1}"},
                 "extra_content": {"google": {"thought_signature": "SIG"}}},
                {"id": "g2", "type": "function", "function": {"name": "b", "arguments": "[1]"}}
            ]}),
            json!({"role": "tool", "tool_call_id": "tn-gemini-call-0", "content": "one"}),
            json!({"role": "tool", "tool_call_id": "g2", "content": "two"}),
        ];
        let (contents, system) = contents_from_openai(&messages);
        assert_eq!(system, "be brief");
        assert_eq!(
            Value::Array(contents),
            json!([
                {"role": "user", "parts": [{"text": "look"},
                    {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]},
                {"role": "model", "parts": [
                    {"functionCall": {"name": "a", "args": {"x": 1}}, "thoughtSignature": "SIG"},
                    {"functionCall": {"name": "b", "args": {}, "id": "g2"}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "a", "response": {"output": "one"}}},
                    {"functionResponse": {"name": "b", "id": "g2", "response": {"output": "two"}}}
                ]}
            ])
        );
    }

    #[test]
    fn params_go_to_generation_config_under_gemini_names() {
        let mut body = Map::new();
        let params = json!({"temperature": 0.2, "max_tokens": 9, "stop": "END",
            "safetySettings": [], "generationConfig": {"topK": 3}, "stream": true});
        merge_params(&mut body, params.as_object().unwrap(), &["stream"]);
        assert_eq!(
            Value::Object(body),
            json!({"safetySettings": [], "generationConfig": {
                "temperature": 0.2, "maxOutputTokens": 9, "stopSequences": ["END"], "topK": 3}})
        );
    }

    #[test]
    fn consecutive_user_messages_are_one_turn_and_tool_results_their_own() {
        let messages = vec![
            json!({"role": "user", "content": "one"}),
            json!({"role": "user", "content": ""}),
            json!({"role": "user", "content": "two"}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "done"}),
            json!({"role": "user", "content": "three"}),
        ];
        let (contents, _) = contents_from_openai(&messages);
        assert_eq!(
            Value::Array(contents),
            json!([
                {"role": "user", "parts": [{"text": "one"}, {"text": "two"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}, "id": "c1"}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "f", "id": "c1", "response": {"output": "done"}}}]},
                {"role": "user", "parts": [{"text": "three"}]}
            ])
        );
    }

    #[test]
    fn anthropics_thinking_param_is_a_thinking_config() {
        let mut body = Map::new();
        let params = json!({"thinking": {"type": "enabled", "budget_tokens": 2048}});
        merge_params(&mut body, params.as_object().unwrap(), &[]);
        assert_eq!(
            Value::Object(body),
            json!({"generationConfig": {"thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": true}}})
        );
        let mut body = Map::new();
        let params = json!({"thinking": {"type": "adaptive"}});
        merge_params(&mut body, params.as_object().unwrap(), &[]);
        assert_eq!(
            Value::Object(body),
            params,
            "a shape it does not know goes as it is"
        );
    }

    #[test]
    fn tool_choice_maps_to_function_calling_config() {
        assert_eq!(
            tool_config(&json!("required")),
            Some(json!({"functionCallingConfig": {"mode": "ANY"}}))
        );
        assert_eq!(
            tool_config(&json!({"type": "function", "function": {"name": "f"}})),
            Some(json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}}))
        );
        assert_eq!(tool_config(&json!(7)), None);
    }
}
