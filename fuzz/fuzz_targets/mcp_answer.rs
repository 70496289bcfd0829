//! A server's line as the MCP client reads it: `read_server_message`, whose
//! one-pass paths (a tools/call answer kept as JSON, a plain response's
//! result typed from its own text) must end as rmcp's full parse of the
//! line does, the kept answers aside; and the direct tools/call path's
//! reading (`read_answer`), which must end as rmcp's path does for the call
//! ids it may answer (`check_answer`). Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage, ServerResult};
use serde_json::Value;
use toolnexus::jsonrpc::plain::{check_answer, message_text, read_server_message};

fuzz_target!(|line: &[u8]| {
    let ours = read_server_message(line);
    let theirs =
        message_text(line).and_then(|text| serde_json::from_slice::<ServerJsonRpcMessage>(text).ok());
    // A result with `content` (and no `protocolVersion`) is kept as it
    // came, where rmcp types it: check_answer below holds that path.
    let kept = matches!(
        &ours,
        Some(JsonRpcMessage::Response(r)) if matches!(r.result, ServerResult::CustomResult(_))
    ) && message_text(line)
        .and_then(|text| serde_json::from_slice::<Value>(text).ok())
        .and_then(|v| v.get("result").and_then(Value::as_object).cloned())
        .is_some_and(|r| r.contains_key("content") && !r.contains_key("protocolVersion"));
    if !kept {
        assert_eq!(
            format!("{ours:?}"),
            format!("{theirs:?}"),
            "{}",
            String::from_utf8_lossy(line)
        );
    }
    for id in [0, 1, 2, 1_000_000_000, i64::from(i32::MAX)] {
        if let Err(why) = check_answer(line, id) {
            panic!("id {id}: {why}\n{}", String::from_utf8_lossy(line));
        }
    }
});
