//! The Anthropic messages dialect: its tables.

/// The endpoint under a client's `baseUrl` (its trailing `/` removed):
/// `{base}/messages` when the base already ends in `/v1`, else
/// `{base}/v1/messages`.
pub fn endpoint(base: &str) -> String {
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

/// The environment variable a key is read from when the client sets none.
pub const API_KEY_VAR: &str = "ANTHROPIC_API_KEY";

/// The API version every request names.
pub const API_VERSION: &str = "2023-06-01";

/// The `max_tokens` a request gets when it sets none (the field is required
/// by this dialect).
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The credential headers: `x-api-key: <key>` (none without a key), then
/// `anthropic-version`.
pub fn auth_headers(api_key: Option<&str>, out: &mut Vec<(String, String)>) {
    if let Some(key) = api_key {
        out.push(("x-api-key".into(), key.to_string()));
    }
    out.push(("anthropic-version".into(), API_VERSION.into()));
}
