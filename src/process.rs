//! The end of a process group the library started (a bash command's, an
//! MCP server's, an ACP agent's): after the group's SIGKILL and the reaping
//! of its leader, the wait until nothing of it runs any more.
//!
//! A SIGKILL is delivered, not done: a killed process goes on running until
//! it is scheduled to exit, and it closes its pipes before it turns into a
//! zombie, so neither its leader's end nor the pipes' says that the rest of
//! the group is gone. A caller that returns "closed" or "done" waits for
//! the group itself (bounded by [`KILLED_GRACE`]); where nothing holds the
//! group id any more (the usual case) one signal-0 probe says so.
//!
//! Also the one handle on such a process until it is reaped ([`Child`]),
//! whichever way it was started.

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use std::io;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// A process the library started, until it is reaped: as std started it, or
/// as `sys::spawn` did (from a thread that blocks signals), known by its pid.
///
/// std's child is boxed: unboxed, this enum's tag would sit in a niche of
/// std's own fields, and after std's fork path (bash's status reporter)
/// valgrind reports the tag's test as a jump on uninitialised bytes (the
/// optimised test reads the bytes around the niche). A box's tag is its
/// pointer, always written.
pub(crate) enum Child {
    Std(Box<std::process::Child>),
    Spawned(Pid),
}

impl Child {
    /// Its process id.
    pub(crate) fn id(&self) -> u32 {
        match self {
            Child::Std(c) => c.id(),
            Child::Spawned(pid) => pid.as_raw().unsigned_abs(),
        }
    }

    /// SIGKILL to the process itself.
    pub(crate) fn kill(&mut self) -> io::Result<()> {
        match self {
            Child::Std(c) => c.kill(),
            Child::Spawned(pid) => Ok(kill(*pid, Signal::SIGKILL)?),
        }
    }

    /// Reaps it if it has exited.
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match self {
            Child::Std(c) => c.try_wait(),
            Child::Spawned(pid) => reap(*pid, rustix::process::WaitOptions::NOHANG),
        }
    }

    /// Waits for its exit and reaps it.
    pub(crate) fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            Child::Std(c) => c.wait(),
            Child::Spawned(pid) => loop {
                match reap(*pid, rustix::process::WaitOptions::empty()) {
                    Ok(Some(status)) => break Ok(status),
                    Ok(None) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => break Err(e),
                }
            },
        }
    }
}

/// `waitpid` on `pid` with `options`: its status once it has exited.
fn reap(pid: Pid, options: rustix::process::WaitOptions) -> io::Result<Option<ExitStatus>> {
    use std::os::unix::process::ExitStatusExt;
    let Some(pid) = rustix::process::Pid::from_raw(pid.as_raw()) else {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    };
    Ok(rustix::process::waitpid(Some(pid), options)?
        .map(|(_, status)| ExitStatus::from_raw(status.as_raw())))
}

/// How long a caller waits, after a group's SIGKILL, for its processes to
/// have exited (only one stuck in the kernel takes longer).
const KILLED_GRACE: Duration = Duration::from_secs(1);

/// How often the wait looks again.
const POLL: Duration = Duration::from_millis(2);

/// Whether a process of group `pgid` still runs (zombies do not count), by
/// /proc; None where /proc cannot be read.
pub(crate) fn group_has_running_member(pgid: Pid) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let want = pgid.as_raw().to_string();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ...": comm may hold anything, so the
        // fields start after the last ')'.
        let Some((_, fields)) = stat.rsplit_once(") ") else {
            continue;
        };
        let mut f = fields.split(' ');
        let state = f.next();
        let pgrp = f.nth(1);
        if pgrp == Some(want.as_str()) && !matches!(state, Some("Z") | Some("X")) {
            return Some(true);
        }
    }
    Some(false)
}

/// Whether something of group `pgid` still runs, once its leader is reaped
/// (or is a zombie). While a process (even a zombie) has the group id, the
/// kernel gives the number to no new process, so the probe answers for this
/// group; once the group is empty it can name a newer one, and a wait on
/// this then lasts at most its deadline (nothing here signals).
fn still_runs(pgid: Pid) -> bool {
    killpg(pgid, None).is_ok() && group_has_running_member(pgid) == Some(true)
}

/// Returns once nothing of group `pgid` runs any more, or after
/// [`KILLED_GRACE`]. For a caller after the group's SIGKILL.
pub(crate) fn wait_until_killed(pgid: Pid) {
    let deadline = Instant::now() + KILLED_GRACE;
    while still_runs(pgid) && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
}

/// [`wait_until_killed`] inside the runtime, at most [`KILLED_GRACE`].
pub(crate) async fn killed(pgid: Pid) {
    let deadline = Instant::now() + KILLED_GRACE;
    while still_runs(pgid) && Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
    }
}
