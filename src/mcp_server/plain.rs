//! One-pass reads of the plain requests every client sends over and over:
//! a `tools/call` with nothing but `name` and `arguments` in its params,
//! and a `tools/list` with no params (or empty ones), and their answers as
//! rmcp's handler shapes them. Both transports answer them themselves once
//! they know rmcp would give the legacy shape (HTTP: see `http.rs`; stdio:
//! once the session is initialized, see `stdio.rs`); before that stdio
//! hands the call on to rmcp as a message it need not parse.
//!
//! rmcp's own parse of a client message tries its message kinds and then
//! every request type of the protocol in turn, buffering the text and
//! building an error for each miss (about a quarter of the gateway's
//! instructions per proxied call, measured with callgrind; bench/README.md,
//! issue 13). Anything else (other methods, `_meta`, a cursor, fields this
//! does not know, duplicate keys, a line or params that are an array) is
//! `None`, for rmcp's parse, so what the handler sees is the same either
//! way (stdio.rs compares the two on generated lines).

use super::Gateway;
use rmcp::model::{
    CallToolResponse, CallToolResult, JsonRpcVersion2_0, ListToolsResult, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::ErrorData;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The scalar visits of [`Arguments`]: each the [`placeholder`] of its
/// kind; `null` is refused.
macro_rules! scalar_placeholders {
    () => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Arguments, E> {
            Ok(Arguments::Other(Value::Bool(false)))
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Arguments, E> {
            Ok(Arguments::Other(Value::from(0)))
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Arguments, E> {
            Ok(Arguments::Other(Value::from(0)))
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Arguments, E> {
            Ok(Arguments::Other(Value::from(0)))
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Arguments, E> {
            Ok(Arguments::Other(Value::String(String::new())))
        }
    };
}

/// A plain request, read.
pub enum Plain {
    Call {
        id: RequestId,
        name: String,
        arguments: Option<Map<String, Value>>,
    },
    List {
        id: RequestId,
    },
    /// A `tools/call` whose `arguments` are no object (an array, a number,
    /// a string, a boolean): rmcp reads it as a request of a method it does
    /// not know and answers -32601. It goes to rmcp as that request with
    /// `arguments` replaced by [`placeholder`] of the same kind, so the
    /// arguments (a line of sixteen million bytes `[0,0,…]`) are read
    /// through once and never held: rmcp's parse of them whole peaked at
    /// 1.9 GB (issue 25 M2).
    NotAnObject {
        id: RequestId,
        name: String,
        placeholder: Value,
    },
}

/// A message (as JSON) with its `params.arguments` replaced by their
/// [`placeholder`] when they are no object: how the differential tests and
/// the fuzz target compare rmcp's parse with a [`Plain::NotAnObject`].
pub fn placeholder_arguments(mut message: Value) -> Value {
    if let Some(args) = message
        .get_mut("params")
        .and_then(|p| p.get_mut("arguments"))
        .filter(|a| !a.is_object())
    {
        *args = placeholder(args);
    }
    message
}

/// The smallest value of `v`'s kind: what [`Plain::NotAnObject`] passes on
/// in place of arguments that are no object.
pub fn placeholder(v: &Value) -> Value {
    match v {
        Value::Array(_) => Value::Array(Vec::new()),
        Value::Number(_) => Value::from(0),
        Value::String(_) => Value::String(String::new()),
        Value::Bool(_) => Value::Bool(false),
        other => other.clone(),
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Line<'a> {
    #[allow(dead_code)]
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(default, deserialize_with = "present_object")]
    params: Option<Params>,
}

/// The params of either: `name` and `arguments` of a call, nothing of a
/// list.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default, deserialize_with = "present")]
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    arguments: Option<Arguments>,
}

/// A call's `arguments`: an object, or the [`placeholder`] of what else
/// they were (read through, kept nowhere). An explicit `null` fails the
/// read, leaving such a request to rmcp.
enum Arguments {
    Object(Map<String, Value>),
    Other(Value),
}

impl<'de> serde::Deserialize<'de> for Arguments {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Arguments, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Arguments;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("arguments")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Arguments, A::Error> {
                serde::Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(Arguments::Object)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Arguments, A::Error> {
                SkipVisitor
                    .visit_seq(seq)
                    .map(|_| Arguments::Other(Value::Array(Vec::new())))
            }
            scalar_placeholders!();
        }
        d.deserialize_any(V)
    }
}

/// A field that is there (absent is `None` by `default`); an explicit
/// `null` fails the read, leaving such a request to rmcp.
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// `params` that are there, read as [`object`].
fn present_object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    object(d).map(Some)
}

/// A struct read from a JSON object only. A derived struct also reads
/// from an array, its fields in order (`["x", {}]` as a call of `x`),
/// which rmcp's parse takes for no message at all.
fn object<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    struct Object<T>(std::marker::PhantomData<T>);
    impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Object<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_map(Object(std::marker::PhantomData))
}

/// Reads `text` as a plain request, or `None` for rmcp's parse.
pub fn read(text: &[u8]) -> Option<Plain> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let line: Line = object(&mut de).ok()?;
    de.end().ok()?;
    match (line.method.as_ref(), line.params) {
        (
            "tools/call",
            Some(Params {
                name: Some(name),
                arguments: Some(Arguments::Other(placeholder)),
            }),
        ) => Some(Plain::NotAnObject {
            id: line.id,
            name,
            placeholder,
        }),
        (
            "tools/call",
            Some(Params {
                name: Some(name),
                arguments,
            }),
        ) => Some(Plain::Call {
            id: line.id,
            name,
            arguments: arguments.map(|a| match a {
                Arguments::Object(m) => m,
                Arguments::Other(_) => Map::new(),
            }),
        }),
        (
            "tools/list",
            None
            | Some(Params {
                name: None,
                arguments: None,
            }),
        ) => Some(Plain::List { id: line.id }),
        _ => None,
    }
}

/// A result as rmcp's handler gives it to a peer on a protocol version
/// before 2026-07-28 (every session that opened with `initialize`, and
/// every HTTP request this server answers itself): no `resultType`, no
/// non-object tool output.
fn legacy(mut result: ServerResult) -> ServerResult {
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    result
}

/// The answer to a plain `tools/list`, as rmcp's handler gives it.
pub fn list_answer(gateway: &Gateway, id: RequestId) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::response(
        legacy(ServerResult::ListToolsResult(
            ListToolsResult::with_all_items(gateway.list()),
        )),
        id,
    )
}

/// The answer to a [`Plain::NotAnObject`], as rmcp's handler gives it to a
/// request of a method it does not know (`on_custom_request`): -32601 with
/// the method as the message.
pub fn unknown_call_answer(id: RequestId) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(
        ErrorData::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, "tools/call", None),
        Some(id),
    )
}

/// The JSON text (no newline) answering a plain `tools/call` whose tool
/// run ([`Gateway::run`]) gave `outcome`, the bytes rmcp writes for it:
/// a parts-free result's [`text_answer_line`], else the encoding of
/// [`call_answer`]. Both transports answer with it.
pub fn call_answer_text(
    id: RequestId,
    outcome: Result<crate::tool::ToolResult, ErrorData>,
) -> serde_json::Result<Vec<u8>> {
    if let Some(line) = outcome.as_ref().ok().and_then(|r| text_answer_line(&id, r)) {
        return Ok(line);
    }
    serde_json::to_vec(&call_answer(outcome.map(super::call_result), id))
}

/// The answer to a plain `tools/call` whose [`Gateway::call`] gave
/// `outcome`, as rmcp's handler gives it.
fn call_answer(outcome: Result<CallToolResult, ErrorData>, id: RequestId) -> ServerJsonRpcMessage {
    match outcome {
        Ok(result) => ServerJsonRpcMessage::response(
            legacy(ServerResult::from(CallToolResponse::from(result))),
            id,
        ),
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    }
}

/// The line (without its newline) answering a plain `tools/call` whose
/// tool gave `result`, when the result has no parts: the bytes rmcp's
/// encoding of [`call_answer`] gives (`{"jsonrpc":"2.0","id":ID,"result":
/// {"content":[{"type":"text","text":OUTPUT}],"isError":BOOL}}`, strings
/// escaped by the same serde_json writer), without building the typed
/// result. `None` for a result with parts, which takes [`call_answer`].
fn text_answer_line(id: &RequestId, result: &crate::tool::ToolResult) -> Option<Vec<u8>> {
    if !result.parts.is_empty() {
        return None;
    }
    let mut line = Vec::with_capacity(80 + result.output.len());
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut line, id).ok()?;
    line.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
    serde_json::to_writer(&mut line, result.output.as_str()).ok()?;
    line.extend_from_slice(if result.is_error {
        br#"}],"isError":true}}"#
    } else {
        br#"}],"isError":false}}"#
    });
    Some(line)
}

/// JSON-RPC's parse error: the text is no JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid request: JSON, but no message.
pub const INVALID_REQUEST: i64 = -32600;

/// A JSON-RPC error message `{"jsonrpc", "id", "error": {code, message}}`.
pub fn error_message(id: Value, code: i64, message: &str) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// [`error_message`] as its JSON text.
pub fn error_line(id: Value, code: i64, message: &str) -> Vec<u8> {
    error_message(id, code, message).to_string().into_bytes()
}

/// What to answer a text (a stdio line, an HTTP body) that is no client
/// message, `err` being why rmcp's parse refused it: the parse error (id
/// null) for text that is no JSON (bad JSON, invalid UTF-8, nesting past
/// the parser's depth, nothing at all); invalid request, with the id when
/// it has a usable one, for JSON that is no message; nothing for a
/// notification (a method without an id), which is never answered.
///
/// A batch (a JSON array) is answered as JSON-RPC 2.0 says, by an array
/// with one answer per request in it, each the invalid-request error
/// (MCP since 2025-06-18 has no batches, so none is run), notifications
/// unanswered; an empty batch is one invalid request (id null), and a
/// batch of notifications only is not answered. A batch that would get
/// more than [`crate::limits::BATCH_ANSWERS`] answers gets one invalid
/// request (id null) instead, saying how many requests it held.
///
/// The text is read in one pass that keeps only what an answer needs (each
/// item's `id` when it is a string or a number, whether it has a `method`),
/// never a tree of it: a 16 MB line `[0,0,…]` used to become a `Value` of
/// eight million items and as many answers, about 1.9 GB (issue 25 M2).
/// The parse error is the one reading the text as a `Value` gives, word for
/// word (the same reader, the same depth limit).
pub fn reject(text: &[u8], err: &serde_json::Error) -> Option<Vec<u8>> {
    refuse(text, err)
}

/// Whether `text` is a batch (its first byte past white space is `[`):
/// rmcp's parse takes no batch, and buffers the whole text in a tree of its
/// own before it says so, so a batch goes to [`reject_batch`] unparsed.
pub fn is_batch(text: &[u8]) -> bool {
    text.iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .is_some_and(|b| *b == b'[')
}

/// [`reject`] for a text [`is_batch`] says is a batch, with no error of
/// rmcp's parse to quote (no answer to a batch quotes it).
pub fn reject_batch(text: &[u8]) -> Option<Vec<u8>> {
    refuse(text, &"a batch")
}

const BATCH_REFUSED: &str = "invalid request: batches are not supported (MCP has no JSON-RPC \
                             batches since 2025-06-18); send each request on its own";

fn refuse(text: &[u8], err: &dyn std::fmt::Display) -> Option<Vec<u8>> {
    // serde_json's Value reads a map key of this name as its raw-value
    // marker: such a text keeps the whole read, so its errors stay the same.
    if text
        .windows(RAW_VALUE_MARK.len())
        .any(|w| w == RAW_VALUE_MARK)
    {
        return reject_whole(text, err);
    }
    let mut de = serde_json::Deserializer::from_slice(text);
    let read = match serde::Deserialize::deserialize(&mut de).and_then(|t: Top| {
        de.end()?;
        Ok(t)
    }) {
        Ok(t) => t,
        Err(e) => {
            return Some(error_line(
                Value::Null,
                PARSE_ERROR,
                &format!("parse error: {e}"),
            ))
        }
    };
    match read {
        Top::Batch { items: 0, .. } => Some(error_line(
            Value::Null,
            INVALID_REQUEST,
            "invalid request: an empty batch",
        )),
        Top::Batch {
            items,
            overflow: true,
            ..
        } => Some(error_line(
            Value::Null,
            INVALID_REQUEST,
            &format!(
                "invalid request: a batch of {items} requests, answered as one: {}",
                &BATCH_REFUSED["invalid request: ".len()..]
            ),
        )),
        Top::Batch { answers, .. } if answers.is_empty() => None,
        Top::Batch { answers, .. } => Some(Value::Array(answers).to_string().into_bytes()),
        Top::One(item) => item
            .refused(&format!("invalid request: {err}"))
            .map(|answer| answer.to_string().into_bytes()),
    }
}

const RAW_VALUE_MARK: &[u8] = b"$serde_json::private::RawValue";

/// The read of a whole `Value`, for the texts [`refuse`] leaves to it.
fn reject_whole(text: &[u8], err: &dyn std::fmt::Display) -> Option<Vec<u8>> {
    let v: Value = match serde_json::from_slice(text) {
        Ok(v) => v,
        Err(e) => {
            return Some(error_line(
                Value::Null,
                PARSE_ERROR,
                &format!("parse error: {e}"),
            ))
        }
    };
    match v {
        Value::Array(items) if items.is_empty() => Some(error_line(
            Value::Null,
            INVALID_REQUEST,
            "invalid request: an empty batch",
        )),
        Value::Array(items) => {
            let answers: Vec<Value> = items
                .iter()
                .filter_map(|item| Item::of(item).refused(BATCH_REFUSED))
                .collect();
            if answers.len() > crate::limits::BATCH_ANSWERS {
                let answer = error_line(
                    Value::Null,
                    INVALID_REQUEST,
                    &format!(
                        "invalid request: a batch of {} requests, answered as one: {}",
                        items.len(),
                        &BATCH_REFUSED["invalid request: ".len()..]
                    ),
                );
                return Some(answer);
            }
            if answers.is_empty() {
                None
            } else {
                Some(Value::Array(answers).to_string().into_bytes())
            }
        }
        other => Item::of(&other)
            .refused(&format!("invalid request: {err}"))
            .map(|answer| answer.to_string().into_bytes()),
    }
}

/// What an answer needs of one JSON value that is no message: its `id`
/// when that is a string or a number (the last one, as a map keeps it),
/// whether it has a `method`.
#[derive(Default)]
struct Item {
    id: Option<Value>,
    has_id: bool,
    method: bool,
}

impl Item {
    fn of(v: &Value) -> Item {
        Item {
            id: v
                .get("id")
                .filter(|id| id.is_string() || id.is_number())
                .cloned(),
            has_id: v.get("id").is_some(),
            method: v.get("method").is_some(),
        }
    }

    /// The invalid-request answer to the value; `None` for a notification
    /// (a method, no id), which is never answered, even a bad one.
    fn refused(&self, message: &str) -> Option<Value> {
        if !self.has_id && self.method {
            return None;
        }
        let id = self.id.clone().unwrap_or(Value::Null);
        Some(error_message(id, INVALID_REQUEST, message))
    }
}

/// Accepts every scalar a JSON reader hands a visitor as `$value`.
macro_rules! scalars {
    ($value:expr) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}

/// A refused text, read: a batch (how many items, the answers so far, and
/// whether there were more than [`crate::limits::BATCH_ANSWERS`]), or one
/// value.
enum Top {
    Batch {
        items: usize,
        answers: Vec<Value>,
        overflow: bool,
    },
    One(Item),
}

impl<'de> serde::Deserialize<'de> for Top {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Top, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Top;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Top, A::Error> {
                let (mut items, mut answers, mut overflow) = (0, Vec::new(), false);
                while let Some(item) = seq.next_element::<ReadItem>()? {
                    items += 1;
                    if overflow {
                        continue;
                    }
                    if let Some(answer) = item.0.refused(BATCH_REFUSED) {
                        if answers.len() == crate::limits::BATCH_ANSWERS {
                            overflow = true;
                            answers = Vec::new();
                        } else {
                            answers.push(answer);
                        }
                    }
                }
                Ok(Top::Batch {
                    items,
                    answers,
                    overflow,
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Top, A::Error> {
                ItemVisitor.visit_map(map).map(Top::One)
            }
            scalars!(Top::One(Item::default()));
        }
        d.deserialize_any(V)
    }
}

/// One item of a batch, read as [`Item`].
struct ReadItem(Item);

impl<'de> serde::Deserialize<'de> for ReadItem {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ReadItem, D::Error> {
        d.deserialize_any(ItemVisitor).map(ReadItem)
    }
}

struct ItemVisitor;

impl<'de> serde::de::Visitor<'de> for ItemVisitor {
    type Value = Item;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
        let mut item = Item::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Id => {
                    item.has_id = true;
                    item.id = map.next_value::<Id>()?.0;
                }
                Key::Method => {
                    item.method = true;
                    map.next_value::<Skip>()?;
                }
                Key::Other => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(item)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Item, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Item::default())
    }
    scalars!(Item::default());
}

/// A map key, as much of it as an answer needs.
enum Key {
    Id,
    Method,
    Other,
}

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string key")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Key, E> {
                Ok(match s {
                    "id" => Key::Id,
                    "method" => Key::Method,
                    _ => Key::Other,
                })
            }
        }
        // As Value reads its keys.
        d.deserialize_str(V)
    }
}

/// An `id`: kept when a string or a number (as Value makes it), else read
/// past.
struct Id(Option<Value>);

impl<'de> serde::Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Id;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Id, E> {
                Ok(Id(None))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Id, E> {
                Ok(Id(Some(Value::from(n))))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Id, E> {
                Ok(Id(Some(Value::from(n))))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Id, E> {
                Ok(Id(serde_json::Number::from_f64(n).map(Value::Number)))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Id, E> {
                Ok(Id(Some(Value::String(s.to_owned()))))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Id, E> {
                Ok(Id(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Id, A::Error> {
                SkipVisitor.visit_seq(seq).map(|_| Id(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Id, A::Error> {
                SkipVisitor.visit_map(map).map(|_| Id(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Any JSON value, read through (the reader still checks every byte of it,
/// as it does for a `Value`) and kept nowhere.
struct Skip;

impl<'de> serde::Deserialize<'de> for Skip {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

/// A map key read through, as Value reads its keys.
struct SkipKey;

impl<'de> serde::Deserialize<'de> for SkipKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SkipKey, D::Error> {
        d.deserialize_str(SkipVisitor).map(|_| SkipKey)
    }
}

struct SkipVisitor;

impl<'de> serde::de::Visitor<'de> for SkipVisitor {
    type Value = Skip;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_key::<SkipKey>()?.is_some() {
            map.next_value::<Skip>()?;
        }
        Ok(Skip)
    }
    scalars!(Skip);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ClientJsonRpcMessage, ClientRequest};

    #[test]
    fn a_text_answer_is_the_line_rmcp_writes() {
        use crate::tool::ToolResult;
        let outputs = [
            String::new(),
            "plain".into(),
            "quotes \" and \\ backslash, \n newline, \t tab, \u{1} \u{1f} \u{7f}".into(),
            "unicode: é ü 漢字 😀 \u{2028} \u{2029}".into(),
            "</script> & <b> '".into(),
            "x".repeat(10_000),
        ];
        let ids = [
            RequestId::Number(0),
            RequestId::Number(-7),
            RequestId::Number(i64::MAX),
            RequestId::String("a\"b\\c".into()),
            RequestId::String("".into()),
        ];
        for output in &outputs {
            for is_error in [false, true] {
                for id in &ids {
                    let result = if is_error {
                        ToolResult::error(output.clone())
                    } else {
                        ToolResult::ok(output.clone())
                    };
                    let line = text_answer_line(id, &result);
                    let typed = serde_json::to_vec(&call_answer(
                        Ok(super::super::call_result(result)),
                        id.clone(),
                    ))
                    .ok();
                    assert!(line.is_some());
                    assert_eq!(line, typed, "{output:?} {is_error} {id:?}");
                }
            }
        }
        // A result with parts is not one text line.
        let with_parts = ToolResult {
            parts: vec![crate::parts::Part {
                kind: crate::parts::PartKind::Text,
                text: Some("more".into()),
                mime_type: None,
                data: None,
                url: None,
                name: None,
            }]
            .into_boxed_slice(),
            ..ToolResult::ok("out")
        };
        assert!(text_answer_line(&RequestId::Number(1), &with_parts).is_none());
    }

    #[test]
    fn a_list_reads_as_rmcp_reads_it() {
        for line in [
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":"l","method":"tools/list","params":{}}"#,
        ] {
            let Some(Plain::List { id }) = read(line.as_bytes()) else {
                panic!("not read as a list: {line}");
            };
            let full = serde_json::from_slice::<ClientJsonRpcMessage>(line.as_bytes());
            let Ok(ClientJsonRpcMessage::Request(req)) = full else {
                panic!("rmcp reads no request: {line}");
            };
            assert!(
                matches!(req.request, ClientRequest::ListToolsRequest(_)),
                "{line}"
            );
            assert_eq!(req.id, id, "{line}");
        }
        // A cursor, `_meta`, null params, call params: rmcp's.
        for line in [
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"c"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":null}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/list"}"#,
            // Read from arrays, fields in order, by a derived struct.
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[]}"#,
            r#"["2.0",3,"tools/list"]"#,
        ] {
            assert!(read(line.as_bytes()).is_none(), "{line}");
        }
    }

    /// The one-pass refusal answers every text as the read of a whole
    /// `Value` does, word for word: the parse errors (the same reader, the
    /// same depth limit, UTF-8 and escapes checked in skipped strings and
    /// keys), the ids kept, notifications unanswered, duplicate keys.
    #[test]
    fn the_one_pass_refusal_answers_as_the_whole_read() {
        let err = serde_json::from_str::<Value>("{").expect_err("an error to quote");
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let deep_map = |n: usize| format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
        let mut texts: Vec<Vec<u8>> = [
            "", " ", "{", "[", "]", "[1,", "[1 2]", "{bad", "nul", "tru", "01", "1.", "-",
            "1e400", "[1e400]", "[-1e400]", "[123456789012345678901234567890]",
            "[1] x", "{} {}", "\"\\x\"", "[\"\\ud800\"]", "[\"\\u12\"]",
            "[{\"id\":1}", "{\"a\" 1}", "{1:2}", "{\"a\":1,}", "[1,]",
            "[]", " [ ] ", "[[]]", "[0]", "[0,0,0]", "[null,true,\"s\",1.5,{}]",
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"n"},{"id":"b","method":"ping"}]"#,
            r#"[{"method":"n"},{"method":"m","params":[1,2]}]"#,
            r#"[{"id":null,"method":"x"},{"id":true},{"id":[1]},{"id":{"a":1}},{"id":1.5},{"id":-7},{"id":18446744073709551615}]"#,
            r#"[{"id":1,"id":"two"},{"id":"one","id":null},{"id":1,"id":{"x":[]}}]"#,
            r#"[{"method":1,"id":2},{"method":null}]"#,
            r#"[{"id":"\u00e9\ud83d\ude00","x":{"y":[{"z":"\n"}]}}]"#,
            r#"{"jsonrpc":"2.0","id":4,"nethod":"x"}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":5}"#,
            r#"{"id":"s"}"#, "{}", "5", "\"str\"", "null", "true",
            r#"{"id":1,"$serde_json::private::RawValue":2}"#,
            r#"[{"$serde_json::private::RawValue":"x"}]"#,
        ]
        .iter()
        .map(|t| t.as_bytes().to_vec())
        .collect();
        texts.push(b"[\"\xff\"]".to_vec());
        texts.push(b"[{\"id\":\"\xc3\xa9\",\"k\xff\":1}]".to_vec());
        texts.push(b"{\"\xff\":1}".to_vec());
        for n in [126, 127, 128, 129, 5000] {
            texts.push(deep(n).into_bytes());
            texts.push(format!("[{}]", deep_map(n)).into_bytes());
            texts.push(format!("[{{\"id\":{}}}]", deep(n)).into_bytes());
        }
        let mut gen = crate::test_json::Gen(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let mut t = b"[".to_vec();
            for i in 0..gen.below(5) {
                if i > 0 {
                    t.push(b',');
                }
                t.extend_from_slice(&gen.value(0));
            }
            t.push(b']');
            texts.push(t);
            texts.push(gen.value(0));
        }
        for batch in [1024, 1025, 3000] {
            texts.push(format!("[{}]", vec!["{}"; batch].join(",")).into_bytes());
            texts.push(format!("[{}]", vec![r#"{"method":"n"}"#; batch].join(",")).into_bytes());
        }
        for text in &texts {
            let lean = refuse(text, &err);
            let whole = reject_whole(text, &err);
            assert_eq!(
                lean.as_deref().map(String::from_utf8_lossy),
                whole.as_deref().map(String::from_utf8_lossy),
                "{}",
                String::from_utf8_lossy(&text[..text.len().min(300)])
            );
        }
    }

    /// A batch gets one answer per request up to BATCH_ANSWERS, and one
    /// error saying how many it held past that.
    #[test]
    fn a_batch_past_the_answer_cap_gets_one_error() {
        let cap = crate::limits::BATCH_ANSWERS;
        let batch = |n: usize| format!("[{}]", vec!["0"; n].join(","));
        let answers = reject_batch(batch(cap).as_bytes()).expect("an answer");
        let answers: Value = serde_json::from_slice(&answers).expect("JSON");
        assert_eq!(answers.as_array().map(Vec::len), Some(cap));
        let one = reject_batch(batch(cap + 1).as_bytes()).expect("an answer");
        let one: Value = serde_json::from_slice(&one).expect("JSON");
        assert_eq!(one["id"], Value::Null);
        assert_eq!(one["error"]["code"], INVALID_REQUEST);
        assert_eq!(
            one["error"]["message"],
            format!(
                "invalid request: a batch of {} requests, answered as one: batches are not \
                 supported (MCP has no JSON-RPC batches since 2025-06-18); send each request on \
                 its own",
                cap + 1
            )
        );
        // Notifications get no answer, so they do not count.
        let quiet = format!("[{},0]", vec![r#"{"method":"n"}"#; cap + 5].join(","));
        let quiet: Value =
            serde_json::from_slice(&reject_batch(quiet.as_bytes()).expect("an answer"))
                .expect("JSON");
        assert_eq!(quiet.as_array().map(Vec::len), Some(1));
        assert!(is_batch(b" \n[1]") && !is_batch(b"{}") && !is_batch(b"") && !is_batch(b"x["));
    }
}
