//! The signal calls `nix` 0.29 has no safe wrapper for, wrapped here so the
//! rest of the crate stays free of `unsafe`: asking whether SIGPIPE is
//! pending on the calling thread (`sigpending`), taking one pending SIGPIPE
//! without waiting (`sigtimedwait` with a zero timeout), reading the
//! host's SIGCHLD disposition, the pre-exec step that starts a child with
//! no signal blocked, and the pre-exec step of bash's status reporter.
//!
//! The policies that use them are in `crate::runtime` (SIGPIPE) and
//! `crate::builtin::bash` (SIGCHLD).

use nix::libc;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// A signal set holding only SIGPIPE.
fn sigpipe_set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it fully before
    // sigaddset reads it, and both only write into the set we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        set
    }
}

/// Whether SIGPIPE is pending for the calling thread (thread-directed or
/// process-directed). False when the question cannot be asked.
pub(crate) fn sigpipe_pending() -> bool {
    // SAFETY: sigpending writes one sigset_t we own; sigismember reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        if libc::sigpending(&mut set) != 0 {
            return false;
        }
        libc::sigismember(&set, libc::SIGPIPE) == 1
    }
}

/// Takes one pending SIGPIPE off the calling thread without waiting: a zero
/// timeout makes `sigtimedwait` return at once with EAGAIN when none is
/// pending. Only meaningful while SIGPIPE is blocked on this thread (a
/// signal that is not blocked is delivered, never left pending).
pub(crate) fn take_pending_sigpipe() {
    let set = sigpipe_set();
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    loop {
        // SAFETY: both pointers are to locals that outlive the call; a NULL
        // siginfo pointer is allowed.
        let r = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &zero) };
        if r == libc::SIGPIPE || r == -1 && errno() != libc::EINTR {
            return;
        }
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Whether the calling thread blocks a signal other than SIGPIPE (real-time
/// signals included). False when the question fails.
pub(crate) fn blocks_more_than_sigpipe() -> bool {
    // SAFETY: a NULL new set only reads the thread's mask into `mask`, a
    // sigset_t we own; sigdelset and sigismember read and write only it.
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        if libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask) != 0 {
            return false;
        }
        libc::sigdelset(&mut mask, libc::SIGPIPE);
        (1..=libc::SIGRTMAX()).any(|n| libc::sigismember(&mask, n) == 1)
    }
}

/// Makes the child `cmd` starts unblock every signal between fork and exec,
/// so the program starts with an empty signal mask whatever the starting
/// thread blocks (a host that routes its signals to one thread blocks them
/// everywhere else). The host's own mask is never touched.
pub(crate) fn clear_mask_in_child(cmd: &mut Command) {
    // SAFETY: sigset_t is plain data, fully initialised by sigemptyset.
    let empty = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        set
    };
    // SAFETY: the closure runs in the forked child before exec and calls
    // only sigprocmask (async-signal-safe) on a set it owns; it neither
    // allocates nor takes a lock.
    unsafe {
        cmd.pre_exec(move || {
            if libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Whether the kernel reaps this process's children by itself (SIGCHLD set
/// to SIG_IGN, or a handler with SA_NOCLDWAIT), which discards their exit
/// status before any wait can see it. False when the question fails.
pub(crate) fn children_are_autoreaped() -> bool {
    // SAFETY: a NULL new action only reads the current one into `old`, a
    // sigaction we own.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGCHLD, std::ptr::null(), &mut old) != 0 {
            return false;
        }
        old.sa_sigaction == libc::SIG_IGN || old.sa_flags & libc::SA_NOCLDWAIT != 0
    }
}

/// Puts a reporter between us and the child `cmd` starts, for a host whose
/// SIGCHLD makes the kernel discard our children's exit status. Between
/// fork and exec the child sets SIGCHLD back to its default (for itself
/// only: the host's disposition is never changed) and forks again: the new
/// process goes on to exec the command, and the reporter, the child we
/// spawned, waits for it as any parent can, writes its status (the exit code,
/// or 128+N for signal N) to `status_fd` as four native-endian bytes, and
/// exits. It closes every other descriptor first, so it holds no pipe
/// open: not the command's output, not the one std reads exec errors from.
/// The reporter leads the process group (std set it up before this runs)
/// and the command is in that group.
pub(crate) fn report_child_status(cmd: &mut Command, status_fd: RawFd) {
    // SAFETY: the closure runs in the forked child of a multi-threaded
    // process, before exec; it calls only async-signal-safe functions
    // (sigaction, fork, close, close_range, waitpid, write, _exit) on values
    // it owns, and neither allocates nor takes a lock.
    unsafe {
        cmd.pre_exec(move || {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            if libc::sigaction(libc::SIGCHLD, &dfl, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let pid = libc::fork();
            if pid < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if pid == 0 {
                // The command: exec as std would have.
                libc::close(status_fd);
                return Ok(());
            }
            close_all_but(status_fd);
            let mut raw: libc::c_int = 0;
            let code: i32 = loop {
                let r = libc::waitpid(pid, &mut raw, 0);
                if r == pid {
                    break if libc::WIFEXITED(raw) {
                        libc::WEXITSTATUS(raw)
                    } else if libc::WIFSIGNALED(raw) {
                        128 + libc::WTERMSIG(raw)
                    } else {
                        -1
                    };
                }
                if r == -1 && *libc::__errno_location() != libc::EINTR {
                    break -1;
                }
            };
            let bytes = code.to_ne_bytes();
            libc::write(status_fd, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(0)
        });
    }
}

/// Closes every descriptor but `keep`: close_range(2) where the kernel has
/// it (5.9+), else one by one up to the descriptor limit.
///
/// # Safety
/// Only in a forked child that will exit without returning to Rust code.
unsafe fn close_all_but(keep: libc::c_int) {
    let keep = keep.max(0) as libc::c_uint;
    // SAFETY: close_range and close only close descriptors of this process.
    unsafe {
        let below = if keep > 0 {
            libc::syscall(
                libc::SYS_close_range,
                0 as libc::c_uint,
                keep - 1,
                0 as libc::c_uint,
            )
        } else {
            0
        };
        let above = libc::syscall(
            libc::SYS_close_range,
            keep + 1,
            libc::c_uint::MAX,
            0 as libc::c_uint,
        );
        if below != 0 || above != 0 {
            let max = libc::sysconf(libc::_SC_OPEN_MAX);
            let max = if max > 0 { max.min(1 << 20) } else { 1024 } as libc::c_int;
            for fd in 0..max {
                if fd as libc::c_uint != keep {
                    libc::close(fd);
                }
            }
        }
    }
}

/// Blocks signal `n` (any number, real-time ones too) on the calling thread.
#[cfg(test)]
pub(crate) fn block_raw_for_test(n: i32) {
    // SAFETY: a set we own, initialised by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, n);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// The calling thread's mask as /proc shows it: bit n-1 for signal n.
#[cfg(test)]
pub(crate) fn thread_mask_bits_for_test() -> u64 {
    // SAFETY: a NULL new set only reads the mask into a set we own.
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
        (1..=64)
            .filter(|n| libc::sigismember(&mask, *n) == 1)
            .fold(0u64, |bits, n| bits | 1u64 << (n - 1))
    }
}
