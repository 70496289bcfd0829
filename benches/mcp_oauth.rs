//! What one MCP request pays for its `Authorization` header when the OAuth
//! token is cached and fresh: `OAuth::token()`, which every request of an
//! OAuth session calls first (src/mcp/guarded.rs). No network: the server
//! and its authorization server at 127.0.0.1:1 do not exist, and a fresh
//! token needs neither. Once with the memory store (the default), once with
//! a credential file (`auth.store: "file:PATH"`, shared by processes: each
//! request checks the file's stamp). Issue 28's target: under 5 µs.

use criterion::{criterion_group, criterion_main, Criterion};
use rmcp::transport::auth::StoredCredentials;
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolnexus::mcp::auth::{AuthConfig, OAuth, SessionTies, StoreSpec};

const URL: &str = "http://127.0.0.1:1/mcp";

fn oauth(store: StoreSpec) -> OAuth {
    let config = AuthConfig {
        store,
        ..AuthConfig::default()
    };
    let ties = SessionTies {
        timeout: Duration::from_millis(200),
        clock: Arc::default(),
        closing: CancellationToken::new(),
    };
    OAuth::new("s", URL, config, None, &Default::default(), ties).unwrap_or_else(|e| panic!("{e}"))
}

/// A token issued now, valid for an hour, with a refresh token and scopes
/// as an authorization-code flow leaves them.
fn fresh_credentials() -> StoredCredentials {
    let token = serde_json::from_value(json!({
        "access_token": "at-0123456789abcdef0123456789abcdef",
        "refresh_token": "rt-0123456789abcdef0123456789abcdef",
        "token_type": "Bearer", "expires_in": 3600, "scope": "read write"}))
    .unwrap_or_else(|e| panic!("{e}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    StoredCredentials::new(
        "client-0123".into(),
        Some(token),
        vec!["read".into(), "write".into()],
        Some(now),
    )
    .with_issuer(Some("http://127.0.0.1:1".into()))
}

fn bench_store(c: &mut Criterion, rt: &tokio::runtime::Runtime, label: &str, store: StoreSpec) {
    let oauth = oauth(store);
    rt.block_on(oauth.keep_credentials(fresh_credentials()))
        .unwrap_or_else(|e| panic!("{e}"));
    let first = rt.block_on(oauth.token()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        first.as_deref(),
        Some("at-0123456789abcdef0123456789abcdef")
    );
    c.bench_function(&format!("mcp/oauth cached token, {label}"), |b| {
        b.iter(|| black_box(rt.block_on(oauth.token())))
    });
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    bench_store(c, &rt, "memory store", StoreSpec::Memory);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("credentials.json");
    bench_store(c, &rt, "file store", StoreSpec::File(file));
}

criterion_group! {
    name = oauth_benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(oauth_benches);
