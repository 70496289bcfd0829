//! The Gemini-safe schema cleaner (on the way to Gemini only) over every
//! tool schema the repository's tests already use — the ten builtins, the
//! schemas in the conformance vectors, the MCP servers the tests run
//! (the official Python SDK's server and the hand-written odd one) — over
//! a corpus of real public MCP servers' tool schemas
//! (tests/data/mcp-schema-corpus.md), and over hostile ones: a 10 MB schema, `$ref` cycles, a definition graph
//! that doubles at every level, nesting far past the cut, and remote
//! references that a loopback canary server proves are never fetched.

mod translate_mock;

use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
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

/// The corpus's lines: each `{"source", "server", "tool", "inputSchema"}`.
/// Read through the system's `gzip` (no gzip crate in the tree).
fn corpus() -> Vec<Value> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/mcp-schema-corpus.jsonl.gz");
    let out = Command::new("gzip")
        .arg("-dc")
        .arg(&path)
        .output()
        .expect("run gzip -dc (the corpus is gzipped)");
    assert!(
        out.status.success(),
        "gzip -dc {}: {:?}",
        path.display(),
        out
    );
    let text = String::from_utf8(out.stdout).expect("utf-8 corpus");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect()
}

/// The JSON Schema keywords a schema uses, at any depth: property names,
/// `enum`/`const`/`default`/`examples` values and `required` names are data,
/// not keywords, and are not looked into.
fn keywords(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                match k.as_str() {
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas" => {
                        if let Value::Object(named) = x {
                            named.values().for_each(|s| keywords(s, out));
                        }
                    }
                    "enum" | "const" | "default" | "examples" | "example" | "required"
                    | "title" | "description" => {}
                    _ => keywords(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| keywords(x, out)),
        _ => {}
    }
}

/// Whether any node of the schema has a `type` that is an array.
fn has_type_array(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, x)| match k.as_str() {
            "type" => x.is_array(),
            "enum" | "const" | "default" | "examples" | "example" | "required" => false,
            "properties" | "patternProperties" | "$defs" | "definitions" => x
                .as_object()
                .is_some_and(|n| n.values().any(has_type_array)),
            _ => has_type_array(x),
        }),
        Value::Array(a) => a.iter().any(has_type_array),
        _ => false,
    }
}

/// The nodes of a cleaned schema that name no type and have no `anyOf`
/// (Gemini refuses them: "type: must be specified"), each with its path.
fn typeless(v: &Value, at: String, out: &mut Vec<(String, Value)>) {
    let Value::Object(m) = v else { return };
    if !m.contains_key("type") && !m.contains_key("anyOf") {
        out.push((at.clone(), v.clone()));
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        for (name, p) in props {
            typeless(p, format!("{at}/properties/{name}"), out);
        }
    }
    if let Some(items) = m.get("items") {
        typeless(items, format!("{at}/items"), out);
    }
    if let Some(Value::Array(members)) = m.get("anyOf") {
        for (i, x) in members.iter().enumerate() {
            typeless(x, format!("{at}/anyOf/{i}"), out);
        }
    }
}

/// The keys of a cleaned node that constrain no value.
const ANNOTATIONS: [&str; 5] = ["title", "description", "default", "example", "nullable"];

#[test]
fn a_corpus_of_real_mcp_servers_schemas_comes_out_gemini_safe() {
    let rows = corpus();
    let mut sources = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let (mut refs, mut alternatives, mut type_arrays, mut consts, mut additional) = (0, 0, 0, 0, 0);
    let (mut untyped_top, mut other_top) = (0, 0);
    let mut failures = Vec::new();
    // Typeless nodes left after cleaning, and those of a kind the cleaner
    // gives a type to (an enum; an anyOf member that constrains nothing).
    let (mut untyped, mut untyped_schemas, mut inferable) = (0, 0, Vec::new());
    for row in &rows {
        let source = row["source"].as_str().expect("source");
        let repo: Vec<&str> = source.splitn(3, '/').take(2).collect();
        sources.insert(repo.join("/"));
        let schema = &row["inputSchema"];
        assert!(schema.is_object(), "{source}: {schema}");
        assert!(seen.insert(schema.to_string()), "{source}: a duplicate");
        let mut k = BTreeSet::new();
        keywords(schema, &mut k);
        let uses = |names: &[&str]| names.iter().any(|n| k.contains(*n));
        refs += usize::from(uses(&["$ref", "$defs", "definitions"]));
        alternatives += usize::from(uses(&["anyOf", "oneOf"]));
        type_arrays += usize::from(has_type_array(schema));
        consts += usize::from(uses(&["const"]));
        additional += usize::from(uses(&["additionalProperties"]));
        match schema.get("type") {
            Some(t) if t == "object" => {}
            None => untyped_top += 1,
            Some(_) => other_top += 1,
        }
        let what = format!("{source} {} {}", row["server"], row["tool"]);
        let checked = std::panic::catch_unwind(|| assert_gemini_safe(&what, schema));
        if checked.is_err() {
            failures.push(what.clone());
        }
        let mut left = Vec::new();
        typeless(&clean(schema), String::new(), &mut left);
        untyped += left.len();
        untyped_schemas += usize::from(!left.is_empty());
        for (at, node) in left {
            let keys: Vec<&String> = node
                .as_object()
                .map(|m| m.keys().collect())
                .unwrap_or_default();
            let in_union = at.rsplit('/').nth(1) == Some("anyOf");
            if node.get("enum").is_some()
                || (in_union && keys.iter().all(|k| ANNOTATIONS.contains(&k.as_str())))
            {
                inferable.push(format!("{what} at {at}: {node}"));
            }
        }
    }
    println!(
        "corpus: {} schemas from {} sources; $ref/$defs {refs}, anyOf/oneOf {alternatives}, \
         type arrays {type_arrays}, const {consts}, additionalProperties {additional}, \
         top not an object {} (no type {untyped_top}, another type {other_top}); \
         after cleaning, {untyped} nodes in {untyped_schemas} schemas still name no type",
        rows.len(),
        sources.len(),
        untyped_top + other_top,
    );
    assert!(rows.len() >= 1000, "{} schemas", rows.len());
    assert!(sources.len() >= 5, "{sources:?}");
    assert!(
        failures.is_empty(),
        "{} failed: {failures:#?}",
        failures.len()
    );
    assert!(
        inferable.is_empty(),
        "{} typeless nodes the cleaner should type: {inferable:#?}",
        inferable.len()
    );
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
