//! The Gemini-safe schema cleaner (on the way to Gemini only) over every
//! tool schema the repository's tests already use — the ten builtins, the
//! schemas in the conformance vectors, the MCP servers the tests run
//! (the official Python SDK's server and the hand-written odd one) — and
//! over hostile ones: a 10 MB schema, `$ref` cycles, a definition graph
//! that doubles at every level, nesting far past the cut, and remote
//! references that a loopback canary server proves are never fetched.

mod translate_mock;

use serde_json::{json, Map, Value};
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use toolnexus::provider::gemini_schema::{clean, only_allowed_keys, MAX_DEPTH};
use toolnexus::toolkit::Toolkit;
use translate_mock::{Canned, MockProvider};

/// What every cleaned schema must be: Gemini's keys only, an object at the
/// top, and the same again when cleaned twice.
fn assert_gemini_safe(what: &str, schema: &Value) {
    let c = clean(schema);
    assert!(only_allowed_keys(&c), "{what}: {c}");
    assert_eq!(c["type"], "object", "{what}: {c}");
    assert_eq!(clean(&c), c, "{what}: cleaning is idempotent");
}

/// Every object under a key naming a tool schema, anywhere in `v`.
fn schemas_in(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if matches!(
                    k.as_str(),
                    "inputSchema" | "input_schema" | "parameters" | "parametersJsonSchema"
                ) && x.is_object()
                {
                    out.push(x.clone());
                }
                schemas_in(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| schemas_in(x, out)),
        _ => {}
    }
}

#[test]
fn the_builtin_tools_schemas_come_out_gemini_safe() {
    let tk = Toolkit::build_from_json("{}").expect("toolkit");
    let declared = tk.openai_declarations();
    assert!(declared.len() >= 10, "{}", declared.len());
    for d in &declared {
        let f = &d["function"];
        assert_gemini_safe(f["name"].as_str().unwrap_or("?"), &f["parameters"]);
    }
}

#[test]
fn every_schema_in_the_conformance_vectors_comes_out_gemini_safe() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/vectors");
    let mut schemas = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("vectors dir").flatten() {
        let text = std::fs::read_to_string(entry.path()).expect("vector file");
        let v: Value = serde_json::from_str(&text).expect("vector json");
        schemas_in(&v, &mut schemas);
    }
    assert!(schemas.len() > 100, "found {}", schemas.len());
    for (i, s) in schemas.iter().enumerate() {
        assert_gemini_safe(&format!("vector schema {i}"), s);
    }
}

#[test]
fn the_test_mcp_servers_schemas_come_out_gemini_safe() {
    let venv_python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python3");
    if !venv_python.exists() {
        eprintln!("skipped: no .venv (scripts/setup.sh makes it); tests/mcp_sdk.rs needs it too");
        return;
    }
    let script = |name: &str| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/mcp_servers")
            .join(name)
            .to_string_lossy()
            .into_owned()
    };
    let cfg = json!({"builtins": false, "mcpConfig": {"mcpServers": {
        "sdk": {"command": [venv_python, script("sdk_server.py"), "stdio"], "timeout": 20000},
        "odd": {"command": [venv_python, script("odd_tools.py")], "timeout": 20000}
    }}});
    let tk = Toolkit::build_from_json(&cfg.to_string()).expect("toolkit");
    let declared = tk.openai_declarations();
    assert!(declared.len() >= 5, "{declared:?}");
    for d in &declared {
        let f = &d["function"];
        assert_gemini_safe(f["name"].as_str().unwrap_or("?"), &f["parameters"]);
    }
}

#[test]
fn ref_cycles_and_self_references_are_cut_with_a_description() {
    let cyclic = json!({"$defs": {
        "a": {"type": "object", "properties": {"b": {"$ref": "#/$defs/b"}}},
        "b": {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}}
    }, "type": "object", "properties": {"start": {"$ref": "#/$defs/a"}, "me": {"$ref": "#"}}});
    let c = clean(&cyclic);
    assert!(only_allowed_keys(&c), "{c}");
    let again = &c["properties"]["start"]["properties"]["b"]["properties"]["a"];
    assert_eq!(again["type"], "object");
    assert!(
        again["description"]
            .as_str()
            .unwrap()
            .contains("recursive reference to #/$defs/a"),
        "{again}"
    );
    // The root referenced from inside itself: inlined once, then cut.
    let me = &c["properties"]["me"];
    assert!(me["properties"]["me"]["description"]
        .as_str()
        .unwrap()
        .contains("recursive reference to #"));
}

#[test]
fn a_definition_graph_that_doubles_each_level_stays_bounded() {
    let mut defs = Map::new();
    for i in 0..40 {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            json!({"type": "object", "properties": {"l": {"$ref": next}, "r": {"$ref": next}}}),
        );
    }
    defs.insert("d40".into(), json!({"type": "string"}));
    let schema =
        json!({"type": "object", "$defs": defs, "properties": {"root": {"$ref": "#/$defs/d0"}}});
    let started = Instant::now();
    let c = clean(&schema);
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(only_allowed_keys(&c));
    assert!(c.to_string().len() < 64 << 20, "bounded output");
    assert!(c.to_string().contains("nodes;"), "the budget cut something");
}

#[test]
fn nesting_far_past_the_cut_is_cut_without_overflowing_the_stack() {
    // Built by moving each level in (json! would serialise the inner
    // value recursively on the test's own stack).
    let mut v = json!({"type": "string"});
    for _ in 0..2000 {
        let mut props = Map::new();
        props.insert("x".into(), v);
        let mut level = Map::new();
        level.insert("type".into(), json!("object"));
        level.insert("properties".into(), Value::Object(props));
        v = Value::Object(level);
    }
    let c = std::thread::Builder::new()
        .stack_size(512 << 10)
        .spawn(move || {
            let c = clean(&v);
            // Dropping the deep input is the test's own business: leak it
            // rather than recurse 2,000 levels in drop on a small stack.
            std::mem::forget(v);
            c
        })
        .expect("thread")
        .join()
        .expect("no stack overflow");
    assert!(only_allowed_keys(&c));
    assert!(c.to_string().contains(&format!("deeper than {MAX_DEPTH}")));
}

#[test]
fn a_ten_megabyte_schema_is_cleaned_in_time() {
    let mut props = Map::new();
    let filler = "x".repeat(1000);
    for i in 0..10_000 {
        props.insert(
            format!("p{i}"),
            json!({"type": ["string", "null"], "description": filler, "format": "uri",
                "examples": ["a"], "$comment": "dropped"}),
        );
    }
    let schema = json!({"type": "object", "properties": props, "additionalProperties": false});
    assert!(schema.to_string().len() >= 10_000_000);
    let started = Instant::now();
    let c = clean(&schema);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(only_allowed_keys(&c));
    assert_eq!(c["properties"].as_object().unwrap().len(), 10_000);
    assert_eq!(
        c["properties"]["p9999"],
        json!({"type": "string", "description": filler, "nullable": true})
    );
}

#[test]
fn remote_refs_are_never_fetched_a_canary_server_sees_nothing() {
    let canary = TcpListener::bind("127.0.0.1:0").expect("bind");
    canary.set_nonblocking(true).expect("nonblocking");
    let url = format!("http://127.0.0.1:{}", canary.local_addr().unwrap().port());
    let schema = json!({
        "$schema": format!("{url}/meta"),
        "$id": format!("{url}/schema.json"),
        "type": "object",
        "properties": {
            "far": {"$ref": format!("{url}/defs.json#/$defs/x"), "description": "remote"},
            "rel": {"$ref": "other.json#/x"}
        }
    });
    // Through the whole translate path, to a mock Gemini.
    let mock = MockProvider::start(vec![Canned::json(
        200,
        &json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}),
    )]);
    let client = json!({"baseUrl": mock.base(), "style": "gemini", "model": "g", "apiKey": "k", "retries": 0});
    let request = json!({"messages": [{"role": "user", "content": "x"}],
        "tools": [{"type": "function", "function": {"name": "t", "parameters": schema}}]});
    let out = toolnexus::translate::translate(&client, &request, &[], None).expect("translate");
    assert_eq!(out["text"], "ok");
    let sent = mock.requests()[0].json_body();
    let params = &sent["tools"][0]["functionDeclarations"][0]["parameters"];
    assert!(only_allowed_keys(params), "{params}");
    assert!(params["properties"]["far"]["description"]
        .as_str()
        .unwrap()
        .starts_with("remote (a reference to another document"));
    assert!(params["properties"]["rel"]["description"]
        .as_str()
        .unwrap()
        .contains("not followed"));
    match canary.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the canary was contacted: {other:?}"),
    }
}

#[test]
fn the_gemini_render_keeps_the_full_schema() {
    // §4's render is pinned by the vectors: the cleaner is not on its path.
    let tk = Toolkit::build_from_json(r#"{"builtins":false}"#).expect("toolkit");
    let schema = json!({"type": "object", "$defs": {"n": {"type": "number"}},
        "properties": {"a": {"$ref": "#/$defs/n"}}, "additionalProperties": false});
    tk.register(toolnexus::tool::Tool::new(
        "t",
        "d",
        Some(schema.clone()),
        toolnexus::tool::Source::Native,
        std::sync::Arc::new(|_: &Value, _: &toolnexus::tool::ExecContext| {
            toolnexus::tool::ToolResult::ok("x")
        }),
    ));
    let rendered: Value = serde_json::from_str(&tk.render("gemini").unwrap()).unwrap();
    assert!(rendered.to_string().contains("$defs"), "{rendered}");
    assert!(
        rendered.to_string().contains("additionalProperties"),
        "{rendered}"
    );
}
