//! `webfetch` (SPEC §4A): HTTP GET a URL and return its body as markdown,
//! text or html. Redirects are followed, at most 10 (divergences.json,
//! execute/webfetch/redirect-not-followed); a non-2xx final status is
//! `HTTP <status>`. A request that gets no response is webfetch's own
//! failure, worded as SPEC §4A and the recorded Clojure port word it:
//! `webfetch: transport failure: <kind>` with metadata `{"error": kind}`
//! (`timeout`, `dns`, `connect-failed`, `transport`), and a body larger than
//! 64 MiB (announced or read) is `too-large`: no server can make a call hold
//! unbounded memory.

use super::args;
use crate::limits::RESPONSE_BODY_BYTES;
use crate::net::transport::Failure;
use crate::runtime;
use crate::tool::{ExecContext, Stop, ToolResult};
use regex::Regex;
use serde_json::Value;
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

/// SPEC §4A: `timeout` is in seconds and defaults to 30.
const DEFAULT_TIMEOUT_S: i64 = 30;

pub fn run(args: &Value, ctx: &ExecContext) -> ToolResult {
    let url = args::string(args, "url");
    let format = args::opt_string(args, "format").unwrap_or_else(|| "markdown".into());
    let secs = match args::integer("webfetch", args, "timeout", DEFAULT_TIMEOUT_S) {
        Ok(s) => s,
        Err(e) => return e,
    };
    if url.is_empty() {
        return ToolResult::error("webfetch: url is required (a string)");
    }
    if !matches!(format.as_str(), "markdown" | "text" | "html") {
        return ToolResult::error(format!(
            "webfetch: format must be one of text, markdown, html, got {format:?}"
        ));
    }
    let mut limit = Duration::from_secs(u64::try_from(secs).unwrap_or(0));
    if let Some(left) = ctx.remaining() {
        limit = limit.min(left);
    }
    let client = match client() {
        Ok(c) => c.clone(),
        Err(e) => return ToolResult::error(format!("webfetch: {e}")),
    };
    let (tx, rx) = mpsc::channel();
    let target = url.clone();
    let cancel = ctx.cancel.clone();
    runtime::get().spawn(async move {
        let fetched = fetch(&client, &target, limit);
        // A cancel drops the request (its connection goes with it).
        let outcome = match cancel {
            None => Some(fetched.await),
            Some(cancel) => tokio::select! {
                r = fetched => Some(r),
                _ = cancel.cancelled() => None,
            },
        };
        let _ = tx.send(outcome);
    });
    let (status, body) = match rx.recv() {
        Ok(None) => return ctx.stopped("webfetch", Stop::Cancelled),
        Ok(Some(fetched)) => match fetched {
            Ok((status, bytes)) => (status, String::from_utf8_lossy(&bytes).into_owned()),
            Err(Failed::Transport(kind)) => return transport_failure(kind),
            Err(Failed::Other(why)) => return ToolResult::error(why),
        },
        Err(_) => return ToolResult::error(format!("webfetch: the request for {url} was dropped")),
    };
    if !(200..300).contains(&status) {
        return ToolResult::error(format!("HTTP {status}"));
    }
    match format.as_str() {
        "html" => ToolResult::ok(body),
        "text" => ToolResult::ok(strip_tags(&body)),
        _ => match htmd::convert(&body) {
            Ok(md) => ToolResult::ok(md.trim().to_string()),
            Err(e) => ToolResult::error(format!(
                "webfetch: cannot convert the page at {url} to markdown: {e}"
            )),
        },
    }
}

/// A request that got no usable response, as webfetch words it (not in
/// the wording of an HTTP tool): `webfetch: transport failure: <kind>`,
/// metadata `{"error": kind}`.
fn transport_failure(kind: Failure) -> ToolResult {
    let mut md = serde_json::Map::new();
    md.insert("error".into(), Value::String(kind.as_str().into()));
    let output = match kind {
        Failure::TooLarge => format!(
            "webfetch: transport failure: too-large (the response body is larger than {} MiB, \
             the most one call reads)",
            RESPONSE_BODY_BYTES >> 20
        ),
        other => format!("webfetch: transport failure: {}", other.as_str()),
    };
    ToolResult::error(output).with_metadata(md)
}

/// The one HTTP client every webfetch call shares.
fn client() -> Result<&'static reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            crate::net::reqwest_builder()
                .map_err(|e| format!("cannot create the HTTP client: {e}"))?
                .redirect(reqwest::redirect::Policy::limited(crate::limits::REDIRECTS))
                .build()
                .map_err(|e| format!("cannot create the HTTP client: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Why a fetch got no usable response.
enum Failed {
    /// A classified transport failure, reported as HTTP tools report it.
    Transport(Failure),
    /// Anything else (a bad URL, a redirect loop): the sentence to report.
    Other(String),
}

async fn fetch(
    client: &reqwest::Client,
    url: &str,
    limit: Duration,
) -> Result<(u16, Vec<u8>), Failed> {
    let failed = |e: reqwest::Error| {
        if e.is_timeout() {
            Failed::Transport(Failure::Timeout)
        } else if e.is_builder() {
            Failed::Other(format!(
                "webfetch: invalid url {url:?}: {}",
                error_chain(&e)
            ))
        } else if e.is_redirect() {
            Failed::Other(format!(
                "webfetch: GET {url} gave up after {} redirects",
                crate::limits::REDIRECTS
            ))
        } else if e.is_connect() {
            Failed::Transport(connect_failure(&e))
        } else {
            Failed::Transport(Failure::Transport)
        }
    };
    let mut resp = client
        .get(url)
        .timeout(limit)
        .send()
        .await
        .map_err(failed)?;
    let status = resp.status().as_u16();
    let cap = RESPONSE_BODY_BYTES;
    // An announced size past the cap fails before a byte of the body is read.
    if resp.content_length().is_some_and(|n| n > cap as u64) {
        return Err(Failed::Transport(Failure::TooLarge));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(failed)? {
        if body.len() + chunk.len() > cap {
            return Err(Failed::Transport(Failure::TooLarge));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((status, body))
}

/// A failed connection: `dns` when the name did not resolve (hyper-util
/// reports that as "dns error"), else `connect-failed`.
fn connect_failure(e: &reqwest::Error) -> Failure {
    let mut cause: Option<&dyn std::error::Error> = Some(e);
    while let Some(c) = cause {
        if c.to_string().starts_with("dns error") {
            return Failure::Dns;
        }
        cause = c.source();
    }
    Failure::ConnectFailed
}

/// An error with its causes, "a: b: c", since reqwest's own message alone
/// rarely says what went wrong.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        msg.push_str(": ");
        msg.push_str(&c.to_string());
        cause = c.source();
    }
    msg
}

/// The `text` format: tags removed, runs of blanks collapsed, trimmed.
fn strip_tags(html: &str) -> String {
    static TAG: OnceLock<Option<Regex>> = OnceLock::new();
    static BLANKS: OnceLock<Option<Regex>> = OnceLock::new();
    let tag = TAG.get_or_init(|| Regex::new(r"<[^>]*>").ok());
    let blanks = BLANKS.get_or_init(|| Regex::new(r"[ \t]+").ok());
    let mut s = html.to_string();
    if let Some(re) = tag {
        s = re.replace_all(&s, "").into_owned();
    }
    if let Some(re) = blanks {
        s = re.replace_all(&s, " ").into_owned();
    }
    s.trim().to_string()
}
