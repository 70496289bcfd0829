//! What runs around the loop (SPEC §8): `ask` and `stream` over a
//! conversation store, the in-process client, and the metrics of a client.

use super::callbacks::{callback_error, Callbacks, HostFn, RunData, Slot};
use super::memory::{self, ConversationStore, HostStore};
use super::metrics::MetricEvent;
use super::provider::GenerateProvider;
use super::{Client, RunRequest, DEFAULT_MAX_TURNS};
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::json::type_name;
use crate::provider::{ClientConfig, Style};
use crate::toolkit::Toolkit;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Instant;

/// What `ask` and `stream` are asked: `{prompt, id?, history?}`. With an
/// `id` the transcript comes from the conversation store and goes back to
/// it; `history` is for a stateless call (one or the other).
#[derive(Debug, Clone, Default)]
pub struct AskRequest {
    pub prompt: String,
    pub id: Option<String>,
    pub history: Vec<Value>,
}

const ASK_KEYS: &str = "prompt, id, history";

impl AskRequest {
    pub fn from_json(v: &Value) -> Result<AskRequest> {
        let obj = v.as_object().ok_or_else(|| {
            Error::invalid_argument(format!(
                "ask request must be a JSON object {{{ASK_KEYS}}}, got {}",
                type_name(v)
            ))
        })?;
        let mut run_keys = Map::new();
        for (k, v) in obj {
            match k.as_str() {
                "id" => {}
                "prompt" | "history" => {
                    run_keys.insert(k.clone(), v.clone());
                }
                other => {
                    return Err(Error::invalid_argument(format!(
                        "ask request: unknown key '{other}' (known keys: {ASK_KEYS})"
                    )))
                }
            }
        }
        let run = RunRequest::from_json(&Value::Object(run_keys))?;
        let id = memory::check_id(obj.get("id").unwrap_or(&Value::Null))?;
        if id.is_some() && !run.history.is_empty() {
            return Err(Error::invalid_argument(
                "ask request: give an id (the store keeps the transcript) or a history, not both",
            ));
        }
        Ok(AskRequest {
            prompt: run.prompt,
            id,
            history: run.history,
        })
    }
}

/// The keys of an in-process client: no `baseUrl`, `style`, `apiKey` or
/// `headers` — there is no wire.
const IN_PROCESS_KEYS: &str =
    "model, systemPrompt, maxTurns, retries, timeoutMs, requestParams, store";

impl Client {
    /// SPEC §8 in-process models: a client whose turns `generate` answers
    /// (see [`super::inprocess`]), built from `{model, systemPrompt?,
    /// maxTurns?, retries?, timeoutMs?, requestParams?, store?}`. Messages
    /// are OpenAI-shaped.
    pub fn in_process(v: &Value, generate: HostFn) -> Result<Client> {
        let obj = v.as_object().ok_or_else(|| {
            Error::invalid_config(format!(
                "in-process client must be a JSON object, got {}",
                type_name(v)
            ))
        })?;
        if let Some(k) = obj
            .keys()
            .find(|k| !IN_PROCESS_KEYS.split(", ").any(|c| c == k.as_str()))
        {
            let why = if matches!(k.as_str(), "baseUrl" | "style" | "apiKey" | "headers") {
                " (an in-process client has no endpoint: its generate function answers)"
            } else {
                ""
            };
            return Err(Error::invalid_config(format!(
                "client: unknown key '{k}'{why} (known keys: {IN_PROCESS_KEYS})"
            )));
        }
        // translate's checks of the shared keys, on a stand-in endpoint
        // that is never called.
        let mut shared = obj.clone();
        let max_turns = shared.remove("maxTurns");
        let durable = memory::configured(shared.remove("store").as_ref())?;
        shared.insert("baseUrl".into(), json!("http://in-process.invalid"));
        shared.insert("style".into(), json!("openai"));
        let config = ClientConfig::from_json(&Value::Object(shared))?;
        let max_turns = match max_turns {
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
        let provider = Arc::new(GenerateProvider {
            generate,
            retries: config.retries,
        });
        debug_assert_eq!(config.style, Style::OpenAi);
        let mut client = Client::with_provider(config, max_turns, provider);
        client.durable = durable;
        Ok(client)
    }

    /// SPEC §8 Observability: the Prometheus text of everything this client
    /// did so far.
    pub fn metrics_text(&self) -> String {
        self.metrics.render()
    }

    /// Records a metric event and hands it to `onMetric` when one is set
    /// (the event JSON is built only then). A failing `onMetric` is ignored:
    /// observing never fails a run.
    pub(crate) fn observe(&self, callbacks: &Callbacks, data: RunData, event: &MetricEvent) {
        self.metrics.record(event);
        if let Some(f) = callbacks.get(Slot::OnMetric) {
            let _ = f(&event.to_value(), data);
        }
    }

    /// Runs `f` (a run, a resume, an ask) and records its `run` metric.
    pub(crate) fn observed_run<T: RunFigures>(
        &self,
        data: RunData,
        f: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        let started = Instant::now();
        let outcome = f();
        let callbacks = self.callbacks();
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let model = self.config.model.as_str();
        let ((turns, tool_calls, total_tokens), error) = match &outcome {
            Ok(result) => (result.figures(), None),
            Err(e) => ((0, 0, 0), Some(e.message.as_str())),
        };
        let event = MetricEvent::Run {
            model,
            turns,
            tool_calls,
            total_tokens,
            ms,
            error,
        };
        self.observe(&callbacks, data, &event);
        outcome
    }

    /// The conversation store of a call: the host's when both `storeGet`
    /// and `storeSave` are set, else the one the client's `store` key
    /// names, else the client's own in-memory one.
    fn store_of<'a>(
        &'a self,
        callbacks: &Callbacks,
        data: RunData,
    ) -> Result<Box<dyn ConversationStore + 'a>> {
        match (
            callbacks.get(Slot::StoreGet),
            callbacks.get(Slot::StoreSave),
        ) {
            (None, None) => match &self.durable {
                Some(durable) => Ok(Box::new(memory::DurableStore(Arc::clone(durable)))),
                None => Ok(Box::new(StoreRef(&self.store))),
            },
            (Some(get), Some(save)) => {
                let (get, save) = (Arc::clone(get), Arc::clone(save));
                Ok(Box::new(HostStore {
                    get: move |e: &Value| get(e, data),
                    save: move |e: &Value| save(e, data),
                }))
            }
            (Some(_), None) | (None, Some(_)) => Err(Error::invalid_argument(
                "a host conversation store needs both the storeGet and the storeSave callbacks",
            )),
        }
    }

    /// SPEC §8 `ask`: with an `id`, the transcript saved under it is the
    /// run's history and the run's `messages` are saved back; without,
    /// a stateless run. `stream` streams the provider turns and sends the
    /// run's events (`text`, `tool_call`, `tool_result`, `pending`, `usage`,
    /// `done`) to the `onEvent` slot — SPEC §8 `stream`, and `ask` with
    /// `on_text`. Gives the RunResult either way.
    pub fn ask(
        &self,
        toolkit: &Toolkit,
        request: &AskRequest,
        cancel: &CancelToken,
        data: RunData,
        stream: bool,
    ) -> Result<Value> {
        if stream && !self.provider.streams() {
            return Err(Error::invalid_argument(
                "an in-process client cannot stream: its generate function returns whole answers (ask without stream, or run)",
            ));
        }
        self.observed_run(data, || {
            let callbacks = self.callbacks();
            let store = match &request.id {
                Some(_) => Some(self.store_of(&callbacks, data)?),
                None => None,
            };
            let history = match (&store, &request.id) {
                (Some(store), Some(id)) => store.get(id)?.unwrap_or_default(),
                _ => request.history.clone(),
            };
            let run = RunRequest {
                prompt: request.prompt.clone(),
                history,
            };
            let outcome = self.run_mode(toolkit, &run, cancel, data, stream)?;
            if let (Some(store), Some(id)) = (&store, &request.id) {
                store.save(id, &outcome.messages)?;
            }
            let result = outcome.into_json();
            if stream {
                let send = |event: Value| -> Result<()> {
                    match callbacks.get(Slot::OnEvent) {
                        None => Ok(()),
                        Some(f) => f(&event, data)
                            .map(|_| ())
                            .map_err(|m| callback_error(Slot::OnEvent, &m)),
                    }
                };
                send(json!({"type": "usage", "usage": result["usage"]}))?;
                send(json!({"type": "done", "result": result}))?;
            }
            Ok(result)
        })
    }

    /// The transcript the client's own store keeps under `id` (SPEC §8
    /// Gap 4), `None` for an id never saved.
    pub fn conversation(&self, id: &str) -> Result<Option<Vec<Value>>> {
        self.store.get(id)
    }
}

/// The client's in-memory store, borrowed as a [`ConversationStore`].
struct StoreRef<'a>(&'a memory::InMemoryStore);

impl ConversationStore for StoreRef<'_> {
    fn get(&self, id: &str) -> Result<Option<Vec<Value>>> {
        self.0.get(id)
    }

    fn save(&self, id: &str, messages: &[Value]) -> Result<()> {
        self.0.save(id, messages)
    }
}

/// The `run` metric's figures of a finished run: turns, tool calls, total
/// tokens.
pub(crate) trait RunFigures {
    fn figures(&self) -> (u64, u64, u64);
}

impl RunFigures for Value {
    fn figures(&self) -> (u64, u64, u64) {
        (
            self["turns"].as_u64().unwrap_or(0),
            self["toolCallCount"].as_u64().unwrap_or(0),
            self["usage"]["totalTokens"].as_u64().unwrap_or(0),
        )
    }
}

impl RunFigures for super::RunOutcome {
    fn figures(&self) -> (u64, u64, u64) {
        (
            u64::from(self.turns),
            self.tool_call_count() as u64,
            self.usage.total,
        )
    }
}
