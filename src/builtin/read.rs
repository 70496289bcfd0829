//! `read` (SPEC §4A): a UTF-8 text file, whole or as a window of lines.

use super::args;
use super::text::lines;
use crate::parts::Part;
use crate::tool::{ExecContext, ToolResult};
use serde_json::Value;

pub fn run(args: &Value, ctx: &ExecContext) -> ToolResult {
    let path = args::string(args, "path");
    // No path at all (absent, null, "", or arguments that are no object,
    // which read as {}) is said as such, as upstream 0.21 and our `write`
    // say it, not as a file "not found" under an empty name
    // (proposed-divergences.json, execute/read/missing-path-arg).
    if path.is_empty() {
        return ToolResult::error("read: path is required (a non-empty string)");
    }
    let offset = match args::number("read", args, "offset") {
        Ok(v) => v,
        Err(e) => return e,
    };
    let limit = match args::number("read", args, "limit") {
        Ok(v) => v,
        Err(e) => return e,
    };
    let bytes = match super::fsx::read_file("read", &path, ctx) {
        Ok(b) => b,
        Err(e) => return e,
    };
    if let Some(result) = media(&path, &bytes) {
        return result;
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(_) => return ToolResult::error(format!("read: {path} is not valid UTF-8 text")),
    };
    if offset.is_none() && limit.is_none() {
        return ToolResult::ok(text);
    }
    // `offset` is 1-based; 0 and negatives mean the first line.
    let start = offset.map_or(0, |o| (o.trunc() as i64).saturating_sub(1).max(0));
    let start = usize::try_from(start).unwrap_or(usize::MAX);
    let window = lines(&text).skip(start);
    let out: Vec<&str> = match limit {
        Some(l) => window
            .take(usize::try_from(l.trunc() as i64).unwrap_or(0))
            .collect(),
        None => window.collect(),
    };
    ToolResult::ok(out.join("\n"))
}

/// A file whose extension is in the media table (SPEC §1B, §6 `read`):
/// `"<path> (<mime>, N bytes)"` as the output and the bytes as one part named
/// after the file. `offset`/`limit` mean nothing for media and are ignored.
fn media(path: &str, bytes: &[u8]) -> Option<ToolResult> {
    let name = std::path::Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let part = Part::media_from_bytes(path, bytes, name)?;
    let mime = part.mime_type.as_deref().unwrap_or_default();
    let output = format!("{path} ({mime}, {} bytes)", bytes.len());
    Some(ToolResult::ok(output).with_parts(vec![part]))
}
