//! Shared helpers of the Rust conformance tests: reading vectors, laying out
//! a case's scratch directory, and comparing JSON the way
//! tests/conformance/README.md says.
#![allow(dead_code)]

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn vectors_dir() -> PathBuf {
    match std::env::var_os("TN_CONFORMANCE_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/vectors"),
    }
}

/// Every case of every vector file, with the file's stem.
pub fn cases() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(vectors_dir())
        .expect("vectors dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    for f in files {
        let v: Value =
            serde_json::from_slice(&std::fs::read(&f).expect("read vector")).expect("vector JSON");
        let stem = f
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        for c in v["cases"].as_array().cloned().unwrap_or_default() {
            out.push((stem.clone(), c));
        }
    }
    out
}

/// Case ids and decisions of one divergence file: `divergences.json`
/// (decided) or `proposed-divergences.json` (pending review).
pub fn divergences_in(file: &str) -> BTreeMap<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conformance")
        .join(file);
    let mut out = BTreeMap::new();
    if let Ok(bytes) = std::fs::read(path) {
        let v: Value = serde_json::from_slice(&bytes).expect("divergences JSON");
        if let Some(m) = v["divergences"].as_object() {
            for (k, d) in m {
                out.insert(k.clone(), d["decision"].as_str().unwrap_or("").to_string());
            }
        }
    }
    out
}

/// Replaces `${ROOT}` and `${BASE}` in every string of `v`.
pub fn substitute(v: &Value, root: &str, base: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace("${ROOT}", root).replace("${BASE}", base)),
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, root, base)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), substitute(x, root, base)))
                .collect::<Map<_, _>>(),
        ),
        other => other.clone(),
    }
}

/// A fresh scratch directory holding the case's `files` and `symlinks`.
pub fn lay_out(case: &Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical root");
    let root_s = root.to_string_lossy().to_string();
    if let Some(files) = case["files"].as_object() {
        for (rel, content) in files {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, content.as_str().unwrap_or("")).expect("write file");
        }
    }
    if let Some(links) = case["symlinks"].as_object() {
        for (link, target) in links {
            let p = root.join(link);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            let t = target.as_str().unwrap_or("").replace("${ROOT}", &root_s);
            std::os::unix::fs::symlink(t, &p).expect("symlink");
        }
    }
    dir
}

pub fn root_of(dir: &tempfile::TempDir) -> String {
    dir.path()
        .canonicalize()
        .expect("canonical")
        .to_string_lossy()
        .to_string()
}

/// Renames the recorded internal keys of `loadSkills` to ours.
pub fn map_loaded(v: &Value) -> Value {
    let mut m = v.as_object().cloned().unwrap_or_default();
    if let Some(x) = m.remove("filter-unmatched") {
        m.insert("filterUnmatched".into(), x);
    }
    if let Some(x) = m.remove("sample-limit") {
        m.insert("sampleLimit".into(), x);
    }
    Value::Object(m)
}

/// A short description of the first difference, or None when equal.
pub fn diff(path: &str, want: &Value, got: &Value) -> Option<String> {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, av) in a {
                match b.get(k) {
                    None => return Some(format!("{path}.{k}: missing")),
                    Some(bv) => {
                        if let Some(d) = diff(&format!("{path}.{k}"), av, bv) {
                            return Some(d);
                        }
                    }
                }
            }
            b.keys()
                .find(|k| !a.contains_key(*k))
                .map(|k| format!("{path}.{k}: unexpected"))
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                return Some(format!(
                    "{path}: length {} != {}: want {want} got {got}",
                    a.len(),
                    b.len()
                ));
            }
            a.iter()
                .zip(b)
                .enumerate()
                .find_map(|(i, (x, y))| diff(&format!("{path}[{i}]"), x, y))
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => None,
        _ if want == got => None,
        _ => Some(format!("{path}: want {want} got {got}")),
    }
}
