//! The MCP elicitation bridge (SPEC §2, onto §10): a server that asks for
//! input in the middle of a `tools/call` (`elicitation/create`, a request
//! from the server on the same session) gets it from the host's one
//! `waitFor`, inline, while the call waits.
//!
//! - A toolkit built with a `waitFor` advertises the `elicitation`
//!   capability (form and URL mode) in `initialize`; one built without does
//!   not, and an `elicitation/create` that comes anyway is refused with
//!   JSON-RPC `-32601` (method not found), which the server's tool sees.
//! - Form mode becomes the Request `{id, kind:"input", prompt, data:{schema}}`,
//!   URL mode `{id, kind:"authorization", prompt, url}`; `prompt` is the
//!   server's message.
//! - The Answer maps back: `ok` → `accept` (form mode: `data`, or `{}`, as
//!   the content, with the schema's default for each field left out —
//!   SEP-1034 — and each enum field held to its choices, a title answered
//!   becoming its value — SEP-1330), `ok:false` with `reason:"declined"` → `decline`, any other
//!   refusal (`cancelled`, `expired`, none) → `cancel`.
//! - The wait ends with `cancel` as soon as nobody needs the answer any more:
//!   every tool call that was in flight when the server asked has ended
//!   (cancelled, or out of time), the server cancelled its request, or the
//!   toolkit is closing. The host's `waitFor` is then told through its stop
//!   token; whatever it answers later is dropped.
//! - On a gateway (SPEC §7C) the question goes first to the MCP client whose
//!   call is in flight on this server, when it declared elicitation
//!   (`Relays::asker`), and its answer goes back as it is;
//!   a `sampling/createMessage` likewise (without such a client it is
//!   refused with -32601). The wait ends as the `waitFor`'s does (then
//!   `cancel`, or an error for sampling).
//! - A `waitFor` that fails (an error, a panic, an Answer of the wrong shape)
//!   answers the server with a JSON-RPC error naming the callback: the tool
//!   call still ends with an ordinary result.

use crate::cancel::CancelToken;
use crate::tool::{Ask, Asked};
#[allow(deprecated)] // logging is deprecated by SEP-2577 and still in 2025-11-25
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::ProgressNotificationParam;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorCode, ErrorData, FormElicitationCapability, Implementation,
    ProtocolVersion, UrlElicitationCapability,
};
#[allow(deprecated)] // sampling is deprecated by SEP-2577 and still in 2025-11-25
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::ClientHandler;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The host's §10 `waitFor` as a toolkit holds it: the Request JSON in, the
/// Answer JSON `{id?, ok, data?, reason?}` out (`Err`: the callback failed,
/// with why). `stop` is triggered once nobody waits for the answer any more;
/// a host that can give up early watches it. Called on a thread of the
/// library's pool, possibly on several at once.
pub type WaitFor = Arc<dyn Fn(&Value, &CancelToken) -> Result<Value, String> + Send + Sync>;

/// The tool calls in flight on one session, so that a server's question
/// can be given up when the calls it could belong to are all over.
#[derive(Default)]
pub struct Calls {
    next: AtomicU64,
    live: Mutex<HashSet<u64>>,
    ended: Notify,
}

/// One call in flight; dropping it (however the call ended) ends it.
pub struct CallGuard<'a> {
    calls: &'a Calls,
    id: u64,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.calls.live().remove(&self.id);
        self.calls.ended.notify_waiters();
    }
}

impl Calls {
    fn live(&self) -> std::sync::MutexGuard<'_, HashSet<u64>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn enter(&self) -> CallGuard<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.live().insert(id);
        CallGuard { calls: self, id }
    }

    fn snapshot(&self) -> HashSet<u64> {
        self.live().clone()
    }

    /// Resolves once none of `calls` is in flight any more.
    async fn all_ended(&self, calls: &HashSet<u64>) {
        loop {
            let notified = self.ended.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.live().is_disjoint(calls) {
                return;
            }
            notified.await;
        }
    }
}

/// The protocol revision offered in `initialize`.
pub const OFFERED_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The session's side of the client: what it advertises in `initialize`,
/// and its answer to a server's `elicitation/create`.
pub struct Handler {
    config: ClientConfig,
    wait_for: Option<WaitFor>,
    server: String,
    calls: Arc<Calls>,
    /// Where the server's progress and log notifications go.
    relays: Arc<super::relay::Relays>,
    /// Cancelled when the session closes.
    closing: CancellationToken,
}

impl Handler {
    pub fn new(
        server: &str,
        wait_for: Option<WaitFor>,
        calls: Arc<Calls>,
        relays: Arc<super::relay::Relays>,
        closing: CancellationToken,
    ) -> Handler {
        let mut capabilities = ClientCapabilities::default();
        if wait_for.is_some() {
            capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::new())
                    .with_url(UrlElicitationCapability::new()),
            );
        }
        Handler {
            // The newest revision that has an `initialize` (2025-11-25): rmcp's
            // default offers 2026-07-28 inside an `initialize`, which that
            // revision does not have and servers of 2025-11-25 reject.
            config: ClientConfig::new(
                capabilities,
                Implementation::new("toolnexus", env!("CARGO_PKG_VERSION")),
            )
            .with_protocol_version(OFFERED_VERSION),
            wait_for,
            server: server.to_string(),
            calls,
            relays,
            closing,
        }
    }

    async fn elicit(&self, wait_for: &WaitFor, request: Value, ct: CancellationToken) -> Reply {
        let waiting_on = self.calls.snapshot();
        let stop = CancelToken::new();
        let asked = {
            let (f, request, stop) = (Arc::clone(wait_for), request.clone(), stop.clone());
            tokio::task::spawn_blocking(move || f(&request, &stop))
        };
        let given_up = async {
            tokio::select! {
                _ = ct.cancelled() => {}
                _ = self.closing.cancelled() => {}
                _ = self.calls.all_ended(&waiting_on), if !waiting_on.is_empty() => {}
            }
        };
        tokio::select! {
            answered = asked => match answered {
                Ok(Ok(answer)) => result_of(answer, &request),
                Ok(Err(message)) => Err(format!("the waitFor callback failed: {message}")),
                Err(e) if e.is_panic() => Err("the waitFor callback panicked".into()),
                Err(e) => Err(format!("the waitFor callback did not finish ({e})")),
            },
            () = given_up => {
                stop.cancel();
                Ok(ElicitResult::new(ElicitationAction::Cancel))
            }
        }
    }
}

type Reply = Result<ElicitResult, String>;

/// How a request relayed to a calling client ended: its answer (a result,
/// or the JSON-RPC error object it answered), or `None` when nobody needs
/// it any more (every call that may have asked ended, the server
/// cancelled, the session is closing).
type Relayed = Option<Result<Value, Value>>;

impl Handler {
    /// Puts the server's `method` request to the first of `askers` (the
    /// clients of the gateway's calls in flight) whose call is still there
    /// to carry it, for as long as a call that may have asked is in flight.
    async fn relayed(
        &self,
        askers: Vec<(u64, Arc<dyn Ask>)>,
        method: &str,
        params: Value,
        ct: CancellationToken,
    ) -> Relayed {
        // Any call in flight may be the one that asked (the request says
        // not which): the question is given up once all of them ended.
        let waiting_on = self.calls.snapshot();
        for (call, asker) in askers {
            let asked = asker.ask(method, params.clone());
            let asked = tokio::select! {
                asked = asked => asked,
                _ = ct.cancelled() => return None,
                _ = self.closing.cancelled() => return None,
                _ = self.relays.ended(call), if waiting_on.is_empty() => return None,
                _ = self.calls.all_ended(&waiting_on), if !waiting_on.is_empty() => return None,
            };
            match asked {
                Asked::Answer(v) => return Some(Ok(v)),
                Asked::Error(e) => return Some(Err(e)),
                Asked::Gone => continue,
            }
        }
        None
    }
}

/// A relayed request's answer as the typed result rmcp answers the server
/// with.
fn answer_as<T: serde::de::DeserializeOwned>(
    method: &str,
    answer: Result<Value, Value>,
) -> Result<T, ErrorData> {
    match answer {
        Ok(v) => serde_json::from_value(v).map_err(|e| {
            ErrorData::internal_error(
                format!("the gateway's client answered {method} with a malformed result: {e}"),
                None,
            )
        }),
        Err(e) => Err(serde_json::from_value(e.clone()).unwrap_or_else(|_| {
            ErrorData::internal_error(
                format!("the gateway's client answered {method} with an error: {e}"),
                None,
            )
        })),
    }
}

impl ClientHandler for Handler {
    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        // The gateway's: the client whose call is in flight answers.
        let askers = self.relays.askers(ELICIT);
        if !askers.is_empty() {
            let params = serde_json::to_value(&params).unwrap_or(Value::Null);
            return match self.relayed(askers, ELICIT, params, context.ct).await {
                Some(answer) => answer_as(ELICIT, answer),
                None => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            };
        }
        let Some(wait_for) = &self.wait_for else {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "elicitation is not supported: this client did not advertise it \
                 (the toolkit was built without a waitFor)",
                None,
            ));
        };
        let request = request_of(&params);
        self.elicit(wait_for, request, context.ct)
            .await
            .map_err(|message| {
                crate::log::emit(crate::log::Level::Warn, "mcp", || {
                    format!(
                        "mcp server \"{}\": elicitation not answered: {message}",
                        self.server
                    )
                });
                ErrorData::internal_error(message, None)
            })
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let askers = self.relays.askers(SAMPLE);
        if askers.is_empty() {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "sampling is not supported: no call in flight on this server comes from \
                 an MCP client of the gateway that declared sampling",
                None,
            ));
        }
        let params = serde_json::to_value(&params).unwrap_or(Value::Null);
        match self.relayed(askers, SAMPLE, params, context.ct).await {
            Some(answer) => answer_as(SAMPLE, answer),
            None => Err(ErrorData::internal_error(
                "sampling/createMessage not answered: the call it was asked for ended first",
                None,
            )),
        }
    }

    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if self.relays.reads_in_order() {
            return;
        }
        if let Ok(v) = serde_json::to_value(&params) {
            self.relays.progress(v);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relays.list_changed(super::relay::LISTED_TOOLS);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relays.list_changed(super::relay::LISTED_PROMPTS);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relays.list_changed(super::relay::LISTED_RESOURCES);
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if self.relays.reads_in_order() {
            return;
        }
        if let Ok(v) = serde_json::to_value(&params) {
            self.relays.message(v);
        }
    }
}

const ELICIT: &str = "elicitation/create";
const SAMPLE: &str = "sampling/createMessage";

static SEQ: AtomicU64 = AtomicU64::new(1);

/// A fresh Request id: `elc-<ms since the epoch, hex>-<sequence>`.
fn request_id() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("elc-{ms:x}-{}", SEQ.fetch_add(1, Ordering::Relaxed))
}

/// The §10 Request of an `elicitation/create`: read from the request's
/// wire form, so a mode this SDK version does not know is still asked (as
/// form input) rather than dropped.
pub fn request_of(params: &ElicitRequestParams) -> Value {
    let wire = serde_json::to_value(params).unwrap_or(Value::Null);
    let text = |key: &str| wire.get(key).and_then(Value::as_str).unwrap_or_default();
    let mut r = Map::new();
    r.insert("id".into(), Value::String(request_id()));
    if text("mode") == "url" {
        r.insert("kind".into(), json!("authorization"));
        r.insert("prompt".into(), json!(text("message")));
        if !text("url").is_empty() {
            r.insert("url".into(), json!(text("url")));
        }
    } else {
        r.insert("kind".into(), json!("input"));
        r.insert("prompt".into(), json!(text("message")));
        if let Some(schema) = wire.get("requestedSchema").filter(|s| !s.is_null()) {
            r.insert("data".into(), json!({ "schema": schema }));
        }
    }
    Value::Object(r)
}

/// The elicitation result of the host's Answer to `request`.
pub fn result_of(answer: Value, request: &Value) -> Reply {
    let answer = crate::answer::check_against(answer, request).map_err(|(why, got)| {
        format!("the waitFor callback answered {got}; expected an Answer {{id, ok, data?, reason?}} ({why})")
    })?;
    if answer.get("ok") != Some(&Value::Bool(true)) {
        let action = match answer.get("reason").and_then(Value::as_str) {
            Some("declined") => ElicitationAction::Decline,
            _ => ElicitationAction::Cancel,
        };
        return Ok(ElicitResult::new(action));
    }
    let accept = ElicitResult::new(ElicitationAction::Accept);
    if request.get("kind").and_then(Value::as_str) == Some("authorization") {
        // URL mode: the interaction happened out of band; no content.
        return Ok(accept);
    }
    let schema = request.pointer("/data/schema").unwrap_or(&Value::Null);
    match answer.get("data") {
        None | Some(Value::Null) => Ok(accept.with_content(complete_form(Map::new(), schema)?)),
        Some(Value::Object(data)) => Ok(accept.with_content(complete_form(data.clone(), schema)?)),
        Some(other) => Err(format!(
            "the waitFor Answer's data must be an object for an MCP elicitation (the form's \
             values), got {}",
            crate::json::type_name(other)
        )),
    }
}

/// An accepted form's content as the server gets it: every field of the
/// schema the host left out that has a `default` gets it (SEP-1034), and
/// every enum field (SEP-1330: `enum`, `oneOf` of `{const, title}`, the
/// legacy `enumNames`, and arrays of those for multi-select) holds one of
/// its values; a host that answered an option's title gets its value. A
/// value that is neither is an error naming the field and the choices.
pub fn complete_form(mut content: Map<String, Value>, schema: &Value) -> Result<Value, String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(Value::Object(content));
    };
    for (field, prop) in props {
        match content.get_mut(field) {
            None => {
                if let Some(default) = prop.get("default") {
                    content.insert(field.clone(), default.clone());
                }
            }
            Some(value) => {
                if let Some(choices) = choices(prop) {
                    *value = pick(field, value, &choices)?;
                } else if let Some(choices) = prop.get("items").and_then(choices) {
                    if let Value::Array(items) = value {
                        for item in items.iter_mut() {
                            *item = pick(field, item, &choices)?;
                        }
                    }
                }
            }
        }
    }
    Ok(Value::Object(content))
}

/// The options `(value, title)` of an enum field, if it is one.
fn choices(prop: &Value) -> Option<Vec<(Value, Option<String>)>> {
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        let names = prop.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let title = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    (v.clone(), title)
                })
                .collect(),
        );
    }
    let options = prop
        .get("oneOf")
        .or_else(|| prop.get("anyOf"))
        .and_then(Value::as_array)?;
    let picked: Vec<_> = options
        .iter()
        .filter_map(|o| {
            let title = o.get("title").and_then(Value::as_str).map(str::to_string);
            o.get("const").map(|c| (c.clone(), title))
        })
        .collect();
    (!picked.is_empty()).then_some(picked)
}

fn pick(field: &str, value: &Value, choices: &[(Value, Option<String>)]) -> Result<Value, String> {
    if choices.iter().any(|(v, _)| v == value) {
        return Ok(value.clone());
    }
    if let Some(text) = value.as_str() {
        if let Some((v, _)) = choices.iter().find(|(_, t)| t.as_deref() == Some(text)) {
            return Ok(v.clone());
        }
    }
    let allowed: Vec<String> = choices.iter().map(|(v, _)| v.to_string()).collect();
    Err(format!(
        "the waitFor Answer's data.{field} is {value}, which is not one of the form's choices ({})",
        allowed.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> ElicitRequestParams {
        serde_json::from_value(json!({
            "message": "Your name?",
            "requestedSchema": {"type": "object",
                "properties": {"name": {"type": "string"}}, "required": ["name"]}
        }))
        .expect("a form elicitation")
    }

    fn url() -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "url", "message": "Log in", "url": "https://x/auth", "elicitationId": "e1"
        }))
        .expect("a URL elicitation")
    }

    // Follows upstream 0.21 test_unit.py::test_mcp_elicitation_maps_to_section10_request_and_answer.
    #[test]
    fn form_and_url_mode_become_input_and_authorization_requests() {
        let r = request_of(&form());
        assert_eq!(r["kind"], "input");
        assert_eq!(r["prompt"], "Your name?");
        assert_eq!(r["data"]["schema"]["properties"]["name"]["type"], "string");
        assert_eq!(r["data"]["schema"]["required"], json!(["name"]));
        assert!(r.get("url").is_none());
        assert!(r["id"].as_str().is_some_and(|id| id.starts_with("elc-")));

        let u = request_of(&url());
        assert_eq!(
            (&u["kind"], &u["prompt"], &u["url"]),
            (
                &json!("authorization"),
                &json!("Log in"),
                &json!("https://x/auth")
            )
        );
        assert!(u.get("data").is_none());
        assert_ne!(r["id"], u["id"]);
    }

    #[test]
    fn answers_map_to_accept_decline_and_cancel() {
        let req = request_of(&form());
        let id = req["id"].clone();
        let action = |a: Value| result_of(a, &req).map(|r| (r.action, r.content));
        assert_eq!(
            action(json!({"id": id, "ok": true, "data": {"name": "Ada"}})),
            Ok((ElicitationAction::Accept, Some(json!({"name": "Ada"}))))
        );
        assert_eq!(
            action(json!({"ok": true})),
            Ok((ElicitationAction::Accept, Some(json!({}))))
        );
        assert_eq!(
            action(json!({"ok": false, "reason": "declined"})),
            Ok((ElicitationAction::Decline, None))
        );
        for reason in [json!("cancelled"), json!("expired"), Value::Null] {
            assert_eq!(
                action(json!({"ok": false, "reason": reason})),
                Ok((ElicitationAction::Cancel, None))
            );
        }
        let u = request_of(&url());
        assert_eq!(
            result_of(json!({"ok": true, "data": {"token": "t"}}), &u).map(|r| r.content),
            Ok(None)
        );
    }

    fn ask(schema: Value) -> Value {
        let params: ElicitRequestParams =
            serde_json::from_value(json!({"message": "?", "requestedSchema": schema}))
                .expect("a form elicitation");
        request_of(&params)
    }

    /// SEP-1034: what the host leaves out the schema's defaults fill in;
    /// what it gives is kept.
    #[test]
    fn an_accepted_form_gets_the_schemas_defaults_for_missing_fields() {
        let req = ask(json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true},
            "note": {"type": "string"}
        }}));
        let content = |a: Value| result_of(a, &req).map(|r| r.content);
        assert_eq!(
            content(json!({"ok": true})),
            Ok(Some(json!({"name": "John Doe", "age": 30, "score": 95.5,
                           "status": "active", "verified": true})))
        );
        assert_eq!(
            content(json!({"ok": true, "data": {"name": "Ada", "verified": false, "note": "n"}})),
            Ok(Some(
                json!({"name": "Ada", "age": 30, "score": 95.5, "status": "active",
                           "verified": false, "note": "n"})
            ))
        );
        // A refusal carries no content at all.
        assert_eq!(
            content(json!({"ok": false, "reason": "declined"})),
            Ok(None)
        );
    }

    /// SEP-1330: the five enum forms; a title becomes its value, a value
    /// outside the choices is refused with the field named.
    #[test]
    fn enum_forms_take_values_or_titles_and_refuse_anything_else() {
        let req = ask(json!({"type": "object", "properties": {
            "untitled": {"type": "string", "enum": ["o1", "o2"]},
            "titled": {"type": "string", "oneOf": [
                {"const": "v1", "title": "First"}, {"const": "v2", "title": "Second"}]},
            "legacy": {"type": "string", "enum": ["l1", "l2"], "enumNames": ["One", "Two"]},
            "multi": {"type": "array", "items": {"type": "string", "enum": ["o1", "o2"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "v1", "title": "First"}, {"const": "v2", "title": "Second"}]}}
        }}));
        let content = |data: Value| result_of(json!({"ok": true, "data": data}), &req);
        assert_eq!(
            content(
                json!({"untitled": "o2", "titled": "Second", "legacy": "Two",
                           "multi": ["o1", "o2"], "titledMulti": ["First", "v2"]})
            )
            .map(|r| r.content),
            Ok(Some(
                json!({"untitled": "o2", "titled": "v2", "legacy": "l2",
                           "multi": ["o1", "o2"], "titledMulti": ["v1", "v2"]})
            ))
        );
        let e = content(json!({"titled": "Third"})).expect_err("refused");
        assert!(
            e.contains("data.titled") && e.contains("\"v1\", \"v2\""),
            "{e}"
        );
        let e = content(json!({"multi": ["o3"]})).expect_err("refused");
        assert!(e.contains("data.multi"), "{e}");
    }

    #[test]
    fn a_wrong_answer_is_an_error_naming_what_is_wrong() {
        let req = request_of(&form());
        let e = result_of(json!({"ok": "yes"}), &req).expect_err("refused");
        assert!(e.contains("ok must be a boolean"), "{e}");
        let e = result_of(json!({"id": "other", "ok": true}), &req).expect_err("refused");
        assert!(e.contains("echo the Request's id"), "{e}");
        let e = result_of(json!({"ok": true, "data": "Ada"}), &req).expect_err("refused");
        assert!(e.contains("data must be an object"), "{e}");
    }

    #[test]
    fn only_a_toolkit_with_a_wait_for_advertises_elicitation() {
        let calls = Arc::new(Calls::default());
        let without = Handler::new(
            "s",
            None,
            Arc::clone(&calls),
            Arc::default(),
            CancellationToken::new(),
        );
        assert!(without.get_info().capabilities.elicitation.is_none());
        let f: WaitFor = Arc::new(|_, _| Ok(json!({"ok": true})));
        let with = Handler::new(
            "s",
            Some(f),
            calls,
            Arc::default(),
            CancellationToken::new(),
        );
        let caps = serde_json::to_value(&with.get_info().capabilities).unwrap_or_default();
        assert_eq!(caps["elicitation"], json!({"form": {}, "url": {}}));
    }
}
