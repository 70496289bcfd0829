//! A toolkit and a client served as an A2A agent (SPEC §7B), beside the MCP
//! gateway on the same HTTP address (`/mcp` is answered first, so it is
//! never shadowed):
//!
//! - `GET /.well-known/agent-card.json`: the Agent Card, with upstream's
//!   keys in upstream's order; its skills are the skill source's (never raw
//!   tools), narrowed to `a2a.skills` when given;
//! - any other `POST`: JSON-RPC 2.0 — `SendMessage` stores a `submitted`
//!   task, answers it at once and fulfils it on a pooled thread through
//!   the client (`ask` on the conversation of the message's `contextId`,
//!   else a stateless `run`); `GetTask` answers the stored task; a body that
//!   is not JSON is -32700, an unknown task -32001, any other method -32601;
//!   `message/stream` / `SendStreamingMessage` is a send answered as
//!   server-sent events as the run goes ([`stream`]); `tasks/cancel` /
//!   `CancelTask` cancels a task (its run is cancelled, its state
//!   `canceled`): an unknown task is -32001, one already ended -32002;
//! - anything else: 404 `not found`.
//!
//! At most [`crate::limits::SERVED_TASKS`] tasks run at once; the next
//! [`crate::limits::SERVED_TASKS_QUEUED`] wait their turn, and a send beyond
//! them is refused (-32000, nothing stored).
//!
//! A run that suspends (status `pending`) is an `input-required` task
//! carrying the Request's prompt; a run that fails (or panics) is a
//! `failed` task carrying the error, and the server goes on serving. Tasks
//! live in a [`crate::store`] store named by `a2a.store` (`memory`,
//! `file:<dir>`, `sqlite:<path>`, `postgres://…`).

mod profile;
pub mod stream;
mod tasks;

pub use profile::Profile;
pub use tasks::Tasks;

use crate::cancel::CancelToken;
use crate::client::{AskRequest, Client, Event, Observer, RunData, RunRequest};
use crate::error::{panic_message, Error, Result};
use crate::json::type_name;
use crate::mcp_server::{self, Beside, BesideAnswer, BesideRequest, OnCall, ServeConfig, Server};
use crate::store::{self, Kind, Store};
use crate::toolkit::Toolkit;
use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

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
    /// The wire the card announces: `None`/`"toolnexus"` give upstream's
    /// card (`protocolVersion` 0.3.0, `url`); `"0.3"` that card with
    /// streaming and each skill's `tags`, as the 0.3 schema requires;
    /// `"1.0"` a 1.0 card (`supportedInterfaces` with a JSON-RPC binding at
    /// 1.0). The endpoint answers every wire whatever the card says.
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
    // A specification's card gives each skill its `tags` (required by the
    // 0.3 and 1.0 schemas' AgentSkill); upstream's card has none (pinned).
    let spec = matches!(cfg.protocol.as_deref(), Some("0.3" | "1.0"));
    let listed: Vec<Value> = skills
        .iter()
        .filter(|(name, _)| cfg.skills.as_ref().is_none_or(|w| w.contains(name)))
        .map(|(name, description)| {
            let mut k = json!({"id": name, "name": name, "description": description});
            if spec {
                k["tags"] = json!([]);
            }
            k
        })
        .collect();
    let mut card = Map::new();
    card.insert("name".into(), json!(nonempty(&cfg.name, "toolnexus-agent")));
    card.insert("description".into(), json!(nonempty(&cfg.description, "")));
    card.insert("version".into(), json!(nonempty(&cfg.version, "0.1.0")));
    card.insert("protocolVersion".into(), json!(PROTOCOL_VERSION));
    // Upstream's card says no streaming (no port streams); a card for a
    // specification's wire says what this endpoint does.
    card.insert(
        "capabilities".into(),
        json!({"streaming": spec, "pushNotifications": false}),
    );
    card.insert("defaultInputModes".into(), json!(["text"]));
    card.insert("defaultOutputModes".into(), json!(["text"]));
    if cfg.protocol.as_deref() == Some("1.0") {
        card.remove("protocolVersion");
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
#[derive(Clone, Copy)]
pub struct Turn<'a> {
    pub text: &'a str,
    /// The `contextId` the peer named, if any.
    pub context: Option<&'a str>,
    /// The conversation so far, when the served store keeps it (then the
    /// runner runs on it and the server saves the run's messages back);
    /// `None`: the client's own conversation store keeps `context`'s.
    pub history: Option<&'a [Value]>,
    /// Triggered when the task is cancelled: the run should end.
    pub cancel: &'a CancelToken,
    /// Hears the run's progress (`{"type": "tool_call", "name"}`, `{"type":
    /// "tool_result", "name", "isError"}`) when a peer streams the task.
    pub progress: Option<&'a Progress>,
}

/// What hears a run's progress (see [`Turn::progress`]).
pub type Progress = Arc<dyn Fn(&Value) + Send + Sync>;

thread_local! {
    /// The progress sink of the run on this thread (a task runs on one
    /// thread, and the loop reports its events from the run's thread).
    static PROGRESS: RefCell<Option<Progress>> = const { RefCell::new(None) };
}

/// The observer a served client carries: passes the loop's tool events to
/// the progress sink of the task running on the thread, if any.
struct Relay;

impl Observer for Relay {
    fn event(&self, event: &Event<'_>) {
        // Runs of the same client outside a streamed task hear nothing.
        let Some(sink) = PROGRESS.with(|p| p.borrow().clone()) else {
            return;
        };
        let value = match event {
            Event::ToolCall { name, .. } => json!({"type": "tool_call", "name": name}),
            Event::ToolResult { name, result, .. } => {
                json!({"type": "tool_result", "name": name, "isError": result.is_error})
            }
            _ => return,
        };
        sink(&value);
    }
}

/// Sets the thread's progress sink for as long as it lives.
struct Listening;

impl Listening {
    fn start(progress: Option<&Progress>) -> Listening {
        PROGRESS.with(|p| *p.borrow_mut() = progress.cloned());
        Listening
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        PROGRESS.with(|p| *p.borrow_mut() = None);
    }
}

/// How a task is fulfilled: its turn in, the RunResult or the error out.
pub type Runner = Arc<dyn Fn(Turn<'_>) -> Result<Value> + Send + Sync>;

/// What hears a task reach its end (or `input-required`): `{id, task,
/// state, result?}` (`result` is the RunResult when the run gave one).
pub type OnTask = Arc<dyn Fn(&Value) + Send + Sync>;

/// The runner of a client over a toolkit: `ask` with the `contextId` as
/// the conversation id, `run` without one. The client's observer becomes
/// the relay of its runs' tool events to streaming peers.
pub fn client_runner<C>(client: C, toolkit: Arc<Toolkit>) -> Runner
where
    C: std::ops::Deref<Target = Client> + Send + Sync + 'static,
{
    client.set_observer(Some(Arc::new(Relay)));
    Arc::new(move |turn: Turn<'_>| {
        let _listening = Listening::start(turn.progress);
        let cancel = turn.cancel;
        let text = turn.text;
        match (turn.context, turn.history) {
            (_, Some(history)) => {
                let run = RunRequest {
                    prompt: text.to_string(),
                    history: history.to_vec(),
                };
                client.run(&toolkit, &run, cancel, RunData(0))
            }
            (Some(id), None) => {
                let ask = AskRequest {
                    prompt: text.to_string(),
                    id: Some(id.to_string()),
                    history: Vec::new(),
                };
                client.ask(&toolkit, &ask, cancel, RunData(0), false)
            }
            (None, None) => {
                let run = RunRequest {
                    prompt: text.to_string(),
                    history: Vec::new(),
                };
                client.run(&toolkit, &run, cancel, RunData(0))
            }
        }
    })
}

/// The A2A routes of one server.
pub struct Agent {
    config: A2aConfig,
    skills: Vec<(String, String)>,
    shared: Arc<Shared>,
    /// Whether its store may wait (see [`Beside::waits`]).
    waits: bool,
}

/// What every task of an agent reaches.
struct Shared {
    store: Arc<dyn Store>,
    runner: Runner,
    /// Taken when the server stops, so that the host's hook is let go of
    /// then, whatever thread still holds the rest.
    on_task: Mutex<Option<OnTask>>,
    tasks: Arc<Tasks>,
}

/// What one JSON-RPC request is answered with.
enum Reply {
    Json(Value),
    /// Server-sent events: the first, then the rest as the task goes.
    Stream {
        first: Vec<u8>,
        rest: UnboundedReceiver<Vec<u8>>,
    },
}

/// A peer streaming a task: where its events go and how they look.
struct Watch {
    tx: UnboundedSender<Vec<u8>>,
    rpc_id: Value,
    wire: Profile,
}

impl Watch {
    /// A peer gone away ends only its stream.
    fn send(&self, result: Value) {
        let _ = self.tx.send(stream::frame(&self.rpc_id, result));
    }
}

const TERMINAL: [&str; 4] = ["completed", "failed", "canceled", "rejected"];

fn state_of(task: &Value) -> &str {
    task.pointer("/status/state")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl Agent {
    pub fn new(
        config: A2aConfig,
        toolkit: &Toolkit,
        runner: Runner,
        on_task: Option<OnTask>,
    ) -> Result<Agent> {
        Agent::with_tasks(config, toolkit, runner, on_task, Arc::new(Tasks::default()))
    }

    /// [`Agent::new`] whose tasks run under `tasks`' caps.
    pub fn with_tasks(
        config: A2aConfig,
        toolkit: &Toolkit,
        runner: Runner,
        on_task: Option<OnTask>,
        tasks: Arc<Tasks>,
    ) -> Result<Agent> {
        let store = store::resolve(config.store.as_deref())?;
        Ok(Agent {
            skills: toolkit.skill_infos(),
            config,
            waits: store.selector() != "memory",
            shared: Arc::new(Shared {
                store,
                runner,
                on_task: Mutex::new(on_task),
                tasks,
            }),
        })
    }

    /// The store the tasks live in.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.shared.store
    }

    /// One JSON-RPC request (`version`: its `A2A-Version` header) and the
    /// wire it came on.
    fn rpc(&self, body: &[u8], version: Option<&str>) -> (Reply, Profile) {
        let Ok(req) = serde_json::from_slice::<Value>(body) else {
            let wire = profile::classify("", version).0;
            let parse = rpc_error(Value::Null, -32700, "Parse error");
            return (Reply::Json(parse), wire);
        };
        let id = req.get("id").cloned().unwrap_or(Value::Null);
        let method = req
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let params = req.get("params").unwrap_or(&Value::Null);
        let (wire, call) = profile::classify(method, version);
        let task_id = params.get("id").and_then(Value::as_str).unwrap_or_default();
        let answer = match call {
            profile::Call::Send => return (self.send_message(id, params, wire, false), wire),
            profile::Call::Stream => return (self.send_message(id, params, wire, true), wire),
            profile::Call::Get => match self.shared.store.get(Kind::Task, task_id) {
                Ok(Some(task)) => rpc_result(id, profile::render(&task, wire, false)),
                Ok(None) => task_not_found(id, task_id),
                Err(e) => rpc_error(id, -32603, &e),
            },
            profile::Call::Cancel => self.cancel_task(id, task_id, wire),
            profile::Call::Other => rpc_error(id, -32601, &format!("Method not found: {method}")),
        };
        (Reply::Json(answer), wire)
    }

    /// `tasks/cancel` / `CancelTask`: the run is cancelled (or, queued,
    /// never starts) and the task is `canceled` from now on. A task that
    /// runs in another process sharing the store is marked `canceled`, and
    /// that process keeps the mark when its run ends.
    fn cancel_task(&self, id: Value, task_id: &str, wire: Profile) -> Value {
        let store = &self.shared.store;
        // Under the lock a task's end takes too: one of them wins, whole.
        let live = self.shared.tasks.live();
        let stored = match store.get(Kind::Task, task_id) {
            Ok(Some(task)) => task,
            Ok(None) => return task_not_found(id, task_id),
            Err(e) => return rpc_error(id, -32603, &e),
        };
        let state = state_of(&stored);
        if TERMINAL.contains(&state) {
            return rpc_error(
                id,
                -32002,
                &format!("Task cannot be canceled: {task_id} is {state}"),
            );
        }
        if let Some(token) = live.get(task_id) {
            token.cancel();
        }
        let mut canceled = canceled_task(task_id);
        canceled["contextId"] = stored.get("contextId").cloned().unwrap_or(Value::Null);
        if let Err(e) = store.save(Kind::Task, task_id, &canceled) {
            return rpc_error(id, -32603, &e);
        }
        drop(live);
        rpc_result(id, profile::render(&canceled, wire, false))
    }

    fn send_message(&self, id: Value, params: &Value, wire: Profile, streaming: bool) -> Reply {
        let shared = &self.shared;
        if !shared.tasks.has_room() {
            return Reply::Json(busy(id));
        }
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
        if let Err(e) = shared.store.save(Kind::Task, &task_id, &submitted) {
            return Reply::Json(rpc_error(id, -32603, &e));
        }
        let (watch, rest) = if streaming {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let watch = Watch {
                tx,
                rpc_id: id.clone(),
                wire,
            };
            (Some(watch), Some(rx))
        } else {
            (None, None)
        };
        let cancel = CancelToken::new();
        shared.tasks.live().insert(task_id.clone(), cancel.clone());
        let job = Fulfil {
            id: task_id.clone(),
            context_id,
            text,
            context,
            cancel,
            watch,
        };
        let run_on = Arc::clone(shared);
        let shown = match shared.tasks.submit(Box::new(move || fulfil(&run_on, job))) {
            Ok(()) => submitted,
            Err(refused) => {
                shared.tasks.live().remove(&task_id);
                if refused == tasks::Refused::Busy {
                    let _ = shared.store.delete(Kind::Task, &task_id);
                    return Reply::Json(busy(id));
                }
                let mut failed = failed_task(&task_id, "no thread to run the task on");
                failed["contextId"] = submitted["contextId"].clone();
                let _ = shared.store.save(Kind::Task, &task_id, &failed);
                // Nothing will stream: the answer is the failed task.
                let task = profile::render(&failed, wire, false);
                return Reply::Json(match wire {
                    Profile::V10 => rpc_result(id, json!({ "task": task })),
                    _ => rpc_result(id, task),
                });
            }
        };
        let echo = message.get("contextId").is_some_and(Value::is_string);
        if let Some(rest) = rest {
            let first = stream::frame(&id, stream::task_event(&shown, wire, echo));
            return Reply::Stream { first, rest };
        }
        let task = profile::render(&shown, wire, echo);
        Reply::Json(match wire {
            Profile::V10 => rpc_result(id, json!({ "task": task })),
            _ => rpc_result(id, task),
        })
    }
}

fn task_not_found(id: Value, task_id: &str) -> Value {
    rpc_error(id, -32001, &format!("Task not found: {task_id}"))
}

fn busy(id: Value) -> Value {
    rpc_error(
        id,
        -32000,
        &format!(
            "Server busy: {} tasks running and {} waiting; try again later",
            crate::limits::SERVED_TASKS,
            crate::limits::SERVED_TASKS_QUEUED
        ),
    )
}

fn agent_text(text: &str) -> Value {
    json!({"role": "agent", "parts": [{"kind": "text", "text": text}]})
}

fn failed_task(id: &str, error: &str) -> Value {
    json!({"id": id, "status": {"state": "failed", "message": agent_text(error)}})
}

fn canceled_task(id: &str) -> Value {
    json!({"id": id, "status": {"state": "canceled"}})
}

/// One task to fulfil: its id and context, the text, the context the peer
/// named (the conversation to continue), if any; its cancel token, and the
/// peer streaming it, if any.
struct Fulfil {
    id: String,
    context_id: String,
    text: String,
    context: Option<String>,
    cancel: CancelToken,
    watch: Option<Watch>,
}

/// Runs one task to its end and stores each step: `working`, then
/// `completed` / `input-required` / `failed` / `canceled`.
fn fulfil(shared: &Shared, job: Fulfil) {
    let store = &*shared.store;
    let (id, context_id) = (job.id.as_str(), job.context_id.as_str());
    if job.cancel.is_cancelled() {
        // Cancelled while it waited for a slot.
        return finish(shared, &job, canceled_task(id), None);
    }
    let working = with_context(
        json!({"id": id, "status": {"state": "working"}}),
        context_id,
    );
    let _ = store.save(Kind::Task, id, &working);
    if let Some(w) = &job.watch {
        w.send(stream::status_event(
            w.wire,
            id,
            context_id,
            &working["status"],
            false,
        ));
    }
    // A store beyond this process keeps the conversation too, so that it
    // outlives a restart and any server sharing the store continues it.
    let durable = store.selector() != "memory";
    let history = match (&job.context, durable) {
        (Some(c), true) => match store.get(Kind::Conversation, c) {
            Ok(h) => Some(h.and_then(|v| v.as_array().cloned()).unwrap_or_default()),
            Err(e) => return finish(shared, &job, failed_task(id, &e), None),
        },
        _ => None,
    };
    let progress: Option<Progress> = job.watch.as_ref().map(|w| {
        let (tx, rpc_id, wire) = (w.tx.clone(), w.rpc_id.clone(), w.wire);
        let (id, context_id) = (id.to_string(), context_id.to_string());
        Arc::new(move |event: &Value| {
            if let Some(text) = stream::progress_text(event) {
                let ev = stream::progress_event(wire, &id, &context_id, &text);
                let _ = tx.send(stream::frame(&rpc_id, ev));
            }
        }) as Progress
    });
    let turn = Turn {
        text: &job.text,
        context: job.context.as_deref(),
        history: history.as_deref(),
        cancel: &job.cancel,
        progress: progress.as_ref(),
    };
    let runner = &shared.runner;
    let outcome = catch_unwind(AssertUnwindSafe(|| runner(turn))).unwrap_or_else(|p| {
        Err(Error::new(
            crate::error::ErrorCode::Internal,
            panic_message(&p),
        ))
    });
    let (task, result) = match outcome {
        Ok(result) if history.is_some() && result.get("messages").is_some() => {
            let saved = job.context.as_deref().map_or(Ok(()), |c| {
                store.save(Kind::Conversation, c, &result["messages"])
            });
            match saved {
                Ok(()) => settle(id, Ok(result)),
                Err(e) => (failed_task(id, &e), None),
            }
        }
        other => settle(id, other),
    };
    finish(shared, &job, task, result);
}

fn with_context(mut task: Value, context_id: &str) -> Value {
    if let Some(m) = task.as_object_mut() {
        m.insert("contextId".into(), json!(context_id));
    }
    task
}

/// Stores a task's last state (`canceled` when it was cancelled, here or
/// through another process sharing the store), tells a streaming peer and
/// `onTask`.
fn finish(shared: &Shared, job: &Fulfil, task: Value, result: Option<Value>) {
    let store = &*shared.store;
    let id = job.id.as_str();
    let mut live = shared.tasks.live();
    let canceled = job.cancel.is_cancelled()
        || (store.selector() != "memory"
            && matches!(store.get(Kind::Task, id), Ok(Some(t)) if state_of(&t) == "canceled"));
    let (task, result) = if canceled {
        (canceled_task(id), None)
    } else {
        (task, result)
    };
    let record = with_context(task.clone(), &job.context_id);
    let saved = store.save(Kind::Task, id, &record);
    live.remove(id);
    drop(live);
    if saved.is_err() {
        keep_trying(store, id, &record);
    }
    if let Some(w) = &job.watch {
        if let Some(artifact) = task.pointer("/artifacts/0") {
            w.send(stream::artifact_event(
                w.wire,
                id,
                &job.context_id,
                artifact,
            ));
        }
        w.send(stream::status_event(
            w.wire,
            id,
            &job.context_id,
            &task["status"],
            true,
        ));
    }
    let hook = shared
        .on_task
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    if let Some(hear) = hook {
        let mut event = Map::new();
        event.insert("id".into(), json!(id));
        event.insert("task".into(), task.clone());
        event.insert("state".into(), json!(state_of(&task)));
        if let Some(r) = result {
            event.insert("result".into(), r);
        }
        // A host that fails here fails nothing else.
        let _ = catch_unwind(AssertUnwindSafe(|| hear(&Value::Object(event))));
    }
}

/// How long a task's last state is tried again when its store failed to
/// take it (a database gone for a while): the task was acknowledged, so
/// it must not stay `working` for good once the store is back.
const FINAL_SAVE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(120);

/// Saves a task's last state until the store takes it, a peer canceled the
/// task meanwhile, or [`FINAL_SAVE_PATIENCE`] passed, waiting a little
/// longer each time (200 ms, doubling, at most 2 s). Runs on the task's own
/// thread, outside the lock of the live tasks.
fn keep_trying(store: &dyn Store, id: &str, record: &Value) {
    let give_up = std::time::Instant::now() + FINAL_SAVE_PATIENCE;
    let mut wait = std::time::Duration::from_millis(200);
    while std::time::Instant::now() < give_up {
        std::thread::sleep(wait);
        wait = (wait * 2).min(std::time::Duration::from_secs(2));
        match store.get(Kind::Task, id) {
            Ok(Some(t)) if state_of(&t) == "canceled" => return,
            Err(_) => continue,
            Ok(_) => {}
        }
        if store.save(Kind::Task, id, record).is_ok() {
            return;
        }
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
        stream: None,
    }
}

fn json_answer(v: &Value) -> BesideAnswer {
    BesideAnswer {
        status: 200,
        content_type: "application/json",
        headers: Vec::new(),
        body: serde_json::to_vec(v).unwrap_or_default(),
        stream: None,
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
                let (reply, wire) = self.rpc(req.body, version);
                let mut a = match reply {
                    Reply::Json(answer) => json_answer(&answer),
                    Reply::Stream { first, rest } => BesideAnswer {
                        status: 200,
                        content_type: "text/event-stream",
                        headers: vec![("cache-control", "no-cache".into())],
                        body: first,
                        stream: Some(rest),
                    },
                };
                if wire == Profile::V10 {
                    a.headers.push(("a2a-version", "1.0".into()));
                }
                a
            }
            _ => not_found(),
        }
    }

    /// Only the memory store answers without waiting (a file, a database
    /// or a host's store may wait); a send hands its task to a pooled
    /// thread and a read copies a record, both at once.
    fn waits(&self) -> bool {
        self.waits
    }

    /// Cancels the tasks not yet ended and waits for their threads (each
    /// still tells `onTask` how it ended), then lets go of `onTask`.
    fn stop(&self, until: std::time::Instant) {
        self.shared.tasks.stop(until);
        let hook = self
            .shared
            .on_task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(hook);
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
        // A 0.3 card is upstream's, plus streaming and the `tags` the 0.3
        // schema requires of every skill (the JS SDK's 0.3 parser refuses a
        // skill without them).
        let cfg = A2aConfig::from_value(&json!({"protocol": "0.3"})).expect("config");
        let card = agent_card(&cfg, &skills, "x");
        assert_eq!(card["protocolVersion"], "0.3.0");
        assert_eq!(card["capabilities"]["streaming"], true);
        assert_eq!(
            card["skills"][0],
            json!({"id": "hello-world", "name": "hello-world", "description": "Says hello", "tags": []})
        );
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
        let rpc = |body: &[u8]| json_of(agent.rpc(body, None).0);
        assert_eq!(
            rpc(b"{not json"),
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})
        );
        assert_eq!(
            rpc(br#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"nope"}}"#),
            json!({"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"Task not found: nope"}})
        );
        assert_eq!(
            rpc(br#"{"jsonrpc":"2.0","id":"a","method":"tasks/pushNotificationConfig/set"}"#)
                ["error"],
            json!({"code":-32601,"message":"Method not found: tasks/pushNotificationConfig/set"})
        );
        let job = Fulfil {
            id: "t9".into(),
            context_id: "c9".into(),
            text: "hi".into(),
            context: None,
            cancel: CancelToken::new(),
            watch: None,
        };
        fulfil(&agent.shared, job);
        let mut failed = failed_task("t9", "the model is down");
        failed["contextId"] = json!("c9");
        assert_eq!(agent.store().get(Kind::Task, "t9"), Ok(Some(failed)));
    }

    fn json_of(reply: Reply) -> Value {
        match reply {
            Reply::Json(v) => v,
            Reply::Stream { .. } => panic!("a stream where JSON was expected"),
        }
    }

    /// A runner that waits until its task is cancelled or `gate` opens.
    fn gated(gate: Arc<std::sync::atomic::AtomicBool>) -> Runner {
        Arc::new(move |turn: Turn<'_>| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while !gate.load(std::sync::atomic::Ordering::SeqCst) {
                if turn.cancel.is_cancelled() {
                    return Err(Error::invalid_argument("cancelled"));
                }
                assert!(std::time::Instant::now() < deadline, "never released");
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            Ok(json!({"status": "done", "text": format!("did {}", turn.text)}))
        })
    }

    fn settled(agent: &Agent, id: &str) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let t = agent
                .store()
                .get(Kind::Task, id)
                .ok()
                .flatten()
                .expect("task");
            if !matches!(state_of(&t), "submitted" | "working") {
                return t;
            }
            assert!(std::time::Instant::now() < deadline, "{t}");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// Waits until no task runs or waits.
    fn idle(agent: &Agent) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while agent.shared.tasks.load() != (0, 0) {
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    fn call(agent: &Agent, method: &str, params: Value, v10: bool) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let version = v10.then_some("1.0");
        json_of(agent.rpc(body.to_string().as_bytes(), version).0)
    }

    /// An onTask that keeps the state of every task it hears, in order.
    fn listener() -> (Arc<std::sync::Mutex<Vec<Value>>>, OnTask) {
        let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
        let ears = Arc::clone(&heard);
        let on_task: OnTask = Arc::new(move |e: &Value| {
            ears.lock().map(|mut h| h.push(e["state"].clone())).ok();
        });
        (heard, on_task)
    }

    #[test]
    fn cancel_ends_a_running_task_and_refuses_unknown_and_ended_ones() {
        let gate = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let tk = Toolkit::build_from_json("{\"builtins\":false}").expect("toolkit");
        let (heard, on_task) = listener();
        let agent = Agent::new(
            A2aConfig::default(),
            &tk,
            gated(Arc::clone(&gate)),
            Some(on_task),
        )
        .expect("agent");
        let msg = json!({"message": {"parts": [{"kind": "text", "text": "x"}]}});
        let sent = call(&agent, "message/send", msg.clone(), false);
        let id = sent["result"]["id"].as_str().expect("id").to_string();
        let canceled = call(&agent, "tasks/cancel", json!({"id": id}), false);
        assert_eq!(
            canceled["result"]["status"]["state"], "canceled",
            "{canceled}"
        );
        assert_eq!(canceled["result"]["kind"], "task");
        assert_eq!(state_of(&settled(&agent, &id)), "canceled");
        idle(&agent);
        // Once ended, it stays canceled; a second cancel is refused.
        let again = call(&agent, "CancelTask", json!({"id": id}), true);
        assert_eq!(again["error"]["code"], -32002, "{again}");
        assert_eq!(
            again["error"]["message"],
            format!("Task cannot be canceled: {id} is canceled")
        );
        let unknown = call(&agent, "CancelTask", json!({"id": "nope"}), true);
        assert_eq!(
            unknown["error"],
            json!({"code": -32001, "message": "Task not found: nope"})
        );
        // A completed task cannot be canceled either.
        gate.store(true, std::sync::atomic::Ordering::SeqCst);
        let sent = call(&agent, "SendMessage", msg, true);
        let done = sent["result"]["task"]["id"]
            .as_str()
            .expect("id")
            .to_string();
        assert_eq!(state_of(&settled(&agent, &done)), "completed");
        let late = call(&agent, "CancelTask", json!({"id": done}), true);
        assert_eq!(late["error"]["code"], -32002, "{late}");
        let heard = heard.lock().map(|h| h.clone()).unwrap_or_default();
        assert_eq!(heard, vec![json!("canceled"), json!("completed")]);
    }

    #[test]
    fn sends_beyond_the_caps_are_refused_and_a_queued_task_can_be_cancelled() {
        let gate = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let tk = Toolkit::build_from_json("{\"builtins\":false}").expect("toolkit");
        let tasks = Arc::new(Tasks::with_caps(1, 1));
        let agent = Agent::with_tasks(
            A2aConfig::default(),
            &tk,
            gated(Arc::clone(&gate)),
            None,
            tasks,
        )
        .expect("agent");
        let msg = json!({"message": {"parts": [{"kind": "text", "text": "x"}]}});
        let ids: Vec<String> = (0..2)
            .map(|_| {
                let r = call(&agent, "message/send", msg.clone(), false);
                r["result"]["id"].as_str().expect("accepted").to_string()
            })
            .collect();
        let refused = call(&agent, "message/send", msg.clone(), false);
        assert_eq!(refused["error"]["code"], -32000, "{refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Server busy")),
            "{refused}"
        );
        // The queued one never runs: cancelled while it waits.
        let c = call(&agent, "tasks/cancel", json!({"id": ids[1]}), false);
        assert_eq!(c["result"]["status"]["state"], "canceled", "{c}");
        gate.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(state_of(&settled(&agent, &ids[0])), "completed");
        assert_eq!(state_of(&settled(&agent, &ids[1])), "canceled");
        idle(&agent);
        let r = call(&agent, "message/send", msg, false);
        assert_eq!(r["result"]["status"]["state"], "submitted", "{r}");
    }

    /// The server stopping stops its agent: the task running and the one
    /// queued end `canceled` (heard by onTask) before `stop` returns, the
    /// hook is let go of then, and a send afterwards is refused.
    #[test]
    fn stop_cancels_running_and_queued_tasks_and_lets_go_of_on_task() {
        let gate = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let tk = Toolkit::build_from_json("{\"builtins\":false}").expect("toolkit");
        let (heard, on_task) = listener();
        let agent = Agent::with_tasks(
            A2aConfig::default(),
            &tk,
            gated(Arc::clone(&gate)),
            Some(on_task),
            Arc::new(Tasks::with_caps(1, 1)),
        )
        .expect("agent");
        let msg = json!({"message": {"parts": [{"kind": "text", "text": "x"}]}});
        let ids: Vec<String> = (0..2)
            .map(|_| {
                let r = call(&agent, "message/send", msg.clone(), false);
                r["result"]["id"].as_str().expect("accepted").to_string()
            })
            .collect();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        Beside::stop(&agent, until);
        for id in &ids {
            let t = agent.store().get(Kind::Task, id).ok().flatten();
            assert_eq!(t.as_ref().map(state_of), Some("canceled"), "{t:?}");
        }
        let got = heard.lock().map(|h| h.clone()).unwrap_or_default();
        assert_eq!(got, vec![json!("canceled"), json!("canceled")]);
        assert_eq!(Arc::strong_count(&heard), 1, "onTask let go of");
        let late = call(&agent, "message/send", msg, false);
        assert_eq!(late["error"]["code"], -32000, "{late}");
    }
}
