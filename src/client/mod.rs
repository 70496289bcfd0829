//! SPEC §8 the unified client: give it a base URL and a style, and it runs
//! the whole tool-calling loop against a [`Toolkit`] — system prompt plus
//! skills prompt, the toolkit's declarations in the style's shape, tool calls
//! executed and fed back, until an answer or `maxTurns` — with the §8 hooks,
//! `onError`, the whole-run deadline, cancellation, and the §10 suspension
//! rule (`waitFor`, the durable halt, and [`Client::resume`]).
//!
//! - `mod.rs`       the client config and [`Client`], the entry points
//! - `run.rs`       the loop: provider, tool calls, results fed back, halts
//! - `resume.rs`    the durable resume of a halted run
//! - `ask.rs`       `ask` and `stream` over a conversation store, metrics
//! - `provider.rs`  one provider round trip behind the `Provider` trait
//! - `shape`        each style's request body, turns, tool results
//!   (re-exported from `provider::dialect`)
//! - `stream`       re-exported from `provider`: a streamed answer reassembled
//! - `inprocess.rs` a host `generate` function as the model
//! - `acp.rs`       an ACP agent (a child over stdio) as the model
//! - `memory.rs`    the conversation store
//! - `callbacks.rs` the host's slots (hooks, `onError`, `waitFor`)
//! - `observe.rs`   what a run reports as it goes (events, metric facts)
//! - `metrics.rs`   the `onMetric` events and the Prometheus registry
//!
//! This module sits above `provider` (whose exchange and dialects it uses) and
//! `toolkit` (whose `execute` it calls); neither knows it exists.

pub mod acp;
mod ask;
pub mod callbacks;
mod failover;
pub mod inprocess;
pub mod memory;
pub mod metrics;
pub mod observe;
mod outcome;
mod progress;
pub mod provider;
mod resume;
mod run;
/// The dialects' turn pieces (request body, calls, text, usage, results),
/// in the provider layer; this path stays.
pub use crate::provider::dialect as shape;
/// The stream assembler, in the provider layer; this path stays.
pub use crate::provider::stream;

use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::json::type_name;
use crate::provider::{ClientConfig, Style, CLIENT_KEYS};
use crate::toolkit::Toolkit;
use crate::translate::helpers::is_blank;
pub use ask::AskRequest;
pub use callbacks::{Callbacks, HostFn, RunData, Slot};
pub use observe::{Event, Observer};
pub use outcome::{RunOutcome, RunStatus};
pub use provider::{Exchange, HttpProvider, Provider};
pub use run::tool_workers;
use run::Run;
use serde_json::{Map, Value};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::{Duration, Instant};

/// The turn limit when the client sets none.
pub const DEFAULT_MAX_TURNS: u32 = 10;

/// The client keys beyond translate's.
const LOOP_KEYS: [&str; 2] = ["maxTurns", "store"];

/// A client: its validated config, its provider, and the host's slots. One
/// client serves many runs on many threads at once.
pub struct Client {
    /// Shared, not copied, by clients made from one configuration (the
    /// agent runtime's turns of one definition).
    pub(crate) config: Arc<ClientConfig>,
    pub(crate) max_turns: u32,
    pub(crate) provider: Arc<dyn Provider>,
    callbacks: RwLock<Arc<Callbacks>>,
    /// SPEC §8 Observability: what `metrics()` renders.
    /// Shared with other clients when one owner runs many (the agent
    /// runtime's turns: [`Client::sharing_metrics`]).
    pub(crate) metrics: Arc<metrics::Registry>,
    /// SPEC §8 Conversation memory: the default store of `ask`.
    pub(crate) store: memory::InMemoryStore,
    /// The durable store the client's `store` key names, which `ask` uses
    /// instead of `store` (issue 27).
    pub(crate) durable: Option<Arc<dyn crate::store::Store>>,
    observer: RwLock<Option<Arc<dyn Observer>>>,
    /// What each tool call of this client's runs carries as its
    /// [`ExecContext::run_tag`](crate::tool::ExecContext::run_tag).
    pub(crate) run_tag: Option<u64>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("model", &self.config.model)
            .field("style", &self.config.style)
            .field("max_turns", &self.max_turns)
            .finish()
    }
}

/// What a run is asked: `{prompt, history?}`.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    pub prompt: String,
    /// A prior transcript in the provider's own shape, sent verbatim first.
    pub history: Vec<Value>,
}

/// A durable resume: `{history, pending, answer}` (SPEC §10).
#[derive(Debug, Clone)]
pub struct ResumeRequest {
    pub history: Vec<Value>,
    pub pending: Value,
    pub answer: Value,
    /// `mode: "fill"` (the §10 addendum's `runWithAnswer`): every open
    /// tool-result slot of the halted turn is filled from the Answer and no
    /// tool runs again. `false` (`mode: "rerun"`, the default): the halted
    /// call re-runs with `ctx.answer` and the calls the halt left out run.
    pub fill: bool,
}

fn object<'a>(v: &'a Value, what: &str, keys: &str) -> Result<&'a Map<String, Value>> {
    let obj = v.as_object().ok_or_else(|| {
        Error::invalid_argument(format!(
            "{what} must be a JSON object {{{keys}}}, got {}",
            type_name(v)
        ))
    })?;
    if let Some(k) = obj
        .keys()
        .find(|k| !keys.split(", ").any(|c| c == k.as_str()))
    {
        return Err(Error::invalid_argument(format!(
            "{what}: unknown key '{k}' (known keys: {keys})"
        )));
    }
    Ok(obj)
}

fn messages(v: Option<&Value>, what: &str) -> Result<Vec<Value>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => {
            if let Some((i, m)) = list.iter().enumerate().find(|(_, m)| !m.is_object()) {
                return Err(Error::invalid_argument(format!(
                    "{what}[{i}] must be a message object, got {}",
                    type_name(m)
                )));
            }
            Ok(list.clone())
        }
        Some(other) => Err(Error::invalid_argument(format!(
            "{what} must be an array of messages, got {}",
            type_name(other)
        ))),
    }
}

impl RunRequest {
    /// Reads `{prompt, history?}`.
    pub fn from_json(v: &Value) -> Result<RunRequest> {
        let obj = object(v, "run request", "prompt, history")?;
        let prompt = match obj.get("prompt") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "run request: prompt must be a string, got {}",
                    type_name(other)
                )))
            }
            None => return Err(Error::invalid_argument("run request: prompt is required")),
        };
        Ok(RunRequest {
            prompt,
            history: messages(obj.get("history"), "history")?,
        })
    }
}

impl ResumeRequest {
    /// Reads `{history, pending, answer, mode?: "rerun"|"fill"}`.
    pub fn from_json(v: &Value) -> Result<ResumeRequest> {
        let obj = object(v, "resume request", "history, pending, answer, mode")?;
        let fill = match obj.get("mode") {
            None | Some(Value::Null) => false,
            Some(Value::String(m)) if m == "rerun" => false,
            Some(Value::String(m)) if m == "fill" => true,
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "resume request: mode must be \"rerun\" or \"fill\", got {other}"
                )))
            }
        };
        let history = messages(obj.get("history"), "history")?;
        let need = |key: &str, what: &str| -> Result<Value> {
            match obj.get(key) {
                Some(o @ Value::Object(_)) => Ok(o.clone()),
                Some(other) => Err(Error::invalid_argument(format!(
                    "resume request: {key} must be {what}, got {}",
                    type_name(other)
                ))),
                None => Err(Error::invalid_argument(format!(
                    "resume request: {key} is required ({what})"
                ))),
            }
        };
        Ok(ResumeRequest {
            history,
            pending: need("pending", "the pending Request {id, kind, prompt, ...}")?,
            answer: need("answer", "an Answer {id, ok, data?, reason?}")?,
            fill,
        })
    }
}

/// A toolkit with no tools, for a run given none.
pub fn empty_toolkit() -> &'static Toolkit {
    static EMPTY: OnceLock<Toolkit> = OnceLock::new();
    EMPTY.get_or_init(|| {
        Toolkit::build_from_json(r#"{"builtins":false}"#)
            .unwrap_or_else(|e| panic!("toolnexus: the empty toolkit does not build: {e}"))
    })
}

impl Client {
    /// Reads a client JSON object: translate's keys (CONTRACT.md §6) plus
    /// `maxTurns` (default 10) and `store` (where `ask` keeps conversations:
    /// a store selector, default the client's own memory). `timeoutMs`
    /// bounds a whole run.
    pub fn from_json(v: &Value) -> Result<Client> {
        let obj = v.as_object().ok_or_else(|| {
            Error::invalid_config(format!(
                "client must be a JSON object, got {}",
                type_name(v)
            ))
        })?;
        let known = |k: &str| CLIENT_KEYS.split(", ").any(|c| c == k) || LOOP_KEYS.contains(&k);
        if let Some(k) = obj.keys().find(|k| !known(k)) {
            return Err(Error::invalid_config(format!(
                "client: unknown key '{k}' (known keys: {CLIENT_KEYS}, {})",
                LOOP_KEYS.join(", ")
            )));
        }
        let max_turns = match obj.get("maxTurns") {
            None | Some(Value::Null) => DEFAULT_MAX_TURNS,
            Some(n) => n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    Error::invalid_config(format!(
                        "client.maxTurns must be a whole number of 0 or more, got {n}"
                    ))
                })?,
        };
        let mut translate_keys = obj.clone();
        for k in LOOP_KEYS {
            translate_keys.remove(k);
        }
        let config = ClientConfig::from_json(&Value::Object(translate_keys))?;
        crate::provider::failover::check_one_style(&config)?;
        let durable = memory::configured(obj.get("store"))?;
        let provider = Arc::new(HttpProvider {
            config: config.clone(),
        });
        let mut client = Client::with_provider(config, max_turns, provider);
        client.durable = durable;
        Ok(client)
    }

    /// A client whose turns another [`Provider`] answers (an in-process
    /// model, a streaming call). `config` still gives the style, the model,
    /// the system prompt, `requestParams` and `timeoutMs`.
    pub fn with_provider(
        config: ClientConfig,
        max_turns: u32,
        provider: Arc<dyn Provider>,
    ) -> Client {
        Client::assembled(
            Arc::new(config),
            max_turns,
            provider,
            Callbacks::default(),
            Arc::new(metrics::Registry::new()),
        )
    }

    /// A client of parts made once and shared: `config` and the metrics
    /// `registry` (see [`Client::sharing_metrics`]), with `callbacks` in
    /// its slots from the start. What [`Client::with_provider`] and then
    /// [`Client::sharing_metrics`] and [`Client::set_callbacks`] make,
    /// without a configuration copied, a registry made and dropped unused,
    /// or a set of empty slots replaced: the agent runtime makes one such
    /// client per turn.
    pub fn assembled(
        config: Arc<ClientConfig>,
        max_turns: u32,
        provider: Arc<dyn Provider>,
        callbacks: Callbacks,
        registry: Arc<metrics::Registry>,
    ) -> Client {
        Client {
            config,
            max_turns,
            provider,
            callbacks: RwLock::new(Arc::new(callbacks)),
            metrics: registry,
            store: memory::InMemoryStore::new(),
            durable: None,
            observer: RwLock::new(None),
            run_tag: None,
        }
    }

    /// This client recording its metrics into `registry` (which other
    /// clients may share) instead of a registry of its own.
    pub fn sharing_metrics(mut self, registry: Arc<metrics::Registry>) -> Client {
        self.metrics = registry;
        self
    }

    /// This client's runs tagged with `tag`: each of their tool calls finds
    /// it in its context's [`run_tag`](crate::tool::ExecContext::run_tag).
    pub fn tagging_runs(mut self, tag: u64) -> Client {
        self.run_tag = Some(tag);
        self
    }

    /// Sets every slot at once to `callbacks` (what [`Client::set_callback`]
    /// does slot by slot). Runs already under way keep the slots they
    /// started with.
    pub fn set_callbacks(&self, callbacks: Callbacks) {
        *self
            .callbacks
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(callbacks);
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    pub fn max_turns(&self) -> u32 {
        self.max_turns
    }

    /// Sets (or with `None` clears) one slot. Runs already under way keep
    /// the slots they started with.
    pub fn set_callback(&self, slot: Slot, f: Option<HostFn>) {
        let mut guard = self
            .callbacks
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let mut next = Callbacks::clone(&guard);
        next.set(slot, f);
        *guard = Arc::new(next);
    }

    /// Sets (or with `None` removes) the observer of this client's runs
    /// (stream events and metrics). Runs under way keep the one they began
    /// with.
    pub fn set_observer(&self, observer: Option<Arc<dyn Observer>>) {
        *self
            .observer
            .write()
            .unwrap_or_else(PoisonError::into_inner) = observer;
    }

    fn observer(&self) -> Option<Arc<dyn Observer>> {
        self.observer
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn callbacks(&self) -> Arc<Callbacks> {
        Arc::clone(
            &self
                .callbacks
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// SPEC §0.10: `systemPrompt + "\n\n" + skillsPrompt`, blank parts
    /// dropped; the skills prompt only when the toolkit has a skill source.
    pub fn system_text(&self, toolkit: &Toolkit) -> String {
        let prompt = self.config.system_prompt.as_deref().unwrap_or("");
        let skills = if toolkit.has_skill_source() {
            toolkit.skills_prompt()
        } else {
            String::new()
        };
        match (is_blank(prompt), is_blank(&skills)) {
            (true, true) => String::new(),
            (false, true) => prompt.to_string(),
            (true, false) => skills,
            (false, false) => format!("{prompt}\n\n{skills}"),
        }
    }

    /// The toolkit's declarations in the client style's shape.
    pub fn declarations(&self, toolkit: &Toolkit) -> Result<Vec<Value>> {
        match self.config.style {
            Style::OpenAi => Ok(toolkit.openai_declarations()),
            // Gemini-safe schemas on the way to Gemini only (the toolkit
            // and its `gemini` render keep the full ones).
            Style::Gemini => Ok(toolkit
                .openai_declared()
                .iter()
                .map(crate::provider::gemini::declaration)
                .collect()),
            Style::Responses => Ok(toolkit
                .openai_declared()
                .iter()
                .map(crate::provider::responses::tool)
                .collect()),
            Style::Anthropic => {
                let text = toolkit.render("anthropic")?;
                match serde_json::from_str(&text) {
                    Ok(Value::Array(list)) => Ok(list),
                    _ => Err(Error::new(
                        crate::error::ErrorCode::Internal,
                        "internal error: the anthropic rendering is not a JSON array",
                    )),
                }
            }
        }
    }

    /// [`Client::declarations`] as the run keeps them: on the openai style
    /// the toolkit's own shared list (no copy per run).
    fn declared(&self, toolkit: &Toolkit) -> Result<Arc<Vec<Value>>> {
        match self.config.style {
            Style::OpenAi => Ok(toolkit.openai_declared()),
            _ => self.declarations(toolkit).map(Arc::new),
        }
    }

    fn start<'a>(
        &'a self,
        toolkit: &'a Toolkit,
        cancel: &'a CancelToken,
        data: RunData,
        messages: Vec<Value>,
        system: String,
    ) -> Result<Run<'a>> {
        let deadline = self
            .config
            .timeout_ms
            .map(|ms| Instant::now() + Duration::from_millis(ms));
        Ok(Run {
            client: self,
            toolkit,
            callbacks: self.callbacks(),
            cancel,
            deadline,
            data,
            system,
            messages,
            tools: self.declared(toolkit)?,
            tool_calls: Vec::new(),
            turns: 0,
            usage: Default::default(),
            streaming: false,
            observer: self.observer(),
            started: Instant::now(),
            served: None,
            progress: None,
        })
    }

    /// Runs the loop for `request` against `toolkit` and returns the
    /// RunResult JSON (CONTRACT.md §8). A provider failure after the
    /// retries, a timeout, a cancel or a failing callback is an error.
    pub fn run(
        &self,
        toolkit: &Toolkit,
        request: &RunRequest,
        cancel: &CancelToken,
        data: RunData,
    ) -> Result<Value> {
        self.run_outcome(toolkit, request, cancel, data)
            .map(RunOutcome::into_json)
    }

    /// [`Client::run`], its outcome not yet made the RunResult JSON: for
    /// the crate's callers that read its parts (the agent runtime).
    pub fn run_outcome(
        &self,
        toolkit: &Toolkit,
        request: &RunRequest,
        cancel: &CancelToken,
        data: RunData,
    ) -> Result<RunOutcome> {
        self.observed_run(data, || {
            self.run_mode(toolkit, request, cancel, data, false)
        })
    }

    /// [`Client::run`], streamed or not (SPEC §8 Streaming), without the
    /// `run` metric.
    fn run_mode(
        &self,
        toolkit: &Toolkit,
        request: &RunRequest,
        cancel: &CancelToken,
        data: RunData,
        streaming: bool,
    ) -> Result<RunOutcome> {
        let system = self.system_text(toolkit);
        // openai: the system text is message 0, except after a history
        // (which is sent as it is); anthropic: it is the body's `system`.
        let mut messages = if !request.history.is_empty() {
            request.history.clone()
        } else if self.config.style == Style::OpenAi && !is_blank(&system) {
            // Room for the user message, an answer with its calls, their
            // results and the final answer without growing.
            let mut m = Vec::with_capacity(6);
            m.push(shape::system_message(&system));
            m
        } else {
            Vec::new()
        };
        messages.push(shape::user_message_for(self.config.style, &request.prompt));
        let mut run = self.start(toolkit, cancel, data, messages, system)?;
        run.streaming = streaming;
        let outcome = run.drive(0);
        run.report(&outcome);
        outcome
    }

    /// SPEC §10 durable resume: continues a run that halted with
    /// `status:"pending"` from its transcript, the Request it halted on and
    /// the host's Answer (whose id must echo the Request's). Every tool call
    /// of the halted turn gets its result: the halted call is re-run with
    /// `ctx.answer` (or declined), the calls the halt left out run now; then
    /// the loop goes on with no new user turn. In fill mode
    /// ([`ResumeRequest::fill`]) no tool runs: the Answer fills every open
    /// result slot.
    pub fn resume(
        &self,
        toolkit: &Toolkit,
        request: &ResumeRequest,
        cancel: &CancelToken,
        data: RunData,
    ) -> Result<Value> {
        self.observed_run(data, || {
            resume::resume(self, toolkit, request, cancel, data)
        })
    }
}
