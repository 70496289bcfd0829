//! A session's server notifications routed to the calls that asked for
//! them (the gateway's proxied calls, through [`Relay`]):
//!
//! - `notifications/progress` carrying a token one of our calls sent goes
//!   to that call's relay, without the token (the relay's owner puts its own
//!   client's token on it). A progress for a token nobody holds (unknown, or
//!   a call already over) is dropped.
//! - `notifications/message` (a log line: not tied to a request in the
//!   protocol) goes to every call with a relay in flight on the session.
//!
//! - A server's request to the client (`sampling/createMessage`,
//!   `elicitation/create`: no token ties it to a call in the protocol) goes
//!   to the call in flight on the session that started first among those
//!   whose relay has a client that takes it ([`Relays::askers`]; the next
//!   such call's when that one's call is over before the request goes out).
//!
//! - `notifications/{tools,prompts,resources}/list_changed` set a flag of
//!   the session's ([`Relays::list_changed`]) and wake its follower
//!   (`super::refresh`): however many come, what waits is one flag per
//!   kind, never a queue.
//!
//! A call registers with [`Relays::enter`] (or [`Relays::follow`], with or
//! without a relay) and is forgotten when its guard drops, however the call
//! ends. Besides going to the relay, a progress for a call's token calls
//! the call's tick ([`RelayGuard::on_progress`]: rmcp's path's backstop);
//! every progress's token also goes to the session's direct calls
//! ([`Relays::tick_direct`]): on one of a direct call's own (`tn-ID`),
//! registered or not, that call's idle timeout starts again.

use crate::tool::{Ask, Relay};
use rmcp::model::ServerNotification;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The relays of one session's calls in flight.
#[derive(Default)]
pub struct Relays {
    next: AtomicU64,
    calls: Mutex<HashMap<u64, Entry>>,
    /// Told whenever a call is forgotten.
    gone: tokio::sync::Notify,
    /// The kinds of list the server said changed since the follower last
    /// looked ([`LISTED_TOOLS`], ...), and its wake-up.
    changed_kinds: std::sync::atomic::AtomicU8,
    changed: tokio::sync::Notify,
    /// A stdio session's direct calls: told every progress's token,
    /// whether or not a call registered it, so a plain direct call's
    /// timeout restarts without a registration (its token names it).
    direct: std::sync::OnceLock<DirectTick>,
    /// Set when the session's transport hands the server's progress and
    /// log notifications over as it reads them ([`Relays::read_in_order`]):
    /// rmcp's handlers then leave them alone.
    in_order: std::sync::atomic::AtomicBool,
}

/// What [`Relays::tick_direct`] sets: called with a progress's token.
pub type DirectTick = Box<dyn Fn(&Value) + Send + Sync>;

/// A kind of list a server announces changes of (bit flags).
pub const LISTED_TOOLS: u8 = 1;
pub const LISTED_PROMPTS: u8 = 2;
pub const LISTED_RESOURCES: u8 = 4;

/// What a call's progress also calls (see [`RelayGuard::on_progress`]).
pub type Tick = Arc<dyn Fn() + Send + Sync>;

struct Entry {
    relay: Option<Relay>,
    tick: Option<Tick>,
    /// The progress tokens (as JSON text) this call's requests carry.
    tokens: Vec<String>,
}

/// One call's registration; dropping it forgets the call and its tokens.
pub struct RelayGuard<'a> {
    relays: &'a Relays,
    id: u64,
}

impl Relays {
    fn calls(&self) -> MutexGuard<'_, HashMap<u64, Entry>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn enter(&self, relay: &Relay) -> RelayGuard<'_> {
        self.follow(Some(relay))
    }

    /// Registers a call whose progress is wanted, relayed or not (its
    /// idle timeout needs it either way).
    pub fn follow(&self, relay: Option<&Relay>) -> RelayGuard<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.calls().insert(
            id,
            Entry {
                relay: relay.cloned(),
                tick: None,
                tokens: Vec::new(),
            },
        );
        RelayGuard { relays: self, id }
    }

    /// A `notifications/progress` from the server.
    pub fn progress(&self, mut params: Value) {
        let Some(token) = params
            .as_object_mut()
            .and_then(|m| m.remove("progressToken"))
        else {
            return;
        };
        if let Some(tick) = self.direct.get() {
            tick(&token);
        }
        let key = token.to_string();
        let (relay, tick) = self
            .calls()
            .values()
            .find(|e| e.tokens.contains(&key))
            .map(|e| (e.relay.clone(), e.tick.clone()))
            .unwrap_or_default();
        if let Some(tick) = tick {
            tick();
        }
        if let Some(relay) = relay {
            relay.send("notifications/progress", params);
        }
    }

    /// The clients to put a server's `method` request to, in the order to
    /// try them: those of the calls in flight whose relay has one that
    /// takes it, the earliest call first, each with its call (for
    /// [`Relays::ended`]).
    pub fn askers(&self, method: &str) -> Vec<(u64, Arc<dyn Ask>)> {
        let calls = self.calls();
        let mut found: Vec<(u64, Arc<dyn Ask>)> = calls
            .iter()
            .filter_map(|(id, e)| {
                e.relay
                    .as_ref()
                    .and_then(|r| r.asker(method))
                    .map(|a| (*id, a))
            })
            .collect();
        found.sort_unstable_by_key(|(id, _)| *id);
        found
    }

    /// Resolves once the call `id` is over.
    pub async fn ended(&self, id: u64) {
        loop {
            let notified = self.gone.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self.calls().contains_key(&id) {
                return;
            }
            notified.await;
        }
    }

    /// A `notifications/KIND/list_changed` from the server (`kind` one of
    /// [`LISTED_TOOLS`], [`LISTED_PROMPTS`], [`LISTED_RESOURCES`]).
    pub fn list_changed(&self, kind: u8) {
        self.changed_kinds.fetch_or(kind, Ordering::AcqRel);
        // One stored permit at most, however many come.
        self.changed.notify_one();
    }

    /// Resolves once a list changed since the last [`Relays::take_changed`]
    /// (at once when one did).
    pub async fn list_change(&self) {
        self.changed.notified().await;
    }

    /// The kinds of list announced as changed since the last call.
    pub fn take_changed(&self) -> u8 {
        self.changed_kinds.swap(0, Ordering::AcqRel)
    }

    /// Where the progress on a direct call's token goes (set once, when
    /// the session's calls go direct).
    pub fn tick_direct(&self, tick: DirectTick) {
        let _ = self.direct.set(tick);
    }

    /// The session's transport hands over the server's progress and log
    /// notifications itself, as it reads them, before the lines after them
    /// (a call's answer among them). rmcp runs each notification's handler
    /// as a task of its own, so a handler could run after the answer that
    /// followed it had ended the call, and the call's relay was gone: a
    /// proxied call's last progress, sent before its result, was lost.
    pub fn read_in_order(&self) {
        self.in_order.store(true, Ordering::Relaxed);
    }

    /// Passes on a server's progress or log notification as its
    /// transport reads it (see [`Relays::read_in_order`]); any other
    /// notification is left to rmcp's handlers.
    pub fn pass_on(&self, note: &ServerNotification) {
        match note {
            ServerNotification::ProgressNotification(p) => {
                if let Ok(v) = serde_json::to_value(&p.params) {
                    self.progress(v);
                }
            }
            ServerNotification::LoggingMessageNotification(l) => {
                if let Ok(v) = serde_json::to_value(&l.params) {
                    self.message(v);
                }
            }
            _ => {}
        }
    }

    /// Whether [`Relays::read_in_order`] was set: rmcp's handlers pass on
    /// nothing then.
    pub fn reads_in_order(&self) -> bool {
        self.in_order.load(Ordering::Relaxed)
    }

    /// A `notifications/message` from the server.
    pub fn message(&self, params: Value) {
        let relays: Vec<Relay> = self
            .calls()
            .values()
            .filter_map(|e| e.relay.clone())
            .collect();
        for relay in relays {
            relay.send("notifications/message", params.clone());
        }
    }
}

impl RelayGuard<'_> {
    /// Routes the progress notifications carrying `token` to this call.
    pub fn watch(&self, token: &Value) {
        if let Some(e) = self.relays.calls().get_mut(&self.id) {
            e.tokens.push(token.to_string());
        }
    }

    /// Calls `tick` on each progress for this call's tokens (on the
    /// session's I/O task: it must not block).
    pub fn on_progress(&self, tick: Tick) {
        if let Some(e) = self.relays.calls().get_mut(&self.id) {
            e.tick = Some(tick);
        }
    }
}

impl Drop for RelayGuard<'_> {
    fn drop(&mut self) {
        self.relays.calls().remove(&self.id);
        self.relays.gone.notify_waiters();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// What a [`recording`] relay heard: each method and its params.
    pub(crate) type Seen = Arc<Mutex<Vec<(String, Value)>>>;

    /// A relay that keeps what it hears (also for the transports' tests).
    pub(crate) fn recording() -> (Relay, Seen) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let relay = Relay::new(Arc::new(move |m: &str, p: Value| {
            log.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((m.to_string(), p));
        }));
        (relay, seen)
    }

    #[test]
    fn progress_goes_to_the_call_that_holds_the_token_and_logs_to_every_call() {
        let relays = Relays::default();
        let (a, seen_a) = recording();
        let (b, seen_b) = recording();
        let ga = relays.enter(&a);
        let gb = relays.enter(&b);
        let ta = "tn-1000000000";
        ga.watch(&json!(ta));
        gb.watch(&json!(7));
        relays.progress(json!({"progressToken": ta, "progress": 1, "total": 2}));
        relays.progress(json!({"progressToken": 7, "progress": 5}));
        // Unknown tokens and a progress without one are dropped.
        relays.progress(json!({"progressToken": "tn-999", "progress": 1}));
        relays.progress(json!({"progressToken": "7", "progress": 1}));
        relays.progress(json!({"progress": 1}));
        relays.message(json!({"level": "info", "data": "hi"}));
        drop(ga);
        relays.progress(json!({"progressToken": ta, "progress": 2}));
        relays.message(json!({"level": "info", "data": "after"}));
        let a = seen_a.lock().map(|v| v.clone()).unwrap_or_default();
        let b = seen_b.lock().map(|v| v.clone()).unwrap_or_default();
        assert_eq!(
            a,
            vec![
                (
                    "notifications/progress".into(),
                    json!({"progress": 1, "total": 2})
                ),
                (
                    "notifications/message".into(),
                    json!({"level": "info", "data": "hi"})
                ),
            ]
        );
        assert_eq!(
            b,
            vec![
                ("notifications/progress".into(), json!({"progress": 5})),
                (
                    "notifications/message".into(),
                    json!({"level": "info", "data": "hi"})
                ),
                (
                    "notifications/message".into(),
                    json!({"level": "info", "data": "after"})
                ),
            ]
        );
    }

    /// A client that takes only `takes`, answering with its name.
    struct Client(&'static str, &'static str);

    impl Ask for Client {
        fn takes(&self, method: &str) -> bool {
            method == self.1
        }

        fn ask(&self, _method: &str, _params: Value) -> crate::tool::AskFuture {
            let name = self.0;
            Box::pin(async move { crate::tool::Asked::Answer(json!(name)) })
        }
    }

    fn asking(name: &'static str, takes: &'static str) -> Relay {
        Relay::default().with_ask(Arc::new(Client(name, takes)))
    }

    /// A request goes to the earliest call whose client takes it; none
    /// when no call's client does; a call that ended is no longer asked.
    #[test]
    fn a_request_goes_to_the_earliest_call_whose_client_takes_it() {
        let relays = Relays::default();
        let (plain, _) = recording();
        let g0 = relays.enter(&plain);
        let g1 = relays.enter(&asking("first", "elicitation/create"));
        let g2 = relays.enter(&asking("second", "elicitation/create"));
        let _g3 = relays.enter(&asking("third", "sampling/createMessage"));
        let name = |method: &str| -> Vec<(u64, crate::tool::Asked)> {
            let rt = crate::runtime::get();
            relays
                .askers(method)
                .into_iter()
                .map(|(id, a)| (id, rt.block_on(a.ask(method, Value::Null))))
                .collect()
        };
        let answer = |s: &str| crate::tool::Asked::Answer(json!(s));
        assert_eq!(
            name("elicitation/create"),
            vec![(1, answer("first")), (2, answer("second"))]
        );
        assert_eq!(name("sampling/createMessage"), vec![(3, answer("third"))]);
        assert_eq!(name("roots/list"), vec![]);
        drop(g1);
        assert_eq!(name("elicitation/create"), vec![(2, answer("second"))]);
        drop((g0, g2));
        assert_eq!(name("elicitation/create"), vec![]);
    }

    /// A flood of list changes is one flag per kind and one wake-up: what
    /// waits for the follower never grows.
    #[test]
    fn list_changes_are_flags_not_a_queue() {
        let relays = Relays::default();
        for _ in 0..10_000 {
            relays.list_changed(LISTED_TOOLS);
        }
        relays.list_changed(LISTED_PROMPTS);
        let rt = crate::runtime::get();
        let woke = rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(5), relays.list_change()).await
        });
        assert!(woke.is_ok(), "no wake-up");
        assert_eq!(relays.take_changed(), LISTED_TOOLS | LISTED_PROMPTS);
        assert_eq!(relays.take_changed(), 0);
        // The one stored wake-up was taken: the next wait waits.
        let again = rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_millis(50), relays.list_change()).await
        });
        assert!(again.is_err(), "a second wake-up was queued");
    }

    /// `ended` resolves once the call is forgotten, not before.
    #[test]
    fn ended_resolves_when_the_call_is_over() {
        let relays = Arc::new(Relays::default());
        let guard = relays.enter(&asking("c", "elicitation/create"));
        let Some(&(id, _)) = relays.askers("elicitation/create").first() else {
            panic!("no asker");
        };
        let rt = crate::runtime::get();
        let early = rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_millis(50), relays.ended(id)).await
        });
        assert!(early.is_err(), "ended while the call runs");
        let waiting = {
            let relays = Arc::clone(&relays);
            rt.spawn(async move { relays.ended(id).await })
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(guard);
        let done = rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(5), waiting).await
        });
        assert!(matches!(done, Ok(Ok(()))), "{done:?}");
    }
}
