//! `tn_translate`, `tn_count_tokens`, their cancel token, and the pure
//! helpers by name.

use super::{boundary, read_opt_str, read_str, tn_status, tn_toolkit};
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::translate;
use serde_json::Value;
use std::ffi::{c_char, c_void, CString};

/// A cancel token for `tn_translate`: trigger it from any thread to abort
/// the call that was given it (status `TN_CANCELLED`). Freed with
/// `tn_cancel_free`.
#[allow(non_camel_case_types)]
pub struct tn_cancel {
    token: CancelToken,
}

impl tn_cancel {
    /// The token, for the other entry points that take one.
    pub(crate) fn token(&self) -> &CancelToken {
        &self.token
    }
}

/// A new, untriggered cancel token. Never NULL.
#[no_mangle]
pub extern "C" fn tn_cancel_new() -> *mut tn_cancel {
    Box::into_raw(Box::new(tn_cancel {
        token: CancelToken::new(),
    }))
}

/// Triggers the token: a `tn_translate` or `tn_run` running with it returns
/// `TN_CANCELLED` promptly. Safe from any thread, any number of times. NULL
/// is a no-op.
///
/// # Safety
/// `cancel` is NULL or a live token.
#[no_mangle]
pub unsafe extern "C" fn tn_cancel_trigger(cancel: *const tn_cancel) {
    if !cancel.is_null() {
        // SAFETY: non-NULL and live by contract.
        unsafe { (*cancel).token.cancel() };
    }
}

/// Frees a token. NULL is a no-op; not twice. A call that was given the
/// token keeps its own reference to it, so freeing it while such a call
/// runs (from one of its callbacks, or another thread) is safe: the call
/// simply can no longer be cancelled through it.
///
/// # Safety
/// `cancel` is NULL or a token from `tn_cancel_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn tn_cancel_free(cancel: *mut tn_cancel) {
    if !cancel.is_null() {
        // SAFETY: from Box::into_raw in tn_cancel_new, freed once.
        drop(unsafe { Box::from_raw(cancel) });
    }
}

fn parse(text: &str, what: &str) -> Result<Value, Error> {
    serde_json::from_str(text).map_err(|e| Error::invalid_json(what, &e))
}

/// One OpenAI-shaped chat request in, one provider call (plus retries), one
/// OpenAI-shaped result out (docs/CONTRACT.md §6). `toolkit` (nullable) is
/// declared before `request.tools` and never executed; `cancel` (nullable)
/// aborts the call from another thread. `*out_json` receives
/// `{text, toolCalls, finishReason, usage, model, raw}` or the error JSON
/// (`provider_error`, `timeout`, `cancelled`, `invalid_config`, ...). When
/// the provider answered with an error status, `error` also holds `status`
/// (the HTTP status), `body` (its body, redacted; empty for 401/403) and
/// `retryAfter` (the raw header, or null). `timeoutMs` bounds the whole
/// call, retries and backoffs included.
///
/// Safe to call concurrently from many threads; connections are pooled.
///
/// # Safety
/// Strings are NULL or NUL-terminated; `toolkit` and `cancel` are NULL or
/// live; `out_json` is NULL or points to a writable pointer.
#[no_mangle]
pub unsafe extern "C" fn tn_translate(
    client_json: *const c_char,
    request_json: *const c_char,
    toolkit: *const tn_toolkit,
    cancel: *const tn_cancel,
    out_json: *mut *mut c_char,
) -> tn_status {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        one_call(
            [client_json, request_json],
            toolkit,
            cancel,
            out_json,
            translate::translate_json,
        )
    }
}

/// Token counting: how many input tokens the client's provider counts for
/// `request_json`, `tn_translate`'s OpenAI-shaped request (`toolkit`,
/// nullable, declared before `request.tools`), asked of the style's
/// counting endpoint: anthropic `POST …/v1/messages/count_tokens`, gemini
/// `POST …/models/{model}:countTokens`, responses and openai `POST
/// {baseUrl}/responses/input_tokens` (the chat style sends the request as
/// the Responses style writes it). The body is what `tn_translate` would
/// send, less the keys the counting endpoint refuses (`max_tokens`,
/// `stream`, sampling parameters). `*out_json` receives `{inputTokens,
/// style, model}` (and `upstream` for a client with `upstreams`) or the
/// error JSON, as `tn_translate`'s: `provider_error` with `status`, `body`
/// and `retryAfter` for an error status, `timeout`, `cancelled`,
/// `invalid_config`, ... Retries, `timeoutMs`, `cancel` and failover work
/// as in `tn_translate`.
///
/// Safe to call concurrently from many threads; connections are pooled.
///
/// # Safety
/// Strings are NULL or NUL-terminated; `toolkit` and `cancel` are NULL or
/// live; `out_json` is NULL or points to a writable pointer.
#[no_mangle]
pub unsafe extern "C" fn tn_count_tokens(
    client_json: *const c_char,
    request_json: *const c_char,
    toolkit: *const tn_toolkit,
    cancel: *const tn_cancel,
    out_json: *mut *mut c_char,
) -> tn_status {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        one_call(
            [client_json, request_json],
            toolkit,
            cancel,
            out_json,
            translate::count_tokens_json,
        )
    }
}

/// What `tn_translate` and `tn_count_tokens` share: the strings read, the
/// client parsed, the toolkit's declarations, the cancel token's own
/// reference, then `call` under the boundary.
///
/// # Safety
/// As `tn_translate`'s.
unsafe fn one_call(
    [client_json, request_json]: [*const c_char; 2],
    toolkit: *const tn_toolkit,
    cancel: *const tn_cancel,
    out_json: *mut *mut c_char,
    call: fn(
        &serde_json::Value,
        &str,
        &[serde_json::Value],
        Option<&crate::cancel::CancelToken>,
    ) -> crate::error::Result<String>,
) -> tn_status {
    boundary(out_json, || {
        // SAFETY: forwarded from this function's contract.
        let (client, request) = unsafe {
            (
                read_str(client_json, "client_json")?,
                read_str(request_json, "request_json")?,
            )
        };
        let client = parse(client, "client_json")?;
        let declared = if toolkit.is_null() {
            Vec::new()
        } else {
            // SAFETY: non-NULL and live by contract.
            unsafe { super::read_toolkit(toolkit) }?.openai_declarations()
        };
        // The call's own reference: the host may free its token meanwhile.
        // SAFETY: NULL or live by contract.
        let token = unsafe { cancel.as_ref() }.map(|c| c.token.clone());
        call(&client, request, &declared, token.as_ref())
    })
}

/// Gets each chunk of `tn_translate_stream`: one whole server-sent event
/// (`data: {...}\n\n`, or `data: [DONE]\n\n` last), NUL-terminated and
/// borrowed for the call. Returns 0 to go on, anything else to stop the
/// stream (the call then returns `TN_CANCELLED`). Runs on the calling
/// thread, in order.
#[allow(non_camel_case_types)]
pub type tn_chunk_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, chunk: *const c_char) -> i32>;

/// Streaming translate: `tn_translate`'s request sent as a streamed
/// provider call (any `style`), its answer handed to `on_chunk` as it
/// arrives, re-told as OpenAI `chat.completion.chunk` server-sent events:
/// one stable `id`, the role first, each tool call started with `index`,
/// `id`, `type` and `function.name`, then argument fragments by `index`,
/// `finish_reason` on the last choice chunk only, a `usage` chunk with
/// `choices: []`, then `data: [DONE]`; thinking as `reasoning_content`.
/// Nothing is retried once any of the answer arrived. `*out_json`
/// receives `{id, finishReason, chunks}` or the error JSON (an error after
/// chunks were sent ends the stream without `[DONE]`).
///
/// # Safety
/// Strings are NULL or NUL-terminated; `toolkit` and `cancel` are NULL or
/// live; `on_chunk` is a function that may be called with `user_data` on
/// this thread; `out_json` is NULL or points to a writable pointer.
#[no_mangle]
pub unsafe extern "C" fn tn_translate_stream(
    client_json: *const c_char,
    request_json: *const c_char,
    toolkit: *const tn_toolkit,
    cancel: *const tn_cancel,
    on_chunk: tn_chunk_callback,
    user_data: *mut c_void,
    out_json: *mut *mut c_char,
) -> tn_status {
    boundary(out_json, || {
        // SAFETY: forwarded from this function's contract.
        let (client, request) = unsafe {
            (
                read_str(client_json, "client_json")?,
                read_str(request_json, "request_json")?,
            )
        };
        let Some(callback) = on_chunk else {
            return Err(Error::invalid_argument("on_chunk is NULL"));
        };
        let client = parse(client, "client_json")?;
        let declared = if toolkit.is_null() {
            Vec::new()
        } else {
            // SAFETY: non-NULL and live by contract.
            unsafe { super::read_toolkit(toolkit) }?.openai_declarations()
        };
        // SAFETY: NULL or live by contract.
        let token = unsafe { cancel.as_ref() }.map(|c| c.token.clone());
        let mut emit = |chunk: &str| -> bool {
            // JSON text and the SSE framing hold no NUL byte.
            let Ok(text) = CString::new(chunk) else {
                return false;
            };
            // SAFETY: the host's callback with its own user_data, on this
            // thread; the chunk outlives the call.
            unsafe { callback(user_data, text.as_ptr()) == 0 }
        };
        translate::translate_stream_json(&client, request, &declared, token.as_ref(), &mut emit)
            .map(|v| v.to_string())
    })
}

/// Calls one of the pure translate helpers by its conformance name
/// (`sanitize`, `finishReasonFor`, `contentText`, `argsObject`,
/// `argsString`, `toolCallsOf`, `hasSystemMessage`,
/// `openaiToolChoiceToAnthropic`, `openaiToolsToAnthropic`,
/// `toolCallsJson`, `openaiMessagesToAnthropic`) with a JSON array of
/// positional arguments (NULL means none). For conformance runs.
///
/// Also builds SPEC §10 answers for `tn_execute`'s context `answer`:
/// `answerOutput` `[id, output]` gives `{"id","ok":true,"data":{"output"}}`
/// (`output` must be a string, else `TN_INVALID_ARGUMENT`), and
/// `answerDeclined` `[id, reason?]` gives `{"id","ok":false,"reason"}`
/// (`reason` one of `declined` (the default), `cancelled`, `expired`).
///
/// # Safety
/// Strings are NULL or NUL-terminated; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tn_helper(
    name: *const c_char,
    args_json: *const c_char,
    out_json: *mut *mut c_char,
) -> tn_status {
    boundary(out_json, || {
        // SAFETY: forwarded from this function's contract.
        let (name, args) = unsafe {
            (
                read_str(name, "name")?,
                read_opt_str(args_json, "args_json")?,
            )
        };
        let args = match args {
            None => Vec::new(),
            Some(text) => match parse(text, "args_json")? {
                Value::Array(a) => a,
                _ => {
                    return Err(Error::invalid_argument(
                        "args_json: expected a JSON array of positional arguments",
                    ))
                }
            },
        };
        translate::call_helper(name, &args).map(|v| v.to_string())
    })
}
