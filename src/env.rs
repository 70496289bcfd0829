//! `${NAME}` expansion from the process environment, shared by HTTP tool
//! headers and MCP server headers (SPEC §0.3, §7). Expanded values are
//! secrets: callers never log them or put them in an error.

/// Expands every `${NAME}` in `template` from the process environment, NAME
/// being `[A-Za-z_][A-Za-z0-9_]*`; an unset variable expands to `""`. Anything
/// else (`$NAME`, `${1BAD}`, an unterminated `${`) stays as written.
pub fn expand(template: &str) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) if is_env_name(&after[..end]) => {
                if let Some(value) = std::env::var_os(&after[..end]) {
                    out.push_str(&value.to_string_lossy());
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

fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
