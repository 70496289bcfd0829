//! Host functions as tools (docs/CONTRACT.md §7): a C function pointer with its
//! `user_data`, called with the args JSON, answering through `tn_call_set_*`.

use super::{
    boundary, read_opt_str, read_str, read_toolkit, tn_status, tn_toolkit, TN_INVALID_JSON,
};
use super::{TN_INVALID_ARGUMENT, TN_INVALID_UTF8, TN_NULL_ARGUMENT, TN_OK};
use crate::error::Error;
use crate::tool::{ExecContext, Execute, Source, Tool, ToolResult};
use serde_json::Value;
use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

/// Where a host tool puts its result. Valid only during the callback that
/// received it; the library copies what it is given.
#[allow(non_camel_case_types)]
pub struct tn_call {
    result: Option<ToolResult>,
}

/// A host tool: called with its `user_data`, the args JSON (borrowed for the
/// call) and the `tn_call` to answer through. May run on any thread, and
/// concurrently; it may call back into the library.
#[allow(non_camel_case_types)]
pub type tn_tool_callback = Option<
    unsafe extern "C" fn(user_data: *mut c_void, args_json: *const c_char, call: *mut tn_call),
>;

/// Releases a host tool's `user_data` when the toolkit is freed.
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

impl Execute for HostFn {
    fn execute(&self, args: &Value, _ctx: &ExecContext) -> ToolResult {
        let mut buf = Vec::with_capacity(64);
        // Writing a Value into a Vec cannot fail; JSON text holds no NUL byte.
        let _ = serde_json::to_writer(&mut buf, args);
        let text = CString::new(buf).unwrap_or_default();
        let mut call = tn_call { result: None };
        // SAFETY: the callback is the host's registered function; the args
        // string and `call` outlive the call.
        unsafe { (self.callback)(self.user_data, text.as_ptr(), &mut call) };
        call.result.unwrap_or_else(|| {
            ToolResult::error(format!("{}: the host tool set no result", self.name))
        })
    }
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
            unsafe { (*call).result = Some(r) };
            TN_OK
        }
        Err(e) if e.code == crate::error::ErrorCode::NullArgument => TN_NULL_ARGUMENT,
        Err(_) => TN_INVALID_UTF8,
    }
}

/// Sets a host tool's result from a full ToolResult JSON
/// `{"output": string, "isError"?: bool, "metadata"?: object}` (copied).
/// Returns `TN_INVALID_JSON` for text that does not parse and
/// `TN_INVALID_ARGUMENT` for JSON of another shape.
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
    match ToolResult::from_json(&v) {
        Some(r) => {
            // SAFETY: non-NULL and live during the callback.
            unsafe { (*call).result = Some(r) };
            TN_OK
        }
        None => TN_INVALID_ARGUMENT,
    }
}

/// Registers a host function as the tool `name` (source `native`), replacing
/// an earlier host tool of that name. MCP tools of the same name still win;
/// `disableTools` still applies. `input_schema_json` NULL means
/// `{"type":"object"}`. `user_data_free` (nullable) runs once when the
/// toolkit is freed — also when registration fails, so the caller never
/// frees `user_data` itself after this call. On failure `*out_error` holds
/// the error JSON (free with `tn_string_free`), else NULL.
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
            Arc::new(host),
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
