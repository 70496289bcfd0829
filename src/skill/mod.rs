//! Agent skills (SPEC §3): discovery of `**/SKILL.md`, skills given as data,
//! the filter, the `skill` tool and the skills prompt.
//!
//! - `mod.rs`         discovery, skills as data, the filter, the tool, the prompt
//! - `frontmatter.rs` SKILL.md front matter: fences, YAML, the rescue
//! - `fastwalk.rs`    the discovery walk on directory descriptors
//! - `walk.rs`        the portable directory walk behind discovery and sampling
//! - `sampler.rs`     the sibling-file sample of `<skill_files>`

mod fastwalk;
pub mod frontmatter;
mod sampler;
mod walk;

use crate::json::display_string;
use crate::tool::{ExecContext, Execute, Source, Tool, ToolResult};
use frontmatter::FrontMatter;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The fixed instruction preamble of the skills prompt.
pub const PROMPT_PREAMBLE: &str = "Skills provide specialized instructions and workflows for specific tasks.\nUse the skill tool to load a skill when a task matches its description.";

/// The skills prompt when no described skill is loaded.
pub const NO_SKILLS: &str = "No skills are currently available.";

/// The `skill` tool's description (opencode's skill.txt).
pub const TOOL_DESCRIPTION: &str = "Load a specialized skill when the task at hand matches one of the skills listed in the system prompt.\n\nUse this tool to inject the skill's instructions and resources into current conversation. The output may contain detailed workflow guidance as well as references to scripts, files, etc in the same directory as the skill.\n\nThe skill name must match one of the skills listed in your system prompt.";

/// Sibling files listed when `skillSampleLimit` is 0.
pub const DEFAULT_SAMPLE_LIMIT: usize = 10;

/// Where a skill came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A SKILL.md on disk.
    Fs,
    /// Given as data in the toolkit config.
    Logical,
}

/// One loaded skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: Option<String>,
    pub location: String,
    pub content: String,
    pub dir: String,
    pub base: String,
    pub origin: Origin,
    /// Supplied resources of a data skill, in the order given.
    pub resources: Vec<String>,
}

impl Skill {
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("description".into(), json!(self.description));
        m.insert("location".into(), json!(self.location));
        m.insert("content".into(), json!(self.content));
        m.insert("dir".into(), json!(self.dir));
        m.insert("base".into(), json!(self.base));
        match self.origin {
            Origin::Fs => {
                m.insert("origin".into(), json!("fs"));
            }
            Origin::Logical => {
                m.insert("origin".into(), json!("logical"));
                m.insert("resources".into(), json!(self.resources));
            }
        }
        Value::Object(m)
    }
}

/// A skill that was not loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    pub location: String,
    /// `missing-name`, `malformed-frontmatter`, `duplicate-name` or `unreadable`.
    pub reason: &'static str,
    /// The underlying parser's or system's own message (upstream ADR 0028):
    /// what a host needs to fix the file. Empty when there is none. Its
    /// wording is this library's parsers', never compared across ports.
    pub detail: String,
}

impl Skip {
    fn new(location: String, reason: &'static str) -> Skip {
        Skip {
            location,
            reason,
            detail: String::new(),
        }
    }

    /// `{location, reason}`, plus `detail` when there is one.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("location".into(), json!(self.location));
        m.insert("reason".into(), json!(self.reason));
        if !self.detail.is_empty() {
            m.insert("detail".into(), json!(self.detail));
        }
        Value::Object(m)
    }
}

/// What the skills options ask for (CONTRACT.md §3).
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub dirs: Vec<String>,
    pub defs: Vec<Value>,
    /// `skillsFilter` with `disableSkills` folded in first (as `false`).
    pub filter: Vec<(String, bool)>,
    pub sample_limit: i64,
}

/// The skill catalog of a toolkit.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Every skill discovered, before the filter (the inventory).
    pub all: Vec<Skill>,
    /// The skills the filter keeps, in discovery order, as indexes into
    /// `all` (a filter never copies a skill).
    kept: Vec<usize>,
    pub skipped: Vec<Skip>,
    /// Filter names that matched no skill, sorted.
    pub filter_unmatched: Vec<String>,
    /// One line per `skillsDir` root that gave nothing: it does not exist, is
    /// not a directory, or holds no SKILL.md (the toolkit's status warnings).
    pub root_warnings: Vec<String>,
    pub sample_limit: i64,
    by_name: HashMap<String, usize>,
}

#[derive(Debug, PartialEq)]
enum Candidate {
    Skill(Skill),
    Skip(Skip),
}

impl Candidate {
    fn location(&self) -> &str {
        match self {
            Candidate::Skill(s) => &s.location,
            Candidate::Skip(s) => &s.location,
        }
    }
}

/// Discovers and filters the skills of `opts`.
pub fn load(opts: &Options) -> Catalog {
    load_until(opts, &|| false).unwrap_or_default()
}

/// [`load`], given up (`None`) as soon as `stop` answers true: it is asked
/// between directories of the walk and between files.
pub fn load_until(opts: &Options, stop: &(dyn Fn() -> bool + Sync)) -> Option<Catalog> {
    // Each file is parsed as the walk meets it (one read buffer serves every
    // file), and each root's skills are placed in discovery order into
    // vectors sized for them: no buffers left behind by growth (what stays
    // resident after a build is the catalog). The files are read on the
    // calling thread: the build is bound by the kernel's open/read/close,
    // worker threads cost more to start than they save on a tree of a
    // thousand skills, and the skills they read would land in per-thread
    // malloc arenas, a megabyte and a half of resident memory each (issue 15).
    let mut root_warnings = Vec::new();
    let mut all: Vec<Skill> = Vec::new();
    let mut skipped = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut buf = Vec::new();
    for dir in &opts.dirs {
        let found = match fastwalk::skills(Path::new(dir), &mut buf, stop) {
            fastwalk::Walked::Done(found) => found,
            fastwalk::Walked::Stopped => return None,
            // A symlinked directory (or an unusual tree): the general walk.
            fastwalk::Walked::Handover => general(Path::new(dir), &mut buf, stop)?,
        };
        if stop() {
            return None;
        }
        if found.is_empty() {
            root_warnings.push(empty_root(dir));
        }
        all.reserve_exact(found.len());
        seen.reserve(found.len());
        for c in found {
            place(c, &mut all, &mut skipped, &mut seen);
        }
    }
    drop(buf);
    all.reserve_exact(opts.defs.len());
    seen.reserve(opts.defs.len());
    for def in &opts.defs {
        place(from_def(def), &mut all, &mut skipped, &mut seen);
    }

    let (kept, filter_unmatched) = apply_filter(&all, &opts.filter);
    // With every skill kept, the names seen are the index.
    let by_name = if kept.len() == all.len() {
        seen
    } else {
        kept.iter().map(|&i| (all[i].name.clone(), i)).collect()
    };
    Some(Catalog {
        all,
        kept,
        skipped,
        filter_unmatched,
        root_warnings,
        sample_limit: opts.sample_limit,
        by_name,
    })
}

/// Why the skills root `dir` gave no skill, as a status warning.
fn empty_root(dir: &str) -> String {
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            format!("skillsDir \"{dir}\" does not exist")
        }
        Err(e) => format!("skillsDir \"{dir}\" cannot be read: {e}"),
        Ok(m) if !m.is_dir() => format!("skillsDir \"{dir}\" is not a directory"),
        Ok(_) => format!("skillsDir \"{dir}\" holds no SKILL.md"),
    }
}

/// SPEC §3 S2: empty ⇒ every skill; any `true` ⇒ an allow-list of the true
/// names; only `false` ⇒ a drop-list. Later entries override earlier ones.
fn apply_filter(all: &[Skill], filter: &[(String, bool)]) -> (Vec<usize>, Vec<String>) {
    if filter.is_empty() {
        return ((0..all.len()).collect(), Vec::new());
    }
    let mut m: BTreeMap<&str, bool> = BTreeMap::new();
    for (k, v) in filter {
        m.insert(k.as_str(), *v);
    }
    let allow_list = m.values().any(|v| *v);
    let keep = |name: &str| match m.get(name) {
        Some(v) => *v,
        None => !allow_list,
    };
    let unmatched = m
        .keys()
        .filter(|k| !all.iter().any(|s| s.name == **k))
        .map(|k| k.to_string())
        .collect();
    let loaded = (0..all.len()).filter(|&i| keep(&all[i].name)).collect();
    (loaded, unmatched)
}

/// The skill files below `root` found by the general walk and parsed, in
/// discovery order; `None` once `stop` answers true.
fn general(
    root: &Path,
    buf: &mut Vec<u8>,
    stop: &(dyn Fn() -> bool + Sync),
) -> Option<Vec<Candidate>> {
    let paths = discover(root, stop);
    let mut found = Vec::with_capacity(paths.len());
    for p in &paths {
        // Files left once `stop` answers true are not read.
        if stop() {
            return None;
        }
        found.push(parse_file(p, buf));
    }
    Some(found)
}

/// Every `SKILL.md` below `root`, following symlinked directories (each
/// real directory walked once), skipping `node_modules` and `.git`, in
/// discovery order (upstream addenda A1/A15): fewer path segments below the
/// root first, then the path relative to the root in code-point order. The
/// first of two skills with one name wins, so a top-level skill beats a
/// nested copy whatever their names. A missing root yields none.
fn discover(root: &Path, stop: &(dyn Fn() -> bool + Sync)) -> Vec<PathBuf> {
    let found = walk::files_parallel(root, &|name| name == "SKILL.md", 1, stop);
    // Every path found is the root's text joined with names (no `.` or
    // `..`, no empty segment), so its depth is the separators after the root.
    let skip = root.as_os_str().len();
    let mut keyed: Vec<(usize, PathBuf)> = found
        .into_iter()
        .map(|p| {
            let bytes = p.as_os_str().as_encoded_bytes();
            let rel = bytes.get(skip..).unwrap_or_default();
            let rel = rel.strip_prefix(b"/").unwrap_or(rel);
            (1 + crate::sys::bytes::count(b'/', rel), p)
        })
        .collect();
    keyed.sort_by(|(da, a), (db, b)| {
        da.cmp(db).then_with(|| {
            a.as_os_str()
                .as_encoded_bytes()
                .cmp(b.as_os_str().as_encoded_bytes())
        })
    });
    keyed.into_iter().map(|(_, p)| p).collect()
}

/// The whole file at `path`, in `buf[..n]`; returns n. Reads until a read
/// returns 0, without the size lookup `fs::read` makes first (a statx and
/// an lseek per file).
fn read_into(path: &Path, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize((buf.len() * 2).max(16 * 1024), 0);
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => return Ok(len),
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The first skill of a name is kept; a later one is skipped as a duplicate.
fn place(
    c: Candidate,
    all: &mut Vec<Skill>,
    skipped: &mut Vec<Skip>,
    seen: &mut HashMap<String, usize>,
) {
    match c {
        Candidate::Skip(s) => skipped.push(s),
        Candidate::Skill(s) => {
            if seen.contains_key(&s.name) {
                skipped.push(Skip::new(s.location, "duplicate-name"));
            } else {
                seen.insert(s.name.clone(), all.len());
                all.push(s);
            }
        }
    }
}

fn parse_file(path: &Path, buf: &mut Vec<u8>) -> Candidate {
    let location = path.to_string_lossy().into_owned();
    let read = read_into(path, buf);
    parse_read(location, read.map(|n| &buf[..n]))
}

/// The skill (or the skip) of the file at `location`, given what reading
/// it gave.
fn parse_read(location: String, read: std::io::Result<&[u8]>) -> Candidate {
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(e) => {
            return Candidate::Skip(Skip {
                detail: e.to_string(),
                ..Skip::new(location, "unreadable")
            })
        }
    };
    // Valid UTF-8 (nearly every file) is checked by the fast validator and
    // borrowed as is; only invalid bytes take the lossy path.
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(_) => String::from_utf8_lossy(bytes),
    };
    let (name, description, body, detail) = match frontmatter::parse(&text) {
        FrontMatter::Malformed { detail } => {
            return Candidate::Skip(Skip {
                detail,
                ..Skip::new(location, "malformed-frontmatter")
            })
        }
        FrontMatter::Absent => (None, None, String::new(), String::new()),
        FrontMatter::Parsed {
            name,
            description,
            body,
            detail,
        } => (name, description, body, detail),
    };
    let Some(name) = name else {
        return Candidate::Skip(Skip {
            detail,
            ..Skip::new(location, "missing-name")
        });
    };
    let dir = match location.rfind('/') {
        Some(i) => location[..i].to_string(),
        None => ".".to_string(),
    };
    Candidate::Skill(Skill {
        name,
        description,
        base: format!("file://{dir}"),
        location,
        content: body,
        dir,
        origin: Origin::Fs,
        resources: Vec::new(),
    })
}

/// One skill given as data: `{name, description?, content?, resources?, base?}`.
fn from_def(def: &Value) -> Candidate {
    let field = |k: &str| def.get(k).map(display_string).unwrap_or_default();
    let name = field("name");
    let given_base = field("base");
    if name.trim().is_empty() {
        let location = if given_base.trim().is_empty() {
            "skill://".to_string()
        } else {
            given_base
        };
        return Candidate::Skip(Skip::new(location, "missing-name"));
    }
    let base = if given_base.trim().is_empty() {
        format!("skill://{name}/")
    } else {
        given_base
    };
    let description = match def.get("description") {
        None | Some(Value::Null) => None,
        Some(v) => Some(display_string(v)),
    };
    let resources = match def.get("resources") {
        Some(Value::Array(a)) => a.iter().map(display_string).collect(),
        _ => Vec::new(),
    };
    Candidate::Skill(Skill {
        name,
        description,
        location: base.clone(),
        content: field("content"),
        dir: base.clone(),
        base,
        origin: Origin::Logical,
        resources,
    })
}

impl Catalog {
    /// The loaded skill called `name`, if the filter kept one.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.by_name.get(name).map(|i| &self.all[*i])
    }

    /// The skills the filter keeps, in discovery order.
    pub fn loaded(&self) -> impl Iterator<Item = &Skill> {
        self.kept.iter().map(|&i| &self.all[i])
    }

    /// The skills prompt: the preamble and one line per described skill,
    /// sorted by name; the no-skills sentence when none is described.
    pub fn prompt(&self) -> String {
        let mut described: Vec<&Skill> =
            self.loaded().filter(|s| s.description.is_some()).collect();
        if described.is_empty() {
            return NO_SKILLS.to_string();
        }
        described.sort_by(|a, b| a.name.cmp(&b.name));
        let mut out = String::with_capacity(256 + described.len() * 64);
        out.push_str(PROMPT_PREAMBLE);
        out.push_str("\n\n## Available Skills");
        for s in described {
            out.push_str("\n- **");
            out.push_str(&s.name);
            out.push_str("**: ");
            out.push_str(s.description.as_deref().unwrap_or_default());
        }
        out
    }

    /// The `skills` render format.
    pub fn loaded_json(&self) -> Value {
        json!({
            "skills": self.loaded().map(Skill::to_json).collect::<Vec<_>>(),
            "skipped": self.skipped.iter().map(Skip::to_json).collect::<Vec<_>>(),
            "filterUnmatched": self.filter_unmatched,
            "sampleLimit": self.sample_limit,
        })
    }

    /// The `skillsInventory` render format: every skill before the filter.
    pub fn inventory_json(&self) -> Value {
        json!({
            "skills": self.all.iter().map(Skill::to_json).collect::<Vec<_>>(),
            "skipped": self.skipped.iter().map(Skip::to_json).collect::<Vec<_>>(),
        })
    }

    /// Runs the `skill` tool for `name`.
    pub fn execute(&self, name: &str) -> ToolResult {
        let Some(skill) = self.get(name) else {
            let mut names: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
            names.sort_unstable();
            let avail = if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            };
            return ToolResult::error(format!(
                "Skill \"{name}\" not found. Available skills: {avail}"
            ));
        };
        let files = self.files(skill);
        let mut md = Map::new();
        md.insert("name".into(), json!(skill.name));
        md.insert("dir".into(), json!(skill.dir));
        ToolResult::ok(render_output(skill, files.as_deref())).with_metadata(md)
    }

    /// The ToolResult JSON text of [`Catalog::execute`] for a skill the
    /// catalog has, written directly: the output escaped into place, the
    /// metadata (`name`, `dir`) written after it with no map built. `None`
    /// for a name it does not have (the error result takes the usual way).
    pub fn execute_json(&self, name: &str) -> Option<Vec<u8>> {
        let skill = self.get(name)?;
        let files = self.files(skill);
        const HEAD: &[u8] = b"{\"output\":\"";
        const MID: &[u8] = b"\",\"isError\":false,\"metadata\":{\"name\":";
        const DIR: &[u8] = b",\"dir\":";
        // The output's text, its escapes at a newline every 16 bytes, the
        // metadata and the NUL: one allocation in the usual case.
        let listed: usize = files.iter().flatten().map(|f| f.len() + 16).sum();
        let text = skill.content.len() + 2 * skill.name.len() + skill.base.len() + listed;
        let room = text + text / 16 + 320 + skill.name.len() + skill.dir.len();
        let mut out = Vec::with_capacity(room);
        out.extend_from_slice(HEAD);
        render_into(skill, files.as_deref(), &mut Escaping(&mut out));
        out.extend_from_slice(MID);
        crate::json::write_escaped(&mut out, &skill.name);
        out.extend_from_slice(DIR);
        crate::json::write_escaped(&mut out, &skill.dir);
        out.extend_from_slice(b"}}");
        out.reserve_exact(1);
        Some(out)
    }

    /// The `<skill_files>` list, or None when the block is left out.
    fn files(&self, skill: &Skill) -> Option<Vec<String>> {
        let limit = match self.sample_limit {
            n if n < 0 => return None,
            0 => DEFAULT_SAMPLE_LIMIT,
            n => usize::try_from(n).unwrap_or(usize::MAX),
        };
        match skill.origin {
            Origin::Logical if skill.resources.is_empty() => None,
            Origin::Logical => Some(skill.resources.iter().take(limit).cloned().collect()),
            Origin::Fs => Some(sampler::sample(&skill.dir, limit)),
        }
    }
}

/// SPEC §0.6, byte for byte; no trailing newline.
fn render_output(skill: &Skill, files: Option<&[String]>) -> String {
    let mut out = String::with_capacity(skill.content.len() + 512);
    render_into(skill, files, &mut out);
    out
}

/// Where [`render_into`] writes: a `String` takes the text as it is, an
/// [`Escaping`] buffer as the inside of a JSON string literal.
trait Sink {
    /// Text of the skill (its name, content, paths).
    fn put(&mut self, s: &str);
    /// Text of the format, given with its JSON escape ([`lit!`]).
    fn lit(&mut self, text: (&str, &[u8]));
}

impl Sink for String {
    fn put(&mut self, s: &str) {
        self.push_str(s);
    }
    fn lit(&mut self, (raw, _): (&str, &[u8])) {
        self.push_str(raw);
    }
}

/// A JSON text being written, taking each piece escaped
/// ([`crate::json::write_escaped_body`]); escaping piece by piece is
/// escaping the whole, as every byte is escaped on its own.
struct Escaping<'a>(&'a mut Vec<u8>);

impl Sink for Escaping<'_> {
    fn put(&mut self, s: &str) {
        crate::json::write_escaped_body(self.0, s.as_bytes());
    }
    fn lit(&mut self, (_, json): (&str, &[u8])) {
        self.0.extend_from_slice(json);
    }
}

/// A literal of the format with its JSON escape, made at compile time.
macro_rules! lit {
    ($s:expr) => {{
        const RAW: &str = $s;
        const JSON: [u8; crate::json::escaped_len(RAW)] = crate::json::escape_literal(RAW);
        (RAW, JSON.as_slice())
    }};
}

/// The text of [`render_output`], piece by piece into `out`.
fn render_into(skill: &Skill, files: Option<&[String]>, out: &mut impl Sink) {
    out.lit(lit!("<skill_content name=\""));
    out.put(&skill.name);
    out.lit(lit!("\">\n# Skill: "));
    out.put(&skill.name);
    out.lit(lit!("\n\n"));
    out.put(skill.content.trim());
    out.lit(lit!("\n\nBase directory for this skill: "));
    out.put(&skill.base);
    out.lit(lit!("\nRelative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.\n"));
    if let Some(files) = files {
        out.lit(lit!("Note: file list is sampled.\n\n<skill_files>"));
        for f in files {
            out.lit(lit!("\n<file>"));
            out.put(f);
            out.lit(lit!("</file>"));
        }
        if files.is_empty() {
            // An empty list is a blank line.
            out.lit(lit!("\n"));
        }
        out.lit(lit!("\n</skill_files>\n"));
    }
    out.lit(lit!("</skill_content>"));
}

/// The `skill` tool over a catalog.
pub fn tool(catalog: Arc<Catalog>) -> Tool {
    Tool::new(
        "skill",
        TOOL_DESCRIPTION,
        Some(json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The name of the skill to load"}},
            "required": ["name"],
            "additionalProperties": false
        })),
        Source::Skill,
        Arc::new(SkillTool(catalog)),
    )
}

struct SkillTool(Arc<Catalog>);

impl Execute for SkillTool {
    fn execute(&self, args: &Value, _ctx: &ExecContext) -> ToolResult {
        let name = args.get("name").map(display_string).unwrap_or_default();
        self.0.execute(&name)
    }

    /// An args object whose `name` is a string of a skill the catalog has is
    /// answered from the text; any other args (`name` missing or not a
    /// string, a key twice, an args string, malformed text) and an unknown
    /// skill take the usual way.
    fn execute_json_text(&self, args: &str, _ctx: &ExecContext) -> Option<Vec<u8>> {
        let args: NameArg = serde_json::from_str(args).ok()?;
        self.0.execute_json(args.name?)
    }
}

/// The `skill` tool's arguments as an object with a string `name` borrowed
/// from the text (any other key is skipped unread; a second `name`, or one
/// with an escape in it, is an error, and the parsed path decides).
#[derive(serde::Deserialize)]
struct NameArg<'a> {
    #[serde(borrow, default)]
    name: Option<&'a str>,
}

#[cfg(test)]
mod stop_tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn tree(levels: usize) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let mut dir = tmp.path().to_path_buf();
        for i in 0..levels {
            dir = dir.join(format!("d{i}"));
            let skill = dir.join("s");
            let _ = std::fs::create_dir_all(&skill);
            let _ = std::fs::write(
                skill.join("SKILL.md"),
                format!("---\nname: s{i}\ndescription: d\n---\nbody"),
            );
        }
        tmp
    }

    #[test]
    fn a_stop_during_the_walk_gives_up_the_load() {
        let tmp = tree(6);
        let opts = Options {
            dirs: vec![tmp.path().to_string_lossy().into_owned()],
            ..Options::default()
        };
        assert_eq!(load(&opts).loaded().count(), 6);
        // Stop once the walk has asked three times: it is mid-tree then.
        let asked = AtomicUsize::new(0);
        let stop = || asked.fetch_add(1, Ordering::SeqCst) >= 3;
        assert!(load_until(&opts, &stop).is_none());
        let walked = asked.load(Ordering::SeqCst);
        assert!(
            walked < 20,
            "the walk went on after the stop ({walked} checks)"
        );
    }
}
