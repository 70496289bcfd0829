//! The parallel directory walk grep and glob share (the `ignore` crate with
//! every ignore rule off: hidden and git-ignored files are files too).

use crate::tool::{ExecContext, Stop, ToolResult};
use ignore::{WalkBuilder, WalkState};
use std::path::Path;
use std::sync::Mutex;

/// Calls a per-thread visitor for every regular file under `root` (or for
/// `root` itself when it is a file) and returns what it kept, ordered by
/// path in code-point order. The visitor gets the path as displayed (root
/// joined with the relative path) and the path relative to `root`.
///
/// The walk stops as soon as the call's deadline passes or it is cancelled
/// (checked at every entry), and the result is then that stop.
pub fn files<T, V, M>(
    tool: &str,
    root: &str,
    ctx: &ExecContext,
    make_visitor: M,
) -> Result<Vec<(String, T)>, ToolResult>
where
    T: Send,
    V: FnMut(&str, &str) -> Option<T> + Send,
    M: Fn() -> V + Sync,
{
    if !Path::new(root).exists() {
        return Err(ToolResult::error(format!(
            "{tool}: no such file or directory: {root}"
        )));
    }
    let prefix = if root.ends_with('/') {
        root.to_string()
    } else {
        format!("{root}/")
    };
    let found: Mutex<Vec<(String, T)>> = Mutex::new(Vec::new());
    let stopped: Mutex<Option<Stop>> = Mutex::new(None);
    WalkBuilder::new(root)
        .standard_filters(false)
        .follow_links(false)
        .threads(0)
        .build_parallel()
        .run(|| {
            let mut visit = make_visitor();
            let found = &found;
            let stopped = &stopped;
            let prefix = prefix.as_str();
            Box::new(move |entry| {
                if let Some(why) = ctx.stop() {
                    if let Ok(mut s) = stopped.lock() {
                        *s = Some(why);
                    }
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                let is_file = match entry.file_type() {
                    Some(t) if t.is_file() => true,
                    Some(t) if t.is_symlink() => entry.path().is_file(),
                    _ => false,
                };
                if !is_file {
                    return WalkState::Continue;
                }
                let shown = entry.path().to_string_lossy();
                let rel = shown.strip_prefix(prefix).unwrap_or(&shown);
                if let Some(kept) = visit(&shown, rel) {
                    if let Ok(mut f) = found.lock() {
                        f.push((shown.to_string(), kept));
                    }
                }
                WalkState::Continue
            })
        });
    if let Some(why) = stopped.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(ctx.stopped(tool, why));
    }
    let mut found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    // Rust orders strings by UTF-8 bytes, which is code-point order.
    found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

/// A glob in the recorded dialect: `*` and `?` stay inside one path segment,
/// `**` spans any number of segments (zero included).
pub fn glob(tool: &str, what: &str, pattern: &str) -> Result<globset::GlobMatcher, ToolResult> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolResult::error(format!("{tool}: invalid {what} glob {pattern:?}: {e}")))
}
