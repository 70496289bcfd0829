//! The ten built-in tools (SPEC §4A): declarations, the on/off toggle, and
//! dispatch to one module per tool.
//!
//! - `mod.rs`         declarations, the on/off toggle, dispatch by name
//! - `bash.rs`        `bash`: the shell command, its process group, its output
//! - `read.rs`        `read`: a text file, whole or a window of lines
//! - `write.rs`       `write`: a file, parent directories created
//! - `edit.rs`        `edit`: exact-string replace in a file
//! - `apply_patch.rs` `apply_patch`: opencode's patch grammar, all or nothing
//! - `grep.rs`        `grep`: regex matches under a path
//! - `glob.rs`        `glob`: files matching a pattern under a path
//! - `webfetch.rs`    `webfetch`: a URL's body as markdown, text or html
//! - `todowrite.rs`   `todowrite`: the todo list echoed as a checklist
//! - `question.rs`    `question`: a suspension with a pending Request
//! - `args.rs`        reading tool-call arguments as every port reads them
//! - `boundary.rs`    what a relative path means, confinement to `baseDir`
//! - `fsx.rs`         file I/O turning each failure into an error result
//! - `text.rs`        line splitting shared by the text tools
//! - `walk.rs`        the parallel directory walk of grep and glob

use crate::tool::{ExecContext, Execute, Source, Tool, ToolResult};
pub use boundary::Boundary;
use serde_json::{json, Value};
use std::sync::Arc;

mod apply_patch;
mod args;
mod bash;
mod boundary;
mod edit;
mod fsx;
mod glob;
mod grep;
mod question;
mod read;
mod text;
mod todowrite;
mod walk;
mod webfetch;
mod write;

/// Every builtin name, sorted by code point.
pub const NAMES: [&str; 10] = [
    "apply_patch",
    "bash",
    "edit",
    "glob",
    "grep",
    "question",
    "read",
    "todowrite",
    "webfetch",
    "write",
];

/// Description and input schema of one builtin, exactly as every port
/// declares them.
pub fn declaration(name: &str) -> Option<(&'static str, Value)> {
    let d = match name {
        "apply_patch" => (
            "Apply an add/update/delete patch.",
            json!({"type": "object",
                   "properties": {"patchText": {"type": "string", "description": "The patch to apply"}},
                   "required": ["patchText"]}),
        ),
        "bash" => (
            "Run a shell command.",
            json!({"type": "object",
                   "properties": {
                       "command": {"type": "string", "description": "The shell command to run"},
                       "timeout": {"type": "number", "description": "Timeout in milliseconds", "default": 60000},
                       "workdir": {"type": "string", "description": "Working directory (default: process cwd)"},
                       "description": {"type": "string", "description": "What this command does"}},
                   "required": ["command"]}),
        ),
        "edit" => (
            "Exact-string replace in a file.",
            json!({"type": "object",
                   "properties": {
                       "path": {"type": "string", "description": "Path to the file to edit"},
                       "oldString": {"type": "string", "description": "Exact text to replace"},
                       "newString": {"type": "string", "description": "Replacement text"},
                       "replaceAll": {"type": "boolean", "description": "Replace every occurrence"}},
                   "required": ["path", "oldString", "newString"]}),
        ),
        "glob" => (
            "List files matching a glob.",
            json!({"type": "object",
                   "properties": {
                       "pattern": {"type": "string", "description": "Glob pattern to match"},
                       "path": {"type": "string", "description": "Directory to search (default: cwd)"},
                       "limit": {"type": "number", "description": "Maximum results", "default": 100}},
                   "required": ["pattern"]}),
        ),
        "grep" => (
            "Search file contents by regex.",
            json!({"type": "object",
                   "properties": {
                       "pattern": {"type": "string", "description": "Regular expression to search for"},
                       "path": {"type": "string", "description": "Directory to search (default: cwd)"},
                       "include": {"type": "string", "description": "Glob filter on file paths"},
                       "limit": {"type": "number", "description": "Maximum matches", "default": 100}},
                   "required": ["pattern"]}),
        ),
        "question" => (
            "Ask the human one or more questions.",
            json!({"type": "object",
                   "properties": {
                       "questions": {
                           "type": "array",
                           "description": "Questions to ask the human",
                           "items": {"type": "object",
                                     "properties": {
                                         "question": {"type": "string"},
                                         "header": {"type": "string"},
                                         "options": {"type": "array", "items": {"type": "string"}},
                                         "multiple": {"type": "boolean"}},
                                     "required": ["question"]}}},
                   "required": ["questions"]}),
        ),
        "read" => (
            "Read a UTF-8 text file.",
            json!({"type": "object",
                   "properties": {
                       "path": {"type": "string", "description": "Path to the file to read"},
                       "offset": {"type": "number", "description": "1-based line to start from"},
                       "limit": {"type": "number", "description": "Number of lines to read"}},
                   "required": ["path"]}),
        ),
        "todowrite" => (
            "Replace the session todo list.",
            json!({"type": "object",
                   "properties": {
                       "todos": {
                           "type": "array",
                           "description": "The full todo list, replacing the current one",
                           "items": {"type": "object",
                                     "properties": {
                                         "id": {"type": "string"},
                                         "text": {"type": "string"},
                                         "completed": {"type": "boolean"}},
                                     "required": ["id", "text", "completed"]}}},
                   "required": ["todos"]}),
        ),
        "webfetch" => (
            "HTTP GET a URL and return its body.",
            json!({"type": "object",
                   "properties": {
                       "url": {"type": "string", "description": "URL to fetch"},
                       "format": {"type": "string", "enum": ["text", "markdown", "html"],
                                  "description": "Output format", "default": "markdown"},
                       "timeout": {"type": "number", "description": "Timeout in seconds", "default": 30}},
                   "required": ["url"]}),
        ),
        "write" => (
            "Write a file, creating parent dirs.",
            json!({"type": "object",
                   "properties": {
                       "path": {"type": "string", "description": "Path to write to"},
                       "content": {"type": "string", "description": "Content to write"}},
                   "required": ["path", "content"]}),
        ),
        _ => return None,
    };
    Some(d)
}

/// Which builtins a toolkit carries, from the `builtins` option (SPEC §0.11):
/// the whole source off, or the all-on baseline minus every `false` entry of
/// the per-tool map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub source_on: bool,
    pub off: Vec<String>,
    /// `baseDir` and `confineToBaseDir` (ADR 0034).
    pub boundary: Boundary,
    /// `builtins.shell`: bash's argv prefix, used verbatim; None or empty ⇒
    /// detected (`bash::resolve_shell`).
    pub shell: Option<Vec<String>>,
}

impl Default for Selection {
    fn default() -> Self {
        Selection {
            source_on: true,
            off: Vec::new(),
            boundary: Boundary::default(),
            shell: None,
        }
    }
}

/// The builtin tools a selection keeps. Fails when `bash` is kept and no
/// shell can be found (upstream's construction-time rule, ADR 0034 D1: a
/// missing interpreter is a configuration fact, learnt at build and not on
/// the first call); a toolkit without bash needs none.
pub fn tools(sel: &Selection) -> Result<Vec<Tool>, String> {
    if !sel.source_on {
        return Ok(Vec::new());
    }
    let kept = |n: &&&str| !sel.off.iter().any(|o| o == **n);
    let shell: Option<Arc<[String]>> = match NAMES.iter().filter(kept).any(|n| *n == "bash") {
        true => Some(bash::resolve_shell(sel.shell.as_deref())?.into()),
        false => None,
    };
    let boundary = Arc::new(sel.boundary.clone());
    Ok(NAMES
        .iter()
        .filter(kept)
        .filter_map(|n| {
            let (desc, schema) = declaration(n)?;
            let exec = Builtin {
                name: n,
                boundary: Arc::clone(&boundary),
                shell: if *n == "bash" { shell.clone() } else { None },
            };
            Some(Tool::new(
                *n,
                desc,
                Some(schema),
                Source::Builtin,
                Arc::new(exec) as Arc<dyn Execute>,
            ))
        })
        .collect())
}

struct Builtin {
    name: &'static str,
    boundary: Arc<Boundary>,
    /// bash's resolved shell (None for every other tool).
    shell: Option<Arc<[String]>>,
}

impl Execute for Builtin {
    fn execute(&self, args: &Value, ctx: &ExecContext) -> ToolResult {
        run_in_with(&self.boundary, self.shell.as_deref(), self.name, args, ctx)
    }
}

/// Runs one builtin by name inside a host boundary: every path a file
/// builtin is given (`path` of read, write, edit, grep and glob; bash's
/// `workdir`; the paths inside apply_patch's text) is resolved against
/// `baseDir` and, when confined, refused if it leaves it; grep, glob and
/// bash given no directory use `baseDir`.
pub fn run_in(boundary: &Boundary, name: &str, args: &Value, ctx: &ExecContext) -> ToolResult {
    run_in_with(boundary, None, name, args, ctx)
}

/// [`run_in`] with bash's shell (None: the detected one).
fn run_in_with(
    boundary: &Boundary,
    shell: Option<&[String]>,
    name: &str,
    args: &Value,
    ctx: &ExecContext,
) -> ToolResult {
    if let Some(refused) = path_too_long(name, args) {
        return refused;
    }
    if boundary.is_open() {
        return run_with(name, args, ctx, shell);
    }
    let ctx = &*ctx.armed();
    if name == "apply_patch" {
        return apply_patch::run_in(args, ctx, &|p| boundary.resolve(p));
    }
    let (key, defaults_to_base) = match name {
        "read" | "write" | "edit" => ("path", false),
        "grep" | "glob" => ("path", true),
        "bash" => ("workdir", true),
        _ => return run_with(name, args, ctx, shell),
    };
    let given = args::opt_string(args, key).filter(|p| !p.is_empty());
    let resolved = match (&given, boundary.dir()) {
        (Some(p), _) => match boundary.resolve(p) {
            Ok(full) => full,
            Err(e) => return ToolResult::error(format!("{name}: {e}")),
        },
        (None, Some(base)) if defaults_to_base => base.to_string(),
        // No path keeps the tool's own error (read: path is required).
        (None, _) => return run_with(name, args, ctx, shell),
    };
    let mut args = match args {
        Value::Object(m) => m.clone(),
        _ => serde_json::Map::new(),
    };
    args.insert(key.to_string(), Value::String(resolved));
    run_with(name, &Value::Object(args), ctx, shell)
}

/// How much of a refused path an error shows.
const PATH_SHOWN: usize = 200;

/// The error of a file builtin given a path longer than
/// [`crate::limits::PATH_BYTES`]: its length and its first bytes, then a
/// marker saying how many more there were (never the whole path).
fn path_too_long(name: &str, args: &Value) -> Option<ToolResult> {
    let key = match name {
        "read" | "write" | "edit" | "grep" | "glob" => "path",
        "bash" => "workdir",
        _ => return None,
    };
    let path = args.get(key)?.as_str()?;
    if path.len() <= crate::limits::PATH_BYTES {
        return None;
    }
    let mut cut = PATH_SHOWN;
    while !path.is_char_boundary(cut) {
        cut -= 1;
    }
    Some(ToolResult::error(format!(
        "{name}: {key} is too long ({} bytes, at most {}): {}… [{} more bytes]",
        path.len(),
        crate::limits::PATH_BYTES,
        &path[..cut],
        path.len() - cut
    )))
}

/// Runs one builtin by name. `args` may be any JSON value: a non-object
/// reads as every field missing. A failure is an `is_error` result, never a
/// panic; every builtin is safe to call from many threads at once.
///
/// Every builtin honours the context's deadline (`timeoutMs`) and
/// cancellation; see each tool for where it looks (`ExecContext::stop`).
pub fn run(name: &str, args: &Value, ctx: &ExecContext) -> ToolResult {
    run_with(name, args, ctx, None)
}

/// [`run`] with bash's shell (None: the detected one).
fn run_with(name: &str, args: &Value, ctx: &ExecContext, shell: Option<&[String]>) -> ToolResult {
    if let Some(refused) = path_too_long(name, args) {
        return refused;
    }
    let ctx = &*ctx.armed();
    match name {
        "apply_patch" => apply_patch::run(args, ctx),
        "bash" => match shell {
            Some(shell) => bash::run(args, ctx, shell),
            None => match bash::default_shell() {
                Ok(shell) => bash::run(args, ctx, shell),
                Err(e) => ToolResult::error(format!("bash: {e}")),
            },
        },
        "edit" => edit::run(args, ctx),
        "glob" => glob::run(args, ctx),
        "grep" => grep::run(args, ctx),
        "question" => question::run(args, ctx),
        "read" => read::run(args, ctx),
        "todowrite" => todowrite::run(args),
        "webfetch" => webfetch::run(args, ctx),
        "write" => write::run(args, ctx),
        _ => ToolResult::error(format!("unknown tool: {name}")),
    }
}
