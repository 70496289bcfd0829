//! The stdio transport of the served toolkit: one JSON-RPC message per line
//! in, one per line out.
//!
//! rmcp's own line transport drops a line that is not JSON without a word;
//! a client that sent it then waits forever. Here such a line gets the
//! JSON-RPC parse error (-32700, id null), well-formed JSON that is no
//! message gets invalid request (-32600, with its id when it has one), and
//! the server reads on. Writes go through one lock, so concurrent answers
//! never interleave within a line.
//!
//! # The fast path
//!
//! Once the session is initialized (rmcp answered `initialize` with a
//! version before 2026-07-28, whose result shape is the legacy one, and
//! the client sent `notifications/initialized`), a plain `tools/call` (see
//! [`crate::jsonrpc::plain`]) never reaches rmcp: the transport runs it on a task of
//! its own (what [`Gateway::call`] runs) and writes the answer rmcp would
//! have written, byte for byte, through the same writer lock; a plain
//! `tools/list` is answered the same way. A session that did not start
//! with `initialize` (or ping) is rmcp's throughout. That skips rmcp's service loop
//! (a task per request, a channel hop each way, the typed encoding of the
//! answer), which is most of the gateway's CPU per call. Everything else
//! (`initialize`, other requests, `_meta`, answers to our requests,
//! notifications) goes to rmcp as before.
//!
//! A `notifications/cancelled` naming a call the transport runs cancels
//! that call, and no answer is written for it (as rmcp drops the answer of
//! a request it cancelled); one naming anything else goes to rmcp. When the
//! server is stopped, every call the transport runs is cancelled at once.
//! When the input ends (a client that piped its requests in and closed its
//! end, or one that left), the calls running get [`EOF_GRACE`] (1 s) to
//! finish, and whatever still runs then is cancelled (rmcp waits up to 5 s
//! for its own before it cancels them); what they answer is still written,
//! for a client that only closed its input, until the server has ended
//! (see [`Closer`]).

use super::{Gateway, InFlightTask};
use crate::jsonrpc::lines::{in_line, LineReader, Lock, Next};
use crate::jsonrpc::plain::{self, call_message, error_line, reject, Plain, INVALID_REQUEST};
use crate::tool::Relay;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, JsonRpcMessage, ProgressToken,
    RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// How long the calls running when the input ends get to finish before
/// they are cancelled (see the module docs).
pub const EOF_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

pub struct ServedLineTransport<R, W> {
    /// A line over `limits::LINE_BYTES` is answered as invalid and
    /// skipped.
    read: LineReader<R>,
    writer: Arc<Mutex<W>>,
    /// Set by [`Closer::close`]: the fast path writes no more.
    shut: Arc<AtomicBool>,
    /// The transport's own answers (to malformed lines) not yet written.
    pending: Arc<Pending>,
    /// The fast path, when the transport serves a gateway.
    fast: Option<Fast>,
}

/// Answers of the transport's own under way, so the end of the server
/// writes them before it closes (a client that piped a malformed line in
/// and closed its input still gets its answer).
#[derive(Default)]
struct Pending {
    count: std::sync::atomic::AtomicUsize,
    none: tokio::sync::Notify,
}

impl Pending {
    fn done(&self) {
        if self.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.none.notify_waiters();
        }
    }

    async fn written(&self) {
        loop {
            let notified = self.none.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// Ends the fast path's writes when the server is over: a call that
/// outlived it writes no answer (rmcp's own calls cannot either), so no
/// write comes after the server has put its stdout back in blocking mode.
pub struct Closer<W> {
    writer: Arc<Mutex<W>>,
    shut: Arc<AtomicBool>,
    pending: Arc<Pending>,
}

impl<W: AsyncWrite + Unpin> Closer<W> {
    /// No fast-path write starts after this; one under way is waited for
    /// (at most `limit`).
    pub async fn close(self, limit: std::time::Duration) {
        // The transport's own answers first (within the same limit).
        let _ = tokio::time::timeout(limit, self.pending.written()).await;
        self.shut.store(true, Ordering::SeqCst);
        let _ = tokio::time::timeout(limit, self.writer.lock()).await;
    }
}

/// What the fast path keeps (see the module docs).
struct Fast {
    gateway: Arc<Gateway>,
    session: Session,
    /// Cancelled when the input ends (or, as a child of the server's stop,
    /// when the server stops); every call's token is a child of it.
    calls: CancellationToken,
    running: Arc<Running>,
    /// Tells one call from a later one that reuses its id.
    next: u64,
}

/// How far the session is, as the fast path sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Session {
    /// Before rmcp's answer to `initialize`.
    Opening,
    /// rmcp answered `initialize` with a version whose results have the
    /// legacy shape; `notifications/initialized` has not come yet.
    Answered,
    /// Plain requests are the transport's.
    Ready,
    /// Everything is rmcp's for good: the negotiated version is one the
    /// fast path does not shape, or the client sent `initialize` again.
    Off,
}

/// The calls the fast path runs, by request id: the token that cancels
/// each, and the number telling it from a later call with the same id.
type Running = std::sync::Mutex<HashMap<RequestId, (u64, CancellationToken)>>;

/// Takes a call's entry out of [`Running`] when its task ends (even by a
/// panic); `finish` says whether the entry was still there, i.e. the
/// client did not cancel the call.
struct Entry {
    running: Arc<Running>,
    id: RequestId,
    seq: u64,
    done: bool,
}

impl Entry {
    fn finish(&mut self) -> bool {
        self.done = true;
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        match running.get(&self.id) {
            Some((seq, _)) if *seq == self.seq => running.remove(&self.id).is_some(),
            _ => false,
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        if !self.done {
            self.finish();
        }
    }
}

impl<R, W> ServedLineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(reader: R, writer: W) -> Self {
        ServedLineTransport {
            read: LineReader::new(reader),
            writer: Arc::new(Mutex::new(writer)),
            shut: Arc::default(),
            pending: Arc::default(),
            fast: None,
        }
    }

    fn out(&self) -> Out<W> {
        Out {
            writer: Arc::clone(&self.writer),
            shut: Arc::clone(&self.shut),
        }
    }

    /// Takes lines of at most `cap` bytes; a longer one is answered as an
    /// invalid request and skipped, never held whole.
    pub fn with_line_cap(mut self, cap: usize) -> Self {
        self.read = self.read.with_cap(cap);
        self
    }

    /// Writes an answer of the transport's own (a malformed line's) on a
    /// task: `receive` must not wait for the writer, since rmcp drops its
    /// future whenever another event comes first, and the answer with it.
    fn answer_later(&self, line: Vec<u8>) {
        let out = self.out();
        let pending = Arc::clone(&self.pending);
        pending.count.fetch_add(1, Ordering::SeqCst);
        crate::runtime::get().spawn(async move {
            out.line(line).await;
            pending.done();
        });
    }

    /// What ends the fast path's writes (see [`Closer`]).
    pub fn closer(&self) -> Closer<W> {
        Closer {
            writer: Arc::clone(&self.writer),
            shut: Arc::clone(&self.shut),
            pending: Arc::clone(&self.pending),
        }
    }

    /// Answers plain requests itself once the session is initialized (see
    /// the module docs); `calls` cancels every call it runs.
    pub fn with_fast_path(mut self, gateway: Arc<Gateway>, calls: CancellationToken) -> Self {
        self.fast = Some(Fast {
            gateway,
            session: Session::Opening,
            calls,
            running: Arc::default(),
            next: 0,
        });
        self
    }

    /// Runs a plain request on the fast path when the session is ready for
    /// it; `Err` hands it back for rmcp. A call with the client's progress
    /// `token` gets the proxied server's progress and log lines on the way,
    /// as rmcp's path relays them ([`progress_relay`]).
    fn take_plain(&mut self, plain: Plain, progress: Option<ProgressToken>) -> Result<(), Plain> {
        if !self
            .fast
            .as_ref()
            .is_some_and(|f| f.session == Session::Ready)
        {
            return Err(plain);
        }
        let out = self.out();
        let notes = progress.is_some().then(|| self.out());
        let Some(fast) = self.fast.as_mut() else {
            return Err(plain);
        };
        if !crate::jsonrpc::plain_path_takes(&plain, fast.gateway.streams()) {
            return Err(plain);
        }
        match plain {
            Plain::List { id } => {
                let answer = plain::list_answer(fast.gateway.list(), id);
                crate::runtime::get().spawn(async move { out.message(&answer).await });
            }
            Plain::NotAnObject { .. } => return Err(plain),
            Plain::Call {
                id,
                name,
                arguments,
            } => {
                let token = fast.calls.child_token();
                fast.next += 1;
                let seq = fast.next;
                fast.running
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(id.clone(), (seq, token.clone()));
                let mut entry = Entry {
                    running: Arc::clone(&fast.running),
                    id: id.clone(),
                    seq,
                    done: false,
                };
                let in_flight = InFlightTask::enter(&fast.gateway);
                let gateway = Arc::clone(&fast.gateway);
                let args = Value::Object(arguments.unwrap_or_default());
                let relay = match (progress, notes) {
                    (Some(progress), Some(notes)) => progress_relay(notes, progress),
                    _ => Relay::default(),
                };
                crate::runtime::get().spawn(async move {
                    let _in_flight = in_flight;
                    let relay = relay.keeping();
                    let outcome = gateway.run(name, args, token, Some(relay.clone())).await;
                    // Cancelled by the client: no answer (rmcp's way).
                    if !entry.finish() {
                        return;
                    }
                    if let Ok(line) = plain::call_answer_kept(id, outcome, relay.raw_result()) {
                        out.line(line).await;
                    }
                });
            }
        }
        Ok(())
    }

    /// Notes what a message rmcp is about to get says about the session;
    /// `true` when it is a cancellation the fast path took (not for rmcp).
    fn observe(&mut self, msg: &ClientJsonRpcMessage) -> bool {
        let Some(fast) = self.fast.as_mut() else {
            return false;
        };
        match msg {
            JsonRpcMessage::Notification(n) => match &n.notification {
                ClientNotification::InitializedNotification(_)
                    if fast.session == Session::Answered =>
                {
                    fast.session = Session::Ready;
                }
                ClientNotification::CancelledNotification(c) => {
                    let Some(id) = &c.params.request_id else {
                        return false;
                    };
                    let taken = fast
                        .running
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(id);
                    if let Some((_, token)) = taken {
                        token.cancel();
                        return true;
                    }
                }
                _ => {}
            },
            JsonRpcMessage::Request(r) => {
                let off = match (&r.request, fast.session) {
                    // Before the session, rmcp takes a request other than
                    // initialize or ping (with its own `_meta`) as a
                    // session of the 2026-07-28 kind, which has no
                    // `initialize` and wants `_meta` on every request.
                    (
                        ClientRequest::InitializeRequest(_) | ClientRequest::PingRequest(_),
                        Session::Opening,
                    ) => false,
                    (_, Session::Opening) => true,
                    // A second initialize may change what rmcp answers with.
                    (ClientRequest::InitializeRequest(_), _) => true,
                    _ => false,
                };
                if off {
                    fast.session = Session::Off;
                }
            }
            _ => {}
        }
        false
    }

    /// Notes rmcp's answer to `initialize`: the version it negotiated
    /// decides the shape of every result it gives after.
    fn observe_sent(&mut self, msg: &ServerJsonRpcMessage) {
        let Some(fast) = self.fast.as_mut() else {
            return;
        };
        if let JsonRpcMessage::Response(r) = msg {
            if let ServerResult::InitializeResult(init) = &r.result {
                let legacy = crate::jsonrpc::plain_path(&init.protocol_version);
                fast.session = if fast.session == Session::Opening && legacy {
                    Session::Answered
                } else {
                    Session::Off
                };
            }
        }
    }

    /// Keeps a line's buffer (its capacity) for the next line.
    fn recycle(&mut self, raw: Vec<u8>) {
        self.read.recycle(raw);
    }

    /// Reads up to the end of the next line (see [`LineReader`]), a line
    /// past the cap answered as invalid; `false` at EOF or on a read error.
    async fn next_line(&mut self) -> bool {
        loop {
            match self.read.next().await {
                Next::Line => return true,
                Next::TooLong => {
                    self.answer_later(error_line(
                        Value::Null,
                        INVALID_REQUEST,
                        "line too long: longer than the server takes (maxRequestBytes)",
                    ));
                }
                Next::End => return false,
            }
        }
    }
}

/// Where the transport writes answers of its own (the fast path's, a
/// malformed line's): the transport's writer, unless the server is over. A
/// failed write is the client gone; the read side will see it.
struct Out<W> {
    writer: Arc<Mutex<W>>,
    shut: Arc<AtomicBool>,
}

impl<W: AsyncWrite + Unpin> Out<W> {
    /// Writes one answer line (without its newline), as `send` writes
    /// rmcp's.
    async fn line(&self, mut line: Vec<u8>) {
        line.push(b'\n');
        let mut w = self.writer.lock().await;
        if self.shut.load(Ordering::SeqCst) {
            return;
        }
        let _ = w.write_all(&line).await;
        let _ = w.flush().await;
    }

    async fn message(&self, message: &ServerJsonRpcMessage) {
        if let Ok(line) = serde_json::to_vec(message) {
            self.line(line).await;
        }
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> Out<W> {
    /// Writes `message` in the writer's queue now, without waiting (a
    /// relay's callback must not block): at once when the writer is free,
    /// else on a task that holds its place in the queue, so it goes out
    /// before any answer that asks for the writer after it.
    fn message_now(&self, message: &ServerJsonRpcMessage) {
        let Ok(mut line) = serde_json::to_vec(message) else {
            return;
        };
        line.push(b'\n');
        let shut = Arc::clone(&self.shut);
        let (w, written) = match in_line(&self.writer) {
            Lock::Now(mut w) => {
                if shut.load(Ordering::SeqCst) {
                    return;
                }
                match crate::runtime::write_now(&mut *w, &line) {
                    Ok(n) if n == line.len() => return,
                    Ok(n) => (Lock::Now(w), n),
                    Err(_) => return,
                }
            }
            queued => (queued, 0),
        };
        crate::runtime::get().spawn(async move {
            let mut w = match w {
                Lock::Now(w) => w,
                Lock::Queued(lock) => lock.await,
            };
            if shut.load(Ordering::SeqCst) {
                return;
            }
            let _ = w.write_all(&line[written..]).await;
            let _ = w.flush().await;
        });
    }
}

/// The relay of a fast-path call whose client gave a progress `token`:
/// what rmcp's path (`super::relay_to`) passes on, as it writes it: the
/// proxied server's progress under the client's token, its log lines as
/// they are; each in the writer's queue when the server's notification
/// comes, so before the call's answer.
#[allow(deprecated)] // rmcp's logging types, as `super::relay_to` uses them
fn progress_relay<W: AsyncWrite + Unpin + Send + 'static>(
    out: Out<W>,
    token: ProgressToken,
) -> Relay {
    use rmcp::model::{
        LoggingMessageNotification, LoggingMessageNotificationParam, ProgressNotification,
        ServerNotification,
    };
    Relay::new(Arc::new(move |method: &str, params: Value| {
        let note = match method {
            "notifications/progress" => {
                let Some(p) = super::progress_param(&token, &params) else {
                    return;
                };
                ServerNotification::ProgressNotification(ProgressNotification::new(p))
            }
            "notifications/message" => {
                let Ok(p) = serde_json::from_value::<LoggingMessageNotificationParam>(params)
                else {
                    return;
                };
                ServerNotification::LoggingMessageNotification(LoggingMessageNotification::new(p))
            }
            _ => return,
        };
        out.message_now(&JsonRpcMessage::notification(note));
    }))
}

impl<R, W> Transport<RoleServer> for ServedLineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.observe_sent(&item);
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        // Out at once when no other answer holds the writer (see
        // `runtime::write_now`); the lock is kept until the line is whole.
        // Else in the writer's queue now, in the order rmcp sends.
        let (now, queued) = match &line {
            Ok(bytes) => match in_line(&self.writer) {
                Lock::Now(mut w) => (Some((crate::runtime::write_now(&mut *w, bytes), w)), None),
                Lock::Queued(lock) => (None, Some(lock)),
            },
            Err(_) => (None, None),
        };
        let writer = Arc::clone(&self.writer);
        async move {
            let line = line?;
            let (mut w, written) = match (now, queued) {
                (Some((written, w)), _) => (w, written?),
                (None, Some(lock)) => (lock.await, 0),
                (None, None) => (writer.lock_owned().await, 0),
            };
            if written < line.len() {
                w.write_all(&line[written..]).await?;
            }
            w.flush().await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if !self.next_line().await {
                // The input ended: a client that piped its calls in and
                // closed its end still wants their answers, so the calls
                // running get EOF_GRACE to finish; what still runs then
                // is cancelled (a client that left mid-call).
                if let Some(fast) = &self.fast {
                    let (calls, gateway) = (fast.calls.clone(), Arc::clone(&fast.gateway));
                    crate::runtime::get().spawn(async move {
                        tokio::select! {
                            _ = tokio::time::timeout(EOF_GRACE, gateway.in_flight.idle()) => {}
                            _ = calls.cancelled() => {}
                        }
                        calls.cancel();
                    });
                }
                return None;
            }
            let raw = self.read.take();
            let text = crate::jsonrpc::lines::text(&raw);
            let answer = if text.iter().all(u8::is_ascii_whitespace) {
                None
            } else if plain::is_batch(text) {
                // rmcp's parse takes no batch, and would hold a tree of the
                // whole line to say so.
                plain::reject_batch(text)
            } else {
                let read = plain::read_request_with_progress(text);
                let parsed =
                    match read.map(|(p, token)| (token.is_some(), self.take_plain(p, token))) {
                        Some((_, Ok(()))) => {
                            self.recycle(raw);
                            continue;
                        }
                        Some((false, Err(plain))) => call_message(plain),
                        // With its `_meta`: rmcp's parse of the line.
                        Some((true, Err(_))) | None => None,
                    };
                match parsed
                    .map_or_else(|| serde_json::from_slice::<ClientJsonRpcMessage>(text), Ok)
                {
                    Ok(msg) => {
                        self.recycle(raw);
                        if self.observe(&msg) {
                            continue;
                        }
                        return Some(msg);
                    }
                    Err(e) => reject(text, &e),
                }
            };
            self.recycle(raw);
            if let Some(answer) = answer {
                self.answer_later(answer);
            }
        }
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        let writer = Arc::clone(&self.writer);
        async move { writer.lock().await.flush().await }
    }
}

/// A reader or writer of the served stdio.
pub type Reader = Box<dyn AsyncRead + Unpin + Send>;
pub type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// The process's stdin and stdout for the server. When one is a pipe (how
/// MCP clients spawn a server) it is read or written straight on the
/// runtime, through a duplicate of the descriptor made non-blocking:
/// `tokio::io::stdin()`/`stdout()` do every read and every write on the
/// blocking pool, a thread handoff each way per message. Anything else (a
/// terminal, a file, a socket) keeps tokio's own. Must be called inside the
/// runtime. The [`Blocking`] guards put the blocking mode back when the
/// server ends, since it belongs to a description shared with the fd 0/1.
pub fn process_stdio() -> (Reader, Writer, Vec<Blocking>) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let mut guards = Vec::new();
    let stdin = std::io::stdin();
    let reader: Reader = match stdin.as_fd().try_clone_to_owned() {
        Ok(fd) => {
            let guard = Blocking::remember(0);
            match pipe::Receiver::from_owned_fd(fd) {
                Ok(rx) => {
                    guards.extend(guard);
                    Box::new(rx)
                }
                // Not a pipe: tokio's checks come before any change.
                Err(_) => Box::new(tokio::io::stdin()),
            }
        }
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let stdout = std::io::stdout();
    let writer: Writer = match stdout.as_fd().try_clone_to_owned() {
        Ok(fd) => {
            let guard = Blocking::remember(1);
            match pipe::Sender::from_owned_fd(fd) {
                Ok(tx) => {
                    guards.extend(guard);
                    Box::new(tx)
                }
                Err(_) => Box::new(tokio::io::stdout()),
            }
        }
        Err(_) => Box::new(tokio::io::stdout()),
    };
    (reader, writer, guards)
}

/// Clears `O_NONBLOCK` again on drop for a descriptor that had it clear.
pub struct Blocking(std::os::fd::RawFd);

impl Blocking {
    fn remember(fd: std::os::fd::RawFd) -> Option<Blocking> {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let flags = fcntl(fd, FcntlArg::F_GETFL).ok()?;
        (!OFlag::from_bits_truncate(flags).contains(OFlag::O_NONBLOCK)).then_some(Blocking(fd))
    }
}

impl Drop for Blocking {
    fn drop(&mut self) {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        if let Ok(flags) = fcntl(self.0, FcntlArg::F_GETFL) {
            let flags = OFlag::from_bits_truncate(flags) - OFlag::O_NONBLOCK;
            let _ = fcntl(self.0, FcntlArg::F_SETFL(flags));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{DuplexStream, ReadHalf, WriteHalf};

    /// Once rmcp answered `initialize` and the client said
    /// `notifications/initialized`, plain lines never come out of
    /// `receive`: the transport answers them; anything else still does.
    /// The fast-path transport of the tests, on an in-memory pipe.
    type Pipe = ServedLineTransport<ReadHalf<DuplexStream>, WriteHalf<DuplexStream>>;

    /// rmcp's answer to `initialize` (id 0) at 2025-06-18, as the transport
    /// sees it go out.
    async fn answer_initialize(t: &mut Pipe) {
        use rmcp::model::{InitializeResult, ServerCapabilities};
        let answer = InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(rmcp::model::ProtocolVersion::V_2025_06_18);
        let sent = t.send(ServerJsonRpcMessage::response(
            ServerResult::InitializeResult(answer),
            RequestId::Number(0),
        ));
        assert!(sent.await.is_ok());
    }

    /// A transport with the fast path over a builtin-only gateway, on an
    /// in-memory pipe, and the client's read and write ends.
    fn fast_transport() -> (Pipe, ReadHalf<DuplexStream>, WriteHalf<DuplexStream>) {
        use super::super::{Gateway, Profile};
        let Ok(tk) = crate::toolkit::Toolkit::build_from_json("{}") else {
            panic!("no toolkit");
        };
        let gateway = Arc::new(Gateway::new(
            Arc::new(tk),
            &Profile::default(),
            None,
            super::super::CALLS_IN_FLIGHT,
        ));
        let (client, server_end) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(server_end);
        let (from, to) = tokio::io::split(client);
        let t =
            ServedLineTransport::new(read, write).with_fast_path(gateway, CancellationToken::new());
        (t, from, to)
    }

    #[test]
    fn plain_lines_are_the_transports_once_the_session_is_initialized() {
        use tokio::io::AsyncReadExt;
        let (mut t, mut from, mut to) = fast_transport();
        let method = |m: &Option<ClientJsonRpcMessage>| {
            m.as_ref()
                .and_then(|m| serde_json::to_value(m).ok())
                .map(|v| (v["id"].clone(), v["method"].clone()))
        };
        crate::runtime::block_on(async move {
            let plain_call = r#"{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"read","arguments":{"path":"/nonexistent"}}}"#;
            let plain_list = r#"{"jsonrpc":"2.0","id":"l","method":"tools/list"}"#;
            let meta_call = r#"{"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"name":"read","_meta":{}}}"#;
            let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
            let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
            let lines = format!("{init}\n");
            let _ = to.write_all(lines.as_bytes()).await;
            assert_eq!(
                method(&t.receive().await),
                Some((json!(0), json!("initialize")))
            );
            answer_initialize(&mut t).await;
            let lines = format!(
                "{plain_call}\n{plain_list}\n{initialized}\n{plain_list}\n{plain_call}\n{meta_call}\n"
            );
            let _ = to.write_all(lines.as_bytes()).await;
            // Answered, not yet initialized: rmcp's.
            assert_eq!(
                method(&t.receive().await),
                Some((json!("c"), json!("tools/call")))
            );
            assert_eq!(
                method(&t.receive().await),
                Some((json!("l"), json!("tools/list")))
            );
            assert_eq!(
                method(&t.receive().await),
                Some((Value::Null, json!("notifications/initialized")))
            );
            // The plain list and call are answered on the way to the next
            // line that is not plain.
            assert_eq!(
                method(&t.receive().await),
                Some((json!("m"), json!("tools/call")))
            );
            let mut out = Vec::new();
            let mut buf = [0u8; 4096];
            while out.iter().filter(|b| **b == b'\n').count() < 3 {
                let n = from.read(&mut buf).await.unwrap_or(0);
                assert!(n > 0, "{}", String::from_utf8_lossy(&out));
                out.extend_from_slice(&buf[..n]);
            }
            let text = String::from_utf8_lossy(&out);
            let mut ids: Vec<Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .map(|v| v["id"].clone())
                .collect();
            ids.sort_by_key(|v| v.to_string());
            assert_eq!(ids, vec![json!("c"), json!("l"), json!(0)], "{text}");
            // The end of the input cancels what the fast path runs (at
            // once here: nothing runs, so the grace has nothing to wait for).
            drop(to);
            drop(from);
            assert!(t.receive().await.is_none());
            let calls = t.fast.as_ref().map(|f| f.calls.clone());
            let Some(calls) = calls else {
                panic!("no fast path")
            };
            let waited =
                tokio::time::timeout(std::time::Duration::from_secs(20), calls.cancelled());
            assert!(waited.await.is_ok(), "the calls were never cancelled");
        });
    }

    /// A session that opens with another request than `initialize` is
    /// rmcp's throughout, even after an `initialize`.
    #[test]
    fn a_session_that_opens_otherwise_stays_rmcps() {
        let (mut t, _from, mut to) = fast_transport();
        crate::runtime::block_on(async move {
            let lines = concat!(
                r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"protocolVersion":"2026-07-28"}}}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
                "\n",
            );
            let _ = to.write_all(lines.as_bytes()).await;
            for _ in 0..3 {
                assert!(t.receive().await.is_some());
            }
            assert_eq!(t.fast.as_ref().map(|f| f.session), Some(Session::Off));
            answer_initialize(&mut t).await;
            let lines = concat!(
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
                "\n",
            );
            let _ = to.write_all(lines.as_bytes()).await;
            assert!(t.receive().await.is_some());
            let list = t.receive().await.and_then(|m| serde_json::to_value(m).ok());
            assert_eq!(list.map(|v| v["id"].clone()), Some(json!(3)));
        });
    }
}
