//! How a run ends: each tool call it settled and its outcome, the parts
//! of the RunResult (CONTRACT.md §8) before they are its JSON.

use super::shape::{Call, Usage};
use crate::tool::ToolResult;
use serde_json::{json, Map, Value};

/// A tool call with its (possibly hook-rewritten) arguments and its result.
#[derive(Debug, Clone)]
pub(crate) struct Settled {
    pub call: Call,
    pub result: ToolResult,
    /// How long the tool ran (measured only for an observer).
    pub ms: u64,
}

impl Settled {
    /// What a run keeps of a call once its result is in the transcript:
    /// the parts go (their bytes are in the transcript's result message,
    /// and `toolCalls` never shows them), so a run that read many images
    /// holds each once.
    pub fn kept(mut self) -> Settled {
        self.result.parts = Box::default();
        self
    }

    /// The call's `toolCalls` entry: `{name, args, output, isError, metadata}`.
    pub fn record(self) -> Value {
        // The call's parts moved in (`json!` would copy each through
        // `to_value` and drop the original).
        crate::json::object([
            ("name", Value::String(self.call.name)),
            ("args", self.call.args),
            ("output", Value::String(self.result.output)),
            ("isError", Value::Bool(self.result.is_error)),
            (
                "metadata",
                self.result.metadata.map_or(Value::Null, Value::Object),
            ),
        ])
    }
}

/// How a run ended, before (or instead of) its RunResult JSON (CONTRACT.md
/// §8): what the crate's own callers read (the agent runtime, `ask`'s
/// store, the metrics) without building the JSON and taking it apart.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The final text (at `maxTurns`, the last assistant text; when
    /// pending, the Request's prompt).
    pub text: String,
    /// The whole transcript, the input history first.
    pub messages: Vec<Value>,
    pub(crate) calls: Vec<Settled>,
    /// LLM round trips made.
    pub turns: u32,
    pub usage: Usage,
    /// The model that answered (a failover client's serving upstream's).
    pub model: String,
    pub(crate) upstream: Option<Value>,
    pub status: RunStatus,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub enum RunStatus {
    Done,
    /// Stopped by `maxTurns` (divergences.json: always loud, both styles).
    Incomplete,
    /// Halted on this Request (SPEC §10).
    Pending(Value),
}

impl RunOutcome {
    /// How many tool calls ran: the RunResult's `toolCallCount`.
    pub fn tool_call_count(&self) -> usize {
        self.calls.len()
    }

    /// The RunResult's `status`: `done`, `incomplete` or `pending`.
    pub fn status_name(&self) -> &'static str {
        match self.status {
            RunStatus::Done => "done",
            RunStatus::Incomplete => "incomplete",
            RunStatus::Pending(_) => "pending",
        }
    }

    /// The RunResult (CONTRACT.md §8), its parts moved in.
    pub fn into_json(self) -> Value {
        // Room for every key at once: no regrowth of the map as it fills.
        let mut out = Map::with_capacity(10);
        let status = self.status_name();
        out.insert("text".into(), Value::String(self.text));
        out.insert("messages".into(), Value::Array(self.messages));
        let count = self.calls.len();
        let calls = self.calls.into_iter().map(Settled::record).collect();
        out.insert("toolCalls".into(), Value::Array(calls));
        out.insert("toolCallCount".into(), json!(count));
        out.insert("turns".into(), json!(self.turns));
        out.insert("usage".into(), self.usage.to_json());
        out.insert("model".into(), Value::String(self.model));
        if let Some(upstream) = self.upstream {
            out.insert("upstream".into(), upstream);
        }
        out.insert("status".into(), json!(status));
        match self.status {
            RunStatus::Done => {}
            RunStatus::Incomplete => {
                out.insert("limit".into(), json!("maxTurns"));
            }
            RunStatus::Pending(request) => {
                out.insert("pending".into(), request);
            }
        }
        Value::Object(out)
    }

    /// The RunResult as [`RunOutcome::into_json`] gives it, from a copy.
    pub fn to_json(&self) -> Value {
        self.clone().into_json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parts::{Part, PartKind};

    fn with_image() -> Settled {
        let mut result = ToolResult::ok("an image");
        result.parts = vec![Part {
            kind: PartKind::Image,
            text: None,
            mime_type: Some("image/png".into()),
            data: Some("A".repeat(1 << 20)),
            url: None,
            name: None,
        }]
        .into_boxed_slice();
        Settled {
            call: Call {
                id: "c1".into(),
                name: "read".into(),
                args: json!({"path": "a.png"}),
            },
            result,
            ms: 0,
        }
    }

    #[test]
    fn a_kept_call_lets_its_parts_go_and_its_record_is_unchanged() {
        let kept = with_image().kept();
        assert!(kept.result.parts.is_empty(), "the image bytes let go");
        assert_eq!(kept.record(), with_image().record());
        assert_eq!(
            with_image().record(),
            json!({"name": "read", "args": {"path": "a.png"}, "output": "an image",
                   "isError": false, "metadata": null})
        );
    }
}
