//! Rendering tools as provider declarations (SPEC §0.7, CONTRACT.md §4):
//! schema only, the caller's order, compact JSON.

use crate::tool::Tool;
use serde::Serialize;
use serde_json::Value;

/// The provider shapes a tool list renders to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    OpenAi,
    Anthropic,
    Gemini,
}

impl Provider {
    pub fn from_name(name: &str) -> Option<Provider> {
        match name {
            "openai" => Some(Provider::OpenAi),
            "anthropic" => Some(Provider::Anthropic),
            "gemini" => Some(Provider::Gemini),
            _ => None,
        }
    }
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
struct OpenAiTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct AnthropicTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

#[derive(Serialize)]
struct GeminiWrapper<'a> {
    #[serde(rename = "functionDeclarations")]
    function_declarations: Vec<Function<'a>>,
}

fn function(t: &Tool) -> Function<'_> {
    Function {
        name: &t.name,
        description: &t.description,
        parameters: &t.input_schema,
    }
}

/// Renders `tools`, in the order given, as the provider's JSON text. Gemini
/// is always one wrapper, even for no tools.
pub fn render(provider: Provider, tools: &[&Tool]) -> String {
    let text = match provider {
        Provider::OpenAi => serde_json::to_string(
            &tools
                .iter()
                .map(|t| OpenAiTool {
                    kind: "function",
                    function: function(t),
                })
                .collect::<Vec<_>>(),
        ),
        Provider::Anthropic => serde_json::to_string(
            &tools
                .iter()
                .map(|t| AnthropicTool {
                    name: &t.name,
                    description: &t.description,
                    input_schema: &t.input_schema,
                })
                .collect::<Vec<_>>(),
        ),
        Provider::Gemini => serde_json::to_string(&[GeminiWrapper {
            function_declarations: tools.iter().map(|t| function(t)).collect(),
        }]),
    };
    // Serializing borrowed strings and JSON values cannot fail.
    text.unwrap_or_else(|_| "[]".to_string())
}

/// The OpenAI declarations as JSON values (what translate declares).
pub fn openai_values(tools: &[&Tool]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            serde_json::json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.input_schema}})
        })
        .collect()
}
