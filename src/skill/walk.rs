//! The directory walk behind skill discovery and the sibling sampler.
//!
//! Hand-written over `std::fs::read_dir` rather than `walkdir`, because
//! following symlinks in `walkdir` costs a `stat` and an open per entry for
//! its loop check; here only symlinks are resolved, and a loop is caught by
//! comparing real paths, which the walk tracks for free.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

/// Directories never entered below a root.
fn is_ignored_dir(name: &OsStr) -> bool {
    name == "node_modules" || name == ".git"
}

/// Regular files under `root` whose file name `keep` accepts, following
/// symlinked directories and files (a link back to an ancestor is not
/// followed), pruning `node_modules` and `.git`. Unordered. A missing or
/// unreadable root yields nothing.
pub fn files(root: &Path, keep: &(dyn Fn(&OsStr) -> bool + Sync)) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(root, keep, &mut out, &mut Vec::new());
    out
}

/// Like [`files`], with the subdirectories of `root` walked on up to
/// `threads` threads (the order of the result is unspecified either way).
pub fn files_parallel(
    root: &Path,
    keep: &(dyn Fn(&OsStr) -> bool + Sync),
    threads: usize,
) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut dirs = Vec::new();
    for entry in entries.flatten() {
        match entry.file_type() {
            Ok(ft) if ft.is_dir() => {
                if !is_ignored_dir(&entry.file_name()) {
                    dirs.push(entry.path());
                }
            }
            Ok(_) => visit(root, &entry, keep, &mut out, &mut Vec::new()),
            Err(_) => {}
        }
    }
    if threads < 2 || dirs.len() < 2 {
        for d in &dirs {
            walk(d, keep, &mut out, &mut Vec::new());
        }
        return out;
    }
    let chunk = dirs.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = dirs
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut found = Vec::new();
                    for d in part {
                        walk(d, keep, &mut found, &mut Vec::new());
                    }
                    found
                })
            })
            .collect();
        for w in workers {
            match w.join() {
                Ok(found) => out.extend(found),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    out
}

/// Real paths of the symlinked directories entered on the way down.
type Chain = Vec<PathBuf>;

fn walk(
    dir: &Path,
    keep: &(dyn Fn(&OsStr) -> bool + Sync),
    out: &mut Vec<PathBuf>,
    chain: &mut Chain,
) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        visit(dir, &entry, keep, out, chain);
    }
}

/// One directory entry: a file is kept or not, a directory is walked, a
/// symlink is resolved (only then are real paths computed, to refuse a link
/// back to an ancestor or to a directory already entered through a link).
fn visit(
    dir: &Path,
    entry: &fs::DirEntry,
    keep: &(dyn Fn(&OsStr) -> bool + Sync),
    out: &mut Vec<PathBuf>,
    chain: &mut Chain,
) {
    let Ok(ft) = entry.file_type() else { return };
    let name = entry.file_name();
    if ft.is_file() {
        if keep(&name) {
            out.push(entry.path());
        }
    } else if ft.is_dir() {
        if !is_ignored_dir(&name) {
            walk(&entry.path(), keep, out, chain);
        }
    } else if ft.is_symlink() {
        let path = entry.path();
        let Ok(meta) = fs::metadata(&path) else {
            return;
        };
        if meta.is_file() {
            if keep(&name) {
                out.push(path);
            }
        } else if meta.is_dir() && !is_ignored_dir(&name) {
            let (Ok(target), Ok(here)) = (fs::canonicalize(&path), fs::canonicalize(dir)) else {
                return;
            };
            if !here.starts_with(&target) && !chain.contains(&target) {
                chain.push(target);
                walk(&path, keep, out, chain);
                chain.pop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_links_prunes_ignored_dirs_and_stops_at_loops() {
        let tmp = std::env::temp_dir().join(format!("tn-walk-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(tmp.join("root/a/node_modules")).unwrap_or_default();
        fs::create_dir_all(tmp.join("outside")).unwrap_or_default();
        fs::write(tmp.join("root/a/x.txt"), "x").unwrap_or_default();
        fs::write(tmp.join("root/a/node_modules/n.txt"), "n").unwrap_or_default();
        fs::write(tmp.join("outside/o.txt"), "o").unwrap_or_default();
        let _ = std::os::unix::fs::symlink(tmp.join("outside"), tmp.join("root/link"));
        let _ = std::os::unix::fs::symlink(tmp.join("root"), tmp.join("root/a/loop"));
        let mut got: Vec<String> = files(&tmp.join("root"), &|_| true)
            .into_iter()
            .map(|p| {
                p.strip_prefix(&tmp)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        got.sort();
        let _ = fs::remove_dir_all(&tmp);
        assert_eq!(got, vec!["root/a/x.txt", "root/link/o.txt"]);
    }

    #[test]
    fn mutual_links_do_not_loop() {
        let tmp = std::env::temp_dir().join(format!("tn-walk-mutual-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(tmp.join("root/a")).unwrap_or_default();
        fs::create_dir_all(tmp.join("root/b")).unwrap_or_default();
        fs::write(tmp.join("root/b/f.txt"), "f").unwrap_or_default();
        let _ = std::os::unix::fs::symlink(tmp.join("root/b"), tmp.join("root/a/l1"));
        let _ = std::os::unix::fs::symlink(tmp.join("root/a"), tmp.join("root/b/l2"));
        let found = files(&tmp.join("root"), &|_| true);
        let parallel = files_parallel(&tmp.join("root"), &|_| true, 2);
        let _ = fs::remove_dir_all(&tmp);
        assert!(!found.is_empty() && found.len() < 10, "{found:?}");
        assert_eq!(found.len(), parallel.len());
    }

    #[test]
    fn missing_root_yields_nothing() {
        assert!(files(Path::new("/nonexistent/tn-walk"), &|_| true).is_empty());
    }
}
