//! An ACP agent as the model of a client (contract §10.1, §10.4): an
//! in-process client whose `generate` is one warm [`AcpSession`]. The
//! loop, the tools, the hooks and the conversation store are the
//! in-process client's; each turn's generate event goes to the agent as
//! one `session/prompt` and its message chunks come back as `{content}`.

use super::provider::{Exchange, Provider};
use super::{inprocess, Client, DEFAULT_MAX_TURNS};
use crate::error::{Error, ErrorCode, Result};
use crate::json::type_name;
use crate::provider::acp::{AcpOptions, AcpSession};
use crate::provider::http::FailedAttempt;
use crate::provider::ClientConfig;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// The keys of an ACP client.
pub const ACP_KEYS: &str = "command, args, cwd, env, protocolVersion, permissionTimeoutMs, mode, model, systemPrompt, maxTurns";

/// The model name a client without `model` reports (metrics, the generate
/// event).
pub const DEFAULT_MODEL: &str = "acp";

/// The turns of a client answered by an ACP session; dropping it (with the
/// client) closes the session.
pub struct AcpProvider {
    pub session: AcpSession,
}

impl Provider for AcpProvider {
    fn complete(&self, exchange: Exchange<'_>) -> Result<Value> {
        if exchange.on_text.is_some() {
            return Err(Error::invalid_argument(
                "an ACP client cannot stream: its agent's answer is taken whole (use tn_run or tn_ask without stream)",
            ));
        }
        let body = match exchange.transformed {
            Some(body) => body,
            None => exchange.body.to_value(),
        };
        let request = inprocess::request_of(&body, exchange.turn);
        let answer = self
            .session
            .generate(&request, Some(exchange.cancel), exchange.deadline);
        match answer {
            Ok(answer) => inprocess::response_of(&answer)
                .map_err(|why| Error::new(ErrorCode::Internal, format!("acp: {why}"))),
            Err(e) if e.code == ErrorCode::Cancelled => Err(e),
            Err(e) => {
                // onError hears of the failure; there are no retries (one
                // session, one conversation: a turn is not sent twice).
                let info = FailedAttempt {
                    status: None,
                    error: e.message.clone(),
                    attempt: 0,
                    retryable: false,
                    retry_after_ms: None,
                };
                (exchange.classify)(&info)?;
                Err(e)
            }
        }
    }

    fn streams(&self) -> bool {
        false
    }
}

fn string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(Error::invalid_config(format!(
            "acp.{key} must be a string, got {}",
            type_name(other)
        ))),
    }
}

fn count(obj: &Map<String, Value>, key: &str, max: u64) -> Result<Option<u64>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().filter(|n| *n <= max).map(Some).ok_or_else(|| {
            Error::invalid_config(format!(
                "acp.{key} must be a whole number from 0 to {max}, got {v}"
            ))
        }),
    }
}

/// Reads the agent's options and the client's own keys (`model`,
/// `systemPrompt`, `maxTurns`) from an ACP client's JSON.
fn options(v: &Value) -> Result<(AcpOptions, Map<String, Value>, u32)> {
    let obj = v.as_object().ok_or_else(|| {
        Error::invalid_config(format!(
            "acp client must be a JSON object, got {}",
            type_name(v)
        ))
    })?;
    if let Some(k) = obj
        .keys()
        .find(|k| !ACP_KEYS.split(", ").any(|c| c == k.as_str()))
    {
        return Err(Error::invalid_config(format!(
            "acp: unknown key '{k}' (known keys: {ACP_KEYS})"
        )));
    }
    let command = string(obj, "command")?
        .filter(|c| !c.is_empty())
        .ok_or_else(|| Error::invalid_config("acp.command is required (the agent's program)"))?;
    let mut options = AcpOptions::new(command);
    options.args = match obj.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, a)| {
                a.as_str().map(str::to_string).ok_or_else(|| {
                    Error::invalid_config(format!(
                        "acp.args[{i}] must be a string, got {}",
                        type_name(a)
                    ))
                })
            })
            .collect::<Result<_>>()?,
        Some(other) => {
            return Err(Error::invalid_config(format!(
                "acp.args must be an array of strings, got {}",
                type_name(other)
            )))
        }
    };
    options.cwd = string(obj, "cwd")?;
    options.env = match obj.get("env") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(vars)) => vars
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(Error::invalid_config(format!(
                    "acp.env.{k} must be a string, got {}",
                    type_name(other)
                ))),
            })
            .collect::<Result<_>>()?,
        Some(other) => {
            return Err(Error::invalid_config(format!(
                "acp.env must be an object of strings, got {}",
                type_name(other)
            )))
        }
    };
    if let Some(v) = count(obj, "protocolVersion", u64::from(u16::MAX))? {
        options.protocol_version = u16::try_from(v).unwrap_or(u16::MAX);
    }
    // A day at most: a bigger number is a mistake, not a wish.
    if let Some(ms) = count(obj, "permissionTimeoutMs", 86_400_000)? {
        if ms == 0 {
            return Err(Error::invalid_config(
                "acp.permissionTimeoutMs must be more than 0",
            ));
        }
        options.permission_timeout = Duration::from_millis(ms);
    }
    options.mode = string(obj, "mode")?;
    let mut shared = Map::new();
    shared.insert(
        "model".into(),
        json!(string(obj, "model")?.unwrap_or_else(|| DEFAULT_MODEL.into())),
    );
    if let Some(p) = string(obj, "systemPrompt")? {
        shared.insert("systemPrompt".into(), json!(p));
    }
    let max_turns = match obj.get("maxTurns") {
        None | Some(Value::Null) => DEFAULT_MAX_TURNS,
        Some(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                Error::invalid_config(format!(
                    "acp.maxTurns must be a whole number of 0 or more, got {n}"
                ))
            })?,
    };
    Ok((options, shared, max_turns))
}

impl Client {
    /// A client whose model is an ACP agent (contract §10.4), built from
    /// `{command, args?, cwd?, env?, protocolVersion?, permissionTimeoutMs?,
    /// mode?, model?, systemPrompt?, maxTurns?}`: the agent is started and
    /// its session opened here (see [`crate::provider::acp`]); each turn of
    /// a run is one prompt on that session. Unknown keys and values of the
    /// wrong type are `invalid_config` errors naming the key; a failed start
    /// or handshake is the session's error. Dropping the client closes the
    /// agent.
    pub fn acp(v: &Value) -> Result<Client> {
        let (options, mut shared, max_turns) = options(v)?;
        // translate's checks of the shared keys, on a stand-in endpoint
        // that is never called.
        shared.insert("baseUrl".into(), json!("http://acp.invalid"));
        shared.insert("style".into(), json!("openai"));
        let config = ClientConfig::from_json(&Value::Object(shared))?;
        let session = AcpSession::connect(&options)?;
        Ok(Client::with_provider(
            config,
            max_turns,
            Arc::new(AcpProvider { session }),
        ))
    }
}
