//! The plain `tools/call` on the wire, both directions side by side: the
//! request the MCP client writes and the served toolkit reads, and the
//! answer the served toolkit writes and the client reads. Each is the
//! bytes (or the message) rmcp would write or read, without rmcp's service
//! loop or its typed parse; what one of these does not know is `None`, and
//! rmcp handles it. `plain_tests.rs` holds one differential harness for all
//! four against rmcp's serde types.
//!
//! rmcp's own parse of a message tries its message kinds and then every
//! request (or result) type of the protocol in turn, buffering the text and
//! building an error for each miss; its client hands each request to a
//! service task and back; its writer merges `_meta` into params one map
//! entry at a time. Together most of the gateway's instructions per proxied
//! call (bench/README.md, issue 13).
//!
//! - Requests. [`call_line`] writes a direct tools/call (and
//!   [`cancel_line`] its cancel) as rmcp's client writes it;
//!   [`encode_request`] writes any other request of rmcp's client, after
//!   [`drop_progress_token`]. [`read_request`] reads a plain `tools/call`
//!   (nothing but `name` and `arguments` in its params) or `tools/list` (no
//!   params, or empty ones) on the served side, and [`call_message`] turns
//!   a call into the message rmcp's parse makes of its line.
//! - Answers. [`call_answer_text`] writes the answer to a served call as
//!   rmcp's handler gives it ([`list_answer`] a list's); [`read_answer`]
//!   reads the answer to a direct call, and [`read_server_message`] any
//!   line on the client's rmcp path, a tools/call answer kept as JSON.
//! - Text that is no message gets the JSON-RPC errors of [`reject`].

use super::onepass::{object, present, present_object, repeated, Checked, Compact, Key};
use crate::tool::ToolResult;
use rmcp::model::{
    CallToolResponse, CallToolResult, CancelledNotification, CancelledNotificationParam,
    ClientJsonRpcMessage, ClientNotification, ClientRequest, CustomResult, JsonRpcMessage,
    JsonRpcVersion2_0, ListToolsResult, RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::ErrorData;
use serde_json::{Map, Value};
use std::borrow::Cow;

// ---------------------------------------------------------------------------
// Requests: the client writes them, the served toolkit reads them.

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
/// client writes for it (the harness compares them), and
/// `_meta.progressToken` when the caller wants the server's progress.
pub fn call_line(
    id: i64,
    tool: &str,
    args: &Map<String, Value>,
    progress: Option<&str>,
) -> serde_json::Result<Vec<u8>> {
    // A token that needs no escaping is put in by hand, before the two
    // closing braces: the bytes serde writes, without its map machinery.
    let plain_token = progress.filter(|t| {
        t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    let mut line = serde_json::to_vec(&CallLine {
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: CallParams {
            name: tool,
            arguments: args,
            meta: match plain_token {
                Some(_) => None,
                None => progress.map(|progress_token| CallMeta { progress_token }),
            },
        },
    })?;
    if let Some(token) = plain_token {
        line.truncate(line.len() - 2);
        line.extend_from_slice(br#","_meta":{"progressToken":""#);
        line.extend_from_slice(token.as_bytes());
        line.extend_from_slice(br#""}}}"#);
    }
    line.push(b'\n');
    Ok(line)
}

/// `notifications/cancelled` for `id` (newline included), as rmcp writes it.
pub fn cancel_line(id: i64, reason: &str) -> Vec<u8> {
    let note = CancelledNotification::new(CancelledNotificationParam::new(
        Some(RequestId::Number(id)),
        Some(reason.to_string()),
    ));
    let msg: ClientJsonRpcMessage = JsonRpcMessage::notification(ClientNotification::from(note));
    let mut line = serde_json::to_vec(&msg).unwrap_or_default();
    line.push(b'\n');
    line
}

/// rmcp puts a fresh `_meta.progressToken` on every request it sends, an
/// invitation to send `notifications/progress` for it, and a server that
/// gets a token does work for it: the official Python SDK's server spends
/// 30-70 us more CPU on a tools/call that carries one (bench/README.md,
/// issue 13). So the token is taken out before the line goes, except from
/// a tools/call whose progress is wanted (a server's
/// `resetTimeoutOnProgress`, issue 28: `mcp::lines` decides; the direct
/// path writes its own token, see [`call_line`]); whatever else `_meta`
/// holds stays.
pub fn drop_progress_token(item: &mut ClientJsonRpcMessage) {
    use rmcp::model::{GetExtensions, GetMeta, RequestMetaObject};
    // Only where params are an object of their own: a request without
    // params would otherwise go out as `"params": null`, which JSON-RPC
    // does not allow (so the first tools/list page keeps its token).
    let JsonRpcMessage::Request(req) = item else {
        return;
    };
    let ClientRequest::CustomRequest(custom) = &mut req.request else {
        return;
    };
    if !matches!(custom.params, Some(Value::Object(_))) {
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
    id: &'a RequestId,
    method: &'a str,
    params: &'a Value,
}

/// The line (no newline) of a message of rmcp's client. rmcp writes a
/// request's params through a flattened wrapper that merges in `_meta`, one
/// map entry at a time (about a sixth of the gateway's instructions per
/// proxied call, callgrind); a request with nothing to merge is written
/// straight, the same bytes (the harness compares them). Anything else
/// goes through rmcp's own.
pub fn encode_request(item: &ClientJsonRpcMessage) -> serde_json::Result<Vec<u8>> {
    use rmcp::model::{GetExtensions, MetaObject, RequestMetaObject};
    if let JsonRpcMessage::Request(req) = item {
        if let ClientRequest::CustomRequest(custom) = &req.request {
            let ext = custom.extensions();
            let no_meta =
                ext.get::<RequestMetaObject>().is_none() && ext.get::<MetaObject>().is_none();
            // rmcp writes a `_meta` of the params first: left to it.
            let plain = match &custom.params {
                Some(params @ Value::Object(map)) if !map.contains_key("_meta") => Some(params),
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

/// The scalar visits of [`Arguments`]: each the [`placeholder`] of its
/// kind; `null` is refused.
macro_rules! scalar_placeholders {
    () => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Arguments, E> {
            Ok(Arguments::Other(Value::Bool(false)))
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Arguments, E> {
            Ok(Arguments::Other(Value::from(0)))
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Arguments, E> {
            Ok(Arguments::Other(Value::from(0)))
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Arguments, E> {
            Ok(Arguments::Other(Value::from(0)))
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Arguments, E> {
            Ok(Arguments::Other(Value::String(String::new())))
        }
    };
}

/// A plain request, read.
pub enum Plain {
    Call {
        id: RequestId,
        name: String,
        arguments: Option<Map<String, Value>>,
    },
    List {
        id: RequestId,
    },
    /// A `tools/call` whose `arguments` are no object (an array, a number,
    /// a string, a boolean): rmcp reads it as a request of a method it does
    /// not know and answers -32601. It goes to rmcp as that request with
    /// `arguments` replaced by [`placeholder`] of the same kind (see
    /// [`call_message`]), or is answered by [`unknown_call_answer`], so the
    /// arguments (a line of sixteen million bytes `[0,0,…]`) are read
    /// through once and never held: rmcp's parse of them whole peaked at
    /// 1.9 GB (issue 25 M2).
    NotAnObject {
        id: RequestId,
        name: String,
        placeholder: Value,
    },
}

/// A message (as JSON) with its `params.arguments` replaced by their
/// [`placeholder`] when they are no object: how the differential harness
/// and the fuzz target compare rmcp's parse with a [`Plain::NotAnObject`].
pub fn placeholder_arguments(mut message: Value) -> Value {
    if let Some(args) = message
        .get_mut("params")
        .and_then(|p| p.get_mut("arguments"))
        .filter(|a| !a.is_object())
    {
        *args = placeholder(args);
    }
    message
}

/// The smallest value of `v`'s kind: what [`Plain::NotAnObject`] passes on
/// in place of arguments that are no object.
pub fn placeholder(v: &Value) -> Value {
    match v {
        Value::Array(_) => Value::Array(Vec::new()),
        Value::Number(_) => Value::from(0),
        Value::String(_) => Value::String(String::new()),
        Value::Bool(_) => Value::Bool(false),
        other => other.clone(),
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestText<'a> {
    #[allow(dead_code)]
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(default, deserialize_with = "present_object")]
    params: Option<Params>,
}

/// The params of either: `name` and `arguments` of a call, nothing of a
/// list.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default, deserialize_with = "present")]
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    arguments: Option<Arguments>,
    #[serde(rename = "_meta", default, deserialize_with = "present_object")]
    meta: Option<MetaText>,
}

/// A call's `_meta` that holds a progress token and nothing else (see
/// [`read_request_with_progress`]).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MetaText {
    #[serde(rename = "progressToken")]
    progress_token: rmcp::model::ProgressToken,
}

/// A call's `arguments`: an object, or the [`placeholder`] of what else
/// they were (read through, kept nowhere). An explicit `null` fails the
/// read, leaving such a request to rmcp.
enum Arguments {
    Object(Map<String, Value>),
    Other(Value),
}

impl<'de> serde::Deserialize<'de> for Arguments {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Arguments, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Arguments;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("arguments")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Arguments, A::Error> {
                serde::Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(Arguments::Object)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Arguments, A::Error> {
                Checked
                    .visit_seq(seq)
                    .map(|_| Arguments::Other(Value::Array(Vec::new())))
            }
            scalar_placeholders!();
        }
        d.deserialize_any(V)
    }
}

/// Reads `text` (a served stdio line, an HTTP body) as a plain request, or
/// `None` for rmcp's parse: other methods, `_meta`, a cursor, fields this
/// does not know, duplicate keys, a line or params that are an array. What
/// the handler sees is the same either way (the harness compares the two
/// on generated lines).
pub fn read_request(text: &[u8]) -> Option<Plain> {
    match read_request_with_progress(text)? {
        (plain, None) => Some(plain),
        (_, Some(_)) => None,
    }
}

/// [`read_request`] that also takes a `tools/call` whose `_meta` holds
/// only a `progressToken` (string or integer, as rmcp reads it), with that
/// token. Such a call handed back to rmcp must be rmcp's parse of the line
/// ([`call_message`] knows no `_meta`).
pub fn read_request_with_progress(
    text: &[u8],
) -> Option<(Plain, Option<rmcp::model::ProgressToken>)> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let line: RequestText = object(&mut de).ok()?;
    de.end().ok()?;
    let (params, token) = match line.params {
        Some(Params {
            name,
            arguments,
            meta: Some(meta),
        }) => (
            Some(Params {
                name,
                arguments,
                meta: None,
            }),
            Some(meta.progress_token),
        ),
        params => (params, None),
    };
    let plain = match (line.method.as_ref(), params) {
        (
            "tools/call",
            Some(Params {
                name: Some(name),
                arguments: Some(Arguments::Other(placeholder)),
                ..
            }),
        ) => Some(Plain::NotAnObject {
            id: line.id,
            name,
            placeholder,
        }),
        (
            "tools/call",
            Some(Params {
                name: Some(name),
                arguments,
                ..
            }),
        ) => Some(Plain::Call {
            id: line.id,
            name,
            arguments: arguments.map(|a| match a {
                Arguments::Object(m) => m,
                Arguments::Other(_) => Map::new(),
            }),
        }),
        (
            "tools/list",
            None
            | Some(Params {
                name: None,
                arguments: None,
                ..
            }),
        ) if token.is_none() => Some(Plain::List { id: line.id }),
        _ => None,
    }?;
    Some((plain, token))
}

/// A plain `tools/call` as the message rmcp's parse makes of its line (a
/// [`Plain::NotAnObject`] with its arguments' placeholder); a list is
/// `None`, for rmcp's parse.
pub fn call_message(plain: Plain) -> Option<ClientJsonRpcMessage> {
    use rmcp::model::{CallToolRequestParams, CustomRequest, Request};
    let (id, name, arguments) = match plain {
        Plain::Call {
            id,
            name,
            arguments,
        } => (id, name, arguments),
        // What rmcp's parse makes of it, but for the arguments' placeholder.
        Plain::NotAnObject {
            id,
            name,
            placeholder,
        } => {
            let params = serde_json::json!({"name": name, "arguments": placeholder});
            return Some(ClientJsonRpcMessage::request(
                ClientRequest::CustomRequest(CustomRequest::new("tools/call", Some(params))),
                id,
            ));
        }
        Plain::List { .. } => return None,
    };
    let mut params = CallToolRequestParams::new(name);
    params.arguments = arguments;
    Some(ClientJsonRpcMessage::request(
        ClientRequest::CallToolRequest(Request::new(params)),
        id,
    ))
}

// ---------------------------------------------------------------------------
// Answers: the served toolkit writes them, the client reads them.

/// A result as rmcp's handler gives it to a peer on a protocol version
/// before 2026-07-28 (every session that takes the plain path, see
/// [`super::plain_path`]): no `resultType`, no non-object tool output.
fn legacy(mut result: ServerResult) -> ServerResult {
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    result
}

/// The answer to a plain `tools/list` of `tools`, as rmcp's handler gives
/// it.
pub fn list_answer(tools: Vec<rmcp::model::Tool>, id: RequestId) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::response(
        legacy(ServerResult::ListToolsResult(
            ListToolsResult::with_all_items(tools),
        )),
        id,
    )
}

/// The answer to a [`Plain::NotAnObject`], as rmcp's handler gives it to a
/// request of a method it does not know (`on_custom_request`): -32601 with
/// the method as the message.
pub fn unknown_call_answer(id: RequestId) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(
        ErrorData::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, "tools/call", None),
        Some(id),
    )
}

/// The JSON text (no newline) answering a plain `tools/call` whose tool
/// run gave `outcome`, the bytes rmcp writes for it: a parts-free result's
/// `text_answer_line`, else the encoding of `call_answer`. Both served
/// transports answer with it.
pub fn call_answer_text(
    id: RequestId,
    outcome: Result<ToolResult, ErrorData>,
) -> serde_json::Result<Vec<u8>> {
    call_answer_kept(id, outcome, None)
}

/// [`call_answer_text`] of a call whose relay kept `raw`, the proxied
/// server's own result: answered as it is ([`super::shape::passed_through`]).
pub fn call_answer_kept(
    id: RequestId,
    outcome: Result<ToolResult, ErrorData>,
    raw: Option<crate::tool::RawResult>,
) -> serde_json::Result<Vec<u8>> {
    if let Some(raw) = raw {
        let Ok(r) = &outcome else {
            return serde_json::to_vec(&call_answer(outcome.map(super::shape::call_result), id));
        };
        if raw.parts == r.parts.len() {
            if let Some(line) = kept_answer_line(&id, &raw.result) {
                return Ok(line);
            }
        }
        if let Some(result) = super::shape::passed_through(r, Some(raw)) {
            return serde_json::to_vec(&call_answer(Ok(result), id));
        }
    }
    if let Some(line) = outcome.as_ref().ok().and_then(|r| text_answer_line(&id, r)) {
        return Ok(line);
    }
    serde_json::to_vec(&call_answer(outcome.map(super::shape::call_result), id))
}

/// The line (without its newline) answering a plain `tools/call` with a
/// proxied server's kept result `raw` as it is, when that result is of the
/// common shape: only `content` (an array of `{"type":"text","text":S}`
/// parts), `structuredContent` (an object) and `isError` (a bool), each
/// optional but content. The bytes are those of [`call_answer`] over the
/// typed result [`super::shape::passed_through`] makes of `raw` (the
/// legacy shape, fields in rmcp's order), without the typed round trip.
/// `None` for any other shape, which takes that round trip.
fn kept_answer_line(id: &RequestId, raw: &Value) -> Option<Vec<u8>> {
    let raw = raw.as_object()?;
    let content = raw.get("content")?.as_array()?;
    let structured = match raw.get("structuredContent") {
        None => None,
        Some(v @ Value::Object(_)) => Some(v),
        Some(_) => return None,
    };
    let is_error = match raw.get("isError") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return None,
    };
    let known = 1 + usize::from(structured.is_some()) + usize::from(is_error.is_some());
    if raw.len() != known {
        return None;
    }
    let mut line = Vec::with_capacity(96 + 32 * content.len());
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut line, id).ok()?;
    line.extend_from_slice(br#","result":{"content":["#);
    for (i, part) in content.iter().enumerate() {
        let part = part.as_object()?;
        let text = match (part.len(), part.get("type"), part.get("text")) {
            (2, Some(Value::String(kind)), Some(Value::String(text))) if kind == "text" => text,
            _ => return None,
        };
        if i > 0 {
            line.push(b',');
        }
        line.extend_from_slice(br#"{"type":"text","text":"#);
        serde_json::to_writer(&mut line, text.as_str()).ok()?;
        line.push(b'}');
    }
    line.push(b']');
    if let Some(structured) = structured {
        line.extend_from_slice(br#","structuredContent":"#);
        serde_json::to_writer(&mut line, structured).ok()?;
    }
    match is_error {
        Some(true) => line.extend_from_slice(br#","isError":true"#),
        Some(false) => line.extend_from_slice(br#","isError":false"#),
        None => {}
    }
    line.extend_from_slice(b"}}");
    Some(line)
}

/// The answer to a plain `tools/call` whose tool gave `outcome`, as rmcp's
/// handler gives it.
fn call_answer(outcome: Result<CallToolResult, ErrorData>, id: RequestId) -> ServerJsonRpcMessage {
    match outcome {
        Ok(result) => ServerJsonRpcMessage::response(
            legacy(ServerResult::from(CallToolResponse::from(result))),
            id,
        ),
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    }
}

/// The line (without its newline) answering a plain `tools/call` whose
/// tool gave `result`, when the result has no parts: the bytes rmcp's
/// encoding of [`call_answer`] gives (`{"jsonrpc":"2.0","id":ID,"result":
/// {"content":[{"type":"text","text":OUTPUT}],"isError":BOOL}}`, strings
/// escaped by the same serde_json writer), without building the typed
/// result. `None` for a result with parts, which takes [`call_answer`].
fn text_answer_line(id: &RequestId, result: &ToolResult) -> Option<Vec<u8>> {
    if !result.parts.is_empty() {
        return None;
    }
    let mut line = Vec::with_capacity(80 + result.output.len());
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut line, id).ok()?;
    line.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
    serde_json::to_writer(&mut line, result.output.as_str()).ok()?;
    line.extend_from_slice(if result.is_error {
        br#"}],"isError":true}}"#
    } else {
        br#"}],"isError":false}}"#
    });
    Some(line)
}

/// A line without its `\r` and byte-order mark, when it may be a message:
/// only an object can be one, so the parser is skipped for anything else.
pub fn message_text(line: &[u8]) -> Option<&[u8]> {
    let line = super::lines::text(line);
    let first = line.iter().find(|b| !b.is_ascii_whitespace())?;
    (*first == b'{').then_some(line)
}

/// A line from a server as the message rmcp's client reads, or `None` for
/// anything else (dropped unanswered, see `mcp/lines.rs`).
pub fn read_server_message(line: &[u8]) -> Option<ServerJsonRpcMessage> {
    let line = message_text(line)?;
    response_message(line).or_else(|| serde_json::from_slice(line).ok())
}

/// The envelope of a server's message, read in one pass with the result
/// kept as plain JSON.
#[derive(serde::Deserialize)]
struct Envelope<R> {
    #[allow(dead_code)]
    jsonrpc: JsonRpcVersion2_0,
    id: Option<RequestId>,
    method: Option<serde::de::IgnoredAny>,
    result: Option<R>,
    error: Option<serde::de::IgnoredAny>,
}

/// Whether a result is a tools/call answer the client keeps as JSON (it
/// has `content`; an initialize answer, with `protocolVersion`, is always
/// typed, whatever else it holds).
fn kept_as_json(result: &Map<String, Value>) -> bool {
    result.contains_key("content") && !result.contains_key("protocolVersion")
}

/// A response read without the message-shape layers of rmcp's parse (its
/// buffered copy of the whole line, the shape check, the flattened
/// response): a typed result, or a tools/call answer kept as JSON (as
/// [`call_result_message`] keeps it); `None` for anything else, for the
/// full parse.
///
/// The typed path takes only what rmcp's parse takes the same way: an
/// envelope of exactly `jsonrpc` 2.0, an `id` and a non-null `result` (no
/// other member, not even a `null` `method` or `error`, none repeated), and
/// the result read as the same untagged [`ServerResult`] from its own text,
/// where rmcp reads it from its buffered copy of that text.
fn response_message(line: &[u8]) -> Option<ServerJsonRpcMessage> {
    if let Ok(ResponseOnly {
        id: Some(id),
        result: Some(result),
        ..
    }) = serde_json::from_slice::<ResponseOnly>(line)
    {
        if let Ok(keys) = serde_json::from_str::<ResultKeys>(result.get()) {
            let result = if keys.content && !keys.protocol_version {
                // Kept as it came, read once (not the whole line again).
                let kept = serde_json::from_str::<Map<String, Value>>(result.get()).ok()?;
                ServerResult::CustomResult(CustomResult::new(Value::Object(kept)))
            } else {
                serde_json::from_str::<ServerResult>(result.get()).ok()?
            };
            return Some(ServerJsonRpcMessage::response(result, id));
        }
    }
    call_result_message(line)
}

/// A message that is only a response: `jsonrpc`, `id` and `result`, the
/// result as its text.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ResponseOnly<'a> {
    #[allow(dead_code)]
    jsonrpc: JsonRpcVersion2_0,
    id: Option<RequestId>,
    #[serde(borrow)]
    result: Option<&'a serde_json::value::RawValue>,
}

/// Which of the two members that decide [`kept_as_json`] a result has.
#[derive(serde::Deserialize)]
struct ResultKeys {
    #[serde(default, deserialize_with = "member_present")]
    content: bool,
    #[serde(
        default,
        rename = "protocolVersion",
        deserialize_with = "member_present"
    )]
    protocol_version: bool,
}

/// `true` for a member that is there, whatever its value (`null` too).
fn member_present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    <serde::de::IgnoredAny as serde::Deserialize>::deserialize(d).map(|_| true)
}

/// A tools/call answer (a result with `content`) as a custom result that
/// holds its JSON as it came: the session reads it as JSON anyway
/// ([`super::shape::shape_call_result`]), and rmcp's own parse tries every
/// result type of the protocol in turn before this one, then the session
/// encoded it back. Anything else is None, for the full parse.
fn call_result_message(line: &[u8]) -> Option<ServerJsonRpcMessage> {
    let env: Envelope<Map<String, Value>> = serde_json::from_slice(line).ok()?;
    match env {
        Envelope {
            id: Some(id),
            result: Some(result),
            method: None,
            error: None,
            ..
        } if kept_as_json(&result) => Some(ServerJsonRpcMessage::response(
            ServerResult::CustomResult(CustomResult::new(Value::Object(result))),
            id,
        )),
        _ => None,
    }
}

/// What the answer to a direct tools/call holds, read by [`read_answer`].
#[derive(Debug)]
pub enum Answer {
    /// A plain text answer, shaped as it was read (see `shape_text_answer`).
    Shaped(ToolResult),
    /// Any other result, as JSON, for `shape_call_result`.
    Json(Value),
    /// The server's JSON-RPC error.
    Error(ErrorData),
    /// A typed result rmcp's path could not write back as JSON (its
    /// `malformed-result`).
    Unwritable(serde_json::Error),
}

/// Reads `line` as the answer (a result or an error, no method) to a
/// tools/call with a numeric id, or `None` for anything else: rmcp's
/// traffic, and whatever rmcp's path would drop. A plain text answer is
/// read in one pass and returned whoever waits for it; anything else is
/// read whole only when `wanted` says its id is awaited. Numeric ids echoed
/// as strings count (see [`numeric`]).
pub fn read_answer(line: &[u8], wanted: impl FnOnce(i64) -> bool) -> Option<(i64, Answer)> {
    let line = message_text(line)?;
    if let Some((id, shaped)) = shape_text_answer(line) {
        return Some((id, Answer::Shaped(shaped)));
    }
    let Ok(Envelope {
        id: Some(id),
        method: None,
        result,
        error,
        ..
    }) = serde_json::from_slice::<Envelope<Value>>(line)
    else {
        return None;
    };
    let id = numeric(&id)?;
    if !wanted(id) {
        return None;
    }
    let answer = match (result, error) {
        // What `call_result_message` keeps as it came.
        (Some(Value::Object(result)), None) if kept_as_json(&result) => {
            Answer::Json(Value::Object(result))
        }
        // Anything else as rmcp's path reads it.
        _ => match serde_json::from_slice::<ServerJsonRpcMessage>(line) {
            Ok(JsonRpcMessage::Response(r)) => match r.result {
                ServerResult::CustomResult(custom) => Answer::Json(custom.0),
                other => match serde_json::to_value(&other) {
                    Ok(json) => Answer::Json(json),
                    Err(e) => Answer::Unwritable(e),
                },
            },
            Ok(JsonRpcMessage::Error(e)) => Answer::Error(e.error),
            // Not a message rmcp would take either: dropped, as there.
            _ => return None,
        },
    };
    Some((id, answer))
}

/// A numeric id, also when echoed as a string, as rmcp's path takes it:
/// `KnownIds` lets an answer through only when its id reads the same as
/// the one sent, so "1000000000" is that id and "+1000000000" or
/// "01000000000" are not.
pub fn numeric(id: &RequestId) -> Option<i64> {
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
    jsonrpc: JsonRpcVersion2_0,
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

/// The id and ToolResult of an answer (a result with `content`, no
/// `protocolVersion`) whose content parts are all `text`: exactly what
/// `shape_call_result` makes of it (the harness compares them), without
/// the JSON tree. None for anything else, which is read the general way: a
/// field of another type, a repeated field, a part of another kind, a
/// result or part that is no object, a value anywhere in the result that a
/// tree cannot hold (see [`Checked`]).
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

// ---------------------------------------------------------------------------
// Text that is no message, on the served side (read in `refuse.rs`).

pub use super::refuse::{
    error_line, error_message, is_batch, reject, reject_batch, INVALID_REQUEST, PARSE_ERROR,
};

// ---------------------------------------------------------------------------
// What the fuzz targets (fuzz/) check.

/// One served request text (a stdio line or an HTTP body) as the served
/// toolkit reads it: [`read_request`] must take exactly what rmcp's parse
/// takes, as the same message; text rmcp refuses gets an answer that is
/// JSON (or none, for a notification). `Err` says how they disagree.
pub fn check_request(text: &[u8]) -> Result<(), String> {
    let full = serde_json::from_slice::<ClientJsonRpcMessage>(text);
    match read_request(text) {
        Some(Plain::List { id }) => match &full {
            Ok(ClientJsonRpcMessage::Request(r))
                if r.id == id && matches!(r.request, ClientRequest::ListToolsRequest(_)) => {}
            other => return Err(format!("a plain list, rmcp read {other:?}")),
        },
        Some(call) => {
            let fast = call_message(call).map(|m| serde_json::to_value(m).ok());
            let rmcp = full
                .as_ref()
                .ok()
                .map(|m| serde_json::to_value(m).ok().map(placeholder_arguments));
            if fast != rmcp {
                return Err(format!("plain {fast:?}, rmcp {rmcp:?}"));
            }
        }
        None => {}
    }
    if let Err(e) = &full {
        if let Some(answer) = reject(text, e) {
            serde_json::from_slice::<Value>(&answer)
                .map_err(|e| format!("the answer is not JSON: {e}"))?;
        }
    }
    Ok(())
}

/// One server line as the answer to the direct call `id`: what
/// [`read_answer`] makes of it, shaped, must be what rmcp's path makes of
/// it ([`read_server_message`], the answer taken only when its id reads as
/// the one sent, then `shape_call_result`), both taking it or both
/// dropping it. `Err` says how they disagree.
pub fn check_answer(line: &[u8], id: i64) -> Result<(), String> {
    let ours = read_answer(line, |got| got == id)
        .filter(|(got, _)| *got == id)
        .map(|(_, answer)| shown(answer));
    let theirs = on_rmcps_path(line, id);
    if ours == theirs {
        Ok(())
    } else {
        Err(format!("direct {ours:?}, rmcp {theirs:?}"))
    }
}

/// What a session ends with for an answer, as text: the shaped result's
/// JSON, or the error's code.
fn shown(answer: Answer) -> String {
    use super::shape::shape_call_result;
    match answer {
        Answer::Shaped(r) => r.to_json_string(),
        Answer::Json(v) => shape_call_result(&v).to_json_string(),
        Answer::Error(e) => format!("error {}", e.code.0),
        Answer::Unwritable(e) => format!("malformed-result ({e})"),
    }
}

/// What rmcp's side of a client session makes of an answer line to the
/// call `id`: [`read_server_message`], then `KnownIds` (an id that reads
/// as the one sent) and `session::request` (a custom result as it came,
/// any other typed result as its JSON), shaped.
fn on_rmcps_path(line: &[u8], id: i64) -> Option<String> {
    let sent = RequestId::Number(id).to_string();
    match read_server_message(line)? {
        JsonRpcMessage::Response(r) if r.id.to_string() == sent => Some(shown(match r.result {
            ServerResult::CustomResult(custom) => Answer::Json(custom.0),
            other => match serde_json::to_value(&other) {
                Ok(json) => Answer::Json(json),
                Err(e) => Answer::Unwritable(e),
            },
        })),
        JsonRpcMessage::Error(e) if e.id.as_ref().map(ToString::to_string) == Some(sent) => {
            Some(shown(Answer::Error(e.error)))
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "plain_tests.rs"]
mod tests;
