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
//! A server starts in two steps. [`start`] starts the process on the
//! calling thread without the runtime, with std's `Command` or, from a
//! thread that blocks signals, `sys::spawn`; a toolkit's first build starts
//! its servers before the runtime's worker thread, so each server's own
//! start-up overlaps the runtime's. [`Started::adopt`] then hands the pipes
//! to the runtime and watches the child's exit on its pidfd.

use super::fault::Fault;
use crate::process::Child;
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
/// its three pipes, until [`Started::adopt`] hands them to the runtime.
/// Dropped unadopted, it kills the process group and reaps the child (its
/// [`Reaper`]).
pub struct Started {
    reaper: Reaper,
    pipes: (
        std::process::ChildStdin,
        std::process::ChildStdout,
        std::process::ChildStderr,
    ),
}

/// Starts `command` with piped stdio in a new process group, on the calling
/// thread and without the runtime: a toolkit's first build starts its
/// servers before the runtime's worker thread, so a server's own start-up
/// (its loader, its libc) overlaps the runtime's instead of following it.
///
/// The server inherits no blocked signal, so a close's SIGTERM reaches it.
/// From a thread that blocks only SIGPIPE (the runtime's) or nothing, std
/// starts it (`posix_spawn`); from one that blocks more (a host that takes
/// its signals on one thread), `sys::spawn` does, with the mask cleared by
/// `posix_spawn` itself: std would need a pre-exec step for that, and so a
/// fork of the whole host.
pub fn start(
    command: &[String],
    env: &[(String, String)],
    cwd: Option<&str>,
) -> Result<Started, Fault> {
    let Some((program, args)) = command.split_first() else {
        return Err(Fault::SpawnFailed("the server has no command".into()));
    };
    let cannot = |e: io::Error| Fault::SpawnFailed(format!("cannot start '{program}': {e}"));
    if crate::sys::signal::blocks_more_than_sigpipe() {
        let spec = crate::sys::spawn::Spec {
            program,
            args,
            env,
            cwd,
            stdin: crate::sys::spawn::Stdin::Piped,
        };
        let p = crate::sys::spawn::spawn(&spec).map_err(cannot)?;
        let pgid = Pid::from_raw(p.pid);
        let reaper = Reaper {
            child: Some(Child::Spawned(pgid)),
            pgid,
        };
        let Some(stdin) = p.stdin else {
            return Err(Fault::SpawnFailed("the child's pipes are missing".into()));
        };
        return Ok(Started {
            reaper,
            pipes: (stdin.into(), p.stdout.into(), p.stderr.into()),
        });
    }
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
    let mut child = crate::runtime::spawn_child(&mut cmd).map_err(cannot)?;
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let Some(pgid) = i32::try_from(child.id()).ok().map(Pid::from_raw) else {
        return Err(Fault::SpawnFailed("the child's id is out of range".into()));
    };
    let reaper = Reaper {
        child: Some(Child::Std(Box::new(child))),
        pgid,
    };
    let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
        return Err(Fault::SpawnFailed("the child's pipes are missing".into()));
    };
    Ok(Started {
        reaper,
        pipes: (stdin, stdout, stderr),
    })
}

impl Started {
    /// Hands the process to the runtime (must run inside it): its pipes
    /// become the runtime's, its stderr is drained and its exit watched.
    pub fn adopt(self, server: &str) -> Result<Spawned, Fault> {
        // From here a failure ends the child through the reaper's drop; once
        // the watcher holds it, through the watcher.
        let Started {
            reaper,
            pipes: (stdin, stdout, stderr),
        } = self;
        let pgid = reaper.pgid;
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
    child: Option<Child>,
    pgid: Pid,
}

impl Reaper {
    /// Waits for the child's exit and reaps it: on its pidfd, read through
    /// the runtime's reactor, or where the kernel has no pidfd (before 5.3)
    /// on a thread of the blocking pool. `None` if it cannot be waited on.
    async fn exited(self) -> Option<ExitStatus> {
        let pidfd = self
            .child
            .as_ref()
            .and_then(|c| crate::sys::pidfd::exit_fd(c.id()));
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
                let Ok(Started { reaper, .. }) = start(&sh("exit 3"), &[], None) else {
                    panic!("sh did not start");
                };
                let pid = reaper.child.as_ref().map_or(0, Child::id);
                let fd = if pidfd {
                    crate::sys::pidfd::exit_fd(pid)
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

    /// [`start`] on a new thread that blocks SIGTERM and SIGUSR1, as a host
    /// that takes its signals on one thread blocks them on the others.
    fn start_blocking_signals(
        command: &[String],
        env: &[(String, String)],
        cwd: Option<&str>,
    ) -> Result<Started, Fault> {
        use nix::sys::signal::SigSet;
        let (command, env, cwd) = (command.to_vec(), env.to_vec(), cwd.map(String::from));
        std::thread::spawn(move || {
            let mut set = SigSet::empty();
            set.add(Signal::SIGTERM);
            set.add(Signal::SIGUSR1);
            set.thread_block()
                .expect("the test thread blocks its signals");
            assert!(crate::sys::signal::blocks_more_than_sigpipe());
            start(&command, &env, cwd.as_deref())
        })
        .join()
        .expect("the starting thread")
    }

    /// The first line of `/proc/self/status` that starts with `field`, as
    /// the child printed it, parsed as hex.
    fn status_mask(out: &str, field: &str) -> u64 {
        let line = out
            .lines()
            .find(|l| l.starts_with(field))
            .unwrap_or_default();
        let hex = line.split_whitespace().nth(1).unwrap_or("ffff");
        u64::from_str_radix(hex, 16).unwrap_or(u64::MAX)
    }

    /// What `command`, started from a thread that blocks signals, wrote to
    /// its stdout; it must start through `sys::spawn` and exit 0.
    fn output_blocking_signals(
        command: &[String],
        env: &[(String, String)],
        cwd: Option<&str>,
    ) -> (String, u32) {
        use std::io::Read;
        let started = start_blocking_signals(command, env, cwd).expect("the command starts");
        assert!(matches!(started.reaper.child, Some(Child::Spawned(_))));
        let pid = started.reaper.child.as_ref().map_or(0, Child::id);
        let Started {
            reaper,
            pipes: (stdin, mut stdout, _stderr),
        } = started;
        drop(stdin);
        let mut out = String::new();
        stdout.read_to_string(&mut out).expect("the child's output");
        crate::runtime::get().block_on(async {
            let status = reaper.exited().await;
            assert_eq!(status.and_then(|s| s.code()), Some(0), "{out}");
        });
        assert!(!exists(pid), "reaped");
        (out, pid)
    }

    #[test]
    fn a_server_started_from_a_thread_that_blocks_signals_blocks_none() {
        // grep itself, not through sh: a shell may clear its own mask.
        let grep = ["grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status"].map(String::from);
        let (out, _) = output_blocking_signals(&grep, &[], None);
        // SIGTERM (bit 15) and SIGUSR1 (bit 10) blocked here, none there.
        assert_eq!(status_mask(&out, "SigBlk:"), 0, "{out}");
        // The test harness ignores SIGPIPE; the child has it at its default.
        assert_eq!(
            status_mask(&out, "SigIgn:") & (1 << (libc_sigpipe() - 1)),
            0,
            "{out}"
        );

        let script =
            "echo \"x=$TN_SPAWN_X\"; pwd; echo \"pgrp=$(cut -d' ' -f5 /proc/$$/stat) pid=$$\"";
        let dir = std::env::temp_dir().canonicalize().expect("temp dir");
        let dir = dir.to_str().expect("a UTF-8 temp dir");
        let env = [("TN_SPAWN_X".to_string(), "set on top".to_string())];
        let (out, pid) = output_blocking_signals(&sh(script), &env, Some(dir));
        assert!(out.contains("x=set on top\n"), "{out}");
        assert!(out.contains(&format!("\n{dir}\n")), "{out}");
        assert!(
            out.contains(&format!("pgrp={pid} pid={pid}")),
            "its own group: {out}"
        );
    }

    fn libc_sigpipe() -> i32 {
        Signal::SIGPIPE as i32
    }

    #[test]
    fn a_server_started_from_a_blocking_thread_is_reaped_with_or_without_a_pidfd() {
        crate::runtime::get().block_on(async {
            for pidfd in [true, false] {
                let started = start_blocking_signals(&sh("exit 3"), &[], None).expect("sh starts");
                let Started { reaper, .. } = started;
                let pid = reaper.child.as_ref().map_or(0, Child::id);
                let fd = if pidfd {
                    crate::sys::pidfd::exit_fd(pid)
                } else {
                    None
                };
                let status = reaper.exited_on(fd).await;
                assert_eq!(status.and_then(|s| s.code()), Some(3), "pidfd: {pidfd}");
                assert!(!exists(pid), "the child was reaped (pidfd: {pidfd})");
            }
        });
        let started = start_blocking_signals(&sh("sleep 30"), &[], None).expect("sh starts");
        let pid = started.reaper.child.as_ref().map_or(0, Child::id);
        assert!(exists(pid));
        drop(started);
        assert!(!exists(pid), "killed and reaped on drop");
    }

    #[test]
    fn a_missing_program_fails_alike_from_either_kind_of_thread() {
        let command = vec!["tn-no-such-program-anywhere".to_string()];
        let plain = start(&command, &[], None).err().map(|f| f.to_string());
        let blocked = start_blocking_signals(&command, &[], None)
            .err()
            .map(|f| f.to_string());
        assert!(
            plain
                .as_deref()
                .is_some_and(|m| m.contains("No such file or directory")),
            "{plain:?}"
        );
        assert_eq!(plain, blocked);
        let missing_dir = start_blocking_signals(&sh("true"), &[], Some("/tn/no/such/dir"));
        let plain_dir = start(&sh("true"), &[], Some("/tn/no/such/dir"));
        let (blocked, plain) = (
            missing_dir.err().map(|f| f.to_string()),
            plain_dir.err().map(|f| f.to_string()),
        );
        assert!(
            plain
                .as_deref()
                .is_some_and(|m| m.contains("No such file or directory")),
            "{plain:?}"
        );
        assert_eq!(blocked, plain);
    }

    #[test]
    fn a_process_never_handed_to_the_runtime_is_killed_and_reaped() {
        let Ok(started) = start(&sh("sleep 30"), &[], None) else {
            panic!("sh did not start");
        };
        let pid = started.reaper.child.as_ref().map_or(0, Child::id);
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
