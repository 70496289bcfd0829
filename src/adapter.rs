//! Rendering tools as provider declarations (SPEC §0.7, CONTRACT.md §4):
//! schema only, the caller's order, compact JSON.

use crate::json;
use crate::style::Style;
use crate::sys::prefetch::prefetch;
use crate::tool::Tool;
use serde_json::Value;

/// The style a `tn_render` format name asks for: `openai`, `anthropic` or
/// `gemini`. The responses style has no declaration shape here: its name is
/// not a render format (an `unknown_format` error, as it always was).
pub fn style_of(format: &str) -> Option<Style> {
    Style::from_name(format).filter(|s| renders(*s))
}

/// Whether `style` has a declaration shape here (every style but
/// responses).
pub fn renders(style: Style) -> bool {
    style != Style::Responses
}

/// Renders `tools`, in the order given, as the provider's JSON text. Gemini
/// is always one wrapper, even for no tools.
///
/// Written by hand into one buffer sized up front: the text is exactly what
/// `serde_json` gives for the same declarations (the tests hold the two to
/// it), at a fraction of the cost. A first render is a walk of every
/// schema, most of it short strings (keys, type names): the fixed text
/// around them goes in as constant pieces (the separator before a key and
/// the `":` after it with the quotes), a string of up to 16 bytes is checked
/// for escapes and copied as two overlapping words, and string values are
/// written without a call per value. The buffer keeps one spare byte for
/// the NUL a C caller gets. `None` for a style with no declaration shape
/// (see [`renders`]).
pub fn render(style: Style, tools: &[&Tool]) -> Option<String> {
    let out = render_bytes(style, tools)?;
    // Only whole strings and ASCII were written, so this always holds.
    Some(
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    )
}

/// [`render`] as the bytes of its UTF-8 text (every byte written is ASCII
/// or a copy of a whole `str`, and none is a NUL: controls are escaped),
/// with one spare byte of capacity for the NUL a C caller gets; `None` for
/// a style with no declaration shape.
pub fn render_bytes(style: Style, tools: &[&Tool]) -> Option<Vec<u8>> {
    if !renders(style) {
        return None;
    }
    let mut out: Vec<u8> =
        Vec::with_capacity(64 + tools.iter().map(|t| estimate(t)).sum::<usize>());
    let (open, close): (&[u8], &[u8]) = match style {
        Style::Gemini => (b"[{\"functionDeclarations\":[", b"]}]"),
        _ => (b"[", b"]"),
    };
    out.extend_from_slice(open);
    for (i, t) in tools.iter().enumerate() {
        fetch_ahead(tools, i);
        if i > 0 {
            out.push(b',');
        }
        match style {
            // Never reached (see `renders`); written with openai's shape.
            Style::OpenAi | Style::Responses => {
                out.extend_from_slice(b"{\"type\":\"function\",\"function\":{\"name\":");
                function(&mut out, t, b",\"parameters\":");
                out.push(b'}');
            }
            Style::Anthropic => {
                out.extend_from_slice(b"{\"name\":");
                function(&mut out, t, b",\"input_schema\":");
            }
            Style::Gemini => {
                out.extend_from_slice(b"{\"name\":");
                function(&mut out, t, b",\"parameters\":");
            }
        }
    }
    out.extend_from_slice(close);
    out.reserve_exact(1);
    Some(out)
}

/// Prefetches what the next tools' declarations read, a level at a time:
/// the render is a walk of separately allocated strings and maps, and
/// waiting for each in turn was most of its time. Four tools ahead, the
/// tool's strings and its schema's entries; two ahead, what those entries
/// point to (their keys, string values and nested entries), which the
/// first step brought in.
#[inline(always)]
fn fetch_ahead(tools: &[&Tool], i: usize) {
    if let Some(t) = tools.get(i + 4) {
        prefetch(t.name.as_ptr());
        prefetch(t.description.as_ptr());
        fetch(&t.input_schema, 0);
    }
    if let Some(t) = tools.get(i + 2) {
        fetch(&t.input_schema, 1);
    }
}

/// At level 0, prefetches what `v` itself points to (a string's bytes, an
/// object's or array's entries); at level 1, what its entries point to.
fn fetch(v: &Value, level: u32) {
    match v {
        Value::String(s) if level == 0 => prefetch(s.as_ptr()),
        Value::Object(m) if level == 0 => {
            if let Some((k, _)) = m.iter().next() {
                // The entries are one array; each holds its key and value.
                let entry = std::mem::size_of::<(u64, String, Value)>();
                span((k as *const String).cast(), m.len() * entry);
            }
        }
        Value::Array(a) if level == 0 => {
            span(a.as_ptr().cast(), std::mem::size_of_val(a.as_slice()))
        }
        Value::Object(m) => {
            for (k, x) in m {
                prefetch(k.as_ptr());
                fetch(x, level - 1);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| fetch(x, level - 1)),
        _ => {}
    }
}

/// Prefetches the `len` bytes from `p`, a cache line at a time.
#[inline(always)]
fn span(p: *const u8, len: usize) {
    for off in (0..len).step_by(64) {
        prefetch(p.wrapping_add(off));
    }
}

/// Room for one tool's declaration: its strings and a schema of the usual
/// size (the buffer grows past it when needed).
fn estimate(t: &Tool) -> usize {
    96 + t.name.len() + t.description.len() + 160
}

/// `…,"description":…,"<schema_key>":…}` after the opening `{"name":`.
#[inline(always)]
fn function(out: &mut Vec<u8>, t: &Tool, schema_key: &[u8]) {
    write_str(out, &t.name);
    out.extend_from_slice(b",\"description\":");
    write_str(out, &t.description);
    out.extend_from_slice(schema_key);
    write_value(out, &t.input_schema);
    out.push(b'}');
}

/// A JSON value as compact text, as `serde_json` writes it.
fn write_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Object(m) => {
            if m.is_empty() {
                out.extend_from_slice(b"{}");
                return;
            }
            let mut sep = b'{';
            for (k, x) in m {
                write_key(out, sep, k);
                sep = b',';
                // A string value (most of them) without a call.
                match x {
                    Value::String(s) => write_str(out, s),
                    _ => write_value(out, x),
                }
            }
            out.push(b'}');
        }
        Value::Array(a) => {
            if a.is_empty() {
                out.extend_from_slice(b"[]");
                return;
            }
            let mut sep = b'[';
            for x in a {
                out.push(sep);
                sep = b',';
                match x {
                    Value::String(s) => write_str(out, s),
                    _ => write_value(out, x),
                }
            }
            out.push(b']');
        }
        Value::String(s) => write_str(out, s),
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // What `serde_json` writes for a number, without a String for it.
        Value::Number(n) => {
            let _ = serde_json::to_writer(&mut *out, n);
        }
    }
}

/// A JSON string.
#[inline(always)]
fn write_str(out: &mut Vec<u8>, s: &str) {
    string::<false, false>(out, 0, s, 0)
}

/// `sep` (`{` or `,`), the key `k` as a JSON string, then `:`.
#[inline(always)]
fn write_key(out: &mut Vec<u8>, sep: u8, k: &str) {
    string::<true, true>(out, sep, k, b':')
}

/// `lead` (when LEAD), `s` as a JSON string, then `trail` (when TRAIL).
///
/// Up to 16 bytes (nearly every key and type name), `s` is read as its
/// first and last word, overlapping: their exact escape flags (`json`) say
/// whether it is plain, and the two words are its copy (the first written
/// whole, the output cut back to where the second belongs, the second
/// written whole), so no length-dependent loop or `memcpy` call runs.
#[inline(always)]
fn string<const LEAD: bool, const TRAIL: bool>(out: &mut Vec<u8>, lead: u8, s: &str, trail: u8) {
    let b = s.as_bytes();
    let n = b.len();
    if n <= 16 {
        // Which words cover `s`: two of 8 bytes, two of 4, or the bytes.
        let (plain, words) = if n >= 8 {
            let flags = json::escape_flags(u64::from_le_bytes(word8(b, 0)))
                | json::escape_flags(u64::from_le_bytes(word8(b, n - 8)));
            (flags == 0, 8)
        } else if n >= 4 {
            let both = u64::from(u32::from_le_bytes(word4(b, 0)))
                | u64::from(u32::from_le_bytes(word4(b, n - 4))) << 32;
            (json::escape_flags(both) == 0, 4)
        } else {
            (!b.iter().fold(false, |e, &c| e | json::needs_escape(c)), 0)
        };
        if plain {
            out.reserve(n + 4);
            if LEAD {
                out.extend_from_slice(&[lead, b'"']);
            } else {
                out.push(b'"');
            }
            let at = out.len();
            match words {
                8 => {
                    out.extend_from_slice(&word8(b, 0));
                    out.truncate(at + n - 8);
                    out.extend_from_slice(&word8(b, n - 8));
                }
                4 => {
                    out.extend_from_slice(&word4(b, 0));
                    out.truncate(at + n - 4);
                    out.extend_from_slice(&word4(b, n - 4));
                }
                _ => out.extend_from_slice(b),
            }
            if TRAIL {
                out.extend_from_slice(&[b'"', trail]);
            } else {
                out.push(b'"');
            }
            return;
        }
    }
    if LEAD {
        out.push(lead);
    }
    long_str(out, s);
    if TRAIL {
        out.push(trail);
    }
}

/// The eight bytes of `b` from `at`.
#[inline(always)]
fn word8(b: &[u8], at: usize) -> [u8; 8] {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    w
}

/// The four bytes of `b` from `at`.
#[inline(always)]
fn word4(b: &[u8], at: usize) -> [u8; 4] {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    w
}

/// A string over 16 bytes, or one holding a byte to escape: checked in one
/// pass the compiler vectorizes and copied whole, or escaped by `json`'s
/// writer (exactly what `serde_json` writes).
#[inline(never)]
fn long_str(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    if !b.iter().fold(false, |e, &c| e | json::needs_escape(c)) {
        out.reserve(b.len() + 2);
        out.push(b'"');
        out.extend_from_slice(b);
        out.push(b'"');
    } else {
        json::write_escaped(out, s);
    }
}

/// The OpenAI declarations as JSON values (what translate declares).
pub fn openai_values(tools: &[&Tool]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            json::object([
                ("type", "function".into()),
                (
                    "function",
                    json::object([
                        ("name", t.name.as_str().into()),
                        ("description", t.description.as_str().into()),
                        ("parameters", t.input_schema.clone()),
                    ]),
                ),
            ])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{ExecContext, Execute, Source, ToolResult};
    use serde_json::json;
    use std::sync::Arc;

    struct Nothing;
    impl Execute for Nothing {
        fn execute(&self, _: &Value, _: &ExecContext) -> ToolResult {
            ToolResult::ok(String::new())
        }
    }

    /// What `serde_json` writes for the provider shapes (the reference the
    /// hand-written renderer must match byte for byte).
    fn reference(p: Style, tools: &[&Tool]) -> String {
        let f = |t: &Tool, key: &str| {
            let mut m = serde_json::Map::new();
            m.insert("name".into(), json!(t.name));
            m.insert("description".into(), json!(t.description));
            m.insert(key.into(), t.input_schema.clone());
            Value::Object(m)
        };
        let v = match p {
            Style::OpenAi | Style::Responses => Value::Array(
                tools
                    .iter()
                    .map(|t| json!({"type": "function", "function": f(t, "parameters")}))
                    .collect(),
            ),
            Style::Anthropic => Value::Array(tools.iter().map(|t| f(t, "input_schema")).collect()),
            Style::Gemini => json!([{"functionDeclarations":
                tools.iter().map(|t| f(t, "parameters")).collect::<Vec<_>>()}]),
        };
        serde_json::to_string(&v).unwrap_or_default()
    }

    /// Strings of every length the word paths take (and past them), each
    /// with a byte to escape at every position, or a two- and three-byte
    /// character there, as names, descriptions, keys and values.
    #[test]
    fn responses_has_no_render_format() {
        assert_eq!(style_of("responses"), None);
        assert_eq!(render(Style::Responses, &[]), None);
        assert_eq!(style_of("gemini"), Some(Style::Gemini));
    }

    #[test]
    fn short_strings_of_every_length_and_escape_position_match_serde_json() {
        let mut texts = Vec::new();
        for n in 0..=40usize {
            let base: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            texts.push(base.clone());
            for at in 0..n {
                for c in [
                    '"', '\\', '\n', '\u{1}', '\u{1f}', '\u{7f}', '\u{e9}', '\u{20ac}',
                ] {
                    let mut s: Vec<char> = base.chars().collect();
                    s[at] = c;
                    texts.push(s.into_iter().collect());
                }
            }
        }
        let tools: Vec<Tool> = texts
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut schema = serde_json::Map::new();
                schema.insert("type".into(), json!("object"));
                schema.insert(s.clone(), json!({"type": s, "enum": [s, 1, null]}));
                schema.insert("required".into(), json!([s]));
                Tool::new(
                    if i % 2 == 0 {
                        s.clone()
                    } else {
                        format!("t{i}")
                    },
                    s.as_str(),
                    Some(Value::Object(schema)),
                    Source::Native,
                    Arc::new(Nothing),
                )
            })
            .collect();
        let refs: Vec<&Tool> = tools.iter().collect();
        for p in [Style::OpenAi, Style::Anthropic, Style::Gemini] {
            let ours = render(p, &refs).unwrap();
            let want = reference(p, &refs);
            if ours != want {
                let at = ours
                    .bytes()
                    .zip(want.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                let around = |t: &str| {
                    let b = t.as_bytes();
                    String::from_utf8_lossy(&b[at.saturating_sub(40)..(at + 40).min(b.len())])
                        .into_owned()
                };
                panic!(
                    "{p:?}: first difference at byte {at}: ours {:?}, serde_json {:?}",
                    around(&ours),
                    around(&want)
                );
            }
        }
    }

    #[test]
    fn hand_written_render_is_byte_identical_to_serde_json() {
        let schemas = [
            json!({"type": "object"}),
            json!({"type": "object", "properties": {"q\"uote\\d": {"type": "string",
                   "description": "tab\there\nline \u{1} \u{7f} caf\u{e9} \u{1F600} </script>"}},
                   "required": ["q\"uote\\d"], "additionalProperties": false}),
            json!({"enum": [null, true, false, 0, -1, 1.5, 1e300, 12345678901234567890u64, -0.0],
                   "nested": [[], {}, [{"a": []}]], "default": 60000}),
        ];
        let tools: Vec<Tool> = schemas
            .iter()
            .enumerate()
            .map(|(i, s)| {
                Tool::new(
                    format!("tool_{i}\u{e9}"),
                    ["", "plain", "needs \"escaping\"\r\n"][i],
                    Some(s.clone()),
                    Source::Native,
                    Arc::new(Nothing),
                )
            })
            .collect();
        let refs: Vec<&Tool> = tools.iter().collect();
        for p in [Style::OpenAi, Style::Anthropic, Style::Gemini] {
            for n in 0..=refs.len() {
                assert_eq!(
                    render(p, &refs[..n]).unwrap(),
                    reference(p, &refs[..n]),
                    "{p:?} {n}"
                );
            }
        }
    }
}
