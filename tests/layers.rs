//! The layering of `src/`, checked (issue 24): the table of floors in
//! `src/lib.rs`'s module doc names every room (a top-level module of `src/`)
//! and its floor. A room may use rooms on its own floor or below, never
//! above, and no two files may depend on each other, however indirectly.
//!
//! Every `.rs` file the crate compiles (found by following `mod` declarations
//! from `src/lib.rs`; `src/bin/` sits on top and is left out) is read with
//! its comments and string literals blanked out, and every reference to
//! another module is resolved to the file that holds it: `use` lines (grouped
//! forms included, `crate::`, `super::`, `self::` and child-module paths) and
//! paths written inline in code (`crate::x::y(..)`, `super::f(..)`,
//! `child::f(..)`). The test fails naming file:line and both rooms and
//! floors for an upward reference or a room missing from the table, and the
//! files of every cycle.
//!
//! A folder's `mod.rs` is its room's front door: its files use what it holds
//! through `super::`, and it declares and drives them in turn, so its edges
//! down into its own files are left out of the file-cycle check. A cycle
//! between rooms is checked on every edge, those included, so a re-export
//! through a front door cannot hide one.
//!
//! `LAYERS_SRC` (another `src/`) and `LAYERS_TABLE` (a file holding the
//! table) point the check elsewhere, to count what an older tree did.
//!
//! The unit checks at the end feed synthetic sources through the same
//! analysis, so the test is known to fail on an upward import and a cycle.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Dependencies between files that other open work removes; each is left
/// out of both checks until that work lands (then its entry goes). Keep it
/// short: `(from, to, whose work removes it)`.
const ALLOWED: &[(&str, &str, &str)] = &[];

#[test]
fn the_floors_hold() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = std::env::var_os("LAYERS_SRC").map_or_else(|| root.join("src"), PathBuf::from);
    let table_from =
        std::env::var_os("LAYERS_TABLE").map_or_else(|| src.join("lib.rs"), PathBuf::from);
    let table = floors(&fs::read_to_string(&table_from).expect("read the table of floors"));
    assert!(
        !table.is_empty(),
        "{}: no `//! - floor N: rooms` lines",
        table_from.display()
    );
    let files = crate_files(&src);
    let allowed: Vec<(String, String)> = ALLOWED
        .iter()
        .map(|(from, to, _)| (from.to_string(), to.to_string()))
        .collect();
    let report = analyze(&files, &table, &allowed);
    let rooms: BTreeSet<&str> = files
        .iter()
        .filter_map(|f| f.module.first())
        .map(String::as_str)
        .collect();
    let floor_count: BTreeSet<u32> = table.values().copied().collect();
    println!(
        "layers: {} rooms, {} floors, {} upward imports, {} cycles",
        rooms.len(),
        floor_count.len(),
        report.upward.len(),
        report.cycles.len()
    );
    let mut unused_allowances = Vec::new();
    for (from, to) in &allowed {
        if !report.edges.contains(&(from.clone(), to.clone())) {
            unused_allowances.push(format!("{from} -> {to}"));
        }
    }
    let mut failures = String::new();
    for line in report.unplaced.iter().chain(&report.upward) {
        let _ = writeln!(failures, "{line}");
    }
    for cycle in &report.cycles {
        let _ = writeln!(failures, "cycle: {}", cycle.join(" <-> "));
    }
    for orphan in unreached(&src, &files) {
        let _ = writeln!(
            failures,
            "{orphan}: not reached from src/lib.rs by any `mod` declaration"
        );
    }
    for stale in unused_allowances {
        let _ = writeln!(
            failures,
            "ALLOWED lists {stale}, which no longer exists: remove the entry"
        );
    }
    assert!(
        failures.is_empty(),
        "the layering of src/ is broken:\n{failures}"
    );
}

/// One compiled source file: where it is, the module it is, its text.
struct File {
    /// Relative to the crate root, e.g. `src/mcp/lines.rs`.
    path: String,
    /// The module path, e.g. `["mcp", "lines"]`; empty for `src/lib.rs`.
    module: Vec<String>,
    source: String,
}

#[derive(Default)]
struct Report {
    /// Every file-to-file dependency found, allowed ones included.
    edges: BTreeSet<(String, String)>,
    /// References going up a floor, one sentence each.
    upward: Vec<String>,
    /// Files whose room is not in the table.
    unplaced: Vec<String>,
    /// Each cycle's files (a strongly connected set of two or more), then
    /// each cycle's rooms.
    cycles: Vec<Vec<String>>,
}

/// The table: `//! - floor N: room, room, ...` lines of a module doc.
fn floors(lib: &str) -> HashMap<String, u32> {
    let mut table = HashMap::new();
    for line in lib.lines() {
        let Some(rest) = line.trim().strip_prefix("//! - floor ") else {
            continue;
        };
        let Some((number, rooms)) = rest.split_once(':') else {
            continue;
        };
        let Ok(floor) = number.trim().parse::<u32>() else {
            continue;
        };
        for room in rooms.split(',') {
            let room = room.trim();
            if !room.is_empty() {
                table.insert(room.to_string(), floor);
            }
        }
    }
    table
}

/// The files of the crate, found from `src/lib.rs` through its `mod`
/// declarations (so a `#[path]` module is found where it really is).
fn crate_files(src: &Path) -> Vec<File> {
    let root = src.parent().expect("src has a parent");
    let mut files = Vec::new();
    let mut queue = vec![(src.join("lib.rs"), Vec::<String>::new())];
    while let Some((path, module)) = queue.pop() {
        let source =
            fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let dir = path.parent().expect("a file has a directory").to_path_buf();
        let is_dir_module = module.is_empty() || path.file_name().is_some_and(|n| n == "mod.rs");
        let children_dir = if is_dir_module {
            dir.clone()
        } else {
            dir.join(path.file_stem().expect("a file has a stem"))
        };
        for (name, at) in mod_declarations(&source) {
            let child = match at {
                Some(at) => dir.join(at),
                None => {
                    let flat = children_dir.join(format!("{name}.rs"));
                    if flat.exists() {
                        flat
                    } else {
                        children_dir.join(&name).join("mod.rs")
                    }
                }
            };
            let mut child_module = module.clone();
            child_module.push(name);
            queue.push((child, child_module));
        }
        let shown = path.strip_prefix(root).unwrap_or(&path);
        files.push(File {
            path: normalize(shown),
            module,
            source,
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// `a/b/../c.rs` as `a/c.rs`, with `/` separators.
fn normalize(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

/// The `mod name;` declarations of a file, with their `#[path]` if any.
fn mod_declarations(source: &str) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    let mut path_attr: Option<String> = None;
    for line in source.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("#[path = \"") {
            path_attr = rest.split('"').next().map(str::to_string);
            continue;
        }
        let decl = line
            .strip_prefix("pub(crate) ")
            .or_else(|| line.strip_prefix("pub(super) "))
            .or_else(|| line.strip_prefix("pub "))
            .unwrap_or(line);
        if let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            if name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                found.push((name.to_string(), path_attr.take()));
                continue;
            }
        }
        if !line.starts_with("#[") {
            path_attr = None;
        }
    }
    found
}

/// The `.rs` files under `src/` (but `src/bin/`) that no `mod` reaches.
fn unreached(src: &Path, files: &[File]) -> Vec<String> {
    let root = src.parent().expect("src has a parent");
    let known: BTreeSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let mut out = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                if path != src.join("bin") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                let shown = normalize(path.strip_prefix(root).unwrap_or(&path));
                if !known.contains(shown.as_str()) {
                    out.push(shown);
                }
            }
        }
    }
    out.sort();
    out
}

/// Every reference of every file resolved to a file, then checked against
/// the table and for cycles. `allowed` edges are left out of both checks.
fn analyze(files: &[File], table: &HashMap<String, u32>, allowed: &[(String, String)]) -> Report {
    let modules: HashMap<&[String], &str> = files
        .iter()
        .map(|f| (f.module.as_slice(), f.path.as_str()))
        .collect();
    let mut report = Report::default();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let Some(room) = file.module.first() else {
            continue; // src/lib.rs only declares the rooms
        };
        graph.entry(file.path.clone()).or_default();
        let Some(&floor) = table.get(room) else {
            report.unplaced.push(format!(
                "{}: room '{room}' is not in the table of floors",
                file.path
            ));
            continue;
        };
        for reference in references(&file.source, &file.module, &modules) {
            let Some(target) = resolve(&reference.path, &modules) else {
                continue;
            };
            let (target_module, target_path) = target;
            if target_path == file.path || target_module.is_empty() {
                continue;
            }
            let edge = (file.path.clone(), target_path.to_string());
            report.edges.insert(edge.clone());
            if allowed.contains(&edge) {
                continue;
            }
            // A folder's mod.rs is the room's front door: its files use what
            // it holds through `super::`, and it drives them in turn. Only
            // its reaching down into its own files is left out of the cycle
            // check; a cycle through it in any other way still counts.
            let front_door_down = file.path.ends_with("/mod.rs")
                && target_module.len() > file.module.len()
                && target_module.starts_with(&file.module);
            if !front_door_down {
                graph
                    .entry(file.path.clone())
                    .or_default()
                    .insert(target_path.to_string());
            }
            let target_room = &target_module[0];
            let Some(&target_floor) = table.get(target_room) else {
                continue; // reported once, for the target's own files
            };
            if target_floor > floor {
                report.upward.push(format!(
                    "{}:{}: room '{room}' (floor {floor}) uses '{}' of room '{target_room}' (floor {target_floor}, above)",
                    file.path,
                    reference.line,
                    reference.path.join("::"),
                ));
            }
        }
    }
    report.cycles = cycles(&graph);
    // A cycle between rooms counts too, even one that runs through a front
    // door (a room's mod.rs re-exporting what one of its files holds).
    let mut rooms: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in &report.edges {
        if allowed.contains(&(from.clone(), to.clone())) {
            continue;
        }
        let (Some(a), Some(b)) = (room_of(files, from), room_of(files, to)) else {
            continue;
        };
        if a != b {
            rooms
                .entry(a.to_string())
                .or_default()
                .insert(b.to_string());
        }
    }
    for cycle in cycles(&rooms) {
        report
            .cycles
            .push(cycle.iter().map(|r| format!("room {r}")).collect());
    }
    report
}

fn room_of<'f>(files: &'f [File], path: &str) -> Option<&'f str> {
    files
        .iter()
        .find(|f| f.path == path)
        .and_then(|f| f.module.first())
        .map(String::as_str)
}

/// One module path written in a file, made absolute, and its line.
struct Reference {
    path: Vec<String>,
    line: usize,
}

/// The longest known module that `path` starts with, and its file.
fn resolve<'m>(
    path: &[String],
    modules: &HashMap<&'m [String], &'m str>,
) -> Option<(&'m [String], &'m str)> {
    (0..=path.len())
        .rev()
        .find_map(|n| modules.get_key_value(&path[..n]).map(|(m, f)| (*m, *f)))
}

/// The module references in `source`, a file of module `module`.
fn references(
    source: &str,
    module: &[String],
    modules: &HashMap<&[String], &str>,
) -> Vec<Reference> {
    let tokens = tokens(&blank(source));
    let mut out = Vec::new();
    // Inline modules (`mod tests { .. }`) open a scope for `super::`/`self::`.
    let mut scope: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let (text, line) = (&tokens[i].text, tokens[i].line);
        let mut here = module.to_vec();
        here.extend(scope.iter().map(|(name, _)| name.clone()));
        match text.as_str() {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if scope.last().is_some_and(|(_, d)| *d == depth) {
                    scope.pop();
                }
            }
            "mod" if tokens.get(i + 2).is_some_and(|t| t.text == "{") => {
                scope.push((tokens[i + 1].text.clone(), depth));
                depth += 1;
                i += 3;
                continue;
            }
            "use" => {
                let end = tokens[i..]
                    .iter()
                    .position(|t| t.text == ";")
                    .map_or(tokens.len(), |p| i + p);
                let mut paths = Vec::new();
                use_tree(&tokens[i + 1..end], &mut Vec::new(), &mut paths);
                for path in paths {
                    if let Some(path) = absolute(&path, &here, modules) {
                        out.push(Reference { path, line });
                    }
                }
                i = end + 1;
                continue;
            }
            _ if is_ident(text)
                && tokens.get(i + 1).is_some_and(|t| t.text == "::")
                && !(i > 0 && (tokens[i - 1].text == "::" || tokens[i - 1].text == "$")) =>
            {
                let mut path = vec![text.clone()];
                let mut j = i + 1;
                while tokens.get(j).is_some_and(|t| t.text == "::")
                    && tokens.get(j + 1).is_some_and(|t| is_ident(&t.text))
                {
                    path.push(tokens[j + 1].text.clone());
                    j += 2;
                }
                if let Some(path) = absolute(&path, &here, modules) {
                    out.push(Reference { path, line });
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// `path` written in module `here`, as a path from the crate root; `None`
/// for a path into another crate.
fn absolute(
    path: &[String],
    here: &[String],
    modules: &HashMap<&[String], &str>,
) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut base: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => here.to_vec(),
        "super" => {
            let mut base = here.to_vec();
            base.pop();
            base
        }
        _ => {
            // A child module of this one, named without `self::`.
            let mut child = here.to_vec();
            child.push(first.clone());
            if !modules.contains_key(child.as_slice()) || here.is_empty() && path.len() == 1 {
                return None;
            }
            here.to_vec()
        }
    };
    let mut rest = if matches!(first.as_str(), "crate" | "self" | "super") {
        &path[1..]
    } else {
        path
    };
    while rest.first().is_some_and(|s| s == "super") {
        base.pop();
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The paths a `use` tree names, each from the tree's root.
fn use_tree(tokens: &[Token], prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut i = 0;
    let depth_before = prefix.len();
    if tokens.first().is_some_and(|t| t.text == "::") {
        return; // `use ::x`, another crate
    }
    while i < tokens.len() {
        let text = tokens[i].text.as_str();
        if text == "{" {
            // The group's items, split at top-level commas.
            let mut level = 0;
            let mut start = i + 1;
            for j in i + 1..tokens.len() {
                match tokens[j].text.as_str() {
                    "{" => level += 1,
                    "}" if level == 0 => {
                        group_item(&tokens[start..j], prefix, out);
                        break;
                    }
                    "}" => level -= 1,
                    "," if level == 0 => {
                        group_item(&tokens[start..j], prefix, out);
                        start = j + 1;
                    }
                    _ => {}
                }
            }
            prefix.truncate(depth_before);
            return;
        } else if text == "*" || text == "as" {
            break;
        } else if text != "::" {
            if text == "self" && !prefix.is_empty() {
                // `a::{self}`: the module itself
            } else {
                prefix.push(text.to_string());
            }
        }
        i += 1;
    }
    if !prefix.is_empty() {
        out.push(prefix.clone());
    }
    prefix.truncate(depth_before);
}

fn group_item(tokens: &[Token], prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    if tokens.is_empty() {
        return;
    }
    let depth_before = prefix.len();
    use_tree(tokens, prefix, out);
    prefix.truncate(depth_before);
}

struct Token {
    text: String,
    line: usize,
}

fn is_ident(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Identifiers, `::`, and single punctuation characters, with their lines.
fn tokens(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token {
                text: chars[start..i].iter().collect(),
                line,
            });
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: c.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// `source` with comments and the insides of string and character literals
/// replaced by spaces (newlines kept, so lines still count).
fn blank(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let keep_lines = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut level = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    level += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    level -= 1;
                    i += 2;
                    if level == 0 {
                        break;
                    }
                } else {
                    keep_lines(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && next == Some('r')))
            && !(i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'))
            && {
                let at = if c == 'b' { i + 2 } else { i + 1 };
                let hashes = chars[at..].iter().take_while(|&&h| h == '#').count();
                chars.get(at + hashes) == Some(&'"')
            }
        {
            // A raw string: r"..", r#".."#, br"..".
            let at = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[at..].iter().take_while(|&&h| h == '#').count();
            i = at + hashes + 1;
            out.push_str("\"\"");
            while i < chars.len() {
                if chars[i] == '"'
                    && chars[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes
                {
                    i += 1 + hashes;
                    break;
                }
                keep_lines(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '"' {
            out.push_str("\"\"");
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    keep_lines(&mut out, chars[i]);
                    i += 1;
                }
            }
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime.
            if next == Some('\\') {
                let close = chars[i + 2..]
                    .iter()
                    .position(|&q| q == '\'')
                    .map_or(chars.len(), |p| i + 2 + p);
                out.push_str("' '");
                i = close + 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                out.push_str("' '");
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The strongly connected sets of two or more files (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: HashMap<&'g str, usize>,
        low: HashMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, node: &'g str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            if let Some(next) = self.graph.get(node) {
                for to in next {
                    let to = to.as_str();
                    if !self.index.contains_key(to) {
                        self.visit(to);
                        let low = self.low[node].min(self.low[to]);
                        self.low.insert(node, low);
                    } else if self.on_stack.contains(to) {
                        let low = self.low[node].min(self.index[to]);
                        self.low.insert(node, low);
                    }
                }
            }
            if self.low[node] == self.index[node] {
                let mut set = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    set.push(top.to_string());
                    if top == node {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    self.found.push(set);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.found.sort();
    walk.found
}

// ---------------------------------------------------------------------------
// the analysis can fail
// ---------------------------------------------------------------------------

fn synthetic(files: &[(&str, &[&str], &str)]) -> Vec<File> {
    files
        .iter()
        .map(|(path, module, source)| File {
            path: path.to_string(),
            module: module.iter().map(|s| s.to_string()).collect(),
            source: source.to_string(),
        })
        .collect()
}

fn two_floors() -> HashMap<String, u32> {
    floors("//! - floor 1: low\n//! - floor 2: high, other\n")
}

#[test]
fn an_upward_import_is_caught() {
    let files = synthetic(&[
        (
            "src/low.rs",
            &["low"],
            "use crate::high::{Thing, deep::Other};\n",
        ),
        (
            "src/high/mod.rs",
            &["high"],
            "pub struct Thing;\npub mod deep;\n",
        ),
        ("src/high/deep.rs", &["high", "deep"], "pub struct Other;\n"),
    ]);
    let report = analyze(&files, &two_floors(), &[]);
    assert_eq!(report.upward.len(), 2, "{:?}", report.upward);
    assert!(
        report.upward[0].starts_with("src/low.rs:1: room 'low' (floor 1)"),
        "{}",
        report.upward[0]
    );
    assert!(
        report.upward[0].contains("'high' (floor 2"),
        "{}",
        report.upward[0]
    );
}

#[test]
fn an_inline_upward_path_is_caught_but_not_one_in_a_comment_or_string() {
    let files = synthetic(&[
        (
            "src/low.rs",
            &["low"],
            "// crate::high::f()\nfn g() -> &'static str { \"crate::high::f\" }\nfn h() { let c = '\"'; crate::high::f(); }\n",
        ),
        ("src/high.rs", &["high"], "pub fn f() {}\n"),
    ]);
    let report = analyze(&files, &two_floors(), &[]);
    assert_eq!(report.upward.len(), 1, "{:?}", report.upward);
    assert!(
        report.upward[0].starts_with("src/low.rs:3:"),
        "{}",
        report.upward[0]
    );
}

#[test]
fn a_two_file_cycle_is_caught() {
    let files = synthetic(&[
        ("src/high/mod.rs", &["high"], "mod a;\nmod b;\n"),
        (
            "src/high/a.rs",
            &["high", "a"],
            "use super::b::B;\npub struct A;\n",
        ),
        (
            "src/high/b.rs",
            &["high", "b"],
            "pub struct B;\nfn f() { crate::high::a::A; }\n",
        ),
        ("src/other.rs", &["other"], "use crate::high::b::B;\n"),
    ]);
    let report = analyze(&files, &two_floors(), &[]);
    assert!(report.upward.is_empty(), "{:?}", report.upward);
    assert_eq!(
        report.cycles,
        vec![vec![
            "src/high/a.rs".to_string(),
            "src/high/b.rs".to_string()
        ]]
    );
    let allowed = [("src/high/b.rs".to_string(), "src/high/a.rs".to_string())];
    assert!(analyze(&files, &two_floors(), &allowed).cycles.is_empty());
}

#[test]
fn a_room_missing_from_the_table_is_caught() {
    let files = synthetic(&[("src/stray.rs", &["stray"], "")]);
    let report = analyze(&files, &two_floors(), &[]);
    assert_eq!(report.unplaced.len(), 1);
}

#[test]
fn super_inside_an_inline_module_is_the_file_itself() {
    let files = synthetic(&[
        ("src/high/mod.rs", &["high"], "pub mod a;\npub struct T;\n"),
        (
            "src/high/a.rs",
            &["high", "a"],
            "pub fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::T;\n}\n",
        ),
    ]);
    let report = analyze(&files, &two_floors(), &[]);
    let edges: Vec<_> = report.edges.into_iter().collect();
    assert_eq!(
        edges,
        vec![("src/high/a.rs".to_string(), "src/high/mod.rs".to_string())]
    );
}

#[test]
fn a_cycle_between_rooms_through_a_front_door_is_caught() {
    // low/mod.rs re-exports what low/a.rs holds; other/b.rs uses it and
    // low/a.rs uses other/b.rs: no file cycle once the front door's own
    // edges are set aside, but a cycle between the rooms all the same.
    let files = synthetic(&[
        ("src/low/mod.rs", &["low"], "mod a;\npub use a::A;\n"),
        (
            "src/low/a.rs",
            &["low", "a"],
            "use crate::other::b::B;\npub struct A;\n",
        ),
        ("src/other/mod.rs", &["other"], "pub mod b;\n"),
        (
            "src/other/b.rs",
            &["other", "b"],
            "use crate::low::A;\npub struct B;\n",
        ),
    ]);
    let table = floors("//! - floor 1: low, other\n");
    let report = analyze(&files, &table, &[]);
    assert_eq!(
        report.cycles,
        vec![vec!["room low".to_string(), "room other".to_string()]]
    );
}

/// README's Layout (docs/design.md) names every folder the repository
/// tracks under `src/`, `tests/`, `bindings/`, `bench/`, `benches/`,
/// `fuzz/`, `examples/` and `scripts/`, down to two levels below the top
/// (issue 24): a new folder gets its line there, or this fails naming it.
#[test]
fn the_layout_names_every_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let listed = match std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
    {
        Ok(out) if out.status.success() => out.stdout,
        _ => {
            eprintln!(
                "SKIPPED the_layout_names_every_folder: not a git checkout (git ls-files failed)"
            );
            return;
        }
    };
    let layout = fs::read_to_string(root.join("docs/design.md")).expect("read docs/design.md");
    let tops = [
        "src", "tests", "bindings", "bench", "benches", "fuzz", "examples", "scripts",
    ];
    let mut folders = BTreeSet::new();
    for path in listed.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let path = String::from_utf8_lossy(path);
        let parts: Vec<&str> = path.split('/').collect();
        if !tops.contains(&parts[0]) {
            continue;
        }
        // Every folder holding the file, up to three levels (`tests/x/y`).
        for depth in 1..parts.len().min(4) {
            folders.insert(parts[..depth].join("/"));
        }
    }
    let missing: Vec<String> = folders
        .into_iter()
        .filter(|f| !layout.contains(&format!("{f}/")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/design.md's Layout does not name these folders (write each as `folder/` with a line saying what it holds): {missing:?}"
    );
}
