//! The builtins' host boundary (upstream ADR 0034, #101): what a relative
//! path means (`builtins.baseDir`) and, on request, refusing every path whose
//! canonical form leaves that directory (`builtins.confineToBaseDir`).
//!
//! The canonical form is the kernel's: the deepest part of the path that
//! exists is resolved with `realpath` (symlinks and `..` as the file system
//! sees them), and the rest, which does not exist yet (a file `write` is
//! about to create), is appended with its `..` applied. A dangling symlink
//! cannot be resolved and is refused when confined. The check is made when
//! the call starts; a symlink swapped in afterwards by another process is
//! not caught (the same limit every port has).

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// `builtins.baseDir` and `builtins.confineToBaseDir`, validated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Boundary {
    /// What relative paths are relative to; `None` means the process cwd.
    pub base_dir: Option<String>,
    /// Refuse any path whose canonical form is outside `base_dir` (which is
    /// then set: the config refuses confinement without a base).
    pub confine: bool,
}

impl Boundary {
    /// Whether this is today's behaviour (no base, no confinement).
    pub fn is_open(&self) -> bool {
        self.base_dir.is_none() && !self.confine
    }

    /// The directory a tool uses when it is given none (grep's and glob's
    /// `path`, bash's `workdir`): the base, if any.
    pub fn dir(&self) -> Option<&str> {
        self.base_dir.as_deref()
    }

    /// What the tool-supplied path `p` names: joined to the base when
    /// relative, and refused with `<p> resolves outside baseDir <base>` when
    /// confined and its canonical form leaves the base.
    pub fn resolve(&self, p: &str) -> Result<String, String> {
        let full = match &self.base_dir {
            Some(base) if !Path::new(p).is_absolute() => Path::new(base).join(p),
            _ => PathBuf::from(p),
        };
        if !self.confine {
            return Ok(full.to_string_lossy().into_owned());
        }
        let Some(base) = &self.base_dir else {
            return Err("confineToBaseDir is set but baseDir is empty".into());
        };
        let outside = || format!("{p} resolves outside baseDir {base}");
        let base_real = canonical(Path::new(base)).map_err(|_| outside())?;
        let target = canonical(&full).map_err(|why| format!("{p}: {why}"))?;
        if target.starts_with(&base_real) {
            Ok(full.to_string_lossy().into_owned())
        } else {
            Err(outside())
        }
    }
}

/// The canonical form of `p` (see the module doc). Fails on a path the
/// kernel cannot resolve although it exists (a dangling symlink, a
/// directory that may not be searched).
fn canonical(p: &Path) -> Result<PathBuf, String> {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| format!("the current directory is unknown: {e}"))?
            .join(p)
    };
    let parts: Vec<Component<'_>> = abs.components().collect();
    // The longest prefix that exists, resolved by the kernel.
    for split in (1..=parts.len()).rev() {
        let prefix: PathBuf = parts[..split].iter().collect();
        match std::fs::canonicalize(&prefix) {
            Ok(real) => return Ok(append(real, &parts[split..])),
            Err(_) if std::fs::symlink_metadata(&prefix).is_ok() => {
                return Err(format!(
                    "{} exists but cannot be resolved (a dangling symlink?)",
                    prefix.display()
                ));
            }
            Err(_) => continue,
        }
    }
    Ok(append(PathBuf::from("/"), &parts))
}

/// `base` followed by components that do not exist yet, `..` and `.`
/// applied.
fn append(mut base: PathBuf, rest: &[Component<'_>]) -> PathBuf {
    for c in rest {
        match c {
            Component::ParentDir => {
                base.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            Component::Normal(name) => base.push(OsString::from(name)),
        }
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_not_yet_there_is_resolved_from_its_deepest_existing_ancestor() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let real = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            canonical(&dir.path().join("a/b/../c")).ok(),
            Some(real.join("a/c"))
        );
        assert_eq!(
            canonical(&dir.path().join("new/../../x")).ok(),
            real.parent().map(|p| p.join("x"))
        );
    }
}
