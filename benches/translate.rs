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

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::Duration;
use toolnexus::translate::node;
use toolnexus::translate::{provider_body, read_response, translate_json, ClientConfig, Request};
use translate_mock::{Canned, MockProvider};

/// 20 tools and 20 messages: system, then rounds of user question, assistant
/// tool call(s), tool result(s) and assistant answer.
pub fn workload() -> Value {
    let tools: Vec<Value> = (0..20)
        .map(|i| {
            json!({"type": "function", "function": {
                "name": format!("tool_{i}"),
                "description": format!("Tool number {i}: looks something up."),
                "parameters": {"type": "object",
                               "properties": {"city": {"type": "string", "description": "City name"},
                                              "days": {"type": "integer", "minimum": 1}},
                               "required": ["city"]}}})
        })
        .collect();
    let mut messages = vec![json!({"role": "system", "content": "You are a terse assistant."})];
    let mut round = 0;
    while messages.len() < 20 {
        messages
            .push(json!({"role": "user", "content": format!("Weather and time in city {round}?")}));
        messages.push(json!({"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": format!("call_{round}_a"), "type": "function",
             "function": {"name": "tool_1", "arguments": format!("{{\"city\":\"C{round}\",\"days\":2}}")}},
            {"id": format!("call_{round}_b"), "type": "function",
             "function": {"name": "tool_2", "arguments": format!("{{\"city\":\"C{round}\"}}")}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{round}_a"), "content": "18C sunny"}));
        messages.push(
            json!({"role": "tool", "tool_call_id": format!("call_{round}_b"), "content": "14:00"}),
        );
        messages
            .push(json!({"role": "assistant", "content": format!("City {round}: 18C, 14:00.")}));
        round += 1;
    }
    messages.truncate(20);
    json!({"messages": messages, "tools": tools, "toolChoice": "auto", "maxTokens": 1024})
}

/// Decoded bytes of each image in [`workload_images`].
pub const IMAGE_BYTES: usize = 32 * 1024;

/// `n` bytes of a fake PNG (the signature, then a fixed pattern), base64.
pub fn image_base64(n: usize, seed: usize) -> String {
    use base64::Engine as _;
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend((bytes.len()..n).map(|i| ((i * 31 + seed * 7) % 251) as u8));
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// [`workload`] with three more messages (issue 12): a user turn holding
/// text and two image parts, an assistant call of `tool_3`, and its result
/// carrying an image part — 3 images of [`IMAGE_BYTES`] each (base64 in
/// the request).
pub fn workload_images() -> Value {
    let mut request = workload();
    let image = |seed| json!({"type": "image", "mimeType": "image/png", "data": image_base64(IMAGE_BYTES, seed)});
    if let Some(messages) = request["messages"].as_array_mut() {
        messages.push(json!({"role": "user", "content": [
            {"type": "text", "text": "Which of these two charts shows more rain?"},
            image(1), image(2)]}));
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_img", "type": "function",
             "function": {"name": "tool_3", "arguments": "{\"city\":\"Paris\"}"}}]}));
        messages.push(
            json!({"role": "tool", "tool_call_id": "call_img", "content": [
            {"type": "text", "text": "the rain chart for Paris"}, image(3)]}),
        );
    }
    request
}

/// The provider's answer: some text and 2 tool_use blocks.
pub fn anthropic_reply() -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
           "content": [{"type": "text", "text": "Let me check both."},
                       {"type": "tool_use", "id": "toolu_1", "name": "tool_1", "input": {"city": "Paris", "days": 2}},
                       {"type": "tool_use", "id": "toolu_2", "name": "tool_2", "input": {"city": "Paris"}}],
           "stop_reason": "tool_use", "usage": {"input_tokens": 812, "output_tokens": 64}})
}

/// The pure conversion, JSON text in and out, both directions, as
/// `translate_json` does it: one arena per call, the request parsed into it,
/// the provider body encoded from it; the provider's answer parsed into it and
/// the OpenAI-shaped result encoded from it.
fn convert(config: &ClientConfig, request_text: &str, reply_text: &str) -> (Vec<u8>, Vec<u8>) {
    let bump = bumpalo::Bump::with_capacity(3 * request_text.len());
    let (request, source) = node::parse_source(&bump, request_text).expect("request JSON");
    let parsed = Request::from_node(request).expect("valid request");
    let body = provider_body(&bump, config, &parsed, &[])
        .to_vec_from(&[source], request_text.len() + 1024);
    let raw = node::parse(&bump, reply_text).expect("reply JSON");
    let result = read_response(&bump, config.style, "claude-test", raw)
        .to_vec_from(&[reply_text.into()], 2 * reply_text.len() + 256);
    (body, result)
}

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
