//! The legacy HTTP+SSE transport (MCP 2024-11-05), which rmcp no longer
//! ships, written behind rmcp's `Transport` trait so the session code is the
//! same for every transport.
//!
//! A GET opens an event stream; its first `endpoint` event names the URL to
//! POST client messages to; server messages arrive as `message` events. The
//! stream is read by the crate's one SSE reader, whose per-event cap
//! ([`crate::limits::EVENT_BYTES`])
//! keeps a hostile server from making us buffer without bound.

use super::fault::Fault;
use crate::provider::sse::SseParser;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use std::fmt;
use std::future::Future;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// A send failure on the SSE transport.
#[derive(Debug)]
pub struct SseError(String);

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SseError {}

pub struct SseTransport {
    client: reqwest::Client,
    post_url: String,
    headers: Vec<(String, String)>,
    inbox: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Opens the event stream and waits (up to `timeout`) for the endpoint event.
/// Errors are the detail part of a status message.
pub async fn connect(
    url: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Result<SseTransport, Fault> {
    let base = url::Url::parse(url).map_err(|e| Fault::transport(format!("bad url: {e}")))?;
    let client = crate::net::reqwest_builder()
        .map_err(|e| Fault::transport(e.to_string()))?
        .connect_timeout(timeout)
        .build()
        .map_err(|e| Fault::transport(format!("client: {e}")))?;
    let mut req = client
        .get(base.clone())
        .header("accept", "text/event-stream");
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let resp = req.send().await.map_err(|e| describe_reqwest(&e))?;
    if !resp.status().is_success() {
        return Err(Fault::HttpStatus(resp.status().as_u16()));
    }
    let (endpoint_tx, endpoint_rx) = oneshot::channel();
    let (tx, inbox) = mpsc::channel(64);
    // Aborted on every way out but success, a connect abandoned mid-wait
    // (a cancelled build) included: no reader outlives its stream's owner.
    let mut reader = AbortOnDrop(Some(tokio::spawn(read_events(resp, endpoint_tx, tx))));
    let endpoint = match tokio::time::timeout(timeout, endpoint_rx).await {
        Ok(Ok(e)) => e,
        Ok(Err(_)) => {
            return Err(Fault::PeerEof(
                "the event stream ended before the endpoint event",
            ));
        }
        Err(_) => {
            return Err(Fault::Timeout(Some(format!(
                "no endpoint event within {} ms",
                timeout.as_millis()
            ))));
        }
    };
    let post_url = base
        .join(&endpoint)
        .map_err(|e| Fault::transport(format!("bad endpoint '{endpoint}': {e}")))?;
    let Some(reader) = reader.0.take() else {
        return Err(Fault::transport("internal: the event reader is gone"));
    };
    Ok(SseTransport {
        client,
        post_url: post_url.to_string(),
        headers: headers.to_vec(),
        inbox,
        reader,
    })
}

/// Aborts the task it holds when dropped, unless the task was taken out.
struct AbortOnDrop(Option<JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

/// Parses the event stream with the one SSE reader
/// ([`crate::provider::sse`]): the first `endpoint` event goes to
/// `endpoint`, every `message` event that is valid JSON-RPC goes to `tx`.
/// Anything else is ignored; an event past the reader's cap ends the stream.
async fn read_events(
    mut resp: reqwest::Response,
    endpoint: oneshot::Sender<String>,
    tx: mpsc::Sender<ServerJsonRpcMessage>,
) {
    let mut endpoint = Some(endpoint);
    let mut parser = SseParser::new();
    let mut events: Vec<(String, String)> = Vec::new();
    loop {
        let chunk = resp.chunk().await;
        let mut collect = |name: &str, data: &str| {
            events.push((name.to_string(), data.to_string()));
            Ok(())
        };
        let (read, ended) = match chunk {
            Ok(Some(chunk)) => (parser.feed(&chunk, &mut collect), false),
            Ok(None) | Err(_) => (parser.finish(&mut collect), true),
        };
        for (name, data) in events.drain(..) {
            if name == "endpoint" {
                if let Some(e) = endpoint.take() {
                    let _ = e.send(data.trim().to_string());
                }
            } else if name == "message" {
                if let Ok(msg) = serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                    if tx.send(msg).await.is_err() {
                        return;
                    }
                }
            }
        }
        if read.is_err() || ended {
            return;
        }
    }
}

fn describe_reqwest(e: &reqwest::Error) -> Fault {
    if e.is_connect() {
        Fault::ConnectFailed
    } else if e.is_timeout() {
        Fault::Timeout(None)
    } else {
        Fault::transport(without_url(e))
    }
}

/// A reqwest error's text without the URL (it may carry credentials).
fn without_url(e: &reqwest::Error) -> String {
    let mut shown = String::new();
    let mut src: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = src {
        shown = s.to_string();
        src = s.source();
    }
    if shown.is_empty() {
        "request failed".into()
    } else {
        shown
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let mut req = self
            .client
            .post(self.post_url.clone())
            .header("content-type", "application/json");
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let body = serde_json::to_vec(&item);
        async move {
            let body = body.map_err(|e| SseError(format!("cannot encode the message: {e}")))?;
            let resp = req
                .body(body)
                .send()
                .await
                .map_err(|e| SseError(describe_reqwest(&e).to_string()))?;
            if resp.status().is_success() {
                Ok(())
            } else {
                Err(SseError(format!(
                    "http-status ({})",
                    resp.status().as_u16()
                )))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.inbox.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        Ok(())
    }
}
