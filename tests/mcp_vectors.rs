//! Every case of tests/conformance/vectors/mcp.json run through the MCP API
//! (parse_config + connect), plus explicit tests of the recorded divergences.
//!
//! Cases whose toolkit also uses builtins, HTTP tools or disableTools need the
//! toolkit: for those only the MCP part is compared when that is meaningful
//! (mcpStatus statuses minus `builtin`), the rest are counted as skipped and
//! left for the toolkit's parity harness.

mod mcp_support;

use serde_json::{json, Map, Value};
use std::path::Path;
use toolnexus::mcp::{self, McpSource};
use toolnexus::tool::{ExecContext, Tool};

fn load(path: &str) -> Value {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Replaces ${ROOT} in every string of `v`.
fn with_root(v: &Value, root: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace("${ROOT}", root)),
        Value::Array(a) => Value::Array(a.iter().map(|x| with_root(x, root)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), with_root(x, root)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn write_files(case: &Value, root: &Path) {
    if let Some(files) = case.get("files").and_then(Value::as_object) {
        for (rel, content) in files {
            let path = root.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
            }
            std::fs::write(&path, content.as_str().unwrap_or_default())
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

fn sorted_tools(source: &McpSource) -> Vec<&Tool> {
    let mut tools: Vec<&Tool> = source.tools.iter().collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools
}

/// The adapters of CONTRACT.md §4, applied to the MCP tool list.
fn render(source: &McpSource, format: &str) -> Value {
    let tools = sorted_tools(source);
    match format {
        "toolNames" => json!(tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>()),
        "openai" => json!(tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}))
            .collect::<Vec<_>>()),
        "anthropic" => json!(tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect::<Vec<_>>()),
        "gemini" => json!([{"functionDeclarations": tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.input_schema}))
            .collect::<Vec<_>>()}]),
        other => panic!("unknown format {other}"),
    }
}

fn pairs_to_map(pairs: &[(String, String)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect()
}

enum Verdict {
    Pass,
    Fail(String),
    Skip(&'static str),
}

fn builtins_off(toolkit: &Value) -> bool {
    toolkit.get("builtins") == Some(&Value::Bool(false))
}

fn run_case(case: &Value) -> Verdict {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let root = dir.path().to_string_lossy().into_owned();
    write_files(case, dir.path());
    let toolkit = with_root(&case["toolkit"], &root);
    let expect = with_root(&case["expect"], &root);
    let toolkit_only = ["httpTools", "disableTools", "skills", "skillsDir"]
        .iter()
        .any(|k| toolkit.get(*k).is_some());
    let op = case["op"].as_str().unwrap_or_default();
    let format = case
        .get("format")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let needs_toolkit = toolkit_only || (!builtins_off(&toolkit) && format != "mcpStatus");
    if needs_toolkit {
        return Verdict::Skip("needs the toolkit (builtins, HTTP tools or disableTools)");
    }
    let config = match mcp::parse_config(&toolkit["mcpConfig"]) {
        Ok(c) => c,
        Err(e) => return Verdict::Fail(format!("parse_config: {e}")),
    };
    let source = mcp::connect(&config);
    match (op, format) {
        ("render", "mcpStatus") => {
            let mut want = expect["statuses"].as_object().cloned().unwrap_or_default();
            want.remove("builtin");
            let got = pairs_to_map(&source.statuses);
            if got != want {
                return Verdict::Fail(format!("statuses: got {got:?}, want {want:?}"));
            }
            let mut want_keys: Vec<String> = expect["errors"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            let mut got_keys: Vec<String> = source.errors.iter().map(|(k, _)| k.clone()).collect();
            want_keys.sort();
            got_keys.sort();
            if got_keys != want_keys {
                return Verdict::Fail(format!(
                    "error keys: got {:?}, want {want_keys:?}",
                    source.errors
                ));
            }
            Verdict::Pass
        }
        ("render", format) => {
            let got = render(&source, format);
            if got == expect {
                Verdict::Pass
            } else {
                Verdict::Fail(format!(
                    "got {got}\nwant {expect}\nerrors {:?}",
                    source.errors
                ))
            }
        }
        ("execute", _) => {
            let name = case["name"].as_str().unwrap_or_default();
            let Some(tool) = source.tools.iter().find(|t| t.name == name) else {
                // Routing an unknown name is the toolkit's job.
                return Verdict::Skip("unknown tool name: the toolkit answers it");
            };
            let got = tool
                .exec
                .execute(&case["args"], &ExecContext::default())
                .to_json();
            if got == expect {
                Verdict::Pass
            } else {
                Verdict::Fail(format!("got {got}, want {expect}"))
            }
        }
        other => Verdict::Fail(format!("unknown op {other:?}")),
    }
}

#[test]
fn mcp_vectors() {
    let vectors = load("tests/conformance/vectors/mcp.json");
    let divergences = load("tests/conformance/divergences.json");
    let diverging = divergences["divergences"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    // Proposed divergences are counted apart and not compared, as in the
    // other runners; tests/parts.rs asserts what the proposal decides.
    let proposed_doc = load("tests/conformance/proposed-divergences.json");
    let proposals = proposed_doc["divergences"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let (mut passed, mut failed, mut diverged, mut skipped, mut proposed) = (0, 0, 0, 0, 0);
    let mut failures = Vec::new();
    for case in vectors["cases"].as_array().cloned().unwrap_or_default() {
        let id = case["id"].as_str().unwrap_or_default().to_string();
        if diverging.contains_key(&id) {
            diverged += 1;
            continue;
        }
        if proposals.contains_key(&id) {
            proposed += 1;
            continue;
        }
        match run_case(&case) {
            Verdict::Pass => passed += 1,
            Verdict::Fail(why) => {
                failed += 1;
                failures.push(format!("{id}: {why}"));
            }
            Verdict::Skip(why) => {
                skipped += 1;
                eprintln!("skipped {id}: {why}");
            }
        }
    }
    eprintln!(
        "mcp parity: {passed} passed, {failed} failed, {diverged} divergences, {skipped} skipped, {proposed} proposed \
         (a skipped case is run with the whole toolkit by tests/conformance_core.rs and the Go and C harnesses)"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(passed > 0);
}

fn fixture(root: &Path) -> String {
    let vectors = load("tests/conformance/vectors/mcp.json");
    let script = vectors["cases"][0]["files"]["mcp_server.py"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let path = root.join("mcp_server.py");
    std::fs::write(&path, script).unwrap_or_else(|e| panic!("{e}"));
    path.to_string_lossy().into_owned()
}

/// Divergence mcp/config-as-path/mcpStatus: a string mcpConfig is a path to
/// an mcp.json file; JSON text is recognised by its leading '{'.
#[test]
fn divergence_config_as_path_reads_the_file() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let script = fixture(dir.path());
    let file = dir.path().join("mcp.json");
    std::fs::write(
        &file,
        json!({"mcpServers": {"j": {"command": ["python3", script, "paged"]}}}).to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let cfg = mcp::parse_config(&json!(file.to_string_lossy())).unwrap_or_else(|e| panic!("{e}"));
    let source = mcp::connect(&cfg);
    assert_eq!(
        source.statuses,
        vec![("j".to_string(), "connected".to_string())]
    );
    assert_eq!(
        mcp_support::names(&source),
        vec!["j_echo", "j_get_weather_now"]
    );

    // JSON text with leading spaces is still JSON text.
    let text = format!(
        "  {{\"mcpServers\":{{\"t\":{{\"command\":[\"python3\",{script:?},\"paged\"]}}}}}}"
    );
    let cfg = mcp::parse_config(&json!(text)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cfg.servers.len(), 1);

    // A missing file is an invalid_config error naming the file.
    let missing = dir.path().join("nope.json");
    let err = mcp::parse_config(&json!(missing.to_string_lossy())).err();
    let err = err.unwrap_or_else(|| panic!("a missing file must be an error"));
    assert_eq!(err.code, toolnexus::error::ErrorCode::InvalidConfig);
    assert!(err.message.contains("nope.json"), "{}", err.message);
}

/// Divergence mcp/config-top-level-builtins-key/toolNames: the top-level
/// builtins key of the MCP config is exposed for the toolkit to apply.
#[test]
fn divergence_top_level_builtins_key_is_exposed() {
    let cfg = mcp::parse_config(&json!({"builtins": false, "mcpServers": {}}))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cfg.builtins(), Some(&json!(false)));
    assert!(cfg.servers.is_empty());
    // In a raw server map it is a reserved sibling, not a server.
    let cfg = mcp::parse_config(
        &json!({"builtins": {"enabled": false}, "agents": {}, "s": {"command": ["x"]}}),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cfg.builtins(), Some(&json!({"enabled": false})));
    assert_eq!(
        cfg.servers
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        vec!["s"]
    );
    let cfg = mcp::parse_config(&json!({"mcpServers": {}})).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cfg.builtins(), None);
}

/// Divergence mcp/execute/structured: structuredContent keeps the server's
/// key order (JSON.stringify), the fixture sends z before a.
#[test]
fn divergence_structured_content_keeps_server_key_order() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let script = fixture(dir.path());
    let cfg = mcp::parse_config(
        &json!({"mcpServers": {"my server.v1": {"command": ["python3", script, "default"]}}}),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let source = mcp::connect(&cfg);
    let r = mcp_support::call(&source, "my_server_v1_structured", json!({}));
    assert_eq!(
        r.to_json(),
        json!({"output": "{\"z\":1,\"a\":{\"list\":[1,2.5,null,true],\"s\":\"é\"}}", "isError": false})
    );
}

#[test]
fn malformed_configs_are_invalid_config_errors_naming_the_problem() {
    let cases = [
        (json!(42), "got a number"),
        (json!("{not json"), "not valid JSON"),
        (json!({"mcpServers": []}), "mcpConfig.mcpServers"),
    ];
    for (value, needle) in cases {
        let err = mcp::parse_config(&value)
            .err()
            .unwrap_or_else(|| panic!("{value} must fail"));
        assert_eq!(err.code, toolnexus::error::ErrorCode::InvalidConfig);
        assert!(err.message.contains(needle), "{}", err.message);
    }
    // A bad server entry fails only that server.
    let cfg = mcp::parse_config(
        &json!({"mcpServers": {"bad": {"command": [1]}, "off": {"command": 5, "enabled": false}}}),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let source = mcp::connect(&cfg);
    assert_eq!(
        source.statuses,
        vec![
            ("bad".to_string(), "failed".to_string()),
            ("off".to_string(), "disabled".to_string())
        ]
    );
    assert_eq!(
        source.errors,
        vec![(
            "bad".to_string(),
            "mcp server \"bad\" failed at connect: invalid config (command[0]: expected a string, got a number)".to_string()
        )]
    );
}
