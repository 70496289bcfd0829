//! Agent definitions as data (SPEC §7D): a name, what it does, a soul, a
//! model (`"inherit"` takes the runtime's), tools by name from a toolkit,
//! a team (the targets of its `task` tool) and a budget — read from JSON and
//! checked as a whole, so a registry that names an unknown tool or agent,
//! holds a team cycle, or a budget field that is negative or not a number
//! fails with an error naming what is wrong.

use super::harness::{Completion, Guardrail};
use crate::client::{Callbacks, HostFn};
use crate::error::{Error, Result};
use crate::json::type_name;
use crate::toolkit::Toolkit;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The fields of a budget, in the canonical `limit` names of 0.21.
pub const BUDGET_FIELDS: [&str; 7] = [
    "maxTurns",
    "maxTokens",
    "maxToolCalls",
    "maxWallMs",
    "maxChildren",
    "maxConcurrent",
    "maxDepth",
];

/// Per-handle defaults: `maxTurns 6`, `maxConcurrent 8`, `maxDepth 3`.
pub const DEFAULT_MAX_TURNS: u64 = 6;
pub const DEFAULT_MAX_CONCURRENT: u64 = 8;
pub const DEFAULT_MAX_DEPTH: u64 = 3;

/// A budget; `None` is unset (unlimited, or the default where there is one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    pub max_turns: Option<u64>,
    pub max_tokens: Option<u64>,
    pub max_tool_calls: Option<u64>,
    pub max_wall_ms: Option<u64>,
    pub max_children: Option<u64>,
    pub max_concurrent: Option<u64>,
    pub max_depth: Option<u64>,
}

impl Budget {
    fn field(&mut self, name: &str) -> Option<&mut Option<u64>> {
        Some(match name {
            "maxTurns" => &mut self.max_turns,
            "maxTokens" => &mut self.max_tokens,
            "maxToolCalls" => &mut self.max_tool_calls,
            "maxWallMs" => &mut self.max_wall_ms,
            "maxChildren" => &mut self.max_children,
            "maxConcurrent" => &mut self.max_concurrent,
            "maxDepth" => &mut self.max_depth,
            _ => return None,
        })
    }

    /// Reads `{maxTurns?, maxTokens?, …}`: each field a whole number of 0 or
    /// more (or null); `what` names the budget in errors.
    pub fn from_json(v: &Value, what: &str) -> Result<Budget> {
        let obj = v.as_object().ok_or_else(|| {
            Error::invalid_config(format!(
                "{what} must be a JSON object {{{}}}, got {}",
                BUDGET_FIELDS.join(", "),
                type_name(v)
            ))
        })?;
        let mut b = Budget::default();
        for (k, val) in obj {
            let slot = b.field(k).ok_or_else(|| {
                Error::invalid_config(format!(
                    "{what}: unknown field '{k}' (known fields: {})",
                    BUDGET_FIELDS.join(", ")
                ))
            })?;
            *slot = match val {
                Value::Null => None,
                Value::Number(n) => match n.as_u64() {
                    Some(n) => Some(n),
                    None => {
                        let why = if n.as_f64().is_some_and(|f| f < 0.0) {
                            "must not be negative"
                        } else {
                            "must be a whole number"
                        };
                        return Err(Error::invalid_config(format!("{what}.{k} {why}, got {n}")));
                    }
                },
                other => {
                    return Err(Error::invalid_config(format!(
                        "{what}.{k} must be a number, got {}",
                        type_name(other)
                    )))
                }
            };
        }
        Ok(b)
    }

    /// The fields set, by their canonical names: what [`Budget::from_json`]
    /// reads back.
    pub fn to_json(&self) -> Value {
        let mut copy = *self;
        let mut obj = Map::new();
        for name in BUDGET_FIELDS {
            if let Some(Some(n)) = copy.field(name).map(|f| *f) {
                obj.insert(name.to_string(), Value::from(n));
            }
        }
        Value::Object(obj)
    }

    /// This budget with every field `over` sets replacing its own.
    pub fn merged(self, over: &Budget) -> Budget {
        Budget {
            max_turns: over.max_turns.or(self.max_turns),
            max_tokens: over.max_tokens.or(self.max_tokens),
            max_tool_calls: over.max_tool_calls.or(self.max_tool_calls),
            max_wall_ms: over.max_wall_ms.or(self.max_wall_ms),
            max_children: over.max_children.or(self.max_children),
            max_concurrent: over.max_concurrent.or(self.max_concurrent),
            max_depth: over.max_depth.or(self.max_depth),
        }
    }

    pub fn turns(&self) -> u64 {
        self.max_turns.unwrap_or(DEFAULT_MAX_TURNS)
    }

    pub fn concurrent(&self) -> u64 {
        self.max_concurrent.unwrap_or(DEFAULT_MAX_CONCURRENT)
    }

    pub fn depth(&self) -> u64 {
        self.max_depth.unwrap_or(DEFAULT_MAX_DEPTH)
    }
}

/// A host function a definition carries: a §10 interpreter (`waitFor`).
pub type WaitFor = HostFn;

/// One agent definition.
#[derive(Clone, Default)]
pub struct AgentDef {
    pub name: String,
    /// What it does: its tool description and its line in a team's `task`.
    pub does: String,
    /// The system prompt of its runs.
    pub soul: String,
    /// `None` or `"inherit"`: the runtime's model.
    pub model: Option<String>,
    /// Tool names, looked up in the runtime's toolkit (builtins never added).
    pub tools: Vec<String>,
    /// The agents its `task` tool may start.
    pub team: Vec<String>,
    pub budget: Budget,
    /// A §10 interpreter: answers the Requests of its own subtree that no
    /// nearer interpreter answers.
    pub wait_for: Option<WaitFor>,
    /// The completion gate of its turns (contract §7): JSON
    /// `completion: {verify: "allTodosDone", maxAttempts}`.
    pub completion: Option<Completion>,
    /// Guardrails on its tool calls, the first deny wins (host functions:
    /// not in JSON).
    pub guardrails: Vec<Guardrail>,
    /// Its own §8 hooks (`beforeLLM`, `afterLLM`, `beforeTool`,
    /// `afterTool`, `onError`, `onMetric`): each slot set here replaces the
    /// runtime's for this agent's turns (def over runtime, per slot, never
    /// merged); a slot left empty is the runtime's. Its guardrails run
    /// before the `beforeTool` so chosen. Host functions: not in JSON.
    pub hooks: Callbacks,
}

impl std::fmt::Debug for AgentDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentDef")
            .field("name", &self.name)
            .field("model", &self.model)
            .field("tools", &self.tools)
            .field("team", &self.team)
            .field("budget", &self.budget)
            .field("waitFor", &self.wait_for.is_some())
            .field("completion", &self.completion)
            .field("guardrails", &self.guardrails.len())
            .field("hooks", &self.hooks)
            .finish()
    }
}

/// The JSON shape of a definition.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Spec {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    does: String,
    #[serde(default)]
    soul: Option<String>,
    #[serde(default)]
    soul_file: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    team: Vec<String>,
    #[serde(default)]
    budget: Option<Value>,
    #[serde(default)]
    completion: Option<Value>,
}

/// Largest soul file read (the bootstrap cap of §7E).
pub const MAX_SOUL_FILE_BYTES: u64 = 2_097_152;

impl AgentDef {
    /// Reads one definition; `name` is its registry key (a `name` field,
    /// when present, must agree). A `soulFile` is read now.
    pub fn from_json(name: &str, v: &Value) -> Result<AgentDef> {
        let what = format!("agent \"{name}\"");
        if !v.is_object() {
            return Err(Error::invalid_config(format!(
                "{what} must be a JSON object {{does, soul?, soulFile?, model?, tools?, team?, budget?, completion?}}, got {}",
                type_name(v)
            )));
        }
        // Read in place: `from_value` would take a copy of the definition.
        let spec =
            Spec::deserialize(v).map_err(|e| Error::invalid_config(format!("{what}: {e}")))?;
        if let Some(n) = &spec.name {
            if n != name {
                return Err(Error::invalid_config(format!(
                    "{what}: its name field says \"{n}\""
                )));
            }
        }
        let soul = match (spec.soul, spec.soul_file) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid_config(format!(
                    "{what}: give soul or soulFile, not both"
                )))
            }
            (Some(s), None) => s,
            (None, Some(path)) => read_soul(&what, &path)?,
            (None, None) => String::new(),
        };
        let budget = match &spec.budget {
            None | Some(Value::Null) => Budget::default(),
            Some(b) => Budget::from_json(b, &format!("{what}.budget"))?,
        };
        let completion = match &spec.completion {
            None | Some(Value::Null) => None,
            Some(c) => Some(Completion::from_json(c, &format!("{what}.completion"))?),
        };
        Ok(AgentDef {
            name: name.to_string(),
            does: spec.does,
            soul,
            model: spec.model.filter(|m| m != "inherit"),
            tools: spec.tools,
            team: spec.team,
            budget,
            wait_for: None,
            completion,
            guardrails: Vec::new(),
            hooks: Callbacks::default(),
        })
    }
}

fn read_soul(what: &str, path: &str) -> Result<String> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::invalid_config(format!("{what}: soulFile {path}: {e}")))?;
    if meta.len() > MAX_SOUL_FILE_BYTES {
        return Err(Error::invalid_config(format!(
            "{what}: soulFile {path} is {} bytes, over the {MAX_SOUL_FILE_BYTES}-byte cap",
            meta.len()
        )));
    }
    std::fs::read_to_string(path)
        .map_err(|e| Error::invalid_config(format!("{what}: soulFile {path}: {e}")))
}

/// The agents a runtime knows, by name (iterated in name order).
#[derive(Debug, Clone, Default)]
pub struct Registry {
    defs: BTreeMap<String, Arc<AgentDef>>,
}

impl Registry {
    /// A registry of `defs`, checked against `toolkit` (see [`Registry::check`]).
    pub fn new(defs: Vec<AgentDef>, toolkit: Option<&Toolkit>) -> Result<Registry> {
        let mut map = BTreeMap::new();
        for d in defs {
            if d.name.is_empty() {
                return Err(Error::invalid_config("an agent needs a non-empty name"));
            }
            if map.contains_key(&d.name) {
                return Err(Error::invalid_config(format!(
                    "agent \"{}\" is defined twice",
                    d.name
                )));
            }
            map.insert(d.name.clone(), Arc::new(d));
        }
        let r = Registry { defs: map };
        r.check(toolkit)?;
        Ok(r)
    }

    /// Reads `{name: {does, soul?, …}, …}`.
    pub fn from_json(v: &Value, toolkit: Option<&Toolkit>) -> Result<Registry> {
        let obj: &Map<String, Value> = v.as_object().ok_or_else(|| {
            Error::invalid_config(format!(
                "registry must be a JSON object {{name: definition}}, got {}",
                type_name(v)
            ))
        })?;
        let defs = obj
            .iter()
            .map(|(k, d)| AgentDef::from_json(k, d))
            .collect::<Result<Vec<_>>>()?;
        Registry::new(defs, toolkit)
    }

    /// Every tool named exists in `toolkit` (none may be named without
    /// one), every team member is defined, `task` is not a tool name of an
    /// agent with a team, and no team reaches back to itself.
    pub fn check(&self, toolkit: Option<&Toolkit>) -> Result<()> {
        let known_tools: BTreeSet<String> = toolkit
            .map(|t| t.tool_names().into_iter().collect())
            .unwrap_or_default();
        for d in self.defs.values() {
            for t in &d.tools {
                if !known_tools.contains(t) {
                    let known: Vec<&str> = known_tools.iter().map(String::as_str).collect();
                    return Err(Error::invalid_config(format!(
                        "agent \"{}\": unknown tool \"{t}\" (known: {})",
                        d.name,
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    )));
                }
            }
            for m in &d.team {
                if !self.defs.contains_key(m) {
                    return Err(Error::invalid_config(format!(
                        "agent \"{}\": team names unknown agent \"{m}\" (known: {})",
                        d.name,
                        self.names().join(", ")
                    )));
                }
            }
        }
        for name in self.defs.keys() {
            let mut path = vec![name.clone()];
            self.no_cycle(&mut path)?;
        }
        Ok(())
    }

    fn no_cycle(&self, path: &mut Vec<String>) -> Result<()> {
        let Some(last) = path.last().and_then(|n| self.defs.get(n)) else {
            return Ok(());
        };
        for m in &last.team {
            if let Some(at) = path.iter().position(|p| p == m) {
                let mut cycle: Vec<&str> = path[at..].iter().map(String::as_str).collect();
                cycle.push(m);
                return Err(Error::invalid_config(format!(
                    "team cycle: {}",
                    cycle.join(" → ")
                )));
            }
            path.push(m.clone());
            self.no_cycle(path)?;
            path.pop();
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Arc<AgentDef>> {
        self.defs.get(name)
    }

    /// Names in sorted order.
    pub fn names(&self) -> Vec<&str> {
        self.defs.keys().map(String::as_str).collect()
    }

    /// A defined agent, to change before the runtime is built (its host
    /// functions: `waitFor`, guardrails, the completion gate's verifier).
    pub fn def_mut(&mut self, name: &str) -> Option<&mut AgentDef> {
        self.defs.get_mut(name).map(Arc::make_mut)
    }

    /// Sets the `waitFor` interpreter of a defined agent.
    pub fn set_wait_for(&mut self, name: &str, f: Option<WaitFor>) -> Result<()> {
        let d = self
            .defs
            .get_mut(name)
            .ok_or_else(|| Error::invalid_argument(format!("unknown agent \"{name}\"")))?;
        Arc::make_mut(d).wait_for = f;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> String {
        Registry::from_json(&v, None)
            .expect_err("an invalid registry")
            .to_string()
    }

    #[test]
    fn a_registry_reads_names_models_and_budgets() {
        let r = Registry::from_json(
            &json!({"b": {"does": "x", "model": "inherit", "budget": {"maxTurns": 2}},
                    "a": {"does": "y", "model": "m", "team": ["b"]}}),
            None,
        )
        .expect("registry");
        assert_eq!(r.names(), vec!["a", "b"]);
        assert_eq!(r.get("b").expect("b").model, None);
        assert_eq!(r.get("a").expect("a").model.as_deref(), Some("m"));
        assert_eq!(r.get("b").expect("b").budget.turns(), 2);
        assert_eq!(r.get("a").expect("a").budget.turns(), DEFAULT_MAX_TURNS);
    }

    #[test]
    fn bad_registries_say_what_is_wrong() {
        assert!(err(json!({"a": {"tools": ["nope"]}})).contains("unknown tool \"nope\""));
        assert!(err(json!({"a": {"team": ["ghost"]}})).contains("unknown agent \"ghost\""));
        let cycle = err(json!({"a": {"team": ["b"]}, "b": {"team": ["a"]}}));
        assert!(cycle.contains("team cycle: a → b → a"), "{cycle}");
        assert!(err(json!({"a": {"team": ["a"]}})).contains("team cycle: a → a"));
        let neg = err(json!({"a": {"budget": {"maxTokens": -1}}}));
        assert!(
            neg.contains("budget.maxTokens must not be negative"),
            "{neg}"
        );
        let nan = err(json!({"a": {"budget": {"maxTurns": "3"}}}));
        assert!(nan.contains("budget.maxTurns must be a number"), "{nan}");
        let frac = err(json!({"a": {"budget": {"maxTurns": 1.5}}}));
        assert!(frac.contains("must be a whole number"), "{frac}");
        assert!(err(json!({"a": {"budget": {"maxMoney": 1}}})).contains("unknown field 'maxMoney'"));
        assert!(err(json!({"a": {"color": "red"}})).contains("unknown field `color`"));
        assert!(err(json!({"a": {"soulFile": "/nonexistent/soul.md"}})).contains("soulFile"));
    }

    #[test]
    fn an_override_budget_wins_field_by_field() {
        let base = Budget {
            max_tokens: Some(10),
            max_turns: Some(4),
            ..Budget::default()
        };
        let over = Budget {
            max_tokens: Some(500),
            ..Budget::default()
        };
        let m = base.merged(&over);
        assert_eq!((m.max_tokens, m.max_turns), (Some(500), Some(4)));
    }
}
