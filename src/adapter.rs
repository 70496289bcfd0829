//! Rendering tools as provider declarations (SPEC §0.7, CONTRACT.md §4):
//! schema only, the caller's order, compact JSON.

use crate::tool::Tool;
use serde_json::Value;

/// The provider shapes a tool list renders to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    OpenAi,
    Anthropic,
    Gemini,
}

impl Provider {
    pub fn from_name(name: &str) -> Option<Provider> {
        match name {
            "openai" => Some(Provider::OpenAi),
            "anthropic" => Some(Provider::Anthropic),
            "gemini" => Some(Provider::Gemini),
            _ => None,
        }
    }
}

/// Renders `tools`, in the order given, as the provider's JSON text. Gemini
/// is always one wrapper, even for no tools.
///
/// Written by hand into one buffer sized up front: the text is exactly what
/// `serde_json` gives for the same declarations (the tests hold the two to
/// it), at a fraction of the cost, as a first render after a build is
/// nearly all string escaping.
pub fn render(provider: Provider, tools: &[&Tool]) -> String {
    let mut out = String::with_capacity(64 + tools.iter().map(|t| estimate(t)).sum::<usize>());
    let (open, close) = match provider {
        Provider::Gemini => ("[{\"functionDeclarations\":[", "]}]"),
        _ => ("[", "]"),
    };
    out.push_str(open);
    for (i, t) in tools.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match provider {
            Provider::OpenAi => {
                out.push_str("{\"type\":\"function\",\"function\":");
                function(&mut out, t, "parameters");
                out.push('}');
            }
            Provider::Anthropic => function(&mut out, t, "input_schema"),
            Provider::Gemini => function(&mut out, t, "parameters"),
        }
    }
    out.push_str(close);
    out
}

/// Room for one tool's declaration: its strings and a schema of the usual
/// size (the buffer grows past it when needed).
fn estimate(t: &Tool) -> usize {
    96 + t.name.len() + t.description.len() + 160
}

/// `{"name":…,"description":…,"<schema_key>":…}`.
fn function(out: &mut String, t: &Tool, schema_key: &str) {
    out.push_str("{\"name\":");
    write_str(out, &t.name);
    out.push_str(",\"description\":");
    write_str(out, &t.description);
    out.push_str(",\"");
    out.push_str(schema_key);
    out.push_str("\":");
    write_value(out, &t.input_schema);
    out.push('}');
}

/// A JSON value as compact text, as `serde_json` writes it.
fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_str(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, k);
                out.push(':');
                write_value(out, x);
            }
            out.push('}');
        }
    }
}

/// The bytes JSON escapes in a string: controls, `"` and `\`.
const ESCAPED: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// A JSON string. Text with nothing to escape (nearly all of it) is copied
/// whole after one branch-free table scan; anything else is escaped by
/// `serde_json` itself.
fn write_str(out: &mut String, s: &str) {
    let plain = !s
        .bytes()
        .fold(false, |esc, b| esc | ESCAPED[usize::from(b)]);
    if plain {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&Value::from(s).to_string());
    }
}

/// The OpenAI declarations as JSON values (what translate declares).
pub fn openai_values(tools: &[&Tool]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            serde_json::json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.input_schema}})
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
    fn reference(p: Provider, tools: &[&Tool]) -> String {
        let f = |t: &Tool, key: &str| {
            let mut m = serde_json::Map::new();
            m.insert("name".into(), json!(t.name));
            m.insert("description".into(), json!(t.description));
            m.insert(key.into(), t.input_schema.clone());
            Value::Object(m)
        };
        let v = match p {
            Provider::OpenAi => Value::Array(
                tools
                    .iter()
                    .map(|t| json!({"type": "function", "function": f(t, "parameters")}))
                    .collect(),
            ),
            Provider::Anthropic => {
                Value::Array(tools.iter().map(|t| f(t, "input_schema")).collect())
            }
            Provider::Gemini => json!([{"functionDeclarations":
                tools.iter().map(|t| f(t, "parameters")).collect::<Vec<_>>()}]),
        };
        serde_json::to_string(&v).unwrap_or_default()
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
        for p in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
            for n in 0..=refs.len() {
                assert_eq!(render(p, &refs[..n]), reference(p, &refs[..n]), "{p:?} {n}");
            }
        }
    }
}
