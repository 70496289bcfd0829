//! `bash` (SPEC §4A, ADR 0034): COMMAND run by the host's shell, an argv
//! prefix (`builtins.shell`, else the first of `/bin/sh -c`, `sh -c` that
//! exists), in its own process group; all stdout then all stderr, the exit
//! code on failure.
//!
//! - **Timeout.** The whole job ends, not just the shell: SIGTERM to the
//!   group, then SIGKILL after [`KILL_GRACE`] — or as soon as the job is gone,
//!   whichever comes first, so a command that stops on SIGTERM does not make
//!   the caller wait out the grace (upstream `test_timeout_returns_as_soon_as_
//!   the_job_is_gone`).
//! - **Output.** Each stream is read to its end (the command is never blocked
//!   on a full pipe), but only [`OUTPUT_CAP`] bytes of it are kept: the first
//!   and the last half, with a line in between saying how many bytes were
//!   dropped. `cat /dev/zero` costs a bounded amount of memory and ends at
//!   its timeout like any other command.
//! - **A host that ignores SIGCHLD** (SIG_IGN or SA_NOCLDWAIT) makes the
//!   kernel reap our child itself and throw its exit status away, so no wait
//!   can report it. There a reporter process stands between us and the
//!   shell (`sys::signal::report_child_status`): its SIGCHLD is back at the
//!   default (in that process only; the host's disposition is never
//!   touched), it waits for the shell as any parent does and writes the
//!   status into a pipe we read.

use super::args;
use crate::process;
use crate::sys::signal as sig;
use crate::tool::{ExecContext, ToolResult};
use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;
use serde_json::Value;
use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{ChildStderr, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// SPEC §4A: `timeout` defaults to 60 s.
const DEFAULT_TIMEOUT_MS: i64 = 60_000;

/// ADR 0034: how long a timed-out job gets between SIGTERM and SIGKILL.
/// Fixed, and the same in every port.
pub const KILL_GRACE: Duration = Duration::from_millis(2000);

/// How much of each stream (stdout, stderr) bash keeps: the first half and
/// the last half of this many bytes. Upstream 0.21 keeps everything; 1 MiB
/// is far above what a model reads usefully and far below what hurts a host.
pub const OUTPUT_CAP: usize = 1024 * 1024;

/// How long to wait for the pipes to close once the group is dead. Only a
/// process that left the group (setsid) can hold them longer; its output is
/// then cut off rather than hanging the call.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The interpreters tried, in order, when the host names none (as upstream:
/// the absolute path first, then a PATH lookup).
const CANDIDATES: [[&str; 2]; 2] = [["/bin/sh", "-c"], ["sh", "-c"]];

/// The shell of `builtins.shell` when given (non-empty), else the detected
/// one; an error naming what was tried when there is none.
pub fn resolve_shell(given: Option<&[String]>) -> Result<Vec<String>, String> {
    match given {
        Some(argv) if !argv.is_empty() => Ok(argv.to_vec()),
        _ => detect_shell(&CANDIDATES, std::env::var_os("PATH").as_deref()),
    }
}

/// The shell `builtin::run` uses (no toolkit, so no `builtins.shell`).
pub fn default_shell() -> Result<&'static [String], &'static str> {
    static SHELL: OnceLock<Result<Vec<String>, String>> = OnceLock::new();
    match SHELL.get_or_init(|| resolve_shell(None)) {
        Ok(argv) => Ok(argv),
        Err(e) => Err(e),
    }
}

/// The first candidate whose program exists (as a path, or on `path`).
fn detect_shell(candidates: &[[&str; 2]], path: Option<&OsStr>) -> Result<Vec<String>, String> {
    for [program, flag] in candidates {
        if find_program(program, path).is_some() {
            return Ok(vec![program.to_string(), flag.to_string()]);
        }
    }
    let tried: Vec<&str> = candidates.iter().map(|[p, _]| *p).collect();
    Err(format!(
        "builtins.shell: no shell interpreter found (tried: {}); set builtins.shell to the \
         argv prefix of one (e.g. [\"/bin/bash\", \"-c\"]), or disable bash with \
         builtins.tools.bash = false",
        tried.join(", ")
    ))
}

fn find_program(program: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    if program.contains('/') {
        return Path::new(program).is_file().then(|| PathBuf::from(program));
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

pub fn run(args: &Value, ctx: &ExecContext, shell: &[String]) -> ToolResult {
    let command = args::string(args, "command");
    let timeout = match args::integer("bash", args, "timeout", DEFAULT_TIMEOUT_MS) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let timeout = match ctx.timeout_ms {
        Some(host) => timeout.min(i64::try_from(host).unwrap_or(i64::MAX)),
        None => timeout,
    };
    let workdir = args::opt_string(args, "workdir").filter(|w| !w.is_empty());
    let Some((program, prefix)) = shell.split_first() else {
        return ToolResult::error("bash: builtins.shell is empty");
    };

    let mut cmd = Command::new(program);
    cmd.args(prefix).arg(&command);
    // Where the exit status comes from when the kernel would discard it.
    let mut reporter = None;
    if sig::children_are_autoreaped() {
        match std::io::pipe() {
            Ok((read, write)) => {
                sig::report_child_status(&mut cmd, write.as_raw_fd());
                reporter = Some((read, write));
            }
            Err(e) => return ToolResult::error(format!("bash: cannot make a pipe: {e}")),
        }
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // The command leads a new process group, so one signal reaches it
        // and everything it started.
        .process_group(0);
    if let Some(dir) = &workdir {
        if !Path::new(dir).is_dir() {
            return ToolResult::error(format!("bash: workdir is not a directory: {dir}"));
        }
        cmd.current_dir(dir);
    }
    // The command starts with no signal blocked, whatever this thread (a
    // runtime thread, a host's) blocks: from a thread that blocks more than
    // SIGPIPE, by `posix_spawn` with the mask cleared in the child (std would
    // fork the whole host for that); else by std. The status reporter needs
    // std's pre-exec step, so a host that ignores SIGCHLD keeps std's way.
    let spawned = if reporter.is_none() && sig::blocks_more_than_sigpipe() {
        let mut words = prefix.to_vec();
        words.push(command.to_string());
        let spec = crate::sys::spawn::Spec {
            program,
            args: &words,
            env: &[],
            cwd: workdir.as_deref(),
            stdin: crate::sys::spawn::Stdin::Null,
        };
        crate::sys::spawn::spawn(&spec).map(|p| {
            let (out, err) = (p.stdout.into(), p.stderr.into());
            (
                process::Child::Spawned(Pid::from_raw(p.pid)),
                Some(out),
                Some(err),
            )
        })
    } else {
        crate::runtime::spawn_child(&mut cmd).map(|mut c| {
            let (out, err) = (c.stdout.take(), c.stderr.take());
            (process::Child::Std(Box::new(c)), out, err)
        })
    };
    // Our copy of the status pipe's writing end goes now, or reading it
    // would never end.
    let reporter = reporter.map(|(read, _write)| read);
    let (mut child, out, err): (_, Option<ChildStdout>, Option<ChildStderr>) = match spawned {
        Ok(c) => c,
        Err(e) => return ToolResult::error(format!("bash: cannot start {program}: {e}")),
    };
    let Ok(raw_pid) = i32::try_from(child.id()) else {
        let _ = child.kill();
        let _ = child.wait();
        return ToolResult::error("bash: the shell's process id is out of range");
    };
    let pid = Pid::from_raw(raw_pid);
    let stdout = drain(out);
    let stderr = drain(err);

    let Some(exited) = wait_for_exit(pid) else {
        let _ = killpg(pid, Signal::SIGKILL);
        let _ = child.wait();
        return ToolResult::error("bash: cannot start a thread to wait for the shell");
    };
    let limit = Duration::from_millis(u64::try_from(timeout).unwrap_or(0));
    let stop = wait_until(&exited, limit, ctx);
    if !matches!(stop, Stop::Exited) {
        let _ = killpg(pid, Signal::SIGTERM);
        wait_until_gone(&exited, pid, &stdout, &stderr, Instant::now() + KILL_GRACE);
    }

    // Unless the host reaps children for us, the shell has exited (or must
    // stop) but is not reaped yet, so its pid still names this group and
    // cannot have been recycled: end whatever the group still holds
    // (background jobs, a command that ignored SIGTERM).
    let _ = killpg(pid, Signal::SIGKILL);
    let status = child.wait();
    // Nothing of the group runs when the call returns (a server's stop
    // counts on it).
    process::wait_until_killed(pid);
    let mut output = stdout.finish("stdout");
    output.push_str(&stderr.finish("stderr"));

    match stop {
        Stop::Exited => {}
        Stop::TimedOut => {
            output.push_str(&format!("command timed out after {timeout}ms"));
            return ToolResult::error(output);
        }
        Stop::Cancelled => {
            // What the command wrote before it was ended, then the word;
            // the metadata marks it as every cancelled result is marked.
            output.push_str("command cancelled");
            return ToolResult::error(output)
                .with_metadata(crate::tool::Stop::Cancelled.metadata());
        }
    }
    let code = match (status, reporter) {
        (_, Some(pipe)) => match read_status(pipe) {
            Some(0) => return ToolResult::ok(output),
            Some(code) => code.to_string(),
            None => {
                output.push_str("bash: the exit status is lost (its reporter did not finish)");
                return ToolResult::error(output);
            }
        },
        (Ok(s), None) if s.success() => return ToolResult::ok(output),
        // A shell reports death by signal N as 128+N; do the same.
        (Ok(s), None) => match s.code().or_else(|| s.signal().map(|n| 128 + n)) {
            Some(c) => c.to_string(),
            None => "unknown".to_string(),
        },
        (Err(e), None) if e.raw_os_error() == Some(Errno::ECHILD as i32) => {
            output.push_str(
                "bash: the exit status is lost: the host began ignoring SIGCHLD while the \
                 command ran, so the kernel discarded it",
            );
            return ToolResult::error(output);
        }
        (Err(e), None) => {
            return ToolResult::error(format!("{output}bash: cannot wait for the shell: {e}"))
        }
    };
    output.push_str(&format!("exit code {code}"));
    ToolResult::error(output)
}

enum Stop {
    Exited,
    TimedOut,
    Cancelled,
}

/// How often a running command checks whether its caller cancelled it.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// Waits for the shell to exit, at most `limit`, and less if the call is
/// cancelled meanwhile (then the caller kills the group).
fn wait_until(exited: &Receiver<()>, limit: Duration, ctx: &ExecContext) -> Stop {
    let Some(cancel) = &ctx.cancel else {
        return match exited.recv_timeout(limit) {
            Err(RecvTimeoutError::Timeout) => Stop::TimedOut,
            _ => Stop::Exited,
        };
    };
    let until = Instant::now() + limit;
    loop {
        if cancel.is_cancelled() {
            return Stop::Cancelled;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Stop::TimedOut;
        }
        match exited.recv_timeout(left.min(CANCEL_POLL)) {
            Err(RecvTimeoutError::Timeout) => continue,
            _ => return Stop::Exited,
        }
    }
}

/// The status the reporter wrote, once it has exited; None when it wrote
/// none (it was killed) or could not wait.
fn read_status(mut pipe: std::io::PipeReader) -> Option<i32> {
    let mut bytes = [0u8; 4];
    pipe.read_exact(&mut bytes).ok()?;
    Some(i32::from_ne_bytes(bytes)).filter(|c| *c >= 0)
}

/// After SIGTERM: returns once the shell has exited and nothing of its
/// group runs any more (the pipes are closed where /proc cannot be read),
/// or at `deadline`.
fn wait_until_gone(
    exited: &Receiver<()>,
    pgid: Pid,
    stdout: &Drain,
    stderr: &Drain,
    deadline: Instant,
) {
    let left = deadline.saturating_duration_since(Instant::now());
    if exited.recv_timeout(left).is_err() {
        return;
    }
    while Instant::now() < deadline {
        let gone = match process::group_has_running_member(pgid) {
            Some(running) => !running,
            None => stdout.is_done() && stderr.is_done(),
        };
        if gone {
            return;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Signals once `pid` has exited, without reaping it (WNOWAIT), so the caller
/// can still signal its process group safely. Where the kernel reaps it
/// (SIGCHLD ignored) the wait ends with ECHILD at its exit instead.
fn wait_for_exit(pid: Pid) -> Option<Receiver<()>> {
    let (tx, rx) = mpsc::channel();
    thread::Builder::new()
        .name("tn-bash-wait".into())
        .spawn(move || loop {
            match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
                Err(Errno::EINTR) => continue,
                _ => {
                    let _ = tx.send(());
                    return;
                }
            }
        })
        .ok()?;
    Some(rx)
}

/// What bash keeps of one stream: the first `OUTPUT_CAP / 2` bytes, and the
/// last `OUTPUT_CAP / 2` of the rest, counting what falls between.
#[derive(Default)]
struct Capped {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: u64,
}

impl Capped {
    const HALF: usize = OUTPUT_CAP / 2;

    fn push(&mut self, mut chunk: &[u8]) {
        if self.head.len() < Self::HALF {
            let n = chunk.len().min(Self::HALF - self.head.len());
            self.head.extend_from_slice(&chunk[..n]);
            chunk = &chunk[n..];
        }
        if chunk.len() >= Self::HALF {
            self.dropped += (self.tail.len() + chunk.len() - Self::HALF) as u64;
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - Self::HALF..]);
            return;
        }
        self.tail.extend(chunk);
        let over = self.tail.len().saturating_sub(Self::HALF);
        if over > 0 {
            self.tail.drain(..over);
            self.dropped += over as u64;
        }
    }

    /// The kept text; where bytes were dropped, the cut falls on character
    /// boundaries and a line names how many bytes of `stream` went.
    fn text(self, stream: &str) -> String {
        let mut head = self.head;
        let mut tail: Vec<u8> = self.tail.into();
        if self.dropped == 0 {
            head.extend_from_slice(&tail);
            return String::from_utf8_lossy(&head).into_owned();
        }
        let mut dropped = self.dropped;
        // A character cut in two at the end of the head or the start of the
        // tail goes with the dropped bytes.
        if let Err(e) = std::str::from_utf8(&head) {
            if e.error_len().is_none() {
                dropped += (head.len() - e.valid_up_to()) as u64;
                head.truncate(e.valid_up_to());
            }
        }
        let skip = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0xC0) == 0x80)
            .count();
        dropped += skip as u64;
        tail.drain(..skip);
        format!(
            "{}\n[toolnexus: {dropped} bytes of {stream} dropped; bash keeps the first and the \
             last {} KiB of each stream]\n{}",
            String::from_utf8_lossy(&head),
            Self::HALF / 1024,
            String::from_utf8_lossy(&tail)
        )
    }
}

/// One pipe read to its end on its own thread, so a command filling both
/// pipes never blocks on the one not being read.
struct Drain {
    kept: Arc<Mutex<Capped>>,
    done: Receiver<()>,
    finished: Mutex<bool>,
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> Drain {
    let kept = Arc::new(Mutex::new(Capped::default()));
    let (tx, done) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        let sink = Arc::clone(&kept);
        // Should the thread not start, the pipe is dropped with the closure
        // and the output of that stream is lost, never the call.
        let _ = thread::Builder::new()
            .name("tn-bash-pipe".into())
            .spawn(move || {
                let mut chunk = vec![0u8; 64 * 1024];
                loop {
                    match pipe.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(n) => match sink.lock() {
                            Ok(mut k) => k.push(&chunk[..n]),
                            Err(_) => break,
                        },
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => break,
                    }
                }
                let _ = tx.send(());
            });
    }
    Drain {
        kept,
        done,
        finished: Mutex::new(false),
    }
}

impl Drain {
    /// Whether the pipe has closed (without waiting).
    fn is_done(&self) -> bool {
        let Ok(mut finished) = self.finished.lock() else {
            return false;
        };
        if !*finished {
            *finished = !matches!(self.done.try_recv(), Err(mpsc::TryRecvError::Empty));
        }
        *finished
    }

    /// The text kept, once the pipe closed or the grace ran out.
    fn finish(self, stream: &str) -> String {
        if !self.is_done() {
            let _ = self.done.recv_timeout(DRAIN_GRACE);
        }
        let kept = match self.kept.lock() {
            Ok(mut k) => std::mem::take(&mut *k),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        kept.text(stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_takes_the_first_candidate_that_exists_and_names_all_it_tried() {
        let none = [["/no/such/sh", "-c"], ["tn-no-such-shell", "-c"]];
        let e = detect_shell(&none, Some(OsStr::new("/no/such/dir"))).expect_err("nothing to find");
        assert!(
            e.starts_with(
                "builtins.shell: no shell interpreter found (tried: /no/such/sh, tn-no-such-shell)"
            ),
            "{e}"
        );
        assert!(e.contains("builtins.tools.bash = false"), "{e}");
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("tn-shell"), "").expect("write");
        let found = detect_shell(
            &[["/no/such/sh", "-c"], ["tn-shell", "-x"]],
            Some(dir.path().as_os_str()),
        );
        assert_eq!(found, Ok(vec!["tn-shell".to_string(), "-x".to_string()]));
        assert_eq!(
            resolve_shell(Some(&["/opt/zsh".to_string(), "-c".to_string()])),
            Ok(vec!["/opt/zsh".to_string(), "-c".to_string()])
        );
    }

    #[test]
    fn the_cap_keeps_head_and_tail_and_counts_what_it_drops() {
        let half = Capped::HALF;
        let mut small = Capped::default();
        small.push(b"abc");
        small.push(b"def");
        assert_eq!(small.text("stdout"), "abcdef");

        let mut big = Capped::default();
        let total = 3 * OUTPUT_CAP + 17;
        let bytes: Vec<u8> = (0..total).map(|i| b'a' + (i % 26) as u8).collect();
        for piece in bytes.chunks(7001) {
            big.push(piece);
        }
        let text = big.text("stdout");
        let marker = format!(
            "\n[toolnexus: {} bytes of stdout dropped; bash keeps the first and the last 512 KiB of each stream]\n",
            total - 2 * half
        );
        let (head, tail) = text.split_once(&marker).expect("the marker");
        assert_eq!(head.as_bytes(), &bytes[..half]);
        assert_eq!(tail.as_bytes(), &bytes[total - half..]);
    }

    /// `f` on a new thread that blocks SIGTERM and SIGUSR1, as a host that
    /// takes its signals on one thread blocks them on the others.
    fn on_a_blocking_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(move || {
            let mut set = nix::sys::signal::SigSet::empty();
            set.add(Signal::SIGTERM);
            set.add(Signal::SIGUSR1);
            set.thread_block()
                .expect("the test thread blocks its signals");
            assert!(sig::blocks_more_than_sigpipe());
            f()
        })
        .join()
        .expect("the blocking thread")
    }

    #[test]
    fn a_command_from_a_thread_that_blocks_signals_blocks_none() {
        let ctx = ExecContext::default();
        let dir = std::env::temp_dir().canonicalize().expect("temp dir");
        let dir = dir.to_str().expect("a UTF-8 temp dir").to_string();
        let (mask, ended, slow) = on_a_blocking_thread(move || {
            // grep as the shell (a shell may clear its own mask).
            let grep = ["grep".to_string(), "^SigBlk:".to_string()];
            let mask = run(
                &serde_json::json!({"command": "/proc/self/status"}),
                &ctx,
                &grep,
            );
            let sh = ["sh".to_string(), "-c".to_string()];
            let args =
                serde_json::json!({"command": "pwd; read x || echo eof; exit 3", "workdir": dir});
            let ended = run(&args, &ctx, &sh);
            let slow = run(
                &serde_json::json!({"command": "sleep 5", "timeout": 200}),
                &ctx,
                &sh,
            );
            (mask, ended, slow)
        });
        assert_eq!(mask.output, "SigBlk:\t0000000000000000\n");
        assert!(!mask.is_error);
        let dir = std::env::temp_dir().canonicalize().expect("temp dir");
        let want = format!("{}\neof\nexit code 3", dir.display());
        assert_eq!(
            (ended.output.as_str(), ended.is_error),
            (want.as_str(), true)
        );
        assert_eq!(slow.output, "command timed out after 200ms");
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let mut c = Capped::default();
        // 'é' is two bytes: an odd filler puts one astride each cut.
        let mut bytes = vec![b'x'; Capped::HALF - 1];
        bytes.extend("é".repeat(OUTPUT_CAP).as_bytes());
        c.push(&bytes);
        let text = c.text("stderr");
        assert!(!text.contains('\u{FFFD}'), "no replacement character");
        assert!(text.ends_with('é'));
        assert!(text.contains("bytes of stderr dropped"));
    }
}
