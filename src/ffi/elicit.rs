//! The host's `waitFor` for a toolkit's MCP servers (SPEC §2, the
//! elicitation bridge; the `waitFor` slot of `tn_build_options_set_callback`):
//! a client callback (`tn_callback`) in, the [`crate::mcp::WaitFor`] the
//! toolkit holds out.

use super::client::HostCallback;
use crate::cancel::CancelToken;
use crate::client::RunData;
use crate::mcp::WaitFor;
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
