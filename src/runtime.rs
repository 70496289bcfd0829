//! The one tokio runtime the library drives its network and process I/O on,
//! created on first use and shared by every toolkit and every thread.
//!
//! # SIGPIPE
//!
//! A write to a pipe or socket whose reading end is gone raises SIGPIPE in
//! the thread that wrote, and the default action ends the whole process. A
//! Rust program ignores SIGPIPE from `main`; a C program, or a Go program on
//! a thread Go did not start, does not — so one MCP server that closes its
//! stdin, or exits before `initialize` is written, would take the host with
//! it. The library therefore guarantees that no write it does raises SIGPIPE
//! in the host: the write fails with EPIPE instead and the call reports
//! `transport (... broken pipe)`. Signal dispositions are process-wide and
//! belong to the host, so the library never changes them; it only changes
//! the signal *mask* of threads while they run its code:
//!
//! - **Threads the library owns** (this runtime's workers and blocking pool,
//!   and any thread started from them, which inherits their mask) block
//!   SIGPIPE for their whole life, from `on_thread_start`. A blocked SIGPIPE
//!   is never delivered; one the kernel left pending on such a thread stays
//!   inert (the mask is never lifted) and goes away with the thread; the
//!   stdio transport takes it right after the EPIPE it came with anyway.
//!   A process started from such a thread would inherit the mask across
//!   exec, so MCP servers and bash commands are started with SIGPIPE
//!   unblocked on the starting thread for the length of the spawn
//!   (`spawn_with_sigpipe_unblocked`), which also lets std use
//!   `posix_spawn` rather than fork; a thread that blocks more (a host's)
//!   has the child clear its mask before exec instead (`spawn_child`).
//! - **Host threads** enter the runtime only through [`block_on`], which
//!   blocks SIGPIPE for exactly the duration of the call and restores the
//!   host's own mask on the way out (also on unwind). A SIGPIPE that became
//!   pending meanwhile was raised by our write (a thread-directed signal
//!   reaches only the thread that wrote) and is taken with a zero-timeout
//!   `sigtimedwait` before the mask is restored, so restoring it cannot
//!   deliver it. One that was already pending when the call began belongs to
//!   the host and is left alone.
//!
//! Sockets written outside the runtime (the translator's exchange on the
//! calling thread) go through `std::net::TcpStream::write`, which passes
//! `MSG_NOSIGNAL` on Linux; vectored socket writes (`writev`) do not, which
//! is why the runtime-side rule above is about threads and not about calls.

use crate::sys::signal as sig;
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use tokio::runtime::{Builder, Runtime};

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// Worker threads of the runtime when nobody asked for another number.
///
/// One: the workers only multiplex I/O and frame protocol messages. The
/// work a call does runs on the host's thread (`block_on`), the blocking
/// pool (tool executions, host callbacks) or the library's pooled threads
/// (agent turns, A2A tasks), never on a worker. A second worker bought no
/// throughput there and cost every process that starts the runtime a
/// thread, its malloc arena and their first-touch page faults: loop init
/// (a build with one stdio MCP server, `bench/c/bench_overhead.c`, 10
/// interleaved rounds) went from 1.54 to 1.33 ms, its CPU time from 1.13
/// to 0.89 ms, with the loop's per-run latency no worse (bench/README.md).
pub const DEFAULT_WORKER_THREADS: usize = 1;

/// The worker count [`get`] starts the runtime with (0: the default).
static WORKERS: AtomicUsize = AtomicUsize::new(0);

/// Sets how many worker threads the runtime gets, before its first use;
/// `false` (and no change) once it is running. With one worker every task
/// runs on that thread, so a message that passes through several tasks
/// (a served request, the proxied MCP call it makes, the answer) wakes one
/// thread per message; with two, tokio wakes the idle worker as well each
/// time the busy one picks up work. One is the default
/// ([`DEFAULT_WORKER_THREADS`]); a host that serves many connections at
/// once on a large machine may want more.
pub fn set_worker_threads(n: usize) -> bool {
    if RUNTIME.get().is_some() {
        return false;
    }
    WORKERS.store(n.max(1), Ordering::SeqCst);
    RUNTIME.get().is_none()
}

/// The worker count of the running runtime, or `None` before its first use.
pub fn running_worker_threads() -> Option<usize> {
    RUNTIME.get().map(|rt| rt.metrics().num_workers())
}

/// The name of the runtime's threads (workers and blocking pool).
pub const THREAD_NAME: &str = "toolnexus-io";

/// The shared multi-threaded runtime.
pub fn get() -> &'static Runtime {
    RUNTIME.get_or_init(|| {
        let workers = match WORKERS.load(Ordering::SeqCst) {
            0 => DEFAULT_WORKER_THREADS,
            n => n,
        };
        Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name(THREAD_NAME)
            .on_thread_start(block_sigpipe_for_good)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("toolnexus: cannot start the I/O runtime: {e}"))
    })
}

/// Runs `fut` to completion from a host thread, with SIGPIPE blocked on this
/// thread meanwhile (see the module docs). Must not be called from a thread
/// of the runtime itself; library code that is already async awaits instead.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    hand_over_held();
    let _guard = SigpipeGuard::enter();
    get().block_on(fut)
}

/// [`block_on`], also from a thread that is inside a tokio runtime (where
/// `block_on` would panic): [`wait_anywhere`], with a panic of the future
/// passed on to the caller. The MCP client's sync entry points and the ACP
/// session (`provider::acp`) wait through this.
pub fn block_on_anywhere<F>(fut: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    match wait_anywhere("toolnexus-wait", fut) {
        Ok(out) => out,
        Err(NotWaited::Panicked(panic)) => std::panic::resume_unwind(panic),
        Err(NotWaited::NoThread(e)) => panic!("toolnexus: cannot start a thread to wait on: {e}"),
    }
}

/// Why [`wait_anywhere`] has no output to give.
pub enum NotWaited {
    /// The waiting thread could not be started.
    NoThread(std::io::Error),
    /// The future panicked on the waiting thread.
    Panicked(Box<dyn std::any::Any + Send>),
}

/// Runs `fut` to completion from any thread, the one rule for waiting on
/// this runtime:
/// - outside any tokio runtime: [`block_on`] in place;
/// - on one of this runtime's workers: the worker's duties are handed over
///   first (`block_in_place`) and the future runs on this thread. A worker
///   that only waited would stop driving the very I/O and timers the
///   future waits on; with one worker (the default) the wait would never
///   end (a toolkit whose MCP sessions were dropped on a worker closed them
///   this way and hung);
/// - inside some other runtime, which cannot block in place: on a
///   short-lived thread named `thread_name` while the caller waits.
pub fn wait_anywhere<F>(thread_name: &str, fut: F) -> Result<F::Output, NotWaited>
where
    F: Future + Send,
    F::Output: Send,
{
    let Ok(current) = tokio::runtime::Handle::try_current() else {
        return Ok(block_on(fut));
    };
    if current.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
        && on_a_runtime_thread()
    {
        return Ok(tokio::task::block_in_place(|| block_on(fut)));
    }
    std::thread::scope(|s| {
        match std::thread::Builder::new()
            .name(thread_name.into())
            .spawn_scoped(s, || block_on(fut))
        {
            Ok(waiting) => waiting.join().map_err(NotWaited::Panicked),
            Err(e) => Err(NotWaited::NoThread(e)),
        }
    })
}

/// Whether the calling thread is one of the runtime's (SIGPIPE blocked for
/// good). Processes started from one unblock it in the child.
pub fn on_a_runtime_thread() -> bool {
    std::thread::current().name() == Some(THREAD_NAME)
}

fn only_sigpipe() -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGPIPE);
    set
}

fn block_sigpipe_for_good() {
    // Cannot fail for a valid set; should it, writes on this thread keep the
    // host's disposition, which is the state before this rule existed.
    let _ = only_sigpipe().thread_block();
}

/// SIGPIPE blocked on this thread from `enter` until drop.
struct SigpipeGuard {
    /// The thread's mask before, to restore; None when blocking failed.
    old: Option<SigSet>,
    /// A SIGPIPE the host already had pending: not ours to take.
    was_pending: bool,
}

impl SigpipeGuard {
    fn enter() -> Self {
        // Pending before blocking can only be a signal the host itself keeps
        // blocked (an unblocked one would have been delivered).
        let was_pending = sig::sigpipe_pending();
        let old = only_sigpipe().thread_swap_mask(SigmaskHow::SIG_BLOCK).ok();
        SigpipeGuard { old, was_pending }
    }
}

impl Drop for SigpipeGuard {
    fn drop(&mut self) {
        let Some(old) = self.old.take() else {
            return;
        };
        if !self.was_pending && sig::sigpipe_pending() {
            sig::take_pending_sigpipe();
        }
        let _ = nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    }
}

/// A command the library starts a process with: std's (bash) or tokio's
/// (MCP servers, ACP agents).
pub(crate) trait Spawn {
    /// What a successful start returns.
    type Child;
    /// The std command underneath, for the pre-exec step.
    fn std_command(&mut self) -> &mut std::process::Command;
    /// Starts the process.
    fn start(&mut self) -> std::io::Result<Self::Child>;
}

impl Spawn for std::process::Command {
    type Child = std::process::Child;
    fn std_command(&mut self) -> &mut std::process::Command {
        self
    }
    fn start(&mut self) -> std::io::Result<Self::Child> {
        self.spawn()
    }
}

impl Spawn for tokio::process::Command {
    type Child = tokio::process::Child;
    fn std_command(&mut self) -> &mut std::process::Command {
        self.as_std_mut()
    }
    fn start(&mut self) -> std::io::Result<Self::Child> {
        self.spawn()
    }
}

/// Starts `cmd`'s process with no signal blocked, whatever the calling
/// thread blocks. A child inherits its parent thread's signal mask across
/// exec, and std does not reset it: an MCP server started from a host
/// thread that blocks SIGTERM (a host that takes its signals on one thread
/// blocks them on every other) ignored the SIGTERM of a close and lasted
/// until the SIGKILL. Go's and libuv's process starts clear the mask the
/// same way. Where the thread blocks only SIGPIPE (the runtime's threads)
/// or nothing, the mask is cleared without a pre-exec step
/// ([`spawn_with_sigpipe_unblocked`]), so std keeps `posix_spawn`; anywhere
/// else a pre-exec step clears it in the child (a fork), and the host's
/// mask is never changed, not even for a moment: a process-directed signal
/// the host keeps for another thread could otherwise land on this one.
/// Stdio MCP servers and bash commands started from such a thread do not
/// come here: `sys::spawn` starts them with `posix_spawn`, which clears the
/// mask in the child without forking the host.
pub(crate) fn spawn_child<C: Spawn>(cmd: &mut C) -> std::io::Result<C::Child> {
    if sig::blocks_more_than_sigpipe() {
        sig::clear_mask_in_child(cmd.std_command());
        return cmd.start();
    }
    spawn_with_sigpipe_unblocked(|| cmd.start())
}

/// Runs `spawn` (a `Command::spawn`) with SIGPIPE unblocked on the calling
/// thread when it was blocked there (a runtime thread), and blocked again
/// afterwards, also on unwind. A child inherits its parent thread's signal
/// mask across exec, so the command starts with SIGPIPE unblocked without a
/// pre-exec hook in the child; and without a hook, std starts it with
/// `posix_spawn` (a vfork: this process's page tables are not copied, its
/// pages are not made copy-on-write under the runtime's other threads)
/// instead of fork + exec. A SIGPIPE already pending on this thread was
/// raised by one of our writes (SIGPIPE is blocked here): it is taken
/// first, so unblocking cannot deliver it.
fn spawn_with_sigpipe_unblocked<R>(spawn: impl FnOnce() -> R) -> R {
    let blocked = SigSet::thread_get_mask().is_ok_and(|m| m.contains(Signal::SIGPIPE));
    if !blocked {
        return spawn();
    }
    take_sigpipe_after_epipe();
    if only_sigpipe().thread_unblock().is_err() {
        return spawn();
    }
    struct Reblock;
    impl Drop for Reblock {
        fn drop(&mut self) {
            block_sigpipe_for_good();
        }
    }
    let _reblock = Reblock;
    spawn()
}

/// Takes a SIGPIPE left pending on the calling thread, for code on a runtime
/// thread that just saw a write fail with EPIPE (SIGPIPE is blocked there).
pub(crate) fn take_sigpipe_after_epipe() {
    if sig::sigpipe_pending() {
        sig::take_pending_sigpipe();
    }
}

/// Writes as much of `buf` as `w` takes at once, without waiting: the
/// bytes written (0 when it would block). A transport's `send` calls this
/// before it hands rmcp its future, so a message leaves while the caller is
/// still running instead of after rmcp has scheduled that future as a task
/// of its own; what is left over (a full pipe) the future writes.
pub(crate) fn write_now<W>(w: &mut W, buf: &[u8]) -> std::io::Result<usize>
where
    W: tokio::io::AsyncWrite + Unpin,
{
    use std::task::{Context, Poll, Waker};
    let mut cx = Context::from_waker(Waker::noop());
    let mut done = 0;
    while done < buf.len() {
        match std::pin::Pin::new(&mut *w).poll_write(&mut cx, &buf[done..]) {
            Poll::Ready(Ok(0)) => return Err(std::io::ErrorKind::WriteZero.into()),
            Poll::Ready(Ok(n)) => done += n,
            Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Poll::Ready(Err(e)) => return Err(e),
            Poll::Pending => break,
        }
    }
    Ok(done)
}

/// A job for [`run_pooled`].
pub type PooledJob = Box<dyn FnOnce() + Send + 'static>;

/// One pooled thread waiting for a job: where its next job is put, and the
/// thread to unpark once it is there.
///
/// The hand-over is a slot and `unpark` (a futex wake only when the thread
/// is asleep), not a channel: with std's channel the sender held the
/// channel's own lock while it woke the thread, and a thread just about to
/// wait then slept on that lock and was woken a second time (0.87 extra
/// context switches per agent tree, `bench/README.md`).
struct Waiting {
    job: JobSlot,
    thread: std::thread::Thread,
}

/// A job waiting to be taken, by whichever thread comes first.
struct JobSlot(Mutex<Option<PooledJob>>);

impl JobSlot {
    fn new(job: Option<PooledJob>) -> JobSlot {
        JobSlot(Mutex::new(job))
    }

    fn lock(&self) -> MutexGuard<'_, Option<PooledJob>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn put(&self, job: PooledJob) {
        *self.lock() = Some(job);
    }

    fn take(&self) -> Option<PooledJob> {
        self.lock().take()
    }

    fn is_full(&self) -> bool {
        self.lock().is_some()
    }
}

/// The pooled threads waiting for a job; [`run_pooled`] hands the next job
/// to the one pushed last.
static IDLE: Mutex<Vec<Arc<Waiting>>> = Mutex::new(Vec::new());

fn idle_threads() -> MutexGuard<'static, Vec<Arc<Waiting>>> {
    IDLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `job` on a thread of the library's own (SIGPIPE blocked, as every
/// thread the library owns): one that finished an earlier job and waits
/// for the next, or a new one (named `name`) when none waits. A thread
/// waits [`POOLED_THREAD_IDLE`](crate::limits::POOLED_THREAD_IDLE) for its
/// next job and then ends; at most
/// [`POOLED_THREADS_IDLE`](crate::limits::POOLED_THREADS_IDLE) wait at
/// once. What a job needs it owns, so a thread waiting holds nothing of
/// the last one. A panic in a job ends the job only. The agent runtime's
/// turns run here: a thread start per turn was most of a turn's cost.
// Never inlined, here and in `pooled_worker`: valgrind.supp names the
// pool's threads, still waiting at a host's exit, by these two frames.
#[inline(never)]
pub fn run_pooled(name: &str, job: PooledJob) -> std::io::Result<()> {
    // Popped under the lock: no other job can be put in its slot, and the
    // thread, which takes itself off the list under the same lock before it
    // gives up waiting, goes on waiting for this one.
    let waiting = idle_threads().pop();
    if let Some(w) = waiting {
        w.job.put(job);
        w.thread.unpark();
        return Ok(());
    }
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || pooled_worker(job))
        .map(drop)
}

/// A job for [`run_pooled_later`], until a thread hands it to the pool or
/// finds it no longer wanted.
struct Delayed {
    job: JobSlot,
    due: std::time::Instant,
    name: &'static str,
    wanted: Box<dyn Fn() -> bool + Send + Sync>,
}

impl Delayed {
    fn pending(&self) -> bool {
        self.job.is_full() && (self.wanted)()
    }

    /// Hands the job to the pool if nothing did yet and it is still
    /// wanted; drops it otherwise.
    fn hand_over(&self) {
        let job = self.job.take();
        if let Some(job) = job.filter(|_| (self.wanted)()) {
            let _ = run_pooled(self.name, job);
        }
    }
}

/// The delayed jobs waiting for their moment, and whether a thread watches
/// them (`watch_delayed`) and when a job was last added.
struct Watch {
    delayed: Vec<Arc<Delayed>>,
    watched: bool,
    last: Option<std::time::Instant>,
}

static WATCH: Mutex<Watch> = Mutex::new(Watch {
    delayed: Vec::new(),
    watched: false,
    last: None,
});

fn watch() -> MutexGuard<'static, Watch> {
    WATCH.lock().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    /// The delayed jobs this thread handed over and may still be waiting
    /// for: [`block_on`] hands them to the pool at once, since a thread
    /// that waits on I/O should not hold its helpers back meanwhile.
    static HELD: std::cell::RefCell<Vec<Arc<Delayed>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Like [`run_pooled`], but only once
/// [`HELPER_DELAY`](crate::limits::HELPER_DELAY) has passed, and only if
/// `wanted()` still holds then; sooner when this thread enters
/// [`block_on`] meanwhile. Work that ends before then costs no thread a
/// wake-up. Whoever gives up on the job makes `wanted()` false; the job is
/// then dropped unrun.
///
/// One pooled thread watches the delayed jobs while there are any,
/// sleeping until the next is due, and goes on looking every
/// `HELPER_DELAY` for [`HELPER_WATCH_LINGER`](crate::limits::HELPER_WATCH_LINGER)
/// after the last was added, so jobs that follow each other closely wake
/// nobody; then it ends, and the next job starts it again.
pub(crate) fn run_pooled_later(
    name: &'static str,
    job: PooledJob,
    wanted: impl Fn() -> bool + Send + Sync + 'static,
) {
    let now = std::time::Instant::now();
    let delayed = Arc::new(Delayed {
        job: JobSlot::new(Some(job)),
        due: now + crate::limits::HELPER_DELAY,
        name,
        wanted: Box::new(wanted),
    });
    let _ = HELD.try_with(|held| {
        let mut held = held.borrow_mut();
        held.retain(|d| d.pending());
        held.push(Arc::clone(&delayed));
    });
    let start = {
        let mut w = watch();
        w.delayed.push(Arc::clone(&delayed));
        w.last = Some(now);
        !std::mem::replace(&mut w.watched, true)
    };
    if start && run_pooled("tn-watch", Box::new(watch_delayed)).is_err() {
        // No thread to watch: nothing would hand it over later.
        watch().watched = false;
        delayed.hand_over();
    }
}

/// The delayed jobs this thread handed over, handed to the pool now.
fn hand_over_held() {
    let held = HELD
        .try_with(|held| std::mem::take(&mut *held.borrow_mut()))
        .unwrap_or_default();
    for d in held {
        d.hand_over();
    }
}

/// The watching thread of [`run_pooled_later`].
fn watch_delayed() {
    let mut due = Vec::new();
    loop {
        let sleep = {
            let mut w = watch();
            let now = std::time::Instant::now();
            let mut next: Option<std::time::Instant> = None;
            w.delayed.retain(|d| {
                if !d.pending() {
                    return false;
                }
                if d.due <= now {
                    due.push(Arc::clone(d));
                    return false;
                }
                next = Some(next.map_or(d.due, |t| t.min(d.due)));
                true
            });
            match next {
                Some(at) => Some(at - now),
                None if w
                    .last
                    .is_some_and(|l| now - l < crate::limits::HELPER_WATCH_LINGER) =>
                {
                    Some(crate::limits::HELPER_DELAY)
                }
                None => {
                    w.watched = false;
                    None
                }
            }
        };
        for d in due.drain(..) {
            d.hand_over();
        }
        match sleep {
            Some(d) => std::thread::sleep(d),
            None => return,
        }
    }
}

/// Runs `here` on this thread with a scope whose jobs run on the pooled
/// threads ([`run_pooled`], named `name` when one is started), and returns
/// once every job a thread started has ended, so the jobs may borrow from
/// the caller, as with `std::thread::scope` but without a thread start per
/// job. A job no thread has started by the time `here` ends is dropped
/// unrun, as is one whose thread cannot be started: jobs handed over here
/// must be helpers of work `here` also does itself (see
/// [`crate::sys::scope`]). A job handed over with `spawn_later` goes to
/// the pool through [`run_pooled_later`]. A panic in a job ends that job
/// only.
pub(crate) fn run_scoped<'env, R>(
    name: &'static str,
    here: impl for<'scope> FnOnce(&'scope crate::sys::scope::Scope<'scope, 'env>) -> R,
) -> R {
    let spawn = move |job: crate::sys::scope::StaticJob,
                      later: Option<crate::sys::scope::Pending>| match later {
        None => {
            let _ = run_pooled(name, job);
        }
        Some(pending) => run_pooled_later(name, job, move || pending.get()),
    };
    crate::sys::scope::scoped(spawn, here)
}

/// How many of the pool's threads wait for a job now.
pub fn pooled_threads_waiting() -> usize {
    idle_threads().len()
}

#[inline(never)]
fn pooled_worker(first: PooledJob) {
    block_sigpipe_for_good();
    let me = Arc::new(Waiting {
        job: JobSlot::new(None),
        thread: std::thread::current(),
    });
    let mut job = first;
    loop {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        {
            let mut idle = idle_threads();
            if idle.len() >= crate::limits::POOLED_THREADS_IDLE {
                return;
            }
            idle.push(Arc::clone(&me));
        }
        let until = std::time::Instant::now() + crate::limits::POOLED_THREAD_IDLE;
        job = loop {
            // `park` may return with no job (a spurious wake-up, or the
            // unpark of a job already taken): the slot is what counts.
            if let Some(next) = me.job.take() {
                break next;
            }
            let left = until.saturating_duration_since(std::time::Instant::now());
            if !left.is_zero() {
                std::thread::park_timeout(left);
                continue;
            }
            let mut idle = idle_threads();
            if let Some(at) = idle.iter().position(|w| Arc::ptr_eq(w, &me)) {
                idle.swap_remove(at);
                return;
            }
            drop(idle);
            // Taken off the list just as the wait ended: its job is on the
            // way, and its `unpark` ends this wait.
            std::thread::park();
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The signal mask a child reports for itself (the SigBlk line of its
    /// /proc status), started from the calling thread through
    /// [`spawn_child`]. `grep` itself, not through a shell: dash clears its
    /// own mask as it starts and would hide what it inherited.
    fn child_mask() -> u64 {
        let mut cmd = std::process::Command::new("grep");
        cmd.args(["^SigBlk:", "/proc/self/status"])
            .stdout(std::process::Stdio::piped());
        let child = spawn_child(&mut cmd).expect("grep starts");
        let out = child.wait_with_output().expect("grep ends");
        let text = String::from_utf8(out.stdout).expect("utf-8");
        let hex = text.trim().trim_start_matches("SigBlk:").trim();
        u64::from_str_radix(hex, 16).expect("a hex mask")
    }

    /// A host thread that blocks signals it takes on another thread (here
    /// SIGTERM, SIGUSR1 and a real-time signal besides SIGPIPE) starts
    /// children that block none of them, and keeps its own mask.
    #[test]
    fn a_child_started_from_a_thread_that_blocks_signals_inherits_none() {
        std::thread::spawn(|| {
            let rt = nix::libc::SIGRTMIN() + 2;
            let mut set = SigSet::empty();
            set.add(Signal::SIGTERM);
            set.add(Signal::SIGUSR1);
            set.add(Signal::SIGPIPE);
            set.thread_block().expect("block");
            sig::block_raw_for_test(rt);
            let before = sig::thread_mask_bits_for_test();
            assert_eq!(child_mask(), 0, "the child blocks nothing");
            assert_eq!(
                sig::thread_mask_bits_for_test(),
                before,
                "the thread's own mask is unchanged"
            );
            assert_ne!(before & (1u64 << (rt - 1)), 0);
        })
        .join()
        .expect("the thread ends");
    }

    #[test]
    fn a_child_started_from_a_thread_that_blocks_sigpipe_does_not_inherit_it() {
        std::thread::spawn(|| {
            block_sigpipe_for_good();
            let sigpipe_bit = 1u64 << (libc_sigpipe() - 1);
            assert_eq!(
                child_mask() & sigpipe_bit,
                0,
                "the child starts with SIGPIPE unblocked"
            );
            let mask = SigSet::thread_get_mask().expect("the thread's mask");
            assert!(
                mask.contains(Signal::SIGPIPE),
                "the thread blocks SIGPIPE again afterwards"
            );
        })
        .join()
        .expect("the thread ends");
    }

    #[test]
    fn a_thread_that_does_not_block_sigpipe_is_left_as_it_is() {
        std::thread::spawn(|| {
            let _ = only_sigpipe().thread_unblock();
            assert_eq!(child_mask() & (1u64 << (libc_sigpipe() - 1)), 0);
            let mask = SigSet::thread_get_mask().expect("the thread's mask");
            assert!(!mask.contains(Signal::SIGPIPE));
        })
        .join()
        .expect("the thread ends");
    }

    fn libc_sigpipe() -> u32 {
        Signal::SIGPIPE as i32 as u32
    }

    /// A wait from one of the runtime's workers (a toolkit's MCP sessions
    /// closed when its last handle is dropped inside a task) must not stop
    /// that worker driving the timers and I/O the wait is for: with one
    /// worker this hung for good before the worker handed its duties over.
    #[test]
    fn a_wait_on_a_worker_thread_keeps_the_runtime_driving_its_timers() {
        let (tx, rx) = std::sync::mpsc::channel();
        get().spawn(async move {
            assert!(on_a_runtime_thread());
            block_on_anywhere(tokio::time::sleep(std::time::Duration::from_millis(5)));
            let _ = tx.send(());
        });
        rx.recv_timeout(std::time::Duration::from_secs(20))
            .expect("the wait on the worker ended");
    }

    /// Counts its own drop: whether a job was dropped, run or not.
    struct Dropped(Arc<AtomicUsize>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn until(what: &str, done: impl Fn() -> bool) {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !done() {
            assert!(std::time::Instant::now() < end, "{what} within 20 s");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn a_delayed_job_runs_on_a_pooled_thread_no_sooner_than_its_delay() {
        let (tx, rx) = std::sync::mpsc::channel();
        let handed = std::time::Instant::now();
        run_pooled_later(
            "tn-test",
            Box::new(move || {
                let _ = tx.send((std::time::Instant::now(), std::thread::current().id()));
            }),
            || true,
        );
        let (ran, on) = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the delayed job ran");
        assert_ne!(on, std::thread::current().id());
        assert!(
            ran - handed >= crate::limits::HELPER_DELAY,
            "ran {:?} after it was handed over",
            ran - handed
        );
    }

    #[test]
    fn a_delayed_job_no_longer_wanted_is_dropped_unrun() {
        let ran = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let (r, d) = (Arc::clone(&ran), Dropped(Arc::clone(&dropped)));
        // Handed over from a thread of its own, which ends: only the
        // watching thread can hand it over or drop it.
        std::thread::spawn(move || {
            let job = Box::new(move || {
                let _d = d;
                r.fetch_add(1, Ordering::SeqCst);
            });
            run_pooled_later("tn-test", job, || false);
        })
        .join()
        .expect("thread");
        until("the job dropped", || dropped.load(Ordering::SeqCst) == 1);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_thread_that_blocks_on_io_hands_its_delayed_jobs_over_at_once() {
        // Not wanted: handing it over drops it, there and then, so the
        // drop shows that `block_on` handed it over (the watching thread
        // lets go of its own reference only).
        let dropped = Arc::new(AtomicUsize::new(0));
        let d = Dropped(Arc::clone(&dropped));
        run_pooled_later("tn-test", Box::new(move || drop(d)), || false);
        assert_eq!(dropped.load(Ordering::SeqCst), 0, "held until then");
        block_on(async {});
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        assert!(HELD.with(|held| held.borrow().is_empty()));
    }
}
