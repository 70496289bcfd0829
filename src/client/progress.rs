//! A streamed run's `tool_progress` events (issue 28): the
//! `notifications/progress` an MCP server sends for one of the run's tool
//! calls, as `{"type": "tool_progress", "id", "name", "progress", "total"?,
//! "message"?}` to the `onEvent` slot.
//!
//! A server's progress arrives on the library's I/O tasks, which must not
//! wait for a host callback (a [`Relay`] must not block). So each goes into
//! a queue that one task of the blocking pool drains in order, and the run
//! waits for that queue to be empty before the turn's `tool_result` events:
//! a call's progress events come after its `tool_call` and before its
//! `tool_result`, in the order they arrived. They run on that pool's
//! thread, not the run's. A failing `onEvent` on one is ignored (the run
//! goes on: progress is news, not part of the run).

use super::callbacks::{with_stop, HostFn, RunData, RunStop};
use crate::tool::Relay;
use serde_json::{Map, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// The progress events of one tool phase of a run.
pub(crate) struct ProgressEvents {
    inner: Arc<Inner>,
}

struct Inner {
    on_event: HostFn,
    data: RunData,
    stop: RunStop,
    state: Mutex<State>,
    drained: Condvar,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Value>,
    /// A drain task is running.
    draining: bool,
    /// The phase is over: later progress is dropped.
    closed: bool,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(self: &Arc<Self>, event: Value) {
        let mut state = self.state();
        if state.closed {
            return;
        }
        state.queue.push_back(event);
        if std::mem::replace(&mut state.draining, true) {
            return;
        }
        drop(state);
        let inner = Arc::clone(self);
        crate::runtime::get().spawn_blocking(move || inner.drain());
    }

    fn drain(&self) {
        loop {
            let next = {
                let mut state = self.state();
                match state.queue.pop_front() {
                    Some(e) => e,
                    None => {
                        state.draining = false;
                        self.drained.notify_all();
                        return;
                    }
                }
            };
            let _ = with_stop(self.stop.clone(), || (self.on_event)(&next, self.data));
        }
    }
}

impl ProgressEvents {
    pub fn new(on_event: HostFn, data: RunData, stop: RunStop) -> ProgressEvents {
        ProgressEvents {
            inner: Arc::new(Inner {
                on_event,
                data,
                stop,
                state: Mutex::new(State::default()),
                drained: Condvar::new(),
            }),
        }
    }

    /// The relay of the call `id` to the tool `name`: its progress
    /// becomes `tool_progress` events (its log lines are not events).
    pub fn relay(&self, id: &str, name: &str) -> Relay {
        let inner = Arc::clone(&self.inner);
        let (id, name) = (id.to_string(), name.to_string());
        Relay::new(Arc::new(move |method: &str, params: Value| {
            if method != "notifications/progress" {
                return;
            }
            inner.push(event(&id, &name, params));
        }))
    }

    /// Ends the phase: waits until every progress already queued went to
    /// the host; what comes later is dropped.
    pub fn finish(self) {
        let mut state = self.inner.state();
        state.closed = true;
        while state.draining {
            state = self
                .inner
                .drained
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// `{"type": "tool_progress", "id", "name", "progress", "total"?,
/// "message"?}` of a progress notification's params (its token already
/// taken out by the session).
fn event(id: &str, name: &str, params: Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), "tool_progress".into());
    out.insert("id".into(), id.into());
    out.insert("name".into(), name.into());
    let Value::Object(mut p) = params else {
        return Value::Object(out);
    };
    for key in ["progress", "total", "message"] {
        if let Some(v) = p.remove(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), v);
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::CancelToken;
    use serde_json::json;

    #[test]
    fn progress_goes_to_on_event_in_order_and_finish_waits_for_it() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let f: HostFn = Arc::new(move |e: &Value, _| {
            std::thread::sleep(std::time::Duration::from_millis(5));
            log.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(e.clone());
            Err("a failing onEvent is ignored".into())
        });
        let stop = RunStop {
            cancel: CancelToken::new(),
            deadline: None,
        };
        let events = ProgressEvents::new(f, RunData(0), stop);
        let relay = events.relay("c1", "work");
        for i in 1..=5 {
            relay.send(
                "notifications/progress",
                json!({"progress": i, "total": 5, "message": null}),
            );
        }
        relay.send("notifications/message", json!({"level": "info"}));
        events.finish();
        relay.send("notifications/progress", json!({"progress": 6}));
        let seen = seen.lock().map(|v| v.clone()).unwrap_or_default();
        let want: Vec<Value> = (1..=5)
            .map(|i| json!({"type": "tool_progress", "id": "c1", "name": "work", "progress": i, "total": 5}))
            .collect();
        assert_eq!(seen, want);
    }
}
