//! SPEC §11 single-turn translation: one OpenAI-shaped request in, exactly one
//! provider call (plus retries), one OpenAI-shaped result out. No loop, no
//! tool execution, no conversation state, so calls may run concurrently from
//! any number of threads.
//!
//! - `mod.rs`     validate, build the provider body, read the answer back
//! - `helpers.rs` the pure message/tool conversions
//! - `node.rs`    the per-call arena JSON tree
//! - `client.rs`  the provider call: retries, backoff, the timeout
//! - `wire.rs`    the exchange on blocking sockets, its keep-alive pool
//!
//! The work is split in three: [`helpers`] holds the pure message/tool
//! conversions, this module validates the request, builds the provider body
//! and reads the provider's answer back (also pure), and the provider layer
//! ([`crate::provider`]: the client config, [`client`] = `provider::http`)
//! makes the HTTP call.

pub mod helpers;
pub mod node;

/// The HTTP exchange, now in the provider layer; this path stays.
pub use crate::provider::http as client;
pub(crate) use crate::provider::prepare;

use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::json::display_string;
use crate::provider::failover::{self, Leg, Served};
use crate::provider::{anthropic, gemini, responses};
use bumpalo::collections::Vec as BVec;
use bumpalo::Bump;
use node::{Node, Num, ObjectBuilder};
use serde_json::Value;
use std::cell::OnceCell;

// ---------------------------------------------------------------------------
// the client (CONTRACT.md §6)
// ---------------------------------------------------------------------------

use crate::provider::RESERVED_PARAMS;
pub use crate::provider::{ClientConfig, Style, MAX_RETRIES, MAX_RETRY_BASE_MS};

const REQUEST_KEYS: &str = "messages, tools, toolChoice, system, maxTokens";

// ---------------------------------------------------------------------------
// the request
// ---------------------------------------------------------------------------

/// `obj[key]`, with `null` read as absent.
fn present_in<'a>(obj: Node<'a>, key: &str) -> Option<Node<'a>> {
    obj.get(key).filter(|v| !v.is_null())
}

/// `request[key]` read by `pick` (null reads as absent); a value `pick`
/// refuses is an `invalid_config` error saying what `key` must be.
fn typed<'a, T>(
    request: Node<'a>,
    key: &str,
    expected: &str,
    pick: impl Fn(Node<'a>) -> Option<T>,
) -> Result<Option<T>> {
    match present_in(request, key) {
        None => Ok(None),
        Some(v) => pick(v).map(Some).ok_or_else(|| {
            Error::invalid_config(format!(
                "request.{key} must be {expected}, got {}",
                v.type_name()
            ))
        }),
    }
}

/// A validated translate request, borrowing from its JSON.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub messages: &'a [Node<'a>],
    pub tools: &'a [Node<'a>],
    pub tool_choice: Option<Node<'a>>,
    pub system: Option<&'a str>,
    pub max_tokens: Option<Num>,
}

impl<'a> Request<'a> {
    /// Reads and validates a request JSON object. Unknown keys and values of
    /// the wrong type are `invalid_config` errors naming the key; a message that
    /// is not an object is an `invalid_argument` error naming its index.
    pub fn from_node(v: Node<'a>) -> Result<Request<'a>> {
        let Node::Object(entries) = v else {
            return Err(Error::invalid_config(format!(
                "request must be a JSON object, got {}",
                v.type_name()
            )));
        };
        if let Some((k, _)) = entries
            .iter()
            .find(|(k, _)| !REQUEST_KEYS.split(", ").any(|c| c == *k))
        {
            let hint = if *k == "toolkit" {
                " (a toolkit is passed as its own argument to tn_translate)"
            } else {
                ""
            };
            return Err(Error::invalid_config(format!(
                "request: unknown key '{k}'{hint} (known keys: {REQUEST_KEYS})"
            )));
        }
        let messages = match typed(v, "messages", "an array", Node::as_array)? {
            Some(m) => m,
            None => return Err(Error::invalid_config("request.messages is required")),
        };
        if let Some((i, m)) = messages.iter().enumerate().find(|(_, m)| !m.is_object()) {
            return Err(Error::invalid_argument(format!(
                "messages[{i}] must be an object, got {}",
                m.type_name()
            )));
        }
        let tools = typed(v, "tools", "an array", Node::as_array)?.unwrap_or(&[]);
        let system = typed(v, "system", "a string", Node::as_str)?;
        let max_tokens = typed(v, "maxTokens", "a number", |n| match n {
            Node::Number(n) => Some(n),
            _ => None,
        })?;
        Ok(Request {
            messages,
            tools,
            tool_choice: present_in(v, "toolChoice"),
            system,
            max_tokens,
        })
    }

    /// `maxTokens` when it is a positive number (0 and below mean "default").
    fn positive_max_tokens(&self) -> Option<Node<'static>> {
        let n = self.max_tokens?;
        (n.as_f64() > 0.0).then_some(Node::Number(n))
    }
}

// ---------------------------------------------------------------------------
// the provider body (pure)
// ---------------------------------------------------------------------------

/// The schema a toolkit tool declared without one gets
/// ([`crate::tool::default_schema`]).
const DEFAULT_SCHEMA: Node<'static> = Node::Object(&[("type", Node::Str("object"))]);

/// An OpenAI-shaped declaration (`{type, function:{name, description,
/// parameters}}`) as the Anthropic adapter renders a toolkit tool.
fn declared_to_anthropic<'a>(bump: &'a Bump, t: Node<'a>) -> Node<'a> {
    let f = t.get("function").unwrap_or(t);
    node::object(
        bump,
        &[
            ("name", f.get("name").unwrap_or(Node::Null)),
            ("description", f.get("description").unwrap_or(Node::Str(""))),
            (
                "input_schema",
                f.get("parameters").unwrap_or(DEFAULT_SCHEMA),
            ),
        ],
    )
}

/// The JSON body of the provider call, before it is serialised. `declared` are
/// the toolkit's tools in OpenAI shape; they come before `request.tools`.
pub fn provider_body<'a>(
    bump: &'a Bump,
    client: &'a ClientConfig,
    request: &Request<'a>,
    declared: &[Node<'a>],
) -> Node<'a> {
    let mut body = match client.style {
        Style::OpenAi => openai_body(bump, client, request, declared),
        Style::Anthropic => anthropic_body(bump, client, request, declared),
        Style::Gemini => return gemini_body(bump, client, request, declared),
        Style::Responses => return responses_body(bump, client, request, declared),
    };
    for (k, v) in &client.request_params {
        if !RESERVED_PARAMS.contains(&k.as_str()) {
            body.insert(k, node::from_value(bump, v));
        }
    }
    let body = body.build();
    if client.style == Style::Anthropic {
        return cap_cache_breakpoints(bump, body);
    }
    body
}

/// Anthropic takes at most this many `cache_control` breakpoints.
const MAX_CACHE_BREAKPOINTS: usize = 4;

/// Keeps the first [`MAX_CACHE_BREAKPOINTS`] `cache_control` breakpoints of
/// an Anthropic body in its render order (tools, system blocks, message
/// content blocks) and drops the rest (Anthropic refuses the request
/// otherwise). Only those places count: a tool schema may well have a
/// property named `cache_control`. A body within the cap is returned as
/// it is.
fn cap_cache_breakpoints<'a>(bump: &'a Bump, body: Node<'a>) -> Node<'a> {
    /// The blocks that may carry a breakpoint, in render order.
    fn blocks<'n>(body: Node<'n>) -> impl Iterator<Item = Node<'n>> {
        let list = |k: &str| body.get(k).and_then(Node::as_array).unwrap_or(&[]);
        let contents = list("messages")
            .iter()
            .flat_map(|m| m.get("content").and_then(Node::as_array).unwrap_or(&[]));
        list("tools")
            .iter()
            .chain(list("system"))
            .chain(contents)
            .copied()
    }
    let marked = |b: Node| b.get("cache_control").is_some_and(|c| c.is_object());
    if blocks(body).filter(|b| marked(*b)).count() <= MAX_CACHE_BREAKPOINTS {
        return body;
    }
    let mut v = body.to_value();
    let mut left = MAX_CACHE_BREAKPOINTS;
    let mut keep = |block: &mut Value| {
        if let Some(m) = block.as_object_mut() {
            if m.get("cache_control").is_some_and(Value::is_object) {
                if left == 0 {
                    m.shift_remove("cache_control");
                } else {
                    left -= 1;
                }
            }
        }
    };
    for key in ["tools", "system"] {
        if let Some(Value::Array(list)) = v.get_mut(key) {
            list.iter_mut().for_each(&mut keep);
        }
    }
    if let Some(Value::Array(messages)) = v.get_mut("messages") {
        for m in messages {
            if let Some(Value::Array(content)) = m.get_mut("content") {
                content.iter_mut().for_each(&mut keep);
            }
        }
    }
    node::copy_value(bump, &v)
}

fn openai_body<'a>(
    bump: &'a Bump,
    client: &'a ClientConfig,
    request: &Request<'a>,
    declared: &[Node<'a>],
) -> ObjectBuilder<'a> {
    // A request's `system` (even "") wins over the client's prompt; either is
    // prepended only when the messages carry no system/developer message.
    let system = request
        .system
        .or(client.system_prompt.as_deref())
        .unwrap_or("");
    let mut messages = BVec::with_capacity_in(request.messages.len() + 1, bump);
    if !helpers::is_blank(system) && !helpers::has_system_message(request.messages) {
        messages.push(node::object(
            bump,
            &[
                ("role", Node::Str("system")),
                ("content", Node::Str(system)),
            ],
        ));
    }
    messages.extend_from_slice(request.messages);
    let mut body = ObjectBuilder::with_capacity(bump, 5 + client.request_params.len());
    body.push("model", Node::Str(&client.model));
    body.push("messages", node::array(messages));
    if !declared.is_empty() || !request.tools.is_empty() {
        let mut tools = BVec::with_capacity_in(declared.len() + request.tools.len(), bump);
        tools.extend_from_slice(declared);
        tools.extend_from_slice(request.tools);
        body.push("tools", node::array(tools));
    }
    if let Some(choice) = request.tool_choice {
        body.push("tool_choice", choice);
    }
    if let Some(n) = request.positive_max_tokens() {
        body.push("max_tokens", n);
    }
    body
}

fn anthropic_body<'a>(
    bump: &'a Bump,
    client: &'a ClientConfig,
    request: &Request<'a>,
    declared: &[Node<'a>],
) -> ObjectBuilder<'a> {
    let converted = helpers::openai_messages_to_anthropic(bump, request.messages);
    // request.system (even "") > a non-blank client systemPrompt > the
    // system/developer messages hoisted out of the conversation.
    let (system, system_blocks) = match (request.system, client.system_prompt.as_deref()) {
        (Some(s), _) => (s, None),
        (None, Some(p)) if !helpers::is_blank(p) => (p, None),
        _ => (converted.system, converted.system_blocks),
    };
    let mut tools = BVec::with_capacity_in(declared.len() + request.tools.len(), bump);
    tools.extend(declared.iter().map(|t| declared_to_anthropic(bump, *t)));
    helpers::openai_tools_to_anthropic(bump, request.tools, &mut tools);
    let mut body = ObjectBuilder::with_capacity(bump, 6 + client.request_params.len());
    body.push("model", Node::Str(&client.model));
    body.push(
        "max_tokens",
        request
            .positive_max_tokens()
            .unwrap_or(Node::Number(Num::Pos(anthropic::DEFAULT_MAX_TOKENS))),
    );
    body.push("messages", Node::Array(converted.messages));
    match system_blocks {
        Some(blocks) if !blocks.is_empty() => body.push("system", Node::Array(blocks)),
        _ if !helpers::is_blank(system) => body.push("system", Node::Str(system)),
        _ => {}
    }
    if !tools.is_empty() {
        body.push("tools", node::array(tools));
    }
    if let Some(choice) = helpers::openai_tool_choice_to_anthropic(bump, request.tool_choice) {
        body.push("tool_choice", choice);
    }
    body
}

/// The system text of a Gemini or Responses body: the request's own, else
/// a non-blank client prompt, else what the dialect hoisted out of the
/// system/developer messages.
fn chosen_system(request: &Request<'_>, client: &ClientConfig, hoisted: String) -> String {
    match (request.system, client.system_prompt.as_deref()) {
        (Some(s), _) => s.to_string(),
        (None, Some(p)) if !helpers::is_blank(p) => p.to_string(),
        _ => hoisted,
    }
}

/// The Gemini body: `contents`, `systemInstruction` (request.system, else a
/// non-blank client prompt, else the hoisted system/developer messages),
/// one `functionDeclarations` wrapper with Gemini-safe schemas (declared
/// tools first), `toolConfig` from `toolChoice`, `maxTokens` as
/// `generationConfig.maxOutputTokens`, then `requestParams` mapped by
/// [`gemini::merge_params`]. The model is in the URL, not the body.
fn gemini_body<'a>(
    bump: &'a Bump,
    client: &'a ClientConfig,
    request: &Request<'a>,
    declared: &[Node<'a>],
) -> Node<'a> {
    use serde_json::Map;
    let messages: Vec<Value> = request.messages.iter().map(|m| m.to_value()).collect();
    let (contents, hoisted) = gemini::contents_from_openai(&messages);
    let system = chosen_system(request, client, hoisted);
    let declarations: Vec<Value> = declared
        .iter()
        .chain(request.tools)
        .map(|t| gemini::declaration(&t.to_value()))
        .collect();
    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(contents));
    if !helpers::is_blank(&system) {
        body.insert(
            "systemInstruction".into(),
            gemini::system_instruction(&system),
        );
    }
    if let Some(tools) = gemini::tools_value(&declarations) {
        body.insert("tools".into(), tools);
    }
    if let Some(c) = request
        .tool_choice
        .and_then(|c| gemini::tool_config(&c.to_value()))
    {
        body.insert("toolConfig".into(), c);
    }
    if let Some(n) = request.positive_max_tokens() {
        body.insert(
            "generationConfig".into(),
            serde_json::json!({"maxOutputTokens": n.to_value()}),
        );
    }
    gemini::merge_params(&mut body, &client.request_params, &RESERVED_PARAMS);
    node::copy_value(bump, &Value::Object(body))
}

/// The Responses body: `model`, `input` items, `instructions` (chosen as
/// the Anthropic `system` is), flat function tools (declared first),
/// `tool_choice`, `maxTokens` as `max_output_tokens`, then `requestParams`
/// mapped by [`responses::merge_params`] (`previous_response_id` among
/// them when the host gives one).
fn responses_body<'a>(
    bump: &'a Bump,
    client: &'a ClientConfig,
    request: &Request<'a>,
    declared: &[Node<'a>],
) -> Node<'a> {
    use serde_json::Map;
    let messages: Vec<Value> = request.messages.iter().map(|m| m.to_value()).collect();
    let (input, hoisted) = responses::input_from_openai(&messages);
    let system = chosen_system(request, client, hoisted);
    let tools: Vec<Value> = declared
        .iter()
        .chain(request.tools)
        .map(|t| responses::tool(&t.to_value()))
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), Value::String(client.model.clone()));
    body.insert("input".into(), Value::Array(input));
    if !helpers::is_blank(&system) {
        body.insert("instructions".into(), Value::String(system));
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(c) = request.tool_choice {
        body.insert("tool_choice".into(), responses::tool_choice(&c.to_value()));
    }
    if let Some(n) = request.positive_max_tokens() {
        body.insert("max_output_tokens".into(), n.to_value());
    }
    responses::merge_params(&mut body, &client.request_params, &RESERVED_PARAMS);
    node::copy_value(bump, &Value::Object(body))
}

// ---------------------------------------------------------------------------
// the provider's answer (pure)
// ---------------------------------------------------------------------------

/// A token count as a whole number (fractions are dropped; anything else is
/// absent).
fn token_count(v: Option<Node>) -> Option<u64> {
    match v? {
        Node::Number(Num::Pos(n)) => Some(n),
        Node::Number(Num::Float(f)) if f.is_finite() && f >= 0.0 => Some(f as u64),
        _ => None,
    }
}

fn usage_node(bump: &Bump, prompt: u64, completion: u64, total: u64) -> Node<'_> {
    node::object(
        bump,
        &[
            ("promptTokens", Node::Number(Num::Pos(prompt))),
            ("completionTokens", Node::Number(Num::Pos(completion))),
            ("totalTokens", Node::Number(Num::Pos(total))),
        ],
    )
}

/// OpenAI prompt/completion/total_tokens; Anthropic input/output_tokens, the
/// total being their sum. An absent usage is all zeros.
fn usage_of<'a>(bump: &'a Bump, style: Style, raw: Node<'a>) -> Node<'a> {
    let Some(u) = raw.get("usage").filter(|u| u.is_object()) else {
        return usage_node(bump, 0, 0, 0);
    };
    let (p_key, c_key) = match style {
        Style::OpenAi => ("prompt_tokens", "completion_tokens"),
        _ => ("input_tokens", "output_tokens"),
    };
    let p = token_count(u.get(p_key)).unwrap_or(0);
    let c = token_count(u.get(c_key)).unwrap_or(0);
    let sum = p.saturating_add(c);
    let total = match style {
        Style::OpenAi => token_count(u.get("total_tokens")).unwrap_or(sum),
        _ => sum,
    };
    usage_node(bump, p, c, total)
}

/// The finish reasons an OpenAI client understands, kept as the provider
/// sent them.
const OPENAI_FINISH: [&str; 5] = [
    "stop",
    "length",
    "tool_calls",
    "content_filter",
    "function_call",
];

/// The provider's decoded answer in OpenAI shape: `{text, toolCalls,
/// finishReason, usage, model, raw}`. `model` is the model the call asked for.
pub fn read_response<'a>(bump: &'a Bump, style: Style, model: &'a str, raw: Node<'a>) -> Node<'a> {
    let (text, calls, finish) = match style {
        Style::OpenAi => read_openai(bump, raw),
        Style::Anthropic => read_anthropic(bump, raw),
        Style::Gemini => return read_gemini(bump, model, raw),
        Style::Responses => return read_responses(bump, model, raw),
    };
    node::object(
        bump,
        &[
            ("text", Node::Str(text)),
            ("toolCalls", calls),
            ("finishReason", Node::Str(finish)),
            ("usage", usage_of(bump, style, raw)),
            ("model", Node::Str(model)),
            ("raw", raw),
        ],
    )
}

/// An Anthropic answer to a client that enabled thinking
/// (`requestParams.thinking`): the answer gets `reasoningContent` (the
/// thinking text joined) and `thinkingBlocks` (the `thinking` and
/// `redacted_thinking` blocks as sent, signatures included, to send back on
/// the assistant message as `thinking_blocks`) when it has any. Without
/// that param the answer keeps the pinned shape (the blocks stay in `raw`).
fn with_thinking<'a>(
    bump: &'a Bump,
    config: &ClientConfig,
    answer: Node<'a>,
    raw: Node<'a>,
) -> Node<'a> {
    let Node::Object(entries) = answer else {
        return answer;
    };
    if config.style != Style::Anthropic || !config.request_params.contains_key("thinking") {
        return answer;
    }
    let mut entries = entries.to_vec();
    anthropic_thinking(bump, raw, &mut entries);
    node::object(bump, &entries)
}

fn anthropic_thinking<'a>(bump: &'a Bump, raw: Node<'a>, entries: &mut Vec<(&'a str, Node<'a>)>) {
    let blocks = raw.get("content").and_then(Node::as_array).unwrap_or(&[]);
    let mut kept = BVec::new_in(bump);
    let mut text = bumpalo::collections::String::new_in(bump);
    for b in blocks {
        match b.get("type").and_then(Node::as_str) {
            Some("thinking") => {
                text.push_str(b.get("thinking").and_then(Node::as_str).unwrap_or(""));
                kept.push(*b);
            }
            Some("redacted_thinking") => kept.push(*b),
            _ => {}
        }
    }
    if !kept.is_empty() {
        entries.push(("reasoningContent", Node::Str(text.into_bump_str())));
        entries.push(("thinkingBlocks", node::array(kept)));
    }
}

/// A Gemini answer in OpenAI shape. A tool call keeps its part's thought
/// signature under `extra_content.google.thought_signature` (send the
/// assistant message back with it); `usage` adds `reasoningTokens` and
/// `cachedTokens` when Gemini counted any.
fn read_gemini<'a>(bump: &'a Bump, model: &'a str, raw: Node<'a>) -> Node<'a> {
    let value = raw.to_value();
    let content = gemini::model_content(&value);
    let calls = gemini::calls_of(&content);
    let finish = gemini::finish_reason(&value, !calls.is_empty());
    let u = gemini::usage(&value);
    let mut usage = serde_json::json!({
        "promptTokens": u.prompt,
        "completionTokens": u.completion,
        "totalTokens": u.total,
    });
    if u.thoughts > 0 {
        usage["reasoningTokens"] = u.thoughts.into();
    }
    if u.cached > 0 {
        usage["cachedTokens"] = u.cached.into();
    }
    let calls: Vec<Value> = calls.iter().map(gemini::openai_tool_call).collect();
    node::object(
        bump,
        &[
            (
                "text",
                Node::Str(bump.alloc_str(&gemini::text_of(&content))),
            ),
            ("toolCalls", node::copy_value(bump, &Value::Array(calls))),
            ("finishReason", Node::Str(finish)),
            ("usage", node::copy_value(bump, &usage)),
            ("model", Node::Str(model)),
            ("raw", raw),
        ],
    )
}

/// A Responses answer in OpenAI shape; `usage` adds `reasoningTokens` and
/// `cachedTokens` when counted.
fn read_responses<'a>(bump: &'a Bump, model: &'a str, raw: Node<'a>) -> Node<'a> {
    let value = raw.to_value();
    let items = responses::output(&value);
    let calls = responses::calls_of(items);
    let finish = responses::finish_reason(&value, !calls.is_empty());
    let u = responses::usage(&value);
    let mut usage = serde_json::json!({
        "promptTokens": u.prompt,
        "completionTokens": u.completion,
        "totalTokens": u.total,
    });
    if u.reasoning > 0 {
        usage["reasoningTokens"] = u.reasoning.into();
    }
    if u.cached > 0 {
        usage["cachedTokens"] = u.cached.into();
    }
    let calls: Vec<Value> = calls
        .iter()
        .map(|c| serde_json::json!({"id": c.call_id, "name": c.name, "arguments": c.arguments}))
        .collect();
    node::object(
        bump,
        &[
            (
                "text",
                Node::Str(bump.alloc_str(&responses::text_of(items))),
            ),
            ("toolCalls", node::copy_value(bump, &Value::Array(calls))),
            ("finishReason", Node::Str(finish)),
            ("usage", node::copy_value(bump, &usage)),
            ("model", Node::Str(model)),
            ("raw", raw),
        ],
    )
}

/// The text, the tool calls and the finish reason of an OpenAI answer.
fn read_openai<'a>(bump: &'a Bump, raw: Node<'a>) -> (&'a str, Node<'a>, &'static str) {
    let choice = raw
        .get("choices")
        .and_then(Node::as_array)
        .and_then(<[Node]>::first)
        .copied();
    let message = choice.and_then(|c| c.get("message"));
    let text = helpers::content_text(bump, message.and_then(|m| m.get("content")));
    let mut calls = BVec::new_in(bump);
    if let Some(m) = message {
        calls.extend(helpers::tool_calls_of(bump, m).map(|c| c.to_node(bump)));
    }
    // Any tool call means "tool_calls"; otherwise the provider's own reason is
    // kept when it is one of OpenAI's, and mapped by SPEC §11 when it is not.
    let stated = choice.and_then(|c| c.get("finish_reason"));
    let finish = match stated.and_then(Node::as_str) {
        _ if !calls.is_empty() => "tool_calls",
        Some(s) => OPENAI_FINISH
            .iter()
            .copied()
            .find(|f| *f == s)
            .unwrap_or_else(|| helpers::finish_reason_for(false, stated)),
        None => helpers::finish_reason_for(false, stated),
    };
    (text, node::array(calls), finish)
}

/// The text, the tool calls and the finish reason of an Anthropic answer.
fn read_anthropic<'a>(bump: &'a Bump, raw: Node<'a>) -> (&'a str, Node<'a>, &'static str) {
    let blocks = raw.get("content").and_then(Node::as_array).unwrap_or(&[]);
    let of_type = |t: &'static str| {
        blocks
            .iter()
            .filter(move |b| b.get("type").and_then(Node::as_str) == Some(t))
    };
    let mut text = bumpalo::collections::String::new_in(bump);
    for b in of_type("text") {
        text.push_str(b.get("text").map_or("", |t| t.display(bump)));
    }
    let mut calls = BVec::new_in(bump);
    for b in of_type("tool_use") {
        let input = match b.get("input") {
            None | Some(Node::Null) => "{}",
            Some(i) => i.encode_in(bump),
        };
        calls.push(node::object(
            bump,
            &[
                ("id", Node::Str(b.get("id").map_or("", |v| v.display(bump)))),
                (
                    "name",
                    Node::Str(b.get("name").map_or("", |v| v.display(bump))),
                ),
                ("arguments", Node::Str(input)),
            ],
        ));
    }
    let finish = helpers::finish_reason_for(!calls.is_empty(), raw.get("stop_reason"));
    (text.into_bump_str(), node::array(calls), finish)
}

// ---------------------------------------------------------------------------
// the entry points
// ---------------------------------------------------------------------------

/// The arena for one call, sized so that a request of `len` bytes rarely
/// needs a second chunk.
fn arena_for(len: usize) -> Bump {
    Bump::with_capacity(len.saturating_mul(3).clamp(4096, 1 << 24))
}

/// One exchange: validates the request, makes the provider call and reads
/// the answer, all in `bump`; the provider's reply is kept in `reply_slot`,
/// which the answer borrows from. `source` is the text `request` was parsed
/// from, if any. Gives the answer and the provider's reply text.
fn exchange<'a>(
    bump: &'a Bump,
    reply_slot: &'a OnceCell<bytes::Bytes>,
    leg: &Leg<'a>,
    request: Node<'a>,
    source: Option<&'a node::Source<'a>>,
    declared: &'a [Value],
    cancel: Option<&CancelToken>,
) -> Result<(Node<'a>, Option<&'a str>)> {
    let config = leg.config;
    let request = Request::from_node(request)?;
    let declared: Vec<Node<'a>> = declared.iter().map(|d| node::from_value(bump, d)).collect();
    let body = provider_body(bump, config, &request, &declared);
    let model = body
        .get("model")
        .map_or(config.model.as_str(), |m| m.display(bump));
    let capacity = source.map_or(4096, |s| s.text().len() + 1024);
    let encoded = body.to_vec_from(source.map_or(&[], std::slice::from_ref), capacity);
    let call = prepare(config, encoded)?;
    // A token cancelled beforehand stops the call there, before any I/O.
    let mut classify =
        |info: &client::FailedAttempt| leg.classify(info, &mut |i| Ok(client::default_verdict(i)));
    let reply = client::send_until(&call, leg.deadline, cancel, &mut classify)?;
    leg.commit();
    let status = reply.status;
    let bytes: &'a [u8] = reply_slot.get_or_init(|| reply.body);
    let raw =
        node::parse_slice(bump, bytes).map_err(|e| client::malformed(&call, status, &e, bytes))?;
    let answer = with_thinking(
        bump,
        config,
        read_response(bump, config.style, model, raw),
        raw,
    );
    Ok((answer, std::str::from_utf8(bytes).ok()))
}

/// SPEC §11: translates one OpenAI-shaped `request` for the `client`'s
/// provider, makes exactly one provider call (plus retries) and returns the
/// answer in OpenAI shape. `declared` = the toolkit's tools already rendered
/// in OpenAI shape, declared before `request.tools`; empty when no toolkit.
/// Nothing is ever executed.
pub fn translate(
    client: &Value,
    request: &Value,
    declared: &[Value],
    cancel: Option<&CancelToken>,
) -> Result<Value> {
    let config = ClientConfig::from_json(client)?;
    let bump = arena_for(0);
    let reply = OnceCell::new();
    let request = node::from_value(&bump, request);
    let ((answer, _), served) = failover::run(&config, call_deadline(&config), |leg| {
        exchange(&bump, &reply, leg, request, None, declared, cancel)
    })?;
    Ok(with_upstream(&bump, answer, served.as_ref()).to_value())
}

/// The deadline a client's `timeoutMs` sets for a whole call, from now.
fn call_deadline(config: &ClientConfig) -> Option<std::time::Instant> {
    config
        .timeout_ms
        .map(|ms| std::time::Instant::now() + std::time::Duration::from_millis(ms))
}

/// The answer of a client with `upstreams`, with the one that served it as
/// `upstream: {index, baseUrl, model, style}`.
fn with_upstream<'a>(bump: &'a Bump, answer: Node<'a>, served: Option<&Served>) -> Node<'a> {
    match (answer, served) {
        (Node::Object(entries), Some(served)) => {
            let mut entries = entries.to_vec();
            // Parsed into the arena (a `Value` put there would never be
            // dropped).
            let text = bump.alloc_str(&served.to_json().to_string());
            if let Ok(upstream) = node::parse_slice(bump, text.as_bytes()) {
                entries.push(("upstream", upstream));
            }
            node::object(bump, &entries)
        }
        _ => answer,
    }
}

/// [`translate`] with the request and the answer as JSON text, which is how
/// `tn_translate` calls it: the request is parsed straight into the call's
/// arena and the answer written straight from it.
pub fn translate_json(
    client: &Value,
    request_json: &str,
    declared: &[Value],
    cancel: Option<&CancelToken>,
) -> Result<String> {
    let bump = arena_for(request_json.len());
    let (request, source) = node::parse_source(&bump, request_json)
        .map_err(|e| Error::invalid_json("request_json", &e))?;
    let config = ClientConfig::from_json(client)?;
    let reply_slot = OnceCell::new();
    let ((answer, reply), served) = failover::run(&config, call_deadline(&config), |leg| {
        exchange(
            &bump,
            &reply_slot,
            leg,
            request,
            Some(&source),
            declared,
            cancel,
        )
    })?;
    let answer = with_upstream(&bump, answer, served.as_ref());
    let capacity = reply.map_or(1024, |r| 2 * r.len() + 256);
    let reply = reply.map(node::Source::from);
    Ok(node::into_string(
        answer.to_vec_from(reply.as_slice(), capacity),
    ))
}

// ---------------------------------------------------------------------------
// streaming translate
// ---------------------------------------------------------------------------

/// A stream id no other stream of this process shares.
fn stream_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "chatcmpl-tn{:x}{:x}",
        nanos & 0xffff_ffff_ffff,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Streaming translate: [`translate_json`]'s request, sent to the
/// provider as a streamed call (`stream: true`, Gemini's
/// `streamGenerateContent?alt=sse`), its events re-told as they arrive as
/// OpenAI `chat.completion.chunk` SSE events through `on_chunk` (see
/// [`crate::provider::chunks`]); `on_chunk` answers `false` to stop. A
/// provider that answers with a whole JSON body is re-told from it. The
/// call is retried only before any of the answer arrived. Gives
/// `{id, finishReason, chunks}`.
pub fn translate_stream_json(
    client: &Value,
    request_json: &str,
    declared: &[Value],
    cancel: Option<&CancelToken>,
    on_chunk: &mut dyn FnMut(&str) -> bool,
) -> Result<Value> {
    use crate::provider::chunks::{write_whole, ChunkWriter, Upstream};
    use crate::provider::sse::SseParser;
    let bump = arena_for(request_json.len());
    let (request, _) = node::parse_source(&bump, request_json)
        .map_err(|e| Error::invalid_json("request_json", &e))?;
    let client_config = ClientConfig::from_json(client)?;
    let request = Request::from_node(request)?;
    let declared: Vec<Node> = declared
        .iter()
        .map(|d| node::from_value(&bump, d))
        .collect();
    let id = stream_id();
    let (mut out, served) = failover::run(&client_config, call_deadline(&client_config), |leg| {
        let config = leg.config;
        let mut body = provider_body(&bump, config, &request, &declared).to_value();
        if let Value::Object(b) = &mut body {
            match config.style {
                Style::Gemini => {}
                Style::OpenAi => {
                    b.insert("stream".into(), Value::Bool(true));
                    b.insert(
                        "stream_options".into(),
                        serde_json::json!({"include_usage": true}),
                    );
                }
                Style::Anthropic | Style::Responses => {
                    b.insert("stream".into(), Value::Bool(true));
                }
            }
        }
        let encoded = serde_json::to_vec(&body).unwrap_or_default();
        let call = crate::provider::prepare_for(config, encoded, true)?;
        let deadline = leg.deadline;
        let mut writer = ChunkWriter::new(id.clone(), &config.model, &mut *on_chunk);
        let mut upstream = Upstream::new(config.style);
        let mut parser = SseParser::new();
        // None: not decided yet; Some(true): events; Some(false): a whole body.
        let mut events: Option<bool> = None;
        let mut whole: Vec<u8> = Vec::new();
        let mut failed: Option<Error> = None;
        let mut classify = |info: &client::FailedAttempt| {
            leg.classify(info, &mut |i| Ok(client::default_verdict(i)))
        };
        let mut sink = |mut piece: &[u8]| -> bool {
            // Once any of the answer arrived, no other upstream takes over.
            leg.commit();
            if events.is_none() {
                let Some(start) = piece.iter().position(|b| !b.is_ascii_whitespace()) else {
                    return true;
                };
                piece = &piece[start..];
                events = Some(piece[0] != b'{');
            }
            let result = if events == Some(true) {
                parser.feed(piece, &mut |name, data| {
                    upstream.event(name, data, &mut writer)
                })
            } else if whole.len() + piece.len() > crate::limits::RESPONSE_BODY_BYTES {
                Err(Error::new(
                    crate::error::ErrorCode::ProviderError,
                    "the provider's answer is larger than the cap of a provider answer",
                ))
            } else {
                whole.extend_from_slice(piece);
                Ok(())
            };
            match result {
                Ok(()) => true,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            }
        };
        let reply =
            client::send_streaming_until(&call, deadline, cancel, &mut classify, &mut sink)?;
        if let Some(e) = failed {
            return Err(e);
        }
        let finish = match events {
            Some(true) => {
                parser.finish(&mut |name, data| upstream.event(name, data, &mut writer))?;
                writer.end()?
            }
            Some(false) => {
                let raw = node::parse_slice(&bump, &whole)
                    .map_err(|e| client::malformed(&call, reply.status, &e, &whole))?;
                let answer = read_response(&bump, config.style, &config.model, raw).to_value();
                write_whole(&answer, &mut writer)?
            }
            None => return Err(client::malformed_stream(&call, reply.status, b"")),
        };
        Ok(serde_json::json!({
            "id": writer.id(),
            "finishReason": finish,
            "chunks": writer.written,
        }))
    })?;
    if let (Value::Object(out), Some(served)) = (&mut out, served) {
        out.insert("upstream".into(), served.to_json());
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// the helpers by their vector names
// ---------------------------------------------------------------------------

/// The pure helpers by their vector names, with positional arguments as in
/// translate_helpers.json: "sanitize", "finishReasonFor", "contentText",
/// "argsObject", "argsString", "toolCallsOf", "hasSystemMessage",
/// "openaiToolChoiceToAnthropic", "openaiToolsToAnthropic", "toolCallsJson",
/// "openaiMessagesToAnthropic".
pub fn call_helper(name: &str, args: &[Value]) -> Result<Value> {
    // The §10 answer helpers share the entry point (upstream D4, #89).
    if let Some(answer) = crate::answer::call_helper(name, args) {
        return answer;
    }
    let arity = match name {
        "finishReasonFor" => 2,
        "sanitize"
        | "contentText"
        | "argsObject"
        | "argsString"
        | "toolCallsOf"
        | "hasSystemMessage"
        | "openaiToolChoiceToAnthropic"
        | "openaiToolsToAnthropic"
        | "toolCallsJson"
        | "openaiMessagesToAnthropic" => 1,
        other => {
            return Err(Error::invalid_argument(format!(
                "unknown translate helper '{other}'"
            )))
        }
    };
    if args.len() != arity {
        return Err(Error::invalid_argument(format!(
            "helper {name} takes {arity} argument(s), got {}",
            args.len()
        )));
    }
    let bump = Bump::new();
    let a = node::from_value(&bump, &args[0]);
    let list = a.as_array().unwrap_or(&[]);
    let string = |s: &str| Value::String(s.to_string());
    Ok(match name {
        "sanitize" => Value::String(crate::tool::sanitize(&display_string(&args[0]))),
        "finishReasonFor" => {
            let has_calls = !matches!(a, Node::Null | Node::Bool(false));
            let stop = node::from_value(&bump, &args[1]);
            string(helpers::finish_reason_for(has_calls, Some(stop)))
        }
        "contentText" => string(helpers::content_text(&bump, Some(a))),
        "argsObject" => helpers::args_object(&bump, Some(a)).to_value(),
        "argsString" => string(helpers::args_string(&bump, Some(a))),
        "toolCallsOf" => Value::Array(
            helpers::tool_calls_of(&bump, a)
                .map(|c| c.to_node(&bump).to_value())
                .collect(),
        ),
        "hasSystemMessage" => Value::Bool(helpers::has_system_message(list)),
        "openaiToolChoiceToAnthropic" => helpers::openai_tool_choice_to_anthropic(&bump, Some(a))
            .map_or(Value::Null, Node::to_value),
        "openaiToolsToAnthropic" => {
            let mut out = BVec::new_in(&bump);
            helpers::openai_tools_to_anthropic(&bump, list, &mut out);
            node::array(out).to_value()
        }
        "toolCallsJson" => helpers::tool_calls_json(&bump, a).to_value(),
        _ => helpers::openai_messages_to_anthropic(&bump, list)
            .to_node(&bump)
            .to_value(),
    })
}
