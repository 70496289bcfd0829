//! toolnexus: one toolkit of uniform tools gathered from agent skills, the ten
//! built-in tools, MCP servers, declared HTTP endpoints and host functions,
//! rendered for OpenAI, Anthropic or Gemini and executed by name.
//!
//! The pure core lives in the modules below; `ffi` is the C boundary and the
//! only module allowed to use `unsafe`.
#![deny(unsafe_code)]

pub mod adapter;
pub mod answer;
pub mod builtin;
pub mod client;
pub mod config;
pub mod env;
pub mod error;
#[allow(unsafe_code)]
pub mod ffi;
pub mod http_tool;
pub mod json;
pub mod log;
pub mod mcp;
pub mod mcp_server;
pub mod native;
pub mod net;
pub mod parts;
pub mod provider;
pub mod runtime;
pub mod skill;
pub mod tool;
pub mod toolkit;
pub mod translate;

#[cfg(test)]
mod test_json;

/// Silences the panic message of a panic a unit test provokes on purpose.
#[cfg(test)]
#[path = "../tests/quiet_panic/mod.rs"]
pub(crate) mod quiet_panic;
