//! tools/call on a stdio session without rmcp's service loop.
//!
//! rmcp's client sends a request by handing it to its service task over a
//! channel, which spawns a task to write it, types the answer through every
//! result type of the protocol and hands it back over another channel: most
//! of the ~94k instructions the gateway spends per proxied call
//! (bench/README.md, issue 13). A tools/call on a stdio session needs none
//! of that: the caller writes the line itself and waits on a oneshot that
//! the transport's reader fills when the answer with that id comes in.
//!
//! rmcp keeps everything else on the session: initialize, tools/list, pings,
//! the server's own requests (elicitation) and notifications. The two share
//! the write half of the pipe under one lock, taken with `try_lock` and
//! written with `runtime::write_now` (the discipline `ClientLineTransport::send`
//! follows), so their lines never interleave; a line that does not go out
//! whole at once is finished by a task of its own, so dropping a caller
//! never leaves half a line in the pipe, and a caller that gives up before
//! its request is out leaves that task to follow it with the cancel.
//!
//! Only sessions whose negotiated protocol has an `initialize` handshake
//! (up to 2025-11-25) go this way: from 2026-07-28 rmcp puts the client's
//! metadata in every request's `_meta` and only lets a server ask the
//! client something (elicitation) while one of rmcp's own requests is in
//! flight, so such sessions keep rmcp's path.

use super::lines::{ClientLineTransport, Pipe, Taker};
use crate::cancel::CancelToken;
use crate::jsonrpc::lines::{in_line, Lock};
use crate::tool::ToolResult;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientJsonRpcMessage, ClientNotification,
    JsonRpcMessage, RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{RoleClient, ServiceError};
use rmcp::transport::DynamicTransportError;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;

/// The first id of a direct call. rmcp numbers its own requests from 0, one
/// per request it sends; on a session whose tools/calls go direct it sends
/// only the handshake, tools/list pages and the odd ping, so it never gets
/// near a billion. Direct ids count up from here and wrap back within
/// `i32::MAX`: every SDK takes a JSON-RPC id of that size (some keep
/// numeric ids in a 32-bit int), and the wrap comes after a billion calls.
pub const FIRST_ID: i64 = 1_000_000_000;

/// How many ids there are from [`FIRST_ID`] to `i32::MAX`.
const ID_SPAN: u32 = 1_147_483_648;
const _: () = assert!(FIRST_ID + ID_SPAN as i64 - 1 == i32::MAX as i64);

/// How a direct call failed.
#[derive(Debug)]
pub enum Failure {
    /// What rmcp's path reports as this error (`describe_service_error`).
    Service(ServiceError),
    /// The answer's result could not be read as JSON (`malformed-result (…)`).
    Malformed(String),
    /// The caller's cancel token fired (the server was told).
    Cancelled,
}

/// What a direct call gets back.
#[derive(Debug)]
pub enum Reply {
    /// A plain text answer, shaped as it was read (see [`shape_text_answer`]).
    Shaped(ToolResult),
    /// Any other result, as JSON, for `shape_call_result`.
    Json(Value),
}

type Answer = Result<Reply, Failure>;

struct State {
    pending: HashMap<i64, Waiting>,
    /// The transport is gone: nothing will answer.
    closed: bool,
    /// When the watchdog wakes next; None while it waits for a call (or
    /// before its first).
    watch: Option<Instant>,
    /// Whether the watchdog task is running.
    watching: bool,
}

/// A call in flight: where its answer goes, and by when.
struct Waiting {
    tx: oneshot::Sender<Answer>,
    /// Set once the line is out (`timeout` counts from then).
    deadline: Option<(Instant, Duration)>,
}

/// What a stdio session's transport and its direct calls share.
///
/// A call's timeout is kept by one watchdog task per session, not a timer
/// per call: it sleeps until the earliest deadline in flight and answers
/// each call past its deadline with `Timeout`. A call that starts while
/// the watchdog sleeps until earlier needs nothing of it, which is every
/// call of a session whose calls share one timeout; a tokio timer per call
/// is a wheel entry and a write to the runtime's eventfd (an extra
/// `epoll_wait` too) each time.
pub struct Direct {
    pipe: Pipe,
    state: std::sync::Mutex<State>,
    /// `state.pending.len()`, read by the reader without the lock.
    live: AtomicUsize,
    next: AtomicU32,
    /// Wakes the watchdog: a deadline earlier than it knew, or the end.
    wake: Arc<Notify>,
}

/// Why the server is told a call is cancelled, as rmcp words it for a
/// timeout (`RequestHandle::REQUEST_TIMEOUT_REASON`).
const TIMEOUT_REASON: &str = "request timeout";
const CANCEL_REASON: &str = "the caller cancelled the call";
const DROPPED_REASON: &str = "the caller went away";

/// Why a caller gave up on its call, as told to the server.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Reason {
    Cancel = 2,
    Timeout = 3,
    Dropped = 4,
}

impl Reason {
    fn text(self) -> &'static str {
        match self {
            Reason::Cancel => CANCEL_REASON,
            Reason::Timeout => TIMEOUT_REASON,
            Reason::Dropped => DROPPED_REASON,
        }
    }
}

/// A request line still being written on its task ([`Sent::Pending`]):
/// either the task marks it out first, and a caller that gives up after
/// that tells the server itself, or the caller gives up first, and the
/// task follows the line with its cancel. The line itself always goes out
/// whole, so the server never sees a request of a cancelled call without
/// its cancel after it (issue 25 M5).
struct Queued(AtomicU8);

/// [`Queued`]'s states besides a [`Reason`].
const ON_ITS_WAY: u8 = 0;
const OUT: u8 = 1;

impl Queued {
    /// The caller gives up for `reason`: true when the task will follow
    /// the line with the cancel, false when the line is already out.
    fn give_up(&self, reason: Reason) -> bool {
        self.0
            .compare_exchange(
                ON_ITS_WAY,
                reason as u8,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// The line is out: why its caller gave up meanwhile, if it did.
    fn out(&self) -> Option<Reason> {
        match self
            .0
            .compare_exchange(ON_ITS_WAY, OUT, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => None,
            Err(r) if r == Reason::Cancel as u8 => Some(Reason::Cancel),
            Err(r) if r == Reason::Timeout as u8 => Some(Reason::Timeout),
            Err(r) if r == Reason::Dropped as u8 => Some(Reason::Dropped),
            Err(_) => None,
        }
    }
}

impl Direct {
    pub fn new(pipe: Pipe) -> Arc<Direct> {
        Arc::new(Direct {
            pipe,
            state: std::sync::Mutex::new(State {
                pending: HashMap::new(),
                closed: false,
                watch: None,
                watching: false,
            }),
            live: AtomicUsize::new(0),
            next: AtomicU32::new(0),
            wake: Arc::new(Notify::new()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The direct calls waiting for an answer.
    pub fn pending(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    /// A fresh id and the receiver of its answer; TransportClosed once the
    /// transport is gone (what rmcp's path says then).
    fn register(&self) -> Result<(i64, oneshot::Receiver<Answer>), Failure> {
        let mut state = self.state();
        if state.closed {
            return Err(Failure::Service(ServiceError::TransportClosed));
        }
        let id = loop {
            let n = self.next.fetch_add(1, Ordering::Relaxed) % ID_SPAN;
            let id = FIRST_ID + i64::from(n);
            // After a wrap, an id still in flight is skipped.
            if !state.pending.contains_key(&id) {
                break id;
            }
        };
        let (tx, rx) = oneshot::channel();
        state.pending.insert(id, Waiting { tx, deadline: None });
        self.live.store(state.pending.len(), Ordering::Release);
        Ok((id, rx))
    }

    /// Starts call `id`'s `timeout`, now that its line is out.
    fn arm(self: &Arc<Self>, id: i64, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut state = self.state();
        let Some(waiting) = state.pending.get_mut(&id) else {
            return;
        };
        waiting.deadline = Some((deadline, timeout));
        if state.watch.is_some_and(|w| w <= deadline) {
            return;
        }
        state.watch = Some(deadline);
        if !std::mem::replace(&mut state.watching, true) {
            let direct = Arc::downgrade(self);
            let wake = Arc::clone(&self.wake);
            crate::runtime::get().spawn(watchdog(direct, wake));
        } else {
            self.wake.notify_one();
        }
    }

    /// Answers every call past its deadline with `Timeout`; the earliest
    /// deadline still ahead (what the watchdog sleeps until), or None.
    /// `Err` once the transport is gone.
    fn expire(&self) -> Result<Option<Instant>, ()> {
        let now = Instant::now();
        let (late, next) = {
            let mut state = self.state();
            if state.closed {
                state.watching = false;
                return Err(());
            }
            let late: Vec<(oneshot::Sender<Answer>, Duration)> = state
                .pending
                .extract_if(|_, w| w.deadline.is_some_and(|(at, _)| at <= now))
                .filter_map(|(_, w)| w.deadline.map(|(_, timeout)| (w.tx, timeout)))
                .collect();
            self.live.store(state.pending.len(), Ordering::Release);
            let next = state
                .pending
                .values()
                .filter_map(|w| w.deadline)
                .map(|d| d.0)
                .min();
            state.watch = next;
            (late, next)
        };
        for (tx, timeout) in late {
            let _ = tx.send(Err(Failure::Service(ServiceError::Timeout { timeout })));
        }
        Ok(next)
    }

    fn forget(&self, id: i64) {
        let mut state = self.state();
        if state.pending.remove(&id).is_some() {
            self.live.store(state.pending.len(), Ordering::Release);
        }
    }

    /// The transport ended: every call waiting gets TransportClosed (its
    /// sender dropped), and no new call starts.
    pub fn close_all(&self) {
        let mut state = self.state();
        state.closed = true;
        state.pending.clear();
        self.live.store(0, Ordering::Release);
        drop(state);
        self.wake.notify_one();
    }

    /// Takes `line` if it is the answer (a result or an error, no method)
    /// to a direct call in flight, and hands it to that call. Anything else
    /// (rmcp's traffic, an id never sent, an answer that came too late) is
    /// left to rmcp's side of the transport.
    pub fn offer(&self, line: &[u8]) -> bool {
        let Some(line) = super::lines::message_text(line) else {
            return false;
        };
        if let Some((id, shaped)) = shape_text_answer(line) {
            return self.answer(id, Ok(Reply::Shaped(shaped)));
        }
        let Ok(reply) = serde_json::from_slice::<Envelope>(line) else {
            return false;
        };
        let Envelope {
            id: Some(id),
            method: None,
            result,
            error,
            ..
        } = reply
        else {
            return false;
        };
        let Some(id) = numeric(&id) else {
            return false;
        };
        if !self.state().pending.contains_key(&id) {
            return false;
        }
        let answer = match (result, error) {
            // What `lines::fast_call_result` keeps as it came.
            (Some(Value::Object(result)), None)
                if result.contains_key("content") && !result.contains_key("protocolVersion") =>
            {
                Ok(Reply::Json(Value::Object(result)))
            }
            // Anything else as rmcp's path reads it.
            _ => match serde_json::from_slice::<ServerJsonRpcMessage>(line) {
                Ok(JsonRpcMessage::Response(r)) => match r.result {
                    ServerResult::CustomResult(custom) => Ok(Reply::Json(custom.0)),
                    other => serde_json::to_value(&other)
                        .map(Reply::Json)
                        .map_err(|e| Failure::Malformed(format!("malformed-result ({e})"))),
                },
                Ok(JsonRpcMessage::Error(e)) => {
                    Err(Failure::Service(ServiceError::McpError(e.error)))
                }
                // Not a message rmcp would take either: dropped, as there.
                _ => return false,
            },
        };
        self.answer(id, answer)
    }

    /// Hands `answer` to the call waiting for `id`; false when none is.
    fn answer(&self, id: i64, answer: Answer) -> bool {
        let tx = {
            let mut state = self.state();
            let Some(waiting) = state.pending.remove(&id) else {
                return false;
            };
            self.live.store(state.pending.len(), Ordering::Release);
            waiting.tx
        };
        // A caller that gave up meanwhile no longer listens.
        let _ = tx.send(answer);
        true
    }

    /// tools/call `tool` with `args`: the answer, shaped or as JSON. Bounded
    /// by `timeout` from the moment the line is out, as rmcp's request is;
    /// on a timeout or a cancel the server is told `notifications/cancelled`.
    pub async fn call(
        self: &Arc<Self>,
        tool: &str,
        args: &Map<String, Value>,
        timeout: Duration,
        cancel: Option<&CancelToken>,
        progress: Option<&str>,
    ) -> Answer {
        let (id, rx) = self.register()?;
        // Forgets the id however this ends; tells the server when the
        // caller dropped this future mid-call.
        let mut flight = InFlight {
            direct: self,
            id,
            told: true,
            queued: None,
        };
        let line = call_line(id, tool, args, progress).map_err(send_failure)?;
        let cancelled = || async {
            match cancel {
                Some(c) => c.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let gave_up = match self.write(line, Some(id)) {
            Sent::Done(Ok(())) => None,
            Sent::Done(Err(e)) => return Err(Failure::Service(e)),
            // A full pipe: the line goes on being written on its task, and
            // this call is bounded by `timeout` from here, since its answer
            // timer starts only once the line is out. The line goes whole
            // whatever the caller does, so a caller that gives up (or is
            // dropped, see `InFlight`) meanwhile leaves it to the task to
            // follow the line with its cancel.
            Sent::Pending(rest, queued) => {
                flight.told = false;
                flight.queued = Some(Arc::clone(&queued));
                let gave_up = tokio::select! {
                    biased;
                    written = rest => {
                        written?;
                        None
                    }
                    _ = cancelled() => Some((Reason::Cancel, Failure::Cancelled)),
                    _ = tokio::time::sleep(timeout) => Some((
                        Reason::Timeout,
                        Failure::Service(ServiceError::Timeout { timeout }),
                    )),
                };
                match gave_up {
                    Some((reason, failure)) if queued.give_up(reason) => {
                        flight.told = true;
                        return Err(failure);
                    }
                    // The line went out meanwhile: the server is told below.
                    other => other,
                }
            }
        };
        flight.told = false;
        let (reason, failure) = match gave_up {
            Some(gave_up) => gave_up,
            None => {
                self.arm(id, timeout);
                tokio::select! {
                    biased;
                    answer = rx => match answer {
                        // From the watchdog, which has forgotten the id.
                        Ok(Err(timeout @ Failure::Service(ServiceError::Timeout { .. }))) => {
                            (Reason::Timeout, timeout)
                        }
                        answer => {
                            flight.told = true;
                            return answer
                                .unwrap_or(Err(Failure::Service(ServiceError::TransportClosed)));
                        }
                    },
                    _ = cancelled() => (Reason::Cancel, Failure::Cancelled),
                }
            }
        };
        flight.told = true;
        // Forgotten first: an answer that comes now is dropped.
        self.forget(id);
        // Out before this call returns, as rmcp's is, so a request made
        // after it never overtakes it; a pipe that stays full is waited on
        // no longer than the call's timeout (the line still goes whole).
        if let Sent::Pending(rest, _) = self.write(cancel_line(id, reason.text()), None) {
            let _ = tokio::time::timeout(timeout, rest).await;
        }
        Err(failure)
    }

    /// Writes one whole line: at once when the pipe is free and takes it
    /// all, else on a task of its own that holds the pipe until the line is
    /// whole (so no caller that goes away can cut it), whose end is
    /// [`Sent::Pending`]. `request`: the id of the tools/call this line
    /// is, which the task follows with its cancel when the caller gives up
    /// before the line is out (see [`Queued`]).
    fn write(&self, line: Vec<u8>, request: Option<i64>) -> Sent {
        // In the pipe's queue now, not once the task runs: lines go out in
        // the order they were written here (a call after this one never
        // overtakes it, nor the cancel that may follow it).
        let (held, written) = match in_line(&self.pipe) {
            Lock::Now(mut pipe) => {
                let Some(p) = pipe.as_mut() else {
                    return Sent::Done(Err(transport_send(closed_pipe())));
                };
                match crate::runtime::write_now(p, &line) {
                    Ok(n) if n == line.len() => return Sent::Done(Ok(())),
                    Ok(n) => (Lock::Now(pipe), n),
                    Err(e) => return Sent::Done(Err(transport_send(e))),
                }
            }
            queued => (queued, 0),
        };
        let queued = Arc::new(Queued(AtomicU8::new(ON_ITS_WAY)));
        let follow = Arc::clone(&queued);
        let rest = async move {
            let mut pipe = match held {
                Lock::Now(p) => p,
                Lock::Queued(lock) => lock.await,
            };
            let Some(p) = pipe.as_mut() else {
                return Err(closed_pipe());
            };
            p.write_all(&line[written..]).await?;
            if let Some(id) = request {
                // Under the same lock, so nothing comes between the two.
                if let Some(reason) = follow.out() {
                    p.write_all(&cancel_line(id, reason.text())).await?;
                }
            }
            p.flush().await
        };
        let task = crate::runtime::get().spawn(rest);
        Sent::Pending(
            Box::pin(async move {
                match task.await {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) => Err(Failure::Service(transport_send(e))),
                    Err(e) => Err(Failure::Service(transport_send(io::Error::other(
                        e.to_string(),
                    )))),
                }
            }),
            queued,
        )
    }

    /// Writes a line nobody waits for (a cancel), whole, however long the
    /// pipe takes.
    fn write_detached(&self, line: Vec<u8>) {
        // Pending: its task goes on without this future.
        let _ = self.write(line, None);
    }
}

/// How [`Direct::write`] went: written, or on its task.
enum Sent {
    Done(Result<(), ServiceError>),
    Pending(
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>> + Send>>,
        Arc<Queued>,
    ),
}

/// The transport offers its lines here first (see [`Direct::offer`]).
impl Taker for Direct {
    fn waiting(&self) -> bool {
        self.pending() > 0
    }
    fn offer(&self, line: &[u8]) -> bool {
        Direct::offer(self, line)
    }
    fn closed(&self) {
        self.close_all();
    }
}

impl Drop for Direct {
    fn drop(&mut self) {
        // The watchdog holds only a weak reference: this ends it.
        self.wake.notify_one();
    }
}

/// Keeps the deadlines of `direct`'s calls (see [`Direct`]) until the
/// transport is gone.
async fn watchdog(direct: std::sync::Weak<Direct>, wake: Arc<Notify>) {
    loop {
        let next = match direct.upgrade() {
            Some(d) => d.expire(),
            None => return,
        };
        match next {
            Err(()) => return,
            Ok(Some(at)) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = wake.notified() => {}
                }
            }
            Ok(None) => wake.notified().await,
        }
    }
}

/// One direct call in flight.
struct InFlight<'a> {
    direct: &'a Arc<Direct>,
    id: i64,
    /// Whether the server needs no word from us on drop (the call was never
    /// sent, was answered, or the server was already told).
    told: bool,
    /// The request line, while it is still on its write task.
    queued: Option<Arc<Queued>>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.direct.forget(self.id);
        if self.told {
            return;
        }
        // Dropped while waiting (a served client that hung up): the server
        // is told, as it would be of a cancel; by the write task when the
        // line is not out yet.
        if let Some(queued) = &self.queued {
            if queued.give_up(Reason::Dropped) {
                return;
            }
        }
        self.direct
            .write_detached(cancel_line(self.id, DROPPED_REASON));
    }
}

/// What the reader needs of a line to route it.
#[derive(serde::Deserialize)]
struct Envelope {
    #[allow(dead_code)]
    jsonrpc: rmcp::model::JsonRpcVersion2_0,
    id: Option<RequestId>,
    method: Option<serde::de::IgnoredAny>,
    result: Option<Value>,
    error: Option<serde::de::IgnoredAny>,
}

/// A numeric id, also when echoed as a string, as rmcp's path takes it:
/// `KnownIds` lets an answer through only when its id reads the same as
/// the one sent, so "1000000000" is that id and "+1000000000" or
/// "01000000000" are not.
fn numeric(id: &RequestId) -> Option<i64> {
    match id {
        RequestId::Number(n) => Some(*n),
        RequestId::String(s) => s.parse().ok().filter(|n: &i64| n.to_string() == **s),
    }
}

/// A tools/call answer whose content is text parts only, read in one pass
/// with the texts borrowed from the line, no JSON tree built.
#[derive(serde::Deserialize)]
struct TextAnswer<'a> {
    #[allow(dead_code)]
    jsonrpc: rmcp::model::JsonRpcVersion2_0,
    id: RequestId,
    method: Option<serde::de::IgnoredAny>,
    error: Option<serde::de::IgnoredAny>,
    #[serde(borrow)]
    result: Option<TextResult<'a>>,
}

/// The result of a [`TextAnswer`]. Read by hand, not derived: a derived
/// struct also reads from an array (its fields in order), where
/// `shape_call_result` sees no field at all, and skips the fields it does
/// not know without reading them, where rmcp's path builds a tree of them
/// and drops an answer it cannot build (see [`Checked`]).
#[derive(Default)]
struct TextResult<'a> {
    content: Option<Vec<TextPart<'a>>>,
    /// `structuredContent`.
    structured: Option<Compact>,
    /// `isError`.
    is_error: Option<bool>,
    /// Whether `protocolVersion` is there at all, whatever its value.
    protocol_version: bool,
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for TextResult<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = TextResult<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a tools/call result object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<TextResult<'de>, A::Error> {
                let mut r = TextResult::default();
                let mut seen = [false; 4];
                while let Some(Key(key)) = map.next_key()? {
                    let field = match key.as_ref() {
                        "content" => 0,
                        "structuredContent" => 1,
                        "isError" => 2,
                        "protocolVersion" => 3,
                        _ => {
                            map.next_value::<Checked>()?;
                            continue;
                        }
                    };
                    if std::mem::replace(&mut seen[field], true) {
                        return Err(repeated(&key));
                    }
                    match field {
                        0 => r.content = map.next_value()?,
                        1 => r.structured = map.next_value()?,
                        2 => r.is_error = map.next_value()?,
                        _ => {
                            map.next_value::<Checked>()?;
                            r.protocol_version = true;
                        }
                    }
                }
                Ok(r)
            }
        }
        d.deserialize_map(V)
    }
}

/// A part of a [`TextResult`]'s content, read by hand for the same reasons.
struct TextPart<'a> {
    /// `type`.
    kind: Cow<'a, str>,
    text: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for TextPart<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = TextPart<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a content part object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<TextPart<'de>, A::Error> {
                let (mut kind, mut text): (Option<Cow<'de, str>>, Option<Option<Key<'de>>>) =
                    (None, None);
                while let Some(Key(key)) = map.next_key()? {
                    match key.as_ref() {
                        "type" if kind.is_some() => return Err(repeated(&key)),
                        "type" => kind = Some(map.next_value::<Key>()?.0),
                        "text" if text.is_some() => return Err(repeated(&key)),
                        "text" => text = Some(map.next_value()?),
                        _ => {
                            map.next_value::<Checked>()?;
                        }
                    }
                }
                let kind = kind.ok_or_else(|| serde::de::Error::missing_field("type"))?;
                Ok(TextPart {
                    kind,
                    text: text.flatten().map(|Key(t)| t),
                })
            }
        }
        d.deserialize_map(V)
    }
}

fn repeated<E: serde::de::Error>(key: &str) -> E {
    E::custom(format_args!("a repeated field `{key}`"))
}

/// A value read to its end and dropped. `IgnoredAny` skips a value without
/// reading it: a number out of range, a string that is not UTF-8 or holds
/// a lone surrogate, nesting past the parser's depth limit all pass. A
/// tree of the same value fails on each, and so rmcp's path drops such an
/// answer; with this the one-pass read fails on the same values, and the
/// answer goes the general way, where it is dropped alike.
struct Checked;

impl<'de> serde::Deserialize<'de> for Checked {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Checked)
    }
}

impl<'de> serde::de::Visitor<'de> for Checked {
    type Value = Checked;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_key::<Checked>()?.is_some() {
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
    }
}

/// A JSON value as the compact text `Value::to_string` gives it, written
/// while it is read (no tree built); a `null` reads as absent, as
/// `shape_call_result` takes it. An object with a repeated key fails the
/// read (a tree keeps the key's first place and its last value), so such an
/// answer is read the general way.
struct Compact(String);

impl<'de> serde::Deserialize<'de> for Compact {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut out = Vec::new();
        serde::de::DeserializeSeed::deserialize(Write(&mut out), d)?;
        // Only serde_json's writer wrote here: UTF-8.
        String::from_utf8(out)
            .map(Compact)
            .map_err(serde::de::Error::custom)
    }
}

/// Writes the value it reads into the buffer, compact.
struct Write<'o>(&'o mut Vec<u8>);

impl<'de> serde::de::DeserializeSeed<'de> for Write<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Write<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        serde_json::to_writer(&mut *self.0, &v).map_err(E::custom)
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        serde_json::to_writer(&mut *self.0, &v).map_err(E::custom)
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        // As a tree holds it (`Value::from` would make a non-finite one
        // null; the parser never yields one).
        serde_json::to_writer(&mut *self.0, &Value::from(v)).map_err(E::custom)
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        serde_json::to_writer(&mut *self.0, v).map_err(E::custom)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.push(b'[');
        let mut first = true;
        loop {
            let at = self.0.len();
            if !first {
                self.0.push(b',');
            }
            if seq.next_element_seed(Write(&mut *self.0))?.is_none() {
                self.0.truncate(at);
                break;
            }
            first = false;
        }
        self.0.push(b']');
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.push(b'{');
        // The keys seen: a list while the object is small, a set after.
        let mut keys: Vec<Cow<'de, str>> = Vec::new();
        let mut many: Option<std::collections::HashSet<Cow<'de, str>>> = None;
        let mut first = true;
        while let Some(Key(key)) = map.next_key()? {
            let repeated = match &mut many {
                Some(set) => !set.insert(key.clone()),
                None if keys.contains(&key) => true,
                None => {
                    keys.push(key.clone());
                    if keys.len() > 16 {
                        many = Some(keys.drain(..).collect());
                    }
                    false
                }
            };
            if repeated {
                return Err(serde::de::Error::custom("a repeated key"));
            }
            if !first {
                self.0.push(b',');
            }
            first = false;
            serde_json::to_writer(&mut *self.0, key.as_ref()).map_err(serde::de::Error::custom)?;
            self.0.push(b':');
            map.next_value_seed(Write(&mut *self.0))?;
        }
        self.0.push(b'}');
        Ok(())
    }
}

/// An object key, borrowed from the line when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// The id and ToolResult of an answer (a result with `content`, no
/// `protocolVersion`) whose content parts are all `text`: exactly what
/// `shape_call_result` makes of it (a unit test compares them), without the
/// JSON tree. None for anything else, which is read the general way: a
/// field of another type, a repeated field, a part of another kind, a
/// result or part that is no object, a value anywhere in the result that a
/// tree cannot hold (see [`Checked`]). Generated answers compare it with
/// rmcp's path (`ten_thousand_generated_answers_end_as_on_rmcps_path`).
fn shape_text_answer(line: &[u8]) -> Option<(i64, ToolResult)> {
    let answer: TextAnswer = serde_json::from_slice(line).ok()?;
    let (None, None, Some(result)) = (&answer.method, &answer.error, answer.result) else {
        return None;
    };
    let content = result.content?;
    if result.protocol_version || content.iter().any(|p| p.kind != "text") {
        return None;
    }
    let id = numeric(&answer.id)?;
    let text = || {
        let texts: Vec<&str> = content.iter().filter_map(|p| p.text.as_deref()).collect();
        texts.join("\n")
    };
    let shaped = if result.is_error == Some(true) {
        ToolResult::error(text())
    } else if let Some(Compact(structured)) = result.structured {
        ToolResult::ok(structured)
    } else {
        ToolResult::ok(text())
    };
    Some((id, shaped))
}

#[derive(serde::Serialize)]
struct CallLine<'a> {
    jsonrpc: &'static str,
    id: i64,
    method: &'static str,
    params: CallParams<'a>,
}

#[derive(serde::Serialize)]
struct CallParams<'a> {
    name: &'a str,
    arguments: &'a Map<String, Value>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<CallMeta<'a>>,
}

#[derive(serde::Serialize)]
struct CallMeta<'a> {
    #[serde(rename = "progressToken")]
    progress_token: &'a str,
}

/// The tools/call line with id `id` (newline included): the bytes rmcp's
/// path writes for it (a unit test compares them), and `_meta.progressToken`
/// when the caller wants the server's progress.
fn call_line(
    id: i64,
    tool: &str,
    args: &Map<String, Value>,
    progress: Option<&str>,
) -> serde_json::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(&CallLine {
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: CallParams {
            name: tool,
            arguments: args,
            meta: progress.map(|progress_token| CallMeta { progress_token }),
        },
    })?;
    line.push(b'\n');
    Ok(line)
}

/// `notifications/cancelled` for `id`, as rmcp writes it.
fn cancel_line(id: i64, reason: &str) -> Vec<u8> {
    let note = CancelledNotification::new(CancelledNotificationParam::new(
        Some(RequestId::Number(id)),
        Some(reason.to_string()),
    ));
    let msg: ClientJsonRpcMessage = JsonRpcMessage::notification(ClientNotification::from(note));
    let mut line = serde_json::to_vec(&msg).unwrap_or_default();
    line.push(b'\n');
    line
}

fn closed_pipe() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the transport is closed")
}

/// A failed write, as rmcp's path reports a failed send.
fn transport_send(e: io::Error) -> ServiceError {
    ServiceError::TransportSend(DynamicTransportError::new::<ClientLineTransport, RoleClient>(e))
}

fn send_failure(e: serde_json::Error) -> Failure {
    Failure::Service(transport_send(io::Error::other(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{
        ClientRequest, CustomRequest, GetMeta, JsonRpcRequest, NumberOrString, ProgressToken,
    };
    use tokio::sync::Mutex;

    /// The line rmcp's path writes for this tools/call (the session's
    /// `request`, then `ClientLineTransport::send`).
    fn rmcp_line(id: i64, tool: &str, args: &Map<String, Value>) -> Vec<u8> {
        let params = serde_json::json!({"name": tool, "arguments": Value::Object(args.clone())});
        let mut request =
            ClientRequest::CustomRequest(CustomRequest::new("tools/call", Some(params)));
        request
            .get_meta_mut()
            .set_progress_token(ProgressToken(NumberOrString::Number(3)));
        let mut item = JsonRpcMessage::Request(JsonRpcRequest::new(RequestId::Number(id), request));
        super::super::lines::drop_progress_token(&mut item);
        let mut line = super::super::lines::encode(&item).unwrap_or_default();
        line.push(b'\n');
        line
    }

    #[test]
    fn a_direct_tools_call_is_the_line_rmcps_path_writes() {
        let cases = [
            serde_json::json!({}),
            serde_json::json!({"text": "a\"b\n\u{00e9}\u{1F600}\u{7f}\\", "n": [1, 2.5, -0.0, 1e300, null, {"z": true, "a": {}}]}),
            serde_json::json!({"z": 1, "a": 2, "_meta": {"x": 1}, "": ""}),
        ];
        for args in cases {
            let Value::Object(args) = args else { continue };
            for (id, tool) in [
                (FIRST_ID, "echo"),
                (i64::from(i32::MAX), "we\"ird \u{2028} name"),
            ] {
                let ours = call_line(id, tool, &args, None).unwrap_or_default();
                assert!(ours.ends_with(b"}\n"));
                assert_eq!(
                    String::from_utf8_lossy(&ours),
                    String::from_utf8_lossy(&rmcp_line(id, tool, &args))
                );
            }
        }
    }

    #[test]
    fn a_cancel_is_the_notification_rmcp_writes() {
        let note = CancelledNotification::new(CancelledNotificationParam::new(
            Some(RequestId::Number(FIRST_ID)),
            Some(TIMEOUT_REASON.into()),
        ));
        let msg: ClientJsonRpcMessage = JsonRpcMessage::notification(note.into());
        let mut rmcp = super::super::lines::encode(&msg).unwrap_or_default();
        rmcp.push(b'\n');
        assert_eq!(
            String::from_utf8_lossy(&cancel_line(FIRST_ID, TIMEOUT_REASON)),
            String::from_utf8_lossy(&rmcp)
        );
        assert_eq!(
            String::from_utf8_lossy(&rmcp),
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1000000000,\"reason\":\"request timeout\"}}\n"
        );
    }

    #[test]
    fn ids_run_from_a_billion_and_wrap_within_i32_skipping_those_in_flight() {
        let (write, _read) = (Arc::new(Mutex::new(None)), ());
        let direct = Direct::new(write);
        let (first, _a) = direct.register().unwrap_or_else(|_| panic!("closed"));
        assert_eq!(first, FIRST_ID);
        direct.next.store(ID_SPAN - 1, Ordering::Relaxed);
        let (last, _b) = direct.register().unwrap_or_else(|_| panic!("closed"));
        assert_eq!(last, i64::from(i32::MAX));
        // Wrapped: FIRST_ID is still in flight, so the next is FIRST_ID + 1.
        let (wrapped, _c) = direct.register().unwrap_or_else(|_| panic!("closed"));
        assert_eq!(wrapped, FIRST_ID + 1);
        assert_eq!(direct.pending(), 3);
        direct.forget(first);
        assert_eq!(direct.pending(), 2);
        direct.close_all();
        assert_eq!(direct.pending(), 0);
        assert!(matches!(
            direct.register(),
            Err(Failure::Service(ServiceError::TransportClosed))
        ));
    }

    #[test]
    fn a_text_answer_read_in_one_pass_is_what_shape_call_result_makes_of_it() {
        use crate::mcp::shape::shape_call_result;
        let results = [
            r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b\"\u00e9"}]}"#,
            r#"{"content":[{"type":"text","text":"{\"result\": \"hi\"}"}],"structuredContent":{"result":"hi", "n": 1.50, "e": 1e3},"isError":false}"#,
            r#"{"content":[{"type":"text","text":"x"}],"isError":true,"structuredContent":{"a":1}}"#,
            r#"{"content":[{"type":"text","text":"x"}],"structuredContent":null}"#,
            r#"{"content":[{"type":"text"},{"type":"text","text":null},{"type":"text","text":"t","annotations":{"a":1}}]}"#,
            r#"{"content":[],"isError":null,"_meta":{"k":"v"},"extra":[1]}"#,
            r#"{"content":[],"structuredContent":{"a":[1,-2,3.0,-0.0,1e300,2.5e-8,18446744073709551615,-9223372036854775808,123456789012345678901234567890],"b":{"c":null,"d":[[],{}],"e":"\u00e9\ud83d\ude00\n\u0001\/"},"":true,"f":false}}"#,
            r#"{"content":[],"structuredContent":[1,"two",{"three":[3]}]}"#,
            r#"{"content":[],"structuredContent":"text"}"#,
            r#"{"content":[],"structuredContent":0}"#,
            r#"{"content":[],"structuredContent":{}}"#,
            r#"{"content":[],"structuredContent":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18}}"#,
            r#"{"content":[]}"#,
            // Read the general way, the same result either way.
            r#"{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}"#,
            r#"{"content":[{"type":"text","text":"x"}],"protocolVersion":null}"#,
            r#"{"content":[{"type":"text","text":"x"}],"content":[{"type":"text","text":"y"}]}"#,
            r#"{"content":[{"type":"text","text":1}]}"#,
            r#"{"content":[],"structuredContent":{"a":1,"b":2,"a":3}}"#,
            r#"{"content":[],"structuredContent":{"x":{"a":1,"a":1}}}"#,
            r#"{"content":[],"structuredContent":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k3":18}}"#,
            r#"{"content":["text"]}"#,
            r#"{"content":null}"#,
            r#"{"content":[{"type":"text","text":"x"}],"isError":"true"}"#,
            r#"{"content":[{"type":"resource","resource":{"uri":"u","text":"r"}}]}"#,
            r#"{"content":[{"type":"text","text":"t"}],"\u0069sError":true}"#,
            r#"{"content":[{"type":"text","text":"t"}],"isError":false,"isError":true}"#,
            r#"{"content":[{"type":"text","text":"t","type":"text"}]}"#,
            r#"{"content":[{"type":"text","text":"t","text":"u"}]}"#,
            r#"{"content":[{"text":"t"}]}"#,
            r#"{"content":[["text","in a list"]]}"#,
            r#"[[{"type":"text","text":"in an array"}],null,null]"#,
            r#"{"content":[{"type":"text","text":"t","annotations":{"a":[1e300,"\u00e9",{}]}}],"_meta":[null]}"#,
        ];
        let mut fast = 0;
        for result in results {
            let line = format!(r#"{{"jsonrpc":"2.0","id":"{FIRST_ID}","result":{result}}}"#);
            let value: Value = serde_json::from_str(result).unwrap_or_default();
            let expected = shape_call_result(&value);
            if let Some((id, shaped)) = shape_text_answer(line.as_bytes()) {
                fast += 1;
                assert_eq!(id, FIRST_ID);
                assert_eq!(
                    shaped.to_json_string(),
                    expected.to_json_string(),
                    "{result}"
                );
            }
            // The direct call's answer, whichever way it was read.
            let direct = Direct::new(Arc::new(Mutex::new(None)));
            let (id, mut rx) = direct.register().unwrap_or_else(|_| panic!("closed"));
            let line = line.replace(&format!("\"{FIRST_ID}\""), &id.to_string());
            let taken = direct.offer(line.as_bytes());
            let got = match rx.try_recv() {
                Ok(Ok(Reply::Shaped(r))) => r,
                Ok(Ok(Reply::Json(v))) => shape_call_result(&v),
                other => panic!("{result}: {taken} {other:?}"),
            };
            assert_eq!(got.to_json_string(), expected.to_json_string(), "{result}");
        }
        assert_eq!(fast, 15);
        // Never for anything but a plain answer.
        for other in [
            r#"{"jsonrpc":"2.0","id":1,"method":"m","result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"},"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"protocolVersion":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":"one","result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","result":{"content":[]}}"#,
        ] {
            assert!(shape_text_answer(other.as_bytes()).is_none(), "{other}");
        }
    }

    #[test]
    fn an_answer_a_json_tree_cannot_hold_is_dropped_as_rmcps_path_drops_it() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let text = r#"{"content":[{"type":"text","text":"t"}]"#;
        let results: Vec<Vec<u8>> = [
            format!("{text},\"_meta\":{{\"k\":{deep}}}}}"),
            format!("{text},\"extra\":1e400}}"),
            format!("{text},\"extra\":-1e400}}"),
            format!("{text},\"_meta\":{{\"k\":\"\\ud800\"}}}}"),
            format!("{text},\"_meta\":{{\"\\udc00\":1}}}}"),
            format!("{text},\"structuredContent\":{deep}}}"),
            format!("{text},\"protocolVersion\":1e400}}"),
            r#"{"content":[{"type":"text","text":"t","annotations":{"priority":1e400}}]}"#.into(),
            r#"{"content":[{"type":"text","text":"\ud800"}]}"#.into(),
        ]
        .into_iter()
        .map(String::into_bytes)
        // Bytes that are not UTF-8: in fields nobody reads, in the text.
        .chain([
            b"{\"_meta\":{\"k\":\"\xff\"},\"content\":[{\"type\":\"text\",\"text\":\"t\"}]}"
                .to_vec(),
            b"{\"content\":[{\"type\":\"text\",\"text\":\"t\",\"x\":\"\xc3\"}]}".to_vec(),
            b"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}".to_vec(),
        ])
        .collect();
        for result in results {
            let direct = Direct::new(Arc::new(Mutex::new(None)));
            let (id, mut rx) = direct.register().unwrap_or_else(|_| panic!("closed"));
            let mut line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#).into_bytes();
            line.extend_from_slice(&result);
            line.push(b'}');
            let shown = String::from_utf8_lossy(&result);
            assert!(serde_json::from_slice::<Value>(&result).is_err(), "{shown}");
            assert!(shape_text_answer(&line).is_none(), "{shown}");
            assert!(!direct.offer(&line), "{shown}");
            assert!(rx.try_recv().is_err(), "{shown}");
            assert_eq!(direct.pending(), 1, "{shown}");
            // And rmcp's side of the transport drops it too.
            assert!(super::super::lines::parse(&line).is_none(), "{shown}");
        }
    }

    use crate::test_json::Gen;

    /// A content part, or now and then any value in its place.
    fn part(gen: &mut Gen) -> Vec<u8> {
        if gen.below(10) == 0 {
            return gen.value(2);
        }
        let kinds: &[&[u8]] = &[
            br#""text""#,
            br#""text""#,
            br#""text""#,
            br#""te\u0078t""#,
            br#""image""#,
            br#""resource""#,
            b"5",
            b"null",
        ];
        let mut fields = Vec::new();
        for _ in 0..1 + gen.below(4) {
            let field = match gen.below(7) {
                0 | 1 => [&br#""type":"#[..], gen.pick(kinds)].concat(),
                2 | 3 => [&br#""text":"#[..], &gen.string()].concat(),
                4 => [&br#""text":"#[..], &gen.value(2)].concat(),
                5 => [&br#""annotations":"#[..], &gen.value(2)].concat(),
                _ => [&br#""resource":{"text":"#[..], &gen.string(), b"}"].concat(),
            };
            fields.push(field);
        }
        [b"{".to_vec(), fields.join(&b","[..]), b"}".to_vec()].concat()
    }
    /// A tools/call result, or now and then any value in its place.
    fn result(gen: &mut Gen) -> Vec<u8> {
        if gen.below(12) == 0 {
            return gen.value(1);
        }
        let mut fields = Vec::new();
        if gen.below(8) != 0 {
            let n = gen.below(4);
            let parts: Vec<Vec<u8>> = (0..n).map(|_| part(gen)).collect();
            let content = if gen.below(12) == 0 {
                gen.value(1)
            } else {
                [b"[".to_vec(), parts.join(&b","[..]), b"]".to_vec()].concat()
            };
            fields.push([&br#""content":"#[..], &content].concat());
        }
        for _ in 0..gen.below(4) {
            let field = match gen.below(8) {
                0 | 1 => [&br#""structuredContent":"#[..], &gen.value(1)].concat(),
                2 => br#""isError":true"#.to_vec(),
                3 => [&br#""isError":"#[..], &gen.value(3)].concat(),
                4 => [&br#""protocolVersion":"#[..], &gen.value(3)].concat(),
                5 => [&br#""_meta":"#[..], &gen.value(1)].concat(),
                6 => [&br#""\u0063ontent":["#[..], &part(gen), b"]"].concat(),
                _ => [&br#""content":["#[..], &part(gen), b"]"].concat(),
            };
            let at = gen.below(fields.len() + 1);
            fields.insert(at, field);
        }
        [b"{".to_vec(), fields.join(&b","[..]), b"}".to_vec()].concat()
    }

    /// What rmcp's side of the session makes of an answer line to the call
    /// `id`: lines::parse, then KnownIds (an id that reads as the one sent)
    /// and `session::request` (a custom result as it came, any other
    /// typed result as its JSON), shaped.
    fn on_rmcps_path(line: &[u8], id: i64) -> Option<Result<ToolResult, i32>> {
        use crate::mcp::shape::shape_call_result;
        let sent = RequestId::Number(id).to_string();
        match super::super::lines::parse(line)? {
            JsonRpcMessage::Response(r) if r.id.to_string() == sent => match r.result {
                ServerResult::CustomResult(custom) => Some(Ok(shape_call_result(&custom.0))),
                other => Some(Ok(shape_call_result(&serde_json::to_value(&other).ok()?))),
            },
            JsonRpcMessage::Error(e) if e.id.as_ref().map(ToString::to_string) == Some(sent) => {
                Some(Err(e.error.code.0))
            }
            _ => None,
        }
    }

    #[test]
    fn ten_thousand_generated_answers_end_as_on_rmcps_path() {
        use crate::mcp::shape::shape_call_result;
        let mut gen = Gen(0x9E37_79B9_7F4A_7C15);
        let (mut taken, mut fast, mut wrong) = (0, 0, Vec::new());
        let envelopes: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":ID,"result":R}"#,
            br#"{"result":R,"id":"ID","jsonrpc":"2.0"}"#,
            br#"{"jsonrpc":"2.0","id":ID,"result":R,"error":null}"#,
            br#"{"jsonrpc":"2.0","id":ID,"extra":[1e400],"result":R}"#,
            br#"{"jsonrpc":"2.0","id":ID,"result":R,"error":{"code":3,"message":"m"}}"#,
            br#"{"jsonrpc":"2.0","id":ID,"error":{"code":3,"message":"m","data":R}}"#,
        ];
        for _ in 0..10_000 {
            let direct = Direct::new(Arc::new(Mutex::new(None)));
            let (id, mut rx) = direct.register().unwrap_or_else(|_| panic!("closed"));
            let envelope = String::from_utf8_lossy(gen.pick(envelopes))
                .replace("ID", &id.to_string())
                .into_bytes();
            let result = result(&mut gen);
            let mut line = Vec::new();
            for (i, piece) in envelope.split(|&b| b == b'R').enumerate() {
                if i > 0 {
                    line.extend_from_slice(&result);
                }
                line.extend_from_slice(piece);
            }
            if shape_text_answer(&line).is_some() {
                fast += 1;
            }
            let ours = if direct.offer(&line) {
                taken += 1;
                match rx.try_recv() {
                    Ok(Ok(Reply::Shaped(r))) => Some(Ok(r)),
                    Ok(Ok(Reply::Json(v))) => Some(Ok(shape_call_result(&v))),
                    Ok(Err(Failure::Service(ServiceError::McpError(e)))) => Some(Err(e.code.0)),
                    other => panic!("{other:?}"),
                }
            } else {
                None
            };
            let theirs = on_rmcps_path(&line, id);
            let show = |r: &Option<Result<ToolResult, i32>>| match r {
                Some(Ok(r)) => r.to_json_string(),
                Some(Err(code)) => format!("error {code}"),
                None => "dropped".into(),
            };
            if show(&ours) != show(&theirs) {
                wrong.push(format!(
                    "{}\n  direct {}\n  rmcp   {}",
                    String::from_utf8_lossy(&line),
                    show(&ours),
                    show(&theirs)
                ));
            }
        }
        assert!(
            wrong.is_empty(),
            "{} of 10,000 differ:\n{}",
            wrong.len(),
            wrong[..wrong.len().min(8)].join("\n")
        );
        // Both kinds of answer, and both ways of reading one, came up.
        assert!(taken > 1_000 && taken < 9_000, "{taken}");
        assert!(fast > 300, "{fast}");
    }

    #[test]
    fn only_answers_to_calls_in_flight_are_taken() {
        let direct = Direct::new(Arc::new(Mutex::new(None)));
        let (id, mut rx) = direct.register().unwrap_or_else(|_| panic!("closed"));
        let line = |id: &str, rest: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},{rest}}}"#);
        let ok = r#""result":{"content":[{"type":"text","text":"hi"}]}"#;
        for other in [
            line("\"abc\"", ok),
            line("7", ok),
            line(&(id + 1).to_string(), ok),
            line(&id.to_string(), r#""method":"ping""#),
            format!(r#"{{"jsonrpc":"1.0","id":{id},{ok}}}"#),
            line("null", r#""error":{"code":1,"message":"m"}"#),
        ] {
            assert!(!direct.offer(other.as_bytes()), "{other}");
        }
        assert!(rx.try_recv().is_err());
        assert!(direct.offer(line(&id.to_string(), ok).as_bytes()));
        match rx.try_recv() {
            Ok(Ok(Reply::Shaped(r))) => assert_eq!((r.output.as_str(), r.is_error), ("hi", false)),
            other => panic!("{other:?}"),
        }
        assert_eq!(direct.pending(), 0);
        // Taken once: the same answer again is left to rmcp.
        assert!(!direct.offer(line(&id.to_string(), ok).as_bytes()));
        // An error object, and a numeric id echoed as a string.
        let (id, mut rx) = direct.register().unwrap_or_else(|_| panic!("closed"));
        let err = line(
            &format!("\"{id}\""),
            r#""error":{"code":-32000,"message":"no"}"#,
        );
        assert!(direct.offer(err.as_bytes()));
        match rx.try_recv() {
            Ok(Err(Failure::Service(ServiceError::McpError(e)))) => assert_eq!(e.code.0, -32000),
            other => panic!("{other:?}"),
        }
    }
}
