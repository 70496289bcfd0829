//! Remote A2A agents as tools (SPEC §7A, source `"a2a"`): each skill on an
//! agent's card becomes one tool; calling it sends the task to the agent
//! (`SendMessage`) and polls the task (`GetTask`) until it ends, the budget
//! runs out or the call is cancelled.
//!
//! An agent is `{card, headers?, timeout?, pollEvery?}` ([`Agent`]): the
//! card URL, headers whose `${ENV}` references are expanded at each request
//! (never logged; anything an agent echoes of them is redacted), the budget
//! of one call (300 000 ms) and the pause between polls (1 000 ms).
//!
//! The wire is upstream's (the profile `"toolnexus"`): A2A 1.0 method names
//! with 0.3 payloads, the result of `SendMessage` being the task itself.

use crate::cancel::CancelToken;
use crate::env::Secrets;
use crate::error::{Error, Result};
use crate::json::type_name;
use crate::net::transport::{self, Failure, Outcome, Prepared};
use crate::tool::{sanitize, ExecContext, Execute, Source, Tool, ToolResult};
use http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use http::Method;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Default budget of one call, in ms.
pub const DEFAULT_TIMEOUT_MS: u64 = 300_000;
/// Default pause between two `GetTask` polls, in ms.
pub const DEFAULT_POLL_EVERY_MS: u64 = 1_000;

/// The one input every A2A tool takes.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "description": "The task to send to the agent, in natural language."
            }
        },
        "required": ["task"],
        "additionalProperties": false
    })
}

/// A remote agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    /// The Agent Card URL.
    pub card: String,
    /// Header templates, expanded at each request.
    pub headers: Vec<(String, String)>,
    pub timeout_ms: u64,
    pub poll_every_ms: u64,
    /// How the toolkit status names it: the config key, or the card URL.
    pub key: String,
    /// The wire to speak; `None`: what the card says (a card with
    /// `supportedInterfaces` at 1.x is `1.0`, any other upstream's).
    pub protocol: Option<Wire>,
}

/// The wires an outbound call can speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Upstream's: `SendMessage`/`GetTask` with 0.3 payloads.
    Toolnexus,
    /// A2A 0.3: `message/send`/`tasks/get`.
    V03,
    /// A2A 1.0: `SendMessage`/`GetTask` with `A2A-Version: 1.0`.
    V10,
}

impl Wire {
    fn from_name(name: &str) -> Option<Wire> {
        match name {
            "toolnexus" => Some(Wire::Toolnexus),
            "0.3" => Some(Wire::V03),
            "1.0" => Some(Wire::V10),
            _ => None,
        }
    }
}

fn wrong_type(key: &str, expected: &str, got: &Value) -> Error {
    Error::invalid_config(format!(
        "{key}: expected {expected}, got {}",
        type_name(got)
    ))
}

fn millis(what: &str, v: Option<&Value>, default: u64) -> Result<u64> {
    match v {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .filter(|n| *n > 0)
            .ok_or_else(|| wrong_type(what, "a positive integer (milliseconds)", v)),
    }
}

impl Agent {
    /// An agent from a card URL alone, with the defaults.
    pub fn from_card(card: &str) -> Agent {
        Agent {
            card: card.into(),
            headers: Vec::new(),
            timeout_ms: DEFAULT_TIMEOUT_MS,
            poll_every_ms: DEFAULT_POLL_EVERY_MS,
            key: card.into(),
            protocol: None,
        }
    }

    /// `{card, headers?, timeout?, pollEvery?}`, or a card URL as a string.
    /// `what` names it in errors (`agents.reviewer`).
    pub fn from_value(v: &Value, what: &str) -> Result<Agent> {
        let obj = match v {
            Value::String(card) => return Ok(Agent::from_card(card)),
            Value::Object(obj) => obj,
            other => {
                return Err(wrong_type(
                    what,
                    "an agent object {card, headers?, timeout?, pollEvery?} or a card URL",
                    other,
                ))
            }
        };
        let card = match obj.get("card") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(other) => return Err(wrong_type(&format!("{what}.card"), "a URL", other)),
            None => {
                return Err(Error::invalid_config(format!(
                    "{what}: \"card\" (the Agent Card URL) is missing"
                )))
            }
        };
        let headers = match obj.get("headers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    other => Err(wrong_type(
                        &format!("{what}.headers.{k}"),
                        "a string",
                        other,
                    )),
                })
                .collect::<Result<_>>()?,
            Some(other) => {
                return Err(wrong_type(
                    &format!("{what}.headers"),
                    "an object of strings",
                    other,
                ))
            }
        };
        Ok(Agent {
            card,
            headers,
            timeout_ms: millis(
                &format!("{what}.timeout"),
                obj.get("timeout"),
                DEFAULT_TIMEOUT_MS,
            )?,
            poll_every_ms: millis(
                &format!("{what}.pollEvery"),
                obj.get("pollEvery"),
                DEFAULT_POLL_EVERY_MS,
            )?,
            key: what.into(),
            protocol: match obj.get("protocol") {
                None | Some(Value::Null) => None,
                Some(Value::String(p)) => Some(Wire::from_name(p).ok_or_else(|| {
                    Error::invalid_config(format!(
                        "{what}.protocol: unknown protocol '{p}' (expected toolnexus, 0.3 or 1.0)"
                    ))
                })?),
                Some(other) => {
                    return Err(wrong_type(&format!("{what}.protocol"), "a string", other))
                }
            },
        })
    }
}

/// The `agents` key of the toolkit config: an object of
/// `id → {card, headers?, timeout?, pollEvery?, enabled?, disabled?}`
/// (upstream's block; an entry without `card` is skipped, `disabled:true`
/// wins over `enabled`, and `enabled:false` leaves it out), or an array of
/// agent descriptors (card URLs or objects).
pub fn parse_agents_config(v: &Value) -> Result<Vec<Agent>> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| Agent::from_value(item, &format!("agents[{i}]")))
            .collect(),
        Value::Object(m) => {
            let mut agents = Vec::new();
            for (id, entry) in m {
                let what = format!("agents.{id}");
                let Value::Object(e) = entry else {
                    return Err(wrong_type(&what, "an agent object", entry));
                };
                let flag = |k: &str| -> Result<Option<bool>> {
                    match e.get(k) {
                        None | Some(Value::Null) => Ok(None),
                        Some(Value::Bool(b)) => Ok(Some(*b)),
                        Some(other) => Err(wrong_type(&format!("{what}.{k}"), "a boolean", other)),
                    }
                };
                let (disabled, enabled) = (flag("disabled")?, flag("enabled")?);
                if disabled == Some(true) || (disabled.is_none() && enabled == Some(false)) {
                    continue;
                }
                if e.get("card").is_none_or(Value::is_null) {
                    continue;
                }
                agents.push(Agent::from_value(entry, &what)?);
            }
            Ok(agents)
        }
        other => Err(wrong_type(
            "agents",
            "an object of agents by id, or an array of agents",
            other,
        )),
    }
}

/// One HTTP exchange with an agent, failures as the sentence the tool
/// reports.
enum Reply {
    Body(Value),
    Failed(String),
    Cancelled,
    TimedOut,
}

/// The agent's headers, expanded now, plus JSON content type on a POST.
fn headers(
    agent: &Agent,
    secrets: &mut Secrets,
    post: Option<Wire>,
) -> std::result::Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    if post.is_some() {
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    if post == Some(Wire::V10) {
        map.insert("a2a-version", HeaderValue::from_static("1.0"));
    }
    for (name, template) in &agent.headers {
        let value = secrets.expand(template);
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("agent header name {name:?} is not a valid header name"))?;
        let value = HeaderValue::from_str(&value)
            .map_err(|_| format!("agent header {name}: the value is not a valid header value"))?;
        map.insert(name, value);
    }
    Ok(map)
}

fn exchange(
    agent: &Agent,
    method: Method,
    url: &str,
    body: Option<(String, Wire)>,
    budget: Duration,
    cancel: Option<&CancelToken>,
    secrets: &mut Secrets,
) -> Reply {
    let (body, wire) = match body {
        Some((text, wire)) => (Some(text), Some(wire)),
        None => (None, None),
    };
    let headers = match headers(agent, secrets, wire) {
        Ok(h) => h,
        Err(e) => return Reply::Failed(e),
    };
    let prepared = Prepared {
        method,
        url: url.to_string(),
        headers,
        body,
    };
    match transport::run(prepared, budget.max(Duration::from_millis(1)), cancel) {
        Outcome::Cancelled => Reply::Cancelled,
        Outcome::Failed(Failure::Timeout) => Reply::TimedOut,
        Outcome::Failed(f) => {
            Reply::Failed(format!("A2A request to {url} failed: {}", failure_text(f)))
        }
        Outcome::Response { status, body } if !(200..300).contains(&status) => {
            Reply::Failed(format!("HTTP {status}: {body}"))
        }
        // An unreadable body reads as null (upstream does not throw).
        Outcome::Response { body, .. } => {
            Reply::Body(serde_json::from_str(&body).unwrap_or(Value::Null))
        }
    }
}

fn failure_text(f: Failure) -> &'static str {
    match f {
        Failure::Timeout => "timed out",
        Failure::Dns => "the host name did not resolve",
        Failure::ConnectFailed => "could not connect",
        Failure::Transport => "the connection failed",
        Failure::TooLarge => "the response was too large",
    }
}

/// A fetched card and the endpoint its JSON-RPC goes to.
#[derive(Debug, Clone)]
pub struct Card {
    pub value: Value,
    pub name: String,
    pub endpoint: String,
    pub wire: Wire,
}

/// `GET <card>` within the agent's timeout.
pub fn fetch_card(
    agent: &Agent,
    cancel: Option<&CancelToken>,
) -> std::result::Result<Card, String> {
    let mut secrets = Secrets::default();
    let budget = Duration::from_millis(agent.timeout_ms);
    let reply = exchange(
        agent,
        Method::GET,
        &agent.card,
        None,
        budget,
        cancel,
        &mut secrets,
    );
    let value = match reply {
        Reply::Body(v) => v,
        Reply::Failed(e) => return Err(secrets.redact(&e).into_owned()),
        Reply::Cancelled => {
            return Err(format!(
                "fetching the Agent Card {} was cancelled",
                agent.card
            ))
        }
        Reply::TimedOut => {
            return Err(format!(
                "fetching the Agent Card {} timed out after {}ms",
                agent.card, agent.timeout_ms
            ))
        }
    };
    read_card(agent, value)
}

/// A fetched card read: its name, the endpoint its JSON-RPC goes to and
/// the wire to speak there (what the card says, unless the agent names one).
/// Public for the fuzz target `a2a_client`.
#[doc(hidden)]
pub fn read_card(agent: &Agent, value: Value) -> std::result::Result<Card, String> {
    if !value.is_object() {
        return Err(format!(
            "the Agent Card at {} is not a JSON object",
            agent.card
        ));
    }
    let name = value
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    // A 1.0 card names its JSON-RPC interface; an older one its `url`.
    let v10 = value
        .get("supportedInterfaces")
        .and_then(Value::as_array)
        .and_then(|ifaces| {
            ifaces.iter().find(|i| {
                i.get("protocolBinding").and_then(Value::as_str) == Some("JSONRPC")
                    && i.get("protocolVersion")
                        .and_then(Value::as_str)
                        .is_some_and(|v| v.starts_with('1'))
            })
        })
        .and_then(|i| i.get("url").and_then(Value::as_str))
        .map(String::from);
    let endpoint = match (value.get("url").and_then(Value::as_str), &v10) {
        (_, Some(u)) if agent.protocol.is_none_or(|w| w == Wire::V10) => u.clone(),
        (Some(u), _) if !u.is_empty() => u.to_string(),
        (_, Some(u)) => u.clone(),
        _ => origin(&agent.card),
    };
    let wire = agent.protocol.unwrap_or(if v10.is_some() {
        Wire::V10
    } else {
        Wire::Toolnexus
    });
    Ok(Card {
        value,
        name,
        endpoint,
        wire,
    })
}

/// `scheme://host[:port]` of a URL (the endpoint of a card without `url`).
fn origin(card: &str) -> String {
    match url::Url::parse(card) {
        Ok(u) => u.origin().ascii_serialization(),
        Err(_) => card.to_string(),
    }
}

/// What building an agent's tools found besides the tools.
#[derive(Debug, Default)]
pub struct Loaded {
    pub tools: Vec<Tool>,
    /// Skills left out, each with why (ids that collide after sanitizing).
    pub warnings: Vec<String>,
}

/// The tools of an agent's card: one per skill, named
/// `sanitize(card.name || "agent") + "_" + sanitize(skill.id || skill.name)`.
pub fn card_tools(agent: &Agent, card: &Card) -> std::result::Result<Loaded, String> {
    let Some(skills) = card.value.get("skills").and_then(Value::as_array) else {
        return Err(format!(
            "the Agent Card at {} has no \"skills\" array",
            agent.card
        ));
    };
    let prefix = sanitize(if card.name.is_empty() {
        "agent"
    } else {
        &card.name
    });
    let shared = Arc::new(Remote {
        agent: agent.clone(),
        name: card.name.clone(),
        endpoint: card.endpoint.clone(),
        wire: card.wire,
    });
    let mut loaded = Loaded::default();
    let mut seen: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for skill in skills {
        let text = |k: &str| {
            skill
                .get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let Some(skill_id) = text("id").or_else(|| text("name")) else {
            loaded.warnings.push(format!(
                "agent {}: a skill without an id or a name is left out",
                card.name
            ));
            continue;
        };
        let tool_name = format!("{prefix}_{}", sanitize(skill_id));
        if let Some(first) = seen.get(&tool_name) {
            loaded.warnings.push(format!(
                "agent {}: skills \"{first}\" and \"{skill_id}\" both become the tool {tool_name}; \"{skill_id}\" is left out",
                card.name
            ));
            continue;
        }
        seen.insert(tool_name.clone(), skill_id.to_string());
        let description = text("description")
            .or_else(|| text("name"))
            .unwrap_or(skill_id);
        loaded.tools.push(Tool::new(
            tool_name,
            description,
            Some(input_schema()),
            Source::A2a,
            Arc::clone(&shared) as Arc<dyn Execute>,
        ));
    }
    Ok(loaded)
}

/// Fetches the card and builds its tools.
pub fn agent_tools(
    agent: &Agent,
    cancel: Option<&CancelToken>,
) -> std::result::Result<Loaded, String> {
    let card = fetch_card(agent, cancel)?;
    card_tools(agent, &card)
}

/// The behaviour of every tool of one agent.
struct Remote {
    agent: Agent,
    /// `card.name`, as the metadata reports it.
    name: String,
    endpoint: String,
    wire: Wire,
}

/// Where one call stands.
struct Call<'a> {
    remote: &'a Remote,
    task_id: String,
    state: String,
    polls: u64,
    started: Instant,
    secrets: Secrets,
}

impl Call<'_> {
    fn finish(&self, r: ToolResult) -> ToolResult {
        let mut md = Map::new();
        md.insert("agent".into(), Value::String(self.remote.name.clone()));
        md.insert("taskId".into(), Value::String(self.task_id.clone()));
        md.insert("state".into(), Value::String(self.state.clone()));
        md.insert("polls".into(), json!(self.polls));
        md.insert(
            "ms".into(),
            json!(u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)),
        );
        self.secrets.redact_result(r.with_metadata(md))
    }

    fn canceled(&mut self) -> ToolResult {
        self.state = "canceled".into();
        self.finish(ToolResult::error(format!(
            "A2A task {} canceled",
            self.task_id
        )))
    }

    fn timed_out(&self, budget_ms: u64) -> ToolResult {
        self.finish(ToolResult::error(format!(
            "A2A task {} timed out after {budget_ms}ms (state={})",
            self.task_id, self.state
        )))
    }

    /// One JSON-RPC call: its `result`, or the finished tool result.
    fn rpc(
        &mut self,
        method: &str,
        params: Value,
        budget_ms: u64,
        ctx: &ExecContext,
    ) -> std::result::Result<Value, ToolResult> {
        let body = json!({
            "jsonrpc": "2.0",
            "id": uuid::Uuid::new_v4().to_string(),
            "method": method,
            "params": params,
        });
        let left = Duration::from_millis(budget_ms).saturating_sub(self.started.elapsed());
        let reply = exchange(
            &self.remote.agent,
            Method::POST,
            &self.remote.endpoint,
            Some((body.to_string(), self.remote.wire)),
            left,
            ctx.cancel.as_ref(),
            &mut self.secrets,
        );
        // A failure while the cancel signal is set is the cancel.
        if ctx.is_cancelled() && !matches!(reply, Reply::Body(_)) {
            return Err(self.canceled());
        }
        match reply {
            Reply::Cancelled => Err(self.canceled()),
            Reply::TimedOut => Err(self.timed_out(budget_ms)),
            Reply::Failed(e) => Err(self.finish(ToolResult::error(e))),
            Reply::Body(v) => rpc_result(self.remote.wire, &v)
                .map_err(|text| self.finish(ToolResult::error(text))),
        }
    }
}

/// A JSON-RPC answer of an agent read: its `result` in the shape this
/// module reads (a 1.0 answer converted), or the text of its `error`.
/// Public for the fuzz target `a2a_client`.
#[doc(hidden)]
pub fn rpc_result(wire: Wire, answer: &Value) -> std::result::Result<Value, String> {
    if let Some(err) = answer.get("error").filter(|e| !e.is_null()) {
        return Err(match err.get("message").and_then(Value::as_str) {
            Some(m) => m.to_string(),
            None => format!(
                "JSON-RPC error {}",
                err.get("code").map_or("null".into(), Value::to_string)
            ),
        });
    }
    let result = answer.get("result").cloned().unwrap_or(Value::Null);
    Ok(match wire {
        Wire::V10 => from_v10(result),
        _ => result,
    })
}

/// What an ended task (`state`, as [`rpc_result`] shows it) answers the
/// call: the output of a completed one, else the error text naming its
/// state and the reason its status message gives. Public for the fuzz
/// target `a2a_client`.
#[doc(hidden)]
pub fn ended(task_id: &str, state: &str, task: &Value) -> std::result::Result<String, String> {
    if state == "completed" {
        return Ok(completed_output(task));
    }
    let mut text = format!("A2A task {task_id} {state}");
    let why = texts(task.pointer("/status/message/parts")).join("\n");
    if !why.is_empty() {
        text.push_str(": ");
        text.push_str(&why);
    }
    Err(text)
}

fn is_terminal(state: &str) -> bool {
    matches!(state, "completed" | "failed" | "canceled")
}

/// The text parts of a message or artifact `parts` array, joined by `\n`.
fn texts(parts: Option<&Value>) -> Vec<String> {
    parts
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter(|p| p.get("kind").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str).map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// A completed task's answer: its artifacts' text, else the latest agent
/// message with text, else `""`.
fn completed_output(task: &Value) -> String {
    let artifacts: Vec<String> = task
        .get("artifacts")
        .and_then(Value::as_array)
        .map(|a| a.iter().flat_map(|a| texts(a.get("parts"))).collect())
        .unwrap_or_default();
    if !artifacts.is_empty() {
        return artifacts.join("\n");
    }
    task.get("history")
        .and_then(Value::as_array)
        .and_then(|h| {
            h.iter()
                .rev()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("agent"))
                .map(|m| texts(m.get("parts")))
                .find(|t| !t.is_empty())
        })
        .map(|t| t.join("\n"))
        .unwrap_or_default()
}

/// A 1.0 answer in the shape the rest of this module reads: the task out
/// of `SendMessage`'s `{"task": …}`, `TASK_STATE_INPUT_REQUIRED` as
/// `input-required`, `ROLE_AGENT` as `agent`, text parts with a `kind`.
fn from_v10(result: Value) -> Value {
    let mut task = match result {
        Value::Object(mut m) if m.contains_key("task") => m.remove("task").unwrap_or(Value::Null),
        other => other,
    };
    fn fix_parts(parts: Option<&mut Value>) {
        for p in parts.and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(m) = p.as_object_mut() {
                if m.contains_key("text") && !m.contains_key("kind") {
                    m.insert("kind".into(), json!("text"));
                }
            }
        }
    }
    fn fix_message(m: Option<&mut Value>) {
        if let Some(m) = m {
            let role = m
                .get("role")
                .and_then(Value::as_str)
                .map(|r| r.strip_prefix("ROLE_").unwrap_or(r).to_ascii_lowercase());
            if let Some(role) = role {
                m["role"] = json!(role);
            }
            fix_parts(m.get_mut("parts"));
        }
    }
    if let Some(state) = task.pointer("/status/state").and_then(Value::as_str) {
        let plain = state
            .strip_prefix("TASK_STATE_")
            .unwrap_or(state)
            .replace('_', "-")
            .to_ascii_lowercase();
        // The 1.0 spelling of upstream's `canceled`.
        let plain = if plain == "cancelled" {
            "canceled".into()
        } else {
            plain
        };
        task["status"]["state"] = json!(plain);
    }
    fix_message(task.pointer_mut("/status/message"));
    for a in task
        .get_mut("artifacts")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        fix_parts(a.get_mut("parts"));
    }
    for m in task
        .get_mut("history")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        fix_message(Some(m));
    }
    task
}

fn state_of(task: &Value) -> Option<String> {
    task.pointer("/status/state")
        .and_then(Value::as_str)
        .map(String::from)
}

impl Execute for Remote {
    fn execute(&self, args: &Value, ctx: &ExecContext) -> ToolResult {
        let mut call = Call {
            remote: self,
            task_id: String::new(),
            state: "submitted".into(),
            polls: 0,
            started: Instant::now(),
            secrets: Secrets::default(),
        };
        let task = args.get("task").and_then(Value::as_str).unwrap_or_default();
        let budget_ms = ctx.timeout_ms.unwrap_or(self.agent.timeout_ms);
        if ctx.is_cancelled() {
            return call.canceled();
        }
        let message_id = uuid::Uuid::new_v4().to_string();
        let (send, get, params) = match self.wire {
            Wire::Toolnexus | Wire::V03 => {
                let mut message = json!({
                    "role": "user",
                    "messageId": message_id,
                    "parts": [{"kind": "text", "text": task}],
                });
                let names = if self.wire == Wire::V03 {
                    message["kind"] = json!("message");
                    ("message/send", "tasks/get")
                } else {
                    ("SendMessage", "GetTask")
                };
                let params = json!({"message": message, "configuration": {"blocking": false}});
                (names.0, names.1, params)
            }
            Wire::V10 => (
                "SendMessage",
                "GetTask",
                json!({
                    "message": {"role": "ROLE_USER", "messageId": message_id,
                        "parts": [{"text": task}]},
                    "configuration": {"returnImmediately": true},
                }),
            ),
        };
        let mut result = match call.rpc(send, params, budget_ms, ctx) {
            Ok(r) => r,
            Err(done) => return done,
        };
        call.task_id = result
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(s) = state_of(&result) {
            call.state = s;
        }
        let pause = Duration::from_millis(self.agent.poll_every_ms);
        while !is_terminal(&call.state) {
            if ctx.is_cancelled() {
                return call.canceled();
            }
            if call.started.elapsed() >= Duration::from_millis(budget_ms) {
                return call.timed_out(budget_ms);
            }
            let interrupted = match &ctx.cancel {
                Some(c) => c.sleep(pause),
                None => {
                    std::thread::sleep(pause);
                    false
                }
            };
            if interrupted || ctx.is_cancelled() {
                return call.canceled();
            }
            let polled = call.rpc(get, json!({"id": call.task_id}), budget_ms, ctx);
            call.polls += 1;
            match polled {
                Ok(r) => {
                    if let Some(s) = state_of(&r) {
                        call.state = s;
                    }
                    result = r;
                }
                Err(done) => return done,
            }
        }
        match ended(&call.task_id, &call.state, &result) {
            Ok(output) => call.finish(ToolResult::ok(output)),
            Err(text) => call.finish(ToolResult::error(text)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_config_precedence_and_skips() {
        let agents = parse_agents_config(&json!({
            "a": {"card": "http://a/card"},
            "b": {"card": "http://b/card", "enabled": false},
            "c": {"card": "http://c/card", "disabled": true, "enabled": true},
            "d": {"card": "http://d/card", "disabled": false, "enabled": false},
            "e": {"headers": {"X": "y"}},
            "f": {"card": "http://f/card", "timeout": 5, "pollEvery": 2,
                  "headers": {"Authorization": "Bearer ${T}"}}
        }))
        .expect("parsed");
        let cards: Vec<&str> = agents.iter().map(|a| a.card.as_str()).collect();
        // disabled:false is explicit, so enabled:false does not apply.
        assert_eq!(cards, ["http://a/card", "http://d/card", "http://f/card"]);
        let f = &agents[2];
        assert_eq!((f.timeout_ms, f.poll_every_ms), (5, 2));
        assert_eq!(
            f.headers,
            vec![("Authorization".into(), "Bearer ${T}".into())]
        );
        assert_eq!(f.key, "agents.f");
        assert_eq!(agents[0].timeout_ms, DEFAULT_TIMEOUT_MS);
        assert_eq!(agents[0].poll_every_ms, DEFAULT_POLL_EVERY_MS);
    }

    #[test]
    fn agents_config_bad_values_are_named() {
        let e = parse_agents_config(&json!({"x": {"card": "u", "timeout": "5"}})).unwrap_err();
        assert_eq!(
            e.message,
            "agents.x.timeout: expected a positive integer (milliseconds), got a string"
        );
        let e = parse_agents_config(&json!([{"card": 3}])).unwrap_err();
        assert_eq!(e.message, "agents[0].card: expected a URL, got a number");
        let e = parse_agents_config(&json!("u")).unwrap_err();
        assert!(
            e.message.starts_with("agents: expected an object"),
            "{}",
            e.message
        );
    }

    #[test]
    fn card_without_url_posts_to_the_card_origin() {
        assert_eq!(
            origin("http://127.0.0.1:8080/.well-known/agent-card.json"),
            "http://127.0.0.1:8080"
        );
    }

    #[test]
    fn completed_output_prefers_artifacts_then_the_last_agent_message() {
        let t = json!({"artifacts": [{"parts": [{"kind": "text", "text": "a"},
            {"kind": "data", "data": {}}, {"kind": "text", "text": "b"}]},
            {"parts": [{"kind": "text", "text": "c"}]}],
            "history": [{"role": "agent", "parts": [{"kind": "text", "text": "h"}]}]});
        assert_eq!(completed_output(&t), "a\nb\nc");
        let t = json!({"history": [
            {"role": "agent", "parts": [{"kind": "text", "text": "old"}]},
            {"role": "agent", "parts": [{"kind": "text", "text": "new"}, {"kind": "text", "text": "er"}]},
            {"role": "agent", "parts": [{"kind": "file"}]},
            {"role": "user", "parts": [{"kind": "text", "text": "mine"}]}]});
        assert_eq!(completed_output(&t), "new\ner");
        assert_eq!(completed_output(&json!({})), "");
    }

    #[test]
    fn skills_that_collide_after_sanitizing_are_reported_not_shadowed() {
        let agent = Agent::from_card("http://x/card");
        let card = Card {
            value: json!({"name": "my agent", "skills": [
                {"id": "a b", "description": "first"}, {"id": "a_b"},
                {"name": "Plan", "description": ""}, {}]}),
            name: "my agent".into(),
            endpoint: "http://x".into(),
            wire: Wire::Toolnexus,
        };
        let loaded = card_tools(&agent, &card).expect("tools");
        let names: Vec<&str> = loaded.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["my_agent_a_b", "my_agent_Plan"]);
        assert_eq!(loaded.tools[0].description, "first");
        assert_eq!(loaded.tools[1].description, "Plan");
        assert_eq!(loaded.tools[0].input_schema, input_schema());
        assert_eq!(loaded.tools[0].source, Source::A2a);
        assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
        assert!(loaded.warnings[0].contains("both become the tool my_agent_a_b"));
    }
}
