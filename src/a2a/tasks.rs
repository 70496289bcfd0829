//! The served agent's tasks in flight: at most
//! [`SERVED_TASKS`](crate::limits::SERVED_TASKS) run at once, each on a
//! thread of the library's pool ([`crate::runtime::run_pooled`]: no thread
//! start per task); the next
//! [`SERVED_TASKS_QUEUED`](crate::limits::SERVED_TASKS_QUEUED) wait their
//! turn (still acknowledged `submitted`), and a send beyond those is refused
//! before anything is stored. A thread that finishes a task takes the next
//! one waiting, so no more than the first cap run tasks at once.
//!
//! Each task acknowledged and not yet ended has a [`CancelToken`] here,
//! which `tasks/cancel` / `CancelTask` triggers.

use crate::cancel::CancelToken;
use crate::limits::{SERVED_TASKS, SERVED_TASKS_QUEUED};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

type Job = Box<dyn FnOnce() + Send>;

/// Why a task was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Every slot and every place in the queue is taken.
    Busy,
    /// The system gave no thread.
    NoThread,
}

#[derive(Default)]
struct Pool {
    running: usize,
    queue: VecDeque<Job>,
    /// Set by [`Tasks::stop`]: nothing more is taken.
    stopped: bool,
}

/// The bounded runner of one agent's tasks, and their cancel tokens.
pub struct Tasks {
    caps: (usize, usize),
    pool: Mutex<Pool>,
    /// Told each time a thread lets go of its slot.
    idle: Condvar,
    live: Mutex<HashMap<String, CancelToken>>,
}

impl Default for Tasks {
    fn default() -> Self {
        Tasks::with_caps(SERVED_TASKS, SERVED_TASKS_QUEUED)
    }
}

impl Tasks {
    /// At most `running` tasks at once and `queued` waiting.
    pub fn with_caps(running: usize, queued: usize) -> Tasks {
        Tasks {
            caps: (running.max(1), queued),
            pool: Mutex::new(Pool::default()),
            idle: Condvar::new(),
            live: Mutex::new(HashMap::new()),
        }
    }

    fn pool(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The tokens of the tasks not yet ended (locked: a cancel and a task's
    /// end decide under it which of them wins).
    pub fn live(&self) -> MutexGuard<'_, HashMap<String, CancelToken>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether one more task would be taken now.
    pub fn has_room(&self) -> bool {
        let pool = self.pool();
        pool.running < self.caps.0 || pool.queue.len() < self.caps.1
    }

    /// Runs `job` now if a slot is free, else queues it; refuses it when
    /// the queue is full too.
    pub fn submit(self: &Arc<Self>, job: Job) -> Result<(), Refused> {
        let mut pool = self.pool();
        if pool.stopped {
            return Err(Refused::Busy);
        }
        if pool.running >= self.caps.0 {
            if pool.queue.len() >= self.caps.1 {
                return Err(Refused::Busy);
            }
            pool.queue.push_back(job);
            return Ok(());
        }
        pool.running += 1;
        drop(pool);
        let me = Arc::clone(self);
        let spawned =
            crate::runtime::run_pooled("toolnexus-a2a-task", Box::new(move || me.work(job)));
        if spawned.is_err() {
            self.pool().running -= 1;
            self.idle.notify_all();
            return Err(Refused::NoThread);
        }
        Ok(())
    }

    /// Runs `job`, then every job queued meanwhile, until none waits.
    fn work(&self, mut job: Job) {
        loop {
            // A job catches its own panics (fulfil does); this keeps the
            // count right even if one slips through.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            let mut pool = self.pool();
            match pool.queue.pop_front() {
                Some(next) => job = next,
                None => {
                    pool.running -= 1;
                    // Only `stop` waits for a slot to be let go, and only
                    // once it has set `stopped` (a notify is a system call
                    // even when nobody waits).
                    let told = pool.stopped;
                    drop(pool);
                    if told {
                        self.idle.notify_all();
                    }
                    return;
                }
            }
        }
    }

    /// Takes no more tasks, cancels every one not yet ended (those still
    /// queued then end at once, `canceled`), and waits until none runs or
    /// `until` passes; whether none runs.
    pub fn stop(&self, until: Instant) -> bool {
        self.pool().stopped = true;
        for token in self.live().values() {
            token.cancel();
        }
        let mut pool = self.pool();
        while pool.running > 0 {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            pool = match self.idle.wait_timeout(pool, left) {
                Ok((p, _)) => p,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        true
    }

    /// How many tasks run and how many wait.
    pub fn load(&self) -> (usize, usize) {
        let pool = self.pool();
        (pool.running, pool.queue.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn runs_at_most_the_cap_queues_the_rest_and_refuses_beyond() {
        let tasks = Arc::new(Tasks::with_caps(2, 3));
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let gate = Arc::new(Mutex::new(gate_rx));
        let (done_tx, done_rx) = mpsc::channel::<usize>();
        for i in 0..5 {
            let (gate, done) = (Arc::clone(&gate), done_tx.clone());
            let job: Job = Box::new(move || {
                let _ = gate.lock().map(|g| g.recv());
                let _ = done.send(i);
            });
            assert_eq!(tasks.submit(job), Ok(()), "task {i}");
        }
        assert_eq!(tasks.load(), (2, 3));
        assert!(!tasks.has_room());
        assert_eq!(tasks.submit(Box::new(|| {})), Err(Refused::Busy));
        for _ in 0..5 {
            let _ = gate_tx.send(());
        }
        let mut ran: Vec<usize> = (0..5)
            .map(|_| {
                done_rx
                    .recv_timeout(std::time::Duration::from_secs(30))
                    .expect("a task ran")
            })
            .collect();
        ran.sort_unstable();
        assert_eq!(ran, vec![0, 1, 2, 3, 4]);
        // The threads let go of their slots once nothing waits.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while tasks.load() != (0, 0) {
            assert!(std::time::Instant::now() < deadline, "{:?}", tasks.load());
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(tasks.has_room());
    }
}
