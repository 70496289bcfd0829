//! `tn_execute` of the builtins without side effects outside the process
//! (skill, read, grep, glob, todowrite, question) on a fixed toolkit, inside
//! a scratch directory. The first byte picks the tool; the rest is the args
//! JSON, then optionally a NUL and the context JSON. Args that name a path
//! outside the scratch directory are not run.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::ffi::CString;
use toolnexus::ffi::tn_execute;
use toolnexus_fuzz::{c_text, check, fixed_toolkit, stays_inside};

const TOOLS: [&std::ffi::CStr; 7] = [
    c"skill",
    c"read",
    c"grep",
    c"glob",
    c"todowrite",
    c"question",
    c"no_such_tool",
];

fn inside(text: &CString) -> bool {
    match serde_json::from_slice::<Value>(text.as_bytes()) {
        // A JSON string holding the args is read as the args.
        Ok(Value::String(s)) => {
            serde_json::from_str::<Value>(&s).map_or(true, |v| stays_inside(&v))
        }
        Ok(v) => stays_inside(&v),
        Err(_) => true,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let tk = fixed_toolkit();
    let name = TOOLS[usize::from(pick) % TOOLS.len()];
    let (args, ctx) = match rest.iter().position(|b| *b == 0) {
        Some(at) => (c_text(&rest[..at]), Some(c_text(&rest[at + 1..]))),
        None => (c_text(rest), None),
    };
    if !inside(&args) {
        return;
    }
    // Host tools' deadlines are another issue's work; keep every call short.
    if let Some(ctx) = &ctx {
        if ctx.as_bytes().windows(9).any(|w| w == b"timeoutMs") {
            return;
        }
    }
    let args_ptr = if pick & 0x80 != 0 && args.as_bytes().is_empty() {
        std::ptr::null()
    } else {
        args.as_ptr()
    };
    let ctx_ptr = ctx.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    let mut out = std::ptr::null_mut();
    // SAFETY: a live toolkit, NUL-terminated strings or NULL, a pointer to a local.
    let status = unsafe { tn_execute(tk.0, name.as_ptr(), args_ptr, ctx_ptr, &mut out) };
    if let Some(result) = check(status, out, "tn_execute") {
        assert!(result["output"].is_string(), "{result}");
        assert!(result["isError"].is_boolean(), "{result}");
    }
});
