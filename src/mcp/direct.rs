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
use super::relay::RelayGuard;
use crate::cancel::CancelToken;
use crate::jsonrpc::lines::{in_line, Lock};
use crate::jsonrpc::plain::{self, call_line, cancel_line};
use crate::tool::ToolResult;
use rmcp::service::{RoleClient, ServiceError};
use rmcp::transport::DynamicTransportError;
use serde_json::{Map, Value};
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
    /// The answer's typed result could not be written back as JSON (its
    /// `malformed-result (WHY)`, WHY held here).
    Malformed(String),
    /// The caller's cancel token fired (the server was told).
    Cancelled,
    /// The call's `maxTotalTimeout` (held here) passed while the server
    /// was still reporting progress (the server was told).
    TotalTimeout(Duration),
}

/// Whether a direct call asks for its server's progress.
#[derive(Clone, Copy)]
pub enum Progress<'a> {
    /// No progress token.
    None,
    /// A progress token (its progress restarts the timeout).
    Token,
    /// A progress token, its progress also routed to this registration.
    Relayed(&'a RelayGuard<'a>),
}

/// How long a call may take: `timeout` without a word from the server
/// (each progress on the call starts it again when `reset` holds), and
/// `cap` in all.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub timeout: Duration,
    pub reset: bool,
    pub cap: Option<Duration>,
}

/// What a direct call gets back.
#[derive(Debug)]
pub enum Reply {
    /// A plain text answer, shaped as it was read (`plain::read_answer`).
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
    /// Set once the line is out (`timeout` counts from then): the
    /// instant, and the timeout it came from.
    deadline: Option<(Instant, Duration)>,
    /// The `maxTotalTimeout`'s instant and length, when the call has one;
    /// `deadline` never passes it.
    cap: Option<(Instant, Duration)>,
    /// Whether a progress on the call starts its timeout again
    /// ([`Direct::extend`]).
    reset: bool,
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
/// As rmcp words it (`RequestHandle::REQUEST_MAX_TOTAL_TIMEOUT_REASON`).
const TOTAL_REASON: &str = "maximum total timeout exceeded";

/// Why a caller gave up on its call, as told to the server.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Reason {
    Cancel = 2,
    Timeout = 3,
    Dropped = 4,
    Total = 5,
}

impl Reason {
    fn text(self) -> &'static str {
        match self {
            Reason::Cancel => CANCEL_REASON,
            Reason::Timeout => TIMEOUT_REASON,
            Reason::Dropped => DROPPED_REASON,
            Reason::Total => TOTAL_REASON,
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
            Err(r) if r == Reason::Total as u8 => Some(Reason::Total),
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
        state.pending.insert(
            id,
            Waiting {
                tx,
                deadline: None,
                cap: None,
                reset: false,
            },
        );
        self.live.store(state.pending.len(), Ordering::Release);
        Ok((id, rx))
    }

    /// Starts call `id`'s `timeout` (and its cap), now that its line is out.
    fn arm(self: &Arc<Self>, id: i64, timing: Timing) {
        let now = Instant::now();
        let cap = timing.cap.map(|c| (now + c, c));
        let deadline = earliest(now + timing.timeout, cap);
        let mut state = self.state();
        let Some(waiting) = state.pending.get_mut(&id) else {
            return;
        };
        waiting.deadline = Some((deadline, timing.timeout));
        waiting.cap = cap;
        waiting.reset = timing.reset;
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

    /// A progress on call `id` (its token's, see [`token`]): its timeout
    /// starts again (never past its cap) when the call's timing says so;
    /// an id no call in flight has is nothing. The watchdog needs no word:
    /// the deadline only moved later, and it wakes for the earlier one,
    /// finds nothing due and sleeps on.
    pub fn extend(&self, id: i64) {
        let now = Instant::now();
        let mut state = self.state();
        if let Some(w) = state.pending.get_mut(&id).filter(|w| w.reset) {
            if let Some((at, timeout)) = &mut w.deadline {
                *at = earliest(now + *timeout, w.cap);
            }
        }
    }

    /// Answers every call past its deadline with `Timeout` (or
    /// `TotalTimeout`, at its cap); the earliest
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
            let late: Vec<(oneshot::Sender<Answer>, Failure)> = state
                .pending
                .extract_if(|_, w| w.deadline.is_some_and(|(at, _)| at <= now))
                .filter_map(|(_, w)| {
                    let failure = match (w.cap, w.deadline) {
                        (Some((at, cap)), _) if at <= now => Failure::TotalTimeout(cap),
                        (_, Some((_, timeout))) => {
                            Failure::Service(ServiceError::Timeout { timeout })
                        }
                        (_, None) => return None,
                    };
                    Some((w.tx, failure))
                })
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
        for (tx, failure) in late {
            let _ = tx.send(Err(failure));
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
        let read = plain::read_answer(line, |id| self.state().pending.contains_key(&id));
        let Some((id, answer)) = read else {
            return false;
        };
        let answer = match answer {
            plain::Answer::Shaped(result) => Ok(Reply::Shaped(result)),
            plain::Answer::Json(result) => Ok(Reply::Json(result)),
            plain::Answer::Error(e) => Err(Failure::Service(ServiceError::McpError(e))),
            plain::Answer::Unwritable(e) => Err(Failure::Malformed(e.to_string())),
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
    /// by `timing` from the moment the line is out, as rmcp's request is;
    /// on a timeout, the cap or a cancel the server is told
    /// `notifications/cancelled`. Unless `progress` is [`Progress::None`],
    /// the call carries a progress token named after its id ([`token`]),
    /// and (when `timing.reset`) each progress on it starts the timeout
    /// again (the session's [`super::relay::Relays`] tell
    /// [`Direct::extend`]).
    pub async fn call(
        self: &Arc<Self>,
        tool: &str,
        args: &Map<String, Value>,
        timing: Timing,
        cancel: Option<&CancelToken>,
        progress: Progress<'_>,
    ) -> Answer {
        let timeout = timing.timeout;
        let (id, rx) = self.register()?;
        let mut text = [0u8; TOKEN_BYTES];
        let progress = match progress {
            Progress::None => None,
            Progress::Token => Some(token(id, &mut text)),
            Progress::Relayed(guard) => {
                let token = token(id, &mut text);
                guard.watch(&Value::String(token.to_string()));
                Some(token)
            }
        };
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
                self.arm(id, timing);
                tokio::select! {
                    biased;
                    answer = rx => match answer {
                        // From the watchdog, which has forgotten the id.
                        Ok(Err(timeout @ Failure::Service(ServiceError::Timeout { .. }))) => {
                            (Reason::Timeout, timeout)
                        }
                        Ok(Err(total @ Failure::TotalTimeout(_))) => (Reason::Total, total),
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

/// Room for the longest [`token`] (`tn-` and an i64).
const TOKEN_BYTES: usize = 24;

/// The progress token of the direct call `id`: `tn-ID`, a string (so it
/// never meets rmcp's numeric ones), unique among the session's calls in
/// flight since their ids are, and read back by [`token_id`]: no
/// registration per call.
pub fn token(id: i64, buf: &mut [u8; TOKEN_BYTES]) -> &str {
    // The digits from the end of `buf` back (no formatter: this runs per
    // call), then the prefix.
    let mut at = TOKEN_BYTES;
    let mut n = id.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if id < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    at -= 3;
    buf[at..at + 3].copy_from_slice(b"tn-");
    std::str::from_utf8(&buf[at..]).unwrap_or("tn-")
}

#[cfg(test)]
#[test]
fn a_token_names_its_id() {
    let mut buf = [0u8; TOKEN_BYTES];
    for id in [0, 7, FIRST_ID, i64::from(i32::MAX), i64::MAX, i64::MIN, -12] {
        let token = token(id, &mut buf).to_string();
        assert_eq!(token, format!("tn-{id}"));
        assert_eq!(token_id(&Value::String(token)), Some(id));
    }
}

/// The direct call a progress token of [`token`]'s names.
pub fn token_id(token: &Value) -> Option<i64> {
    token.as_str()?.strip_prefix("tn-")?.parse().ok()
}

/// `at`, or the cap's instant when that comes first.
fn earliest(at: Instant, cap: Option<(Instant, Duration)>) -> Instant {
    match cap {
        Some((c, _)) if c < at => c,
        _ => at,
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
    use tokio::sync::Mutex;

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
