//! One-pass reads of the plain requests every client sends over and over:
//! a `tools/call` with nothing but `name` and `arguments` in its params,
//! and a `tools/list` with no params (or empty ones), and their answers as
//! rmcp's handler shapes them. Both transports answer them themselves once
//! they know rmcp would give the legacy shape (HTTP: see `http.rs`; stdio:
//! once the session is initialized, see `stdio.rs`); before that stdio
//! hands the call on to rmcp as a message it need not parse.
//!
//! rmcp's own parse of a client message tries its message kinds and then
//! every request type of the protocol in turn, buffering the text and
//! building an error for each miss (about a quarter of the gateway's
//! instructions per proxied call, measured with callgrind; bench/README.md,
//! issue 13). Anything else (other methods, `_meta`, a cursor, fields this
//! does not know, duplicate keys, a line or params that are an array) is
//! `None`, for rmcp's parse, so what the handler sees is the same either
//! way (stdio.rs compares the two on generated lines).

use super::Gateway;
use rmcp::model::{
    CallToolResponse, CallToolResult, JsonRpcVersion2_0, ListToolsResult, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::ErrorData;
use serde_json::{Map, Value};
use std::borrow::Cow;

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
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Line<'a> {
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
    arguments: Option<Map<String, Value>>,
}

/// A field that is there (absent is `None` by `default`); an explicit
/// `null` fails the read, leaving such a request to rmcp.
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// `params` that are there, read as [`object`].
fn present_object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    object(d).map(Some)
}

/// A struct read from a JSON object only. A derived struct also reads
/// from an array, its fields in order (`["x", {}]` as a call of `x`),
/// which rmcp's parse takes for no message at all.
fn object<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    struct Object<T>(std::marker::PhantomData<T>);
    impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Object<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_map(Object(std::marker::PhantomData))
}

/// Reads `text` as a plain request, or `None` for rmcp's parse.
pub fn read(text: &[u8]) -> Option<Plain> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let line: Line = object(&mut de).ok()?;
    de.end().ok()?;
    match (line.method.as_ref(), line.params) {
        (
            "tools/call",
            Some(Params {
                name: Some(name),
                arguments,
            }),
        ) => Some(Plain::Call {
            id: line.id,
            name,
            arguments,
        }),
        (
            "tools/list",
            None
            | Some(Params {
                name: None,
                arguments: None,
            }),
        ) => Some(Plain::List { id: line.id }),
        _ => None,
    }
}

/// A result as rmcp's handler gives it to a peer on a protocol version
/// before 2026-07-28 (every session that opened with `initialize`, and
/// every HTTP request this server answers itself): no `resultType`, no
/// non-object tool output.
fn legacy(mut result: ServerResult) -> ServerResult {
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    result
}

/// The answer to a plain `tools/list`, as rmcp's handler gives it.
pub fn list_answer(gateway: &Gateway, id: RequestId) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::response(
        legacy(ServerResult::ListToolsResult(
            ListToolsResult::with_all_items(gateway.list()),
        )),
        id,
    )
}

/// The JSON text (no newline) answering a plain `tools/call` whose tool
/// run ([`Gateway::run`]) gave `outcome`, the bytes rmcp writes for it:
/// a parts-free result's [`text_answer_line`], else the encoding of
/// [`call_answer`]. Both transports answer with it.
pub fn call_answer_text(
    id: RequestId,
    outcome: Result<crate::tool::ToolResult, ErrorData>,
) -> serde_json::Result<Vec<u8>> {
    if let Some(line) = outcome.as_ref().ok().and_then(|r| text_answer_line(&id, r)) {
        return Ok(line);
    }
    serde_json::to_vec(&call_answer(outcome.map(super::call_result), id))
}

/// The answer to a plain `tools/call` whose [`Gateway::call`] gave
/// `outcome`, as rmcp's handler gives it.
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
fn text_answer_line(id: &RequestId, result: &crate::tool::ToolResult) -> Option<Vec<u8>> {
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

/// JSON-RPC's parse error: the text is no JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid request: JSON, but no message.
pub const INVALID_REQUEST: i64 = -32600;

/// A JSON-RPC error message `{"jsonrpc", "id", "error": {code, message}}`.
pub fn error_message(id: Value, code: i64, message: &str) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// [`error_message`] as its JSON text.
pub fn error_line(id: Value, code: i64, message: &str) -> Vec<u8> {
    error_message(id, code, message).to_string().into_bytes()
}

/// What to answer a text (a stdio line, an HTTP body) that is no client
/// message, `err` being why rmcp's parse refused it: the parse error (id
/// null) for text that is no JSON (bad JSON, invalid UTF-8, nesting past
/// the parser's depth, nothing at all); invalid request, with the id when
/// it has a usable one, for JSON that is no message; nothing for a
/// notification (a method without an id), which is never answered.
///
/// A batch (a JSON array) is answered as JSON-RPC 2.0 says, by an array
/// with one answer per request in it, each the invalid-request error
/// (MCP since 2025-06-18 has no batches, so none is run), notifications
/// unanswered; an empty batch is one invalid request (id null), and a
/// batch of notifications only is not answered.
pub fn reject(text: &[u8], err: &serde_json::Error) -> Option<Vec<u8>> {
    let v: Value = match serde_json::from_slice(text) {
        Ok(v) => v,
        Err(e) => {
            return Some(error_line(
                Value::Null,
                PARSE_ERROR,
                &format!("parse error: {e}"),
            ))
        }
    };
    match v {
        Value::Array(items) if items.is_empty() => Some(error_line(
            Value::Null,
            INVALID_REQUEST,
            "invalid request: an empty batch",
        )),
        Value::Array(items) => {
            let answers: Vec<Value> = items
                .iter()
                .filter_map(|item| {
                    refused(
                        item,
                        "invalid request: batches are not supported (MCP has no JSON-RPC \
                         batches since 2025-06-18); send each request on its own",
                    )
                })
                .collect();
            if answers.is_empty() {
                None
            } else {
                Some(Value::Array(answers).to_string().into_bytes())
            }
        }
        other => refused(&other, &format!("invalid request: {err}"))
            .map(|answer| answer.to_string().into_bytes()),
    }
}

/// The invalid-request answer to one JSON value that is no message;
/// `None` for a notification.
fn refused(v: &Value, message: &str) -> Option<Value> {
    match v.get("id") {
        // A notification (a method, no id) is never answered, even a bad one.
        None if v.get("method").is_some() => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => {
            Some(error_message(id.clone(), INVALID_REQUEST, message))
        }
        _ => Some(error_message(Value::Null, INVALID_REQUEST, message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ClientJsonRpcMessage, ClientRequest};

    #[test]
    fn a_text_answer_is_the_line_rmcp_writes() {
        use crate::tool::ToolResult;
        let outputs = [
            String::new(),
            "plain".into(),
            "quotes \" and \\ backslash, \n newline, \t tab, \u{1} \u{1f} \u{7f}".into(),
            "unicode: é ü 漢字 😀 \u{2028} \u{2029}".into(),
            "</script> & <b> '".into(),
            "x".repeat(10_000),
        ];
        let ids = [
            RequestId::Number(0),
            RequestId::Number(-7),
            RequestId::Number(i64::MAX),
            RequestId::String("a\"b\\c".into()),
            RequestId::String("".into()),
        ];
        for output in &outputs {
            for is_error in [false, true] {
                for id in &ids {
                    let result = if is_error {
                        ToolResult::error(output.clone())
                    } else {
                        ToolResult::ok(output.clone())
                    };
                    let line = text_answer_line(id, &result);
                    let typed = serde_json::to_vec(&call_answer(
                        Ok(super::super::call_result(result)),
                        id.clone(),
                    ))
                    .ok();
                    assert!(line.is_some());
                    assert_eq!(line, typed, "{output:?} {is_error} {id:?}");
                }
            }
        }
        // A result with parts is not one text line.
        let with_parts = ToolResult {
            parts: vec![crate::parts::Part {
                kind: crate::parts::PartKind::Text,
                text: Some("more".into()),
                mime_type: None,
                data: None,
                url: None,
                name: None,
            }]
            .into_boxed_slice(),
            ..ToolResult::ok("out")
        };
        assert!(text_answer_line(&RequestId::Number(1), &with_parts).is_none());
    }

    #[test]
    fn a_list_reads_as_rmcp_reads_it() {
        for line in [
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":"l","method":"tools/list","params":{}}"#,
        ] {
            let Some(Plain::List { id }) = read(line.as_bytes()) else {
                panic!("not read as a list: {line}");
            };
            let full = serde_json::from_slice::<ClientJsonRpcMessage>(line.as_bytes());
            let Ok(ClientJsonRpcMessage::Request(req)) = full else {
                panic!("rmcp reads no request: {line}");
            };
            assert!(
                matches!(req.request, ClientRequest::ListToolsRequest(_)),
                "{line}"
            );
            assert_eq!(req.id, id, "{line}");
        }
        // A cursor, `_meta`, null params, call params: rmcp's.
        for line in [
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"c"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":null}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/list"}"#,
            // Read from arrays, fields in order, by a derived struct.
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[]}"#,
            r#"["2.0",3,"tools/list"]"#,
        ] {
            assert!(read(line.as_bytes()).is_none(), "{line}");
        }
    }
}
