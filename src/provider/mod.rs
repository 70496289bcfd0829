//! The provider layer (floor 3): the four provider dialects, written once
//! each, the client configuration that picks one, and the HTTP exchange. It
//! sits above `tool`, `parts`, `adapter`, `json`, `net` and the cancel
//! token, and below `skill`, `builtin`, `mcp`, `toolkit`, `translate` and
//! `client`, which both speak to providers through it; nothing here
//! imports them. A new dialect is one new file beside `openai.rs` plus its
//! arm in each match on [`Style`] (here, `dialect.rs`, `blocks.rs`,
//! `stream.rs`, `translate`).
//!
//! - `mod.rs`: [`Style`] (defined in [`crate::style`]), [`ClientConfig`]
//!   (CONTRACT §6) and the keys and clamps of its JSON.
//! - [`openai`]: the OpenAI chat-completions dialect: its tables; the
//!   loop's body writer and tool-result message, and the request's step of
//!   the wired transcript (over `serde_json::Value`); translate's body
//!   writer and the readers of OpenAI-shaped messages (over the arena
//!   [`node`]); the answer read once for both sides, generic over
//!   [`crate::json::View`] (`call_views`, `text_pieces`, with the recorded
//!   differences between the loop and translate as named parameters); its
//!   stream state (`StreamState`) and its content-part blocks
//!   (`part_block`).
//! - [`anthropic`]: the Anthropic messages dialect: the same pieces, and
//!   the conversion of OpenAI-shaped messages and tools to its own.
//! - Each dialect file also has its token-counting endpoint, body and
//!   answer reader (`count_endpoint`, `count_body`, `count_of`), which
//!   `translate::count_tokens_json` (the floor above) calls through
//!   `prepare_count` and the same HTTP call.
//! - [`gemini`]: the Gemini `generateContent` dialect: its tables, body
//!   writers, answer readers and stream state, and its conversions from
//!   OpenAI shape; [`gemini_schema`] makes a tool schema Gemini-safe.
//! - [`responses`]: the OpenAI Responses dialect: the same pieces and its
//!   conversions from OpenAI shape.
//! - [`turn`]: what a turn is made of in every dialect — the loop's (the
//!   body, a call, a fed result, the usage) and translate's (the validated
//!   OpenAI-shaped [`turn::Request`]) — and the readers they share.
//! - [`node`]: the per-call arena JSON tree translate reads and writes.
//! - [`failover`]: ordered failover over a client's `upstreams`.
//! - [`dialect`]: the loop's entry to the dialects: each function picks the
//!   style's piece (`crate::client::shape` is this module).
//! - [`http`]: the provider call: retries, backoff, `Retry-After`, the
//!   whole-call deadline, the cancel token, typed provider errors.
//! - `wire`: the HTTP/1.1 exchange under it (pooled blocking sockets).
//! - [`sse`]: the one reader of server-sent events.
//! - [`stream`]: a streamed answer of any dialect assembled into the
//!   answer it would have been whole: the style-neutral [`stream::Assembler`]
//!   (dispatch on the style to the dialect's `StreamState`, the deadline and
//!   cancel checks) and the streamed call. The dialect's `StreamState` is
//!   the one reader of its events: the same read feeds the assembled answer
//!   and a [`gather::Pieces`] sink, the loop's text callback
//!   ([`gather::OnText`]) or streaming translate's relay
//!   ([`chunks::ChunkWriter`]).
//! - [`gather`]: what the dialects' stream states are built from: the
//!   budget of an assembled answer (bytes, tool calls), its caps and errors,
//!   the reading of one event, and the [`gather::Pieces`] sink a stream's
//!   pieces go to as they arrive.
//! - [`blocks`]: §8A, a content part as the style's block (the positive
//!   list, each dialect's `part_block`, the refusal naming both) and the
//!   transcript with its parts wired for the loop's request.
//! - [`acp`]: an Agent Client Protocol agent (a child process over stdio)
//!   as a model source: the session, its handshake and turns, for the
//!   client's ACP constructor.
//! - [`chunks`]: a streamed answer of any dialect re-told as OpenAI
//!   `chat.completion.chunk` events (streaming translate): the
//!   [`chunks::ChunkWriter`] sink the assembler's pieces go to, and a whole
//!   answer written as chunks.

pub mod acp;
pub mod anthropic;
pub mod blocks;
pub mod chunks;
pub mod dialect;
pub mod failover;
pub mod gather;
pub mod gemini;
pub mod gemini_schema;
pub mod http;
pub mod node;
pub mod openai;
pub mod responses;
pub mod sse;
pub mod stream;
pub mod turn;
pub(crate) mod wire;

use crate::error::{Error, Result};
use crate::json::type_name;
use serde_json::{Map, Value};

pub use crate::style::Style;

pub const CLIENT_KEYS: &str = "baseUrl, style, model, apiKey, headers, systemPrompt, retries, retryBaseMs, retryableStatuses, timeoutMs, requestParams, upstreams, cooldownMs";

/// The most extra attempts a call makes: a larger `retries` is taken as
/// this many (with `timeoutMs` the deadline ends the call sooner anyway).
pub const MAX_RETRIES: u32 = 10;

/// The largest `retryBaseMs` honoured; a larger one is taken as this.
pub const MAX_RETRY_BASE_MS: u64 = 60_000;

/// Keys `requestParams` may not set, in either dialect: the translator
/// and the loop own them.
pub(crate) const RESERVED_PARAMS: [&str; 3] = ["messages", "tools", "stream"];

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
    /// Statuses retried besides the default ones (upstream's
    /// `retryable_statuses`: it adds, never removes).
    pub retryable_statuses: Vec<u16>,
    pub timeout_ms: Option<u64>,
    pub request_params: Map<String, Value>,
    /// Ordered failover ([`failover`]): each upstream as a client of its
    /// own; empty for a client of one upstream (the fields above). With
    /// upstreams, the fields above are the first one's.
    pub upstreams: std::sync::Arc<[ClientConfig]>,
    /// How long an upstream that failed is tried after the others (0: never
    /// cooled down).
    pub cooldown_ms: u64,
}

/// The error for a `style` no dialect answers to.
fn unknown_style(name: &str) -> Error {
    Error::invalid_config(format!(
        "client.style must be \"openai\", \"anthropic\", \"gemini\" or \"responses\", got \"{name}\""
    ))
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
        if let Some(list) = present(obj, "upstreams") {
            return failover::parse(obj, list);
        }
        if present(obj, "cooldownMs").is_some() {
            return Err(Error::invalid_config(
                "client.cooldownMs applies only to a client with upstreams",
            ));
        }
        let base_url = match present(obj, "baseUrl") {
            Some(b) => expect_string("client.baseUrl", b)?.to_string(),
            None => return Err(Error::invalid_config("client.baseUrl is required")),
        };
        let style = match present(obj, "style") {
            None => Style::OpenAi,
            Some(s) => {
                let name = expect_string("client.style", s)?;
                Style::from_name(name).ok_or_else(|| unknown_style(name))?
            }
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
        // Absurd values are clamped, not refused (see MAX_RETRIES).
        let retries = match present(obj, "retries") {
            Some(r) => u32::try_from(expect_count("client.retries", r)?.min(MAX_RETRIES.into()))
                .unwrap_or(MAX_RETRIES),
            None => 2,
        };
        let retry_base_ms = match present(obj, "retryBaseMs") {
            Some(r) => expect_count("client.retryBaseMs", r)?.min(MAX_RETRY_BASE_MS),
            None => 500,
        };
        let retryable_statuses = match present(obj, "retryableStatuses") {
            None => Vec::new(),
            Some(Value::Array(list)) => list
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_u64()
                        .filter(|n| (100..=599).contains(n))
                        .and_then(|n| u16::try_from(n).ok())
                        .ok_or_else(|| {
                            Error::invalid_config(format!(
                                "client.retryableStatuses[{i}] must be an HTTP status (100 to 599), got {v}"
                            ))
                        })
                })
                .collect::<Result<Vec<u16>>>()?,
            Some(other) => {
                return Err(Error::invalid_config(format!(
                    "client.retryableStatuses must be an array of HTTP statuses, got {}",
                    type_name(other)
                )))
            }
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
            retryable_statuses,
            timeout_ms,
            request_params,
            upstreams: std::sync::Arc::from(Vec::new()),
            cooldown_ms: 0,
        };
        config.endpoint()?;
        Ok(config)
    }

    /// openai: `{base}/chat/completions`; anthropic: `{base}/messages` when
    /// the base already ends in `/v1`, else `{base}/v1/messages`; gemini:
    /// `{base}/v1beta/models/{model}:generateContent` (see
    /// [`gemini::endpoint`]); responses: `{base}/responses`.
    pub fn endpoint(&self) -> Result<String> {
        self.endpoint_url(false).map(|(text, _)| text)
    }

    /// [`ClientConfig::endpoint`] as written and as parsed; `stream` picks
    /// Gemini's streaming method (the other styles stream at the same URL).
    pub(crate) fn endpoint_url(&self, stream: bool) -> Result<(String, url::Url)> {
        let base = self.base_url.trim_end_matches('/');
        let url = match self.style {
            Style::OpenAi => openai::endpoint(base),
            Style::Anthropic => anthropic::endpoint(base),
            Style::Gemini => gemini::endpoint(base, &self.model, stream),
            Style::Responses => responses::endpoint(base),
        };
        self.checked_url(url)
    }

    /// The style's token-counting endpoint: anthropic
    /// `…/messages/count_tokens`, gemini `…/models/{model}:countTokens`,
    /// responses and openai `{base}/responses/input_tokens` (chat
    /// completions has none of its own), as written and as parsed.
    pub(crate) fn count_endpoint_url(&self) -> Result<(String, url::Url)> {
        let base = self.base_url.trim_end_matches('/');
        let url = match self.style {
            Style::OpenAi => openai::count_endpoint(base),
            Style::Anthropic => anthropic::count_endpoint(base),
            Style::Gemini => gemini::count_endpoint(base, &self.model),
            Style::Responses => responses::count_endpoint(base),
        };
        self.checked_url(url)
    }

    /// `url` parsed, when it is http(s); else the `invalid_config` error
    /// naming the client's `baseUrl`.
    fn checked_url(&self, url: String) -> Result<(String, url::Url)> {
        match url::Url::parse(&url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => Ok((url, u)),
            _ => Err(Error::invalid_config(format!(
                "client.baseUrl '{}' is not an http(s) URL",
                self.base_url
            ))),
        }
    }

    /// The API key: the client's own, else the style's environment variable
    /// (ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY), else
    /// OPENROUTER_API_KEY. An empty value counts as none.
    pub fn resolve_api_key(&self) -> Option<String> {
        let from_env = |name: &str| std::env::var(name).ok().filter(|k| !k.is_empty());
        let style_var = match self.style {
            Style::Anthropic => anthropic::API_KEY_VAR,
            Style::OpenAi | Style::Responses => openai::API_KEY_VAR,
            Style::Gemini => gemini::API_KEY_VAR,
        };
        self.api_key
            .clone()
            .filter(|k| !k.is_empty())
            .or_else(|| from_env(style_var))
            .or_else(|| from_env("OPENROUTER_API_KEY"))
    }

    /// The request headers: content type, the style's credentials (none at all
    /// without a key), the user agent, then the client's own headers, which
    /// win by name.
    pub fn request_headers(&self, api_key: Option<&str>) -> Vec<(String, String)> {
        let mut h = vec![("content-type".to_string(), "application/json".to_string())];
        match self.style {
            Style::OpenAi | Style::Responses => openai::auth_headers(api_key, &mut h),
            Style::Anthropic => anthropic::auth_headers(api_key, &mut h),
            Style::Gemini => gemini::auth_headers(api_key, &mut h),
        }
        h.push((
            "user-agent".into(),
            concat!("toolnexus/", env!("CARGO_PKG_VERSION")).into(),
        ));
        h.extend(self.headers.iter().cloned());
        h
    }
}

/// Prepares the HTTP call for a client and an encoded provider body.
pub(crate) fn prepare(config: &ClientConfig, body: Vec<u8>) -> Result<http::Call> {
    prepare_for(config, body, false)
}

/// [`prepare`] for a streamed (`stream`) or a whole answer.
pub(crate) fn prepare_for(
    config: &ClientConfig,
    body: Vec<u8>,
    stream: bool,
) -> Result<http::Call> {
    prepare_at(config, body, config.endpoint_url(stream)?)
}

/// [`prepare`] for the style's token-counting endpoint
/// ([`ClientConfig::count_endpoint_url`]): the same headers, credentials,
/// retries and timeout.
pub(crate) fn prepare_count(config: &ClientConfig, body: Vec<u8>) -> Result<http::Call> {
    prepare_at(config, body, config.count_endpoint_url()?)
}

/// The HTTP call of a client to `endpoint` (as written and as parsed).
fn prepare_at(
    config: &ClientConfig,
    body: Vec<u8>,
    (url, target): (String, url::Url),
) -> Result<http::Call> {
    let api_key = config.resolve_api_key();
    let headers = http::header_map(&config.request_headers(api_key.as_deref()))?;
    Ok(http::Call {
        url,
        target,
        headers,
        body: body.into(),
        retries: config.retries,
        retry_base_ms: config.retry_base_ms,
        retryable_statuses: config.retryable_statuses.clone(),
        timeout_ms: config.timeout_ms,
        transport: None,
        secret: api_key,
    })
}
