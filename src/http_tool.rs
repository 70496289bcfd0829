//! HTTP endpoints as tools (SPEC §7, source `http`).
//!
//! One `httpTools` entry of the toolkit config becomes one [`Tool`]. Calling it
//! fills the URL's `{placeholders}` from the arguments, sends the declared
//! `query` arguments as the query string and the remaining arguments as the
//! body, and turns the response into a [`ToolResult`]:
//!
//! - 2xx: the body (per `resultMode`) with metadata `{"status": n}`;
//! - any other status: isError `HTTP <status>: <body>`, metadata `{"status": n}`;
//! - no response at all: isError `HTTP transport failure: <kind>` with metadata
//!   `{"error": kind}`, kind one of `timeout`, `dns`, `connect-failed`, `transport`,
//!   or `too-large` for a body past the 64 MiB cap.
//!
//! Header values may name environment variables (`${TOKEN}`); they are expanded
//! at every call and the expanded value goes into the request and nowhere else:
//! not into a result, an error, a log line or a panic message. A server that
//! echoes it back finds it replaced by `[redacted]` in the result
//! ([`crate::env::Secrets`]).

use crate::env::Secrets;
use crate::error::Error;
use crate::json::{display_string, type_name};
use crate::net::transport::{self, Failure, Outcome, Prepared};
use crate::tool::{ExecContext, Execute, Source, Stop, Tool, ToolResult};
use http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use http::Method;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// The keys an `httpTools` entry may carry (CONTRACT.md §3, SPEC §7).
const KEYS: [&str; 10] = [
    "name",
    "description",
    "method",
    "url",
    "headers",
    "query",
    "body",
    "inputSchema",
    "timeout",
    "resultMode",
];

/// SPEC §7: a request that has not finished after 30 s is a timeout.
const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// Everything outside RFC 3986's unreserved set (`A-Z a-z 0-9 - _ . ~`) is
/// percent-encoded, byte by byte of the UTF-8 encoding.
const ENCODE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Builds the tool declared by `httpTools[index]`.
///
/// The tool name is used verbatim (HTTP tool names are not sanitized), the
/// description defaults to `""` and the input schema to `{"type":"object"}`.
/// Every problem with the declaration is an `invalid_config` error that names
/// the entry and the key; header values are never quoted in an error, since
/// they may hold credentials.
pub fn http_tool(index: usize, decl: &Value) -> Result<Tool, Error> {
    let at = format!("httpTools[{index}]");
    let obj = decl.as_object().ok_or_else(|| {
        Error::invalid_config(format!("{at} must be an object, got {}", type_name(decl)))
    })?;
    if let Some(key) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(Error::invalid_config(format!(
            "{at} has an unknown key '{key}' (known keys: {})",
            KEYS.join(", ")
        )));
    }
    let field = Field { at: &at, obj };

    let name = field.required_str("name")?;
    if name.is_empty() {
        return Err(field.error("name", "must not be empty"));
    }
    let description = field.optional_str("description")?.unwrap_or_default();
    let method = parse_method(&field)?;
    let url = parse_url(&field)?;
    let (headers, declares_content_type) = parse_headers(&field)?;
    let query = parse_query(&field)?;
    let body = match field.optional_str("body")?.as_deref() {
        None | Some("json") => BodyMode::Json,
        Some("form") => BodyMode::Form,
        Some("raw") => BodyMode::Raw,
        Some(other) => {
            return Err(field.error(
                "body",
                &format!("must be one of json, form, raw; got '{other}'"),
            ))
        }
    };
    let input_schema = match obj.get("inputSchema") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(other) => {
            return Err(field.error(
                "inputSchema",
                &format!("must be a JSON Schema object, got {}", type_name(other)),
            ))
        }
    };
    let timeout_ms = match obj.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_MS,
        Some(v) => match v.as_u64() {
            Some(ms) if ms > 0 => ms,
            _ => {
                return Err(field.error(
                    "timeout",
                    &format!("must be a positive whole number of milliseconds, got {v}"),
                ))
            }
        },
    };
    let result_mode = match field.optional_str("resultMode")?.as_deref() {
        None | Some("text") => ResultMode::Text,
        Some("json") => ResultMode::Json,
        Some("status+text") => ResultMode::StatusText,
        Some(other) => {
            return Err(field.error(
                "resultMode",
                &format!("must be one of text, json, status+text; got '{other}'"),
            ))
        }
    };

    let exec = HttpTool {
        name: name.clone(),
        method,
        url,
        headers,
        declares_content_type,
        query,
        body,
        timeout: Duration::from_millis(timeout_ms),
        result_mode,
    };
    Ok(Tool::new(
        name,
        description,
        input_schema,
        Source::Http,
        Arc::new(exec),
    ))
}

/// `s` percent-encoded as UTF-8, RFC 3986 unreserved characters kept.
fn encode(s: &str) -> String {
    utf8_percent_encode(s, ENCODE).to_string()
}

// ---------------------------------------------------------------------------
// the declaration
// ---------------------------------------------------------------------------

/// Reads keys of one entry, naming `httpTools[i].key` in every error.
struct Field<'a> {
    at: &'a str,
    obj: &'a Map<String, Value>,
}

impl Field<'_> {
    fn error(&self, key: &str, problem: &str) -> Error {
        Error::invalid_config(format!("{}.{key} {problem}", self.at))
    }

    fn required_str(&self, key: &str) -> Result<String, Error> {
        match self.obj.get(key) {
            None => Err(self.error(key, "is required")),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => {
                Err(self.error(key, &format!("must be a string, got {}", type_name(other))))
            }
        }
    }

    fn optional_str(&self, key: &str) -> Result<Option<String>, Error> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => {
                Err(self.error(key, &format!("must be a string, got {}", type_name(other))))
            }
        }
    }
}

fn parse_method(field: &Field<'_>) -> Result<Method, Error> {
    let Some(raw) = field.optional_str("method")? else {
        return Ok(Method::GET);
    };
    let upper = raw.to_ascii_uppercase();
    // Method::from_bytes accepts any RFC 9110 token; an empty string is not one.
    Method::from_bytes(upper.as_bytes())
        .map_err(|_| field.error("method", &format!("'{raw}' is not an HTTP method")))
}

fn parse_url(field: &Field<'_>) -> Result<UrlTemplate, Error> {
    let raw = field.required_str("url")?;
    let template = UrlTemplate::parse(&raw);
    // Check the shape with every placeholder filled by a harmless value, so a
    // template like `https://{region}.example.com/` is accepted.
    let sample = template.fill_with(|_| "x".to_string());
    match url::Url::parse(&sample) {
        Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.has_host() => Ok(template),
        _ => Err(field.error(
            "url",
            &format!("must be an absolute http:// or https:// URL, got '{raw}'"),
        )),
    }
}

fn parse_headers(field: &Field<'_>) -> Result<(Vec<(HeaderName, String)>, bool), Error> {
    let map = match field.obj.get("headers") {
        None | Some(Value::Null) => return Ok((Vec::new(), false)),
        Some(Value::Object(m)) => m,
        Some(other) => {
            return Err(field.error(
                "headers",
                &format!(
                    "must be an object of header names to values, got {}",
                    type_name(other)
                ),
            ))
        }
    };
    let mut headers: Vec<(HeaderName, String)> = Vec::with_capacity(map.len());
    for (name, value) in map {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| field.error("headers", &format!("has an invalid header name '{name}'")))?;
        if headers.iter().any(|(h, _)| *h == header) {
            return Err(field.error(
                "headers",
                &format!("names the header '{header}' twice (header names are case-insensitive)"),
            ));
        }
        // The value is never quoted in these messages: it may be a credential.
        let Value::String(template) = value else {
            return Err(field.error(
                &format!("headers.{name}"),
                &format!("must be a string, got {}", type_name(value)),
            ));
        };
        if template.chars().any(|c| c.is_control() && c != '\t') {
            return Err(field.error(
                &format!("headers.{name}"),
                "contains a control character (such as a newline), which an HTTP header value cannot hold",
            ));
        }
        headers.push((header, template.clone()));
    }
    let declares_content_type = headers.iter().any(|(h, _)| *h == CONTENT_TYPE);
    Ok((headers, declares_content_type))
}

fn parse_query(field: &Field<'_>) -> Result<Vec<String>, Error> {
    match field.obj.get("query") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(field.error(
                    &format!("query[{i}]"),
                    &format!(
                        "must be an argument name (a string), got {}",
                        type_name(other)
                    ),
                )),
            })
            .collect(),
        Some(other) => Err(field.error(
            "query",
            &format!(
                "must be an array of argument names, got {}",
                type_name(other)
            ),
        )),
    }
}

// ---------------------------------------------------------------------------
// the URL template
// ---------------------------------------------------------------------------

/// A URL with `{name}` placeholders, name made of RFC 3986 unreserved
/// characters. Any other `{` is literal text.
#[derive(Debug)]
struct UrlTemplate {
    parts: Vec<UrlPart>,
    /// Each placeholder name once, in order of first appearance.
    names: Vec<String>,
}

#[derive(Debug)]
enum UrlPart {
    Text(String),
    Placeholder(String),
}

impl UrlTemplate {
    fn parse(raw: &str) -> UrlTemplate {
        let is_name_char =
            |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~');
        let mut parts = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let mut text = String::new();
        let mut rest = raw;
        while let Some(open) = rest.find('{') {
            let after = &rest[open + 1..];
            let name_len = after
                .find(|c: char| !is_name_char(c))
                .unwrap_or(after.len());
            if name_len > 0 && after[name_len..].starts_with('}') {
                text.push_str(&rest[..open]);
                if !text.is_empty() {
                    parts.push(UrlPart::Text(std::mem::take(&mut text)));
                }
                let name = &after[..name_len];
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
                parts.push(UrlPart::Placeholder(name.to_string()));
                rest = &after[name_len + 1..];
            } else {
                text.push_str(&rest[..=open]);
                rest = after;
            }
        }
        text.push_str(rest);
        if !text.is_empty() {
            parts.push(UrlPart::Text(text));
        }
        UrlTemplate { parts, names }
    }

    fn fill_with(&self, mut value: impl FnMut(&str) -> String) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                UrlPart::Text(t) => out.push_str(t),
                UrlPart::Placeholder(name) => out.push_str(&value(name)),
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------
// the tool
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum BodyMode {
    Json,
    Form,
    Raw,
}

impl BodyMode {
    fn content_type(self) -> &'static str {
        match self {
            BodyMode::Json => "application/json",
            BodyMode::Form => "application/x-www-form-urlencoded",
            BodyMode::Raw => "text/plain",
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum ResultMode {
    Text,
    Json,
    StatusText,
}

/// The behaviour behind one HTTP tool. Deliberately not `Debug`: the header
/// templates may hold hard-coded credentials.
struct HttpTool {
    name: String,
    method: Method,
    url: UrlTemplate,
    headers: Vec<(HeaderName, String)>,
    declares_content_type: bool,
    query: Vec<String>,
    body: BodyMode,
    timeout: Duration,
    result_mode: ResultMode,
}

impl Execute for HttpTool {
    fn execute(&self, args: &Value, ctx: &ExecContext) -> ToolResult {
        let (prepared, secrets) = match self.prepare(args) {
            Ok(p) => p,
            Err(result) => return result,
        };
        // The host's timeout replaces the declared one; what is left of it
        // once the call has started.
        let timeout = ctx.remaining().unwrap_or(self.timeout);
        let outcome = transport::run(prepared, timeout, ctx.cancel.as_ref());
        // A server may echo the request (a 401 page quoting the headers):
        // the expanded values never leave the library.
        secrets.redact_result(self.render(outcome))
    }
}

impl HttpTool {
    /// Everything up to the network: the URL, headers and body for `args`
    /// with the values the headers' `${ENV}` references expanded to, or the
    /// isError result that stops the call before a request is sent.
    fn prepare(&self, args: &Value) -> Result<(Prepared, Secrets), ToolResult> {
        let empty = Map::new();
        let args = match args {
            Value::Object(m) => m,
            Value::Null => &empty,
            other => {
                return Err(ToolResult::error(format!(
                    "arguments must be a JSON object, got {}",
                    type_name(other)
                )))
            }
        };

        let missing: Vec<&str> = self
            .url
            .names
            .iter()
            .filter(|n| matches!(args.get(n.as_str()), None | Some(Value::Null)))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            let listed: Vec<String> = missing.iter().map(|n| format!("'{n}'")).collect();
            let slots: Vec<String> = missing.iter().map(|n| format!("{{{n}}}")).collect();
            return Err(ToolResult::error(format!(
                "missing argument {} for the URL placeholder {}",
                listed.join(", "),
                slots.join(", ")
            )));
        }
        let mut url = self.url.fill_with(|name| {
            args.get(name)
                .map(|v| encode(&display_string(v)))
                .unwrap_or_default()
        });

        let is_placeholder = |k: &str| self.url.names.iter().any(|n| n == k);
        let query: Vec<String> = self
            .query
            .iter()
            .filter(|q| !is_placeholder(q))
            .filter_map(|q| match args.get(q.as_str()) {
                None | Some(Value::Null) => None,
                Some(v) => Some(format!("{}={}", encode(q), encode(&display_string(v)))),
            })
            .collect();
        if !query.is_empty() {
            url = append_query(&url, &query.join("&"));
        }

        let mut headers = HeaderMap::with_capacity(self.headers.len() + 1);
        let mut secrets = Secrets::default();
        for (name, template) in &self.headers {
            let mut value = HeaderValue::from_str(&secrets.expand(template)).map_err(|_| {
                ToolResult::error(format!(
                    "header '{name}' is not a valid HTTP header value after ${{ENV}} expansion \
                     (an environment variable it names holds a control character)"
                ))
            })?;
            value.set_sensitive(true);
            headers.append(name.clone(), value);
        }

        let body = if self.method == Method::GET || self.method == Method::HEAD {
            None
        } else {
            let rest: Vec<(&String, &Value)> = args
                .iter()
                .filter(|(k, _)| !is_placeholder(k) && !self.query.iter().any(|q| q == *k))
                .collect();
            self.encode_body(rest)
        };
        if body.is_some() && !self.declares_content_type {
            headers.insert(
                CONTENT_TYPE,
                HeaderValue::from_static(self.body.content_type()),
            );
        }

        Ok((
            Prepared {
                method: self.method.clone(),
                url,
                headers,
                body,
            },
            secrets,
        ))
    }

    /// The arguments left after the URL and query took theirs, as the body.
    fn encode_body(&self, mut rest: Vec<(&String, &Value)>) -> Option<String> {
        if rest.is_empty() {
            return None;
        }
        Some(match self.body {
            BodyMode::Json => {
                let map: Map<String, Value> = rest
                    .into_iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                Value::Object(map).to_string()
            }
            BodyMode::Form => {
                rest.sort_by(|a, b| a.0.cmp(b.0));
                let pairs: Vec<String> = rest
                    .into_iter()
                    .map(|(k, v)| format!("{}={}", encode(k), encode(&display_string(v))))
                    .collect();
                pairs.join("&")
            }
            // The value of the first remaining argument by name.
            BodyMode::Raw => rest
                .into_iter()
                .min_by(|a, b| a.0.cmp(b.0))
                .map(|(_, v)| display_string(v))
                .unwrap_or_default(),
        })
    }

    fn render(&self, outcome: Outcome) -> ToolResult {
        match outcome {
            Outcome::Failed(kind) => transport_failure(kind),
            Outcome::Cancelled => ExecContext::default().stopped(&self.name, Stop::Cancelled),
            Outcome::Response { status, body } => {
                let mut md = Map::new();
                md.insert("status".into(), Value::from(status));
                if !(200..=299).contains(&status) {
                    return ToolResult::error(format!("HTTP {status}: {body}")).with_metadata(md);
                }
                let output = match self.result_mode {
                    ResultMode::Text => body,
                    // A body that is not JSON is handed back unchanged.
                    ResultMode::Json => match serde_json::from_str::<Value>(&body) {
                        Ok(v) => v.to_string(),
                        Err(_) => body,
                    },
                    ResultMode::StatusText => format!("HTTP {status}\n{body}"),
                };
                ToolResult::ok(output).with_metadata(md)
            }
        }
    }
}

/// Adds `query` to `url`: after `?`, or after `&` when the URL already has a
/// query string, and before any `#fragment`.
fn append_query(url: &str, query: &str) -> String {
    let (base, fragment) = match url.find('#') {
        Some(i) => url.split_at(i),
        None => (url, ""),
    };
    let sep = match base.find('?') {
        None => "?",
        Some(_) if base.ends_with('?') || base.ends_with('&') => "",
        Some(_) => "&",
    };
    format!("{base}{sep}{query}{fragment}")
}

impl Failure {
    /// The kind as results and metadata name it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Failure::Timeout => "timeout",
            Failure::Dns => "dns",
            Failure::ConnectFailed => "connect-failed",
            Failure::Transport => "transport",
            Failure::TooLarge => "too-large",
        }
    }
}

/// The isError result of a request that got no (usable) response, shared by
/// HTTP tools and webfetch: `HTTP transport failure: <kind>` with metadata
/// `{"error": kind}`; a body past the size cap says so and names the cap.
pub(crate) fn transport_failure(kind: Failure) -> ToolResult {
    let mut md = Map::new();
    md.insert("error".into(), Value::String(kind.as_str().into()));
    let output = match kind {
        Failure::TooLarge => format!(
            "HTTP transport failure: too-large (the response body is larger than {} MiB, \
             the most one call reads)",
            crate::limits::RESPONSE_BODY_BYTES >> 20
        ),
        other => format!("HTTP transport failure: {}", other.as_str()),
    };
    ToolResult::error(output).with_metadata(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_unreserved_names_between_braces() {
        let t = UrlTemplate::parse("http://h/{a}/{b-c.d~e_f}/{}/{x y}/{a}/{open");
        assert_eq!(t.names, vec!["a", "b-c.d~e_f"]);
        assert_eq!(
            t.fill_with(|n| format!("<{n}>")),
            "http://h/<a>/<b-c.d~e_f>/{}/{x y}/<a>/{open"
        );
    }

    #[test]
    fn encode_keeps_only_unreserved() {
        assert_eq!(encode("a b/c?é~-_."), "a%20b%2Fc%3F%C3%A9~-_.");
        assert_eq!(encode("\u{1F600}"), "%F0%9F%98%80");
    }

    #[test]
    fn query_goes_before_the_fragment() {
        assert_eq!(append_query("http://h/p", "q=1"), "http://h/p?q=1");
        assert_eq!(append_query("http://h/p?a=1", "q=1"), "http://h/p?a=1&q=1");
        assert_eq!(append_query("http://h/p?", "q=1"), "http://h/p?q=1");
        assert_eq!(append_query("http://h/p#f", "q=1"), "http://h/p?q=1#f");
    }
}
