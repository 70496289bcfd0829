//! The pure SPEC §11 helpers: reading OpenAI-shaped messages, tools and tool
//! choices, and writing them in Anthropic's shape. Nothing here does I/O;
//! every function reads [`Node`]s and builds its answer in the call's arena,
//! and none of them fails: input of the wrong shape is read the way every
//! toolnexus port reads it (skipped, or taken as empty), which the
//! translate_helpers vectors pin.

use super::node::{self, array, object, Node, ObjectBuilder, EMPTY_OBJECT};
use crate::parts::Part;
use crate::style::Style;
use bumpalo::collections::{String as BString, Vec as BVec};
use bumpalo::Bump;

/// A value Clojure would treat as true: anything but `null` and `false`.
fn truthy(v: Option<Node>) -> bool {
    !matches!(v, None | Some(Node::Null) | Some(Node::Bool(false)))
}

/// The display text of a value that may be missing (missing reads as "").
fn text_of<'a>(bump: &'a Bump, v: Option<Node<'a>>) -> &'a str {
    v.map_or("", |v| v.display(bump))
}

/// Whether a value displays as "": missing, null or the empty string (any
/// other value displays as its non-empty JSON spelling).
fn displays_empty(v: Option<Node>) -> bool {
    matches!(v, None | Some(Node::Null) | Some(Node::Str("")))
}

/// `v` when it is a string. Comparing a value's display text with a
/// keyword is the same as comparing the string itself, since no other
/// value displays as a bare word.
fn str_of<'a>(v: Option<Node<'a>>) -> &'a str {
    v.and_then(Node::as_str).unwrap_or("")
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
    match str_of(provider_stop) {
        "max_tokens" | "length" => "length",
        "refusal" | "content_filter" => "content_filter",
        _ => "stop",
    }
}

/// The text of an OpenAI `content` value: a string as it is, a parts array as
/// the concatenation of its parts' string `text` fields, anything else "".
pub fn content_text<'a>(bump: &'a Bump, content: Option<Node<'a>>) -> &'a str {
    match content {
        Some(Node::Str(s)) => s,
        Some(Node::Array(parts)) => {
            let mut texts = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Node::as_str));
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
        _ => "",
    }
}

/// Tool-call arguments as an object, from either wire form. A string that is
/// not JSON text of an object (malformed, blank, an array, trailing garbage)
/// gives `{}`, as does any other non-object value.
pub fn args_object<'a>(bump: &'a Bump, args: Option<Node<'a>>) -> Node<'a> {
    match args {
        Some(v @ Node::Object(_)) => v,
        Some(Node::Str(s)) if !is_blank(s) => match node::parse(bump, s.trim()) {
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

/// The tool calls of an assistant message. Entries without a `function`
/// object are skipped.
pub fn tool_calls_of<'a>(
    bump: &'a Bump,
    message: Node<'a>,
) -> impl Iterator<Item = ToolCall<'a>> + 'a {
    let calls = message
        .get("tool_calls")
        .and_then(Node::as_array)
        .unwrap_or(&[]);
    calls.iter().filter_map(move |tc| {
        let function = tc.get("function").filter(|f| f.is_object())?;
        Some(ToolCall {
            id: text_of(bump, tc.get("id")),
            name: text_of(bump, function.get("name")),
            arguments: function.get("arguments"),
        })
    })
}

/// Whether any message has the role "system" or "developer" (case-sensitive).
pub fn has_system_message(messages: &[Node]) -> bool {
    messages
        .iter()
        .any(|m| matches!(str_of(m.get("role")), "system" | "developer"))
}

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
            if displays_empty(name) {
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
            if truthy(t.get("name")) {
                out.push(*t);
            }
            continue;
        };
        let name = function.get("name");
        if displays_empty(name) {
            continue;
        }
        let mut m = ObjectBuilder::with_capacity(bump, 3);
        m.push("name", name.unwrap_or(Node::Null));
        let description = function.get("description");
        if !displays_empty(description) {
            m.push("description", description.unwrap_or(Node::Null));
        }
        let schema = match function.get("parameters") {
            Some(p @ Node::Object(_)) => p,
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
        let text = content_text(self.bump, m.get("content"));
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
        if truthy(id) {
            let id = text_of(bump, id);
            if !id.is_empty() {
                block.push("tool_use_id", Node::Str(id));
            }
        }
        let content = m.get("content");
        let text = content_text(bump, content);
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
        let text = content_text(bump, m.get("content"));
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
        for call in tool_calls_of(bump, m) {
            // The arguments as args_object reads args_string's text: a
            // string as given, an object as itself, anything else `{}`.
            blocks.push(object(
                bump,
                &[
                    ("type", Node::Str("tool_use")),
                    ("id", Node::Str(call.id)),
                    ("name", Node::Str(call.name)),
                    ("input", args_object(bump, call.arguments)),
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
        let text = content_text(self.bump, content);
        if has_cache_control(m) {
            // Prompt caching: every part keeps its own block, so each
            // breakpoint stays where the host put it.
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
/// blocks, provider blocks as given); a string content is one text block.
/// A message-level `cache_control` goes on the last block.
fn cached_blocks<'a>(bump: &'a Bump, m: Node<'a>) -> BVec<'a, Node<'a>> {
    let mut blocks = BVec::new_in(bump);
    match m.get("content") {
        Some(Node::Str(s)) if !s.is_empty() => blocks.push(text_block(bump, s)),
        Some(Node::Array(parts)) => {
            for p in parts.iter().copied() {
                let block = if let Node::Str(s) = p {
                    text_block(bump, s)
                } else if str_of(p.get("type")) == "text" {
                    let t = p.get("text").and_then(Node::as_str).unwrap_or("");
                    text_block(bump, t)
                } else if is_media_part(p) {
                    anthropic_part_block(bump, p)
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

/// The text blocks of a message that asks for prompt caching (see
/// [`cached_blocks`]); `None` for one that does not.
fn cached_text_blocks<'a>(bump: &'a Bump, m: Node<'a>) -> Option<BVec<'a, Node<'a>>> {
    if !has_cache_control(m) {
        return None;
    }
    let mut blocks = cached_blocks(bump, m);
    blocks.retain(|b| str_of(b.get("type")) == "text");
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
    matches!(str_of(b.get("type")), "image" | "file" | "audio")
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
        } else if str_of(b.get("type")) != "text" {
            blocks.push(*b);
        }
    }
    array(blocks)
}

/// The Anthropic block of one §1B part through the one §8A mapping
/// ([`crate::parts`]); a part Anthropic has no block for (audio) becomes
/// its text placeholder, never a silent drop. A part whose fields are not
/// strings goes through as given.
fn anthropic_part_block<'a>(bump: &'a Bump, part: Node<'a>) -> Node<'a> {
    let Ok(p) = Part::read_value(&part.to_value()) else {
        return part;
    };
    // Straight into the arena: no JSON text of the block in between (the
    // base64 of an image would be written out and read back).
    node::copy_value(bump, &p.to_block_or_placeholder(Style::Anthropic))
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
        match str_of(m.get("role")) {
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
