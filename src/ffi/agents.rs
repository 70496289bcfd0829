//! The sub-agent runtime (SPEC §7D, contract §4.12): `tn_agents_new`,
//! `tn_agents_call` (the verbs as JSON, addressed by handle id) and
//! `tn_agents_free`. The JSON side lives in `crate::agents::calls`.

use super::client::{tn_callback, HostCallback};
use super::translate::tn_cancel;
use super::{boundary, read_opt_str, read_str, tn_status, tn_toolkit, tn_user_data_free};
use super::{TN_NULL_ARGUMENT, TN_OK};
use crate::agents::calls::Agents;
use crate::cancel::CancelToken;
use crate::client::{HostFn, RunData};
use crate::error::{Error, ErrorCode};
use serde_json::Value;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// An opaque sub-agent runtime built by `tn_agents_new` and released by
/// `tn_agents_free`. `const tn_agents *` may be shared by many threads,
/// each calling `tn_agents_call` at once.
#[allow(non_camel_case_types)]
pub struct tn_agents {
    agents: Agents,
    /// Triggered by `tn_agents_free`: every wait in flight ends.
    closing: CancelToken,
    /// Calls in flight; `tn_agents_free` waits for none.
    calls: Mutex<usize>,
    idle: Condvar,
}

/// One call in flight on a runtime, counted until dropped.
struct InFlight<'a>(&'a tn_agents);

impl<'a> InFlight<'a> {
    fn enter(a: &'a tn_agents) -> Result<InFlight<'a>, Error> {
        let mut n = a.calls.lock().unwrap_or_else(PoisonError::into_inner);
        if a.closing.is_cancelled() {
            return Err(Error::invalid_argument("the runtime is being freed"));
        }
        *n += 1;
        Ok(InFlight(a))
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut n = self.0.calls.lock().unwrap_or_else(PoisonError::into_inner);
        *n = n.saturating_sub(1);
        self.0.idle.notify_all();
    }
}

/// Builds a sub-agent runtime from `config_json` = `{agents: {name:
/// {does, soul?, model?, tools?, team?, budget?, …}}, client?, clock?:
/// "manual"|"system", inboxCap?, maxConcurrentTurns?, shutdownMs?}`.
/// Agents' `tools` are looked up in `toolkit` (NULL: none may be named; the
/// runtime keeps its own reference, so the toolkit may be freed first).
///
/// With a `generate` callback every LLM call of every agent goes to it
/// (event `{model, messages, tools, turn}`, reply: a provider answer in the
/// client's `style`, as `tn_client_new_in_process`), and `client` (optional)
/// gives only `model` (default `"in-process"`) and `style`; with a NULL `generate`, `client` is the
/// HTTP client config (`tn_client_new`'s keys) and is required.
/// `user_data_free` (nullable) runs once for `user_data` — when the
/// runtime is freed and no turn uses it any more, or at once when this call
/// fails — so the caller never frees it itself.
///
/// On success `*out_agents` receives the runtime and `*out_error` NULL; on
/// failure `*out_agents` receives NULL and `*out_error` the error JSON.
///
/// # Safety
/// `config_json` is NULL or NUL-terminated; `toolkit` is NULL or live;
/// `generate` and `user_data` must be usable from any thread until
/// released; the out-pointers are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tn_agents_new(
    config_json: *const c_char,
    toolkit: *const tn_toolkit,
    generate: tn_callback,
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
    out_agents: *mut *mut tn_agents,
    out_error: *mut *mut c_char,
) -> tn_status {
    // Owned first, so that every path below releases user_data once.
    let host = HostCallback::adopt(generate, user_data, user_data_free);
    if out_agents.is_null() {
        return boundary(out_error, || -> Result<String, Error> {
            Err(Error::new(ErrorCode::NullArgument, "out_agents is NULL"))
        });
    }
    if out_error.is_null() {
        // SAFETY: checked non-NULL just above.
        unsafe { *out_agents = std::ptr::null_mut() };
        return TN_NULL_ARGUMENT;
    }
    let mut built: Option<Box<tn_agents>> = None;
    let status = boundary(out_error, || {
        // SAFETY: forwarded from this function's contract.
        let text = unsafe { read_str(config_json, "config_json") }?;
        let v: Value =
            serde_json::from_str(text).map_err(|e| Error::invalid_json("config_json", &e))?;
        // SAFETY: NULL or live by this function's contract.
        let kit = unsafe { toolkit.as_ref() }.map(|t| Arc::clone(&t.inner));
        let generate: Option<HostFn> = host.map(|h| {
            let h = Arc::new(h);
            Arc::new(move |event: &Value, data: RunData| h.call(event, data)) as HostFn
        });
        built = Some(Box::new(tn_agents {
            agents: Agents::from_json(&v, kit, generate)?,
            closing: CancelToken::new(),
            calls: Mutex::new(0),
            idle: Condvar::new(),
        }));
        Ok(String::new())
    });
    // SAFETY: both out-pointers were checked non-NULL above.
    unsafe {
        match built {
            Some(a) if status == TN_OK => {
                super::tn_string_free(*out_error);
                *out_error = std::ptr::null_mut();
                *out_agents = Box::into_raw(a);
            }
            _ => *out_agents = std::ptr::null_mut(),
        }
    }
    status
}

/// Runs one verb of the runtime on `args_json` (a JSON object; NULL reads
/// as `{}`); `*out_json` receives its answer or the error JSON:
///
/// - `spawn {agent, parent?="root", budget?}` → `{id}`
/// - `post {id, item: {from, channel, text}}` → `{ok:true}`
/// - `wake {id, prompt?}` → `{ok:true}` (a no-op on a busy handle)
/// - `wait {id, timeoutMs?}` → the TaskResult `{text, isError, status,
///   pending?, turns, totalTokens, ownTokens, limit?}`. Blocks until the
///   handle settles, `timeoutMs` passes on the runtime's clock (`status:
///   "timeout"`), `cancel` is triggered (`status: "interrupted"`) or the
///   runtime is freed (`"interrupted"` or `"closed"`).
/// - `interrupt {id}`, `close {id, force?, reason?}` → `{ok:true}`
/// - `resume {answer}` → the TaskResult of the resumed tree
/// - `list` → `[HandleView]`; `inspect {id}` → the HandleView
/// - `trace` → `[string]`, the transitions so far; `transcript {id}` → its
///   stored messages
/// - `advance {ms}` → `{ok:true}`: moves the manual clock (config
///   `"clock":"manual"`) on
///
/// An unknown verb, an unknown handle and a verb the runtime refuses are
/// `TN_INVALID_ARGUMENT` with the runtime's message. Safe from many
/// threads at once; `cancel` (nullable) is only read by `wait`.
///
/// # Safety
/// `agents` is NULL or live; `verb` and `args_json` are NULL or
/// NUL-terminated; `cancel` is NULL or live; `out_json` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tn_agents_call(
    agents: *const tn_agents,
    verb: *const c_char,
    args_json: *const c_char,
    cancel: *const tn_cancel,
    out_json: *mut *mut c_char,
) -> tn_status {
    boundary(out_json, || {
        // SAFETY: NULL or live by this function's contract.
        let a = unsafe { agents.as_ref() }
            .ok_or_else(|| Error::new(ErrorCode::NullArgument, "agents is NULL"))?;
        // SAFETY: forwarded from this function's contract.
        let (verb, args) = unsafe {
            (
                read_str(verb, "verb")?,
                read_opt_str(args_json, "args_json")?,
            )
        };
        let args: Value = match args {
            None => Value::Null,
            Some(t) => serde_json::from_str(t).map_err(|e| Error::invalid_json("args_json", &e))?,
        };
        let _in_flight = InFlight::enter(a)?;
        // The wait's token: triggered by the host's token or by the free.
        let token = CancelToken::new();
        let link = Arc::new(Link(token.clone()));
        // SAFETY: NULL or live by this function's contract.
        let host = unsafe { cancel.as_ref() }.map(tn_cancel::token);
        if let Some(h) = host {
            if !h.register(&link) {
                token.cancel();
            }
        }
        if !a.closing.register(&link) {
            token.cancel();
        }
        let out = a.agents.call(verb, &args, &token);
        if let Some(h) = host {
            h.deregister(&link);
        }
        a.closing.deregister(&link);
        Ok(out?.to_string())
    })
}

/// Passes a cancellation on to another token.
struct Link(CancelToken);

impl crate::cancel::OnCancel for Link {
    fn on_cancel(&self) {
        self.0.cancel();
    }
}

/// Frees a runtime: every handle is force-closed (running turns cancelled),
/// calls in flight on other threads — a `wait` among them — end (a wait
/// with `status` `"interrupted"` or `"closed"`) and this call returns once
/// they have; the
/// `generate` callback's `user_data_free` runs when the last turn thread
/// lets go of it. NULL is a no-op; not twice, and no call may start on
/// `agents` once this one has.
///
/// # Safety
/// `agents` is NULL or a pointer from `tn_agents_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn tn_agents_free(agents: *mut tn_agents) {
    // SAFETY: NULL or live, by contract.
    let Some(a) = (unsafe { agents.as_ref() }) else {
        return;
    };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        {
            let _n = a.calls.lock().unwrap_or_else(PoisonError::into_inner);
            a.closing.cancel();
        }
        a.agents.shutdown();
        let mut n = a.calls.lock().unwrap_or_else(PoisonError::into_inner);
        while *n > 0 {
            n = a.idle.wait(n).unwrap_or_else(PoisonError::into_inner);
        }
    }));
    // SAFETY: from Box::into_raw in tn_agents_new; no call is in flight.
    unsafe { super::drop_boxed(agents) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::test_take;
    use std::ffi::CString;

    #[test]
    fn freeing_during_a_wait_ends_the_wait_first() {
        let config =
            CString::new(r#"{"client":{"model":"m","baseUrl":"http://127.0.0.1:9"},"agents":{"g":{"does":"d"}}}"#)
                .expect("no NUL");
        let mut agents: *mut tn_agents = std::ptr::null_mut();
        let mut err: *mut c_char = std::ptr::null_mut();
        // SAFETY: valid strings and out-pointers.
        let st = unsafe {
            tn_agents_new(
                config.as_ptr(),
                std::ptr::null(),
                None,
                std::ptr::null_mut(),
                None,
                &mut agents,
                &mut err,
            )
        };
        assert_eq!(st, TN_OK);
        assert!(err.is_null());
        let call = |verb: &str, args: &str| -> (tn_status, String) {
            let (verb, args) = (
                CString::new(verb).expect("verb"),
                CString::new(args).expect("args"),
            );
            let mut out: *mut c_char = std::ptr::null_mut();
            let a = agents as usize;
            // SAFETY: a live runtime; valid strings and out-pointer.
            let st = unsafe {
                tn_agents_call(
                    a as *const tn_agents,
                    verb.as_ptr(),
                    args.as_ptr(),
                    std::ptr::null(),
                    &mut out,
                )
            };
            (st, test_take(out))
        };
        let (st, out) = call("spawn", r#"{"agent":"g"}"#);
        assert_eq!(st, TN_OK, "{out}");
        let a = agents as usize;
        let waiter = std::thread::spawn(move || {
            let (verb, args) = (
                CString::new("wait").expect("verb"),
                CString::new(r#"{"id":"root/g.1"}"#).expect("args"),
            );
            let mut out: *mut c_char = std::ptr::null_mut();
            // SAFETY: live until the free below, which waits for this call.
            let st = unsafe {
                tn_agents_call(
                    a as *const tn_agents,
                    verb.as_ptr(),
                    args.as_ptr(),
                    std::ptr::null(),
                    &mut out,
                )
            };
            (st, test_take(out))
        });
        // The wait is in flight once it is counted (it never ends by itself:
        // the handle was never woken).
        // SAFETY: live; only the counter is read.
        while *unsafe { &*agents }
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            == 0
        {
            std::thread::yield_now();
        }
        // SAFETY: from tn_agents_new, freed once.
        unsafe { tn_agents_free(agents) };
        let (st, out) = waiter.join().expect("the waiter");
        assert_eq!(st, TN_OK, "{out}");
        assert!(
            out.contains(r#""status":"interrupted""#) || out.contains(r#""status":"closed""#),
            "{out}"
        );
    }
}
