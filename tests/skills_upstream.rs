//! Skill discovery as upstream 0.21 does it (ADR 0028, issue #93, addenda
//! A1/A10/A15): YAML first, a line-wise rescue of what YAML refused, the
//! parser's detail on every skip, first-wins decided by depth then code
//! point, each real directory walked once, fences at the start of a line,
//! the body's trailing newlines kept. Each test names the upstream test
//! (tests/ of the Python port 0.21.0) it follows.
//!
//! The cases of skills.json that pin the 0.16 behaviour are decided
//! divergences (divergences.json, accepted from the proposals of an earlier
//! stop); `divergent_skill_cases_hold_the_021_rules` runs their recorded
//! inputs and checks the recorded answer as the 0.21 rules change it. A case
//! proposed later (proposed-divergences.json) is held to the same rules.

mod common;

use common::*;
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use toolnexus::toolkit::Toolkit;

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

/// The `skills` and `skillsInventory` renders of a toolkit over `cfg`.
fn renders(cfg: &Value) -> (Value, Value) {
    let tk = Toolkit::build_from_json(&cfg.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let parse = |f: &str| -> Value {
        serde_json::from_str(&tk.render(f).unwrap_or_else(|e| panic!("{e}"))).expect("JSON")
    };
    (parse("skills"), parse("skillsInventory"))
}

fn skills_of(root: &Path) -> Value {
    renders(&json!({"builtins": false, "skillsDir": root.to_string_lossy()})).0
}

fn description_of(loaded: &Value, name: &str) -> Value {
    loaded["skills"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == name))
        .map(|s| s["description"].clone())
        .unwrap_or_else(|| panic!("no skill {name} in {loaded}"))
}

fn reasons(loaded: &Value) -> Vec<String> {
    loaded["skipped"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| s["reason"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

// Follows test_consumer_issues_86_93.py::test_d6_first_wins_in_a_deterministic_discovery_order.
#[test]
fn first_wins_in_code_point_order_of_the_relative_path() {
    let tmp = tempfile::tempdir().expect("tmp");
    for sub in ["b-second", "a-first"] {
        write(
            tmp.path(),
            &format!("{sub}/SKILL.md"),
            &format!("---\nname: dup\ndescription: from {sub}\n---\nbody\n"),
        );
    }
    let s = skills_of(tmp.path());
    assert_eq!(description_of(&s, "dup"), "from a-first");
    assert_eq!(reasons(&s), ["duplicate-name"]);
}

// Follows test_consumer_issues_86_93.py::test_d6_a1a_code_point_order_decides_the_winner.
#[test]
fn code_point_order_puts_upper_case_first() {
    let tmp = tempfile::tempdir().expect("tmp");
    for rel in ["docx", "synced/9f3a/docx", "Zsync"] {
        write(
            tmp.path(),
            &format!("{rel}/SKILL.md"),
            &format!("---\nname: docx\ndescription: from {rel}\n---\nbody\n"),
        );
    }
    let s = skills_of(tmp.path());
    assert_eq!(description_of(&s, "docx"), "from Zsync");
    assert_eq!(reasons(&s), ["duplicate-name", "duplicate-name"]);
}

// Follows test_consumer_issues_86_93.py::test_d6_a15_depth_beats_code_point.
#[test]
fn a_shallower_skill_beats_a_nested_copy_whatever_its_name() {
    let tmp = tempfile::tempdir().expect("tmp");
    for rel in ["xlsx", "synced/b71e/xlsx"] {
        write(
            tmp.path(),
            &format!("{rel}/SKILL.md"),
            &format!("---\nname: xlsx\ndescription: from {rel}\n---\nbody\n"),
        );
    }
    let s = skills_of(tmp.path());
    assert_eq!(description_of(&s, "xlsx"), "from xlsx");
    let skipped = &s["skipped"][0]["location"];
    assert!(
        skipped
            .as_str()
            .is_some_and(|l| l.ends_with("synced/b71e/xlsx/SKILL.md")),
        "{skipped}"
    );
}

// Follows test_consumer_issues_86_93.py::test_d6_the_fallback_rescues_frontmatter_yaml_refused
// and the colon-space rows of ::test_d6_the_fixture_table_is_the_cross_port_arbiter.
#[test]
fn a_plain_value_holding_colon_space_loads_as_claude_code_loads_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    write(
        tmp.path(),
        "colon-space/SKILL.md",
        "---\nname: colon-space\ndescription: Work out billable hours. Trigger on: update the timesheet, do my timesheet.\n---\nbody\n",
    );
    write(
        tmp.path(),
        "broken-flow/SKILL.md",
        "---\nname: broken-flow\ndescription: [unterminated, list\n---\nbody\n",
    );
    write(
        tmp.path(),
        "broken-tab/SKILL.md",
        "---\nname: broken-tab\ndescription: tab-indented continuation\n\tsecond: line\n---\nbody\n",
    );
    let s = skills_of(tmp.path());
    assert_eq!(s["skipped"], json!([]));
    assert_eq!(
        description_of(&s, "colon-space"),
        "Work out billable hours. Trigger on: update the timesheet, do my timesheet."
    );
    // The rescue invents nothing: a value opening `[` is refused.
    assert_eq!(description_of(&s, "broken-flow"), Value::Null);
    assert_eq!(
        description_of(&s, "broken-tab"),
        "tab-indented continuation"
    );
}

// Follows test_consumer_issues_86_93.py::test_d6_skips_carry_the_native_parser_detail
// and test_unit.py::test_s3_list_skills_typed_skips.
#[test]
fn skips_carry_the_parsers_detail_in_both_renders() {
    let tmp = tempfile::tempdir().expect("tmp");
    write(tmp.path(), "s/SKILL.md", "---\n: [unclosed\n---\nbody\n");
    write(
        tmp.path(),
        "noname/SKILL.md",
        "---\ndescription: no name\n---\nbody\n",
    );
    let (loaded, inventory) =
        renders(&json!({"builtins": false, "skillsDir": tmp.path().to_string_lossy()}));
    for view in [&loaded, &inventory] {
        let skipped = view["skipped"].as_array().expect("skipped");
        assert_eq!(skipped.len(), 2, "{view}");
        let bad = skipped
            .iter()
            .find(|s| s["reason"] == "malformed-frontmatter")
            .expect("malformed skip");
        assert!(
            bad["detail"].as_str().is_some_and(|d| !d.is_empty()),
            "{bad}"
        );
        // A skip with no parser message carries no detail key at all.
        let plain = skipped
            .iter()
            .find(|s| s["reason"] == "missing-name")
            .expect("missing-name skip");
        assert_eq!(plain.get("detail"), None, "{plain}");
    }
}

// Upstream has no size cap; issue 12 asks for one so that a hostile file is
// a skip, not seconds of YAML parsing. Timing is not asserted: the skip's
// detail says the cap, not the parser, refused it.
#[test]
fn a_huge_front_matter_is_a_skip_with_a_reason() {
    let tmp = tempfile::tempdir().expect("tmp");
    write(
        tmp.path(),
        "brackets/SKILL.md",
        &format!("---\n{}\n---\nbody\n", "[".repeat(100 * 1024)),
    );
    write(
        tmp.path(),
        "nested/SKILL.md",
        &format!("---\nname: {}\n---\nbody\n", "[".repeat(6000)),
    );
    let s = skills_of(tmp.path());
    assert_eq!(s["skills"], json!([]));
    let details: Vec<&str> = s["skipped"]
        .as_array()
        .expect("skipped")
        .iter()
        .map(|k| {
            assert_eq!(k["reason"], "malformed-frontmatter", "{k}");
            k["detail"].as_str().unwrap_or_default()
        })
        .collect();
    assert!(
        details[0].contains("more than the 8192 bytes"),
        "{details:?}"
    );
    assert!(details[1].contains("'[' and '{'"), "{details:?}");
}

// Follows the fence regex of upstream skill.py (`\n---` closes the block):
// a `---` indented inside a block scalar does not end the front matter.
#[test]
fn an_indented_fence_is_front_matter_text() {
    let tmp = tempfile::tempdir().expect("tmp");
    write(
        tmp.path(),
        "fence/SKILL.md",
        "---\nname: fence\ndescription: |\n  above\n  ---\n  below\n---\n# Body\n",
    );
    let (loaded, _) =
        renders(&json!({"builtins": false, "skillsDir": tmp.path().to_string_lossy()}));
    assert_eq!(description_of(&loaded, "fence"), "above\n---\nbelow");
    assert_eq!(loaded["skills"][0]["content"], "# Body\n");
}

// Follows test_unit.py::test_skill_discovery_follows_symlinked_dirs and the
// `seen` set of upstream skill.py's _walk_skill_files: a real directory that
// two symlinks lead to is walked once, so its skill is found once (no
// duplicate-name skip), at the shallower, code-point smaller path.
#[test]
fn a_directory_two_links_lead_to_is_one_skill() {
    let tmp = tempfile::tempdir().expect("tmp");
    write(
        tmp.path(),
        "outside/shared/SKILL.md",
        "---\nname: shared\ndescription: reached twice\n---\nbody\n",
    );
    write(
        tmp.path(),
        "skills/direct/SKILL.md",
        "---\nname: direct\ndescription: d\n---\nbody\n",
    );
    fs::create_dir_all(tmp.path().join("skills/deeper")).expect("mkdir");
    let target = tmp.path().join("outside/shared");
    std::os::unix::fs::symlink(&target, tmp.path().join("skills/zz-link")).expect("link");
    std::os::unix::fs::symlink(&target, tmp.path().join("skills/deeper/a-link")).expect("link");
    std::os::unix::fs::symlink(&target, tmp.path().join("skills/b-link")).expect("link");
    let s = skills_of(&tmp.path().join("skills"));
    assert_eq!(s["skipped"], json!([]), "{s}");
    let locations: Vec<&str> = s["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .map(|k| k["location"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(locations.len(), 2, "{locations:?}");
    assert!(
        locations[0].ends_with("skills/b-link/SKILL.md"),
        "{locations:?}"
    );
    assert!(
        locations[1].ends_with("skills/direct/SKILL.md"),
        "{locations:?}"
    );
}

/// The body of a recorded SKILL.md as 0.21 reads it: after the closing
/// fence's line end, line ends made `\n`, trailing newlines kept.
fn body_of(text: &str) -> String {
    let text = text.replace("\r\n", "\n");
    let rest = text.strip_prefix("---\n").expect("front matter");
    let close = rest.find("\n---").expect("closing fence");
    let after = &rest[close + 4..];
    after.strip_prefix('\n').unwrap_or(after).to_string()
}

/// The recorded expectation of a skills case as the 0.21 rules change it.
fn as_021(case: &Value, root: &str, view: &Value) -> Value {
    let mut view = view.clone();
    let files = case["files"].as_object().cloned().unwrap_or_default();
    let links = case["symlinks"].as_object().cloned().unwrap_or_default();
    if let Some(skills) = view["skills"].as_array_mut() {
        for s in skills.iter_mut().filter(|s| s["origin"] == "fs") {
            let location = s["location"].as_str().unwrap_or_default();
            let rel = location
                .strip_prefix(&format!("{root}/"))
                .unwrap_or(location);
            // A file reached through a recorded symlink is read from its target.
            let text = files.get(rel).cloned().or_else(|| {
                links.iter().find_map(|(link, target)| {
                    let target = target.as_str()?.replace("${ROOT}", root);
                    let tail = rel.strip_prefix(link.as_str())?;
                    let target_rel = target.strip_prefix(&format!("{root}/"))?;
                    files.get(&format!("{target_rel}{tail}")).cloned()
                })
            });
            let text = text.and_then(|t| t.as_str().map(str::to_string));
            s["content"] = json!(body_of(&text.unwrap_or_else(|| panic!("no file {rel}"))));
        }
        // Depth first, then code point of the path (fs skills come first,
        // in discovery order; data skills keep their place after them).
        let depth = |s: &Value| s["location"].as_str().map_or(0, |l| l.matches('/').count());
        let fs_count = skills.iter().filter(|s| s["origin"] == "fs").count();
        skills[..fs_count].sort_by(|a, b| {
            depth(a)
                .cmp(&depth(b))
                .then_with(|| a["location"].as_str().cmp(&b["location"].as_str()))
        });
    }
    if let Some(skipped) = view["skipped"].as_array_mut() {
        for s in skipped.iter_mut() {
            if s["reason"] == "malformed-frontmatter" {
                let rel = s["location"]
                    .as_str()
                    .and_then(|l| l.strip_prefix(&format!("{root}/")))
                    .unwrap_or_default()
                    .to_string();
                let text = files.get(&rel).and_then(Value::as_str).unwrap_or_default();
                let closed = text
                    .strip_prefix("---\n")
                    .is_some_and(|rest| rest.contains("\n---"));
                if !closed {
                    s["reason"] = json!("missing-name");
                }
            }
        }
    }
    view
}

/// The ids of the divergences (decided or proposed) whose decision or backing
/// names upstream 0.21's rules; the older YAML-parser divergences have their
/// own tests (tests/divergences_frontmatter.rs).
fn cases_backed_by_021() -> std::collections::BTreeSet<String> {
    let mut ids = std::collections::BTreeSet::new();
    for file in ["divergences.json", "proposed-divergences.json"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/conformance")
            .join(file);
        let doc: Value = serde_json::from_slice(&fs::read(path).expect("divergences file"))
            .expect("divergences JSON");
        for (id, d) in doc["divergences"].as_object().into_iter().flatten() {
            let text = format!("{} {}", d["decision"], d["backing"]);
            if text.contains("0.21") {
                ids.insert(id.clone());
            }
        }
    }
    ids
}

#[test]
fn divergent_skill_cases_hold_the_021_rules() {
    let proposals = cases_backed_by_021();
    let mut ran = 0;
    for (_, case) in cases() {
        let id = case["id"].as_str().unwrap_or_default();
        if case["op"] != "loadSkills" || !proposals.contains(id) {
            continue;
        }
        let dir = lay_out(&case);
        let root = root_of(&dir);
        let case = substitute(&case, &root, "");
        let (loaded, inventory) = renders(&case["toolkit"]);
        let want_loaded = as_021(&case, &root, &map_loaded(&case["expect"]["loaded"]));
        let want_inventory = as_021(&case, &root, &case["expect"]["inventory"]);
        if let Some(d) = diff("loaded", &want_loaded, &loaded) {
            panic!("{id}: {d}");
        }
        if let Some(d) = diff("inventory", &want_inventory, &inventory) {
            panic!("{id}: {d}");
        }
        ran += 1;
    }
    assert!(ran >= 17, "only {ran} divergent skill cases ran");
}
