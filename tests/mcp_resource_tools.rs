//! A server's resources and prompts offered to the model as tools
//! (`"resourcesAsTools": true`): `list_mcp_resources`, `read_mcp_resource`
//! and `get_mcp_prompt`, over stdio (tests/mcp_servers/conformance_fixture.py,
//! the official Python SDK's low-level server) and over streamable HTTP (the
//! same server behind `toolnexus serve --http`, which passes resources and
//! prompts through).

mod mcp_support;

use mcp_support::*;
use serde_json::{json, Value};
use toolnexus::mcp::McpSource;

fn fixture() -> Value {
    json!({"command": [python(), server_script("conformance_fixture.py")], "timeout": 20000})
}

fn output_json(source: &McpSource, name: &str, args: Value) -> Value {
    let r = call(source, name, args);
    assert!(!r.is_error, "{name}: {}", r.output);
    serde_json::from_str(&r.output).unwrap_or_else(|e| panic!("{e}: {}", r.output))
}

/// Everything the three tools must show for server "c".
/// `prefix`: what the prompts' names start with (the gateway prefixes them
/// with its server's name).
fn resources_and_prompts_as_tools(source: &McpSource, how: &str, prefix: &str) {
    assert_eq!(status(source, "c"), "connected", "{:?}", source.errors);
    for name in ["list_mcp_resources", "read_mcp_resource", "get_mcp_prompt"] {
        let t = tool(source, name);
        assert!(!t.description.is_empty());
        assert_eq!(t.input_schema["properties"]["server"]["enum"], json!(["c"]));
        assert!(t.input_schema["required"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("server"))));
    }

    // One page of resources.
    let listed = output_json(source, "list_mcp_resources", json!({"server": "c"}));
    let uris: Vec<&str> = listed["resources"]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r["uri"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        uris,
        [
            "test://static-text",
            "test://static-binary",
            "test://watched-resource"
        ],
        "{how}"
    );
    assert_eq!(
        listed["resources"][0],
        json!({"uri": "test://static-text", "name": "static-text",
               "description": "A static text resource", "mimeType": "text/plain"}),
        "{how}"
    );

    // Text as text, a blob as a part.
    let text = call(
        source,
        "read_mcp_resource",
        json!({"server": "c", "uri": "test://static-text"}),
    );
    assert_eq!(
        (text.output.as_str(), text.is_error),
        ("This is the content of the static text resource.", false),
        "{how}"
    );
    let blob = call(
        source,
        "read_mcp_resource",
        json!({"server": "c", "uri": "test://static-binary"}),
    );
    assert!(!blob.is_error, "{how}: {}", blob.output);
    assert_eq!(blob.parts.len(), 1, "{how}: {blob:?}");
    assert_eq!(
        blob.parts[0].mime_type.as_deref(),
        Some("image/png"),
        "{how}"
    );

    // An unknown uri: the server's error.
    let nowhere = call(
        source,
        "read_mcp_resource",
        json!({"server": "c", "uri": "test://nowhere"}),
    );
    assert!(nowhere.is_error, "{how}");
    assert!(
        nowhere
            .output
            .starts_with("read_mcp_resource: server \"c\" answered error "),
        "{how}: {}",
        nowhere.output
    );
    assert!(
        nowhere.output.contains("test://nowhere"),
        "{how}: {}",
        nowhere.output
    );

    // An unknown prompt: the error lists the server's prompts (the
    // gateway prefixes their names with its server's).
    let unknown = call(
        source,
        "get_mcp_prompt",
        json!({"server": "c", "name": "no_such_prompt"}),
    );
    assert!(unknown.is_error, "{how}");
    assert!(
        unknown
            .output
            .starts_with("get_mcp_prompt: server \"c\" answered error "),
        "{how}: {}",
        unknown.output
    );
    assert!(
        unknown.output.contains(&format!(
            "; the server's prompts: {prefix}test_simple_prompt(), \
             {prefix}test_prompt_with_arguments(arg1, arg2), "
        )),
        "{how}: {}",
        unknown.output
    );
    let name = format!("{prefix}test_prompt_with_arguments");

    // A prompt with its arguments, as text.
    let prompt = call(
        source,
        "get_mcp_prompt",
        json!({"server": "c", "name": name, "arguments": {"arg1": "a", "arg2": 2}}),
    );
    assert_eq!(
        (prompt.output.as_str(), prompt.is_error),
        ("user: Prompt with arguments: arg1='a', arg2='2'", false),
        "{how}"
    );

    // Media in a prompt: a part, its place in the text marked.
    let image = call(
        source,
        "get_mcp_prompt",
        json!({"server": "c", "name": format!("{prefix}test_prompt_with_image")}),
    );
    assert_eq!(
        image.output, "user: (attached)\n\nuser: Please analyze the image above.",
        "{how}"
    );
    assert_eq!(image.parts.len(), 1, "{how}: {image:?}");

    // An unknown server, and a missing argument.
    let other = call(source, "list_mcp_resources", json!({"server": "zz"}));
    assert_eq!(
        (other.output.as_str(), other.is_error),
        (
            "list_mcp_resources: unknown server \"zz\" (servers: \"c\")",
            true
        ),
        "{how}"
    );
    let missing = call(source, "read_mcp_resource", json!({"server": "c"}));
    assert_eq!(
        missing.output,
        "read_mcp_resource: the argument \"uri\" (a string) is required"
    );
}

#[test]
fn resources_and_prompts_as_tools_over_stdio() {
    let mut entry = fixture();
    entry["resourcesAsTools"] = json!(true);
    let source = connect(json!({"mcpServers": {"c": entry}}));
    resources_and_prompts_as_tools(&source, "stdio", "");
}

#[test]
fn resources_and_prompts_as_tools_over_streamable_http() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("gw.json");
    let inner = json!({"mcpServers": {"c": fixture()}, "builtins": false});
    std::fs::write(&cfg, inner.to_string()).expect("config");
    let gw = HttpGateway::start(&["--config", &cfg.to_string_lossy()]);
    let source = connect(json!({"mcpServers": {"c": {
        "url": gw.url, "timeout": 20000, "resourcesAsTools": true
    }}}));
    resources_and_prompts_as_tools(&source, "http", "c_");
}

#[test]
fn without_the_setting_no_resource_tools_are_offered() {
    let source = connect(json!({"mcpServers": {"c": fixture()}}));
    assert_eq!(status(&source, "c"), "connected", "{:?}", source.errors);
    let got = names(&source);
    assert!(!got.iter().any(|n| n.contains("mcp_")), "{got:?}");
    let bad =
        connect(json!({"mcpServers": {"c": {"command": ["true"], "resourcesAsTools": "yes"}}}));
    assert!(
        error(&bad, "c").contains("resourcesAsTools: expected true or false, got a string"),
        "{}",
        error(&bad, "c")
    );
}
