//! The JSON tree the translator works on: parsed straight from JSON text into
//! one arena per call ([`bumpalo::Bump`]), strings borrowed from the text
//! wherever they hold no escape. Nodes are `Copy` and need no drop, so
//! passing a subtree through (a tool's schema, a message) copies a reference,
//! not the subtree, and a whole call frees its JSON in one go.
//!
//! It reads and writes exactly what `serde_json::Value` with `preserve_order`
//! does: numbers go through the same parser and printer, objects keep their
//! key order, and a key given twice keeps its first position and its last
//! value. Parse errors are serde_json's own.
//!
//! A request's tool schemas (`tools[].function.parameters`), the bulk of
//! most requests and copied as they are by three styles of four, are
//! checked but not built when their text is already the writer's
//! ([`Deferred`]); they are read when something looks inside.

use crate::json;
use bumpalo::collections::{String as BString, Vec as BVec};
use bumpalo::Bump;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Number, Value};
use std::collections::HashMap;
use std::fmt;

// ---------------------------------------------------------------------------
// readers the dialects share
// ---------------------------------------------------------------------------

/// A value Clojure would treat as true: anything but `null` and `false`.
pub(crate) fn truthy(v: Option<Node>) -> bool {
    !matches!(v, None | Some(Node::Null) | Some(Node::Bool(false)))
}

/// The display text of a value that may be missing (missing reads as "").
pub(crate) fn text_of<'a>(bump: &'a Bump, v: Option<Node<'a>>) -> &'a str {
    v.map_or("", |v| v.display(bump))
}

/// Whether a value displays as "": missing, null or the empty string (any
/// other value displays as its non-empty JSON spelling).
pub(crate) fn displays_empty(v: Option<Node>) -> bool {
    matches!(v, None | Some(Node::Null) | Some(Node::Str("")))
}

/// `v` when it is a string. Comparing a value's display text with a
/// keyword is the same as comparing the string itself, since no other
/// value displays as a bare word.
pub(crate) fn str_of<'a>(v: Option<Node<'a>>) -> &'a str {
    v.and_then(Node::as_str).unwrap_or("")
}

/// A JSON number as serde_json reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    /// 0 and above.
    Pos(u64),
    /// Below 0.
    Neg(i64),
    Float(f64),
}

impl Num {
    pub fn as_u64(self) -> Option<u64> {
        match self {
            Num::Pos(n) => Some(n),
            _ => None,
        }
    }

    pub fn as_f64(self) -> f64 {
        match self {
            Num::Pos(n) => n as f64,
            Num::Neg(n) => n as f64,
            Num::Float(f) => f,
        }
    }

    fn of(n: &Number) -> Num {
        if let Some(u) = n.as_u64() {
            Num::Pos(u)
        } else if let Some(i) = n.as_i64() {
            Num::Neg(i)
        } else {
            Num::Float(n.as_f64().unwrap_or(0.0))
        }
    }

    fn to_number(self) -> Number {
        match self {
            Num::Pos(n) => Number::from(n),
            Num::Neg(n) => Number::from(n),
            // Parsed floats are finite; 0 stands in for the impossible.
            Num::Float(f) => Number::from_f64(f).unwrap_or_else(|| Number::from(0)),
        }
    }
}

/// One JSON value in an arena.
#[derive(Debug, Clone, Copy)]
pub enum Node<'a> {
    Null,
    Bool(bool),
    Number(Num),
    Str(&'a str),
    Array(&'a [Node<'a>]),
    Object(&'a [(&'a str, Node<'a>)]),
    /// An object whose text was checked but not yet read: see [`Deferred`].
    /// It answers every question as the object read from its text does.
    Deferred(&'a Deferred<'a>),
}

/// An object [`parse_source`] left as its text: a tool's `parameters`,
/// which most bodies copy as they are. Its text is exactly what the writer
/// writes for it (compact, no escape, no repeated key, only plain
/// integers), so it is written by copying the text, and read into the arena
/// only when something looks inside it — each time it does (no cache: a
/// cell here would tie [`Node`]'s lifetime down; the one reader that looks
/// inside, Gemini's schema cleaning, reads each schema once).
pub struct Deferred<'a> {
    text: &'a str,
    bump: &'a Bump,
}

impl<'a> Deferred<'a> {
    /// `self[key]`, read from its text (out of line: [`Node::get`] stays
    /// small enough to inline where it looks up a constant key).
    #[cold]
    #[inline(never)]
    fn get(&self, key: &str) -> Option<Node<'a>> {
        self.node().get(key)
    }

    /// The object, read from its text.
    pub fn node(&self) -> Node<'a> {
        // The text was checked to be one the fast reader reads in full, so
        // the fallback never shows; it keeps a reader's slip from panicking.
        parse(self.bump, self.text).unwrap_or(EMPTY_OBJECT)
    }
}

impl fmt::Debug for Deferred<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_tuple("Deferred").field(&self.text).finish()
    }
}

/// `{}`.
pub const EMPTY_OBJECT: Node<'static> = Node::Object(&[]);

impl<'a> Node<'a> {
    /// `self[key]` of an object; `None` for a missing key or a non-object.
    pub fn get(self, key: &str) -> Option<Node<'a>> {
        match self {
            Node::Object(entries) => entries.iter().find(|(k, _)| *k == key).map(|(_, v)| *v),
            Node::Deferred(d) => d.get(key),
            _ => None,
        }
    }

    pub fn as_str(self) -> Option<&'a str> {
        match self {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(self) -> Option<&'a [Node<'a>]> {
        match self {
            Node::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn is_object(self) -> bool {
        matches!(self, Node::Object(_) | Node::Deferred(_))
    }

    /// The node with a [`Deferred`] object read: for a caller that matches
    /// on the variants itself.
    pub fn resolved(self) -> Node<'a> {
        match self {
            Node::Deferred(d) => d.node(),
            other => other,
        }
    }

    pub fn is_null(self) -> bool {
        matches!(self, Node::Null)
    }

    /// What a validation message calls this kind of value (as
    /// [`crate::json::type_name`]).
    pub fn type_name(self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::Number(_) => "a number",
            Node::Str(_) => "a string",
            Node::Array(_) => "an array",
            Node::Object(_) | Node::Deferred(_) => "an object",
        }
    }

    /// The value as the host language's `str` prints it (as
    /// [`crate::json::display_string`]): a string verbatim, null as "",
    /// anything else as compact JSON.
    pub fn display(self, bump: &'a Bump) -> &'a str {
        match self {
            Node::Null => "",
            Node::Str(s) => s,
            other => other.encode_in(bump),
        }
    }

    /// Compact JSON text of the value, kept in the arena.
    pub fn encode_in(self, bump: &'a Bump) -> &'a str {
        let text = self.to_vec();
        // Always UTF-8: encoding valid strings gives valid UTF-8.
        bump.alloc_str(std::str::from_utf8(&text).unwrap_or(""))
    }

    /// Compact JSON text of the value, byte for byte what serde_json writes
    /// for the same `Value`.
    pub fn to_vec(self) -> Vec<u8> {
        self.to_vec_from(&[], 256)
    }

    /// [`Node::to_vec`] for a tree parsed (in part) from `sources`: their
    /// strings are copied without an escape scan, and an object or array
    /// they read back exactly (see [`Source`]) is copied as its text.
    /// `capacity` is a guess at the size of the output.
    pub fn to_vec_from(self, sources: &[Source], capacity: usize) -> Vec<u8> {
        let mut w = Writer {
            out: Vec::with_capacity(capacity),
            sources,
            written: [(0, 0, 0, 0); WRITTEN_SLOTS],
        };
        w.node(self);
        w.out
    }

    /// The same value as a `serde_json::Value`.
    pub fn to_value(self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(b),
            Node::Number(n) => Value::Number(n.to_number()),
            Node::Str(s) => Value::String(s.to_string()),
            Node::Array(items) => Value::Array(items.iter().map(|v| v.to_value()).collect()),
            Node::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_value()))
                    .collect(),
            ),
            Node::Deferred(d) => d.node().to_value(),
        }
    }
}

impl<'a> crate::json::View<'a> for Node<'a> {
    type Items = std::iter::Copied<std::slice::Iter<'a, Node<'a>>>;

    fn get(self, key: &str) -> Option<Self> {
        Node::get(self, key)
    }

    fn items(self) -> Option<Self::Items> {
        Node::as_array(self).map(|items| items.iter().copied())
    }

    fn as_str(self) -> Option<&'a str> {
        Node::as_str(self)
    }

    fn is_object(self) -> bool {
        Node::is_object(self)
    }

    fn is_null(self) -> bool {
        Node::is_null(self)
    }

    fn count(self) -> Option<u64> {
        match self {
            Node::Number(Num::Pos(n)) => Some(n),
            Node::Number(Num::Float(f)) if f.is_finite() && f >= 0.0 => Some(f as u64),
            _ => None,
        }
    }
}

/// A text nodes were parsed from, and where the fast reader found objects
/// and arrays whose text is already exactly what the writer would write for
/// them: no whitespace, no repeated key, only strings without escapes,
/// integers read as written (no fraction, exponent or `-0`), literals and
/// containers of the same kind. The writer copies such a container's text
/// instead of walking it.
///
/// A container is known by the arena address and length of its slice of
/// members. That address is its own for as long as the arena lives, which
/// the borrow of the arena in `'a` makes at least as long as the `Source`:
/// the slices are allocated once and never freed or written again, so no
/// other slice, from this arena or any other, can share address and length
/// with one while the `Source` exists. Empty containers are not recorded
/// (an empty slice has no address of its own).
#[derive(Debug, Clone, Default)]
pub struct Source<'a> {
    text: &'a str,
    /// By slice address, ascending.
    spans: Vec<Span>,
}

#[derive(Debug, Clone, Copy)]
struct Span {
    addr: usize,
    /// Members, with [`OBJECT_BIT`] set for an object.
    len: usize,
    start: usize,
    end: usize,
}

const OBJECT_BIT: usize = 1 << (usize::BITS - 1);

impl<'a> From<&'a str> for Source<'a> {
    /// The text alone: its strings are known, no container is.
    fn from(text: &'a str) -> Self {
        Source {
            text,
            spans: Vec::new(),
        }
    }
}

impl<'a> Source<'a> {
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// The text of the container whose members' slice starts at `addr` and
    /// holds `len` members (`len` with [`OBJECT_BIT`] for an object), if
    /// it was recorded.
    #[inline]
    fn span(&self, addr: usize, len: usize) -> Option<&'a [u8]> {
        let (first, last) = (self.spans.first()?, self.spans.last()?);
        if addr < first.addr || addr > last.addr {
            return None;
        }
        let at = self.spans.binary_search_by_key(&addr, |s| s.addr).ok()?;
        let span = self.spans[at];
        if span.len != len {
            return None;
        }
        self.text.as_bytes().get(span.start..span.end)
    }
}

/// [`parse`], also giving the text as a [`Source`] for
/// [`Node::to_vec_from`], with the containers the fast reader found
/// written exactly as the writer would write them (none when the text went
/// to serde_json).
pub fn parse_source<'a>(
    bump: &'a Bump,
    text: &'a str,
) -> Result<(Node<'a>, Source<'a>), serde_json::Error> {
    let mut fast = Fast::new(bump, text);
    fast.record = true;
    fast.at = AT_REQUEST;
    // Room up front for what a request of this size holds (a container
    // about every 40 bytes), so the scratch vectors do not grow step by
    // step while it is read.
    fast.spans.reserve(text.len() / 40);
    fast.entries.reserve(64);
    fast.items.reserve(32);
    if let Some(node) = fast.document() {
        let mut spans = fast.spans;
        // The arena hands out addresses downward, so the spans usually come
        // in descending order already.
        spans.reverse();
        if !spans.windows(2).all(|w| w[0].addr < w[1].addr) {
            spans.sort_unstable_by_key(|s| s.addr);
        }
        return Ok((node, Source { text, spans }));
    }
    Ok((parse_serde(bump, text)?, Source::from(text)))
}

/// Writes nodes as compact JSON: strings escaped as serde_json escapes them
/// ([`crate::json::write_escaped`]), numbers through the printers serde_json
/// uses (itoa, and serde_json's own for floats).
struct Writer<'s> {
    out: Vec<u8>,
    /// Texts the nodes were parsed from. A string lying inside one was
    /// borrowed from it, so it holds no escape and no control character
    /// (JSON text cannot) and is copied as it is.
    sources: &'s [Source<'s>],
    /// Strings from no source written lately (the builder's own keys and
    /// words, mostly), by address: `(address, length with COLON_BIT when
    /// written as a key, out[start..end] their literal)`. Each string lives
    /// unchanged for the whole write, and what is written is never changed,
    /// so a string met again is copied from its first literal, with no
    /// escape scan. The address 0 of an empty slot is no string's.
    written: [(usize, usize, usize, usize); WRITTEN_SLOTS],
}

/// 32 sets of two (the set from the top five bits of a hash of the
/// address).
const WRITTEN_SLOTS: usize = 64;
const COLON_BIT: usize = 1 << (usize::BITS - 1);

impl<'s> Writer<'s> {
    /// Where `s` lies in a source text, if it does: its offset and that text.
    #[inline]
    fn source_of(&self, s: &str) -> Option<(usize, &'s [u8])> {
        let start = s.as_ptr() as usize;
        self.sources.iter().find_map(|src| {
            let src = src.text;
            let at = start.wrapping_sub(src.as_ptr() as usize);
            (at <= src.len() && s.len() <= src.len() - at).then_some((at, src.as_bytes()))
        })
    }

    /// The text of a recorded container, if it is one.
    #[inline]
    fn verbatim(&self, addr: usize, len: usize) -> Option<&'s [u8]> {
        self.sources.iter().find_map(|src| src.span(addr, len))
    }

    #[inline]
    fn string(&mut self, s: &str) {
        self.string_then(s, false)
    }

    /// `s` as a string literal, followed by a colon when `colon`: inline,
    /// what copies a literal; the rest in [`Writer::string_slow`].
    #[inline(always)]
    fn string_then(&mut self, s: &str, colon: bool) {
        if let Some((at, src)) = self.source_of(s) {
            // Parsed strings lie between their quotes in the text: the
            // literal is copied whole, quotes and all, and so is the colon
            // after a key when the text has it right there.
            let close = at + s.len();
            let end = close + 1 + usize::from(colon);
            if let Some(open) = at.checked_sub(1) {
                if let Some([b'"', .., b'"']) = src.get(open..=close) {
                    if !colon || src.get(close + 1) == Some(&b':') {
                        return self.copy(src, open, end);
                    }
                }
            }
            return self.string_slow(s, colon, None);
        }
        let addr = s.as_ptr() as usize;
        let len = s.len() | if colon { COLON_BIT } else { 0 };
        // Two ways per set: the later string is looked at first, and a new
        // one pushes the older of the two out.
        let set = (addr.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59) * 2;
        for way in [set, set + 1] {
            let (seen_addr, seen_len, at, end) = self.written[way];
            if seen_addr == addr && seen_len == len {
                return self.copy_within(at, end);
            }
        }
        self.string_slow(s, colon, Some(set))
    }

    /// The rest of [`Writer::string_then`], out of line: a parsed string
    /// whose literal is not there to copy (`set` `None`), or a string from
    /// no source met for the first time lately, remembered in `set`.
    #[inline(never)]
    fn string_slow(&mut self, s: &str, colon: bool, set: Option<usize>) {
        let at = self.out.len();
        if set.is_none() || needs_no_escape(s.as_bytes()) {
            self.plain(s);
        } else {
            json::write_escaped(&mut self.out, s);
        }
        if colon {
            self.out.push(b':');
        }
        if let Some(set) = set {
            let len = s.len() | if colon { COLON_BIT } else { 0 };
            self.written[set + 1] = self.written[set];
            self.written[set] = (s.as_ptr() as usize, len, at, self.out.len());
        }
    }

    /// Appends `out[from..to]`, as [`Writer::copy`] does. Always inlined:
    /// a call of its own (which code generation chose after unrelated
    /// changes) made its short copy a call to copy memory, +5% on a
    /// conversion.
    #[inline(always)]
    fn copy_within(&mut self, from: usize, to: usize) {
        const WIDE: usize = 32;
        let (len, n) = (self.out.len(), to - from);
        if n <= WIDE && from + WIDE <= len {
            // Through a fixed 32-byte block, which compiles to two vector
            // moves (a range of `out` itself went to a call to copy memory).
            let mut block = [0u8; WIDE];
            block.copy_from_slice(&self.out[from..from + WIDE]);
            self.out.extend_from_slice(&block);
            self.out.truncate(len + n);
        } else {
            self.out.extend_from_within(from..to);
        }
    }

    /// Appends `src[from..to]`; a short piece through one copy of a fixed
    /// 32 bytes, cut back to its length, rather than a call to copy memory.
    #[inline]
    fn copy(&mut self, src: &[u8], from: usize, to: usize) {
        const WIDE: usize = 32;
        let n = to - from;
        if n <= WIDE {
            if let Some(block) = src.get(from..from + WIDE) {
                if let Ok(block) = <&[u8; WIDE]>::try_from(block) {
                    let len = self.out.len();
                    self.out.extend_from_slice(block);
                    self.out.truncate(len + n);
                    return;
                }
            }
        }
        self.out.extend_from_slice(&src[from..to]);
    }

    /// `s` between quotes, as it is.
    #[inline]
    fn plain(&mut self, s: &str) {
        self.out.reserve(s.len() + 2);
        self.out.push(b'"');
        self.out.extend_from_slice(s.as_bytes());
        self.out.push(b'"');
    }

    fn node(&mut self, v: Node) {
        // Plain branches in order of how often each kind turns up, which
        // predict better than the jump table of a match.
        if let Node::Str(s) = v {
            self.string(s)
        } else if let Node::Object(entries) = v {
            self.object(entries)
        } else if let Node::Array(items) = v {
            self.array(items)
        } else {
            self.scalar(v)
        }
    }

    fn object(&mut self, entries: &[(&str, Node)]) {
        if !entries.is_empty() {
            let len = entries.len() | OBJECT_BIT;
            if let Some(text) = self.verbatim(entries.as_ptr() as usize, len) {
                return self.out.extend_from_slice(text);
            }
        }
        self.out.push(b'{');
        for (i, (k, item)) in entries.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.string_then(k, true);
            // A string member written from here: no call through `node`.
            if let Node::Str(v) = item {
                self.string(v)
            } else {
                self.node(*item)
            }
        }
        self.out.push(b'}');
    }

    fn array(&mut self, items: &[Node]) {
        if !items.is_empty() {
            if let Some(text) = self.verbatim(items.as_ptr() as usize, items.len()) {
                return self.out.extend_from_slice(text);
            }
        }
        self.out.push(b'[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.node(*item);
        }
        self.out.push(b']');
    }

    fn scalar(&mut self, v: Node) {
        match v {
            Node::Null => self.out.extend_from_slice(b"null"),
            Node::Bool(true) => self.out.extend_from_slice(b"true"),
            Node::Bool(false) => self.out.extend_from_slice(b"false"),
            Node::Number(Num::Pos(n)) => self
                .out
                .extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
            Node::Number(Num::Neg(n)) => self
                .out
                .extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
            Node::Number(n @ Num::Float(_)) => self
                .out
                .extend_from_slice(n.to_number().to_string().as_bytes()),
            Node::Str(s) => self.string(s),
            Node::Array(items) => self.array(items),
            Node::Object(entries) => self.object(entries),
            // Its text is what this writer writes for it.
            Node::Deferred(d) => self.out.extend_from_slice(d.text.as_bytes()),
        }
    }
}

impl Serialize for Node<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Node::Null => s.serialize_unit(),
            Node::Bool(b) => s.serialize_bool(b),
            Node::Number(n) => n.to_number().serialize(s),
            Node::Str(t) => s.serialize_str(t),
            Node::Array(items) => s.collect_seq(items),
            Node::Object(entries) => {
                let mut m = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
            Node::Deferred(d) => d.node().serialize(s),
        }
    }
}

/// Parses JSON text into the arena; errors are serde_json's, trailing
/// characters included.
///
/// Text the fast reader below takes in full is read by it alone; anything
/// else (an error of any kind, a number other than a plain integer, a `\u`
/// escape of half a surrogate pair, nesting deeper than `FAST_DEPTH`) goes
/// back to serde_json,
/// so what is accepted, what each value reads as and every error message
/// stay serde_json's.
pub fn parse<'a>(bump: &'a Bump, text: &'a str) -> Result<Node<'a>, serde_json::Error> {
    if let Some(node) = Fast::new(bump, text).document() {
        return Ok(node);
    }
    parse_serde(bump, text)
}

/// [`parse`] through serde_json's deserializer alone.
pub fn parse_serde<'a>(bump: &'a Bump, text: &'a str) -> Result<Node<'a>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let node = Seed(bump).deserialize(&mut de)?;
    de.end()?;
    Ok(node)
}

/// [`parse`] for bytes, which must be UTF-8 inside strings (serde_json's
/// check and message).
pub fn parse_slice<'a>(bump: &'a Bump, bytes: &'a [u8]) -> Result<Node<'a>, serde_json::Error> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return parse(bump, text);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let node = Seed(bump).deserialize(&mut de)?;
    de.end()?;
    Ok(node)
}

/// Encoded JSON as a `String`; encoding valid strings always gives UTF-8.
pub fn into_string(json: Vec<u8>) -> String {
    String::from_utf8(json).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The arena copy of a `Value`, borrowing its strings.
pub fn from_value<'a>(bump: &'a Bump, v: &'a Value) -> Node<'a> {
    match v {
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Number(n) => Node::Number(Num::of(n)),
        Value::String(s) => Node::Str(s),
        Value::Array(items) => {
            Node::Array(bump.alloc_slice_fill_iter(items.iter().map(|item| from_value(bump, item))))
        }
        Value::Object(map) => Node::Object(
            bump.alloc_slice_fill_iter(
                map.iter()
                    .map(|(k, item)| (k.as_str(), from_value(bump, item))),
            ),
        ),
    }
}

/// The arena copy of a `Value` that does not outlive the call: its keys and
/// strings are copied into the arena (one copy each), so the `Value` may be
/// dropped at once. The same tree `parse(&v.to_string())` gives, without the
/// text in between.
pub fn copy_value<'a>(bump: &'a Bump, v: &Value) -> Node<'a> {
    match v {
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Number(n) => Node::Number(Num::of(n)),
        Value::String(s) => Node::Str(bump.alloc_str(s)),
        Value::Array(items) => {
            Node::Array(bump.alloc_slice_fill_iter(items.iter().map(|item| copy_value(bump, item))))
        }
        Value::Object(map) => Node::Object(
            bump.alloc_slice_fill_iter(
                map.iter()
                    .map(|(k, item)| (&*bump.alloc_str(k), copy_value(bump, item))),
            ),
        ),
    }
}

/// An object under construction: `insert` replaces the value of a key
/// already present in place, as a `preserve_order` map does.
pub struct ObjectBuilder<'a> {
    entries: BVec<'a, (&'a str, Node<'a>)>,
    /// Key positions, built once the object grows past a linear scan.
    index: Option<HashMap<&'a str, usize>>,
}

/// Past this many keys, repeated keys are found through a hash index.
const LINEAR_KEYS: usize = 16;

impl<'a> ObjectBuilder<'a> {
    pub fn new(bump: &'a Bump) -> Self {
        Self::with_capacity(bump, 4)
    }

    pub fn with_capacity(bump: &'a Bump, n: usize) -> Self {
        ObjectBuilder {
            entries: BVec::with_capacity_in(n, bump),
            index: None,
        }
    }

    /// Adds a key known not to be present yet (the builder's own keys).
    pub fn push(&mut self, key: &'a str, value: Node<'a>) {
        if let Some(index) = &mut self.index {
            index.insert(key, self.entries.len());
        }
        self.entries.push((key, value));
    }

    /// Adds or replaces `key`.
    pub fn insert(&mut self, key: &'a str, value: Node<'a>) {
        let at = match &mut self.index {
            Some(index) => index.get(key).copied(),
            None => self.entries.iter().position(|(k, _)| same_key(k, key)),
        };
        match at {
            Some(i) => self.entries[i].1 = value,
            None => {
                self.push(key, value);
                if self.index.is_none() && self.entries.len() > LINEAR_KEYS {
                    self.index = Some(
                        self.entries
                            .iter()
                            .enumerate()
                            .map(|(i, (k, _))| (*k, i))
                            .collect(),
                    );
                }
            }
        }
    }

    pub fn build(self) -> Node<'a> {
        Node::Object(self.entries.into_bump_slice())
    }
}

/// One of 64 bits for a key, picked by its length, first and last byte:
/// two keys with different bits are different keys.
#[inline]
fn key_bit(b: &[u8]) -> u64 {
    let (first, last) = (b.first().copied(), b.last().copied());
    let h =
        b.len() as u64 | u64::from(first.unwrap_or(0)) << 16 | u64::from(last.unwrap_or(0)) << 24;
    1u64 << (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58)
}

/// Whether no key of `entries` is given twice. Each key sets its
/// [`key_bit`]; only when two keys pick the same bit are the keys compared.
fn distinct_keys(entries: &[(&str, Node)]) -> bool {
    let mut seen = 0u64;
    let mut clash = 0u64;
    for (k, _) in entries {
        let b = key_bit(k.as_bytes());
        clash |= seen & b;
        seen |= b;
    }
    if clash == 0 {
        return true;
    }
    if entries.len() <= LINEAR_KEYS {
        return entries
            .iter()
            .enumerate()
            .all(|(i, (k, _))| !entries[..i].iter().any(|(j, _)| same_key(j, k)));
    }
    let mut keys = std::collections::HashSet::with_capacity(entries.len());
    entries.iter().all(|(k, _)| keys.insert(*k))
}

/// `a == b`, deciding most unequal keys (by length or first byte) without
/// a call to compare memory.
#[inline]
fn same_key(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.as_bytes().first() == b.as_bytes().first() && a == b
}

/// An object of the given entries (their keys distinct).
pub fn object<'a>(bump: &'a Bump, entries: &[(&'a str, Node<'a>)]) -> Node<'a> {
    Node::Object(bump.alloc_slice_copy(entries))
}

/// The entries of an object whose key is one of `keys`, in their order
/// (a non-object is given back as it is).
pub fn only_keys<'a>(bump: &'a Bump, v: Node<'a>, keys: &[&str]) -> Node<'a> {
    match v {
        Node::Object(entries) => {
            let kept: Vec<(&'a str, Node<'a>)> = entries
                .iter()
                .filter(|(k, _)| keys.contains(k))
                .copied()
                .collect();
            object(bump, &kept)
        }
        other => other,
    }
}

/// `v[key]` when it is a whole number of 0 or more.
pub fn count_at(v: Node, key: &str) -> Option<u64> {
    match v.get(key) {
        Some(Node::Number(n)) => n.as_u64(),
        _ => None,
    }
}

/// An array of the given items.
pub fn array<'a>(items: BVec<'a, Node<'a>>) -> Node<'a> {
    Node::Array(items.into_bump_slice())
}

// ---------------------------------------------------------------------------
// parsing
// ---------------------------------------------------------------------------

#[derive(Clone, Copy)]
struct Seed<'a>(&'a Bump);

impl<'a> DeserializeSeed<'a> for Seed<'a> {
    type Value = Node<'a>;

    fn deserialize<D: Deserializer<'a>>(self, d: D) -> Result<Node<'a>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'a> Visitor<'a> for Seed<'a> {
    type Value = Node<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_unit<E>(self) -> Result<Node<'a>, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Node<'a>, E> {
        Ok(Node::Bool(b))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Node<'a>, E> {
        Ok(Node::Number(Num::Pos(n)))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Node<'a>, E> {
        Ok(Node::Number(if n >= 0 {
            Num::Pos(n as u64)
        } else {
            Num::Neg(n)
        }))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Node<'a>, E> {
        Ok(Node::Number(Num::Float(f)))
    }

    fn visit_borrowed_str<E>(self, s: &'a str) -> Result<Node<'a>, E> {
        Ok(Node::Str(s))
    }

    fn visit_str<E>(self, s: &str) -> Result<Node<'a>, E> {
        Ok(Node::Str(self.0.alloc_str(s)))
    }

    fn visit_seq<A: SeqAccess<'a>>(self, mut seq: A) -> Result<Node<'a>, A::Error> {
        let mut items = BVec::new_in(self.0);
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Node::Array(items.into_bump_slice()))
    }

    fn visit_map<A: MapAccess<'a>>(self, mut map: A) -> Result<Node<'a>, A::Error> {
        let mut obj = ObjectBuilder::new(self.0);
        while let Some(key) = map.next_key_seed(KeySeed(self.0))? {
            let value = map.next_value_seed(self)?;
            obj.insert(key, value);
        }
        Ok(obj.build())
    }
}

/// An object key, borrowed from the text when it holds no escape.
struct KeySeed<'a>(&'a Bump);

impl<'a> DeserializeSeed<'a> for KeySeed<'a> {
    type Value = &'a str;

    fn deserialize<D: Deserializer<'a>>(self, d: D) -> Result<&'a str, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'a> Visitor<'a> for KeySeed<'a> {
    type Value = &'a str;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E>(self, s: &'a str) -> Result<&'a str, E> {
        Ok(s)
    }

    fn visit_str<E>(self, s: &str) -> Result<&'a str, E> {
        Ok(self.0.alloc_str(s))
    }
}

// ---------------------------------------------------------------------------
// the fast reader
// ---------------------------------------------------------------------------

/// Nesting past this depth is left to serde_json (whose own limit is 128).
const FAST_DEPTH: u32 = 100;

/// 0x80 in the first byte of the little-endian word `w` that needs an
/// escape (below 0x20, `"` or `\`), 0 in every byte before it; the bytes
/// after it may be flagged too (a borrow runs on from a match), so only the
/// lowest set bit and whether any is set mean anything. Fewer steps than
/// [`json::escape_flags`], which is exact in every byte.
#[inline(always)]
fn first_escape(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    let below = w.wrapping_sub(ONES * 0x20) & !w;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x;
    (below | zero(quote) | zero(backslash)) & HIGH
}

/// Whether `s` can be written between quotes as it is: no byte below 0x20,
/// no quote, no backslash. Checked eight bytes at a time with no byte loop:
/// past 8 bytes the last word overlaps the one before it, and shorter text
/// is read as two overlapping halves (or, below 4 bytes, its first, middle
/// and last byte), the rest of the word filled with a plain letter.
#[inline]
fn needs_no_escape(s: &[u8]) -> bool {
    let n = s.len();
    let flags = if n >= 8 {
        let mut words = s.chunks_exact(8);
        let mut any = 0;
        for w in words.by_ref() {
            any |= first_escape(json::word(w));
        }
        if !words.remainder().is_empty() {
            any |= first_escape(json::word(&s[n - 8..]));
        }
        any
    } else if n >= 4 {
        let half = |b: &[u8]| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        first_escape(half(&s[..4]) | half(&s[n - 4..]) << 32)
    } else if n > 0 {
        let w = u64::from_le_bytes([s[0], s[n / 2], s[n - 1], b'a', b'a', b'a', b'a', b'a']);
        first_escape(w)
    } else {
        0
    };
    flags == 0
}

/// Past the plain text of a string from `b[i]`: the index of the first byte
/// that may end it (a quote, a backslash or a control character), found
/// sixteen bytes at a time, or eight near the end of the text; within the
/// last eight bytes it stops where it is, and the caller looks at that byte
/// itself. The one scan of the reader's strings ([`Fast::string`],
/// [`plain_string_end`]).
#[inline(always)]
fn past_plain(b: &[u8], mut i: usize) -> usize {
    loop {
        if let Some(Ok(block)) = b.get(i..i + 16).map(<&[u8; 16]>::try_from) {
            let stops = json::block_mask(block);
            if stops == 0 {
                i += 16;
                continue;
            }
            return i + stops.trailing_zeros() as usize;
        } else if let Some(w) = b.get(i..i + 8) {
            let flags = first_escape(json::word(w));
            if flags == 0 {
                i += 8;
                continue;
            }
            return i + (flags.trailing_zeros() / 8) as usize;
        }
        return i;
    }
}

/// The end (one past its closing quote) of the string whose opening quote
/// is `b[i]`, if it holds no escape and no control character.
#[inline(always)]
fn plain_string_end(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        i = past_plain(b, i);
        match *b.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' | 0..=0x1f => return None,
            _ => i += 1,
        }
    }
}

/// The end of the number at `b[i]` if it is one the fast reader reads as
/// written: an integer of at most 18 digits, not `-0`, with no fraction or
/// exponent.
#[inline]
fn plain_int_end(b: &[u8], start: usize) -> Option<usize> {
    let negative = b.get(start) == Some(&b'-');
    let digits = start + usize::from(negative);
    let mut i = digits;
    match *b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => {
            i += 1;
            while let Some(b'0'..=b'9') = b.get(i) {
                i += 1;
            }
        }
        _ => return None,
    }
    let plain = i - digits <= 18
        && !matches!(b.get(i), Some(b'.' | b'e' | b'E'))
        && !(negative && i - digits == 1 && b[digits] == b'0');
    plain.then_some(i)
}

/// How deep [`clean_object_end`] follows nesting before it gives the
/// object back to the reader.
const CLEAN_LEVELS: usize = 16;

/// The end of the object whose `{` is `b[start]` (read at nesting `depth`)
/// if its text is exactly what the writer writes for it: valid JSON with no
/// whitespace, no escape, no control character, no repeated key (checked by
/// [`key_bit`]: keys that merely share a bit count as repeated) and only
/// numbers [`plain_int_end`] takes, nested at most [`CLEAN_LEVELS`] deep.
/// `None` for anything else, which the reader then reads as it reads any
/// object; nothing is built either way.
fn clean_object_end(b: &[u8], start: usize, depth: u32) -> Option<usize> {
    let mut seen = [0u64; CLEAN_LEVELS];
    // Bit l set: the container open at level l is an object.
    let mut objects = 0u32;
    let mut level = 0usize;
    let mut i = start;
    // A key and its colon, at `i`, in the object open at `level - 1`.
    macro_rules! key {
        () => {{
            if b.get(i) != Some(&b'"') {
                return None;
            }
            let end = plain_string_end(b, i)?;
            let bit = key_bit(b.get(i + 1..end - 1)?);
            let seen = &mut seen[level - 1];
            if *seen & bit != 0 || b.get(end) != Some(&b':') {
                return None;
            }
            *seen |= bit;
            i = end + 1;
        }};
    }
    loop {
        // A value starts at `i`.
        match *b.get(i)? {
            open @ (b'{' | b'[') => {
                if level == CLEAN_LEVELS || depth as usize + level >= FAST_DEPTH as usize {
                    return None;
                }
                let object = open == b'{';
                objects = objects & !(1 << level) | u32::from(object) << level;
                seen[level] = 0;
                level += 1;
                i += 1;
                let close = if object { b'}' } else { b']' };
                if b.get(i) != Some(&close) {
                    if object {
                        key!();
                    }
                    continue;
                }
                i += 1;
                level -= 1;
            }
            b'"' => i = plain_string_end(b, i)?,
            b'-' | b'0'..=b'9' => i = plain_int_end(b, i)?,
            b't' if b[i..].starts_with(b"true") => i += 4,
            b'f' if b[i..].starts_with(b"false") => i += 5,
            b'n' if b[i..].starts_with(b"null") => i += 4,
            _ => return None,
        }
        // After a value: closing brackets, then a comma or the end.
        loop {
            if level == 0 {
                return Some(i);
            }
            let object = objects >> (level - 1) & 1 == 1;
            match *b.get(i)? {
                b',' => {
                    i += 1;
                    if object {
                        key!();
                    }
                    break;
                }
                b'}' if object => level -= 1,
                b']' if !object => level -= 1,
                _ => return None,
            }
            i += 1;
        }
    }
}

/// The text of a string literal's `body` (between its quotes), its escapes
/// decoded as serde_json decodes them; `None` for any escape that is not
/// one of JSON's or a `\u` escape that is half of a surrogate pair without
/// its other half, which serde_json then reads (and refuses) itself.
fn unescape<'a>(bump: &'a Bump, body: &str) -> Option<&'a str> {
    let hex4 = |digits: &[u8]| {
        digits.iter().try_fold(0u32, |n, &d| {
            let v = char::from(d).to_digit(16)?;
            Some(n << 4 | v)
        })
    };
    let bytes = body.as_bytes();
    // Every escape is longer than what it stands for.
    let mut out = BString::with_capacity_in(body.len(), bump);
    let (mut start, mut i) = (0, 0);
    while let Some(at) = crate::sys::bytes::find(b'\\', &bytes[i..]) {
        i += at;
        out.push_str(body.get(start..i)?);
        let c = match *bytes.get(i + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = hex4(bytes.get(i + 2..i + 6)?)?;
                i += 4;
                match high {
                    0xd800..=0xdbff => {
                        if bytes.get(i + 2..i + 4)? != b"\\u" {
                            return None;
                        }
                        let low = hex4(bytes.get(i + 4..i + 8)?)?;
                        if !(0xdc00..=0xdfff).contains(&low) {
                            return None;
                        }
                        i += 6;
                        char::from_u32(0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00))?
                    }
                    0xdc00..=0xdfff => return None,
                    _ => char::from_u32(high)?,
                }
            }
            _ => return None,
        };
        out.push(c);
        i += 2;
        start = i;
    }
    out.push_str(body.get(start..)?);
    Some(out.into_bump_str())
}

/// Reads the value at `$fast.i` and hands it to `$put`, each kind of value
/// in its own arm: a `Node` gathered from the arms into one variable and then
/// moved is copied piece by piece through the stack, and read back wider
/// than it was written, which stalls every move.
macro_rules! read_value {
    ($fast:ident, $put:expr) => {
        match $fast.peek()? {
            b'"' => {
                let s = $fast.string()?;
                ($put)(Node::Str(s))
            }
            b'{' => {
                let entries = $fast.object()?;
                ($put)(Node::Object(entries))
            }
            b'[' => {
                let items = $fast.array()?;
                ($put)(Node::Array(items))
            }
            b'-' | b'0'..=b'9' => {
                let n = $fast.number()?;
                ($put)(Node::Number(n))
            }
            b't' => {
                $fast.literal(b"true")?;
                ($put)(Node::Bool(true))
            }
            b'f' => {
                $fast.literal(b"false")?;
                ($put)(Node::Bool(false))
            }
            b'n' => {
                $fast.literal(b"null")?;
                ($put)(Node::Null)
            }
            b' ' | b'\n' | b'\t' | b'\r' => {
                // Whitespace before a value: skipped here, where a value
                // was expected, and never looked for ahead of one.
                $fast.ws();
                let v = $fast.value()?;
                ($put)(v)
            }
            _ => return None,
        }
    };
}

/// A single-pass reader for the JSON this library mostly sees: it builds the
/// tree straight into the arena and answers `None` for anything it does not
/// read exactly as serde_json would, which then reads the text instead.
struct Fast<'a> {
    bump: &'a Bump,
    text: &'a str,
    b: &'a [u8],
    i: usize,
    depth: u32,
    /// The entries of the objects being read, innermost last: an object's
    /// own start where it began, and its finished entries are copied into
    /// the arena in one piece (so no arena vector grows and is left behind).
    entries: Vec<(&'a str, Node<'a>)>,
    /// The same for the items of arrays.
    items: Vec<Node<'a>>,
    /// Whether to record the spans of containers written as the writer
    /// writes them (see [`Source`]), in `spans`.
    record: bool,
    spans: Vec<Span>,
    /// Counts what the writer would write otherwise than it was written:
    /// whitespace, an escape, a number other than a plain integer, a key
    /// given twice. A container is written as the writer writes it when
    /// the count is the same at its end as at its start.
    dirty: u64,
    /// Where the value about to be read sits on the way to a tool's
    /// `parameters` (one of the `AT_*` values; [`AT_NONE`] everywhere else,
    /// and always when nothing is deferred): see [`Deferred`].
    at: u8,
}

/// [`Fast::at`]: nowhere on the way to a tool's schema.
const AT_NONE: u8 = 0;
/// The request object itself.
const AT_REQUEST: u8 = 1;
/// Its `tools` array.
const AT_TOOLS: u8 = 2;
/// One of those tools.
const AT_TOOL: u8 = 3;
/// A tool's `function`, whose `parameters` object is deferred.
const AT_FUNCTION: u8 = 4;

impl<'a> Fast<'a> {
    fn new(bump: &'a Bump, text: &'a str) -> Self {
        Fast {
            bump,
            text,
            b: text.as_bytes(),
            i: 0,
            depth: 0,
            // Allocated when first used: most texts read here are small.
            entries: Vec::new(),
            items: Vec::new(),
            record: false,
            spans: Vec::new(),
            dirty: 0,
            at: AT_NONE,
        }
    }

    fn document(&mut self) -> Option<Node<'a>> {
        self.ws();
        let v = self.value()?;
        self.ws();
        (self.i == self.b.len()).then_some(v)
    }

    #[inline]
    fn ws(&mut self) {
        if let Some(b' ' | b'\n' | b'\t' | b'\r') = self.b.get(self.i) {
            self.dirty += 1;
            self.i += 1;
            while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.b.get(self.i) {
                self.i += 1;
            }
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn value(&mut self) -> Option<Node<'a>> {
        Some(read_value!(self, |v| v))
    }

    #[inline]
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.i..].starts_with(word).then(|| {
            self.i += word.len();
        })
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        self.i += 1;
        (self.depth <= FAST_DEPTH).then_some(())
    }

    /// After a member of an object or array: `Some(true)` past a comma (and
    /// the whitespace after it), `Some(false)` past the `close` bracket,
    /// `None` for anything else.
    #[inline]
    fn more(&mut self, close: u8) -> Option<bool> {
        let mut b = self.peek()?;
        if b != b',' && b != close {
            self.ws();
            b = self.peek()?;
        }
        self.i += 1;
        if b == b',' {
            Some(true)
        } else {
            (b == close).then_some(false)
        }
    }

    /// The byte at `self.i` once it is not whitespace, having skipped any:
    /// the caller has looked for the byte it expects first, so compact text
    /// never reaches here.
    #[inline(never)]
    fn past_ws(&mut self) -> Option<u8> {
        self.ws();
        self.peek()
    }

    #[inline(never)]
    fn object(&mut self) -> Option<&'a [(&'a str, Node<'a>)]> {
        let (open, dirty, here) = (self.i, self.dirty, self.at);
        self.enter()?;
        let mark = self.entries.len();
        let mut b = self.peek()?;
        if b != b'"' && b != b'}' {
            b = self.past_ws()?;
        }
        if b == b'}' {
            self.i += 1;
        } else {
            // Each member's whitespace (after the comma before it, around
            // its colon) is looked for only where the expected byte is not.
            loop {
                if self.peek()? != b'"' && self.past_ws()? != b'"' {
                    return None;
                }
                let key = self.string()?;
                if self.peek()? != b':' && self.past_ws()? != b':' {
                    return None;
                }
                self.i += 1;
                if here != AT_NONE {
                    if here == AT_FUNCTION && key == "parameters" && self.peek() == Some(b'{') {
                        if let Some(end) = clean_object_end(self.b, self.i, self.depth) {
                            let deferred = self.bump.alloc(Deferred {
                                text: self.text.get(self.i..end)?,
                                bump: self.bump,
                            });
                            self.entries.push((key, Node::Deferred(deferred)));
                            self.i = end;
                            if !self.more(b'}')? {
                                break;
                            }
                            continue;
                        }
                    }
                    self.at = match (here, key) {
                        (AT_REQUEST, "tools") => AT_TOOLS,
                        (AT_TOOL, "function") => AT_FUNCTION,
                        _ => AT_NONE,
                    };
                }
                read_value!(self, |v| self.entries.push((key, v)));
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        let entries = &self.entries[mark..];
        let node = if distinct_keys(entries) {
            let entries = self.bump.alloc_slice_copy(entries);
            if self.record && self.dirty == dirty && !entries.is_empty() {
                self.spans.push(Span {
                    addr: entries.as_ptr() as usize,
                    len: entries.len() | OBJECT_BIT,
                    start: open,
                    end: self.i,
                });
            }
            entries
        } else {
            self.dirty += 1;
            let mut obj = ObjectBuilder::with_capacity(self.bump, entries.len());
            for (k, v) in entries {
                obj.insert(k, *v);
            }
            obj.entries.into_bump_slice()
        };
        self.entries.truncate(mark);
        Some(node)
    }

    #[inline(never)]
    fn array(&mut self) -> Option<&'a [Node<'a>]> {
        let (open, dirty) = (self.i, self.dirty);
        self.enter()?;
        let mark = self.items.len();
        let mut b = self.peek()?;
        if let b' ' | b'\n' | b'\t' | b'\r' = b {
            b = self.past_ws()?;
        }
        if b == b']' {
            self.i += 1;
        } else {
            let (steer, item_at) = (
                self.at != AT_NONE,
                if self.at == AT_TOOLS {
                    AT_TOOL
                } else {
                    AT_NONE
                },
            );
            loop {
                if steer {
                    self.at = item_at;
                }
                read_value!(self, |v| self.items.push(v));
                if !self.more(b']')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        let items = self.bump.alloc_slice_copy(&self.items[mark..]);
        if self.record && self.dirty == dirty && !items.is_empty() {
            self.spans.push(Span {
                addr: items.as_ptr() as usize,
                len: items.len(),
                start: open,
                end: self.i,
            });
        }
        self.items.truncate(mark);
        let node = items;
        Some(node)
    }

    /// A string at `self.i` (on its opening quote). Plain text is borrowed;
    /// a string with escapes is decoded into the arena ([`unescape`]).
    #[inline(always)]
    fn string(&mut self) -> Option<&'a str> {
        let open = self.i;
        let start = open + 1;
        let b = self.b;
        let mut i = start;
        loop {
            i = past_plain(b, i);
            match b.get(i)? {
                b'"' => {
                    self.i = i + 1;
                    return crate::sys::text::between_ascii(self.text, start, i);
                }
                b'\\' => return self.escaped(open, i),
                0..=0x1f => return None,
                _ => i += 1,
            }
        }
    }

    /// The rest of a string holding escapes, from its first backslash at
    /// `i`: finds its end and decodes it ([`unescape`]).
    #[inline(never)]
    fn escaped(&mut self, open: usize, mut i: usize) -> Option<&'a str> {
        let b = self.b;
        loop {
            if let Some(Ok(block)) = b.get(i..i + 16).map(<&[u8; 16]>::try_from) {
                let stops = json::block_mask(block);
                i += stops.trailing_zeros().min(16) as usize;
                if stops == 0 {
                    continue;
                }
            }
            match b.get(i)? {
                b'\\' => i += 2,
                b'"' => break,
                0..=0x1f => return None,
                _ => i += 1,
            }
        }
        let decoded = unescape(self.bump, self.text.get(open + 1..i)?)?;
        self.i = i + 1;
        self.dirty += 1;
        Some(decoded)
    }

    /// A number: a plain integer of up to 18 digits is read here; any other
    /// (a fraction, an exponent, more digits, `-0`) is given to serde_json,
    /// so it reads exactly as serde_json reads it.
    #[inline(never)]
    fn number(&mut self) -> Option<Num> {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        let negative = b[i] == b'-';
        if negative {
            i += 1;
        }
        let digits_start = i;
        match b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => {
                while let Some(b'0'..=b'9') = b.get(i) {
                    i += 1;
                }
            }
            _ => return None,
        }
        let digits = &b[digits_start..i];
        let simple = !matches!(b.get(i), Some(b'.' | b'e' | b'E'))
            && digits.len() <= 18
            && !(negative && digits == b"0");
        if simple {
            let n = digits
                .iter()
                .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
            self.i = i;
            return Some(if negative {
                Num::Neg(-(n as i64))
            } else {
                Num::Pos(n)
            });
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            let frac = i;
            while let Some(b'0'..=b'9') = b.get(i) {
                i += 1;
            }
            if i == frac {
                return None;
            }
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            let exp = i;
            while let Some(b'0'..=b'9') = b.get(i) {
                i += 1;
            }
            if i == exp {
                return None;
            }
        }
        let token = self.text.get(start..i)?;
        let Ok(Node::Number(n)) = parse_serde(self.bump, token) else {
            return None;
        };
        self.i = i;
        self.dirty += 1;
        Some(n)
    }
}

/// `text` read as an arena node and as a `Value`, for tests that read the
/// same JSON on both sides (the loop's and translate's).
#[cfg(test)]
pub(crate) fn parse_both<'a>(bump: &'a Bump, text: &str) -> (Node<'a>, serde_json::Value) {
    let n = parse(bump, bump.alloc_str(text)).expect("JSON");
    (n, serde_json::from_str(text).expect("JSON"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `copy_value` builds the tree that parsing the value's text builds,
    /// and it outlives the value.
    #[test]
    fn copy_value_is_parse_of_the_text() {
        let samples = [
            r#"{"b":1,"a":[true,false,null],"c":{"x":"y\"\\\n\u0001é😀"}}"#,
            r#"[0,-1,18446744073709551615,-9223372036854775808,1.5,-0.0,1e300,2.5e-8]"#,
            r#"{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}"#,
        ];
        for text in samples {
            let bump = Bump::new();
            let node = {
                let v: Value = serde_json::from_str(text).expect("sample");
                copy_value(&bump, &v)
            };
            let parsed = parse(&bump, text).expect("sample");
            assert_eq!(node.to_vec(), parsed.to_vec(), "{text}");
        }
    }

    /// Every sample reads and writes exactly as serde_json's Value does.
    #[test]
    fn round_trips_like_serde_json_value() {
        let samples = [
            r#"{"b":1,"a":[true,false,null],"c":{"x":"y\"\\\n\u0001é😀"}}"#,
            r#"[0,-1,18446744073709551615,-9223372036854775808,1.5,-0.0,1e300,2.5e-8,100.0,1E2]"#,
            r#"{"k":1,"j":2,"k":3}"#,
            r#"  {"s" : "a\/b\u00e9", "t":"\ud83d\ude00"}  "#,
            r#""just a string""#,
            "{}",
            "[]",
        ];
        for text in samples {
            let bump = Bump::new();
            let node = parse(&bump, text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let value: Value = serde_json::from_str(text).expect("serde_json parses it");
            assert_eq!(node.to_value(), value, "{text}");
            assert_eq!(
                String::from_utf8(node.to_vec()).expect("utf-8"),
                serde_json::to_string(&value).expect("encodes"),
                "{text}"
            );
            assert_eq!(
                serde_json::to_string(&node).expect("encodes"),
                value.to_string()
            );
            assert_eq!(from_value(&bump, &value).to_vec(), node.to_vec(), "{text}");
        }
    }

    /// A deterministic pseudo-random source for the differential test.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 33) as usize) % n
        }
    }

    const ATOMS: [&str; 38] = [
        "\"\\b\\f\\r\\t\\n\\\\\\/x\"",
        "\"\\u00E9\\u00e9\\u0000\\u001F\"",
        "\"\\uDBFF\\uDFFF\\ud800\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"\\udc00\"",
        "\"\\ud800\\\"",
        "\"\\u12\"",
        "\"\\u12g4 \u{e9}\\u20AC\"",
        "0",
        "-0",
        "01",
        "1.",
        "1.5",
        "-12",
        "1e5",
        "1E+2",
        "2.5e-3",
        "-0.0",
        "12345678901234567890",
        "-9223372036854775809",
        "999999999999999999",
        "1000000000000000000",
        "true",
        "false",
        "null",
        "tru",
        "nul",
        "\"a\"",
        "\"\"",
        "\"x\\\"y\"",
        "\"\\u00e9\"",
        "\"\\ud800\"",
        "\"\\ud83d\\ude00\"",
        "\"tab\there\"",
        "\"caf\u{e9} \u{1f600}\"",
        "\"\\q\"",
        "\"a\\/b\"",
        "-",
    ];

    const PLAIN_ATOMS: [&str; 10] = [
        // Escapes as the writer writes them: the literal is copied back.
        "\"q\\\"\\\\\\b\\f\\n\\r\\tz\"",
        "0",
        "-12",
        "999999999999999999",
        "true",
        "false",
        "null",
        "\"a\"",
        "\"\"",
        "\"caf\u{e9} \u{1f600}\u{7f}\"",
    ];

    /// A random document; `compact` ones have whitespace in one place in
    /// twenty, so that many of their containers are written as the writer
    /// writes them, and some are not.
    fn random_doc(r: &mut Lcg, depth: u32, compact: bool, out: &mut String) {
        let ws = |r: &mut Lcg| {
            let ws = [" ", "", "", "\n", "\t", "\r"];
            if compact && r.next(20) != 0 {
                ""
            } else {
                ws[r.next(ws.len())]
            }
        };
        let keys = [
            "\"k\"", "\"j\"", "\"k\\n\"", "\"\"", "\"a\"", "\"ab\"", "\"axb\"", "\"ayb\"",
        ];
        out.push_str(ws(r));
        match if depth > 4 { 2 } else { r.next(3) } {
            0 => {
                out.push('{');
                for i in 0..r.next(4) {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(keys[r.next(if compact { keys.len() } else { 4 })]);
                    out.push_str(ws(r));
                    out.push(':');
                    random_doc(r, depth + 1, compact, out);
                }
                out.push('}');
            }
            1 => {
                out.push('[');
                for i in 0..r.next(4) {
                    if i > 0 {
                        out.push(',');
                    }
                    random_doc(r, depth + 1, compact, out);
                }
                out.push(']');
            }
            // Compact documents favour atoms the writer writes as they are.
            _ if compact && r.next(2) == 0 => out.push_str(PLAIN_ATOMS[r.next(PLAIN_ATOMS.len())]),
            _ => out.push_str(ATOMS[r.next(ATOMS.len())]),
        }
        out.push_str(ws(r));
    }

    /// The fast reader and serde_json agree on every document, valid or
    /// not: the same tree, the same bytes out, or the same error. Written
    /// with its [`Source`], whose containers written as the writer writes
    /// them are copied as their text, the tree still gives serde_json's
    /// bytes, alone and inside a built tree next to a shorter copy of
    /// itself (the first members of its slice, at the same address).
    #[test]
    fn agrees_with_serde_json_on_random_documents() {
        let mut r = Lcg(7);
        let mut copied = 0;
        let noise = [
            "", ",", "]", "}", ":", "\"", "\\", "\u{1}", "x", "0", "-", ".", "e",
        ];
        for case in 0..30_000 {
            let mut text = String::new();
            random_doc(&mut r, 0, case % 4 >= 2, &mut text);
            if case % 2 == 1 && !text.is_empty() {
                // Mutate: insert, delete or replace one byte position.
                let mut at = r.next(text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                let piece = noise[r.next(noise.len())];
                match r.next(3) {
                    0 => text.insert_str(at, piece),
                    1 if at < text.len() => {
                        let end = (at + 1..=text.len())
                            .find(|e| text.is_char_boundary(*e))
                            .unwrap_or(text.len());
                        text.replace_range(at..end, piece);
                    }
                    _ => text.truncate(at),
                }
            }
            let bump = Bump::new();
            let ours = parse(&bump, &text);
            let theirs = serde_json::from_str::<Value>(&text);
            match (ours, theirs) {
                (Ok(a), Ok(b)) => {
                    let expected = b.to_string().into_bytes();
                    assert_eq!(a.to_value(), b, "{text:?}");
                    assert_eq!(a.to_vec(), expected, "{text:?}");
                    assert_eq!(a.to_vec_from(&[text.as_str().into()], 0), expected);
                    let (a, source) = parse_source(&bump, &text).expect("parses");
                    copied += usize::from(!source.spans.is_empty());
                    let sources = [source];
                    assert_eq!(a.to_vec_from(&sources, 0), expected, "{text:?}");
                    let shorter = match a {
                        Node::Array([items @ .., _]) => Node::Array(items),
                        Node::Object([entries @ .., _]) => Node::Object(entries),
                        other => other,
                    };
                    let built = Node::Array(bump.alloc_slice_copy(&[shorter, a, shorter]));
                    let value =
                        Value::Array(vec![shorter.to_value(), b.clone(), shorter.to_value()]);
                    let value = value.to_string().into_bytes();
                    assert_eq!(built.to_vec_from(&sources, 0), value, "{text:?}");
                    // Written with no source, every string of `shorter` is
                    // met twice or three times, at the same address.
                    assert_eq!(built.to_vec(), value, "{text:?}");
                }
                (Err(a), Err(b)) => {
                    assert_eq!(a.to_string(), b.to_string(), "{text:?}");
                    let c = parse_source(&bump, &text).expect_err("fails as parse does");
                    assert_eq!(c.to_string(), b.to_string(), "{text:?}");
                }
                (a, b) => panic!("{text:?}: ours {a:?}, serde_json {b:?}"),
            }
        }
        // The copying was tried, not only the walk.
        assert!(copied > 1_500, "{copied} documents had containers to copy");
    }

    /// A tool's `parameters` read by [`parse_source`] answers as serde_json
    /// reads it, whether it was deferred or read at once: the same value,
    /// the same members, the same bytes written, the same error for a
    /// broken one. Random documents, valid or not, stand in for the schema.
    #[test]
    fn deferred_parameters_answer_as_serde_json_reads_them() {
        let mut r = Lcg(11);
        let (mut deferred, mut read) = (0, 0);
        let noise = [
            "", ",", "]", "}", ":", "\"", "\\", "\u{1}", "x", "0", "-", ".", "e", " ",
        ];
        for case in 0..20_000 {
            let mut schema = String::new();
            random_doc(&mut r, 0, case % 4 != 0, &mut schema);
            if case % 3 == 2 && !schema.is_empty() {
                let mut at = r.next(schema.len() + 1);
                while !schema.is_char_boundary(at) {
                    at -= 1;
                }
                schema.insert_str(at, noise[r.next(noise.len())]);
            }
            let text = format!(
                r#"{{"messages":[],"tools":[{{"type":"function","function":{{"name":"t","parameters":{schema}}}}},{{"function":{{"parameters":{schema},"name":"u"}}}}]}}"#
            );
            let bump = Bump::new();
            let theirs = serde_json::from_str::<Value>(&text);
            match (parse_source(&bump, &text), theirs) {
                (Ok((ours, source)), Ok(theirs)) => {
                    assert_eq!(ours.to_value(), theirs, "{text:?}");
                    let expected = theirs.to_string().into_bytes();
                    assert_eq!(ours.to_vec_from(&[source], 0), expected, "{text:?}");
                    let tools = ours.get("tools").and_then(Node::as_array).expect("tools");
                    for (tool, want) in tools.iter().zip(theirs["tools"].as_array().expect("tools"))
                    {
                        let p = tool.get("function").and_then(|f| f.get("parameters"));
                        let p = p.expect("parameters");
                        let want = &want["function"]["parameters"];
                        match p {
                            Node::Deferred(_) => deferred += 1,
                            _ => read += 1,
                        }
                        assert_eq!(p.is_object(), want.is_object(), "{text:?}");
                        assert_eq!(p.type_name(), crate::json::type_name(want), "{text:?}");
                        assert_eq!(p.to_vec(), want.to_string().into_bytes(), "{text:?}");
                        assert_eq!(p.resolved().to_value(), *want, "{text:?}");
                        for (k, v) in want.as_object().into_iter().flatten() {
                            assert_eq!(p.get(k).map(Node::to_value).as_ref(), Some(v), "{text:?}");
                        }
                        assert!(p.get("no such key").is_none(), "{text:?}");
                    }
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text:?}"),
                (a, b) => panic!("{text:?}: ours {a:?}, serde_json {b:?}"),
            }
        }
        // Both ways were taken, many times.
        assert!(
            deferred > 2_000 && read > 2_000,
            "{deferred} deferred, {read} read"
        );
    }

    /// What [`clean_object_end`] takes, and what it leaves to the reader.
    #[test]
    fn clean_objects_are_the_writer_s_own_text() {
        let end = |t: &str| clean_object_end(t.as_bytes(), 0, 0);
        for t in [
            "{}",
            r#"{"a":1}"#,
            r#"{"a":[],"b":{},"c":[1,-2,0,true,false,null,"x"]}"#,
            r#"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#,
            r#"{"é":"ü","n":123456789012345678}"#,
        ] {
            assert_eq!(end(t), Some(t.len()), "{t}");
            assert_eq!(end(&format!("{t},")), Some(t.len()), "{t}");
        }
        for t in [
            "{ }",
            r#"{"a": 1}"#,
            r#"{"a":1.5}"#,
            r#"{"a":1e3}"#,
            r#"{"a":-0}"#,
            r#"{"a":01}"#,
            r#"{"a":1234567890123456789}"#,
            r#"{"a":"
"}"#,
            "{\"a\":\"\u{1}\"}",
            r#"{"a":1,"a":2}"#,
            r#"{"a":tru}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":1,}"#,
            r#"{"a":[}"#,
            r#"{"a""#,
            r#"{"a":{"#,
            "{",
        ] {
            assert_eq!(end(t), None, "{t}");
        }
        // Nesting past its own bound, and past the reader's, is left to it.
        let deep = |n: usize| format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
        assert!(end(&deep(CLEAN_LEVELS)).is_some());
        assert_eq!(end(&deep(CLEAN_LEVELS + 1)), None);
        let t = deep(2);
        assert_eq!(clean_object_end(t.as_bytes(), 0, FAST_DEPTH - 1), None);
        assert!(clean_object_end(t.as_bytes(), 0, FAST_DEPTH - 2).is_some());
    }

    /// Strings long enough for the sixteen-byte scan, with an escape, a raw
    /// control byte or a multi-byte character at every offset, inside a
    /// document or at its very end, read as serde_json reads them.
    #[test]
    fn long_strings_agree_with_serde_json() {
        let specials = [
            "\\\"",
            "\\n",
            "\\u00e9",
            "\\ud83d\\ude00",
            "\u{1}",
            "é",
            "\\x",
            "\\",
        ];
        for len in 0..40 {
            for at in 0..=len {
                for special in specials {
                    let body = format!("{}{special}{}", "a".repeat(at), "b".repeat(len - at));
                    for text in [format!("[\"{body}\",1]"), format!("\"{body}\"")] {
                        let bump = Bump::new();
                        match (parse(&bump, &text), serde_json::from_str::<Value>(&text)) {
                            (Ok(a), Ok(b)) => {
                                assert_eq!(a.to_value(), b, "{text:?}");
                                assert_eq!(a.to_vec(), b.to_string().into_bytes(), "{text:?}");
                            }
                            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                            (a, b) => panic!("{text:?}: ours {a:?}, serde_json {b:?}"),
                        }
                    }
                }
            }
        }
    }

    /// The 64-bit sieve of repeated keys answers as a set does, for keys
    /// that share a bit (same length, first and last byte) and past the
    /// linear scan's size.
    #[test]
    fn repeated_keys_are_found_as_a_set_finds_them() {
        let mut r = Lcg(11);
        let names: Vec<String> = (0..60)
            .map(|i| match i % 3 {
                0 => format!("k{i}"),
                1 => format!("a{}b", "x".repeat(i % 5)),
                _ => ["", "a", "ab", "aab", "abb"][i % 5].to_string(),
            })
            .collect();
        for _ in 0..5_000 {
            let n = r.next(40);
            let entries: Vec<(&str, Node)> = (0..n)
                .map(|_| (names[r.next(names.len())].as_str(), Node::Null))
                .collect();
            let set: std::collections::HashSet<&str> = entries.iter().map(|(k, _)| *k).collect();
            assert_eq!(distinct_keys(&entries), set.len() == n, "{entries:?}");
        }
        // Small objects from a few names, so that repeats are common.
        for _ in 0..5_000 {
            let n = r.next(6);
            let entries: Vec<(&str, Node)> = (0..n)
                .map(|_| (names[r.next(5) * 3 + 2].as_str(), Node::Null))
                .collect();
            let set: std::collections::HashSet<&str> = entries.iter().map(|(k, _)| *k).collect();
            assert_eq!(distinct_keys(&entries), set.len() == n, "{entries:?}");
        }
    }

    /// A container of a source is known by its address and length alone.
    #[test]
    fn only_recorded_containers_are_copied() {
        let text = r#"{"a":[1,2],"b":{"c":"d"},"e":[ 3]}"#;
        let bump = Bump::new();
        let (node, source) = parse_source(&bump, text).expect("parses");
        // The root (it holds a space) and `e` are not recorded; `a` and `b` are.
        assert_eq!(source.spans.len(), 2);
        let a = node.get("a").and_then(Node::as_array).expect("an array");
        assert_eq!(source.span(a.as_ptr() as usize, 2), Some(&b"[1,2]"[..]));
        assert_eq!(source.span(a.as_ptr() as usize, 1), None);
        assert_eq!(
            node.to_vec_from(&[source], 0),
            br#"{"a":[1,2],"b":{"c":"d"},"e":[3]}"#
        );
    }

    /// The short word check finds the first byte to escape, and any at
    /// all, exactly where the exact one does.
    #[test]
    fn first_escape_agrees_with_the_exact_flags() {
        let mut r = Lcg(3);
        let interesting = [
            0u8, 0x1f, 0x20, b'"', b'\\', 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xa0, 0xa2, 0xdc, 0xff,
            b'a',
        ];
        for _ in 0..200_000 {
            let bytes: [u8; 8] = std::array::from_fn(|_| {
                if r.next(2) == 0 {
                    interesting[r.next(interesting.len())]
                } else {
                    r.next(256) as u8
                }
            });
            let w = u64::from_le_bytes(bytes);
            let (ours, exact) = (first_escape(w), json::escape_flags(w));
            assert_eq!(ours == 0, exact == 0, "{bytes:?}");
            assert_eq!(ours.trailing_zeros(), exact.trailing_zeros(), "{bytes:?}");
        }
    }

    /// The block-at-a-time check finds exactly the bytes a byte loop finds.
    #[test]
    fn special_bytes_are_found_at_every_offset() {
        let special = |c: u8| c < 0x20 || c == b'"' || c == b'\\';
        for len in 0..40 {
            for at in 0..len {
                for c in 0u8..=255 {
                    let mut s = vec![b'a'; len];
                    s[at] = c;
                    assert_eq!(needs_no_escape(&s), !special(c), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn repeated_keys_keep_first_position_and_last_value() {
        let mut text = String::from("{");
        for i in 0..40 {
            text.push_str(&format!("\"k{i}\":{i},"));
        }
        text.push_str("\"k3\":\"last\",\"k39\":null}");
        let bump = Bump::new();
        let node = parse(&bump, &text).expect("parses");
        let value: Value = serde_json::from_str(&text).expect("parses");
        assert_eq!(node.to_value(), value);
        assert_eq!(node.get("k3").and_then(Node::as_str), Some("last"));
    }

    #[test]
    fn errors_are_serde_jsons() {
        for text in ["{\"a\":1} x", "[1,", "{\"a\" 1}", "", "\"\\x\""] {
            let bump = Bump::new();
            let ours = parse(&bump, text).expect_err(text).to_string();
            let theirs = serde_json::from_str::<Value>(text)
                .expect_err(text)
                .to_string();
            assert_eq!(ours, theirs, "{text}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let text = "[".repeat(100_000);
        let bump = Bump::new();
        assert!(parse(&bump, &text).is_err());
    }
}
