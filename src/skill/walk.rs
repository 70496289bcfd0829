//! The directory walk behind skill discovery and the sibling sampler.
//!
//! Hand-written over `std::fs::read_dir` rather than `walkdir`, because
//! following symlinks in `walkdir` costs a `stat` and an open per entry for
//! its loop check. Here each real directory is walked once, however many
//! symlinks lead to it (upstream's rule: a second way into a directory would
//! find its skills twice and change which copy wins). Real paths come for
//! free below a plain directory (its real path and the entry's name); only a
//! symlink is resolved.
//!
//! The walk goes level by level, each level's directories in code-point
//! order of their path, so when two paths lead to one real directory the one
//! that is kept is always the same: the shallower, then the smaller.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

/// Directories never entered below a root.
pub(super) fn is_ignored_dir(name: &[u8]) -> bool {
    name == b"node_modules" || name == b".git"
}

/// `path` joined with `name` as `Path::join` does: a `/` between them
/// unless `path` is empty or already ends with one.
pub(super) fn push_component(path: &mut Vec<u8>, name: &[u8]) {
    if !path.is_empty() && !path.ends_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(name);
}

/// A directory to read: the path it was reached by, its real path, and
/// whether a symlinked directory led to it.
struct Dir {
    path: PathBuf,
    real: PathBuf,
    linked: bool,
}

/// What reading one directory found.
#[derive(Default)]
struct Found {
    files: Vec<PathBuf>,
    dirs: Vec<Dir>,
}

/// Regular files under `root` whose file name `keep` accepts, following
/// symlinked directories and files (each real directory, the root's
/// included, entered once), pruning `node_modules` and `.git`. Unordered. A
/// missing or unreadable root yields nothing.
pub fn files(root: &Path, keep: &(dyn Fn(&OsStr) -> bool + Sync)) -> Vec<PathBuf> {
    files_parallel(root, keep, 1, &|| false)
}

/// Like [`files`], with the directories of each level read on up to
/// `threads` threads (the order of the result is unspecified either way).
/// Once `stop` answers true the walk reads no further directory and returns
/// what it found so far.
pub fn files_parallel(
    root: &Path,
    keep: &(dyn Fn(&OsStr) -> bool + Sync),
    threads: usize,
    stop: &(dyn Fn() -> bool + Sync),
) -> Vec<PathBuf> {
    let Ok(real) = fs::canonicalize(root) else {
        return Vec::new();
    };
    // Below the root, a plain directory's real path is its parent's joined
    // with its name, so until a symlinked directory turns up no two
    // directories can share one: the walk only keeps their real paths, and
    // builds the set that drops a second way in at the first link (hashing
    // every directory's path was a quarter of a skills build).
    let mut visited: Vec<PathBuf> = Vec::new();
    let mut seen: Option<HashSet<PathBuf>> = None;
    let mut level = vec![Dir {
        path: root.to_path_buf(),
        real,
        linked: false,
    }];
    let mut out = Vec::new();
    while !level.is_empty() && !stop() {
        let mut next = Vec::new();
        for found in read_level(&level, keep, threads, stop) {
            out.extend(found.files);
            next.extend(found.dirs);
        }
        if seen.is_none() {
            visited.extend(level.into_iter().map(|d| d.real));
        }
        next.sort_by(|a, b| {
            a.path
                .as_os_str()
                .as_encoded_bytes()
                .cmp(b.path.as_os_str().as_encoded_bytes())
        });
        if seen.is_none() && next.iter().any(|d| d.linked) {
            seen = Some(std::mem::take(&mut visited).into_iter().collect());
        }
        if let Some(seen) = &mut seen {
            next.retain(|d| seen.insert(d.real.clone()));
        }
        level = next;
    }
    out
}

/// Reads every directory of one level, spread over `threads` threads when
/// there are enough of them.
fn read_level(
    level: &[Dir],
    keep: &(dyn Fn(&OsStr) -> bool + Sync),
    threads: usize,
    stop: &(dyn Fn() -> bool + Sync),
) -> Vec<Found> {
    let read = |d: &Dir| {
        if stop() {
            Found::default()
        } else {
            read(d, keep)
        }
    };
    if threads < 2 || level.len() < 4 {
        return level.iter().map(read).collect();
    }
    let chunk = level.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = level
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(read).collect::<Vec<_>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|w| match w.join() {
                Ok(found) => found,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// One directory's kept files and its subdirectories (with their real
/// paths; a symlink that leads nowhere is left out).
fn read(dir: &Dir, keep: &(dyn Fn(&OsStr) -> bool + Sync)) -> Found {
    let mut found = Found::default();
    let Ok(entries) = fs::read_dir(&dir.path) else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(ft) = entry.file_type() else { continue };
        // One allocation per entry: the name is borrowed from the path.
        let path = entry.path();
        let Some(name) = path.file_name() else {
            continue;
        };
        if ft.is_file() {
            if keep(name) {
                found.files.push(path);
            }
        } else if ft.is_dir() {
            if !is_ignored_dir(name.as_encoded_bytes()) {
                let real = dir.real.join(name);
                found.dirs.push(Dir {
                    path,
                    real,
                    linked: dir.linked,
                });
            }
        } else if ft.is_symlink() {
            let Ok(meta) = fs::metadata(&path) else {
                continue;
            };
            if meta.is_file() {
                if keep(name) {
                    found.files.push(path);
                }
            } else if meta.is_dir() && !is_ignored_dir(name.as_encoded_bytes()) {
                if let Ok(real) = fs::canonicalize(&path) {
                    found.dirs.push(Dir {
                        path,
                        real,
                        linked: true,
                    });
                }
            }
        }
    }
    found
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
        let parallel = files_parallel(&tmp.join("root"), &|_| true, 2, &|| false);
        let _ = fs::remove_dir_all(&tmp);
        assert!(!found.is_empty() && found.len() < 10, "{found:?}");
        assert_eq!(found.len(), parallel.len());
    }

    // Upstream skill.py's `_walk_skill_files` (its `seen` set of real paths):
    // a real directory reached by two symlinks is walked once, through the
    // shallower, then code-point smaller, of the two paths.
    #[test]
    fn a_real_directory_behind_two_links_is_walked_once() {
        let tmp = std::env::temp_dir().join(format!("tn-walk-twice-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(tmp.join("root/deep/er")).unwrap_or_default();
        fs::create_dir_all(tmp.join("shared/sub")).unwrap_or_default();
        fs::write(tmp.join("shared/sub/f.txt"), "f").unwrap_or_default();
        let _ = std::os::unix::fs::symlink(tmp.join("shared"), tmp.join("root/zz"));
        let _ = std::os::unix::fs::symlink(tmp.join("shared"), tmp.join("root/b"));
        let _ = std::os::unix::fs::symlink(tmp.join("shared"), tmp.join("root/deep/er/a"));
        for threads in [1, 4] {
            let got: Vec<String> = files_parallel(&tmp.join("root"), &|_| true, threads, &|| false)
                .into_iter()
                .map(|p| {
                    p.strip_prefix(&tmp)
                        .unwrap_or(&p)
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            assert_eq!(got, vec!["root/b/sub/f.txt"], "threads {threads}");
        }
        let _ = fs::remove_dir_all(&tmp);
    }

    #[test]
    fn missing_root_yields_nothing() {
        assert!(files(Path::new("/nonexistent/tn-walk"), &|_| true).is_empty());
    }
}
