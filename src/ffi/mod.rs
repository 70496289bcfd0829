//! The C boundary: every `unsafe` line of the crate that touches C lives under
//! this module (the few OS and CPU calls live in `crate::sys`).
//!
//! - `mod.rs`        the `boundary` wrapper, status codes, toolkit and string calls
//! - `agents.rs`     the sub-agent runtime: `tn_agents_new`, `tn_agents_call`, `tn_agents_free`
//! - `strings.rs`    strings across the boundary: borrowed in, owned out
//! - `build.rs`      build options: a cancel token and callbacks for one build
//! - `host.rs`       host functions as tools, answering through `tn_call_set_*`
//! - `elicit.rs`     the host's `waitFor` for MCP elicitation
//! - `log.rs`        the host's log callback
//! - `mcp.rs`        the list-only MCP inventory
//! - `translate.rs`  `tn_translate`, its cancel token, the pure helpers
//! - `client.rs`     the client loop: `tn_client_new`, `tn_run`, resume
//! - `client_ext.rs` `tn_ask`, `tn_stream`, in-process clients, metrics
//! - `serve.rs`      the toolkit as an MCP server: `tn_serve` and friends
//! - `store.rs`      host stores: `tn_store_register(_with)`, `tn_store_unregister`
//! - `glue_tests.rs` the glue's tests without I/O, for Miri
//!
//! Every exported function runs its body through `boundary`: NULL checks,
//! UTF-8 checks, `catch_unwind` turning a panic into `TN_INTERNAL`, and the
//! single write of the out-parameter. Business logic lives elsewhere.

mod a2a;
mod agents;
mod build;
mod client;
mod client_ext;
mod elicit;
mod handle;

#[cfg(test)]
mod glue_tests;
mod host;
mod log;
mod mcp;
mod serve;
mod store;
mod strings;
mod translate;

pub use a2a::*;
pub use agents::*;
pub use build::*;
pub use client::*;
pub use client_ext::*;
pub use host::*;
pub use log::*;
pub use mcp::*;
pub use serve::*;
pub use store::*;
pub use strings::*;
pub use translate::*;

use crate::error::{Error, ErrorCode};
use crate::toolkit::{panic_message, parse_context, Toolkit};
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A status code. `TN_OK` (0) is success; every other value names the error
/// code carried in the error JSON. Numbers are never reassigned.
#[allow(non_camel_case_types)]
pub type tn_status = i32;

/// Success.
pub const TN_OK: tn_status = 0;
/// A required pointer argument was NULL.
pub const TN_NULL_ARGUMENT: tn_status = 1;
/// A string argument was not valid UTF-8.
pub const TN_INVALID_UTF8: tn_status = 2;
/// A JSON argument did not parse.
pub const TN_INVALID_JSON: tn_status = 3;
/// The toolkit or client config is wrong (the message names the key).
pub const TN_INVALID_CONFIG: tn_status = 4;
/// An argument is well-formed JSON but not what the call accepts.
pub const TN_INVALID_ARGUMENT: tn_status = 5;
/// `tn_render` was asked for a format it does not know.
pub const TN_UNKNOWN_FORMAT: tn_status = 6;
/// The provider answered with an error, or not at all.
pub const TN_PROVIDER_ERROR: tn_status = 7;
/// The call ran out of time.
pub const TN_TIMEOUT: tn_status = 8;
/// The host cancelled the call.
pub const TN_CANCELLED: tn_status = 9;
/// A bug in the library (a caught panic); the message says what happened.
pub const TN_INTERNAL: tn_status = 10;
/// A host callback of a client (a hook, `waitFor`, `onError`) reported an
/// error or answered with something unusable; the message names the slot.
pub const TN_CALLBACK_ERROR: tn_status = 11;

/// The status number of an error code.
pub(crate) fn status_of(code: ErrorCode) -> tn_status {
    match code {
        ErrorCode::NullArgument => TN_NULL_ARGUMENT,
        ErrorCode::InvalidUtf8 => TN_INVALID_UTF8,
        ErrorCode::InvalidJson => TN_INVALID_JSON,
        ErrorCode::InvalidConfig => TN_INVALID_CONFIG,
        ErrorCode::InvalidArgument => TN_INVALID_ARGUMENT,
        ErrorCode::UnknownFormat => TN_UNKNOWN_FORMAT,
        ErrorCode::ProviderError => TN_PROVIDER_ERROR,
        ErrorCode::Timeout => TN_TIMEOUT,
        ErrorCode::Cancelled => TN_CANCELLED,
        ErrorCode::Internal => TN_INTERNAL,
        ErrorCode::CallbackError => TN_CALLBACK_ERROR,
    }
}

/// An opaque toolkit built by `tn_toolkit_build` and released by
/// `tn_toolkit_free`; a reference-counted handle (see `handle.rs`).
#[allow(non_camel_case_types)]
pub struct tn_toolkit {
    /// Shared with the servers `tn_serve` started on it.
    pub(crate) inner: std::sync::Arc<Toolkit>,
    host: handle::HostRef,
}

impl tn_toolkit {
    pub(crate) fn new(toolkit: Toolkit) -> tn_toolkit {
        tn_toolkit {
            inner: std::sync::Arc::new(toolkit),
            host: handle::HostRef::default(),
        }
    }
}

impl handle::Handle for tn_toolkit {
    fn host_ref(&self) -> &handle::HostRef {
        &self.host
    }
}

impl std::ops::Deref for tn_toolkit {
    type Target = Toolkit;
    fn deref(&self) -> &Toolkit {
        &self.inner
    }
}

/// The tests' reader of a string this library handed out: copied, then
/// freed.
#[cfg(test)]
pub(crate) fn test_take(s: *mut c_char) -> String {
    assert!(!s.is_null());
    // SAFETY: a string this library just handed out.
    let text = unsafe { std::ffi::CStr::from_ptr(s) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: freed once.
    unsafe { tn_string_free(s) };
    text
}

/// Drops a value this library handed out with `Box::into_raw` (build
/// options; toolkits, clients and servers are `handle`s): what its drop runs (closing sessions, ending
/// children, the host's `user_data_free`s) may not unwind into the host.
/// NULL is a no-op.
///
/// # Safety
/// `ptr` is NULL or came from `Box::into_raw` of a `Box<T>`, and is dropped
/// once.
pub(crate) unsafe fn drop_boxed<T>(ptr: *mut T) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: by the caller's contract.
    let boxed = unsafe { Box::from_raw(ptr) };
    let _ = catch_unwind(AssertUnwindSafe(move || drop(boxed)));
}

/// [`boundary`] for a call that gives nothing back but a status: on failure
/// `*out_error` (when not NULL) receives the error JSON, on success NULL.
pub(crate) fn boundary_status<F>(out_error: *mut *mut c_char, body: F) -> tn_status
where
    F: FnOnce() -> Result<(), Error>,
{
    let mut scratch: *mut c_char = std::ptr::null_mut();
    let out = if out_error.is_null() {
        &mut scratch as *mut *mut c_char
    } else {
        out_error
    };
    let status = boundary(out, || body().map(|()| String::new()));
    // SAFETY: boundary wrote an owned string to `out`; the scratch one is
    // always released, the caller's only on success (it reports NULL).
    unsafe {
        if out_error.is_null() {
            tn_string_free(scratch);
        } else if status == TN_OK {
            tn_string_free(*out_error);
            *out_error = std::ptr::null_mut();
        }
    }
    status
}

/// Runs `body` inside the boundary and writes its outcome to `out` exactly
/// once: the JSON text on success (a `String`, or UTF-8 bytes), the error
/// JSON on failure. A NULL `out` is `TN_NULL_ARGUMENT` and nothing is written.
pub(crate) fn boundary<F, T>(out: *mut *mut c_char, body: F) -> tn_status
where
    F: FnOnce() -> Result<T, Error>,
    T: Into<Vec<u8>>,
{
    if out.is_null() {
        return TN_NULL_ARGUMENT;
    }
    let (status, text) = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(text)) => (TN_OK, text.into()),
        Ok(Err(e)) => (status_of(e.code), e.to_json().to_string().into()),
        Err(panic) => {
            let e = Error::new(
                ErrorCode::Internal,
                format!("internal error: {}", panic_message(&panic)),
            );
            (TN_INTERNAL, e.to_json().to_string().into())
        }
    };
    // SAFETY: `out` is non-NULL and, by the documented contract, points to a
    // writable `char *`.
    unsafe { *out = into_c_string(text) };
    status
}

/// Builds a toolkit from a toolkit config (docs/CONTRACT.md §3).
///
/// On success `*out_toolkit` receives the toolkit and `*out_error` NULL; on
/// failure `*out_toolkit` receives NULL and `*out_error` the error JSON, which
/// the caller frees with `tn_string_free`. The toolkit is freed with
/// `tn_toolkit_free`. `config_json` is borrowed for the call only.
/// MCP servers are connected during the build; a failing source never fails
/// it (see `tn_render(tk, "status")`).
///
/// # Safety
/// `config_json` is NULL or a NUL-terminated string; `out_toolkit` and
/// `out_error` are NULL or point to writable pointers.
#[no_mangle]
pub unsafe extern "C" fn tn_toolkit_build(
    config_json: *const c_char,
    out_toolkit: *mut *mut tn_toolkit,
    out_error: *mut *mut c_char,
) -> tn_status {
    // SAFETY: forwarded from this function's contract; no options.
    unsafe { tn_toolkit_build_with(config_json, std::ptr::null(), out_toolkit, out_error) }
}

/// Frees a toolkit: closes its MCP sessions, ends the child processes it
/// started, and runs the `user_data_free` of every host tool. NULL is a
/// no-op.
///
/// Freeing during a call that uses the toolkit (`tn_execute`, `tn_render`,
/// a run, from one of its own callbacks or from another thread) defers the
/// free until the last such call returns; a served toolkit lives on until
/// its last server stops. A second free while such a call still runs is
/// ignored; otherwise not twice, and never racing a call's start.
///
/// # Safety
/// `toolkit` is NULL or a pointer returned by `tn_toolkit_build` that has not
/// been freed.
#[no_mangle]
pub unsafe extern "C" fn tn_toolkit_free(toolkit: *mut tn_toolkit) {
    // SAFETY: by contract NULL, or from hand_out in tn_toolkit_build with
    // its host reference not released yet.
    unsafe { handle::release(toolkit) }
}

/// Renders the toolkit (docs/CONTRACT.md §4): `format` is `openai`, `anthropic`,
/// `gemini`, `toolNames`, `skillsPrompt`, `tools`, `status`, `skills`,
/// `skillsInventory`, or JSON text `{"format": "openai", "tools": [names]}`
/// for exactly those tools in that order. `*out_json` receives the JSON (or
/// the error JSON); free it with `tn_string_free`.
///
/// Safe to call concurrently with `tn_render`, `tn_execute` and
/// `tn_translate` on the same toolkit.
///
/// # Safety
/// `toolkit` is NULL or a live toolkit; `format` is NULL or a NUL-terminated
/// string; `out_json` is NULL or points to a writable pointer.
#[no_mangle]
pub unsafe extern "C" fn tn_render(
    toolkit: *const tn_toolkit,
    format: *const c_char,
    out_json: *mut *mut c_char,
) -> tn_status {
    boundary(out_json, || {
        // SAFETY: forwarded from this function's contract.
        let tk = unsafe { read_toolkit(toolkit) }?;
        // SAFETY: as above.
        let format = unsafe { read_str(format, "format") }?;
        tk.render_bytes(format)
    })
}

/// Executes the tool `name` with `args_json` (a JSON object, or a JSON string
/// holding one; NULL means `{}`) and the optional `context_json`
/// (`{"timeoutMs": n, "answer": {...}}`, NULL for none). `*out_json` receives
/// the ToolResult JSON `{"output","isError","metadata"?}`. A tool that fails,
/// and an unknown name, are results with `isError: true` and status `TN_OK`.
///
/// Safe to call concurrently on the same toolkit; no lock is held while the
/// tool runs, so a host tool may call back into the library.
///
/// # Safety
/// `toolkit` is NULL or a live toolkit; the strings are NULL or
/// NUL-terminated; `out_json` is NULL or points to a writable pointer.
#[no_mangle]
pub unsafe extern "C" fn tn_execute(
    toolkit: *const tn_toolkit,
    name: *const c_char,
    args_json: *const c_char,
    context_json: *const c_char,
    out_json: *mut *mut c_char,
) -> tn_status {
    // SAFETY: forwarded from this function's contract; no token.
    unsafe {
        tn_execute_with_cancel(
            toolkit,
            name,
            args_json,
            context_json,
            std::ptr::null(),
            out_json,
        )
    }
}

/// `tn_execute` with a cancel token (nullable): triggering it from another
/// thread (`tn_cancel_trigger`) stops the call as its deadline would, with
/// the isError result `<tool>: cancelled` (metadata `{"error":"cancelled"}`)
/// and status `TN_OK`. A token triggered before the call makes it return
/// that result at once. Every cancelled result has metadata
/// `{"error":"cancelled"}`. Who notices, and what is ended:
/// - read, write, edit, grep, glob and apply_patch at their checkpoints;
/// - bash within about 20 ms: its whole process group gets SIGTERM, then
///   SIGKILL once it is gone or after 2,000 ms; the output written so far
///   comes back, followed by `command cancelled`;
/// - HTTP tools and webfetch at once: the request is dropped and its
///   connection closed;
/// - MCP tools at once: the server is sent `notifications/cancelled` for
///   the request (the output names the server); the session stays up;
/// - host tools: the caller stops waiting within about 10 ms and drops a
///   late answer; the callback sees `tn_call_cancelled`.
///
/// The toolkit stays usable. The token is borrowed for the call and may be
/// shared by many calls.
///
/// # Safety
/// As `tn_execute`; `cancel` is NULL or a live token from `tn_cancel_new`.
#[no_mangle]
pub unsafe extern "C" fn tn_execute_with_cancel(
    toolkit: *const tn_toolkit,
    name: *const c_char,
    args_json: *const c_char,
    context_json: *const c_char,
    cancel: *const tn_cancel,
    out_json: *mut *mut c_char,
) -> tn_status {
    boundary(out_json, || {
        // SAFETY: forwarded from this function's contract.
        let (tk, name, args, ctx) = unsafe {
            (
                read_toolkit(toolkit)?,
                read_str(name, "name")?,
                read_opt_str(args_json, "args_json")?,
                read_opt_str(context_json, "context_json")?,
            )
        };
        let tool = tk.find(name);
        let ctx = parse_context(ctx).map(|mut ctx| {
            // SAFETY: NULL or a live token (this function's contract).
            ctx.cancel = unsafe { cancel.as_ref() }.map(|c| c.token().clone());
            ctx
        });
        // A tool that writes its answer straight from the args text (the
        // `skill` tool) does, when nothing below would have stopped first.
        if let (Some(tool), Some(text), Ok(ctx)) = (&tool, args, &ctx) {
            if ctx.stop().is_none() {
                if let Some(answer) = tk.execute_found_text(tool, text, ctx) {
                    return Ok(answer);
                }
            }
        }
        let args = match args {
            None => serde_json::Value::Object(Default::default()),
            Some(text) => {
                serde_json::from_str(text).map_err(|e| Error::invalid_json("args_json", &e))?
            }
        };
        let ctx = ctx?;
        if let Some(why) = ctx.stop() {
            return Ok(ctx.stopped(name, why).into_json_bytes());
        }
        Ok(match tool {
            Some(tool) => tk.execute_found(&tool, args, &ctx),
            None => tk.execute(name, args, &ctx),
        }
        .into_json_bytes())
    })
}

/// The library version, e.g. "0.1.0". Static: never freed.
#[no_mangle]
pub extern "C" fn tn_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The ABI version (`TN_ABI_VERSION` of the header this library was built
/// with). A wrapper checks it at start-up.
#[no_mangle]
pub extern "C" fn tn_abi_version() -> u32 {
    TN_ABI_VERSION
}

/// The ABI version of this header. Must equal `tn_abi_version()` of the
/// library linked at run time; bumped whenever an exported signature or a
/// status number changes.
pub const TN_ABI_VERSION: u32 = 1;

#[cfg(test)]
use crate::quiet_panic;

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{CStr, CString};
    use std::ptr;

    use crate::ffi::test_take as take;

    fn error_code(text: &str) -> String {
        let v: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
        v["error"]["code"].as_str().unwrap_or_default().to_string()
    }

    #[test]
    fn a_panic_becomes_the_internal_status() {
        let mut out = ptr::null_mut();
        let status = quiet_panic::quietly(|| {
            boundary(&mut out, || -> Result<String, Error> { panic!("boom") })
        });
        assert_eq!(status, TN_INTERNAL);
        let text = take(out);
        assert_eq!(error_code(&text), "internal");
        assert!(text.contains("boom"), "{text}");
    }

    #[test]
    fn text_reaches_c_whole_and_a_stray_nul_is_replaced() {
        let big = "é\"x\"\n".repeat(50_000);
        assert_eq!(take(into_c_string(big.clone().into_bytes())), big);
        assert_eq!(take(into_c_string(b"a\0b\0".to_vec())), "a b ");
        assert_eq!(take(into_c_string(Vec::new())), "");
    }

    #[test]
    fn null_out_parameter_is_refused_without_running() {
        let mut ran = false;
        let status = boundary(ptr::null_mut(), || {
            ran = true;
            Ok(String::new())
        });
        assert_eq!(status, TN_NULL_ARGUMENT);
        assert!(!ran);
    }

    #[test]
    fn build_reports_null_utf8_json_and_config_errors() {
        let bad_utf8 = [b'{', 0xff, b'}', 0];
        let cases: [(*const c_char, tn_status, &str); 4] = [
            (ptr::null(), TN_NULL_ARGUMENT, "null_argument"),
            (bad_utf8.as_ptr().cast(), TN_INVALID_UTF8, "invalid_utf8"),
            (c"{not json".as_ptr(), TN_INVALID_JSON, "invalid_json"),
            (
                c"{\"nope\":1}".as_ptr(),
                TN_INVALID_CONFIG,
                "invalid_config",
            ),
        ];
        for (input, want, code) in cases {
            let mut tk = ptr::null_mut();
            let mut err = ptr::null_mut();
            // SAFETY: valid pointers to locals; input NULL or NUL-terminated.
            let status = unsafe { tn_toolkit_build(input, &mut tk, &mut err) };
            assert_eq!(status, want);
            assert!(tk.is_null());
            assert_eq!(error_code(&take(err)), code);
        }
    }

    #[test]
    fn build_render_execute_free_round_trip() {
        let mut tk = ptr::null_mut();
        let mut err = ptr::null_mut();
        let cfg = CString::new(r#"{"skills":[{"name":"s","description":"d","content":"c"}]}"#)
            .unwrap_or_default();
        // SAFETY: valid pointers to locals.
        assert_eq!(
            unsafe { tn_toolkit_build(cfg.as_ptr(), &mut tk, &mut err) },
            TN_OK
        );
        assert!(err.is_null());
        let mut out = ptr::null_mut();
        // SAFETY: live toolkit, NUL-terminated strings.
        assert_eq!(
            unsafe { tn_render(tk, c"toolNames".as_ptr(), &mut out) },
            TN_OK
        );
        assert!(take(out).contains("\"skill\""));
        // SAFETY: as above.
        assert_eq!(
            unsafe { tn_render(tk, c"yaml".as_ptr(), &mut out) },
            TN_UNKNOWN_FORMAT
        );
        assert_eq!(error_code(&take(out)), "unknown_format");
        // SAFETY: as above; args given as a JSON string holding an object.
        let status = unsafe {
            tn_execute(
                tk,
                c"skill".as_ptr(),
                c"\"{\\\"name\\\":\\\"s\\\"}\"".as_ptr(),
                ptr::null(),
                &mut out,
            )
        };
        assert_eq!(status, TN_OK);
        assert!(take(out).contains("<skill_content name=\\\"s\\\">"));
        // SAFETY: as above.
        let status =
            unsafe { tn_execute(tk, c"skill".as_ptr(), c"{".as_ptr(), ptr::null(), &mut out) };
        assert_eq!(status, TN_INVALID_JSON);
        assert_eq!(error_code(&take(out)), "invalid_json");
        // SAFETY: toolkit freed once; NULL free is a no-op.
        unsafe {
            tn_toolkit_free(tk);
            tn_toolkit_free(ptr::null_mut());
            tn_string_free(ptr::null_mut());
        }
    }

    /// `tn_execute` of the `skill` tool answers from the args text (no
    /// `Value`, no map); whatever the args, the skill, the sample limit, a
    /// context or a cancelled token, it hands out exactly the bytes and the
    /// status the parsed path gives.
    #[test]
    fn the_skill_tool_from_args_text_answers_as_the_parsed_path_does() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let root = tmp.path();
        let write = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap_or(root)).unwrap_or_default();
            std::fs::write(p, text).unwrap_or_default();
        };
        write(
            "a/plain/SKILL.md",
            "---\nname: plain\ndescription: d\n---\nSteps:\n1. run\n",
        );
        write("a/plain/scripts/run.sh", "x");
        write("a/plain/reference/notes.md", "x");
        write("a/plain/data.txt", "x");
        write(
            "a/odd \"dir\"/SKILL.md",
            "---\nname: odd\ndescription: d\n---\n\t\"quoted\" \\ back\u{1}\u{7f} h\u{e9} \u{1f600}\r\n",
        );
        write("a/odd \"dir\"/x\ty.txt", "x");
        write(
            "a/lonely/SKILL.md",
            "---\nname: lonely\ndescription: d\n---\nOnly me.",
        );
        let skills_dir = root.join("a").to_string_lossy().into_owned();
        let data = serde_json::json!([
            {"name": "data", "content": "from \"data\"", "resources": ["r1", "r\n2"]},
            {"name": "bare", "content": "no resources"}
        ]);
        let args = [
            "{\"name\":\"plain\"}",
            " { \"name\" : \"odd\" , \"extra\": [1, {\"x\": null}] } ",
            "{\"name\":\"pl\\u0061in\"}",
            "{\"name\":\"data\"}",
            "{\"name\":\"bare\"}",
            "{\"name\":\"lonely\"}",
            "{\"name\":\"missing\"}",
            "{\"name\":null}",
            "{\"name\":7}",
            "{\"name\":\"odd\",\"name\":\"plain\"}",
            "{}",
            "[]",
            "null",
            "\"{\\\"name\\\":\\\"plain\\\"}\"",
            "{\"name\":\"plain\"",
            "",
        ];
        for limit in [0, 1, -1] {
            let cfg = serde_json::json!({
                "skillsDir": skills_dir, "skills": data, "skillSampleLimit": limit,
                "builtins": false
            })
            .to_string();
            let cfg = CString::new(cfg).unwrap_or_default();
            let (mut tk, mut err) = (ptr::null_mut(), ptr::null_mut());
            // SAFETY: a NUL-terminated config and pointers to locals.
            assert_eq!(
                unsafe { tn_toolkit_build(cfg.as_ptr(), &mut tk, &mut err) },
                TN_OK
            );
            // SAFETY: the live toolkit just built.
            let toolkit = unsafe { read_toolkit(tk) }.unwrap_or_else(|e| panic!("{e}"));
            let tool = toolkit
                .find("skill")
                .unwrap_or_else(|| panic!("no skill tool"));
            let cancelled = tn_cancel_new();
            // SAFETY: a live token.
            unsafe { tn_cancel_trigger(cancelled) };
            for text in args {
                let c_args = CString::new(text).unwrap_or_default();
                for (ctx, cancel) in [
                    (None, ptr::null()),
                    (Some(c"{\"timeoutMs\":60000}"), ptr::null()),
                    (Some(c"[]"), ptr::null()),
                    (None, cancelled.cast_const()),
                ] {
                    let mut out = ptr::null_mut();
                    // SAFETY: live toolkit and token, NUL-terminated strings.
                    let status = unsafe {
                        tn_execute_with_cancel(
                            tk,
                            c"skill".as_ptr(),
                            c_args.as_ptr(),
                            ctx.map_or(ptr::null(), CStr::as_ptr),
                            cancel,
                            &mut out,
                        )
                    };
                    let got = take(out);
                    // The parsed path, as tn_execute took it before.
                    let want = (|| -> Result<Vec<u8>, Error> {
                        let args: serde_json::Value = serde_json::from_str(text)
                            .map_err(|e| Error::invalid_json("args_json", &e))?;
                        let mut ctx = parse_context(ctx.and_then(|c| c.to_str().ok()))?;
                        // SAFETY: NULL or the live token.
                        ctx.cancel = unsafe { cancel.as_ref() }.map(|c| c.token().clone());
                        if let Some(why) = ctx.stop() {
                            return Ok(ctx.stopped("skill", why).into_json_bytes());
                        }
                        Ok(toolkit.execute("skill", args, &ctx).into_json_bytes())
                    })();
                    let (want_status, want) = match want {
                        Ok(b) => (TN_OK, String::from_utf8_lossy(&b).into_owned()),
                        Err(e) => (status_of(e.code), e.to_json().to_string()),
                    };
                    assert_eq!((status, &got), (want_status, &want), "{text} {ctx:?}");
                }
            }
            // The plain case does take the text path; an unknown skill does not.
            let direct = tool
                .exec
                .execute_json_text(args[0], &crate::tool::ExecContext::default());
            assert!(direct.is_some_and(|b| b.capacity() > b.len()));
            assert!(tool
                .exec
                .execute_json_text(args[6], &crate::tool::ExecContext::default())
                .is_none());
            // SAFETY: freed once each.
            unsafe {
                tn_cancel_free(cancelled);
                tn_toolkit_free(tk);
            }
        }
    }

    #[test]
    fn version_matches_the_crate() {
        // SAFETY: a static NUL-terminated string.
        let v = unsafe { CStr::from_ptr(tn_version()) };
        assert_eq!(v.to_str().ok(), Some(env!("CARGO_PKG_VERSION")));
        assert_eq!(tn_abi_version(), TN_ABI_VERSION);
    }
}
