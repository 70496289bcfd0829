//! A process started with `posix_spawn` and an empty signal mask, its
//! stdout and stderr piped, for a thread that blocks signals.
//!
//! A child inherits the signal mask of the thread that starts it, and std
//! does not clear it. Clearing it in the child with a pre-exec step makes
//! std fork the whole process instead of using `posix_spawn`: the host's
//! page tables are copied and every page it has is made copy-on-write until
//! the child execs. A 2 GB host that blocks SIGTERM on its threads took
//! 45–55 ms to build a toolkit with one stdio MCP server that way, against
//! 3.6 ms with nothing blocked (bench/README.md). `posix_spawn` has the
//! child set the mask it is given (`POSIX_SPAWN_SETSIGMASK`) with no fork and
//! without touching the host's mask, not even for a moment.

use nix::libc;
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

/// What to start: `program` (looked up on the child's `PATH` when it has no
/// `/`, as `execvp` does), its arguments, variables set on top of this
/// process's environment, the directory to start it in, and its stdin.
pub(crate) struct Spec<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    pub env: &'a [(String, String)],
    pub cwd: Option<&'a str>,
    pub stdin: Stdin,
}

/// The child's stdin.
pub(crate) enum Stdin {
    /// A pipe, whose writing end [`Process::stdin`] holds.
    Piped,
    /// `/dev/null`.
    Null,
}

/// A started child: its pid (also its process group's id) and this side of
/// its pipes.
pub(crate) struct Process {
    pub pid: i32,
    /// `None` for [`Stdin::Null`].
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Starts `spec` in a new process group, with no signal blocked, SIGPIPE at
/// its default action, and stdout and stderr piped. The error is the one
/// std would give: the failed lookup's, the directory's or exec's.
pub(crate) fn spawn(spec: &Spec) -> io::Result<Process> {
    let argv0 = cstring(spec.program)?;
    let mut argv = vec![argv0.clone()];
    for a in spec.args {
        argv.push(cstring(a)?);
    }
    let env = environment(spec.env)?;
    let path = resolve(spec.program, spec.env, spec.cwd)?;

    // This side's ends first: std's own pipes are close-on-exec, and a
    // child end that landed on 0, 1 or 2 (a host that closed its stdio)
    // is moved up, since dup2 onto itself would leave it close-on-exec.
    let (in_r, in_w) = match spec.stdin {
        Stdin::Piped => {
            let (r, w) = pipe()?;
            (Some(above_stdio(r)?), Some(w))
        }
        Stdin::Null => (None, None),
    };
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let ends = [in_r, Some(above_stdio(out_w)?), Some(above_stdio(err_w)?)];

    let mut argp: Vec<*mut libc::c_char> = argv.iter().map(|c| c.as_ptr().cast_mut()).collect();
    argp.push(std::ptr::null_mut());
    let mut envp: Vec<*mut libc::c_char> = env.iter().map(|c| c.as_ptr().cast_mut()).collect();
    envp.push(std::ptr::null_mut());
    let dir = spec.cwd.map(cstring).transpose()?;

    let mut actions = Actions::new()?;
    let mut attrs = Attrs::new()?;
    // SAFETY: `actions` and `attrs` were initialised by their `new` and are
    // destroyed once, by their drop; every pointer passed points into a
    // CString, Vec or sigset_t that lives until after posix_spawn returns;
    // the fds are open (owned by `ends`) until then; "/dev/null" is static.
    unsafe {
        for (fd, target) in ends.iter().zip(0..) {
            check(match fd {
                Some(fd) => {
                    libc::posix_spawn_file_actions_adddup2(&mut actions.0, fd.as_raw_fd(), target)
                }
                None => libc::posix_spawn_file_actions_addopen(
                    &mut actions.0,
                    target,
                    c"/dev/null".as_ptr(),
                    libc::O_RDONLY,
                    0,
                ),
            })?;
        }
        if let Some(dir) = &dir {
            check(libc::posix_spawn_file_actions_addchdir_np(
                &mut actions.0,
                dir.as_ptr(),
            ))?;
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        check(libc::posix_spawnattr_setsigmask(&mut attrs.0, &empty))?;
        let mut default = empty;
        libc::sigaddset(&mut default, libc::SIGPIPE);
        check(libc::posix_spawnattr_setsigdefault(&mut attrs.0, &default))?;
        check(libc::posix_spawnattr_setpgroup(&mut attrs.0, 0))?;
        let flags = libc::POSIX_SPAWN_SETSIGMASK
            | libc::POSIX_SPAWN_SETSIGDEF
            | libc::POSIX_SPAWN_SETPGROUP;
        check(libc::posix_spawnattr_setflags(
            &mut attrs.0,
            flags as libc::c_short,
        ))?;
        let mut pid: libc::pid_t = 0;
        check(libc::posix_spawn(
            &mut pid,
            path.as_ptr(),
            &actions.0,
            &attrs.0,
            argp.as_ptr(),
            envp.as_ptr(),
        ))?;
        drop(ends);
        Ok(Process {
            pid,
            stdin: in_w,
            stdout: out_r,
            stderr: err_r,
        })
    }
}

fn cstring(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{s:?} holds a NUL byte"),
        )
    })
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?)
}

/// `fd` itself, or a close-on-exec copy of it at 3 or above.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    Ok(rustix::io::fcntl_dupfd_cloexec(&fd, 3)?)
}

/// This process's environment with `set` on top, as `KEY=VALUE` strings.
fn environment(set: &[(String, String)]) -> io::Result<Vec<CString>> {
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (k, v) in set {
        let (k, v) = (OsString::from(k), OsString::from(v));
        match vars.iter_mut().find(|(have, _)| *have == k) {
            Some(slot) => slot.1 = v,
            None => vars.push((k, v)),
        }
    }
    vars.into_iter()
        .map(|(k, v)| {
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            CString::new(kv).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "an environment variable holds a NUL byte",
                )
            })
        })
        .collect()
}

/// The file `program` names: itself when it has a `/`, else the first
/// executable file of that name in the child's `PATH` (the one `set` gives,
/// else this process's; `/bin:/usr/bin` without either), as `execvp`
/// searches. A relative `PATH` entry is taken from the child's directory.
fn resolve(program: &str, set: &[(String, String)], cwd: Option<&str>) -> io::Result<CString> {
    if program.contains('/') {
        return cstring(program);
    }
    if program.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    let search: OsString = match set.iter().rev().find(|(k, _)| k == "PATH") {
        Some((_, v)) => v.into(),
        None => std::env::var_os("PATH").unwrap_or_else(|| "/bin:/usr/bin".into()),
    };
    let mut denied = false;
    for dir in search.as_bytes().split(|b| *b == b':') {
        let dir = if dir.is_empty() { b".".as_slice() } else { dir };
        let mut candidate = Path::new(OsStr::from_bytes(dir)).join(program);
        if candidate.is_relative() {
            if let Some(cwd) = cwd {
                candidate = Path::new(cwd).join(candidate);
            }
        }
        match rustix::fs::access(&candidate, rustix::fs::Access::EXEC_OK) {
            Ok(()) if candidate.is_file() => {
                return CString::new(candidate.into_os_string().into_vec())
                    .map_err(|_| io::Error::from_raw_os_error(libc::ENOENT));
            }
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::ACCESS => denied = true,
            Err(_) => {}
        }
    }
    Err(io::Error::from_raw_os_error(if denied {
        libc::EACCES
    } else {
        libc::ENOENT
    }))
}

struct Actions(libc::posix_spawn_file_actions_t);

impl Actions {
    fn new() -> io::Result<Self> {
        // SAFETY: a zeroed value is only storage; init makes it valid (it
        // holds no pointer to itself, so it may move once initialised).
        let mut raw: libc::posix_spawn_file_actions_t = unsafe { std::mem::zeroed() };
        // SAFETY: initialises the storage we own.
        check(unsafe { libc::posix_spawn_file_actions_init(&mut raw) })?;
        Ok(Actions(raw))
    }
}

impl Drop for Actions {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`, destroyed only here.
        unsafe { libc::posix_spawn_file_actions_destroy(&mut self.0) };
    }
}

struct Attrs(libc::posix_spawnattr_t);

impl Attrs {
    fn new() -> io::Result<Self> {
        // SAFETY: a zeroed value is only storage; init makes it valid (it
        // holds no pointer to itself, so it may move once initialised).
        let mut raw: libc::posix_spawnattr_t = unsafe { std::mem::zeroed() };
        // SAFETY: initialises the storage we own.
        check(unsafe { libc::posix_spawnattr_init(&mut raw) })?;
        Ok(Attrs(raw))
    }
}

impl Drop for Attrs {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`, destroyed only here.
        unsafe { libc::posix_spawnattr_destroy(&mut self.0) };
    }
}
