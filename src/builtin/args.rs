//! Reading tool-call arguments the way every port reads them: a missing field
//! or a non-object `args` reads as absent, a string field takes any scalar in
//! its printed form, and a number field given anything but a number is a
//! clear error naming the field.

use crate::json::{display_string, type_name};
use crate::tool::ToolResult;
use serde_json::Value;

/// The field `key` of `args`, or `None` when absent, null, or when `args` is
/// not an object at all.
pub fn field<'a>(args: &'a Value, key: &str) -> Option<&'a Value> {
    match args.as_object()?.get(key) {
        None | Some(Value::Null) => None,
        Some(v) => Some(v),
    }
}

/// A string field: absent reads as "", any other value in its printed form
/// (`42` -> "42"), as the recorded port stringifies it.
pub fn string(args: &Value, key: &str) -> String {
    field(args, key).map(display_string).unwrap_or_default()
}

/// A string field that may be absent.
pub fn opt_string(args: &Value, key: &str) -> Option<String> {
    field(args, key).map(display_string)
}

/// A number field: `Ok(None)` when absent, an error result naming the field
/// and the expected type when it holds anything but a number.
pub fn number(tool: &str, args: &Value, key: &str) -> Result<Option<f64>, ToolResult> {
    match field(args, key) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(ToolResult::error(format!(
            "{tool}: {key} must be a number, got {}",
            type_name(other)
        ))),
    }
}

/// A number field as a whole count, truncated toward zero the way the
/// recorded port converts it (`2.9` -> 2); `default` when absent.
pub fn integer(tool: &str, args: &Value, key: &str, default: i64) -> Result<i64, ToolResult> {
    // `as` saturates at the i64 range, which is the intent for huge inputs.
    Ok(number(tool, args, key)?.map_or(default, |n| n.trunc() as i64))
}

/// A boolean flag that is on only when it is exactly `true` (the string
/// "true" does not count).
pub fn is_true(args: &Value, key: &str) -> bool {
    matches!(field(args, key), Some(Value::Bool(true)))
}

/// A list field: an array's items, a string's characters (as the recorded
/// port iterates them), `[]` when absent; anything else is an error result
/// naming the field.
pub fn list(tool: &str, args: &Value, key: &str) -> Result<Vec<Value>, ToolResult> {
    match field(args, key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(Value::String(s)) => Ok(s.chars().map(|c| Value::String(c.into())).collect()),
        Some(other) => Err(ToolResult::error(format!(
            "{tool}: {key} must be an array, got {}",
            type_name(other)
        ))),
    }
}
