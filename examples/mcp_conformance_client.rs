//! The client under test of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance client --command ...`), driven by
//! scripts/mcp_conformance.sh. The suite appends the server's URL as the last
//! argument and names the scenario in `MCP_CONFORMANCE_SCENARIO`.
//!
//! What it does is what a host of the library does: build a toolkit over that
//! one streamable HTTP server (with a `waitFor` that accepts every question
//! with no answers of its own, so a form gets the schema's defaults), list the
//! tools, and call the ones the scenario expects to be called. It prints the
//! toolkit's status and each ToolResult on stdout, which the suite keeps.
//!
//! Exit code: 0 when the server connected, 1 otherwise.

use serde_json::{json, Value};
use std::sync::Arc;
use toolnexus::cancel::CancelToken;
use toolnexus::config::ToolkitConfig;
use toolnexus::mcp::WaitFor;
use toolnexus::tool::ExecContext;
use toolnexus::toolkit::{BuildOptions, Toolkit};

fn main() -> std::process::ExitCode {
    let Some(url) = std::env::args().nth(1).filter(|u| !u.is_empty()) else {
        eprintln!(
            "usage: mcp_conformance_client URL (MCP_CONFORMANCE_SCENARIO names the scenario)"
        );
        return std::process::ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let mut auth = json!({
        "clientMetadataUrl": "https://conformance-test.local/client-metadata.json",
        "clientName": "toolnexus-conformance",
    });
    if let (Some(id), Some(secret)) = (
        context["client_id"].as_str(),
        context["client_secret"].as_str(),
    ) {
        auth["clientId"] = json!(id);
        auth["clientSecret"] = json!(secret);
    }
    if let (Some(id), Some(pem)) = (
        context["client_id"].as_str(),
        context["private_key_pem"].as_str(),
    ) {
        auth["clientId"] = json!(id);
        auth["privateKey"] = json!(pem);
    }
    if let (Some(endpoint), Some(id_token)) = (
        context["idp_token_endpoint"].as_str(),
        context["idp_id_token"].as_str(),
    ) {
        // Enterprise-managed authorization (SEP-990): the IdP's ID token
        // the host's single sign-on got.
        auth["grant"] = json!("identity_assertion");
        auth["idp"] = json!({
            "tokenEndpoint": endpoint,
            "idToken": id_token,
            "clientId": context["idp_client_id"],
        });
    }
    if scenario.starts_with("auth/client-credentials") {
        auth["grant"] = json!("client_credentials");
    }
    let cfg = ToolkitConfig::from_value(&json!({
        "builtins": false,
        "mcpConfig": {"mcpServers": {"s": {"url": url, "timeout": 20000, "auth": auth}}}
    }));
    let cfg = match cfg {
        Ok(c) => c,
        Err(e) => {
            eprintln!("config: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    // Accept every form with no content of our own: the library fills in the
    // schema's defaults (SEP-1034).
    let wait_for: WaitFor = Arc::new(|request: &Value, _stop: &CancelToken| {
        Ok(json!({"id": request["id"], "ok": true, "data": {}}))
    });
    let opts = BuildOptions {
        wait_for: Some(wait_for),
        authorize: Some(Arc::new(toolnexus::mcp::auth::headless)),
        ..BuildOptions::default()
    };
    let tk = match Toolkit::build_with(&cfg, &opts) {
        Ok(tk) => tk,
        Err(e) => {
            eprintln!("build: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    let status = tk.render("status").unwrap_or_default();
    println!("status: {status}");
    let names = tk.tool_names();
    let connected = status.contains("\"s\":\"connected\"");
    for name in &names {
        let remote = name.strip_prefix("s_").unwrap_or(name);
        let args = match (scenario.as_str(), remote) {
            (_, "add_numbers") => json!({"a": 5, "b": 3}),
            ("tools_call", _) => continue,
            _ => json!({}),
        };
        let r = tk.execute(name, args, &ExecContext::default());
        println!(
            "{name}: {}",
            serde_json::to_string(&r.to_json()).unwrap_or_default()
        );
    }
    if connected {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(1)
    }
}
