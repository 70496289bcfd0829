//! A server's resources and prompts offered to the model as tools (opt-in
//! per server: `"resourcesAsTools": true`). The toolkit gains three tools,
//! shared by every server that opted in, each taking the server's name:
//!
//! - `list_mcp_resources {server, cursor?}`: one page of `resources/list`,
//!   as JSON `{resources: [{uri, name, title?, description?, mimeType?}],
//!   nextCursor?}`.
//! - `read_mcp_resource {server, uri}`: `resources/read`, its contents as a
//!   tool result's (text joined, blobs as parts), as an MCP tool's embedded
//!   resources are shaped.
//! - `get_mcp_prompt {server, name, arguments?}`: `prompts/get`, its
//!   messages as text (`ROLE: TEXT`, blank-line separated, the description
//!   first) and their media as parts. An unknown prompt's error lists the
//!   server's prompts.
//!
//! An unknown server is an error naming the servers there are; a server's
//! JSON-RPC error (an unknown uri, say) is an error with its code and
//! message.

use super::session::{shape_call_result, Session};
use super::{block_on_anywhere, MAX_NAME};
use crate::tool::{ExecContext, Execute, Source, Tool, ToolFuture, ToolResult};
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub const LIST: &str = "list_mcp_resources";
pub const READ: &str = "read_mcp_resource";
pub const PROMPT: &str = "get_mcp_prompt";
const _: () = assert!(LIST.len() <= MAX_NAME);

#[derive(Clone, Copy)]
enum Kind {
    List,
    Read,
    Prompt,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::List => LIST,
            Kind::Read => READ,
            Kind::Prompt => PROMPT,
        }
    }
}

struct ResourceTool {
    kind: Kind,
    /// (server name, its session), in config order.
    servers: Arc<Vec<(String, Arc<Session>)>>,
}

/// The three tools over `servers` (the connected servers that opted in);
/// none when there are none.
pub fn tools(servers: Vec<(String, Arc<Session>)>) -> Vec<Tool> {
    if servers.is_empty() {
        return Vec::new();
    }
    let names: Vec<&str> = servers.iter().map(|(n, _)| n.as_str()).collect();
    let listed = names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let server = json!({"type": "string", "enum": names,
                        "description": "The MCP server to ask."});
    let specs = [
        (
            Kind::List,
            format!(
                "List the resources (files, documents, records) an MCP server offers, one page \
                 at a time: each with its uri, name and, when given, title, description and \
                 mimeType. Read one with {READ}. When the answer has a nextCursor, pass it as \
                 cursor for the next page. Servers: {listed}."
            ),
            json!({"type": "object", "properties": {
                "server": server,
                "cursor": {"type": "string", "description": "The nextCursor of the previous page."}
            }, "required": ["server"]}),
        ),
        (
            Kind::Read,
            format!(
                "Read one resource of an MCP server by its uri (as {LIST} gives it): its text, \
                 or its binary content as an attachment. Servers: {listed}."
            ),
            json!({"type": "object", "properties": {
                "server": server,
                "uri": {"type": "string", "description": "The resource's uri."}
            }, "required": ["server", "uri"]}),
        ),
        (
            Kind::Prompt,
            format!(
                "Get a prompt template of an MCP server, filled in with its arguments: its \
                 messages as text (ROLE: TEXT). An unknown name's error lists the server's \
                 prompts and their arguments. Servers: {listed}."
            ),
            json!({"type": "object", "properties": {
                "server": server,
                "name": {"type": "string", "description": "The prompt's name."},
                "arguments": {"type": "object", "additionalProperties": {"type": "string"},
                              "description": "The prompt's arguments, each a string."}
            }, "required": ["server", "name"]}),
        ),
    ];
    let servers = Arc::new(servers);
    specs
        .into_iter()
        .map(|(kind, description, schema)| {
            let exec = Arc::new(ResourceTool {
                kind,
                servers: Arc::clone(&servers),
            });
            Tool::new(kind.name(), description, Some(schema), Source::Mcp, exec)
        })
        .collect()
}

impl ResourceTool {
    /// The request as a future that owns what it needs, or the error at
    /// once when the arguments are wrong.
    fn call(
        &self,
        args: &Value,
    ) -> Result<impl std::future::Future<Output = ToolResult> + Send + 'static, ToolResult> {
        let tool = self.kind.name();
        let fail = |why: String| ToolResult::error(format!("{tool}: {why}"));
        let string = |key: &str| args.get(key).and_then(Value::as_str);
        let Some(server) = string("server") else {
            return Err(fail(
                "the argument \"server\" (a string) is required".into(),
            ));
        };
        let Some(session) = self
            .servers
            .iter()
            .find(|(n, _)| n == server)
            .map(|(_, s)| Arc::clone(s))
        else {
            let names: Vec<String> = self
                .servers
                .iter()
                .map(|(n, _)| format!("\"{n}\""))
                .collect();
            return Err(fail(format!(
                "unknown server \"{server}\" (servers: {})",
                names.join(", ")
            )));
        };
        let (method, params) = match self.kind {
            Kind::List => match args.get("cursor") {
                None | Some(Value::Null) => ("resources/list", None),
                Some(Value::String(c)) => ("resources/list", Some(json!({"cursor": c}))),
                Some(_) => return Err(fail("\"cursor\" must be a string".into())),
            },
            Kind::Read => match string("uri") {
                Some(uri) => ("resources/read", Some(json!({"uri": uri}))),
                None => return Err(fail("the argument \"uri\" (a string) is required".into())),
            },
            Kind::Prompt => {
                let Some(name) = string("name") else {
                    return Err(fail("the argument \"name\" (a string) is required".into()));
                };
                let arguments = match args.get("arguments") {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(m)) => m
                        .iter()
                        .map(|(k, v)| {
                            let text = match v {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            (k.clone(), Value::String(text))
                        })
                        .collect(),
                    Some(_) => return Err(fail("\"arguments\" must be an object".into())),
                };
                (
                    "prompts/get",
                    Some(json!({"name": name, "arguments": arguments})),
                )
            }
        };
        let (kind, server) = (self.kind, server.to_string());
        Ok(async move {
            let answer = session.forward(method, params, None).await;
            match (answer, kind) {
                (Ok(result), Kind::List) => listed(&result),
                (Ok(result), Kind::Read) => read(&result),
                (Ok(result), Kind::Prompt) => prompt(&result),
                (Err(e), Kind::Prompt) => {
                    let known = prompt_names(&session).await;
                    ToolResult::error(format!(
                        "{tool}: server \"{server}\" answered error {}: {}{known}",
                        e.code.0, e.message
                    ))
                }
                (Err(e), _) => ToolResult::error(format!(
                    "{tool}: server \"{server}\" answered error {}: {}",
                    e.code.0, e.message
                )),
            }
        })
    }
}

impl Execute for ResourceTool {
    fn execute(&self, args: &Value, _ctx: &ExecContext) -> ToolResult {
        match self.call(args) {
            Ok(call) => block_on_anywhere(call),
            Err(refused) => refused,
        }
    }

    fn execute_async<'a>(
        &'a self,
        args: &'a Value,
        _ctx: &'a ExecContext,
    ) -> Option<ToolFuture<'a>> {
        Some(match self.call(args) {
            Ok(call) => Box::pin(call),
            Err(refused) => Box::pin(std::future::ready(refused)),
        })
    }
}

/// A resources/list page as `{resources: [...], nextCursor?}`.
fn listed(result: &Value) -> ToolResult {
    let keep = ["uri", "name", "title", "description", "mimeType"];
    let resources: Vec<Value> = result
        .get("resources")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|r| {
                    let picked: Map<String, Value> = keep
                        .iter()
                        .filter_map(|k| r.get(*k).map(|v| (k.to_string(), v.clone())))
                        .filter(|(_, v)| !v.is_null())
                        .collect();
                    Value::Object(picked)
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out = Map::new();
    out.insert("resources".into(), Value::Array(resources));
    if let Some(Value::String(c)) = result.get("nextCursor") {
        if !c.is_empty() {
            out.insert("nextCursor".into(), Value::String(c.clone()));
        }
    }
    ToolResult::ok(Value::Object(out).to_string())
}

/// A resources/read result: its contents shaped as an MCP tool's embedded
/// resources are (text joined with "\n", blobs as parts).
fn read(result: &Value) -> ToolResult {
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let content: Vec<Value> = contents
        .into_iter()
        .map(|c| json!({"type": "resource", "resource": c}))
        .collect();
    shape_call_result(&json!({ "content": content }))
}

/// A prompts/get result: the description, then each message as `ROLE:
/// TEXT`, blank-line separated; media as parts.
fn prompt(result: &Value) -> ToolResult {
    let mut content = Vec::new();
    if let Some(d) = result.get("description").and_then(Value::as_str) {
        if !d.is_empty() {
            content.push(json!({"type": "text", "text": format!("{d}\n")}));
        }
    }
    for m in result
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        match m.get("content") {
            Some(c) if c.get("type").and_then(Value::as_str) == Some("text") => {
                let text = c.get("text").and_then(Value::as_str).unwrap_or_default();
                content.push(json!({"type": "text", "text": format!("{role}: {text}\n")}));
            }
            Some(c) => {
                content.push(json!({"type": "text", "text": format!("{role}: (attached)\n")}));
                content.push(c.clone());
            }
            None => {}
        }
    }
    let mut shaped = shape_call_result(&json!({ "content": content }));
    shaped.output = shaped.output.trim_end().to_string();
    shaped
}

/// `; the server's prompts: NAME(ARG, ARG?), ...`, or nothing when it
/// lists none (or cannot).
async fn prompt_names(session: &Session) -> String {
    let Ok(list) = session.forward("prompts/list", None, None).await else {
        return String::new();
    };
    let names: Vec<String> = list
        .get("prompts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let name = p.get("name")?.as_str()?;
            let args: Vec<String> = p
                .get("arguments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| {
                    let n = a.get("name")?.as_str()?;
                    let required = a.get("required").and_then(Value::as_bool) == Some(true);
                    Some(if required {
                        n.to_string()
                    } else {
                        format!("{n}?")
                    })
                })
                .collect();
            Some(format!("{name}({})", args.join(", ")))
        })
        .collect();
    if names.is_empty() {
        return String::new();
    }
    format!("; the server's prompts: {}", names.join(", "))
}
