//! The toolkit as an MCP server over the C ABI (SPEC §7C): `tn_serve`,
//! `tn_serve_wait`, `tn_serve_stop`.

use super::{boundary, read_opt_str, tn_status, tn_toolkit, tn_user_data_free, TN_NULL_ARGUMENT};
use crate::error::{Error, ErrorCode};
use crate::mcp_server::{CallEvent, OnCall, ServeConfig, Server};
use serde_json::json;
use std::cell::Cell;
use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

/// A running MCP server started by `tn_serve`, ended and freed by
/// `tn_serve_stop`.
#[allow(non_camel_case_types)]
pub struct tn_server {
    inner: Server,
    host: super::handle::HostRef,
    /// Which [`HostOnCall`] is this server's (its address; 0 for none).
    on_call_id: usize,
}

impl super::handle::Handle for tn_server {
    fn host_ref(&self) -> &super::handle::HostRef {
        &self.host
    }
}

/// Hears every `tools/call` the server answers: `user_data`, and the event
/// JSON `{"name","source","ms","isError"}` (borrowed for the call only).
/// Runs on a library thread, possibly for several calls at once.
#[allow(non_camel_case_types)]
pub type tn_serve_on_call =
    Option<unsafe extern "C" fn(user_data: *mut c_void, event_json: *const c_char)>;

struct HostOnCall {
    callback: Option<unsafe extern "C" fn(*mut c_void, *const c_char)>,
    /// Hears served A2A tasks reach their end (`tn_serve_with_client`).
    on_task: Option<unsafe extern "C" fn(*mut c_void, *const c_char)>,
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
}

// SAFETY: tn_serve's contract makes the host promise that the callback and
// its user_data may be used from any thread, concurrently.
unsafe impl Send for HostOnCall {}
// SAFETY: as above.
unsafe impl Sync for HostOnCall {}

impl Drop for HostOnCall {
    fn drop(&mut self) {
        if let Some(free) = self.user_data_free {
            // SAFETY: the host's finalizer for its own user_data, run once,
            // when the server that held it is gone.
            unsafe { free(self.user_data) };
        }
    }
}

thread_local! {
    /// The [`HostOnCall`] this thread is running (its address), so that
    /// `tn_serve_stop` knows it is called from its own server's callback.
    static HEARING: Cell<usize> = const { Cell::new(0) };
}

impl HostOnCall {
    fn hear(&self, event: &CallEvent) {
        if let Some(callback) = self.callback {
            self.tell(callback, &event.to_json());
        }
    }

    fn hear_task(&self, event: &serde_json::Value) {
        if let Some(callback) = self.on_task {
            self.tell(callback, event);
        }
    }

    fn tell(
        &self,
        callback: unsafe extern "C" fn(*mut c_void, *const c_char),
        event: &serde_json::Value,
    ) {
        let text = CString::new(event.to_string()).unwrap_or_default();
        let outer = HEARING.replace(self as *const HostOnCall as usize);
        // SAFETY: the host's callback with its user_data; the string lives
        // through the call.
        unsafe { callback(self.user_data, text.as_ptr()) };
        HEARING.set(outer);
    }
}

/// The most worker threads `tn_set_io_threads` takes.
pub const TN_MAX_IO_THREADS: u32 = 64;

/// Sets how many worker threads the library's I/O runtime (MCP sessions,
/// HTTP, served toolkits) starts with: 1 to `TN_MAX_IO_THREADS`; 1 when
/// never set. The workers only move bytes and frame messages (a call's
/// work runs on the calling thread, the blocking pool or the library's
/// pooled threads), so one is enough for most hosts and each message then
/// wakes one thread, not two; a host serving many connections at once on
/// a large machine may want more. The runtime starts with the first call that
/// needs it (a build with MCP servers, an HTTP tool or webfetch, a
/// translate or a run, serving), so call this before any other; once it
/// runs this fails with `TN_INVALID_ARGUMENT`, naming the count running,
/// and changes nothing. On failure `*out_error`
/// (nullable) receives the error JSON, on success NULL.
///
/// # Safety
/// `out_error` is NULL or points to a writable pointer.
#[no_mangle]
pub unsafe extern "C" fn tn_set_io_threads(threads: u32, out_error: *mut *mut c_char) -> tn_status {
    super::boundary_status(out_error, || set_io_threads(threads))
}

fn set_io_threads(threads: u32) -> Result<(), Error> {
    let invalid = |message: String| Error::new(ErrorCode::InvalidArgument, message);
    if threads == 0 || threads > TN_MAX_IO_THREADS {
        return Err(invalid(format!(
            "threads must be 1 to {TN_MAX_IO_THREADS}, got {threads}"
        )));
    }
    let running = || {
        crate::runtime::running_worker_threads().map(|n| {
            invalid(format!(
                "the I/O runtime is already running with {n} worker thread{}: call \
                 tn_set_io_threads before any other call",
                if n == 1 { "" } else { "s" }
            ))
        })
    };
    if let Some(e) = running() {
        return Err(e);
    }
    if crate::runtime::set_worker_threads(threads as usize) {
        return Ok(());
    }
    // Started by another thread in between: whichever count it took.
    Err(running().unwrap_or_else(|| invalid("the I/O runtime is already running".into())))
}

/// Serves the toolkit as an MCP server. `serve_json` is
/// `{"transport": "http"|"stdio", "addr": "127.0.0.1:0", "mcp": {"name",
/// "version", "tools"}}`: HTTP (the default) listens on `addr` (port 0
/// picks a free one) and answers streamable HTTP at `/mcp`, statelessly;
/// stdio reads JSON-RPC lines from the process's stdin and writes them to
/// its stdout. `mcp` sets `serverInfo` (defaults `toolnexus`, `0.1.0`) and
/// the exposed tools (all when absent; names the toolkit lacks are
/// ignored). `maxRequestBytes` caps one request (an HTTP body: default and
/// most 4 MiB, refused with 413 and a JSON-RPC error; a stdio line: default
/// and most 64 MiB, answered as an invalid request and skipped; a request
/// to the A2A routes beside `/mcp`: 64 MiB, or `maxRequestBytes` when that
/// is lower); `maxCallsInFlight` (default 64) caps the `tools/call`s running at once,
/// one past it answered at once with the JSON-RPC error -32000.
///
/// `on_call` (nullable) hears every call; `user_data_free` (nullable) runs
/// once when the server is stopped — or at once when `tn_serve` fails.
///
/// On success `*out_server` receives the server and `*out_json`
/// `{"url": "http://127.0.0.1:PORT/mcp"}` (`{"url": null}` for stdio); on
/// failure `*out_server` is NULL and `*out_json` the error JSON. Free the
/// string with `tn_string_free`, stop the server with `tn_serve_stop`.
///
/// The server shares the toolkit: stop every server of a toolkit before
/// freeing it (a toolkit freed while served lives on until its last server
/// stops). Several servers may serve one toolkit at once.
///
/// # Safety
/// `toolkit` is NULL or live; `serve_json` is NULL (HTTP needs an `addr`,
/// so NULL is an error) or NUL-terminated; `out_server` and `out_json` are
/// NULL or point to writable pointers; `on_call` and `user_data` must be
/// usable from any thread until the server is stopped.
#[no_mangle]
pub unsafe extern "C" fn tn_serve(
    toolkit: *const tn_toolkit,
    serve_json: *const c_char,
    on_call: tn_serve_on_call,
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
    out_server: *mut *mut tn_server,
    out_json: *mut *mut c_char,
) -> tn_status {
    // SAFETY: forwarded from this function's contract; no client.
    unsafe {
        serve_with(
            toolkit,
            std::ptr::null(),
            serve_json,
            [on_call, None],
            user_data,
            user_data_free,
            out_server,
            out_json,
        )
    }
}

/// `tn_serve` with a client, which fulfils the tasks of the A2A agent an
/// `a2a` block in `serve_json` asks for (SPEC §7B): `{"transport":"http",
/// "addr", "mcp"?, "a2a": {"name"?, "description"?, "version"?,
/// "provider"?: {"organization","url"}, "skills"?: [names], "store"?:
/// "memory" | "file:<dir>" | "sqlite:<path>" | "postgres://…" |
/// "host:<name>" (a store registered with `tn_store_register`)}}`. Beside `/mcp` (answered
/// first, never shadowed) the server then answers `GET
/// /.well-known/agent-card.json` (the card: the skill source's skills) and
/// JSON-RPC `SendMessage` / `GetTask` on any other POST path; each task
/// runs on a thread of its own through the client (`ask` on the
/// conversation of the message's `contextId`, else a stateless run). A run
/// that suspends is an `input-required` task with the Request's prompt; a
/// failing run a `failed` task.
///
/// `on_task` (nullable) hears `{"id","task","state","result"?}` once per
/// task, when it is stored `completed`, `failed` or `input-required`; it
/// shares `user_data` with `on_call`. Without `a2a` this is `tn_serve`;
/// `tn_serve` with an `a2a` block is the `invalid_config` error (no client).
/// The server holds the client until it is stopped.
///
/// # Safety
/// As `tn_serve`; `client` is NULL or live; `on_task` as `on_call`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tn_serve_with_client(
    toolkit: *const tn_toolkit,
    client: *const super::tn_client,
    serve_json: *const c_char,
    on_call: tn_serve_on_call,
    on_task: tn_serve_on_call,
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
    out_server: *mut *mut tn_server,
    out_json: *mut *mut c_char,
) -> tn_status {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        serve_with(
            toolkit,
            client,
            serve_json,
            [on_call, on_task],
            user_data,
            user_data_free,
            out_server,
            out_json,
        )
    }
}

/// A client held for as long as a server fulfils tasks with it.
struct HeldClient(Arc<super::tn_client>);

impl std::ops::Deref for HeldClient {
    type Target = crate::client::Client;
    fn deref(&self) -> &crate::client::Client {
        &self.0.inner
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn serve_with(
    toolkit: *const tn_toolkit,
    client: *const super::tn_client,
    serve_json: *const c_char,
    [on_call, on_task]: [tn_serve_on_call; 2],
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
    out_server: *mut *mut tn_server,
    out_json: *mut *mut c_char,
) -> tn_status {
    // Owning user_data first means every failure path releases it.
    let hook = (on_call.is_some() || on_task.is_some()).then_some(HostOnCall {
        callback: on_call,
        on_task,
        user_data,
        user_data_free,
    });
    if hook.is_none() {
        if let Some(free) = user_data_free {
            // SAFETY: the host's finalizer for its own user_data, run once.
            unsafe { free(user_data) };
        }
    }
    if out_server.is_null() {
        drop(hook);
        return boundary(out_json, || -> Result<String, Error> {
            Err(Error::new(ErrorCode::NullArgument, "out_server is NULL"))
        });
    }
    if out_json.is_null() {
        drop(hook);
        // SAFETY: checked non-NULL just above.
        unsafe { *out_server = std::ptr::null_mut() };
        return TN_NULL_ARGUMENT;
    }
    let mut started: Option<tn_server> = None;
    let status = boundary(out_json, || {
        // SAFETY: NULL or live by this function's contract.
        let tk = Arc::clone(&unsafe { super::read_toolkit(toolkit) }?.inner);
        // SAFETY: forwarded from this function's contract.
        let text = unsafe { read_opt_str(serve_json, "serve_json") }?;
        let config = match text {
            Some(t) => ServeConfig::from_json_text(t)?,
            None => ServeConfig::from_value(&serde_json::Value::Null)?,
        };
        let mut on_call_id = 0;
        let hook = hook.map(Arc::new);
        if let Some(h) = &hook {
            on_call_id = Arc::as_ptr(h) as usize;
        }
        let on_task = match &hook {
            Some(h) if h.on_task.is_some() => {
                let h = Arc::clone(h);
                Some(Arc::new(move |e: &serde_json::Value| h.hear_task(e)) as crate::a2a::OnTask)
            }
            _ => None,
        };
        let on_call: Option<OnCall> = hook
            .filter(|h| h.callback.is_some())
            .map(|h| Arc::new(move |e: &CallEvent| h.hear(e)) as OnCall);
        // SAFETY: NULL or live by this function's contract.
        let runner = match unsafe { client.as_ref() } {
            None => None,
            Some(_) => {
                // SAFETY: as above.
                let held = HeldClient(unsafe { super::client::read_client(client) }?);
                Some(crate::a2a::client_runner(held, Arc::clone(&tk)))
            }
        };
        let server = crate::a2a::serve(tk, &config, on_call, runner, on_task)?;
        let answer = json!({"url": server.url()}).to_string();
        started = Some(tn_server {
            inner: server,
            host: Default::default(),
            on_call_id,
        });
        Ok(answer)
    });
    // SAFETY: out_server was checked non-NULL above.
    unsafe {
        *out_server = match started {
            Some(s) if status == super::TN_OK => super::handle::hand_out(s),
            _ => std::ptr::null_mut(),
        };
    }
    status
}

/// Waits for the server to end — a stdio server ends when its client
/// closes its input; an HTTP server runs until stopped — at most
/// `timeout_ms` milliseconds (a negative value waits without limit).
/// Returns whether it has ended. Another thread may stop the server
/// meanwhile: this then returns true, and the free is deferred until it
/// does. NULL returns true at once.
///
/// # Safety
/// `server` is NULL or a live server from `tn_serve`.
#[no_mangle]
pub unsafe extern "C" fn tn_serve_wait(server: *const tn_server, timeout_ms: i64) -> bool {
    // SAFETY: NULL or live by the caller's contract.
    let Some(s) = (unsafe { super::handle::hold(server) }) else {
        return true;
    };
    let limit = u64::try_from(timeout_ms)
        .ok()
        .map(std::time::Duration::from_millis);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.inner.wait_for(limit)))
        .unwrap_or(true)
}

/// Stops the server and frees it: no new connection or message is taken,
/// calls and served A2A tasks in flight are cancelled and waited for (each
/// such task's `on_task` still hears it end; at most 5 s: a cancelled
/// bash call's process group is gone by then, SIGTERM and then SIGKILL
/// after 2 s), the port is closed, and the `on_call` `user_data_free` has
/// run when this returns (a callback running at that moment is let finish
/// first). From the server's own `on_call` it does not wait
/// (the call that runs the callback is cancelled too): the server ends, and
/// is freed, once that callback returns. NULL is a no-op. While another
/// thread waits in
/// `tn_serve_wait` the free is deferred until that wait returns, and a
/// second stop meanwhile is ignored; otherwise not twice.
///
/// # Safety
/// `server` is NULL or a server from `tn_serve` not yet stopped.
#[no_mangle]
pub unsafe extern "C" fn tn_serve_stop(server: *mut tn_server) {
    // SAFETY: NULL or live by the caller's contract.
    let Some(s) = (unsafe { super::handle::hold(server) }) else {
        return;
    };
    if s.on_call_id != 0 && HEARING.get() == s.on_call_id {
        // From the server's own on_call: waiting for the calls in flight
        // would wait for this one. The stop begins here; a thread of its
        // own waits for the server to end and frees it.
        s.inner.begin_stop();
        // SAFETY: as below.
        unsafe { super::handle::release(server) };
        let waiter = std::thread::Builder::new().name("tn-serve-stop".into());
        // Should no thread start, the closure (and the wait) drops here.
        let _ = waiter.spawn(move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(s)));
        });
        return;
    }
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.inner.stop()));
    // SAFETY: from hand_out in tn_serve; the host's reference is released
    // once (a second stop during a wait is a no-op).
    unsafe { super::handle::release(server) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(s)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_threads_out_of_range_are_refused_by_name() {
        for bad in [0, TN_MAX_IO_THREADS + 1, u32::MAX] {
            let mut err = std::ptr::null_mut();
            // SAFETY: a pointer to a local.
            let status = unsafe { tn_set_io_threads(bad, &mut err) };
            assert_eq!(status, crate::ffi::TN_INVALID_ARGUMENT);
            let text = take(err);
            assert!(
                text.contains(&format!("threads must be 1 to 64, got {bad}")),
                "{text}"
            );
        }
        // A NULL out_error is allowed: the status alone.
        // SAFETY: NULL out_error.
        let status = unsafe { tn_set_io_threads(0, std::ptr::null_mut()) };
        assert_eq!(status, crate::ffi::TN_INVALID_ARGUMENT);
    }
    use crate::ffi::{tn_toolkit_build, tn_toolkit_free, TN_INVALID_CONFIG, TN_OK};
    use std::ffi::CStr;
    use std::io::{Read, Write};
    use std::ptr;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::ffi::test_take as take;

    /// Counts calls in [0] and finalizer runs in [1]; the event must be
    /// the documented JSON.
    unsafe extern "C" fn heard(user_data: *mut c_void, event: *const c_char) {
        // SAFETY: the test passes a live [AtomicUsize; 2] and a live string.
        let (counts, text) = unsafe {
            (
                &*(user_data as *const [AtomicUsize; 2]),
                CStr::from_ptr(event).to_string_lossy(),
            )
        };
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if v["name"] == "bash"
            && v["source"] == "builtin"
            && v["isError"] == false
            && v["ms"].is_u64()
        {
            counts[0].fetch_add(1, Ordering::SeqCst);
        }
    }

    unsafe extern "C" fn freed(user_data: *mut c_void) {
        // SAFETY: as above.
        let counts = unsafe { &*(user_data as *const [AtomicUsize; 2]) };
        counts[1].fetch_add(1, Ordering::SeqCst);
    }

    /// One JSON-RPC POST, the way a stateless streamable-HTTP client sends it.
    fn post(addr: &str, body: &str) -> String {
        let mut conn = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        let req = format!(
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\n\
             mcp-protocol-version: 2025-06-18\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = conn.write_all(req.as_bytes());
        let mut answer = String::new();
        let _ = conn.read_to_string(&mut answer);
        answer
    }

    #[test]
    fn serve_call_hear_and_stop_over_the_abi() {
        let counts = [AtomicUsize::new(0), AtomicUsize::new(0)];
        let ud = &counts as *const _ as *mut c_void;
        let mut tk = ptr::null_mut();
        let mut err = ptr::null_mut();
        // SAFETY: valid pointers to locals.
        assert_eq!(
            unsafe { tn_toolkit_build(c"{}".as_ptr(), &mut tk, &mut err) },
            TN_OK
        );

        // A bad config fails, names the key, and still releases user_data.
        let mut server = ptr::null_mut();
        let mut out = ptr::null_mut();
        // SAFETY: live toolkit, NUL-terminated strings, valid out-pointers.
        let status = unsafe {
            tn_serve(
                tk,
                c"{\"adress\":\"127.0.0.1:0\"}".as_ptr(),
                Some(heard),
                ud,
                Some(freed),
                &mut server,
                &mut out,
            )
        };
        assert_eq!(status, TN_INVALID_CONFIG);
        assert!(server.is_null());
        assert!(take(out).contains("adress"));
        assert_eq!(counts[1].load(Ordering::SeqCst), 1);

        // SAFETY: as above.
        let status = unsafe {
            tn_serve(
                tk,
                c"{\"addr\":\"127.0.0.1:0\",\"mcp\":{\"name\":\"abi\"}}".as_ptr(),
                Some(heard),
                ud,
                Some(freed),
                &mut server,
                &mut out,
            )
        };
        assert_eq!(status, TN_OK);
        let answer: serde_json::Value = serde_json::from_str(&take(out)).unwrap_or_default();
        let url = answer["url"].as_str().unwrap_or_default().to_string();
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string();
        assert!(url.ends_with("/mcp"), "{answer}");

        let init = post(
            &addr,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        );
        assert!(
            init.contains(r#""serverInfo":{"name":"abi","version":"0.1.0"}"#),
            "{init}"
        );
        let called = post(
            &addr,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo via-abi"}}}"#,
        );
        assert!(called.contains(r#""text":"via-abi\n""#), "{called}");
        assert!(called.contains(r#""isError":false"#), "{called}");
        assert_eq!(counts[0].load(Ordering::SeqCst), 1);

        // SAFETY: a live server, a toolkit with no other user; both once.
        unsafe {
            assert!(!tn_serve_wait(server, 0));
            tn_serve_stop(server);
            tn_serve_stop(ptr::null_mut());
            tn_toolkit_free(tk);
        }
        assert_eq!(counts[1].load(Ordering::SeqCst), 2);
        assert!(std::net::TcpStream::connect(&addr).is_err());
    }

    unsafe extern "C" fn generate(
        _: *mut c_void,
        _: *const c_char,
        reply: *mut crate::ffi::tn_reply,
    ) {
        // SAFETY: the reply of this callback; a NUL-terminated literal.
        unsafe { crate::ffi::tn_reply_set_json(reply, c"{\"content\":\"abi says hi\"}".as_ptr()) };
    }

    unsafe extern "C" fn task_heard(user_data: *mut c_void, event: *const c_char) {
        // SAFETY: the counters outlive the server; the event is live for the call.
        let counts = unsafe { &*(user_data as *const [AtomicUsize; 2]) };
        // SAFETY: as above.
        let event = unsafe { CStr::from_ptr(event) }.to_string_lossy();
        let v: serde_json::Value = serde_json::from_str(&event).unwrap_or_default();
        if v["state"] == "completed" && v["result"]["text"] == "abi says hi" {
            counts[0].fetch_add(1, Ordering::SeqCst);
        }
    }

    /// One JSON-RPC POST to the A2A endpoint; the body of the answer.
    fn a2a_post(addr: &str, body: &str) -> serde_json::Value {
        let mut conn = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        let req = format!(
            "POST / HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = conn.write_all(req.as_bytes());
        let mut answer = String::new();
        let _ = conn.read_to_string(&mut answer);
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
        serde_json::from_str(body).unwrap_or_default()
    }

    #[test]
    fn serve_with_client_fulfils_a2a_tasks_and_tells_on_task() {
        let counts = [AtomicUsize::new(0), AtomicUsize::new(0)];
        let ud = &counts as *const _ as *mut c_void;
        let (mut tk, mut err) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: valid pointers to locals.
        assert_eq!(
            unsafe { tn_toolkit_build(c"{}".as_ptr(), &mut tk, &mut err) },
            TN_OK
        );
        let mut client = ptr::null_mut();
        // SAFETY: a NUL-terminated config, a callback, locals.
        let status = unsafe {
            crate::ffi::tn_client_new_in_process(
                c"{\"model\":\"m\"}".as_ptr(),
                Some(generate),
                ptr::null_mut(),
                None,
                &mut client,
                &mut err,
            )
        };
        assert_eq!(status, TN_OK);
        let (mut server, mut out) = (ptr::null_mut(), ptr::null_mut());
        let config = c"{\"addr\":\"127.0.0.1:0\",\"a2a\":{}}";
        // tn_serve has no client to fulfil tasks with.
        // SAFETY: live toolkit, NUL-terminated config, locals.
        let status = unsafe {
            tn_serve(
                tk,
                config.as_ptr(),
                None,
                ptr::null_mut(),
                None,
                &mut server,
                &mut out,
            )
        };
        assert_eq!(status, TN_INVALID_CONFIG);
        assert!(take(out).contains("needs a client"));
        // SAFETY: live toolkit and client, NUL-terminated config, locals.
        let status = unsafe {
            tn_serve_with_client(
                tk,
                client,
                config.as_ptr(),
                None,
                Some(task_heard),
                ud,
                Some(freed),
                &mut server,
                &mut out,
            )
        };
        assert_eq!(status, TN_OK);
        // The server holds the client: the host may free its handle now.
        // SAFETY: from tn_client_new_in_process, freed once.
        unsafe { crate::ffi::tn_client_free(client) };
        let answer: serde_json::Value = serde_json::from_str(&take(out)).unwrap_or_default();
        let addr = answer["url"]
            .as_str()
            .unwrap_or_default()
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string();
        let sent = a2a_post(
            &addr,
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"user","messageId":"m","parts":[{"kind":"text","text":"hi"}]}}}"#,
        );
        let id = sent["result"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let got = a2a_post(
                &addr,
                &format!(
                    r#"{{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{{"id":"{id}"}}}}"#
                ),
            );
            if got["result"]["status"]["state"] == "completed" {
                assert_eq!(
                    got["result"]["artifacts"][0]["parts"][0]["text"],
                    "abi says hi"
                );
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{got}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        while counts[0].load(Ordering::SeqCst) == 0 {
            assert!(std::time::Instant::now() < deadline, "on_task never heard");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // SAFETY: from tn_serve_with_client, stopped once.
        unsafe { tn_serve_stop(server) };
        assert_eq!(counts[1].load(Ordering::SeqCst), 1, "user_data_free once");
        // SAFETY: built above, freed once.
        unsafe { tn_toolkit_free(tk) };
    }

    unsafe extern "C" fn ignored(_user_data: *mut c_void, _event: *const c_char) {}

    /// M4: a stop with a call in flight waits for the call's bash job (one
    /// that ignores SIGTERM: gone only after bash's SIGKILL grace) and has
    /// released user_data when it returns, as the header says.
    #[test]
    fn stop_with_a_call_in_flight_ends_its_bash_group_and_frees_user_data() {
        let counts = [AtomicUsize::new(0), AtomicUsize::new(0)];
        let ud = &counts as *const _ as *mut c_void;
        let mut tk = ptr::null_mut();
        let mut err = ptr::null_mut();
        // SAFETY: valid pointers to locals.
        assert_eq!(
            unsafe { tn_toolkit_build(c"{}".as_ptr(), &mut tk, &mut err) },
            TN_OK
        );
        let (mut server, mut out) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: live toolkit, NUL-terminated strings, valid out-pointers.
        let status = unsafe {
            tn_serve(
                tk,
                c"{\"addr\":\"127.0.0.1:0\"}".as_ptr(),
                Some(ignored),
                ud,
                Some(freed),
                &mut server,
                &mut out,
            )
        };
        assert_eq!(status, TN_OK);
        let answer: serde_json::Value = serde_json::from_str(&take(out)).unwrap_or_default();
        let addr = answer["url"]
            .as_str()
            .unwrap_or_default()
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string();
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("pgid");
        let command = format!(
            "trap '' TERM; echo $$ > {0}.tmp && mv {0}.tmp {0}; sleep 30",
            file.display()
        );
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": command}}})
        .to_string();
        let caller = std::thread::spawn(move || post(&addr, &body));
        let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let pgid = loop {
            if let Some(id) = std::fs::read_to_string(&file)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
            {
                break id;
            }
            assert!(std::time::Instant::now() < end, "the job never started");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        // SAFETY: a live server, stopped once.
        unsafe { tn_serve_stop(server) };
        assert_eq!(counts[1].load(Ordering::SeqCst), 1, "user_data not freed");
        // The group: no process of it left that is not a zombie.
        let group = nix::unistd::Pid::from_raw(pgid);
        let alive = nix::sys::signal::killpg(group, None).is_ok()
            && std::fs::read_dir("/proc")
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| {
                    std::fs::read_to_string(e.path().join("stat")).is_ok_and(|stat| {
                        let rest = stat.rsplit_once(')').map(|r| r.1).unwrap_or_default();
                        let f: Vec<&str> = rest.split_whitespace().collect();
                        f.len() > 3 && f[0] != "Z" && f[2].parse() == Ok(pgid)
                    })
                });
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        assert!(!alive, "the bash group {pgid} outlived tn_serve_stop");
        let _ = caller.join();
        // SAFETY: no server uses it any more.
        unsafe { tn_toolkit_free(tk) };
    }
}
