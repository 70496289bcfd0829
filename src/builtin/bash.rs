//! `bash` (SPEC §4A): `sh -c COMMAND` in its own process group, all stdout
//! then all stderr, the exit code on failure, and a timeout that kills the
//! whole group.

use super::args;
use crate::tool::{ExecContext, ToolResult};
use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;
use serde_json::Value;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// SPEC §4A: `timeout` defaults to 60 s.
const DEFAULT_TIMEOUT_MS: i64 = 60_000;

/// How long to wait for the pipes to close once the group is dead. Only a
/// process that left the group (setsid) can hold them longer; its output is
/// then cut off rather than hanging the call.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

pub fn run(args: &Value, ctx: &ExecContext) -> ToolResult {
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

    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&command)
        .stdin(Stdio::null())
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
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return ToolResult::error(format!("bash: cannot start sh: {e}")),
    };
    let Ok(raw_pid) = i32::try_from(child.id()) else {
        let _ = child.kill();
        let _ = child.wait();
        return ToolResult::error("bash: the shell's process id is out of range");
    };
    let pid = Pid::from_raw(raw_pid);
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());

    let Some(exited) = wait_for_exit(pid) else {
        let _ = killpg(pid, Signal::SIGKILL);
        let _ = child.wait();
        return ToolResult::error("bash: cannot start a thread to wait for sh");
    };
    let limit = Duration::from_millis(u64::try_from(timeout).unwrap_or(0));
    let stop = wait_until(&exited, limit, ctx);

    // The shell has exited or must stop, but is not reaped yet, so its pid
    // still names this group and cannot have been recycled: kill whatever
    // the group still holds (background jobs, a command still running).
    let _ = killpg(pid, Signal::SIGKILL);
    let status = child.wait();
    let mut output = stdout.finish();
    output.push_str(&stderr.finish());

    match stop {
        Stop::Exited => {}
        Stop::TimedOut => {
            output.push_str(&format!("command timed out after {timeout}ms"));
            return ToolResult::error(output);
        }
        Stop::Cancelled => {
            output.push_str("command cancelled");
            return ToolResult::error(output);
        }
    }
    match status {
        Ok(s) if s.success() => ToolResult::ok(output),
        Ok(s) => {
            // A shell reports death by signal N as 128+N; do the same.
            let code = s.code().or_else(|| s.signal().map(|n| 128 + n));
            let code = code.map_or_else(|| "unknown".to_string(), |c| c.to_string());
            output.push_str(&format!("exit code {code}"));
            ToolResult::error(output)
        }
        Err(e) => ToolResult::error(format!("{output}bash: cannot wait for sh: {e}")),
    }
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

/// Signals once `pid` has exited, without reaping it (WNOWAIT), so the caller
/// can still signal its process group safely.
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

/// One pipe read to its end on its own thread, so a command filling both
/// pipes never blocks on the one not being read.
struct Drain {
    buf: Arc<Mutex<Vec<u8>>>,
    done: Receiver<()>,
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> Drain {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let (tx, done) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        let sink = Arc::clone(&buf);
        // Should the thread not start, the pipe is dropped with the closure
        // and the output of that stream is lost, never the call.
        let _ = thread::Builder::new()
            .name("tn-bash-pipe".into())
            .spawn(move || {
                let mut chunk = [0u8; 64 * 1024];
                loop {
                    match pipe.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(n) => match sink.lock() {
                            Ok(mut b) => b.extend_from_slice(&chunk[..n]),
                            Err(_) => break,
                        },
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => break,
                    }
                }
                let _ = tx.send(());
            });
    }
    Drain { buf, done }
}

impl Drain {
    /// The text read so far, once the pipe closed or the grace ran out.
    fn finish(self) -> String {
        let _ = self.done.recv_timeout(DRAIN_GRACE);
        let bytes = match self.buf.lock() {
            Ok(mut b) => std::mem::take(&mut *b),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        String::from_utf8_lossy(&bytes).into_owned()
    }
}
