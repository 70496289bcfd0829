//! Host functions as tools (CONTRACT.md §7, SPEC §6, source `native`).
//!
//! This is the safe core: a Rust closure becomes a [`Tool`]. The C boundary
//! (src/ffi/) wraps a C function pointer and its `user_data` in such a
//! closure. The closure may run on many threads at once; no lock is held
//! while it runs, so it may call back into the library. It sees the call's
//! deadline and cancellation in its [`ExecContext`] (`ctx.remaining()`,
//! `ctx.stop()`); an answer it gives after either is dropped for the
//! timeout (or cancelled) result.

use crate::tool::{ExecContext, Execute, Source, Tool, ToolResult};
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// The function behind a native tool: args in, ToolResult out.
pub type NativeFn = dyn Fn(&Value, &ExecContext) -> ToolResult + Send + Sync;

/// A tool (source `native`) that runs `f`. The name is used as given; the
/// description may be empty and the input schema defaults to
/// `{"type":"object"}`.
///
/// A panic in `f` does not escape: it becomes an isError result naming the
/// tool (SPEC §0.8, a failing tool is a value the model sees).
pub fn native_tool(
    name: impl Into<String>,
    description: impl Into<String>,
    input_schema: Option<Value>,
    f: Arc<NativeFn>,
) -> Tool {
    let name = name.into();
    let exec = Native {
        name: name.clone(),
        f,
    };
    Tool::new(
        name,
        description,
        input_schema,
        Source::Native,
        Arc::new(exec),
    )
}

struct Native {
    name: String,
    f: Arc<NativeFn>,
}

impl Execute for Native {
    fn execute(&self, args: &Value, ctx: &ExecContext) -> ToolResult {
        match catch_unwind(AssertUnwindSafe(|| (self.f)(args, ctx))) {
            // An answer that comes after the deadline (or a cancel) is
            // dropped: the caller was promised a bounded call.
            Ok(result) => match ctx.stop() {
                Some(why) => ctx.stopped(&self.name, why),
                None => result,
            },
            Err(payload) => {
                let why = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".to_string());
                ToolResult::error(format!("native tool '{}' panicked: {why}", self.name))
            }
        }
    }
}
