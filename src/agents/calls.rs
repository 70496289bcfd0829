//! The runtime as JSON (contract §4.12): a runtime built from one config
//! object, and its verbs as `(verb, args) → JSON` calls addressed by handle
//! id. What the C boundary (and any other host) drives; it holds no
//! pointers and no `unsafe`.

use super::clock::{Clock, ManualClock};
use super::def::{Budget, Registry};
use super::inbox::InboxItem;
use super::runtime::{Llm, Runtime, RuntimeOptions};
use crate::cancel::CancelToken;
use crate::client::HostFn;
use crate::error::{Error, ErrorCode, Result};
use crate::json::type_name;
use crate::toolkit::Toolkit;
use crate::translate::ClientConfig;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The keys a runtime config takes.
const CONFIG_KEYS: &str = "agents, client, clock, inboxCap, maxConcurrentTurns, shutdownMs";

/// The verbs [`Agents::call`] answers.
pub const VERBS: &str =
    "spawn, post, wake, wait, interrupt, close, resume, list, inspect, trace, transcript, advance";

/// A runtime built from JSON, with the manual clock it may run on.
pub struct Agents {
    rt: Runtime,
    clock: Option<Arc<ManualClock>>,
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
    /// "manual"|"system", inboxCap?, maxConcurrentTurns?, shutdownMs?}`.
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
        let registry = Registry::from_json(defs, toolkit.as_deref())?;
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
        Ok(Agents {
            rt: Runtime::new(opts)?,
            clock,
        })
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
            other => Err(Error::invalid_argument(format!(
                "unknown verb \"{other}\" (verbs: {VERBS})"
            ))),
        }
    }

    /// Force-closes every handle (the host is letting go of the runtime):
    /// running turns are cancelled, waits end.
    pub fn shutdown(&self) {
        for id in self.rt.list().into_iter().rev().map(|v| v.id) {
            let _ = self.rt.close(&id, true, Some("runtime freed"));
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
        let a = agents(json!({"agents": {"g": {"does": "d"}}})).expect("system clock");
        let e = a
            .call("advance", &json!({"ms": 1}), &CancelToken::new())
            .unwrap_err();
        assert!(e.message.contains("manual"), "{}", e.message);
    }
}
