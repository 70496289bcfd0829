//! LiteLLM as a differential reference (issue 29): for each OpenAI-shaped
//! request of tests/litellm/requests.json, the Anthropic and Gemini bodies
//! `translate::provider_body` builds, beside the ones the pinned LiteLLM
//! builds for the same request (tests/litellm/diff.py, run by the
//! `python3` on PATH; CI puts the pinned venv's first). diff.py normalises
//! both (what the provider documents as the same request written two ways)
//! and lists every field that differs; each must be in
//! tests/litellm/accepted.json with the provider's documented rule that
//! makes ours right, and every accepted entry must still occur.
//!
//! The request's `messages`, `tools`, `tool_choice` and `max_tokens` are
//! translate's request (`toolChoice`, `maxTokens`); every other parameter
//! (`temperature`, `stop`, `thinking`, `reasoning_effort`, …) is the
//! client's `requestParams`, as a host of translate passes them.
//!
//! `TN_LITELLM_KEEP=DIR` keeps ours.json and diffs.json there.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use toolnexus::translate::{node, provider_body, ClientConfig, Request};

const STYLES: [(&str, &str); 2] = [
    ("anthropic", "claude-sonnet-4-5"),
    ("gemini", "gemini-2.5-flash"),
];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/litellm")
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An OpenAI chat request split into translate's client and request.
fn split(style: &str, model: &str, openai: &Value) -> (Value, Value) {
    let mut request = Map::new();
    let mut params = Map::new();
    for (k, v) in openai.as_object().expect("a request is an object") {
        let ours = match k.as_str() {
            "messages" => "messages",
            "tools" => "tools",
            "tool_choice" => "toolChoice",
            "max_tokens" => "maxTokens",
            _ => {
                params.insert(k.clone(), v.clone());
                continue;
            }
        };
        request.insert(ours.into(), v.clone());
    }
    let mut client =
        json!({"baseUrl": "http://127.0.0.1:9", "style": style, "model": model, "apiKey": "k"});
    if !params.is_empty() {
        client["requestParams"] = Value::Object(params);
    }
    (client, Value::Object(request))
}

/// Our provider body for `openai` sent to `style`.
fn ours(style: &str, model: &str, openai: &Value) -> Value {
    let (client, request) = split(style, model, openai);
    let config = ClientConfig::from_json(&client).expect("a valid client");
    let bump = bumpalo::Bump::new();
    let request = node::from_value(&bump, &request);
    let request = Request::from_node(request).expect("a valid request");
    provider_body(&bump, &config, &request, &[]).to_value()
}

/// What identifies a difference: request, style, path, and both values
/// (absent when the side has no such field).
fn key(d: &Value) -> String {
    let side = |k: &str| d.get(k).map_or(json!(["absent"]), |v| json!([v]));
    json!([d["id"], d["style"], d["path"], side("ours"), side("theirs")]).to_string()
}

#[test]
fn our_anthropic_and_gemini_bodies_beside_litellms() {
    let requests = read(&dir().join("requests.json"))["requests"]
        .as_array()
        .expect("requests")
        .clone();
    assert!(requests.len() >= 50, "the corpus has at least 50 requests");
    let mut bodies = Map::new();
    for (style, model) in STYLES {
        let by_id: Map<String, Value> = requests
            .iter()
            .map(|r| {
                let id = r["id"].as_str().expect("an id").to_string();
                (id, ours(style, model, &r["request"]))
            })
            .collect();
        bodies.insert(style.into(), Value::Object(by_id));
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let work =
        std::env::var_os("TN_LITELLM_KEEP").map_or_else(|| tmp.path().to_path_buf(), PathBuf::from);
    std::fs::create_dir_all(&work).expect("work dir");
    let ours_path = work.join("ours.json");
    let diffs_path = work.join("diffs.json");
    std::fs::write(
        &ours_path,
        serde_json::to_vec_pretty(&Value::Object(bodies)).unwrap(),
    )
    .expect("write ours.json");
    let _ = std::fs::remove_file(&diffs_path);
    let out = match Command::new("python3")
        .arg(dir().join("diff.py"))
        .arg(&ours_path)
        .arg(&diffs_path)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            println!("SKIPPED: litellm not installed (no python3: {e})");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "diff.py failed:\n{stdout}\n{stderr}");
    if stdout.contains("SKIPPED: litellm not installed") {
        println!("SKIPPED: litellm not installed");
        return;
    }
    print!("{stdout}");

    let found = read(&diffs_path);
    let found = found.as_array().expect("a list of differences");
    let accepted = read(&dir().join("accepted.json"));
    let categories = accepted["categories"].as_object().expect("categories");
    let entries = accepted["entries"].as_array().expect("entries");
    let mut listed: BTreeMap<String, &Value> = BTreeMap::new();
    for e in entries {
        let category = e["category"].as_str().expect("an entry's category");
        let c = categories
            .get(category)
            .unwrap_or_else(|| panic!("accepted entry {e} names no known category"));
        assert!(
            c["rule"].as_str().is_some_and(|r| !r.is_empty())
                && c["doc"].as_str().is_some_and(|d| d.starts_with("https://")),
            "category {category} needs a rule and an https doc URL"
        );
        assert!(listed.insert(key(e), e).is_none(), "accepted twice: {e}");
    }
    let found_keys: BTreeMap<String, &Value> = found.iter().map(|d| (key(d), d)).collect();
    let new: Vec<&&Value> = found_keys
        .iter()
        .filter(|(k, _)| !listed.contains_key(*k))
        .map(|(_, d)| d)
        .collect();
    let gone: Vec<&&Value> = listed
        .iter()
        .filter(|(k, _)| !found_keys.contains_key(*k))
        .map(|(_, e)| e)
        .collect();
    let accepted_count = found_keys.len() - new.len();
    println!(
        "litellm diff: {} requests, {} differences ({} accepted)",
        requests.len(),
        found_keys.len(),
        accepted_count
    );
    let mut per_category: BTreeMap<&str, usize> = BTreeMap::new();
    for (k, e) in &listed {
        if found_keys.contains_key(k) {
            *per_category
                .entry(e["category"].as_str().unwrap_or(""))
                .or_default() += 1;
        }
    }
    for (c, n) in &per_category {
        println!("  {n:4}  {c}");
    }
    let show = |list: &[&&Value]| {
        list.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut problems = String::new();
    if !new.is_empty() {
        problems += &format!(
            "{} difference(s) beside LiteLLM not in tests/litellm/accepted.json (fix ours, or accept with the provider's rule):\n{}\n",
            new.len(),
            show(&new)
        );
    }
    if !gone.is_empty() {
        problems += &format!(
            "{} accepted difference(s) no longer occur (remove them from tests/litellm/accepted.json):\n{}\n",
            gone.len(),
            show(&gone)
        );
    }
    assert!(problems.is_empty(), "{problems}");
}
