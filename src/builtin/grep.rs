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
    is_text(path).then_some(sink.hits)
}

/// Whether the file at `path` is UTF-8 without a NUL byte, read in 64 KiB
/// steps (never the whole file at once: it may be of any size).
fn is_text(path: &str) -> bool {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut buf = vec![0u8; 64 * 1024];
    // The start of a UTF-8 sequence cut by the end of the last step.
    let mut carry = 0;
    loop {
        let n = match file.read(&mut buf[carry..]) {
            Ok(0) => return carry == 0,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        };
        let len = carry + n;
        if crate::sys::bytes::find(0, &buf[carry..len]).is_some() {
            return false;
        }
        carry = match std::str::from_utf8(&buf[..len]) {
            Ok(_) => 0,
            Err(e) if e.error_len().is_some() => return false,
            Err(e) => {
                let valid = e.valid_up_to();
                buf.copy_within(valid..len, 0);
                len - valid
            }
        };
    }
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
