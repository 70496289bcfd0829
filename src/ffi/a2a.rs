//! Remote A2A agents on a built toolkit (SPEC §7A `addAgent`).

use super::{boundary, read_str, read_toolkit, tn_cancel, tn_status};
use crate::a2a_tool::Agent;
use crate::error::Error;
use serde_json::Value;
use std::ffi::c_char;

/// Fetches a remote agent's Agent Card and registers one tool per skill on
/// the toolkit (source `"a2a"`; a name the toolkit already has is skipped:
/// the first of a name wins). `agent_json` is a card URL as a JSON string
/// (`"\"http://host/.well-known/agent-card.json\""`) or an agent object
/// `{"card", "headers"?, "timeout"?, "pollEvery"?}` (header values expand
/// `${ENV}` at each request). `*out_json` receives `{"agent", "added":
/// [names], "skipped": [names], "warnings": [..]}`, or the error JSON:
/// `invalid_json`, `invalid_config` (a bad agent object), `invalid_argument`
/// (the card could not be fetched or has no skills), `cancelled` (the token,
/// NULL for none, was triggered during the fetch). Safe from any thread.
///
/// # Safety
/// `toolkit` is NULL or live; `agent_json` is NULL or NUL-terminated;
/// `cancel` is NULL or a live token; `out_json` is NULL or points to a
/// writable pointer.
#[no_mangle]
pub unsafe extern "C" fn tn_toolkit_add_agent(
    toolkit: *const super::tn_toolkit,
    agent_json: *const c_char,
    cancel: *const tn_cancel,
    out_json: *mut *mut c_char,
) -> tn_status {
    boundary(out_json, || {
        // SAFETY: forwarded from this function's contract.
        let (tk, text) = unsafe { (read_toolkit(toolkit)?, read_str(agent_json, "agent_json")?) };
        let v: Value =
            serde_json::from_str(text).map_err(|e| Error::invalid_json("agent_json", &e))?;
        let agent = Agent::from_value(&v, "agent")?;
        // SAFETY: NULL or a live token (this function's contract).
        let cancel = unsafe { cancel.as_ref() }.map(|c| c.token().clone());
        Ok(tk.add_agent(&agent, cancel.as_ref())?.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::super::{
        tn_toolkit_build, tn_toolkit_free, TN_INVALID_CONFIG, TN_INVALID_JSON, TN_NULL_ARGUMENT,
    };
    use super::*;
    use crate::ffi::test_take as take;
    use std::ptr;

    fn add(
        tk: *const super::super::tn_toolkit,
        agent: Option<&std::ffi::CStr>,
    ) -> (tn_status, String) {
        let mut out = ptr::null_mut();
        let agent = agent.map_or(ptr::null(), std::ffi::CStr::as_ptr);
        // SAFETY: a live or NULL toolkit, a NUL-terminated or NULL string, a local.
        let status = unsafe { tn_toolkit_add_agent(tk, agent, ptr::null(), &mut out) };
        (status, take(out))
    }

    #[test]
    fn bad_arguments_are_errors_named_by_the_boundary() {
        let (status, err) = add(ptr::null(), Some(c"\"http://127.0.0.1:9/card\""));
        assert_eq!(status, TN_NULL_ARGUMENT, "{err}");
        let (mut tk, mut err) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: a NUL-terminated config and two locals.
        let built =
            unsafe { tn_toolkit_build(c"{\"builtins\":false}".as_ptr(), &mut tk, &mut err) };
        assert_eq!(built, 0);
        let (status, err) = add(tk, None);
        assert_eq!(status, TN_NULL_ARGUMENT, "{err}");
        let (status, err) = add(tk, Some(c"{card"));
        assert_eq!(status, TN_INVALID_JSON, "{err}");
        let (status, err) = add(tk, Some(c"{\"card\":\"u\",\"pollEvery\":0}"));
        assert_eq!(status, TN_INVALID_CONFIG, "{err}");
        assert!(err.contains("agent.pollEvery"), "{err}");
        // SAFETY: built above, freed once.
        unsafe { tn_toolkit_free(tk) };
    }
}
