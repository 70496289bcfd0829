//! The client loop's reading of a provider answer (issue 25): fuzzed JSON
//! taken as a decoded answer of each style (openai, anthropic, gemini,
//! responses), and read the way a turn
//! reads it (the assistant message to append, its tool calls, the final
//! text). Nothing may panic; the message must be an object with the
//! assistant role, each call's arguments must be an object or what the
//! model sent, and reading twice gives the same.
//!
//! The first byte picks the style (bits 0-1, `Style::ALL`'s order: openai,
//! anthropic, gemini, responses).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolnexus::client::shape::{assistant_message, calls_of, final_text};
use toolnexus::provider::Style;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(raw) = serde_json::from_slice::<Value>(rest) else {
        return;
    };
    let style = Style::ALL[usize::from(pick & 3)];
    let message = assistant_message(style, &raw);
    let calls = calls_of(style, &message);
    let text = final_text(style, &raw);
    let again = calls_of(style, &assistant_message(style, &raw));
    assert_eq!(calls.len(), again.len());
    assert_eq!(text, final_text(style, &raw));
    if style == Style::Anthropic {
        assert_eq!(message["role"], "assistant", "{message}");
    }
    let _ = serde_json::to_vec(&message).expect("the message serializes");
});
