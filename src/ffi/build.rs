//! Build options (issue 17): `tn_build_options_*` and
//! `tn_toolkit_build_with` — a cancel token and host callbacks in named
//! slots, handed to one build.

use super::client::{tn_callback, HostCallback};
use super::translate::tn_cancel;
use super::{boundary, read_str, tn_status, tn_string_free, tn_toolkit, tn_user_data_free};
use super::{TN_NULL_ARGUMENT, TN_OK};
use crate::client::RunData;
use crate::error::{Error, ErrorCode};
use crate::toolkit::{BuildOptions, SkillProvider, Toolkit};
use serde_json::{json, Value};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// Options for `tn_toolkit_build_with`, made by `tn_build_options_new` and
/// released by `tn_build_options_free`. One object may serve many builds
/// (one after another or at once); it is not changed by a build. The
/// setters must not race with each other or with a build using it.
#[allow(non_camel_case_types)]
pub struct tn_build_options {
    inner: BuildOptions,
}

/// The callback slots of a build.
enum BuildSlot {
    SkillProvider,
    /// SPEC §2's elicitation bridge (`super::elicit`).
    WaitFor,
    /// The browser step of MCP authorization (OAuth, `crate::mcp::auth`).
    Authorize,
    /// An MCP server's tools changed after its `list_changed`.
    ToolsChanged,
}

const BUILD_SLOTS: &str = "skillProvider, waitFor, authorize, toolsChanged";

impl BuildSlot {
    fn from_name(name: &str) -> Result<BuildSlot, Error> {
        match name {
            "skillProvider" => Ok(BuildSlot::SkillProvider),
            "waitFor" => Ok(BuildSlot::WaitFor),
            "authorize" => Ok(BuildSlot::Authorize),
            "toolsChanged" => Ok(BuildSlot::ToolsChanged),
            other => Err(Error::invalid_argument(format!(
                "unknown build callback slot '{other}' (expected {BUILD_SLOTS})"
            ))),
        }
    }
}

/// New, empty build options (a build with them is `tn_toolkit_build`'s).
/// Never NULL.
#[no_mangle]
pub extern "C" fn tn_build_options_new() -> *mut tn_build_options {
    Box::into_raw(Box::new(tn_build_options {
        inner: BuildOptions::default(),
    }))
}

/// Frees build options; the `user_data_free` of each callback set runs now
/// (or, for one a build is still calling, when that build is done). NULL is
/// a no-op. Not twice.
///
/// # Safety
/// `opts` is NULL or a pointer from `tn_build_options_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn tn_build_options_free(opts: *mut tn_build_options) {
    // SAFETY: NULL, or from Box::into_raw in tn_build_options_new, freed once.
    unsafe { super::drop_boxed(opts) }
}

/// Sets the cancel token of the builds made with `opts` (NULL clears it).
/// The options keep their own reference to the token: the caller may free
/// its `tn_cancel` afterwards, and triggering it (from any thread) still
/// ends a build in progress: it returns `TN_CANCELLED` promptly, with every
/// MCP server process it started killed and reaped and every request it
/// made ended. A token already triggered fails the build at once.
///
/// # Safety
/// `opts` is NULL or live; `cancel` is NULL or a live token.
#[no_mangle]
pub unsafe extern "C" fn tn_build_options_set_cancel(
    opts: *mut tn_build_options,
    cancel: *const tn_cancel,
) -> tn_status {
    // SAFETY: NULL or live by contract.
    let Some(opts) = (unsafe { opts.as_mut() }) else {
        return TN_NULL_ARGUMENT;
    };
    // SAFETY: NULL or live by contract.
    opts.inner.cancel = unsafe { cancel.as_ref() }.map(|c| c.token().clone());
    TN_OK
}

/// Sets the callback of one build slot, replacing the one there (whose
/// `user_data_free` then runs). Slots:
///
/// - `skillProvider` (SPEC §3 S1): called once per build, on the building
///   thread, with the event `{}`; answers through `tn_reply_set_json` with
///   an array of skill objects, the shape of the `skills` config key
///   (`{name, description?, content?, resources?, base?}`). They load
///   after the config's `skills` (the first skill of a name wins); the
///   provider alone makes the toolkit have a skill source. No answer (or
///   `null`) is no skill. `tn_reply_set_error`, or an answer of another
///   shape, fails neither the build nor the other skill sources: the
///   message is the status error `skillProvider` (`tn_render(tk,
///   "status")`).
/// - `waitFor` (SPEC §2, the MCP elicitation bridge): the client's
///   `waitFor` shape. With one, every MCP server is told the client
///   supports `elicitation` (form and URL mode), and a server's question
///   during a tool call is the event — form mode `{id, kind:"input",
///   prompt, data:{schema}}`, URL mode `{id, kind:"authorization", prompt,
///   url}` — answered with the Answer `{id?, ok, data?, reason?}` while the
///   call waits: `ok` accepts (form mode: `data`, an object, is the
///   content), `reason:"declined"` declines, any other refusal cancels. A
///   callback that fails, sets nothing or answers a wrong shape makes the
///   server's request fail; the tool call still ends with a result. Called
///   on a library thread, several at once when calls overlap;
///   `tn_reply_cancelled` turns true once nobody waits for the answer (the
///   call hit its deadline or was cancelled, or the toolkit is closing).
///   The toolkits built keep it: its `user_data_free` runs once the
///   options and those toolkits are all freed. Without one, elicitation is
///   not advertised and a server that asks is refused (`-32601`).
/// - `authorize` (MCP authorization, OAuth 2.1): the browser step. When a
///   remote MCP server needs an authorization, the event is `{server, url,
///   redirectUri, resource}`: show `url` to a human (open a browser); once
///   the authorization server redirected to `redirectUri`, answer that full
///   URL (with its `code` and `state`) as a JSON string (or `{"url": ...}`)
///   through `tn_reply_set_json`. `tn_reply_set_error` refuses. Called on
///   a library thread while the connect (or the call that needed it)
///   waits, up to the server's `auth.authorizeTimeoutMs` (default 300 s, not
///   counted against its `timeout`); `tn_reply_cancelled` turns true once
///   nobody waits. With one, every remote server without an `auth` setting
///   answers a `401` with an authorization; without one only servers with
///   `auth` do (and only `client_credentials` completes).
/// - `toolsChanged` (MCP `notifications/tools/list_changed`): an MCP server
///   announced that its tools changed; the toolkit listed them again
///   (debounced: a burst is one re-list, at most two a second per server)
///   and now serves the new list. The event is `{server, added, removed,
///   tools, generation}`: the toolkit names added and removed, every
///   toolkit name of that server now, and the tools generation (how many
///   times the MCP tools changed since the build; `tn_render(tk, "status")`
///   reports it as `toolsGeneration`). Nothing to answer. Called on a
///   library thread after the change is served, one event of a server at
///   a time; a re-list equal to what is served, or one that fails (then
///   the server's tools are kept and the status `errors` names the
///   failure), is no event. The toolkits built keep it, as `waitFor`.
///
/// A NULL `callback` clears the slot. `user_data_free` (nullable) runs once
/// for this `user_data` — also when this call fails. An unknown slot is
/// `TN_INVALID_ARGUMENT` naming the known ones. On failure `*out_error`
/// (nullable) holds the error JSON, else NULL.
///
/// # Safety
/// `opts` is NULL or live; `slot` is NULL or NUL-terminated; `callback` and
/// `user_data` must be usable from any thread until released.
#[no_mangle]
pub unsafe extern "C" fn tn_build_options_set_callback(
    opts: *mut tn_build_options,
    slot: *const c_char,
    callback: tn_callback,
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
    out_error: *mut *mut c_char,
) -> tn_status {
    // Owned first, so that every path below releases user_data once.
    let host = HostCallback::adopt(callback, user_data, user_data_free);
    super::boundary_status(out_error, || {
        // SAFETY: NULL or live by contract.
        let Some(opts) = (unsafe { opts.as_mut() }) else {
            return Err(Error::new(ErrorCode::NullArgument, "opts is NULL"));
        };
        // SAFETY: forwarded from this function's contract.
        let name = unsafe { read_str(slot, "slot") }?;
        match BuildSlot::from_name(name)? {
            BuildSlot::SkillProvider => {
                opts.inner.skill_provider = host.map(skill_provider);
            }
            BuildSlot::WaitFor => {
                opts.inner.wait_for = host.map(super::elicit::wait_for_of);
            }
            BuildSlot::Authorize => {
                opts.inner.authorize = host.map(super::elicit::authorize_of);
            }
            BuildSlot::ToolsChanged => {
                opts.inner.tools_changed = host.map(tools_changed);
            }
        }
        Ok(())
    })
}

/// The host's `skillProvider` callback as the core's provider.
fn skill_provider(host: HostCallback) -> SkillProvider {
    let host = Arc::new(host);
    Arc::new(move || match host.call(&json!({}), RunData(0)) {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Ok(Value::Null),
        Err(message) => Err(message),
    })
}

/// The host's `toolsChanged` callback as the core's: told, never asked
/// (what it sets, or fails with, is ignored).
fn tools_changed(host: HostCallback) -> crate::mcp::ToolsChanged {
    let host = Arc::new(host);
    Arc::new(move |event: &Value| {
        let _ = host.call(event, RunData(0));
    })
}

/// `tn_toolkit_build` with options (`opts` NULL: none). Besides the errors
/// of `tn_toolkit_build`, `TN_CANCELLED` when the options' cancel token was
/// triggered before or during the build; nothing the build started is left
/// running then. Out-parameters as `tn_toolkit_build`.
///
/// # Safety
/// As `tn_toolkit_build`; `opts` is NULL or live and no setter runs on it
/// meanwhile.
#[no_mangle]
pub unsafe extern "C" fn tn_toolkit_build_with(
    config_json: *const c_char,
    opts: *const tn_build_options,
    out_toolkit: *mut *mut tn_toolkit,
    out_error: *mut *mut c_char,
) -> tn_status {
    if out_toolkit.is_null() {
        // Nowhere to put a toolkit: report it through out_error when we can.
        return boundary(out_error, || -> Result<String, Error> {
            Err(Error::new(ErrorCode::NullArgument, "out_toolkit is NULL"))
        });
    }
    if out_error.is_null() {
        // SAFETY: checked non-NULL just above.
        unsafe { *out_toolkit = std::ptr::null_mut() };
        return TN_NULL_ARGUMENT;
    }
    let defaults = BuildOptions::default();
    // SAFETY: NULL or live by contract.
    let options = unsafe { opts.as_ref() }.map_or(&defaults, |o| &o.inner);
    let mut built: Option<tn_toolkit> = None;
    let status = boundary(out_error, || {
        // SAFETY: forwarded from this function's contract.
        let text = unsafe { read_str(config_json, "config_json") }?;
        let cfg = crate::config::ToolkitConfig::from_json_text(text)?;
        let tk = Toolkit::build_with(&cfg, options)?;
        built = Some(tn_toolkit::new(tk));
        Ok(String::new())
    });
    // SAFETY: both out-pointers were checked non-NULL above.
    unsafe {
        match built {
            Some(tk) if status == TN_OK => {
                tn_string_free(*out_error);
                *out_error = std::ptr::null_mut();
                *out_toolkit = super::handle::hand_out(tk);
            }
            _ => *out_toolkit = std::ptr::null_mut(),
        }
    }
    status
}

#[cfg(test)]
mod tests {
    //! The build-options glue without I/O (Miri can run these too).
    use super::super::tn_reply;
    use super::*;
    use std::ffi::CStr;
    use std::ptr;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::ffi::test_take as take;

    static FREES: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn count_free(_: *mut c_void) {
        FREES.fetch_add(1, Ordering::SeqCst);
    }

    unsafe extern "C" fn provide(_: *mut c_void, event: *const c_char, reply: *mut tn_reply) {
        // SAFETY: the event is a live NUL-terminated string during the call.
        let event = unsafe { CStr::from_ptr(event) }.to_string_lossy();
        assert_eq!(event, "{}");
        // SAFETY: the reply of this callback; a NUL-terminated literal.
        unsafe {
            super::super::tn_reply_set_json(
                reply,
                c"[{\"name\":\"glue\",\"content\":\"GLUE\"}]".as_ptr(),
            )
        };
    }

    fn build(config: &CStr, opts: *const tn_build_options) -> (tn_status, *mut tn_toolkit, String) {
        let (mut tk, mut err) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: a NUL-terminated config, live or NULL options, locals.
        let status = unsafe { tn_toolkit_build_with(config.as_ptr(), opts, &mut tk, &mut err) };
        let err = if err.is_null() {
            String::new()
        } else {
            take(err)
        };
        (status, tk, err)
    }

    unsafe extern "C" fn answer(user_data: *mut c_void, _: *const c_char, reply: *mut tn_reply) {
        // SAFETY: user_data is one of the NUL-terminated literals below.
        let text = user_data as *const c_char;
        // SAFETY: the reply of this callback.
        unsafe { super::super::tn_reply_set_json(reply, text) };
    }

    /// The `authorize` slot: accepted, and the host's answer read as a JSON
    /// string or `{"url": ...}`, anything else refused with a sentence.
    #[test]
    fn the_authorize_slot_reads_the_redirect_url() {
        let opts = tn_build_options_new();
        // SAFETY: live options, a literal slot, a callback of the right type.
        let status = unsafe {
            tn_build_options_set_callback(
                opts,
                c"authorize".as_ptr(),
                Some(answer),
                c"\"http://h/cb\"".as_ptr() as *mut c_void,
                None,
                ptr::null_mut(),
            )
        };
        assert_eq!(status, TN_OK);
        // SAFETY: from tn_build_options_new, freed once.
        unsafe { tn_build_options_free(opts) };
        let ask = |text: &'static CStr| {
            let host = super::super::client::HostCallback::adopt(
                Some(answer),
                text.as_ptr() as *mut c_void,
                None,
            )
            .unwrap_or_else(|| panic!("adopted"));
            let authorize = super::super::elicit::authorize_of(host);
            authorize(
                &json!({"url": "http://as/authorize"}),
                &crate::cancel::CancelToken::new(),
            )
        };
        assert_eq!(
            ask(c"\"http://h/cb?code=1\""),
            Ok("http://h/cb?code=1".into())
        );
        assert_eq!(ask(c"{\"url\":\"http://h/cb\"}"), Ok("http://h/cb".into()));
        assert!(ask(c"42").is_err_and(|e| e.contains("redirect URL")));
        assert!(ask(c"{}").is_err_and(|e| e.contains("url")));
    }

    #[test]
    fn slots_cancel_and_provider_through_the_abi() {
        let opts = tn_build_options_new();
        let mut err = ptr::null_mut();
        // SAFETY: live options, a literal slot, a callback of the right type.
        let status = unsafe {
            tn_build_options_set_callback(
                opts,
                c"nope".as_ptr(),
                Some(provide),
                ptr::null_mut(),
                Some(count_free),
                &mut err,
            )
        };
        assert_eq!(status, super::super::TN_INVALID_ARGUMENT);
        assert!(take(err).contains("expected skillProvider"));
        assert_eq!(FREES.load(Ordering::SeqCst), 1, "released on failure");

        // SAFETY: as above; NULL out_error is allowed.
        let status = unsafe {
            tn_build_options_set_callback(
                opts,
                c"skillProvider".as_ptr(),
                Some(provide),
                ptr::null_mut(),
                Some(count_free),
                ptr::null_mut(),
            )
        };
        assert_eq!(status, TN_OK);
        let (status, tk, err) = build(c"{\"builtins\":false}", opts);
        assert_eq!((status, err.as_str()), (TN_OK, ""));
        // SAFETY: a live toolkit from the build above.
        let names = unsafe { (*tk).inner.tool_names() };
        assert_eq!(names, vec!["skill"]);
        // SAFETY: live, freed once.
        unsafe { super::super::tn_toolkit_free(tk) };

        let cancel = super::super::tn_cancel_new();
        // SAFETY: live options and token; the token is triggered, then freed
        // (the options keep their own reference).
        unsafe {
            assert_eq!(tn_build_options_set_cancel(opts, cancel), TN_OK);
            super::super::tn_cancel_trigger(cancel);
            super::super::tn_cancel_free(cancel);
        }
        let (status, tk, err) = build(c"{\"builtins\":false}", opts);
        assert_eq!(status, super::super::TN_CANCELLED);
        assert!(tk.is_null());
        assert!(err.contains("cancelled"), "{err}");

        assert_eq!(FREES.load(Ordering::SeqCst), 1);
        // SAFETY: from tn_build_options_new, freed once.
        unsafe { tn_build_options_free(opts) };
        assert_eq!(FREES.load(Ordering::SeqCst), 2, "released with the options");
        // SAFETY: NULL is allowed.
        assert_eq!(
            unsafe { tn_build_options_set_cancel(ptr::null_mut(), ptr::null()) },
            TN_NULL_ARGUMENT
        );
    }
}
