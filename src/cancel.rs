//! The cancel token: a flag the host triggers from any thread, which every
//! blocking or async wait in the crate watches (tool calls, MCP requests, the
//! provider exchange, the client loop).
//!
//! The token knows nothing of what it stops. Work blocked where no flag can
//! reach it (a read on a socket) registers an `OnCancel` hook while it
//! runs; cancelling runs every registered hook, which ends the blocked call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// A cancel flag the host can trigger from another thread. Cancelling aborts
/// an in-flight [`translate`](crate::translate::translate) promptly with the
/// `cancelled` error; a token cancelled before the call starts makes the call
/// fail at once.
///
/// An exchange blocked on a socket registers a hook here while it runs
/// (the provider wire registers its socket, which the hook shuts down);
/// cancelling runs every registered hook, which ends the blocked read or
/// write. A call waiting out a retry backoff waits on the token, and one
/// still connecting waits on its notification.
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<CancelInner>,
}

/// What a registered piece of blocked work does when its token is cancelled:
/// unblock itself at once (shut a socket down, say). Runs on the cancelling
/// thread, under the token's lock, so it must be quick and must not touch the
/// token.
pub(crate) trait OnCancel: Send + Sync {
    fn on_cancel(&self);
}

#[derive(Default)]
struct CancelInner {
    cancelled: AtomicBool,
    notify: Notify,
    /// The hooks of the work in flight under this token.
    hooks: Mutex<Vec<Arc<dyn OnCancel>>>,
    /// Signalled on cancel, for calls waiting out a backoff.
    woken: Condvar,
}

impl CancelToken {
    pub fn new() -> Self {
        CancelToken::default()
    }

    /// Triggers the token. Idempotent; safe from any thread.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
        let hooks = self.hooks();
        for hook in hooks.iter() {
            hook.on_cancel();
        }
        self.inner.woken.notify_all();
    }

    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    fn hooks(&self) -> std::sync::MutexGuard<'_, Vec<Arc<dyn OnCancel>>> {
        self.inner.hooks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers the hook of a piece of blocked work; `false` if the token is
    /// already cancelled (then the work must not start). Either this sees the
    /// flag or `cancel` sees the hook, whichever comes second.
    pub(crate) fn register<H: OnCancel + 'static>(&self, hook: &Arc<H>) -> bool {
        self.hooks().push(Arc::clone(hook) as Arc<dyn OnCancel>);
        !self.is_cancelled()
    }

    /// Removes a hook given to [`register`](Self::register) (the same `Arc`).
    pub(crate) fn deregister<H: OnCancel + 'static>(&self, hook: &Arc<H>) {
        let target = Arc::as_ptr(hook) as *const ();
        let mut hooks = self.hooks();
        if let Some(i) = hooks
            .iter()
            .position(|h| Arc::as_ptr(h) as *const () == target)
        {
            hooks.swap_remove(i);
        }
    }

    /// How many hooks are registered: a test's sign that blocked work has
    /// reached the point where a cancel reaches it.
    #[cfg(test)]
    pub(crate) fn registered(&self) -> usize {
        self.hooks().len()
    }

    /// Waits `pause`, or less if the token is cancelled meanwhile; `true` if
    /// it was.
    pub(crate) fn sleep(&self, pause: Duration) -> bool {
        let until = Instant::now() + pause;
        let mut hooks = self.hooks();
        while !self.is_cancelled() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            hooks = match self.inner.woken.wait_timeout(hooks, left) {
                Ok((guard, _)) => guard,
                Err(p) => p.into_inner().0,
            };
        }
        true
    }

    /// Resolves once the token is cancelled.
    pub(crate) async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is checked, so a cancel landing in
            // between is not missed.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}
