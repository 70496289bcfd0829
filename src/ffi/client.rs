//! The client loop (CONTRACT.md §8): `tn_client_new` / `tn_client_free`,
//! host callbacks in named slots, `tn_run` and `tn_run_resume`.

use super::translate::tn_cancel;
use super::{boundary, read_opt_str, read_str, tn_status, tn_toolkit, tn_user_data_free};
use super::{TN_INVALID_JSON, TN_INVALID_UTF8, TN_NULL_ARGUMENT, TN_OK};
use crate::cancel::CancelToken;
use crate::client::{self, Client, HostFn, ResumeRequest, RunData, RunRequest, Slot};
use crate::error::{Error, ErrorCode};
use serde_json::Value;
use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

/// An opaque client built by `tn_client_new` and released by
/// `tn_client_free`. `const tn_client *` may be shared by many threads and
/// many runs at once.
#[allow(non_camel_case_types)]
pub struct tn_client {
    pub(super) inner: Client,
}

/// Where a callback puts its answer. Valid only during the callback that
/// received it; the library copies what it is given.
#[allow(non_camel_case_types)]
pub struct tn_reply {
    answer: Option<Result<Value, String>>,
    run_data: *mut c_void,
    /// A toolkit `waitFor`'s stop token (`tn_reply_cancelled`).
    stop: Option<CancelToken>,
}

/// A client callback: called with its `user_data`, the event JSON (borrowed
/// for the call) and the `tn_reply` to answer through (`tn_reply_set_json`,
/// `tn_reply_set_error`; setting nothing means "no reply"). May run on any
/// thread, and concurrently (the tool calls of one turn run in parallel);
/// no lock is held while it runs, so it may call back into the library.
#[allow(non_camel_case_types)]
pub type tn_callback = Option<
    unsafe extern "C" fn(user_data: *mut c_void, event_json: *const c_char, reply: *mut tn_reply),
>;

pub(super) struct HostCallback {
    pub(super) callback: unsafe extern "C" fn(*mut c_void, *const c_char, *mut tn_reply),
    pub(super) user_data: *mut c_void,
    pub(super) user_data_free: tn_user_data_free,
}

// SAFETY: registering a callback makes the host promise that it and its
// user_data may be used from any thread, concurrently.
unsafe impl Send for HostCallback {}
// SAFETY: as above.
unsafe impl Sync for HostCallback {}

impl Drop for HostCallback {
    fn drop(&mut self) {
        if let Some(free) = self.user_data_free {
            // SAFETY: the host's finalizer for its own user_data, run once,
            // when the last run using this callback is over.
            unsafe { free(self.user_data) };
        }
    }
}

impl HostCallback {
    /// Takes ownership of what a host hands over with a callback: the
    /// callback and its `user_data`, or, for a NULL callback, nothing, with
    /// `user_data_free` run at once. Either way the host never frees
    /// `user_data` itself afterwards, whatever the call it came with does.
    pub(super) fn adopt(
        callback: tn_callback,
        user_data: *mut c_void,
        user_data_free: tn_user_data_free,
    ) -> Option<HostCallback> {
        let host = callback.map(|cb| HostCallback {
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
        host
    }

    pub(super) fn call(&self, event: &Value, data: RunData) -> Result<Option<Value>, String> {
        self.call_until(event, data, None)
    }

    /// [`HostCallback::call`], with a token the callback can poll through
    /// `tn_reply_cancelled` to learn that its answer is no longer awaited.
    pub(super) fn call_until(
        &self,
        event: &Value,
        data: RunData,
        stop: Option<&CancelToken>,
    ) -> Result<Option<Value>, String> {
        let text = CString::new(event.to_string()).unwrap_or_default();
        let mut reply = tn_reply {
            answer: None,
            run_data: data.0 as *mut c_void,
            stop: stop.cloned(),
        };
        // SAFETY: the host's registered function; the event string and the
        // reply outlive the call.
        unsafe { (self.callback)(self.user_data, text.as_ptr(), &mut reply) };
        match reply.answer {
            None => Ok(None),
            Some(Ok(v)) => Ok(Some(v)),
            Some(Err(message)) => Err(message),
        }
    }
}

/// Builds a client from client JSON: the `tn_translate` client keys
/// (`baseUrl`, `style`, `model`, `apiKey`, `headers`, `systemPrompt`,
/// `retries`, `retryBaseMs`, `timeoutMs` — here a whole-run deadline —,
/// `requestParams`) plus `maxTurns` (default 10).
///
/// On success `*out_client` receives the client and `*out_error` NULL; on
/// failure `*out_client` receives NULL and `*out_error` the error JSON (free
/// it with `tn_string_free`). `client_json` is borrowed for the call only.
///
/// # Safety
/// `client_json` is NULL or NUL-terminated; the out-pointers are NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tn_client_new(
    client_json: *const c_char,
    out_client: *mut *mut tn_client,
    out_error: *mut *mut c_char,
) -> tn_status {
    // SAFETY: forwarded from this function's contract.
    unsafe { new_client(client_json, out_client, out_error, Client::from_json) }
}

/// What both client constructors do: check the out-pointers, read and parse
/// `client_json`, build the client with `make`, and write each out-pointer
/// exactly once (the client and NULL, or NULL and the error JSON).
///
/// # Safety
/// As `tn_client_new`.
pub(super) unsafe fn new_client(
    client_json: *const c_char,
    out_client: *mut *mut tn_client,
    out_error: *mut *mut c_char,
    make: impl FnOnce(&Value) -> Result<Client, Error>,
) -> tn_status {
    if out_client.is_null() {
        return boundary(out_error, || -> Result<String, Error> {
            Err(Error::new(ErrorCode::NullArgument, "out_client is NULL"))
        });
    }
    if out_error.is_null() {
        // SAFETY: checked non-NULL just above.
        unsafe { *out_client = std::ptr::null_mut() };
        return TN_NULL_ARGUMENT;
    }
    let mut built: Option<Box<tn_client>> = None;
    let status = boundary(out_error, || {
        // SAFETY: forwarded from this function's contract.
        let text = unsafe { read_str(client_json, "client_json") }?;
        let v: Value =
            serde_json::from_str(text).map_err(|e| Error::invalid_json("client_json", &e))?;
        built = Some(Box::new(tn_client { inner: make(&v)? }));
        Ok(String::new())
    });
    // SAFETY: both out-pointers were checked non-NULL above.
    unsafe {
        match built {
            Some(c) if status == TN_OK => {
                super::tn_string_free(*out_error);
                *out_error = std::ptr::null_mut();
                *out_client = Box::into_raw(c);
            }
            _ => *out_client = std::ptr::null_mut(),
        }
    }
    status
}

/// Frees a client; each registered `user_data_free` runs once, when the last
/// run still using its callback is over. NULL is a no-op. Not while a run
/// on this client is under way; not twice.
///
/// # Safety
/// `client` is NULL or a pointer from `tn_client_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn tn_client_free(client: *mut tn_client) {
    // SAFETY: NULL, or from Box::into_raw in tn_client_new, freed once.
    unsafe { super::drop_boxed(client) }
}

/// Sets the callback of one slot, replacing the one there (whose
/// `user_data_free` then runs, once no run uses it). Slots: `waitFor`
/// (event: the Request; reply: the Answer `{id, ok, data?, reason?}`; an
/// Answer without `id` gets the Request's), `beforeLLM` (event `{messages,
/// tools, model, turn}`; reply `{messages?, tools?}` or nothing), `afterLLM`
/// (event `{response, model, turn}`; observe only), `beforeTool` (event
/// `{name, args, id, turn}`; reply `{result}` to short-circuit — a result
/// with `metadata.pending` is a suspension — or `{args}` to rewrite),
/// `afterTool` (event `{name, args, result, id, turn}`; reply `{result}`
/// to replace), `onError` (event `{status?, error, attempt, retryable}`;
/// reply `"retry"` or `"fail"`, bounded by `retries`; nothing = default).
///
/// A NULL `callback` clears the slot. `user_data_free` (nullable) runs once
/// for this `user_data` — also when this call fails, so the caller never
/// frees it itself afterwards. A callback that calls `tn_reply_set_error`,
/// or answers a shape the slot does not take, ends the run with
/// `TN_CALLBACK_ERROR` naming the slot. On failure `*out_error` holds the
/// error JSON, else NULL. Safe while other threads run on the client: a run
/// keeps the callbacks it started with.
///
/// # Safety
/// `client` is NULL or live; `slot` is NULL or NUL-terminated; `callback`
/// and `user_data` must be usable from any thread until released.
#[no_mangle]
pub unsafe extern "C" fn tn_client_set_callback(
    client: *const tn_client,
    slot: *const c_char,
    callback: tn_callback,
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
    out_error: *mut *mut c_char,
) -> tn_status {
    // Owned first, so that every path below releases user_data once.
    let host = HostCallback::adopt(callback, user_data, user_data_free);
    let status = boundary(out_error, || {
        // SAFETY: forwarded from this function's contract.
        let (client, name) = unsafe { (read_client(client)?, read_str(slot, "slot")?) };
        let slot = Slot::from_name(name)?;
        let f: Option<HostFn> = host.map(|h| {
            let h = Arc::new(h);
            Arc::new(move |event: &Value, data: RunData| h.call(event, data)) as HostFn
        });
        client.set_callback(slot, f);
        Ok(String::new())
    });
    if status == TN_OK && !out_error.is_null() {
        // SAFETY: boundary wrote an (empty) owned string; success reports NULL.
        unsafe {
            super::tn_string_free(*out_error);
            *out_error = std::ptr::null_mut();
        }
    }
    status
}

/// Answers a callback with JSON text (copied). `TN_INVALID_JSON` if it does
/// not parse (nothing is set then); a later call replaces an earlier one.
///
/// # Safety
/// `reply` is NULL or the `tn_reply` of a callback still running; `json` is
/// NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn tn_reply_set_json(reply: *mut tn_reply, json: *const c_char) -> tn_status {
    if reply.is_null() {
        return TN_NULL_ARGUMENT;
    }
    // SAFETY: forwarded from this function's contract.
    let text = match unsafe { read_str(json, "json") } {
        Ok(t) => t,
        Err(e) if e.code == ErrorCode::NullArgument => return TN_NULL_ARGUMENT,
        Err(_) => return TN_INVALID_UTF8,
    };
    match serde_json::from_str::<Value>(text) {
        Ok(v) => {
            // SAFETY: non-NULL and live during the callback.
            unsafe { (*reply).answer = Some(Ok(v)) };
            TN_OK
        }
        Err(_) => TN_INVALID_JSON,
    }
}

/// Reports that the callback failed, with a message (copied; NULL gives a
/// generic one). The run then ends with `TN_CALLBACK_ERROR` (or
/// `TN_CANCELLED` if it was cancelled meanwhile).
///
/// # Safety
/// As `tn_reply_set_json`.
#[no_mangle]
pub unsafe extern "C" fn tn_reply_set_error(
    reply: *mut tn_reply,
    message: *const c_char,
) -> tn_status {
    if reply.is_null() {
        return TN_NULL_ARGUMENT;
    }
    // SAFETY: forwarded from this function's contract.
    let text = match unsafe { read_opt_str(message, "message") } {
        Ok(t) => t.unwrap_or("the callback reported an error").to_string(),
        Err(_) => return TN_INVALID_UTF8,
    };
    // SAFETY: non-NULL and live during the callback.
    unsafe { (*reply).answer = Some(Err(text)) };
    TN_OK
}

/// The `run_data` the run was started with (`tn_run`, `tn_run_resume`), for
/// a callback that needs its run's own state; NULL for a NULL reply.
///
/// # Safety
/// `reply` is NULL or the `tn_reply` of a callback still running.
#[no_mangle]
pub unsafe extern "C" fn tn_reply_run_data(reply: *const tn_reply) -> *mut c_void {
    if reply.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: non-NULL and live during the callback.
    unsafe { (*reply).run_data }
}

/// Whether the answer this callback would give is no longer awaited: true
/// in a toolkit's `waitFor` (the MCP elicitation bridge) once every tool
/// call that was in flight when the server asked has ended (cancelled or
/// out of time), the server withdrew its request, or the toolkit is
/// closing; the library has then answered the server `cancel` and drops
/// whatever this callback answers. A callback that waits for a human can
/// poll it and return early. Always false in a client's callbacks, and for
/// a NULL reply.
///
/// # Safety
/// `reply` is NULL or the `tn_reply` of a callback still running.
#[no_mangle]
pub unsafe extern "C" fn tn_reply_cancelled(reply: *const tn_reply) -> bool {
    // SAFETY: NULL or live during the callback, by contract.
    match unsafe { reply.as_ref() } {
        Some(r) => r.stop.as_ref().is_some_and(CancelToken::is_cancelled),
        None => false,
    }
}

/// Borrows a client handle.
///
/// # Safety
/// `ptr` is NULL or a live client.
pub(super) unsafe fn read_client<'a>(ptr: *const tn_client) -> Result<&'a Client, Error> {
    if ptr.is_null() {
        return Err(Error::new(ErrorCode::NullArgument, "client is NULL"));
    }
    // SAFETY: non-NULL and live by the caller's contract.
    Ok(unsafe { &(*ptr).inner })
}

/// What every run entry point reads: the client, the toolkit (NULL: no
/// tools), the request JSON, the cancel token.
///
/// # Safety
/// As `tn_run`.
pub(super) unsafe fn run_inputs<'a>(
    client: *const tn_client,
    toolkit: *const tn_toolkit,
    json: *const c_char,
    what: &str,
) -> Result<(&'a Client, &'a crate::toolkit::Toolkit, Value), Error> {
    // SAFETY: forwarded from the caller's contract.
    let (client, text) = unsafe { (read_client(client)?, read_str(json, what)?) };
    let toolkit = if toolkit.is_null() {
        client::empty_toolkit()
    } else {
        // SAFETY: non-NULL and live by contract.
        unsafe { &(*toolkit).inner }
    };
    let v = serde_json::from_str(text).map_err(|e| Error::invalid_json(what, &e))?;
    Ok((client, toolkit, v))
}

pub(super) fn token_or_new(
    cancel: *const tn_cancel,
    owned: &mut Option<CancelToken>,
) -> &CancelToken {
    // SAFETY: NULL or live by the run functions' contract.
    match unsafe { cancel.as_ref() } {
        Some(c) => c.token(),
        None => owned.insert(CancelToken::new()),
    }
}

/// Runs the client loop (SPEC §8, §10) for `request_json` = `{prompt,
/// history?}` against `toolkit` (NULL: no tools). `*out_json` receives the
/// RunResult `{text, messages, toolCalls, toolCallCount, turns, usage,
/// model, status, limit?, pending?}` or the error JSON: `provider_error`
/// (after the retries), `timeout` (`timeoutMs`, the whole run), `cancelled`
/// (`cancel` triggered from any thread), `callback_error`, `invalid_*`.
/// `run_data` (nullable, never dereferenced) is handed to every callback of
/// this run through `tn_reply_run_data`.
///
/// Safe to call concurrently on one client and one toolkit.
///
/// # Safety
/// `client` is live; `toolkit` and `cancel` are NULL or live; strings are
/// NULL or NUL-terminated; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tn_run(
    client: *const tn_client,
    toolkit: *const tn_toolkit,
    request_json: *const c_char,
    cancel: *const tn_cancel,
    run_data: *mut c_void,
    out_json: *mut *mut c_char,
) -> tn_status {
    boundary(out_json, || {
        // SAFETY: forwarded from this function's contract.
        let (client, toolkit, v) =
            unsafe { run_inputs(client, toolkit, request_json, "request_json") }?;
        let request = RunRequest::from_json(&v)?;
        let mut owned = None;
        let token = token_or_new(cancel, &mut owned);
        let out = client.run(toolkit, &request, token, RunData(run_data as usize))?;
        Ok(out.to_string())
    })
}

/// Resumes a run that halted with `status:"pending"` (SPEC §10 durable
/// resume): `resume_json` = `{history, pending, answer}` — the halted run's
/// `messages`, its `pending` Request and the host's Answer, whose `id` must
/// echo the Request's (else `TN_INVALID_ARGUMENT`). The halted call is re-run
/// once with `ctx.answer` (or gets `declined/expired: <prompt>`), the calls
/// the halt left out run now, and the loop continues with no new user turn.
/// Otherwise as `tn_run`.
///
/// # Safety
/// As `tn_run`.
#[no_mangle]
pub unsafe extern "C" fn tn_run_resume(
    client: *const tn_client,
    toolkit: *const tn_toolkit,
    resume_json: *const c_char,
    cancel: *const tn_cancel,
    run_data: *mut c_void,
    out_json: *mut *mut c_char,
) -> tn_status {
    boundary(out_json, || {
        // SAFETY: forwarded from this function's contract.
        let (client, toolkit, v) =
            unsafe { run_inputs(client, toolkit, resume_json, "resume_json") }?;
        let request = ResumeRequest::from_json(&v)?;
        let mut owned = None;
        let token = token_or_new(cancel, &mut owned);
        let out = client.resume(toolkit, &request, token, RunData(run_data as usize))?;
        Ok(out.to_string())
    })
}
