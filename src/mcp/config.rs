//! The MCP configuration (SPEC §2): which servers exist and how to reach them.
//!
//! Parsing never touches the network or spawns anything. A server entry that
//! is malformed does not fail the whole config: it becomes a server whose
//! connection fails with a sentence naming the bad field, so one typo cannot
//! take down the other servers (SPEC §0.3 isolation).

use crate::error::Error;
use crate::json::type_name;
use serde_json::{Map, Value};
use std::path::Path;
use std::time::Duration;

/// SPEC §0.3: the per-phase budget when a server states none.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// Sibling sections of a raw server map that are never servers.
const RESERVED_KEYS: [&str; 5] = ["builtins", "agents", "a2a", "mcpServer", "nameCollisions"];

/// The parsed MCP configuration (SPEC §2): wrappers `mcpServers` | `servers` |
/// `mcp`, or a raw server map (the reserved sibling keys `builtins`,
/// `agents`, `a2a`, `mcpServer` are not servers).
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    /// Servers in the config's order.
    pub servers: Vec<ServerConfig>,
    builtins: Option<Value>,
    /// `nameCollisions: "rename"`: when two MCP tools end up with one name,
    /// the later is renamed (`NAME_2`, ...) instead of replacing the earlier
    /// (the recorded behaviour, pinned by the conformance vectors). Either
    /// way the status has a warning naming both.
    pub rename_collisions: bool,
}

impl McpConfig {
    /// Gives every server the host's §10 `waitFor` for the elicitation
    /// bridge (SPEC §2, [`super::elicit`]): a server connected with one is
    /// told the client supports `elicitation` and is answered through it;
    /// without one (the default) the capability is not advertised.
    pub fn set_wait_for(&mut self, wait_for: Option<super::WaitFor>) {
        for s in &mut self.servers {
            s.wait_for = HostWaitFor(wait_for.clone());
        }
    }

    /// Gives every server the host's `authorize` callback (the browser step
    /// of OAuth, [`super::auth`]): a remote server without an `auth` key
    /// then answers a `401` with an authorization; without one only the
    /// servers configured with `auth` do (and only `client_credentials`
    /// completes).
    pub fn set_authorize(&mut self, authorize: Option<super::auth::Authorize>) {
        for s in &mut self.servers {
            s.authorize = super::auth::HostAuthorize(authorize.clone());
        }
    }

    /// The top-level `builtins` key of the MCP config object, when present
    /// (divergence `mcp/config-top-level-builtins-key`): the toolkit applies
    /// it when its own config has no `builtins` key.
    pub fn builtins(&self) -> Option<&Value> {
        self.builtins.as_ref()
    }
}

/// How to reach one server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking line-delimited JSON-RPC on stdin/stdout.
    Stdio {
        /// Program then arguments; may be empty (the spawn then fails).
        command: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
    },
    /// A remote server: streamable HTTP, falling back to the legacy HTTP+SSE
    /// transport unless `sse_only` (an explicit `"type": "sse"`).
    Remote {
        url: String,
        /// Header values after `${ENV}` expansion. Never logged or reported.
        headers: Vec<(String, String)>,
        sse_only: bool,
        /// What those `${ENV}` references expanded to, taken out of every
        /// error, status and result of this server.
        secrets: HeaderSecrets,
        /// OAuth (MCP authorization, [`super::auth`]): the `auth` key.
        auth: super::auth::AuthSetting,
    },
    /// The entry cannot describe a server; the message names the bad field.
    Invalid(String),
}

/// The expanded `${ENV}` values of a server's headers. Never printed (its
/// Debug says nothing of them) and not part of what makes two configs equal.
#[derive(Clone, Default)]
pub struct HeaderSecrets(pub crate::env::Secrets);

impl std::fmt::Debug for HeaderSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HeaderSecrets(..)")
    }
}

impl PartialEq for HeaderSecrets {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// One configured server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    pub enabled: bool,
    pub transport: Transport,
    /// Bounds connecting (each phase) and each call; for a call it is an
    /// idle timeout when `reset_timeout_on_progress` holds: each
    /// `notifications/progress` for the call starts it again.
    pub timeout: Duration,
    /// `resetTimeoutOnProgress` (default true): every tools/call carries a
    /// progress token, and the server's progress on it restarts `timeout`.
    pub reset_timeout_on_progress: bool,
    /// `maxTotalTimeout`: the most a call may take however much progress
    /// it reports (none by default).
    pub max_total_timeout: Option<Duration>,
    /// `resourcesAsTools`: the server's resources and prompts are offered
    /// to the model through `list_mcp_resources`, `read_mcp_resource` and
    /// `get_mcp_prompt` (`super::resource_tools`).
    pub resources_as_tools: bool,
    /// The per-server `tools` filter on original tool names.
    pub tools_filter: Vec<(String, bool)>,
    /// The host's `waitFor` for elicitation ([`McpConfig::set_wait_for`]).
    pub wait_for: HostWaitFor,
    /// The host's `authorize` for OAuth ([`McpConfig::set_authorize`]).
    pub authorize: super::auth::HostAuthorize,
    /// `protocolVersion`: how the session starts ([`Lifecycle`]).
    pub lifecycle: Lifecycle,
}

/// How a session starts (the server's `protocolVersion` setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lifecycle {
    /// `"2025-11-25"` (the default): `initialize` offering 2025-11-25, as
    /// every server of 2025 expects; no probe.
    #[default]
    Initialize,
    /// `"auto"`: `server/discover` first; 2026-07-28 where the server
    /// advertises it, else `initialize` offering 2025-11-25 (one round trip
    /// more against a server of 2025).
    Auto,
    /// `"2026-07-28"`: `server/discover` only; a server without 2026-07-28
    /// fails to connect.
    Discover,
}

/// The values `protocolVersion` takes.
const LIFECYCLES: &str = "\"2025-11-25\", \"auto\" or \"2026-07-28\"";

/// A host `waitFor` carried by a server's config. Not data: its Debug says
/// only whether it is set, and it is not part of what makes two configs equal.
#[derive(Clone, Default)]
pub struct HostWaitFor(pub Option<super::WaitFor>);

impl std::fmt::Debug for HostWaitFor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "HostWaitFor(set)"
        } else {
            "HostWaitFor(none)"
        })
    }
}

impl PartialEq for HostWaitFor {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl ServerConfig {
    /// Whether the `tools` filter keeps the tool with this original name:
    /// empty ⇒ all; any `true` ⇒ an allow-list; only `false` ⇒ a drop-list.
    pub fn keeps_tool(&self, name: &str) -> bool {
        if self.tools_filter.is_empty() {
            return true;
        }
        let setting = self
            .tools_filter
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| *b);
        if self.tools_filter.iter().any(|(_, b)| *b) {
            setting == Some(true)
        } else {
            setting != Some(false)
        }
    }
}

/// Reads the toolkit config's `mcpConfig`: an object, a path to an mcp.json
/// file, or JSON text (a string whose first non-space character is `{`).
pub fn parse_config(value: &Value) -> Result<McpConfig, Error> {
    match value {
        Value::Object(map) => parse_object(map),
        Value::String(s) if s.trim_start().starts_with('{') => {
            let parsed: Value = serde_json::from_str(s).map_err(|e| {
                Error::invalid_config(format!("mcpConfig: the JSON text is not valid JSON: {e}"))
            })?;
            parse_top(&parsed, "mcpConfig")
        }
        Value::String(path) => {
            let text = std::fs::read_to_string(Path::new(path)).map_err(|e| {
                Error::invalid_config(format!("mcpConfig: cannot read the file '{path}': {e}"))
            })?;
            let parsed: Value = serde_json::from_str(&text).map_err(|e| {
                Error::invalid_config(format!(
                    "mcpConfig: the file '{path}' is not valid JSON: {e}"
                ))
            })?;
            parse_top(&parsed, &format!("mcpConfig file '{path}'"))
        }
        other => Err(Error::invalid_config(format!(
            "mcpConfig: expected an object, a path to an mcp.json file or JSON text, got {}",
            type_name(other)
        ))),
    }
}

fn parse_top(value: &Value, what: &str) -> Result<McpConfig, Error> {
    match value {
        Value::Object(map) => parse_object(map),
        other => Err(Error::invalid_config(format!(
            "{what}: expected a JSON object, got {}",
            type_name(other)
        ))),
    }
}

fn parse_object(map: &Map<String, Value>) -> Result<McpConfig, Error> {
    let builtins = map.get("builtins").cloned();
    let rename_collisions = match map.get("nameCollisions") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) if s == "rename" => true,
        Some(Value::String(s)) if s == "replace" => false,
        Some(other) => {
            return Err(Error::invalid_config(format!(
                "mcpConfig.nameCollisions: expected \"replace\" or \"rename\", got {other}"
            )))
        }
    };
    let wrapper = ["mcpServers", "servers", "mcp"]
        .into_iter()
        .find_map(|key| map.get(key).map(|v| (key, v)));
    let servers = match wrapper {
        Some((_, Value::Object(inner))) => parse_servers(inner.iter()),
        Some((_, Value::Null)) => Vec::new(),
        Some((key, other)) => {
            return Err(Error::invalid_config(format!(
                "mcpConfig.{key}: expected an object of servers, got {}",
                type_name(other)
            )));
        }
        None => parse_servers(
            map.iter()
                .filter(|(k, _)| !RESERVED_KEYS.contains(&k.as_str())),
        ),
    };
    Ok(McpConfig {
        servers,
        builtins,
        rename_collisions,
    })
}

fn parse_servers<'a>(entries: impl Iterator<Item = (&'a String, &'a Value)>) -> Vec<ServerConfig> {
    entries.map(|(name, v)| parse_server(name, v)).collect()
}

fn parse_server(name: &str, value: &Value) -> ServerConfig {
    let invalid = |msg: String| ServerConfig {
        name: name.to_string(),
        enabled: true,
        transport: Transport::Invalid(msg),
        timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
        reset_timeout_on_progress: true,
        max_total_timeout: None,
        resources_as_tools: false,
        tools_filter: Vec::new(),
        wait_for: HostWaitFor::default(),
        authorize: super::auth::HostAuthorize::default(),
        lifecycle: Lifecycle::default(),
    };
    let Value::Object(m) = value else {
        return invalid(format!("expected an object, got {}", type_name(value)));
    };
    let enabled = !(m.get("disabled") == Some(&Value::Bool(true))
        || m.get("enabled") == Some(&Value::Bool(false)));
    let timeout = match m.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_MS,
        Some(v) => match v.as_u64() {
            Some(ms) if ms > 0 => ms,
            _ => {
                return invalid(format!(
                    "timeout: expected a positive number of milliseconds, got {v}"
                ))
            }
        },
    };
    let reset_timeout_on_progress = match m.get("resetTimeoutOnProgress") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return invalid(format!(
                "resetTimeoutOnProgress: expected true or false, got {}",
                type_name(other)
            ))
        }
    };
    let max_total_timeout = match m.get("maxTotalTimeout") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(ms) if ms > 0 => Some(Duration::from_millis(ms)),
            _ => {
                return invalid(format!(
                    "maxTotalTimeout: expected a positive number of milliseconds, got {v}"
                ))
            }
        },
    };
    let resources_as_tools = match m.get("resourcesAsTools") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return invalid(format!(
                "resourcesAsTools: expected true or false, got {}",
                type_name(other)
            ))
        }
    };
    let tools_filter = match m.get("tools") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(t)) => {
            let mut out = Vec::new();
            for (k, v) in t {
                match v {
                    Value::Bool(b) => out.push((k.clone(), *b)),
                    other => {
                        return invalid(format!(
                            "tools.{k}: expected true or false, got {}",
                            type_name(other)
                        ))
                    }
                }
            }
            out
        }
        Some(other) => {
            return invalid(format!(
                "tools: expected an object of tool name to true/false, got {}",
                type_name(other)
            ))
        }
    };
    let lifecycle = match m.get("protocolVersion") {
        None | Some(Value::Null) => Lifecycle::Initialize,
        Some(Value::String(v)) if v == "2025-11-25" => Lifecycle::Initialize,
        Some(Value::String(v)) if v == "auto" => Lifecycle::Auto,
        Some(Value::String(v)) if v == "2026-07-28" => Lifecycle::Discover,
        Some(other) => {
            return invalid(format!(
                "protocolVersion: expected {LIFECYCLES}, got {other}"
            ))
        }
    };
    let transport = match parse_transport(m) {
        Ok(t) => t,
        Err(msg) => Transport::Invalid(msg),
    };
    ServerConfig {
        name: name.to_string(),
        enabled,
        transport,
        timeout: Duration::from_millis(timeout),
        reset_timeout_on_progress,
        max_total_timeout,
        resources_as_tools,
        tools_filter,
        wait_for: HostWaitFor::default(),
        authorize: super::auth::HostAuthorize::default(),
        lifecycle,
    }
}

fn parse_transport(m: &Map<String, Value>) -> Result<Transport, String> {
    let kind = match m.get("type") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(other) => return Err(format!("type: expected a string, got {}", type_name(other))),
    };
    let remote = match kind {
        Some("local" | "stdio") => false,
        Some("remote" | "http" | "streamable-http" | "streamableHttp" | "sse") => true,
        Some(other) => {
            return Err(format!(
                "type: unknown server type '{other}' (expected local, stdio, remote, http or sse)"
            ))
        }
        // SPEC §2: without a type, a url means remote, else a command means local.
        None => m.get("url").is_some_and(|u| !u.is_null()),
    };
    if remote {
        let url = match m.get("url") {
            Some(Value::String(u)) => u.clone(),
            None | Some(Value::Null) => return Err("url: a remote server needs a url".into()),
            Some(other) => return Err(format!("url: expected a string, got {}", type_name(other))),
        };
        let mut secrets = crate::env::Secrets::default();
        let headers = match m.get("headers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(h)) => h
                .iter()
                .map(|(k, v)| (k.clone(), secrets.expand(&crate::json::display_string(v))))
                .collect(),
            Some(other) => {
                return Err(format!(
                    "headers: expected an object, got {}",
                    type_name(other)
                ))
            }
        };
        let auth = super::auth::parse(m.get("auth"), &mut secrets)?;
        return Ok(Transport::Remote {
            url,
            headers,
            sse_only: kind == Some("sse"),
            secrets: HeaderSecrets(secrets),
            auth,
        });
    }
    let mut command = match m.get("command") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => out.push(s.clone()),
                    other => {
                        return Err(format!(
                            "command[{i}]: expected a string, got {}",
                            type_name(other)
                        ))
                    }
                }
            }
            out
        }
        Some(other) => {
            return Err(format!(
                "command: expected an array of strings, got {}",
                type_name(other)
            ))
        }
    };
    // The Claude Desktop / VS Code form: "command": "prog", "args": [...].
    match m.get("args") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => command.push(s.clone()),
                    other => {
                        return Err(format!(
                            "args[{i}]: expected a string, got {}",
                            type_name(other)
                        ))
                    }
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "args: expected an array of strings, got {}",
                type_name(other)
            ))
        }
    }
    let env_value = m
        .get("environment")
        .filter(|v| !v.is_null())
        .or_else(|| m.get("env").filter(|v| !v.is_null()));
    let env = match env_value {
        None => Vec::new(),
        Some(Value::Object(e)) => e
            .iter()
            .map(|(k, v)| (k.clone(), crate::json::display_string(v)))
            .collect(),
        Some(other) => {
            return Err(format!(
                "environment: expected an object of variables, got {}",
                type_name(other)
            ))
        }
    };
    if m.get("auth").is_some_and(|a| !a.is_null()) {
        return Err("auth: only a remote (HTTP) server takes OAuth settings".into());
    }
    let cwd = match m.get("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => return Err(format!("cwd: expected a string, got {}", type_name(other))),
    };
    Ok(Transport::Stdio { command, env, cwd })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_filter_semantics_match_the_skills_filter() {
        let mut s = parse_server("s", &json!({"command": ["x"]}));
        assert!(s.keeps_tool("a"));
        s.tools_filter = vec![("a".into(), true), ("b".into(), false)];
        assert!(s.keeps_tool("a"));
        assert!(!s.keeps_tool("c"));
        s.tools_filter = vec![("b".into(), false)];
        assert!(s.keeps_tool("a"));
        assert!(!s.keeps_tool("b"));
    }

    #[test]
    fn expand_env_replaces_set_and_unset_variables() {
        std::env::set_var("TN_MCP_CFG_TEST", "v1");
        assert_eq!(
            crate::env::expand("Bearer ${TN_MCP_CFG_TEST}!"),
            "Bearer v1!"
        );
        assert_eq!(crate::env::expand("${TN_MCP_CFG_UNSET_XYZ}"), "");
        assert_eq!(crate::env::expand("${not closed"), "${not closed");
    }

    #[test]
    fn type_is_inferred_and_command_string_takes_args() {
        let cfg = parse_config(&json!({"mcpServers": {
            "r": {"url": "http://127.0.0.1:1/mcp"},
            "l": {"command": "python3", "args": ["-u", "s.py"], "env": {"A": 1}},
        }}))
        .unwrap_or_default();
        assert_eq!(cfg.servers.len(), 2);
        assert!(matches!(cfg.servers[0].transport, Transport::Remote { .. }));
        assert_eq!(
            cfg.servers[1].transport,
            Transport::Stdio {
                command: vec!["python3".into(), "-u".into(), "s.py".into()],
                env: vec![("A".into(), "1".into())],
                cwd: None
            }
        );
    }

    #[test]
    fn progress_and_resource_settings_default_and_parse() {
        let s = parse_server("s", &json!({"command": ["x"], "timeout": 500}));
        assert_eq!(
            (
                s.timeout,
                s.reset_timeout_on_progress,
                s.max_total_timeout,
                s.resources_as_tools
            ),
            (Duration::from_millis(500), true, None, false)
        );
        let s = parse_server(
            "s",
            &json!({"command": ["x"], "resetTimeoutOnProgress": false,
                    "maxTotalTimeout": 60000, "resourcesAsTools": true}),
        );
        assert_eq!(
            (
                s.reset_timeout_on_progress,
                s.max_total_timeout,
                s.resources_as_tools
            ),
            (false, Some(Duration::from_millis(60000)), true)
        );
        for (bad, why) in [
            (
                json!({"maxTotalTimeout": -1}),
                "maxTotalTimeout: expected a positive number of milliseconds, got -1",
            ),
            (
                json!({"resourcesAsTools": 1}),
                "resourcesAsTools: expected true or false, got a number",
            ),
            (
                json!({"protocolVersion": "2025-06-18"}),
                "protocolVersion: expected \"2025-11-25\", \"auto\" or \"2026-07-28\", \
                 got \"2025-06-18\"",
            ),
        ] {
            let mut entry = json!({"command": ["x"]});
            if let (Some(e), Value::Object(b)) = (entry.as_object_mut(), bad) {
                e.extend(b);
            }
            assert_eq!(
                parse_server("s", &entry).transport,
                Transport::Invalid(why.into())
            );
        }
    }

    #[test]
    fn protocol_version_picks_the_lifecycle() {
        let of = |v: Value| {
            let mut entry = json!({"command": ["x"]});
            entry["protocolVersion"] = v;
            parse_server("s", &entry).lifecycle
        };
        assert_eq!(
            parse_server("s", &json!({"command": ["x"]})).lifecycle,
            Lifecycle::Initialize
        );
        assert_eq!(of(json!("2025-11-25")), Lifecycle::Initialize);
        assert_eq!(of(json!("auto")), Lifecycle::Auto);
        assert_eq!(of(json!("2026-07-28")), Lifecycle::Discover);
    }
}
