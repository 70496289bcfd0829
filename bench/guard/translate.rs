//! The perf guard's translate rows (bench/guard/guard.py): the conversion of
//! `benches/translate_workload` (20 messages, 20 tools, an Anthropic answer
//! with 2 tool_use blocks) run N times, N from the command line, for
//! callgrind to count; with a style after N (`gemini`, `responses`), the
//! request's conversion alone in that style (JSON text in, body out). The binary of the `toolnexus-guard` workspace member
//! (`cargo build --release -p toolnexus-guard`), not a bench or an example:
//! it links the release build of the library, without the bench profile's
//! build of it or the dev-dependencies an example would compile.

// The image workload is the criterion bench's alone.
#[allow(dead_code)]
#[path = "../../benches/translate_workload/mod.rs"]
mod translate_workload;

use std::hint::black_box;
use toolnexus::translate::{node, provider_body, ClientConfig, Request};
use translate_workload::{anthropic_reply, convert, workload};

/// The request of the workload as a body of `config`'s style.
fn request_body(config: &ClientConfig, request_text: &str) -> Vec<u8> {
    let bump = bumpalo::Bump::with_capacity(3 * request_text.len());
    let (request, source) = node::parse_source(&bump, request_text).expect("request JSON");
    let parsed = Request::from_node(request).expect("valid request");
    provider_body(&bump, config, &parsed, &[]).to_vec_from(&[source], request_text.len() + 1024)
}

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("usage: guard_translate ITERATIONS [gemini|responses]");
    if let Some(style) = std::env::args().nth(2) {
        let client = serde_json::json!({"baseUrl": "http://127.0.0.1:9", "style": style,
                                        "model": "bench-model", "apiKey": "k"});
        let config = ClientConfig::from_json(&client).expect("valid client");
        let request_text = workload().to_string();
        assert!(request_body(&config, &request_text).starts_with(b"{"));
        for _ in 0..n {
            black_box(request_body(&config, black_box(&request_text)));
        }
        return;
    }
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
