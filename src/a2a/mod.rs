//! A toolkit and a client served as an A2A agent (SPEC §7B), beside the MCP
//! gateway on the same HTTP address (`/mcp` is answered first, so it is
//! never shadowed):
//!
//! - `GET /.well-known/agent-card.json`: the Agent Card, with upstream's
//!   keys in upstream's order; its skills are the skill source's (never raw
//!   tools), narrowed to `a2a.skills` when given;
//! - any other `POST`: JSON-RPC 2.0 — `SendMessage` stores a `submitted`
//!   task, answers it at once and fulfils it on a thread of its own through
//!   the client (`ask` on the conversation of the message's `contextId`,
//!   else a stateless `run`); `GetTask` answers the stored task; a body that
//!   is not JSON is -32700, an unknown task -32001, any other method -32601;
//! - anything else: 404 `not found`.
//!
//! A run that suspends (status `pending`) is an `input-required` task
//! carrying the Request's prompt; a run that fails (or panics) is a
//! `failed` task carrying the error, and the server goes on serving. Tasks
//! live in a [`crate::store`] store named by `a2a.store` (`memory`,
//! `file:<dir>`, `sqlite:<path>`).

mod profile;

pub use profile::Profile;

use crate::cancel::CancelToken;
use crate::client::{AskRequest, Client, RunData, RunRequest};
use crate::error::{panic_message, Error, Result};
use crate::json::type_name;
use crate::mcp_server::{self, Beside, BesideAnswer, BesideRequest, OnCall, ServeConfig, Server};
use crate::store::{self, Kind, Store};
use crate::toolkit::Toolkit;
use serde_json::{json, Map, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Where the card is served.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";
/// The protocol version a served card states (upstream's).
pub const PROTOCOL_VERSION: &str = "0.3.0";

/// The `a2a` block of the serve options: `{name?, description?, version?,
/// provider?: {organization, url}, skills?: [names], store?}`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct A2aConfig {
    pub name: Option<String>,
    pub description: Option<String>,
    pub version: Option<String>,
    pub provider: Option<Value>,
    /// `None`: every skill; `Some` (even empty): only these.
    pub skills: Option<Vec<String>>,
    pub store: Option<String>,
    /// The wire the card announces: `None`/`"toolnexus"`/`"0.3"` give
    /// upstream's card (`protocolVersion` 0.3.0, `url`); `"1.0"` a 1.0
    /// card (`supportedInterfaces` with a JSON-RPC binding at 1.0). The
    /// endpoint answers every wire whatever the card says.
    pub protocol: Option<String>,
}

const KEYS: &str = "name, description, version, provider, skills, store, protocol";

fn wrong_type(key: &str, expected: &str, got: &Value) -> Error {
    Error::invalid_config(format!(
        "a2a.{key}: expected {expected}, got {}",
        type_name(got)
    ))
}

impl A2aConfig {
    pub fn from_value(v: &Value) -> Result<A2aConfig> {
        let Value::Object(obj) = v else {
            return Err(Error::invalid_config(format!(
                "a2a: expected an object {{{KEYS}}}, got {}",
                type_name(v)
            )));
        };
        if let Some(k) = obj
            .keys()
            .find(|k| !KEYS.split(", ").any(|c| c == k.as_str()))
        {
            return Err(Error::invalid_config(format!(
                "a2a: unknown key '{k}' (known keys: {KEYS})"
            )));
        }
        let text = |k: &str| -> Result<Option<String>> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(wrong_type(k, "a string", other)),
            }
        };
        let provider = match obj.get("provider") {
            None | Some(Value::Null) => None,
            Some(Value::Object(p)) => {
                let field = |k: &str| match p.get(k) {
                    Some(Value::String(s)) => Ok(s.clone()),
                    Some(other) => Err(wrong_type(&format!("provider.{k}"), "a string", other)),
                    None => Ok(String::new()),
                };
                Some(json!({"organization": field("organization")?, "url": field("url")?}))
            }
            Some(other) => {
                return Err(wrong_type(
                    "provider",
                    "an object {organization, url}",
                    other,
                ))
            }
        };
        let skills = match obj.get("skills") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, s)| match s {
                        Value::String(s) => Ok(s.clone()),
                        other => Err(wrong_type(&format!("skills[{i}]"), "a skill name", other)),
                    })
                    .collect::<Result<_>>()?,
            ),
            Some(other) => return Err(wrong_type("skills", "an array of skill names", other)),
        };
        Ok(A2aConfig {
            name: text("name")?,
            description: text("description")?,
            version: text("version")?,
            provider,
            skills,
            store: text("store")?,
            protocol: match text("protocol")? {
                None => None,
                Some(p) if matches!(p.as_str(), "toolnexus" | "0.3" | "1.0") => Some(p),
                Some(p) => {
                    return Err(Error::invalid_config(format!(
                        "a2a.protocol: unknown protocol '{p}' (expected toolnexus, 0.3 or 1.0)"
                    )))
                }
            },
        })
    }
}

/// The served card: `{name, description, version, protocolVersion,
/// capabilities, defaultInputModes, defaultOutputModes, skills, url}` in
/// that order, then `provider` when configured. `skills` are `(name,
/// description)` of the skill source.
pub fn agent_card(cfg: &A2aConfig, skills: &[(String, String)], url: &str) -> Value {
    let nonempty = |v: &Option<String>, default: &str| {
        v.as_deref()
            .filter(|s| !s.is_empty())
            .unwrap_or(default)
            .to_string()
    };
    let listed: Vec<Value> = skills
        .iter()
        .filter(|(name, _)| cfg.skills.as_ref().is_none_or(|w| w.contains(name)))
        .map(|(name, description)| json!({"id": name, "name": name, "description": description}))
        .collect();
    let mut card = Map::new();
    card.insert("name".into(), json!(nonempty(&cfg.name, "toolnexus-agent")));
    card.insert("description".into(), json!(nonempty(&cfg.description, "")));
    card.insert("version".into(), json!(nonempty(&cfg.version, "0.1.0")));
    card.insert("protocolVersion".into(), json!(PROTOCOL_VERSION));
    card.insert(
        "capabilities".into(),
        json!({"streaming": false, "pushNotifications": false}),
    );
    card.insert("defaultInputModes".into(), json!(["text"]));
    card.insert("defaultOutputModes".into(), json!(["text"]));
    if cfg.protocol.as_deref() == Some("1.0") {
        card.remove("protocolVersion");
        let listed = listed
            .into_iter()
            .map(|mut k| {
                k["tags"] = json!([]);
                k
            })
            .collect();
        card.insert("skills".into(), Value::Array(listed));
        card.insert(
            "supportedInterfaces".into(),
            json!([{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]),
        );
        return Value::Object(card);
    }
    card.insert("skills".into(), Value::Array(listed));
    card.insert("url".into(), json!(url));
    if let Some(p) = &cfg.provider {
        card.insert("provider".into(), p.clone());
    }
    Value::Object(card)
}

/// One task's turn, as the runner gets it.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    pub text: &'a str,
    /// The `contextId` the peer named, if any.
    pub context: Option<&'a str>,
    /// The conversation so far, when the served store keeps it (then the
    /// runner runs on it and the server saves the run's messages back);
    /// `None`: the client's own conversation store keeps `context`'s.
    pub history: Option<&'a [Value]>,
}

/// How a task is fulfilled: its turn in, the RunResult or the error out.
pub type Runner = Arc<dyn Fn(Turn<'_>) -> Result<Value> + Send + Sync>;

/// What hears a task reach its end (or `input-required`): `{id, task,
/// state, result?}` (`result` is the RunResult when the run gave one).
pub type OnTask = Arc<dyn Fn(&Value) + Send + Sync>;

/// The runner of a client over a toolkit: `ask` with the `contextId` as
/// the conversation id, `run` without one.
pub fn client_runner<C>(client: C, toolkit: Arc<Toolkit>) -> Runner
where
    C: std::ops::Deref<Target = Client> + Send + Sync + 'static,
{
    Arc::new(move |turn: Turn<'_>| {
        let cancel = CancelToken::new();
        let text = turn.text;
        match (turn.context, turn.history) {
            (_, Some(history)) => {
                let run = RunRequest {
                    prompt: text.to_string(),
                    history: history.to_vec(),
                };
                client.run(&toolkit, &run, &cancel, RunData(0))
            }
            (Some(id), None) => {
                let ask = AskRequest {
                    prompt: text.to_string(),
                    id: Some(id.to_string()),
                    history: Vec::new(),
                };
                client.ask(&toolkit, &ask, &cancel, RunData(0), false)
            }
            (None, None) => {
                let run = RunRequest {
                    prompt: text.to_string(),
                    history: Vec::new(),
                };
                client.run(&toolkit, &run, &cancel, RunData(0))
            }
        }
    })
}

/// The A2A routes of one server.
pub struct Agent {
    config: A2aConfig,
    skills: Vec<(String, String)>,
    store: Arc<dyn Store>,
    runner: Runner,
    on_task: Option<OnTask>,
}

impl Agent {
    pub fn new(
        config: A2aConfig,
        toolkit: &Toolkit,
        runner: Runner,
        on_task: Option<OnTask>,
    ) -> Result<Agent> {
        let store = store::resolve(config.store.as_deref())?;
        Ok(Agent {
            skills: toolkit.skill_infos(),
            config,
            store,
            runner,
            on_task,
        })
    }

    /// The store the tasks live in.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// One JSON-RPC request (`version`: its `A2A-Version` header) and the
    /// wire it came on.
    fn rpc(&self, body: &[u8], version: Option<&str>) -> (Value, Profile) {
        let Ok(req) = serde_json::from_slice::<Value>(body) else {
            let wire = profile::classify("", version).0;
            return (rpc_error(Value::Null, -32700, "Parse error"), wire);
        };
        let id = req.get("id").cloned().unwrap_or(Value::Null);
        let method = req
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let params = req.get("params").unwrap_or(&Value::Null);
        let (wire, call) = profile::classify(method, version);
        let answer = match call {
            profile::Call::Send => self.send_message(id, params, wire),
            profile::Call::Get => {
                let task_id = params.get("id").and_then(Value::as_str).unwrap_or_default();
                match self.store.get(Kind::Task, task_id) {
                    Ok(Some(task)) => rpc_result(id, profile::render(&task, wire, false)),
                    Ok(None) => rpc_error(id, -32001, &format!("Task not found: {task_id}")),
                    Err(e) => rpc_error(id, -32603, &e),
                }
            }
            profile::Call::Other => rpc_error(id, -32601, &format!("Method not found: {method}")),
        };
        (answer, wire)
    }

    fn send_message(&self, id: Value, params: &Value, wire: Profile) -> Value {
        let message = params.get("message").unwrap_or(&Value::Null);
        let text = profile::message_text(message);
        let context = message
            .get("contextId")
            .and_then(Value::as_str)
            .map(String::from);
        let task_id = uuid::Uuid::new_v4().to_string();
        // Every task belongs to a context (the 0.3 and 1.0 wires show it);
        // a conversation is remembered only for one the peer named.
        let context_id = context
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let submitted = json!({"id": task_id, "contextId": context_id,
            "status": {"state": "submitted"}});
        // Acknowledged only once stored: a task answered is a task kept.
        if let Err(e) = self.store.save(Kind::Task, &task_id, &submitted) {
            return rpc_error(id, -32603, &e);
        }
        let (store, runner, on_task) = (
            Arc::clone(&self.store),
            Arc::clone(&self.runner),
            self.on_task.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name("toolnexus-a2a-task".into())
            .spawn(move || {
                let task = Fulfil {
                    id: &task_id,
                    context_id: &context_id,
                    text: &text,
                    context,
                };
                fulfil(&*store, &runner, on_task.as_ref(), task);
            });
        let shown = match spawned {
            Ok(_) => submitted,
            Err(_) => {
                let task_id = submitted["id"].as_str().unwrap_or_default();
                let mut failed = failed_task(task_id, "no thread to run the task on");
                failed["contextId"] = submitted["contextId"].clone();
                let _ = self.store.save(Kind::Task, task_id, &failed);
                failed
            }
        };
        let echo = message.get("contextId").is_some_and(Value::is_string);
        let task = profile::render(&shown, wire, echo);
        match wire {
            Profile::V10 => rpc_result(id, json!({ "task": task })),
            _ => rpc_result(id, task),
        }
    }
}

fn agent_text(text: &str) -> Value {
    json!({"role": "agent", "parts": [{"kind": "text", "text": text}]})
}

fn failed_task(id: &str, error: &str) -> Value {
    json!({"id": id, "status": {"state": "failed", "message": agent_text(error)}})
}

/// One task to fulfil: its id and context, the text, the context the peer
/// named (the conversation to continue), if any.
struct Fulfil<'a> {
    id: &'a str,
    context_id: &'a str,
    text: &'a str,
    context: Option<String>,
}

/// Runs one task to its end and stores each step: `working`, then
/// `completed` / `input-required` / `failed`.
fn fulfil(store: &dyn Store, runner: &Runner, on_task: Option<&OnTask>, job: Fulfil<'_>) {
    let Fulfil {
        id,
        context_id,
        text,
        context,
    } = job;
    let with_context = |mut task: Value| {
        if let Some(m) = task.as_object_mut() {
            m.insert("contextId".into(), json!(context_id));
        }
        task
    };
    let working = with_context(json!({"id": id, "status": {"state": "working"}}));
    let _ = store.save(Kind::Task, id, &working);
    // A store beyond this process keeps the conversation too, so that it
    // outlives a restart and any server sharing the store continues it.
    let durable = store.selector() != "memory";
    let history = match (&context, durable) {
        (Some(c), true) => match store.get(Kind::Conversation, c) {
            Ok(h) => Some(h.and_then(|v| v.as_array().cloned()).unwrap_or_default()),
            Err(e) => {
                let failed = with_context(failed_task(id, &e));
                let _ = store.save(Kind::Task, id, &failed);
                return;
            }
        },
        _ => None,
    };
    let turn = Turn {
        text,
        context: context.as_deref(),
        history: history.as_deref(),
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| runner(turn))).unwrap_or_else(|p| {
        Err(Error::new(
            crate::error::ErrorCode::Internal,
            panic_message(&p),
        ))
    });
    let (task, result) = match outcome {
        Ok(result) if history.is_some() && result.get("messages").is_some() => {
            let saved = context.as_deref().map_or(Ok(()), |c| {
                store.save(Kind::Conversation, c, &result["messages"])
            });
            match saved {
                Ok(()) => settle(id, Ok(result)),
                Err(e) => (failed_task(id, &e), None),
            }
        }
        other => settle(id, other),
    };
    let _ = store.save(Kind::Task, id, &with_context(task.clone()));
    if let Some(hear) = on_task {
        let mut event = Map::new();
        event.insert("id".into(), json!(id));
        event.insert("task".into(), task.clone());
        event.insert(
            "state".into(),
            task.pointer("/status/state")
                .cloned()
                .unwrap_or(Value::Null),
        );
        if let Some(r) = result {
            event.insert("result".into(), r);
        }
        // A host that fails here fails nothing else.
        let _ = catch_unwind(AssertUnwindSafe(|| hear(&Value::Object(event))));
    }
}

/// The task a run's outcome makes, and the RunResult for `onTask`.
fn settle(id: &str, outcome: Result<Value>) -> (Value, Option<Value>) {
    match outcome {
        Ok(result) if result["status"] == "pending" => {
            let prompt = match result.pointer("/pending/prompt") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => String::new(),
                Some(other) => other.to_string(),
            };
            let task = json!({"id": id, "status": {"state": "input-required",
                "message": agent_text(&prompt)}});
            (task, Some(result))
        }
        Ok(result) => {
            let answer = result["text"].as_str().unwrap_or_default();
            let task = json!({"id": id, "status": {"state": "completed"}, "artifacts": [{
                "artifactId": uuid::Uuid::new_v4().to_string(),
                "parts": [{"kind": "text", "text": answer}]}]});
            (task, Some(result))
        }
        Err(e) => (failed_task(id, &e.message), None),
    }
}

fn rpc_result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn not_found() -> BesideAnswer {
    BesideAnswer {
        status: 404,
        content_type: "text/plain",
        headers: Vec::new(),
        body: b"not found".to_vec(),
    }
}

fn json_answer(v: &Value) -> BesideAnswer {
    BesideAnswer {
        status: 200,
        content_type: "application/json",
        headers: Vec::new(),
        body: serde_json::to_vec(v).unwrap_or_default(),
    }
}

impl Beside for Agent {
    fn answer(&self, req: &BesideRequest<'_>) -> BesideAnswer {
        match req.method {
            "GET" if req.path == CARD_PATH => {
                let url = format!("{}/", req.base);
                json_answer(&agent_card(&self.config, &self.skills, &url))
            }
            "POST" => {
                let version = req.headers.get("a2a-version").and_then(|v| v.to_str().ok());
                let (answer, wire) = self.rpc(req.body, version);
                let mut a = json_answer(&answer);
                if wire == Profile::V10 {
                    a.headers.push(("a2a-version", "1.0".into()));
                }
                a
            }
            _ => not_found(),
        }
    }
}

/// Serves `toolkit` over MCP as `config` says and, when `config.a2a` is
/// set, as an A2A agent whose tasks `runner` fulfils.
pub fn serve(
    toolkit: Arc<Toolkit>,
    config: &ServeConfig,
    on_call: Option<OnCall>,
    runner: Option<Runner>,
    on_task: Option<OnTask>,
) -> Result<Server> {
    let beside = match (&config.a2a, runner) {
        (None, _) => None,
        (Some(_), None) => {
            return Err(Error::invalid_config(
                "a2a: serving an A2A agent needs a client to fulfil its tasks",
            ))
        }
        (Some(v), Some(runner)) => {
            let cfg = A2aConfig::from_value(v)?;
            Some(Arc::new(Agent::new(cfg, &toolkit, runner, on_task)?) as Arc<dyn Beside>)
        }
    };
    mcp_server::serve_beside(toolkit, config, on_call, beside)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_defaults_key_order_and_filter() {
        let skills = vec![
            ("hello-world".to_string(), "Says hello".to_string()),
            ("other".to_string(), String::new()),
        ];
        let card = agent_card(&A2aConfig::default(), &skills, "http://127.0.0.1:5/");
        assert_eq!(
            card.to_string(),
            r#"{"name":"toolnexus-agent","description":"","version":"0.1.0","protocolVersion":"0.3.0","capabilities":{"streaming":false,"pushNotifications":false},"defaultInputModes":["text"],"defaultOutputModes":["text"],"skills":[{"id":"hello-world","name":"hello-world","description":"Says hello"},{"id":"other","name":"other","description":""}],"url":"http://127.0.0.1:5/"}"#
        );
        let cfg = A2aConfig::from_value(&json!({"name": "n", "skills": [],
            "provider": {"organization": "o", "url": "u"}}))
        .expect("config");
        let card = agent_card(&cfg, &skills, "x");
        assert_eq!(card["skills"], json!([]));
        let keys: Vec<&String> = card
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(keys.last().map(|k| k.as_str()), Some("provider"));
        assert_eq!(card["provider"], json!({"organization": "o", "url": "u"}));
    }

    #[test]
    fn config_errors_are_named() {
        let e = A2aConfig::from_value(&json!({"nmae": 1})).unwrap_err();
        assert!(
            e.message.starts_with("a2a: unknown key 'nmae'"),
            "{}",
            e.message
        );
        let e = A2aConfig::from_value(&json!({"skills": "a"})).unwrap_err();
        assert_eq!(
            e.message,
            "a2a.skills: expected an array of skill names, got a string"
        );
    }

    #[test]
    fn rpc_errors_and_a_failing_run_is_a_failed_task() {
        let runner: Runner =
            Arc::new(|_: Turn<'_>| Err(Error::invalid_argument("the model is down")));
        let tk = Toolkit::build_from_json("{\"builtins\":false}").expect("toolkit");
        let agent = Agent::new(A2aConfig::default(), &tk, runner, None).expect("agent");
        let rpc = |body: &[u8]| agent.rpc(body, None).0;
        assert_eq!(
            rpc(b"{not json"),
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})
        );
        assert_eq!(
            rpc(br#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"nope"}}"#),
            json!({"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"Task not found: nope"}})
        );
        assert_eq!(
            rpc(br#"{"jsonrpc":"2.0","id":"a","method":"tasks/cancel"}"#)["error"],
            json!({"code":-32601,"message":"Method not found: tasks/cancel"})
        );
        let job = Fulfil {
            id: "t9",
            context_id: "c9",
            text: "hi",
            context: None,
        };
        fulfil(&**agent.store(), &agent.runner, None, job);
        let mut failed = failed_task("t9", "the model is down");
        failed["contextId"] = json!("c9");
        assert_eq!(agent.store().get(Kind::Task, "t9"), Ok(Some(failed)));
    }
}
