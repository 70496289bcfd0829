//! The runtime as JSON (contract §4.12): a runtime built from one config
//! object, and its verbs as `(verb, args) → JSON` calls addressed by handle
//! id. What the C boundary (and any other host) drives; it holds no
//! pointers and no `unsafe`.

use super::clock::{Clock, ManualClock};
use super::compaction::{estimate, Compactor};
use super::def::{Budget, Registry};
use super::harness::{Guardrail, Verify};
use super::home::{start_agent, StartedAgent};
use super::inbox::InboxItem;
use super::runtime::{Llm, Runtime, RuntimeOptions};
use crate::cancel::CancelToken;
use crate::client::{HostFn, RunData, Slot};
use crate::error::{Error, ErrorCode, Result};
use crate::json::type_name;
use crate::toolkit::Toolkit;
use crate::translate::ClientConfig;
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

/// The keys a runtime config takes.
const CONFIG_KEYS: &str =
    "agents, client, clock, inboxCap, maxConcurrentTurns, shutdownMs, callbacks, compaction, store";

/// The verbs [`Agents::call`] answers.
pub const VERBS: &str = "spawn, post, wake, wait, interrupt, close, shutdown, resume, list, inspect, trace, transcript, advance, start";

/// The callback slots every runtime has (called outside any run).
const ALWAYS: [&str; 3] = ["onSpawn", "onClose", "onBeat"];

/// The runtime-wide hook slots a config may declare in `callbacks`.
const HOOKS: [Slot; 6] = [
    Slot::BeforeLlm,
    Slot::AfterLlm,
    Slot::BeforeTool,
    Slot::AfterTool,
    Slot::OnError,
    Slot::OnMetric,
];

/// The host functions of a runtime built from JSON, by slot name: filled
/// (and replaced, or cleared) after the build by [`Agents::set_callback`].
/// The runtime calls each through a stand-in installed at the build for
/// every declared slot, so a slot the config does not declare changes
/// nothing, and a declared one not set yet fails its call.
#[derive(Default)]
struct Slots {
    declared: BTreeSet<String>,
    set: RwLock<HashMap<String, HostFn>>,
}

impl Slots {
    fn get(&self, name: &str) -> Option<HostFn> {
        self.set
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    /// Calls the slot: its reply, or why there is none.
    fn call(
        &self,
        name: &str,
        event: &Value,
        data: RunData,
    ) -> std::result::Result<Option<Value>, String> {
        match self.get(name) {
            Some(f) => f(event, data),
            None => Err(format!("no {name} callback is set")),
        }
    }

    /// A stand-in for the slot `name`, as a hook.
    fn hook(self: &Arc<Self>, name: String) -> HostFn {
        let me = Arc::clone(self);
        Arc::new(move |event: &Value, data: RunData| me.call(&name, event, data))
    }
}

/// A runtime built from JSON, with the manual clock it may run on and the
/// host functions it calls.
pub struct Agents {
    rt: Runtime,
    clock: Option<Arc<ManualClock>>,
    slots: Arc<Slots>,
    /// The agents `start`ed on a heartbeat; stopped when this is dropped.
    started: Mutex<Vec<StartedAgent>>,
}

impl Drop for Agents {
    /// Waits for the store's queued writes (at most
    /// [`crate::limits::AGENT_STORE_FLUSH`]) here: a turn thread may still
    /// hold the runtime, and the runtime's own drop would then wait on that
    /// thread, after the host has gone on.
    fn drop(&mut self) {
        self.rt.flush(crate::limits::AGENT_STORE_FLUSH);
    }
}

impl std::fmt::Debug for Agents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agents")
            .field("runtime", &self.rt)
            .field("manual_clock", &self.clock.is_some())
            .finish()
    }
}

impl Agents {
    /// Builds a runtime from `{agents: {name: definition}, client?, clock?:
    /// "manual"|"system", inboxCap?, maxConcurrentTurns?, shutdownMs?,
    /// store?}` (`store`: a store selector; transcripts and checkpoints are
    /// written through to it, see `agents::durable`).
    /// With `generate`, each LLM call goes to it and `client` (optional)
    /// gives only `model` (default `"in-process"`) and `style`; without, `client` is the HTTP client
    /// config and is required. Agents' `tools` are looked up in `toolkit`.
    pub fn from_json(
        v: &Value,
        toolkit: Option<Arc<Toolkit>>,
        generate: Option<HostFn>,
    ) -> Result<Agents> {
        let obj = v.as_object().ok_or_else(|| {
            Error::invalid_config(format!(
                "the agents config must be a JSON object, got {}",
                type_name(v)
            ))
        })?;
        if let Some(k) = obj
            .keys()
            .find(|k| !CONFIG_KEYS.split(", ").any(|c| c == k.as_str()))
        {
            return Err(Error::invalid_config(format!(
                "agents config: unknown key '{k}' (known keys: {CONFIG_KEYS})"
            )));
        }
        let defs = obj
            .get("agents")
            .ok_or_else(|| Error::invalid_config("agents config: \"agents\" is required"))?;
        let mut registry = Registry::from_json(defs, toolkit.as_deref())?;
        let slots = Arc::new(declared_slots(obj, defs, &registry)?);
        let mut hooks = crate::client::Callbacks::default();
        bind_agent_slots(&slots, &mut registry);
        for slot in HOOKS {
            if slots.declared.contains(slot.name()) {
                hooks.set(slot, Some(slots.hook(slot.name().to_string())));
            }
        }
        if let Some(c) = obj.get("compaction").filter(|c| !c.is_null()) {
            if slots.declared.contains(Slot::BeforeLlm.name()) {
                return Err(Error::invalid_config(
                    "agents config: compaction is the runtime's beforeLLM hook; declare one or the other",
                ));
            }
            hooks.set(Slot::BeforeLlm, Some(compactor(c, &slots)?.hook()));
        }
        let llm = match (generate, obj.get("client")) {
            (Some(g), client) => {
                let mut c = match client {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(m)) => m.clone(),
                    Some(other) => {
                        return Err(Error::invalid_config(format!(
                            "agents config: client must be a JSON object, got {}",
                            type_name(other)
                        )))
                    }
                };
                // translate's checks, on a stand-in endpoint never called.
                c.entry("baseUrl")
                    .or_insert_with(|| json!("http://in-process.invalid"));
                c.entry("model").or_insert_with(|| json!("in-process"));
                Llm::Generate(ClientConfig::from_json(&Value::Object(c))?, g)
            }
            (None, Some(c)) => {
                let config = ClientConfig::from_json(c)?;
                crate::provider::failover::check_one_style(&config)?;
                Llm::Http(config)
            }
            (None, None) => {
                return Err(Error::invalid_config(
                    "agents config: \"client\" is required without a generate callback",
                ))
            }
        };
        let mut opts = RuntimeOptions::new(registry, llm);
        opts.toolkit = toolkit;
        opts.hooks = hooks;
        let me = Arc::clone(&slots);
        opts.on_spawn = Some(Arc::new(move |id: &str| {
            let _ = me
                .get("onSpawn")
                .map(|f| f(&json!({"id": id}), RunData::default()));
        }));
        let me = Arc::clone(&slots);
        opts.on_close = Some(Arc::new(move |id: &str, reason: &str| {
            let _ = me
                .get("onClose")
                .map(|f| f(&json!({"id": id, "reason": reason}), RunData::default()));
        }));
        if let Some(n) = config_count(obj, "inboxCap")? {
            opts.inbox_cap = n as usize;
        }
        if let Some(n) = config_count(obj, "maxConcurrentTurns")? {
            opts.max_concurrent_turns = n as usize;
        }
        if let Some(n) = config_count(obj, "shutdownMs")? {
            opts.shutdown_ms = n;
        }
        let clock = match obj.get("clock").map(|c| (c, c.as_str())) {
            None | Some((_, Some("system"))) => None,
            Some((_, Some("manual"))) => Some(Arc::new(ManualClock::new())),
            Some((c, _)) => {
                return Err(Error::invalid_config(format!(
                    "agents config: clock must be \"manual\" or \"system\", got {c}"
                )))
            }
        };
        if let Some(c) = &clock {
            opts.clock = Arc::clone(c) as Arc<dyn Clock>;
        }
        match obj.get("store") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => opts.store = Some(crate::store::resolve(Some(s))?),
            Some(other) => {
                return Err(Error::invalid_config(format!(
                    "agents config: store must be a store selector string (\"memory\", \"file:<dir>\", \"sqlite:<path>\", \"postgres://…\", \"host:<name>\"), got {}",
                    type_name(other)
                )))
            }
        }
        Ok(Agents {
            rt: Runtime::new(opts)?,
            clock,
            slots,
            started: Mutex::new(Vec::new()),
        })
    }

    /// The callback slots this runtime has: `onSpawn`, `onClose`, `onBeat`,
    /// and those its config declares (sorted).
    pub fn slot_names(&self) -> Vec<String> {
        self.slots.declared.iter().cloned().collect()
    }

    /// Sets (or, with `None`, clears) the host function of a slot. A slot
    /// the runtime does not have is an `invalid_argument` error naming the
    /// ones it has.
    pub fn set_callback(&self, slot: &str, f: Option<HostFn>) -> Result<()> {
        if !self.slots.declared.contains(slot) {
            return Err(Error::invalid_argument(format!(
                "this runtime has no callback slot \"{slot}\" (its slots: {}; declare others in the config's \"callbacks\")",
                self.slot_names().join(", ")
            )));
        }
        let mut set = self
            .slots
            .set
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match f {
            Some(f) => set.insert(slot.to_string(), f),
            None => set.remove(slot),
        };
        Ok(())
    }

    /// The runtime.
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// Runs one verb on `args` (a JSON object; `null` reads as `{}`).
    /// `cancel` ends a `wait` early with an `interrupted` result. A verb
    /// the runtime refuses (an unknown handle, a closed one, a full inbox)
    /// is an `invalid_argument` error with the runtime's message.
    pub fn call(&self, verb: &str, args: &Value, cancel: &CancelToken) -> Result<Value> {
        let empty = Map::new();
        let a = match args {
            Value::Null => &empty,
            Value::Object(m) => m,
            other => {
                return Err(Error::invalid_argument(format!(
                    "{verb}: args must be a JSON object, got {}",
                    type_name(other)
                )))
            }
        };
        let refused = |e: String| Error::invalid_argument(e);
        let ok = || json!({"ok": true});
        match verb {
            "spawn" => {
                let parent = opt_str(a, verb, "parent")?.unwrap_or("root");
                let def = req_str(a, verb, "agent")?;
                let budget = match a.get("budget") {
                    None | Some(Value::Null) => None,
                    Some(b) => Some(Budget::from_json(b, "spawn.budget")?),
                };
                let id = self
                    .rt
                    .spawn(parent, def, budget.as_ref())
                    .map_err(refused)?;
                Ok(json!({"id": id}))
            }
            "post" => {
                let id = req_str(a, verb, "id")?;
                let item: InboxItem = serde_json::from_value(
                    a.get("item").cloned().unwrap_or(Value::Null),
                )
                .map_err(|e| {
                    Error::invalid_argument(format!(
                        "post: item must be {{from, channel, text}}: {e}"
                    ))
                })?;
                self.rt.post(id, item).map_err(refused)?;
                Ok(ok())
            }
            "wake" => {
                let id = req_str(a, verb, "id")?;
                let prompt = opt_str(a, verb, "prompt")?;
                self.rt.wake(id, prompt).map_err(refused)?;
                Ok(ok())
            }
            "wait" => {
                let id = self.known(req_str(a, verb, "id")?)?;
                let timeout = count(a, "timeoutMs")?;
                Ok(json!(self.rt.wait_cancellable(id, timeout, cancel)))
            }
            "interrupt" => {
                self.rt
                    .interrupt(req_str(a, verb, "id")?)
                    .map_err(refused)?;
                Ok(ok())
            }
            "close" => {
                let id = req_str(a, verb, "id")?;
                let force = match a.get("force") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => {
                        return Err(Error::invalid_argument("close: force must be a boolean"))
                    }
                };
                let reason = opt_str(a, verb, "reason")?;
                self.rt.close(id, force, reason).map_err(refused)?;
                Ok(ok())
            }
            "shutdown" => {
                self.close_all(opt_str(a, verb, "reason")?.unwrap_or("runtime freed"));
                Ok(ok())
            }
            "resume" => {
                let answer = a
                    .get("answer")
                    .cloned()
                    .ok_or_else(|| Error::invalid_argument("resume: answer is required"))?;
                Ok(json!(self.rt.resume(answer).map_err(refused)?))
            }
            "list" => Ok(json!(self.rt.list())),
            "inspect" => {
                let id = self.known(req_str(a, verb, "id")?)?;
                Ok(json!(self.rt.inspect(id)))
            }
            "trace" => Ok(json!(self.rt.trace())),
            "transcript" => {
                let id = self.known(req_str(a, verb, "id")?)?;
                Ok(Value::Array(self.rt.transcript(id)))
            }
            "advance" => {
                let ms = count(a, "ms")?
                    .ok_or_else(|| Error::invalid_argument("advance: ms is required"))?;
                let clock = self.clock.as_ref().ok_or_else(|| {
                    Error::invalid_argument(
                        "advance: the runtime is not on the manual clock (config \"clock\":\"manual\")",
                    )
                })?;
                clock.advance(ms);
                Ok(ok())
            }
            "start" => {
                let def = req_str(a, verb, "agent")?;
                let every = count(a, "everyMs")?
                    .ok_or_else(|| Error::invalid_argument("start: everyMs is required"))?;
                let me = Arc::clone(&self.slots);
                let started = start_agent(
                    &self.rt,
                    def,
                    every,
                    Arc::new(move |text: &str| {
                        let _ = me
                            .get("onBeat")
                            .map(|f| f(&json!({"text": text}), RunData::default()));
                    }),
                )
                .map_err(refused)?;
                let id = started.handle.clone();
                self.started
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(started);
                Ok(json!({"id": id}))
            }
            other => Err(Error::invalid_argument(format!(
                "unknown verb \"{other}\" (verbs: {VERBS})"
            ))),
        }
    }

    /// Force-closes every handle (the host is letting go of the runtime):
    /// running turns are cancelled, waits end, suspensions stay in the
    /// store for a later runtime; then waits (at most
    /// [`crate::limits::AGENT_STORE_FLUSH`]) for the writes the runtime's
    /// store still has queued.
    pub fn shutdown(&self) {
        let started =
            std::mem::take(&mut *self.started.lock().unwrap_or_else(PoisonError::into_inner));
        for s in &started {
            s.stop();
        }
        self.close_all("runtime freed");
        // What the store still has queued is written before the host goes
        // on (the runtime itself may outlive this call a little, in a
        // call returning on another thread).
        self.rt.flush(crate::limits::AGENT_STORE_FLUSH);
    }

    /// Force-closes every handle, leaves first, leaving each durable
    /// suspension in the store for a later runtime (the host is letting
    /// this one go).
    fn close_all(&self, reason: &str) {
        self.rt.keep_suspensions();
        for id in self.rt.list().into_iter().rev().map(|v| v.id) {
            let _ = self.rt.close(&id, true, Some(reason));
        }
    }

    fn known<'a>(&self, id: &'a str) -> Result<&'a str> {
        if self.rt.inspect(id).is_some() {
            Ok(id)
        } else {
            Err(Error::invalid_argument(format!("no handle \"{id}\"")))
        }
    }
}

/// The slots of a config: [`ALWAYS`], its `callbacks` list (hook slot
/// names, `summarize`, `countTokens`, `waitFor:<agent>`,
/// `guardrail:<agent>`, and `<hook>:<agent>` for one agent's own hook), and `verify:<agent>` for each definition whose
/// `completion.verify` is `"callback"`.
fn declared_slots(obj: &Map<String, Value>, defs: &Value, registry: &Registry) -> Result<Slots> {
    let mut declared: BTreeSet<String> = ALWAYS.iter().map(|s| s.to_string()).collect();
    let bad = |why: String| Error::invalid_config(format!("agents config: callbacks: {why}"));
    let per_agent = "waitFor:<agent>, guardrail:<agent>, <hook>:<agent>";
    let hooks: Vec<&str> = HOOKS.iter().map(|s| s.name()).collect();
    match obj.get("callbacks") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let Some(name) = item.as_str() else {
                    return Err(bad(format!(
                        "[{i}] must be a slot name, got {}",
                        type_name(item)
                    )));
                };
                let known = match name.split_once(':') {
                    Some((kind, agent))
                        if matches!(kind, "waitFor" | "guardrail") || hooks.contains(&kind) =>
                    {
                        if registry.get(agent).is_none() {
                            return Err(bad(format!(
                                "\"{name}\" names unknown agent \"{agent}\" (known: {})",
                                registry.names().join(", ")
                            )));
                        }
                        true
                    }
                    Some(_) => false,
                    None => {
                        hooks.contains(&name)
                            || matches!(name, "summarize" | "countTokens")
                            || ALWAYS.contains(&name)
                    }
                };
                if !known {
                    return Err(bad(format!(
                        "unknown slot \"{name}\" (slots: {}, summarize, countTokens, {per_agent}; always there: {})",
                        hooks.join(", "),
                        ALWAYS.join(", ")
                    )));
                }
                declared.insert(name.to_string());
            }
        }
        Some(other) => {
            return Err(bad(format!(
                "expected an array of slot names, got {}",
                type_name(other)
            )))
        }
    }
    if let Some(m) = defs.as_object() {
        for (name, d) in m {
            if d.pointer("/completion/verify").and_then(Value::as_str) == Some("callback") {
                declared.insert(format!("verify:{name}"));
            }
        }
    }
    Ok(Slots {
        declared,
        set: RwLock::new(HashMap::new()),
    })
}

/// Puts the stand-ins of the per-agent slots into their definitions.
fn bind_agent_slots(slots: &Arc<Slots>, registry: &mut Registry) {
    for name in slots.declared.clone() {
        let Some((kind, agent)) = name
            .split_once(':')
            .map(|(k, a)| (k.to_string(), a.to_string()))
        else {
            continue;
        };
        let Some(def) = registry.def_mut(&agent) else {
            continue;
        };
        match kind.as_str() {
            "waitFor" => def.wait_for = Some(slots.hook(name.clone())),
            hook if HOOKS.iter().any(|s| s.name() == hook) => {
                if let Ok(slot) = Slot::from_name(hook) {
                    def.hooks.set(slot, Some(slots.hook(name.clone())));
                }
            }
            "guardrail" => {
                let me = Arc::clone(slots);
                let guardrail: Guardrail = Arc::new(move |event: &Value| {
                    match me.call(&name, event, RunData::default()) {
                        Ok(None | Some(Value::Null)) => String::new(),
                        Ok(Some(Value::String(s))) => s,
                        Ok(Some(other)) => {
                            format!("the {name} callback answered {other}; expected a string")
                        }
                        // Fails closed: a guardrail that cannot say denies.
                        Err(e) => format!("the {name} callback failed: {e}"),
                    }
                });
                def.guardrails.push(guardrail);
            }
            "verify" => {
                if let Some(gate) = &mut def.completion {
                    let me = Arc::clone(slots);
                    let verify: Verify = Arc::new(move |result: &Value| {
                        let reply = me
                            .call(&name, result, RunData::default())
                            .map_err(|e| format!("the {name} callback failed: {e}"))?;
                        let ok = reply
                            .as_ref()
                            .and_then(|r| r.get("ok"))
                            .and_then(Value::as_bool);
                        match ok {
                            Some(true) => Ok(()),
                            Some(false) => Err(reply
                                .as_ref()
                                .and_then(|r| r.get("reason"))
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string()),
                            None => Err(format!(
                                "the {name} callback answered {}; expected {{ok, reason?}}",
                                reply.unwrap_or(Value::Null)
                            )),
                        }
                    });
                    gate.verify = verify;
                }
            }
            _ => {}
        }
    }
}

/// The runtime's compactor, from `{maxTokens, keepTail?, flushToMemory?}`:
/// `summarize` (declared in `callbacks`) writes the summary (event
/// `{older: [messages]}`, reply: the summary text); `countTokens`, when
/// declared, counts (event `{messages}`, reply: a number; a failing one
/// falls back to the built-in estimate).
fn compactor(v: &Value, slots: &Arc<Slots>) -> Result<Compactor> {
    let what = "agents config: compaction";
    let obj = v.as_object().ok_or_else(|| {
        Error::invalid_config(format!(
            "{what} must be a JSON object {{maxTokens, keepTail?, flushToMemory?}}, got {}",
            type_name(v)
        ))
    })?;
    if let Some(k) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "maxTokens" | "keepTail" | "flushToMemory"))
    {
        return Err(Error::invalid_config(format!(
            "{what}: unknown key '{k}' (known keys: maxTokens, keepTail, flushToMemory)"
        )));
    }
    let tokens = |k: &str| -> Result<Option<u64>> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(n) => n.as_u64().filter(|n| *n > 0).map(Some).ok_or_else(|| {
                Error::invalid_config(format!("{what}.{k} must be a whole number >= 1, got {n}"))
            }),
        }
    };
    let max_tokens = tokens("maxTokens")?
        .ok_or_else(|| Error::invalid_config(format!("{what}.maxTokens is required")))?;
    let flush_to_memory = match obj.get("flushToMemory") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(Error::invalid_config(format!(
                "{what}.flushToMemory must be a boolean, got {}",
                type_name(other)
            )))
        }
    };
    if !slots.declared.contains("summarize") {
        return Err(Error::invalid_config(format!(
            "{what} needs the host's summarize callback: declare \"summarize\" in callbacks"
        )));
    }
    let me = Arc::clone(slots);
    let summarize: super::compaction::Summarize = Arc::new(move |older: &[Value]| {
        match me.call("summarize", &json!({"older": older}), RunData::default())? {
            Some(Value::String(s)) => Ok(s),
            other => Err(format!(
                "the summarize callback answered {}; expected the summary text",
                other.unwrap_or(Value::Null)
            )),
        }
    });
    let count_tokens = slots.declared.contains("countTokens").then(|| {
        let me = Arc::clone(slots);
        Arc::new(move |messages: &[Value]| {
            match me.call(
                "countTokens",
                &json!({"messages": messages}),
                RunData::default(),
            ) {
                Ok(Some(n)) if n.is_u64() => n.as_u64().unwrap_or(0),
                _ => estimate(messages),
            }
        }) as super::compaction::CountTokens
    });
    Ok(Compactor {
        max_tokens,
        keep_tail: tokens("keepTail")?,
        flush_to_memory,
        summarize,
        count_tokens,
    })
}

fn req_str<'a>(a: &'a Map<String, Value>, verb: &str, key: &str) -> Result<&'a str> {
    opt_str(a, verb, key)?
        .ok_or_else(|| Error::invalid_argument(format!("{verb}: {key} is required")))
}

fn opt_str<'a>(a: &'a Map<String, Value>, verb: &str, key: &str) -> Result<Option<&'a str>> {
    match a.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Error::invalid_argument(format!(
            "{verb}: {key} must be a string, got {}",
            type_name(other)
        ))),
    }
}

/// A whole-number key of the runtime's config: a bad value is the config's
/// fault (`invalid_config`), named as the config's.
fn config_count(obj: &Map<String, Value>, key: &str) -> Result<Option<u64>> {
    count(obj, key).map_err(|e| Error::invalid_config(format!("agents config: {}", e.message)))
}

fn count(a: &Map<String, Value>, key: &str) -> Result<Option<u64>> {
    match a.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidArgument,
                format!("{key} must be a whole number ≥ 0, got {v}"),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::RunData;

    fn agents(config: Value) -> Result<Agents> {
        let generate: HostFn = Arc::new(|event: &Value, _: RunData| {
            let said = event.to_string().contains("say hi");
            Ok(Some(json!({
                "content": if said { "hi" } else { "what?" },
                "usage": {"promptTokens": 2, "completionTokens": 1}
            })))
        });
        Agents::from_json(&config, None, Some(generate))
    }

    fn config() -> Value {
        json!({"clock": "manual", "agents": {"greeter": {"does": "greets"}}})
    }

    #[test]
    fn the_verbs_run_a_handle_by_id() {
        let a = agents(config()).expect("built");
        let none = CancelToken::new();
        let id = a
            .call("spawn", &json!({"agent": "greeter"}), &none)
            .expect("spawned")["id"]
            .as_str()
            .map(str::to_string)
            .expect("an id");
        assert_eq!(id, "root/greeter.1");
        let ok = a.call("wake", &json!({"id": id, "prompt": "say hi"}), &none);
        assert_eq!(ok.expect("woken"), json!({"ok": true}));
        let r = a.call("wait", &json!({"id": id}), &none).expect("waited");
        assert_eq!(r["status"], "done", "{r}");
        assert_eq!(r["text"], "hi", "{r}");
        assert_eq!(r["totalTokens"], 3, "{r}");
        let trace = a.call("trace", &Value::Null, &none).expect("trace");
        assert!(
            trace
                .to_string()
                .contains("root/greeter.1: idle→running (wake)"),
            "{trace}"
        );
        let view = a.call("inspect", &json!({"id": id}), &none).expect("view");
        assert_eq!(view["state"], "idle", "{view}");
        assert_eq!(
            a.call("advance", &json!({"ms": 5}), &none)
                .expect("advanced"),
            json!({"ok": true})
        );
        a.call("close", &json!({"id": id}), &none).expect("closed");
        let list = a.call("list", &Value::Null, &none).expect("list");
        assert_eq!(list[0]["state"], "closed", "{list}");
    }

    #[test]
    fn a_cancelled_token_ends_a_wait_and_bad_calls_say_why() {
        let a = agents(config()).expect("built");
        let none = CancelToken::new();
        a.call("spawn", &json!({"agent": "greeter"}), &none)
            .expect("spawned");
        let cancelled = CancelToken::new();
        cancelled.cancel();
        let r = a
            .call("wait", &json!({"id": "root/greeter.1"}), &cancelled)
            .expect("waited");
        assert_eq!(r["status"], "interrupted", "{r}");
        let e = a
            .call("spawn", &json!({"agent": "ghost"}), &none)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.message.contains("ghost"), "{}", e.message);
        let e = a
            .call("wait", &json!({"id": "root/nobody.2"}), &none)
            .unwrap_err();
        assert!(e.message.contains("root/nobody.2"), "{}", e.message);
        let e = a.call("dance", &Value::Null, &none).unwrap_err();
        assert!(e.message.contains("unknown verb"), "{}", e.message);
        let e = a.call("wake", &json!([1]), &none).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
    }

    #[test]
    fn host_callbacks_fill_declared_slots_and_an_undeclared_one_is_refused() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let a = agents(
            json!({"clock": "manual", "callbacks": ["onMetric", "guardrail:greeter"],
            "agents": {"greeter": {"does": "greets",
                "completion": {"verify": "callback", "maxAttempts": 2}}}}),
        )
        .expect("built");
        assert_eq!(
            a.slot_names(),
            [
                "guardrail:greeter",
                "onBeat",
                "onClose",
                "onMetric",
                "onSpawn",
                "verify:greeter"
            ]
        );
        let e = a.set_callback("summarize", None).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(
            e.message.contains("no callback slot \"summarize\""),
            "{}",
            e.message
        );
        let (verified, metrics, spawned) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let v = Arc::clone(&verified);
        a.set_callback(
            "verify:greeter",
            Some(Arc::new(move |result: &Value, _: RunData| {
                assert!(result.get("toolCalls").is_some(), "{result}");
                Ok(Some(if v.fetch_add(1, Ordering::SeqCst) == 0 {
                    json!({"ok": false, "reason": "say hi"})
                } else {
                    json!({"ok": true})
                }))
            })),
        )
        .expect("verify");
        let m = Arc::clone(&metrics);
        a.set_callback(
            "onMetric",
            Some(Arc::new(move |_: &Value, _: RunData| {
                m.fetch_add(1, Ordering::SeqCst);
                Ok(None)
            })),
        )
        .expect("onMetric");
        let n = Arc::clone(&spawned);
        a.set_callback(
            "onSpawn",
            Some(Arc::new(move |ev: &Value, _: RunData| {
                assert_eq!(ev["id"], "root/greeter.1");
                n.fetch_add(1, Ordering::SeqCst);
                Ok(None)
            })),
        )
        .expect("onSpawn");
        let none = CancelToken::new();
        a.call("spawn", &json!({"agent": "greeter"}), &none)
            .expect("spawned");
        a.call(
            "wake",
            &json!({"id": "root/greeter.1", "prompt": "hello"}),
            &none,
        )
        .expect("woken");
        let r = a
            .call("wait", &json!({"id": "root/greeter.1"}), &none)
            .expect("waited");
        // The retry prompt names the reason, and the model then says hi.
        assert_eq!(
            (r["status"].as_str(), r["text"].as_str()),
            (Some("done"), Some("hi")),
            "{r}"
        );
        assert_eq!(verified.load(Ordering::SeqCst), 2);
        assert_eq!(spawned.load(Ordering::SeqCst), 1);
        assert!(metrics.load(Ordering::SeqCst) > 0);
    }

    #[test]
    fn an_agents_own_hook_replaces_the_runtimes_for_its_turns_only() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let a = agents(json!({"clock": "manual",
            "callbacks": ["beforeLLM", "onMetric", "beforeLLM:writer"],
            "agents": {"reader": {"does": "reads"}, "writer": {"does": "writes"}}}))
        .expect("built");
        let count = |n: &Arc<AtomicUsize>| -> HostFn {
            let n = Arc::clone(n);
            Arc::new(move |_: &Value, _: RunData| {
                n.fetch_add(1, Ordering::SeqCst);
                Ok(None)
            })
        };
        let (runtime, writer, metrics) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        a.set_callback("beforeLLM", Some(count(&runtime)))
            .expect("beforeLLM");
        a.set_callback("beforeLLM:writer", Some(count(&writer)))
            .expect("beforeLLM:writer");
        a.set_callback("onMetric", Some(count(&metrics)))
            .expect("onMetric");
        let none = CancelToken::new();
        let turn = |agent: &str, id: &str| {
            a.call("spawn", &json!({"agent": agent}), &none)
                .expect("spawned");
            a.call("wake", &json!({"id": id, "prompt": "say hi"}), &none)
                .expect("woken");
            let r = a.call("wait", &json!({"id": id}), &none).expect("waited");
            assert_eq!(r["text"], "hi", "{r}");
        };
        turn("reader", "root/reader.1");
        assert_eq!(
            (
                runtime.load(Ordering::SeqCst),
                writer.load(Ordering::SeqCst)
            ),
            (1, 0),
            "the reader has no hook of its own: the runtime's"
        );
        let seen = metrics.load(Ordering::SeqCst);
        assert!(seen > 0, "the runtime's onMetric");
        turn("writer", "root/writer.2");
        assert_eq!(
            (
                runtime.load(Ordering::SeqCst),
                writer.load(Ordering::SeqCst)
            ),
            (1, 1),
            "the writer's own beforeLLM replaces the runtime's"
        );
        // A slot the writer did not set stays the runtime's.
        assert!(metrics.load(Ordering::SeqCst) > seen, "onMetric still runs");
        for (bad, says) in [
            ("beforeLLM:ghost", "unknown agent \"ghost\""),
            ("dance:writer", "unknown slot \"dance:writer\""),
        ] {
            let Err(e) = agents(json!({"agents": {"writer": {"does": "w"}}, "callbacks": [bad]}))
            else {
                panic!("{bad}: accepted");
            };
            assert!(e.message.contains(says), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn a_verifier_that_never_answers_does_not_hold_an_interrupt() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let a = agents(
            json!({"clock": "manual", "agents": {"greeter": {"does": "greets",
            "completion": {"verify": "callback", "maxAttempts": 1}}}}),
        )
        .expect("built");
        let (entered, left) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (e, l) = (Arc::clone(&entered), Arc::clone(&left));
        a.set_callback(
            "verify:greeter",
            Some(Arc::new(move |_: &Value, _: RunData| {
                e.store(true, Ordering::SeqCst);
                // Never answers; gives up only once the turn is cancelled
                // (as a host callback sees tn_reply_cancelled).
                let stop = crate::client::callbacks::current_stop().expect("called in a turn");
                for _ in 0..20_000 {
                    if stop.cancel.is_cancelled() {
                        l.store(true, Ordering::SeqCst);
                        return Err("cancelled".into());
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Ok(Some(json!({"ok": true})))
            })),
        )
        .expect("verify");
        let none = CancelToken::new();
        let id = "root/greeter.1";
        a.call("spawn", &json!({"agent": "greeter"}), &none)
            .expect("spawned");
        a.call(
            "post",
            &json!({"id": id, "item": {"from": "root", "channel": "peer", "text": "keep"}}),
            &none,
        )
        .expect("posted");
        a.call("wake", &json!({"id": id, "prompt": "say hi"}), &none)
            .expect("woken");
        for _ in 0..20_000 {
            if entered.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(entered.load(Ordering::SeqCst), "the verifier was called");
        a.call("interrupt", &json!({"id": id}), &none)
            .expect("interrupted");
        let r = a.call("wait", &json!({"id": id}), &none).expect("waited");
        assert_eq!(r["status"], "interrupted", "{r}");
        let view = a.call("inspect", &json!({"id": id}), &none).expect("view");
        assert_eq!(
            (view["state"].as_str(), view["inbox"].as_u64()),
            (Some("idle"), Some(1))
        );
        for _ in 0..20_000 {
            if left.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(left.load(Ordering::SeqCst), "the verifier saw the cancel");
    }

    #[test]
    fn callback_and_compaction_configs_are_checked() {
        for (config, says) in [
            (
                json!({"agents": {"g": {"does": "d"}}, "callbacks": "onMetric"}),
                "expected an array",
            ),
            (
                json!({"agents": {"g": {"does": "d"}}, "callbacks": ["onDance"]}),
                "unknown slot \"onDance\"",
            ),
            (
                json!({"agents": {"g": {"does": "d"}}, "callbacks": ["waitFor:ghost"]}),
                "unknown agent \"ghost\"",
            ),
            (
                json!({"agents": {}, "compaction": {"maxTokens": 10}}),
                "summarize",
            ),
            (
                json!({"agents": {}, "callbacks": ["summarize", "beforeLLM"], "compaction": {"maxTokens": 10}}),
                "one or the other",
            ),
            (
                json!({"agents": {}, "callbacks": ["summarize"], "compaction": {"maxTokens": 0}}),
                "maxTokens must be",
            ),
            (
                json!({"agents": {}, "callbacks": ["summarize"], "compaction": {"maxTokens": 9, "tail": 1}}),
                "unknown key 'tail'",
            ),
        ] {
            let e = agents(config).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidConfig, "{}", e.message);
            assert!(e.message.contains(says), "{}: {}", says, e.message);
        }
    }

    /// `"store"` in the config: transcripts are written through to it,
    /// and dropping the runtime waits for the writes (nothing acknowledged
    /// is lost when the host frees it at once).
    #[test]
    fn the_config_s_store_has_the_transcripts_once_the_runtime_is_gone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let selector = format!("file:{}", dir.path().display());
        let mut c = config();
        c["store"] = json!(selector);
        let a = agents(c).expect("built");
        let none = CancelToken::new();
        a.call("spawn", &json!({"agent": "greeter"}), &none)
            .expect("spawned");
        let id = "root/greeter.1";
        a.call("wake", &json!({"id": id, "prompt": "say hi"}), &none)
            .expect("woken");
        assert_eq!(
            a.call("wait", &json!({"id": id}), &none).expect("waited")["text"],
            "hi"
        );
        drop(a);
        let store = crate::store::resolve(Some(&selector)).expect("store");
        let saved = store
            .get(crate::store::Kind::Conversation, id)
            .expect("get")
            .expect("saved");
        assert_eq!(
            saved[1],
            json!({"role": "assistant", "content": "hi"}),
            "{saved}"
        );
    }

    #[test]
    fn configs_are_checked() {
        let e = agents(json!({"agents": {}, "colck": "manual"})).unwrap_err();
        assert!(e.message.contains("colck"), "{}", e.message);
        let e = agents(json!({"agents": {}, "clock": "sundial"})).unwrap_err();
        assert!(e.message.contains("sundial"), "{}", e.message);
        for key in ["inboxCap", "maxConcurrentTurns", "shutdownMs"] {
            let e = agents(json!({"agents": {}, key: -1})).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidConfig, "{key}: {}", e.message);
            assert!(
                e.message
                    .starts_with(&format!("agents config: {key} must be")),
                "{}",
                e.message
            );
        }
        let e = Agents::from_json(&json!({"agents": {}}), None, None).unwrap_err();
        assert!(e.message.contains("client"), "{}", e.message);
        let e = agents(json!({"agents": {}, "store": "redis://x"})).unwrap_err();
        assert_eq!(
            e.message,
            "unknown A2A store: \"redis://x\" (expected \"memory\" or \"file:<dir>\")"
        );
        let e = agents(json!({"agents": {}, "store": 7})).unwrap_err();
        assert!(
            e.message
                .starts_with("agents config: store must be a store selector string"),
            "{}",
            e.message
        );
        let a = agents(json!({"agents": {"g": {"does": "d"}}})).expect("system clock");
        let e = a
            .call("advance", &json!({"ms": 1}), &CancelToken::new())
            .unwrap_err();
        assert!(e.message.contains("manual"), "{}", e.message);
    }
}
