//! `question` (SPEC §4A, §10): the first call suspends with a pending
//! Request; the re-run with an `ok` answer returns the answer's data as JSON.

use super::args;
use crate::json::display_string;
use crate::tool::{ExecContext, ToolResult};
use serde_json::{json, Map, Value};

pub fn run(args: &Value, ctx: &ExecContext) -> ToolResult {
    if let Some(answer) = ctx.answer.as_ref().and_then(Value::as_object) {
        if matches!(answer.get("ok"), Some(Value::Bool(true))) {
            let data = answer.get("data").cloned().unwrap_or(Value::Null);
            return ToolResult::ok(data.to_string());
        }
    }
    // A missing answer, or one that is not ok, asks (again).
    let questions = match args::list("question", args, "questions") {
        Ok(q) => q,
        Err(e) => return e,
    };
    let request = json!({
        "id": format!("req-{}", uuid::Uuid::new_v4()),
        "kind": "question",
        "prompt": render(&questions),
        "data": {"questions": questions},
    });
    let mut meta = Map::new();
    meta.insert("pending".into(), request);
    ToolResult::error("Waiting for a response.").with_metadata(meta)
}

/// Each question's text, with " (options: a, b)" when it has options, one per
/// line; headers stay in the data only.
fn render(questions: &[Value]) -> String {
    questions
        .iter()
        .map(|q| {
            let text = q.get("question").map(display_string).unwrap_or_default();
            let options: Vec<String> = match q.get("options") {
                Some(Value::Array(items)) => items.iter().map(display_string).collect(),
                Some(Value::String(s)) => s.chars().map(String::from).collect(),
                _ => Vec::new(),
            };
            if options.is_empty() {
                text
            } else {
                format!("{text} (options: {})", options.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
