//! A child process's exit, read through the runtime's reactor: its pidfd
//! (Linux 5.3 and later) turns readable when the child exits.

use std::os::fd::OwnedFd;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// The pidfd of the child `pid`, registered with the current runtime's reactor
/// for readability; `None` where the kernel has no pidfd or it cannot be
/// registered. Must run inside the runtime.
pub(crate) fn exit_fd(pid: u32) -> Option<AsyncFd<OwnedFd>> {
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)?;
    let fd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::NONBLOCK).ok()?;
    // SAFETY: the AsyncFd owns the OwnedFd, which keeps the descriptor open
    // and returns that same descriptor from every `as_raw_fd` until the
    // AsyncFd (and the OwnedFd with it) is dropped.
    unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.ok()
}
