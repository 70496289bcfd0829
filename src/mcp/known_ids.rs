//! A transport wrapper that drops answers to requests we never sent.
//!
//! rmcp treats a response with an unexpected id during the handshake as a
//! fatal conflict. A server that prints a stray or replayed answer is noisy,
//! not broken, so such messages are dropped here (as the reference port's
//! reader does) and only answers to our own requests reach the session.
//!
//! Every session's transport goes through it, so it is also where a
//! server's progress and log notifications are handed to the session's
//! relays in the order they were read (see [`KnownIds::with_notes`]).

use super::relay::Relays;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use std::future::Future;
use std::sync::{Arc, Mutex};

pub struct KnownIds<T> {
    inner: T,
    sent: Arc<Mutex<Vec<RequestId>>>,
    /// Where the server's progress and log notifications go as they are
    /// received, before any message after them.
    notes: Option<Arc<Relays>>,
}

impl<T> KnownIds<T> {
    pub fn new(inner: T) -> Self {
        KnownIds {
            inner,
            sent: Arc::new(Mutex::new(Vec::new())),
            notes: None,
        }
    }

    /// Hands the server's progress and log notifications to `relays` as
    /// they are received, before the message after them (a call's answer
    /// among them), and still to rmcp, whose handlers then leave them
    /// ([`Relays::read_in_order`]). For the HTTP transports, whose
    /// messages reach rmcp through here only; a stdio transport hands them
    /// over itself as it reads its lines (`ClientLineTransport::with_notes`).
    pub fn with_notes(mut self, relays: Arc<Relays>) -> Self {
        relays.read_in_order();
        self.notes = Some(relays);
        self
    }

    /// Whether `id` answers a request in flight; forgets it if so.
    fn take(&self, id: &RequestId) -> bool {
        let Ok(mut sent) = self.sent.lock() else {
            return true;
        };
        // Servers may echo a numeric id as a string or the reverse.
        let same = |a: &RequestId| a == id || a.to_string() == id.to_string();
        match sent.iter().position(same) {
            Some(i) => {
                sent.swap_remove(i);
                true
            }
            None => false,
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for KnownIds<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(req) = &item {
            if let Ok(mut sent) = self.sent.lock() {
                sent.push(req.id.clone());
            }
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            let msg = self.inner.receive().await?;
            let known = match &msg {
                JsonRpcMessage::Response(r) => self.take(&r.id),
                JsonRpcMessage::Error(e) => e.id.as_ref().is_none_or(|id| self.take(id)),
                JsonRpcMessage::Notification(n) => {
                    if let Some(relays) = &self.notes {
                        relays.pass_on(&n.notification);
                    }
                    true
                }
                _ => true,
            };
            if known {
                return Some(msg);
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::super::relay::tests::recording;
    use super::*;
    use serde_json::{json, Value};
    use std::collections::VecDeque;

    /// A transport whose server says `lines`, in order, then nothing.
    struct Script(VecDeque<ServerJsonRpcMessage>);

    impl Transport<RoleClient> for Script {
        type Error = std::io::Error;

        fn send(
            &mut self,
            _item: ClientJsonRpcMessage,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            std::future::ready(Ok(()))
        }

        async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
            self.0.pop_front()
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn message<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A proxied call's HTTP server sends its progress and a log line,
    /// then its answer. By the time the transport hands over the answer,
    /// both have reached the call's relay: rmcp runs a notification's
    /// handler as a task of its own, which could run after the answer had
    /// ended the call (the gateway then lost the call's last progress).
    #[test]
    fn progress_and_logs_reach_the_relay_before_the_message_after_them() {
        let script = Script(VecDeque::from([
            message(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": "tn-5", "progress": 100, "total": 100}})),
            message(json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "done"}})),
            message(json!({"jsonrpc": "2.0", "id": 5, "result": {"content": []}})),
        ]));
        let (relay, seen) = recording();
        let relays = Arc::new(Relays::default());
        let guard = relays.enter(&relay);
        guard.watch(&json!("tn-5"));
        let mut transport = KnownIds::new(script).with_notes(Arc::clone(&relays));
        assert!(relays.reads_in_order());
        let got = || seen.lock().map(|v| v.clone()).unwrap_or_default();
        crate::runtime::get().block_on(async move {
            let _ = transport
                .send(message(
                    json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                    "params": {"name": "t", "arguments": {}}}),
                ))
                .await;
            let first = transport.receive().await;
            assert!(matches!(first, Some(JsonRpcMessage::Notification(_))));
            assert_eq!(
                got(),
                vec![(
                    "notifications/progress".to_string(),
                    json!({"progress": 100.0, "total": 100.0})
                )]
            );
            let _ = transport.receive().await;
            let answer = transport.receive().await;
            assert!(matches!(answer, Some(JsonRpcMessage::Response(_))));
            let seen = got();
            assert_eq!(seen.len(), 2, "{seen:?}");
            assert_eq!(seen[1].0, "notifications/message");
            assert_eq!(seen[1].1["data"], json!("done"));
            assert!(transport.receive().await.is_none());
        });
    }
}
