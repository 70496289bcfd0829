//! Small helpers for reading loosely typed JSON the way every port does.

use serde_json::Value;

/// The JSON type name used in error messages ("expected an array, got a string").
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
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(v @ Value::Object(_)) => v,
            _ => Value::Object(Default::default()),
        },
        Value::Null => Value::Object(Default::default()),
        other => other,
    }
}

/// Appends `s` as a JSON string literal (quotes included), byte for byte what
/// `serde_json` writes: `"` and `\` backslash-escaped, the control characters
/// below U+0020 as `\b \t \n \f \r` or `\u00XX`, everything else verbatim.
/// Scans eight bytes at a time, since tool outputs (a 1 MiB `read`) are
/// mostly long runs that need no escape.
pub fn write_escaped(out: &mut Vec<u8>, s: &str) {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // Whether any byte of `w` is below 0x20, a quote or a backslash.
    fn needs_escape(w: u64) -> bool {
        let has_zero = |x: u64| x.wrapping_sub(LO) & !x & HI != 0;
        (w.wrapping_sub(LO * 0x20) & !w & HI) != 0
            || has_zero(w ^ (LO * 0x22))
            || has_zero(w ^ (LO * 0x5c))
    }
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if i + 8 <= bytes.len() {
            let mut word = [0u8; 8];
            word.copy_from_slice(&bytes[i..i + 8]);
            if !needs_escape(u64::from_le_bytes(word)) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        let esc: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            0..=0x1f => None,
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[start..i]);
        match esc {
            Some(e) => out.extend_from_slice(e),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
            }
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::write_escaped;

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
        ];
        // Every byte value below 0x80 at every offset within a word.
        for b in 0u8..0x80 {
            for off in 0..9 {
                let mut s = "a".repeat(off);
                s.push(b as char);
                s.push_str("bcdefghijk");
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
        for s in samples {
            let want = serde_json::to_string(&s).unwrap_or_default();
            assert_eq!(ours(&s), want, "{s:?}");
        }
    }
}
