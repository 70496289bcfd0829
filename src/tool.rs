//! Tool and ToolResult: the uniform shape every source collapses into
//! (CONTRACT.md §2, SPEC §0.1).

use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Where a tool came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    Skill,
    Builtin,
    Mcp,
    Http,
    Native,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Skill => "skill",
            Source::Builtin => "builtin",
            Source::Mcp => "mcp",
            Source::Http => "http",
            Source::Native => "native",
        }
    }
}

/// What a tool hands back. A failing tool is a value (`is_error`), never an
/// ABI error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub output: String,
    pub is_error: bool,
    pub metadata: Option<Map<String, Value>>,
}

impl ToolResult {
    pub fn ok(output: impl Into<String>) -> Self {
        ToolResult {
            output: output.into(),
            is_error: false,
            metadata: None,
        }
    }

    pub fn error(output: impl Into<String>) -> Self {
        ToolResult {
            output: output.into(),
            is_error: true,
            metadata: None,
        }
    }

    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// `{"output","isError"}` plus `"metadata"` when the tool set any.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("output".into(), Value::String(self.output.clone()));
        m.insert("isError".into(), Value::Bool(self.is_error));
        if let Some(md) = &self.metadata {
            m.insert("metadata".into(), Value::Object(md.clone()));
        }
        Value::Object(m)
    }

    /// The text of [`ToolResult::to_json`], written directly (no `Value`
    /// built): [`ToolResult::into_json_bytes`] of a copy.
    pub fn to_json_string(&self) -> String {
        let bytes = self.clone().into_json_bytes();
        // UTF-8 by construction (see into_json_bytes).
        String::from_utf8(bytes).unwrap_or_else(|_| self.to_json().to_string())
    }

    /// The bytes of [`ToolResult::to_json_string`], written in the output's
    /// own buffer ([`crate::json::escape_in_place`]): no second buffer the
    /// size of the output, and one spare byte of capacity for the NUL a C
    /// string needs. They are UTF-8 without a second look: the output is a
    /// `str` kept verbatim apart from ASCII escapes, the rest is ASCII or
    /// `serde_json`'s own UTF-8.
    pub fn into_json_bytes(self) -> Vec<u8> {
        let tail = self.json_tail();
        crate::json::escape_in_place(self.output, b"{\"output\":", &tail)
    }

    /// What follows the output in the JSON text: `,"isError":..`, the
    /// metadata if any, and the closing brace. Without metadata it is a
    /// constant: nothing is allocated just after a large output, where it
    /// would keep the output's buffer from growing in place.
    fn json_tail(&self) -> Cow<'static, [u8]> {
        let closed: &'static [u8] = if self.is_error {
            b",\"isError\":true}"
        } else {
            b",\"isError\":false}"
        };
        let Some(md) = &self.metadata else {
            return Cow::Borrowed(closed);
        };
        let mut tail = closed[..closed.len() - 1].to_vec();
        tail.extend_from_slice(b",\"metadata\":");
        // Writing a Map into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut tail, md);
        tail.push(b'}');
        Cow::Owned(tail)
    }

    /// Reads a full ToolResult JSON (as a host function may hand back).
    pub fn from_json(v: &Value) -> Option<ToolResult> {
        let obj = v.as_object()?;
        let output = obj.get("output")?.as_str()?.to_string();
        let is_error = match obj.get("isError") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return None,
        };
        let metadata = match obj.get("metadata") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(_) => return None,
        };
        Some(ToolResult {
            output,
            is_error,
            metadata,
        })
    }
}

/// The optional execution context of CONTRACT.md §5.
#[derive(Debug, Clone, Default)]
pub struct ExecContext {
    /// A per-call timeout in milliseconds, when the host set one.
    pub timeout_ms: Option<u64>,
    /// The host's resolution of a suspended tool (SPEC §10), on the re-run.
    pub answer: Option<Value>,
    /// Triggered when whoever asked for the call gives up on it (an MCP
    /// client's cancellation, a disconnect): a tool that can stop early
    /// (bash, MCP, HTTP) does, and answers with an error.
    pub cancel: Option<crate::translate::CancelToken>,
}

impl ExecContext {
    /// Whether the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(crate::translate::CancelToken::is_cancelled)
    }
}

/// The behaviour behind a tool. Implementations must be safe to call from
/// many threads at once.
pub trait Execute: Send + Sync {
    fn execute(&self, args: &Value, ctx: &ExecContext) -> ToolResult;
}

impl<F> Execute for F
where
    F: Fn(&Value, &ExecContext) -> ToolResult + Send + Sync,
{
    fn execute(&self, args: &Value, ctx: &ExecContext) -> ToolResult {
        self(args, ctx)
    }
}

/// One tool of a toolkit.
#[derive(Clone)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub source: Source,
    pub exec: Arc<dyn Execute>,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("source", &self.source)
            .finish()
    }
}

impl Tool {
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Option<Value>,
        source: Source,
        exec: Arc<dyn Execute>,
    ) -> Tool {
        Tool {
            name: name.into(),
            description: description.into(),
            input_schema: input_schema.unwrap_or_else(default_schema),
            source,
            exec,
        }
    }

    /// `{name, description, inputSchema, source}` (the `tools` render format).
    pub fn declaration(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert(
            "description".into(),
            Value::String(self.description.clone()),
        );
        m.insert("inputSchema".into(), self.input_schema.clone());
        m.insert("source".into(), Value::String(self.source.as_str().into()));
        Value::Object(m)
    }
}

/// `{"type":"object"}`, the schema of a tool that declares none.
pub fn default_schema() -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String("object".into()));
    Value::Object(m)
}

/// SPEC §0.2: every character outside `[A-Za-z0-9_-]` becomes `_` (one per
/// code point).
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_direct_result_text_is_the_value_text() {
        let mut md = Map::new();
        md.insert("status".into(), Value::from(200));
        md.insert("note".into(), Value::from("a \"q\"\n\u{1}é"));
        let cases = [
            ToolResult::ok("ok"),
            ToolResult::error("line\n\"quoted\" \\ tab\t nul\u{0} ✓ 😀"),
            ToolResult::ok("").with_metadata(md.clone()),
            ToolResult::error("x").with_metadata(Map::new()),
        ];
        for r in &cases {
            assert_eq!(r.to_json_string(), r.to_json().to_string());
            assert_eq!(
                r.clone().into_json_bytes(),
                r.to_json().to_string().into_bytes()
            );
        }
        assert_eq!(
            cases[2].to_json_string(),
            r#"{"output":"","isError":false,"metadata":{"status":200,"note":"a \"q\"\n\u0001é"}}"#
        );
    }
}
