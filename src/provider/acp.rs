//! An Agent Client Protocol (ACP) agent as a model source (upstream 0.21,
//! contract §10.1): a child process spoken to over its stdin and stdout,
//! one JSON-RPC 2.0 object per line, whose one warm session answers the
//! turns of an in-process client (`crate::client`'s ACP client plugs
//! [`AcpSession::generate`] in where a host `generate` function goes).
//!
//! - Our requests carry the ids `"c-1"`, `"c-2"`, …; one background reader
//!   (a task on the shared runtime) takes every line the child writes and
//!   hands each reply to the call waiting on its id.
//! - The handshake: `initialize` → `session/new {cwd, mcpServers: []}` →
//!   `session/set_mode` when a mode is given; each call bounded by
//!   [`HANDSHAKE_TIMEOUT`].
//! - A turn is one `session/prompt` whose text is [`render_prompt`] of the
//!   request; only `agent_message_chunk` text is kept as the answer
//!   (thought chunks and tool narration are dropped); turns are serialised
//!   (one session is one conversation) and bounded by the permission
//!   timeout. A cancelled turn sends `session/cancel` and stops waiting.
//! - `session/request_permission` from the agent is answered inline by
//!   the reader: the first option whose `kind` starts with `allow` is
//!   selected, else the request is cancelled. Any other request from the
//!   agent is answered `{}`.
//! - When the child closes its stdout every call waiting fails with
//!   [`EOF_MESSAGE`], and so does every later one.
//! - [`AcpSession::close`] (also on drop) closes the child's stdin, sends
//!   SIGTERM to its process group, waits up to [`CLOSE_GRACE`], then sends
//!   SIGKILL; the child is always reaped.
//!
//! Bounded: a line longer than [`LINE_BYTES`] is skipped, the answer of a
//! turn is capped at [`RESPONSE_BODY_BYTES`], and the agent's requests are
//! answered one at a time by the reader (a full pipe slows the reader, it
//! never queues). The child is started with SIGPIPE unblocked
//! ([`crate::runtime`]), and every write to it runs with SIGPIPE blocked,
//! so a child that exits early is a `broken pipe` error, never a signal.

use crate::cancel::CancelToken;
use crate::error::{Error, ErrorCode, Result};
use crate::jsonrpc::lines::{text, LineReader, Next};
use crate::limits::{LINE_BYTES, RESPONSE_BODY_BYTES};
use crate::runtime;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::{oneshot, watch};

/// The marker line that names the latest user turn as superseding every
/// earlier one in the session (the session keeps its own transcript, and
/// each turn sends the whole one again).
pub const SUPERSEDES_MARKER: &str = "SUPERSEDES-ALL-PRIOR";

/// How long each handshake call (and [`AcpSession::call`]) may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a turn waits for its `session/prompt` reply by default.
pub const DEFAULT_PERMISSION_TIMEOUT: Duration = Duration::from_secs(5);

/// How long [`AcpSession::close`] waits for the child after SIGTERM, and
/// again after SIGKILL.
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// The error of every call pending when the child closed its stdout.
pub const EOF_MESSAGE: &str = "acp: child process closed the connection";

/// The protocol version `initialize` sends by default.
pub const DEFAULT_PROTOCOL_VERSION: u16 = 1;

/// How long a cancelled turn's `session/cancel` may take to write.
const CANCEL_WRITE: Duration = Duration::from_secs(1);

/// How an ACP agent is started and spoken to (upstream's `ACPOptions`).
#[derive(Debug, Clone)]
pub struct AcpOptions {
    /// The program to run.
    pub command: String,
    pub args: Vec<String>,
    /// The session's working directory (also the child's), made absolute;
    /// `None`: the current directory.
    pub cwd: Option<String>,
    /// Variables set for the child on top of this process's environment.
    pub env: Vec<(String, String)>,
    pub protocol_version: u16,
    /// How long a turn waits for its reply.
    pub permission_timeout: Duration,
    /// A mode set with `session/set_mode` after `session/new`.
    pub mode: Option<String>,
}

impl AcpOptions {
    /// `command` with no arguments and the defaults.
    pub fn new(command: impl Into<String>) -> AcpOptions {
        AcpOptions {
            command: command.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            protocol_version: DEFAULT_PROTOCOL_VERSION,
            permission_timeout: DEFAULT_PERMISSION_TIMEOUT,
            mode: None,
        }
    }
}

/// Seconds as upstream writes them in its messages (Python's float repr:
/// `30.0`, `0.5`).
fn seconds(d: Duration) -> String {
    format!("{:?}", d.as_secs_f64())
}

/// The text of a message's `content`: a string as it is; a list of parts
/// as their texts joined with nothing between (a part's `text`, a text
/// part's `value`, or a bare string; other parts skipped).
fn content_text(content: &Value) -> String {
    fn scalar(v: &Value) -> String {
        match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
    match content {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let mut out = String::new();
            for item in items {
                match item {
                    Value::Object(part) => {
                        let text = match part.get("text") {
                            None | Some(Value::Null)
                                if part.get("type") == Some(&json!("text")) =>
                            {
                                part.get("value").filter(|v| !v.is_null())
                            }
                            other => other.filter(|v| !v.is_null()),
                        };
                        if let Some(t) = text {
                            out.push_str(&scalar(t));
                        }
                    }
                    Value::String(s) => out.push_str(s),
                    _ => {}
                }
            }
            out
        }
        other => scalar(other),
    }
}

/// The prompt text of a turn: one line `"<role>: <text>"` for each message
/// of `request.messages` that has text, then the marker line
/// `"SUPERSEDES-ALL-PRIOR: <the last user text>"` (the last line rendered
/// when no user message has text).
pub fn render_prompt(request: &Value) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut last_user = String::new();
    let messages = request.get("messages").and_then(Value::as_array);
    for message in messages.into_iter().flatten() {
        let Value::Object(m) = message else {
            continue;
        };
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let text = content_text(m.get("content").unwrap_or(&Value::Null));
        if text.is_empty() {
            continue;
        }
        lines.push(format!("{role}: {text}"));
        if role == "user" {
            last_user = text;
        }
    }
    if last_user.is_empty() {
        if let Some(last) = lines.last() {
            last_user = last.clone();
        }
    }
    lines.push(format!("{SUPERSEDES_MARKER}: {last_user}"));
    lines.join("\n")
}

/// A reply to one of our calls: its result, or the error message.
type Reply = std::result::Result<Value, String>;

/// The message of a JSON-RPC error object: `acp error <code>: <message>`.
fn rpc_error(error: &Value) -> String {
    let part = |key: &str| match error.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "None".to_string(),
        Some(other) => other.to_string(),
    };
    format!("acp error {}: {}", part("code"), part("message"))
}

/// The text of the turn in flight.
#[derive(Default)]
struct Answer {
    text: String,
    /// The text passed [`RESPONSE_BODY_BYTES`]; the rest was dropped.
    over: bool,
}

#[derive(Default)]
struct State {
    /// Our calls waiting for their reply, by id.
    pending: HashMap<String, oneshot::Sender<Reply>>,
    /// The reader is done: the child closed its stdout, or the session
    /// was closed. No call waits from then on.
    ended: bool,
    /// The answer of the turn in flight (`None` between turns: chunks
    /// then are dropped).
    turn: Option<Answer>,
}

/// What the caller and the reader share.
struct Shared {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    state: Mutex<State>,
    closed: AtomicBool,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes one message as a line.
    async fn write(&self, msg: &Value) -> std::result::Result<(), String> {
        let mut line = serde_json::to_vec(msg).unwrap_or_default();
        line.push(b'\n');
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin
            .as_mut()
            .filter(|_| !self.closed.load(Ordering::SeqCst))
        else {
            return Err("acp: the session is closed".into());
        };
        let wrote = match pipe.write_all(&line).await {
            Ok(()) => pipe.flush().await,
            Err(e) => Err(e),
        };
        wrote.map_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                runtime::take_sigpipe_after_epipe();
            }
            format!("acp: failed to write to child process: {e}")
        })
    }

    /// The reader is done: every call still waiting fails with
    /// [`EOF_MESSAGE`].
    fn end(&self) {
        let pending = {
            let mut state = self.state();
            state.ended = true;
            std::mem::take(&mut state.pending)
        };
        for (_, slot) in pending {
            let _ = slot.send(Err(EOF_MESSAGE.to_string()));
        }
    }

    /// One message from the child.
    async fn take(&self, msg: Map<String, Value>) {
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty());
        let id = msg.get("id").filter(|id| !id.is_null());
        match (method, id) {
            (None, Some(id)) => self.answered(id, &msg),
            (Some("session/update"), _) => self.update(msg.get("params")),
            (Some("session/request_permission"), Some(id)) => {
                let result = permission_outcome(msg.get("params"));
                let _ = self
                    .write(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
                    .await;
            }
            (Some(_), Some(id)) => {
                let _ = self
                    .write(&json!({"jsonrpc": "2.0", "id": id, "result": {}}))
                    .await;
            }
            _ => {}
        }
    }

    /// A reply to one of our calls.
    fn answered(&self, id: &Value, msg: &Map<String, Value>) {
        let Some(id) = id.as_str() else {
            return;
        };
        let Some(slot) = self.state().pending.remove(id) else {
            return;
        };
        let failed = msg
            .get("error")
            .filter(|e| !matches!(e, Value::Null) && e.as_object().is_none_or(|o| !o.is_empty()));
        let reply = match failed {
            Some(error) => Err(rpc_error(error)),
            None => Ok(match msg.get("result") {
                None | Some(Value::Null) => json!({}),
                Some(r) => r.clone(),
            }),
        };
        let _ = slot.send(reply);
    }

    /// A `session/update`: an `agent_message_chunk`'s text joins the turn's
    /// answer; everything else is dropped.
    fn update(&self, params: Option<&Value>) {
        let Some(update) = params.and_then(|p| p.get("update")) else {
            return;
        };
        if update.get("sessionUpdate").and_then(Value::as_str) != Some("agent_message_chunk") {
            return;
        }
        let Some(text) = update
            .get("content")
            .and_then(|c| c.get("text"))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        else {
            return;
        };
        let mut state = self.state();
        let Some(answer) = state.turn.as_mut() else {
            return;
        };
        if answer.text.len() + text.len() > RESPONSE_BODY_BYTES {
            answer.over = true;
        } else if !answer.over {
            answer.text.push_str(text);
        }
    }
}

/// The answer to a `session/request_permission`: the first option whose
/// `kind` starts with `allow`, selected; cancelled when there is none.
fn permission_outcome(params: Option<&Value>) -> Value {
    let options = params
        .and_then(|p| p.get("options"))
        .and_then(Value::as_array);
    let chosen = options.into_iter().flatten().find(|o| {
        o.get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.starts_with("allow"))
    });
    match chosen
        .and_then(|o| o.get("optionId"))
        .filter(|id| !id.is_null())
    {
        Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
        None => json!({"outcome": {"outcome": "cancelled"}}),
    }
}

/// Reads the child's stdout to its end, line by line.
async fn read_loop(shared: Arc<Shared>, stdout: ChildStdout) {
    let mut lines = LineReader::new(stdout).with_cap(LINE_BYTES);
    loop {
        match lines.next().await {
            Next::End => break,
            Next::TooLong => continue,
            Next::Line => {}
        }
        let msg = serde_json::from_slice::<Value>(text(lines.line()));
        lines.clear();
        if let Ok(Value::Object(msg)) = msg {
            shared.take(msg).await;
        }
    }
    shared.end();
}

/// How a wait for a reply ended.
enum Waited {
    Reply(Reply),
    TimedOut,
    Cancelled,
    /// Writing the request failed.
    Unsent(String),
}

/// One warm ACP session: one child process, one `sessionId`, many turns.
/// Safe to share between threads; turns take their turn.
pub struct AcpSession {
    shared: Arc<Shared>,
    next_id: AtomicU64,
    /// Held for the length of a turn; holds the reply slot of a turn given
    /// up on (timed out or cancelled), whose reply the next turn waits for
    /// first.
    turn: Mutex<Option<(String, oneshot::Receiver<Reply>)>>,
    session_id: Value,
    permission_timeout: Duration,
    pgid: Pid,
    exit: watch::Receiver<Option<ExitStatus>>,
    closing: AtomicBool,
}

impl std::fmt::Debug for AcpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpSession")
            .field("pid", &self.pid())
            .field("session_id", &self.session_id)
            .finish()
    }
}

impl AcpSession {
    /// Starts the agent and performs the handshake. A failure closes the
    /// child before it is reported: a spawn failure or a JSON-RPC error is
    /// `provider_error`, a handshake call that takes longer than
    /// [`HANDSHAKE_TIMEOUT`] is `timeout`.
    pub fn connect(options: &AcpOptions) -> Result<AcpSession> {
        let cwd = match &options.cwd {
            Some(dir) => std::path::absolute(dir),
            None => std::env::current_dir(),
        }
        .map_err(|e| Error::invalid_config(format!("acp: no working directory: {e}")))?;
        let cwd_text = cwd.to_string_lossy().into_owned();
        let mut session = runtime::block_on_anywhere(async { Self::spawn(options, &cwd) })?;
        let connected = (|| {
            let caps = json!({"fs": {"readTextFile": false, "writeTextFile": false}});
            session.call(
                "initialize",
                json!({"protocolVersion": options.protocol_version, "clientCapabilities": caps}),
            )?;
            let opened = session.call("session/new", json!({"cwd": cwd_text, "mcpServers": []}))?;
            session.session_id = opened.get("sessionId").cloned().unwrap_or(Value::Null);
            if let Some(mode) = &options.mode {
                session.call(
                    "session/set_mode",
                    json!({"sessionId": session.session_id, "modeId": mode}),
                )?;
            }
            Ok(())
        })();
        // On failure the session is dropped here, which closes the child.
        connected.map(|()| session)
    }

    /// Starts the child and its reader and reaper (inside the runtime).
    fn spawn(options: &AcpOptions, cwd: &std::path::Path) -> Result<AcpSession> {
        let mut cmd = Command::new(&options.command);
        cmd.args(&options.args)
            .envs(options.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = runtime::spawn_child(&mut cmd).map_err(|e| {
            Error::new(
                ErrorCode::ProviderError,
                format!("acp: cannot start '{}': {e}", options.command),
            )
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::new(
                ErrorCode::ProviderError,
                "acp: the child's pipes are missing",
            ));
        };
        let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) else {
            return Err(Error::new(
                ErrorCode::ProviderError,
                "acp: the child exited at once",
            ));
        };
        let (tx, exit) = watch::channel(None);
        tokio::spawn(async move {
            // The reaper owns the child: no zombie is left behind.
            if let Ok(status) = child.wait().await {
                let _ = tx.send(Some(status));
            }
        });
        let shared = Arc::new(Shared {
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            state: Mutex::new(State::default()),
            closed: AtomicBool::new(false),
        });
        tokio::spawn(read_loop(Arc::clone(&shared), stdout));
        Ok(AcpSession {
            shared,
            next_id: AtomicU64::new(1),
            turn: Mutex::new(None),
            session_id: Value::Null,
            permission_timeout: options.permission_timeout,
            pgid: Pid::from_raw(pid),
            exit,
            closing: AtomicBool::new(false),
        })
    }

    /// The process id of the agent (also its process group's).
    pub fn pid(&self) -> u32 {
        self.pgid.as_raw().unsigned_abs()
    }

    /// The `sessionId` the agent gave `session/new`.
    pub fn session_id(&self) -> &Value {
        &self.session_id
    }

    /// Whether the child is still running (not yet reaped).
    pub fn is_alive(&self) -> bool {
        self.exit.borrow().is_none()
    }

    /// Registers a call under a fresh id; the EOF error when the reader is
    /// done.
    fn register(&self) -> std::result::Result<(String, oneshot::Receiver<Reply>), Error> {
        let id = format!("c-{}", self.next_id.fetch_add(1, Ordering::SeqCst));
        let (tx, rx) = oneshot::channel();
        let mut state = self.shared.state();
        if state.ended {
            return Err(Error::new(ErrorCode::ProviderError, EOF_MESSAGE));
        }
        state.pending.insert(id.clone(), tx);
        Ok((id, rx))
    }

    /// Writes `msg` and waits for the reply to `id` until `until`, or a
    /// cancel.
    fn exchange(
        &self,
        msg: &Value,
        rx: &mut oneshot::Receiver<Reply>,
        until: Instant,
        cancel: Option<&CancelToken>,
    ) -> Waited {
        let shared = &self.shared;
        let wait = async {
            if let Err(e) = shared.write(msg).await {
                return Waited::Unsent(e);
            }
            match rx.await {
                Ok(reply) => Waited::Reply(reply),
                // The reader dropped the slot without a word: it ended.
                Err(_) => Waited::Reply(Err(EOF_MESSAGE.into())),
            }
        };
        runtime::block_on_anywhere(async {
            let deadline = tokio::time::Instant::from_std(until);
            let timed = tokio::time::timeout_at(deadline, wait);
            match cancel {
                None => timed.await.unwrap_or(Waited::TimedOut),
                Some(cancel) => tokio::select! {
                    out = timed => out.unwrap_or(Waited::TimedOut),
                    () = cancel.cancelled() => Waited::Cancelled,
                },
            }
        })
    }

    /// Calls `method` on the agent and waits up to [`HANDSHAKE_TIMEOUT`]
    /// for its result (an extension method, say). A JSON-RPC error is
    /// `provider_error` (`acp error <code>: <message>`), no reply in time
    /// `timeout` (`acp: <method> timed out after 30.0s`).
    pub fn call(&self, method: &str, params: Value) -> Result<Value> {
        let (id, mut rx) = self.register()?;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let waited = self.exchange(&msg, &mut rx, Instant::now() + HANDSHAKE_TIMEOUT, None);
        self.shared.state().pending.remove(&id);
        match waited {
            Waited::Reply(Ok(result)) => Ok(result),
            Waited::Reply(Err(e)) | Waited::Unsent(e) => {
                Err(Error::new(ErrorCode::ProviderError, e))
            }
            Waited::TimedOut | Waited::Cancelled => Err(Error::new(
                ErrorCode::Timeout,
                format!(
                    "acp: {method} timed out after {}s",
                    seconds(HANDSHAKE_TIMEOUT)
                ),
            )),
        }
    }

    /// One turn: `request` is an in-process client's generate event
    /// (`{messages, ...}`); the answer is `{content}`, the text of the
    /// agent's message chunks. Waits up to the permission timeout (or
    /// `deadline`, when sooner) for the agent's reply: past it the turn
    /// fails `timeout`; a JSON-RPC error, a closed child or an answer past
    /// [`RESPONSE_BODY_BYTES`] fail it `provider_error`. A `cancel` sends
    /// `session/cancel` and fails the turn `cancelled` at once.
    ///
    /// A turn given up on (timed out or cancelled) may still be answered:
    /// the next turn first waits for that reply (up to the permission
    /// timeout), so what the agent still says for the old turn is dropped
    /// and never joins the new answer.
    pub fn generate(
        &self,
        request: &Value,
        cancel: Option<&CancelToken>,
        deadline: Option<Instant>,
    ) -> Result<Value> {
        let mut given_up = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        let cancelled = || Error::new(ErrorCode::Cancelled, "the run was cancelled");
        if cancel.is_some_and(CancelToken::is_cancelled) {
            return Err(cancelled());
        }
        if let Some((old_id, old)) = given_up.take() {
            let limit = tokio::time::Instant::now() + self.permission_timeout;
            runtime::block_on_anywhere(async {
                let late = tokio::time::timeout_at(limit, old);
                match cancel {
                    None => drop(late.await),
                    Some(cancel) => tokio::select! {
                        out = late => drop(out),
                        () = cancel.cancelled() => {}
                    },
                }
            });
            // Answered or not, the old turn is forgotten now: a reply that
            // comes later finds no one.
            self.shared.state().pending.remove(&old_id);
            if cancel.is_some_and(CancelToken::is_cancelled) {
                return Err(cancelled());
            }
        }
        let prompt = render_prompt(request);
        self.shared.state().turn = Some(Answer::default());
        let registered = self.register();
        let (id, mut rx) = match registered {
            Ok(r) => r,
            Err(e) => {
                self.shared.state().turn = None;
                return Err(e);
            }
        };
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {
            "sessionId": self.session_id,
            "prompt": [{"type": "text", "text": prompt}],
        }});
        let limit = Instant::now() + self.permission_timeout;
        let until = deadline.map_or(limit, |d| d.min(limit));
        let waited = self.exchange(&msg, &mut rx, until, cancel);
        let answer = {
            let mut state = self.shared.state();
            if matches!(waited, Waited::TimedOut | Waited::Cancelled) {
                // Its reply may still come: the next turn waits for it.
                *given_up = Some((id, rx));
            } else {
                state.pending.remove(&id);
            }
            state.turn.take().unwrap_or_default()
        };
        let failed = |e: String| Error::new(ErrorCode::ProviderError, e);
        match waited {
            Waited::Reply(Ok(_)) if answer.over => Err(failed(format!(
                "acp: the answer passed {RESPONSE_BODY_BYTES} bytes"
            ))),
            Waited::Reply(Ok(_)) => Ok(json!({"content": answer.text})),
            Waited::Reply(Err(e)) | Waited::Unsent(e) => Err(failed(e)),
            Waited::TimedOut if until < limit => Err(Error::new(
                ErrorCode::Timeout,
                "acp: the run's deadline passed while the turn waited for its reply",
            )),
            Waited::TimedOut => Err(Error::new(
                ErrorCode::Timeout,
                format!(
                    "acp: turn hung waiting on a reply (possibly an unanswered session/request_permission) after {}s",
                    seconds(self.permission_timeout)
                ),
            )),
            Waited::Cancelled => {
                let note = json!({"jsonrpc": "2.0", "method": "session/cancel",
                                  "params": {"sessionId": self.session_id}});
                let shared = &self.shared;
                runtime::block_on_anywhere(async {
                    let _ = tokio::time::timeout(CANCEL_WRITE, shared.write(&note)).await;
                });
                Err(cancelled())
            }
        }
    }

    /// Ends the session: closes the child's stdin, sends SIGTERM to its
    /// process group, waits up to [`CLOSE_GRACE`], then SIGKILL; every call
    /// still waiting fails with [`EOF_MESSAGE`]. Idempotent; a turn in
    /// flight on another thread fails at once.
    pub fn close(&self) {
        if self.closing.swap(true, Ordering::SeqCst) {
            return;
        }
        self.shared.closed.store(true, Ordering::SeqCst);
        let shared = &self.shared;
        let mut exit = self.exit.clone();
        let pgid = self.pgid;
        runtime::block_on_anywhere(async move {
            // A write stuck on a full pipe holds the lock: the signals
            // below end it, and the stdin goes with the session.
            if let Ok(mut stdin) = shared.stdin.try_lock() {
                drop(stdin.take());
            }
            let reaped = |exit: &mut watch::Receiver<Option<ExitStatus>>| {
                let mut exit = exit.clone();
                async move {
                    tokio::time::timeout(CLOSE_GRACE, exit.wait_for(Option::is_some))
                        .await
                        .is_ok_and(|r| r.is_ok())
                }
            };
            if exit.borrow_and_update().is_none() {
                let _ = killpg(pgid, Signal::SIGTERM);
                if !reaped(&mut exit).await {
                    let _ = killpg(pgid, Signal::SIGKILL);
                    let _ = reaped(&mut exit).await;
                    // Closed means gone: the agent's whole group.
                    crate::process::killed(pgid).await;
                }
            }
        });
        self.shared.end();
    }
}

impl Drop for AcpSession {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_is_one_line_per_message_with_text_then_the_marker() {
        let request = json!({"messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "tool", "content": "42"},
            {"role": "user", "content": ""},
        ]});
        assert_eq!(
            render_prompt(&request),
            "system: be brief\nuser: ab\ntool: 42\nSUPERSEDES-ALL-PRIOR: ab"
        );
        // No user text: the marker repeats the last line rendered.
        let only = json!({"messages": [{"role": "system", "content": "s"}]});
        assert_eq!(
            render_prompt(&only),
            "system: s\nSUPERSEDES-ALL-PRIOR: system: s"
        );
        assert_eq!(render_prompt(&json!({})), "SUPERSEDES-ALL-PRIOR: ");
    }

    #[test]
    fn a_permission_request_selects_the_first_allow_option() {
        let params = json!({"options": [
            {"optionId": "no", "kind": "reject_once"},
            {"optionId": "yes", "kind": "allow_once"},
            {"optionId": "always", "kind": "allow_always"},
        ]});
        assert_eq!(
            permission_outcome(Some(&params)),
            json!({"outcome": {"outcome": "selected", "optionId": "yes"}})
        );
        let none = json!({"options": [{"optionId": "no", "kind": "reject_always"}]});
        assert_eq!(
            permission_outcome(Some(&none)),
            json!({"outcome": {"outcome": "cancelled"}})
        );
        assert_eq!(
            permission_outcome(None),
            json!({"outcome": {"outcome": "cancelled"}})
        );
    }

    #[test]
    fn seconds_are_written_as_upstream_writes_them() {
        assert_eq!(seconds(Duration::from_secs(30)), "30.0");
        assert_eq!(seconds(Duration::from_millis(500)), "0.5");
        assert_eq!(seconds(Duration::from_millis(2500)), "2.5");
        assert_eq!(
            rpc_error(&json!({"code": -32602, "message": "Invalid params"})),
            "acp error -32602: Invalid params"
        );
    }
}
