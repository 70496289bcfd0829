//! `tn_toolkit_build` on fuzzed config text, then every named render of what
//! it built. Configs that would reach outside the scratch directory (absolute
//! or `..` paths, `~`, `${ENV}`) or start MCP servers are not run.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolnexus::ffi::tn_render;
use toolnexus_fuzz::{build, c_text, check, scratch, stays_inside};

const FORMATS: [&std::ffi::CStr; 9] = [
    c"openai",
    c"anthropic",
    c"gemini",
    c"toolNames",
    c"skillsPrompt",
    c"tools",
    c"status",
    c"skills",
    c"skillsInventory",
];

fuzz_target!(|data: &[u8]| {
    scratch();
    let config = c_text(data);
    if let Ok(v) = serde_json::from_slice::<Value>(config.as_bytes()) {
        if !stays_inside(&v) || v.get("mcpConfig").is_some_and(|m| !m.is_null()) {
            return;
        }
    }
    let Some(tk) = build(&config) else { return };
    for format in FORMATS {
        let mut out = std::ptr::null_mut();
        // SAFETY: a live toolkit, a NUL-terminated format, a pointer to a local.
        let status = unsafe { tn_render(tk.0, format.as_ptr(), &mut out) };
        assert_eq!(status, 0, "render {format:?} of a built toolkit failed");
        check(status, out, "tn_render");
    }
});
