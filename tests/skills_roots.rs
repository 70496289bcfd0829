//! A `skillsDir` root that gives no skill is named in `status.warnings`
//! (the build still succeeds): a root that does not exist, a file, and a
//! directory without any SKILL.md. A root with skills adds no warning.

use serde_json::{json, Value};
use toolnexus::toolkit::Toolkit;

fn warnings(skills_dir: Value) -> Vec<String> {
    let tk = Toolkit::build_from_json(&json!({ "skillsDir": skills_dir }).to_string())
        .unwrap_or_else(|e| panic!("build failed: {e:?}"));
    let status: Value = serde_json::from_str(&tk.render("status").expect("status renders"))
        .expect("status is JSON");
    status["warnings"]
        .as_array()
        .expect("status.warnings is an array")
        .iter()
        .map(|w| w.as_str().expect("a warning is a string").to_string())
        .collect()
}

fn bundled() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills").to_string()
}

#[test]
fn a_missing_root_is_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("skills").display().to_string();
    assert_eq!(
        warnings(json!(missing)),
        [format!("skillsDir \"{missing}\" does not exist")]
    );
}

#[test]
fn a_root_without_skill_md_is_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("notes")).expect("mkdir");
    std::fs::write(dir.path().join("notes/README.md"), "# not a skill\n").expect("write");
    let root = dir.path().display().to_string();
    assert_eq!(
        warnings(json!(root)),
        [format!("skillsDir \"{root}\" holds no SKILL.md")]
    );
}

#[test]
fn a_file_as_root_is_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("SKILL.md");
    std::fs::write(&file, "---\nname: x\ndescription: y\n---\nbody\n").expect("write");
    let file = file.display().to_string();
    assert_eq!(
        warnings(json!(file)),
        [format!("skillsDir \"{file}\" is not a directory")]
    );
}

#[test]
fn only_the_root_that_gives_nothing_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope").display().to_string();
    assert!(warnings(json!(bundled())).is_empty());
    assert_eq!(
        warnings(json!([bundled(), missing])),
        [format!("skillsDir \"{missing}\" does not exist")]
    );
}
