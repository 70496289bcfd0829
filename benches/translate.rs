//! SPEC §11 translate benchmarks: an OpenAI-shaped request of 20 messages
//! (with tool calls and results) and 20 tools, for an Anthropic-style provider
//! that answers at once with 2 tool_use blocks.
//!
//! - `translate/conversion`: the pure work with JSON text in and out — parse
//!   the request, build and encode the provider body; parse the provider's
//!   answer, build and encode the OpenAI-shaped result.
//! - `translate/conversion_serde_typed`: the same conversion written with
//!   typed serde structs over the borrowed input (issue 14's experiment,
//!   `benches/translate_serde`), checked to write the same bytes first.
//! - `translate/whole_call`: `translate()` against a mock provider on
//!   127.0.0.1 (keep-alive), result encoded to JSON text.
//! - `translate/conversion_images` (issue 12): the conversion of the same
//!   request with three more messages carrying §1B image parts — a user turn
//!   with two images, the assistant's tool call, and a tool result carrying
//!   an image — which reach Anthropic as native `image` blocks
//!   ([`workload_images`]).

#[path = "../tests/translate_mock/mod.rs"]
mod translate_mock;
mod translate_serde;
mod translate_workload;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::Duration;
use toolnexus::translate::node;
use toolnexus::translate::{provider_body, translate_json, ClientConfig, Request};
use translate_mock::{Canned, MockProvider};
use translate_workload::{anthropic_reply, convert, workload, workload_images};

/// The conversion the ordinary way: typed serde structs over borrowed input,
/// bodies written by serde_json.
fn convert_serde(request_text: &str, reply_text: &str) -> (Vec<u8>, Vec<u8>) {
    let body = translate_serde::provider_body(request_text, "claude-test").expect("request");
    let result = translate_serde::read_response(reply_text, "claude-test").expect("reply");
    (body, result)
}

/// The same conversion through `serde_json::Value` trees, for comparison:
/// what it costs to parse and encode this JSON with the usual tool.
fn convert_via_value(request_text: &str, reply_text: &str) -> (Vec<u8>, String) {
    let request: Value = serde_json::from_str(request_text).expect("request JSON");
    let body = serde_json::to_vec(&request).expect("body");
    let raw: Value = serde_json::from_str(reply_text).expect("reply JSON");
    (body, raw.to_string())
}

fn benches(c: &mut Criterion) {
    let request_text = workload().to_string();
    let reply_text = anthropic_reply().to_string();
    let mock =
        MockProvider::start_unrecorded(vec![Canned::json(200, &anthropic_reply()).repeating()]);
    let client = json!({"baseUrl": mock.base(), "style": "anthropic", "model": "claude-test", "apiKey": "bench-key"});
    let config = ClientConfig::from_json(&client).expect("valid client");

    // The typed-serde conversion writes what the arena conversion writes.
    let ours = convert(&config, &request_text, &reply_text);
    let typed = convert_serde(&request_text, &reply_text);
    assert!(
        ours.0 == typed.0 && ours.1 == typed.1,
        "the typed-serde conversion writes other bytes"
    );

    // TN_TRANSLATE_ITERS=N runs the conversion N times and exits, so that
    // `perf stat` can count CPU time and instructions per conversion on a
    // machine too busy for wall-clock figures; with TN_TRANSLATE_SERDE=1 it
    // runs the typed-serde conversion instead.
    if let Some(n) = std::env::var("TN_TRANSLATE_ITERS")
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
    {
        let typed = std::env::var_os("TN_TRANSLATE_SERDE").is_some();
        for _ in 0..n {
            if typed {
                black_box(convert_serde(&request_text, &reply_text));
            } else {
                black_box(convert(&config, &request_text, &reply_text));
            }
        }
        return;
    }

    // TN_TRANSLATE_DUMP_IMAGES=PATH writes the provider body of the image
    // workload there and exits (bench/translate_python.py --check-images
    // compares the Python port's body with it).
    let images_text = workload_images().to_string();
    if let Some(path) = std::env::var_os("TN_TRANSLATE_DUMP_IMAGES") {
        let (body, _) = convert(&config, &images_text, &reply_text);
        std::fs::write(path, body).expect("write the image workload's body");
        return;
    }

    let mut group = c.benchmark_group("translate");
    group.measurement_time(Duration::from_secs(4));
    group.bench_function("conversion", |b| {
        b.iter(|| convert(&config, black_box(&request_text), black_box(&reply_text)))
    });
    group.bench_function("conversion_images", |b| {
        b.iter(|| convert(&config, black_box(&images_text), black_box(&reply_text)))
    });
    group.bench_function("conversion_serde_typed", |b| {
        b.iter(|| convert_serde(black_box(&request_text), black_box(&reply_text)))
    });
    group.bench_function("part_parse_request", |b| {
        b.iter(|| {
            let bump = bumpalo::Bump::with_capacity(3 * request_text.len());
            let (n, source) =
                node::parse_source(&bump, black_box(&request_text)).expect("request JSON");
            black_box(&source);
            black_box(n.is_object())
        })
    });
    {
        let bump = bumpalo::Bump::new();
        let (request, source) = node::parse_source(&bump, &request_text).expect("request JSON");
        let parsed = Request::from_node(request).expect("valid request");
        let body = provider_body(&bump, &config, &parsed, &[]);
        let sources = [source];
        group.bench_function("part_encode_body", |b| {
            b.iter(|| black_box(body).to_vec_from(&sources, request_text.len() + 1024))
        });
        group.bench_function("part_build_body", |b| {
            b.iter(|| {
                let bump2 = bumpalo::Bump::with_capacity(3 * request_text.len());
                black_box(provider_body(&bump2, &config, &parsed, &[]).is_object())
            })
        });
    }
    group.bench_function("value_parse_encode_only", |b| {
        b.iter(|| convert_via_value(black_box(&request_text), black_box(&reply_text)))
    });
    // Warm the connection pool once.
    translate_json(&client, &request_text, &[], None).expect("translate succeeds");
    group.bench_function("whole_call", |b| {
        b.iter(|| {
            translate_json(black_box(&client), black_box(&request_text), &[], None)
                .expect("translate succeeds")
        })
    });
    // TN_TRANSLATE_BASE_URL=http://127.0.0.1:PORT: the whole call once more
    // against a provider mock outside this process (bench/run_translate.sh
    // starts the Python port's mock there, so both ports meet one server).
    if let Ok(base) = std::env::var("TN_TRANSLATE_BASE_URL") {
        let external = json!({"baseUrl": base, "style": "anthropic", "model": "claude-test", "apiKey": "bench-key"});
        translate_json(&external, &request_text, &[], None).expect("the external mock answers");
        group.bench_function("whole_call_external_mock", |b| {
            b.iter(|| {
                translate_json(black_box(&external), black_box(&request_text), &[], None)
                    .expect("translate succeeds")
            })
        });
    }
    group.finish();
}

criterion_group!(translate_benches, benches);
criterion_main!(translate_benches);
