//! `tn_helper`: the first byte picks the helper, the rest is the JSON array
//! of positional arguments.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolnexus::ffi::tn_helper;
use toolnexus_fuzz::{c_text, check};

const HELPERS: [&std::ffi::CStr; 12] = [
    c"sanitize",
    c"finishReasonFor",
    c"contentText",
    c"argsObject",
    c"argsString",
    c"toolCallsOf",
    c"hasSystemMessage",
    c"openaiToolChoiceToAnthropic",
    c"openaiToolsToAnthropic",
    c"toolCallsJson",
    c"openaiMessagesToAnthropic",
    c"noSuchHelper",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let name = HELPERS[usize::from(pick) % HELPERS.len()];
    let args = c_text(rest);
    let mut out = std::ptr::null_mut();
    // SAFETY: NUL-terminated strings, a pointer to a local.
    let status = unsafe { tn_helper(name.as_ptr(), args.as_ptr(), &mut out) };
    check(status, out, "tn_helper");
});
