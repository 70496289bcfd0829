//! The repo's copy of the conformance vectors must match ../shared/conformance
//! wherever that directory exists (it does on developer machines and in CI).

use std::path::{Path, PathBuf};

fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap_or(&p).to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn vectors_match_shared_copy() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shared = repo.join("../shared/conformance");
    if !shared.is_dir() {
        eprintln!("../shared/conformance absent: nothing to compare");
        return;
    }
    let ours = repo.join("tests/conformance");
    let theirs_files = files_under(&shared);
    assert!(!theirs_files.is_empty());
    for rel in &theirs_files {
        let a = std::fs::read(shared.join(rel)).unwrap_or_default();
        let b = std::fs::read(ours.join(rel))
            .unwrap_or_else(|_| panic!("tests/conformance/{} is missing", rel.display()));
        assert!(
            a == b,
            "tests/conformance/{} differs from ../shared/conformance",
            rel.display()
        );
    }
    let ours_vectors = files_under(&ours.join("vectors"));
    let theirs_vectors = files_under(&shared.join("vectors"));
    assert_eq!(
        ours_vectors, theirs_vectors,
        "the set of vector files differs from ../shared"
    );
}
