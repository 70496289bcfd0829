//! The host's log callback (CONTRACT §1: diagnostics go to an optional host
//! log callback, off by default).

use super::tn_user_data_free;
use crate::log::{self, Level};
use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

/// A log callback: `level` 1 error, 2 warn, 3 info, 4 debug; `target` the
/// subsystem (`mcp`, `http`, `translate`, `skills`, `client`); `message` one
/// line of text. Both strings are borrowed for the call only. It may run on
/// any thread, concurrently, and may call back into the library (but not
/// `tn_log_set`, which waits for no one and would only take effect later).
#[allow(non_camel_case_types)]
pub type tn_log_callback = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        level: i32,
        target: *const c_char,
        message: *const c_char,
    ),
>;

struct HostLogger {
    callback: unsafe extern "C" fn(*mut c_void, i32, *const c_char, *const c_char),
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
}

// SAFETY: the host promises the callback may be called from any thread with
// this user_data (the contract of tn_log_set).
unsafe impl Send for HostLogger {}
unsafe impl Sync for HostLogger {}

impl Drop for HostLogger {
    fn drop(&mut self) {
        if let Some(free) = self.user_data_free {
            // SAFETY: registered by the host for this user_data; runs once,
            // when the last message that could use it has been delivered.
            unsafe { free(self.user_data) };
        }
    }
}

impl HostLogger {
    fn deliver(&self, level: Level, target: &str, message: &str) {
        // Text with a NUL inside cannot cross as C text: it is cut there.
        let c =
            |s: &str| CString::new(s.split('\0').next().unwrap_or_default()).unwrap_or_default();
        let (target, message) = (c(target), c(message));
        // SAFETY: a host callback with its own user_data and two strings
        // that live until it returns.
        unsafe {
            (self.callback)(
                self.user_data,
                level as i32,
                target.as_ptr(),
                message.as_ptr(),
            )
        };
    }
}

/// Sets the process-wide log callback: messages at `level` and more severe
/// ones (1 error, 2 warn, 3 info — MCP servers' stderr lines are info —, 4
/// debug) go to `callback` from then on. `level` 0 or a NULL `callback`
/// turns logging off. The previous callback's `user_data_free` (nullable)
/// runs once no message can reach it any more; so does this one's, later.
/// Off by default; when off, no message is ever built. Messages never carry
/// a header value, an API key or an `${ENV}` expansion.
///
/// # Safety
/// `callback`, when not NULL, may be called from any thread with
/// `user_data` until its `user_data_free` has run.
#[no_mangle]
pub unsafe extern "C" fn tn_log_set(
    level: i32,
    callback: tn_log_callback,
    user_data: *mut c_void,
    user_data_free: tn_user_data_free,
) {
    let _ = std::panic::catch_unwind(|| {
        let host = callback.map(|callback| HostLogger {
            callback,
            user_data,
            user_data_free,
        });
        match (Level::from_number(level), host) {
            (Some(level), Some(host)) => {
                let host = Arc::new(host);
                log::set(Some((
                    level,
                    Arc::new(move |l: Level, t: &str, m: &str| host.deliver(l, t, m)),
                )));
            }
            // Off: a logger given with level 0 is released at once.
            (_, host) => {
                log::set(None);
                drop(host);
            }
        }
    });
}
