//! The OpenAI Responses dialect (`POST {base}/responses`): its tables and
//! its conversions.
//!
//! - A conversation is a flat list of `input` items: `message` (`{role,
//!   content}`), `function_call` (`{call_id, name, arguments}`),
//!   `function_call_output` (`{call_id, output}`) and `reasoning` (kept
//!   verbatim, `encrypted_content` included); the system text is
//!   `instructions`; tools are flat (`{type: "function", name, description,
//!   parameters}`); the length cap is `max_output_tokens`.
//! - An answer's `output` is a list of the same items; the client loop
//!   appends them all to its transcript, so reasoning items go back as they
//!   came.
//!
//! - The loop's side ([`super::turn`]): its body writer, the calls and text
//!   read off the output items, the result items fed back.
//! - The streamed answer's state (`StreamState`, driven by
//!   [`super::stream`]).
//!
//! Everything here is pure JSON work: translate's request on the arena's
//! [`Node`]s (a request's subtrees shared, not copied), the rest on
//! [`serde_json::Value`].

use super::gather::{
    append_string, provider_stream_error, read_event, too_many_calls, Budget, NotObject, Pieces,
    Usage, ENTRY_BYTES, MAX_TOOL_CALLS,
};
use super::node::{self, Node};
use super::turn::{self, Body, Call, Entries, Fed, Field, Request};
use super::{ClientConfig, RESERVED_PARAMS};
use crate::error::Error;
use bumpalo::Bump;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// The endpoint under a client's `baseUrl` (its trailing `/` removed).
pub fn endpoint(base: &str) -> String {
    format!("{base}/responses")
}

/// The token-counting endpoint: `{base}/responses/input_tokens` (with the
/// usual base ending in `/v1`, `POST /v1/responses/input_tokens`).
pub fn count_endpoint(base: &str) -> String {
    format!("{base}/responses/input_tokens")
}

/// One OpenAI chat declaration (`{type, function:{name, description,
/// parameters}}`) as a flat Responses function tool; a flat one is kept.
pub fn tool(openai: &Value) -> Value {
    let bump = Bump::new();
    tool_node(&bump, node::copy_value(&bump, openai)).to_value()
}

/// [`tool`] in the arena: the name, description and schema are the
/// declaration's own nodes, not copies.
pub fn tool_node<'a>(bump: &'a Bump, openai: Node<'a>) -> Node<'a> {
    let Some(f) = openai.get("function") else {
        return openai;
    };
    // On the stack: one tool's five entries at most, copied to the arena once.
    let mut t = [("type", Node::Str("function")); 5];
    let mut n = 1;
    for key in ["name", "description", "parameters", "strict"] {
        if let Some(v) = f.get(key).filter(|v| !v.is_null()) {
            t[n] = (key, v);
            n += 1;
        }
    }
    node::object(bump, &t[..n])
}

/// OpenAI chat `tool_choice` in Responses shape (a named function is
/// `{type: "function", name}`).
pub fn tool_choice<'a>(bump: &'a Bump, choice: Node<'a>) -> Node<'a> {
    match choice.get("function").and_then(|f| f.get("name")) {
        Some(name) => node::object(bump, &[("type", Node::Str("function")), ("name", name)]),
        None => choice,
    }
}

/// Merges OpenAI chat request parameters into a Responses body:
/// `max_tokens`/`max_completion_tokens` → `max_output_tokens`,
/// `reasoning_effort` → `reasoning.effort`, `response_format` →
/// `text.format`; every other key (`previous_response_id`, `store`,
/// `include`, `temperature`, …) as given. `skip` names keys the caller
/// owns.
pub fn merge_params(body: &mut Map<String, Value>, params: &Map<String, Value>, skip: &[&str]) {
    for (k, v) in params {
        if skip.contains(&k.as_str()) {
            continue;
        }
        match (k.as_str(), v) {
            ("max_tokens" | "max_completion_tokens", _) => {
                body.insert("max_output_tokens".into(), v.clone());
            }
            ("reasoning_effort", Value::String(e)) => {
                body.insert("reasoning".into(), json!({"effort": e}));
            }
            ("response_format", Value::Object(f)) => {
                let format = match f.get("type").and_then(Value::as_str) {
                    Some("json_schema") => {
                        let mut out = f.get("json_schema").cloned().unwrap_or(json!({}));
                        out["type"] = json!("json_schema");
                        out
                    }
                    _ => Value::Object(f.clone()),
                };
                body.insert("text".into(), json!({ "format": format }));
            }
            _ => {
                body.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The text of an OpenAI `content` (a string, or the `text` of its parts;
/// any other value as its JSON).
fn content_text<'a>(bump: &'a Bump, content: Option<Node<'a>>) -> &'a str {
    match content {
        Some(Node::Array(parts)) => {
            let mut text = bumpalo::collections::String::new_in(bump);
            for t in parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Node::as_str))
            {
                text.push_str(t);
            }
            text.into_bump_str()
        }
        Some(other) => other.display(bump),
        None => "",
    }
}

/// A user message's content in Responses shape: a string stays a string;
/// parts become `input_text`, `input_image`, `input_file`.
fn user_content<'a>(bump: &'a Bump, content: Option<Node<'a>>) -> Node<'a> {
    let Some(Node::Array(parts)) = content else {
        return Node::Str(content_text(bump, content));
    };
    let part = |p: &Node<'a>| -> Option<Node<'a>> {
        let p = *p;
        match p.get("type").and_then(Node::as_str) {
            Some("text") => Some(node::object(
                bump,
                &[("type", Node::Str("input_text")), ("text", p.get("text")?)],
            )),
            Some("image_url") => {
                let image = p.get("image_url")?;
                let url = match image {
                    Node::Str(_) => image,
                    o => o.get("url")?,
                };
                let mut v = vec![("type", Node::Str("input_image")), ("image_url", url)];
                if let Some(d) = image.get("detail") {
                    v.push(("detail", d));
                }
                Some(node::object(bump, &v))
            }
            Some("file") => {
                let f = p.get("file")?;
                let mut v = vec![("type", Node::Str("input_file"))];
                for key in ["file_data", "file_id", "filename"] {
                    if let Some(x) = f.get(key) {
                        v.push((key, x));
                    }
                }
                Some(node::object(bump, &v))
            }
            _ => p
                .get("text")
                .map(|t| node::object(bump, &[("type", Node::Str("input_text")), ("text", t)])),
        }
    };
    let mapped: Vec<Node<'a>> = parts.iter().filter_map(part).collect();
    Node::Array(bump.alloc_slice_copy(&mapped))
}

/// OpenAI chat messages as Responses `input` items, and the text of the
/// system/developer messages (joined by a blank line).
///
/// user → a `message`; assistant → its `reasoning_items` (verbatim, when
/// the host kept them from an answer), a `message` of `output_text` when it
/// has text, then one `function_call` per tool call; tool → a
/// `function_call_output`. The items share the messages' nodes (the arena
/// copies nothing it can point at).
pub fn input_from_openai<'a>(bump: &'a Bump, messages: &[Node<'a>]) -> (Vec<Node<'a>>, String) {
    let mut items = Vec::with_capacity(messages.len());
    let mut system: Vec<&str> = Vec::new();
    let empty = Node::Str("");
    for &m in messages {
        match m.get("role").and_then(Node::as_str).unwrap_or("user") {
            "system" | "developer" => {
                let t = content_text(bump, m.get("content"));
                if !t.trim().is_empty() {
                    system.push(t);
                }
            }
            "assistant" => {
                if let Some(Node::Array(r)) = m.get("reasoning_items") {
                    items.extend_from_slice(r);
                }
                let text = content_text(bump, m.get("content"));
                if !text.is_empty() {
                    let part = node::object(
                        bump,
                        &[
                            ("type", Node::Str("output_text")),
                            ("text", Node::Str(text)),
                        ],
                    );
                    items.push(node::object(
                        bump,
                        &[
                            ("type", Node::Str("message")),
                            ("role", Node::Str("assistant")),
                            ("content", Node::Array(bump.alloc_slice_copy(&[part]))),
                        ],
                    ));
                }
                for tc in m.get("tool_calls").and_then(Node::as_array).unwrap_or(&[]) {
                    let f = tc.get("function");
                    let arguments = match f.and_then(|f| f.get("arguments")) {
                        Some(Node::Str(s)) => Node::Str(s),
                        Some(Node::Null) | None => Node::Str("{}"),
                        Some(other) => Node::Str(other.display(bump)),
                    };
                    items.push(node::object(
                        bump,
                        &[
                            ("type", Node::Str("function_call")),
                            ("call_id", tc.get("id").unwrap_or(empty)),
                            ("name", f.and_then(|f| f.get("name")).unwrap_or(empty)),
                            ("arguments", arguments),
                        ],
                    ));
                }
            }
            "tool" => items.push(node::object(
                bump,
                &[
                    ("type", Node::Str("function_call_output")),
                    ("call_id", m.get("tool_call_id").unwrap_or(empty)),
                    ("output", Node::Str(content_text(bump, m.get("content")))),
                ],
            )),
            role => items.push(node::object(
                bump,
                &[
                    ("type", Node::Str("message")),
                    ("role", Node::Str(role)),
                    ("content", user_content(bump, m.get("content"))),
                ],
            )),
        }
    }
    (items, system.join("\n\n"))
}

// ---------------------------------------------------------------------------
// the answer
// ---------------------------------------------------------------------------

/// The `output` items of an answer.
pub fn output(raw: &Value) -> &[Value] {
    raw.get("output")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn of_type<'a>(items: &'a [Value], t: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    items
        .iter()
        .filter(move |i| i.get("type").and_then(Value::as_str) == Some(t))
}

/// The visible text of some items: the `output_text` parts of their
/// assistant messages.
pub fn text_of(items: &[Value]) -> String {
    of_type(items, "message")
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("output_text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect()
}

/// One function call of an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionCall {
    pub call_id: String,
    pub name: String,
    /// As sent: a JSON string.
    pub arguments: String,
}

/// The function calls among some items, in order.
pub fn calls_of(items: &[Value]) -> Vec<FunctionCall> {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    of_type(items, "function_call")
        .map(|c| FunctionCall {
            call_id: s(c.get("call_id")),
            name: s(c.get("name")),
            arguments: match c.get("arguments") {
                Some(Value::String(a)) => a.clone(),
                Some(Value::Null) | None => "{}".to_string(),
                Some(other) => other.to_string(),
            },
        })
        .collect()
}

/// The OpenAI finish reason: `tool_calls` with any call; an `incomplete`
/// answer cut by `max_output_tokens` → `length`, by `content_filter` →
/// `content_filter`; else `stop`.
pub fn finish_reason(raw: &Value, has_calls: bool) -> &'static str {
    if has_calls {
        return "tool_calls";
    }
    match raw
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str)
    {
        Some("max_output_tokens") => "length",
        Some("content_filter") => "content_filter",
        _ => "stop",
    }
}

/// Token counts: `input_tokens`, `output_tokens`, `total_tokens` (their sum
/// when absent), `input_tokens_details.cached_tokens`,
/// `output_tokens_details.reasoning_tokens`. No usage is all zeros.
pub fn usage(raw: &Value) -> Usage {
    let Some(u) = raw.get("usage").filter(|u| u.is_object()) else {
        return Usage::default();
    };
    let n = |p: &str| {
        u.pointer(p).and_then(Value::as_u64).unwrap_or_else(|| {
            u.pointer(p)
                .and_then(Value::as_f64)
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map_or(0, |f| f as u64)
        })
    };
    let prompt = n("/input_tokens");
    let completion = n("/output_tokens");
    let total = match u.get("total_tokens") {
        Some(t) if t.is_number() => n("/total_tokens"),
        _ => prompt.saturating_add(completion),
    };
    Usage {
        prompt,
        completion,
        total: Some(total),
        reasoning: n("/output_tokens_details/reasoning_tokens"),
        cached: n("/input_tokens_details/cached_tokens"),
    }
}

// ---------------------------------------------------------------------------
// the loop's turn (`super::turn`)
// ---------------------------------------------------------------------------

/// The loop's body: `{model, input, instructions?, tools?,
/// tool_choice:"auto"?, stream?}`, then the mapped `requestParams`.
pub(crate) fn body_entries<'a>(b: &Body<'a>) -> Entries<'a> {
    let mut e: Entries<'a> = Vec::with_capacity(6 + b.params.len());
    e.push(("model", Field::Str(b.model)));
    e.push(("input", Field::Values(b.messages)));
    if !b.system.trim().is_empty() {
        e.push(("instructions", Field::Str(b.system)));
    }
    if !b.tools.is_empty() {
        e.push(("tools", Field::Values(b.tools)));
        e.push(("tool_choice", Field::Str("auto")));
    }
    if b.stream {
        e.push(("stream", Field::Bool(true)));
    }
    let mut mapped = Map::new();
    merge_params(&mut mapped, b.params, &RESERVED_PARAMS);
    for (k, v) in mapped {
        // Every mapped key is a param's own or one of these.
        let k: &'a str = match b.params.get_key_value(&k) {
            _ if k == "max_output_tokens" => "max_output_tokens",
            _ if k == "reasoning" => "reasoning",
            _ if k == "text" => "text",
            Some((key, _)) => key.as_str(),
            None => continue,
        };
        turn::set(&mut e, k, Field::Owned(v));
    }
    e
}

/// The assistant turn: every output item (reasoning, messages, calls); the
/// loop appends them to its transcript one by one
/// ([`super::turn::append_turn`]).
pub fn assistant_items(raw: &Value) -> Value {
    Value::Array(output(raw).to_vec())
}

/// The function calls of a turn (its list of items, or one item) as the
/// loop's calls.
pub(crate) fn calls(message: &Value) -> Vec<Call> {
    let items = match message {
        Value::Array(items) => items.as_slice(),
        item => std::slice::from_ref(item),
    };
    calls_of(items)
        .into_iter()
        .map(|c| Call {
            args: turn::args_of(Some(&Value::String(c.arguments))),
            id: c.call_id,
            name: c.name,
        })
        .collect()
}

/// The text at the turn limit: the last assistant message item's text.
pub fn text_at_limit(messages: &[Value]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| {
            m.get("type").and_then(Value::as_str) == Some("message")
                && m.get("role").and_then(Value::as_str) == Some("assistant")
        })
        .map(|m| text_of(std::slice::from_ref(m)))
        .unwrap_or_default()
}

/// One `function_call_output` item per result (text only).
pub fn result_item(f: &Fed) -> Value {
    json!({"type": "function_call_output", "call_id": f.id, "output": f.output})
}

// ---------------------------------------------------------------------------
// translate's turn: OpenAI-shaped request in, this dialect's body out, its
// answer read back in OpenAI shape (over the arena tree, `super::node`)
// ---------------------------------------------------------------------------

/// The Responses body: `model`, `input` items, `instructions` (chosen as
/// the Anthropic `system` is), flat function tools (declared first),
/// `tool_choice`, `maxTokens` as `max_output_tokens`, then `requestParams`
/// mapped by [`merge_params`] (`previous_response_id` among
/// them when the host gives one).
pub fn request_body<'a>(
    bump: &'a Bump,
    client: &'a ClientConfig,
    request: &Request<'a>,
    declared: &[Node<'a>],
) -> Node<'a> {
    let (input, hoisted) = input_from_openai(bump, request.messages);
    let system = turn::chosen_system(request, client, hoisted);
    let mut tools =
        bumpalo::collections::Vec::with_capacity_in(declared.len() + request.tools.len(), bump);
    tools.extend(
        declared
            .iter()
            .chain(request.tools)
            .map(|&t| tool_node(bump, t)),
    );
    let tools = tools.into_bump_slice();
    let mut body = node::ObjectBuilder::new(bump);
    body.insert("model", Node::Str(&client.model));
    body.insert("input", Node::Array(bump.alloc_slice_copy(&input)));
    if !turn::is_blank(&system) {
        body.insert("instructions", Node::Str(bump.alloc_str(&system)));
    }
    if !tools.is_empty() {
        body.insert("tools", Node::Array(tools));
    }
    if let Some(c) = request.tool_choice {
        body.insert("tool_choice", tool_choice(bump, c));
    }
    if let Some(n) = request.positive_max_tokens() {
        body.insert("max_output_tokens", n);
    }
    // The parameters as a Responses body has them, each replacing a key
    // already set in its place (as the map they are merged into would).
    let mut params = Map::new();
    merge_params(&mut params, &client.request_params, &RESERVED_PARAMS);
    for (k, v) in &params {
        body.insert(bump.alloc_str(k), node::copy_value(bump, v));
    }
    body.build()
}

/// The body keys `/responses/input_tokens` takes: what shapes the input
/// (generation-only keys such as `max_output_tokens`, `stream`,
/// `temperature`, `store` or `metadata` are left out).
pub const COUNT_KEYS: [&str; 11] = [
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "previous_response_id",
    "conversation",
    "reasoning",
    "text",
    "truncation",
];

/// The `input_tokens` body: translate's body (`body`, requestParams
/// mapped) with only the keys of [`COUNT_KEYS`].
pub fn count_body<'a>(bump: &'a Bump, body: Node<'a>) -> Node<'a> {
    node::only_keys(bump, body, &COUNT_KEYS)
}

/// The count in an `input_tokens` answer: [`COUNT_FIELD`], `input_tokens`.
pub fn count_of(raw: Node) -> Option<u64> {
    node::count_at(raw, COUNT_FIELD)
}

/// The field of a token-counting answer that holds the count.
pub const COUNT_FIELD: &str = "input_tokens";

/// A Responses answer in OpenAI shape; `usage` adds `reasoningTokens` and
/// `cachedTokens` when counted.
pub fn read_answer<'a>(bump: &'a Bump, model: &'a str, raw: Node<'a>) -> Node<'a> {
    let value = raw.to_value();
    let items = output(&value);
    let calls = calls_of(items);
    let finish = finish_reason(&value, !calls.is_empty());
    let u = usage(&value);
    let usage = turn::usage_node_counted(
        bump,
        (u.prompt, u.completion, u.total_tokens()),
        u.reasoning,
        u.cached,
    );
    let calls: Vec<Value> = calls
        .iter()
        .map(|c| serde_json::json!({"id": c.call_id, "name": c.name, "arguments": c.arguments}))
        .collect();
    turn::answer_node(
        bump,
        bump.alloc_str(&text_of(items)),
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

/// A Responses stream gathered so far.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    response: Option<Map<String, Value>>,
    /// The output items by their `output_index`, in arrival order.
    items: Vec<(u64, Map<String, Value>)>,
    by_index: HashMap<u64, usize>,
    calls: usize,
    /// The sink's number of the call each `output_item.added` started, by
    /// `output_index`.
    told: HashMap<u64, usize>,
}

impl StreamState {
    /// The item of `index`, started empty when no event started it.
    fn item(&mut self, index: u64, kind: &str) -> &mut Map<String, Value> {
        let at = match self.by_index.get(&index) {
            Some(&at) => at,
            None => {
                let mut m = Map::new();
                m.insert("type".into(), Value::String(kind.into()));
                self.items.push((index, m));
                self.by_index.insert(index, self.items.len() - 1);
                self.items.len() - 1
            }
        };
        &mut self.items[at].1
    }

    /// Sets the item of `index` (counting function calls).
    fn set_item(&mut self, index: u64, item: Map<String, Value>) -> Result<(), Error> {
        let is_call =
            |m: &Map<String, Value>| m.get("type").and_then(Value::as_str) == Some("function_call");
        let was_call = self
            .by_index
            .get(&index)
            .is_some_and(|&at| is_call(&self.items[at].1));
        if is_call(&item) && !was_call {
            if self.calls >= MAX_TOOL_CALLS {
                return Err(too_many_calls(self.calls + 1));
            }
            self.calls += 1;
        }
        *self.item(index, "message") = item;
        Ok(())
    }

    /// Takes one event of the stream; `sink` gets its pieces (the usage and
    /// finish reason at `response.completed` or `response.incomplete`).
    /// `Ok(true)`: the answer's last event (later ones are ignored).
    pub(crate) fn event(
        &mut self,
        name: &str,
        data: &str,
        budget: &mut Budget,
        sink: &mut dyn Pieces,
    ) -> Result<bool, Error> {
        let Some(ev) = read_event(name, data, NotObject::Skip)? else {
            return Ok(false);
        };
        let s = self;
        let index = ev.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        let delta = ev.get("delta").and_then(Value::as_str).unwrap_or("");
        let kind = ev.kind();
        match kind {
            "response.created" | "response.in_progress" => {
                if kind == "response.created" {
                    sink.begin()?;
                }
                if let Some(Value::Object(r)) = ev.get("response") {
                    budget.take(ENTRY_BYTES + data.len())?;
                    s.response = Some(r.clone());
                }
            }
            "response.output_item.added" | "response.output_item.done" => {
                if let Some(Value::Object(item)) = ev.get("item") {
                    budget.take(ENTRY_BYTES + data.len())?;
                    s.set_item(index, item.clone())?;
                }
                let item = ev.get("item");
                let field = |k: &str| {
                    item.and_then(|i| i.get(k))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                };
                if kind == "response.output_item.added" && field("type") == "function_call" {
                    let at = sink.tool_start(field("call_id"), field("name"), None)?;
                    s.told.insert(index, at);
                    sink.tool_args(at, field("arguments"))?;
                }
            }
            "response.output_text.delta" => {
                budget.take(delta.len())?;
                let part = ev.get("content_index").and_then(Value::as_u64).unwrap_or(0);
                let item = s.item(index, "message");
                item.entry("role")
                    .or_insert_with(|| Value::String("assistant".into()));
                let content = item
                    .entry("content")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(parts) = content {
                    let at = usize::try_from(part).unwrap_or(usize::MAX);
                    if at >= parts.len() && at < MAX_TOOL_CALLS {
                        budget.take(ENTRY_BYTES * (at + 1 - parts.len()))?;
                        parts.resize_with(
                            at + 1,
                            || serde_json::json!({"type": "output_text", "text": ""}),
                        );
                    }
                    if let Some(Value::Object(p)) = parts.get_mut(at) {
                        append_string(p, "text", delta, budget)?;
                    }
                }
                sink.text(delta)?;
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                sink.reasoning(delta)?;
            }
            "response.function_call_arguments.delta" => {
                budget.take(delta.len())?;
                if !s.by_index.contains_key(&index) {
                    let mut call = Map::new();
                    call.insert("type".into(), Value::String("function_call".into()));
                    s.set_item(index, call)?;
                }
                append_string(s.item(index, "function_call"), "arguments", delta, budget)?;
                if let Some(&at) = s.told.get(&index) {
                    sink.tool_args(at, delta)?;
                }
            }
            "response.completed" | "response.incomplete" => {
                let r = ev.get("response").unwrap_or(&Value::Null);
                let u = usage(r);
                sink.usage(u);
                sink.finish(finish_reason(r, false));
                if let Value::Object(r) = r {
                    budget.take(ENTRY_BYTES + data.len())?;
                    s.response = Some(r.clone());
                }
                return Ok(true);
            }
            "response.failed" => {
                let detail = ev
                    .get("response")
                    .and_then(|r| r.get("error"))
                    .filter(|e| !e.is_null())
                    .unwrap_or(&ev.value);
                return Err(provider_stream_error(detail));
            }
            "error" => {
                return Err(provider_stream_error(ev.get("error").unwrap_or(&ev.value)));
            }
            _ => {}
        }
        Ok(false)
    }

    /// The answer as the provider would have sent it whole.
    pub(crate) fn finish(self) -> Value {
        let s = self;
        let mut out = s.response.unwrap_or_default();
        out.entry("object")
            .or_insert_with(|| Value::String("response".into()));
        let has_output = out
            .get("output")
            .and_then(Value::as_array)
            .is_some_and(|o| !o.is_empty());
        if !has_output {
            let mut items = s.items;
            items.sort_by_key(|(i, _)| *i);
            let items = items.into_iter().map(|(_, m)| Value::Object(m)).collect();
            out.insert("output".into(), Value::Array(items));
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_messages_become_input_items() {
        let bump = Bump::new();
        let messages: Vec<Node> = [
            json!({"role": "system", "content": "S"}),
            json!({"role": "user", "content": [{"type": "text", "text": "hi"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}),
            json!({"role": "assistant", "content": "ok", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "done"}),
        ]
        .iter()
        .map(|m| node::copy_value(&bump, m))
        .collect();
        let (items, system) = input_from_openai(&bump, &messages);
        assert_eq!(system, "S");
        assert_eq!(
            Value::Array(items.iter().map(|i| i.to_value()).collect()),
            json!([
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "hi"},
                    {"type": "input_image", "image_url": "https://x/y.png"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\":1}"},
                {"type": "function_call_output", "call_id": "c1", "output": "done"}
            ])
        );
    }

    #[test]
    fn answers_read_text_calls_reasons_and_usage() {
        let raw = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "output": [
                {"type": "reasoning", "id": "rs1", "encrypted_content": "E", "summary": []},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"},
                    {"type": "output_text", "text": "b"}]}],
            "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7,
                "input_tokens_details": {"cached_tokens": 1},
                "output_tokens_details": {"reasoning_tokens": 2}}});
        assert_eq!(text_of(output(&raw)), "ab");
        assert_eq!(finish_reason(&raw, false), "length");
        assert_eq!(finish_reason(&raw, true), "tool_calls");
        let u = usage(&raw);
        assert_eq!(
            (
                u.prompt,
                u.completion,
                u.total_tokens(),
                u.cached,
                u.reasoning
            ),
            (3, 4, 7, 1, 2)
        );
    }

    #[test]
    fn params_map_to_responses_names() {
        let mut body = Map::new();
        let p = json!({"max_tokens": 5, "previous_response_id": "resp_1",
            "reasoning_effort": "low", "stream": true});
        merge_params(&mut body, p.as_object().unwrap(), &["stream"]);
        assert_eq!(
            Value::Object(body),
            json!({"max_output_tokens": 5, "previous_response_id": "resp_1",
                "reasoning": {"effort": "low"}})
        );
    }
}
