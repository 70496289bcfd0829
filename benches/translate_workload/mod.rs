//! The translate workload (SPEC §11): an OpenAI-shaped request of 20
//! messages and 20 tools, an Anthropic answer with 2 tool_use blocks, and the
//! pure conversion of both. Shared by `benches/translate.rs` (criterion) and
//! `bench/guard/translate.rs` (the perf guard's instruction count), so both
//! measure the same work.

use serde_json::{json, Value};
use toolnexus::translate::node;
use toolnexus::translate::{provider_body, read_response, ClientConfig, Request};

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
pub fn convert(config: &ClientConfig, request_text: &str, reply_text: &str) -> (Vec<u8>, Vec<u8>) {
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
