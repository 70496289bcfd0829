//! The toolnexus demo: build a toolkit from the bundled example skills and
//! the ten builtins, show the `skill` tool as OpenAI, Anthropic and Gemini
//! declare it, ask a bundled mock provider on 127.0.0.1 (no API key, no
//! network) what to do, run the tool calls it asks for, and then run the
//! whole client loop against the same mock: a tool call, a suspension that a
//! `waitFor` callback answers, and the final answer.
//!
//! The demo calls the Rust API. Each step is headed by the C ABI call that
//! runs the same code (`tn_toolkit_build` builds through
//! `Toolkit::build_from_json`, `tn_render` through `Toolkit::render`,
//! `tn_execute` through `Toolkit::execute`, `tn_translate` through
//! `toolnexus::translate`, `tn_run` through `Client::run`), so its output
//! is what a C or Go program gets.
//!
//! Run: `cargo run --example demo`. Each step is one function below; add a
//! step by writing another and calling it from `main`.

mod mock_provider;

use serde_json::{json, Value};
use toolnexus::tool::{ExecContext, ToolResult};
use toolnexus::toolkit::Toolkit;

type Step<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Step<()> {
    println!(
        "toolnexus {} demo: the Rust API, each step headed by its C ABI call",
        env!("CARGO_PKG_VERSION")
    );
    let skills = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills");
    let tk = build(skills)?;
    declarations(&tk)?;
    prompt(&tk);
    let calls = ask_the_model(&tk)?;
    run_tool_calls(&tk, &calls);
    // The model's next step, as the skill's instructions say: run its script.
    run(
        &tk,
        "bash",
        json!({"command": format!("sh {skills}/hello-world/scripts/greet.sh Ada")}),
    );
    client_loop(&tk)?;
    Ok(())
}

/// `tn_client_new` + `tn_run`: the whole SPEC §8 loop in one call. The mock
/// model loads the skill, then asks the user a question (a §10 suspension),
/// which the `waitFor` callback answers inline, then gives its answer.
fn client_loop(tk: &Toolkit) -> Step<()> {
    use std::sync::Arc;
    use toolnexus::client::{Client, RunData, RunRequest, Slot};
    let base = mock_provider::start()?;
    let config = json!({"baseUrl": base, "style": "anthropic", "model": "mock-claude",
                        "apiKey": "demo-key", "systemPrompt": "You are a helpful agent."});
    println!("\n== tn_client_new({config}) + tn_client_set_callback(client, \"waitFor\", ...)");
    let client = Client::from_json(&config)?;
    client.set_callback(
        Slot::WaitFor,
        Some(Arc::new(|request: &Value, _: RunData| {
            println!("waitFor got the Request: {request}");
            let answer = json!({"ok": true, "data": {"answer": "warmly"}});
            println!("waitFor answers: {answer}");
            Ok(Some(answer))
        })),
    );
    let request = RunRequest {
        prompt: "Greet Ada using the hello-world skill.".into(),
        history: Vec::new(),
    };
    println!(
        "\n== tn_run(client, tk, {{\"prompt\": {:?}}}, NULL, NULL)",
        request.prompt
    );
    let cancel = toolnexus::cancel::CancelToken::new();
    let result = client.run(tk, &request, &cancel, RunData::default())?;
    for call in result["toolCalls"].as_array().cloned().unwrap_or_default() {
        let first = call["output"]
            .as_str()
            .unwrap_or_default()
            .lines()
            .next()
            .unwrap_or_default();
        println!(
            "tool call: {} {} -> isError {}, output starts {first:?}",
            call["name"], call["args"], call["isError"]
        );
    }
    println!(
        "status: {}  turns: {}  usage: {}",
        result["status"], result["turns"], result["usage"]
    );
    println!("text: {}", result["text"]);
    Ok(())
}

/// `tn_toolkit_build`, then the status: sources, the skills loaded, warnings.
fn build(skills: &str) -> Step<Toolkit> {
    let config = json!({"skillsDir": skills});
    println!("\n== tn_toolkit_build({config})");
    let tk = Toolkit::build_from_json(&config.to_string())?;
    let names: Vec<String> = serde_json::from_str(&tk.render("toolNames")?)?;
    println!("{} tools: {}", names.len(), names.join(", "));

    let loaded: Value = serde_json::from_str(&tk.render("skills")?)?;
    let skill_names: Vec<&str> = loaded["skills"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["name"].as_str()).collect())
        .unwrap_or_default();
    println!("\n== tn_render(tk, \"status\")");
    println!("{}", tk.render("status")?);
    println!(
        "skills loaded behind the `skill` tool: {}",
        skill_names.join(", ")
    );
    Ok(tk)
}

/// The `skill` tool in each provider's shape: an explicit subset render.
fn declarations(tk: &Toolkit) -> Step<()> {
    for format in ["openai", "anthropic", "gemini"] {
        let all = tk.render(format)?;
        let subset = json!({"format": format, "tools": ["skill"]}).to_string();
        let one: Value = serde_json::from_str(&tk.render(&subset)?)?;
        println!(
            "\n== tn_render(tk, {subset:?})   (all tools: tn_render(tk, \"{format}\"), {} bytes)",
            all.len()
        );
        if format == "gemini" {
            println!("(Gemini wraps every declaration in one {{\"functionDeclarations\": [...]}} object)");
        }
        println!("{}", serde_json::to_string_pretty(&one)?);
    }
    Ok(())
}

/// `tn_render(tk, "skillsPrompt")`: the catalog a system prompt carries.
fn prompt(tk: &Toolkit) {
    println!(
        "\n== tn_render(tk, \"skillsPrompt\")\n{}",
        tk.skills_prompt()
    );
}

/// `tn_translate` against the mock Anthropic-style provider; returns the
/// tool calls the model asked for.
fn ask_the_model(tk: &Toolkit) -> Step<Vec<Value>> {
    let base = mock_provider::start()?;
    let client = json!({"baseUrl": base, "style": "anthropic", "model": "mock-claude", "apiKey": "demo-key"});
    let request = json!({
        "messages": [
            {"role": "system", "content": "You are a helpful agent."},
            {"role": "user", "content": "Greet Ada using the hello-world skill."}
        ],
        "maxTokens": 512
    });
    println!("\n== tn_translate(client, request, tk, NULL)   (mock provider at {base})");
    println!("request: {request}");
    let result =
        toolnexus::translate::translate(&client, &request, &tk.openai_declarations(), None)?;
    println!("text: {}", result["text"]);
    println!("toolCalls: {}", result["toolCalls"]);
    println!(
        "finishReason: {}  usage: {}",
        result["finishReason"], result["usage"]
    );
    Ok(result["toolCalls"].as_array().cloned().unwrap_or_default())
}

/// Runs every tool call the model asked for.
fn run_tool_calls(tk: &Toolkit, calls: &[Value]) {
    for call in calls {
        let name = call["name"].as_str().unwrap_or_default();
        run(tk, name, call["arguments"].clone());
    }
}

/// `tn_execute`, and its ToolResult printed the one way every result is.
fn run(tk: &Toolkit, name: &str, args: Value) {
    println!("\n== tn_execute(tk, \"{name}\", {args}, NULL)");
    show(&tk.execute(name, args, &ExecContext::default()));
}

fn show(result: &ToolResult) {
    println!("isError: {}", result.is_error);
    if let Some(md) = &result.metadata {
        println!("metadata: {}", Value::Object(md.clone()));
    }
    println!("output:");
    for line in result.output.lines() {
        println!("  {line}");
    }
}
