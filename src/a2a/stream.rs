//! A send answered as a stream (`message/stream` on 0.3,
//! `SendStreamingMessage` on 1.0 and upstream's wire): server-sent events,
//! each `data: <one JSON-RPC response>` and a blank line (the crate's one
//! SSE shape, what [`crate::provider::sse::SseParser`] reads), all answering
//! the request's id:
//!
//! 1. the task as acknowledged (`submitted`);
//! 2. a status update `working` when the run starts;
//! 3. a status update `working` for each tool call and each tool result of
//!    the loop, with a one-line message (`calling <tool>`, `<tool> done`,
//!    `<tool> failed`);
//! 4. on success, an artifact update carrying the answer (the task's
//!    artifact, the same `artifactId` GetTask shows);
//! 5. the final status update: `completed`, `input-required` (with the
//!    prompt), `failed` (with the error) or `canceled`; on 0.3 and
//!    upstream's wire it says `"final": true`.
//!
//! Then the stream ends. A peer that goes away ends nothing but its stream:
//! the task runs on, and GetTask answers it.
//!
//! On 0.3 (and upstream's wire) each result is the event itself, told apart
//! by `kind` (`task`, `status-update`, `artifact-update`); on 1.0 it is a
//! `StreamResponse`: `{"task"}`, `{"statusUpdate"}` or `{"artifactUpdate"}`.

use super::profile::{self, Profile};
use serde_json::{json, Map, Value};

/// One SSE event holding one JSON-RPC response.
pub fn frame(rpc_id: &Value, result: Value) -> Vec<u8> {
    let answer = json!({"jsonrpc": "2.0", "id": rpc_id, "result": result});
    crate::provider::sse::event(&answer.to_string()).into_bytes()
}

/// The first event: the acknowledged task.
pub fn task_event(task: &Value, wire: Profile, echo_context: bool) -> Value {
    let shown = profile::render(task, wire, echo_context);
    match wire {
        Profile::V10 => json!({ "task": shown }),
        _ => shown,
    }
}

/// A status update: `status` in the stored shape (`{state, message?}`).
pub fn status_event(
    wire: Profile,
    task_id: &str,
    context_id: &str,
    status: &Value,
    last: bool,
) -> Value {
    let pseudo = json!({"id": task_id, "contextId": context_id, "status": status});
    let shown = profile::render(&pseudo, wire, true)["status"].clone();
    let mut ev = Map::new();
    ev.insert("taskId".into(), json!(task_id));
    ev.insert("contextId".into(), json!(context_id));
    match wire {
        Profile::V10 => {
            ev.insert("status".into(), shown);
            json!({ "statusUpdate": ev })
        }
        _ => {
            ev.insert("kind".into(), json!("status-update"));
            ev.insert("status".into(), shown);
            ev.insert("final".into(), json!(last));
            Value::Object(ev)
        }
    }
}

/// A progress update: `working`, with `text` as the agent's message (a
/// message id of its own, so that no two updates share one).
pub fn progress_event(wire: Profile, task_id: &str, context_id: &str, text: &str) -> Value {
    let status = json!({"state": "working",
        "message": {"role": "agent", "parts": [{"kind": "text", "text": text}]}});
    let mut ev = status_event(wire, task_id, context_id, &status, false);
    let message = match wire {
        Profile::V10 => ev.pointer_mut("/statusUpdate/status/message"),
        _ => ev.pointer_mut("/status/message"),
    };
    if let Some(m) = message.and_then(Value::as_object_mut) {
        m.insert("messageId".into(), json!(uuid::Uuid::new_v4().to_string()));
    }
    ev
}

/// The artifact update of a completed task (`artifact` as stored).
pub fn artifact_event(wire: Profile, task_id: &str, context_id: &str, artifact: &Value) -> Value {
    let pseudo = json!({"id": task_id, "contextId": context_id,
        "status": {"state": "completed"}, "artifacts": [artifact]});
    let shown = profile::render(&pseudo, wire, true)["artifacts"][0].clone();
    let mut ev = Map::new();
    ev.insert("taskId".into(), json!(task_id));
    ev.insert("contextId".into(), json!(context_id));
    match wire {
        Profile::V10 => {
            ev.insert("artifact".into(), shown);
            ev.insert("lastChunk".into(), json!(true));
            json!({ "artifactUpdate": ev })
        }
        _ => {
            ev.insert("kind".into(), json!("artifact-update"));
            ev.insert("artifact".into(), shown);
            ev.insert("lastChunk".into(), json!(true));
            Value::Object(ev)
        }
    }
}

/// The line a loop event shows a streaming peer, if any: `{"type":
/// "tool_call", "name"}` → `calling <name>`, `{"type": "tool_result",
/// "name", "isError"}` → `<name> done` / `<name> failed`.
pub fn progress_text(event: &Value) -> Option<String> {
    let name = event["name"].as_str().unwrap_or("a tool");
    match event["type"].as_str()? {
        "tool_call" => Some(format!("calling {name}")),
        "tool_result" if event["isError"] == true => Some(format!("{name} failed")),
        "tool_result" => Some(format!("{name} done")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_on_each_wire() {
        let failed = json!({"state": "failed",
            "message": {"role": "agent", "parts": [{"kind": "text", "text": "boom"}]}});
        let v3 = status_event(Profile::V03, "t", "c", &failed, true);
        assert_eq!(v3["kind"], "status-update");
        assert_eq!(v3["final"], true);
        assert_eq!(v3["status"]["message"]["kind"], "message");
        assert_eq!(v3["status"]["message"]["parts"][0]["text"], "boom");
        let v1 = status_event(Profile::V10, "t", "c", &failed, true);
        assert_eq!(v1["statusUpdate"]["status"]["state"], "TASK_STATE_FAILED");
        assert_eq!(v1["statusUpdate"]["contextId"], "c");
        assert!(v1["statusUpdate"].get("final").is_none());
        let art = json!({"artifactId": "a", "parts": [{"kind": "text", "text": "hi"}]});
        let a1 = artifact_event(Profile::V10, "t", "c", &art);
        assert_eq!(
            a1["artifactUpdate"]["artifact"],
            json!({"artifactId": "a", "parts": [{"text": "hi"}]})
        );
        let a3 = artifact_event(Profile::V03, "t", "c", &art);
        assert_eq!(a3["artifact"], art);
        assert_eq!(a3["kind"], "artifact-update");
        let p = progress_event(Profile::V03, "t", "c", "calling x");
        assert_ne!(p["status"]["message"]["messageId"], "t-status");
        assert_eq!(
            frame(&json!(3), json!({"a": 1})),
            b"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"a\":1}}\n\n".to_vec()
        );
        assert_eq!(
            progress_text(&json!({"type": "tool_result", "name": "x", "isError": true})),
            Some("x failed".into())
        );
        assert_eq!(progress_text(&json!({"type": "usage"})), None);
    }
}
