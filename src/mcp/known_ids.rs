//! A transport wrapper that drops answers to requests we never sent.
//!
//! rmcp treats a response with an unexpected id during the handshake as a
//! fatal conflict. A server that prints a stray or replayed answer is noisy,
//! not broken, so such messages are dropped here (as the reference port's
//! reader does) and only answers to our own requests reach the session.

use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use std::future::Future;
use std::sync::{Arc, Mutex};

pub struct KnownIds<T> {
    inner: T,
    sent: Arc<Mutex<Vec<RequestId>>>,
}

impl<T> KnownIds<T> {
    pub fn new(inner: T) -> Self {
        KnownIds {
            inner,
            sent: Arc::new(Mutex::new(Vec::new())),
        }
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
