//! The MCP client's OAuth reading of what a server and its authorization
//! server send (src/mcp/auth.rs): a `WWW-Authenticate` challenge, the
//! protected-resource metadata (RFC 9728) and the authorization-server
//! metadata (RFC 8414 / OpenID discovery) documents, and a token response.
//! Discovery runs as the flow runs it — rmcp's `AuthorizationManager`
//! resolving the challenge — over an in-process HTTP client that answers
//! the well-known URIs with the fuzzed documents (every other URI 404);
//! the flow's checks of the resolved metadata (`Offers`), the challenge's
//! scopes and `insufficient_scope`, and the token response's reading follow.
//!
//! Nothing may panic; a challenge past `MAX_CHALLENGE` asks for nothing;
//! scopes read off a challenge are non-empty words without whitespace; a
//! token response read gives a non-empty access token or none, and one that
//! is refused is refused with a `token: ` sentence.
//!
//! The input is up to four parts separated by NUL bytes: the challenge,
//! the protected-resource document, the authorization-server document, the
//! token response.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmcp::transport::auth::{
    AuthorizationManager, OAuthHttpClient, OAuthHttpClientFuture, OAuthHttpRequest,
};
use std::sync::Arc;
use toolnexus::mcp::auth::{
    asks_for_scope, read_token_response, scopes_asked, tokens_of, Offers, MAX_CHALLENGE,
};

const SERVER: &str = "http://mcp.test/mcp";

/// The documents a fake origin serves at the well-known URIs.
struct Docs {
    resource: Vec<u8>,
    server: Vec<u8>,
}

impl OAuthHttpClient for Docs {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        let path = request.request.uri().path().to_string();
        Box::pin(async move {
            let body = if path.contains("oauth-protected-resource") {
                Some(&self.resource)
            } else if path.contains("oauth-authorization-server")
                || path.contains("openid-configuration")
            {
                Some(&self.server)
            } else {
                None
            };
            let (status, body) = match body {
                Some(b) => (200, b.clone()),
                None => (404, b"{\"error\":\"not_found\"}".to_vec()),
            };
            Ok(http::Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(body)?)
        })
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(4, |b| *b == 0);
    let challenge = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let resource = parts.next().unwrap_or_default().to_vec();
    let server = parts.next().unwrap_or_default().to_vec();
    let token = parts.next().unwrap_or_default();

    let base = url::Url::parse(SERVER).expect("a URL");
    let asks = asks_for_scope(&challenge, &base);
    if challenge.len() > MAX_CHALLENGE {
        assert!(!asks, "a challenge past the cap was read");
    }
    for s in scopes_asked(&challenge, &base) {
        assert!(
            !s.is_empty() && !s.contains(char::is_whitespace),
            "scope {s:?}"
        );
    }

    // Discovery, as OAuth::flow asks rmcp for it (the challenge bounded).
    let bounded = Some(challenge.as_str()).filter(|c| c.len() <= MAX_CHALLENGE);
    toolnexus::runtime::block_on(async {
        let http = Arc::new(Docs { resource, server }) as Arc<dyn OAuthHttpClient>;
        let Ok(manager) = AuthorizationManager::new_with_oauth_http_client(SERVER, http).await
        else {
            panic!("no manager for {SERVER}");
        };
        if let Ok(resolution) = manager.resolve_metadata_from_challenge(bounded).await {
            let _ = Offers::of(&resolution.metadata);
        }
    });

    match read_token_response(token) {
        Ok(t) => {
            let (access, _refresh) = tokens_of(&t);
            if let Some(a) = access {
                assert!(!a.is_empty());
            }
        }
        Err(why) => assert!(why.starts_with("token: "), "{why}"),
    }
});
