//! Parity of the ten builtins with the recorded vectors: every `execute`
//! case of execute.json whose tool is a builtin, run through
//! `toolnexus::builtin::run` in a fresh directory that is the process cwd.
//! The routing cases that depend on toolkit config belong to the toolkit's
//! own harness. Cases listed in divergences.json are counted, not compared;
//! tests/builtins_divergences.rs asserts each decision.

mod builtins_support;

use builtins_support::{snapshot_json, Canned, MockServer};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use toolnexus::builtin::{self, NAMES};
use toolnexus::tool::ExecContext;

fn conformance_dir() -> PathBuf {
    std::env::var_os("TN_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/vectors"))
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The case ids of one divergence file (decided, or proposed and pending
/// review); each decision has its own test in tests/builtins_divergences.rs.
fn divergence_ids(file: &str) -> BTreeSet<String> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conformance")
        .join(file);
    let mut ids = BTreeSet::new();
    if p.exists() {
        if let Some(m) = load(&p)["divergences"].as_object() {
            ids.extend(m.keys().cloned());
        }
    }
    ids
}

/// Replaces `${ROOT}` and `${BASE}` in every string of `v`.
fn subst(v: &Value, root: &str, base: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace("${ROOT}", root).replace("${BASE}", base)),
        Value::Array(a) => Value::Array(a.iter().map(|x| subst(x, root, base)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.replace("${ROOT}", root), subst(x, root, base)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Removes a dot-path from `v`, reporting whether it was there.
fn remove_path(v: &mut Value, path: &str) -> bool {
    let mut keys: Vec<&str> = path.split('.').collect();
    let Some(last) = keys.pop() else { return false };
    let mut cur = v;
    for k in keys {
        match cur.get_mut(k) {
            Some(next) => cur = next,
            None => return false,
        }
    }
    cur.as_object_mut().and_then(|m| m.remove(last)).is_some()
}

fn setup(case: &Value, root: &Path) {
    if let Some(Value::Object(files)) = case.get("files") {
        for (rel, content) in files {
            let p = root.join(rel);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).expect("create parent");
            }
            std::fs::write(&p, content.as_str().unwrap_or_default()).expect("write file");
        }
    }
    if let Some(Value::Object(links)) = case.get("symlinks") {
        for (link, target) in links {
            std::os::unix::fs::symlink(target.as_str().unwrap_or_default(), root.join(link))
                .expect("symlink");
        }
    }
}

fn server_for(case: &Value) -> Option<MockServer> {
    let answers: Vec<Canned> = match (case.get("serverResponse"), case.get("serverResponses")) {
        (Some(one), _) => vec![Canned::from_vector(one)],
        (_, Some(Value::Array(many))) => many.iter().map(Canned::from_vector).collect(),
        _ => return None,
    };
    Some(MockServer::start(answers))
}

/// Compares one case; `Err` says what differed.
fn check(case: &Value) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root_path = dir.path().canonicalize().map_err(|e| e.to_string())?;
    let root = root_path.to_string_lossy().into_owned();
    setup(case, &root_path);
    let server = server_for(case);
    let base = server.as_ref().map(|s| s.base.clone()).unwrap_or_default();
    let args = subst(&case["args"], &root, &base);
    let mut expect = subst(&case["expect"], &root, &base);
    let ctx = ExecContext {
        timeout_ms: None,
        answer: case.get("ctx").and_then(|c| c.get("answer")).cloned(),

        ..Default::default()
    };
    let name = case["name"].as_str().unwrap_or_default();

    let before = std::env::current_dir().map_err(|e| e.to_string())?;
    std::env::set_current_dir(&root_path).map_err(|e| e.to_string())?;
    let result = builtin::run(name, &args, &ctx);
    std::env::set_current_dir(&before).map_err(|e| e.to_string())?;
    let mut got = result.to_json();

    if let Some(Value::Array(paths)) = case.get("volatile") {
        for p in paths.iter().filter_map(Value::as_str) {
            if remove_path(&mut expect, p) && !remove_path(&mut got, p) {
                return Err(format!("volatile {p} missing from {got}"));
            }
        }
    }
    let host_specific = case.get("hostSpecific").is_some();
    if host_specific {
        if got["isError"] != expect["isError"] {
            return Err(format!("isError: got {got}, want {expect}"));
        }
    } else if name == "question" && expect["isError"] == Value::Bool(false) {
        // The answered output is JSON text standing for a value.
        let parse = |v: &Value| serde_json::from_str::<Value>(v["output"].as_str().unwrap_or(""));
        if got["isError"] != expect["isError"] || parse(&got).ok() != parse(&expect).ok() {
            return Err(format!("got {got}, want {expect}"));
        }
    } else if got != expect {
        return Err(format!("got {got}, want {expect}"));
    }

    if let Some(files) = case.get("expectFiles") {
        let want = subst(files, &root, &base);
        let have = snapshot_json(&root_path);
        let same = if host_specific {
            let keys = |v: &Value| v.as_object().map(|m| m.keys().cloned().collect::<Vec<_>>());
            keys(&have) == keys(&want)
        } else {
            have == want
        };
        if !same {
            return Err(format!("files: got {have}, want {want}"));
        }
    }

    if let (Some(server), Some(Value::Array(want))) = (&server, case.get("expectServerRequests")) {
        let have = server.requests();
        if have.len() != want.len() {
            return Err(format!(
                "server saw {} requests, want {}",
                have.len(),
                want.len()
            ));
        }
        for (h, w) in have.iter().zip(want) {
            let w = subst(w, &root, &base);
            let query = h.query.clone().map_or(Value::Null, Value::String);
            if w["method"] != h.method.as_str()
                || w["path"] != h.path.as_str()
                || w["query"] != query
                || w["body"] != h.body.as_str()
            {
                return Err(format!("server request {h:?}, want {w}"));
            }
            if let Some(Value::Object(headers)) = w.get("headers") {
                for (k, v) in headers {
                    let got_h = h.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(k));
                    if got_h.map(|(_, x)| x.as_str()) != v.as_str() {
                        return Err(format!("header {k}: got {got_h:?}, want {v}"));
                    }
                }
            }
        }
    }
    Ok(())
}

#[test]
fn builtins_parity_with_recorded_vectors() {
    let vectors = load(&conformance_dir().join("execute.json"));
    let divergences = divergence_ids("divergences.json");
    let proposals = divergence_ids("proposed-divergences.json");
    let (mut passed, mut diverged, mut proposed) = (0, 0, 0);
    let mut failures = Vec::new();
    for case in vectors["cases"].as_array().expect("cases array") {
        let id = case["id"].as_str().unwrap_or_default();
        let name = case["name"].as_str().unwrap_or_default();
        let toolkit_routing = case
            .get("toolkit")
            .and_then(Value::as_object)
            .is_some_and(|m: &Map<String, Value>| !m.is_empty());
        if case["op"] != "execute" || !NAMES.contains(&name) || toolkit_routing {
            continue;
        }
        if divergences.contains(id) {
            diverged += 1;
            continue;
        }
        if proposals.contains(id) {
            proposed += 1;
            continue;
        }
        match check(case) {
            Ok(()) => passed += 1,
            Err(why) => failures.push(format!("{id}: {why}")),
        }
    }
    for f in &failures {
        eprintln!("FAIL {f}");
    }
    println!(
        "builtins parity: {passed} passed, {} failed, {diverged} divergences, {proposed} proposed divergences",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} builtin vector(s) failed",
        failures.len()
    );
    assert!(passed > 0, "no builtin vector ran");
}
