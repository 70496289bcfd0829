//! The three wires a served agent answers on one endpoint, told apart per
//! request, and the shapes a stored task takes on each:
//!
//! - `toolnexus` (upstream's): methods `SendMessage`/`GetTask`, 0.3
//!   payloads (`parts[].kind`, lower-case states), the task as the result,
//!   no version header;
//! - `0.3` (the A2A 0.3 specification): methods `message/send`/`tasks/get`,
//!   tasks with `kind:"task"` and a `contextId`, messages with `kind`,
//!   `messageId`;
//! - `1.0` (the A2A 1.0 specification): methods `SendMessage`/`GetTask`
//!   with the `A2A-Version: 1.0` header, parts without `kind`, roles
//!   `ROLE_USER`/`ROLE_AGENT`, states `TASK_STATE_*`, and `SendMessage`'s
//!   result wrapped as `{"task": …}`.
//!
//! Beyond upstream: `message/stream` / `SendStreamingMessage` (a send
//! answered as server-sent events, see [`super::stream`]) and
//! `tasks/cancel` / `CancelTask`, named as each specification names them
//! (upstream's wire takes the 1.0 names without the header).
//!
//! Tasks are stored in upstream's shape, plus the `contextId` every task
//! gets; each answer is rendered for the wire that asked.

use serde_json::{json, Map, Value};

/// A wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Toolnexus,
    V03,
    V10,
}

/// What a JSON-RPC method asks for, on which wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Send,
    /// A send answered as a stream of server-sent events.
    Stream,
    Get,
    Cancel,
    Other,
}

/// The wire and call of a request: its method name and its `A2A-Version`
/// header (if any).
pub fn classify(method: &str, version: Option<&str>) -> (Profile, Call) {
    let v10 = version.is_some_and(|v| v.trim().starts_with('1'));
    match method {
        "message/send" => (Profile::V03, Call::Send),
        "message/stream" => (Profile::V03, Call::Stream),
        "tasks/get" => (Profile::V03, Call::Get),
        "tasks/cancel" => (Profile::V03, Call::Cancel),
        "SendMessage" if v10 => (Profile::V10, Call::Send),
        "SendStreamingMessage" if v10 => (Profile::V10, Call::Stream),
        "GetTask" if v10 => (Profile::V10, Call::Get),
        "CancelTask" if v10 => (Profile::V10, Call::Cancel),
        "SendMessage" => (Profile::Toolnexus, Call::Send),
        "SendStreamingMessage" => (Profile::Toolnexus, Call::Stream),
        "GetTask" => (Profile::Toolnexus, Call::Get),
        "CancelTask" => (Profile::Toolnexus, Call::Cancel),
        _ if v10 => (Profile::V10, Call::Other),
        _ => (Profile::Toolnexus, Call::Other),
    }
}

/// The text of a message's parts, concatenated: `kind:"text"` parts, and
/// on 1.0 parts with a `text` and no `kind`.
pub fn message_text(message: &Value) -> String {
    message
        .get("parts")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|p| match p.get("kind") {
                    Some(k) => k == "text",
                    None => p.get("text").is_some(),
                })
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}

/// The stored task as `profile` shows it. `echo_context`: upstream shows
/// the `contextId` only on the submitted task, and only one the peer sent.
pub fn render(task: &Value, profile: Profile, echo_context: bool) -> Value {
    match profile {
        Profile::Toolnexus => {
            let mut t = task.clone();
            if let Some(m) = t.as_object_mut() {
                if !echo_context {
                    m.remove("contextId");
                }
                m.remove("peerContext");
            }
            t
        }
        Profile::V03 => v03(task),
        Profile::V10 => v10(task),
    }
}

fn id_of(task: &Value) -> &str {
    task.get("id").and_then(Value::as_str).unwrap_or_default()
}

fn v03(task: &Value) -> Value {
    let id = id_of(task);
    let mut out = Map::new();
    out.insert("id".into(), json!(id));
    out.insert(
        "contextId".into(),
        task.get("contextId").cloned().unwrap_or(json!(id)),
    );
    let mut status = task.get("status").cloned().unwrap_or(json!({}));
    if let Some(msg) = status.get_mut("message").and_then(Value::as_object_mut) {
        msg.insert("messageId".into(), json!(format!("{id}-status")));
        msg.insert("kind".into(), json!("message"));
        msg.insert("taskId".into(), json!(id));
    }
    out.insert("status".into(), status);
    if let Some(a) = task.get("artifacts") {
        out.insert("artifacts".into(), a.clone());
    }
    out.insert("kind".into(), json!("task"));
    Value::Object(out)
}

/// `input-required` → `TASK_STATE_INPUT_REQUIRED`.
pub fn state_v10(state: &str) -> String {
    format!(
        "TASK_STATE_{}",
        state.replace('-', "_").to_ascii_uppercase()
    )
}

fn parts_v10(parts: Option<&Value>) -> Value {
    Value::Array(
        parts
            .and_then(Value::as_array)
            .map(|ps| {
                ps.iter()
                    .map(|p| {
                        let mut p = p.clone();
                        if let Some(m) = p.as_object_mut() {
                            m.remove("kind");
                        }
                        p
                    })
                    .collect()
            })
            .unwrap_or_default(),
    )
}

fn v10(task: &Value) -> Value {
    let id = id_of(task);
    let mut out = Map::new();
    out.insert("id".into(), json!(id));
    out.insert(
        "contextId".into(),
        task.get("contextId").cloned().unwrap_or(json!(id)),
    );
    let state = task
        .pointer("/status/state")
        .and_then(Value::as_str)
        .unwrap_or("submitted");
    let mut status = Map::new();
    status.insert("state".into(), json!(state_v10(state)));
    if let Some(msg) = task.pointer("/status/message") {
        status.insert(
            "message".into(),
            json!({
                "messageId": format!("{id}-status"),
                "role": "ROLE_AGENT",
                "parts": parts_v10(msg.get("parts")),
                "taskId": id,
            }),
        );
    }
    out.insert("status".into(), Value::Object(status));
    if let Some(arts) = task.get("artifacts").and_then(Value::as_array) {
        let arts: Vec<Value> = arts
            .iter()
            .map(|a| {
                json!({"artifactId": a.get("artifactId").cloned().unwrap_or(Value::Null),
                "parts": parts_v10(a.get("parts"))})
            })
            .collect();
        out.insert("artifacts".into(), Value::Array(arts));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_and_the_version_header_pick_the_wire() {
        assert_eq!(
            classify("SendMessage", None),
            (Profile::Toolnexus, Call::Send)
        );
        assert_eq!(
            classify("SendMessage", Some("1.0")),
            (Profile::V10, Call::Send)
        );
        assert_eq!(classify("GetTask", Some("1.0")), (Profile::V10, Call::Get));
        assert_eq!(classify("message/send", None), (Profile::V03, Call::Send));
        assert_eq!(
            classify("tasks/get", Some("0.3")),
            (Profile::V03, Call::Get)
        );
        assert_eq!(classify("tasks/cancel", None), (Profile::V03, Call::Cancel));
        assert_eq!(
            classify("message/stream", None),
            (Profile::V03, Call::Stream)
        );
        assert_eq!(
            classify("SendStreamingMessage", Some("1.0")),
            (Profile::V10, Call::Stream)
        );
        assert_eq!(
            classify("CancelTask", Some("1.0")),
            (Profile::V10, Call::Cancel)
        );
        assert_eq!(
            classify("tasks/resubscribe", None),
            (Profile::Toolnexus, Call::Other)
        );
    }

    #[test]
    fn a_failed_task_on_each_wire() {
        let t = json!({"id": "t", "contextId": "c", "status": {"state": "input-required",
            "message": {"role": "agent", "parts": [{"kind": "text", "text": "why"}]}}});
        assert_eq!(
            render(&t, Profile::Toolnexus, false),
            json!({"id": "t", "status": t["status"]})
        );
        let v3 = render(&t, Profile::V03, false);
        assert_eq!(v3["kind"], "task");
        assert_eq!(v3["contextId"], "c");
        assert_eq!(v3["status"]["message"]["kind"], "message");
        assert_eq!(v3["status"]["message"]["messageId"], "t-status");
        let v1 = render(&t, Profile::V10, false);
        assert_eq!(v1["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(v1["status"]["message"]["role"], "ROLE_AGENT");
        assert_eq!(v1["status"]["message"]["parts"], json!([{"text": "why"}]));
        assert_eq!(
            message_text(
                &json!({"parts": [{"text": "a"}, {"kind": "text", "text": "b"},
            {"kind": "data", "text": "no"}]})
            ),
            "ab"
        );
    }
}
