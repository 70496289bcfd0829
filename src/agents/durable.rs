//! The runtime's records in a store the host chose (the agents config's
//! `"store"`: any selector of [`crate::store`]): each handle's transcript as
//! a `conversation` record under the handle's id, and each suspended
//! handle's checkpoint (the turn input it replays, its pending Request, its
//! turns so far) as a `checkpoint` record, deleted when the suspension ends
//! (resumed, interrupted or closed). While any handle is suspended, one
//! more `checkpoint` record, under the root's id ([`TREE`]), names the
//! whole suspended tree ([`SavedTree`]): what a runtime started later on
//! the same store rebuilds, so that its `resume` goes on where this one
//! stopped. It is one record, written whole, so a process that dies
//! between two writes leaves either the old tree or the new one; during a
//! resume nothing is written ([`Durable::hold`]) until the resume ends, and
//! then the tree first, so that at every write the store names a tree a
//! restarted runtime carries on without a second spawn.
//!
//! The runtime keeps working from its own memory; the store is written
//! through by one writer thread, in the order the runtime asked, never
//! under the runtime's lock (a host store's callback may call back into the
//! library) and never on a turn's thread (a slow database holds up no
//! turn). A record written again before the writer reached it is written
//! once, with its latest value, so the queue holds at most one entry per
//! record. A read the runtime's memory cannot answer (a handle's first turn
//! in a runtime that starts on a store another one filled) sees what is
//! queued first, then the store. Dropping the runtime waits for what is
//! queued, up to [`crate::limits::AGENT_STORE_FLUSH`]. A write that fails
//! is a line of the runtime's trace (`<id>: conversation not saved: …`);
//! the turn it came from keeps its result.

use crate::store::{Kind, Store};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

type Key = (Kind, String);

/// The id of the `checkpoint` record that names the suspended tree: the
/// root's (the root never suspends, so no handle's record has it).
pub(crate) const TREE: &str = "root";

/// One handle of a suspended tree: its own `checkpoint` record, and its
/// entry in the tree's. Everything a later runtime needs to carry it on
/// under the same id: where it hangs, which agent it is, its counts and
/// pools, and, when it is suspended itself, the turn input it replays and
/// the Request it waits on (an ancestor that is not suspended has neither).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SavedHandle {
    pub id: String,
    pub agent: String,
    pub parent: String,
    /// `agent:prompt` of the `task` call that spawned it (the key a
    /// replayed call reattaches by).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_key: Option<String>,
    /// Children ever spawned under it (the `.n` of the next one's id).
    pub spawned: u64,
    pub turns: u64,
    pub tokens: u64,
    pub own_tokens: u64,
    pub tool_calls: u64,
    /// Its effective budget, as `{maxTurns?, …}`.
    pub budget: Value,
    pub pool_tokens: Option<i64>,
    pub pool_tool_calls: Option<i64>,
    pub pool_children: Option<u64>,
    /// What was left of its wall budget (the clock is the process's own,
    /// so what carries over is the time left).
    pub wall_left_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Value>,
}

/// The record [`TREE`]: every suspended handle and each of its ancestors
/// below the root, parents first, and the root's spawn counter (so a later
/// runtime never hands out an id the tree holds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SavedTree {
    pub id: String,
    pub spawned: u64,
    pub handles: Vec<SavedHandle>,
}

/// Told of a write that failed: the record's kind, its id, the store's
/// sentence.
pub(crate) type OnFailure = Box<dyn Fn(Kind, &str, &str) + Send + Sync>;

#[derive(Default)]
struct Queue {
    order: VecDeque<Key>,
    /// The value each queued record is to have; `None` deletes it.
    latest: HashMap<Key, Option<Value>>,
    /// The record the writer is writing now, with its value.
    writing: Option<(Key, Option<Value>)>,
    closing: bool,
    /// Resumes in progress: while any is, the writer writes nothing (see
    /// [`Durable::hold`]).
    holds: usize,
    /// A test's stand-in for the process dying (see [`Durable::crash_when`]).
    #[cfg(test)]
    crash: Option<Crash>,
    #[cfg(test)]
    dead: bool,
}

/// Told of each write the writer is about to do (kind, id, the value or
/// `None` for a removal): `true` when the process is to die right there,
/// so that this write and every later one never reach the store.
#[cfg(test)]
pub(crate) type Crash = Box<dyn FnMut(Kind, &str, Option<&Value>) -> bool + Send>;

struct Shared {
    store: Arc<dyn Store>,
    q: Mutex<Queue>,
    cv: Condvar,
    on_failure: OnFailure,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.q.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The runtime's store and its writer.
pub(crate) struct Durable {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Durable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Durable")
            .field("store", &self.shared.store.selector())
            .finish()
    }
}

impl Durable {
    /// Starts the writer of `store`.
    pub fn start(store: Arc<dyn Store>, on_failure: OnFailure) -> Result<Durable, String> {
        let shared = Arc::new(Shared {
            store,
            q: Mutex::new(Queue::default()),
            cv: Condvar::new(),
            on_failure,
        });
        let me = Arc::clone(&shared);
        let writer = std::thread::Builder::new()
            .name("tn-agents-store".into())
            .spawn(move || write_all(&me))
            .map_err(|e| format!("cannot start the agents store's writer thread: {e}"))?;
        Ok(Durable {
            shared,
            writer: Some(writer),
        })
    }

    /// The selector of the store.
    pub fn selector(&self) -> String {
        self.shared.store.selector()
    }

    /// Queues `record` as the value of (`kind`, `id`).
    pub fn save(&self, kind: Kind, id: &str, record: Value) {
        self.put(kind, id, Some(record));
    }

    /// Queues the removal of (`kind`, `id`).
    pub fn delete(&self, kind: Kind, id: &str) {
        self.put(kind, id, None);
    }

    fn put(&self, kind: Kind, id: &str, value: Option<Value>) {
        let key = (kind, id.to_string());
        let mut q = self.shared.lock();
        if q.latest.insert(key.clone(), value).is_none() {
            q.order.push_back(key);
        }
        self.shared.cv.notify_all();
        // A test that crashes the process at a chosen write sees each write
        // land before the next is asked (no two merged into one), so every
        // window between two writes is one it can pick.
        #[cfg(test)]
        if q.crash.is_some() {
            while q.holds == 0 && (!q.order.is_empty() || q.writing.is_some()) {
                q = self
                    .shared
                    .cv
                    .wait(q)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
    }

    /// Holds every write back until [`Durable::release`]: what a resume
    /// does, so that the store keeps the suspended tree as it was before
    /// the resume until the resume's outcome is known (a process that dies
    /// during it leaves the store as if the resume never started).
    pub fn hold(&self) {
        self.shared.lock().holds += 1;
    }

    /// Ends a [`Durable::hold`]; with no other hold left, the writer goes
    /// on, writing the record `first` (when queued) before the others.
    pub fn release(&self, first: (Kind, &str)) {
        let mut q = self.shared.lock();
        q.holds = q.holds.saturating_sub(1);
        if q.holds == 0 {
            let key = (first.0, first.1.to_string());
            if let Some(at) = q.order.iter().position(|k| *k == key) {
                q.order.remove(at);
                q.order.push_front(key);
            }
        }
        self.shared.cv.notify_all();
    }

    /// From the write `crash` says `true` of on, nothing reaches the store
    /// (a process that died there); every write lands before the next is
    /// queued, so the window is exact.
    #[cfg(test)]
    pub fn crash_when(&self, crash: Crash) {
        self.shared.lock().crash = Some(crash);
    }

    /// The record (`kind`, `id`) as the runtime last asked it to be: what
    /// is queued, else what is being written, else what the store holds.
    pub fn load(&self, kind: Kind, id: &str) -> Result<Option<Value>, String> {
        let key = (kind, id.to_string());
        {
            let q = self.shared.lock();
            if let Some(v) = q.latest.get(&key) {
                return Ok(v.clone());
            }
            if let Some((k, v)) = &q.writing {
                if *k == key {
                    return Ok(v.clone());
                }
            }
        }
        self.shared.store.get(kind, id)
    }

    /// Waits until every queued write is done, at most `within`; `true`
    /// when they are.
    pub fn flush(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        let mut q = self.shared.lock();
        while !q.order.is_empty() || q.writing.is_some() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            q = self
                .shared
                .cv
                .wait_timeout(q, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }
}

impl Drop for Durable {
    fn drop(&mut self) {
        // The writer itself may hold the runtime's last reference (telling
        // it of a failed write): it goes on with the queue and ends, and
        // never waits for itself.
        let on_writer = self
            .writer
            .as_ref()
            .is_some_and(|w| w.thread().id() == std::thread::current().id());
        let done = !on_writer && self.flush(crate::limits::AGENT_STORE_FLUSH);
        self.shared.lock().closing = true;
        self.shared.cv.notify_all();
        if let Some(w) = self.writer.take() {
            // A store that does not answer keeps its writer; the writer
            // ends when it does (it holds nothing of the runtime's).
            if done {
                let _ = w.join();
            }
        }
    }
}

fn write_all(shared: &Shared) {
    loop {
        let (key, value) = {
            let mut q = shared.lock();
            loop {
                if q.holds > 0 && !q.closing {
                    q = shared.cv.wait(q).unwrap_or_else(PoisonError::into_inner);
                    continue;
                }
                if let Some(key) = q.order.pop_front() {
                    let value = q.latest.remove(&key).unwrap_or(None);
                    q.writing = Some((key.clone(), value.clone()));
                    break (key, value);
                }
                if q.closing {
                    return;
                }
                q = shared.cv.wait(q).unwrap_or_else(PoisonError::into_inner);
            }
        };
        let (kind, id) = (key.0, key.1.as_str());
        #[cfg(test)]
        {
            let mut q = shared.lock();
            let q = &mut *q;
            if let Some(crash) = q.crash.as_mut() {
                q.dead = q.dead || crash(kind, id, value.as_ref());
            }
            if q.dead {
                q.writing = None;
                shared.cv.notify_all();
                continue;
            }
        }
        let written = match &value {
            Some(v) => shared.store.save(kind, id, v),
            None => shared.store.delete(kind, id).map(|_| ()),
        };
        if let Err(e) = written {
            (shared.on_failure)(kind, id, &e);
        }
        shared.lock().writing = None;
        shared.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;
    use serde_json::json;

    /// A store that fails every write and counts them.
    #[derive(Default)]
    struct Failing {
        writes: Mutex<usize>,
    }

    impl Store for Failing {
        fn get(&self, _: Kind, _: &str) -> Result<Option<Value>, String> {
            Ok(None)
        }
        fn save(&self, _: Kind, _: &str, _: &Value) -> Result<(), String> {
            *self.writes.lock().expect("lock") += 1;
            Err("disk full".into())
        }
        fn delete(&self, _: Kind, _: &str) -> Result<bool, String> {
            Err("disk full".into())
        }
        fn selector(&self) -> String {
            "failing".into()
        }
    }

    #[test]
    fn writes_land_in_order_and_a_later_value_wins() {
        let store = Arc::new(MemoryStore::default());
        let d = Durable::start(store.clone(), Box::new(|_, _, _| {})).expect("start");
        for n in 0..100 {
            d.save(Kind::Conversation, "root/a.1", json!([n]));
        }
        d.save(Kind::Checkpoint, "root/a.1", json!({"input": "x"}));
        d.delete(Kind::Checkpoint, "root/a.1");
        assert_eq!(
            d.load(Kind::Conversation, "root/a.1").expect("load"),
            Some(json!([99]))
        );
        assert!(d.flush(Duration::from_secs(20)));
        assert_eq!(
            store.get(Kind::Conversation, "root/a.1").expect("get"),
            Some(json!([99]))
        );
        assert_eq!(store.get(Kind::Checkpoint, "root/a.1").expect("get"), None);
    }

    #[test]
    fn a_failed_write_is_reported_with_its_record() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        let d = Durable::start(
            Arc::new(Failing::default()),
            Box::new(move |k, id, e| {
                s.lock()
                    .expect("lock")
                    .push(format!("{} {id}: {e}", k.as_str()));
            }),
        )
        .expect("start");
        d.save(Kind::Conversation, "root/a.1", json!([]));
        assert!(d.flush(Duration::from_secs(20)));
        assert_eq!(
            *seen.lock().expect("lock"),
            vec!["conversation root/a.1: disk full".to_string()]
        );
    }
}
