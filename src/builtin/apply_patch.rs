//! `apply_patch` (SPEC §4A): opencode's patch grammar. Every file change is
//! planned from reads first; nothing is written unless all of them apply.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: PATH        then `+line` lines
//! *** Update File: PATH     then hunks: `@@ anchor`, ` context`, `-old`, `+new`
//! *** Delete File: PATH
//! *** End Patch
//! ```

use super::{args, fsx, text};
use crate::tool::{ExecContext, ToolResult};
use serde_json::Value;
use std::path::Path;

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const UPDATE: &str = "*** Update File: ";
const DELETE: &str = "*** Delete File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Add,
    Update,
    Delete,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Add => "add",
            Kind::Update => "update",
            Kind::Delete => "delete",
        }
    }
    fn marker(self) -> &'static str {
        match self {
            Kind::Add => "Add File",
            Kind::Update => "Update File",
            Kind::Delete => "Delete File",
        }
    }
}

struct Op<'a> {
    kind: Kind,
    path: &'a str,
    lines: Vec<&'a str>,
}

/// One change, ready to write: `None` content means delete.
struct Plan<'a> {
    kind: Kind,
    path: &'a str,
    content: Option<String>,
}

pub fn run(args: &Value, ctx: &ExecContext) -> ToolResult {
    run_in(args, ctx, &|p| Ok(p.to_string()))
}

/// [`run`] with every path inside the patch text mapped by `resolve` (the
/// builtins' base directory and confinement) before anything is read.
pub fn run_in(
    args: &Value,
    ctx: &ExecContext,
    resolve: &dyn Fn(&str) -> Result<String, String>,
) -> ToolResult {
    let patch = args::string(args, "patchText");
    let ops = match parse(&patch) {
        Ok(ops) => ops,
        Err(e) => return ToolResult::error(format!("apply_patch: {e}")),
    };
    let mut resolved = Vec::with_capacity(ops.len());
    for op in &ops {
        match op.path {
            "" => resolved.push(String::new()),
            p => match resolve(p) {
                Ok(full) => resolved.push(full),
                Err(e) => return ToolResult::error(format!("apply_patch: {e}")),
            },
        }
    }
    let ops: Vec<Op<'_>> = ops
        .into_iter()
        .zip(&resolved)
        .map(|(op, path)| Op {
            path: path.as_str(),
            ..op
        })
        .collect();
    let mut plans = Vec::with_capacity(ops.len());
    for op in &ops {
        if let Err(stopped) = ctx.check("apply_patch") {
            return stopped;
        }
        match plan(op) {
            Ok(p) => plans.push(p),
            Err(e) => return ToolResult::error(format!("apply_patch: {e}")),
        }
    }
    // The last look at the deadline: once writing starts, every planned
    // change is made, so a patch is never left half applied.
    if let Err(stopped) = ctx.check("apply_patch") {
        return stopped;
    }
    let unbounded = ExecContext::default();
    for p in &plans {
        let done = match &p.content {
            Some(c) => fsx::write_file("apply_patch", p.path, c.as_bytes(), &unbounded),
            None => std::fs::remove_file(p.path)
                .map_err(|e| fsx::io_error("apply_patch", "cannot delete", p.path, &e)),
        };
        if let Err(e) = done {
            return e;
        }
    }
    let summary: Vec<String> = plans
        .iter()
        .map(|p| format!("{} {}", p.kind.word(), p.path))
        .collect();
    ToolResult::ok(format!(
        "Applied {} file change(s): {}",
        plans.len(),
        summary.join(", ")
    ))
}

fn parse(patch: &str) -> Result<Vec<Op<'_>>, String> {
    let mut lines = text::lines(patch);
    if lines.next().map(str::trim) != Some(BEGIN) {
        return Err(format!("patch must start with {BEGIN}"));
    }
    let mut ops: Vec<Op<'_>> = Vec::new();
    for line in lines {
        let t = line.trim();
        if t == END {
            return Ok(ops);
        }
        let header = [
            (ADD, Kind::Add),
            (UPDATE, Kind::Update),
            (DELETE, Kind::Delete),
        ]
        .into_iter()
        .find_map(|(m, k)| t.strip_prefix(m).map(|p| (k, p)));
        match (header, ops.last_mut()) {
            (Some((kind, path)), _) => ops.push(Op {
                kind,
                path,
                lines: Vec::new(),
            }),
            (None, Some(op)) => op.lines.push(line),
            // Text before the first file header is ignored.
            (None, None) => {}
        }
    }
    Err(format!("patch must end with {END}"))
}

fn plan<'a>(op: &Op<'a>) -> Result<Plan<'a>, String> {
    let path = op.path;
    if path.is_empty() {
        return Err(format!("{} has no path", op.kind.marker()));
    }
    let exists = Path::new(path).exists();
    match op.kind {
        Kind::Add if exists => Err(format!("Add File target already exists: {path}")),
        Kind::Add => {
            // Each line loses its `+` (its first character); a blank line
            // stays blank.
            let body: Vec<&str> = op
                .lines
                .iter()
                .map(|l| l.char_indices().nth(1).map_or("", |(i, _)| &l[i..]))
                .collect();
            Ok(Plan {
                kind: Kind::Add,
                path,
                content: Some(format!("{}\n", body.join("\n"))),
            })
        }
        Kind::Delete if !exists => Err(format!("Delete File target does not exist: {path}")),
        Kind::Delete => Ok(Plan {
            kind: Kind::Delete,
            path,
            content: None,
        }),
        Kind::Update if !exists => Err(format!("Update File target does not exist: {path}")),
        Kind::Update => {
            let bytes = fsx::read_bytes(path)?;
            let original =
                String::from_utf8(bytes).map_err(|_| format!("{path} is not valid UTF-8 text"))?;
            let content = update(&original, &op.lines)
                .map_err(|e| e.unwrap_or_else(|| format!("hunk does not match {path}")))?;
            Ok(Plan {
                kind: Kind::Update,
                path,
                content: Some(content),
            })
        }
    }
}

/// One `@@` section of an Update: the anchor line it follows, the lines it
/// expects (context and `-`) and the lines it leaves (context and `+`).
#[derive(Default)]
struct Chunk<'a> {
    anchor: Option<&'a str>,
    old: Vec<&'a str>,
    new: Vec<&'a str>,
}

fn chunks<'a>(lines: &[&'a str]) -> Result<Vec<Chunk<'a>>, Option<String>> {
    let mut out = vec![Chunk::default()];
    for &line in lines {
        if let Some(rest) = line.strip_prefix("@@") {
            let anchor = rest.trim();
            out.push(Chunk {
                anchor: (!anchor.is_empty()).then_some(anchor),
                ..Chunk::default()
            });
            continue;
        }
        if line.trim() == END_OF_FILE {
            continue;
        }
        if line.trim().starts_with(MOVE) {
            return Err(Some(format!("{} is not supported", MOVE.trim_end())));
        }
        let Some(cur) = out.last_mut() else { continue };
        let mut chars = line.chars();
        let tag = chars.next();
        let body = chars.as_str();
        match tag {
            Some('-') => cur.old.push(body),
            Some('+') => cur.new.push(body),
            // A context line: ' ' (or any other first character) dropped.
            _ => {
                cur.old.push(body);
                cur.new.push(body);
            }
        }
    }
    Ok(out)
}

/// The updated text, or `Err(None)` when a hunk does not match.
fn update(original: &str, hunk: &[&str]) -> Result<String, Option<String>> {
    let eol = if original.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let trailing = original.is_empty() || original.ends_with('\n');
    let mut lines: Vec<String> = if original.is_empty() {
        Vec::new()
    } else {
        let body = original.strip_suffix(eol).unwrap_or(original);
        body.split(eol).map(str::to_string).collect()
    };
    let mut cursor = 0;
    for chunk in chunks(hunk)? {
        if let Some(anchor) = chunk.anchor {
            let at = (cursor..lines.len())
                .find(|&i| lines[i] == anchor)
                .or_else(|| (cursor..lines.len()).find(|&i| lines[i].trim() == anchor))
                .ok_or(None)?;
            cursor = at + 1;
        }
        if chunk.old.is_empty() {
            if chunk.new.is_empty() {
                continue;
            }
            // A pure insertion goes after its anchor, or at the end of the
            // file (divergences.json, execute/apply_patch/update-pure-insert-fails).
            let at = if chunk.anchor.is_some() {
                cursor
            } else {
                lines.len()
            };
            let added = chunk.new.len();
            lines.splice(at..at, chunk.new.into_iter().map(str::to_string));
            cursor = at + added;
            continue;
        }
        let n = chunk.old.len();
        let at = (cursor..=lines.len().saturating_sub(n))
            .find(|&i| {
                lines
                    .get(i..i + n)
                    .is_some_and(|w| w.iter().zip(&chunk.old).all(|(a, b)| a == b))
            })
            .ok_or(None)?;
        let added = chunk.new.len();
        lines.splice(at..at + n, chunk.new.into_iter().map(str::to_string));
        cursor = at + added;
    }
    let mut out = lines.join(eol);
    if trailing && !out.is_empty() {
        out.push_str(eol);
    }
    Ok(out)
}
