//! `webfetch` (SPEC §4A): HTTP GET a URL and return its body as markdown,
//! text or html. Redirects are followed, at most 10 (divergences.json,
//! execute/webfetch/redirect-not-followed); a non-2xx final status is
//! `HTTP <status>`.

use super::args;
use crate::runtime;
use crate::tool::{ExecContext, ToolResult};
use regex::Regex;
use serde_json::Value;
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

/// SPEC §4A: `timeout` is in seconds and defaults to 30.
const DEFAULT_TIMEOUT_S: i64 = 30;
const MAX_REDIRECTS: usize = 10;

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
    if let Some(host) = ctx.timeout_ms {
        limit = limit.min(Duration::from_millis(host));
    }
    let client = match client() {
        Ok(c) => c.clone(),
        Err(e) => return ToolResult::error(format!("webfetch: {e}")),
    };
    let (tx, rx) = mpsc::channel();
    let target = url.clone();
    runtime::get().spawn(async move {
        let _ = tx.send(fetch(&client, &target, limit).await);
    });
    let (status, body) = match rx.recv() {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return ToolResult::error(e),
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

/// The one HTTP client every webfetch call shares.
fn client() -> Result<&'static reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            crate::net::reqwest_builder()
                .map_err(|e| format!("cannot create the HTTP client: {e}"))?
                .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
                .build()
                .map_err(|e| format!("cannot create the HTTP client: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

async fn fetch(
    client: &reqwest::Client,
    url: &str,
    limit: Duration,
) -> Result<(u16, String), String> {
    let failed = |e: reqwest::Error| {
        if e.is_timeout() {
            format!(
                "webfetch: GET {url} timed out after {}s",
                limit.as_secs_f64()
            )
        } else if e.is_builder() {
            format!("webfetch: invalid url {url:?}: {}", error_chain(&e))
        } else {
            format!("webfetch: GET {url} failed: {}", error_chain(&e))
        }
    };
    let resp = client
        .get(url)
        .timeout(limit)
        .send()
        .await
        .map_err(failed)?;
    let status = resp.status().as_u16();
    let body = resp.text().await.map_err(failed)?;
    Ok((status, body))
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
