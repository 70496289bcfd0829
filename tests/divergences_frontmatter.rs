//! The front-matter decisions of divergences.json (`skills/frontmatter/*`,
//! `render/skills-frontmatter-edge-cases/*`,
//! `render/skills-empty-description-is-listed/skillsPrompt`), asserted on
//! the recorded inputs of those cases.

mod common;

use common::*;
use serde_json::{json, Value};
use toolnexus::toolkit::Toolkit;

fn case(id: &str) -> Value {
    cases()
        .into_iter()
        .map(|(_, c)| c)
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no vector case {id}"))
}

/// Builds the case's toolkit in its scratch dir and returns `(skills, prompt)`.
fn load(id: &str) -> (Value, String) {
    let c = case(id);
    let dir = lay_out(&c);
    let root = root_of(&dir);
    let cfg = substitute(&c["toolkit"], &root, "");
    let tk = Toolkit::build_from_json(&cfg.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let skills: Value =
        serde_json::from_str(&tk.render("skills").unwrap_or_default()).unwrap_or_default();
    let prompt: Value =
        serde_json::from_str(&tk.render("skillsPrompt").unwrap_or_default()).unwrap_or_default();
    (skills, prompt.as_str().unwrap_or_default().to_string())
}

fn only_skill(id: &str) -> Value {
    let (s, _) = load(id);
    assert_eq!(s["skipped"], json!([]), "{id}: nothing skipped");
    assert_eq!(
        s["skills"].as_array().map(Vec::len),
        Some(1),
        "{id}: one skill"
    );
    s["skills"][0].clone()
}

#[test]
fn duplicate_key_makes_front_matter_malformed() {
    let (s, _) = load("skills/frontmatter/dupkey");
    assert_eq!(s["skills"], json!([]));
    assert_eq!(s["skipped"][0]["reason"], "malformed-frontmatter");
}

#[test]
fn empty_or_null_value_means_absent() {
    assert_eq!(
        only_skill("skills/frontmatter/emptydesc")["description"],
        Value::Null
    );
    assert_eq!(
        only_skill("skills/frontmatter/nulldesc")["description"],
        Value::Null
    );
}

#[test]
fn quoted_scalars_process_escapes() {
    assert_eq!(
        only_skill("skills/frontmatter/escapes")["description"],
        "tab\there \"q\""
    );
    assert_eq!(
        only_skill("skills/frontmatter/sqescape")["description"],
        "it's"
    );
}

#[test]
fn block_scalars_flow_and_nested_maps_are_valid() {
    assert_eq!(
        only_skill("skills/frontmatter/folded")["description"],
        "folded line one line two"
    );
    assert_eq!(
        only_skill("skills/frontmatter/literal")["description"],
        "literal line one\nline two"
    );
    assert_eq!(
        only_skill("skills/frontmatter/flow")["description"],
        "has a flow seq key"
    );
    assert_eq!(
        only_skill("skills/frontmatter/nested")["description"],
        "nested map"
    );
}

#[test]
fn hash_after_plain_scalar_is_a_comment() {
    assert_eq!(
        only_skill("skills/frontmatter/hashval")["description"],
        "value"
    );
}

#[test]
fn values_are_trimmed_after_parsing() {
    let s = only_skill("skills/frontmatter/qspace");
    assert_eq!(s["name"], "qspace");
    assert_eq!(s["description"], "inner padding kept");
}

#[test]
fn edge_case_catalog_follows_the_same_decisions() {
    let (s, prompt) = load("render/skills-frontmatter-edge-cases/skillsPrompt");
    let names: Vec<&str> = s["skills"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x["name"].as_str())
        .collect();
    for n in [
        "folded", "literal", "flow", "nested", "hashval", "qspace", "sqescape", "escapes",
    ] {
        assert!(names.contains(&n), "{n} loads: {names:?}");
    }
    assert!(
        !names.contains(&"dupkey") && !names.contains(&"dupkey-first"),
        "{names:?}"
    );
    assert!(
        prompt.contains("- **folded**: folded line one line two"),
        "{prompt}"
    );
    assert!(prompt.contains("- **hashval**: value\n"), "{prompt}");
    assert!(
        !prompt.contains("**emptydesc**"),
        "undescribed skills are not listed: {prompt}"
    );
    assert!(!prompt.contains("**nulldesc**"), "{prompt}");
}

#[test]
fn empty_description_is_not_listed_in_the_prompt() {
    let (s, prompt) = load("render/skills-empty-description-is-listed/skillsPrompt");
    assert!(!s["skills"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|x| x["description"] == ""));
    for sk in s["skills"].as_array().into_iter().flatten() {
        let listed = prompt.contains(&format!("- **{}**", sk["name"].as_str().unwrap_or("")));
        assert_eq!(listed, !sk["description"].is_null(), "{sk} vs {prompt}");
    }
}
