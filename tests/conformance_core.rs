//! Rust-side parity for the toolkit core: every `render` and `loadSkills`
//! case, and the `execute` cases of the skill tool and tool routing, through
//! the same API the C boundary calls. (The Go and C harnesses run every case
//! through the ABI itself.)

mod common;

use common::*;
use serde_json::Value;
use toolnexus::tool::ExecContext;
use toolnexus::toolkit::Toolkit;

fn build(cfg: &Value) -> Toolkit {
    Toolkit::build_from_json(&cfg.to_string()).unwrap_or_else(|e| panic!("build {cfg}: {e}"))
}

/// Cases about routing (unknown, disabled or absent tools) rather than a
/// builtin's own behaviour.
const ROUTING: [&str; 5] = [
    "execute/unknown-tool",
    "execute/disabled-builtin-is-unknown",
    "execute/builtins-off-read-unknown",
    "execute/disable-tools-is-unknown",
    "execute/skill-tool-absent-without-skills",
];

/// True when the case needs something this test does not provide (a mock
/// HTTP server, a provider): those run in their own test binaries and in the
/// Go and C harnesses.
fn out_of_scope(case: &Value) -> bool {
    let op = case["op"].as_str().unwrap_or("");
    let needs_server =
        case.get("serverResponse").is_some() || case.get("serverResponses").is_some();
    match op {
        "render" | "loadSkills" => false,
        "execute" => {
            needs_server
                || !(case["name"] == "skill"
                    || ROUTING.contains(&case["id"].as_str().unwrap_or(""))
                    || case["toolkit"].get("mcpConfig").is_some())
        }
        _ => true,
    }
}

fn run_case(case: &Value, root: &str) -> Result<(), String> {
    let case = substitute(case, root, "http://127.0.0.1:9");
    let op = case["op"].as_str().unwrap_or("");
    match op {
        "render" => {
            let tk = build(&case["toolkit"]);
            let fmt = case["format"].as_str().unwrap_or("");
            if fmt == "mcpStatus" {
                let got: Value =
                    serde_json::from_str(&tk.render("status").map_err(|e| e.to_string())?)
                        .map_err(|e| e.to_string())?;
                if let Some(d) = diff("statuses", &case["expect"]["statuses"], &got["statuses"]) {
                    return Err(d);
                }
                let keys = |v: &Value| {
                    v.as_object()
                        .map(|m| m.keys().cloned().collect::<Vec<_>>())
                        .unwrap_or_default()
                };
                let (want, have) = (keys(&case["expect"]["errors"]), keys(&got["errors"]));
                return if want == have {
                    Ok(())
                } else {
                    Err(format!("error keys: want {want:?} got {have:?}"))
                };
            }
            let spec = match case.get("toolOrder") {
                Some(order) => serde_json::json!({"format": fmt, "tools": order}).to_string(),
                None => fmt.to_string(),
            };
            let got: Value = serde_json::from_str(&tk.render(&spec).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
            diff("", &case["expect"], &got).map_or(Ok(()), Err)
        }
        "loadSkills" => {
            let tk = build(&case["toolkit"]);
            let loaded: Value =
                serde_json::from_str(&tk.render("skills").map_err(|e| e.to_string())?)
                    .map_err(|e| e.to_string())?;
            if let Some(d) = diff("loaded", &map_loaded(&case["expect"]["loaded"]), &loaded) {
                return Err(d);
            }
            let inv: Value =
                serde_json::from_str(&tk.render("skillsInventory").map_err(|e| e.to_string())?)
                    .map_err(|e| e.to_string())?;
            diff("inventory", &case["expect"]["inventory"], &inv).map_or(Ok(()), Err)
        }
        "execute" => {
            let tk = build(&case["toolkit"]);
            let name = case["name"].as_str().unwrap_or("");
            let r = tk.execute(name, case["args"].clone(), &ExecContext::default());
            diff("", &case["expect"], &r.to_json()).map_or(Ok(()), Err)
        }
        other => Err(format!("unsupported op {other}")),
    }
}

/// The test that runs a vector file's cases this runner leaves out.
fn runner_of(file: &str) -> &'static str {
    match file {
        "execute" => "run by tests/builtins.rs (the builtins' own behaviour)",
        "http" => "run by tests/http_tool_vectors.rs",
        "mcp" => "run by tests/mcp_vectors.rs",
        "translate" | "translate_helpers" => "run by tests/translate_parity.rs",
        "run" => "run by tests/run_parity.rs",
        _ => "run by the Go and C harnesses (go test -run Parity, make -C bindings/c parity)",
    }
}

#[test]
fn core_vectors() {
    let divs = divergences_in("divergences.json");
    let proposals = divergences_in("proposed-divergences.json");
    let (mut pass, mut fail, mut div, mut skip, mut proposed) = (0, 0, 0, 0, 0);
    let mut failures = Vec::new();
    let mut skipped_in: std::collections::BTreeMap<String, usize> = Default::default();
    let cwd = std::env::current_dir().expect("cwd");
    for (file, case) in cases() {
        let id = case["id"].as_str().unwrap_or("?").to_string();
        if out_of_scope(&case) {
            skip += 1;
            *skipped_in.entry(file).or_default() += 1;
            continue;
        }
        if divs.contains_key(&id) {
            div += 1;
            continue;
        }
        if proposals.contains_key(&id) {
            proposed += 1;
            continue;
        }
        let dir = lay_out(&case);
        let root = root_of(&dir);
        std::env::set_current_dir(&root).expect("chdir");
        let r = std::panic::catch_unwind(|| run_case(&case, &root));
        std::env::set_current_dir(&cwd).expect("chdir back");
        match r {
            Ok(Ok(())) => pass += 1,
            Ok(Err(e)) => {
                fail += 1;
                failures.push(format!("{id}: {e}"));
            }
            Err(_) => {
                fail += 1;
                failures.push(format!("{id}: panicked"));
            }
        }
    }
    for f in &failures {
        eprintln!("FAIL {f}");
    }
    eprintln!(
        "core parity: {pass} passed, {fail} failed, {div} divergences, {skip} skipped, {proposed} proposed"
    );
    // A skipped case is another runner's; say whose, so the count is never
    // left unexplained (every case also runs in the Go and C harnesses).
    let covered: Vec<String> = skipped_in
        .iter()
        .map(|(file, n)| format!("{n} of {file}.json {}", runner_of(file)))
        .collect();
    eprintln!("core parity: the skipped: {}", covered.join("; "));
    assert!(fail == 0, "{fail} core vector cases failed");
    assert!(pass > 100, "too few core cases ran: {pass}");
}
