//! The host's `waitFor` for a toolkit's MCP servers (SPEC §2, the
//! elicitation bridge): a client callback (`tn_callback`) in, the
//! [`crate::mcp::WaitFor`] the toolkit holds out.

use super::client::{tn_callback, HostCallback};
use super::{boundary, read_str, tn_status, tn_string_free, tn_toolkit, tn_user_data_free};
use super::{TN_NULL_ARGUMENT, TN_OK};
use crate::client::RunData;
use crate::config::ToolkitConfig;
use crate::error::{Error, ErrorCode};
use crate::mcp::WaitFor;
use crate::tool::CancelToken;
use crate::toolkit::{BuildOptions, Toolkit};
use serde_json::Value;
use std::ffi::{c_char, c_void};
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

/// `tn_toolkit_build` with the host's SPEC §10 `waitFor` for the MCP
/// elicitation bridge (SPEC §2): every MCP server of the toolkit is told the
/// client supports `elicitation` (form and URL mode), and a server that asks
/// for input during a tool call is answered through `wait_for` while the
/// call waits. The callback is the client's `waitFor` shape
/// (`tn_client_set_callback`): the event is the Request — form mode
/// `{id, kind:"input", prompt, data:{schema}}`, URL mode `{id,
/// kind:"authorization", prompt, url}` — and the reply the Answer `{id?, ok,
/// data?, reason?}`: `ok` accepts (form mode: `data`, an object, is the
/// content), `reason:"declined"` declines, any other refusal cancels. A
/// callback that fails or sets no Answer makes the server's request fail;
/// the tool call still ends with a result. It runs on a library thread,
/// possibly several at once; `tn_reply_cancelled` turns true once the call
/// it serves has ended (deadline or cancel). A NULL `wait_for` is a plain
/// `tn_toolkit_build` (elicitation not advertised). `user_data_free`
/// (nullable) runs once, when the library no longer needs the callback: at
/// the latest when the toolkit is freed, during the build when no MCP server
/// connected, at once when the build fails.
///
/// # Safety
/// As `tn_toolkit_build`; `wait_for` and `user_data` must be usable from any
/// thread until `user_data_free` runs.
#[no_mangle]
pub unsafe extern "C" fn tn_toolkit_build_with_wait_for(
    config_json: *const c_char,
    wait_for: tn_callback,
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
    out_toolkit: *mut *mut tn_toolkit,
    out_error: *mut *mut c_char,
) -> tn_status {
    // Owned first, so that every path below releases user_data once.
    let host = wait_for.map(|cb| HostCallback {
        callback: cb,
        user_data,
        user_data_free,
    });
    if host.is_none() {
        if let Some(free) = user_data_free {
            // SAFETY: the host's finalizer for its own user_data, run once.
            unsafe { free(user_data) };
        }
    }
    if out_toolkit.is_null() {
        return boundary(out_error, || -> Result<String, Error> {
            Err(Error::new(ErrorCode::NullArgument, "out_toolkit is NULL"))
        });
    }
    if out_error.is_null() {
        // SAFETY: checked non-NULL just above.
        unsafe { *out_toolkit = std::ptr::null_mut() };
        return TN_NULL_ARGUMENT;
    }
    let mut built: Option<Box<tn_toolkit>> = None;
    let status = boundary(out_error, || {
        // SAFETY: forwarded from this function's contract.
        let text = unsafe { read_str(config_json, "config_json") }?;
        let cfg = ToolkitConfig::from_json_text(text)?;
        let opts = BuildOptions {
            wait_for: host.map(wait_for_of),
            ..BuildOptions::default()
        };
        let tk = Toolkit::build_with(&cfg, &opts)?;
        built = Some(Box::new(tn_toolkit {
            inner: Arc::new(tk),
        }));
        Ok(String::new())
    });
    // SAFETY: both out-pointers were checked non-NULL above.
    unsafe {
        match built {
            Some(tk) if status == TN_OK => {
                tn_string_free(*out_error);
                *out_error = std::ptr::null_mut();
                *out_toolkit = Box::into_raw(tk);
            }
            _ => *out_toolkit = std::ptr::null_mut(),
        }
    }
    status
}
