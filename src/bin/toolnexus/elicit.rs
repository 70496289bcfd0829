//! The CLI's answer to an MCP server's question (elicitation): asked at the
//! terminal, field by field, or declined.
//!
//! The library hands a question to the build's `waitFor` as a Request
//! (`{id, kind: "input", prompt, data: {schema}}` for a form,
//! `{id, kind: "authorization", prompt, url}` for a URL) and sends the
//! server what the Answer says (docs/mcp.md, "MCP elicitation"). A field
//! left empty is left out, so the library fills in the schema's default
//! (SEP-1034); an enum field (SEP-1330: `enum` with `enumNames`, `oneOf`
//! of `const`/`title`, and their multi-select `array` forms) takes a listed
//! value or its number.

use serde_json::{json, Map, Value};
use std::io::{BufRead, Write};

/// The Answer that declines.
pub fn declined() -> Value {
    json!({"ok": false, "reason": "declined"})
}

/// The Answer that cancels (the input ended, or the user said so).
fn cancelled() -> Value {
    json!({"ok": false, "reason": "cancelled"})
}

/// Asks `request` on `out`, reading the answers line by line from `input`.
/// Never fails: an input that ends cancels, and a write that fails is
/// ignored (the answer still comes from what is read).
pub fn ask(request: &Value, input: &mut dyn BufRead, out: &mut dyn Write) -> Value {
    let prompt = request["prompt"].as_str().unwrap_or_default();
    if request["kind"] == "authorization" {
        let url = request["url"].as_str().unwrap_or_default();
        let _ = write!(
            out,
            "An MCP server asks you to open a link: {prompt}\n  {url}\n\
             Press Enter once done, d to decline, c to cancel: "
        );
        let _ = out.flush();
        return match read_line(input).as_deref().map(str::trim) {
            None => cancelled(),
            Some(a) if starts(a, 'd') => declined(),
            Some(a) if starts(a, 'c') => cancelled(),
            Some(_) => json!({"ok": true}),
        };
    }
    let _ = writeln!(out, "An MCP server asks: {prompt}");
    let schema = &request["data"]["schema"];
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut data = Map::new();
    for (name, field) in schema["properties"].as_object().into_iter().flatten() {
        let must = required.contains(&name.as_str()) && field.get("default").is_none();
        let choices = choices(field);
        let _ = write!(out, "  {}", field["title"].as_str().unwrap_or(name));
        if let Some(d) = field["description"].as_str() {
            let _ = write!(out, " ({d})");
        }
        for (i, (_, label)) in choices.iter().enumerate() {
            let _ = write!(out, "\n    {}. {label}", i + 1);
        }
        loop {
            let kind = kind_of(field);
            let _ = write!(out, "\n  {kind}");
            if let Some(d) = field.get("default") {
                let _ = write!(out, ", default {d}");
            }
            let _ = write!(out, "{}: ", if must { ", required" } else { "" });
            let _ = out.flush();
            let Some(line) = read_line(input) else {
                let _ = writeln!(out);
                return cancelled();
            };
            let line = line.trim();
            if line.is_empty() {
                if must {
                    let _ = write!(out, "  an answer is required");
                    continue;
                }
                break;
            }
            match read_value(field, &choices, line) {
                Ok(v) => {
                    data.insert(name.clone(), v);
                    break;
                }
                Err(why) => {
                    let _ = write!(out, "  {why}");
                }
            }
        }
    }
    let _ = write!(out, "Send this answer? [Y]es, d to decline, c to cancel: ");
    let _ = out.flush();
    match read_line(input).as_deref().map(str::trim) {
        None => cancelled(),
        Some(a) if starts(a, 'd') => declined(),
        Some(a) if starts(a, 'c') => cancelled(),
        Some(_) => json!({"ok": true, "data": Value::Object(data)}),
    }
}

fn starts(answer: &str, c: char) -> bool {
    answer
        .chars()
        .next()
        .is_some_and(|f| f.eq_ignore_ascii_case(&c))
}

/// One line without its end; `None` at the end of the input (or an error).
fn read_line(input: &mut dyn BufRead) -> Option<String> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
    }
}

/// What a field takes, in words.
fn kind_of(field: &Value) -> &'static str {
    match field["type"].as_str() {
        Some("integer") => "a whole number",
        Some("number") => "a number",
        Some("boolean") => "yes or no",
        Some("array") => "one or more of the numbers or values, separated by commas",
        _ if !choices(field).is_empty() => "a number or a value",
        _ => "text",
    }
}

/// An enum field's choices as `(value, label)`: single-select `enum`
/// (with `enumNames`) or `oneOf` of `{const, title}`, and the multi-select
/// forms of those under `items` (`enum`, `anyOf`).
fn choices(field: &Value) -> Vec<(Value, String)> {
    let of = |f: &Value| -> Vec<(Value, String)> {
        if let Some(values) = f["enum"].as_array() {
            let names = f["enumNames"].as_array();
            return values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| display(v));
                    (v.clone(), label)
                })
                .collect();
        }
        let options = f["oneOf"].as_array().or_else(|| f["anyOf"].as_array());
        options
            .into_iter()
            .flatten()
            .filter_map(|o| {
                let v = o.get("const")?;
                let label = o["title"]
                    .as_str()
                    .map_or_else(|| display(v), str::to_string);
                Some((v.clone(), label))
            })
            .collect()
    };
    if field["type"] == "array" {
        of(&field["items"])
    } else {
        of(field)
    }
}

fn display(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// The value `line` gives a field, or why it does not.
fn read_value(field: &Value, choices: &[(Value, String)], line: &str) -> Result<Value, String> {
    let pick = |word: &str| -> Result<Value, String> {
        if let Ok(n) = word.parse::<usize>() {
            if let Some((v, _)) = n.checked_sub(1).and_then(|i| choices.get(i)) {
                return Ok(v.clone());
            }
        }
        choices
            .iter()
            .find(|(v, label)| display(v) == word || label == word)
            .map(|(v, _)| v.clone())
            .ok_or_else(|| format!("not one of the {} choices", choices.len()))
    };
    match field["type"].as_str() {
        Some("array") => line
            .split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(|w| {
                if choices.is_empty() {
                    Ok(json!(w))
                } else {
                    pick(w)
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        _ if !choices.is_empty() => pick(line),
        Some("integer") => line
            .parse::<i64>()
            .map(|n| json!(n))
            .map_err(|_| "not a whole number".into()),
        Some("number") => line
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(|n| json!(n))
            .ok_or_else(|| "not a number".into()),
        Some("boolean") => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(json!(true)),
            "n" | "no" | "false" => Ok(json!(false)),
            _ => Err("answer yes or no".into()),
        },
        _ => Ok(json!(line)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(request: &Value, typed: &str) -> (Value, String) {
        let mut out = Vec::new();
        let a = ask(request, &mut typed.as_bytes(), &mut out);
        (a, String::from_utf8_lossy(&out).into_owned())
    }

    fn form(schema: Value) -> Value {
        json!({"id": "q1", "kind": "input", "prompt": "Who are you?", "data": {"schema": schema}})
    }

    /// Each field asked in turn, its answer read by its type; an empty
    /// line leaves a field with a default out (the library fills it in).
    #[test]
    fn a_form_is_answered_field_by_field() {
        let q = form(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name"},
                "age": {"type": "integer", "default": 0},
                "ratio": {"type": "number"},
                "subscribe": {"type": "boolean"},
            },
            "required": ["name"],
        }));
        let (a, shown) = answer(&q, "Ada\n\n0.5\ny\n\n");
        assert_eq!(
            a,
            json!({"ok": true, "data": {"name": "Ada", "ratio": 0.5, "subscribe": true}})
        );
        assert!(
            shown.contains("An MCP server asks: Who are you?"),
            "{shown}"
        );
        assert!(shown.contains("Name"), "{shown}");
        assert!(shown.contains("default 0"), "{shown}");
    }

    /// A required field without a default is asked again when left empty;
    /// a value of the wrong type is asked again, saying why.
    #[test]
    fn a_required_or_mistyped_field_is_asked_again() {
        let q = form(json!({
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name"],
        }));
        let (a, shown) = answer(&q, "\nAda\nold\n42\nyes\n");
        assert_eq!(a, json!({"ok": true, "data": {"name": "Ada", "age": 42}}));
        assert!(shown.contains("an answer is required"), "{shown}");
        assert!(shown.contains("not a whole number"), "{shown}");
    }

    /// SEP-1330: single and multiple choice, by number or by value, with
    /// their titles shown.
    #[test]
    fn enum_fields_take_a_number_or_a_value() {
        let q = form(json!({"properties": {
            "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "tags": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]}},
            "plain": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}},
        }}));
        let (a, shown) = answer(&q, "2\nSmall\n1, b\nz\ny\n\n");
        assert_eq!(
            a,
            json!({"ok": true, "data": {"color": "g", "size": "s", "tags": ["a", "b"], "plain": ["y"]}})
        );
        assert!(
            shown.contains("1. Red") && shown.contains("2. Large"),
            "{shown}"
        );
        assert!(shown.contains("not one of the 2 choices"), "{shown}");
    }

    /// The last question sends, declines or cancels; input that ends
    /// cancels.
    #[test]
    fn the_user_declines_cancels_or_runs_out_of_input() {
        let q = form(json!({"properties": {"name": {"type": "string"}}}));
        assert_eq!(answer(&q, "Ada\nd\n").0, declined());
        assert_eq!(answer(&q, "Ada\nc\n").0, cancelled());
        assert_eq!(answer(&q, "Ada\n").0, cancelled());
        assert_eq!(answer(&q, "").0, cancelled());
    }

    /// URL mode: the link shown, Enter accepts, d declines.
    #[test]
    fn a_link_is_shown_and_acknowledged() {
        let q = json!({"id": "q2", "kind": "authorization", "prompt": "Log in", "url": "https://auth.example/x"});
        let (a, shown) = answer(&q, "\n");
        assert_eq!(a, json!({"ok": true}));
        assert!(
            shown.contains("https://auth.example/x") && shown.contains("Log in"),
            "{shown}"
        );
        assert_eq!(answer(&q, "d\n").0, declined());
        assert_eq!(answer(&q, "").0, cancelled());
    }
}
