//! `tn_render` of a fixed toolkit with a fuzzed format: a name, or JSON
//! `{"format": ..., "tools": [...]}`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolnexus::ffi::tn_render;
use toolnexus_fuzz::{c_text, check, fixed_toolkit};

fuzz_target!(|data: &[u8]| {
    let tk = fixed_toolkit();
    let format = c_text(data);
    let mut out = std::ptr::null_mut();
    // SAFETY: a live toolkit, a NUL-terminated format, a pointer to a local.
    let status = unsafe { tn_render(tk.0, format.as_ptr(), &mut out) };
    check(status, out, "tn_render");
});
