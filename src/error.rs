//! The library's error value: a stable code plus a sentence a user can act on.

use serde_json::{json, Value};
use std::fmt;

/// The error codes of CONTRACT.md §1. The numeric values are part of the ABI
/// (see `ffi::status`) and are never renumbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    NullArgument,
    InvalidUtf8,
    InvalidJson,
    InvalidConfig,
    InvalidArgument,
    UnknownFormat,
    ProviderError,
    Timeout,
    Cancelled,
    Internal,
    /// A host callback (a client hook, waitFor, onError) reported an error
    /// or answered with something unusable.
    CallbackError,
}

impl ErrorCode {
    /// The snake_case code carried in the error JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NullArgument => "null_argument",
            ErrorCode::InvalidUtf8 => "invalid_utf8",
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::InvalidConfig => "invalid_config",
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::UnknownFormat => "unknown_format",
            ErrorCode::ProviderError => "provider_error",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::Internal => "internal",
            ErrorCode::CallbackError => "callback_error",
        }
    }
}

/// What a provider that answered with an error status said (upstream ADR
/// 0027): the HTTP status, the whole body as it may be read (redacted; empty
/// for 401 and 403) and the raw `Retry-After` header, if one was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderStatus {
    pub status: u16,
    pub body: String,
    pub retry_after: Option<String>,
}

/// An error that crosses the boundary as `{"error":{"code","message"}}`
/// (a provider's error status adds `status`, `body` and `retryAfter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: ErrorCode,
    pub message: String,
    /// Set when a provider answered with an error status.
    pub provider: Option<Box<ProviderStatus>>,
}

impl Error {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            provider: None,
        }
    }

    /// The error with what the provider answered attached.
    pub fn with_provider(mut self, provider: ProviderStatus) -> Self {
        self.provider = Some(Box::new(provider));
        self
    }

    pub fn invalid_config(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InvalidConfig, message)
    }

    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InvalidArgument, message)
    }

    pub fn invalid_json(what: &str, err: &serde_json::Error) -> Self {
        Error::new(
            ErrorCode::InvalidJson,
            format!("{what} is not valid JSON: {err}"),
        )
    }

    /// The error JSON of CONTRACT.md §1; a provider's error status adds
    /// `status` (the HTTP status), `body` (the redacted body, whole) and
    /// `retryAfter` (the raw header, or null) inside `error`.
    pub fn to_json(&self) -> Value {
        match &self.provider {
            None => json!({"error": {"code": self.code.as_str(), "message": self.message}}),
            Some(p) => json!({"error": {
                "code": self.code.as_str(),
                "message": self.message,
                "status": p.status,
                "body": p.body,
                "retryAfter": p.retry_after,
            }}),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// The text of a caught panic payload.
pub fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}
