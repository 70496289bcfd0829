//! The crate's one reqwest (0.13, the version rmcp's streamable-HTTP client
//! speaks): every reqwest client starts from [`reqwest_builder`], which sets
//! rustls on the ring provider with the webpki roots (no aws-lc build, no
//! system certificate store).
//!
//! - `mod.rs`       the reqwest builder (webfetch, MCP's SSE leg)
//! - `transport.rs` hyper connections: open, the idle pool, failures, the
//!   HTTP tools' call

pub(crate) mod transport;

use std::sync::Arc;

/// A reqwest client builder with rustls (ring) and the webpki roots.
/// Errors are the TLS setup's message.
pub fn reqwest_builder() -> Result<reqwest::ClientBuilder, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(reqwest::Client::builder().tls_backend_preconfigured(tls))
}
