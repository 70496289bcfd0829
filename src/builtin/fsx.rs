//! File-system helpers that turn every I/O failure into an error result
//! naming the tool and the path.

use crate::tool::ToolResult;
use std::io::ErrorKind;
use std::path::Path;

/// The bytes of a regular file; "file not found" for a missing path (the
/// recorded wording), a sentence naming the path for anything else.
pub fn read_file(tool: &str, path: &str) -> Result<Vec<u8>, ToolResult> {
    if path.is_empty() || !Path::new(path).exists() {
        return Err(ToolResult::error(format!("{tool}: file not found: {path}")));
    }
    if Path::new(path).is_dir() {
        return Err(ToolResult::error(format!(
            "{tool}: {path} is a directory, not a file"
        )));
    }
    std::fs::read(path).map_err(|e| io_error(tool, "cannot read", path, &e))
}

/// Writes `content` to `path`, creating its parent directories first.
pub fn write_file(tool: &str, path: &str, content: &[u8]) -> Result<(), ToolResult> {
    if let Some(parent) = Path::new(path).parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)
                .map_err(|e| io_error(tool, "cannot create the parent directory of", path, &e))?;
        }
    }
    std::fs::write(path, content).map_err(|e| io_error(tool, "cannot write", path, &e))
}

/// "tool: cannot read /x: permission denied".
pub fn io_error(tool: &str, what: &str, path: &str, e: &std::io::Error) -> ToolResult {
    let reason = match e.kind() {
        ErrorKind::NotFound => "no such file or directory".to_string(),
        ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    };
    ToolResult::error(format!("{tool}: {what} {path}: {reason}"))
}
