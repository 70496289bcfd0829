//! `edit` (SPEC §4A): exact-string replace in a file, unique unless
//! `replaceAll` is `true`.

use super::{args, fsx};
use crate::tool::{ExecContext, ToolResult};
use serde_json::Value;

pub fn run(args: &Value, ctx: &ExecContext) -> ToolResult {
    let path = args::string(args, "path");
    // As `read` and `write`: no path is said as such (execute/edit/no-args in
    // proposed-divergences.json).
    if path.is_empty() {
        return ToolResult::error("edit: path is required (a non-empty string)");
    }
    let old = args::string(args, "oldString");
    let new = args::string(args, "newString");
    let replace_all = args::is_true(args, "replaceAll");
    let bytes = match fsx::read_file("edit", &path, ctx) {
        Ok(b) => b,
        Err(e) => return e,
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return ToolResult::error(format!("edit: {path} is not valid UTF-8 text"));
    };
    // Only the empty string is "missing": any other oldString, whitespace
    // included, is matched exactly (divergences.json,
    // execute/edit/whitespace-old-string).
    let hits = if old.is_empty() {
        0
    } else {
        text.matches(old.as_str()).count()
    };
    if hits == 0 {
        return ToolResult::error(format!("edit: oldString not found in {path}"));
    }
    if hits > 1 && !replace_all {
        return ToolResult::error(format!(
            "edit: oldString is not unique in {path} ({hits} occurrences)"
        ));
    }
    let updated = if replace_all {
        text.replace(old.as_str(), &new)
    } else {
        text.replacen(old.as_str(), &new, 1)
    };
    if let Err(e) = fsx::write_file("edit", &path, updated.as_bytes(), ctx) {
        return e;
    }
    ToolResult::ok(format!("Replaced {hits} occurrence(s) in {path}"))
}
