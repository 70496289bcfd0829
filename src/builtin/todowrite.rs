//! `todowrite` (SPEC §4A): echo the todo list as a checklist, and hand the
//! list back in `metadata.todos`.

use super::args;
use crate::json::display_string;
use crate::tool::ToolResult;
use serde_json::{Map, Value};

pub fn run(args: &Value) -> ToolResult {
    let todos = match args::list("todowrite", args, "todos") {
        Ok(t) => t,
        Err(e) => return e,
    };
    let lines: Vec<String> = todos
        .iter()
        .map(|t| {
            let done = matches!(t.get("completed"), Some(Value::Bool(true)));
            let text = t.get("text").map(display_string).unwrap_or_default();
            format!("- [{}] {text}", if done { "x" } else { " " })
        })
        .collect();
    let mut meta = Map::new();
    meta.insert("todos".into(), Value::Array(todos));
    ToolResult::ok(lines.join("\n")).with_metadata(meta)
}
