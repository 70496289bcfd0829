//! Content parts (SPEC §1B) end to end: where they come from (`read` of a
//! media file, an MCP server's media content, a host tool), the `parts` key
//! of the ToolResult JSON, and the `maxPartBytes` cap. Each test names the
//! upstream 0.21 test it follows.

mod mcp_support;

use mcp_support::server_script;
use serde_json::{json, Value};
use toolnexus::tool::ExecContext;
use toolnexus::toolkit::Toolkit;

/// The first bytes of a PNG file and then some.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-not-really-an-image";

fn b64(bytes: &[u8]) -> String {
    toolnexus::parts::encode_base64(bytes)
}

fn scratch() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    (dir, root.to_string_lossy().into_owned())
}

fn toolkit(config: Value) -> Toolkit {
    Toolkit::build_from_json(&config.to_string()).unwrap_or_else(|e| panic!("build: {e:?}"))
}

fn execute_json(tk: &Toolkit, name: &str, args: Value) -> Value {
    let r = tk.execute(name, args, &ExecContext::default());
    serde_json::from_str(&r.to_json_string()).expect("ToolResult JSON")
}

/// test_multimodal.py: `read` of a media file returns a one-line summary and
/// the bytes as a part named after the file; mime from the extension table.
#[test]
fn read_of_a_media_file_returns_the_bytes_as_a_part() {
    let (_d, root) = scratch();
    let path = format!("{root}/Chart.PNG");
    std::fs::write(&path, PNG).unwrap();
    let tk = toolkit(json!({}));
    let got = execute_json(&tk, "read", json!({ "path": path }));
    assert_eq!(
        got,
        json!({
            "output": format!("{path} (image/png, {} bytes)", PNG.len()),
            "isError": false,
            "parts": [{"type": "image", "mimeType": "image/png", "data": b64(PNG), "name": "Chart.PNG"}]
        })
    );

    std::fs::write(format!("{root}/doc.pdf"), b"%PDF-1.4").unwrap();
    let got = execute_json(&tk, "read", json!({ "path": format!("{root}/doc.pdf") }));
    assert_eq!(got["parts"][0]["type"], "file");
    assert_eq!(got["parts"][0]["mimeType"], "application/pdf");

    std::fs::write(format!("{root}/a.wav"), b"RIFF").unwrap();
    let got = execute_json(&tk, "read", json!({ "path": format!("{root}/a.wav") }));
    assert_eq!(got["parts"][0]["type"], "audio");
    assert_eq!(got["parts"][0]["mimeType"], "audio/wav");
}

/// A text file (and an extension outside the table) is read as before: no
/// `parts` key at all, so the JSON is byte-identical to a pre-0.17 result.
#[test]
fn a_text_read_has_no_parts_key() {
    let (_d, root) = scratch();
    let path = format!("{root}/image.svg");
    std::fs::write(&path, "<svg/>").unwrap();
    let tk = toolkit(json!({}));
    let r = tk.execute("read", json!({ "path": path }), &ExecContext::default());
    assert_eq!(r.to_json_string(), r#"{"output":"<svg/>","isError":false}"#);
}

/// content.py's maxPartBytes rule, decoded bytes: a part over the limit is
/// taken out and the output says why; one within it stays.
#[test]
fn max_part_bytes_drops_an_oversize_part_and_says_so() {
    let (_d, root) = scratch();
    let path = format!("{root}/big.png");
    std::fs::write(&path, PNG).unwrap();
    let small = toolkit(json!({"maxPartBytes": 10}));
    let got = execute_json(&small, "read", json!({ "path": path }));
    assert_eq!(got["isError"], false);
    assert!(got.get("parts").is_none(), "{got}");
    assert_eq!(
        got["output"],
        format!(
            "{path} (image/png, {n} bytes)\n[image part dropped: content part is {n} decoded bytes, over the maxPartBytes limit of 10]",
            n = PNG.len()
        )
    );
    let roomy = toolkit(json!({ "maxPartBytes": PNG.len() }));
    let got = execute_json(&roomy, "read", json!({ "path": path }));
    assert_eq!(got["parts"][0]["data"], b64(PNG));
}

#[test]
fn max_part_bytes_of_the_wrong_type_names_the_key() {
    for bad in [json!(-1), json!("10"), json!(1.5)] {
        let e = Toolkit::build_from_json(&json!({ "maxPartBytes": bad }).to_string())
            .expect_err("a bad maxPartBytes must not build");
        assert!(
            e.message
                .starts_with("maxPartBytes: expected a non-negative integer"),
            "{}",
            e.message
        );
    }
}

/// test_multimodal.py's MCP cases, against a server on the official SDK:
/// image ⇒ image part with the server's base64 verbatim; text stays output;
/// media alone is described in output; audio, blob and link become parts and
/// embedded resource text joins the output.
#[test]
fn an_sdk_servers_media_becomes_parts() {
    let (_d, root) = scratch();
    let png = format!("{root}/chart.png");
    std::fs::write(&png, PNG).unwrap();
    let tk = toolkit(
        json!({"builtins": false, "mcpConfig": {"mcpServers": {"media": {
            "command": ["python3", server_script("sdk_media_server.py"), png],
            "timeout": 20000
        }}}}),
    );
    let chart = execute_json(&tk, "media_chart", json!({}));
    assert_eq!(
        chart,
        json!({"output": "the chart", "isError": false,
               "parts": [{"type": "image", "mimeType": "image/png", "data": b64(PNG)}]})
    );
    let picture = execute_json(&tk, "media_picture", json!({}));
    assert_eq!(
        picture["output"],
        format!("image (image/png, {} bytes)", PNG.len())
    );
    let assorted = execute_json(&tk, "media_assorted", json!({}));
    assert_eq!(assorted["output"], "a note");
    assert_eq!(
        assorted["parts"],
        json!([
            {"type": "audio", "mimeType": "audio/mpeg", "data": "SUQz"},
            {"type": "file", "mimeType": "application/pdf", "data": "JVBERg==", "name": "file:///r.pdf"},
            {"type": "file", "mimeType": "application/octet-stream", "url": "https://example.invalid/big.bin", "name": "big.bin"}
        ])
    );
}

#[path = "translate_mock/mod.rs"]
mod translate_mock;

fn anthropic_reply() -> translate_mock::Canned {
    translate_mock::Canned::json(
        200,
        &json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                "content": [{"type": "text", "text": "a bar chart"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 5, "output_tokens": 3}}),
    )
}

/// Issue 12's end-to-end case and test_multimodal.py
/// test_image_part_in_content_survives_translation: an image an MCP server
/// (official SDK) returns becomes a part, the host feeds it back in the tool
/// message's content, and the Anthropic-style provider receives it as a
/// native image block inside the tool_result — and a user's attached image
/// as an image block of the user turn. Audio, which Anthropic has no block
/// for, arrives as its text placeholder.
#[test]
fn an_mcp_image_reaches_an_anthropic_provider_as_an_image_block() {
    let (_d, root) = scratch();
    let png = format!("{root}/chart.png");
    std::fs::write(&png, PNG).unwrap();
    let tk = toolkit(
        json!({"builtins": false, "mcpConfig": {"mcpServers": {"media": {
            "command": ["python3", server_script("sdk_media_server.py"), png],
            "timeout": 20000
        }}}}),
    );
    let result = execute_json(&tk, "media_chart", json!({}));
    let mut tool_content = vec![json!({"type": "text", "text": result["output"]})];
    tool_content.extend(result["parts"].as_array().cloned().unwrap_or_default());
    tool_content.push(json!({"type": "audio", "mimeType": "audio/mpeg", "data": "SUQz"}));

    let mock = translate_mock::MockProvider::start(vec![anthropic_reply()]);
    let client = json!({"baseUrl": mock.base(), "style": "anthropic", "model": "claude-test",
                        "apiKey": "sk-test", "retries": 0});
    let request = json!({"messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "What does this show?"},
            {"type": "image", "mimeType": "image/png", "url": "https://example.invalid/a.png"}]},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "media_chart", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": tool_content}
    ]});
    let answer = toolnexus::translate::translate(&client, &request, &[], None).expect("translate");
    assert_eq!(answer["text"], "a bar chart");
    let sent = mock.requests();
    let body: Value = serde_json::from_slice(&sent[0].body).expect("JSON body");
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "What does this show?"},
                {"type": "image", "source": {"type": "url", "url": "https://example.invalid/a.png"}}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "call_1", "name": "media_chart", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": [
                    {"type": "text", "text": "the chart"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)}},
                    {"type": "text", "text": "[unsupported audio part (audio/mpeg, 3 bytes)]"}]}]}
        ])
    );
}

/// client.py _wire_messages through the §8 loop (upstream 0.21
/// test_multimodal.py, the loop's tool-result cases): `read` of a PNG in a
/// run; the transcript keeps the canonical part on the tool_result, and the
/// next anthropic request carries it as an image block inside that
/// tool_result; on openai the image moves into one user message after the
/// tool messages.
#[test]
fn the_loop_feeds_a_tools_image_back_as_a_provider_block() {
    use toolnexus::client::{Client, RunData, RunRequest};
    let (_d, root) = scratch();
    let path = format!("{root}/chart.png");
    std::fs::write(&path, PNG).unwrap();
    let tk = toolkit(json!({}));
    let data = b64(PNG);

    // anthropic
    let tool_use = translate_mock::Canned::json(
        200,
        &json!({"id": "m1", "type": "message", "role": "assistant", "model": "claude-test",
                "content": [{"type": "tool_use", "id": "tu_1", "name": "read", "input": {"path": path}}],
                "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 3}}),
    );
    let mock = translate_mock::MockProvider::start(vec![tool_use, anthropic_reply()]);
    let client = Client::from_json(&json!({"baseUrl": mock.base(), "style": "anthropic",
        "model": "claude-test", "apiKey": "k", "retries": 0}))
    .expect("client");
    let request = RunRequest {
        prompt: "What is in the chart?".into(),
        history: Vec::new(),
    };
    let result = client
        .run(
            &tk,
            &request,
            &toolnexus::cancel::CancelToken::new(),
            RunData::default(),
        )
        .expect("run");
    assert_eq!(result["text"], "a bar chart");
    let fed = &result["messages"][2]["content"][0];
    assert_eq!(fed["parts"][0]["data"], data.as_str());
    let second: Value = serde_json::from_slice(&mock.requests()[1].body).expect("body");
    assert_eq!(
        second["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "tu_1", "is_error": false, "content": [
            {"type": "text", "text": format!("{path} (image/png, {} bytes)", PNG.len())},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]})
    );

    // openai
    let call = translate_mock::Canned::json(
        200,
        &json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
            "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "read", "arguments": json!({"path": path}).to_string()}}]}}]}),
    );
    let answer = translate_mock::Canned::json(
        200,
        &json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "a bar chart"}}]}),
    );
    let mock = translate_mock::MockProvider::start(vec![call, answer]);
    let client = Client::from_json(&json!({"baseUrl": mock.base(), "style": "openai",
        "model": "gpt-test", "apiKey": "k", "retries": 0}))
    .expect("client");
    let result = client
        .run(
            &tk,
            &request,
            &toolnexus::cancel::CancelToken::new(),
            RunData::default(),
        )
        .expect("run");
    assert_eq!(result["text"], "a bar chart");
    let second: Value = serde_json::from_slice(&mock.requests()[1].body).expect("body");
    let sent = second["messages"].as_array().expect("messages");
    let n = sent.len();
    assert_eq!(
        sent[n - 2],
        json!({"role": "tool", "tool_call_id": "c1",
               "content": format!("{path} (image/png, {} bytes)", PNG.len())})
    );
    assert_eq!(
        sent[n - 1],
        json!({"role": "user", "content": [
            {"type": "text", "text": "Output of tool read (c1):"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{data}")}}]})
    );
}
