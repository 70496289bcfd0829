//! toolnexus: one toolkit of uniform tools gathered from agent skills, the ten
//! built-in tools, MCP servers, declared HTTP endpoints and host functions,
//! rendered for OpenAI, Anthropic or Gemini and executed by name.
//!
//! The pure core lives in the modules below; `ffi` is the C boundary. `unsafe`
//! is allowed in two modules only: `ffi` (pointers, strings and callbacks
//! crossing the C ABI) and `sys` (safe wrappers over the few OS and CPU calls
//! no dependency wraps: signal masks, an SSE2 scan, a prefetch hint; and
//! jobs that borrow, run on the pooled threads and waited for).
//!
//! # Floors
//!
//! Each room (a top-level module of `src/`) stands on a floor. A room may use
//! rooms on its own floor or below, never above, and no two files depend on
//! each other, however indirectly (a folder's `mod.rs` may reach down into
//! its own files, which use it through `super::`); `src/bin/` sits on top of
//! them all. `tests/layers.rs` reads the lines below and checks every
//! reference in `src/` against them (a room listed before it exists is fine).
//!
//! - floor 1: error, log, env, json, limits, cancel, sys, runtime, process, net, answer, style, test_json, quiet_panic
//! - floor 2: tool, parts, adapter, store
//! - floor 3: provider, jsonrpc
//! - floor 4: skill, builtin, http_tool, relay_tool, native, mcp, config, source, a2a_tool
//! - floor 5: toolkit
//! - floor 6: translate, client
//! - floor 7: mcp_server, agents, a2a
//! - floor 8: ffi
#![deny(unsafe_code)]

pub mod a2a;
pub mod a2a_tool;
pub mod adapter;
pub mod agents;
pub mod answer;
pub mod builtin;
pub mod cancel;
pub mod client;
pub mod config;
pub mod env;
pub mod error;
#[allow(unsafe_code)]
pub mod ffi;
pub mod http_tool;
pub mod json;
pub mod jsonrpc;
pub mod limits;
pub mod log;
pub mod mcp;
pub mod mcp_server;
pub mod native;
pub mod net;
pub mod parts;
pub(crate) mod process;
pub mod provider;
pub mod relay_tool;
pub mod runtime;
pub mod skill;
mod source;
pub mod store;
pub mod style;
#[allow(unsafe_code)]
pub(crate) mod sys;
pub mod tool;
pub mod toolkit;
pub mod translate;

#[cfg(test)]
mod test_json;

/// Silences the panic message of a panic a unit test provokes on purpose.
#[cfg(test)]
#[path = "../tests/quiet_panic/mod.rs"]
pub(crate) mod quiet_panic;
