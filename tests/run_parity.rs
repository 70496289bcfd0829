//! Parity with the recorded `run` vectors (tests/conformance/vectors/run.json,
//! README "op run"): every case through `Client::run` against a mock provider
//! on 127.0.0.1, hooks and `waitFor` as real callbacks. Cases listed in
//! divergences.json (or the proposed ones) are counted, not compared:
//! tests/run_divergences.rs asserts the decisions. Set TN_CONFORMANCE_DIR to
//! run another directory of vectors.

mod common;
mod run_support;
mod translate_mock;

#[test]
fn every_run_case_matches_the_recording() {
    let mut skip = common::divergences_in("divergences.json");
    skip.extend(common::divergences_in("proposed-divergences.json"));
    let (mut passed, mut failed, mut diverged) = (0, 0, 0);
    let mut failures = Vec::new();
    for (_, case) in common::cases() {
        if case["op"] != "run" {
            continue;
        }
        let id = case["id"].as_str().unwrap_or_default().to_string();
        if skip.contains_key(&id) {
            diverged += 1;
            continue;
        }
        let ran = run_support::run_case(&case);
        let problems = run_support::problems(&ran);
        if problems.is_empty() {
            passed += 1;
        } else {
            failed += 1;
            failures.push(format!("{id}:\n  {}", problems.join("\n  ")));
        }
    }
    println!("run parity: {passed} passed, {failed} failed, {diverged} divergences, 0 skipped");
    assert!(
        passed > 0,
        "no run vectors were found in {}",
        common::vectors_dir().display()
    );
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}
