//! The runtime's clock (SPEC §7D: every timer runs on an injectable clock):
//! wait timeouts, the shutdown bound of a graceful close and wall budgets
//! read it. [`SystemClock`] is real time; [`ManualClock`] moves only when
//! the host advances it, for tests and simulation.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// A listener told each time a manual clock moves.
pub type Listener = Box<dyn Fn() + Send + Sync>;

/// Milliseconds since the clock's own epoch.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> u64;
    /// `true` when time moves only by [`ManualClock::advance`]: a waiter
    /// then sleeps until told instead of for a real duration.
    fn is_manual(&self) -> bool;
    /// Registers a listener called after each move (manual clocks only).
    fn subscribe(&self, _listener: Listener) {}
}

/// Real time, counted from the clock's creation.
#[derive(Debug)]
pub struct SystemClock {
    start: Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock {
            start: Instant::now(),
        }
    }
}

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn is_manual(&self) -> bool {
        false
    }
}

/// A clock the host moves with [`ManualClock::advance`].
#[derive(Default)]
pub struct ManualClock {
    now: AtomicU64,
    listeners: Mutex<Vec<Listener>>,
}

impl std::fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManualClock")
            .field("now_ms", &self.now_ms())
            .finish()
    }
}

impl ManualClock {
    pub fn new() -> Self {
        ManualClock::default()
    }

    /// Moves the clock `ms` forward and tells every listener.
    pub fn advance(&self, ms: u64) {
        let _ = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_add(ms))
            });
        let listeners = self
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for l in listeners.iter() {
            l();
        }
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    fn is_manual(&self) -> bool {
        true
    }

    fn subscribe(&self, listener: Listener) {
        self.listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(listener);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn a_manual_clock_moves_only_when_advanced_and_tells_listeners() {
        let c = ManualClock::new();
        let told = Arc::new(AtomicUsize::new(0));
        let t = Arc::clone(&told);
        c.subscribe(Box::new(move || {
            t.fetch_add(1, Ordering::SeqCst);
        }));
        assert_eq!(c.now_ms(), 0);
        c.advance(250);
        c.advance(50);
        assert_eq!(c.now_ms(), 300);
        assert_eq!(told.load(Ordering::SeqCst), 2);
        assert!(c.is_manual());
    }
}
