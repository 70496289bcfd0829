//! The toolnexus demo: build a toolkit from the bundled example skills and
//! the ten builtins, render it for OpenAI, Anthropic and Gemini, execute two
//! tools, and translate one OpenAI-shaped request against a bundled mock
//! provider on 127.0.0.1 (no API key, no network).
//!
//! Run: `cargo run --release --example demo`

mod mock_provider;

use serde_json::{json, Value};
use toolnexus::tool::ExecContext;
use toolnexus::toolkit::Toolkit;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let skills = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills");
    let config = json!({"skillsDir": skills});
    println!("== build  {config}");
    let tk = Toolkit::build_from_json(&config.to_string())?;
    println!("tools: {}", tk.render("toolNames")?);
    println!("status: {}", tk.render("status")?);

    for format in ["openai", "anthropic", "gemini"] {
        let rendered: Value = serde_json::from_str(&tk.render(format)?)?;
        let first = match format {
            "gemini" => rendered[0]["functionDeclarations"][0].clone(),
            _ => rendered[0].clone(),
        };
        let text = tk.render(format)?;
        println!(
            "\n== render {format}  ({} bytes)\nfirst entry: {first}",
            text.len()
        );
    }

    println!("\n== skillsPrompt\n{}", tk.skills_prompt());

    let ctx = ExecContext::default();
    let skill = tk.execute("skill", json!({"name": "hello-world"}), &ctx);
    println!(
        "\n== execute skill {{\"name\":\"hello-world\"}}\n{}",
        skill.output
    );
    let bash = tk.execute(
        "bash",
        json!({"command": format!("sh {skills}/hello-world/scripts/greet.sh Ada")}),
        &ctx,
    );
    println!("\n== execute bash greet.sh Ada\n{}", bash.to_json());

    let base = mock_provider::start()?;
    let client = json!({"baseUrl": base, "style": "anthropic", "model": "mock-claude", "apiKey": "demo-key"});
    let request = json!({
        "messages": [
            {"role": "system", "content": "You are a helpful agent."},
            {"role": "user", "content": "Greet Ada using the hello-world skill."}
        ],
        "maxTokens": 512
    });
    println!("\n== translate against the mock provider at {base}");
    let result =
        toolnexus::translate::translate(&client, &request, &tk.openai_declarations(), None)?;
    println!("text: {}", result["text"]);
    println!("toolCalls: {}", result["toolCalls"]);
    println!(
        "finishReason: {}  usage: {}",
        result["finishReason"], result["usage"]
    );

    if let Some(call) = result["toolCalls"].as_array().and_then(|c| c.first()) {
        let name = call["name"].as_str().unwrap_or_default();
        let args = call["arguments"].clone();
        let r = tk.execute(name, args, &ctx);
        println!(
            "\n== executing the model's tool call {name}: isError={}",
            r.is_error
        );
    }
    Ok(())
}
