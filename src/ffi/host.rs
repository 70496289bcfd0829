//! Host functions as tools (docs/CONTRACT.md §7): a C function pointer with its
//! `user_data`, called with the args JSON, answering through `tn_call_set_*`.

use super::{
    boundary, read_opt_str, read_str, read_toolkit, tn_status, tn_toolkit, TN_INVALID_JSON,
};
use super::{TN_INVALID_ARGUMENT, TN_INVALID_UTF8, TN_NULL_ARGUMENT, TN_OK};
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::tool::{ExecContext, Execute, Source, Tool, ToolResult};
use serde_json::Value;
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Where a host tool puts its result, and what it can ask about its call
/// (`tn_call_deadline_ms`, `tn_call_cancelled`). Valid only during the
/// callback that received it; the library copies what it is given.
#[allow(non_camel_case_types)]
pub struct tn_call {
    result: Mutex<Option<ToolResult>>,
    /// When the call must be over, if the caller set a timeout.
    deadline: Option<Instant>,
    /// Set once the caller stopped waiting (deadline passed or cancelled):
    /// whatever the callback sets after that is dropped.
    abandoned: AtomicBool,
    /// The caller's cancellation, if any.
    cancel: Option<CancelToken>,
}

impl tn_call {
    fn new(ctx: &ExecContext) -> tn_call {
        tn_call {
            result: Mutex::new(None),
            deadline: ctx.deadline,
            abandoned: AtomicBool::new(false),
            cancel: ctx.cancel.clone(),
        }
    }

    fn set(&self, r: ToolResult) {
        *self.result.lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
    }

    fn take(&self) -> Option<ToolResult> {
        self.result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// A host tool: called with its `user_data`, the args JSON (borrowed for the
/// call) and the `tn_call` to answer through. May run on any thread, and
/// concurrently; it may call back into the library.
#[allow(non_camel_case_types)]
pub type tn_tool_callback = Option<
    unsafe extern "C" fn(user_data: *mut c_void, args_json: *const c_char, call: *mut tn_call),
>;

/// Releases a `user_data`: a host tool's once the last use of the tool is
/// over (see `tn_toolkit_register`), a client callback's when it is replaced
/// or its client freed.
#[allow(non_camel_case_types)]
pub type tn_user_data_free = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

struct HostFn {
    name: String,
    callback: unsafe extern "C" fn(*mut c_void, *const c_char, *mut tn_call),
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
}

// SAFETY: the registration contract makes the host promise that the callback
// and its user_data may be used from any thread, concurrently.
unsafe impl Send for HostFn {}
// SAFETY: as above.
unsafe impl Sync for HostFn {}

impl Drop for HostFn {
    fn drop(&mut self) {
        if let Some(free) = self.user_data_free {
            // SAFETY: the host registered this finalizer for this user_data;
            // it runs exactly once, when the last reference goes.
            unsafe { free(self.user_data) };
        }
    }
}

impl HostFn {
    /// Runs the callback on the current thread and returns what it set.
    fn call(&self, args: &CString, call: &tn_call) {
        // The callback writes through this pointer only via the tn_call_*
        // setters, which take `&tn_call` (the result sits behind a mutex).
        let ptr = call as *const tn_call as *mut tn_call;
        // SAFETY: the callback is the host's registered function; the args
        // string and `call` outlive the call.
        unsafe { (self.callback)(self.user_data, args.as_ptr(), ptr) };
    }

    fn no_result(&self) -> ToolResult {
        ToolResult::error(format!("{}: the host tool set no result", self.name))
    }
}

/// How often a waiting caller looks at its cancel token.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// The tool a host function serves. Without a deadline or a cancel token
/// the callback runs on the caller's thread. With one, it runs on a thread
/// of the pool below while the caller waits at most until the deadline (or the
/// cancel): a callback that answers too late has its answer dropped, and
/// the caller gets the timeout (or cancelled) result at once. The late
/// callback keeps `user_data` alive until it returns.
struct HostTool(Arc<HostFn>);

impl Execute for HostTool {
    fn execute(&self, args: &Value, ctx: &ExecContext) -> ToolResult {
        let host = &self.0;
        let mut buf = Vec::with_capacity(64);
        // Writing a Value into a Vec cannot fail; JSON text holds no NUL byte.
        let _ = serde_json::to_writer(&mut buf, args);
        let text = CString::new(buf).unwrap_or_default();
        if ctx.deadline.is_none() && ctx.cancel.is_none() {
            let call = tn_call::new(ctx);
            host.call(&text, &call);
            return call.take().unwrap_or_else(|| host.no_result());
        }
        if let Some(why) = ctx.stop() {
            return ctx.stopped(&host.name, why);
        }
        let call = Arc::new(tn_call::new(ctx));
        let (done_tx, done) = mpsc::channel::<()>();
        let spawned = {
            let (host, call) = (Arc::clone(host), Arc::clone(&call));
            pool::run(
                Box::new(move || {
                    host.call(&text, &call);
                    // Let go of the host function before the pool says
                    // done: a caller that frees the toolkit right after
                    // this call must see user_data_free run, not race this
                    // thread.
                    drop(host);
                }),
                done_tx,
            )
        };
        if !spawned {
            return ToolResult::error(format!(
                "{}: cannot start a thread to run the host tool under its deadline",
                host.name
            ));
        }
        loop {
            let wait = match ctx.remaining() {
                Some(left) if ctx.cancel.is_some() => left.min(CANCEL_POLL),
                Some(left) => left,
                None => CANCEL_POLL,
            };
            match done.recv_timeout(wait) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(why) = ctx.stop() {
                        call.abandoned.store(true, Ordering::SeqCst);
                        return ctx.stopped(&host.name, why);
                    }
                }
            }
        }
        match ctx.stop() {
            Some(why) => ctx.stopped(&host.name, why),
            None => call.take().unwrap_or_else(|| host.no_result()),
        }
    }
}

/// The threads that run host calls the caller may stop waiting for (a
/// timeout or a cancel token). Starting a thread per call cost ~50 µs, two
/// hundred times the call itself; a thread that finished its call waits
/// [`pool::IDLE`] for the next one before it exits, so a busy host reuses a
/// few threads and an idle one keeps none.
mod pool {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
    use std::sync::{Mutex, PoisonError};
    use std::time::Duration;

    pub(super) type Job = Box<dyn FnOnce() + Send>;

    /// A job, and where to say it is done.
    type Task = (Job, Sender<()>);

    /// How long a thread without work waits before it exits.
    pub(super) const IDLE: Duration = Duration::from_secs(10);

    /// The threads waiting for work: an id and where to send it.
    static IDLE_THREADS: Mutex<Vec<(u64, Sender<Task>)>> = Mutex::new(Vec::new());
    static NEXT_ID: AtomicU64 = AtomicU64::new(0);

    fn idle() -> std::sync::MutexGuard<'static, Vec<(u64, Sender<Task>)>> {
        IDLE_THREADS.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `job` on a waiting thread, or a new one, then sends on `done`
    /// (once that thread is back on the idle list, so a caller that goes on
    /// to its next call finds it there); false when no thread could be
    /// started.
    pub(super) fn run(job: Job, done: Sender<()>) -> bool {
        let mut job = (job, done);
        // A thread taken off the list always gets its send: it only exits
        // after finding itself still on the list (see `work`).
        while let Some((_, tx)) = idle().pop() {
            match tx.send(job) {
                Ok(()) => return true,
                // Its thread is gone (it cannot be: see above); try another.
                Err(mpsc::SendError(back)) => job = back,
            }
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        std::thread::Builder::new()
            .name("tn-host-call".into())
            .spawn(move || work(id, job))
            .is_ok()
    }

    // Never inlined: valgrind.supp names this frame (what an idle thread
    // holds at exit), which must survive a release build.
    #[inline(never)]
    fn work(id: u64, first: Task) {
        let (tx, rx): (Sender<Task>, Receiver<Task>) = mpsc::channel();
        let mut task = first;
        loop {
            let (job, done) = task;
            job();
            idle().push((id, tx.clone()));
            let _ = done.send(());
            // Nothing of the call stays with an idle thread.
            drop(done);
            task = match rx.recv_timeout(IDLE) {
                Ok(task) => task,
                Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {
                    let mut list = idle();
                    match list.iter().position(|(i, _)| *i == id) {
                        Some(at) => {
                            list.swap_remove(at);
                            return;
                        }
                        // Taken by `run` just now: its job is on the way.
                        None => {
                            drop(list);
                            match rx.recv() {
                                Ok(task) => task,
                                Err(_) => return,
                            }
                        }
                    }
                }
            };
        }
    }
}

/// Milliseconds left before the deadline of the call (0 once it passed),
/// or -1 when the caller set no timeout. A host tool that may run long
/// should look at it and stop in time: an answer set after the deadline is
/// dropped, and the caller has already had the timeout result.
///
/// # Safety
/// `call` is NULL or the `tn_call` of a callback that is still running.
#[no_mangle]
pub unsafe extern "C" fn tn_call_deadline_ms(call: *const tn_call) -> i64 {
    // SAFETY: NULL or live during the callback (this function's contract).
    let Some(call) = (unsafe { call.as_ref() }) else {
        return -1;
    };
    match call.deadline {
        None => -1,
        Some(d) => {
            let left = d.saturating_duration_since(Instant::now()).as_millis();
            i64::try_from(left).unwrap_or(i64::MAX)
        }
    }
}

/// Whether the caller has stopped waiting for this call: its deadline
/// passed or it was cancelled. Once true, whatever the callback sets is
/// dropped; it should return as soon as it can. False for NULL.
///
/// # Safety
/// `call` is NULL or the `tn_call` of a callback that is still running.
#[no_mangle]
pub unsafe extern "C" fn tn_call_cancelled(call: *const tn_call) -> bool {
    // SAFETY: NULL or live during the callback (this function's contract).
    let Some(call) = (unsafe { call.as_ref() }) else {
        return false;
    };
    call.abandoned.load(Ordering::SeqCst)
        || call.cancel.as_ref().is_some_and(CancelToken::is_cancelled)
        || call.deadline.is_some_and(|d| Instant::now() >= d)
}

/// Whether this call can be stopped before the callback answers: its caller
/// set a timeout or passed a cancel token. When false, `tn_call_cancelled`
/// stays false for the whole call (the callback runs on the caller's
/// thread, which waits for it), so a host need not watch it: a binding can
/// skip the watcher it would run to turn cancellation into its own signal.
/// False for NULL.
///
/// # Safety
/// `call` is NULL or the `tn_call` of a callback that is still running.
#[no_mangle]
pub unsafe extern "C" fn tn_call_cancellable(call: *const tn_call) -> bool {
    // SAFETY: NULL or live during the callback (this function's contract).
    let Some(call) = (unsafe { call.as_ref() }) else {
        return false;
    };
    call.deadline.is_some() || call.cancel.is_some()
}

/// Sets a host tool's result from output text and an error flag (copied).
/// Returns `TN_NULL_ARGUMENT` for a NULL call or output, `TN_INVALID_UTF8`
/// for output that is not UTF-8. A later call replaces an earlier one.
///
/// # Safety
/// `call` is NULL or the `tn_call` of a callback that is still running;
/// `output` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn tn_call_set_output(
    call: *mut tn_call,
    output: *const c_char,
    is_error: bool,
) -> tn_status {
    if call.is_null() {
        return TN_NULL_ARGUMENT;
    }
    // SAFETY: forwarded from this function's contract.
    match unsafe { read_str(output, "output") } {
        Ok(text) => {
            let r = if is_error {
                ToolResult::error(text)
            } else {
                ToolResult::ok(text)
            };
            // SAFETY: non-NULL and live during the callback.
            unsafe { (*call).set(r) };
            TN_OK
        }
        Err(e) if e.code == crate::error::ErrorCode::NullArgument => TN_NULL_ARGUMENT,
        Err(_) => TN_INVALID_UTF8,
    }
}

/// Sets a host tool's result from a full ToolResult JSON
/// `{"output": string, "isError"?: bool, "metadata"?: object, "parts"?:
/// [part]}` (copied). A part is `{"type": "text", "text"}` or `{"type":
/// "image"|"file"|"audio", "mimeType", "data" (standard base64) | "url",
/// "name"?}` (SPEC §1B). Returns `TN_INVALID_JSON` for text that does not
/// parse and `TN_INVALID_ARGUMENT` for JSON of another shape; then the
/// call's result, until the host sets another, is an isError result naming
/// what was wrong.
///
/// # Safety
/// As `tn_call_set_output`.
#[no_mangle]
pub unsafe extern "C" fn tn_call_set_result_json(
    call: *mut tn_call,
    tool_result_json: *const c_char,
) -> tn_status {
    if call.is_null() {
        return TN_NULL_ARGUMENT;
    }
    // SAFETY: forwarded from this function's contract.
    let text = match unsafe { read_str(tool_result_json, "tool_result_json") } {
        Ok(t) => t,
        Err(e) if e.code == crate::error::ErrorCode::NullArgument => return TN_NULL_ARGUMENT,
        Err(_) => return TN_INVALID_UTF8,
    };
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return TN_INVALID_JSON;
    };
    let (r, status) = match ToolResult::parse_json(&v) {
        Ok(r) => (r, TN_OK),
        Err(why) => (
            ToolResult::error(format!("the host tool's result was refused: {why}")),
            TN_INVALID_ARGUMENT,
        ),
    };
    // SAFETY: non-NULL and live during the callback.
    unsafe { (*call).set(r) };
    status
}

/// Registers a host function as the tool `name` (source `native`), replacing
/// an earlier host tool of that name. MCP tools of the same name still win;
/// `disableTools` still applies. `input_schema_json` NULL means
/// `{"type":"object"}`. On failure `*out_error` holds the error JSON (free
/// with `tn_string_free`), else NULL.
///
/// `user_data_free` (nullable) runs exactly once, on whichever thread lets
/// go of the tool last, when the tool is no longer reachable and no call of
/// it is running: after `tn_toolkit_free`, or after a later registration of
/// the same name replaced it; in both cases only once every call still in
/// flight has returned, including a callback still running past its
/// deadline (see below). When registration fails it runs before this
/// function returns. So the caller never frees `user_data` itself.
///
/// When `tn_execute` is given a `timeoutMs`, the callback runs on a thread
/// of the library's and the caller waits at most that long: a callback that
/// has not answered by then keeps running, but `tn_execute` returns the
/// isError result `<name>: timed out after N ms (timeoutMs)` (metadata
/// `{"error":"timeout"}`) and drops the late answer. A callback sees its
/// deadline with `tn_call_deadline_ms` and whether it is still awaited with
/// `tn_call_cancelled`. A cancel token given to `tn_execute_with_cancel`
/// works the same way: once triggered the caller returns the cancelled
/// result within about 10 ms and a late answer is dropped. Without a
/// timeout or a token the callback runs on the caller's thread.
///
/// May be called while other threads use the toolkit.
///
/// # Safety
/// `toolkit` is NULL or live; strings are NULL or NUL-terminated; `callback`
/// and `user_data` must be usable from any thread until the toolkit is freed.
#[no_mangle]
pub unsafe extern "C" fn tn_toolkit_register(
    toolkit: *const tn_toolkit,
    name: *const c_char,
    description: *const c_char,
    input_schema_json: *const c_char,
    callback: tn_tool_callback,
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
    out_error: *mut *mut c_char,
) -> tn_status {
    // Owning user_data first means every failure path below releases it.
    let guard = callback.map(|cb| HostFn {
        name: String::new(),
        callback: cb,
        user_data,
        user_data_free,
    });
    if guard.is_none() {
        if let Some(free) = user_data_free {
            // SAFETY: the host's finalizer for its own user_data, run once.
            unsafe { free(user_data) };
        }
    }
    let status = boundary(out_error, || {
        let Some(mut host) = guard else {
            return Err(Error::new(
                crate::error::ErrorCode::NullArgument,
                "callback is NULL",
            ));
        };
        // SAFETY: forwarded from this function's contract.
        let (tk, name, description, schema) = unsafe {
            (
                read_toolkit(toolkit)?,
                read_str(name, "name")?,
                read_opt_str(description, "description")?,
                read_opt_str(input_schema_json, "input_schema_json")?,
            )
        };
        if name.is_empty() {
            return Err(Error::invalid_argument(
                "name: a tool name must not be empty",
            ));
        }
        let schema = match schema {
            None => None,
            Some(text) => {
                let v: Value = serde_json::from_str(text)
                    .map_err(|e| Error::invalid_json("input_schema_json", &e))?;
                if !v.is_object() {
                    return Err(Error::invalid_argument(
                        "input_schema_json: expected a JSON Schema object",
                    ));
                }
                Some(v)
            }
        };
        host.name = name.to_string();
        tk.register(Tool::new(
            name,
            description.unwrap_or(""),
            schema,
            Source::Native,
            Arc::new(HostTool(Arc::new(host))),
        ));
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
