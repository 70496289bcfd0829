//! The host's `waitFor` for a toolkit's MCP servers (SPEC §2, the
//! elicitation bridge; the `waitFor` slot of `tn_build_options_set_callback`):
//! a client callback (`tn_callback`) in, the [`crate::mcp::WaitFor`] the
//! toolkit holds out.

use super::client::HostCallback;
use crate::cancel::CancelToken;
use crate::client::RunData;
use crate::mcp::{Authorize, WaitFor};
use serde_json::Value;
use std::sync::Arc;

/// The toolkit's `waitFor` of a host callback: the Request as the event, the
/// Answer as the reply (`tn_reply_set_json`), `tn_reply_cancelled` true once
/// nobody waits. `user_data_free` runs once nothing holds it any more.
pub(super) fn wait_for_of(host: HostCallback) -> WaitFor {
    let host = Arc::new(host);
    Arc::new(move |request: &Value, stop: &CancelToken| {
        match host.call_until(request, RunData(0), Some(stop)) {
            Ok(Some(answer)) => Ok(answer),
            Ok(None) => Err("it set no Answer {id, ok, data?, reason?}".into()),
            Err(message) => Err(message),
        }
    })
}

/// The toolkit's OAuth `authorize` of a host callback (the `authorize`
/// slot): the event `{server, url, redirectUri, resource}`, the answer the
/// redirect URL — a JSON string, or `{"url": "..."}` — set with
/// `tn_reply_set_json`; `tn_reply_cancelled` true once nobody waits.
pub(super) fn authorize_of(host: HostCallback) -> Authorize {
    let host = Arc::new(host);
    Arc::new(move |event: &Value, stop: &CancelToken| {
        match host.call_until(event, RunData(0), Some(stop)) {
            Ok(Some(Value::String(url))) => Ok(url),
            Ok(Some(Value::Object(m))) => match m.get("url") {
                Some(Value::String(url)) => Ok(url.clone()),
                _ => Err("the answer object has no \"url\" string".into()),
            },
            Ok(Some(_)) => {
                Err("expected the redirect URL as a JSON string or {\"url\": ...}".into())
            }
            Ok(None) => Err("it set no answer (the redirect URL)".into()),
            Err(message) => Err(message),
        }
    })
}
