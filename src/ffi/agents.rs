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
use std::sync::Arc;

/// An opaque sub-agent runtime built by `tn_agents_new` and released by
/// `tn_agents_free`; a reference-counted handle (see `handle.rs`).
/// `const tn_agents *` may be shared by many threads, each calling
/// `tn_agents_call` at once.
#[allow(non_camel_case_types)]
pub struct tn_agents {
    agents: Agents,
    /// Triggered by `tn_agents_free`: every wait in flight ends, and no
    /// call starts after it.
    closing: CancelToken,
    host: super::handle::HostRef,
}

impl super::handle::Handle for tn_agents {
    fn host_ref(&self) -> &super::handle::HostRef {
        &self.host
    }
}

/// Builds a sub-agent runtime from `config_json` = `{agents: {name:
/// {does, soul?, model?, tools?, team?, budget?, …}}, client?, clock?:
/// "manual"|"system", inboxCap?, maxConcurrentTurns?, shutdownMs?,
/// store?}` (`store`: a store selector, as the A2A block's; transcripts and
/// checkpoints are written through to it, and `tn_agents_free` waits up to
/// 10 s for the writes still queued).
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
    let mut built: Option<tn_agents> = None;
    let status = boundary(out_error, || {
        // SAFETY: forwarded from this function's contract.
        let text = unsafe { read_str(config_json, "config_json") }?;
        let v: Value =
            serde_json::from_str(text).map_err(|e| Error::invalid_json("config_json", &e))?;
        // SAFETY: NULL or live by this function's contract.
        let kit = unsafe { toolkit.as_ref() }.map(|t| Arc::clone(&t.inner));
        let generate: Option<HostFn> = host.map(|h| {
            let h = Arc::new(h);
            Arc::new(move |event: &Value, data: RunData| h.call_in_run(event, data)) as HostFn
        });
        built = Some(tn_agents {
            agents: Agents::from_json(&v, kit, generate)?,
            closing: CancelToken::new(),
            host: super::handle::HostRef::default(),
        });
        Ok(String::new())
    });
    // SAFETY: both out-pointers were checked non-NULL above.
    unsafe {
        match built {
            Some(a) if status == TN_OK => {
                super::tn_string_free(*out_error);
                *out_error = std::ptr::null_mut();
                *out_agents = super::handle::hand_out(a);
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
/// - `shutdown {reason?="runtime freed"}` → `{ok:true}`: force-closes
///   every handle, leaves first, as `tn_agents_free` does first, leaving
///   each durable suspension in the runtime's store for a later runtime to
///   resume (a binding's close calls it before the free; the last verb
///   before it)
/// - `resume {answer}` → the TaskResult of the resumed tree; with nothing
///   suspended, the tree an earlier runtime left in the store, if any
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
        // SAFETY: NULL or live by this function's contract; held for the
        // whole call, so a free meanwhile is deferred until it returns.
        let a = unsafe { super::handle::hold(agents) }
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
        if a.closing.is_cancelled() {
            return Err(Error::invalid_argument("the runtime is being freed"));
        }
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

/// Sets (or, with a NULL `callback`, clears) one of the runtime's host
/// callbacks, by slot name; a later call replaces an earlier one. The slots:
///
/// - always: `onSpawn` (event `{id}`, before the handle's first turn),
///   `onClose` (event `{id, reason}`), `onBeat` (event `{text}`: a
///   heartbeat's report, see the `start` verb); their replies are ignored;
/// - declared in the config's `callbacks` list: the runtime-wide hooks
///   `beforeLLM`, `afterLLM`, `beforeTool`, `afterTool`, `onError`,
///   `onMetric` (as `tn_client_set_callback`'s, on every handle's runs);
///   `<hook>:<agent>` (`beforeLLM:writer`, …: that agent's own hook, which
///   replaces the runtime's slot of that name on its turns);
///   `waitFor:<agent>` (that agent is a §10 interpreter for its subtree:
///   event the Request, reply the Answer); `guardrail:<agent>` (event the
///   `beforeTool` event `{name, args, id, turn}`, reply `""`/`"allow"`/
///   nothing to allow, any other string denies with that reason — a failing
///   guardrail denies); `summarize` and `countTokens` for the config's
///   `compaction` (event `{older}` → the summary text; event `{messages}` →
///   a number);
/// - `verify:<agent>` for an agent whose `completion.verify` is
///   `"callback"`: event the RunResult (`toolCalls` accumulated over the
///   attempts), reply `{ok, reason?}`.
///
/// A declared slot that is not set fails when it is called. A callback
/// called during a turn (all but `onSpawn`, `onClose`, `onBeat`) runs on a
/// library thread while the turn waits: `interrupt`, `close` or
/// `tn_agents_free` stop the wait (the callback sees `tn_reply_cancelled`
/// and its late answer is dropped), so one that never answers holds no
/// handle. `user_data_free` runs once, when the slot is replaced or cleared
/// and no call uses it any more, or at once when this call fails.
///
/// # Safety
/// `agents` is NULL or live; `slot` is NULL or NUL-terminated; `callback`
/// and `user_data` must be usable from any thread until released;
/// `out_error` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tn_agents_set_callback(
    agents: *const tn_agents,
    slot: *const c_char,
    callback: tn_callback,
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
    out_error: *mut *mut c_char,
) -> tn_status {
    // Owned first, so that every path below releases user_data once.
    let host = HostCallback::adopt(callback, user_data, user_data_free);
    super::boundary_status(out_error, || {
        // SAFETY: NULL or live by this function's contract.
        let a = unsafe { super::handle::hold(agents) }
            .ok_or_else(|| Error::new(ErrorCode::NullArgument, "agents is NULL"))?;
        // SAFETY: forwarded from this function's contract.
        let name = unsafe { read_str(slot, "slot") }?;
        let f: Option<HostFn> = host.map(|h| {
            let h = Arc::new(h);
            Arc::new(move |event: &Value, data: RunData| h.call_in_run(event, data)) as HostFn
        });
        a.agents.set_callback(name, f)
    })
}

/// Passes a cancellation on to another token.
struct Link(CancelToken);

impl crate::cancel::OnCancel for Link {
    fn on_cancel(&self) {
        self.0.cancel();
    }
}

/// Frees a runtime: every handle is force-closed (running turns are
/// cancelled) and calls in flight on other threads — a `wait` among them —
/// end (a wait with `status` `"interrupted"` or `"closed"`); a call started
/// afterwards fails with `TN_INVALID_ARGUMENT`. This call does not wait for
/// them: the memory goes when the last call in flight returns, so a free
/// from another thread during a `wait`, or from inside the runtime's own
/// `generate` callback, is safe. The `generate` callback's `user_data_free`
/// runs once no turn thread uses it any more. NULL is a no-op; a second
/// free while a call still holds the runtime is ignored; otherwise not
/// twice.
///
/// # Safety
/// `agents` is NULL or a pointer from `tn_agents_new` whose host reference
/// has not been released yet (or is still held by a call in flight).
#[no_mangle]
pub unsafe extern "C" fn tn_agents_free(agents: *mut tn_agents) {
    // SAFETY: NULL or live by contract; our own reference while the
    // handles close.
    let Some(a) = (unsafe { super::handle::hold(agents) }) else {
        return;
    };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if !a.closing.is_cancelled() {
            a.closing.cancel();
            a.agents.shutdown();
        }
    }));
    // SAFETY: from hand_out in tn_agents_new; the host's reference is
    // released once (a second free while a call holds it is a no-op).
    unsafe { super::handle::release(agents) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(a)));
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
        // The wait is in flight once the free's cancel reaches it: its link
        // is registered on the runtime's closing token (holding a reference
        // is not enough: a free before the registration makes the call one
        // "started afterwards", refused as documented). It never ends by
        // itself: the handle was never woken.
        {
            // SAFETY: live until the free below.
            let held = unsafe { crate::ffi::handle::hold(agents) }.expect("not NULL");
            while held.closing.registered() == 0 {
                std::thread::yield_now();
            }
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

    static HELD_FREES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    unsafe extern "C" fn never(
        _: *mut c_void,
        _: *const c_char,
        _: *mut super::super::client::tn_reply,
    ) {
    }

    unsafe extern "C" fn count_free(_: *mut c_void) {
        HELD_FREES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    #[test]
    fn a_free_while_a_call_holds_the_runtime_is_deferred_and_a_second_one_ignored() {
        use std::sync::atomic::Ordering::SeqCst;
        let config = CString::new(r#"{"agents":{"g":{"does":"d"}}}"#).expect("no NUL");
        let mut agents: *mut tn_agents = std::ptr::null_mut();
        let mut err: *mut c_char = std::ptr::null_mut();
        // SAFETY: valid strings, callbacks and out-pointers.
        let st = unsafe {
            tn_agents_new(
                config.as_ptr(),
                std::ptr::null(),
                Some(never),
                std::ptr::null_mut(),
                Some(count_free),
                &mut agents,
                &mut err,
            )
        };
        assert_eq!(st, TN_OK);
        let before = HELD_FREES.load(SeqCst);
        // A call in flight: its own reference.
        // SAFETY: live.
        let call = unsafe { crate::ffi::handle::hold(agents) }.expect("live");
        // SAFETY: the host's reference, released once; the second free
        // while the call holds the runtime is ignored.
        unsafe {
            tn_agents_free(agents);
            tn_agents_free(agents);
        }
        assert_eq!(HELD_FREES.load(SeqCst), before, "freed under a call");
        // The held runtime still answers its call; a new call is refused.
        let list = call
            .agents
            .call("list", &Value::Null, &CancelToken::new())
            .expect("list");
        assert_eq!(list, serde_json::json!([]));
        let (verb, mut out) = (CString::new("list").expect("verb"), std::ptr::null_mut());
        // SAFETY: still live (held above); valid strings.
        let st = unsafe {
            tn_agents_call(
                agents,
                verb.as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                &mut out,
            )
        };
        let out = test_take(out);
        assert_eq!(st, super::super::TN_INVALID_ARGUMENT, "{out}");
        assert!(out.contains("being freed"), "{out}");
        // The call's return is the last release.
        drop(call);
        assert_eq!(HELD_FREES.load(SeqCst), before + 1);
    }
}
