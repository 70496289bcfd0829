//! What a host asks of a served toolkit: the MCP profile (SPEC §7C
//! `MCPServeConfig`, also the `mcpServer` block of a config file, §2) and the
//! transport it is served on.

use crate::error::{Error, Result};
use crate::json::type_name;
use serde_json::{Map, Value};

/// `initialize`'s default `serverInfo.name`.
pub const DEFAULT_NAME: &str = "toolnexus";
/// `initialize`'s default `serverInfo.version`.
pub const DEFAULT_VERSION: &str = "0.1.0";

/// The served identity and the exposed tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub name: String,
    pub version: String,
    /// Exactly these tool names, when set; a name the toolkit lacks is
    /// ignored, never an error. `None` exposes every tool.
    pub tools: Option<Vec<String>>,
    /// Serve each proxied MCP tool (and prompt) under its own name on its
    /// server rather than `server_name`, where no other exposed tool (or
    /// prompt) has that name; a clash keeps the prefixed name. A call by the
    /// toolkit's (prefixed) name is still answered.
    pub unprefixed: bool,
}

impl Default for Profile {
    fn default() -> Self {
        Profile {
            name: DEFAULT_NAME.into(),
            version: DEFAULT_VERSION.into(),
            tools: None,
            unprefixed: false,
        }
    }
}

impl Profile {
    /// Reads `{name?, version?, tools?}`; `what` names the object in errors
    /// (`mcp`, `mcpServer`); also `unprefixed?`. An unknown key or a wrong type is an error that
    /// names it.
    pub fn from_value(v: &Value, what: &str) -> Result<Profile> {
        let obj = match v {
            Value::Null => return Ok(Profile::default()),
            Value::Object(o) => o,
            other => {
                return Err(Error::invalid_config(format!(
                    "{what}: expected an object {{name?, version?, tools?}}, got {}",
                    type_name(other)
                )))
            }
        };
        let mut p = Profile::default();
        for (k, val) in obj {
            match k.as_str() {
                "name" => {
                    if let Some(s) = opt_string(val, what, k)? {
                        p.name = s;
                    }
                }
                "version" => {
                    if let Some(s) = opt_string(val, what, k)? {
                        p.version = s;
                    }
                }
                "tools" => p.tools = tool_list(val, what)?,
                "unprefixed" => match val {
                    Value::Null => {}
                    Value::Bool(b) => p.unprefixed = *b,
                    other => {
                        return Err(Error::invalid_config(format!(
                            "{what}.unprefixed: expected true or false, got {}",
                            type_name(other)
                        )))
                    }
                },
                other => {
                    return Err(Error::invalid_config(format!(
                        "{what}: unknown key '{other}' (expected name, version, tools, unprefixed)"
                    )))
                }
            }
        }
        Ok(p)
    }
}

/// A non-empty string, or nothing for null / "" (the default then holds).
fn opt_string(v: &Value, what: &str, key: &str) -> Result<Option<String>> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) if s.is_empty() => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        other => Err(Error::invalid_config(format!(
            "{what}.{key}: expected a string, got {}",
            type_name(other)
        ))),
    }
}

fn tool_list(v: &Value, what: &str) -> Result<Option<Vec<String>>> {
    match v {
        Value::Null => Ok(None),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, n)| match n {
                Value::String(s) => Ok(s.clone()),
                other => Err(Error::invalid_config(format!(
                    "{what}.tools[{i}]: expected a tool name, got {}",
                    type_name(other)
                ))),
            })
            .collect::<Result<Vec<_>>>()
            .map(Some),
        other => Err(Error::invalid_config(format!(
            "{what}.tools: expected an array of tool names, got {}",
            type_name(other)
        ))),
    }
}

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP at `http://ADDR/mcp`, stateless. The address is
    /// `host:port`; port 0 picks a free one (the bound URL says which).
    Http { addr: String },
    /// JSON-RPC lines on the process's own stdin and stdout.
    Stdio,
}

pub use crate::limits::{CALLS_IN_FLIGHT, HTTP_REQUEST_BYTES, LINE_BYTES as STDIO_REQUEST_BYTES};

/// What one server takes at most (issue 25 M2): the size of one request
/// (an HTTP body, a stdio line; a larger one is refused with a JSON-RPC
/// error, -32600, and never held whole) and the `tools/call`s running at
/// once (one past it is answered at once with the JSON-RPC error -32000,
/// "server busy", not queued).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// `maxRequestBytes`: default 4 MiB over HTTP, 64 MiB on stdio (the
    /// most either transport ever takes).
    pub max_request_bytes: Option<usize>,
    /// `maxCallsInFlight`: default 64.
    pub max_calls: usize,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            max_request_bytes: None,
            max_calls: CALLS_IN_FLIGHT,
        }
    }
}

impl ServeLimits {
    /// The request cap in force on `transport`.
    pub fn request_bytes(&self, transport: &Transport) -> usize {
        let most = match transport {
            Transport::Http { .. } => HTTP_REQUEST_BYTES,
            Transport::Stdio => STDIO_REQUEST_BYTES,
        };
        self.max_request_bytes.map_or(most, |b| b.min(most))
    }

    /// The request cap of the routes served beside `/mcp` (the A2A agent):
    /// [`crate::limits::SERVED_REQUEST_BYTES`], or the host's
    /// `maxRequestBytes` when that is lower.
    pub fn beside_bytes(&self) -> usize {
        let most = crate::limits::SERVED_REQUEST_BYTES;
        self.max_request_bytes.map_or(most, |b| b.min(most))
    }
}

/// `tn_serve`'s JSON: `{"transport": "http"|"stdio", "addr": "127.0.0.1:0",
/// "mcp": {name?, version?, tools?}, "maxRequestBytes"?: n,
/// "maxCallsInFlight"?: n}`. `transport` defaults to `http`, which needs
/// `addr`. See [`ServeLimits`] for the two caps (each at least 1; the
/// request cap is at most its transport's default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeConfig {
    pub transport: Transport,
    pub profile: Profile,
    /// The `a2a` block as given (read by [`crate::a2a`]): when present the
    /// toolkit is also served as an A2A agent beside `/mcp`.
    pub a2a: Option<Value>,
    pub limits: ServeLimits,
}

impl ServeConfig {
    pub fn from_json_text(text: &str) -> Result<ServeConfig> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| Error::invalid_json("serve config", &e))?;
        ServeConfig::from_value(&v)
    }

    pub fn from_value(v: &Value) -> Result<ServeConfig> {
        let empty = Map::new();
        let obj = match v {
            Value::Object(o) => o,
            Value::Null => &empty,
            other => {
                return Err(Error::invalid_config(format!(
                    "serve config: expected an object {{transport?, addr?, mcp?}}, got {}",
                    type_name(other)
                )))
            }
        };
        if let Some(k) = obj.keys().find(|k| {
            !matches!(
                k.as_str(),
                "transport" | "addr" | "mcp" | "a2a" | "maxRequestBytes" | "maxCallsInFlight"
            )
        }) {
            return Err(Error::invalid_config(format!(
                "serve config: unknown key '{k}' (expected transport, addr, mcp, a2a, \
                 maxRequestBytes, maxCallsInFlight)"
            )));
        }
        let count = |key: &str| -> Result<Option<usize>> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
                    Some(n) if n >= 1 => Ok(Some(n)),
                    _ => Err(Error::invalid_config(format!(
                        "{key}: expected a whole number of at least 1, got {v}"
                    ))),
                },
            }
        };
        let limits = ServeLimits {
            max_request_bytes: count("maxRequestBytes")?,
            max_calls: count("maxCallsInFlight")?.unwrap_or(CALLS_IN_FLIGHT),
        };
        let addr = match obj.get("addr") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                return Err(Error::invalid_config(format!(
                    "addr: expected \"host:port\", got {}",
                    type_name(other)
                )))
            }
        };
        let transport = match obj.get("transport") {
            None | Some(Value::Null) => "http",
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(Error::invalid_config(format!(
                    "transport: expected \"http\" or \"stdio\", got {}",
                    type_name(other)
                )))
            }
        };
        let transport = match (transport, addr) {
            ("http", Some(addr)) => Transport::Http { addr },
            ("http", None) => return Err(Error::invalid_config(
                "addr: missing (the HTTP transport listens on \"host:port\", e.g. \"127.0.0.1:0\")",
            )),
            ("stdio", None) => Transport::Stdio,
            ("stdio", Some(_)) => {
                return Err(Error::invalid_config(
                    "addr: the stdio transport takes no address",
                ))
            }
            (other, _) => {
                return Err(Error::invalid_config(format!(
                    "transport: unknown transport '{other}' (expected http or stdio)"
                )))
            }
        };
        let profile = match obj.get("mcp") {
            None => Profile::default(),
            Some(v) => Profile::from_value(v, "mcp")?,
        };
        let a2a = obj.get("a2a").filter(|v| !v.is_null()).cloned();
        Ok(ServeConfig {
            transport,
            profile,
            a2a,
            limits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_are_the_spec_identity_and_every_tool() {
        let c = ServeConfig::from_value(&json!({"addr": "127.0.0.1:0"})).unwrap_or_else(|e| {
            panic!("{e}");
        });
        assert_eq!(
            c.transport,
            Transport::Http {
                addr: "127.0.0.1:0".into()
            }
        );
        assert_eq!(c.profile.name, "toolnexus");
        assert_eq!(c.profile.version, "0.1.0");
        assert_eq!(c.profile.tools, None);
        assert_eq!(c.limits.max_calls, CALLS_IN_FLIGHT);
        assert_eq!(c.limits.request_bytes(&c.transport), HTTP_REQUEST_BYTES);
        assert_eq!(
            c.limits.request_bytes(&Transport::Stdio),
            STDIO_REQUEST_BYTES
        );
    }

    #[test]
    fn the_profile_sets_identity_and_tools() {
        let p = Profile::from_value(
            &json!({"name": "gw", "version": "2.0.0", "tools": ["bash", "nope"]}),
            "mcpServer",
        )
        .unwrap_or_default();
        assert_eq!(
            p,
            Profile {
                name: "gw".into(),
                version: "2.0.0".into(),
                tools: Some(vec!["bash".into(), "nope".into()]),
                unprefixed: false,
            }
        );
    }

    #[test]
    fn bad_input_names_the_key() {
        let cases = [
            (json!({"addr": "x", "port": 1}), "unknown key 'port'"),
            (
                json!({"transport": "ws", "addr": "x"}),
                "unknown transport 'ws'",
            ),
            (json!({}), "addr: missing"),
            (
                json!({"transport": "stdio", "addr": "x"}),
                "takes no address",
            ),
            (json!({"addr": 8080}), "addr: expected"),
            (json!({"addr": "x", "mcp": {"tools": "bash"}}), "mcp.tools"),
            (json!({"addr": "x", "mcp": {"tools": [1]}}), "mcp.tools[0]"),
            (
                json!({"addr": "x", "mcp": {"title": "t"}}),
                "unknown key 'title'",
            ),
            (json!({"addr": "x", "mcp": {"name": 3}}), "mcp.name"),
            (
                json!({"addr": "x", "mcp": {"unprefixed": "yes"}}),
                "mcp.unprefixed",
            ),
            (
                json!({"addr": "x", "maxCallsInFlight": 0}),
                "maxCallsInFlight",
            ),
            (
                json!({"addr": "x", "maxRequestBytes": "1k"}),
                "maxRequestBytes",
            ),
        ];
        for (v, want) in cases {
            let e = ServeConfig::from_value(&v).err().map(|e| e.message);
            assert!(e.as_deref().is_some_and(|m| m.contains(want)), "{v}: {e:?}");
        }
    }
}
