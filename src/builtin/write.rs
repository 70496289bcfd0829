//! `write` (SPEC §4A): write a file, creating parent directories.

use super::{args, fsx};
use crate::tool::{ExecContext, ToolResult};
use serde_json::Value;

pub fn run(args: &Value, ctx: &ExecContext) -> ToolResult {
    let path = args::string(args, "path");
    if path.is_empty() {
        return ToolResult::error("write: path is required (a non-empty string)");
    }
    let content = args::string(args, "content");
    match fsx::write_file("write", &path, content.as_bytes(), ctx) {
        Ok(()) => ToolResult::ok(format!("Wrote {} bytes to {path}", content.len())),
        Err(e) => e,
    }
}
