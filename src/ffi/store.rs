//! Host stores (issue 27): a host's own place for A2A tasks, conversations
//! and checkpoints, registered under a name and chosen wherever a store
//! selector is accepted as `host:<name>`.

use super::client::{tn_callback, HostCallback, Pooled, Until};
use super::{boundary_status, read_opt_str, read_str, tn_status, tn_user_data_free};
use crate::client::RunData;
use crate::error::{Error, ErrorCode};
use crate::store::{self, Kind, Store};
use serde_json::{json, Value};
use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long an operation waits for a host store's callback unless the
/// registration says otherwise (`timeoutMs`).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A store whose every get, save and delete is one call of the host's
/// callback, answered through `tn_reply_set_json` / `tn_reply_set_error`,
/// within `timeout`.
struct HostStore {
    name: String,
    host: Arc<HostCallback>,
    timeout: Duration,
}

impl HostStore {
    /// One call on a pooled thread, awaited at most `timeout`: the event
    /// in, the answer (or the failure, as a sentence naming the store and
    /// the operation) out. A callback that answers late has its answer
    /// dropped.
    fn call(&self, op: &str, event: &Value) -> Result<Option<Value>, String> {
        let deadline = Instant::now() + self.timeout;
        let past = || Instant::now() >= deadline;
        let until = Until {
            token: None,
            deadline: Some(deadline),
            stopped: &past,
        };
        let failed = |m: &str| format!("store \"host:{}\": {op} failed: {m}", self.name);
        match self.host.call_pooled(event, RunData(0), until) {
            Pooled::Answered(answer) => answer.map_err(|m| failed(&m)),
            Pooled::Abandoned => Err(format!(
                "store \"host:{}\": {op} did not answer within {} ms",
                self.name,
                self.timeout.as_millis()
            )),
            Pooled::NoThread => Err(failed("cannot start a thread to run the callback")),
        }
    }

    fn no_answer(&self, op: &str, expected: &str) -> String {
        format!(
            "store \"host:{}\": {op} set no valid answer (expected {expected})",
            self.name
        )
    }
}

impl Store for HostStore {
    fn get(&self, kind: Kind, id: &str) -> Result<Option<Value>, String> {
        let event = json!({"op": "get", "kind": kind.as_str(), "id": id});
        match self.call("get", &event)? {
            None => Err(self.no_answer("get", "the record, or null for an unknown id")),
            Some(Value::Null) => Ok(None),
            Some(record) => Ok(Some(record)),
        }
    }

    fn save(&self, kind: Kind, id: &str, record: &Value) -> Result<(), String> {
        let event = json!({"op": "save", "kind": kind.as_str(), "id": id, "record": record});
        self.call("save", &event).map(|_| ())
    }

    fn delete(&self, kind: Kind, id: &str) -> Result<bool, String> {
        let event = json!({"op": "delete", "kind": kind.as_str(), "id": id});
        match self.call("delete", &event)? {
            Some(Value::Bool(found)) => Ok(found),
            _ => Err(self.no_answer("delete", "true or false")),
        }
    }

    fn selector(&self) -> String {
        format!("host:{}", self.name)
    }
}

/// Registers a host store under `name`: from now on the selector
/// `"host:<name>"` names it, in this process: the A2A block's `"store"`
/// of `tn_serve_with_client`, a client's `"store"` key (`tn_ask`'s
/// conversations). `callback` is called for every
/// operation with one event JSON and answers through `tn_reply_set_json`
/// (the library copies the answer; nothing the host allocates crosses the
/// boundary) or fails through `tn_reply_set_error`:
///
/// - `{"op":"get","kind","id"}`: answer the record saved under (kind, id),
///   or `null` for one never saved. Setting no answer (or an answer that
///   did not parse) is an error;
/// - `{"op":"save","kind","id","record"}`: keep `record` (any JSON value)
///   under (kind, id), replacing what was there; any answer or none is a
///   success. The library acknowledges what it saved, so a save should
///   return once the record is durable;
/// - `{"op":"delete","kind","id"}`: forget the record; answer `true` when
///   there was one, `false` when not. Anything else is an error.
///
/// `kind` is `"task"`, `"conversation"` or `"checkpoint"`; ids are unique
/// per kind. A failure (`tn_reply_set_error`, a missing or wrong answer) is
/// reported by the operation that needed the store as an error naming it:
/// `store "host:<name>": get failed: <message>`. The callback may run on
/// any thread, concurrently (a thread of the library's); no lock is held
/// while it runs, so it may call back into the library.
///
/// The operation waits for the callback at most 30 s (`timeoutMs` of
/// `tn_store_register_with` sets another wait): past it the operation
/// fails with `store "host:<name>": get did not answer within 30000 ms`,
/// the callback's late answer is dropped, and `tn_reply_cancelled` turns
/// true for it; it keeps `user_data` alive until it returns.
///
/// `user_data_free` (nullable) runs once, when the store is released: after
/// `tn_store_unregister` and the end of the last server or agent using it
/// (and of the last callback still running past its wait),
/// or at once when this call fails. A name already registered is
/// `TN_INVALID_ARGUMENT` (unregister it first), as is an empty one; a NULL
/// callback `TN_NULL_ARGUMENT`. `*out_error` (nullable) receives the error
/// JSON, or NULL on success.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `out_error` is NULL or writable;
/// `callback` and `user_data` must be usable from any thread until
/// `user_data_free` runs.
#[no_mangle]
pub unsafe extern "C" fn tn_store_register(
    name: *const c_char,
    callback: tn_callback,
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
    out_error: *mut *mut c_char,
) -> tn_status {
    // SAFETY: forwarded from this function's contract (no options).
    unsafe {
        tn_store_register_with(
            name,
            std::ptr::null(),
            callback,
            user_data,
            user_data_free,
            out_error,
        )
    }
}

/// `tn_store_register` with options: `options_json` is NULL (the
/// defaults) or `{"timeoutMs"?: n}`, how long an operation waits for the
/// callback, in milliseconds (1 to 86,400,000; default 30,000). Options
/// that do not parse are `TN_INVALID_JSON`, an unknown key or a bad value
/// `TN_INVALID_ARGUMENT`; `user_data_free` then runs before this returns.
///
/// # Safety
/// As `tn_store_register`; `options_json` is NULL or NUL-terminated
/// (borrowed for the call).
#[no_mangle]
pub unsafe extern "C" fn tn_store_register_with(
    name: *const c_char,
    options_json: *const c_char,
    callback: tn_callback,
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
    out_error: *mut *mut c_char,
) -> tn_status {
    // Owned first, so that every path below releases user_data once.
    let host = HostCallback::adopt(callback, user_data, user_data_free);
    boundary_status(out_error, move || {
        // SAFETY: forwarded from this function's contract.
        let (name, options) = unsafe {
            (
                read_str(name, "name")?,
                read_opt_str(options_json, "options_json")?,
            )
        };
        let timeout = store_timeout(options)?;
        let Some(host) = host else {
            return Err(Error::new(
                ErrorCode::NullArgument,
                "callback is NULL: a host store needs its callback",
            ));
        };
        let store = HostStore {
            name: name.to_string(),
            host: Arc::new(host),
            timeout,
        };
        store::register(name, Arc::new(store))
    })
}

/// The longest wait `timeoutMs` may ask for: a day.
const MAX_TIMEOUT_MS: u64 = 86_400_000;

/// The wait `tn_store_register_with`'s options ask for.
fn store_timeout(options: Option<&str>) -> Result<Duration, Error> {
    let Some(text) = options else {
        return Ok(DEFAULT_TIMEOUT);
    };
    let v: Value =
        serde_json::from_str(text).map_err(|e| Error::invalid_json("options_json", &e))?;
    let Value::Object(map) = v else {
        return Err(Error::invalid_argument(
            "options_json: expected an object like {\"timeoutMs\": 5000}",
        ));
    };
    let mut timeout = DEFAULT_TIMEOUT;
    for (key, val) in &map {
        match key.as_str() {
            "timeoutMs" => match val.as_u64() {
                Some(ms @ 1..=MAX_TIMEOUT_MS) => timeout = Duration::from_millis(ms),
                _ => {
                    return Err(Error::invalid_argument(format!(
                        "options_json: timeoutMs: expected milliseconds from 1 to \
                         {MAX_TIMEOUT_MS}, got {val}"
                    )))
                }
            },
            other => {
                return Err(Error::invalid_argument(format!(
                    "options_json: unknown key '{other}' (expected timeoutMs)"
                )))
            }
        }
    }
    Ok(timeout)
}

/// Forgets the host store registered as `name`: new selectors
/// `"host:<name>"` are refused from now on (until a store is registered
/// under it again), while servers already using it keep it until they end;
/// its `user_data_free` runs once the last of them is done. An unknown name
/// is `TN_INVALID_ARGUMENT`. `*out_error` (nullable) as `tn_store_register`.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `out_error` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tn_store_unregister(
    name: *const c_char,
    out_error: *mut *mut c_char,
) -> tn_status {
    boundary_status(out_error, || {
        // SAFETY: forwarded from this function's contract.
        let name = unsafe { read_str(name, "name") }?;
        if store::unregister(name) {
            Ok(())
        } else {
            Err(Error::invalid_argument(format!(
                "no host store is registered as {}",
                serde_json::to_string(name).unwrap_or_default()
            )))
        }
    })
}
