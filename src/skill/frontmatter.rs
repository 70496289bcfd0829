//! SKILL.md front matter (SPEC §3): the `---` fences, then a real YAML parse
//! of the block between them.
//!
//! The decisions follow divergences.json (`skills/frontmatter/*`): block
//! scalars, flow collections and nested maps are valid YAML (extra keys are
//! ignored), quoted scalars process their escapes, ` # ...` after a plain
//! scalar is a comment, null or an empty value means the key is absent,
//! scalars are coerced to strings and trimmed, and a duplicate key makes the
//! whole front matter malformed.
//!
//! A block the YAML parser refuses for any other reason (typically a plain
//! scalar holding `: `, as in `description: Gamma: with a colon`) gets the
//! line-wise rescue every shipped port effectively applies (upstream ADR
//! 0028): column-0 `name:` / `description:` lines, first wins, a value that
//! opens a YAML construct (`| > & * [ { !`) refused rather than guessed.

use serde_yaml_ng::Value as Yaml;

/// What the front matter of one file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrontMatter {
    /// Parsed: `name` (when present and non-blank), `description` (when
    /// present and non-blank), and the body after the closing fence.
    Parsed {
        name: Option<String>,
        description: Option<String>,
        body: String,
    },
    /// The file does not open with a `---` fence.
    Absent,
    /// An unclosed fence, YAML the parser refuses, a duplicate key, or a
    /// block that is not a mapping.
    Malformed,
}

/// Lines as the JVM's `split("\r?\n")` yields them: trailing empty lines are
/// dropped, a lone empty text is one empty line.
fn split_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    while lines.len() > 1 && lines.last() == Some(&"") {
        lines.pop();
    }
    if lines.len() == 1 && lines[0].is_empty() && !text.is_empty() {
        lines.clear();
    }
    lines
}

/// Parses the front matter of a SKILL.md text.
pub fn parse(text: &str) -> FrontMatter {
    let lines = split_lines(text);
    if lines.first().map(|l| l.trim()) != Some("---") {
        return FrontMatter::Absent;
    }
    let Some(close) = lines[1..].iter().position(|l| l.trim() == "---") else {
        return FrontMatter::Malformed;
    };
    let block = lines[1..1 + close].join("\n");
    let body = lines[2 + close..].join("\n");
    let doc: Yaml = match serde_yaml_ng::from_str(&block) {
        Ok(v) => v,
        Err(e) if e.to_string().starts_with("duplicate entry") => return FrontMatter::Malformed,
        Err(_) => return rescue(&block, body),
    };
    let map = match doc {
        Yaml::Null => serde_yaml_ng::Mapping::new(),
        Yaml::Mapping(m) => m,
        _ => return FrontMatter::Malformed,
    };
    FrontMatter::Parsed {
        name: scalar(map.get("name")),
        description: scalar(map.get("description")),
        body,
    }
}

/// Reads `name` and `description` line by line from a block YAML refused.
fn rescue(block: &str, body: String) -> FrontMatter {
    let mut name = None;
    let mut description = None;
    for line in block.lines() {
        if line.starts_with([' ', '\t', '#']) {
            continue;
        }
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
    if name.is_none() {
        return FrontMatter::Malformed;
    }
    FrontMatter::Parsed {
        name,
        description,
        body,
    }
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
            } => (name, description, body),
            other => panic!("expected parsed front matter, got {other:?}"),
        }
    }

    #[test]
    fn body_keeps_leading_blank_line_and_drops_trailing_ones() {
        let (n, d, b) = parsed("---\nname: a\ndescription: b\n---\n\n# A\n\n\n");
        assert_eq!(n.as_deref(), Some("a"));
        assert_eq!(d.as_deref(), Some("b"));
        assert_eq!(b, "\n# A");
    }

    #[test]
    fn crlf_lines_are_rejoined_with_lf() {
        let (_, _, b) = parsed("---\r\nname: a\r\n---\r\nl1\r\nl2\r\n");
        assert_eq!(b, "l1\nl2");
    }

    #[test]
    fn only_first_closing_fence_ends_the_block() {
        let (_, _, b) = parsed("---\nname: d\n---\nabove\n---\nbelow\n");
        assert_eq!(b, "above\n---\nbelow");
    }

    #[test]
    fn no_fence_is_absent_and_unclosed_is_malformed() {
        assert_eq!(parse("# title\nbody\n"), FrontMatter::Absent);
        assert_eq!(parse("---\nname: x\nbody\n"), FrontMatter::Malformed);
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

    #[test]
    fn block_that_is_not_a_mapping_is_malformed() {
        assert_eq!(parse("---\n- a\n- b\n---\nbody"), FrontMatter::Malformed);
        assert_eq!(parse("---\njust text\n---\nbody"), FrontMatter::Malformed);
    }

    #[test]
    fn duplicate_key_is_malformed() {
        assert_eq!(
            parse("---\nname: a\nname: b\n---\nx"),
            FrontMatter::Malformed
        );
    }

    #[test]
    fn colon_in_plain_value_is_rescued_line_wise() {
        let (n, d, _) =
            parsed("---\nname: g\ndescription: G: with a colon, \"q\" \\ in it.\n---\nx");
        assert_eq!(n.as_deref(), Some("g"));
        assert_eq!(d.as_deref(), Some("G: with a colon, \"q\" \\ in it."));
    }

    #[test]
    fn rescue_refuses_yaml_constructs_and_needs_a_name() {
        assert_eq!(parse("---\nname: [a\n---\nx"), FrontMatter::Malformed);
        let (_, d, _) = parsed("---\nname: 'q: x'\ndescription: a: b\n---\n");
        assert_eq!(d.as_deref(), Some("a: b"));
    }

    #[test]
    fn collection_name_is_treated_as_missing() {
        assert_eq!(parsed("---\nname: [a, b]\n---\nx").0, None);
    }
}
