//! The Gemini schema sanitizer (src/provider/gemini_schema.rs): fuzzed
//! JSON taken as a tool's parameters schema and made Gemini-safe, as every
//! declaration sent to Gemini is. Nothing may panic (cycles, `$ref`s into
//! anything, deep nesting, huge fan-out are cut, not followed); the result
//! is an object whose every key is one Gemini takes
//! (`only_allowed_keys`), of `type: object` unless it is an `anyOf`, and
//! sanitizing it again gives it back unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolnexus::provider::gemini_schema::{clean, only_allowed_keys};

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let cleaned = clean(&schema);
    let Value::Object(top) = &cleaned else {
        panic!("a cleaned schema is no object: {cleaned}");
    };
    assert!(
        only_allowed_keys(&cleaned),
        "a key Gemini refuses: {cleaned}"
    );
    assert!(
        top.get("type").and_then(Value::as_str) == Some("object") || top.contains_key("anyOf"),
        "the top is no object: {cleaned}"
    );
    assert!(!top.contains_key("nullable"), "a nullable top: {cleaned}");
    let again = clean(&cleaned);
    assert_eq!(again, cleaned, "sanitizing twice changed the schema");
});
