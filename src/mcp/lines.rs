//! The stdio transport: one JSON-RPC message per line each way.
//!
//! rmcp's own line transport answers a line that parses as JSON but not as a
//! message (`7…`, `[]`, `{}`) with an `Invalid request` error written to the
//! server — from inside `receive`, and waiting for the write to finish.
//! A server that prints a large binary preamble before its first message
//! produces such lines by the thousand while it is still writing and not yet
//! reading its stdin: once those replies fill the stdin pipe (64 KiB, about
//! 900 replies), `receive` blocks on the write, stops reading stdout, the
//! server blocks writing stdout, and the session stalls until its timeout.
//! Whether a given preamble does this depends only on how many of its lines
//! happen to start like a JSON value (issue 14: one 6,176,768-byte preamble
//! stalled, one a byte shorter did not).
//!
//! Here reading never writes (the framing of `crate::jsonrpc::lines`). A
//! line that is not a message the client understands is dropped without an
//! answer, as the reference SDKs' stdio clients do (they log it and read
//! on); a request or response the server got wrong is not something a
//! client must reply to. Lines longer than `limits::LINE_BYTES` are
//! dropped too, without ever holding more than that.

use super::relay::Relays;
use super::stdio::PipeStdin;
use crate::jsonrpc::lines::{in_line, LineReader, Lock, Next};
use crate::jsonrpc::plain::{drop_progress_token, encode_request, read_server_message};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use std::future::Future;
use std::io;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdout;
use tokio::sync::Mutex;

pub struct ClientLineTransport {
    /// Lives here, not in `receive`, because rmcp polls `receive` in a
    /// `select!` and may drop it mid-line: the next call goes on where the
    /// last one stopped.
    read: LineReader<ChildStdout>,
    /// None once closed (stdin EOF for the server).
    write: Pipe,
    /// Who takes answers out of the stream before rmcp sees them (the
    /// session's direct tools/calls, which write to the same pipe).
    taker: Option<Arc<dyn Taker>>,
    /// Where the server's progress and log notifications go as they are
    /// read, before any line after them ([`Relays::read_in_order`]).
    notes: Option<Arc<Relays>>,
    /// Whether a tools/call keeps the progress token rmcp put on it (the
    /// server's `resetTimeoutOnProgress`: its progress restarts the
    /// call's timeout, so it is asked for); every other request goes
    /// without one (see [`drop_progress_token`]).
    call_tokens: bool,
}

/// The write half of a stdio server's pipe: None once closed.
pub type Pipe = Arc<Mutex<Option<PipeStdin>>>;

/// Takes the answers meant for it out of the server's lines before rmcp
/// sees them: the transport offers it each line, and tells it when no
/// answer will come any more.
pub trait Taker: Send + Sync {
    /// Whether anything waits for an answer (no line is offered when not).
    fn waiting(&self) -> bool;
    /// Takes `line` when it is an answer meant for it.
    fn offer(&self, line: &[u8]) -> bool;
    /// The transport is gone: nothing will answer.
    fn closed(&self);
}

impl ClientLineTransport {
    pub fn new(stdout: ChildStdout, stdin: PipeStdin) -> Self {
        ClientLineTransport {
            read: LineReader::new(stdout),
            write: Arc::new(Mutex::new(Some(stdin))),
            taker: None,
            notes: None,
            call_tokens: false,
        }
    }

    /// Keeps the progress token on tools/call requests.
    pub fn with_call_tokens(mut self, keep: bool) -> Self {
        self.call_tokens = keep;
        self
    }

    /// The write half of the pipe, for writers beside rmcp's.
    pub fn pipe(&self) -> Pipe {
        Arc::clone(&self.write)
    }

    /// Offers every line to `taker` first.
    pub fn with_taker(mut self, taker: Arc<dyn Taker>) -> Self {
        self.taker = Some(taker);
        self
    }

    /// Hands the server's progress and log notifications to `relays` as
    /// they are read (and still to rmcp, whose handlers then leave them).
    pub fn with_notes(mut self, relays: Arc<Relays>) -> Self {
        relays.read_in_order();
        self.notes = Some(relays);
        self
    }

    fn closed(&self) {
        if let Some(taker) = &self.taker {
            taker.closed();
        }
    }

    /// Reads until the reader holds one whole line (its newline stripped),
    /// a line past the cap dropped. False at EOF or on a read error: the
    /// server is gone.
    async fn next_line(&mut self) -> bool {
        loop {
            match self.read.next().await {
                Next::Line => return true,
                Next::TooLong => continue,
                Next::End => return false,
            }
        }
    }
}

fn is_tools_call(item: &ClientJsonRpcMessage) -> bool {
    use rmcp::model::{ClientRequest, JsonRpcMessage};
    match item {
        JsonRpcMessage::Request(req) => match &req.request {
            ClientRequest::CustomRequest(custom) => custom.method == "tools/call",
            ClientRequest::CallToolRequest(_) => true,
            _ => false,
        },
        _ => false,
    }
}

impl Drop for ClientLineTransport {
    fn drop(&mut self) {
        // rmcp's loop ended (EOF, close, cancel): no answer will come.
        self.closed();
    }
}

impl Transport<RoleClient> for ClientLineTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        mut item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if !(self.call_tokens && is_tools_call(&item)) {
            drop_progress_token(&mut item);
        }
        let bytes = encode_request(&item).map(|mut bytes| {
            bytes.push(b'\n');
            bytes
        });
        // The request leaves now, on the caller's turn, when no other write
        // holds the pipe (see `runtime::write_now`); one writer at a time,
        // the lock kept until the line is whole, so lines never interleave.
        // Else it takes its place in the pipe's queue now, in the order
        // rmcp sends: rmcp writes each line on a task of its own, and a
        // task polled late would let a later line, the cancel of this very
        // request, overtake it (issue 25 M5).
        let (now, queued) = match &bytes {
            Ok(line) => match in_line(&self.write) {
                Lock::Now(mut pipe) => {
                    let written = match pipe.as_mut() {
                        Some(p) => crate::runtime::write_now(p, line),
                        None => Ok(0),
                    };
                    (Some((written, pipe)), None)
                }
                Lock::Queued(lock) => (None, Some(lock)),
            },
            Err(_) => (None, None),
        };
        let write = Arc::clone(&self.write);
        async move {
            let bytes = bytes.map_err(io::Error::other)?;
            let (mut pipe, written) = match (now, queued) {
                (Some((written, pipe)), _) => (pipe, written?),
                (None, Some(lock)) => (lock.await, 0),
                (None, None) => (write.lock_owned().await, 0),
            };
            let Some(pipe) = pipe.as_mut() else {
                return Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "the transport is closed",
                ));
            };
            if written < bytes.len() {
                pipe.write_all(&bytes[written..]).await?;
            }
            pipe.flush().await
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            if !self.next_line().await {
                self.closed();
                return None;
            }
            // An answer to a direct call never reaches rmcp.
            if let Some(taker) = &self.taker {
                if taker.waiting() && taker.offer(self.read.line()) {
                    self.read.clear();
                    continue;
                }
            }
            let msg = read_server_message(self.read.line());
            self.read.clear();
            if let (Some(relays), Some(JsonRpcMessage::Notification(n))) = (&self.notes, &msg) {
                relays.pass_on(&n.notification);
            }
            if msg.is_some() {
                return msg;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Dropping the pipe closes the server's stdin.
        self.write.lock().await.take();
        self.closed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::relay::tests::{recording, Seen};
    use super::*;
    use serde_json::json;

    /// A proxied call's server sends its progress and a log line, then its
    /// answer. By the time the transport hands over the answer, both have
    /// reached the call's relay: rmcp runs a notification's handler as a
    /// task of its own, which could run after the answer had ended the call
    /// (the gateway then lost the call's last progress).
    #[test]
    fn progress_and_logs_reach_the_relay_before_the_line_after_them() {
        let lines = [
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tn-5","progress":100,"total":100}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"done"}}"#,
            r#"{"jsonrpc":"2.0","id":5,"result":{"content":[]}}"#,
        ];
        let script = format!("printf '%s\\n' '{}'; cat >/dev/null", lines.join("' '"));
        crate::runtime::get().block_on(async move {
            let command = vec!["sh".to_string(), "-c".to_string(), script];
            let started = super::super::stdio::start(&command, &[], None);
            let Ok(spawned) = started.and_then(|s| s.adopt("lines-test")) else {
                panic!("sh did not start");
            };
            let (relay, seen) = recording();
            let relays = Arc::new(Relays::default());
            let guard = relays.enter(&relay);
            guard.watch(&json!("tn-5"));
            let mut transport = ClientLineTransport::new(spawned.stdout, spawned.stdin)
                .with_notes(Arc::clone(&relays));
            let got = |seen: &Seen| seen.lock().map(|v| v.clone()).unwrap_or_default();
            let first = transport.receive().await;
            assert!(matches!(first, Some(JsonRpcMessage::Notification(_))));
            assert_eq!(
                got(&seen),
                vec![(
                    "notifications/progress".to_string(),
                    json!({"progress": 100.0, "total": 100.0})
                )]
            );
            let _ = transport.receive().await;
            let answer = transport.receive().await;
            assert!(matches!(answer, Some(JsonRpcMessage::Response(_))));
            let seen = got(&seen);
            assert_eq!(seen.len(), 2, "{seen:?}");
            assert_eq!(seen[1].0, "notifications/message");
            assert_eq!(seen[1].1["data"], json!("done"));
            assert!(relays.reads_in_order());
            let _ = transport.close().await;
        });
    }
}
