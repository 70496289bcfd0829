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

/// An error that crosses the boundary as `{"error":{"code","message"}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: ErrorCode,
    pub message: String,
}

impl Error {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
        }
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

    /// The error JSON of CONTRACT.md §1.
    pub fn to_json(&self) -> Value {
        json!({"error": {"code": self.code.as_str(), "message": self.message}})
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
