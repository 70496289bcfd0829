//! MCP authorization (OAuth 2.1, src/mcp/auth.rs) against real loopback
//! servers: the official MCP Python SDK's OAuth-enabled server
//! (tests/mcp_servers/sdk_oauth_server.py: discovery, dynamic registration,
//! PKCE, refresh-token rotation, expiry) and a standard-library server that
//! gets one thing wrong per mode (tests/mcp_servers/oauth_hostile.py).
//! Also the CLI's `--authorize headless` and a credential file shared by
//! two processes.

mod mcp_support;

use mcp_support::{call, error, python, server_script, status};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolnexus::cancel::CancelToken;
use toolnexus::mcp::{self, McpSource};

/// A fixture server, killed when dropped.
struct Fixture {
    child: Child,
    url: String,
}

impl Fixture {
    fn start(script: &str, args: &[&str]) -> Fixture {
        let mut child = Command::new(python())
            .arg(server_script(script))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {script}: {e}"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let url = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{script} printed no URL"))
            .trim()
            .to_string();
        assert!(url.starts_with("http://"), "{script}: {url:?}");
        // The SDK server prints before it listens.
        let addr = url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(Instant::now() < deadline, "{script} did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Fixture { child, url }
    }

    fn stats(&self) -> Value {
        let base = self.url.trim_end_matches("/mcp");
        let out = Command::new("curl")
            .args(["-s", &format!("{base}/_stats")])
            .output();
        match out {
            Ok(o) => serde_json::from_slice(&o.stdout).unwrap_or(Value::Null),
            Err(_) => Value::Null,
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The library's headless authorize, counting its calls.
fn counting_headless(count: &Arc<AtomicUsize>) -> mcp::Authorize {
    let count = Arc::clone(count);
    Arc::new(move |event: &Value, stop: &CancelToken| {
        count.fetch_add(1, Ordering::SeqCst);
        mcp::auth::headless(event, stop)
    })
}

fn connect_with(server: Value, authorize: Option<mcp::Authorize>) -> McpSource {
    let mut cfg = mcp::parse_config(&json!({"mcpServers": {"s": server}}))
        .unwrap_or_else(|e| panic!("config: {e}"));
    cfg.set_authorize(authorize);
    mcp::connect(&cfg)
}

/// Every string a source reports, for leak checks.
fn reported(src: &McpSource) -> String {
    format!("{:?} {:?} {:?}", src.statuses, src.errors, src.warnings)
}

#[test]
fn the_sdk_server_is_authorized_once_and_every_call_carries_the_token() {
    let fx = Fixture::start("sdk_oauth_server.py", &[]);
    let count = Arc::new(AtomicUsize::new(0));
    let src = connect_with(
        json!({"url": fx.url, "timeout": 20000}),
        Some(counting_headless(&count)),
    );
    assert_eq!(status(&src, "s"), "connected", "{}", error(&src, "s"));
    for _ in 0..3 {
        let r = call(&src, "s_whoami", json!({}));
        assert!(!r.is_error, "{}", r.output);
        assert!(r.output.contains("ok "), "{}", r.output);
    }
    assert_eq!(count.load(Ordering::SeqCst), 1, "one authorization");
    let stats = fx.stats();
    assert_eq!(stats["register"], 1, "{stats}");
    assert_eq!(stats["code"], 1, "{stats}");
}

#[test]
fn an_expired_token_is_refreshed_mid_session_and_the_refresh_token_rotates() {
    let fx = Fixture::start("sdk_oauth_server.py", &["--ttl", "2"]);
    let count = Arc::new(AtomicUsize::new(0));
    let src = connect_with(
        json!({"url": fx.url, "timeout": 20000}),
        Some(counting_headless(&count)),
    );
    assert_eq!(status(&src, "s"), "connected", "{}", error(&src, "s"));
    for round in 0..3 {
        // Past the token's life: the next call refreshes first (with the
        // refresh token the previous refresh returned).
        std::thread::sleep(Duration::from_millis(2300));
        let r = call(&src, "s_whoami", json!({}));
        assert!(!r.is_error, "round {round}: {}", r.output);
    }
    let stats = fx.stats();
    assert_eq!(
        count.load(Ordering::SeqCst),
        1,
        "no new authorization: {stats}"
    );
    assert!(stats["refresh"].as_u64().unwrap_or(0) >= 3, "{stats}");
    assert_eq!(
        stats["refresh_refused"], 0,
        "a rotated token was reused: {stats}"
    );
}

#[test]
fn without_an_authorize_callback_the_failure_says_what_is_missing() {
    let fx = Fixture::start("sdk_oauth_server.py", &[]);
    // No `auth` key, no callback: OAuth stays off.
    let src = connect_with(json!({"url": fx.url, "timeout": 20000}), None);
    assert_eq!(status(&src, "s"), "failed");
    assert!(
        error(&src, "s").contains("http-status (401): the server requires OAuth"),
        "{}",
        error(&src, "s")
    );
    // `auth` set, still no callback.
    let src = connect_with(json!({"url": fx.url, "timeout": 20000, "auth": {}}), None);
    assert_eq!(status(&src, "s"), "failed");
    assert!(
        error(&src, "s").contains("no authorize callback"),
        "{}",
        error(&src, "s")
    );
    // `auth: false` with a callback: off.
    let count = Arc::new(AtomicUsize::new(0));
    let src = connect_with(
        json!({"url": fx.url, "timeout": 20000, "auth": false}),
        Some(counting_headless(&count)),
    );
    assert_eq!(status(&src, "s"), "failed");
    assert_eq!(count.load(Ordering::SeqCst), 0);
}

/// Connects to the hostile server in `mode` with the headless authorize.
fn hostile(mode: &str) -> (Fixture, McpSource) {
    let fx = Fixture::start("oauth_hostile.py", &[mode]);
    let count = Arc::new(AtomicUsize::new(0));
    let src = connect_with(
        json!({"url": fx.url, "timeout": 10000, "auth": {"redirectUri": "http://127.0.0.1:9/cb"}}),
        Some(counting_headless(&count)),
    );
    (fx, src)
}

#[test]
fn the_baseline_hostile_server_connects_and_echoed_tokens_are_redacted() {
    let (fx, src) = hostile("echo");
    assert_eq!(status(&src, "s"), "connected", "{}", error(&src, "s"));
    let r = call(&src, "s_echo_auth", json!({}));
    assert!(!r.is_error, "{}", r.output);
    assert!(r.output.starts_with("got Bearer "), "{}", r.output);
    assert!(!r.output.contains("at-"), "the token leaked: {}", r.output);
    assert!(
        r.output.to_lowercase().contains("[redacted]"),
        "{}",
        r.output
    );
    assert_eq!(fx.stats()["authorize"], 1);
}

#[test]
fn a_mismatched_issuer_is_refused() {
    let (fx, src) = hostile("issuer");
    assert_eq!(status(&src, "s"), "failed");
    let e = error(&src, "s");
    assert!(
        e.contains(
            "auth (discovery: the authorization server's issuer is \"http://issuer.example\""
        ),
        "{e}"
    );
    assert_eq!(fx.stats()["authorize"], 0, "never sent to authorize");
}

/// Why the conformance suite's `auth/2025-03-26-oauth-metadata-backcompat`
/// fails on purpose: its server publishes no protected resource metadata,
/// and the authorization server metadata at the origin's root
/// (`/.well-known/oauth-authorization-server`) names the issuer
/// `ORIGIN/oauth`. RFC 8414 §3.3 says the issuer must be the one the
/// metadata URL was formed from (`ORIGIN`), and that a client must not use
/// metadata that fails this (the check that stops mix-up attacks), so we
/// refuse where the suite expects a client to go on.
#[test]
fn an_issuer_the_metadata_url_does_not_derive_from_is_refused_as_rfc_8414_says() {
    let (fx, src) = hostile("issuer-path");
    assert_eq!(status(&src, "s"), "failed");
    let e = error(&src, "s");
    let origin = fx.url.trim_end_matches("/mcp");
    assert!(
        e.contains(&format!(
            "issuer is \"{origin}/oauth\", expected \"{origin}/\""
        )),
        "{e}"
    );
    assert_eq!(fx.stats()["authorize"], 0);
}

#[test]
fn a_token_response_without_access_token_fails_cleanly() {
    let (fx, src) = hostile("no-access-token");
    assert_eq!(status(&src, "s"), "failed");
    let e = error(&src, "s");
    assert!(
        e.contains("auth (token:") && e.contains("access_token"),
        "{e}"
    );
    assert!(!e.contains("rt-"), "the refresh token leaked: {e}");
    assert_eq!(fx.stats()["token"], 1);
}

#[test]
fn a_10000_character_challenge_is_not_read_and_discovery_falls_back() {
    let (fx, src) = hostile("long-challenge");
    // Its resource_metadata (another origin) was never followed: the
    // well-known URIs of the server found the real metadata.
    assert_eq!(status(&src, "s"), "connected", "{}", error(&src, "s"));
    let stats = fx.stats();
    assert!(
        stats.get("evil").is_none(),
        "went to the other origin: {stats}"
    );
    assert!(!reported(&src).contains("aaaa"), "{}", reported(&src));
}

#[test]
fn a_redirect_to_another_origin_is_refused() {
    let (fx, src) = hostile("redirect-origin");
    assert_eq!(status(&src, "s"), "failed");
    let e = error(&src, "s");
    assert!(e.contains("not to the redirect URI"), "{e}");
    assert!(!e.contains("code-"), "the code leaked: {e}");
    assert_eq!(fx.stats()["token"], 0, "the code was not exchanged");
}

#[test]
fn metadata_that_redirects_to_another_origin_is_not_followed() {
    let (fx, src) = hostile("metadata-redirect");
    let stats = fx.stats();
    assert!(
        stats.get("evil").is_none(),
        "followed to the other origin: {stats}"
    );
    assert_eq!(status(&src, "s"), "failed");
    let e = error(&src, "s");
    assert!(
        e.contains("redirect to non-same-origin URL rejected"),
        "{e}"
    );
    assert_eq!(fx.stats()["authorize"], 0);
}

#[test]
fn an_authorization_server_without_pkce_is_refused() {
    let (fx, src) = hostile("no-pkce");
    assert_eq!(status(&src, "s"), "failed");
    let e = error(&src, "s");
    assert!(e.contains("PKCE"), "{e}");
    assert_eq!(fx.stats()["authorize"], 0);
}

#[test]
fn client_credentials_need_no_host() {
    // The hostile server's token endpoint takes any client: the grant is
    // what is tested (no authorize callback at all).
    let fx = Fixture::start("oauth_hostile.py", &["ok"]);
    let src = connect_with(
        json!({"url": fx.url, "timeout": 10000, "auth": {
            "grant": "client_credentials", "clientId": "svc", "clientSecret": "s3cr3t-value"}}),
        None,
    );
    // oauth_hostile.py answers only authorization_code and refresh_token.
    assert_eq!(status(&src, "s"), "failed");
    let e = error(&src, "s");
    assert!(
        e.starts_with("mcp server \"s\" failed at initialize: auth ("),
        "{e}"
    );
    assert!(!e.contains("s3cr3t-value"), "the secret leaked: {e}");
}

fn cli(config: &std::path::Path, mode: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolnexus"))
        .args([
            "call",
            "s_whoami",
            "{}",
            "--no-builtins",
            "--authorize",
            mode,
            "--config",
        ])
        .arg(config)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run toolnexus: {e}"))
}

#[test]
fn the_cli_authorizes_headlessly_and_two_processes_share_a_credential_file() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::start("sdk_oauth_server.py", &["--ttl", "2"]);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = dir.path().join("creds").join("tokens.json");
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"s": {"url": fx.url, "timeout": 20000,
            "auth": {"store": format!("file:{}", store.display())}}}})
        .to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));

    // Without a way to authorize, nothing stored yet: a clear failure.
    let out = cli(&config, "none");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no authorize callback"), "{stderr}");

    let out = cli(&config, "headless");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ok "), "{stdout}");
    let mode = std::fs::metadata(&store).map(|m| m.permissions().mode() & 0o777);
    assert_eq!(mode.ok(), Some(0o600));

    // The tokens stored: another process needs no authorization.
    let out = cli(&config, "none");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Both expired, two processes at once: one refreshes (rotating the
    // refresh token) under the file's lock, the other uses its result.
    std::thread::sleep(Duration::from_millis(2300));
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_toolnexus"))
            .args([
                "call",
                "s_whoami",
                "{}",
                "--no-builtins",
                "--authorize",
                "none",
                "--config",
            ])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let (a, b) = (spawn(), spawn());
    for child in [a, b] {
        let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stats = fx.stats();
    assert_eq!(stats["code"], 1, "one authorization in all: {stats}");
    assert_eq!(stats["refresh_refused"], 0, "{stats}");
    assert!(stats["refresh"].as_u64().unwrap_or(0) >= 1, "{stats}");
}
