//! Small helpers for reading loosely typed JSON the way every port does.

use serde_json::Value;
use std::borrow::Cow;

/// The JSON type name used in error messages ("expected an array, got a string").
/// An object of `entries`, in order, the values moved in. What `json!`
/// does for literal keys, without its detour: `json!` turns an interpolated
/// value into a `Value` through `serde_json::to_value`, which copies a
/// `Vec<Value>` or a `Map` member by member.
pub fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    let mut m = serde_json::Map::with_capacity(N);
    for (k, v) in entries {
        m.insert(k.to_string(), v);
    }
    Value::Object(m)
}

pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value as the host language's `str` would print it: strings verbatim,
/// null as "", numbers and booleans in their JSON spelling, containers as
/// compact JSON.
pub fn display_string(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Tool-call arguments in either wire form: an object, or a JSON string that
/// holds an object. Anything else (a malformed string, an array, a number) is
/// passed through unchanged except that a string which does not decode to an
/// object becomes `{}`, as the translate helpers do.
pub fn normalize_args(args: Value) -> Value {
    match args {
        Value::String(s) => decoded_args(&s),
        Value::Null => Value::Object(Default::default()),
        other => other,
    }
}

/// [`normalize_args`] of borrowed arguments: an object (or anything else
/// passed through) borrowed as it is, never copied; a decoded string or
/// `{}` made anew.
pub fn normalized_args(args: &Value) -> Cow<'_, Value> {
    match args {
        Value::String(s) => Cow::Owned(decoded_args(s)),
        Value::Null => Cow::Owned(Value::Object(Default::default())),
        other => Cow::Borrowed(other),
    }
}

/// Arguments given as JSON text: the object it holds, or `{}`.
fn decoded_args(s: &str) -> Value {
    match serde_json::from_str::<Value>(s) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::Object(Default::default()),
    }
}

/// Appends `s` as a JSON string literal (quotes included), byte for byte what
/// `serde_json` writes: `"` and `\` backslash-escaped, the control characters
/// below U+0020 as `\b \t \n \f \r` or `\u00XX`, everything else verbatim.
pub fn write_escaped(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    write_escaped_body(out, s.as_bytes());
    out.push(b'"');
}

/// [`write_escaped`] without the quotes, for a literal written in pieces.
///
/// The text is scanned 32 bytes at a time (`block_mask`: SSE2
/// compares on x86_64); a clean run is copied whole when the next byte to
/// escape turns up, and each escape is one table entry.
pub fn write_escaped_body(out: &mut Vec<u8>, bytes: &[u8]) {
    escape_body_with(out, bytes, block_mask);
}

/// [`write_escaped_body`] with `mask` finding the escapes of each block
/// (the tests run it with every scanner the build has).
#[inline(always)]
fn escape_body_with(out: &mut Vec<u8>, bytes: &[u8], mask_of: impl Fn(&[u8; 16]) -> u32) {
    out.reserve(bytes.len() + SLACK);
    // `bytes[start..]` is not written yet; `bytes[pos..]` not scanned yet.
    let mut start = 0;
    let mut pos = 0;
    // Clean text goes by two blocks at a time.
    while let Some(Ok(pair)) = bytes.get(pos..pos + 32).map(<&[u8; 32]>::try_from) {
        let (a, b) = pair.split_at(16);
        let (Ok(a), Ok(b)) = (<&[u8; 16]>::try_from(a), <&[u8; 16]>::try_from(b)) else {
            break;
        };
        start = escape_hits(out, bytes, start, pos, mask_of(a) | mask_of(b) << 16);
        pos += 32;
    }
    if let Some(Ok(block)) = bytes.get(pos..pos + 16).map(<&[u8; 16]>::try_from) {
        start = escape_hits(out, bytes, start, pos, mask_of(block));
        pos += 16;
    }
    let rest = bytes.len() - pos;
    match bytes.len().checked_sub(16).and_then(|at| bytes.get(at..)) {
        // The last bytes, as the end of a block that ends with the text
        // (its first 16 - rest bytes are scanned already).
        Some(last) if rest > 0 => {
            let mask = <&[u8; 16]>::try_from(last).map_or(0, |b| mask_of(b) >> (16 - rest));
            start = escape_hits(out, bytes, start, pos, mask);
        }
        // A text shorter than a block, byte by byte.
        _ => {
            for (i, &b) in bytes.iter().enumerate().skip(pos) {
                if needs_escape(b) {
                    out.extend_from_slice(&bytes[start..i]);
                    push_escape(out, b);
                    start = i + 1;
                }
            }
        }
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
}

/// The length of `s` escaped as the inside of a JSON string literal (what
/// [`write_escaped_body`] appends), for [`escape_literal`].
pub const fn escaped_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut len = 0;
    let mut i = 0;
    while i < bytes.len() {
        len += if needs_escape(bytes[i]) {
            ESCAPE[bytes[i] as usize][7] as usize
        } else {
            1
        };
        i += 1;
    }
    len
}

/// `s` escaped as [`write_escaped_body`] escapes it, at compile time, for
/// text a JSON answer always holds; `N` is [`escaped_len`] of `s`.
pub const fn escape_literal<const N: usize>(s: &str) -> [u8; N] {
    let bytes = s.as_bytes();
    let mut out = [0u8; N];
    let (mut i, mut at) = (0, 0);
    while i < bytes.len() {
        let b = bytes[i];
        if needs_escape(b) {
            let esc = ESCAPE[b as usize];
            let mut k = 0;
            while k < esc[7] as usize {
                out[at] = esc[k];
                at += 1;
                k += 1;
            }
        } else {
            out[at] = b;
            at += 1;
        }
        i += 1;
    }
    out
}

/// Writes `bytes[start..]` up to the last byte `mask` marks (bit `k` for
/// `bytes[pos + k]`), each marked byte escaped; returns the new `start`.
#[inline(always)]
fn escape_hits(
    out: &mut Vec<u8>,
    bytes: &[u8],
    mut start: usize,
    pos: usize,
    mut mask: u32,
) -> usize {
    while mask != 0 {
        let i = pos + mask.trailing_zeros() as usize;
        out.extend_from_slice(&bytes[start..i]);
        push_escape(out, bytes[i]);
        start = i + 1;
        mask &= mask - 1;
    }
    start
}

/// Appends the escape of `b`, a byte [`needs_escape`] accepts: its whole
/// table entry (a fixed-size copy), then the length cut back to the escape.
#[inline(always)]
fn push_escape(out: &mut Vec<u8>, b: u8) {
    let esc = &ESCAPE[usize::from(b & 0x7f)];
    let len = out.len();
    out.extend_from_slice(esc);
    out.truncate(len + usize::from(esc[7]));
}

/// Spare room [`escape_forward`] allows past the text and its escapes in
/// sixteen bytes: the whole table entry an escape appends first.
const SLACK: usize = 8;

/// The escape of each byte [`needs_escape`] accepts, in the first bytes of
/// its entry, and its length in the last.
const ESCAPE: [[u8; 8]; 128] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut t = [[0u8; 8]; 128];
    let mut b = 0;
    while b < 0x20 {
        t[b] = [b'\\', b'u', b'0', b'0', HEX[b >> 4], HEX[b & 0xf], 0, 6];
        b += 1;
    }
    let short: [(u8, u8); 7] = [
        (b'"', b'"'),
        (b'\\', b'\\'),
        (b'\n', b'n'),
        (b'\r', b'r'),
        (b'\t', b't'),
        (0x08, b'b'),
        (0x0c, b'f'),
    ];
    let mut i = 0;
    while i < short.len() {
        t[short[i].0 as usize] = [b'\\', short[i].1, 0, 0, 0, 0, 0, 2];
        i += 1;
    }
    t
};

/// Bit `i` set when `block[i]` needs an escape: SSE2 compares (part of the
/// x86_64 baseline, [`crate::sys::sse2`]) where there are some, the word
/// flags of [`escape_mask`] elsewhere.
#[inline(always)]
pub(crate) fn block_mask(block: &[u8; 16]) -> u32 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        crate::sys::sse2::escape_mask(block)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        escape_mask(block)
    }
}

/// Whether JSON needs `b` escaped inside a string.
#[inline(always)]
pub(crate) const fn needs_escape(b: u8) -> bool {
    (b < 0x20) | (b == b'"') | (b == b'\\')
}

/// 0x80 in every byte of the little-endian word `w` that needs an escape
/// (below 0x20, `"` or `\`), 0 in every other byte; exact, as no sum below
/// carries from one byte into the next, so the lowest set bit marks the
/// first such byte.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline(always)]
pub(crate) fn escape_flags(w: u64) -> u64 {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let below = !(((w & LO7) + ONES * 0x60) | w) & HIGH;
    let zero = |x: u64| !(((x & LO7) + LO7) | x) & HIGH;
    below | zero(w ^ (ONES * 0x22)) | zero(w ^ (ONES * 0x5c))
}

/// The eight bytes of `b` (8 long) as a little-endian word.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline(always)]
pub(crate) fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(b);
    u64::from_le_bytes(w)
}

/// Bit `i` set when `block[i]` needs an escape (`block` is 16 bytes).
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline(always)]
pub(crate) fn escape_mask(block: &[u8]) -> u32 {
    // The high bit of each byte gathered into the low eight bits.
    let gather = |half: &[u8]| {
        ((escape_flags(word(half)) >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32
    };
    gather(&block[..8]) | gather(&block[8..16]) << 8
}

/// The letter of `b`'s two-character escape (`n` for a newline), or `None`
/// when it is written `\u00XX`; for a byte [`needs_escape`] accepts.
#[inline(always)]
fn short_escape(b: u8) -> Option<u8> {
    // A table rather than a `match`, which compiles to an indirect jump.
    const LETTER: [u8; 128] = {
        let mut t = [0u8; 128];
        t[b'"' as usize] = b'"';
        t[b'\\' as usize] = b'\\';
        t[b'\n' as usize] = b'n';
        t[b'\r' as usize] = b'r';
        t[b'\t' as usize] = b't';
        t[0x08] = b'b';
        t[0x0c] = b'f';
        t
    };
    match LETTER[usize::from(b & 0x7f)] {
        0 => None,
        c => Some(c),
    }
}

/// `\u00XX` for a control byte.
#[inline(always)]
fn unicode_escape(b: u8) -> [u8; 6] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    [
        b'\\',
        b'u',
        b'0',
        b'0',
        HEX[(b >> 4) as usize],
        HEX[(b & 0xf) as usize],
    ]
}

/// Texts up to this size are escaped forward into a new buffer; larger ones
/// in their own buffer ([`escape_backward`]). A second buffer this small
/// comes from the heap's free lists (far below glibc's mmap threshold), and
/// one forward pass beats counting first and then moving every line.
const SMALL_TEXT: usize = 32 * 1024;

/// `prefix`, then `text` as a JSON string literal (exactly [`write_escaped`]),
/// then `suffix`, with at least one spare byte of capacity for a C string's
/// NUL. A large text is escaped in its own buffer, so no second buffer the
/// size of a 1 MiB output is ever allocated.
pub fn escape_in_place(text: String, prefix: &[u8], suffix: &[u8]) -> Vec<u8> {
    if text.len() <= SMALL_TEXT {
        escape_forward(&text, prefix, suffix)
    } else {
        escape_backward(text, prefix, suffix)
    }
}

/// [`escape_in_place`] for a small text: one pass into a buffer sized for
/// the text, the quotes, the affixes, the NUL and an escape in sixteen bytes
/// (grown only when the text holds more).
fn escape_forward(text: &str, prefix: &[u8], suffix: &[u8]) -> Vec<u8> {
    let room = prefix.len() + text.len() + text.len() / 16 + 2 + suffix.len() + 1 + SLACK;
    let mut buf = Vec::with_capacity(room);
    buf.extend_from_slice(prefix);
    write_escaped(&mut buf, text);
    buf.reserve_exact(suffix.len() + 1);
    buf.extend_from_slice(suffix);
    buf
}

/// [`escape_in_place`] in `text`'s own buffer: it grows to the final length
/// plus one spare byte for a C string's NUL (once, or twice when the text
/// holds a `\u00XX` escape) and the text moves right, last byte first, as
/// each escape opens a gap.
fn escape_backward(text: String, prefix: &[u8], suffix: &[u8]) -> Vec<u8> {
    let n = text.len();
    // Every escape adds at least one byte; a `\u00XX` adds four more, and
    // room for those is made only if one turns up (they are rare in text,
    // and counting them would double the cost of this count).
    let total = prefix.len() + n + 2 + escape_count(text.as_bytes()) + suffix.len();
    let mut buf = text.into_bytes();
    buf.reserve_exact(total + 1 - n);
    buf.resize(total, 0);
    buf[total - suffix.len()..].copy_from_slice(suffix);
    buf[total - suffix.len() - 1] = b'"';
    let mut at = Placer {
        end: n,
        dst: total - suffix.len() - 1,
        exact: false,
    };
    let full = n - n % 16;
    for i in (full..n).rev() {
        if needs_escape(buf[i]) {
            at.place(&mut buf, i);
        }
    }
    let mut block = full;
    while block > 0 {
        block -= 16;
        let bytes = <[u8; 16]>::try_from(&buf[block..block + 16]).unwrap_or([0; 16]);
        let mut mask = block_mask(&bytes);
        while mask != 0 {
            let k = 31 - mask.leading_zeros() as usize;
            at.place(&mut buf, block + k);
            mask &= !(1 << k);
        }
    }
    let start = prefix.len() + 1;
    buf.copy_within(..at.end, start);
    buf[start - 1] = b'"';
    buf[..prefix.len()].copy_from_slice(prefix);
    buf
}

/// How many bytes of `bytes` need an escape (a loop the compiler vectorizes).
fn escape_count(bytes: &[u8]) -> usize {
    let mut count = 0;
    let mut chunks = bytes.chunks_exact(240);
    for chunk in &mut chunks {
        // A byte counter cannot overflow within 240 bytes.
        let in_chunk = chunk
            .iter()
            .fold(0u8, |c, &b| c + u8::from(needs_escape(b)));
        count += usize::from(in_chunk);
    }
    count
        + chunks
            .remainder()
            .iter()
            .filter(|&&b| needs_escape(b))
            .count()
}

/// The state of [`escape_in_place`]'s backward walk: `buf[..end]` is text
/// still to place, `buf[dst..]` is finished.
struct Placer {
    end: usize,
    dst: usize,
    /// Whether the room left is exact (the `\u00XX` escapes are counted in).
    exact: bool,
}

impl Placer {
    /// Places the text after `buf[i]`, then the escape of `buf[i]`.
    #[inline(always)]
    fn place(&mut self, buf: &mut Vec<u8>, i: usize) {
        let b = buf[i];
        let short = short_escape(b);
        if short.is_none() && !self.exact {
            // The first `\u00XX` from the end: make room for every one left.
            let more = 4 * buf[..=i]
                .iter()
                .filter(|&&b| needs_escape(b) && short_escape(b).is_none())
                .count();
            let total = buf.len();
            buf.reserve_exact(more + 1);
            buf.resize(total + more, 0);
            buf.copy_within(self.dst..total, self.dst + more);
            self.dst += more;
            self.exact = true;
        }
        let run = self.end - (i + 1);
        buf.copy_within(i + 1..self.end, self.dst - run);
        self.dst -= run;
        match short {
            Some(c) => {
                buf[self.dst - 2..self.dst].copy_from_slice(&[b'\\', c]);
                self.dst -= 2;
            }
            None => {
                buf[self.dst - 6..self.dst].copy_from_slice(&unicode_escape(b));
                self.dst -= 6;
            }
        }
        self.end = i;
    }
}

/// A read-only view of one JSON value: what a reader of provider answers
/// needs, implemented by `&serde_json::Value` (the client loop's JSON) and
/// by the translator's arena node (`provider::node::Node`), so a dialect
/// writes such a reader once, generic over the view, and each caller keeps
/// its own tree (the translator's speed comes from never building a
/// `Value`).
pub trait View<'a>: Copy + 'a {
    /// The items of an array, in order.
    type Items: Iterator<Item = Self> + 'a;

    /// `self[key]` of an object; `None` for a missing key or a non-object.
    fn get(self, key: &str) -> Option<Self>;
    /// The items of an array; `None` for anything else.
    fn items(self) -> Option<Self::Items>;
    /// The text of a string; `None` for anything else.
    fn as_str(self) -> Option<&'a str>;
    fn is_object(self) -> bool;
    fn is_null(self) -> bool;
    /// A token count: a whole number of 0 or more as it is, a finite
    /// fraction of 0 or more taken down; anything else (negative, not a
    /// number) is `None`.
    fn count(self) -> Option<u64>;
}

/// Objects up to this many members are searched in order rather than
/// through their hash index: comparing a few short keys costs less than
/// hashing the one looked for (serde_json's map hashes with SipHash).
const SCANNED: usize = 8;

/// `v[key]` of an object (`None` for a missing key or a non-object), as
/// [`Value::get`] answers it, with a small object searched in order.
pub fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) if m.len() <= SCANNED => {
            m.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
        }
        Value::Object(m) => m.get(key),
        _ => None,
    }
}

/// [`field`], to change the member in place.
pub fn field_mut<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    let Value::Object(m) = v else {
        return None;
    };
    if m.len() <= SCANNED {
        m.iter_mut()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v)
    } else {
        m.get_mut(key)
    }
}

impl<'a> View<'a> for &'a Value {
    type Items = std::slice::Iter<'a, Value>;

    fn get(self, key: &str) -> Option<Self> {
        field(self, key)
    }

    fn items(self) -> Option<Self::Items> {
        match self {
            Value::Array(items) => Some(items.iter()),
            _ => None,
        }
    }

    fn as_str(self) -> Option<&'a str> {
        Value::as_str(self)
    }

    fn is_object(self) -> bool {
        Value::is_object(self)
    }

    fn is_null(self) -> bool {
        Value::is_null(self)
    }

    fn count(self) -> Option<u64> {
        match self {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .map(|f| f as u64)
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn normalized_args_borrows_what_normalize_args_passes_through() {
        use serde_json::json;
        use std::borrow::Cow;
        let object = json!({"q": "a", "n": [1, 2]});
        assert!(
            matches!(super::normalized_args(&object), Cow::Borrowed(v) if std::ptr::eq(v, &object))
        );
        for args in [
            object.clone(),
            json!("{\"q\": \"a\"}"),
            json!("[1, 2]"),
            json!("not json"),
            json!(null),
            json!([1, 2]),
            json!(7),
        ] {
            assert_eq!(
                *super::normalized_args(&args),
                super::normalize_args(args.clone()),
                "{args}"
            );
        }
        assert_eq!(
            *super::normalized_args(&json!("{\"q\": \"a\"}")),
            json!({"q": "a"})
        );
        assert_eq!(*super::normalized_args(&json!("[1]")), json!({}));
    }

    #[test]
    fn field_answers_what_get_answers_for_small_and_large_objects() {
        use serde_json::json;
        // Members past SCANNED go through the map's index.
        let small = json!({"a": 1, "b": {"c": 2}, "": 3});
        let large: Value =
            Value::Object((0..20).map(|i| (format!("k{i}"), Value::from(i))).collect());
        for (v, key) in [
            (&small, "a"),
            (&small, "b"),
            (&small, ""),
            (&small, "z"),
            (&small, "A"),
            (&large, "k0"),
            (&large, "k19"),
            (&large, "k20"),
            (&Value::Null, "a"),
            (&json!([1, 2]), "0"),
            (&json!("a"), "a"),
        ] {
            assert_eq!(field(v, key), v.get(key), "{v} [{key}]");
            let (mut a, mut b) = (v.clone(), v.clone());
            assert_eq!(field_mut(&mut a, key), b.get_mut(key), "{v} [{key}]");
        }
        assert_eq!(field(&small, "b"), Some(&json!({"c": 2})));
        assert_eq!(field(&large, "k7"), Some(&json!(7)));
    }
    use super::{
        block_mask, escape_backward, escape_body_with, escape_forward, escape_in_place,
        escape_mask, field, field_mut, needs_escape, write_escaped, write_escaped_body,
    };
    use serde_json::Value;

    fn ours(s: &str) -> String {
        let mut v = Vec::new();
        write_escaped(&mut v, s);
        String::from_utf8(v).unwrap_or_default()
    }

    #[test]
    fn escapes_exactly_as_serde_json_does() {
        let mut samples: Vec<String> = vec![
            String::new(),
            "plain ascii text that is long enough for words".into(),
            "quote \" and backslash \\ and / slash".into(),
            "tab\tnew\nline\rret\u{8}bs\u{c}ff\u{0}nul\u{1f}us\u{7f}del".into(),
            "h\u{e9}llo \u{65e5}\u{672c} \u{1f600} \u{e000}".into(),
            "12345678\"12345678\\1234567\n".into(),
            // Bytes at or above 0x80 never match, whatever their low bits.
            "\u{a2}\u{dc}\u{a0}\u{e2}\u{9c}x\u{5c2}\u{722}\u{7dc}\u{80}\u{7ff}\u{ffff}\u{10ffff}"
                .repeat(3),
        ];
        // Every byte value below 0x80 at every offset within a block, in
        // blocks of every fill.
        for b in 0u8..0x80 {
            for off in 0..40 {
                let mut s = "a".repeat(off);
                s.push(b as char);
                s.push_str("bcdefghijk");
                s.push_str(&"\"xy\n".repeat(off % 5));
                samples.push(s);
            }
        }
        // A deterministic pseudo-random mix.
        let mut x: u32 = 12345;
        for _ in 0..200 {
            let s: String = (0..(x % 64))
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    char::from_u32((x >> 16) % 0x300).unwrap_or('?')
                })
                .collect();
            samples.push(s);
        }
        samples.push("\n\u{1}\"".repeat(300));
        // Past the small-text size, so escape_in_place takes the backward
        // walk, and just under it.
        samples.push("a line with \"quotes\", a \\ and a \u{1}\n".repeat(1200));
        samples.push("x".repeat(super::SMALL_TEXT - 3) + "\n\t");
        for s in samples {
            let want = serde_json::to_string(&s).unwrap_or_default();
            assert_eq!(ours(&s), want, "{s:?}");
            // The same walk with the portable scanner (the one other
            // targets use) gives the same text.
            let mut portable = vec![b'"'];
            escape_body_with(&mut portable, s.as_bytes(), |b| escape_mask(b));
            portable.push(b'"');
            assert_eq!(portable, want.as_bytes(), "{s:?}");
            for prefix in ["", "{\"output\":"] {
                let expected = format!("{prefix}{want}}}").into_bytes();
                for placed in [
                    escape_in_place(s.clone(), prefix.as_bytes(), b"}"),
                    escape_forward(&s, prefix.as_bytes(), b"}"),
                    escape_backward(s.clone(), prefix.as_bytes(), b"}"),
                ] {
                    assert_eq!(placed, expected, "{s:?}");
                    assert!(placed.capacity() > placed.len(), "no room for the NUL");
                }
            }
        }
    }

    /// The 16-byte mask of every block scanner this build has (the SSE2 one
    /// on x86_64, the word flags everywhere) is the byte-by-byte answer, on
    /// edge bytes at every position and on random blocks.
    #[test]
    fn the_block_scanners_agree_byte_for_byte() {
        let exact =
            |b: &[u8; 16]| (0..16).fold(0u32, |m, i| m | (u32::from(needs_escape(b[i])) << i));
        let edges = [
            0x00, 0x01, 0x08, 0x0a, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7f, 0x80,
            0x9f, 0xa0, 0xa2, 0xdc, 0xe2, 0xff,
        ];
        let mut blocks = Vec::new();
        for &e in &edges {
            for at in 0..16 {
                let mut b = [b'a'; 16];
                b[at] = e;
                blocks.push(b);
                blocks.push([e; 16]);
            }
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..5000 {
            let mut b = [0u8; 16];
            for byte in &mut b {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Half of the bytes from the edges, half anything.
                *byte = if x & 1 == 0 {
                    edges[(x >> 8) as usize % edges.len()]
                } else {
                    (x >> 24) as u8
                };
            }
            blocks.push(b);
        }
        for b in &blocks {
            let want = exact(b);
            assert_eq!(escape_mask(b), want, "{b:?}");
            assert_eq!(block_mask(b), want, "{b:?}");
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            assert_eq!(crate::sys::sse2::escape_mask(b), want, "{b:?}");
        }
    }

    /// Pieces appended to a buffer that already holds text (with and
    /// without spare room) read as one literal, and the buffer's text before
    /// them is left as it was.
    #[test]
    fn a_literal_written_in_pieces_after_other_text() {
        let pieces = [
            "<a \"x\">\n",
            "",
            "\u{1}\u{1f}\t",
            &"\\".repeat(40),
            "h\u{e9}\n",
        ];
        let whole: String = pieces.concat();
        for spare in [0, 3, 100, 10_000] {
            let mut out = Vec::with_capacity(spare);
            out.extend_from_slice(b"head:");
            out.push(b'"');
            for p in pieces {
                write_escaped_body(&mut out, p.as_bytes());
            }
            out.push(b'"');
            let want = format!("head:{}", serde_json::to_string(&whole).unwrap_or_default());
            assert_eq!(String::from_utf8_lossy(&out), want);
        }
    }

    /// The compile-time escape of a literal is the run-time one.
    #[test]
    fn a_literal_escaped_at_compile_time_is_the_run_time_escape() {
        const RAW: &str = "<a name=\"x\">\n\t\\ \u{1}\u{1f} h\u{e9}\r\u{8}\u{c}</a>";
        const JSON: [u8; super::escaped_len(RAW)] = super::escape_literal(RAW);
        let mut want = Vec::new();
        write_escaped_body(&mut want, RAW.as_bytes());
        assert_eq!(JSON.as_slice(), want.as_slice());
        assert_eq!(super::escape_literal::<0>(""), [0u8; 0]);
    }
}
