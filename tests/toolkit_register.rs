//! Registering a host tool after the toolkit was rendered shows in every
//! later rendering, and precedence holds (CONTRACT.md §3).

use serde_json::{json, Value};
use std::sync::Arc;
use toolnexus::tool::{ExecContext, Source, Tool, ToolResult};
use toolnexus::toolkit::Toolkit;

fn host_tool(name: &str, answer: &'static str) -> Tool {
    Tool::new(
        name,
        "a host tool",
        None,
        Source::Native,
        Arc::new(move |_: &Value, _: &ExecContext| ToolResult::ok(answer)),
    )
}

fn names(tk: &Toolkit, format: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(&tk.render(format).unwrap_or_default()).unwrap_or_default();
    let list = match format {
        "gemini" => v[0]["functionDeclarations"].clone(),
        _ => v,
    };
    list.as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            t.get("function").unwrap_or(t)["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
fn a_registration_invalidates_earlier_renderings() {
    let tk = Toolkit::build_from_json(r#"{"builtins":{"tools":{"bash":false}}}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    for f in ["openai", "anthropic", "gemini"] {
        assert!(!names(&tk, f).contains(&"clock".to_string()));
    }
    tk.register(host_tool("clock", "12:00"));
    for f in ["openai", "anthropic", "gemini"] {
        let n = names(&tk, f);
        assert!(n.contains(&"clock".to_string()), "{f}: {n:?}");
        let mut sorted = n.clone();
        sorted.sort();
        assert_eq!(n, sorted, "{f} stays sorted by name");
    }
    let r = tk.execute("clock", json!({}), &ExecContext::default());
    assert_eq!(r.output, "12:00");
}

#[test]
fn a_host_tool_beats_a_builtin_and_disable_tools_still_applies() {
    let tk =
        Toolkit::build_from_json(r#"{"disableTools":["gone"]}"#).unwrap_or_else(|e| panic!("{e}"));
    tk.register(host_tool("read", "host read"));
    tk.register(host_tool("gone", "never"));
    let ctx = ExecContext::default();
    assert_eq!(tk.execute("read", json!({}), &ctx).output, "host read");
    assert_eq!(
        tk.execute("gone", json!({}), &ctx).output,
        "unknown tool: gone"
    );
    assert!(!names(&tk, "openai").contains(&"gone".to_string()));
}

#[test]
fn every_render_of_a_provider_gives_one_text_and_a_registration_replaces_a_kept_one() {
    let tk = Toolkit::build_from_json(r#"{"builtins":{"tools":{"bash":false}}}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    for f in ["openai", "anthropic", "gemini"] {
        // The first rendering is written and kept, later ones are copies.
        let texts: Vec<String> = (0..3)
            .map(|_| tk.render(f).unwrap_or_else(|e| panic!("{f}: {e}")))
            .collect();
        assert!(texts[0].starts_with('['), "{f}: {}", texts[0]);
        assert_eq!(texts[0], texts[1], "{f}: second render");
        assert_eq!(texts[1], texts[2], "{f}: third render");
        assert!(!names(&tk, f).contains(&"clock".to_string()));
    }
    tk.register(host_tool("clock", "12:00"));
    for f in ["openai", "anthropic", "gemini"] {
        for round in 0..3 {
            let n = names(&tk, f);
            assert!(
                n.contains(&"clock".to_string()),
                "{f} render {round}: {n:?}"
            );
        }
    }
}
