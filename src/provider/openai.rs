//! The OpenAI chat-completions dialect: its tables; the loop's body
//! writer, tool-result message and wired `tool` message; translate's body
//! writer and readers of OpenAI-shaped messages; the answer's calls, text
//! and usage read once for both sides (generic over [`View`]); the
//! streamed answer's state; the content-part blocks.

use super::gather::{
    append_string, provider_stream_error, read_event, too_many_calls, Budget, NotObject, Pieces,
    Usage, CHECK_EVERY, ENTRY_BYTES, MAX_TOOL_CALLS,
};
use super::node::{self, array, object, Node, ObjectBuilder, EMPTY_OBJECT};
use super::turn::{self, args_of, text_of, Body, Call, CallView, Entries, Fed, Field, Request};
use super::ClientConfig;
use crate::error::Error;
use crate::json::View;
use crate::parts::{Part, PartKind};
use bumpalo::collections::{String as BString, Vec as BVec};
use bumpalo::Bump;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// The endpoint under a client's `baseUrl` (its trailing `/` removed).
pub fn endpoint(base: &str) -> String {
    format!("{base}/chat/completions")
}

/// The token-counting endpoint of the chat style: the Responses one,
/// `{base}/responses/input_tokens` (see [`count_body`]).
pub fn count_endpoint(base: &str) -> String {
    super::responses::count_endpoint(base)
}

/// The environment variable a key is read from when the client sets none.
pub const API_KEY_VAR: &str = "OPENAI_API_KEY";

/// The credential headers: `authorization: Bearer <key>` (none without a
/// key).
pub fn auth_headers(api_key: Option<&str>, out: &mut Vec<(String, String)>) {
    if let Some(key) = api_key {
        out.push(("authorization".into(), format!("Bearer {key}")));
    }
}

// ---------------------------------------------------------------------------
// the loop's turn (`super::turn`)
// ---------------------------------------------------------------------------

/// The loop's body: `{model, messages, tools?, tool_choice:"auto"?,
/// stream?, stream_options?}`, then `requestParams` as they are.
pub(crate) fn body_entries<'a>(b: &Body<'a>) -> Entries<'a> {
    let mut e: Entries<'a> = Vec::with_capacity(6 + b.params.len());
    e.push(("model", Field::Str(b.model)));
    e.push(("messages", Field::Values(b.messages)));
    if !b.tools.is_empty() {
        e.push(("tools", Field::Values(b.tools)));
        e.push(("tool_choice", Field::Str("auto")));
    }
    if b.stream {
        e.push(("stream", Field::Bool(true)));
        e.push(("stream_options", Field::Value(include_usage())));
    }
    turn::params_last(&mut e, b.params);
    e
}

/// `{"include_usage": true}`, made once.
fn include_usage() -> &'static Value {
    static V: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    V.get_or_init(|| json!({"include_usage": true}))
}

// ---------------------------------------------------------------------------
// the answer read, once for both sides: generic over `crate::json::View`, so
// the loop reads its `serde_json::Value` and translate its arena node
// ---------------------------------------------------------------------------

/// The first choice of an answer: `choices[0]`.
pub fn first_choice<'a, V: View<'a>>(raw: V) -> Option<V> {
    raw.get("choices")?.items()?.next()
}

/// The message of an answer: `choices[0].message`.
pub fn message<'a, V: View<'a>>(raw: V) -> Option<V> {
    first_choice(raw)?.get("message")
}

/// What [`call_views`] makes of a `tool_calls` entry without a `function`
/// object (no `function`, or one that is not an object, or an entry that is
/// not an object at all). The two sides differ, both as recorded:
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WithoutFunction {
    /// A call all the same, with an empty name and `{}` arguments: the
    /// loop's reading ([`calls`]). The loop sends the assistant message
    /// back verbatim and answers each call it read with a `tool` message
    /// carrying its id, so an entry it skipped would go back to the
    /// provider as a call without a result.
    Kept,
    /// Not a call: translate's reading ([`tool_calls_of`], the
    /// `helper/toolCallsOf/*` vectors of the recorded port). Translate hands
    /// the host the calls to run and sends nothing back itself, so an entry
    /// naming no function is nothing to run.
    Skipped,
}

/// The `tool_calls` of an assistant message, in order, as views: the one
/// reading of calls, for the loop ([`calls`]) and translate
/// ([`tool_calls_of`]); `without_function` is where they part.
pub fn call_views<'a, V: View<'a>>(
    message: V,
    without_function: WithoutFunction,
) -> impl Iterator<Item = CallView<V>> + 'a {
    let entries = message.get("tool_calls").and_then(V::items);
    entries.into_iter().flatten().filter_map(move |tc| {
        let function = tc.get("function").filter(|f| f.is_object());
        if function.is_none() && without_function == WithoutFunction::Skipped {
            return None;
        }
        Some(CallView {
            id: tc.get("id"),
            name: function.and_then(|f| f.get("name")),
            arguments: function.and_then(|f| f.get("arguments")),
        })
    })
}

/// Which parts of a `content` parts array give text in [`text_pieces`].
/// The two sides differ, both as recorded:
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextParts {
    /// Every part's `text`, whatever the part's `type` (a part that is not
    /// an object gives none): translate's reading ([`content_text`], the
    /// `helper/contentText/*` vectors: `["raw string part", {"text": "x"}]`
    /// reads "x"). Translate reads a caller's OpenAI-shaped messages with it
    /// too, where a part without a `type` still carries the caller's text.
    Any,
    /// Only the parts whose `type` is "text": the loop's final text
    /// ([`answer_text`]), which reads a provider's answer, where every text
    /// part is typed and other parts (`refusal`, media) are not the text.
    Typed,
}

/// What a value that is not a string gives in [`text_pieces`] (the content
/// itself, or a part's `text`). The two sides differ, both as recorded:
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonString {
    /// Nothing (`42` reads ""): translate's reading (the
    /// `helper/contentText/number` vector), which returns only text the
    /// JSON holds, with no allocation for a single piece.
    Skipped,
    /// Itself, which the caller shows as its JSON text (`42` reads "42";
    /// `null` gives nothing): the loop's final text, which shows whatever
    /// the provider put there rather than lose it.
    Shown,
}

/// The pieces of a `content` value whose text, joined with no separator,
/// is the text: a string content is one piece; a parts array gives the
/// `text` of its parts as `parts` says; `non_string` says what a value
/// that is not a string gives. The one reading of text, for the loop
/// ([`answer_text`]) and translate ([`content_text`]).
pub fn text_pieces<'a, V: View<'a>>(
    content: Option<V>,
    parts: TextParts,
    non_string: NonString,
) -> impl Iterator<Item = V> + 'a {
    let keeps = move |v: &V| match non_string {
        NonString::Skipped => v.as_str().is_some(),
        NonString::Shown => !v.is_null(),
    };
    let (whole, items) = match content.map(|c| (c, c.items())) {
        Some((_, Some(items))) => (None, Some(items)),
        Some((c, None)) => (Some(c), None),
        None => (None, None),
    };
    let typed = move |p: &V| match parts {
        TextParts::Any => true,
        TextParts::Typed => p.get("type").and_then(V::as_str) == Some("text"),
    };
    whole.filter(keeps).into_iter().chain(
        items
            .into_iter()
            .flatten()
            .filter(typed)
            .filter_map(|p| p.get("text"))
            .filter(keeps),
    )
}

/// The assistant turn as sent (an empty assistant message when there is
/// none).
pub fn assistant_message(raw: &Value) -> Value {
    message(raw)
        .cloned()
        .unwrap_or_else(|| json!({"role": "assistant", "content": null}))
}

/// The `tool_calls` of an assistant message, in order ([`call_views`];
/// an entry without a `function` is a call all the same, see
/// [`WithoutFunction::Kept`]).
pub fn calls(message: &Value) -> Vec<Call> {
    call_views(message, WithoutFunction::Kept)
        .map(|c| Call {
            id: text_of(c.id),
            name: text_of(c.name),
            args: args_of(c.arguments),
        })
        .collect()
}

/// The final text: the message's content, its `text` parts joined when it
/// is a list, a value that is not a string as its JSON text
/// ([`text_pieces`] with [`TextParts::Typed`] and [`NonString::Shown`]).
pub fn answer_text(raw: &Value) -> String {
    let content = message(raw).and_then(|m| m.get("content"));
    text_pieces(content, TextParts::Typed, NonString::Shown)
        .map(|piece| text_of(Some(piece)))
        .collect()
}

/// The text at the turn limit: the last assistant message's string content,
/// as the recorded port does.
pub fn text_at_limit(messages: &[Value]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| {
            (m.get("role").and_then(Value::as_str) == Some("assistant"))
                .then(|| m.get("content").and_then(Value::as_str))
                .flatten()
        })
        .unwrap_or_default()
        .to_string()
}

/// `usage.prompt_tokens`, `completion_tokens` and `total_tokens` (their sum
/// when absent); `None` without a usage object. The loop reads it off a
/// `Value`, translate off its arena node.
pub fn usage<'a, V: View<'a>>(raw: V) -> Option<(u64, u64, u64)> {
    let u = raw.get("usage").filter(|u| u.is_object())?;
    let p = u.get("prompt_tokens").and_then(V::count).unwrap_or(0);
    let c = u.get("completion_tokens").and_then(V::count).unwrap_or(0);
    let t = u
        .get("total_tokens")
        .and_then(V::count)
        .unwrap_or(p.saturating_add(c));
    Some((p, c, t))
}

/// One `tool` message per result; with parts, also the tool's `name` (the
/// wire form says whose output moved media is, see
/// [`super::blocks::wire_messages`]).
pub fn result_message(f: &Fed) -> Value {
    let mut m = crate::json::object([
        ("role", "tool".into()),
        ("tool_call_id", f.id.into()),
        ("content", f.output.into()),
    ]);
    if !f.parts.is_empty() {
        m["parts"] = turn::parts_value(f.parts);
        m["name"] = Value::from(f.name);
    }
    m
}

// ---------------------------------------------------------------------------
// translate's turn: OpenAI-shaped request in, this dialect's body out, its
// answer read back in OpenAI shape (over the arena tree, `super::node`)
// ---------------------------------------------------------------------------

/// The text of an OpenAI `content` value: a string as it is, a parts array as
/// the concatenation of its parts' string `text` fields, anything else ""
/// ([`text_pieces`] with [`TextParts::Any`] and [`NonString::Skipped`]).
pub fn content_text<'a>(bump: &'a Bump, content: Option<Node<'a>>) -> &'a str {
    let mut texts =
        text_pieces(content, TextParts::Any, NonString::Skipped).filter_map(Node::as_str);
    let Some(first) = texts.next() else {
        return "";
    };
    let Some(second) = texts.next() else {
        return first;
    };
    let mut joined = BString::from_str_in(first, bump);
    joined.push_str(second);
    texts.for_each(|t| joined.push_str(t));
    joined.into_bump_str()
}

/// Tool-call arguments as an object, from either wire form. A string that is
/// not JSON text of an object (malformed, blank, an array, trailing garbage)
/// gives `{}`, as does any other non-object value.
pub fn args_object<'a>(bump: &'a Bump, args: Option<Node<'a>>) -> Node<'a> {
    match args {
        Some(v @ Node::Object(_)) => v,
        Some(Node::Str(s)) if !turn::is_blank(s) => match node::parse(bump, s.trim()) {
            Ok(v @ Node::Object(_)) => v,
            _ => EMPTY_OBJECT,
        },
        _ => EMPTY_OBJECT,
    }
}

/// Tool-call arguments as the JSON string the OpenAI wire carries: a string
/// verbatim (even a malformed one), an object encoded, anything else "{}".
pub fn args_string<'a>(bump: &'a Bump, args: Option<Node<'a>>) -> &'a str {
    match args {
        Some(Node::Str(s)) => s,
        Some(v @ Node::Object(_)) => v.encode_in(bump),
        _ => "{}",
    }
}

/// One tool call of an assistant message, as read from the OpenAI wire.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    pub id: &'a str,
    pub name: &'a str,
    /// `function.arguments` as given (a string, an object, or anything).
    pub arguments: Option<Node<'a>>,
}

impl<'a> ToolCall<'a> {
    /// `{id, name, arguments}` with `arguments` a JSON string.
    pub fn to_node(self, bump: &'a Bump) -> Node<'a> {
        object(
            bump,
            &[
                ("id", Node::Str(self.id)),
                ("name", Node::Str(self.name)),
                ("arguments", Node::Str(args_string(bump, self.arguments))),
            ],
        )
    }
}

/// The tool calls of an assistant message ([`call_views`]). Entries without
/// a `function` object are skipped ([`WithoutFunction::Skipped`]).
pub fn tool_calls_of<'a>(
    bump: &'a Bump,
    message: Node<'a>,
) -> impl Iterator<Item = ToolCall<'a>> + 'a {
    call_views(message, WithoutFunction::Skipped).map(move |c| ToolCall {
        id: node::text_of(bump, c.id),
        name: node::text_of(bump, c.name),
        arguments: c.arguments,
    })
}

/// Whether any message has the role "system" or "developer" (case-sensitive).
pub fn has_system_message(messages: &[Node]) -> bool {
    messages
        .iter()
        .any(|m| matches!(node::str_of(m.get("role")), "system" | "developer"))
}

/// A translate result's tool calls as an OpenAI `tool_calls` array, ready to
/// put on an assistant message. Missing fields come out as `null`.
pub fn tool_calls_json<'a>(bump: &'a Bump, result: Node<'a>) -> Node<'a> {
    let calls = result
        .get("toolCalls")
        .and_then(Node::as_array)
        .unwrap_or(&[]);
    let mut out = BVec::with_capacity_in(calls.len(), bump);
    for tc in calls {
        let field = |k: &str| tc.get(k).unwrap_or(Node::Null);
        let function = object(
            bump,
            &[("name", field("name")), ("arguments", field("arguments"))],
        );
        out.push(object(
            bump,
            &[
                ("id", field("id")),
                ("type", Node::Str("function")),
                ("function", function),
            ],
        ));
    }
    array(out)
}

/// translate's openai body: the system text (the request's, else the
/// client's) prepended when the messages carry none, the declared tools
/// before the request's, `tool_choice` and `max_tokens` as given.
pub fn request_body<'a>(
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
    if !turn::is_blank(system) && !has_system_message(request.messages) {
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

/// The chat style's token count: chat completions has no counting
/// endpoint, so the request goes to the Responses one
/// ([`super::responses::count_endpoint`]) as the Responses dialect writes
/// it: its `input` items, `instructions` and flat tools
/// ([`super::responses::request_body`], requestParams mapped there), with
/// only the keys that endpoint takes ([`super::responses::count_body`]).
pub fn count_body<'a>(
    bump: &'a Bump,
    client: &'a ClientConfig,
    request: &Request<'a>,
    declared: &[Node<'a>],
) -> Node<'a> {
    use super::responses;
    let body = responses::request_body(bump, client, request, declared);
    responses::count_body(bump, body)
}

/// The count in the chat style's token-counting answer (the Responses
/// endpoint's: [`super::responses::count_of`]).
pub fn count_of(raw: Node) -> Option<u64> {
    super::responses::count_of(raw)
}

/// The field of the chat style's token-counting answer that holds the count.
pub const COUNT_FIELD: &str = super::responses::COUNT_FIELD;

/// The finish reasons an OpenAI client understands, kept as the provider
/// sent them.
const OPENAI_FINISH: [&str; 5] = [
    "stop",
    "length",
    "tool_calls",
    "content_filter",
    "function_call",
];

/// The text, the tool calls and the finish reason of an OpenAI answer.
pub fn read_answer<'a>(bump: &'a Bump, raw: Node<'a>) -> (&'a str, Node<'a>, &'static str) {
    let choice = first_choice(raw);
    let message = choice.and_then(|c| c.get("message"));
    let text = content_text(bump, message.and_then(|m| m.get("content")));
    let mut calls = BVec::new_in(bump);
    if let Some(m) = message {
        calls.extend(tool_calls_of(bump, m).map(|c| c.to_node(bump)));
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
            .unwrap_or_else(|| turn::finish_reason_for(false, stated)),
        None => turn::finish_reason_for(false, stated),
    };
    (text, node::array(calls), finish)
}

// ---------------------------------------------------------------------------
// content-part blocks (§8A; `super::blocks` picks the dialect)
// ---------------------------------------------------------------------------

/// The Chat Completions block of one §1B part, or `None` where this dialect
/// has no block shape for it (`super::blocks` turns that into the refusal
/// naming both): text as a `text` block, an image as `image_url` (its URL,
/// else a data URL), a file only inline as a data URL, audio only inline
/// and only mp3 or wav.
pub(crate) fn part_block(p: &Part) -> Option<Value> {
    let mime = p.mime_type.as_deref().unwrap_or_default();
    let data_url = |data: &str| format!("data:{mime};base64,{data}");
    let block = match p.kind {
        PartKind::Text => json!({
            "type": "text",
            "text": p.text.as_deref().unwrap_or_default(),
        }),
        PartKind::Image => {
            let url = match (&p.url, &p.data) {
                (Some(u), _) => u.clone(),
                (None, Some(d)) => data_url(d),
                (None, None) => return None,
            };
            json!({"type": "image_url", "image_url": {"url": url}})
        }
        PartKind::File => {
            // Chat Completions takes a file only inline, and only as a data
            // URL (bare base64 is a 400).
            let d = p.data.as_ref()?;
            json!({"type": "file", "file": {
                "filename": p.name.as_deref().filter(|n| !n.is_empty()).unwrap_or("file"),
                "file_data": data_url(d),
            }})
        }
        PartKind::Audio => {
            let format = match mime {
                "audio/mpeg" | "audio/mp3" => "mp3",
                "audio/wav" | "audio/x-wav" => "wav",
                _ => return None,
            };
            let d = p.data.as_ref()?;
            json!({"type": "input_audio", "input_audio": {"data": d, "format": format}})
        }
    };
    Some(block)
}

/// A `tool` message as the request carries it (§8A; the transcript keeps
/// its canonical `parts` and `name`, see [`super::blocks::wire_messages`]):
/// without `parts` and `name`; with text parts, its content becomes
/// `[its text, the text parts' blocks…]`. A `tool` message cannot carry
/// media (a 400), so each media part's block is appended to `moved`, behind
/// a line saying whose output it is, for the one `user` message that
/// follows the turn's tool messages. `tool_part` makes a part's block.
pub(crate) fn wire_tool_message(
    obj: &Map<String, Value>,
    moved: &mut Vec<Value>,
    tool_part: &mut dyn FnMut(&Value) -> Result<Value, String>,
) -> Result<Value, String> {
    let mut msg = obj.clone();
    msg.remove("parts");
    msg.remove("name");
    let parts = obj
        .get("parts")
        .and_then(Value::as_array)
        .map(Vec::as_slice);
    let parts = parts.unwrap_or_default();
    let is_text = |p: &&Value| p.get("type").and_then(Value::as_str) == Some("text");
    if parts.iter().any(|p| is_text(&p)) {
        let mut content = vec![turn::text_block(obj.get("content"))];
        for p in parts.iter().filter(is_text) {
            content.push(tool_part(p)?);
        }
        msg.insert("content".into(), Value::Array(content));
    }
    for p in parts.iter().filter(|p| !is_text(p)) {
        let label = format!(
            "Output of tool {} ({}):",
            shown(obj.get("name")),
            shown(obj.get("tool_call_id"))
        );
        moved.push(json!({"type": "text", "text": label}));
        moved.push(tool_part(p)?);
    }
    Ok(Value::Object(msg))
}

/// A value as the label shows it: a string as itself, absent as `None`.
fn shown(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "None".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

// ---------------------------------------------------------------------------
// the streamed answer (`super::stream`, built from `super::gather`)
// ---------------------------------------------------------------------------

/// One tool call of an OpenAI stream, gathered from its pieces.
#[derive(Debug, Default)]
struct StreamCall {
    id: String,
    name: String,
    arguments: String,
    /// Its number with the sink.
    at: usize,
}

/// An OpenAI stream gathered so far.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    /// `id`, `model`, `created`, `system_fingerprint` as first sent.
    top: Map<String, Value>,
    content: Option<String>,
    /// Other string fields of the delta (`refusal`, `reasoning_content`).
    extra: Map<String, Value>,
    calls: Vec<StreamCall>,
    /// Where the call of each `index` is in `calls`.
    by_index: HashMap<u64, usize>,
    finish_reason: Option<Value>,
    usage: Option<Value>,
}

/// A chunk's `usage` in OpenAI's terms (the relayed usage chunk).
fn stream_usage(u: &Value) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    Usage {
        prompt: n(u.get("prompt_tokens")),
        completion: n(u.get("completion_tokens")),
        total: u.get("total_tokens").and_then(Value::as_u64),
        cached: n(u.pointer("/prompt_tokens_details/cached_tokens")),
        reasoning: n(u.pointer("/completion_tokens_details/reasoning_tokens")),
    }
}

impl StreamState {
    /// Takes one event of the stream; `sink` gets its pieces (the thinking,
    /// then the text, then the tool calls, then the finish reason).
    /// `Ok(true)`: the answer's last event (later ones are ignored).
    pub(crate) fn event(
        &mut self,
        data: &str,
        budget: &mut Budget,
        sink: &mut dyn Pieces,
    ) -> Result<bool, Error> {
        if data.trim() == "[DONE]" {
            return Ok(true);
        }
        // A keep-alive or anything else that is not a JSON chunk is skipped.
        let Some(chunk) = read_event("", data, NotObject::Skip)? else {
            return Ok(false);
        };
        let s = self;
        if let Some(e) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(provider_stream_error(e));
        }
        for key in ["id", "model", "created", "system_fingerprint"] {
            if let Some(v) = chunk.get(key).filter(|v| !v.is_null()) {
                if !s.top.contains_key(key) {
                    // At most the whole event was copied.
                    budget.take(ENTRY_BYTES + data.len())?;
                    s.top.insert(key.into(), v.clone());
                }
            }
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            sink.usage(stream_usage(u));
            s.usage = Some(u.clone());
        }
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        let Some(choice) = choice else {
            return Ok(false);
        };
        let finish = choice.get("finish_reason").filter(|f| !f.is_null());
        if let Some(f) = finish {
            s.finish_reason = Some(f.clone());
        }
        if let Some(delta) = choice.get("delta").and_then(Value::as_object) {
            if let Some(Value::String(t)) = delta.get("reasoning_content") {
                sink.reasoning(t)?;
            }
            if let Some(Value::String(text)) = delta.get("content") {
                budget.take(text.len())?;
                s.content.get_or_insert_with(String::new).push_str(text);
                sink.text(text)?;
            }
            if let Some(Value::Array(calls)) = delta.get("tool_calls") {
                for (n, c) in calls.iter().enumerate() {
                    if n % CHECK_EVERY == CHECK_EVERY - 1 {
                        budget.check()?;
                    }
                    Self::call_piece(&mut s.calls, &mut s.by_index, c, budget, sink)?;
                }
            }
            for (k, v) in delta {
                match (k.as_str(), v) {
                    ("role" | "content" | "tool_calls", _) => {}
                    (_, Value::String(piece)) => append_string(&mut s.extra, k, piece, budget)?,
                    _ => {}
                }
            }
        }
        if let Some(r) = finish.and_then(Value::as_str) {
            sink.finish(match r {
                "length" => "length",
                "content_filter" => "content_filter",
                "tool_calls" | "function_call" => "tool_calls",
                _ => "stop",
            });
        }
        Ok(false)
    }

    /// One piece of a tool call: found by its `index` (by a new `id` when a
    /// provider sends no index), its name and arguments appended; a new
    /// call starts with the sink under the piece's id and name, and the
    /// piece's arguments go to the sink.
    fn call_piece(
        calls: &mut Vec<StreamCall>,
        by_index: &mut HashMap<u64, usize>,
        piece: &Value,
        budget: &mut Budget,
        sink: &mut dyn Pieces,
    ) -> Result<(), Error> {
        let index = piece.get("index").and_then(Value::as_u64);
        let id = piece.get("id").and_then(Value::as_str).unwrap_or("");
        let f = piece.get("function");
        let name = f.and_then(|f| f.get("name")).and_then(Value::as_str);
        let args = f.and_then(|f| f.get("arguments")).and_then(Value::as_str);
        let found = match index {
            Some(i) => by_index.get(&i).copied(),
            None => match calls.last() {
                Some(last) if id.is_empty() || last.id.is_empty() || last.id == id => {
                    Some(calls.len() - 1)
                }
                _ => None,
            },
        };
        let at = match found {
            Some(at) => at,
            None => {
                if calls.len() >= MAX_TOOL_CALLS {
                    return Err(too_many_calls(calls.len() + 1));
                }
                budget.take(ENTRY_BYTES)?;
                let at = sink.tool_start(id, name.unwrap_or(""), None)?;
                calls.push(StreamCall {
                    at,
                    ..StreamCall::default()
                });
                if let Some(i) = index {
                    by_index.insert(i, calls.len() - 1);
                }
                calls.len() - 1
            }
        };
        let call = &mut calls[at];
        if !id.is_empty() && call.id.is_empty() {
            budget.take(id.len())?;
            call.id = id.to_string();
        }
        if let Some(n) = name {
            budget.take(n.len())?;
            call.name.push_str(n);
        }
        if let Some(a) = args {
            budget.take(a.len())?;
            call.arguments.push_str(a);
        }
        sink.tool_args(call.at, args.unwrap_or(""))
    }

    /// The answer as the provider would have sent it whole.
    pub(crate) fn finish(self) -> Value {
        let s = self;
        let mut message = Map::new();
        message.insert("role".into(), Value::String("assistant".into()));
        message.insert(
            "content".into(),
            s.content.map_or(Value::Null, Value::String),
        );
        message.extend(s.extra);
        if !s.calls.is_empty() {
            let calls = s
                .calls
                .into_iter()
                .map(|c| {
                    serde_json::json!({
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    })
                })
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        let mut out = s.top;
        out.insert("object".into(), Value::String("chat.completion".into()));
        let mut choice = Map::new();
        choice.insert("index".into(), Value::from(0));
        choice.insert("message".into(), Value::Object(message));
        choice.insert(
            "finish_reason".into(),
            s.finish_reason.unwrap_or(Value::Null),
        );
        out.insert("choices".into(), Value::Array(vec![Value::Object(choice)]));
        if let Some(u) = s.usage {
            out.insert("usage".into(), u);
        }
        Value::Object(out)
    }
}

/// The text of a whole answer to a streamed request, for the one delta it
/// makes: the message's content when it is a string.
pub(crate) fn whole_text(answer: &Value) -> String {
    answer
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::node::parse_both as both;

    /// [`WithoutFunction`]: an entry with no `function` object is a call
    /// with an empty name and `{}` arguments to the loop, and no call to
    /// translate; entries with one read alike.
    #[test]
    fn a_tool_call_without_a_function_is_kept_by_the_loop_and_skipped_by_translate() {
        let bump = Bump::new();
        let (n, v) = both(
            &bump,
            r#"{"role":"assistant","tool_calls":[
                {"id":"a"},
                {"id":"b","function":"f"},
                7,
                {"id":"c","function":{"name":"f","arguments":"{\"x\":1}"}},
                {"id":5,"function":{}}]}"#,
        );
        let loop_calls: Vec<(String, String, Value)> = calls(&v)
            .into_iter()
            .map(|c| (c.id, c.name, c.args))
            .collect();
        assert_eq!(
            loop_calls,
            [
                ("a".into(), String::new(), json!({})),
                ("b".into(), String::new(), json!({})),
                (String::new(), String::new(), json!({})),
                ("c".into(), "f".into(), json!({"x": 1})),
                ("5".into(), String::new(), json!({})),
            ]
        );
        let translated: Vec<(&str, &str, String)> = tool_calls_of(&bump, n)
            .map(|c| (c.id, c.name, args_string(&bump, c.arguments).to_string()))
            .collect();
        assert_eq!(
            translated,
            [("c", "f", r#"{"x":1}"#.into()), ("5", "", "{}".into())]
        );
        // The one reader, asked each way.
        assert_eq!(call_views(&v, WithoutFunction::Kept).count(), 5);
        assert_eq!(call_views(&v, WithoutFunction::Skipped).count(), 2);
        assert_eq!(call_views(n, WithoutFunction::Kept).count(), 5);
    }

    fn loop_text(content: &str) -> String {
        let raw: Value = serde_json::from_str(&format!(
            r#"{{"choices":[{{"message":{{"role":"assistant","content":{content}}}}}]}}"#
        ))
        .expect("JSON");
        answer_text(&raw)
    }

    fn translate_text(content: &str) -> String {
        let bump = Bump::new();
        let raw =
            format!(r#"{{"choices":[{{"message":{{"role":"assistant","content":{content}}}}}]}}"#);
        let (n, _) = both(&bump, &raw);
        let (text, _, _) = read_answer(&bump, n);
        text.to_string()
    }

    /// [`TextParts`]: the loop's final text takes only the parts typed
    /// "text"; translate takes every part's string `text`.
    #[test]
    fn the_loop_reads_typed_text_parts_and_translate_every_parts_text() {
        let content = r#"["raw", {"text":"x"}, {"type":"text","text":"y"},
                          {"type":"refusal","text":"z"}, {"type":"text","text":"w"}]"#;
        assert_eq!(loop_text(content), "yw");
        assert_eq!(translate_text(content), "xyzw");
        // Parts all typed "text", with string text, read alike.
        let alike = r#"[{"type":"text","text":"a"},{"type":"text","text":"b"}]"#;
        assert_eq!(loop_text(alike), "ab");
        assert_eq!(translate_text(alike), "ab");
    }

    /// [`NonString`]: a content or a part's `text` that is not a string
    /// is its JSON text to the loop and nothing to translate; `null` is
    /// nothing to either.
    #[test]
    fn a_value_that_is_not_a_string_is_shown_by_the_loop_and_skipped_by_translate() {
        for (content, shown) in [
            ("42", "42"),
            ("true", "true"),
            (r#"{"a":1}"#, r#"{"a":1}"#),
            (
                r#"[{"type":"text","text":5},{"type":"text","text":"!"}]"#,
                "5!",
            ),
            (r#"[{"type":"text","text":{"b":[1]}}]"#, r#"{"b":[1]}"#),
        ] {
            assert_eq!(loop_text(content), shown, "{content}");
        }
        assert_eq!(translate_text("42"), "");
        assert_eq!(translate_text("true"), "");
        assert_eq!(translate_text(r#"{"a":1}"#), "");
        assert_eq!(
            translate_text(r#"[{"type":"text","text":5},{"type":"text","text":"!"}]"#),
            "!"
        );
        for nothing in ["null", r#"[{"type":"text","text":null}]"#, "[]"] {
            assert_eq!(loop_text(nothing), "", "{nothing}");
            assert_eq!(translate_text(nothing), "", "{nothing}");
        }
        assert_eq!(loop_text(r#""plain""#), "plain");
        assert_eq!(translate_text(r#""plain""#), "plain");
    }
}
