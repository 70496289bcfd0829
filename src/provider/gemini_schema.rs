//! A tool's JSON Schema made Gemini-safe, on the way to Gemini only (the
//! toolkit, the `gemini` render of SPEC §4 and the served MCP gateway keep
//! the full schemas).
//!
//! Gemini's `parameters` take an OpenAPI-3.0 subset: the keys in
//! [`ALLOWED`], one `type` string, `nullable`, string `enum`s, an object at
//! the top. So:
//!
//! - same-document `$ref`s (`#/$defs/…`, `#/definitions/…`, any JSON
//!   pointer into the schema) are inlined, the `$ref` node's own
//!   `description` kept; a reference already being expanded (a cycle), one
//!   that does not resolve, one past [`MAX_DEPTH`] or past the
//!   [`MAX_NODES`] budget becomes `{type: object}` with a description
//!   saying what was cut;
//! - a reference to another document is never fetched: it is cut the same
//!   way;
//! - a type array and an `anyOf`/`oneOf` with a `null` member become
//!   `nullable`; a single remaining member is merged in; `oneOf` is read as
//!   `anyOf`; `allOf` members are merged;
//! - a type array naming several types becomes `anyOf` members, each with
//!   the keywords of its type (the array member its `items`, the object
//!   member its `properties`, …);
//! - an `anyOf` member left with nothing that constrains a value (a
//!   format-only alternative such as `{"format": "ipv4"}`, `{}`, `true`)
//!   makes the union accept whatever the node's own type accepts: the
//!   union is dropped and the node keeps its type. When the node names no
//!   type, such members are dropped and the others kept (what the model
//!   sends through them the tool accepts); a member that constrains but
//!   names no type takes the node's type;
//! - `const` becomes a one-value `enum`; an `enum` that is not all strings
//!   is dropped; a node that names no type takes one from its `enum` or
//!   `const` values: `string` for strings (Gemini's enums are strings),
//!   `integer`, `number` or `boolean` when all are of that kind;
//!   `exclusiveMinimum`/`exclusiveMaximum` numbers become
//!   `minimum`/`maximum`; a `format` Gemini does not know is dropped; an
//!   array without `items` gets string items;
//! - a node that allows any value (`{}`, a description only) is left
//!   without a type: there is nothing to say it with;
//! - every other keyword is dropped;
//! - the top level is always `type: object`.

use serde_json::{json, Map, Value};

/// The `Schema` fields Gemini accepts.
pub const ALLOWED: [&str; 22] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// The types Gemini knows (JSON Schema's names, lower case).
const TYPES: [&str; 6] = ["string", "number", "integer", "boolean", "array", "object"];

/// Schemas nested deeper than this are cut.
pub const MAX_DEPTH: usize = 48;

/// The most schema nodes one cleaned schema may hold; references met past
/// it are cut (inlining shared definitions can otherwise grow without
/// bound).
pub const MAX_NODES: usize = 50_000;

struct Cleaner<'a> {
    root: &'a Value,
    /// The references being expanded, innermost last.
    expanding: Vec<&'a str>,
    nodes: usize,
}

/// The cut a reference becomes.
fn cut(why: String, description: Option<&Value>) -> Value {
    let text = match description.and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d} ({why})"),
        _ => why,
    };
    json!({"type": "object", "description": text})
}

/// Resolves a same-document JSON pointer (`#/a/b`, with `~0`, `~1` and
/// percent escapes) in `root`.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    let decoded = percent_decode(pointer)?;
    let mut at = root;
    for token in decoded.strip_prefix('/')?.split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        at = match at {
            Value::Object(m) => m.get(&token)?,
            Value::Array(a) => a.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// What [`flat_keys`] learnt of a node beyond the keys it copied.
struct Flat {
    nullable: bool,
    /// The types of a type array naming more than one (one is copied as
    /// `type`); [`split_types`] makes them `anyOf` members.
    types: Vec<&'static str>,
}

/// The keywords of a schema node that hold no schema, copied into `out` as
/// Gemini takes them. Kept out of [`Cleaner::node`] so that the recursive
/// frame stays small (the cleaner may run on a host thread with a small
/// stack).
#[inline(never)]
fn flat_keys(s: &Map<String, Value>, out: &mut Map<String, Value>) -> Flat {
    let mut nullable = s.get("nullable").and_then(Value::as_bool) == Some(true);
    let mut types = Vec::new();
    // type: a string, or an array of them.
    match s.get("type") {
        Some(Value::String(t)) if t == "null" => nullable = true,
        Some(Value::String(t)) if TYPES.contains(&t.as_str()) => {
            out.insert("type".into(), json!(t));
        }
        Some(Value::Array(list)) => {
            let named: Vec<&'static str> = list
                .iter()
                .filter_map(Value::as_str)
                .filter_map(|t| TYPES.iter().copied().find(|known| *known == t))
                .collect();
            if list.iter().any(|t| t.as_str() == Some("null")) {
                nullable = true;
            }
            match named.as_slice() {
                [] => {}
                [one] => {
                    out.insert("type".into(), json!(one));
                }
                many => types = many.to_vec(),
            }
        }
        _ => {}
    }
    for key in ["title", "description", "pattern", "example", "default"] {
        if let Some(x) = s.get(key) {
            out.insert(key.into(), x.clone());
        }
    }
    for key in [
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minProperties",
        "maxProperties",
    ] {
        if let Some(n) = s.get(key).filter(|n| n.is_u64()) {
            out.insert(key.into(), n.clone());
        }
    }
    for (key, exclusive) in [
        ("minimum", "exclusiveMinimum"),
        ("maximum", "exclusiveMaximum"),
    ] {
        match (s.get(key), s.get(exclusive)) {
            (Some(n), _) if n.is_number() => {
                out.insert(key.into(), n.clone());
            }
            (_, Some(n)) if n.is_number() => {
                out.insert(key.into(), n.clone());
            }
            _ => {}
        }
    }
    if let Some(f) = s.get("format").and_then(Value::as_str) {
        if matches!(
            f,
            "enum" | "date-time" | "int32" | "int64" | "float" | "double"
        ) {
            out.insert("format".into(), json!(f));
        }
    }
    let strings = |list: &[Value]| list.iter().all(Value::is_string);
    match (s.get("enum"), s.get("const")) {
        (Some(Value::Array(e)), _) if !e.is_empty() && strings(e) => {
            out.insert("enum".into(), Value::Array(e.clone()));
        }
        (_, Some(c @ Value::String(_))) => {
            out.insert("enum".into(), json!([c]));
        }
        _ => {}
    }
    Flat { nullable, types }
}

impl<'a> Cleaner<'a> {
    fn node(&mut self, v: &'a Value, depth: usize) -> Value {
        self.nodes += 1;
        if depth > MAX_DEPTH {
            return cut(
                format!("nested deeper than {MAX_DEPTH} levels; cut"),
                v.get("description"),
            );
        }
        let Value::Object(s) = v else {
            // `true`, `false` or junk: anything goes.
            return Value::Object(Map::new());
        };
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            return self.reference(r, s, depth);
        }
        let mut out = Map::new();
        let flat = flat_keys(s, &mut out);
        self.properties(s, &mut out, depth);
        self.items(s, &mut out, depth);
        let mut nullable = flat.nullable | self.alternatives(s, &mut out, depth);
        if !flat.types.is_empty() && !out.contains_key("anyOf") {
            split_types(&mut out, &flat.types);
        }
        if !out.contains_key("type") && !out.contains_key("anyOf") {
            nullable |= infer_from_values(s, &mut out);
        }
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
        Value::Object(out)
    }

    /// `properties` (each cleaned) and the `required` names among them.
    #[inline(never)]
    fn properties(
        &mut self,
        s: &'a Map<String, Value>,
        out: &mut Map<String, Value>,
        depth: usize,
    ) {
        let Some(Value::Object(props)) = s.get("properties") else {
            return;
        };
        let mut cleaned = Map::new();
        for (name, p) in props {
            let c = self.node(p, depth + 1);
            cleaned.insert(name.clone(), c);
        }
        if let Some(Value::Array(req)) = s.get("required") {
            let req: Vec<Value> = req
                .iter()
                .filter(|r| r.as_str().is_some_and(|r| cleaned.contains_key(r)))
                .cloned()
                .collect();
            if !req.is_empty() {
                out.insert("required".into(), Value::Array(req));
            }
        }
        out.insert("properties".into(), Value::Object(cleaned));
        out.entry("type").or_insert_with(|| json!("object"));
    }

    /// `items` (a tuple read as its first member); string items for an
    /// array that names none.
    #[inline(never)]
    fn items(&mut self, s: &'a Map<String, Value>, out: &mut Map<String, Value>, depth: usize) {
        let items = match s.get("items") {
            Some(Value::Array(tuple)) => tuple.first(),
            other => other,
        };
        if let Some(items) = items {
            let c = self.node(items, depth + 1);
            out.insert("items".into(), c);
        }
        if out.get("type").and_then(Value::as_str) == Some("array") && !out.contains_key("items") {
            out.insert("items".into(), json!({"type": "string"}));
        }
    }

    /// `anyOf`/`oneOf` (null members read as nullable, one member merged
    /// in) and `allOf` (merged); gives whether a null member was seen.
    #[inline(never)]
    fn alternatives(
        &mut self,
        s: &'a Map<String, Value>,
        out: &mut Map<String, Value>,
        depth: usize,
    ) -> bool {
        let mut nullable = false;
        let alternatives = s
            .get("anyOf")
            .or_else(|| s.get("oneOf"))
            .and_then(Value::as_array);
        if let Some(list) = alternatives {
            let parent_type = out.get("type").cloned();
            let mut members = Vec::new();
            let mut unconstrained = false;
            for m in list {
                if m.get("type").and_then(Value::as_str) == Some("null") && m.get("$ref").is_none()
                {
                    nullable = true;
                    continue;
                }
                let mut c = self.node(m, depth + 1);
                if c.get("nullable") == Some(&Value::Bool(true)) {
                    nullable = true;
                }
                let Value::Object(cm) = &mut c else { continue };
                if !cm.contains_key("type") && !cm.contains_key("anyOf") {
                    if cm.get("nullable") == Some(&Value::Bool(true))
                        && cm.keys().all(|k| ANNOTATIONS.contains(&k.as_str()))
                    {
                        // Only null (`{"type": ["null"]}`): read above.
                        continue;
                    }
                    if cm.keys().all(|k| ANNOTATIONS.contains(&k.as_str())) {
                        // Nothing left that constrains a value (a
                        // format-only alternative, `{}`, `true`).
                        unconstrained = true;
                        continue;
                    }
                    if let Some(t) = &parent_type {
                        // JSON Schema applies the parent's type to every
                        // member anyway; Gemini wants it said.
                        cm.insert("type".into(), t.clone());
                    }
                }
                members.push(c);
            }
            if unconstrained && parent_type.is_some() {
                // The union accepts whatever the parent's own type does.
                members.clear();
            }
            match members.len() {
                0 => {}
                1 => merge_into(out, members.pop().unwrap_or_default()),
                _ => {
                    out.insert("anyOf".into(), Value::Array(members));
                }
            }
        }
        if let Some(Value::Array(all)) = s.get("allOf") {
            for m in all {
                let c = self.node(m, depth + 1);
                merge_into(out, c);
            }
        }
        nullable
    }

    fn reference(&mut self, r: &'a str, s: &'a Map<String, Value>, depth: usize) -> Value {
        let description = s.get("description");
        if !r.starts_with('#') {
            return cut(
                format!("a reference to another document, {r}, not followed"),
                description,
            );
        }
        if self.expanding.contains(&r) {
            return cut(format!("a recursive reference to {r}; cut"), description);
        }
        if self.nodes > MAX_NODES {
            return cut(
                format!("the schema grew past {MAX_NODES} nodes; {r} cut"),
                description,
            );
        }
        let Some(target) = resolve(self.root, r) else {
            return cut(format!("{r} does not resolve"), description);
        };
        self.expanding.push(r);
        let mut inlined = self.node(target, depth + 1);
        self.expanding.pop();
        if let (Some(d), Value::Object(m)) = (description, &mut inlined) {
            m.insert("description".into(), d.clone());
        }
        if let (Some(d), Value::Object(m)) = (s.get("default"), &mut inlined) {
            m.insert("default".into(), d.clone());
        }
        inlined
    }
}

/// The keys of a cleaned node that annotate and constrain nothing.
const ANNOTATIONS: [&str; 5] = ["title", "description", "default", "example", "nullable"];

/// A type array's types (more than one) as `anyOf` members, each taking
/// the keywords of the cleaned node that apply to its type (an array's
/// `items`, an object's `properties`, a string's `enum`, …); what applies
/// to any type (`description`, `default`, `nullable`) stays on the node.
#[inline(never)]
fn split_types(out: &mut Map<String, Value>, types: &[&str]) {
    const ARRAY: [&str; 3] = ["items", "minItems", "maxItems"];
    const OBJECT: [&str; 5] = [
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "propertyOrdering",
    ];
    const STRING: [&str; 4] = ["enum", "pattern", "minLength", "maxLength"];
    const NUMBER: [&str; 2] = ["minimum", "maximum"];
    // A `properties` alone makes [`Cleaner::properties`] say `object`.
    out.remove("type");
    let format = out.remove("format");
    let members = types
        .iter()
        .map(|t| {
            let mut m = Map::new();
            m.insert("type".into(), json!(t));
            let keys: &[&str] = match *t {
                "array" => &ARRAY,
                "object" => &OBJECT,
                "string" => &STRING,
                "number" | "integer" => &NUMBER,
                _ => &[],
            };
            for k in keys {
                if let Some(v) = out.get(*k) {
                    m.insert((*k).into(), v.clone());
                }
            }
            let numeric = matches!(*t, "number" | "integer");
            match format.as_ref().and_then(Value::as_str) {
                Some(f @ ("date-time" | "enum")) if *t == "string" => {
                    m.insert("format".into(), json!(f));
                }
                Some(f @ ("int32" | "int64" | "float" | "double")) if numeric => {
                    m.insert("format".into(), json!(f));
                }
                _ => {}
            }
            if *t == "array" && !m.contains_key("items") {
                m.insert("items".into(), json!({"type": "string"}));
            }
            Value::Object(m)
        })
        .collect();
    for k in ARRAY.iter().chain(&OBJECT).chain(&STRING).chain(&NUMBER) {
        out.remove(*k);
    }
    out.insert("anyOf".into(), Value::Array(members));
}

/// A type for a node that names none, from the values its `enum` or
/// `const` allows: `string` when they are strings (Gemini's enums are
/// strings), and then the enum; `integer`, `number` or `boolean` when they
/// are all of that kind (the enum dropped, as on a node that names its
/// type). A `null` among them makes the node nullable. When the values are
/// of mixed kinds and some are strings, the node takes the strings only:
/// whatever the model picks from them the tool accepts. Gives whether a
/// `null` was seen.
#[inline(never)]
fn infer_from_values(s: &Map<String, Value>, out: &mut Map<String, Value>) -> bool {
    let values: Vec<&Value> = match (s.get("enum"), s.get("const")) {
        (Some(Value::Array(e)), _) => e.iter().collect(),
        (_, Some(c)) => vec![c],
        _ => return false,
    };
    let nullable = values.iter().any(|v| v.is_null());
    let values: Vec<&Value> = values.into_iter().filter(|v| !v.is_null()).collect();
    let strings: Vec<Value> = values
        .iter()
        .filter(|v| v.is_string())
        .map(|v| (*v).clone())
        .collect();
    let kind = if !strings.is_empty() {
        out.insert("enum".into(), Value::Array(strings));
        "string"
    } else if !values.is_empty() && values.iter().all(|v| v.is_boolean()) {
        "boolean"
    } else if !values.is_empty() && values.iter().all(|v| v.is_i64() || v.is_u64()) {
        "integer"
    } else if !values.is_empty() && values.iter().all(|v| v.is_number()) {
        "number"
    } else {
        return nullable;
    };
    out.insert("type".into(), json!(kind));
    nullable
}

/// Merges a cleaned schema into `out`: properties and required joined,
/// other keys kept where `out` has none.
fn merge_into(out: &mut Map<String, Value>, other: Value) {
    let Value::Object(other) = other else { return };
    for (k, v) in other {
        match (k.as_str(), out.get_mut(&k), v) {
            ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                for (name, p) in theirs {
                    mine.entry(name).or_insert(p);
                }
            }
            ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                for r in theirs {
                    if !mine.contains(&r) {
                        mine.push(r);
                    }
                }
            }
            (_, Some(_), _) => {}
            (_, None, v) => {
                out.insert(k, v);
            }
        }
    }
}

/// A tool's parameters schema as Gemini takes it (see the module docs).
/// Pure: nothing is fetched, the input is not changed.
pub fn clean(schema: &Value) -> Value {
    let mut c = Cleaner {
        root: schema,
        expanding: Vec::new(),
        nodes: 0,
    };
    let mut out = match c.node(schema, 0) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    match out.get("type").and_then(Value::as_str) {
        Some("object") => {}
        None if !out.contains_key("anyOf") => {
            out.insert("type".into(), json!("object"));
        }
        _ => {
            // Not an object at the top: Gemini takes only an object there.
            let mut top = Map::new();
            top.insert("type".into(), json!("object"));
            if let Some(d) = out.get("description") {
                top.insert("description".into(), d.clone());
            }
            top.insert("properties".into(), Value::Object(Map::new()));
            out = top;
        }
    }
    out.remove("nullable");
    Value::Object(out)
}

/// Whether every key of a cleaned schema, at every level, is one Gemini
/// accepts (a `properties` map's own keys are names, not keywords).
pub fn only_allowed_keys(schema: &Value) -> bool {
    let Value::Object(m) = schema else {
        return true;
    };
    m.iter().all(|(k, v)| {
        ALLOWED.contains(&k.as_str())
            && match k.as_str() {
                "properties" => v
                    .as_object()
                    .is_some_and(|p| p.values().all(only_allowed_keys)),
                "items" => only_allowed_keys(v),
                "anyOf" => v
                    .as_array()
                    .is_some_and(|a| a.iter().all(only_allowed_keys)),
                "type" => v.is_string(),
                "enum" => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
                _ => true,
            }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_are_inlined_and_cycles_cut() {
        let schema = json!({
            "type": "object",
            "$defs": {
                "node": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "child": {"$ref": "#/$defs/node", "description": "the next"}
                }},
                "pt": {"type": "object", "properties": {"x": {"type": "number"}}, "additionalProperties": false}
            },
            "properties": {
                "tree": {"$ref": "#/$defs/node"},
                "at": {"$ref": "#/$defs/pt"},
                "far": {"$ref": "http://127.0.0.1:9/schema.json"}
            },
            "required": ["tree", "gone"]
        });
        let c = clean(&schema);
        assert!(only_allowed_keys(&c), "{c}");
        assert_eq!(c["required"], json!(["tree"]));
        assert_eq!(
            c["properties"]["at"],
            json!({"type": "object", "properties": {"x": {"type": "number"}}})
        );
        let child = &c["properties"]["tree"]["properties"]["child"];
        assert_eq!(child["type"], "object");
        assert!(
            child["description"]
                .as_str()
                .unwrap()
                .starts_with("the next (a recursive reference"),
            "{child}"
        );
        assert!(c["properties"]["far"]["description"]
            .as_str()
            .unwrap()
            .contains("not followed"));
    }

    #[test]
    fn nullables_consts_and_top_level() {
        let c = clean(&json!({"properties": {
            "a": {"type": ["string", "null"]},
            "b": {"anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "null"}]},
            "c": {"const": "x"},
            "d": {"type": "array"},
            "e": {"enum": [1, 2], "type": "integer", "format": "uri-reference"}
        }}));
        assert_eq!(
            c,
            json!({"properties": {
                "a": {"type": "string", "nullable": true},
                "b": {"type": "integer", "minimum": 0, "nullable": true},
                "c": {"type": "string", "enum": ["x"]},
                "d": {"type": "array", "items": {"type": "string"}},
                "e": {"type": "integer"}
            }, "type": "object"})
        );
        assert_eq!(
            clean(&json!({"type": "string", "description": "s"})),
            json!({"type": "object", "description": "s", "properties": {}})
        );
    }

    /// The cleaned schema of one property `p`, checked idempotent.
    fn prop(p: Value) -> Value {
        let c = clean(&json!({"type": "object", "properties": {"p": p}}));
        assert_eq!(clean(&c), c, "idempotent");
        assert!(only_allowed_keys(&c), "{c}");
        c["properties"]["p"].clone()
    }

    #[test]
    fn type_arrays_become_members_that_carry_their_own_keywords() {
        // Before: `items` stayed on the node and the array member had none,
        // so a second cleaning gave that member string items.
        assert_eq!(
            prop(
                json!({"type": ["string", "array"], "items": {"type": "integer"},
                "minLength": 2, "description": "one or many"})
            ),
            json!({"description": "one or many", "anyOf": [
                {"type": "string", "minLength": 2},
                {"type": "array", "items": {"type": "integer"}}
            ]})
        );
        assert_eq!(
            prop(json!({"type": ["object", "null", "array"],
                "properties": {"a": {"type": "string"}}, "required": ["a"]})),
            json!({"nullable": true, "anyOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"type": "array", "items": {"type": "string"}}
            ]})
        );
    }

    #[test]
    fn format_only_alternatives_leave_the_parents_type() {
        assert_eq!(
            prop(json!({"type": "string", "description": "an address",
                "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]})),
            json!({"type": "string", "description": "an address"})
        );
        assert_eq!(
            prop(json!({"type": "string",
                "oneOf": [{"format": "ipv4"}, {"type": "null"}, true]})),
            json!({"type": "string", "nullable": true})
        );
        // Members that constrain but name no type take the parent's.
        assert_eq!(
            prop(json!({"type": "string",
                "anyOf": [{"minLength": 7}, {"pattern": "^[0-9a-f:]+$"}]})),
            json!({"type": "string", "anyOf": [
                {"type": "string", "minLength": 7},
                {"type": "string", "pattern": "^[0-9a-f:]+$"}
            ]})
        );
    }

    #[test]
    fn an_untyped_union_keeps_its_members_that_constrain() {
        assert_eq!(
            prop(json!({"anyOf": [{}, {"type": "integer"}, {"type": "string"}]})),
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}]})
        );
        assert_eq!(
            prop(json!({"anyOf": [{"description": "anything"}, {"type": "integer"}]})),
            json!({"type": "integer"})
        );
        // Any value or null: nothing to name a type with, left as is.
        assert_eq!(
            prop(json!({"anyOf": [{}, {"type": "null"}], "description": "d"})),
            json!({"description": "d", "nullable": true})
        );
    }

    #[test]
    fn enums_without_a_type_take_one_from_their_values() {
        assert_eq!(
            prop(json!({"enum": ["a", "b"]})),
            json!({"type": "string", "enum": ["a", "b"]})
        );
        assert_eq!(prop(json!({"enum": [1, 2]})), json!({"type": "integer"}));
        assert_eq!(prop(json!({"enum": [1.5, 2]})), json!({"type": "number"}));
        assert_eq!(prop(json!({"const": true})), json!({"type": "boolean"}));
        assert_eq!(
            prop(json!({"enum": ["a", 1, null]})),
            json!({"type": "string", "enum": ["a"], "nullable": true})
        );
        // Nothing to name a type with: left as is.
        assert_eq!(prop(json!({"enum": [1, true]})), json!({}));
        assert_eq!(prop(json!({"enum": [{"a": 1}]})), json!({}));
    }
}
