//! The skills discovery walk on directory descriptors (issue 15).
//!
//! A tree with no symlinked directory in it is walked here: every directory
//! is opened relative to its parent's descriptor, listed with `getdents64`
//! into one buffer reused for the whole walk, its entries classified by
//! `d_type` (no `stat` but for a symlink), and each `SKILL.md` opened
//! relative to its directory and parsed as it is met. With no symlinked
//! directory every real directory is met once, by one path, so the general
//! walk's real-path check could not drop anything, and what is found is
//! what [`super::discover`] finds. The walk hands over to that general walk
//! when it meets a symlink to a directory, an entry of unknown type, a name
//! that is not UTF-8, or a tree deeper than it keeps descriptors for.

use super::walk::{is_ignored_dir, push_component};
use super::Candidate;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, CWD};
use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::path::Path;

/// Directory descriptors the walk holds open at once, at most.
const MAX_DEPTH: usize = 48;

/// What walking one root gave.
pub(super) enum Walked {
    /// Every skill file below the root, parsed, in discovery order (fewer
    /// path segments below the root first, then the path in code-point
    /// order).
    Done(Vec<Candidate>),
    /// `stop` answered true.
    Stopped,
    /// The general walk must decide.
    Handover,
}

enum End {
    Stopped,
    Handover,
}

struct State<'a> {
    /// The getdents64 buffer.
    dents: Vec<MaybeUninit<u8>>,
    /// Subdirectory names still to enter, NUL-terminated, a stack shared by
    /// every level.
    names: Vec<u8>,
    /// The path of the directory being listed, as the general walk joins it.
    path: Vec<u8>,
    /// The read buffer for the skill files.
    file: &'a mut Vec<u8>,
    /// (segments below the root, candidate).
    found: Vec<(usize, Candidate)>,
    stop: &'a (dyn Fn() -> bool + Sync),
}

/// Walks `root` for `SKILL.md` files and parses each one, reading into
/// `file`. A root that cannot be opened as a directory yields nothing, as
/// the general walk's does.
pub(super) fn skills(root: &Path, file: &mut Vec<u8>, stop: &(dyn Fn() -> bool + Sync)) -> Walked {
    let bytes = root.as_os_str().as_encoded_bytes();
    if std::str::from_utf8(bytes).is_err() {
        return Walked::Handover;
    }
    if stop() {
        return Walked::Stopped;
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(fd) = rustix::fs::openat(CWD, bytes, flags, Mode::empty()) else {
        return Walked::Done(Vec::new());
    };
    let mut st = State {
        dents: vec![MaybeUninit::uninit(); 32 * 1024],
        names: Vec::new(),
        path: bytes.to_vec(),
        file,
        found: Vec::new(),
        stop,
    };
    match list(&mut st, &fd, 0) {
        Ok(()) => {}
        Err(End::Stopped) => return Walked::Stopped,
        Err(End::Handover) => return Walked::Handover,
    }
    let mut found = st.found;
    found.sort_by(|(da, a), (db, b)| da.cmp(db).then_with(|| a.location().cmp(b.location())));
    Walked::Done(found.into_iter().map(|(_, c)| c).collect())
}

/// Lists the open directory `fd` (at `st.path`, `depth` segments below the
/// root), parses its `SKILL.md` if it holds one, and walks its
/// subdirectories.
fn list(st: &mut State, fd: &OwnedFd, depth: usize) -> Result<(), End> {
    if (st.stop)() {
        return Err(End::Stopped);
    }
    if depth >= MAX_DEPTH {
        return Err(End::Handover);
    }
    let base = st.names.len();
    let mut has_skill = false;
    {
        let mut entries = RawDir::new(fd.as_fd(), &mut st.dents);
        while let Some(entry) = entries.next() {
            // A read error ends the listing, as it ends std's `ReadDir`.
            let Ok(entry) = entry else { break };
            let name = entry.file_name();
            let bytes = name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            match entry.file_type() {
                FileType::RegularFile => has_skill |= bytes == b"SKILL.md",
                FileType::Directory if !is_ignored_dir(bytes) => {
                    if std::str::from_utf8(bytes).is_err() {
                        return Err(End::Handover);
                    }
                    st.names.extend_from_slice(name.to_bytes_with_nul());
                }
                FileType::Symlink => {
                    // A link that leads nowhere is left out.
                    let Ok(meta) = rustix::fs::statat(fd, name, AtFlags::empty()) else {
                        continue;
                    };
                    match FileType::from_raw_mode(meta.st_mode) {
                        FileType::RegularFile => has_skill |= bytes == b"SKILL.md",
                        // A second way into a directory: the general walk
                        // decides which path it is found under, if any.
                        FileType::Directory if !is_ignored_dir(bytes) => return Err(End::Handover),
                        _ => {}
                    }
                }
                FileType::Unknown => return Err(End::Handover),
                _ => {}
            }
        }
    }
    if has_skill {
        if (st.stop)() {
            return Err(End::Stopped);
        }
        let mut location = Vec::with_capacity(st.path.len() + 9);
        location.extend_from_slice(&st.path);
        push_component(&mut location, b"SKILL.md");
        // Every name on the path was checked to be UTF-8.
        let location = String::from_utf8(location).map_err(|_| End::Handover)?;
        let read = read_skill(fd, st.file);
        let candidate = super::parse_read(location, read.map(|n| &st.file[..n]));
        st.found.push((depth + 1, candidate));
    }
    let end = st.names.len();
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let mut pos = base;
    while pos < end {
        let nul = pos + crate::sys::bytes::find(0, &st.names[pos..end]).unwrap_or(end - pos - 1);
        let child = match CStr::from_bytes_with_nul(&st.names[pos..=nul]) {
            Ok(name) => rustix::fs::openat(fd, name, flags, Mode::empty()).ok(),
            Err(_) => None,
        };
        let len = st.path.len();
        push_component(&mut st.path, &st.names[pos..nul]);
        pos = nul + 1;
        // A directory that cannot be opened is skipped, as one that
        // `read_dir` cannot read is.
        let listed = match child {
            Some(child) => list(st, &child, depth + 1),
            None => Ok(()),
        };
        st.path.truncate(len);
        listed?;
    }
    st.names.truncate(base);
    Ok(())
}

/// The whole `SKILL.md` of the directory `dir`, in `buf[..n]`; returns n.
fn read_skill(dir: &OwnedFd, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let flags = OFlags::RDONLY | OFlags::CLOEXEC;
    let file = rustix::fs::openat(dir, c"SKILL.md", flags, Mode::empty())?;
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize((buf.len() * 2).max(16 * 1024), 0);
        }
        match rustix::io::read(&file, &mut buf[len..]) {
            Ok(0) => return Ok(len),
            Ok(n) => len += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::general;
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn skill(name: &str) -> String {
        format!("---\nname: {name}\ndescription: d\n---\nbody of {name}\n")
    }

    /// A tree of nested, duplicate, malformed, nameless, pruned and linked
    /// skill files, with no symlinked directory in it.
    fn plain_tree(tmp: &Path) {
        let files: &[(&str, String)] = &[
            ("root/SKILL.md", skill("top")),
            ("root/a/SKILL.md", skill("a")),
            ("root/a-b/SKILL.md", skill("dash")),
            ("root/a/deep/er/SKILL.md", skill("a")),
            ("root/b/SKILL.md", "---\nname: [unclosed\n---\n".to_string()),
            ("root/c/SKILL.md", "no front matter".to_string()),
            ("root/c/skill.md", skill("lower")),
            ("root/d/x/SKILL.md", skill("dx")),
            ("root/é/SKILL.md", skill("accent")),
            ("root/node_modules/n/SKILL.md", skill("pruned")),
            ("root/.git/SKILL.md", skill("git")),
            ("root/.hidden/SKILL.md", skill("hidden")),
            ("outside/SKILL.md", skill("linked-file")),
        ];
        for (f, text) in files {
            let path = tmp.join(f);
            fs::create_dir_all(path.parent().unwrap_or(tmp)).unwrap_or_default();
            fs::write(path, text).unwrap_or_default();
        }
        fs::create_dir_all(tmp.join("root/e/SKILL.md")).unwrap_or_default();
        let _ = symlink(tmp.join("outside/SKILL.md"), tmp.join("root/d/SKILL.md"));
        let _ = symlink(tmp.join("nowhere"), tmp.join("root/dangling"));
        let _ = symlink(tmp.join("nowhere"), tmp.join("root/f/SKILL.md"));
        let _ = symlink(tmp.join("outside"), tmp.join("root/node_modules/linked"));
        let _ = symlink(tmp.join("outside"), tmp.join("linked-root"));
    }

    fn walked(root: &Path) -> Option<Vec<Candidate>> {
        match skills(root, &mut Vec::new(), &|| false) {
            Walked::Done(found) => Some(found),
            Walked::Stopped | Walked::Handover => None,
        }
    }

    fn reference(root: &Path) -> Vec<Candidate> {
        general(root, &mut Vec::new(), &|| false).unwrap_or_default()
    }

    #[test]
    fn a_plain_tree_gives_what_the_general_walk_gives() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        plain_tree(tmp.path());
        let root = tmp.path().join("root");
        let got = walked(&root).unwrap_or_else(|| panic!("handed over"));
        assert_eq!(got, reference(&root));
        let locations: Vec<&str> = got.iter().map(Candidate::location).collect();
        let rel: Vec<&str> = locations
            .iter()
            .map(|l| {
                l.strip_prefix(root.to_str().unwrap_or_default())
                    .unwrap_or(l)
            })
            .collect();
        assert_eq!(
            rel,
            [
                "/SKILL.md",
                "/.hidden/SKILL.md",
                "/a-b/SKILL.md",
                "/a/SKILL.md",
                "/b/SKILL.md",
                "/c/SKILL.md",
                "/d/SKILL.md",
                "/é/SKILL.md",
                "/d/x/SKILL.md",
                "/a/deep/er/SKILL.md",
            ]
        );
        // Roots spelled other ways, and roots that give nothing.
        let s = root.to_string_lossy().into_owned();
        for other in [
            format!("{s}/"),
            format!("{s}//"),
            format!("{s}/a"),
            tmp.path()
                .join("linked-root")
                .to_string_lossy()
                .into_owned(),
            format!("{s}/c/skill.md"),
            tmp.path().join("missing").to_string_lossy().into_owned(),
            String::new(),
        ] {
            let other = Path::new(&other);
            let got = walked(other).unwrap_or_else(|| panic!("handed over at {other:?}"));
            assert_eq!(got, reference(other), "root {other:?}");
        }
    }

    #[test]
    fn a_symlinked_directory_hands_over() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        plain_tree(tmp.path());
        let root = tmp.path().join("root");
        let _ = symlink(tmp.path().join("outside"), root.join("a/deep/link"));
        assert!(walked(&root).is_none());
        let catalog = super::super::load(&super::super::Options {
            dirs: vec![root.to_string_lossy().into_owned()],
            ..Default::default()
        });
        let names: Vec<&str> = catalog.loaded().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"linked-file"), "{names:?}");
        assert_eq!(
            catalog.loaded().count() + catalog.skipped.len(),
            reference(&root).len()
        );
    }

    #[test]
    fn a_tree_deeper_than_its_descriptors_hands_over() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let mut deep = tmp.path().to_path_buf();
        for _ in 0..MAX_DEPTH + 1 {
            deep.push("d");
        }
        fs::create_dir_all(&deep).unwrap_or_default();
        fs::write(deep.join("SKILL.md"), skill("deep")).unwrap_or_default();
        assert!(walked(tmp.path()).is_none());
        assert_eq!(reference(tmp.path()).len(), 1);
    }

    #[test]
    fn an_unreadable_skill_file_is_skipped_as_the_general_walk_skips_it() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        plain_tree(tmp.path());
        let root = tmp.path().join("root");
        let file = root.join("a/SKILL.md");
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(&file, fs::Permissions::from_mode(0o000));
        let _ = fs::set_permissions(root.join("c"), fs::Permissions::from_mode(0o000));
        let got = walked(&root);
        let want = reference(&root);
        let _ = fs::set_permissions(&file, fs::Permissions::from_mode(0o644));
        let _ = fs::set_permissions(root.join("c"), fs::Permissions::from_mode(0o755));
        assert_eq!(got, Some(want));
    }
}
