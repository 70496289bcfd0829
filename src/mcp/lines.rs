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
//! Here reading never writes. A line that is not a message the client
//! understands is dropped without an answer, as the reference SDKs' stdio
//! clients do (they log it and read on); a request or response the server
//! got wrong is not something a client must reply to. Lines longer than
//! [`LINE_BYTES`] are dropped too, without ever holding more than that.

use super::direct::Direct;
use super::stdio::PipeStdin;
use crate::limits::LINE_BYTES;
use rmcp::model::{ClientJsonRpcMessage, CustomResult, ServerJsonRpcMessage, ServerResult};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use std::future::Future;
use std::io;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdout;
use tokio::sync::Mutex;

/// How much of stdout one read takes.
const READ_CHUNK: usize = 64 * 1024;

pub struct LineTransport {
    read: BufReader<ChildStdout>,
    /// The line read so far. Lives here, not in `receive`, because rmcp
    /// polls `receive` in a `select!` and may drop it mid-line: the next
    /// call goes on where the last one stopped.
    line: Vec<u8>,
    /// Dropping the rest of a line that grew past `LINE_BYTES`.
    discarding: bool,
    /// None once closed (stdin EOF for the server).
    write: Arc<Mutex<Option<PipeStdin>>>,
    /// The session's direct tools/calls (`super::direct`): they write to
    /// the same pipe, and their answers are taken out here, before rmcp.
    direct: Arc<Direct>,
}

impl LineTransport {
    pub fn new(stdout: ChildStdout, stdin: PipeStdin) -> Self {
        let write = Arc::new(Mutex::new(Some(stdin)));
        LineTransport {
            read: BufReader::with_capacity(READ_CHUNK, stdout),
            line: Vec::new(),
            discarding: false,
            direct: Direct::new(Arc::clone(&write)),
            write,
        }
    }

    /// What this transport shares with the session's direct tools/calls.
    pub fn direct(&self) -> Arc<Direct> {
        Arc::clone(&self.direct)
    }

    /// Reads until `self.line` holds one whole line (its newline stripped).
    /// False at EOF or on a read error: the server is gone.
    async fn next_line(&mut self) -> bool {
        loop {
            let (used, complete) = {
                let Ok(available) = self.read.fill_buf().await else {
                    return false;
                };
                if available.is_empty() {
                    return false;
                }
                let newline = memchr::memchr(b'\n', available);
                let used = newline.map_or(available.len(), |i| i + 1);
                let body = &available[..newline.unwrap_or(available.len())];
                if !self.discarding {
                    if self.line.len() + body.len() > LINE_BYTES {
                        self.line = Vec::new();
                        self.discarding = true;
                    } else {
                        self.line.extend_from_slice(body);
                    }
                }
                (used, newline.is_some())
            };
            // No await between the copy above and this consume: a receive
            // dropped at an await loses nothing and repeats nothing.
            self.read.consume(used);
            if complete {
                if self.discarding {
                    self.discarding = false;
                    continue;
                }
                return true;
            }
        }
    }
}

impl Drop for LineTransport {
    fn drop(&mut self) {
        // rmcp's loop ended (EOF, close, cancel): no answer will come.
        self.direct.close_all();
    }
}

/// A line without its `\r` and byte-order mark, when it may be a message:
/// only an object can be one, so the parser is skipped for anything else.
pub(super) fn message_text(line: &[u8]) -> Option<&[u8]> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let first = line.iter().find(|b| !b.is_ascii_whitespace())?;
    (*first == b'{').then_some(line)
}

/// A line as a server message, or None for anything else.
pub(super) fn parse(line: &[u8]) -> Option<ServerJsonRpcMessage> {
    let line = message_text(line)?;
    fast_call_result(line).or_else(|| serde_json::from_slice(line).ok())
}

/// The envelope of a message, read in one pass with the result kept as
/// plain JSON.
#[derive(serde::Deserialize)]
struct Envelope {
    #[allow(dead_code)]
    jsonrpc: rmcp::model::JsonRpcVersion2_0,
    id: Option<rmcp::model::RequestId>,
    result: Option<serde_json::Map<String, serde_json::Value>>,
    method: Option<serde::de::IgnoredAny>,
    error: Option<serde::de::IgnoredAny>,
}

/// A tools/call answer (a result with `content`) as a custom result that
/// holds its JSON as it came: the session reads it as JSON anyway
/// (`shape_call_result`), and rmcp's own parse tries every result type of
/// the protocol in turn before this one, then the session encoded it back.
/// Anything else is None, for the full parse (an initialize answer always
/// goes there, whatever else it holds).
fn fast_call_result(line: &[u8]) -> Option<ServerJsonRpcMessage> {
    let env: Envelope = serde_json::from_slice(line).ok()?;
    match env {
        Envelope {
            id: Some(id),
            result: Some(result),
            method: None,
            error: None,
            ..
        } if result.contains_key("content") && !result.contains_key("protocolVersion") => {
            Some(ServerJsonRpcMessage::response(
                ServerResult::CustomResult(CustomResult::new(serde_json::Value::Object(result))),
                id,
            ))
        }
        _ => None,
    }
}

/// rmcp puts a fresh `_meta.progressToken` on every request it sends, an
/// invitation to send `notifications/progress` for it. Nothing here listens
/// to progress (the served toolkit does not pass it on either), and a
/// server that gets a token does work for it: the official Python SDK's
/// server spends 30-70 us more CPU on a tools/call that carries one
/// (bench/README.md, issue 13). So the token is taken out before the line
/// goes; whatever else `_meta` holds stays.
pub(super) fn drop_progress_token(item: &mut ClientJsonRpcMessage) {
    use rmcp::model::{ClientRequest, GetExtensions, GetMeta, JsonRpcMessage, RequestMetaObject};
    // Only where params are an object of their own: a request without
    // params would otherwise go out as `"params": null`, which JSON-RPC
    // does not allow (so the first tools/list page keeps its token).
    let JsonRpcMessage::Request(req) = item else {
        return;
    };
    let ClientRequest::CustomRequest(custom) = &mut req.request else {
        return;
    };
    if !matches!(custom.params, Some(serde_json::Value::Object(_))) {
        return;
    }
    let meta = custom.get_meta_mut();
    meta.remove("progressToken");
    if meta.is_empty() {
        // An empty one would still go out as `"_meta": {}`.
        custom.extensions_mut().remove::<RequestMetaObject>();
    }
}

/// A request whose params are a plain object and which carries no `_meta`
/// (every tools/call once [`drop_progress_token`] ran), as rmcp writes it.
#[derive(serde::Serialize)]
struct RequestLine<'a> {
    jsonrpc: &'static str,
    id: &'a rmcp::model::RequestId,
    method: &'a str,
    params: &'a serde_json::Value,
}

/// The line of a message. rmcp writes a request's params through a
/// flattened wrapper that merges in `_meta`, one map entry at a time (about
/// a sixth of the gateway's instructions per proxied call, callgrind); a
/// request with nothing to merge is written straight, the same bytes (a
/// unit test compares them). Anything else goes through rmcp's own.
pub(super) fn encode(item: &ClientJsonRpcMessage) -> serde_json::Result<Vec<u8>> {
    use rmcp::model::{
        ClientRequest, GetExtensions, JsonRpcMessage, MetaObject, RequestMetaObject,
    };
    if let JsonRpcMessage::Request(req) = item {
        if let ClientRequest::CustomRequest(custom) = &req.request {
            let ext = custom.extensions();
            let no_meta =
                ext.get::<RequestMetaObject>().is_none() && ext.get::<MetaObject>().is_none();
            // rmcp writes a `_meta` of the params first: left to it.
            let plain = match &custom.params {
                Some(params @ serde_json::Value::Object(map)) if !map.contains_key("_meta") => {
                    Some(params)
                }
                _ => None,
            };
            if let (true, Some(params)) = (no_meta, plain) {
                return serde_json::to_vec(&RequestLine {
                    jsonrpc: "2.0",
                    id: &req.id,
                    method: &custom.method,
                    params,
                });
            }
        }
    }
    serde_json::to_vec(item)
}

impl Transport<RoleClient> for LineTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        mut item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        drop_progress_token(&mut item);
        let bytes = encode(&item).map(|mut bytes| {
            bytes.push(b'\n');
            bytes
        });
        // The request leaves now, on the caller's turn, when no other write
        // holds the pipe (see `runtime::write_now`); one writer at a time,
        // the lock kept until the line is whole, so lines never interleave.
        let now = match (&bytes, Arc::clone(&self.write).try_lock_owned()) {
            (Ok(line), Ok(mut pipe)) => {
                let written = match pipe.as_mut() {
                    Some(p) => crate::runtime::write_now(p, line),
                    None => Ok(0),
                };
                Some((written, pipe))
            }
            _ => None,
        };
        let write = Arc::clone(&self.write);
        async move {
            let bytes = bytes.map_err(io::Error::other)?;
            let (mut pipe, written) = match now {
                Some((written, pipe)) => (pipe, written?),
                None => (write.lock_owned().await, 0),
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
                self.direct.close_all();
                return None;
            }
            // An answer to a direct call never reaches rmcp.
            if self.direct.pending() > 0 && self.direct.offer(&self.line) {
                self.line.clear();
                continue;
            }
            let msg = parse(&self.line);
            self.line.clear();
            if msg.is_some() {
                return msg;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Dropping the pipe closes the server's stdin.
        self.write.lock().await.take();
        self.direct.close_all();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::parse;
    use rmcp::model::{JsonRpcMessage, ServerResult};

    fn result_of(line: &str) -> Option<ServerResult> {
        match parse(line.as_bytes())? {
            JsonRpcMessage::Response(r) => Some(r.result),
            _ => None,
        }
    }

    #[test]
    fn a_call_answer_keeps_its_json_and_an_initialize_answer_is_typed() {
        let call = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}],"structuredContent":{"z":1,"a":2},"extra":true}}"#;
        let Some(ServerResult::CustomResult(custom)) = result_of(call) else {
            panic!("a tools/call answer is kept as JSON");
        };
        assert_eq!(
            serde_json::to_string(&custom.0).unwrap_or_default(),
            r#"{"content":[{"type":"text","text":"hi"}],"structuredContent":{"z":1,"a":2},"extra":true}"#
        );
        let init = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"},"content":[]}}"#;
        assert!(matches!(
            result_of(init),
            Some(ServerResult::InitializeResult(_))
        ));
        // Not JSON-RPC 2.0, or a request: never a call answer.
        assert!(parse(br#"{"jsonrpc":"1.0","id":1,"result":{"content":[]}}"#).is_none());
        assert!(!matches!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{"content":[]}}"#),
            Some(JsonRpcMessage::Response(_))
        ));
    }

    #[test]
    fn a_request_goes_without_the_progress_token_rmcp_added() {
        use rmcp::model::{
            ClientRequest, CustomRequest, GetMeta, JsonRpcRequest, NumberOrString, ProgressToken,
            RequestId,
        };
        let params = serde_json::json!({"name": "echo", "arguments": {"text": "hi"}});
        let mut request =
            ClientRequest::CustomRequest(CustomRequest::new("tools/call", Some(params)));
        request
            .get_meta_mut()
            .set_progress_token(ProgressToken(NumberOrString::Number(4)));
        request
            .get_meta_mut()
            .insert("trace".into(), serde_json::json!("t-1"));
        let mut item = JsonRpcMessage::Request(JsonRpcRequest::new(RequestId::Number(9), request));
        let before = serde_json::to_value(&item).unwrap_or_default();
        assert_eq!(before["params"]["_meta"]["progressToken"], 4);
        super::drop_progress_token(&mut item);
        let after = serde_json::to_value(&item).unwrap_or_default();
        assert_eq!(
            after,
            serde_json::json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": {"trace": "t-1"}}})
        );
        // A token alone leaves no `_meta` behind; a request without params
        // keeps it (the only thing that makes its params an object).
        for (params, expected) in [
            (
                Some(serde_json::json!({"cursor": "c"})),
                serde_json::json!({"cursor": "c"}),
            ),
            (None, serde_json::json!({"_meta": {"progressToken": 5}})),
        ] {
            let mut request =
                ClientRequest::CustomRequest(CustomRequest::new("tools/list", params));
            request
                .get_meta_mut()
                .set_progress_token(ProgressToken(NumberOrString::Number(5)));
            let mut item =
                JsonRpcMessage::Request(JsonRpcRequest::new(RequestId::Number(10), request));
            super::drop_progress_token(&mut item);
            let after = serde_json::to_value(&item).unwrap_or_default();
            assert_eq!(after["params"], expected, "{after}");
        }
    }

    #[test]
    fn a_plain_request_is_written_as_rmcp_writes_it() {
        use rmcp::model::{ClientRequest, CustomRequest, JsonRpcRequest, RequestId};
        let args = serde_json::json!({"text": "a\"b\n\u{00e9}\u{1F600}\u{7f}", "n": [1, 2.5, null, {"z": true, "a": {}}]});
        let cases = [
            (
                RequestId::Number(3),
                Some(serde_json::json!({"name": "echo", "arguments": args})),
            ),
            (
                RequestId::String("r-1".into()),
                Some(serde_json::json!({"cursor": "c", "_meta": {"x": 1}})),
            ),
            (RequestId::Number(4), Some(serde_json::json!({}))),
            (RequestId::Number(5), None),
            (RequestId::Number(6), Some(serde_json::json!([1, 2]))),
        ];
        for (id, params) in cases {
            let request = ClientRequest::CustomRequest(CustomRequest::new("tools/call", params));
            let item = JsonRpcMessage::Request(JsonRpcRequest::new(id, request));
            let ours = super::encode(&item).unwrap_or_default();
            let rmcp = serde_json::to_vec(&item).unwrap_or_default();
            assert!(!ours.is_empty());
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&rmcp)
            );
        }
        // With a `_meta` to merge in, rmcp writes it.
        let mut request = ClientRequest::CustomRequest(CustomRequest::new(
            "tools/call",
            Some(serde_json::json!({"name": "echo"})),
        ));
        rmcp::model::GetMeta::get_meta_mut(&mut request).insert("trace".into(), "t".into());
        let item = JsonRpcMessage::Request(JsonRpcRequest::new(RequestId::Number(7), request));
        let ours = String::from_utf8(super::encode(&item).unwrap_or_default()).unwrap_or_default();
        assert_eq!(
            ours,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"trace":"t"},"name":"echo"}}"#
        );
    }

    #[test]
    fn only_whole_messages_parse() {
        let ok = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        assert!(parse(ok).is_some());
        let mut crlf = ok.to_vec();
        crlf.push(b'\r');
        assert!(parse(&crlf).is_some());
        let mut bom = b"\xEF\xBB\xBF".to_vec();
        bom.extend_from_slice(ok);
        assert!(parse(&bom).is_some());
        for junk in [
            &b"7\xff\xfe"[..],
            b"[]",
            b"{}",
            b"\"x\"",
            b"",
            b"{\"jsonrpc\":",
        ] {
            assert!(parse(junk).is_none(), "{junk:?}");
        }
    }
}
