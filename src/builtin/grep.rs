//! `grep` (SPEC §4A): every line matching a regex under `path`, as
//! `file:line:text` with `file` relative to `path` and `/`-separated
//! (upstream 0.21, A24/A28), ordered by that relative path (code points)
//! then line, at most `limit`. Binary and non-UTF-8 files are skipped.

use super::{args, walk};
use crate::tool::{ExecContext, ToolResult};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use serde_json::Value;

pub fn run(args: &Value, ctx: &ExecContext) -> ToolResult {
    let pattern = args::string(args, "pattern");
    let root = args::opt_string(args, "path").unwrap_or_else(|| ".".into());
    let limit = match args::integer("grep", args, "limit", 100) {
        Ok(l) => usize::try_from(l).unwrap_or(0),
        Err(e) => return e,
    };
    let include = match args::opt_string(args, "include") {
        Some(g) => match walk::glob("grep", "include", &g) {
            Ok(m) => Some(m),
            Err(e) => return e,
        },
        None => None,
    };
    // Lines split on \n or \r\n, and ^/$ anchor at line ends, as the
    // recorded port matches line by line.
    let matcher = match RegexMatcherBuilder::new()
        .multi_line(true)
        .crlf(true)
        .build(&pattern)
    {
        Ok(m) => m,
        Err(e) => {
            return ToolResult::error(format!("grep: invalid regex {pattern:?}: {e}"));
        }
    };
    if limit == 0 {
        return ToolResult::ok("");
    }
    let found = walk::files("grep", &root, ctx, || {
        let mut searcher = SearcherBuilder::new()
            .line_terminator(grep_matcher::LineTerminator::crlf())
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .build();
        let (matcher, include) = (&matcher, &include);
        move |shown: &str, rel: &str| {
            if include.as_ref().is_some_and(|g| !g.is_match(rel)) {
                return None;
            }
            search_file(&mut searcher, matcher, shown, limit).map(|hits| (rel.to_string(), hits))
        }
    });
    let files = match found {
        Ok(f) => f,
        Err(e) => return e,
    };
    let mut out = String::new();
    // Each file is shown by its path relative to `path` (the string the
    // walk ordered by), as 0.21 does (A28); a `path` that is a file is
    // shown as given.
    let hits = files
        .iter()
        .flat_map(|(_, (rel, hits))| hits.iter().map(move |h| (rel, h)))
        .take(limit);
    for (i, (path, (line, text))) in hits.enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(path);
        out.push(':');
        out.push_str(&line.to_string());
        out.push(':');
        out.push_str(text);
    }
    ToolResult::ok(out)
}

/// The first `limit` matching lines of one file, or `None` when it has none
/// or is not UTF-8 text.
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &str,
    limit: usize,
) -> Option<Vec<(u64, String)>> {
    let mut sink = Hits {
        limit,
        hits: Vec::new(),
        skip: false,
    };
    searcher.search_path(matcher, path, &mut sink).ok()?;
    if sink.skip || sink.hits.is_empty() {
        return None;
    }
    // The search may have stopped early; a file reported must be text all
    // the way through. Only files with hits pay for this check.
    let bytes = std::fs::read(path).ok()?;
    if memchr::memchr(0, &bytes).is_some() || std::str::from_utf8(&bytes).is_err() {
        return None;
    }
    Some(sink.hits)
}

struct Hits {
    limit: usize,
    hits: Vec<(u64, String)>,
    skip: bool,
}

impl Sink for Hits {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let mut line = mat.bytes();
        line = line.strip_suffix(b"\n").unwrap_or(line);
        line = line.strip_suffix(b"\r").unwrap_or(line);
        let Ok(text) = std::str::from_utf8(line) else {
            self.skip = true;
            return Ok(false);
        };
        self.hits
            .push((mat.line_number().unwrap_or(0), text.to_string()));
        Ok(self.hits.len() < self.limit)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, Self::Error> {
        self.skip = true;
        Ok(false)
    }
}
