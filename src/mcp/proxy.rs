//! The MCP servers of a toolkit seen from the gateway (`crate::mcp_server`):
//! their resources, resource templates, prompts, completions and logging,
//! aggregated and passed through, so a client of the served toolkit reaches
//! them as it reaches the tools.
//!
//! - Lists (`resources/list`, `resources/templates/list`, `prompts/list`)
//!   are every page of every server that advertised the capability, in
//!   config order. A server that fails to list is left out of that list
//!   (with a warning in the log), never the whole answer.
//! - Resources keep their URIs. A read (and a subscribe) goes to the server
//!   that listed the URI, else to each server that has resources in turn
//!   until one answers.
//! - Prompts are named `sanitize(server)_sanitize(prompt)` like tools, or by
//!   their own name when the gateway exposes names unprefixed and no other
//!   prompt has it. A `prompts/get` and a prompt's `completion/complete` go
//!   to the prompt's server under its own name.
//! - `logging/setLevel` goes to every server that has logging.
//! - A server's JSON-RPC error comes back as it sent it.

use super::session::Session;
use crate::tool::sanitize;
use rmcp::model::ErrorCode;
use rmcp::ErrorData;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// At most this many pages of one list from one server.
const MAX_PAGES: usize = 1000;

/// The live MCP servers of a toolkit, in config order.
#[derive(Clone, Default)]
pub struct Upstreams {
    servers: Vec<Arc<Session>>,
}

/// A prompt as exposed: its exposed name, its server, its own name.
struct PromptRoute {
    exposed: String,
    server: usize,
    remote: String,
}

impl Upstreams {
    pub(super) fn new(servers: Vec<Arc<Session>>) -> Upstreams {
        Upstreams { servers }
    }

    /// Whether any server advertised `kind` (`resources`, `prompts`,
    /// `completions`, `logging`).
    pub fn has(&self, kind: &str) -> bool {
        self.servers.iter().any(|s| has(s, kind))
    }

    /// Whether any server can take `resources/subscribe`.
    pub fn can_subscribe(&self) -> bool {
        self.servers
            .iter()
            .any(|s| s.capabilities().pointer("/resources/subscribe") == Some(&json!(true)))
    }

    fn with(&self, kind: &str) -> impl Iterator<Item = (usize, &Arc<Session>)> + '_ {
        let kind = kind.to_string();
        self.servers
            .iter()
            .enumerate()
            .filter(move |(_, s)| has(s, &kind))
    }

    /// Every page of `method`'s `key` array from one server.
    async fn list_one(
        session: &Session,
        method: &str,
        key: &str,
        cancel: Option<&CancellationToken>,
    ) -> Result<Vec<Value>, ErrorData> {
        let mut items = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor.take().map(|c| json!({ "cursor": c }));
            let page = session.forward(method, params, cancel).await?;
            if let Some(Value::Array(a)) = page.get(key) {
                items.extend(a.iter().cloned());
            }
            match page.get("nextCursor") {
                Some(c @ Value::String(s)) if !s.is_empty() => cursor = Some(c.clone()),
                _ => break,
            }
        }
        Ok(items)
    }

    /// `(server index, item)` of every server's list, the failures logged.
    async fn list_all(
        &self,
        kind: &str,
        method: &str,
        key: &str,
        cancel: Option<&CancellationToken>,
    ) -> Vec<(usize, Value)> {
        let mut all = Vec::new();
        for (i, s) in self.with(kind) {
            match Self::list_one(s, method, key, cancel).await {
                Ok(items) => all.extend(items.into_iter().map(|v| (i, v))),
                Err(e) => crate::log::emit(crate::log::Level::Warn, "mcp", || {
                    format!(
                        "mcp server \"{}\": {method} failed, left out: {}",
                        s.name, e.message
                    )
                }),
            }
        }
        all
    }

    /// `resources/list`: `{resources: [...]}`.
    pub async fn list_resources(&self, cancel: Option<&CancellationToken>) -> Value {
        let all = self
            .list_all("resources", "resources/list", "resources", cancel)
            .await;
        json!({ "resources": all.into_iter().map(|(_, r)| r).collect::<Vec<_>>() })
    }

    /// `resources/templates/list`: `{resourceTemplates: [...]}`.
    pub async fn list_resource_templates(&self, cancel: Option<&CancellationToken>) -> Value {
        let all = self
            .list_all(
                "resources",
                "resources/templates/list",
                "resourceTemplates",
                cancel,
            )
            .await;
        json!({ "resourceTemplates": all.into_iter().map(|(_, r)| r).collect::<Vec<_>>() })
    }

    /// The servers to ask about `uri`: the one that lists it first, then
    /// every other server with resources.
    async fn resource_order(&self, uri: &str, cancel: Option<&CancellationToken>) -> Vec<usize> {
        let listed = self
            .list_all("resources", "resources/list", "resources", cancel)
            .await;
        let mut order: Vec<usize> = listed
            .iter()
            .filter(|(_, r)| r.get("uri").and_then(Value::as_str) == Some(uri))
            .map(|(i, _)| *i)
            .take(1)
            .collect();
        for (i, _) in self.with("resources") {
            if !order.contains(&i) {
                order.push(i);
            }
        }
        order
    }

    /// A resources request about one `uri` (`resources/read`,
    /// `resources/subscribe`, `resources/unsubscribe`): the first server
    /// that answers; when none does, the first server's error.
    pub async fn resource_request(
        &self,
        method: &str,
        params: Value,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, ErrorData> {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut first_err = None;
        for i in self.resource_order(&uri, cancel).await {
            let s = &self.servers[i];
            if method != "resources/read"
                && s.capabilities().pointer("/resources/subscribe") != Some(&json!(true))
            {
                continue;
            }
            match s.forward(method, Some(params.clone()), cancel).await {
                Ok(v) => return Ok(v),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        Err(first_err.unwrap_or_else(|| {
            ErrorData::new(
                ErrorCode::RESOURCE_NOT_FOUND,
                format!("no MCP server of this toolkit has the resource {uri}"),
                Some(json!({ "uri": uri })),
            )
        }))
    }

    async fn prompt_routes(
        &self,
        unprefixed: bool,
        cancel: Option<&CancellationToken>,
    ) -> (Vec<PromptRoute>, Vec<Value>) {
        let listed = self
            .list_all("prompts", "prompts/list", "prompts", cancel)
            .await;
        let own = |p: &Value| {
            p.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let mut counts: HashMap<String, usize> = HashMap::new();
        for (_, p) in &listed {
            *counts.entry(own(p)).or_default() += 1;
        }
        let mut routes = Vec::with_capacity(listed.len());
        let mut prompts = Vec::with_capacity(listed.len());
        for (i, mut p) in listed {
            let remote = own(&p);
            let exposed = if unprefixed && counts.get(&remote) == Some(&1) {
                remote.clone()
            } else {
                format!("{}_{}", sanitize(&self.servers[i].name), sanitize(&remote))
            };
            if routes.iter().any(|r: &PromptRoute| r.exposed == exposed) {
                // Two prompts of one final name: the first keeps it.
                continue;
            }
            if let Value::Object(m) = &mut p {
                m.insert("name".into(), Value::String(exposed.clone()));
            }
            prompts.push(p);
            routes.push(PromptRoute {
                exposed,
                server: i,
                remote,
            });
        }
        (routes, prompts)
    }

    /// `prompts/list`: `{prompts: [...]}` under their exposed names.
    pub async fn list_prompts(
        &self,
        unprefixed: bool,
        cancel: Option<&CancellationToken>,
    ) -> Value {
        json!({ "prompts": self.prompt_routes(unprefixed, cancel).await.1 })
    }

    /// A request about the prompt named in `params` at `pointer`
    /// (`prompts/get`: `/name`; `completion/complete`: `/ref/name`), sent
    /// to its server under its own name.
    pub async fn prompt_request(
        &self,
        method: &str,
        mut params: Value,
        pointer: &str,
        unprefixed: bool,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, ErrorData> {
        let name = params
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let (routes, _) = self.prompt_routes(unprefixed, cancel).await;
        let Some(route) = routes.iter().find(|r| r.exposed == name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown prompt: {name}"),
                None,
            ));
        };
        if let Some(slot) = params.pointer_mut(pointer) {
            *slot = Value::String(route.remote.clone());
        }
        self.servers[route.server]
            .forward(method, Some(params), cancel)
            .await
    }

    /// `completion/complete`: a prompt's argument goes to the prompt's
    /// server; a resource template's to each server with completions until
    /// one answers; nothing known is an empty completion.
    pub async fn complete(
        &self,
        params: Value,
        unprefixed: bool,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, ErrorData> {
        if params.pointer("/ref/type") == Some(&json!("ref/prompt")) {
            return self
                .prompt_request(
                    "completion/complete",
                    params,
                    "/ref/name",
                    unprefixed,
                    cancel,
                )
                .await;
        }
        for (_, s) in self.with("completions") {
            if let Ok(v) = s
                .forward("completion/complete", Some(params.clone()), cancel)
                .await
            {
                return Ok(v);
            }
        }
        Ok(json!({"completion": {"values": [], "hasMore": false}}))
    }

    /// `logging/setLevel` to every server with logging; `{}` once all
    /// were told (a server that refused is logged, not an error).
    pub async fn set_level(&self, params: Value, cancel: Option<&CancellationToken>) -> Value {
        for (_, s) in self.with("logging") {
            if let Err(e) = s
                .forward("logging/setLevel", Some(params.clone()), cancel)
                .await
            {
                crate::log::emit(crate::log::Level::Warn, "mcp", || {
                    format!(
                        "mcp server \"{}\": logging/setLevel refused: {}",
                        s.name, e.message
                    )
                });
            }
        }
        Value::Object(Map::new())
    }
}

fn has(s: &Session, kind: &str) -> bool {
    s.capabilities().get(kind).is_some_and(|v| !v.is_null())
}
