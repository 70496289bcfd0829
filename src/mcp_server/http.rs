//! Streamable HTTP on an address the host gives: hyper's HTTP/1 server in
//! front of rmcp's stateless streamable-HTTP service, at `/mcp` only.

use super::{Done, Gateway, Handler, Server, SetOnDrop};
use crate::error::{Error, Result};
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// The one path the server answers on.
pub const PATH: &str = "/mcp";

type Service = StreamableHttpService<Handler, NeverSessionManager>;

pub fn serve(gateway: Arc<Gateway>, addr: &str) -> Result<Server> {
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| Error::invalid_config(format!("addr: cannot listen on '{addr}': {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::invalid_config(format!("addr: cannot listen on '{addr}': {e}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::invalid_config(format!("addr: cannot listen on '{addr}': {e}")))?;
    let runtime = crate::runtime::get();
    let listener = {
        let _inside = runtime.enter();
        tokio::net::TcpListener::from_std(listener)
            .map_err(|e| Error::invalid_config(format!("addr: cannot listen on '{addr}': {e}")))?
    };

    let stop = CancellationToken::new();
    let service = StreamableHttpService::new(
        move || Ok(Handler(Arc::clone(&gateway))),
        Arc::new(NeverSessionManager::default()),
        service_config(local, stop.child_token()),
    );
    let done = Arc::new(Done::default());
    let ended = SetOnDrop(Arc::clone(&done));
    let ct = stop.clone();
    runtime.spawn(async move {
        let _ended = ended;
        accept_loop(listener, service, ct).await;
    });
    Ok(Server {
        url: Some(format!("http://{local}{PATH}")),
        stop,
        done,
    })
}

/// Stateless (SPEC §7C), plain JSON answers where a call needs no stream,
/// and the Host check of rmcp (DNS-rebinding protection) kept: loopback
/// names, plus the address bound when it is a specific one.
fn service_config(local: SocketAddr, ct: CancellationToken) -> StreamableHttpServerConfig {
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    let ip = local.ip();
    if !ip.is_unspecified() && !ip.is_loopback() {
        hosts.push(ip.to_string());
    }
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_cancellation_token(ct);
    if ip.is_unspecified() {
        // Bound to every interface: the host decides who may reach it.
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(hosts)
    }
}

async fn accept_loop(listener: tokio::net::TcpListener, service: Service, stop: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            a = listener.accept() => a,
            // Reap finished connections so the set stays small.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let Ok((stream, _peer)) = accepted else {
            // Out of descriptors and the like: wait a moment, go on.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        connections.spawn(async move {
            let route = hyper::service::service_fn(move |req| {
                let service = service.clone();
                async move { Ok::<_, Infallible>(route(&service, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), route)
                .await;
        });
    }
    // Dropping the set aborts every connection; rmcp's token (a child of
    // `stop`) has cancelled the calls in flight.
    connections.shutdown().await;
}

async fn route(
    service: &Service,
    req: hyper::Request<Incoming>,
) -> hyper::Response<BoxBody<Bytes, Infallible>> {
    if req.uri().path() != PATH {
        let mut res = hyper::Response::new(Full::new(Bytes::from_static(b"not found\n")).boxed());
        *res.status_mut() = hyper::StatusCode::NOT_FOUND;
        return res;
    }
    service.handle(req).await
}
