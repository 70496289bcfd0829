//! Text that is no message, on the served side: the JSON-RPC errors the
//! served toolkit answers a stdio line or an HTTP body with when rmcp's
//! parse refuses it (and a batch, which comes here unparsed), read in one
//! pass that never builds a tree of the text (issue 25 M2). `plain.rs`
//! names these for its callers; `plain_tests.rs` compares the one pass with
//! the read of a whole `Value`.

use super::onepass::Checked;
use serde_json::Value;

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

pub(super) fn refuse(text: &[u8], err: &dyn std::fmt::Display) -> Option<Vec<u8>> {
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
pub(super) fn reject_whole(text: &[u8], err: &dyn std::fmt::Display) -> Option<Vec<u8>> {
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
                    map.next_value::<Checked>()?;
                }
                Key::Other => {
                    map.next_value::<Checked>()?;
                }
            }
        }
        Ok(item)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Item, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
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
                Checked.visit_seq(seq).map(|_| Id(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Id, A::Error> {
                Checked.visit_map(map).map(|_| Id(None))
            }
        }
        d.deserialize_any(V)
    }
}
