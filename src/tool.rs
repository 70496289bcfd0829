//! Tool and ToolResult: the uniform shape every source collapses into
//! (CONTRACT.md §2, SPEC §0.1).

use crate::cancel::CancelToken;
use crate::env::Secrets;
use crate::parts::Part;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a tool came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    Skill,
    Builtin,
    Mcp,
    Http,
    Native,
    /// A remote A2A agent's skill (SPEC §7A).
    A2a,
    /// A declaration-only tool the caller runs (SPEC §10 addendum).
    Relay,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Skill => "skill",
            Source::Builtin => "builtin",
            Source::Mcp => "mcp",
            Source::Http => "http",
            Source::Native => "native",
            Source::A2a => "a2a",
            Source::Relay => "relay",
        }
    }
}

/// What a tool hands back. A failing tool is a value (`is_error`), never an
/// ABI error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub output: String,
    pub is_error: bool,
    pub metadata: Option<Map<String, Value>>,
    /// Non-text output (SPEC §1B): images, files, audio as bytes or URLs.
    /// `output` stays what a text-only reader sees; an empty list is left out
    /// of the JSON, so a result without parts is byte-identical to before.
    /// A boxed slice keeps a ToolResult small: it is the error type of many
    /// helpers, and nearly every result has no parts.
    pub parts: Box<[Part]>,
}

impl ToolResult {
    pub fn ok(output: impl Into<String>) -> Self {
        ToolResult {
            output: output.into(),
            is_error: false,
            metadata: None,
            parts: Box::default(),
        }
    }

    pub fn error(output: impl Into<String>) -> Self {
        ToolResult {
            output: output.into(),
            is_error: true,
            metadata: None,
            parts: Box::default(),
        }
    }

    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = Some(metadata);
        self
    }

    pub fn with_parts(mut self, parts: Vec<Part>) -> Self {
        self.parts = parts.into_boxed_slice();
        self
    }

    /// The canonical part objects, or `None` when there are none.
    fn parts_value(&self) -> Option<Value> {
        if self.parts.is_empty() {
            return None;
        }
        Some(Value::Array(
            self.parts.iter().map(Part::to_value).collect(),
        ))
    }

    /// `{"output","isError"}` plus `"metadata"` when the tool set any and
    /// `"parts"` when it returned any.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("output".into(), Value::String(self.output.clone()));
        m.insert("isError".into(), Value::Bool(self.is_error));
        if let Some(md) = &self.metadata {
            m.insert("metadata".into(), Value::Object(md.clone()));
        }
        if let Some(parts) = self.parts_value() {
            m.insert("parts".into(), parts);
        }
        Value::Object(m)
    }

    /// The text of [`ToolResult::to_json`], written directly (no `Value`
    /// built): [`ToolResult::into_json_bytes`] of a copy.
    pub fn to_json_string(&self) -> String {
        let bytes = self.clone().into_json_bytes();
        // UTF-8 by construction (see into_json_bytes).
        String::from_utf8(bytes).unwrap_or_else(|_| self.to_json().to_string())
    }

    /// The bytes of [`ToolResult::to_json_string`], written in the output's
    /// own buffer ([`crate::json::escape_in_place`]): no second buffer the
    /// size of the output, and one spare byte of capacity for the NUL a C
    /// string needs. They are UTF-8 without a second look: the output is a
    /// `str` kept verbatim apart from ASCII escapes, the rest is ASCII or
    /// `serde_json`'s own UTF-8.
    pub fn into_json_bytes(self) -> Vec<u8> {
        let tail = self.json_tail();
        crate::json::escape_in_place(self.output, b"{\"output\":", &tail)
    }

    /// What follows the output in the JSON text: `,"isError":..`, the
    /// metadata if any, and the closing brace. Without metadata it is a
    /// constant: nothing is allocated just after a large output, where it
    /// would keep the output's buffer from growing in place.
    fn json_tail(&self) -> Cow<'static, [u8]> {
        let closed: &'static [u8] = if self.is_error {
            b",\"isError\":true}"
        } else {
            b",\"isError\":false}"
        };
        let parts = self.parts_value();
        if self.metadata.is_none() && parts.is_none() {
            return Cow::Borrowed(closed);
        }
        let mut tail = closed[..closed.len() - 1].to_vec();
        // Writing a Map or a Value into a Vec cannot fail.
        if let Some(md) = &self.metadata {
            tail.extend_from_slice(b",\"metadata\":");
            let _ = serde_json::to_writer(&mut tail, md);
        }
        if let Some(parts) = &parts {
            tail.extend_from_slice(b",\"parts\":");
            let _ = serde_json::to_writer(&mut tail, parts);
        }
        tail.push(b'}');
        Cow::Owned(tail)
    }

    /// Reads a full ToolResult JSON (as a host function may hand back).
    /// `None` when it is not one; see [`ToolResult::parse_json`] for why.
    pub fn from_json(v: &Value) -> Option<ToolResult> {
        ToolResult::parse_json(v).ok()
    }

    /// Reads a full ToolResult JSON, or says which key is wrong.
    pub fn parse_json(v: &Value) -> Result<ToolResult, String> {
        let obj = v.as_object().ok_or("a ToolResult must be an object")?;
        let output = match obj.get("output") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err("a ToolResult needs a string \"output\"".into()),
        };
        let is_error = match obj.get("isError") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("ToolResult \"isError\" must be a boolean".into()),
        };
        let metadata = match obj.get("metadata") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(_) => return Err("ToolResult \"metadata\" must be an object".into()),
        };
        let parts = match obj.get("parts") {
            None | Some(Value::Null) => Box::default(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    Part::from_value(p).map_err(|e| format!("ToolResult parts[{i}]: {e}"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("ToolResult \"parts\" must be an array".into()),
        };
        Ok(ToolResult {
            output,
            is_error,
            metadata,
            parts,
        })
    }
}

/// The optional execution context of CONTRACT.md §5, and the per-call
/// control every tool observes: a deadline and a cancellation.
///
/// `timeout_ms` is what the host asked for; `deadline` is the instant it
/// ends, fixed when the call starts ([`ExecContext::armed`], done by
/// `Toolkit::execute` and `builtin::run`). `cancel` is a token the host may
/// trigger from another thread (the same [`CancelToken`] `tn_translate`
/// takes, so a host token can be threaded into `tn_execute` unchanged).
/// A tool that finds [`ExecContext::stop`] set ends with
/// [`ExecContext::stopped`] as its result.
#[derive(Debug, Clone, Default)]
pub struct ExecContext {
    /// A per-call timeout in milliseconds, when the host set one.
    pub timeout_ms: Option<u64>,
    /// The host's resolution of a suspended tool (SPEC §10), on the re-run.
    pub answer: Option<Value>,
    /// When the call must be over; `None` with a `timeout_ms` means "not
    /// started yet".
    pub deadline: Option<Instant>,
    /// A cancellation the host can trigger while the call runs.
    pub cancel: Option<CancelToken>,
    /// Where an MCP tool's server notifications during the call go (the
    /// gateway passes them on to its own client): `notifications/progress`
    /// (asked for with a progress token on the call), `notifications/message`.
    pub relay: Option<Relay>,
    /// The tag of the run the call belongs to, when whoever started the
    /// run gave it one ([`crate::client::Client::tagging_runs`]); the loop
    /// hands it on and never reads it. The agent runtime tags each handle's
    /// runs with the handle, so one `task` tool serves every handle of an
    /// agent definition.
    pub run_tag: Option<u64>,
}

/// What an MCP call hands back to whoever runs it (the gateway for a
/// proxied call; a streamed run, whose progress becomes `tool_progress`
/// events), beside its result: the server's notifications during the call
/// (`notifications/progress` without its `progressToken`, which is the
/// caller's own; `notifications/message`), the server's own requests to the calling
/// client (`sampling/createMessage`, `elicitation/create`: see [`Ask`]), and
/// the server's raw `tools/call` result (see [`Relay::keeping`]). Each is
/// optional; a relay with none does nothing. The notification callback runs
/// on the library's I/O threads, in the order the server sent them; it must
/// not block.
#[derive(Clone, Default)]
pub struct Relay {
    notes: Option<Arc<RelayFn>>,
    ask: Option<Arc<dyn Ask>>,
    raw: Option<Arc<std::sync::Mutex<Option<RawResult>>>>,
}

/// What a [`Relay`] calls: the notification's method and params.
pub type RelayFn = dyn Fn(&str, Value) + Send + Sync;

/// A proxied server's `tools/call` result as it sent it (secrets redacted),
/// and how many §1B parts the library's reading of it had, so the gateway
/// can tell a result whose parts a cap dropped since (it then answers the
/// library's reading).
#[derive(Debug, Clone)]
pub struct RawResult {
    pub result: Value,
    pub parts: usize,
}

/// The client of a proxied call, as the proxied server's requests reach it
/// (the gateway relays them, SPEC §7C).
pub trait Ask: Send + Sync {
    /// Whether this client takes `method` (it declared the capability).
    fn takes(&self, method: &str) -> bool;
    /// Asks the client. Dropping the future gives the question up.
    fn ask(&self, method: &str, params: Value) -> AskFuture;
}

/// How an [`Ask::ask`] ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    /// The client's result.
    Answer(Value),
    /// The JSON-RPC error object `{code, message, data?}` to answer the
    /// server with.
    Error(Value),
    /// The call this client was reached through is over (its answer stream
    /// closed) before the request went out: ask another.
    Gone,
}

/// What [`Ask::ask`] returns.
pub type AskFuture = Pin<Box<dyn Future<Output = Asked> + Send>>;

impl Relay {
    /// A relay of notifications to `f`.
    pub fn new(f: Arc<RelayFn>) -> Relay {
        Relay {
            notes: Some(f),
            ..Relay::default()
        }
    }

    /// This relay, passing the server's requests to `ask` too.
    pub fn with_ask(mut self, ask: Arc<dyn Ask>) -> Relay {
        self.ask = Some(ask);
        self
    }

    /// This relay, keeping the server's raw result ([`Relay::raw_result`]).
    pub fn keeping(mut self) -> Relay {
        self.raw = Some(Arc::default());
        self
    }

    /// Whether it takes notifications (a proxied call then asks for
    /// progress).
    pub fn wants_notes(&self) -> bool {
        self.notes.is_some()
    }

    /// Whether it routes anything of the server's while the call runs
    /// (notifications or requests), so the session must know the call.
    pub fn routes(&self) -> bool {
        self.notes.is_some() || self.ask.is_some()
    }

    /// Whether it keeps the raw result.
    pub fn wants_raw(&self) -> bool {
        self.raw.is_some()
    }

    pub fn send(&self, method: &str, params: Value) {
        if let Some(f) = &self.notes {
            f(method, params);
        }
    }

    /// The client to ask `method`, when there is one that takes it.
    pub fn asker(&self, method: &str) -> Option<Arc<dyn Ask>> {
        self.ask.as_ref().filter(|a| a.takes(method)).cloned()
    }

    /// Keeps the server's raw result (when this relay keeps one).
    pub fn keep(&self, raw: RawResult) {
        if let Some(slot) = &self.raw {
            *slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(raw);
        }
    }

    /// The raw result kept, taken out.
    pub fn raw_result(&self) -> Option<RawResult> {
        self.raw.as_ref().and_then(|slot| {
            slot.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
        })
    }
}

impl fmt::Debug for Relay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Relay")
    }
}

/// Why a call must stop before it is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The deadline passed.
    Timeout,
    /// The host cancelled the call.
    Cancelled,
}

impl Stop {
    /// The word results carry for it: `timeout` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stop::Timeout => "timeout",
            Stop::Cancelled => "cancelled",
        }
    }

    /// The metadata of a result that stopped for this: `{"error": word}`.
    pub fn metadata(self) -> Map<String, Value> {
        let mut md = Map::new();
        md.insert("error".into(), Value::String(self.as_str().into()));
        md
    }
}

impl ExecContext {
    /// This context with its deadline fixed from `timeout_ms`, counted from
    /// now; borrowed unchanged when there is nothing to fix.
    pub fn armed(&self) -> Cow<'_, ExecContext> {
        match (self.timeout_ms, self.deadline) {
            (Some(ms), None) => {
                let mut ctx = self.clone();
                ctx.deadline = Instant::now().checked_add(Duration::from_millis(ms));
                Cow::Owned(ctx)
            }
            _ => Cow::Borrowed(self),
        }
    }

    /// The time left before the deadline (zero once it passed), `None`
    /// without one. Before [`ExecContext::armed`], the whole `timeout_ms`.
    pub fn remaining(&self) -> Option<Duration> {
        match self.deadline {
            Some(d) => Some(d.saturating_duration_since(Instant::now())),
            None => self.timeout_ms.map(Duration::from_millis),
        }
    }

    /// Whether the host cancelled the call.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(CancelToken::is_cancelled)
    }

    /// Whether (and why) the call must stop now.
    pub fn stop(&self) -> Option<Stop> {
        if self.is_cancelled() {
            Some(Stop::Cancelled)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stop::Timeout)
        } else {
            None
        }
    }

    /// The result of a call of `tool` that stopped for `why`:
    /// `<tool>: timed out after N ms (timeoutMs)` or `<tool>: cancelled`,
    /// isError, metadata `{"error": "timeout" | "cancelled"}`.
    pub fn stopped(&self, tool: &str, why: Stop) -> ToolResult {
        let output = match why {
            Stop::Timeout => format!(
                "{tool}: timed out after {} ms (timeoutMs)",
                self.timeout_ms.unwrap_or(0)
            ),
            Stop::Cancelled => format!("{tool}: cancelled"),
        };
        ToolResult::error(output).with_metadata(why.metadata())
    }

    /// `Err(result)` when the call must stop now: `ctx.check("grep")?`.
    pub fn check(&self, tool: &str) -> Result<(), ToolResult> {
        match self.stop() {
            Some(why) => Err(self.stopped(tool, why)),
            None => Ok(()),
        }
    }
}

/// A tool call running on the library's runtime ([`Execute::execute_async`]).
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolResult> + Send + 'a>>;

/// The behaviour behind a tool. Implementations must be safe to call from
/// many threads at once.
pub trait Execute: Send + Sync {
    fn execute(&self, args: &Value, ctx: &ExecContext) -> ToolResult;

    /// The same call as a future, for a tool whose work is all I/O on the
    /// library's runtime (an MCP tool): a caller that is itself on the
    /// runtime (the served toolkit) awaits it there, with no blocking thread
    /// and no thread hop. `None`, the default, means "blocking only": such a
    /// caller runs [`Execute::execute`] on the runtime's blocking pool.
    fn execute_async<'a>(
        &'a self,
        _args: &'a Value,
        _ctx: &'a ExecContext,
    ) -> Option<ToolFuture<'a>> {
        None
    }

    /// The call for arguments given as JSON text, answered as the text of
    /// its ToolResult ([`ToolResult::into_json_bytes`], with the spare byte
    /// for a C string's NUL), for a tool that can write it without building
    /// the `Value` and the `ToolResult` of [`Execute::execute`] (the `skill`
    /// tool, whose output is read on every call). It must give exactly the
    /// bytes `execute` would for the same arguments, never with parts.
    /// `None`, the default, and the answer for any arguments the tool does
    /// not take this way (a malformed text among them), means the caller
    /// parses the text and calls `execute`; so a tool may only answer `None`
    /// before it has done anything.
    fn execute_json_text(&self, _args: &str, _ctx: &ExecContext) -> Option<Vec<u8>> {
        None
    }
}

impl<F> Execute for F
where
    F: Fn(&Value, &ExecContext) -> ToolResult + Send + Sync,
{
    fn execute(&self, args: &Value, ctx: &ExecContext) -> ToolResult {
        self(args, ctx)
    }
}

/// One tool of a toolkit.
#[derive(Clone)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub source: Source,
    pub exec: Arc<dyn Execute>,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("source", &self.source)
            .finish()
    }
}

impl Tool {
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Option<Value>,
        source: Source,
        exec: Arc<dyn Execute>,
    ) -> Tool {
        Tool {
            name: name.into(),
            description: description.into(),
            input_schema: input_schema.unwrap_or_else(default_schema),
            source,
            exec,
        }
    }

    /// `{name, description, inputSchema, source}` (the `tools` render format).
    pub fn declaration(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert(
            "description".into(),
            Value::String(self.description.clone()),
        );
        m.insert("inputSchema".into(), self.input_schema.clone());
        m.insert("source".into(), Value::String(self.source.as_str().into()));
        Value::Object(m)
    }
}

/// `{"type":"object"}`, the schema of a tool that declares none.
pub fn default_schema() -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String("object".into()));
    Value::Object(m)
}

/// SPEC §0.2: every character outside `[A-Za-z0-9_-]` becomes `_` (one per
/// code point).
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Redaction of a whole result lives here rather than in `env`, which sits
/// below `tool` and knows nothing of results.
impl Secrets {
    /// A ToolResult with its output and metadata redacted.
    pub fn redact_result(&self, mut r: ToolResult) -> ToolResult {
        if self.is_empty() {
            return r;
        }
        self.redact_string(&mut r.output);
        if let Some(md) = r.metadata.take() {
            let mut v = Value::Object(md);
            self.redact_value(&mut v);
            if let Value::Object(md) = v {
                r.metadata = Some(md);
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png() -> Part {
        Part::media_from_bytes("a.png", b"\x89PNG\r\n\x1a\n", Some("a.png".into())).unwrap()
    }

    #[test]
    fn the_direct_result_text_is_the_value_text() {
        let mut md = Map::new();
        md.insert("status".into(), Value::from(200));
        md.insert("note".into(), Value::from("a \"q\"\n\u{1}é"));
        let cases = [
            ToolResult::ok("ok"),
            ToolResult::error("line\n\"quoted\" \\ tab\t nul\u{0} ✓ 😀"),
            ToolResult::ok("").with_metadata(md.clone()),
            ToolResult::error("x").with_metadata(Map::new()),
            ToolResult::ok("a.png (image/png, 8 bytes)").with_parts(vec![png()]),
            ToolResult::ok("")
                .with_metadata(md.clone())
                .with_parts(vec![png(), png()]),
        ];
        for r in &cases {
            assert_eq!(r.to_json_string(), r.to_json().to_string());
            assert_eq!(
                r.clone().into_json_bytes(),
                r.to_json().to_string().into_bytes()
            );
        }
        assert_eq!(
            cases[2].to_json_string(),
            r#"{"output":"","isError":false,"metadata":{"status":200,"note":"a \"q\"\n\u0001é"}}"#
        );
        // Parts come after metadata, only when there are some (SPEC §1B).
        assert_eq!(
            cases[4].to_json_string(),
            r#"{"output":"a.png (image/png, 8 bytes)","isError":false,"parts":[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo=","name":"a.png"}]}"#
        );
    }

    #[test]
    fn a_host_result_with_parts_is_read_back_or_refused_by_key() {
        let v = cases_json();
        let r = ToolResult::parse_json(&v).unwrap();
        assert_eq!(&*r.parts, &[png()]);
        assert_eq!(r.to_json(), v);
        let bad = serde_json::json!({"output": "x", "parts": [{"type": "image", "data": "AA=="}]});
        assert_eq!(
            ToolResult::parse_json(&bad).unwrap_err(),
            "ToolResult parts[0]: a image part needs a mimeType"
        );
        let bad = serde_json::json!({"output": "x", "parts": {}});
        assert_eq!(
            ToolResult::parse_json(&bad).unwrap_err(),
            "ToolResult \"parts\" must be an array"
        );
        assert!(ToolResult::parse_json(&serde_json::json!({"isError": true})).is_err());
    }

    fn cases_json() -> Value {
        serde_json::json!({"output": "o", "isError": false,
            "parts": [{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo=","name":"a.png"}]})
    }

    #[test]
    fn results_lose_the_secret_in_output_and_metadata() {
        let mut s = Secrets::default();
        s.remember("K3Y");
        let mut md = serde_json::Map::new();
        md.insert(
            "echo".into(),
            serde_json::json!({"authorization": "Bearer K3Y", "K3Y": [1, "K3Y"]}),
        );
        let r = s.redact_result(ToolResult::error("HTTP 401: Bearer K3Y").with_metadata(md));
        let text = r.to_json_string();
        assert!(!text.contains("K3Y"), "{text}");
        assert_eq!(r.output, "HTTP 401: Bearer [redacted]");
    }
}
