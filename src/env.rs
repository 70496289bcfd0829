//! `${NAME}` expansion from the process environment, shared by HTTP tool
//! headers and MCP server headers (SPEC §0.3, §7), and the redaction of what
//! it expanded. Expanded values are secrets: they go into the request and
//! nowhere else. A server may still echo them back (a 401 page quoting the
//! request, a debug endpoint), so everything a caller derives from the
//! answer — output, metadata, status, error text — goes through
//! [`Secrets::redact`] before it leaves the library.

use serde_json::Value;
use std::borrow::Cow;

/// What an expanded secret is replaced with wherever it appears (the same
/// marker translate puts in place of its API key).
pub const REDACTED: &str = "[redacted]";

/// The shortest run of base64 characters that is still taken for a secret's
/// trace: shorter runs would match unrelated text.
const MIN_BASE64_RUN: usize = 8;

/// `secret` as written, and as it reads after each encoding a server may
/// apply before echoing it.
fn spellings(secret: &str) -> Vec<String> {
    use base64::Engine;
    use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
    const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    let mut forms = vec![secret.to_string()];
    let json = serde_json::to_string(secret).unwrap_or_default();
    forms.push(
        json.get(1..json.len().saturating_sub(1))
            .unwrap_or_default()
            .to_string(),
    );
    let mut ascii = String::new();
    for c in forms[1].chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                ascii.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    forms.push(ascii);
    forms.push(utf8_percent_encode(secret, NON_ALPHANUMERIC).to_string());
    forms.push(utf8_percent_encode(secret, UNRESERVED).to_string());
    forms.push(
        utf8_percent_encode(secret, UNRESERVED)
            .to_string()
            .replace("%20", "+"),
    );
    // In base64 the secret's bytes start at one of three offsets within a
    // 3-byte group; for each, the characters that depend on the secret alone.
    for engine in [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::URL_SAFE,
    ] {
        for pad in 0..3usize {
            let mut bytes = vec![0u8; pad];
            bytes.extend_from_slice(secret.as_bytes());
            let text = engine.encode(&bytes);
            let text = text.trim_end_matches('=');
            // The first pad bytes touch ceil(4 * pad / 3) characters; the
            // last group may be partial.
            let start = (4 * pad).div_ceil(3);
            let whole = (bytes.len() / 3) * 4;
            if whole > start && whole - start >= MIN_BASE64_RUN {
                forms.push(text[start..whole.min(text.len())].to_string());
            }
        }
    }
    forms
}

/// Expands every `${NAME}` in `template` from the process environment, NAME
/// being `[A-Za-z_][A-Za-z0-9_]*`; an unset variable expands to `""`. Anything
/// else (`$NAME`, `${1BAD}`, an unterminated `${`) stays as written.
pub fn expand(template: &str) -> String {
    Secrets::default().expand(template)
}

/// The values some `${NAME}` references expanded to, remembered so they can
/// be taken out of whatever comes back. Deliberately not `Debug`.
#[derive(Default, Clone)]
pub struct Secrets {
    /// Distinct non-empty values, longest first, so a value that contains
    /// another is replaced whole.
    values: Vec<String>,
}

impl Secrets {
    /// [`expand`], remembering each non-empty value it put in.
    pub fn expand(&mut self, template: &str) -> String {
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            match after.find('}') {
                Some(end) if is_env_name(&after[..end]) => {
                    if let Some(value) = std::env::var_os(&after[..end]) {
                        let value = value.to_string_lossy();
                        out.push_str(&value);
                        self.remember(&value);
                    }
                    rest = &after[end + 1..];
                }
                _ => {
                    out.push_str("${");
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// Adds one secret value (ignored when empty or already known), with
    /// every other spelling of it a server may echo back: JSON-escaped
    /// (also with non-ASCII as `\uXXXX`, as Python writes it),
    /// percent-encoded, and inside base64 (a `Basic` header, a token that
    /// wraps it) at each of the three alignments.
    pub fn remember(&mut self, value: &str) {
        if value.is_empty() {
            return;
        }
        for form in spellings(value) {
            self.insert(form);
        }
    }

    fn insert(&mut self, value: String) {
        if value.is_empty() || self.values.contains(&value) {
            return;
        }
        let at = self
            .values
            .iter()
            .position(|v| v.len() < value.len())
            .unwrap_or(self.values.len());
        self.values.insert(at, value);
    }

    /// Whether nothing was expanded (then redaction is a no-op).
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every occurrence of every secret replaced by [`REDACTED`];
    /// borrowed unchanged when none occurs.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = Cow::Owned(out.replace(v.as_str(), REDACTED));
            }
        }
        out
    }

    /// Redacts `text` in place.
    pub fn redact_string(&self, text: &mut String) {
        if let Cow::Owned(clean) = self.redact(text) {
            *text = clean;
        }
    }

    /// Redacts every string (and object key) inside a JSON value.
    pub fn redact_value(&self, v: &mut Value) {
        if self.is_empty() {
            return;
        }
        match v {
            Value::String(s) => self.redact_string(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.redact_value(i)),
            Value::Object(m) => {
                let dirty = m.keys().any(|k| matches!(self.redact(k), Cow::Owned(_)));
                if dirty {
                    let taken = std::mem::take(m);
                    for (k, mut val) in taken {
                        self.redact_value(&mut val);
                        m.insert(self.redact(&k).into_owned(), val);
                    }
                } else {
                    m.values_mut().for_each(|val| self.redact_value(val));
                }
            }
            _ => {}
        }
    }
}

fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_taken_out_of_base64_at_every_offset_and_of_its_escaped_forms() {
        use base64::Engine;
        let secret = "s3cr3t-v@lue/with+stuff";
        let mut s = Secrets::default();
        s.remember(secret);
        for prefix in ["", "u:", "us:", "use:"] {
            for engine in [
                &base64::engine::general_purpose::STANDARD,
                &base64::engine::general_purpose::URL_SAFE,
            ] {
                let b64 = engine.encode(format!("{prefix}{secret}"));
                let text = format!("Authorization: Basic {b64}");
                let clean = s.redact(&text);
                assert!(clean.contains(REDACTED), "{prefix:?}: {clean}");
                // What is left of the base64 is at most the few characters
                // the prefix and the last partial group share with it.
                let left = clean
                    .replace("Authorization: Basic ", "")
                    .replace(REDACTED, "");
                assert!(left.len() <= 10, "{prefix:?}: {clean}");
            }
        }
        let encoded =
            percent_encoding::utf8_percent_encode(secret, percent_encoding::NON_ALPHANUMERIC);
        assert_eq!(s.redact(&format!("?k={encoded}")), format!("?k={REDACTED}"));
        // Short secrets leave base64 alone: eight characters could be anything.
        let mut short = Secrets::default();
        short.remember("abc");
        assert_eq!(short.redact("YWJj"), "YWJj");
    }

    fn secrets(values: &[&str]) -> Secrets {
        let mut s = Secrets::default();
        for v in values {
            s.remember(v);
        }
        s
    }

    #[test]
    fn every_occurrence_is_replaced_longest_first() {
        let s = secrets(&["tok", "tok-long", ""]);
        assert_eq!(
            s.redact("a tok-long b tok c"),
            "a [redacted] b [redacted] c"
        );
        assert!(matches!(s.redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn expansion_remembers_what_it_put_in() {
        std::env::set_var("TN_ENV_REDACT_TEST", "v4lue");
        let mut s = Secrets::default();
        assert_eq!(
            s.expand("Bearer ${TN_ENV_REDACT_TEST} ${TN_ENV_REDACT_UNSET_Q}"),
            "Bearer v4lue "
        );
        assert_eq!(s.redact("echo v4lue"), "echo [redacted]");
    }
}
