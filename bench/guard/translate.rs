//! The perf guard's translate row (bench/guard/guard.py): the conversion of
//! `benches/translate_workload` (20 messages, 20 tools, an Anthropic answer
//! with 2 tool_use blocks) run N times, N from the command line, for
//! callgrind to count. The binary of the `toolnexus-guard` workspace member
//! (`cargo build --release -p toolnexus-guard`), not a bench or an example:
//! it links the release build of the library, without the bench profile's
//! build of it or the dev-dependencies an example would compile.

// The image workload is the criterion bench's alone.
#[allow(dead_code)]
#[path = "../../benches/translate_workload/mod.rs"]
mod translate_workload;

use std::hint::black_box;
use toolnexus::translate::ClientConfig;
use translate_workload::{anthropic_reply, convert, workload};

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("usage: guard_translate ITERATIONS");
    let client = serde_json::json!({"baseUrl": "http://127.0.0.1:9", "style": "anthropic",
                                    "model": "claude-test", "apiKey": "k"});
    let config = ClientConfig::from_json(&client).expect("valid client");
    let request_text = workload().to_string();
    let reply_text = anthropic_reply().to_string();
    let (body, result) = convert(&config, &request_text, &reply_text);
    assert!(body.starts_with(b"{") && result.starts_with(b"{"));
    for _ in 0..n {
        black_box(convert(
            &config,
            black_box(&request_text),
            black_box(&reply_text),
        ));
    }
}
