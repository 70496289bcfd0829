//! The stdio transport of the served toolkit: one JSON-RPC message per line
//! in, one per line out.
//!
//! rmcp's own line transport drops a line that is not JSON without a word;
//! a client that sent it then waits forever. Here such a line gets the
//! JSON-RPC parse error (-32700, id null), well-formed JSON that is no
//! message gets invalid request (-32600, with its id when it has one), and
//! the server reads on. Writes go through one lock, so concurrent answers
//! never interleave within a line.

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// A line longer than this is answered as invalid and skipped.
pub const MAX_LINE: usize = 64 * 1024 * 1024;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

pub struct LineTransport<R, W> {
    reader: BufReader<R>,
    line: Vec<u8>,
    /// A line over [`MAX_LINE`] is being skipped to its end.
    skipping: bool,
    writer: Arc<Mutex<W>>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(reader: R, writer: W) -> Self {
        LineTransport {
            reader: BufReader::with_capacity(64 * 1024, reader),
            line: Vec::with_capacity(4096),
            skipping: false,
            writer: Arc::new(Mutex::new(writer)),
        }
    }

    /// Keeps a line's buffer (its capacity) for the next line.
    fn recycle(&mut self, mut raw: Vec<u8>) {
        raw.clear();
        self.line = raw;
    }

    /// Reads up to the end of the next line into `self.line`; `false` at
    /// EOF or on a read error. Cancel-safe: a partial line stays in
    /// `self.line` and the next call goes on with it.
    async fn next_line(&mut self) -> bool {
        loop {
            let buf = match self.reader.fill_buf().await {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return false,
            };
            if buf.is_empty() {
                return false;
            }
            let (chunk, done) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..=i], true),
                None => (buf, false),
            };
            let used = chunk.len();
            if !self.skipping {
                self.line.extend_from_slice(chunk);
                if self.line.len() > MAX_LINE {
                    self.line.clear();
                    self.skipping = true;
                }
            }
            self.reader.consume(used);
            if done {
                if std::mem::take(&mut self.skipping) {
                    let answer = error_line(Value::Null, INVALID_REQUEST, "line too long");
                    write_line(&self.writer, answer).await;
                    continue;
                }
                return true;
            }
        }
    }
}

/// Writes one answer line of the transport's own (a failed write is the
/// client gone; the read side will see it).
async fn write_line<W: AsyncWrite + Unpin>(writer: &Mutex<W>, mut line: Vec<u8>) {
    line.push(b'\n');
    let mut w = writer.lock().await;
    let _ = w.write_all(&line).await;
    let _ = w.flush().await;
}

fn error_line(id: Value, code: i64, message: &str) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes()
}

/// A plain `tools/call` line (see [`super::plain`]) as the message rmcp's
/// parse would make of it, in one pass; anything else is None, for rmcp's
/// parse.
fn fast_call(line: &[u8]) -> Option<ClientJsonRpcMessage> {
    use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
    let super::plain::Plain::Call {
        id,
        name,
        arguments,
    } = super::plain::read(line)?
    else {
        return None;
    };
    let mut params = CallToolRequestParams::new(name);
    params.arguments = arguments;
    Some(ClientJsonRpcMessage::request(
        ClientRequest::CallToolRequest(Request::new(params)),
        id,
    ))
}

/// What to do with a line that is not a client message.
fn reject(line: &[u8], err: &serde_json::Error) -> Option<Vec<u8>> {
    let v: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Some(error_line(
                Value::Null,
                PARSE_ERROR,
                &format!("parse error: {e}"),
            ))
        }
    };
    let id = v.get("id").cloned();
    match id {
        // A notification (a method, no id) is never answered, even a bad one.
        None if v.get("method").is_some() => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(error_line(
            id,
            INVALID_REQUEST,
            &format!("invalid request: {err}"),
        )),
        _ => Some(error_line(
            Value::Null,
            INVALID_REQUEST,
            &format!("invalid request: {err}"),
        )),
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        // Out at once when no other answer holds the writer (see
        // `runtime::write_now`); the lock is kept until the line is whole.
        let now = match (&line, Arc::clone(&self.writer).try_lock_owned()) {
            (Ok(bytes), Ok(mut w)) => Some((crate::runtime::write_now(&mut *w, bytes), w)),
            _ => None,
        };
        let writer = Arc::clone(&self.writer);
        async move {
            let line = line?;
            let (mut w, written) = match now {
                Some((written, w)) => (w, written?),
                None => (writer.lock_owned().await, 0),
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
                return None;
            }
            let raw = std::mem::take(&mut self.line);
            let mut text = raw.as_slice();
            text = text.strip_suffix(b"\n").unwrap_or(text);
            text = text.strip_suffix(b"\r").unwrap_or(text);
            text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
            let answer = if text.iter().all(u8::is_ascii_whitespace) {
                None
            } else {
                match fast_call(text)
                    .map_or_else(|| serde_json::from_slice::<ClientJsonRpcMessage>(text), Ok)
                {
                    Ok(msg) => {
                        self.recycle(raw);
                        return Some(msg);
                    }
                    Err(e) => reject(text, &e),
                }
            };
            self.recycle(raw);
            if let Some(answer) = answer {
                write_line(&self.writer, answer).await;
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

    #[test]
    fn a_call_line_reads_as_rmcp_reads_it() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"py_echo","arguments":{"text":"a\"b","n":[1,{"x":null}]}}}"#,
            r#"{"method":"tools/call","params":{"arguments":{},"name":"read"},"id":"s-1","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read"}}"#,
        ];
        for line in lines {
            let fast = fast_call(line.as_bytes()).map(|m| serde_json::to_value(m).ok());
            let full = serde_json::from_slice::<ClientJsonRpcMessage>(line.as_bytes())
                .ok()
                .map(|m| serde_json::to_value(m).ok());
            assert!(fast.is_some(), "{line}");
            assert_eq!(fast, full, "{line}");
        }
        // Left to rmcp: other methods, `_meta`, unknown fields, non-2.0,
        // notifications, answers, and anything that is no call at all.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","requestState":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"extra":1}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","name":"y"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            "{not json",
        ] {
            assert!(fast_call(line.as_bytes()).is_none(), "{line}");
        }
    }

    #[test]
    fn malformed_lines_get_the_json_rpc_errors() {
        let e = serde_json::from_str::<Value>("{").err();
        let Some(e) = e else { return };
        let answer = |line: &str| {
            reject(line.as_bytes(), &e).and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        };
        let parse = answer("{not json").unwrap_or_default();
        assert_eq!(parse["error"]["code"], json!(PARSE_ERROR));
        assert_eq!(parse["id"], Value::Null);
        let invalid = answer(r#"{"jsonrpc":"2.0","id":7,"nethod":"x"}"#).unwrap_or_default();
        assert_eq!(invalid["error"]["code"], json!(INVALID_REQUEST));
        assert_eq!(invalid["id"], json!(7));
        assert_eq!(answer(r#"{"jsonrpc":"2.0","method":3}"#), None);
    }
}
