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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// An opaque client built by `tn_client_new` and released by
/// `tn_client_free`. `const tn_client *` may be shared by many threads and
/// many runs at once.
#[allow(non_camel_case_types)]
pub struct tn_client {
    pub(super) inner: Client,
    host: super::handle::HostRef,
}

impl super::handle::Handle for tn_client {
    fn host_ref(&self) -> &super::handle::HostRef {
        &self.host
    }
}

impl std::ops::Deref for tn_client {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.inner
    }
}

/// Where a callback puts its answer. Valid only during the callback that
/// received it; the library copies what it is given.
#[allow(non_camel_case_types)]
pub struct tn_reply {
    answer: Option<Result<Value, String>>,
    run_data: *mut c_void,
    /// A toolkit `waitFor`'s stop token, or a run's cancel token
    /// (`tn_reply_cancelled`).
    stop: Option<CancelToken>,
    /// Set once a run stopped waiting for this callback (its deadline).
    abandoned: Option<Arc<AtomicBool>>,
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
            abandoned: None,
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

/// How often a run waiting for its callback looks at its cancel token.
const CANCEL_POLL: Duration = Duration::from_millis(10);

impl HostCallback {
    /// [`HostCallback::call`] for a callback a run calls (issue 25 M6): it
    /// runs on a library thread while the run waits for it until the run's
    /// cancel or deadline (polling the token every 10 ms). A run that stops
    /// waiting fails the call (the run then ends `cancelled` or `timeout`)
    /// and drops the late answer; the callback sees `tn_reply_cancelled`
    /// and keeps `user_data` alive until it returns. Outside a run, as
    /// `call`.
    pub(super) fn call_in_run(
        self: &Arc<Self>,
        event: &Value,
        data: RunData,
    ) -> Result<Option<Value>, String> {
        let Some(stop) = client::callbacks::current_stop() else {
            return self.call(event, data);
        };
        let stopped =
            || stop.cancel.is_cancelled() || stop.deadline.is_some_and(|d| Instant::now() >= d);
        if stopped() {
            return Err("the run was cancelled or out of time before the callback".into());
        }
        let until = Until {
            token: Some(stop.cancel.clone()),
            deadline: stop.deadline,
            stopped: &stopped,
        };
        match self.call_pooled(event, data, until) {
            Pooled::Answered(answer) => answer,
            Pooled::Abandoned => {
                Err("the run was cancelled or out of time while the callback ran".into())
            }
            Pooled::NoThread => Err("cannot start a thread to run the callback".into()),
        }
    }

    /// Runs the callback on a thread of the host-call pool while the caller
    /// waits until it answers or `until` says to stop (looked at every
    /// 10 ms, and at the deadline). A call stopped waiting for is
    /// [`Pooled::Abandoned`]: the callback sees `tn_reply_cancelled`, its
    /// late answer is dropped, and it keeps `user_data` alive until it
    /// returns.
    pub(super) fn call_pooled(
        self: &Arc<Self>,
        event: &Value,
        data: RunData,
        until: Until<'_>,
    ) -> Pooled {
        let text = CString::new(event.to_string()).unwrap_or_default();
        let abandoned = Arc::new(AtomicBool::new(false));
        let answer = Arc::new(Mutex::new(None));
        let (done_tx, done) = mpsc::channel::<()>();
        let job = {
            let (host, abandoned, answer) = (
                Arc::clone(self),
                Arc::clone(&abandoned),
                Arc::clone(&answer),
            );
            let (token, run_data) = (until.token.clone(), data.0);
            Box::new(move || {
                let mut reply = tn_reply {
                    answer: None,
                    run_data: run_data as *mut c_void,
                    stop: token,
                    abandoned: Some(abandoned),
                };
                // SAFETY: the host's registered function; the event string
                // and the reply live through the call.
                unsafe { (host.callback)(host.user_data, text.as_ptr(), &mut reply) };
                *answer.lock().unwrap_or_else(PoisonError::into_inner) = reply.answer.take();
                // Let go of the callback before the pool says done: a host
                // that frees the client right after the run sees its
                // user_data_free run.
                drop(reply);
                drop(host);
            })
        };
        if !super::host::pool::run(job, done_tx) {
            return Pooled::NoThread;
        }
        loop {
            // With no token to look at, sleep until the deadline.
            let wait = match until.deadline {
                Some(d) if until.token.is_none() => d.saturating_duration_since(Instant::now()),
                Some(d) => d.saturating_duration_since(Instant::now()).min(CANCEL_POLL),
                None => CANCEL_POLL,
            };
            match done.recv_timeout(wait) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) if (until.stopped)() => {
                    abandoned.store(true, Ordering::SeqCst);
                    return Pooled::Abandoned;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
        let answer = answer.lock().unwrap_or_else(PoisonError::into_inner).take();
        Pooled::Answered(match answer {
            None => Ok(None),
            Some(Ok(v)) => Ok(Some(v)),
            Some(Err(message)) => Err(message),
        })
    }
}

/// How long [`HostCallback::call_pooled`] waits: until `stopped` says so
/// (a cancel, a deadline passed), waking at `deadline` if there is one.
pub(super) struct Until<'a> {
    /// The token `tn_reply_cancelled` looks at, if any.
    pub(super) token: Option<CancelToken>,
    pub(super) deadline: Option<Instant>,
    pub(super) stopped: &'a dyn Fn() -> bool,
}

/// How a pooled callback ended.
pub(super) enum Pooled {
    /// It returned: what it set (nothing, an answer or an error).
    Answered(Result<Option<Value>, String>),
    /// The caller stopped waiting before it returned.
    Abandoned,
    /// No thread could be started to run it.
    NoThread,
}

/// Builds a client from client JSON: the `tn_translate` client keys
/// (`baseUrl`, `style`, `model`, `apiKey`, `headers`, `systemPrompt`,
/// `retries`, `retryBaseMs`, `timeoutMs` — here a whole-run deadline —,
/// `requestParams`) plus `maxTurns` (default 10) and `store`: where
/// `tn_ask` with an `id` keeps the conversation when no `storeGet` /
/// `storeSave` slots are set, a store selector (`"memory"`, the default:
/// the client's own memory; `"file:<dir>"`, `"sqlite:<path>"`,
/// `"postgres://…"`, or `"host:<name>"` for a store registered with
/// `tn_store_register`). The transcript is a record of kind
/// `conversation` under its id, so an A2A agent on the same store shares
/// it.
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
    // SAFETY: forwarded from this function's contract.
    unsafe { new_client_named(client_json, "client_json", out_client, out_error, make) }
}

/// [`new_client`] for a JSON argument the errors call `what`.
///
/// # Safety
/// As `tn_client_new`.
pub(super) unsafe fn new_client_named(
    client_json: *const c_char,
    what: &str,
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
    let mut built: Option<tn_client> = None;
    let status = boundary(out_error, || {
        // SAFETY: forwarded from this function's contract.
        let text = unsafe { read_str(client_json, what) }?;
        let v: Value = serde_json::from_str(text).map_err(|e| Error::invalid_json(what, &e))?;
        built = Some(tn_client {
            inner: make(&v)?,
            host: Default::default(),
        });
        Ok(String::new())
    });
    // SAFETY: both out-pointers were checked non-NULL above.
    unsafe {
        match built {
            Some(c) if status == TN_OK => {
                super::tn_string_free(*out_error);
                *out_error = std::ptr::null_mut();
                *out_client = super::handle::hand_out(c);
            }
            _ => *out_client = std::ptr::null_mut(),
        }
    }
    status
}

/// Frees a client; each registered `user_data_free` runs once, when the last
/// run still using its callback is over. NULL is a no-op.
///
/// Freeing during a run on this client (from one of its own callbacks, or
/// from another thread while the run waits) defers the free until the last
/// run using the client returns; those runs finish normally. A second free
/// while such a run still goes on is ignored; otherwise not twice, and
/// never racing a run's start.
///
/// # Safety
/// `client` is NULL or a pointer from `tn_client_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn tn_client_free(client: *mut tn_client) {
    // SAFETY: NULL, or from hand_out in tn_client_new with its host
    // reference not released yet.
    unsafe { super::handle::release(client) }
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
/// reply `"retry"` or `"fail"`, bounded by `retries`; nothing = default),
/// `bodyTransform` (event: the LLM request body after `beforeLLM` and
/// `requestParams`; reply: the body to send, or nothing to send it as it
/// is), `httpClient` (the LLM calls' transport in the library's stead:
/// event `{method: "POST", url, headers, body, stream}` with `body` the
/// request's JSON text; reply `{status, headers?, body}` with `body` the
/// answer's text — a stream's whole SSE text — read as the wire's would be,
/// retries and `Retry-After` included; MCP and HTTP tools keep their own).
///
/// A NULL `callback` clears the slot. `user_data_free` (nullable) runs once
/// for this `user_data` — also when this call fails, so the caller never
/// frees it itself afterwards. A callback that calls `tn_reply_set_error`,
/// or answers a shape the slot does not take, ends the run with
/// `TN_CALLBACK_ERROR` naming the slot. On failure `*out_error` (nullable)
/// holds the error JSON, else NULL. Safe while other threads run on the
/// client: a run keeps the callbacks it started with.
///
/// A run calls each callback on a library thread and waits for it: a
/// callback that blocks past
/// the run's cancel or `timeoutMs` does not hold the run, which returns
/// `TN_CANCELLED` or `TN_TIMEOUT` within about 10 ms and drops the late
/// answer; the callback sees `tn_reply_cancelled` true.
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
    super::boundary_status(out_error, || {
        // SAFETY: forwarded from this function's contract.
        let (client, name) = unsafe { (read_client(client)?, read_str(slot, "slot")?) };
        let slot = Slot::from_name(name)?;
        let f: Option<HostFn> = host.map(|h| {
            let h = Arc::new(h);
            Arc::new(move |event: &Value, data: RunData| h.call_in_run(event, data)) as HostFn
        });
        client.set_callback(slot, f);
        Ok(())
    })
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
/// poll it and return early. In a client's callbacks (a run's hooks,
/// `waitFor`, `onError`, `onEvent`): true once the run was
/// cancelled or passed its `timeoutMs`; the run has then returned
/// `TN_CANCELLED` or `TN_TIMEOUT` without waiting for this callback, and
/// drops its answer. False for a NULL reply.
///
/// # Safety
/// `reply` is NULL or the `tn_reply` of a callback still running.
#[no_mangle]
pub unsafe extern "C" fn tn_reply_cancelled(reply: *const tn_reply) -> bool {
    // SAFETY: NULL or live during the callback, by contract.
    match unsafe { reply.as_ref() } {
        Some(r) => {
            r.stop.as_ref().is_some_and(CancelToken::is_cancelled)
                || r.abandoned
                    .as_ref()
                    .is_some_and(|a| a.load(Ordering::SeqCst))
        }
        None => false,
    }
}

/// Holds a client handle for the length of a call: a client freed
/// meanwhile lives on until the returned reference is dropped.
///
/// # Safety
/// `ptr` is NULL or a live client.
pub(super) unsafe fn read_client(ptr: *const tn_client) -> Result<Arc<tn_client>, Error> {
    // SAFETY: NULL or live by the caller's contract.
    unsafe { super::handle::hold(ptr) }
        .ok_or_else(|| Error::new(ErrorCode::NullArgument, "client is NULL"))
}

/// What every run entry point reads, each held for the whole run (the
/// host may free its handles meanwhile): the client, the toolkit (NULL:
/// no tools), the request JSON, the cancel token (NULL: a fresh one).
pub(super) struct RunInputs {
    pub(super) client: Arc<tn_client>,
    toolkit: Option<Arc<tn_toolkit>>,
    pub(super) request: Value,
    pub(super) cancel: CancelToken,
}

impl RunInputs {
    /// # Safety
    /// As `tn_run`.
    pub(super) unsafe fn read(
        client: *const tn_client,
        toolkit: *const tn_toolkit,
        json: *const c_char,
        cancel: *const tn_cancel,
        what: &str,
    ) -> Result<RunInputs, Error> {
        // SAFETY: forwarded from the caller's contract.
        let (client, text) = unsafe { (read_client(client)?, read_str(json, what)?) };
        // SAFETY: NULL or live by contract.
        let toolkit = unsafe { super::handle::hold(toolkit) };
        let request = serde_json::from_str(text).map_err(|e| Error::invalid_json(what, &e))?;
        // SAFETY: NULL or live by the run functions' contract.
        let cancel =
            unsafe { cancel.as_ref() }.map_or_else(CancelToken::new, |c| c.token().clone());
        Ok(RunInputs {
            client,
            toolkit,
            request,
            cancel,
        })
    }

    pub(super) fn toolkit(&self) -> &crate::toolkit::Toolkit {
        match &self.toolkit {
            Some(t) => &t.inner,
            None => client::empty_toolkit(),
        }
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
        let run =
            unsafe { RunInputs::read(client, toolkit, request_json, cancel, "request_json") }?;
        let request = RunRequest::from_json(&run.request)?;
        let data = RunData(run_data as usize);
        let out = run.client.run(run.toolkit(), &request, &run.cancel, data)?;
        Ok(out.to_string())
    })
}

/// Resumes a run that halted with `status:"pending"` (SPEC §10 durable
/// resume): `resume_json` = `{history, pending, answer}` — the halted run's
/// `messages`, its `pending` Request and the host's Answer, whose `id` must
/// echo the Request's (else `TN_INVALID_ARGUMENT`). The halted call is re-run
/// once with `ctx.answer` (or gets `declined/expired: <prompt>`), the calls
/// the halt left out run now, and the loop continues with no new user turn.
/// With `"mode": "fill"` (the §10 addendum's `runWithAnswer`, for calls the
/// host executed itself) no tool runs again: every open result slot of the
/// halted turn takes its result from the Answer — `data.results: [{id,
/// output, isError?}]` by tool-call id, or `data.output` / `data.isError`
/// for the halted call — a result the halt kept stays unless the Answer
/// gives its id, a declined Answer gives the halted call `declined/expired:
/// <prompt>`, and a slot the Answer leaves empty gets the error result `no
/// result supplied on resume for <name>`. `"mode": "rerun"` is the default.
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
        let run = unsafe { RunInputs::read(client, toolkit, resume_json, cancel, "resume_json") }?;
        let request = ResumeRequest::from_json(&run.request)?;
        let data = RunData(run_data as usize);
        let out = run
            .client
            .resume(run.toolkit(), &request, &run.cancel, data)?;
        Ok(out.to_string())
    })
}
