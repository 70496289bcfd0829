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
pub fn files(root: &Path, keep: &dyn Fn(&OsStr) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(real) = fs::canonicalize(root) else {
        return out;
    };
    if real.is_dir() {
        walk(root, &real, keep, &mut out);
    } else if real.is_file() && root.file_name().is_some_and(keep) {
        out.push(root.to_path_buf());
    }
    out
}

fn walk(dir: &Path, real: &Path, keep: &dyn Fn(&OsStr) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(ft) = entry.file_type() else { continue };
        let name = entry.file_name();
        let path = entry.path();
        if ft.is_file() {
            if keep(&name) {
                out.push(path);
            }
        } else if ft.is_dir() {
            if !is_ignored_dir(&name) {
                walk(&path, &real.join(&name), keep, out);
            }
        } else if ft.is_symlink() {
            let Ok(target) = fs::canonicalize(&path) else {
                continue;
            };
            if target.is_file() {
                if keep(&name) {
                    out.push(path);
                }
            } else if target.is_dir() && !is_ignored_dir(&name) && !real.starts_with(&target) {
                walk(&path, &target, keep, out);
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
    fn missing_root_yields_nothing() {
        assert!(files(Path::new("/nonexistent/tn-walk"), &|_| true).is_empty());
    }
}
