//! The C glue without I/O, sockets or the async runtime, so that Miri can
//! check it (issue 14): strings in and out, out-parameters on every path,
//! host callbacks with their `user_data` and finalizer, cancel tokens.
//!
//! `cargo +nightly miri test --lib ffi::` runs these and the boundary tests
//! of `ffi/mod.rs`; under plain `cargo test` they are ordinary unit tests.

use super::*;
use std::ffi::{c_void, CStr, CString};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::test_take as take;

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_default()
}

/// A toolkit with no builtins and no sources: nothing touches the disk.
fn bare_toolkit() -> *mut tn_toolkit {
    let mut tk = ptr::null_mut();
    let mut err = ptr::null_mut();
    // SAFETY: a NUL-terminated config and pointers to locals.
    let status = unsafe { tn_toolkit_build(c"{\"builtins\":false}".as_ptr(), &mut tk, &mut err) };
    assert_eq!(status, TN_OK);
    assert!(err.is_null());
    assert!(!tk.is_null());
    tk
}

/// What a host tool's `user_data` points at in these tests.
struct Counter {
    calls: AtomicUsize,
    /// Bumped by the finalizer, which also frees the Counter itself.
    freed: &'static AtomicUsize,
}

fn counter(freed: &'static AtomicUsize) -> *mut c_void {
    Box::into_raw(Box::new(Counter {
        calls: AtomicUsize::new(0),
        freed,
    }))
    .cast()
}

unsafe extern "C" fn free_counter(user_data: *mut c_void) {
    // SAFETY: a Counter from `counter`, freed once by the library.
    let c = unsafe { Box::from_raw(user_data.cast::<Counter>()) };
    c.freed.fetch_add(1, Ordering::SeqCst);
}

/// Answers `echo:<args>` and counts its calls.
unsafe extern "C" fn echo(user_data: *mut c_void, args: *const c_char, call: *mut tn_call) {
    // SAFETY: the Counter registered with this callback.
    let c = unsafe { &*user_data.cast::<Counter>() };
    c.calls.fetch_add(1, Ordering::SeqCst);
    // SAFETY: the library passes NUL-terminated args for the call's length.
    let args = unsafe { CStr::from_ptr(args) }.to_string_lossy();
    let out = CString::new(format!("echo:{args}")).unwrap_or_default();
    // SAFETY: the live call and a NUL-terminated output.
    let status = unsafe { tn_call_set_output(call, out.as_ptr(), false) };
    assert_eq!(status, TN_OK);
}

/// Tries every wrong answer first, then answers with a full ToolResult JSON.
unsafe extern "C" fn picky(_user_data: *mut c_void, _args: *const c_char, call: *mut tn_call) {
    let bad_utf8 = [b'a', 0xfe, 0];
    // SAFETY: the live call (or NULL) and NUL-terminated strings (or NULL).
    unsafe {
        assert_eq!(
            tn_call_set_output(call, ptr::null(), false),
            TN_NULL_ARGUMENT
        );
        assert_eq!(
            tn_call_set_output(ptr::null_mut(), c"x".as_ptr(), false),
            TN_NULL_ARGUMENT
        );
        assert_eq!(
            tn_call_set_output(call, bad_utf8.as_ptr().cast(), true),
            TN_INVALID_UTF8
        );
        assert_eq!(
            tn_call_set_result_json(call, c"{".as_ptr()),
            TN_INVALID_JSON
        );
        assert_eq!(
            tn_call_set_result_json(call, c"[1]".as_ptr()),
            TN_INVALID_ARGUMENT
        );
        assert_eq!(tn_call_set_result_json(call, ptr::null()), TN_NULL_ARGUMENT);
        // A later answer replaces an earlier one.
        assert_eq!(tn_call_set_output(call, c"first".as_ptr(), false), TN_OK);
        let full = c"{\"output\":\"second\",\"isError\":true,\"metadata\":{\"n\":1}}";
        assert_eq!(tn_call_set_result_json(call, full.as_ptr()), TN_OK);
    }
}

/// Answers nothing.
unsafe extern "C" fn silent(_: *mut c_void, _: *const c_char, _: *mut tn_call) {}

fn register(
    tk: *mut tn_toolkit,
    name: &CStr,
    callback: tn_tool_callback,
    user_data: *mut c_void,
) -> (tn_status, Option<String>) {
    let mut err = ptr::null_mut();
    // SAFETY: a live toolkit (or NULL), NUL-terminated strings, a pointer to
    // a local; the callbacks here may run on any thread.
    let status = unsafe {
        tn_toolkit_register(
            tk,
            name.as_ptr(),
            c"a test tool".as_ptr(),
            c"{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"}}}".as_ptr(),
            callback,
            user_data,
            Some(free_counter),
            &mut err,
        )
    };
    (status, (!err.is_null()).then(|| take(err)))
}

fn execute(tk: *mut tn_toolkit, name: &CStr, args: *const c_char) -> (tn_status, String) {
    let mut out = ptr::null_mut();
    // SAFETY: a live toolkit, NUL-terminated strings (or NULL), a local.
    let status = unsafe { tn_execute(tk, name.as_ptr(), args, ptr::null(), &mut out) };
    (status, take(out))
}

#[test]
fn host_callbacks_get_their_args_and_user_data_and_every_finalizer_runs_once() {
    static FREED: AtomicUsize = AtomicUsize::new(0);
    let tk = bare_toolkit();
    let data = counter(&FREED);
    assert_eq!(register(tk, c"echo", Some(echo), data), (TN_OK, None));

    let (status, out) = execute(tk, c"echo", c"{\"q\":\"é\"}".as_ptr());
    assert_eq!(status, TN_OK);
    let v = json(&out);
    assert_eq!(v["output"], "echo:{\"q\":\"é\"}");
    assert_eq!(v["isError"], false);
    // NULL args are `{}`.
    let (_, out) = execute(tk, c"echo", ptr::null());
    assert_eq!(json(&out)["output"], "echo:{}");
    // SAFETY: still registered, so still alive.
    assert_eq!(
        unsafe { &*data.cast::<Counter>() }
            .calls
            .load(Ordering::SeqCst),
        2
    );

    assert_eq!(
        register(tk, c"picky", Some(picky), counter(&FREED)),
        (TN_OK, None)
    );
    let (status, out) = execute(tk, c"picky", c"{}".as_ptr());
    assert_eq!(status, TN_OK);
    let v = json(&out);
    assert_eq!(v["output"], "second");
    assert_eq!(v["isError"], true);
    assert_eq!(v["metadata"]["n"], 1);

    assert_eq!(
        register(tk, c"silent", Some(silent), counter(&FREED)),
        (TN_OK, None)
    );
    let v = json(&execute(tk, c"silent", ptr::null()).1);
    assert_eq!(v["isError"], true);
    assert!(v["output"].as_str().unwrap_or("").contains("silent"), "{v}");

    // A name taken again replaces the tool; the toolkit still knows it.
    assert_eq!(
        register(tk, c"echo", Some(echo), counter(&FREED)),
        (TN_OK, None)
    );
    assert_eq!(
        json(&execute(tk, c"echo", ptr::null()).1)["output"],
        "echo:{}"
    );

    // SAFETY: freed once.
    unsafe { tn_toolkit_free(tk) };
    assert_eq!(FREED.load(Ordering::SeqCst), 4);
}

#[test]
fn a_refused_registration_still_frees_user_data_and_reports_why() {
    static FREED: AtomicUsize = AtomicUsize::new(0);
    let tk = bare_toolkit();
    let (status, err) = register(tk, c"echo", None, counter(&FREED));
    assert_eq!(status, TN_NULL_ARGUMENT);
    assert!(err.unwrap_or_default().contains("callback"));
    let (status, err) = register(ptr::null_mut(), c"echo", Some(echo), counter(&FREED));
    assert_eq!(status, TN_NULL_ARGUMENT);
    assert!(err.unwrap_or_default().contains("toolkit"));
    let (status, err) = register(tk, c"", Some(echo), counter(&FREED));
    assert_eq!(status, TN_INVALID_ARGUMENT);
    assert!(err.unwrap_or_default().contains("name"));
    assert_eq!(FREED.load(Ordering::SeqCst), 3);
    // SAFETY: freed once.
    unsafe { tn_toolkit_free(tk) };
    assert_eq!(FREED.load(Ordering::SeqCst), 3);
}

#[test]
fn build_out_parameters_are_written_on_every_path() {
    let mut tk = ptr::dangling_mut::<tn_toolkit>();
    // No out_error: nothing to report through, and no toolkit.
    // SAFETY: a valid config and a pointer to a local.
    let status = unsafe { tn_toolkit_build(c"{}".as_ptr(), &mut tk, ptr::null_mut()) };
    assert_eq!(status, TN_NULL_ARGUMENT);
    assert!(tk.is_null());
    // No out_toolkit: the error goes to out_error.
    let mut err = ptr::null_mut();
    // SAFETY: as above.
    let status = unsafe { tn_toolkit_build(c"{}".as_ptr(), ptr::null_mut(), &mut err) };
    assert_eq!(status, TN_NULL_ARGUMENT);
    assert!(take(err).contains("out_toolkit"));
    // Render and execute with a NULL toolkit or NULL strings.
    let mut out = ptr::null_mut();
    // SAFETY: NULL where the contract allows it, a local out-pointer.
    unsafe {
        assert_eq!(
            tn_render(ptr::null(), c"openai".as_ptr(), &mut out),
            TN_NULL_ARGUMENT
        );
        assert!(take(out).contains("toolkit"));
        assert_eq!(
            tn_execute(ptr::null(), ptr::null(), ptr::null(), ptr::null(), &mut out),
            TN_NULL_ARGUMENT
        );
        take(out);
        assert_eq!(
            tn_render(ptr::null(), ptr::null(), ptr::null_mut()),
            TN_NULL_ARGUMENT
        );
    }
}

#[test]
fn render_and_execute_hand_out_owned_strings() {
    let tk = bare_toolkit();
    let mut out = ptr::null_mut();
    // SAFETY: a live toolkit, NUL-terminated strings, a local out-pointer.
    unsafe {
        assert_eq!(tn_render(tk, c"toolNames".as_ptr(), &mut out), TN_OK);
        assert_eq!(take(out), "[]");
        let bad = [b'o', 0xc3, 0];
        assert_eq!(
            tn_render(tk, bad.as_ptr().cast(), &mut out),
            TN_INVALID_UTF8
        );
        assert!(take(out).contains("format"));
    }
    let (status, out) = execute(tk, c"nope", ptr::null());
    assert_eq!(status, TN_OK);
    assert_eq!(json(&out)["isError"], true);
    // SAFETY: as above; a context that is not an object.
    let status = unsafe {
        let mut out = ptr::null_mut();
        let s = tn_execute(tk, c"nope".as_ptr(), ptr::null(), c"[]".as_ptr(), &mut out);
        take(out);
        s
    };
    assert_eq!(status, TN_INVALID_ARGUMENT);
    // SAFETY: freed once.
    unsafe { tn_toolkit_free(tk) };
}

#[test]
fn helpers_and_cancel_tokens_through_the_abi() {
    let mut out = ptr::null_mut();
    // SAFETY: NUL-terminated strings (or NULL) and a local out-pointer.
    unsafe {
        let args =
            c"[[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"hi\"}]]";
        assert_eq!(
            tn_helper(c"hasSystemMessage".as_ptr(), args.as_ptr(), &mut out),
            TN_OK
        );
        assert_eq!(take(out), "true");
        assert_eq!(
            tn_helper(c"sanitize".as_ptr(), c"{}".as_ptr(), &mut out),
            TN_INVALID_ARGUMENT
        );
        assert!(take(out).contains("array"));
        assert_eq!(
            tn_helper(c"sanitize".as_ptr(), ptr::null(), &mut out),
            TN_INVALID_ARGUMENT
        );
        take(out);

        let cancel = tn_cancel_new();
        assert!(!cancel.is_null());
        tn_cancel_trigger(cancel);
        tn_cancel_trigger(cancel);
        tn_cancel_trigger(ptr::null());
        tn_cancel_free(cancel);
        tn_cancel_free(ptr::null_mut());
    }
}

/// The threads `whoami` ran on.
static WHO: std::sync::Mutex<Vec<std::thread::ThreadId>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn whoami(_: *mut c_void, _: *const c_char, call: *mut tn_call) {
    WHO.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(std::thread::current().id());
    // SAFETY: the live call and a NUL-terminated output.
    unsafe { tn_call_set_output(call, c"here".as_ptr(), false) };
}

/// With a cancel token (never triggered) a host call runs off the caller's
/// thread, on threads that are reused, not one started per call; every
/// call, from several callers at once, gets its own answer.
#[test]
#[cfg_attr(miri, ignore)] // the pool's idle threads outlive the test
fn host_calls_under_a_token_reuse_their_threads() {
    static FREED: AtomicUsize = AtomicUsize::new(0);
    let tk = bare_toolkit();
    assert_eq!(register(tk, c"who", Some(whoami), counter(&FREED)).0, TN_OK);
    let token = tn_cancel_new();
    let tk_addr = tk as usize;
    let token_addr = token as usize;
    let callers: Vec<_> = (0..3)
        .map(|_| {
            std::thread::spawn(move || {
                let mut outs = Vec::new();
                for _ in 0..20 {
                    let mut out = ptr::null_mut();
                    // SAFETY: the toolkit and token stay live until every
                    // caller is joined; NUL-terminated strings; a local.
                    let status = unsafe {
                        tn_execute_with_cancel(
                            tk_addr as *const tn_toolkit,
                            c"who".as_ptr(),
                            c"{}".as_ptr(),
                            ptr::null(),
                            token_addr as *const tn_cancel,
                            &mut out,
                        )
                    };
                    assert_eq!(status, TN_OK);
                    outs.push(take(out));
                }
                (std::thread::current().id(), outs)
            })
        })
        .collect();
    let mut caller_ids = Vec::new();
    for c in callers {
        let (id, outs) = c.join().expect("caller");
        caller_ids.push(id);
        for out in outs {
            assert_eq!(
                json(&out),
                serde_json::json!({"output": "here", "isError": false})
            );
        }
    }
    let who = WHO.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(who.len(), 60);
    assert!(
        who.iter().all(|id| !caller_ids.contains(id)),
        "ran on a caller's thread"
    );
    let mut distinct = who.clone();
    distinct.sort_by_key(|id| format!("{id:?}"));
    distinct.dedup();
    assert!(
        distinct.len() < 20,
        "{} threads for 60 calls",
        distinct.len()
    );
    // SAFETY: freed once, after every call returned.
    unsafe {
        tn_cancel_free(token);
        tn_toolkit_free(tk);
    }
    assert_eq!(FREED.load(Ordering::SeqCst), 1);
}

/// A host store that answers by the event's `id`: `"null"` answers null,
/// `"none"` sets nothing, `"fail"` fails, `"yes"` answers true, anything
/// else answers `{"id": <id>}` (a delete answering that is wrong).
unsafe extern "C" fn store_by_id(
    user_data: *mut c_void,
    event: *const c_char,
    reply: *mut tn_reply,
) {
    // SAFETY: the Counter registered with this callback.
    let c = unsafe { &*user_data.cast::<Counter>() };
    c.calls.fetch_add(1, Ordering::SeqCst);
    // SAFETY: NUL-terminated for the call's length.
    let ev = json(&unsafe { CStr::from_ptr(event) }.to_string_lossy());
    let id = ev["id"].as_str().unwrap_or_default().to_string();
    let answer = match id.as_str() {
        "null" => Some("null".to_string()),
        "none" => None,
        "yes" => Some("true".to_string()),
        "fail" => {
            // SAFETY: the live reply and a NUL-terminated message.
            unsafe { tn_reply_set_error(reply, c"no disk".as_ptr()) };
            return;
        }
        _ => Some(serde_json::json!({"id": id, "op": ev["op"]}).to_string()),
    };
    if let Some(a) = answer {
        let a = CString::new(a).unwrap_or_default();
        // SAFETY: the live reply and NUL-terminated JSON.
        unsafe { tn_reply_set_json(reply, a.as_ptr()) };
    }
}

#[test]
fn a_host_store_answers_through_its_callback_and_names_itself_when_wrong() {
    use crate::store::{self, Kind};
    static FREED: AtomicUsize = AtomicUsize::new(0);
    let mut err = ptr::null_mut();
    // Refused: a NULL name, a NULL callback; each releases its user_data.
    // SAFETY: pointers to locals, a fresh user_data each time.
    let st = unsafe {
        tn_store_register(
            ptr::null(),
            Some(store_by_id),
            counter(&FREED),
            Some(free_counter),
            &mut err,
        )
    };
    assert_eq!(st, TN_NULL_ARGUMENT);
    assert!(take(err).contains("name"));
    // SAFETY: as above.
    let st = unsafe {
        tn_store_register(
            c"glue".as_ptr(),
            None,
            counter(&FREED),
            Some(free_counter),
            ptr::null_mut(),
        )
    };
    assert_eq!(st, TN_NULL_ARGUMENT);
    assert_eq!(FREED.load(Ordering::SeqCst), 2);

    let data = counter(&FREED);
    // SAFETY: a NUL-terminated name; NULL out_error is allowed.
    let st = unsafe {
        tn_store_register(
            c"glue".as_ptr(),
            Some(store_by_id),
            data,
            Some(free_counter),
            ptr::null_mut(),
        )
    };
    assert_eq!(st, TN_OK);
    let s = store::resolve(Some("host:glue")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.selector(), "host:glue");
    assert_eq!(s.get(Kind::Task, "null"), Ok(None));
    assert_eq!(
        s.get(Kind::Checkpoint, "t1"),
        Ok(Some(json(r#"{"id":"t1","op":"get"}"#)))
    );
    assert_eq!(s.save(Kind::Task, "none", &json("[1]")), Ok(()));
    assert_eq!(s.delete(Kind::Task, "yes"), Ok(true));
    let wrong = |r: Result<bool, String>| r.expect_err("refused");
    assert_eq!(
        s.get(Kind::Task, "none"),
        Err("store \"host:glue\": get set no valid answer (expected the record, or null for an unknown id)".into())
    );
    assert_eq!(
        s.save(Kind::Task, "fail", &json("{}")),
        Err("store \"host:glue\": save failed: no disk".into())
    );
    assert_eq!(
        wrong(s.delete(Kind::Task, "t1")),
        "store \"host:glue\": delete set no valid answer (expected true or false)"
    );
    // Unregistered while `s` holds it: still answering, released with it.
    // SAFETY: a NUL-terminated name and a local out-pointer.
    assert_eq!(
        unsafe { tn_store_unregister(c"glue".as_ptr(), &mut err) },
        TN_OK
    );
    assert!(err.is_null());
    // SAFETY: as above.
    assert_eq!(
        unsafe { tn_store_unregister(c"glue".as_ptr(), &mut err) },
        TN_INVALID_ARGUMENT
    );
    assert!(take(err).contains("no host store is registered as \\\"glue\\\""));
    assert_eq!(s.get(Kind::Task, "null"), Ok(None));
    assert_eq!(FREED.load(Ordering::SeqCst), 2);
    drop(s);
    assert_eq!(FREED.load(Ordering::SeqCst), 3);
}

/// How many calls of `store_hanging` saw `tn_reply_cancelled` turn true.
static HANG_SAW_CANCEL: AtomicUsize = AtomicUsize::new(0);

/// A host store that hangs on the id `"slow"` until its answer is no longer
/// awaited (bounded, 30 s), then answers anyway; the id `"null"` answers
/// null at once.
unsafe extern "C" fn store_hanging(
    _user_data: *mut c_void,
    event: *const c_char,
    reply: *mut tn_reply,
) {
    // SAFETY: NUL-terminated for the call's length.
    let ev = json(&unsafe { CStr::from_ptr(event) }.to_string_lossy());
    if ev["id"] == "slow" {
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
        // SAFETY: the live reply.
        while !unsafe { tn_reply_cancelled(reply) } && std::time::Instant::now() < give_up {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        // SAFETY: the live reply.
        if unsafe { tn_reply_cancelled(reply) } {
            HANG_SAW_CANCEL.fetch_add(1, Ordering::SeqCst);
        }
    }
    let answer = if ev["id"] == "slow" {
        c"{\"late\":true}"
    } else {
        c"null"
    };
    // SAFETY: the live reply and NUL-terminated JSON.
    unsafe { tn_reply_set_json(reply, answer.as_ptr()) };
}

#[test]
fn a_host_store_that_hangs_fails_its_operation_at_the_registered_timeout() {
    use crate::store::{self, Kind};
    static FREED: AtomicUsize = AtomicUsize::new(0);
    let mut err = ptr::null_mut();
    // Options that are not JSON, not an object, an unknown key, a wait out
    // of range: refused, each user_data released at once.
    for (options, status, says) in [
        (c"{nope", TN_INVALID_JSON, "options_json is not valid JSON"),
        (c"[1]", TN_INVALID_ARGUMENT, "expected an object"),
        (
            c"{\"timeout\":5}",
            TN_INVALID_ARGUMENT,
            "unknown key 'timeout'",
        ),
        (
            c"{\"timeoutMs\":0}",
            TN_INVALID_ARGUMENT,
            "timeoutMs: expected milliseconds from 1 to 86400000, got 0",
        ),
        (
            c"{\"timeoutMs\":\"5\"}",
            TN_INVALID_ARGUMENT,
            r#"got \"5\""#,
        ),
    ] {
        // SAFETY: NUL-terminated strings, a fresh user_data, a local out-pointer.
        let st = unsafe {
            tn_store_register_with(
                c"glue-hang".as_ptr(),
                options.as_ptr(),
                Some(store_hanging),
                counter(&FREED),
                Some(free_counter),
                &mut err,
            )
        };
        assert_eq!(st, status, "{options:?}");
        assert!(take(err).contains(says), "{options:?}");
    }
    assert_eq!(FREED.load(Ordering::SeqCst), 5);

    let data = counter(&FREED);
    // SAFETY: as above.
    let st = unsafe {
        tn_store_register_with(
            c"glue-hang".as_ptr(),
            c"{\"timeoutMs\":50}".as_ptr(),
            Some(store_hanging),
            data,
            Some(free_counter),
            &mut err,
        )
    };
    assert_eq!(st, TN_OK);
    assert!(err.is_null());
    let s = store::resolve(Some("host:glue-hang")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.get(Kind::Task, "slow"),
        Err("store \"host:glue-hang\": get did not answer within 50 ms".into())
    );
    assert_eq!(
        s.delete(Kind::Task, "slow"),
        Err("store \"host:glue-hang\": delete did not answer within 50 ms".into())
    );
    // The store keeps answering what it answers in time.
    assert_eq!(s.get(Kind::Task, "null"), Ok(None));
    // SAFETY: a NUL-terminated name; NULL out_error is allowed.
    assert_eq!(
        unsafe { tn_store_unregister(c"glue-hang".as_ptr(), ptr::null_mut()) },
        TN_OK
    );
    drop(s);
    // Released once both abandoned callbacks returned, each having seen
    // tn_reply_cancelled.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while FREED.load(Ordering::SeqCst) < 6 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert_eq!(FREED.load(Ordering::SeqCst), 6);
    assert_eq!(HANG_SAW_CANCEL.load(Ordering::SeqCst), 2);
}
