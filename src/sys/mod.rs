//! The crate's `unsafe` that is not the C boundary: small safe wrappers over
//! OS and CPU calls that no dependency wraps safely. Each exposes a safe
//! function; the policies that use them live in the pure core.
//!
//! - `signal.rs`   sigpending / sigtimedwait for SIGPIPE, the SIGCHLD
//!   disposition, bash's pre-exec status reporter
//! - `sse2.rs`     the SSE2 block scan of the JSON string escaper
//! - `prefetch.rs` a cache-line prefetch hint
//! - `scope.rs`    borrowing jobs on the pooled threads, waited for as
//!   `std::thread::scope` waits for its threads
//! - `text.rs`     a `str` cut between ASCII bytes with no out-of-line check
//! - `bytes.rs`    one byte found with the C library's `memchr` (no CPU
//!   feature probe on first use)
//! - `pidfd.rs`    a child's exit as a readable pidfd in the runtime's
//!   reactor
//! - `spawn.rs`    a process started with `posix_spawn` and an empty signal
//!   mask, for a thread that blocks signals (no fork of the host)

pub(crate) mod bytes;
pub(crate) mod pidfd;
pub(crate) mod prefetch;
pub(crate) mod scope;
pub(crate) mod signal;
pub(crate) mod spawn;
pub(crate) mod sse2;
pub(crate) mod text;
