//! SPEC §11 single-turn translation: one OpenAI-shaped request in, exactly one
//! provider call (plus retries), one OpenAI-shaped result out. No loop, no
//! tool execution, no conversation state, so calls may run concurrently from
//! any number of threads.
//!
//! The work is split in three: [`helpers`] holds the pure message/tool
//! conversions, this module validates the client and request, builds the
//! provider body and reads the provider's answer back (also pure), and
//! [`client`] makes the HTTP call.

pub mod client;
pub mod helpers;

use crate::error::{Error, ErrorCode, Result};
use crate::json::{display_string, type_name};
use serde_json::{Map, Number, Value};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

// ---------------------------------------------------------------------------
// cancellation
// ---------------------------------------------------------------------------

/// A cancel flag the host can trigger from another thread. Cancelling aborts
/// an in-flight [`translate`] promptly with the `cancelled` error; a token
/// cancelled before the call starts makes the call fail at once.
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<CancelInner>,
}

#[derive(Default)]
struct CancelInner {
    cancelled: AtomicBool,
    notify: Notify,
}

impl CancelToken {
    pub fn new() -> Self {
        CancelToken::default()
    }

    /// Triggers the token. Idempotent; safe from any thread.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Resolves once the token is cancelled.
    pub(crate) async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is checked, so a cancel landing in
            // between is not missed.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

// ---------------------------------------------------------------------------
// the client (CONTRACT.md §6)
// ---------------------------------------------------------------------------

/// The provider's wire style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    OpenAi,
    Anthropic,
}

const CLIENT_KEYS: &str = "baseUrl, style, model, apiKey, headers, systemPrompt, retries, retryBaseMs, timeoutMs, requestParams";
const REQUEST_KEYS: &str = "messages, tools, toolChoice, system, maxTokens";

/// Keys `requestParams` may not set: the translator owns them.
const RESERVED_PARAMS: [&str; 3] = ["messages", "tools", "stream"];

/// A validated client.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub base_url: String,
    pub style: Style,
    pub model: String,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    pub system_prompt: Option<String>,
    pub retries: u32,
    pub retry_base_ms: u64,
    pub timeout_ms: Option<u64>,
    pub request_params: Map<String, Value>,
}

/// `obj[key]`, with `null` read as absent.
fn present<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

fn expect_string<'a>(what: &str, v: &'a Value) -> Result<&'a str> {
    v.as_str().ok_or_else(|| {
        Error::invalid_config(format!("{what} must be a string, got {}", type_name(v)))
    })
}

fn expect_count(what: &str, v: &Value) -> Result<u64> {
    v.as_u64().ok_or_else(|| {
        Error::invalid_config(format!(
            "{what} must be a whole number of 0 or more, got {}",
            match v {
                Value::Number(n) => n.to_string(),
                other => type_name(other).to_string(),
            }
        ))
    })
}

impl ClientConfig {
    /// Reads and validates a client JSON object. Unknown keys and values of the
    /// wrong type are `invalid_config` errors naming the key.
    pub fn from_json(v: &Value) -> Result<ClientConfig> {
        let obj = v.as_object().ok_or_else(|| {
            Error::invalid_config(format!(
                "client must be a JSON object, got {}",
                type_name(v)
            ))
        })?;
        if let Some(k) = obj
            .keys()
            .find(|k| !CLIENT_KEYS.split(", ").any(|c| c == k.as_str()))
        {
            return Err(Error::invalid_config(format!(
                "client: unknown key '{k}' (known keys: {CLIENT_KEYS})"
            )));
        }
        let base_url = match present(obj, "baseUrl") {
            Some(b) => expect_string("client.baseUrl", b)?.to_string(),
            None => return Err(Error::invalid_config("client.baseUrl is required")),
        };
        let style = match present(obj, "style") {
            None => Style::OpenAi,
            Some(s) => match expect_string("client.style", s)? {
                "openai" => Style::OpenAi,
                "anthropic" => Style::Anthropic,
                other => {
                    return Err(Error::invalid_config(format!(
                        "client.style must be \"openai\" or \"anthropic\", got \"{other}\""
                    )))
                }
            },
        };
        let model = match present(obj, "model") {
            Some(m) => expect_string("client.model", m)?.to_string(),
            None => return Err(Error::invalid_config("client.model is required")),
        };
        let api_key = present(obj, "apiKey")
            .map(|k| expect_string("client.apiKey", k).map(str::to_string))
            .transpose()?;
        let mut headers = Vec::new();
        if let Some(h) = present(obj, "headers") {
            let h = h.as_object().ok_or_else(|| {
                Error::invalid_config(format!(
                    "client.headers must be an object of strings, got {}",
                    type_name(h)
                ))
            })?;
            for (name, value) in h {
                let value = expect_string(&format!("client.headers.{name}"), value)?;
                headers.push((name.clone(), value.to_string()));
            }
        }
        let system_prompt = present(obj, "systemPrompt")
            .map(|s| expect_string("client.systemPrompt", s).map(str::to_string))
            .transpose()?;
        let retries = match present(obj, "retries") {
            Some(r) => u32::try_from(expect_count("client.retries", r)?)
                .map_err(|_| Error::invalid_config("client.retries is too large"))?,
            None => 2,
        };
        let retry_base_ms = match present(obj, "retryBaseMs") {
            Some(r) => expect_count("client.retryBaseMs", r)?,
            None => 500,
        };
        let timeout_ms = match present(obj, "timeoutMs") {
            Some(t) => match expect_count("client.timeoutMs", t)? {
                0 => {
                    return Err(Error::invalid_config(
                        "client.timeoutMs must be more than 0",
                    ))
                }
                ms => Some(ms),
            },
            None => None,
        };
        let request_params = match present(obj, "requestParams") {
            Some(Value::Object(p)) => p.clone(),
            Some(other) => {
                return Err(Error::invalid_config(format!(
                    "client.requestParams must be an object, got {}",
                    type_name(other)
                )))
            }
            None => Map::new(),
        };
        let config = ClientConfig {
            base_url,
            style,
            model,
            api_key,
            headers,
            system_prompt,
            retries,
            retry_base_ms,
            timeout_ms,
            request_params,
        };
        config.endpoint()?;
        Ok(config)
    }

    /// openai: `{base}/chat/completions`; anthropic: `{base}/messages` when
    /// the base already ends in `/v1`, else `{base}/v1/messages`.
    pub fn endpoint(&self) -> Result<String> {
        let base = self.base_url.trim_end_matches('/');
        let url = match self.style {
            Style::OpenAi => format!("{base}/chat/completions"),
            Style::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            Style::Anthropic => format!("{base}/v1/messages"),
        };
        match url::Url::parse(&url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(url),
            _ => Err(Error::invalid_config(format!(
                "client.baseUrl '{}' is not an http(s) URL",
                self.base_url
            ))),
        }
    }

    /// The API key: the client's own, else the style's environment variable
    /// (ANTHROPIC_API_KEY or OPENAI_API_KEY), else OPENROUTER_API_KEY. An empty
    /// value counts as none.
    pub fn resolve_api_key(&self) -> Option<String> {
        let from_env = |name: &str| std::env::var(name).ok().filter(|k| !k.is_empty());
        let style_var = match self.style {
            Style::Anthropic => "ANTHROPIC_API_KEY",
            Style::OpenAi => "OPENAI_API_KEY",
        };
        self.api_key
            .clone()
            .filter(|k| !k.is_empty())
            .or_else(|| from_env(style_var))
            .or_else(|| from_env("OPENROUTER_API_KEY"))
    }

    /// The request headers: content type, the style's credentials (none at all
    /// without a key), then the client's own headers, which win by name.
    pub fn request_headers(&self, api_key: Option<&str>) -> Vec<(String, String)> {
        let mut h = vec![("content-type".to_string(), "application/json".to_string())];
        match (self.style, api_key) {
            (Style::OpenAi, Some(key)) => h.push(("authorization".into(), format!("Bearer {key}"))),
            (Style::Anthropic, Some(key)) => h.push(("x-api-key".into(), key.to_string())),
            (_, None) => {}
        }
        if self.style == Style::Anthropic {
            h.push(("anthropic-version".into(), "2023-06-01".into()));
        }
        h.extend(self.headers.iter().cloned());
        h
    }
}

// ---------------------------------------------------------------------------
// the request
// ---------------------------------------------------------------------------

/// A validated translate request, borrowing from its JSON.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub messages: &'a [Value],
    pub tools: &'a [Value],
    pub tool_choice: Option<&'a Value>,
    pub system: Option<&'a str>,
    pub max_tokens: Option<&'a Number>,
}

impl<'a> Request<'a> {
    /// Reads and validates a request JSON object. Unknown keys and values of
    /// the wrong type are `invalid_config` errors naming the key; a message that
    /// is not an object is an `invalid_argument` error naming its index.
    pub fn from_json(v: &'a Value) -> Result<Request<'a>> {
        let obj = v.as_object().ok_or_else(|| {
            Error::invalid_config(format!(
                "request must be a JSON object, got {}",
                type_name(v)
            ))
        })?;
        if let Some(k) = obj
            .keys()
            .find(|k| !REQUEST_KEYS.split(", ").any(|c| c == k.as_str()))
        {
            let hint = if k == "toolkit" {
                " (a toolkit is passed as its own argument to tn_translate)"
            } else {
                ""
            };
            return Err(Error::invalid_config(format!(
                "request: unknown key '{k}'{hint} (known keys: {REQUEST_KEYS})"
            )));
        }
        let messages = match present(obj, "messages") {
            Some(Value::Array(m)) => m.as_slice(),
            Some(other) => {
                return Err(Error::invalid_config(format!(
                    "request.messages must be an array, got {}",
                    type_name(other)
                )))
            }
            None => return Err(Error::invalid_config("request.messages is required")),
        };
        if let Some((i, m)) = messages.iter().enumerate().find(|(_, m)| !m.is_object()) {
            return Err(Error::invalid_argument(format!(
                "messages[{i}] must be an object, got {}",
                type_name(m)
            )));
        }
        let tools = match present(obj, "tools") {
            Some(Value::Array(t)) => t.as_slice(),
            Some(other) => {
                return Err(Error::invalid_config(format!(
                    "request.tools must be an array, got {}",
                    type_name(other)
                )))
            }
            None => &[],
        };
        let system = present(obj, "system")
            .map(|s| expect_string("request.system", s))
            .transpose()?;
        let max_tokens = match present(obj, "maxTokens") {
            Some(Value::Number(n)) => Some(n),
            Some(other) => {
                return Err(Error::invalid_config(format!(
                    "request.maxTokens must be a number, got {}",
                    type_name(other)
                )))
            }
            None => None,
        };
        Ok(Request {
            messages,
            tools,
            tool_choice: present(obj, "toolChoice"),
            system,
            max_tokens,
        })
    }

    /// `maxTokens` when it is a positive number (0 and below mean "default").
    fn positive_max_tokens(&self) -> Option<Value> {
        let n = self.max_tokens?;
        (n.as_f64()? > 0.0).then(|| Value::Number(n.clone()))
    }
}

// ---------------------------------------------------------------------------
// the provider body (pure)
// ---------------------------------------------------------------------------

/// An OpenAI-shaped declaration (`{type, function:{name, description,
/// parameters}}`) as the Anthropic adapter renders a toolkit tool.
fn declared_to_anthropic(t: &Value) -> Value {
    let f = t.get("function").unwrap_or(t);
    let mut m = Map::new();
    m.insert("name".into(), f.get("name").cloned().unwrap_or(Value::Null));
    m.insert(
        "description".into(),
        f.get("description")
            .cloned()
            .unwrap_or_else(|| Value::String(String::new())),
    );
    m.insert(
        "input_schema".into(),
        f.get("parameters")
            .cloned()
            .unwrap_or_else(crate::tool::default_schema),
    );
    Value::Object(m)
}

/// The JSON body of the provider call, before it is serialised. `declared` are
/// the toolkit's tools in OpenAI shape; they come before `request.tools`.
pub fn provider_body(client: &ClientConfig, request: &Request, declared: &[Value]) -> Value {
    let mut body = match client.style {
        Style::OpenAi => openai_body(client, request, declared),
        Style::Anthropic => anthropic_body(client, request, declared),
    };
    for (k, v) in &client.request_params {
        if !RESERVED_PARAMS.contains(&k.as_str()) {
            body.insert(k.clone(), v.clone());
        }
    }
    Value::Object(body)
}

fn openai_body(client: &ClientConfig, request: &Request, declared: &[Value]) -> Map<String, Value> {
    // A request's `system` (even "") wins over the client's prompt; either is
    // prepended only when the messages carry no system/developer message.
    let system = request
        .system
        .or(client.system_prompt.as_deref())
        .unwrap_or("");
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !helpers::is_blank(system) && !helpers::has_system_message(request.messages) {
        let mut m = Map::new();
        m.insert("role".into(), Value::String("system".into()));
        m.insert("content".into(), Value::String(system.into()));
        messages.push(Value::Object(m));
    }
    messages.extend(request.messages.iter().cloned());
    let mut body = Map::new();
    body.insert("model".into(), Value::String(client.model.clone()));
    body.insert("messages".into(), Value::Array(messages));
    let tools: Vec<Value> = declared.iter().chain(request.tools).cloned().collect();
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = request.tool_choice {
        body.insert("tool_choice".into(), choice.clone());
    }
    if let Some(n) = request.positive_max_tokens() {
        body.insert("max_tokens".into(), n);
    }
    body
}

fn anthropic_body(
    client: &ClientConfig,
    request: &Request,
    declared: &[Value],
) -> Map<String, Value> {
    let converted = helpers::openai_messages_to_anthropic(request.messages);
    // request.system (even "") > a non-blank client systemPrompt > the
    // system/developer messages hoisted out of the conversation.
    let system = match (request.system, client.system_prompt.as_deref()) {
        (Some(s), _) => s.to_string(),
        (None, Some(p)) if !helpers::is_blank(p) => p.to_string(),
        _ => converted.system,
    };
    let mut tools: Vec<Value> = declared.iter().map(declared_to_anthropic).collect();
    tools.extend(helpers::openai_tools_to_anthropic(request.tools));
    let mut body = Map::new();
    body.insert("model".into(), Value::String(client.model.clone()));
    body.insert(
        "max_tokens".into(),
        request
            .positive_max_tokens()
            .unwrap_or_else(|| Value::from(4096)),
    );
    body.insert("messages".into(), Value::Array(converted.messages));
    if !helpers::is_blank(&system) {
        body.insert("system".into(), Value::String(system));
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = helpers::openai_tool_choice_to_anthropic(request.tool_choice) {
        body.insert("tool_choice".into(), choice);
    }
    body
}

// ---------------------------------------------------------------------------
// the provider's answer (pure)
// ---------------------------------------------------------------------------

/// A token count as a whole number (fractions are dropped; anything else is
/// absent).
fn token_count(v: Option<&Value>) -> Option<u64> {
    let v = v?;
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f as u64)
    })
}

fn usage_json(prompt: u64, completion: u64, total: u64) -> Value {
    let mut m = Map::new();
    m.insert("promptTokens".into(), Value::from(prompt));
    m.insert("completionTokens".into(), Value::from(completion));
    m.insert("totalTokens".into(), Value::from(total));
    Value::Object(m)
}

/// OpenAI prompt/completion/total_tokens; Anthropic input/output_tokens, the
/// total being their sum. An absent usage is all zeros.
fn usage_of(style: Style, raw: &Value) -> Value {
    let Some(u) = raw.get("usage").filter(|u| u.is_object()) else {
        return usage_json(0, 0, 0);
    };
    let (p_key, c_key) = match style {
        Style::OpenAi => ("prompt_tokens", "completion_tokens"),
        Style::Anthropic => ("input_tokens", "output_tokens"),
    };
    let p = token_count(u.get(p_key)).unwrap_or(0);
    let c = token_count(u.get(c_key)).unwrap_or(0);
    let sum = p.saturating_add(c);
    let total = match style {
        Style::OpenAi => token_count(u.get("total_tokens")).unwrap_or(sum),
        Style::Anthropic => sum,
    };
    usage_json(p, c, total)
}

/// The finish reasons an OpenAI client understands, kept as the provider
/// sent them.
const OPENAI_FINISH: [&str; 5] = [
    "stop",
    "length",
    "tool_calls",
    "content_filter",
    "function_call",
];

fn result_json(
    text: String,
    calls: Vec<Value>,
    finish: &str,
    usage: Value,
    model: &str,
    raw: Value,
) -> Value {
    let mut m = Map::new();
    m.insert("text".into(), Value::String(text));
    m.insert("toolCalls".into(), Value::Array(calls));
    m.insert("finishReason".into(), Value::String(finish.into()));
    m.insert("usage".into(), usage);
    m.insert("model".into(), Value::String(model.into()));
    m.insert("raw".into(), raw);
    Value::Object(m)
}

/// The provider's decoded answer in OpenAI shape: `{text, toolCalls,
/// finishReason, usage, model, raw}`. `model` is the model the call asked for.
pub fn read_response(style: Style, model: &str, raw: Value) -> Value {
    match style {
        Style::OpenAi => read_openai(model, raw),
        Style::Anthropic => read_anthropic(model, raw),
    }
}

fn read_openai(model: &str, raw: Value) -> Value {
    let choice = raw.get("choices").and_then(|c| c.get(0));
    let message = choice.and_then(|c| c.get("message"));
    let text = helpers::content_text(message.and_then(|m| m.get("content")));
    let calls = message.map(helpers::tool_calls_of).unwrap_or_default();
    // Any tool call means "tool_calls"; otherwise the provider's own reason is
    // kept when it is one of OpenAI's, and mapped by SPEC §11 when it is not.
    let stated = choice.and_then(|c| c.get("finish_reason"));
    let finish = match stated.and_then(Value::as_str) {
        _ if !calls.is_empty() => "tool_calls",
        Some(s) => OPENAI_FINISH
            .iter()
            .copied()
            .find(|f| *f == s)
            .unwrap_or_else(|| helpers::finish_reason_for(false, stated)),
        None => helpers::finish_reason_for(false, stated),
    };
    let usage = usage_of(Style::OpenAi, &raw);
    result_json(text, calls, finish, usage, model, raw)
}

fn read_anthropic(model: &str, raw: Value) -> Value {
    let blocks: &[Value] = raw
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let of_type = |t: &'static str| {
        blocks
            .iter()
            .filter(move |b| b.get("type").and_then(Value::as_str) == Some(t))
    };
    let text: String = of_type("text")
        .map(|b| b.get("text").map(display_string).unwrap_or_default())
        .collect();
    let calls: Vec<Value> = of_type("tool_use")
        .map(|b| {
            let input = b
                .get("input")
                .filter(|i| !i.is_null())
                .map_or_else(|| "{}".to_string(), Value::to_string);
            let mut m = Map::new();
            m.insert(
                "id".into(),
                Value::String(b.get("id").map(display_string).unwrap_or_default()),
            );
            m.insert(
                "name".into(),
                Value::String(b.get("name").map(display_string).unwrap_or_default()),
            );
            m.insert("arguments".into(), Value::String(input));
            Value::Object(m)
        })
        .collect();
    let finish = helpers::finish_reason_for(!calls.is_empty(), raw.get("stop_reason"));
    let usage = usage_of(Style::Anthropic, &raw);
    result_json(text, calls, finish, usage, model, raw)
}

// ---------------------------------------------------------------------------
// the entry point
// ---------------------------------------------------------------------------

/// Prepares the HTTP call for a client and a provider body.
fn prepare(config: &ClientConfig, body: &Value) -> Result<client::Call> {
    let api_key = config.resolve_api_key();
    let headers = client::header_map(&config.request_headers(api_key.as_deref()))?;
    let body = serde_json::to_vec(body).map_err(|e| {
        Error::new(
            ErrorCode::Internal,
            format!("cannot encode the provider body: {e}"),
        )
    })?;
    Ok(client::Call {
        url: config.endpoint()?,
        headers,
        body,
        retries: config.retries,
        retry_base_ms: config.retry_base_ms,
        timeout_ms: config.timeout_ms,
        secret: api_key,
    })
}

/// Runs a future on the shared runtime from a host thread. Called from inside
/// an async runtime (which must not block on another), the wait happens on a
/// short-lived helper thread instead.
fn run_blocking<F>(fut: F) -> Result<Value>
where
    F: Future<Output = Result<Value>> + Send,
{
    if tokio::runtime::Handle::try_current().is_err() {
        return crate::runtime::block_on(fut);
    }
    std::thread::scope(|s| {
        s.spawn(|| crate::runtime::block_on(fut))
            .join()
            .unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorCode::Internal,
                    "the translate call panicked",
                ))
            })
    })
}

/// SPEC §11: translates one OpenAI-shaped `request` for the `client`'s
/// provider, makes exactly one provider call (plus retries) and returns the
/// answer in OpenAI shape. `declared` = the toolkit's tools already rendered
/// in OpenAI shape, declared before `request.tools`; empty when no toolkit.
/// Nothing is ever executed.
pub fn translate(
    client: &Value,
    request: &Value,
    declared: &[Value],
    cancel: Option<&CancelToken>,
) -> Result<Value> {
    let config = ClientConfig::from_json(client)?;
    let request = Request::from_json(request)?;
    let body = provider_body(&config, &request, declared);
    let model = body.get("model").map(display_string).unwrap_or_default();
    let call = prepare(&config, &body)?;
    drop(body);
    if cancel.is_some_and(CancelToken::is_cancelled) {
        return Err(Error::new(
            ErrorCode::Cancelled,
            "the translate call was cancelled",
        ));
    }
    let raw = run_blocking(client::send(&call, cancel))?;
    Ok(read_response(config.style, &model, raw))
}

// ---------------------------------------------------------------------------
// the helpers by their vector names
// ---------------------------------------------------------------------------

/// The pure helpers by their vector names, with positional arguments as in
/// translate_helpers.json: "sanitize", "finishReasonFor", "contentText",
/// "argsObject", "argsString", "toolCallsOf", "hasSystemMessage",
/// "openaiToolChoiceToAnthropic", "openaiToolsToAnthropic", "toolCallsJson",
/// "openaiMessagesToAnthropic".
pub fn call_helper(name: &str, args: &[Value]) -> Result<Value> {
    let arity = match name {
        "finishReasonFor" => 2,
        "sanitize"
        | "contentText"
        | "argsObject"
        | "argsString"
        | "toolCallsOf"
        | "hasSystemMessage"
        | "openaiToolChoiceToAnthropic"
        | "openaiToolsToAnthropic"
        | "toolCallsJson"
        | "openaiMessagesToAnthropic" => 1,
        other => {
            return Err(Error::invalid_argument(format!(
                "unknown translate helper '{other}'"
            )))
        }
    };
    if args.len() != arity {
        return Err(Error::invalid_argument(format!(
            "helper {name} takes {arity} argument(s), got {}",
            args.len()
        )));
    }
    let a = &args[0];
    fn list(v: &Value) -> &[Value] {
        v.as_array().map_or(&[], Vec::as_slice)
    }
    Ok(match name {
        "sanitize" => Value::String(crate::tool::sanitize(&display_string(a))),
        "finishReasonFor" => {
            let has_calls = !matches!(a, Value::Null | Value::Bool(false));
            Value::String(helpers::finish_reason_for(has_calls, args.get(1)).into())
        }
        "contentText" => Value::String(helpers::content_text(Some(a))),
        "argsObject" => helpers::args_object(Some(a)),
        "argsString" => Value::String(helpers::args_string(Some(a))),
        "toolCallsOf" => Value::Array(helpers::tool_calls_of(a)),
        "hasSystemMessage" => Value::Bool(helpers::has_system_message(list(a))),
        "openaiToolChoiceToAnthropic" => {
            helpers::openai_tool_choice_to_anthropic(Some(a)).unwrap_or(Value::Null)
        }
        "openaiToolsToAnthropic" => Value::Array(helpers::openai_tools_to_anthropic(list(a))),
        "toolCallsJson" => Value::Array(helpers::tool_calls_json(a)),
        _ => helpers::openai_messages_to_anthropic(list(a)).to_json(),
    })
}
