//! The two signal calls `nix` 0.29 has no safe wrapper for, wrapped here so
//! the rest of the crate stays free of `unsafe`: asking whether SIGPIPE is
//! pending on the calling thread (`sigpending`), and taking one pending
//! SIGPIPE without waiting (`sigtimedwait` with a zero timeout).
//!
//! The policy that uses them (which threads block SIGPIPE, and when a
//! pending one is taken) is in `crate::runtime`.

use nix::libc;

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
