//! What a client offers beyond `tn_run` (SPEC §8): `tn_ask` and `tn_stream`
//! over the conversation store, the in-process client built around a host
//! `generate` callback, the ACP client (an agent over stdio as the model),
//! and `tn_client_metrics`.

use super::client::{read_client, tn_callback, tn_client, HostCallback, RunInputs};
use super::translate::tn_cancel;
use super::{boundary, tn_status, tn_toolkit, tn_user_data_free};
use crate::client::{AskRequest, Client, HostFn, RunData};
use crate::error::{Error, ErrorCode};
use serde_json::Value;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// Builds an in-process client (SPEC §8 In-process models): its turns are
/// answered by `generate` instead of an HTTP endpoint, so the loop runs with
/// no network at all. `client_json` = `{model, systemPrompt?, maxTurns?,
/// retries?, timeoutMs?, requestParams?, store?}` (`store` as in
/// `tn_client_new`) — no `baseUrl`, `style`, `apiKey` or `headers`. Messages are OpenAI-shaped.
///
/// `generate` is called once per turn with `{model, messages, tools, turn,
/// params?}` (the transcript so far, the toolkit's OpenAI declarations) and
/// answers through `tn_reply_set_json` with one assistant message:
/// `{"content": "..."}` or `{"toolCalls": [{"id"?, "name", "arguments"}]}`
/// (arguments an object or a JSON string), plus an optional `"usage":
/// {promptTokens, completionTokens, totalTokens?}`. `tn_reply_set_error`
/// (or no answer) fails the turn: final, unless an `onError` callback
/// answers `"retry"` (bounded by `retries`); the run then ends with
/// `TN_CALLBACK_ERROR`. It may run on any thread, for many runs at once.
///
/// Every other slot works as on an HTTP client; streaming does not (a
/// generate function returns whole answers): `tn_stream` fails with
/// `TN_INVALID_ARGUMENT`. `user_data_free` (nullable) runs once, when the
/// client is freed — also when this call fails. Out-parameters as
/// `tn_client_new`.
///
/// # Safety
/// `client_json` is NULL or NUL-terminated; the out-pointers are NULL or
/// writable; `generate` and `user_data` must be usable from any thread
/// until the client is freed.
#[no_mangle]
pub unsafe extern "C" fn tn_client_new_in_process(
    client_json: *const c_char,
    generate: tn_callback,
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
    out_client: *mut *mut tn_client,
    out_error: *mut *mut c_char,
) -> tn_status {
    // Owned first, so that every path below releases user_data once.
    let host = HostCallback::adopt(generate, user_data, user_data_free);
    let make = |v: &Value| {
        let Some(host) = host else {
            return Err(Error::new(
                ErrorCode::NullArgument,
                "generate is NULL: an in-process client needs its generate callback",
            ));
        };
        let host = Arc::new(host);
        let generate: HostFn =
            Arc::new(move |event: &Value, data: RunData| host.call_in_run(event, data));
        Client::in_process(v, generate)
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { super::client::new_client(client_json, out_client, out_error, make) }
}

/// Builds a client whose model is an Agent Client Protocol agent: a child
/// process spoken to over its stdin and stdout (JSON-RPC, one object per
/// line), started and handshaken here (`initialize`, `session/new` with an
/// absolute `cwd` and no MCP servers, `session/set_mode` when `mode` is
/// given; 30 s each at most). `acp_json` = `{command, args?, cwd?, env?,
/// protocolVersion?, permissionTimeoutMs?, mode?, model?, systemPrompt?,
/// maxTurns?}`: `env` is set on top of this process's environment, `cwd`
/// (default: the current directory) is made absolute, `protocolVersion`
/// defaults to 1, `permissionTimeoutMs` (default 5000) bounds each turn,
/// `model` (default `"acp"`) names the model in metrics. Unknown keys and
/// values of the wrong type are `TN_INVALID_CONFIG` naming the key; an agent
/// that cannot be started or fails the handshake is `TN_PROVIDER_ERROR`
/// (`TN_TIMEOUT` when a handshake call takes too long).
///
/// Each turn of a run is one `session/prompt` on the one warm session
/// (turns of concurrent runs take their turn): the transcript rendered as
/// one `<role>: <text>` line per message with text, then
/// `SUPERSEDES-ALL-PRIOR: <the last user text>`. Only the agent's message
/// chunks make the answer; permission requests are answered at once (the
/// first `allow` option). A turn with no reply within the permission
/// timeout fails `TN_TIMEOUT`, a JSON-RPC error `TN_PROVIDER_ERROR` (`acp
/// error <code>: <message>`), an agent that exits `TN_PROVIDER_ERROR` (`acp:
/// child process closed the connection`); a cancelled run sends
/// `session/cancel`. No streaming (`tn_stream` fails with
/// `TN_INVALID_ARGUMENT`). `tn_client_free` ends the agent (stdin closed,
/// SIGTERM, SIGKILL after 5 s). Out-parameters as `tn_client_new`.
///
/// # Safety
/// `acp_json` is NULL or NUL-terminated; the out-pointers are NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tn_client_new_acp(
    acp_json: *const c_char,
    out_client: *mut *mut tn_client,
    out_error: *mut *mut c_char,
) -> tn_status {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        super::client::new_client_named(acp_json, "acp_json", out_client, out_error, Client::acp)
    }
}

/// The client's metrics as Prometheus text (SPEC §8 Observability), byte
/// for byte as every toolnexus port renders it: `toolnexus_llm_requests_total
/// {model,status}`, `toolnexus_llm_tokens_total{type}`,
/// `toolnexus_llm_request_duration_seconds{model}`, `toolnexus_tool_calls_total
/// {tool,source,is_error,pending}`, `toolnexus_tool_duration_seconds{tool}`,
/// `toolnexus_run_errors_total{model}`, each with `# HELP`/`# TYPE`, ending
/// in a newline. `*out_text` receives the text (not JSON) or the error JSON;
/// free it with `tn_string_free`. Safe while runs are under way.
///
/// # Safety
/// `client` is NULL or live; `out_text` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tn_client_metrics(
    client: *const tn_client,
    out_text: *mut *mut c_char,
) -> tn_status {
    boundary(out_text, || {
        // SAFETY: forwarded from this function's contract.
        let client = unsafe { read_client(client) }?;
        Ok(client.metrics_text())
    })
}

/// SPEC §8 `ask`: `ask_json` = `{prompt, id?, history?}`. With `id`, the
/// transcript kept under it (the client's in-memory store, or the host's
/// through the `storeGet`/`storeSave` slots) is the run's history, and the
/// run's `messages` are saved back under it; without, a stateless run
/// (`history` as in `tn_run`). `stream` true streams the provider's answer
/// and sends the run's events to the `onEvent` slot (`ask` with `on_text`:
/// the `text` events carry the deltas). `*out_json` receives the RunResult
/// or the error JSON, as `tn_run`.
///
/// `storeGet` is called with `{"id"}` and answers the messages array (or
/// null, or nothing, for an id never saved); `storeSave` with `{"id",
/// "messages"}`. Set both or neither.
///
/// # Safety
/// As `tn_run`.
#[no_mangle]
pub unsafe extern "C" fn tn_ask(
    client: *const tn_client,
    toolkit: *const tn_toolkit,
    ask_json: *const c_char,
    stream: bool,
    cancel: *const tn_cancel,
    run_data: *mut c_void,
    out_json: *mut *mut c_char,
) -> tn_status {
    boundary(out_json, || {
        // SAFETY: forwarded from this function's contract.
        let run = unsafe { RunInputs::read(client, toolkit, ask_json, cancel, "ask_json") }?;
        let request = AskRequest::from_json(&run.request)?;
        let data = RunData(run_data as usize);
        let out = run
            .client
            .ask(run.toolkit(), &request, &run.cancel, data, stream)?;
        Ok(out.to_string())
    })
}

/// SPEC §8 `stream`: the loop with the provider's answers streamed, each
/// event of the run sent as JSON to the `onEvent` slot as it happens, one
/// at a time, in order:
///
/// - `{"type":"text","delta"}` — a piece of assistant text
/// - `{"type":"tool_call","id","name","args"}` — a tool about to run
/// - `{"type":"tool_result","id","name","output","isError"}` — after it ran
/// - `{"type":"pending","request"}` — a tool suspended (SPEC §10), before
///   `waitFor` is asked (or the run halts)
/// - `{"type":"usage","usage"}` then `{"type":"done","result"}` — the end
///
/// `request_json` = `{prompt, id?, history?}` as `tn_ask` (an `id` loads
/// and saves the transcript; it is saved before `done`). An `onEvent` that
/// calls `tn_reply_set_error` ends the run with `TN_CALLBACK_ERROR`.
/// `*out_json` receives the RunResult (the `done` event's) or the error
/// JSON, as `tn_run`. OpenAI-style providers are asked for
/// `stream_options.include_usage`; Anthropic's `content_block_*` and
/// `message_delta` events are assembled.
///
/// # Safety
/// As `tn_run`.
#[no_mangle]
pub unsafe extern "C" fn tn_stream(
    client: *const tn_client,
    toolkit: *const tn_toolkit,
    request_json: *const c_char,
    cancel: *const tn_cancel,
    run_data: *mut c_void,
    out_json: *mut *mut c_char,
) -> tn_status {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        tn_ask(
            client,
            toolkit,
            request_json,
            true,
            cancel,
            run_data,
            out_json,
        )
    }
}
