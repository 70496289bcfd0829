//! `glob` (SPEC §4A): the files under `path` whose relative path matches
//! `pattern`, in code-point order, at most `limit`.

use super::{args, walk};
use crate::tool::{ExecContext, ToolResult};
use serde_json::Value;

pub fn run(args: &Value, ctx: &ExecContext) -> ToolResult {
    let pattern = args::string(args, "pattern");
    let root = args::opt_string(args, "path").unwrap_or_else(|| ".".into());
    let limit = match args::integer("glob", args, "limit", 100) {
        Ok(l) => usize::try_from(l).unwrap_or(0),
        Err(e) => return e,
    };
    let matcher = match walk::glob("glob", "pattern", &pattern) {
        Ok(m) => m,
        Err(e) => return e,
    };
    let found = walk::files("glob", &root, ctx, || {
        let matcher = &matcher;
        move |_: &str, rel: &str| matcher.is_match(rel).then(|| rel.to_string())
    });
    let mut rels: Vec<String> = match found {
        Ok(f) => f.into_iter().map(|(_, rel)| rel).collect(),
        Err(e) => return e,
    };
    // Ordered by relative path, which is the text shown.
    rels.sort_unstable();
    rels.truncate(limit);
    ToolResult::ok(rels.join("\n"))
}
