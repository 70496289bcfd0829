//! SKILL.md front matter (SPEC §3, upstream ADR 0028): the `---` fences,
//! then a real YAML parse of the block between them, then — only for a block
//! YAML refused — a line-wise rescue of `name` and `description`.
//!
//! The fences are the ones every other port matches (`^---\n(.*?)\n---\n?(.*)$`
//! over the text with its line ends made `\n`): the file opens with a `---`
//! line, and the block ends at the first line that *starts* with `---` (an
//! indented `---` is block text). A front matter that is never closed is no
//! front matter at all, so the file is skipped as `missing-name`. The body is
//! everything after the closing fence's line end, trailing newlines kept.
//!
//! The YAML decisions follow divergences.json (`skills/frontmatter/*`): block
//! scalars, flow collections and nested maps are valid YAML (extra keys are
//! ignored), quoted scalars process their escapes, ` # ...` after a plain
//! scalar is a comment, null or an empty value means the key is absent,
//! scalars are coerced to strings and trimmed, and a duplicate key makes the
//! whole front matter malformed.
//!
//! A block the YAML parser refuses for any other reason (typically a plain
//! scalar holding `: `, as in `description: Trigger on: x`, which Claude Code
//! loads), a block that is not a mapping, or a mapping whose `name` or
//! `description` is a collection, gets the line-wise rescue of upstream ADR
//! 0028: column-0 `name:` / `description:` lines, first wins, a value that
//! opens a YAML construct (`| > & * [ { !`) refused rather than guessed. The
//! YAML parser's own message is kept as the `detail` of any skip.
//!
//! A block longer than [`MAX_BLOCK_BYTES`], or holding more than
//! [`MAX_FLOW_OPENERS`] `[`/`{`, never reaches the YAML parser (a long run of
//! `[` makes it slow); it is treated as refused, with a detail saying so, and
//! only the rescue reads it.

use serde_yaml_ng::Value as Yaml;
use std::borrow::Cow;

/// The longest front-matter block handed to the YAML parser, in bytes. Real
/// front matter is a few hundred bytes (Claude Code caps a description at
/// 1,024 characters). The parser's time grows faster than the block does on
/// nested flow collections (16 KiB of `[` takes a fifth of a second, 100 KiB
/// over a second), hence this cap and [`MAX_FLOW_OPENERS`].
pub const MAX_BLOCK_BYTES: usize = 8 * 1024;

/// The most `[` and `{` a block handed to the YAML parser may hold.
pub const MAX_FLOW_OPENERS: usize = 512;

/// What the front matter of one file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrontMatter {
    /// Parsed: `name` (when present and non-blank), `description` (when
    /// present and non-blank), the body after the closing fence, and the
    /// YAML parser's refusal when the fields came from the rescue (empty
    /// otherwise).
    Parsed {
        name: Option<String>,
        description: Option<String>,
        body: String,
        detail: String,
    },
    /// No front matter: the file does not open with a `---` line, or the
    /// block is never closed.
    Absent,
    /// YAML refused the block and the rescue found no name, or a key is
    /// duplicated; `detail` is the parser's message.
    Malformed { detail: String },
}

/// The text with `\r\n` and lone `\r` made `\n` (what the Python port's
/// universal-newline read does before its regex sees the text).
fn normalize_newlines(text: &str) -> Cow<'_, str> {
    if crate::sys::bytes::find(b'\r', text.as_bytes()).is_none() {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// `(block, body)` of a text that has front matter.
fn fences(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("---\n")?;
    let close = rest.find("\n---")?;
    let after = &rest[close + 4..];
    Some((&rest[..close], after.strip_prefix('\n').unwrap_or(after)))
}

/// The parser's message on one line.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Parses the front matter of a SKILL.md text.
pub fn parse(text: &str) -> FrontMatter {
    parse_with(text, true)
}

/// [`parse`], with or without the fast path for simple blocks (the tests
/// hold the two to one answer).
fn parse_with(text: &str, fast: bool) -> FrontMatter {
    let text = normalize_newlines(text);
    let Some((block, body)) = fences(&text) else {
        return FrontMatter::Absent;
    };
    let body = body.to_string();
    if block.len() > MAX_BLOCK_BYTES {
        let detail = format!(
            "the front matter is {} bytes, more than the {MAX_BLOCK_BYTES} bytes given to the YAML parser",
            block.len()
        );
        return refused(block, body, detail);
    }
    let openers = block.bytes().filter(|b| matches!(b, b'[' | b'{')).count();
    if openers > MAX_FLOW_OPENERS {
        let detail = format!(
            "the front matter holds {openers} '[' and '{{', more than the {MAX_FLOW_OPENERS} given to the YAML parser"
        );
        return refused(block, body, detail);
    }
    if let Some((name, description)) = simple_block(block).filter(|_| fast) {
        return FrontMatter::Parsed {
            name,
            description,
            body,
            detail: String::new(),
        };
    }
    let map = match serde_yaml_ng::from_str::<Yaml>(block) {
        Ok(Yaml::Null) => serde_yaml_ng::Mapping::new(),
        Ok(Yaml::Mapping(m)) => m,
        Ok(other) => {
            // Not refused, only not a mapping: the rescue may still find a
            // name; without one the file has none (`missing-name`).
            let (name, description) = rescue(block, None, None);
            return FrontMatter::Parsed {
                name,
                description,
                body,
                detail: format!(
                    "the front matter is a YAML {}, not a mapping",
                    kind_of(&other)
                ),
            };
        }
        Err(e) => {
            let detail = one_line(&e.to_string());
            if detail.starts_with("duplicate entry") {
                return FrontMatter::Malformed { detail };
            }
            return refused(block, body, detail);
        }
    };
    let mut name = scalar(map.get("name"));
    let mut description = scalar(map.get("description"));
    // Upstream addendum A10: a name or description that YAML read as a
    // collection is structurally wrong, and the rescue may fill it in (a
    // null means "absent", as divergences.json decides, and is kept so).
    let collection = |key: &str| {
        matches!(
            map.get(key),
            Some(Yaml::Sequence(_) | Yaml::Mapping(_) | Yaml::Tagged(_))
        )
    };
    if (name.is_none() && collection("name"))
        || (description.is_none() && collection("description"))
    {
        (name, description) = rescue(block, name, description);
    }
    FrontMatter::Parsed {
        name,
        description,
        body,
        detail: String::new(),
    }
}

/// The most keys [`simple_block`] reads; a longer block goes to YAML.
const SIMPLE_MAX_KEYS: usize = 16;

/// The `name` and `description` of a block made only of lines YAML can read
/// one way alone — what nearly every SKILL.md holds — without the YAML
/// parser; None whenever the block is anything else, and the parser reads
/// it. The fast path never decides a case the parser could decide otherwise:
///
/// - every line is empty or `key: value`, the key at column 0 and made of
///   lowercase ASCII letters, digits, `_` and `-`, starting with a letter,
///   one or more spaces after the colon (no tab), and no key twice;
/// - a key is never one YAML resolves to a non-string (`null`, `true`, ...),
///   so two keys differ exactly when their text does;
/// - a value is printable ASCII, starts with an ASCII letter (so it is
///   never a number, an indicator, a quote, an anchor, a tag or a block
///   scalar), holds no `:` or `#` (no nested mapping, no comment) and no
///   flow bracket, and is not one of YAML's null or boolean words: a plain
///   scalar that reads as its own text, trailing spaces aside.
fn simple_block(block: &str) -> Option<(Option<String>, Option<String>)> {
    let mut keys: [&str; SIMPLE_MAX_KEYS] = [""; SIMPLE_MAX_KEYS];
    let mut count = 0;
    let (mut name, mut description) = (None, None);
    for line in block.split('\n') {
        if line.is_empty() {
            continue;
        }
        let (key, rest) = line.split_once(':')?;
        let value = rest.strip_prefix(' ')?.trim_matches(' ');
        if !simple_key(key) || !simple_value(value) || count == SIMPLE_MAX_KEYS {
            return None;
        }
        if keys[..count].contains(&key) {
            return None;
        }
        keys[count] = key;
        count += 1;
        match key {
            "name" => name = Some(value.to_string()),
            "description" => description = Some(value.to_string()),
            _ => {}
        }
    }
    (count > 0).then_some((name, description))
}

/// YAML's words for null and the booleans, in any case (a superset of what
/// the parser resolves, so a word it might read as a non-string never takes
/// the fast path).
fn yaml_word(s: &str) -> bool {
    ["null", "true", "false", "yes", "no", "on", "off", "y", "n"]
        .iter()
        .any(|w| s.eq_ignore_ascii_case(w))
}

fn simple_key(key: &str) -> bool {
    let b = key.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
        && !yaml_word(key)
}

fn simple_value(value: &str) -> bool {
    let b = value.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphabetic()
        && b.iter().all(|&c| {
            (0x20..0x7f).contains(&c) && !matches!(c, b':' | b'#' | b'[' | b']' | b'{' | b'}')
        })
        && !yaml_word(value)
}

/// A block YAML refused (or was never given): the rescue's name and
/// description, or malformed when it finds no name.
fn refused(block: &str, body: String, detail: String) -> FrontMatter {
    match rescue(block, None, None) {
        (None, _) => FrontMatter::Malformed { detail },
        (name, description) => FrontMatter::Parsed {
            name,
            description,
            body,
            detail,
        },
    }
}

fn kind_of(v: &Yaml) -> &'static str {
    match v {
        Yaml::Sequence(_) => "sequence",
        Yaml::Tagged(_) => "tagged value",
        _ => "scalar",
    }
}

/// Reads `name` and `description` line by line, keeping any value already
/// given: column-0 `key:` lines only, the first usable value of each key
/// wins, a value opening a YAML construct is refused.
fn rescue(
    block: &str,
    mut name: Option<String>,
    mut description: Option<String>,
) -> (Option<String>, Option<String>) {
    for line in block.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let slot = match key {
            "name" => &mut name,
            "description" => &mut description,
            _ => continue,
        };
        let value = value.trim();
        if slot.is_some()
            || value.is_empty()
            || value.starts_with(['|', '>', '&', '*', '[', '{', '!'])
        {
            continue;
        }
        *slot = Some(unquote(value).trim().to_string()).filter(|v| !v.is_empty());
    }
    (name, description)
}

/// `"x"` or `'x'` without its quotes; anything else as is.
fn unquote(v: &str) -> &str {
    let b = v.as_bytes();
    if b.len() > 1 && (b[0] == b'"' || b[0] == b'\'') && b[b.len() - 1] == b[0] {
        &v[1..v.len() - 1]
    } else {
        v
    }
}

/// A scalar as a trimmed string; absent, null, blank or a collection is None.
fn scalar(v: Option<&Yaml>) -> Option<String> {
    let s = match v? {
        Yaml::String(s) => s.clone(),
        Yaml::Number(n) => n.to_string(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Tagged(t) => return scalar(Some(&t.value)),
        Yaml::Null | Yaml::Sequence(_) | Yaml::Mapping(_) => return None,
    };
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> (Option<String>, Option<String>, String) {
        match parse(text) {
            FrontMatter::Parsed {
                name,
                description,
                body,
                ..
            } => (name, description, body),
            other => panic!("expected parsed front matter, got {other:?}"),
        }
    }

    fn malformed_detail(text: &str) -> String {
        match parse(text) {
            FrontMatter::Malformed { detail } => detail,
            other => panic!("expected malformed front matter, got {other:?}"),
        }
    }

    // Follows upstream test_unit.py::test_frontmatter_malformed_yaml_does_not_crash
    // (`content == "body\n"`): the body keeps its trailing newlines.
    #[test]
    fn body_keeps_leading_and_trailing_blank_lines() {
        let (n, d, b) = parsed("---\nname: a\ndescription: b\n---\n\n# A\n\n\n");
        assert_eq!(n.as_deref(), Some("a"));
        assert_eq!(d.as_deref(), Some("b"));
        assert_eq!(b, "\n# A\n\n\n");
    }

    #[test]
    fn crlf_and_lone_cr_become_lf() {
        let (n, _, b) = parsed("---\r\nname: a\r\n---\r\nl1\r\nl2\rl3\r\n");
        assert_eq!(n.as_deref(), Some("a"));
        assert_eq!(b, "l1\nl2\nl3\n");
    }

    #[test]
    fn only_first_closing_fence_ends_the_block() {
        let (_, _, b) = parsed("---\nname: d\n---\nabove\n---\nbelow\n");
        assert_eq!(b, "above\n---\nbelow\n");
    }

    // The fence regex every other port uses: a closing `---` counts only at
    // the start of a line; an indented one is block text.
    #[test]
    fn an_indented_fence_does_not_close_the_block() {
        let (n, d, b) = parsed("---\nname: i\ndescription: |\n  text\n  ---\n  more\n---\nbody\n");
        assert_eq!(n.as_deref(), Some("i"));
        assert_eq!(d.as_deref(), Some("text\n---\nmore"));
        assert_eq!(b, "body\n");
        // With no fence at a line start the block is never closed.
        assert_eq!(parse("---\nname: x\n  ---\nbody\n"), FrontMatter::Absent);
    }

    // Follows upstream test_consumer_issues_86_93.py::
    // test_d6_genuinely_malformed_files_are_still_refused (broken-unclosed is
    // `missing-name`): an unclosed front matter is no front matter.
    #[test]
    fn no_fence_and_unclosed_fence_are_absent() {
        assert_eq!(parse("# title\nbody\n"), FrontMatter::Absent);
        assert_eq!(parse("---\nname: x\nbody\n"), FrontMatter::Absent);
        assert_eq!(parse(" ---\nname: x\n---\nbody\n"), FrontMatter::Absent);
    }

    #[test]
    fn numbers_and_booleans_become_strings() {
        assert_eq!(
            parsed("---\nname: 12345\n---\n").0.as_deref(),
            Some("12345")
        );
        assert_eq!(
            parsed("---\nname: n\ndescription: true\n---\n")
                .1
                .as_deref(),
            Some("true")
        );
    }

    // Upstream: a block that parses but is not a mapping is not "malformed"
    // (PyYAML raised nothing): the rescue runs, and with no name the file is
    // `missing-name`, with a detail saying what YAML read.
    #[test]
    fn block_that_is_not_a_mapping_has_no_name() {
        for text in ["---\n- a\n- b\n---\nbody", "---\njust text\n---\nbody"] {
            match parse(text) {
                FrontMatter::Parsed { name, detail, .. } => {
                    assert_eq!(name, None, "{text:?}");
                    assert!(detail.contains("not a mapping"), "{detail}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn duplicate_key_is_malformed_with_the_parsers_words() {
        let detail = malformed_detail("---\nname: a\nname: b\n---\nx");
        assert!(detail.contains("duplicate entry"), "{detail}");
    }

    // Follows upstream test_consumer_issues_86_93.py::
    // test_d6_the_fallback_rescues_frontmatter_yaml_refused and the
    // `colon-space` row of test_d6_the_fixture_table_is_the_cross_port_arbiter.
    #[test]
    fn colon_in_plain_value_is_rescued_line_wise_with_the_detail_kept() {
        match parse(
            "---\nname: t\ndescription: Work out hours. Trigger on: update the timesheet.\n---\nx",
        ) {
            FrontMatter::Parsed {
                name,
                description,
                detail,
                ..
            } => {
                assert_eq!(name.as_deref(), Some("t"));
                assert_eq!(
                    description.as_deref(),
                    Some("Work out hours. Trigger on: update the timesheet.")
                );
                assert!(!detail.is_empty(), "the YAML refusal is kept");
            }
            other => panic!("{other:?}"),
        }
    }

    // Follows upstream test_consumer_issues_86_93.py::
    // test_d6_skips_carry_the_native_parser_detail and the `broken-flow` row
    // of the fixture table (a value opening `[` is refused, never invented).
    #[test]
    fn rescue_refuses_yaml_constructs_and_needs_a_name() {
        assert!(!malformed_detail("---\n: [unclosed\n---\nbody\n").is_empty());
        assert!(!malformed_detail("---\nname: [a\n---\nx").is_empty());
        let (n, d, _) = parsed("---\nname: flow\ndescription: [unterminated\n---\n");
        assert_eq!((n.as_deref(), d), (Some("flow"), None));
        let (_, d, _) = parsed("---\nname: 'q: x'\ndescription: a: b\n---\n");
        assert_eq!(d.as_deref(), Some("a: b"));
    }

    // Follows the `broken-tab` row of upstream's fixture table.
    #[test]
    fn tab_indented_continuation_is_skipped_by_the_rescue() {
        let (n, d, _) =
            parsed("---\nname: tab\ndescription: tab-indented continuation\n\tmore: x\n---\n");
        assert_eq!(n.as_deref(), Some("tab"));
        assert_eq!(d.as_deref(), Some("tab-indented continuation"));
    }

    // The fast path for simple blocks gives exactly what the YAML parser
    // gives, on every block built from these lines (tricky values and keys
    // included), and it does run on the ordinary ones.
    #[test]
    fn the_simple_block_fast_path_agrees_with_the_yaml_parser() {
        let values = [
            "skill-0001",
            "Benchmark skill number 1 of 1000.",
            "a  b",
            "trailing   ",
            "Yes",
            "no",
            "NULL",
            "Null",
            "nan",
            "inf",
            "e5",
            "a #b",
            "a#b",
            "a: b",
            "a:b",
            "a - b",
            "it's",
            "say \"hi\"",
            "a !b",
            "a &b *c",
            "a|b >c",
            "tab\there",
            "caf\u{e9}",
            "a,b",
            "a [b]",
            "a {b}",
            "True",
            "off",
            "On",
            "x%y",
            "a\\b",
            "a ? b",
            "a`b",
            "a@b",
            "a ~",
            "n",
            "y",
            "Z",
            "1.5",
            "0x1F",
            "'q'",
            "\"q\"",
            "|",
            ">",
            "&a x",
            "*a",
            "!t x",
            "-",
            "- x",
            "? x",
            "~",
            "",
            "%x",
            "@x",
            "`x",
            ".inf",
            "a\u{85}b",
            "a\u{2028}b",
        ];
        let keys = [
            "name",
            "description",
            "license",
            "allowed-tools",
            "true",
            "null",
            "on",
            "e",
            "k_2",
            "Name",
            "name ",
            "-x",
            " name",
            "name\t",
            "<<",
            "y",
        ];
        let mut lines = Vec::new();
        for k in keys {
            for v in values {
                lines.push(format!("{k}: {v}"));
            }
            lines.push(format!("{k}:"));
            lines.push(format!("{k}:x"));
            lines.push(format!("{k}:\tx"));
        }
        lines.extend(["", "  indented: x", "# comment", "...", "- item"].map(String::from));
        let first = [
            "name: skill-0001",
            "name: a: b",
            "name: Yes",
            "description: d",
        ];
        let mut fast_taken = 0;
        for a in first {
            for b in &lines {
                for c in ["", "description: Benchmark skill.", "name: dup", "\n"] {
                    let text = format!("---\n{a}\n{b}\n{c}\n---\nbody\n");
                    assert_eq!(
                        parse_with(&text, true),
                        parse_with(&text, false),
                        "{text:?}"
                    );
                    let block = &text[4..text.len() - 10];
                    fast_taken += usize::from(simple_block(block).is_some());
                }
            }
        }
        assert!(fast_taken > 500, "the fast path ran {fast_taken} times");
        let bench = "---\nname: skill-0001\ndescription: Benchmark skill number 1 of 1000.\n---\n";
        assert!(simple_block(&bench[4..bench.len() - 5]).is_some());
    }

    #[test]
    fn collection_name_is_treated_as_missing() {
        assert_eq!(parsed("---\nname: [a, b]\n---\nx").0, None);
    }

    // A front matter over the cap never reaches the YAML parser: a long run of
    // `[` is a skip with a reason (not a long parse), and a big block that
    // still names its skill on a column-0 line loads through the rescue.
    #[test]
    fn a_block_over_the_cap_is_refused_without_a_yaml_parse() {
        let brackets = format!("---\n{}\n---\nbody\n", "[".repeat(100 * 1024));
        let detail = malformed_detail(&brackets);
        assert!(detail.contains("more than the 8192 bytes"), "{detail}");
        // Under the size cap, a run of `[` is refused by its count.
        let detail = malformed_detail(&format!("---\n{}\n---\nbody\n", "[".repeat(4000)));
        assert!(detail.contains("4000 '[' and '{'"), "{detail}");
        let big = format!(
            "---\nname: big\ndescription: d\nnotes: |\n{}---\nbody\n",
            "  line\n".repeat(2000)
        );
        let (n, d, _) = parsed(&big);
        assert_eq!((n.as_deref(), d.as_deref()), (Some("big"), Some("d")));
    }
}
