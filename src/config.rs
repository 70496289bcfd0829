//! The toolkit config JSON (CONTRACT.md §3): parsed, validated, and every bad
//! key named.

use crate::builtin::{self, Selection};
use crate::error::{Error, Result};
use crate::json::type_name;
use crate::skill;
use serde_json::{Map, Value};

/// Every top-level key the toolkit config accepts.
pub const KEYS: [&str; 12] = [
    "skillsDir",
    "skills",
    "skillsFilter",
    "skillSampleLimit",
    "disableSkills",
    "builtins",
    "mcpConfig",
    "httpTools",
    "relayTools",
    "disableTools",
    "maxPartBytes",
    "agents",
];

/// A validated toolkit config.
#[derive(Debug, Clone, Default)]
pub struct ToolkitConfig {
    /// Present when `skillsDir` or `skills` was given: the `skill` tool is
    /// registered exactly then.
    pub skills: Option<skill::Options>,
    /// The `builtins` value as given (validated), when present.
    pub builtins: Option<Value>,
    pub mcp_config: Option<Value>,
    pub http_tools: Vec<Value>,
    /// The declaration-only tools (SPEC §10 addendum `relayTools`).
    pub relay_tools: Vec<Value>,
    pub disable_tools: Vec<String>,
    /// The largest content part (SPEC §1B, decoded bytes) a tool may hand
    /// back; `None` is no limit.
    pub max_part_bytes: Option<u64>,
    /// The remote A2A agents (SPEC §7A), enabled ones only.
    pub agents: Vec<crate::a2a_tool::Agent>,
}

fn wrong_type(key: &str, expected: &str, got: &Value) -> Error {
    Error::invalid_config(format!(
        "{key}: expected {expected}, got {}",
        type_name(got)
    ))
}

fn string_list(key: &str, v: &Value) -> Result<Vec<String>> {
    let Value::Array(items) = v else {
        return Err(wrong_type(key, "an array of strings", v));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => Ok(s.clone()),
            other => Err(wrong_type(&format!("{key}[{i}]"), "a string", other)),
        })
        .collect()
}

fn bool_map(key: &str, v: &Value) -> Result<Vec<(String, bool)>> {
    let Value::Object(m) = v else {
        return Err(wrong_type(key, "an object of booleans", v));
    };
    m.iter()
        .map(|(k, b)| match b {
            Value::Bool(b) => Ok((k.clone(), *b)),
            other => Err(wrong_type(&format!("{key}.{k}"), "a boolean", other)),
        })
        .collect()
}

impl ToolkitConfig {
    /// Parses the config text handed to `tn_toolkit_build`.
    pub fn from_json_text(text: &str) -> Result<ToolkitConfig> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| Error::invalid_json("toolkit config", &e))?;
        ToolkitConfig::from_value(&v)
    }

    pub fn from_value(v: &Value) -> Result<ToolkitConfig> {
        let Value::Object(obj) = v else {
            return Err(Error::invalid_config(format!(
                "toolkit config: expected an object, got {}",
                type_name(v)
            )));
        };
        if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(Error::invalid_config(format!(
                "unknown key '{k}' in toolkit config (known keys: {})",
                KEYS.join(", ")
            )));
        }
        // A key set to null reads as absent.
        let get = |k: &str| obj.get(k).filter(|v| !v.is_null());

        let mut cfg = ToolkitConfig::default();
        let dirs = match get("skillsDir") {
            None => None,
            Some(Value::String(s)) => Some(vec![s.clone()]),
            Some(v @ Value::Array(_)) => Some(string_list("skillsDir", v)?),
            Some(v) => {
                return Err(wrong_type(
                    "skillsDir",
                    "a string or an array of strings",
                    v,
                ))
            }
        };
        let defs = match get("skills") {
            None => None,
            Some(Value::Array(items)) => {
                for (i, d) in items.iter().enumerate() {
                    if !d.is_object() {
                        return Err(wrong_type(&format!("skills[{i}]"), "an object", d));
                    }
                }
                Some(items.clone())
            }
            Some(v) => return Err(wrong_type("skills", "an array of skill objects", v)),
        };
        let mut filter: Vec<(String, bool)> = match get("disableSkills") {
            None => Vec::new(),
            Some(v) => string_list("disableSkills", v)?
                .into_iter()
                .map(|n| (n, false))
                .collect(),
        };
        if let Some(v) = get("skillsFilter") {
            filter.extend(bool_map("skillsFilter", v)?);
        }
        let sample_limit = match get("skillSampleLimit") {
            None => 0,
            Some(v) => match v.as_i64() {
                Some(n) if n >= -1 => n,
                _ => {
                    return Err(Error::invalid_config(format!(
                        "skillSampleLimit: expected an integer >= -1, got {v}"
                    )))
                }
            },
        };
        if dirs.is_some() || defs.is_some() {
            cfg.skills = Some(skill::Options {
                dirs: dirs.unwrap_or_default(),
                defs: defs.unwrap_or_default(),
                filter,
                sample_limit,
            });
        }
        if let Some(v) = get("builtins") {
            builtin_selection(v)?;
            cfg.builtins = Some(v.clone());
        }
        if let Some(v) = get("mcpConfig") {
            if !(v.is_object() || v.is_string()) {
                return Err(wrong_type(
                    "mcpConfig",
                    "an object, a path to an mcp.json file, or JSON text",
                    v,
                ));
            }
            cfg.mcp_config = Some(v.clone());
        }
        if let Some(v) = get("httpTools") {
            let Value::Array(items) = v else {
                return Err(wrong_type("httpTools", "an array of HTTP tool objects", v));
            };
            cfg.http_tools = items.clone();
        }
        if let Some(v) = get("relayTools") {
            let Value::Array(items) = v else {
                return Err(wrong_type(
                    "relayTools",
                    "an array of relay tool objects {name, description?, inputSchema?}",
                    v,
                ));
            };
            cfg.relay_tools = items.clone();
        }
        if let Some(v) = get("disableTools") {
            cfg.disable_tools = string_list("disableTools", v)?;
        }
        if let Some(v) = get("maxPartBytes") {
            match v.as_u64() {
                Some(n) => cfg.max_part_bytes = Some(n),
                None => return Err(wrong_type("maxPartBytes", "a non-negative integer", v)),
            }
        }
        if let Some(v) = get("agents") {
            cfg.agents = crate::a2a_tool::parse_agents_config(v)?;
        }
        Ok(cfg)
    }
}

/// SPEC §0.11: `true` · `false` · `{"disabled":true}` · `{"enabled":false}` ·
/// `{"tools":{"bash":false}}`. Global off short-circuits the per-tool map,
/// which is applied on the all-on baseline (only `false` removes a tool).
pub fn builtin_selection(v: &Value) -> Result<Selection> {
    match v {
        Value::Null | Value::Bool(true) => Ok(Selection::default()),
        Value::Bool(false) => Ok(Selection {
            source_on: false,
            ..Selection::default()
        }),
        Value::Object(m) => selection_from_object(m),
        other => Err(wrong_type(
            "builtins",
            "a boolean or an object {disabled, enabled, tools}",
            other,
        )),
    }
}

fn selection_from_object(m: &Map<String, Value>) -> Result<Selection> {
    let flag = |k: &str| -> Result<Option<bool>> {
        match m.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(wrong_type(&format!("builtins.{k}"), "a boolean", other)),
        }
    };
    let disabled = flag("disabled")?.unwrap_or(false);
    let enabled = flag("enabled")?.unwrap_or(true);
    let tools = match m.get("tools") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => bool_map("builtins.tools", v)?,
    };
    let shell = builtin_shell(m.get("shell"))?;
    let base_dir = match m.get("baseDir") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(wrong_type(
                "builtins.baseDir",
                "a directory path (a string)",
                other,
            ))
        }
    };
    let confine = flag("confineToBaseDir")?.unwrap_or(false);
    if confine && base_dir.is_none() {
        return Err(Error::invalid_config(
            "builtins.confineToBaseDir is true but builtins.baseDir is empty: \
             confinement needs the directory to confine to",
        ));
    }
    let boundary = builtin::Boundary { base_dir, confine };
    if disabled || !enabled {
        return Ok(Selection {
            source_on: false,
            boundary,
            ..Selection::default()
        });
    }
    let off = tools
        .into_iter()
        .filter(|(name, on)| !on && builtin::NAMES.contains(&name.as_str()))
        .map(|(name, _)| name)
        .collect();
    Ok(Selection {
        source_on: true,
        off,
        boundary,
        shell,
    })
}

/// `builtins.shell` (ADR 0034): an array of strings, bash's argv prefix
/// (`["/bin/bash", "-c"]`: the command is appended as one more argument).
/// Absent, null or `[]` ⇒ detected, as upstream treats an empty value.
fn builtin_shell(v: Option<&Value>) -> Result<Option<Vec<String>>> {
    let expected = "an array of strings, the argv prefix bash runs a command with \
                    (e.g. [\"/bin/bash\", \"-c\"])";
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) if !s.is_empty() => Ok(s.clone()),
                other => Err(wrong_type(
                    &format!("builtins.shell[{i}]"),
                    "a non-empty string",
                    other,
                )),
            })
            .collect::<Result<Vec<_>>>()
            .map(|argv| (!argv.is_empty()).then_some(argv)),
        Some(other) => Err(wrong_type("builtins.shell", expected, other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn err(text: &str) -> Error {
        ToolkitConfig::from_json_text(text).expect_err("config should be refused")
    }

    #[test]
    fn unknown_key_is_named() {
        let e = err(r#"{"skillDir": "x"}"#);
        assert_eq!(e.code, ErrorCode::InvalidConfig);
        assert!(e.message.contains("'skillDir'"), "{}", e.message);
    }

    #[test]
    fn wrong_types_name_key_and_expected_type() {
        let e = err(r#"{"skillsDir": 5}"#);
        assert!(
            e.message
                .starts_with("skillsDir: expected a string or an array"),
            "{}",
            e.message
        );
        let e = err(r#"{"disableTools": ["a", 1]}"#);
        assert_eq!(
            e.message,
            "disableTools[1]: expected a string, got a number"
        );
        let e = err(r#"{"builtins": {"tools": {"bash": "no"}}}"#);
        assert_eq!(
            e.message,
            "builtins.tools.bash: expected a boolean, got a string"
        );
        let e = err(r#"{"skillSampleLimit": -2}"#);
        assert!(e
            .message
            .starts_with("skillSampleLimit: expected an integer >= -1"));
    }

    #[test]
    fn malformed_json_is_invalid_json() {
        assert_eq!(err("{").code, ErrorCode::InvalidJson);
        assert_eq!(err("[]").code, ErrorCode::InvalidConfig);
    }

    #[test]
    fn disable_skills_fold_in_before_the_filter() {
        let c = ToolkitConfig::from_json_text(
            r#"{"skillsDir":"d","disableSkills":["a"],"skillsFilter":{"a":true}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let opts = c.skills.unwrap_or_default();
        assert_eq!(
            opts.filter,
            vec![("a".to_string(), false), ("a".to_string(), true)]
        );
    }

    #[test]
    fn builtin_toggles() {
        let sel = |t: &str| builtin_selection(&serde_json::from_str(t).unwrap_or(Value::Null));
        assert!(!sel("false").unwrap_or_default().source_on);
        assert!(
            !sel(r#"{"disabled":true,"enabled":true}"#)
                .unwrap_or_default()
                .source_on
        );
        assert!(
            !sel(r#"{"enabled":false,"tools":{"bash":true}}"#)
                .unwrap_or_default()
                .source_on
        );
        let s = sel(r#"{"tools":{"bash":false,"read":true,"nope":false}}"#).unwrap_or_default();
        assert!(s.source_on);
        assert_eq!(s.off, vec!["bash".to_string()]);
    }

    #[test]
    fn builtins_shell_is_an_argv_prefix_and_anything_else_is_named() {
        let sel = |t: &str| builtin_selection(&serde_json::from_str(t).unwrap_or(Value::Null));
        let s = sel(r#"{"shell":["/bin/bash","-c"]}"#).unwrap_or_default();
        assert_eq!(
            s.shell,
            Some(vec!["/bin/bash".to_string(), "-c".to_string()])
        );
        assert_eq!(sel(r#"{"shell":[]}"#).unwrap_or_default().shell, None);
        let e = err(r#"{"builtins":{"shell":"/bin/bash -c"}}"#);
        assert_eq!(e.code, ErrorCode::InvalidConfig);
        assert!(
            e.message
                .starts_with("builtins.shell: expected an array of strings"),
            "{}",
            e.message
        );
        let e = err(r#"{"builtins":{"shell":["/bin/bash", 3]}}"#);
        assert!(
            e.message
                .starts_with("builtins.shell[1]: expected a non-empty string"),
            "{}",
            e.message
        );
    }
}
