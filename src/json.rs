//! Small helpers for reading loosely typed JSON the way every port does.

use serde_json::Value;

/// The JSON type name used in error messages ("expected an array, got a string").
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value as the host language's `str` would print it: strings verbatim,
/// null as "", numbers and booleans in their JSON spelling, containers as
/// compact JSON.
pub fn display_string(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Tool-call arguments in either wire form: an object, or a JSON string that
/// holds an object. Anything else (a malformed string, an array, a number) is
/// passed through unchanged except that a string which does not decode to an
/// object becomes `{}`, as the translate helpers do.
pub fn normalize_args(args: Value) -> Value {
    match args {
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(v @ Value::Object(_)) => v,
            _ => Value::Object(Default::default()),
        },
        Value::Null => Value::Object(Default::default()),
        other => other,
    }
}
