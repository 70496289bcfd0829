//! `glob` (SPEC §4A): the files under `path` whose relative path matches
//! `pattern`, in code-point order, at most `limit`.
//!
//! The walk visits the tree in that order, so it stops at the `limit`-th
//! match instead of listing the whole tree and sorting it: each directory is
//! read in one go with `getdents64` (no `stat` of a directory, its
//! subdirectories opened relative to it), its entries sorted with a
//! directory's name taken as `name/` (so `a.txt` < `a/…` < `a0`, the order
//! of the full paths), and the matches written straight into the output.
//! What it visits is what the shared walk ([`super::walk::files`]) visits:
//! every regular file and every symlink to one, symlinked directories not
//! entered, nothing pruned. A name that is not UTF-8, or a tree deeper than
//! the walk keeps descriptors for, hands over to that shared walk, which
//! lists everything and sorts by the displayed text.

use super::{args, walk};
use crate::tool::{ExecContext, Stop, ToolResult};
use globset::GlobMatcher;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, CWD};
use serde_json::Value;
use std::ffi::CStr;
use std::mem::MaybeUninit;

/// Directory descriptors the ordered walk holds open at once, at most.
const MAX_DEPTH: usize = 64;

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
    if !std::path::Path::new(&root).exists() {
        return ToolResult::error(format!("glob: no such file or directory: {root}"));
    }
    match ordered(&root, &matcher, limit, ctx) {
        Ok(Some(out)) => ToolResult::ok(out),
        Ok(None) => listed(&root, &matcher, limit, ctx),
        Err(why) => ctx.stopped("glob", why),
    }
}

/// The shared walk's answer: every match, sorted, cut to `limit`.
fn listed(root: &str, matcher: &GlobMatcher, limit: usize, ctx: &ExecContext) -> ToolResult {
    let found = walk::files("glob", root, ctx, || {
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

/// The ordered walk's output, `None` when it hands over.
fn ordered(
    root: &str,
    matcher: &GlobMatcher,
    limit: usize,
    ctx: &ExecContext,
) -> Result<Option<String>, Stop> {
    if let Some(why) = ctx.stop() {
        return Err(why);
    }
    let mut w = Walk {
        matcher,
        limit,
        ctx,
        out: String::new(),
        found: 0,
        buf: Vec::new(),
    };
    if limit == 0 {
        return Ok(Some(w.out));
    }
    // The root as the shared walk takes it: followed when it is a symlink;
    // itself, when it is a file.
    let Ok(meta) = std::fs::metadata(root) else {
        return Ok(Some(w.out));
    };
    if !meta.is_dir() {
        if meta.is_file() && matcher.is_match(root) {
            w.out.push_str(root);
        }
        return Ok(Some(w.out));
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(fd) = rustix::fs::openat(CWD, root, flags, Mode::empty()) else {
        return Ok(Some(w.out));
    };
    let mut rel = String::new();
    match w.dir(&fd, &mut rel, 0)? {
        Step::Handover => Ok(None),
        Step::More | Step::Done => Ok(Some(w.out)),
    }
}

/// How a directory's walk ended.
enum Step {
    /// Listed; keep going.
    More,
    /// `limit` matches written.
    Done,
    /// Left to the shared walk.
    Handover,
}

struct Walk<'a> {
    matcher: &'a GlobMatcher,
    limit: usize,
    ctx: &'a ExecContext,
    out: String,
    found: usize,
    /// The `getdents64` buffer, shared by every level (a level is read
    /// whole before the walk goes down).
    buf: Vec<MaybeUninit<u8>>,
}

/// One entry of a directory being walked: `names[start..start + len]` is its
/// sort key (the name, with a `/` after a directory's), followed there by a
/// NUL.
struct Entry {
    start: u32,
    len: u32,
    dir: bool,
}

impl Walk<'_> {
    /// Walks the open directory `fd`, whose path relative to the root is
    /// `rel` (empty, or ending in `/`; restored before returning).
    fn dir(&mut self, fd: &OwnedFd, rel: &mut String, depth: usize) -> Result<Step, Stop> {
        if depth >= MAX_DEPTH {
            return Ok(Step::Handover);
        }
        let mut names: Vec<u8> = Vec::with_capacity(1024);
        let mut entries: Vec<Entry> = Vec::new();
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(8192, MaybeUninit::uninit());
        let listed = self.list(fd, &mut buf, &mut names, &mut entries);
        self.buf = buf;
        match listed? {
            Step::More => {}
            other => return Ok(other),
        }
        let key = |e: &Entry| &names[e.start as usize..(e.start + e.len) as usize];
        entries.sort_unstable_by(|a, b| key(a).cmp(key(b)));
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        for e in &entries {
            let text = key(e);
            // UTF-8, checked above; the `/` and NUL are ASCII.
            let Ok(text) = std::str::from_utf8(text) else {
                return Ok(Step::Handover);
            };
            let len = rel.len();
            rel.push_str(text);
            let step = if e.dir {
                let with_nul = &names[e.start as usize..=(e.start + e.len) as usize];
                match CStr::from_bytes_with_nul(with_nul)
                    .ok()
                    .and_then(|name| rustix::fs::openat(fd, name, flags, Mode::empty()).ok())
                {
                    Some(child) => self.dir(&child, rel, depth + 1),
                    // Unreadable: skipped, as the shared walk skips it.
                    None => Ok(Step::More),
                }
            } else {
                Ok(self.file(rel))
            };
            rel.truncate(len);
            match step? {
                Step::More => {}
                done => return Ok(done),
            }
        }
        Ok(Step::More)
    }

    /// Reads the whole directory `fd`: each kept entry's key and NUL into
    /// `names`, its place into `entries`.
    fn list(
        &self,
        fd: &OwnedFd,
        buf: &mut [MaybeUninit<u8>],
        names: &mut Vec<u8>,
        entries: &mut Vec<Entry>,
    ) -> Result<Step, Stop> {
        let mut raw = RawDir::new(fd.as_fd(), buf);
        while let Some(entry) = raw.next() {
            let Ok(entry) = entry else { break };
            let name = entry.file_name();
            let bytes = name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            if let Some(why) = self.ctx.stop() {
                return Err(why);
            }
            let dir = match kind(fd, name, entry.file_type()) {
                Some(FileType::Directory) => true,
                Some(FileType::RegularFile) => false,
                // A symlink counts when it leads to a regular file; a
                // symlinked directory is not entered.
                Some(FileType::Symlink) => match rustix::fs::statat(fd, name, AtFlags::empty()) {
                    Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => false,
                    _ => continue,
                },
                _ => continue,
            };
            if std::str::from_utf8(bytes).is_err() {
                return Ok(Step::Handover);
            }
            let (Ok(start), Ok(len)) = (
                u32::try_from(names.len()),
                u32::try_from(bytes.len() + usize::from(dir)),
            ) else {
                return Ok(Step::Handover);
            };
            names.extend_from_slice(bytes);
            if dir {
                names.push(b'/');
            }
            names.push(0);
            entries.push(Entry { start, len, dir });
        }
        Ok(Step::More)
    }

    /// Writes `rel` when it matches; `Done` at the `limit`-th match.
    fn file(&mut self, rel: &str) -> Step {
        if !self.matcher.is_match(rel) {
            return Step::More;
        }
        if self.found > 0 {
            self.out.push('\n');
        }
        self.out.push_str(rel);
        self.found += 1;
        if self.found >= self.limit {
            Step::Done
        } else {
            Step::More
        }
    }
}

/// The type of an entry: from the directory listing, or (for a file system
/// that does not say) from `lstat`. `None` when it is gone.
fn kind(fd: &OwnedFd, name: &CStr, listed: FileType) -> Option<FileType> {
    match listed {
        FileType::Unknown => rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .map(|st| FileType::from_raw_mode(st.st_mode)),
        kind => Some(kind),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn both(root: &str, pattern: &str, limit: usize) -> (ToolResult, ToolResult) {
        let ctx = ExecContext::default();
        let m = walk::glob("glob", "pattern", pattern).unwrap_or_else(|e| panic!("{}", e.output));
        let fast = match ordered(root, &m, limit, &ctx) {
            Ok(Some(out)) => ToolResult::ok(out),
            Ok(None) => panic!("handed over on {root}"),
            Err(why) => ctx.stopped("glob", why),
        };
        (fast, listed(root, &m, limit, &ctx))
    }

    #[test]
    fn the_ordered_walk_answers_as_the_full_listing_does() {
        let tmp = std::env::temp_dir().join(format!("tn-glob-order-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        let t = tmp.join("t");
        for d in [
            "a",
            "a/b",
            "a-b",
            "a.d",
            "a0",
            ".git",
            "node_modules/x",
            "B",
            "\u{e9}",
            "z/y/x",
        ] {
            fs::create_dir_all(t.join(d)).unwrap_or_default();
        }
        for f in [
            "a.txt",
            "a/x.txt",
            "a/b/y.txt",
            "a-b/z.txt",
            "a.d/w.txt",
            "a0/v.txt",
            "a/b.txt",
            ".git/HEAD",
            "node_modules/x/i.txt",
            "B/u.txt",
            "\u{e9}/t.txt",
            "_.txt",
            "z/y/x/deep.txt",
            "z/y.md",
            "\u{1f600}.txt",
            "\u{e000}.txt",
        ] {
            fs::write(t.join(f), "x").unwrap_or_default();
        }
        fs::create_dir_all(tmp.join("out")).unwrap_or_default();
        fs::write(tmp.join("out/o.txt"), "o").unwrap_or_default();
        let _ = symlink(tmp.join("out/o.txt"), t.join("a/linked.txt"));
        let _ = symlink(tmp.join("out"), t.join("dirlink"));
        let _ = symlink(tmp.join("nowhere"), t.join("dangling.txt"));
        let root = t.to_string_lossy().into_owned();
        let mut checked = 0;
        for root in [root.clone(), format!("{root}/"), format!("{root}/a/x.txt")] {
            for pattern in [
                "**/*.txt", "*", "**", "a/**", "*.txt", "a*/*.txt", "**/y*", "?/*",
            ] {
                for limit in [0, 1, 2, 3, 5, 8, 100] {
                    let (fast, full) = both(&root, pattern, limit);
                    assert_eq!(fast.output, full.output, "{root} {pattern} {limit}");
                    assert_eq!(fast.is_error, full.is_error);
                    checked += usize::from(!full.output.is_empty());
                }
            }
        }
        assert!(checked > 50, "the trees gave too few matches: {checked}");
        let (all, _) = both(&root, "**/*.txt", 100);
        assert_eq!(
            all.output,
            "B/u.txt\n_.txt\na-b/z.txt\na.d/w.txt\na.txt\na/b.txt\na/b/y.txt\na/linked.txt\n\
             a/x.txt\na0/v.txt\nnode_modules/x/i.txt\nz/y/x/deep.txt\n\u{e9}/t.txt\n\u{e000}.txt\n\u{1f600}.txt"
        );
        // A symlinked root is followed, as the full listing follows it.
        let _ = symlink(&t, tmp.join("rootlink"));
        let _ = symlink(t.join("a.txt"), tmp.join("filelink.txt"));
        for link in ["rootlink", "filelink.txt"] {
            let link = tmp.join(link).to_string_lossy().into_owned();
            let (fast, full) = both(&link, "**/*.txt", 100);
            assert!(!full.output.is_empty(), "{link}");
            assert_eq!(fast.output, full.output);
        }
        let _ = fs::remove_dir_all(&tmp);
    }

    #[test]
    fn a_call_past_its_deadline_stops_before_listing() {
        let ctx = ExecContext {
            deadline: Some(std::time::Instant::now()),
            ..ExecContext::default()
        };
        let m = walk::glob("glob", "pattern", "*").unwrap_or_else(|e| panic!("{}", e.output));
        assert!(matches!(ordered(".", &m, 10, &ctx), Err(Stop::Timeout)));
        assert!(matches!(ordered(".", &m, 0, &ctx), Err(Stop::Timeout)));
    }
}
