//! The sibling-file sample of a skill's `<skill_files>` block.
//!
//! A skill folder is small and its sample is read on every `skill` call, so
//! the usual case, a folder with no symlinked directory in it, is listed
//! here with `getdents64` on directory descriptors: each subdirectory opened
//! relative to its parent, names read in place from one stack buffer, one
//! allocation per file kept. That walk finds what [`super::walk::files`]
//! finds whenever no directory is reached through a symlink (every real
//! directory is then met once, by one path). When it meets a symlinked
//! directory, or the folder is deeper than it keeps descriptors for, it
//! hands over to that general walk, which resolves real paths and keeps
//! each real directory once.

use super::walk::{is_ignored_dir, push_component};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, CWD};
use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::path::Path;

/// Directory descriptors the fast walk holds open at once, at most.
const MAX_DEPTH: usize = 8;

/// Up to `limit` regular files under `dir` (recursively, `node_modules` and
/// `.git` pruned, every `SKILL.md` left out), sorted by path in code-point
/// order so two hosts always agree.
pub fn sample(dir: &str, limit: usize) -> Vec<String> {
    let mut files = match plain_tree(dir) {
        Some(files) => files,
        None => super::walk::files(Path::new(dir), &|name| name != "SKILL.md")
            .into_iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect(),
    };
    files.sort_unstable();
    files.truncate(limit);
    files
}

/// Why the fast walk gave up.
struct Handover;

/// The files of the general walk when no directory under `dir` is reached
/// through a symlink; `None` when one is (or the tree is too deep), and the
/// general walk must decide. A root that cannot be opened as a directory
/// yields nothing, as the general walk's does.
fn plain_tree(dir: &str) -> Option<Vec<String>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(fd) = rustix::fs::openat(CWD, dir, flags, Mode::empty()) else {
        return Some(Vec::new());
    };
    // Room for the deeper folders' names, so the path is not moved as it
    // grows (a skill folder is shallow).
    let mut path = Vec::with_capacity(dir.len() + 256);
    path.extend_from_slice(dir.as_bytes());
    let mut files = Vec::new();
    match list(&fd, &mut path, &mut files, 0) {
        Ok(()) => Some(files),
        Err(Handover) => None,
    }
}

/// Adds the kept files below the open directory `fd`, reached as `path`
/// (restored before returning), to `files`.
fn list(
    fd: &OwnedFd,
    path: &mut Vec<u8>,
    files: &mut Vec<String>,
    depth: usize,
) -> Result<(), Handover> {
    if depth >= MAX_DEPTH {
        return Err(Handover);
    }
    let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
    let mut entries = RawDir::new(fd.as_fd(), &mut buf);
    // The subdirectories are entered after the listing, so one buffer and
    // one descriptor per level are in use at a time. Their names are kept
    // NUL-terminated, one after another.
    let mut subdirs: Vec<u8> = Vec::new();
    while let Some(entry) = entries.next() {
        let Ok(entry) = entry else { break };
        let name = entry.file_name();
        let bytes = name.to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => match rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => FileType::from_raw_mode(st.st_mode),
                Err(_) => continue,
            },
            kind => kind,
        };
        match kind {
            FileType::RegularFile => keep(path, bytes, files),
            FileType::Directory if !is_ignored_dir(bytes) => {
                if subdirs.is_empty() {
                    // One allocation for a few names, made only when a
                    // folder has a subfolder.
                    subdirs.reserve(64);
                }
                subdirs.extend_from_slice(name.to_bytes_with_nul());
            }
            FileType::Symlink => {
                // A link that leads nowhere is left out.
                let Ok(st) = rustix::fs::statat(fd, name, AtFlags::empty()) else {
                    continue;
                };
                match FileType::from_raw_mode(st.st_mode) {
                    FileType::RegularFile => keep(path, bytes, files),
                    // A second way into a directory: the general walk
                    // decides which path it is listed under, if any.
                    FileType::Directory if !is_ignored_dir(bytes) => return Err(Handover),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    for sub in subdirs.split_inclusive(|&b| b == 0) {
        let Ok(name) = CStr::from_bytes_with_nul(sub) else {
            continue;
        };
        let Ok(child) = rustix::fs::openat(fd, name, flags, Mode::empty()) else {
            continue;
        };
        let len = path.len();
        push_component(path, name.to_bytes());
        let listed = list(&child, path, files, depth + 1);
        path.truncate(len);
        listed?;
    }
    Ok(())
}

/// Keeps the file `name` in the directory `path` unless it is a `SKILL.md`,
/// as text (a name that is not UTF-8 shown as `to_string_lossy` shows it).
fn keep(path: &[u8], name: &[u8], files: &mut Vec<String>) {
    if name == b"SKILL.md" {
        return;
    }
    let mut full = Vec::with_capacity(path.len() + 1 + name.len());
    full.extend_from_slice(path);
    push_component(&mut full, name);
    files.push(match String::from_utf8(full) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// What the general walk samples (the reference the fast walk must match).
    fn general(dir: &str) -> Vec<String> {
        let mut files: Vec<String> =
            super::super::walk::files(Path::new(dir), &|n| n != "SKILL.md")
                .into_iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
        files.sort_unstable();
        files
    }

    fn tree(tag: &str) -> std::path::PathBuf {
        let tmp = std::env::temp_dir().join(format!("tn-sampler-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        for d in [
            "s/scripts/deep/er",
            "s/node_modules/x",
            "s/.git",
            "s/ref",
            "outside",
        ] {
            fs::create_dir_all(tmp.join(d)).unwrap_or_default();
        }
        for f in [
            "s/SKILL.md",
            "s/data.txt",
            "s/a-b.txt",
            "s/scripts/run.sh",
            "s/scripts/deep/er/z.md",
            "s/scripts/SKILL.md",
            "s/node_modules/x/n.js",
            "s/.git/HEAD",
            "s/ref/notes.md",
            "outside/o.txt",
        ] {
            fs::write(tmp.join(f), f).unwrap_or_default();
        }
        let _ = std::os::unix::fs::symlink(tmp.join("outside/o.txt"), tmp.join("s/linked.txt"));
        let _ = std::os::unix::fs::symlink(tmp.join("nowhere"), tmp.join("s/dangling"));
        tmp
    }

    #[test]
    fn a_plain_folder_is_listed_as_the_general_walk_lists_it() {
        let tmp = tree("plain");
        let dir = tmp.join("s").to_string_lossy().into_owned();
        let got = sample(&dir, 100);
        let want: Vec<String> = [
            "a-b.txt",
            "data.txt",
            "linked.txt",
            "ref/notes.md",
            "scripts/deep/er/z.md",
            "scripts/run.sh",
        ]
        .iter()
        .map(|f| format!("{dir}/{f}"))
        .collect();
        assert_eq!(got, want);
        assert_eq!(got, general(&dir));
        assert_eq!(sample(&dir, 2), want[..2]);
        // A trailing slash is joined as Path::join joins it.
        assert_eq!(sample(&format!("{dir}/"), 100), general(&format!("{dir}/")));
        let _ = fs::remove_dir_all(&tmp);
    }

    #[test]
    fn a_symlinked_directory_hands_over_to_the_general_walk() {
        let tmp = tree("linked");
        let s = tmp.join("s");
        let _ = std::os::unix::fs::symlink(tmp.join("outside"), s.join("zz"));
        let _ = std::os::unix::fs::symlink(s.join("ref"), s.join("b"));
        let _ = std::os::unix::fs::symlink(&s, s.join("scripts/loop"));
        let dir = s.to_string_lossy().into_owned();
        assert!(plain_tree(&dir).is_none());
        let got = sample(&dir, 100);
        assert_eq!(got, general(&dir));
        // `b` and `ref` are one real folder, listed once, under `b`.
        assert!(got.contains(&format!("{dir}/b/notes.md")), "{got:?}");
        assert!(!got.contains(&format!("{dir}/ref/notes.md")), "{got:?}");
        assert!(got.contains(&format!("{dir}/zz/o.txt")), "{got:?}");
        let _ = fs::remove_dir_all(&tmp);
    }

    #[test]
    fn a_deep_folder_and_a_missing_one() {
        let tmp = tree("deep");
        let mut deep = tmp.join("s");
        for i in 0..MAX_DEPTH + 2 {
            deep = deep.join(format!("d{i}"));
        }
        fs::create_dir_all(&deep).unwrap_or_default();
        fs::write(deep.join("bottom.txt"), "b").unwrap_or_default();
        let dir = tmp.join("s").to_string_lossy().into_owned();
        let got = sample(&dir, 100);
        assert_eq!(got, general(&dir));
        assert!(got.iter().any(|f| f.ends_with("/bottom.txt")), "{got:?}");
        assert!(sample(&tmp.join("missing").to_string_lossy(), 10).is_empty());
        assert!(sample(&tmp.join("s/data.txt").to_string_lossy(), 10).is_empty());
        let _ = fs::remove_dir_all(&tmp);
    }
}
