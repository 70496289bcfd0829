//! One differential harness for the plain codec (`plain.rs`) against
//! rmcp's serde types, both halves of each message:
//!
//! - a request: what the client writes ([`call_line`], [`encode_request`])
//!   is the bytes rmcp's client writes, and what the served side reads of a
//!   line ([`read_request`], [`call_message`]) is the message rmcp's parse
//!   makes of it, on the lines our client writes and on generated hostile
//!   ones;
//! - an answer: what the served side writes ([`call_answer_text`]) is the
//!   bytes rmcp's handler writes, and what the client reads of a line
//!   ([`read_answer`]) ends as on rmcp's path ([`read_server_message`],
//!   then `shape_call_result`), on the lines our server writes and on
//!   generated hostile ones.
//!
//! Ours may decline (`None`) where rmcp handles a line; where ours takes
//! it, the two must agree. Generated lines hold ids of every kind,
//! unicode and escapes, nested arguments, errors, `isError` results,
//! content parts of every kind, `structuredContent`, `_meta`, unknown
//! fields, repeated keys, and arrays where objects belong.

use super::*;
use crate::jsonrpc::shape::{call_result, shape_call_result};
use crate::parts::{Part, PartKind};
use crate::test_json::Gen;
use rmcp::model::{
    CustomRequest, GetMeta, JsonRpcRequest, NumberOrString, ProgressToken, ServerJsonRpcMessage,
};
use serde_json::json;

/// The first id of a direct call (`mcp/direct.rs`), and the last.
const FIRST_ID: i64 = 1_000_000_000;
const LAST_ID: i64 = i32::MAX as i64;

// ---------------------------------------------------------------------------
// Requests.

/// The line rmcp's client writes for a tools/call (no newline): a custom
/// request with a progress token, the token taken out
/// ([`drop_progress_token`]), then written ([`encode_request`], itself
/// compared with rmcp's own writer below).
fn rmcp_call_line(id: i64, tool: &str, args: &Map<String, Value>) -> Vec<u8> {
    let params = json!({"name": tool, "arguments": Value::Object(args.clone())});
    let mut request = ClientRequest::CustomRequest(CustomRequest::new("tools/call", Some(params)));
    request
        .get_meta_mut()
        .set_progress_token(ProgressToken(NumberOrString::Number(3)));
    let mut item = JsonRpcMessage::Request(JsonRpcRequest::new(RequestId::Number(id), request));
    drop_progress_token(&mut item);
    let ours = encode_request(&item).unwrap_or_default();
    assert_eq!(ours, serde_json::to_vec(&item).unwrap_or_default());
    ours
}

/// Arguments of every shape a caller passes: empty, nested, escaped,
/// unicode, numbers of every kind, `_meta` among them.
fn argument_cases() -> Vec<Map<String, Value>> {
    [
        json!({}),
        json!({"text": "a\"b\n\u{00e9}\u{1F600}\u{7f}\\", "n": [1, 2.5, -0.0, 1e300, null, {"z": true, "a": {}}]}),
        json!({"z": 1, "a": 2, "_meta": {"x": 1}, "": ""}),
        json!({"deep": {"a": [{"b": [{"c": [1, [2, [3, {"d": "\u{2028}\u{2029}"}]]]}]}]}}),
        json!({"big": 18_446_744_073_709_551_615_u64, "neg": i64::MIN, "f": 0.1, "ctl": "\u{1}\u{1f}"}),
        json!({"path": "/tmp/x y", "arguments": {"name": "not the tool"}, "id": 7}),
    ]
    .into_iter()
    .filter_map(|v| match v {
        Value::Object(m) => Some(m),
        _ => None,
    })
    .collect()
}

const TOOL_NAMES: [&str; 5] = ["echo", "we\"ird \u{2028} name", "", "ünï\\cøde 😀", "a/b.c"];

/// What the client writes is rmcp's line, and the served side reads it
/// back as the call it was, as rmcp's parse reads it.
#[test]
fn a_call_the_client_writes_is_rmcps_and_the_server_reads_it_back() {
    for args in argument_cases() {
        for tool in TOOL_NAMES {
            for id in [FIRST_ID, FIRST_ID + 1, LAST_ID] {
                let ours = call_line(id, tool, &args, None).unwrap_or_default();
                let Some(line) = ours.strip_suffix(b"\n") else {
                    panic!("no newline: {}", String::from_utf8_lossy(&ours));
                };
                assert_eq!(
                    String::from_utf8_lossy(line),
                    String::from_utf8_lossy(&rmcp_call_line(id, tool, &args))
                );
                let Some(Plain::Call {
                    id: read_id,
                    name,
                    arguments,
                }) = read_request(line)
                else {
                    panic!("not read as a call: {}", String::from_utf8_lossy(line));
                };
                assert_eq!(
                    (read_id, name.as_str(), arguments.as_ref()),
                    (RequestId::Number(id), tool, Some(&args))
                );
                assert_eq!(check_request(line), Ok(()));
                // With a progress token: the server reads what rmcp's
                // would (`_meta` is rmcp's to read).
                let relayed = call_line(id, tool, &args, Some("tok-1")).unwrap_or_default();
                // The token put in by hand is what serde writes.
                for token in ["tok-1", "tn-1000000001", "a\"b"] {
                    let mut serde_line = serde_json::to_vec(&CallLine {
                        jsonrpc: "2.0",
                        id,
                        method: "tools/call",
                        params: CallParams {
                            name: tool,
                            arguments: &args,
                            meta: Some(CallMeta {
                                progress_token: token,
                            }),
                        },
                    })
                    .unwrap_or_default();
                    serde_line.push(b'\n');
                    let ours = call_line(id, tool, &args, Some(token)).unwrap_or_default();
                    assert_eq!(
                        String::from_utf8_lossy(&ours),
                        String::from_utf8_lossy(&serde_line)
                    );
                }
                let read = serde_json::from_slice::<ClientJsonRpcMessage>(&relayed);
                let Ok(JsonRpcMessage::Request(req)) = read else {
                    panic!(
                        "rmcp reads no request: {}",
                        String::from_utf8_lossy(&relayed)
                    );
                };
                let ClientRequest::CallToolRequest(call) = &req.request else {
                    panic!("not a call: {req:?}");
                };
                assert_eq!(call.params.name, tool);
                assert_eq!(call.params.arguments.as_ref(), Some(&args));
                let read = serde_json::to_value(&req).unwrap_or_default();
                assert_eq!(read["params"]["_meta"], json!({"progressToken": "tok-1"}));
                assert!(read_request(&relayed).is_none());
            }
        }
    }
}

#[test]
fn a_cancel_is_the_notification_rmcp_writes() {
    let note = CancelledNotification::new(CancelledNotificationParam::new(
        Some(RequestId::Number(FIRST_ID)),
        Some("request timeout".into()),
    ));
    let msg: ClientJsonRpcMessage = JsonRpcMessage::notification(note.into());
    let mut rmcp = serde_json::to_vec(&msg).unwrap_or_default();
    rmcp.push(b'\n');
    assert_eq!(
        String::from_utf8_lossy(&cancel_line(FIRST_ID, "request timeout")),
        String::from_utf8_lossy(&rmcp)
    );
    assert_eq!(
        String::from_utf8_lossy(&rmcp),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1000000000,\"reason\":\"request timeout\"}}\n"
    );
}

#[test]
fn a_request_goes_without_the_progress_token_rmcp_added() {
    let params = json!({"name": "echo", "arguments": {"text": "hi"}});
    let mut request = ClientRequest::CustomRequest(CustomRequest::new("tools/call", Some(params)));
    request
        .get_meta_mut()
        .set_progress_token(ProgressToken(NumberOrString::Number(4)));
    request.get_meta_mut().insert("trace".into(), json!("t-1"));
    let mut item = JsonRpcMessage::Request(JsonRpcRequest::new(RequestId::Number(9), request));
    let before = serde_json::to_value(&item).unwrap_or_default();
    assert_eq!(before["params"]["_meta"]["progressToken"], 4);
    drop_progress_token(&mut item);
    let after = serde_json::to_value(&item).unwrap_or_default();
    assert_eq!(
        after,
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": {"trace": "t-1"}}})
    );
    // A token alone leaves no `_meta` behind; a request without params
    // keeps it (the only thing that makes its params an object).
    for (params, expected) in [
        (Some(json!({"cursor": "c"})), json!({"cursor": "c"})),
        (None, json!({"_meta": {"progressToken": 5}})),
    ] {
        let mut request = ClientRequest::CustomRequest(CustomRequest::new("tools/list", params));
        request
            .get_meta_mut()
            .set_progress_token(ProgressToken(NumberOrString::Number(5)));
        let mut item = JsonRpcMessage::Request(JsonRpcRequest::new(RequestId::Number(10), request));
        drop_progress_token(&mut item);
        let after = serde_json::to_value(&item).unwrap_or_default();
        assert_eq!(after["params"], expected, "{after}");
    }
}

#[test]
fn any_request_is_written_as_rmcp_writes_it() {
    let args =
        json!({"text": "a\"b\n\u{00e9}\u{1F600}\u{7f}", "n": [1, 2.5, null, {"z": true, "a": {}}]});
    let cases = [
        (
            RequestId::Number(3),
            Some(json!({"name": "echo", "arguments": args})),
        ),
        (
            RequestId::String("r-1".into()),
            Some(json!({"cursor": "c", "_meta": {"x": 1}})),
        ),
        (RequestId::String("\u{e9}\"\\".into()), Some(json!({}))),
        (RequestId::Number(i64::MIN), None),
        (RequestId::Number(6), Some(json!([1, 2]))),
        (RequestId::Number(7), Some(json!("text"))),
    ];
    for (id, params) in cases {
        let request = ClientRequest::CustomRequest(CustomRequest::new("tools/call", params));
        let item = JsonRpcMessage::Request(JsonRpcRequest::new(id, request));
        let ours = encode_request(&item).unwrap_or_default();
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
        Some(json!({"name": "echo"})),
    ));
    request.get_meta_mut().insert("trace".into(), "t".into());
    let item = JsonRpcMessage::Request(JsonRpcRequest::new(RequestId::Number(7), request));
    let ours = String::from_utf8(encode_request(&item).unwrap_or_default()).unwrap_or_default();
    assert_eq!(
        ours,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"trace":"t"},"name":"echo"}}"#
    );
}

/// What the served side reads of `line`, compared with rmcp's parse:
/// `Some(true)` a call, `Some(false)` a list, `None` declined; `Err` when
/// ours took it and rmcp read something else.
fn served_read(line: &[u8]) -> Result<Option<bool>, String> {
    let shown = String::from_utf8_lossy(line);
    let shown = shown.get(..200).unwrap_or(&shown);
    let full = serde_json::from_slice::<ClientJsonRpcMessage>(line);
    let taken = match read_request(line) {
        None => None,
        Some(Plain::List { id }) => match &full {
            Ok(ClientJsonRpcMessage::Request(req))
                if matches!(req.request, ClientRequest::ListToolsRequest(_)) && req.id == id =>
            {
                Some(false)
            }
            other => return Err(format!("{shown}: a list, rmcp {other:?}")),
        },
        Some(call) => {
            let fast = call_message(call).map(|m| serde_json::to_value(m).ok());
            // A call whose arguments are no object is compared with its
            // arguments' placeholder (see `Plain::NotAnObject`).
            let rmcp = full
                .as_ref()
                .ok()
                .map(|m| serde_json::to_value(m).ok().map(placeholder_arguments));
            if fast != rmcp {
                return Err(format!("{shown}: plain {fast:?}, rmcp {rmcp:?}"));
            }
            Some(true)
        }
    };
    check_request(line).map_err(|e| format!("{shown}: {e}"))?;
    Ok(taken)
}

/// Tricky lines: whatever the served side reads, rmcp reads the same.
#[test]
fn a_tricky_request_the_served_side_reads_is_what_rmcp_reads() {
    let call = |id: &str, params: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#)
    };
    let plain = r#"{"name":"shout","arguments":{"text":"x"}}"#;
    let mut lines: Vec<(Vec<u8>, Option<bool>)> = Vec::new();
    let mut expect = |line: String, taken: Option<bool>| lines.push((line.into_bytes(), taken));
    // Ids of every kind: rmcp takes integers (and floats that are one).
    for (id, taken) in [
        ("\"s\"", true),
        ("\"\"", true),
        ("\"\\u00e9\"", true),
        ("7.0", true),
        ("7e0", true),
        ("-7", true),
        ("0", true),
        ("-0", true),
        ("9223372036854775807", true),
        ("-9223372036854775808", true),
        ("9223372036854775808", false),
        ("7.5", false),
        ("1e400", false),
        ("null", false),
        ("[7]", false),
        ("{}", false),
        ("true", false),
    ] {
        expect(call(id, plain), taken.then_some(true));
    }
    for (params, taken) in [
        (r#"{"name":"shout","arguments":{"a":1,"a":2}}"#, true),
        (r#"{"name":"shout","arguments":{"a":1,"b":2,"a":3}}"#, true),
        (r#"{"name":"shout","name":"other"}"#, false),
        (
            r#"{"name":"shout","arguments":{},"arguments":{"x":1}}"#,
            false,
        ),
        (r#"{"name":"shout","arguments":null}"#, false),
        (r#"{"name":null}"#, false),
        (r#"{"name":"shout","arguments":[1,2]}"#, true),
        (r#"{"name":"shout","arguments":"x"}"#, true),
        (r#"{"name":"shout","arguments":7}"#, true),
        (r#"{"name":7}"#, false),
        (r#"{"name":"shout","arguments":{},"extra":1}"#, false),
        (r#"{"name":"shout","arguments":{},"task":{}}"#, false),
        (r#"{"name":"shout","_meta":{"progressToken":1}}"#, false),
        (r#"{"name":"shout","requestState":"s"}"#, false),
        (r#"["shout",{"text":"in an array"}]"#, false),
        (r#"["shout"]"#, false),
        (r#"[]"#, false),
        (r#""shout""#, false),
        (r#"null"#, false),
        (
            r#"{"\u006eame":"sh\u006fut","\u0061rguments":{"\u0074ext":"\ud83d\ude00"}}"#,
            true,
        ),
        (r#"{"name":"shout","arguments":{"n":1e400}}"#, false),
        (r#"{"name":"shout","arguments":{"s":"\ud800"}}"#, false),
        (
            r#"{"name":"shout","arguments":{"n":123456789012345678901234567890,"f":-0.0,"g":1.50}}"#,
            true,
        ),
    ] {
        expect(call("1", params), taken.then_some(true));
    }
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    expect(
        call(
            "1",
            &format!(r#"{{"name":"shout","arguments":{{"d":{deep}}}}}"#),
        ),
        None,
    );
    for (line, taken) in [
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
            Some(false),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"l","method":"tools/list","params":{}}"#,
            Some(false),
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"c"}}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{}}}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":null}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"name":"x"}}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[]}"#,
            None,
        ),
        (r#"{"jsonrpc":"2.0","method":"tools/list"}"#, None),
        (r#"["2.0",3,"tools/list"]"#, None),
        (r#"["2.0",1,"tools/call",{"name":"shout"}]"#, None),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"shout"}}"#,
            Some(true),
        ),
        (
            r#"{"method":"tools/call","params":{"arguments":{},"name":"read"},"id":"s-1","jsonrpc":"2.0"}"#,
            Some(true),
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read"}}"#,
            Some(true),
        ),
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#, None),
        (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, None),
        (
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"shout"}}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list","params":{"name":"shout"}}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shout"},"result":{}}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"extra":1}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"tools/call","params":{"name":"shout"}}"#,
            Some(true),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shout"}} "#,
            Some(true),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shout"}}x"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shout"}}{}"#,
            None,
        ),
        ("{not json", None),
    ] {
        expect(line.to_string(), taken);
    }
    lines.push((b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shout\",\"arguments\":{\"text\":\"\xff\"}}}".to_vec(), None));
    let mut wrong = Vec::new();
    for (line, expected) in &lines {
        match served_read(line) {
            Ok(taken) if taken == *expected => {}
            Ok(taken) => wrong.push(format!(
                "{}: taken {taken:?}, expected {expected:?}",
                String::from_utf8_lossy(line)
            )),
            Err(e) => wrong.push(e),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A request line from hostile pieces (see `test_json::Gen`).
fn generated_request(gen: &mut Gen) -> Vec<u8> {
    let name = |gen: &mut Gen| -> Vec<u8> {
        let names: &[&[u8]] = &[
            br#""shout""#,
            br#""shout""#,
            br#""\u0073hout""#,
            br#""""#,
            b"5",
            b"null",
            br#""\ud800""#,
            b"\"\xff\"",
        ];
        gen.pick(names).to_vec()
    };
    let mut params = Vec::new();
    for _ in 0..gen.below(4) {
        let field = match gen.below(8) {
            0..=2 => [&br#""name":"#[..], &name(gen)].concat(),
            3 | 4 => [&br#""arguments":"#[..], &gen.value(1)].concat(),
            5 => br#""arguments":{"text":"x","text":"y"}"#.to_vec(),
            6 => [&br#""_meta":"#[..], &gen.value(2)].concat(),
            _ => [&br#""cursor":"#[..], &gen.string()].concat(),
        };
        params.push(field);
    }
    // Mostly the params of a call, its arguments any value or an object of
    // any values.
    if gen.below(2) == 0 {
        let called = match gen.below(3) {
            0 => name(gen),
            _ => br#""shout""#.to_vec(),
        };
        params = vec![[&br#""name":"#[..], &called].concat()];
        let arguments = match gen.below(4) {
            0 => gen.value(1),
            1 => {
                let a = [&br#""text":"#[..], &gen.string()].concat();
                let b = [&br#""n":"#[..], &gen.value(2)].concat();
                [&b"{"[..], &a, b",", &b, b"}"].concat()
            }
            _ => br#"{"text":"x"}"#.to_vec(),
        };
        if gen.below(4) != 0 {
            params.push([&br#""arguments":"#[..], &arguments].concat());
        }
    }
    let params = match gen.below(12) {
        0 => b"null".to_vec(),
        1 => gen.value(1),
        // The fields of params in order, as an array.
        2 => {
            let v = match gen.below(2) {
                0 => gen.value(1),
                _ => br#"{"text":"x"}"#.to_vec(),
            };
            [&b"["[..], &name(gen), b",", &v, b"]"].concat()
        }
        _ => [b"{".to_vec(), params.join(&b","[..]), b"}".to_vec()].concat(),
    };
    let pieces: [&[&[u8]]; 3] = [
        &[
            br#""jsonrpc":"2.0""#,
            br#""jsonrpc":"2.0""#,
            br#""jsonrpc":"2.0""#,
            br#""jsonrpc":"2.0""#,
            br#""jsonrpc":"2.0""#,
            br#""jsonrpc":"2.0""#,
            br#""jsonrpc":"2\u002e0""#,
            br#""jsonrpc":"1.0""#,
            br#""jsonrpc":2"#,
        ],
        &[
            br#""id":1"#,
            br#""id":1"#,
            br#""id":1"#,
            br#""id":1"#,
            br#""id":"s""#,
            br#""id":"""#,
            br#""id":7.0"#,
            br#""id":8e0"#,
            br#""id":-7"#,
            br#""id":-0"#,
            br#""id":9223372036854775807"#,
            br#""id":9223372036854775808"#,
            br#""id":7.5"#,
            br#""id":1e400"#,
            br#""id":null"#,
            br#""id":[1]"#,
            br#""id":"\ud800""#,
        ],
        &[
            br#""method":"tools/call""#,
            br#""method":"tools/call""#,
            br#""method":"tools/call""#,
            br#""method":"tools/call""#,
            br#""method":"tools/call""#,
            br#""method":"tools/call""#,
            br#""method":"tools\/call""#,
            br#""method":"tools/list""#,
            br#""method":"tools/list""#,
            br#""method":"ping""#,
            br#""method":5"#,
        ],
    ];
    let mut fields: Vec<Vec<u8>> = Vec::new();
    for piece in pieces {
        if gen.below(30) != 0 {
            fields.push(gen.pick(piece).to_vec());
        }
    }
    if gen.below(4) != 0 {
        fields.push([&br#""params":"#[..], &params].concat());
    }
    for _ in 0..gen.below(6) / 5 {
        let extra: &[&[u8]] = &[br#""extra":1"#, br#""result":{}"#, br#""id":2"#];
        fields.push(gen.pick(extra).to_vec());
    }
    // In any order.
    for i in (1..fields.len()).rev() {
        fields.swap(i, gen.below(i + 1));
    }
    let line = [b"{".to_vec(), fields.join(&b","[..]), b"}".to_vec()].concat();
    match gen.below(40) {
        // The fields of a request in order, as an array.
        0 => [&b"[\"2.0\",1,\"tools/call\","[..], &params, b"]"].concat(),
        1 => [&line[..], b" "].concat(),
        2 => [&line[..], b"x"].concat(),
        _ => line,
    }
}

#[test]
fn thirty_thousand_generated_requests_the_served_side_reads_are_what_rmcp_reads() {
    let mut gen = Gen(0x2545_F491_4F6C_DD1D);
    let (mut calls, mut lists, mut wrong) = (0, 0, Vec::new());
    for _ in 0..30_000 {
        match served_read(&generated_request(&mut gen)) {
            Ok(Some(true)) => calls += 1,
            Ok(Some(false)) => lists += 1,
            Ok(None) => {}
            Err(e) => wrong.push(e),
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of 30,000 differ:\n{}",
        wrong.len(),
        wrong[..wrong.len().min(8)].join("\n")
    );
    assert!(calls > 1_000 && lists > 100, "{calls} calls, {lists} lists");
}

#[test]
fn text_that_is_no_message_gets_the_json_rpc_errors() {
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
    let batch =
        answer(r#"[{"jsonrpc":"2.0","id":"a","method":"x"},{"jsonrpc":"2.0","method":"n"},7]"#)
            .unwrap_or_default();
    assert_eq!(
        batch
            .as_array()
            .map(|a| a.iter().map(|v| v["id"].clone()).collect::<Vec<_>>()),
        Some(vec![json!("a"), Value::Null])
    );
    assert_eq!(answer("[]").unwrap_or_default()["id"], Value::Null);
    assert_eq!(answer(r#"[{"jsonrpc":"2.0","method":"n"}]"#), None);
}

/// The one-pass refusal answers every text as the read of a whole
/// `Value` does, word for word: the parse errors (the same reader, the
/// same depth limit, UTF-8 and escapes checked in skipped strings and
/// keys), the ids kept, notifications unanswered, duplicate keys.
#[test]
fn the_one_pass_refusal_answers_as_the_whole_read() {
    let err = serde_json::from_str::<Value>("{").expect_err("an error to quote");
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let deep_map = |n: usize| format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
    let mut texts: Vec<Vec<u8>> = [
        "", " ", "{", "[", "]", "[1,", "[1 2]", "{bad", "nul", "tru", "01", "1.", "-",
        "1e400", "[1e400]", "[-1e400]", "[123456789012345678901234567890]",
        "[1] x", "{} {}", "\"\\x\"", "[\"\\ud800\"]", "[\"\\u12\"]",
        "[{\"id\":1}", "{\"a\" 1}", "{1:2}", "{\"a\":1,}", "[1,]",
        "[]", " [ ] ", "[[]]", "[0]", "[0,0,0]", "[null,true,\"s\",1.5,{}]",
        r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"n"},{"id":"b","method":"ping"}]"#,
        r#"[{"method":"n"},{"method":"m","params":[1,2]}]"#,
        r#"[{"id":null,"method":"x"},{"id":true},{"id":[1]},{"id":{"a":1}},{"id":1.5},{"id":-7},{"id":18446744073709551615}]"#,
        r#"[{"id":1,"id":"two"},{"id":"one","id":null},{"id":1,"id":{"x":[]}}]"#,
        r#"[{"method":1,"id":2},{"method":null}]"#,
        r#"[{"id":"\u00e9\ud83d\ude00","x":{"y":[{"z":"\n"}]}}]"#,
        r#"{"jsonrpc":"2.0","id":4,"nethod":"x"}"#,
        r#"{"jsonrpc":"2.0","method":"x","params":5}"#,
        r#"{"id":"s"}"#, "{}", "5", "\"str\"", "null", "true",
        r#"{"id":1,"$serde_json::private::RawValue":2}"#,
        r#"[{"$serde_json::private::RawValue":"x"}]"#,
    ]
    .iter()
    .map(|t| t.as_bytes().to_vec())
    .collect();
    texts.push(b"[\"\xff\"]".to_vec());
    texts.push(b"[{\"id\":\"\xc3\xa9\",\"k\xff\":1}]".to_vec());
    texts.push(b"{\"\xff\":1}".to_vec());
    for n in [126, 127, 128, 129, 5000] {
        texts.push(deep(n).into_bytes());
        texts.push(format!("[{}]", deep_map(n)).into_bytes());
        texts.push(format!("[{{\"id\":{}}}]", deep(n)).into_bytes());
    }
    let mut gen = crate::test_json::Gen(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let mut t = b"[".to_vec();
        for i in 0..gen.below(5) {
            if i > 0 {
                t.push(b',');
            }
            t.extend_from_slice(&gen.value(0));
        }
        t.push(b']');
        texts.push(t);
        texts.push(gen.value(0));
    }
    for batch in [1024, 1025, 3000] {
        texts.push(format!("[{}]", vec!["{}"; batch].join(",")).into_bytes());
        texts.push(format!("[{}]", vec![r#"{"method":"n"}"#; batch].join(",")).into_bytes());
    }
    for text in &texts {
        let lean = crate::jsonrpc::refuse::refuse(text, &err);
        let whole = crate::jsonrpc::refuse::reject_whole(text, &err);
        assert_eq!(
            lean.as_deref().map(String::from_utf8_lossy),
            whole.as_deref().map(String::from_utf8_lossy),
            "{}",
            String::from_utf8_lossy(&text[..text.len().min(300)])
        );
    }
}

/// A batch gets one answer per request up to BATCH_ANSWERS, and one
/// error saying how many it held past that.
#[test]
fn a_batch_past_the_answer_cap_gets_one_error() {
    let cap = crate::limits::BATCH_ANSWERS;
    let batch = |n: usize| format!("[{}]", vec!["0"; n].join(","));
    let answers = reject_batch(batch(cap).as_bytes()).expect("an answer");
    let answers: Value = serde_json::from_slice(&answers).expect("JSON");
    assert_eq!(answers.as_array().map(Vec::len), Some(cap));
    let one = reject_batch(batch(cap + 1).as_bytes()).expect("an answer");
    let one: Value = serde_json::from_slice(&one).expect("JSON");
    assert_eq!(one["id"], Value::Null);
    assert_eq!(one["error"]["code"], INVALID_REQUEST);
    assert_eq!(
        one["error"]["message"],
        format!(
            "invalid request: a batch of {} requests, answered as one: batches are not \
             supported (MCP has no JSON-RPC batches since 2025-06-18); send each request on \
             its own",
            cap + 1
        )
    );
    // Notifications get no answer, so they do not count.
    let quiet = format!("[{},0]", vec![r#"{"method":"n"}"#; cap + 5].join(","));
    let quiet: Value =
        serde_json::from_slice(&reject_batch(quiet.as_bytes()).expect("an answer")).expect("JSON");
    assert_eq!(quiet.as_array().map(Vec::len), Some(1));
    assert!(is_batch(b" \n[1]") && !is_batch(b"{}") && !is_batch(b"") && !is_batch(b"x["));
}

// ---------------------------------------------------------------------------
// Answers.

/// The bytes rmcp's handler writes for the answer to call `id` whose tool
/// gave `outcome` (no newline).
fn rmcp_answer(id: &RequestId, outcome: Result<ToolResult, ErrorData>) -> Vec<u8> {
    let message = match outcome {
        Ok(result) => {
            let mut result = ServerResult::from(CallToolResponse::from(call_result(result)));
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            ServerJsonRpcMessage::response(result, id.clone())
        }
        Err(error) => ServerJsonRpcMessage::error(error, Some(id.clone())),
    };
    serde_json::to_vec(&message).unwrap_or_default()
}

fn part(kind: PartKind, text: Option<&str>, data: Option<&str>, url: Option<&str>) -> Part {
    Part {
        kind,
        text: text.map(str::to_string),
        mime_type: Some("image/png".into()),
        data: data.map(str::to_string),
        url: url.map(str::to_string),
        name: Some("n\u{e9}".into()),
    }
}

/// Tool results of every kind: outputs with escapes, unicode and control
/// characters, empty, long; errors; parts of every kind.
fn tool_results() -> Vec<ToolResult> {
    let outputs = [
        String::new(),
        "plain".into(),
        "quotes \" and \\ backslash, \n newline, \t tab, \u{1} \u{1f} \u{7f}".into(),
        "unicode: é ü 漢字 😀 \u{2028} \u{2029}".into(),
        "</script> & <b> '".into(),
        r#"{"result": "looks like JSON"}"#.into(),
        "x".repeat(10_000),
    ];
    let mut results = Vec::new();
    for output in &outputs {
        results.push(ToolResult::ok(output.clone()));
        results.push(ToolResult::error(output.clone()));
    }
    let parts = [
        part(PartKind::Text, Some("more \"text\""), None, None),
        part(PartKind::Image, None, Some("aGk="), None),
        part(PartKind::Audio, None, Some("SUQz"), None),
        part(PartKind::File, None, Some("JVBERg=="), None),
        part(PartKind::File, None, None, Some("https://h/r.bin")),
        part(PartKind::Image, None, None, None),
    ];
    for n in 1..=parts.len() {
        results.push(ToolResult::ok("with parts").with_parts(parts[..n].to_vec()));
    }
    results.push(ToolResult::error("bad").with_parts(parts[1..2].to_vec()));
    results
}

/// Ids a served call may carry.
fn request_ids() -> Vec<RequestId> {
    vec![
        RequestId::Number(0),
        RequestId::Number(-7),
        RequestId::Number(i64::MAX),
        RequestId::Number(i64::MIN),
        RequestId::Number(FIRST_ID),
        RequestId::String("a\"b\\c".into()),
        RequestId::String("".into()),
        RequestId::String("\u{e9}\u{1F600}\u{2028}".into()),
        RequestId::String(FIRST_ID.to_string().into()),
    ]
}

/// What the served side writes is rmcp's answer, and the client reads it
/// back as rmcp's path does (the output and flag as the tool gave them,
/// when it gave no parts).
#[test]
fn an_answer_the_server_writes_is_rmcps_and_the_client_reads_it_back() {
    let (mut shaped, mut whole) = (0, 0);
    for result in tool_results() {
        for id in request_ids() {
            let ours = call_answer_text(id.clone(), Ok(result.clone())).unwrap_or_default();
            let rmcp = rmcp_answer(&id, Ok(result.clone()));
            let shown = || format!("{} {id:?}", result.to_json_string());
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&rmcp),
                "{}",
                shown()
            );
            assert_eq!(
                text_answer_line(&id, &result).is_some(),
                result.parts.is_empty()
            );
            let Some(sent) = numeric(&id) else {
                // A string id the client never sends: dropped both ways.
                assert!(read_answer(&ours, |_| true).is_none(), "{}", shown());
                assert_eq!(check_answer(&ours, FIRST_ID), Ok(()), "{}", shown());
                continue;
            };
            let Some((got, answer)) = read_answer(&ours, |n| n == sent) else {
                panic!("not read: {}", shown());
            };
            assert_eq!(got, sent);
            match &answer {
                Answer::Shaped(r) => {
                    shaped += 1;
                    // A text part is joined to the output's text.
                    if result.parts.is_empty() {
                        assert_eq!(
                            (r.output.as_str(), r.is_error),
                            (result.output.as_str(), result.is_error)
                        );
                    }
                }
                Answer::Json(_) => whole += 1,
                other => panic!("{}: {other:?}", shown()),
            }
            assert_eq!(check_answer(&ours, sent), Ok(()), "{}", shown());
        }
    }
    assert!(shaped > 50 && whole > 10, "{shaped} {whole}");
    // Errors: rmcp's bytes, read back as the error.
    for error in [
        ErrorData::invalid_params("unknown tool \"x\"", None),
        ErrorData::internal_error("boom \u{e9} \"q\"", Some(json!({"k": [1, null]}))),
        ErrorData::new(rmcp::model::ErrorCode(-32000), "custom", None),
    ] {
        for id in request_ids() {
            let ours = call_answer_text(id.clone(), Err(error.clone())).unwrap_or_default();
            assert_eq!(ours, rmcp_answer(&id, Err(error.clone())));
            if let Some(sent) = numeric(&id) {
                match read_answer(&ours, |n| n == sent) {
                    Some((got, Answer::Error(e))) if got == sent => assert_eq!(e, error),
                    other => panic!("{other:?}"),
                }
                assert_eq!(check_answer(&ours, sent), Ok(()));
            }
        }
    }
    // A list: rmcp's own message.
    let list = list_answer(Vec::new(), RequestId::Number(4));
    assert_eq!(
        serde_json::to_value(&list).unwrap_or_default(),
        json!({"jsonrpc": "2.0", "id": 4, "result": {"tools": []}})
    );
}

/// Answer results read by the client: the one-pass read (when it takes
/// one) and the general one give what rmcp's path gives.
#[test]
fn an_answer_read_in_one_pass_is_what_rmcps_path_makes_of_it() {
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
        // No content: typed by rmcp's parse, the same either way.
        r#"{"structuredContent":{"a":1}}"#,
        r#"{"tools":[]}"#,
        r#"{}"#,
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
        assert_eq!(check_answer(line.as_bytes(), FIRST_ID), Ok(()), "{result}");
        let got = match read_answer(line.as_bytes(), |id| id == FIRST_ID) {
            Some((FIRST_ID, Answer::Shaped(r))) => r,
            Some((FIRST_ID, Answer::Json(v))) => shape_call_result(&v),
            other => panic!("{result}: {other:?}"),
        };
        // Objects rmcp keeps as they came, what a typed result writes back.
        if value.is_object() {
            assert_eq!(got.to_json_string(), expected.to_json_string(), "{result}");
        }
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
        assert_eq!(check_answer(other.as_bytes(), 1), Ok(()), "{other}");
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
        b"{\"_meta\":{\"k\":\"\xff\"},\"content\":[{\"type\":\"text\",\"text\":\"t\"}]}".to_vec(),
        b"{\"content\":[{\"type\":\"text\",\"text\":\"t\",\"x\":\"\xc3\"}]}".to_vec(),
        b"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}".to_vec(),
    ])
    .collect();
    for result in results {
        let mut line = format!(r#"{{"jsonrpc":"2.0","id":{FIRST_ID},"result":"#).into_bytes();
        line.extend_from_slice(&result);
        line.push(b'}');
        let shown = String::from_utf8_lossy(&result);
        assert!(serde_json::from_slice::<Value>(&result).is_err(), "{shown}");
        assert!(shape_text_answer(&line).is_none(), "{shown}");
        assert!(read_answer(&line, |_| true).is_none(), "{shown}");
        assert!(read_server_message(&line).is_none(), "{shown}");
    }
}

#[test]
fn a_server_line_is_read_whole_a_call_answer_kept_as_json() {
    let result_of = |line: &str| match read_server_message(line.as_bytes())? {
        JsonRpcMessage::Response(r) => Some(r.result),
        _ => None,
    };
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
    assert!(read_server_message(br#"{"jsonrpc":"1.0","id":1,"result":{"content":[]}}"#).is_none());
    assert!(!matches!(
        read_server_message(br#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{"content":[]}}"#),
        Some(JsonRpcMessage::Response(_))
    ));
    // The `\r` and byte-order mark a line may carry; nothing but objects.
    let ok = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    assert!(read_server_message(ok).is_some());
    let mut crlf = ok.to_vec();
    crlf.push(b'\r');
    assert!(read_server_message(&crlf).is_some());
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(ok);
    assert!(read_server_message(&bom).is_some());
    for junk in [
        &b"7\xff\xfe"[..],
        b"[]",
        b"{}",
        b"\"x\"",
        b"",
        b"{\"jsonrpc\":",
    ] {
        assert!(read_server_message(junk).is_none(), "{junk:?}");
        assert!(read_answer(junk, |_| true).is_none(), "{junk:?}");
    }
}

/// A content part, or now and then any value in its place.
fn generated_part(gen: &mut Gen) -> Vec<u8> {
    if gen.below(10) == 0 {
        return gen.value(2);
    }
    let kinds: &[&[u8]] = &[
        br#""text""#,
        br#""text""#,
        br#""text""#,
        br#""te\u0078t""#,
        br#""image""#,
        br#""audio""#,
        br#""resource""#,
        br#""resource_link""#,
        b"5",
        b"null",
    ];
    let mut fields = Vec::new();
    for _ in 0..1 + gen.below(4) {
        let field = match gen.below(9) {
            0 | 1 => [&br#""type":"#[..], gen.pick(kinds)].concat(),
            2 | 3 => [&br#""text":"#[..], &gen.string()].concat(),
            4 => [&br#""text":"#[..], &gen.value(2)].concat(),
            5 => [&br#""annotations":"#[..], &gen.value(2)].concat(),
            6 => [&br#""data":"aGk=","mimeType":"#[..], &gen.string()].concat(),
            7 => [&br#""uri":"u","name":"#[..], &gen.string()].concat(),
            _ => [&br#""resource":{"text":"#[..], &gen.string(), b"}"].concat(),
        };
        fields.push(field);
    }
    [b"{".to_vec(), fields.join(&b","[..]), b"}".to_vec()].concat()
}

/// A tools/call result, or now and then any value in its place.
fn generated_result(gen: &mut Gen) -> Vec<u8> {
    if gen.below(12) == 0 {
        return gen.value(1);
    }
    let mut fields = Vec::new();
    if gen.below(8) != 0 {
        let n = gen.below(4);
        let parts: Vec<Vec<u8>> = (0..n).map(|_| generated_part(gen)).collect();
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
            6 => [&br#""\u0063ontent":["#[..], &generated_part(gen), b"]"].concat(),
            _ => [&br#""content":["#[..], &generated_part(gen), b"]"].concat(),
        };
        let at = gen.below(fields.len() + 1);
        fields.insert(at, field);
    }
    [b"{".to_vec(), fields.join(&b","[..]), b"}".to_vec()].concat()
}

#[test]
fn ten_thousand_generated_answers_end_as_on_rmcps_path() {
    let mut gen = Gen(0x9E37_79B9_7F4A_7C15);
    let (mut taken, mut fast, mut wrong) = (0, 0, Vec::new());
    let envelopes: &[&[u8]] = &[
        br#"{"jsonrpc":"2.0","id":ID,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":ID,"result":R}"#,
        br#"{"result":R,"id":"ID","jsonrpc":"2.0"}"#,
        br#"{"jsonrpc":"2.0","id":ID,"result":R,"error":null}"#,
        br#"{"jsonrpc":"2.0","id":ID,"extra":[1e400],"result":R}"#,
        br#"{"jsonrpc":"2.0","id":ID,"result":R,"error":{"code":3,"message":"m"}}"#,
        br#"{"jsonrpc":"2.0","id":ID,"error":{"code":3,"message":"m","data":R}}"#,
        br#"{"jsonrpc":"2.0","id":ID,"error":{"code":-32602,"message":"\u00e9"}}"#,
        br#"{"jsonrpc":"2.0","id":ID,"method":"ping","result":R}"#,
        br#"{"jsonrpc":"2.0","id":ID.0,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":IDe0,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":"+ID","result":R}"#,
        br#"{"jsonrpc":"2.0","id":"0ID","result":R}"#,
        br#"{"jsonrpc":"2.0","id":-ID,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":ID7,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":null,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":[ID],"result":R}"#,
        br#"{"jsonrpc":"2.0","id":ID,"id":ID,"result":R}"#,
        br#"{"jsonrpc":"2.0","result":R}"#,
        br#"{"jsonrpc":"1.0","id":ID,"result":R}"#,
        br#"["2.0",ID,R]"#,
        br#"{"jsonrpc":"2.0","id":ID,"result":R} "#,
        br#"{"jsonrpc":"2.0","id":ID,"result":R}x"#,
    ];
    let ids = [FIRST_ID, FIRST_ID + 12_345, LAST_ID];
    for _ in 0..10_000 {
        let id = ids[gen.below(ids.len())];
        let envelope = String::from_utf8_lossy(gen.pick(envelopes))
            .replace("ID", &id.to_string())
            .into_bytes();
        let result = generated_result(&mut gen);
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
        if read_answer(&line, |n| n == id).is_some_and(|(n, _)| n == id) {
            taken += 1;
        }
        if let Err(e) = check_answer(&line, id) {
            wrong.push(format!("{}\n  {e}", String::from_utf8_lossy(&line)));
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

/// A kept result's fast line ([`kept_answer_line`]) is the bytes of the
/// typed round trip ([`super::super::shape::passed_through`], then
/// [`call_answer`]) wherever it takes the result; other shapes it leaves
/// to that round trip.
#[test]
fn a_kept_result_line_is_the_typed_answers_bytes() {
    let taken = [
        json!({"content": [{"type": "text", "text": "ping"}], "isError": false}),
        json!({"content": [{"type": "text", "text": "ping"}]}),
        json!({"content": []}),
        json!({"content": [{"type": "text", "text": "a\"\\\n\u{1}é😀"}, {"text": "b", "type": "text"}],
               "isError": true}),
        json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"result": "x", "n": [1, 2.5, null]},
               "isError": false}),
        json!({"structuredContent": {}, "content": [{"type": "text", "text": ""}]}),
    ];
    let left = [
        json!({"content": [{"type": "text", "text": "x"}], "_meta": {"k": 1}}),
        json!({"content": [{"type": "text", "text": "x", "annotations": {"priority": 1.0}}]}),
        json!({"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
        json!({"content": [{"type": "text", "text": "x"}], "structuredContent": [1]}),
        json!({"content": [{"type": "text", "text": "x"}], "structuredContent": null}),
        json!({"content": [{"type": "text", "text": "x"}], "isError": "no"}),
        json!({"content": [{"type": "text", "text": "x"}], "extra": true}),
        json!({"content": [{"type": "text", "text": 1}]}),
        json!({"isError": false}),
        json!([]),
    ];
    for id in [RequestId::Number(7), RequestId::String("s\"1".into())] {
        for raw in &taken {
            let Some(fast) = kept_answer_line(&id, raw) else {
                panic!("not taken: {raw}");
            };
            let shaped = shape_call_result(raw);
            let kept = crate::tool::RawResult {
                result: raw.clone(),
                parts: shaped.parts.len(),
            };
            let Some(typed) = crate::jsonrpc::shape::passed_through(&shaped, Some(kept)) else {
                panic!("no typed result: {raw}");
            };
            let slow = serde_json::to_vec(&call_answer(Ok(typed), id.clone())).unwrap_or_default();
            assert_eq!(
                String::from_utf8_lossy(&fast),
                String::from_utf8_lossy(&slow),
                "{raw}"
            );
        }
        for raw in &left {
            assert!(kept_answer_line(&id, raw).is_none(), "{raw}");
        }
    }
}

/// A result of a typed kind (initialize, tools/list, discover, resources,
/// empty, ...), sometimes with a member repeated, escaped, null or holding a
/// generated value.
fn generated_typed_result(gen: &mut Gen) -> Vec<u8> {
    let bases: &[&[u8]] = &[
        br#""protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"s","version":"1"}"#,
        br#""protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"},"instructions":"i""#,
        br#""tools":[{"name":"get_weather","description":"d","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}}}]"#,
        br#""tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","description":null,"inputSchema":{}}],"nextCursor":"c""#,
        br#""tools":[{"name":7,"inputSchema":{"type":"object"}}]"#,
        br#""tools":[{"name":"a"}]"#,
        br#""tools":[]"#,
        br#""supportedVersions":["2026-07-28"],"capabilities":{},"serverInfo":{"name":"s","version":"1"}"#,
        br#""resources":[{"uri":"u","name":"n"}]"#,
        br#""prompts":[]"#,
        br#""completion":{"values":[]}"#,
        br#""content":[],"protocolVersion":"2025-06-18""#,
        br#""_meta":{"k":1}"#,
        br#""#,
    ];
    let mut fields = vec![gen.pick(bases).to_vec()];
    for _ in 0..gen.below(3) {
        let field = match gen.below(9) {
            0 => [&br#""protocolVersion":"#[..], &gen.value(1)].concat(),
            1 => [&br#""tools":"#[..], &gen.value(2)].concat(),
            2 => br#""\u0074ools":[]"#.to_vec(),
            3 => br#""serverInfo":{"name":"\ud800","version":"1"}"#.to_vec(),
            4 => br#""extra":[1e400]"#.to_vec(),
            5 => [&br#""_meta":"#[..], &gen.value(1)].concat(),
            6 => br#""nextCursor":null"#.to_vec(),
            7 => br#""capabilities":{"tools":{},"tools":{}}"#.to_vec(),
            _ => [&br#""x":"#[..], &gen.value(2)].concat(),
        };
        let at = gen.below(fields.len() + 1);
        fields.insert(at, field);
    }
    fields.retain(|f| !f.is_empty());
    match gen.below(16) {
        0 => gen.value(1),
        1 => b"null".to_vec(),
        _ => [b"{".to_vec(), fields.join(&b","[..]), b"}".to_vec()].concat(),
    }
}

#[test]
fn typed_results_read_in_one_pass_end_as_rmcps_full_parse() {
    // read_server_message types a plain response's result from its own
    // text; what it makes of any line must be what rmcp's parse of the
    // whole line makes (a tools/call answer kept as JSON aside).
    let mut gen = Gen(0x2545_F491_4F6C_DD1D);
    let envelopes: &[&[u8]] = &[
        br#"{"jsonrpc":"2.0","id":1,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":"s","result":R}"#,
        br#"{"result":R,"id":2,"jsonrpc":"2.0"}"#,
        br#"{"\u006Asonrpc":"2.0","\u0069d":3,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":1,"result":R,"error":null}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":null,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"ping","result":R}"#,
        br#"{"jsonrpc":"2.0","id":1,"extra":[1e400],"result":R}"#,
        br#"{"jsonrpc":"2.0","id":1,"extra":"\ud800","result":R}"#,
        br#"{"jsonrpc":"2.0","id":1,"extra":0,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":1,"result":R,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":1,"id":1,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":null,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":1.5,"result":R}"#,
        br#"{"jsonrpc":"2.0","result":R}"#,
        br#"{"jsonrpc":"1.0","id":1,"result":R}"#,
        br#"{"jsonrpc":"2.0","id":1,"result":R} "#,
        br#"{"jsonrpc":"2.0","id":1,"result":R}x"#,
    ];
    let (mut typed, mut wrong) = (0, Vec::new());
    for _ in 0..10_000 {
        let result = generated_typed_result(&mut gen);
        let mut line = Vec::new();
        for (i, piece) in gen.pick(envelopes).split(|&b| b == b'R').enumerate() {
            if i > 0 {
                line.extend_from_slice(&result);
            }
            line.extend_from_slice(piece);
        }
        let ours = read_server_message(&line);
        let theirs = serde_json::from_slice::<ServerJsonRpcMessage>(&line).ok();
        // Kept as it came: a result with `content` and no `protocolVersion`.
        let kept = matches!(
            &ours,
            Some(JsonRpcMessage::Response(r)) if matches!(r.result, ServerResult::CustomResult(_))
        ) && serde_json::from_slice::<Value>(&line)
            .ok()
            .and_then(|v| v.get("result").and_then(Value::as_object).cloned())
            .is_some_and(|r| r.contains_key("content") && !r.contains_key("protocolVersion"));
        if kept {
            continue;
        }
        if matches!(&ours, Some(JsonRpcMessage::Response(_))) {
            typed += 1;
        }
        if format!("{ours:?}") != format!("{theirs:?}") {
            wrong.push(format!(
                "{}\n  ours {ours:?}\n  rmcp {theirs:?}",
                String::from_utf8_lossy(&line)
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of 10,000 differ:\n{}",
        wrong.len(),
        wrong[..wrong.len().min(6)].join("\n")
    );
    assert!(typed > 2_000, "only {typed} typed responses generated");
}
