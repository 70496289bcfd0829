//! The child process behind a stdio MCP server.
//!
//! We spawn the child ourselves (rather than through rmcp's child-process
//! transport) because the contract needs three things that transport does not
//! give: the child leads its own process group, so closing ends the whole
//! tree and not just the direct child; its exit status is observable, so a
//! server that dies is reported as `peer-exited (status N)` at once; and
//! stderr is drained continuously, so a chatty server cannot fill the pipe
//! and deadlock. stdin/stdout are handed to the line transport
//! (`super::lines`), stdin through [`PipeStdin`], which turns a write into a server that closed its
//! stdin into a plain `broken pipe` error (never a SIGPIPE: see
//! `crate::runtime`).
//!
//! A server starts in two steps: [`start`] runs std's `Command` on the
//! calling thread without the runtime (a toolkit's first build starts its
//! servers before the runtime's worker thread, so each server's own
//! start-up overlaps the runtime's), and [`Started::adopt`] then hands the
//! pipes to the runtime and watches the child's exit on its pidfd.

use super::fault::Fault;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::io;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWrite};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::watch;

/// How long a child gets to exit on its own after stdin closes, and again
/// after SIGTERM, before the next step.
const GRACE: Duration = Duration::from_millis(500);

/// A spawned server process (the leader of its own process group).
pub struct ChildProc {
    pgid: Pid,
    exit: watch::Receiver<Option<ExitStatus>>,
    ended: AtomicBool,
}

/// What `spawn` hands back: the process, and the pipes for the transport.
pub struct Spawned {
    pub child: ChildProc,
    pub stdout: ChildStdout,
    pub stdin: PipeStdin,
}

/// The server's stdin. A write after the server closed its end fails with
/// EPIPE (SIGPIPE is blocked on the runtime's threads, where every write to
/// it runs); this wrapper takes the SIGPIPE the kernel left pending with it
/// and says in the error what happened, so the call fails at once with
/// `transport (send failed: broken pipe ...)`.
pub struct PipeStdin(ChildStdin);

impl PipeStdin {
    fn check<T>(res: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match res {
            Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::BrokenPipe => {
                crate::runtime::take_sigpipe_after_epipe();
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    super::fault::StdinClosed,
                )))
            }
            other => other,
        }
    }
}

impl AsyncWrite for PipeStdin {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Self::check(Pin::new(&mut self.0).poll_write(cx, buf))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Self::check(Pin::new(&mut self.0).poll_flush(cx))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Self::check(Pin::new(&mut self.0).poll_shutdown(cx))
    }
}

/// A server's process started outside the runtime ([`start`]): the child and
/// its three pipes as std gave them, until [`Started::adopt`] hands them to
/// the runtime. Dropped unadopted, it kills the process group and reaps the
/// child (its [`Reaper`]).
pub struct Started(Reaper);

/// Starts `command` with piped stdio in a new process group, on the calling
/// thread and without the runtime: a toolkit's first build starts its
/// servers before the runtime's worker thread, so a server's own start-up
/// (its loader, its libc) overlaps the runtime's instead of following it.
pub fn start(
    command: &[String],
    env: &[(String, String)],
    cwd: Option<&str>,
) -> Result<Started, Fault> {
    let Some((program, args)) = command.split_first() else {
        return Err(Fault::SpawnFailed("the server has no command".into()));
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    // Started from a runtime thread (SIGPIPE blocked) or the host's building
    // thread (whatever the host blocks): the server inherits none of it, so
    // a close's SIGTERM reaches it.
    let child = crate::runtime::spawn_child(&mut cmd)
        .map_err(|e| Fault::SpawnFailed(format!("cannot start '{program}': {e}")))?;
    let Some(pgid) = i32::try_from(child.id()).ok().map(Pid::from_raw) else {
        return Err(Fault::SpawnFailed("the child's id is out of range".into()));
    };
    Ok(Started(Reaper {
        child: Some(child),
        pgid,
    }))
}

impl Started {
    /// Hands the process to the runtime (must run inside it): its pipes
    /// become the runtime's, its stderr is drained and its exit watched.
    pub fn adopt(self, server: &str) -> Result<Spawned, Fault> {
        // From here a failure ends the child through the reaper's drop; once
        // the watcher holds it, through the watcher.
        let Started(mut reaper) = self;
        let pgid = reaper.pgid;
        let pipes = match reaper.child.as_mut() {
            Some(c) => (c.stdin.take(), c.stdout.take(), c.stderr.take()),
            None => (None, None, None),
        };
        let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
            return Err(Fault::SpawnFailed("the child's pipes are missing".into()));
        };
        let piped = (
            ChildStdin::from_std(stdin),
            ChildStdout::from_std(stdout),
            ChildStderr::from_std(stderr),
        );
        let (Ok(stdin), Ok(stdout), Ok(stderr)) = piped else {
            return Err(Fault::SpawnFailed(
                "the child's pipes cannot be registered".into(),
            ));
        };
        tokio::spawn(drain(stderr, server.to_string()));
        let (tx, rx) = watch::channel(None);
        tokio::spawn(async move {
            // The watcher owns the child: it reaps it (no zombie) and
            // publishes the status. Dropped before that (the runtime going
            // away), its reaper kills the group and reaps the child.
            if let Some(status) = reaper.exited().await {
                let _ = tx.send(Some(status));
            }
        });
        Ok(Spawned {
            child: ChildProc {
                pgid,
                exit: rx,
                ended: AtomicBool::new(false),
            },
            stdout,
            stdin: PipeStdin(stdin),
        })
    }
}

/// A started child until it is reaped: dropped before that (never adopted,
/// or its watcher gone with the runtime), it kills the child's process group
/// and reaps the child, which SIGKILL ends at once.
struct Reaper {
    child: Option<std::process::Child>,
    pgid: Pid,
}

impl Reaper {
    /// Waits for the child's exit and reaps it: on its pidfd, read through
    /// the runtime's reactor, or where the kernel has no pidfd (before 5.3)
    /// on a thread of the blocking pool. `None` if it cannot be waited on.
    async fn exited(self) -> Option<ExitStatus> {
        let pidfd = self.child.as_ref().and_then(crate::sys::pidfd::exit_fd);
        self.exited_on(pidfd).await
    }

    /// [`Reaper::exited`] on the pidfd given, or on the blocking pool
    /// without one.
    async fn exited_on(
        mut self,
        pidfd: Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
    ) -> Option<ExitStatus> {
        let status = match pidfd {
            Some(fd) => loop {
                match self.child.as_mut()?.try_wait() {
                    Ok(Some(status)) => break Some(status),
                    Ok(None) => {}
                    Err(_) => {
                        // Not ours to wait on (a host that ignores SIGCHLD
                        // has the kernel reap it): nothing left to kill.
                        self.child = None;
                        break None;
                    }
                }
                match fd.readable().await {
                    Ok(mut ready) => ready.clear_ready(),
                    Err(_) => break None,
                }
            },
            None => {
                let mut child = self.child.take()?;
                tokio::task::spawn_blocking(move || child.wait().ok())
                    .await
                    .ok()
                    .flatten()
            }
        };
        if status.is_some() {
            self.child = None;
        }
        status
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = killpg(self.pgid, Signal::SIGKILL);
            let _ = child.wait();
        }
    }
}

/// Reads the child's stderr continuously, so it can never block on a full
/// pipe, and hands each line to the host's log callback (target `mcp`, level
/// info) when one wants it; otherwise the bytes are dropped unlooked-at. A
/// line is cut at [`STDERR_LINE_MAX`] bytes, so a server that floods stderr
/// without a newline costs bounded memory.
async fn drain(mut stderr: ChildStderr, server: String) {
    use crate::log::{emit, enabled, Level};
    // Read into spare capacity: a zeroed buffer would touch its four pages
    // for every server, chatty or not.
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    let flush = |line: &mut Vec<u8>, cut: &mut bool| {
        if !line.is_empty() || *cut {
            let text = String::from_utf8_lossy(line);
            let text = text.trim_end_matches('\r');
            let more = if *cut { " [line cut]" } else { "" };
            emit(Level::Info, "mcp", || {
                format!("server \"{server}\" stderr: {text}{more}")
            });
        }
        line.clear();
        *cut = false;
    };
    loop {
        buf.clear();
        let n = match stderr.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if !enabled(Level::Info) {
            line.clear();
            continue;
        }
        for chunk in buf[..n].split_inclusive(|b| *b == b'\n') {
            let (body, ends) = match chunk.strip_suffix(b"\n") {
                Some(b) => (b, true),
                None => (chunk, false),
            };
            let room = STDERR_LINE_MAX.saturating_sub(line.len());
            line.extend_from_slice(&body[..body.len().min(room)]);
            cut |= body.len() > room;
            if ends {
                flush(&mut line, &mut cut);
            }
        }
    }
    if enabled(Level::Info) {
        flush(&mut line, &mut cut);
    }
}

/// The longest stderr line passed to the log callback.
const STDERR_LINE_MAX: usize = 8 * 1024;

/// A clone of a child's exit status channel: outlives the [`ChildProc`]
/// (the watcher task that reaps the child publishes into it).
#[derive(Clone)]
pub struct ExitWatch(watch::Receiver<Option<ExitStatus>>);

impl ExitWatch {
    /// Waits until the child has been reaped, or up to `limit`; `true` if it
    /// was.
    pub async fn reaped_within(&self, limit: Duration) -> bool {
        let mut rx = self.0.clone();
        let wait = async {
            loop {
                if rx.borrow_and_update().is_some() {
                    return true;
                }
                if rx.changed().await.is_err() {
                    // The watcher ended: it reaped the child, or the
                    // runtime is going away (kill_on_drop then fires).
                    return rx.borrow().is_some();
                }
            }
        };
        tokio::time::timeout(limit, wait).await.unwrap_or(false)
    }
}

impl ChildProc {
    /// The exit status channel, for waiting on the reaping after this
    /// handle is gone.
    pub fn exit_watch(&self) -> ExitWatch {
        ExitWatch(self.exit.clone())
    }

    /// The process id of the server (also its process group id).
    pub fn pid(&self) -> u32 {
        self.pgid.as_raw().unsigned_abs()
    }

    /// The exit status, once the process has exited.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Waits until the process has exited; pending forever if it never does
    /// (callers race it against something else).
    pub async fn exited(&self) -> ExitStatus {
        let mut rx = self.exit.clone();
        loop {
            if let Some(status) = *rx.borrow_and_update() {
                return status;
            }
            if rx.changed().await.is_err() {
                // The watcher is gone without a status: never resolves.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Waits up to `limit` for the exit status (the reaper can trail the
    /// closing of stdout by a few milliseconds).
    pub async fn exit_status_within(&self, limit: Duration) -> Option<ExitStatus> {
        tokio::time::timeout(limit, self.exited()).await.ok()
    }

    /// Ends the process tree after stdin has been closed by the transport:
    /// a grace period, SIGTERM to the group, another grace period, SIGKILL
    /// to the group. Anything the server left in its group is ended too, and
    /// has exited when this returns (waited for at most 1 s more).
    pub async fn terminate(&self) {
        if self.ended.swap(true, Ordering::SeqCst) {
            return;
        }
        let _ = self.exit_status_within(GRACE).await;
        let _ = killpg(self.pgid, Signal::SIGTERM);
        if self.exit_status().is_none() {
            let _ = self.exit_status_within(GRACE).await;
        }
        let _ = killpg(self.pgid, Signal::SIGKILL);
        let _ = self.exit_status_within(GRACE).await;
        // Closed means gone: the rest of the group too, not just the server.
        crate::process::killed(self.pgid).await;
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        // Safety net for a session dropped without `terminate` (a connect
        // abandoned at its deadline): end the whole group now.
        if !self.ended.swap(true, Ordering::SeqCst) {
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    /// Whether a process with this id exists (a zombie counts).
    fn exists(pid: u32) -> bool {
        let pid = Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
        nix::sys::signal::kill(pid, None).is_ok()
    }

    #[test]
    fn a_child_s_exit_status_is_read_from_its_pidfd_and_without_one() {
        crate::runtime::get().block_on(async {
            for pidfd in [true, false] {
                let Ok(Started(reaper)) = start(&sh("exit 3"), &[], None) else {
                    panic!("sh did not start");
                };
                let pid = reaper.child.as_ref().map_or(0, std::process::Child::id);
                let fd = if pidfd {
                    reaper.child.as_ref().and_then(crate::sys::pidfd::exit_fd)
                } else {
                    None
                };
                assert_eq!(pidfd, fd.is_some(), "pidfd_open works here (Linux 5.3+)");
                let status = reaper.exited_on(fd).await;
                assert_eq!(status.and_then(|s| s.code()), Some(3), "pidfd: {pidfd}");
                assert!(!exists(pid), "the child was reaped (pidfd: {pidfd})");
            }
        });
    }

    #[test]
    fn a_process_never_handed_to_the_runtime_is_killed_and_reaped() {
        let Ok(started) = start(&sh("sleep 30"), &[], None) else {
            panic!("sh did not start");
        };
        let pid = started.0.child.as_ref().map_or(0, std::process::Child::id);
        assert!(exists(pid));
        drop(started);
        assert!(!exists(pid), "killed and reaped on drop");
    }

    #[test]
    fn an_adopted_process_reports_its_exit_through_the_watch() {
        crate::runtime::get().block_on(async {
            let Ok(spawned) = start(&sh("exec 0<&-; kill -TERM $$"), &[], None)
                .and_then(|s| s.adopt("stdio-test"))
            else {
                panic!("sh did not start");
            };
            let status = spawned
                .child
                .exit_status_within(Duration::from_secs(10))
                .await;
            assert_eq!(status.and_then(|s| s.signal()), Some(15));
        });
    }
}
