//! The OpenAI chat-completions dialect: its tables.

/// The endpoint under a client's `baseUrl` (its trailing `/` removed).
pub fn endpoint(base: &str) -> String {
    format!("{base}/chat/completions")
}

/// The environment variable a key is read from when the client sets none.
pub const API_KEY_VAR: &str = "OPENAI_API_KEY";

/// The credential headers: `authorization: Bearer <key>` (none without a
/// key).
pub fn auth_headers(api_key: Option<&str>, out: &mut Vec<(String, String)>) {
    if let Some(key) = api_key {
        out.push(("authorization".into(), format!("Bearer {key}")));
    }
}
