//! The ten built-in tools (SPEC §4A): declarations, the on/off toggle, and
//! dispatch to one module per tool.

use crate::tool::{ExecContext, Execute, Source, Tool, ToolResult};
use serde_json::{json, Value};
use std::sync::Arc;

mod apply_patch;
mod args;
mod bash;
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
    /// `builtins.shell`: bash's argv prefix, used verbatim; None or empty ⇒
    /// detected (`bash::resolve_shell`).
    pub shell: Option<Vec<String>>,
}

impl Default for Selection {
    fn default() -> Self {
        Selection {
            source_on: true,
            off: Vec::new(),
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
    Ok(NAMES
        .iter()
        .filter(kept)
        .filter_map(|n| {
            let (desc, schema) = declaration(n)?;
            let exec: Arc<dyn Execute> = match (*n, &shell) {
                ("bash", Some(shell)) => Arc::new(Bash(Arc::clone(shell))),
                _ => Arc::new(Builtin(n)),
            };
            Some(Tool::new(*n, desc, Some(schema), Source::Builtin, exec))
        })
        .collect())
}

struct Builtin(&'static str);

impl Execute for Builtin {
    fn execute(&self, args: &Value, ctx: &ExecContext) -> ToolResult {
        run(self.0, args, ctx)
    }
}

/// `bash` with the shell its toolkit resolved.
struct Bash(Arc<[String]>);

impl Execute for Bash {
    fn execute(&self, args: &Value, ctx: &ExecContext) -> ToolResult {
        bash::run(args, ctx, &self.0)
    }
}

/// Runs one builtin by name. `args` may be any JSON value: a non-object
/// reads as every field missing. A failure is an `is_error` result, never a
/// panic; every builtin is safe to call from many threads at once.
pub fn run(name: &str, args: &Value, ctx: &ExecContext) -> ToolResult {
    match name {
        "apply_patch" => apply_patch::run(args),
        "bash" => match bash::default_shell() {
            Ok(shell) => bash::run(args, ctx, shell),
            Err(e) => ToolResult::error(format!("bash: {e}")),
        },
        "edit" => edit::run(args),
        "glob" => glob::run(args),
        "grep" => grep::run(args),
        "question" => question::run(args, ctx),
        "read" => read::run(args),
        "todowrite" => todowrite::run(args),
        "webfetch" => webfetch::run(args, ctx),
        "write" => write::run(args),
        _ => ToolResult::error(format!("unknown tool: {name}")),
    }
}
