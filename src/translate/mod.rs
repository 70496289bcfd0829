//! SPEC §11 single-turn translation: one OpenAI-shaped request in, exactly one
//! provider call (plus retries), one OpenAI-shaped result out. No loop, no
//! tool execution, no conversation state, so calls may run concurrently from
//! any number of threads.
//!
//! - `mod.rs`     OpenAI-shaped request → validated [`Request`] → the
//!   style's body → one provider call → the answer read back in OpenAI
//!   shape (and the streamed variant, and token counting at the style's
//!   counting endpoint); the helpers by their vector names
//! - `helpers.rs` the SPEC §11 helpers by name, re-exported from the
//!   dialect files
//!
//! Everything dialect-specific is in the provider layer: each style's body
//! writer and answer reader in `provider/{openai,anthropic,gemini,
//! responses}.rs`, the arena tree in [`node`] (`provider::node`), the HTTP
//! call in [`client`] (`provider::http`).

pub mod helpers;
/// The arena JSON tree, in the provider layer; this path stays.
pub use crate::provider::node;
/// The validated OpenAI-shaped request (its reader, [`Request::from_node`],
/// is here).
pub use crate::provider::turn::Request;

/// The HTTP exchange, now in the provider layer; this path stays.
pub use crate::provider::http as client;
pub(crate) use crate::provider::prepare;

use crate::cancel::CancelToken;
use crate::error::{Error, ErrorCode, Result};
use crate::json::display_string;
use crate::provider::failover::{self, Leg, Served};
use crate::provider::{anthropic, gemini, openai, responses, turn};
use bumpalo::collections::Vec as BVec;
use bumpalo::Bump;
use node::Node;
use serde_json::Value;
use std::cell::OnceCell;

// ---------------------------------------------------------------------------
// the client (CONTRACT.md §6)
// ---------------------------------------------------------------------------

use crate::provider::RESERVED_PARAMS;
pub use crate::provider::{ClientConfig, Style, MAX_RETRIES, MAX_RETRY_BASE_MS};

/// The keys a request may have (an unknown one is refused, naming these).
const REQUEST_KEYS: [&str; 5] = ["messages", "tools", "toolChoice", "system", "maxTokens"];

// ---------------------------------------------------------------------------
// the request
// ---------------------------------------------------------------------------

/// `obj[key]`, with `null` read as absent.
fn present_in<'a>(obj: Node<'a>, key: &str) -> Option<Node<'a>> {
    obj.get(key).filter(|v| !v.is_null())
}

/// `request[key]` read by `pick` (null reads as absent); a value `pick`
/// refuses is an `invalid_config` error saying what `key` must be.
fn typed<'a, T>(
    request: Node<'a>,
    key: &str,
    expected: &str,
    pick: impl Fn(Node<'a>) -> Option<T>,
) -> Result<Option<T>> {
    match present_in(request, key) {
        None => Ok(None),
        Some(v) => pick(v).map(Some).ok_or_else(|| {
            Error::invalid_config(format!(
                "request.{key} must be {expected}, got {}",
                v.type_name()
            ))
        }),
    }
}

impl<'a> Request<'a> {
    /// Reads and validates a request JSON object. Unknown keys and values of
    /// the wrong type are `invalid_config` errors naming the key; a message that
    /// is not an object is an `invalid_argument` error naming its index.
    pub fn from_node(v: Node<'a>) -> Result<Request<'a>> {
        let Node::Object(entries) = v else {
            return Err(Error::invalid_config(format!(
                "request must be a JSON object, got {}",
                v.type_name()
            )));
        };
        if let Some((k, _)) = entries.iter().find(|(k, _)| !REQUEST_KEYS.contains(k)) {
            let hint = if *k == "toolkit" {
                " (a toolkit is passed as its own argument to tn_translate)"
            } else {
                ""
            };
            return Err(Error::invalid_config(format!(
                "request: unknown key '{k}'{hint} (known keys: {})",
                REQUEST_KEYS.join(", ")
            )));
        }
        let messages = match typed(v, "messages", "an array", Node::as_array)? {
            Some(m) => m,
            None => return Err(Error::invalid_config("request.messages is required")),
        };
        if let Some((i, m)) = messages.iter().enumerate().find(|(_, m)| !m.is_object()) {
            return Err(Error::invalid_argument(format!(
                "messages[{i}] must be an object, got {}",
                m.type_name()
            )));
        }
        let tools = typed(v, "tools", "an array", Node::as_array)?.unwrap_or(&[]);
        let system = typed(v, "system", "a string", Node::as_str)?;
        let max_tokens = typed(v, "maxTokens", "a number", |n| match n {
            Node::Number(n) => Some(n),
            _ => None,
        })?;
        Ok(Request {
            messages,
            tools,
            tool_choice: present_in(v, "toolChoice"),
            system,
            max_tokens,
        })
    }
}

// ---------------------------------------------------------------------------
// the provider body (pure)
// ---------------------------------------------------------------------------

/// The JSON body of the provider call, before it is serialised. `declared` are
/// the toolkit's tools in OpenAI shape; they come before `request.tools`.
pub fn provider_body<'a>(
    bump: &'a Bump,
    client: &'a ClientConfig,
    request: &Request<'a>,
    declared: &[Node<'a>],
) -> Node<'a> {
    let mut body = match client.style {
        Style::OpenAi => openai::request_body(bump, client, request, declared),
        Style::Anthropic => anthropic::request_body(bump, client, request, declared),
        Style::Gemini => return gemini::request_body(bump, client, request, declared),
        Style::Responses => return responses::request_body(bump, client, request, declared),
    };
    for (k, v) in &client.request_params {
        if RESERVED_PARAMS.contains(&k.as_str()) {
            continue;
        }
        if client.style == Style::Anthropic {
            let own = request
                .max_tokens
                .filter(|n| n.as_f64() > 0.0)
                .and_then(|n| u64::try_from(n.as_f64() as i64).ok());
            match anthropic::param(k, v, &client.request_params, own) {
                anthropic::Param::AsIs => {}
                anthropic::Param::Mapped(name, value) => {
                    body.insert(name, node::copy_value(bump, &value));
                    continue;
                }
                anthropic::Param::Dropped => continue,
            }
        }
        body.insert(k, node::from_value(bump, v));
    }
    let body = body.build();
    if client.style == Style::Anthropic {
        return anthropic::cap_cache_breakpoints(bump, body);
    }
    body
}

// ---------------------------------------------------------------------------
// the provider's answer (pure)
// ---------------------------------------------------------------------------

/// The provider's decoded answer in OpenAI shape: `{text, toolCalls,
/// finishReason, usage, model, raw}`. `model` is the model the call asked for.
pub fn read_response<'a>(bump: &'a Bump, style: Style, model: &'a str, raw: Node<'a>) -> Node<'a> {
    let (text, calls, finish) = match style {
        Style::OpenAi => openai::read_answer(bump, raw),
        Style::Anthropic => anthropic::read_answer(bump, raw),
        Style::Gemini => return gemini::read_answer(bump, model, raw),
        Style::Responses => return responses::read_answer(bump, model, raw),
    };
    let usage = usage_of(bump, style, raw);
    turn::answer_node(bump, text, calls, finish, usage, model, raw)
}

/// The usage of an OpenAI or Anthropic answer, read by the dialect (the
/// same reader the client loop uses); an absent usage is all zeros.
fn usage_of<'a>(bump: &'a Bump, style: Style, raw: Node<'a>) -> Node<'a> {
    let counted = match style {
        Style::OpenAi => openai::usage(raw),
        _ => anthropic::usage(raw),
    };
    let (p, c, t) = counted.unwrap_or((0, 0, 0));
    turn::usage_node(bump, p, c, t)
}

/// An Anthropic answer to a client that enabled thinking
/// (`requestParams.thinking`): the answer gets `reasoningContent` (the
/// thinking text joined) and `thinkingBlocks` (the `thinking` and
/// `redacted_thinking` blocks as sent, signatures included, to send back on
/// the assistant message as `thinking_blocks`) when it has any. Without
/// that param the answer keeps the pinned shape (the blocks stay in `raw`).
fn with_thinking<'a>(
    bump: &'a Bump,
    config: &ClientConfig,
    answer: Node<'a>,
    raw: Node<'a>,
) -> Node<'a> {
    let Node::Object(entries) = answer else {
        return answer;
    };
    if config.style != Style::Anthropic || !config.request_params.contains_key("thinking") {
        return answer;
    }
    let mut entries = entries.to_vec();
    anthropic::thinking(bump, raw, &mut entries);
    node::object(bump, &entries)
}

// ---------------------------------------------------------------------------
// the entry points
// ---------------------------------------------------------------------------

/// The arena for one call, sized so that a request of `len` bytes rarely
/// needs a second chunk.
fn arena_for(len: usize) -> Bump {
    Bump::with_capacity(len.saturating_mul(3).clamp(4096, 1 << 24))
}

/// One exchange: validates the request, makes the provider call and reads
/// the answer, all in `bump`; the provider's reply is kept in `reply_slot`,
/// which the answer borrows from. `source` is the text `request` was parsed
/// from, if any. Gives the answer and the provider's reply text.
fn exchange<'a>(
    bump: &'a Bump,
    reply_slot: &'a OnceCell<bytes::Bytes>,
    leg: &Leg<'a>,
    request: Node<'a>,
    source: Option<&'a node::Source<'a>>,
    declared: &'a [Value],
    cancel: Option<&CancelToken>,
) -> Result<(Node<'a>, Option<&'a str>)> {
    let config = leg.config;
    let request = Request::from_node(request)?;
    let declared: Vec<Node<'a>> = declared.iter().map(|d| node::from_value(bump, d)).collect();
    let body = provider_body(bump, config, &request, &declared);
    let model = body
        .get("model")
        .map_or(config.model.as_str(), |m| m.display(bump));
    let capacity = source.map_or(4096, |s| s.text().len() + 1024);
    let encoded = body.to_vec_from(source.map_or(&[], std::slice::from_ref), capacity);
    let call = prepare(config, encoded)?;
    // A token cancelled beforehand stops the call there, before any I/O.
    let mut classify =
        |info: &client::FailedAttempt| leg.classify(info, &mut |i| Ok(client::default_verdict(i)));
    let reply = client::send_until(&call, leg.deadline, cancel, &mut classify)?;
    leg.commit();
    let status = reply.status;
    let bytes: &'a [u8] = reply_slot.get_or_init(|| reply.body);
    let raw =
        node::parse_slice(bump, bytes).map_err(|e| client::malformed(&call, status, &e, bytes))?;
    let answer = with_thinking(
        bump,
        config,
        read_response(bump, config.style, model, raw),
        raw,
    );
    Ok((answer, std::str::from_utf8(bytes).ok()))
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
    let bump = arena_for(0);
    let reply = OnceCell::new();
    let request = node::from_value(&bump, request);
    let ((answer, _), served) = failover::run(&config, call_deadline(&config), |leg| {
        exchange(&bump, &reply, leg, request, None, declared, cancel)
    })?;
    Ok(with_upstream(&bump, answer, served.as_ref()).to_value())
}

/// The deadline a client's `timeoutMs` sets for a whole call, from now.
fn call_deadline(config: &ClientConfig) -> Option<std::time::Instant> {
    config
        .timeout_ms
        .map(|ms| std::time::Instant::now() + std::time::Duration::from_millis(ms))
}

/// The answer of a client with `upstreams`, with the one that served it as
/// `upstream: {index, baseUrl, model, style}`.
fn with_upstream<'a>(bump: &'a Bump, answer: Node<'a>, served: Option<&Served>) -> Node<'a> {
    match (answer, served) {
        (Node::Object(entries), Some(served)) => {
            let mut entries = entries.to_vec();
            // Parsed into the arena (a `Value` put there would never be
            // dropped).
            let text = bump.alloc_str(&served.to_json().to_string());
            if let Ok(upstream) = node::parse_slice(bump, text.as_bytes()) {
                entries.push(("upstream", upstream));
            }
            node::object(bump, &entries)
        }
        _ => answer,
    }
}

/// [`translate`] with the request and the answer as JSON text, which is how
/// `tn_translate` calls it: the request is parsed straight into the call's
/// arena and the answer written straight from it.
pub fn translate_json(
    client: &Value,
    request_json: &str,
    declared: &[Value],
    cancel: Option<&CancelToken>,
) -> Result<String> {
    let bump = arena_for(request_json.len());
    let (request, source) = node::parse_source(&bump, request_json)
        .map_err(|e| Error::invalid_json("request_json", &e))?;
    let config = ClientConfig::from_json(client)?;
    let reply_slot = OnceCell::new();
    let ((answer, reply), served) = failover::run(&config, call_deadline(&config), |leg| {
        exchange(
            &bump,
            &reply_slot,
            leg,
            request,
            Some(&source),
            declared,
            cancel,
        )
    })?;
    let answer = with_upstream(&bump, answer, served.as_ref());
    let capacity = reply.map_or(1024, |r| 2 * r.len() + 256);
    let reply = reply.map(node::Source::from);
    Ok(node::into_string(
        answer.to_vec_from(reply.as_slice(), capacity),
    ))
}

// ---------------------------------------------------------------------------
// token counting
// ---------------------------------------------------------------------------

/// The JSON body of a style's token-counting call: what [`provider_body`]
/// would send for the request, cut to what the style's counting endpoint
/// takes (each dialect's `count_body`: Anthropic's `count_tokens` keys,
/// Gemini's `generateContentRequest`, the Responses `input_tokens` keys;
/// the chat style sends the Responses body, having no endpoint of its
/// own).
pub fn count_body<'a>(
    bump: &'a Bump,
    client: &'a ClientConfig,
    request: &Request<'a>,
    declared: &[Node<'a>],
) -> Node<'a> {
    match client.style {
        Style::OpenAi => openai::count_body(bump, client, request, declared),
        Style::Anthropic => {
            anthropic::count_body(bump, provider_body(bump, client, request, declared))
        }
        Style::Gemini => {
            gemini::count_body(bump, client, provider_body(bump, client, request, declared))
        }
        Style::Responses => {
            responses::count_body(bump, provider_body(bump, client, request, declared))
        }
    }
}

/// One counting exchange on one leg: the request validated, the count
/// body sent to the style's counting endpoint (the leg's retries, deadline
/// and cancel token, as [`exchange`]), the count read off the answer.
/// Gives `{inputTokens, style, model}`.
fn count_exchange<'a>(
    bump: &'a Bump,
    leg: &Leg<'a>,
    request: Node<'a>,
    declared: &'a [Value],
    cancel: Option<&CancelToken>,
) -> Result<Node<'a>> {
    let config = leg.config;
    let request = Request::from_node(request)?;
    let declared: Vec<Node<'a>> = declared.iter().map(|d| node::from_value(bump, d)).collect();
    let body = count_body(bump, config, &request, &declared);
    let call = crate::provider::prepare_count(config, body.to_vec())?;
    let mut classify =
        |info: &client::FailedAttempt| leg.classify(info, &mut |i| Ok(client::default_verdict(i)));
    let reply = client::send_until(&call, leg.deadline, cancel, &mut classify)?;
    leg.commit();
    let bytes: &'a [u8] = bump.alloc_slice_copy(&reply.body);
    let raw = node::parse_slice(bump, bytes)
        .map_err(|e| client::malformed(&call, reply.status, &e, bytes))?;
    let (count, field) = match config.style {
        Style::OpenAi => (openai::count_of(raw), openai::COUNT_FIELD),
        Style::Anthropic => (anthropic::count_of(raw), anthropic::COUNT_FIELD),
        Style::Gemini => (gemini::count_of(raw), gemini::COUNT_FIELD),
        Style::Responses => (responses::count_of(raw), responses::COUNT_FIELD),
    };
    let count = count.ok_or_else(|| {
        client::malformed_because(
            &call,
            reply.status,
            &format!("the token count answer has no whole number '{field}'"),
            bytes,
        )
    })?;
    Ok(node::object(
        bump,
        &[
            ("inputTokens", Node::Number(node::Num::Pos(count))),
            ("style", Node::Str(config.style.name())),
            ("model", Node::Str(&config.model)),
        ],
    ))
}

/// Token counting (issue 29): how many input tokens the client's provider
/// counts for `request_json`, [`translate_json`]'s request (and `declared`
/// its toolkit's tools), asked of the style's counting endpoint
/// (Anthropic `POST …/v1/messages/count_tokens`, Gemini `POST
/// …/models/{model}:countTokens`, OpenAI Responses and chat `POST
/// {baseUrl}/responses/input_tokens`) with the body [`count_body`]
/// writes. The call is made as translate makes its own: the client's
/// headers and credentials, retries, `timeoutMs`, the cancel token and
/// ordered failover over `upstreams`. Gives `{"inputTokens", "style",
/// "model"}` (and `upstream` for a client with upstreams); a provider's
/// error status is translate's `provider_error`.
pub fn count_tokens_json(
    client: &Value,
    request_json: &str,
    declared: &[Value],
    cancel: Option<&CancelToken>,
) -> Result<String> {
    let bump = arena_for(request_json.len());
    let (request, _) = node::parse_source(&bump, request_json)
        .map_err(|e| Error::invalid_json("request_json", &e))?;
    let config = ClientConfig::from_json(client)?;
    let (answer, served) = failover::run(&config, call_deadline(&config), |leg| {
        count_exchange(&bump, leg, request, declared, cancel)
    })?;
    let answer = with_upstream(&bump, answer, served.as_ref());
    Ok(node::into_string(answer.to_vec()))
}

// ---------------------------------------------------------------------------
// streaming translate
// ---------------------------------------------------------------------------

/// A stream id no other stream of this process shares.
fn stream_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "chatcmpl-tn{:x}{:x}",
        nanos & 0xffff_ffff_ffff,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Streaming translate: [`translate_json`]'s request, sent to the
/// provider as a streamed call (`stream: true`, Gemini's
/// `streamGenerateContent?alt=sse`), its events re-told as they arrive as
/// OpenAI `chat.completion.chunk` SSE events through `on_chunk` (see
/// [`crate::provider::chunks`]); `on_chunk` answers `false` to stop. The
/// events are read by the style's stream assembler
/// ([`crate::provider::stream::Assembler`], the loop's own, watching the
/// leg's deadline and the cancel token) with the chunk writer as its sink,
/// so a relayed stream is bounded as the loop's is: at most
/// [`crate::limits::RESPONSE_BODY_BYTES`] of answer and
/// [`crate::provider::gather::MAX_TOOL_CALLS`] tool calls, past either it
/// fails with the cap's `provider_error`. A provider that answers with a
/// whole JSON body is re-told from it. The call is retried only before any
/// of the answer arrived. Gives `{id, finishReason, chunks}`.
pub fn translate_stream_json(
    client: &Value,
    request_json: &str,
    declared: &[Value],
    cancel: Option<&CancelToken>,
    on_chunk: &mut dyn FnMut(&str) -> bool,
) -> Result<Value> {
    use crate::provider::chunks::{write_whole, ChunkWriter};
    use crate::provider::sse::SseParser;
    use crate::provider::stream::Assembler;
    let bump = arena_for(request_json.len());
    let (request, _) = node::parse_source(&bump, request_json)
        .map_err(|e| Error::invalid_json("request_json", &e))?;
    let client_config = ClientConfig::from_json(client)?;
    let request = Request::from_node(request)?;
    let declared: Vec<Node> = declared
        .iter()
        .map(|d| node::from_value(&bump, d))
        .collect();
    let id = stream_id();
    let (mut out, served) = failover::run(&client_config, call_deadline(&client_config), |leg| {
        let config = leg.config;
        let mut body = provider_body(&bump, config, &request, &declared).to_value();
        if let Value::Object(b) = &mut body {
            match config.style {
                Style::Gemini => {}
                Style::OpenAi => {
                    b.insert("stream".into(), Value::Bool(true));
                    b.insert(
                        "stream_options".into(),
                        serde_json::json!({"include_usage": true}),
                    );
                }
                Style::Anthropic | Style::Responses => {
                    b.insert("stream".into(), Value::Bool(true));
                }
            }
        }
        let encoded = serde_json::to_vec(&body).unwrap_or_default();
        let call = crate::provider::prepare_for(config, encoded, true)?;
        let deadline = leg.deadline;
        let mut writer = ChunkWriter::new(id.clone(), &config.model, &mut *on_chunk);
        let mut assembler = Assembler::new(config.style);
        assembler.watch(deadline, cancel);
        let mut parser = SseParser::new();
        // None: not decided yet; Some(true): events; Some(false): a whole body.
        let mut events: Option<bool> = None;
        let mut whole: Vec<u8> = Vec::new();
        let mut failed: Option<Error> = None;
        let mut classify = |info: &client::FailedAttempt| {
            leg.classify(info, &mut |i| Ok(client::default_verdict(i)))
        };
        let mut sink = |mut piece: &[u8]| -> bool {
            // Once any of the answer arrived, no other upstream takes over.
            leg.commit();
            if events.is_none() {
                let Some(start) = piece.iter().position(|b| !b.is_ascii_whitespace()) else {
                    return true;
                };
                piece = &piece[start..];
                events = Some(piece[0] != b'{');
            }
            let result = if events == Some(true) {
                parser.feed(piece, &mut |name, data| {
                    assembler.event(name, data, &mut writer)
                })
            } else if whole.len() + piece.len() > crate::limits::RESPONSE_BODY_BYTES {
                Err(Error::new(
                    ErrorCode::ProviderError,
                    "the provider's answer is larger than the cap of a provider answer",
                ))
            } else {
                whole.extend_from_slice(piece);
                Ok(())
            };
            match result {
                Ok(()) => true,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            }
        };
        let reply =
            client::send_streaming_until(&call, deadline, cancel, &mut classify, &mut sink)?;
        // The assembler's own look at the clock and the token ends the call
        // as the exchange's would (the host's callback saying stop keeps its
        // own words).
        let stopped = |e: Error| match e.code {
            ErrorCode::Timeout => client::timed_out(&call),
            ErrorCode::Cancelled if cancel.is_some_and(CancelToken::is_cancelled) => {
                client::cancelled()
            }
            _ => e,
        };
        if let Some(e) = failed {
            return Err(stopped(e));
        }
        let finish = match events {
            Some(true) => {
                parser
                    .finish(&mut |name, data| assembler.event(name, data, &mut writer))
                    .map_err(stopped)?;
                writer.end()?
            }
            Some(false) => {
                let raw = node::parse_slice(&bump, &whole)
                    .map_err(|e| client::malformed(&call, reply.status, &e, &whole))?;
                let answer = read_response(&bump, config.style, &config.model, raw).to_value();
                write_whole(&answer, &mut writer)?
            }
            None => return Err(client::malformed_stream(&call, reply.status, b"")),
        };
        Ok(serde_json::json!({
            "id": writer.id(),
            "finishReason": finish,
            "chunks": writer.written,
        }))
    })?;
    if let (Value::Object(out), Some(served)) = (&mut out, served) {
        out.insert("upstream".into(), served.to_json());
    }
    Ok(out)
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
    // The §10 answer helpers share the entry point (upstream D4, #89).
    if let Some(answer) = crate::answer::call_helper(name, args) {
        return answer;
    }
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
    let bump = Bump::new();
    let a = node::from_value(&bump, &args[0]);
    let list = a.as_array().unwrap_or(&[]);
    let string = |s: &str| Value::String(s.to_string());
    Ok(match name {
        "sanitize" => Value::String(crate::tool::sanitize(&display_string(&args[0]))),
        "finishReasonFor" => {
            let has_calls = !matches!(a, Node::Null | Node::Bool(false));
            let stop = node::from_value(&bump, &args[1]);
            string(helpers::finish_reason_for(has_calls, Some(stop)))
        }
        "contentText" => string(helpers::content_text(&bump, Some(a))),
        "argsObject" => helpers::args_object(&bump, Some(a)).to_value(),
        "argsString" => string(helpers::args_string(&bump, Some(a))),
        "toolCallsOf" => Value::Array(
            helpers::tool_calls_of(&bump, a)
                .map(|c| c.to_node(&bump).to_value())
                .collect(),
        ),
        "hasSystemMessage" => Value::Bool(helpers::has_system_message(list)),
        "openaiToolChoiceToAnthropic" => helpers::openai_tool_choice_to_anthropic(&bump, Some(a))
            .map_or(Value::Null, Node::to_value),
        "openaiToolsToAnthropic" => {
            let mut out = BVec::new_in(&bump);
            helpers::openai_tools_to_anthropic(&bump, list, &mut out);
            node::array(out).to_value()
        }
        "toolCallsJson" => helpers::tool_calls_json(&bump, a).to_value(),
        _ => helpers::openai_messages_to_anthropic(&bump, list)
            .to_node(&bump)
            .to_value(),
    })
}

#[cfg(test)]
mod tests {
    use super::Request;
    use crate::provider::node;

    /// An unknown request key is refused with the keys a request may have,
    /// each named once, in the documented order.
    #[test]
    fn an_unknown_request_key_names_the_accepted_ones() {
        let bump = bumpalo::Bump::new();
        let request = node::parse(&bump, r#"{"messages":[],"toolkit":{}}"#).expect("JSON");
        let err = Request::from_node(request).expect_err("toolkit is no request key");
        assert_eq!(
            err.to_string(),
            "invalid_config: request: unknown key 'toolkit' (a toolkit is passed as its own argument to \
             tn_translate) (known keys: messages, tools, toolChoice, system, maxTokens)"
        );
    }

    /// A tool's schema is deferred when its text is already compact (and
    /// read when it is not): the body of every style is the same either
    /// way, and the same as from the request as a `Value`.
    #[test]
    fn a_schema_compact_or_spread_out_gives_the_same_body_in_every_style() {
        use super::{provider_body, ClientConfig};
        let schema = r#"{"type":"object","properties":{"city":{"type":"string","description":"City"},"days":{"type":"integer","minimum":1},"units":{"enum":["c","f"]}},"required":["city"]}"#;
        let request = |schema: &str| {
            format!(
                r#"{{"messages":[{{"role":"user","content":"hi"}}],"tools":[{{"type":"function","function":{{"name":"weather","description":"Weather","parameters":{schema}}}}}]}}"#
            )
        };
        let compact = request(schema);
        let value: serde_json::Value = serde_json::from_str(&compact).expect("JSON");
        let spread = request(
            &serde_json::to_string_pretty(&value["tools"][0]["function"]["parameters"])
                .expect("JSON"),
        );
        for style in ["openai", "anthropic", "gemini", "responses"] {
            let client = serde_json::json!({"style": style, "baseUrl": "http://127.0.0.1:9", "model": "m", "apiKey": "k"});
            let config = ClientConfig::from_json(&client).expect("client");
            let body = |text: &str| {
                let bump = bumpalo::Bump::new();
                let (tree, source) = node::parse_source(&bump, text).expect("JSON");
                let request = Request::from_node(tree).expect("request");
                let tools = tree
                    .get("tools")
                    .and_then(node::Node::as_array)
                    .expect("tools");
                let p = tools[0]
                    .get("function")
                    .and_then(|f| f.get("parameters"))
                    .expect("schema");
                let deferred = matches!(p, node::Node::Deferred(_));
                let body = provider_body(&bump, &config, &request, &[]).to_vec_from(&[source], 0);
                (String::from_utf8(body).expect("UTF-8"), deferred)
            };
            let (from_compact, deferred) = body(&compact);
            let (from_spread, read) = body(&spread);
            assert!(
                deferred && !read,
                "{style}: the compact schema deferred, the spread one read"
            );
            assert_eq!(from_compact, from_spread, "{style}");
            let bump = bumpalo::Bump::new();
            let request = Request::from_node(node::from_value(&bump, &value)).expect("request");
            let from_value = provider_body(&bump, &config, &request, &[]).to_vec();
            assert_eq!(from_compact.as_bytes(), from_value, "{style}");
            assert!(from_compact.contains("City"), "{style}: {from_compact}");
        }
    }
}
