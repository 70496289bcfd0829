//! Strings across the boundary: borrowed in, owned out, one allocator.

use super::tn_toolkit;
use crate::error::{Error, ErrorCode};
use std::ffi::{c_char, CStr, CString};
use std::sync::Arc;

/// Hands UTF-8 text (a `String`, or bytes known to be UTF-8) to C, in its own
/// buffer when that has room for the NUL. Our outputs are JSON, which never
/// holds a raw NUL; should one appear anyway it is replaced rather than
/// truncated.
pub(crate) fn into_c_string(text: Vec<u8>) -> *mut c_char {
    // The C library's `memchr` scans a 1 MiB `read` result several times
    // faster than the check inside `CString::new`.
    let c = if crate::sys::bytes::find(0, &text).is_none() {
        // SAFETY: just checked that `text` holds no NUL byte.
        unsafe { CString::from_vec_unchecked(text) }
    } else {
        let fixed: Vec<u8> = text
            .into_iter()
            .map(|b| if b == 0 { b' ' } else { b })
            .collect();
        CString::new(fixed).unwrap_or_default()
    };
    c.into_raw()
}

/// Frees a string the library handed out. NULL is a no-op; not twice; never
/// a string from another allocator.
///
/// # Safety
/// `s` is NULL or a pointer returned by this library that was not freed yet.
#[no_mangle]
pub unsafe extern "C" fn tn_string_free(s: *mut c_char) {
    if s.is_null() {
        return;
    }
    // SAFETY: by contract `s` came from CString::into_raw in this library.
    drop(unsafe { CString::from_raw(s) });
}

/// Borrows a required C string as UTF-8.
///
/// # Safety
/// `ptr` is NULL or a NUL-terminated string alive for `'a`.
pub(crate) unsafe fn read_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Error> {
    if ptr.is_null() {
        return Err(Error::new(
            ErrorCode::NullArgument,
            format!("{what} is NULL"),
        ));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    let bytes = unsafe { CStr::from_ptr(ptr) };
    bytes.to_str().map_err(|e| {
        Error::new(
            ErrorCode::InvalidUtf8,
            format!(
                "{what} is not valid UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            ),
        )
    })
}

/// Like [`read_str`], but NULL is `None`.
///
/// # Safety
/// As [`read_str`].
pub(crate) unsafe fn read_opt_str<'a>(
    ptr: *const c_char,
    what: &str,
) -> Result<Option<&'a str>, Error> {
    if ptr.is_null() {
        Ok(None)
    } else {
        // SAFETY: forwarded.
        unsafe { read_str(ptr, what) }.map(Some)
    }
}

/// Holds a toolkit handle for the length of a call: a toolkit freed
/// meanwhile lives on until the returned reference is dropped.
///
/// # Safety
/// `ptr` is NULL or a live toolkit.
pub(crate) unsafe fn read_toolkit(ptr: *const tn_toolkit) -> Result<Arc<tn_toolkit>, Error> {
    // SAFETY: NULL or live by the caller's contract.
    unsafe { super::handle::hold(ptr) }
        .ok_or_else(|| Error::new(ErrorCode::NullArgument, "toolkit is NULL"))
}
