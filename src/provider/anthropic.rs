//! The Anthropic messages dialect: its tables; the loop's body writer,
//! tool-result blocks and wired `tool_result` block; translate's body
//! writer and conversions from OpenAI shape; the answer's calls, text and
//! usage read once for both sides (generic over [`View`]); the streamed
//! answer's state; the content-part blocks.

use super::gather::{
    append_strings, provider_stream_error, read_event, too_many_calls, Budget, NotObject, Pieces,
    Usage, ENTRY_BYTES, MAX_TOOL_CALLS,
};
use super::node::{self, array, object, Node, Num, ObjectBuilder, EMPTY_OBJECT};
use super::openai;
use super::turn::{self, text_of, Body, Call, CallView, Entries, Fed, Field, Request};
use super::ClientConfig;
use crate::error::Error;
use crate::json::View;
use crate::parts::{Part, PartKind};
use bumpalo::collections::{String as BString, Vec as BVec};
use bumpalo::Bump;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// The endpoint under a client's `baseUrl` (its trailing `/` removed):
/// `{base}/messages` when the base already ends in `/v1`, else
/// `{base}/v1/messages`.
pub fn endpoint(base: &str) -> String {
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

/// The token-counting endpoint: [`endpoint`] + `/count_tokens`
/// (`POST /v1/messages/count_tokens`).
pub fn count_endpoint(base: &str) -> String {
    format!("{}/count_tokens", endpoint(base))
}

/// The environment variable a key is read from when the client sets none.
pub const API_KEY_VAR: &str = "ANTHROPIC_API_KEY";

/// The API version every request names.
pub const API_VERSION: &str = "2023-06-01";

/// The `max_tokens` a request gets when it sets none (the field is required
/// by this dialect).
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The credential headers: `x-api-key: <key>` (none without a key), then
/// `anthropic-version`.
pub fn auth_headers(api_key: Option<&str>, out: &mut Vec<(String, String)>) {
    if let Some(key) = api_key {
        out.push(("x-api-key".into(), key.to_string()));
    }
    out.push(("anthropic-version".into(), API_VERSION.into()));
}

// ---------------------------------------------------------------------------
// the loop's turn (`super::turn`)
// ---------------------------------------------------------------------------

/// How a `requestParams` entry goes into an Anthropic body.
pub enum Param {
    /// As it is.
    AsIs,
    /// Under Anthropic's name, with this value.
    Mapped(&'static str, Value),
    /// Not at all: an OpenAI name whose Anthropic name is set too (that
    /// one wins).
    Dropped,
}

/// An OpenAI request parameter that the Messages API names otherwise (it
/// refuses a top-level field it does not know) goes under Anthropic's name:
/// `stop` → `stop_sequences` (a string as a list of one),
/// `max_completion_tokens` → `max_tokens`, `reasoning_effort` → `thinking`
/// (`none` → `{type: "disabled"}`; `minimal` and `low` → a budget of 1,024
/// tokens, Anthropic's minimum; `medium` → 2,048; `high` → 4,096; each cut
/// to leave 1,024 of `max_tokens` (the parameters', else the body's, else
/// the default 4,096)
/// for the answer, since Anthropic refuses a budget that is not below
/// `max_tokens`, and never under 1,024). Any other parameter goes as it
/// is.
///
/// `body_max_tokens` is the `max_tokens` the body has before the
/// parameters go in (translate's request's), if not the default.
pub fn param(
    key: &str,
    value: &Value,
    params: &Map<String, Value>,
    body_max_tokens: Option<u64>,
) -> Param {
    let (name, value) = match (key, value) {
        ("stop", Value::String(s)) => ("stop_sequences", json!([s])),
        ("stop", Value::Array(_)) => ("stop_sequences", value.clone()),
        ("max_completion_tokens", _) => ("max_tokens", value.clone()),
        ("reasoning_effort", Value::String(effort)) => {
            let budget: u64 = match effort.as_str() {
                "none" => return mapped("thinking", json!({"type": "disabled"}), params),
                "minimal" | "low" => 1024,
                "medium" => 2048,
                "high" => 4096,
                _ => return Param::AsIs,
            };
            let max_tokens = ["max_tokens", "max_completion_tokens"]
                .iter()
                .find_map(|k| params.get(*k).and_then(Value::as_u64))
                .or(body_max_tokens)
                .unwrap_or(DEFAULT_MAX_TOKENS);
            let budget = budget.min(max_tokens.saturating_sub(1024)).max(1024);
            (
                "thinking",
                json!({"type": "enabled", "budget_tokens": budget}),
            )
        }
        _ => return Param::AsIs,
    };
    mapped(name, value, params)
}

/// `value` under Anthropic's `name`, unless the parameters set that name
/// themselves (then theirs wins).
fn mapped(name: &'static str, value: Value, params: &Map<String, Value>) -> Param {
    if params.contains_key(name) {
        Param::Dropped
    } else {
        Param::Mapped(name, value)
    }
}

/// `requestParams` merged last so they win (the reserved keys left out),
/// each as [`param`] says.
fn params_last<'a>(e: &mut Entries<'a>, params: &'a Map<String, Value>) {
    for (k, v) in params {
        if super::RESERVED_PARAMS.contains(&k.as_str()) {
            continue;
        }
        match param(k, v, params, None) {
            Param::AsIs => turn::set(e, k.as_str(), Field::Value(v)),
            Param::Mapped(name, value) => turn::set(e, name, Field::Owned(value)),
            Param::Dropped => {}
        }
    }
}

/// The loop's body: `{model, max_tokens, system, messages, tools?,
/// stream?}`, then `requestParams` (OpenAI names mapped, [`param`]).
pub(crate) fn body_entries<'a>(b: &Body<'a>) -> Entries<'a> {
    let mut e: Entries<'a> = Vec::with_capacity(6 + b.params.len());
    e.push(("model", Field::Str(b.model)));
    e.push(("max_tokens", Field::Number(DEFAULT_MAX_TOKENS)));
    e.push(("system", Field::Str(b.system)));
    e.push(("messages", Field::Values(b.messages)));
    if !b.tools.is_empty() {
        e.push(("tools", Field::Values(b.tools)));
    }
    if b.stream {
        e.push(("stream", Field::Bool(true)));
    }
    params_last(&mut e, b.params);
    e
}

/// The assistant turn: `{role: "assistant", content}` with the answer's
/// content blocks as sent.
pub fn assistant_message(raw: &Value) -> Value {
    json!({
        "role": "assistant",
        "content": raw.get("content").cloned().unwrap_or(Value::Array(Vec::new())),
    })
}

// ---------------------------------------------------------------------------
// the answer read, once for both sides: generic over `crate::json::View`, so
// the loop reads its `serde_json::Value` and translate its arena node (the
// two read calls and text alike; only the strings they make differ)
// ---------------------------------------------------------------------------

/// The blocks of `message.content` (an assistant message, or a whole
/// answer) whose `type` is `kind`, in order.
fn blocks_of<'a, V: View<'a>>(message: V, kind: &'static str) -> impl Iterator<Item = V> + 'a {
    let blocks = message.get("content").and_then(V::items);
    blocks
        .into_iter()
        .flatten()
        .filter(move |b| b.get("type").and_then(V::as_str) == Some(kind))
}

/// The `tool_use` blocks of a message, in order, as views (`arguments` is
/// the block's `input`): the one reading of calls, for the loop
/// ([`calls`]) and translate ([`read_answer`]).
pub fn call_views<'a, V: View<'a>>(message: V) -> impl Iterator<Item = CallView<V>> + 'a {
    blocks_of(message, "tool_use").map(|b| CallView {
        id: b.get("id"),
        name: b.get("name"),
        arguments: b.get("input"),
    })
}

/// The `text` of a message's `text` blocks, in order (a `null` or missing
/// one gives nothing; the caller shows a value that is not a string as its
/// JSON text): the one reading of text, for the loop ([`answer_text`]) and
/// translate ([`read_answer`]).
pub fn text_pieces<'a, V: View<'a>>(message: V) -> impl Iterator<Item = V> + 'a {
    blocks_of(message, "text")
        .filter_map(|b| b.get("text"))
        .filter(|t| !t.is_null())
}

/// The `tool_use` blocks of an assistant message, in order (a missing or
/// null `input` is `{}`; see [`call_views`]).
pub fn calls(message: &Value) -> Vec<Call> {
    call_views(message)
        .map(|c| Call {
            id: text_of(c.id),
            name: text_of(c.name),
            args: match c.arguments {
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(i) => i.clone(),
            },
        })
        .collect()
}

/// The final text: the `text` blocks joined ([`text_pieces`]).
pub fn answer_text(raw: &Value) -> String {
    text_pieces(raw).map(|piece| text_of(Some(piece))).collect()
}

/// `usage.input_tokens` and `output_tokens`, the total their sum; `None`
/// without a usage object. The loop reads it off a `Value`, translate off
/// its arena node.
pub fn usage<'a, V: View<'a>>(raw: V) -> Option<(u64, u64, u64)> {
    let u = raw.get("usage").filter(|u| u.is_object())?;
    let p = u.get("input_tokens").and_then(V::count).unwrap_or(0);
    let c = u.get("output_tokens").and_then(V::count).unwrap_or(0);
    Some((p, c, p.saturating_add(c)))
}

/// The `tool_result` block of one result, with `parts` when the tool
/// returned any (the transcript keeps canonical parts; the request carries
/// them as blocks, see [`super::blocks::wire_messages`]).
pub fn result_block(f: &Fed) -> Value {
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": f.id,
        "content": f.output,
        "is_error": f.is_error,
    });
    if !f.parts.is_empty() {
        block["parts"] = turn::parts_value(f.parts);
    }
    block
}

/// The one `user` message that carries a turn's `tool_result` blocks.
pub fn results_message(blocks: Vec<Value>) -> Value {
    json!({"role": "user", "content": blocks})
}

// ---------------------------------------------------------------------------
// translate's turn: OpenAI-shaped request in, this dialect's body out, its
// answer read back in OpenAI shape (over the arena tree, `super::node`)
// ---------------------------------------------------------------------------

/// OpenAI `tool_choice` in Anthropic's shape, or `None` when nothing should be
/// sent ("auto", absent, empty function name, anything unrecognised).
pub fn openai_tool_choice_to_anthropic<'a>(
    bump: &'a Bump,
    choice: Option<Node<'a>>,
) -> Option<Node<'a>> {
    match choice? {
        Node::Str("required" | "any") => Some(object(bump, &[("type", Node::Str("any"))])),
        Node::Str("none") => Some(object(bump, &[("type", Node::Str("none"))])),
        obj @ Node::Object(_) => {
            let name = obj.get("function").and_then(|f| f.get("name"));
            if node::displays_empty(name) {
                return None;
            }
            Some(object(
                bump,
                &[
                    ("type", Node::Str("tool")),
                    ("name", name.unwrap_or(Node::Null)),
                ],
            ))
        }
        _ => None,
    }
}

/// `{"type":"object","properties":{}}`, the schema of a tool that gave none.
const EMPTY_OBJECT_SCHEMA: Node<'static> =
    Node::Object(&[("type", Node::Str("object")), ("properties", EMPTY_OBJECT)]);

/// OpenAI `tools` as Anthropic declarations. An entry that is already
/// Anthropic-shaped (a `name`, no `function`) passes through; entries with an
/// empty name or of no recognisable shape are skipped; an empty description
/// is left out; missing or non-object `parameters` become an empty object
/// schema.
pub fn openai_tools_to_anthropic<'a>(
    bump: &'a Bump,
    tools: &[Node<'a>],
    out: &mut BVec<'a, Node<'a>>,
) {
    for t in tools.iter().filter(|t| t.is_object()) {
        let Some(function) = t.get("function").filter(|f| f.is_object()) else {
            if node::truthy(t.get("name")) {
                out.push(*t);
            }
            continue;
        };
        let name = function.get("name");
        if node::displays_empty(name) {
            continue;
        }
        let mut m = ObjectBuilder::with_capacity(bump, 3);
        m.push("name", name.unwrap_or(Node::Null));
        let description = function.get("description");
        if !node::displays_empty(description) {
            m.push("description", description.unwrap_or(Node::Null));
        }
        let schema = match function.get("parameters") {
            Some(p) if p.is_object() => p,
            _ => EMPTY_OBJECT_SCHEMA,
        };
        m.push("input_schema", schema);
        // Prompt caching: on the tool (LiteLLM's place) or its function.
        if let Some(c) = t
            .get("cache_control")
            .or_else(|| function.get("cache_control"))
            .filter(|c| c.is_object())
        {
            m.push("cache_control", c);
        }
        out.push(m.build());
    }
}

/// One message of the Anthropic conversation: `{role, content}`.
fn turn<'a>(bump: &'a Bump, role: &'static str, content: Node<'a>) -> Node<'a> {
    object(bump, &[("role", Node::Str(role)), ("content", content)])
}

/// An OpenAI conversation converted for Anthropic.
#[derive(Debug, Clone, Copy)]
pub struct Converted<'a> {
    pub messages: &'a [Node<'a>],
    /// The hoisted system/developer texts, joined with a blank line.
    pub system: &'a str,
    /// The same texts as text blocks, when one of them asked for prompt
    /// caching (`cache_control` on a part or on the message): the system
    /// then goes out as these blocks.
    pub system_blocks: Option<&'a [Node<'a>]>,
}

impl<'a> Converted<'a> {
    /// `{"messages": [...], "system": "..."}`.
    pub fn to_node(self, bump: &'a Bump) -> Node<'a> {
        object(
            bump,
            &[
                ("messages", Node::Array(self.messages)),
                ("system", Node::Str(self.system)),
            ],
        )
    }
}

/// Builds the Anthropic conversation turn by turn.
struct Conversation<'a> {
    bump: &'a Bump,
    out: BVec<'a, Node<'a>>,
    system: BVec<'a, &'a str>,
    system_blocks: BVec<'a, Node<'a>>,
    system_cached: bool,
    /// Tool results waiting to be closed off as one user turn.
    pending: BVec<'a, Node<'a>>,
}

impl<'a> Conversation<'a> {
    /// Closes the pending tool results as ONE user turn: providers expect one
    /// result-bearing turn answering the assistant turn before it.
    fn drain(&mut self) {
        if !self.pending.is_empty() {
            let results = std::mem::replace(&mut self.pending, BVec::new_in(self.bump));
            let t = turn(self.bump, "user", array(results));
            self.out.push(t);
        }
    }

    fn add_system(&mut self, m: Node<'a>) {
        self.drain();
        let text = openai::content_text(self.bump, m.get("content"));
        if !text.is_empty() {
            self.system.push(text);
        }
        if has_cache_control(m) {
            self.system_cached = true;
        }
        if let Some(blocks) = cached_text_blocks(self.bump, m) {
            self.system_blocks.extend(blocks);
        } else if !text.is_empty() {
            self.system_blocks.push(text_block(self.bump, text));
        }
    }

    fn add_tool_result(&mut self, m: Node<'a>) {
        let bump = self.bump;
        let mut block = ObjectBuilder::with_capacity(bump, 3);
        block.push("type", Node::Str("tool_result"));
        let id = m.get("tool_call_id");
        if node::truthy(id) {
            let id = node::text_of(bump, id);
            if !id.is_empty() {
                block.push("tool_use_id", Node::Str(id));
            }
        }
        let content = m.get("content");
        let text = openai::content_text(bump, content);
        let media = media_parts(content);
        if media.is_empty() {
            block.push("content", Node::Str(text));
        } else {
            // §8A: a tool result's media goes inside its tool_result, after
            // the text, as native blocks keyed to the tool_use_id.
            let mut blocks = BVec::with_capacity_in(media.len() + 1, bump);
            blocks.push(text_block(bump, text));
            blocks.extend(media.iter().map(|p| anthropic_part_block(bump, *p)));
            block.push("content", array(blocks));
        }
        if let Some(c) = m.get("cache_control").filter(|c| c.is_object()) {
            block.push("cache_control", c);
        }
        self.pending.push(block.build());
    }

    fn add_assistant(&mut self, m: Node<'a>) {
        self.drain();
        let bump = self.bump;
        let text = openai::content_text(bump, m.get("content"));
        let mut blocks = BVec::new_in(bump);
        // Thinking blocks a host kept from an answer (`thinking_blocks`) go
        // back first and unmodified: Anthropic refuses a tool-use turn
        // without them.
        if let Some(Node::Array(kept)) = m.get("thinking_blocks") {
            blocks.extend(kept.iter().copied().filter(|b| {
                matches!(
                    b.get("type").and_then(Node::as_str),
                    Some("thinking" | "redacted_thinking")
                )
            }));
        }
        if let Some(cached) = cached_text_blocks(bump, m) {
            blocks.extend(cached);
        } else if !text.is_empty() {
            blocks.push(object(
                bump,
                &[("type", Node::Str("text")), ("text", Node::Str(text))],
            ));
        }
        for call in openai::tool_calls_of(bump, m) {
            // The arguments as args_object reads args_string's text: a
            // string as given, an object as itself, anything else `{}`.
            blocks.push(object(
                bump,
                &[
                    ("type", Node::Str("tool_use")),
                    ("id", Node::Str(call.id)),
                    ("name", Node::Str(call.name)),
                    ("input", openai::args_object(bump, call.arguments)),
                ],
            ));
        }
        // An assistant turn with neither text nor tool calls would be rejected.
        if !blocks.is_empty() {
            let t = turn(bump, "assistant", array(blocks));
            self.out.push(t);
        }
    }

    fn add_user(&mut self, m: Node<'a>) {
        self.drain();
        let content = m.get("content");
        let text = openai::content_text(self.bump, content);
        if has_cache_control(m) || has_image_url(content) {
            // Prompt caching: every part keeps its own block, so each
            // breakpoint stays where the host put it. OpenAI image parts:
            // each its `image` block, in the order the host put them among
            // the text.
            let blocks = cached_blocks(self.bump, m);
            if !blocks.is_empty() {
                let t = turn(self.bump, "user", array(blocks));
                self.out.push(t);
            }
            return;
        }
        if let (Some(Node::Array(items)), false) = (content, media_parts(content).is_empty()) {
            let t = turn(self.bump, "user", user_blocks(self.bump, text, items));
            self.out.push(t);
        } else if !text.is_empty() {
            let t = turn(self.bump, "user", Node::Str(text));
            self.out.push(t);
        } else if let Some(parts @ Node::Array([_, ..])) = content {
            // A parts array with no text (an image alone) goes through as given.
            let t = turn(self.bump, "user", parts);
            self.out.push(t);
        }
    }
}

/// Whether a message asks for prompt caching: `cache_control` on it or on
/// one of its content parts.
fn has_cache_control(m: Node) -> bool {
    m.get("cache_control").is_some_and(|c| c.is_object())
        || matches!(m.get("content"), Some(Node::Array(parts))
            if parts.iter().any(|p| p.get("cache_control").is_some_and(|c| c.is_object())))
}

/// A message's content as Anthropic blocks, each part its own block with
/// its `cache_control` (text parts as text blocks, §1B media as native
/// blocks, OpenAI `image_url` parts as `image` blocks, provider blocks as
/// given); a string content is one text block.
/// A message-level `cache_control` goes on the last block.
fn cached_blocks<'a>(bump: &'a Bump, m: Node<'a>) -> BVec<'a, Node<'a>> {
    let mut blocks = BVec::new_in(bump);
    match m.get("content") {
        Some(Node::Str(s)) if !s.is_empty() => blocks.push(text_block(bump, s)),
        Some(Node::Array(parts)) => {
            for p in parts.iter().copied() {
                let block = if let Node::Str(s) = p {
                    text_block(bump, s)
                } else if node::str_of(p.get("type")) == "text" {
                    let t = p.get("text").and_then(Node::as_str).unwrap_or("");
                    text_block(bump, t)
                } else if is_media_part(p) {
                    anthropic_part_block(bump, p)
                } else if let Some(image) = image_url_block(bump, p) {
                    image
                } else {
                    blocks.push(p);
                    continue;
                };
                blocks.push(with_cache_control(bump, block, p.get("cache_control")));
            }
        }
        _ => {}
    }
    if let (Some(last), Some(c)) = (blocks.last_mut(), m.get("cache_control")) {
        *last = with_cache_control(bump, *last, Some(c));
    }
    blocks
}

/// A block with `cache_control` set when `c` is an object.
fn with_cache_control<'a>(bump: &'a Bump, block: Node<'a>, c: Option<Node<'a>>) -> Node<'a> {
    let (Some(c @ Node::Object(_)), Node::Object(entries)) = (c, block) else {
        return block;
    };
    let mut b = ObjectBuilder::with_capacity(bump, entries.len() + 1);
    for (k, v) in entries {
        b.push(k, *v);
    }
    b.insert("cache_control", c);
    b.build()
}

/// An OpenAI `image_url` part as an Anthropic `image` block: a `data:`
/// URL as a `base64` source, any other URL as a `url` source (Anthropic
/// fetches it). `None` for any other part.
fn image_url_block<'a>(bump: &'a Bump, p: Node<'a>) -> Option<Node<'a>> {
    if node::str_of(p.get("type")) != "image_url" {
        return None;
    }
    let url = p.get("image_url").and_then(|u| match u {
        Node::Str(s) => Some(s),
        _ => u.get("url").and_then(Node::as_str),
    })?;
    let source = match crate::parts::data_url(url) {
        Some((mime, data)) => object(
            bump,
            &[
                ("type", Node::Str("base64")),
                ("media_type", Node::Str(mime)),
                ("data", Node::Str(data)),
            ],
        ),
        None => object(bump, &[("type", Node::Str("url")), ("url", Node::Str(url))]),
    };
    Some(object(
        bump,
        &[("type", Node::Str("image")), ("source", source)],
    ))
}

/// Whether a content array has an OpenAI `image_url` part.
fn has_image_url(content: Option<Node>) -> bool {
    matches!(content, Some(Node::Array(parts))
        if parts.iter().any(|p| node::str_of(p.get("type")) == "image_url"))
}

/// The text blocks of a message that asks for prompt caching (see
/// [`cached_blocks`]); `None` for one that does not.
fn cached_text_blocks<'a>(bump: &'a Bump, m: Node<'a>) -> Option<BVec<'a, Node<'a>>> {
    if !has_cache_control(m) {
        return None;
    }
    let mut blocks = cached_blocks(bump, m);
    blocks.retain(|b| node::str_of(b.get("type")) == "text");
    Some(blocks)
}

/// The §1B media parts (image, file, audio) of a message's content array:
/// objects whose `type` names a medium and whose `mimeType` is a string, as
/// opposed to provider blocks such as `image_url`. No allocation when there
/// are none.
fn media_parts<'a>(content: Option<Node<'a>>) -> Vec<Node<'a>> {
    let Some(Node::Array(items)) = content else {
        return Vec::new();
    };
    items
        .iter()
        .copied()
        .filter(|b| is_media_part(*b))
        .collect()
}

fn is_media_part(b: Node) -> bool {
    matches!(node::str_of(b.get("type")), "image" | "file" | "audio")
        && b.get("mimeType").and_then(Node::as_str).is_some()
}

fn text_block<'a>(bump: &'a Bump, text: &'a str) -> Node<'a> {
    object(
        bump,
        &[("type", Node::Str("text")), ("text", Node::Str(text))],
    )
}

/// A user turn's content with media in it (§11): the joined text first (when
/// there is any), then every other entry in order — media as Anthropic
/// blocks, provider blocks as given; text entries are already in the text.
fn user_blocks<'a>(bump: &'a Bump, text: &'a str, items: &'a [Node<'a>]) -> Node<'a> {
    let mut blocks = BVec::with_capacity_in(items.len() + 1, bump);
    if !text.is_empty() {
        blocks.push(text_block(bump, text));
    }
    for b in items {
        if is_media_part(*b) {
            blocks.push(anthropic_part_block(bump, *b));
        } else if node::str_of(b.get("type")) != "text" {
            blocks.push(*b);
        }
    }
    array(blocks)
}

/// The Anthropic block of one §1B part through the one §8A mapping
/// ([`part_block`]); a part Anthropic has no block for (audio) becomes
/// its text placeholder, never a silent drop. A part whose fields are not
/// strings goes through as given.
fn anthropic_part_block<'a>(bump: &'a Bump, part: Node<'a>) -> Node<'a> {
    let Ok(p) = Part::read_value(&part.to_value()) else {
        return part;
    };
    // Straight into the arena: no JSON text of the block in between (the
    // base64 of an image would be written out and read back).
    let block = part_block(&p).unwrap_or_else(|| p.placeholder_block());
    node::copy_value(bump, &block)
}

/// OpenAI `messages` converted for Anthropic: assistant `tool_calls` become
/// `tool_use` blocks with their arguments parsed to objects; consecutive
/// `tool` results merge into one user turn of `tool_result` blocks;
/// system/developer messages are hoisted out and joined with a blank line;
/// any other role is a user turn. Entries that are not objects are skipped.
pub fn openai_messages_to_anthropic<'a>(bump: &'a Bump, messages: &[Node<'a>]) -> Converted<'a> {
    let mut conv = Conversation {
        bump,
        out: BVec::with_capacity_in(messages.len(), bump),
        system: BVec::new_in(bump),
        system_blocks: BVec::new_in(bump),
        system_cached: false,
        pending: BVec::new_in(bump),
    };
    for m in messages.iter().filter(|m| m.is_object()) {
        match node::str_of(m.get("role")) {
            "system" | "developer" => conv.add_system(*m),
            "tool" | "function" => conv.add_tool_result(*m),
            "assistant" => conv.add_assistant(*m),
            _ => conv.add_user(*m),
        }
    }
    conv.drain();
    let system = match conv.system.as_slice() {
        [] => "",
        [one] => one,
        parts => {
            let mut joined = BString::from_str_in(parts[0], bump);
            for p in &parts[1..] {
                joined.push_str("\n\n");
                joined.push_str(p);
            }
            joined.into_bump_str()
        }
    };
    Converted {
        messages: conv.out.into_bump_slice(),
        system,
        system_blocks: conv
            .system_cached
            .then(|| conv.system_blocks.into_bump_slice() as &[Node]),
    }
}
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

/// translate's anthropic body: the conversation converted, the system
/// text (request.system, else a non-blank client prompt, else the hoisted
/// system/developer messages, as blocks when they asked for caching), the
/// declared tools before the request's, `max_tokens` (the request's or
/// [`DEFAULT_MAX_TOKENS`]) and `tool_choice` mapped.
pub fn request_body<'a>(
    bump: &'a Bump,
    client: &'a ClientConfig,
    request: &Request<'a>,
    declared: &[Node<'a>],
) -> ObjectBuilder<'a> {
    let converted = openai_messages_to_anthropic(bump, request.messages);
    // request.system (even "") > a non-blank client systemPrompt > the
    // system/developer messages hoisted out of the conversation.
    let (system, system_blocks) = match (request.system, client.system_prompt.as_deref()) {
        (Some(s), _) => (s, None),
        (None, Some(p)) if !turn::is_blank(p) => (p, None),
        _ => (converted.system, converted.system_blocks),
    };
    let mut tools = BVec::with_capacity_in(declared.len() + request.tools.len(), bump);
    tools.extend(declared.iter().map(|t| declared_to_anthropic(bump, *t)));
    openai_tools_to_anthropic(bump, request.tools, &mut tools);
    let mut body = ObjectBuilder::with_capacity(bump, 6 + client.request_params.len());
    body.push("model", Node::Str(&client.model));
    body.push(
        "max_tokens",
        request
            .positive_max_tokens()
            .unwrap_or(Node::Number(Num::Pos(DEFAULT_MAX_TOKENS))),
    );
    body.push("messages", Node::Array(converted.messages));
    match system_blocks {
        Some(blocks) if !blocks.is_empty() => body.push("system", Node::Array(blocks)),
        _ if !turn::is_blank(system) => body.push("system", Node::Str(system)),
        _ => {}
    }
    if !tools.is_empty() {
        body.push("tools", node::array(tools));
    }
    if let Some(choice) = openai_tool_choice_to_anthropic(bump, request.tool_choice) {
        body.push("tool_choice", choice);
    }
    body
}

/// The body keys `count_tokens` takes (Anthropic refuses any other, such
/// as `max_tokens`, `stream`, `temperature` or `metadata`): the anthropic
/// SDK's `MessageCountTokensParams`, and the beta one's `mcp_servers` and
/// `context_management` (sent only when requestParams set them, which
/// needs the client's `anthropic-beta` header for generating too).
pub const COUNT_KEYS: [&str; 11] = [
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "output_config",
    "cache_control",
    "speed",
    "mcp_servers",
    "context_management",
];

/// The `count_tokens` body: translate's body (`body`, requestParams and
/// the cache breakpoints applied) with only the keys of [`COUNT_KEYS`].
pub fn count_body<'a>(bump: &'a Bump, body: Node<'a>) -> Node<'a> {
    node::only_keys(bump, body, &COUNT_KEYS)
}

/// The count in a `count_tokens` answer: [`COUNT_FIELD`], `input_tokens`.
pub fn count_of(raw: Node) -> Option<u64> {
    node::count_at(raw, COUNT_FIELD)
}

/// The field of a token-counting answer that holds the count.
pub const COUNT_FIELD: &str = "input_tokens";

/// Anthropic takes at most this many `cache_control` breakpoints.
const MAX_CACHE_BREAKPOINTS: usize = 4;

/// Keeps the first [`MAX_CACHE_BREAKPOINTS`] `cache_control` breakpoints of
/// an Anthropic body in its render order (tools, system blocks, message
/// content blocks) and drops the rest (Anthropic refuses the request
/// otherwise). Only those places count: a tool schema may well have a
/// property named `cache_control`. A body within the cap is returned as
/// it is.
pub(crate) fn cap_cache_breakpoints<'a>(bump: &'a Bump, body: Node<'a>) -> Node<'a> {
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

/// The thinking of an answer, for a client that enabled it: adds
/// `reasoningContent` (the thinking text joined) and `thinkingBlocks` (the
/// `thinking` and `redacted_thinking` blocks as sent) when it has any.
pub fn thinking<'a>(bump: &'a Bump, raw: Node<'a>, entries: &mut Vec<(&'a str, Node<'a>)>) {
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

/// The text, the tool calls and the finish reason of an Anthropic answer
/// ([`text_pieces`], [`call_views`]).
pub fn read_answer<'a>(bump: &'a Bump, raw: Node<'a>) -> (&'a str, Node<'a>, &'static str) {
    let mut text = bumpalo::collections::String::new_in(bump);
    for piece in text_pieces(raw) {
        text.push_str(piece.display(bump));
    }
    let mut calls = BVec::new_in(bump);
    for c in call_views(raw) {
        let input = match c.arguments {
            None | Some(Node::Null) => "{}",
            Some(i) => i.encode_in(bump),
        };
        calls.push(node::object(
            bump,
            &[
                ("id", Node::Str(node::text_of(bump, c.id))),
                ("name", Node::Str(node::text_of(bump, c.name))),
                ("arguments", Node::Str(input)),
            ],
        ));
    }
    let finish = turn::finish_reason_for(!calls.is_empty(), raw.get("stop_reason"));
    (text.into_bump_str(), node::array(calls), finish)
}

// ---------------------------------------------------------------------------
// content-part blocks (§8A; `super::blocks` picks the dialect)
// ---------------------------------------------------------------------------

/// The Anthropic block of one §1B part, or `None` where this dialect has no
/// block shape for it (`super::blocks` turns that into the refusal naming
/// both): text as a `text` block, an image as `image` and a file as
/// `document` (a `url` source, else a `base64` one); audio has none.
pub(crate) fn part_block(p: &Part) -> Option<Value> {
    let mime = p.mime_type.as_deref().unwrap_or_default();
    let block = match p.kind {
        PartKind::Text => json!({
            "type": "text",
            "text": p.text.as_deref().unwrap_or_default(),
        }),
        PartKind::Image | PartKind::File => {
            let block_type = if p.kind == PartKind::Image {
                "image"
            } else {
                "document"
            };
            let source = match (&p.url, &p.data) {
                (Some(u), _) => json!({"type": "url", "url": u}),
                (None, Some(d)) => json!({"type": "base64", "media_type": mime, "data": d}),
                (None, None) => return None,
            };
            json!({"type": block_type, "source": source})
        }
        // Anthropic defines no audio block: a refusal by name.
        PartKind::Audio => return None,
    };
    Some(block)
}

/// A `tool_result` block with §1B parts as the request carries it (§8A;
/// the transcript keeps its canonical `parts`, see
/// [`super::blocks::wire_messages`]): without `parts`, its content
/// `[its text, each part's block…]`. `tool_part` makes a part's block.
pub(crate) fn wire_tool_result(
    block: &Value,
    parts: &[Value],
    tool_part: &mut dyn FnMut(&Value) -> Result<Value, String>,
) -> Result<Value, String> {
    let mut nb = block.as_object().cloned().unwrap_or_default();
    nb.remove("parts");
    let mut content = vec![turn::text_block(block.get("content"))];
    for p in parts {
        content.push(tool_part(p)?);
    }
    nb.insert("content".into(), Value::Array(content));
    Ok(Value::Object(nb))
}

// ---------------------------------------------------------------------------
// the streamed answer (`super::stream`, built from `super::gather`)
// ---------------------------------------------------------------------------

/// A string field as the sink gets it (`""` when absent).
fn str_of(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or("")
}

/// One content block of an Anthropic stream.
#[derive(Debug)]
struct StreamBlock {
    index: u64,
    block: Map<String, Value>,
    /// `input_json_delta` pieces of a tool_use block.
    json: Option<String>,
    /// A tool_use block's number with the sink (a block a delta started
    /// has none: its pieces are not handed on).
    at: Option<usize>,
}

/// An Anthropic stream gathered so far.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    message: Option<Map<String, Value>>,
    blocks: Vec<StreamBlock>,
    /// Where the block of each `index` is in `blocks`.
    by_index: HashMap<u64, usize>,
    /// How many of the blocks are `tool_use`.
    tool_uses: usize,
    stop_reason: Option<Value>,
    stop_sequence: Option<Value>,
    usage: Map<String, Value>,
    /// The usage as handed on: prompt = input + cache read + cache
    /// creation (from `message_start`), completion = the last
    /// `output_tokens`.
    told: Usage,
}

impl StreamState {
    /// Starts (or starts again) the block of `index`, returning where it is
    /// in `blocks`; fails past [`MAX_TOOL_CALLS`] `tool_use` blocks.
    fn start_block(&mut self, index: u64, block: Map<String, Value>) -> Result<usize, Error> {
        let is_tool =
            |b: &Map<String, Value>| b.get("type").and_then(Value::as_str) == Some("tool_use");
        let tool = is_tool(&block);
        let entry = StreamBlock {
            index,
            block,
            json: None,
            at: None,
        };
        match self.by_index.get(&index) {
            Some(&at) => {
                let was_tool = is_tool(&self.blocks[at].block);
                if tool && !was_tool {
                    self.count_tool_use()?;
                } else if was_tool && !tool {
                    self.tool_uses -= 1;
                }
                self.blocks[at] = entry;
                Ok(at)
            }
            None => {
                if tool {
                    self.count_tool_use()?;
                }
                self.blocks.push(entry);
                self.by_index.insert(index, self.blocks.len() - 1);
                Ok(self.blocks.len() - 1)
            }
        }
    }

    fn count_tool_use(&mut self) -> Result<(), Error> {
        if self.tool_uses >= MAX_TOOL_CALLS {
            return Err(too_many_calls(self.tool_uses + 1));
        }
        self.tool_uses += 1;
        Ok(())
    }

    /// Takes one event of the stream; `sink` gets its pieces.
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
        let index = ev.get("index").and_then(Value::as_u64).unwrap_or(0);
        let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
        match ev.kind() {
            "message_start" => {
                sink.begin()?;
                if let Some(Value::Object(m)) = ev.get("message") {
                    // At most the whole event was copied.
                    budget.take(ENTRY_BYTES + data.len())?;
                    if let Some(Value::Object(u)) = m.get("usage") {
                        s.usage.extend(u.clone());
                    }
                    s.message = Some(m.clone());
                }
                if let Some(u) = ev.value.get("message").and_then(|m| m.get("usage")) {
                    let read = n(u.get("cache_read_input_tokens"));
                    s.told.prompt = n(u.get("input_tokens"))
                        .saturating_add(read)
                        .saturating_add(n(u.get("cache_creation_input_tokens")));
                    s.told.cached = read;
                    s.told.completion = n(u.get("output_tokens"));
                    sink.usage(s.told);
                }
            }
            "content_block_start" => {
                let block = match ev.get("content_block") {
                    Some(Value::Object(b)) => b.clone(),
                    _ => Map::new(),
                };
                budget.take(ENTRY_BYTES + data.len())?;
                let at = s.start_block(index, block)?;
                let b = &mut s.blocks[at];
                match str_of(b.block.get("type")) {
                    "tool_use" => {
                        let id = str_of(b.block.get("id"));
                        let name = str_of(b.block.get("name"));
                        b.at = Some(sink.tool_start(id, name, None)?);
                    }
                    "text" => sink.text(str_of(b.block.get("text")))?,
                    _ => {}
                }
            }
            "content_block_delta" => {
                let Some(Value::Object(delta)) = ev.get("delta") else {
                    return Ok(false);
                };
                let at = match s.by_index.get(&index) {
                    Some(&at) => at,
                    // A delta for a block never started starts it.
                    None => {
                        let t = match delta.get("type").and_then(Value::as_str) {
                            Some("input_json_delta") => "tool_use",
                            _ => "text",
                        };
                        let mut block = Map::new();
                        block.insert("type".into(), Value::String(t.into()));
                        budget.take(ENTRY_BYTES)?;
                        s.start_block(index, block)?
                    }
                };
                let b = &mut s.blocks[at];
                match delta.get("type").and_then(Value::as_str) {
                    Some("input_json_delta") => {
                        let piece = str_of(delta.get("partial_json"));
                        budget.take(piece.len())?;
                        b.json.get_or_insert_with(String::new).push_str(piece);
                        if let Some(at) = b.at {
                            sink.tool_args(at, piece)?;
                        }
                    }
                    kind => {
                        append_strings(&mut b.block, delta, budget)?;
                        match kind {
                            Some("text_delta") => sink.text(str_of(delta.get("text")))?,
                            Some("thinking_delta") => {
                                sink.reasoning(str_of(delta.get("thinking")))?;
                            }
                            _ => {}
                        }
                    }
                }
            }
            "content_block_stop" => {
                if let Some(&at) = s.by_index.get(&index) {
                    Self::close_block(&mut s.blocks[at]);
                }
            }
            "message_delta" => {
                if let Some(Value::Object(d)) = ev.get("delta") {
                    if let Some(r) = d.get("stop_reason").filter(|r| !r.is_null()) {
                        s.stop_reason = Some(r.clone());
                        if let Some(r) = r.as_str() {
                            sink.finish(match r {
                                "max_tokens" => "length",
                                "tool_use" => "tool_calls",
                                "refusal" => "content_filter",
                                _ => "stop",
                            });
                        }
                    }
                    if let Some(q) = d.get("stop_sequence").filter(|q| !q.is_null()) {
                        s.stop_sequence = Some(q.clone());
                    }
                }
                if let Some(u) = ev.get("usage") {
                    if let Some(o) = u.get("output_tokens").and_then(Value::as_u64) {
                        s.told.completion = o;
                    }
                    sink.usage(s.told);
                }
                if let Some(Value::Object(u)) = ev.get("usage") {
                    for (k, v) in u {
                        if !v.is_null() {
                            if !s.usage.contains_key(k) {
                                budget.take(ENTRY_BYTES + k.len())?;
                            }
                            s.usage.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                return Err(provider_stream_error(ev.get("error").unwrap_or(&ev.value)));
            }
            // ping and anything newer.
            _ => {}
        }
        Ok(false)
    }

    /// A finished tool_use block takes its gathered input (`{}` when the
    /// pieces do not make a JSON object: CONTRACT §5 reads malformed
    /// arguments as none).
    fn close_block(b: &mut StreamBlock) {
        let Some(json) = b.json.take() else { return };
        let input = if json.trim().is_empty() {
            b.block
                .get("input")
                .cloned()
                .unwrap_or(Value::Object(Map::new()))
        } else {
            match serde_json::from_str::<Value>(&json) {
                Ok(v @ Value::Object(_)) => v,
                _ => Value::Object(Map::new()),
            }
        };
        b.block.insert("input".into(), input);
    }

    /// The answer as the provider would have sent it whole.
    pub(crate) fn finish(mut self) -> Value {
        let s = &mut self;
        for b in &mut s.blocks {
            Self::close_block(b);
        }
        s.blocks.sort_by_key(|b| b.index);
        let mut out = s.message.take().unwrap_or_default();
        out.entry("type")
            .or_insert_with(|| Value::String("message".into()));
        out.entry("role")
            .or_insert_with(|| Value::String("assistant".into()));
        let content = std::mem::take(&mut s.blocks)
            .into_iter()
            .map(|b| Value::Object(b.block))
            .collect();
        out.insert("content".into(), Value::Array(content));
        out.insert(
            "stop_reason".into(),
            s.stop_reason.take().unwrap_or(Value::Null),
        );
        out.insert(
            "stop_sequence".into(),
            s.stop_sequence.take().unwrap_or(Value::Null),
        );
        out.insert("usage".into(), Value::Object(std::mem::take(&mut s.usage)));
        Value::Object(out)
    }
}

/// The text of a whole answer to a streamed request, for the one delta it
/// makes: the `text` blocks whose text is a string, joined.
pub(crate) fn whole_text(answer: &Value) -> String {
    answer
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The OpenAI names Anthropic refuses go under its own (issue 29's
    /// LiteLLM diff); its own name, when also given, wins.
    #[test]
    fn openai_params_go_under_anthropic_names() {
        let params = json!({"stop": "END", "max_completion_tokens": 50, "reasoning_effort": "high",
            "temperature": 0.1, "messages": [], "metadata": {"user_id": "u"}});
        let params = params.as_object().unwrap();
        let body = Body {
            style: crate::provider::Style::Anthropic,
            model: "m",
            system: "",
            messages: &[],
            tools: &[],
            params,
            stream: false,
        };
        let got = serde_json::to_value(
            body_entries(&body)
                .into_iter()
                .collect::<std::collections::BTreeMap<_, _>>(),
        )
        .unwrap();
        assert_eq!(
            got,
            json!({"model": "m", "max_tokens": 50, "system": "", "messages": [],
                "stop_sequences": ["END"], "thinking": {"type": "enabled", "budget_tokens": 1024},
                "temperature": 0.1, "metadata": {"user_id": "u"}})
        );
        let both = json!({"stop": ["a", "b"], "stop_sequences": ["c"], "reasoning_effort": "none"});
        let both = both.as_object().unwrap();
        assert!(matches!(
            param("stop", &both["stop"], both, None),
            Param::Dropped
        ));
        assert!(matches!(
            param("stop_sequences", &both["stop_sequences"], both, None),
            Param::AsIs
        ));
        assert!(matches!(
            param("reasoning_effort", &both["reasoning_effort"], both, None),
            Param::Mapped("thinking", v) if v == json!({"type": "disabled"})
        ));
        assert!(matches!(
            param("reasoning_effort", &json!("extreme"), both, None),
            Param::AsIs
        ));
        // The budget leaves 1,024 of max_tokens for the answer: the default
        // 4,096 takes "high" down to 3,072; a larger max_tokens keeps it.
        let high = |params: Value| match param(
            "reasoning_effort",
            &json!("high"),
            params.as_object().unwrap(),
            None,
        ) {
            Param::Mapped("thinking", v) => v["budget_tokens"].as_u64(),
            _ => None,
        };
        assert_eq!(high(json!({"reasoning_effort": "high"})), Some(3072));
        assert_eq!(high(json!({"max_tokens": 16000})), Some(4096));
        assert_eq!(high(json!({"max_completion_tokens": 3000})), Some(1976));
        // Translate's request's own max_tokens counts when the parameters
        // set none.
        assert!(matches!(
            param("reasoning_effort", &json!("high"), &Map::new(), Some(8192)),
            Param::Mapped("thinking", v) if v["budget_tokens"] == 4096
        ));
    }

    /// The loop and translate read an answer's calls and text alike (one
    /// reader, [`call_views`] and [`text_pieces`]); only the strings they
    /// make differ: the loop's arguments are the `input` value, translate's
    /// its JSON text.
    #[test]
    fn the_loop_and_translate_read_calls_and_text_alike() {
        let text = r#"{"content":[
            {"type":"text","text":"a"},
            {"type":"thinking","thinking":"t"},
            {"type":"tool_use","id":"u1","name":"f","input":{"x":1}},
            {"type":"text","text":5},
            {"type":"text","text":null},
            {"type":"tool_use","id":7,"input":null},
            {"type":"tool_use","id":"u3","name":"g","input":"s"},
            "stray"],"stop_reason":"tool_use"}"#;
        let bump = Bump::new();
        let (n, v) = node::parse_both(&bump, text);
        assert_eq!(answer_text(&v), "a5");
        let loop_calls: Vec<(String, String, Value)> = calls(&v)
            .into_iter()
            .map(|c| (c.id, c.name, c.args))
            .collect();
        assert_eq!(
            loop_calls,
            [
                ("u1".into(), "f".into(), json!({"x": 1})),
                ("7".into(), String::new(), json!({})),
                ("u3".into(), "g".into(), json!("s")),
            ]
        );
        let (t, translated, finish) = read_answer(&bump, n);
        assert_eq!(t, "a5");
        assert_eq!(finish, "tool_calls");
        assert_eq!(
            translated.to_value(),
            json!([
                {"id": "u1", "name": "f", "arguments": "{\"x\":1}"},
                {"id": "7", "name": "", "arguments": "{}"},
                {"id": "u3", "name": "g", "arguments": "\"s\""},
            ])
        );
    }
}
