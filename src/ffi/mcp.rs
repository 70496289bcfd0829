//! MCP without a toolkit: the list-only inventory (SPEC §2 Gap 6).

use super::{boundary, read_str, tn_status};
use crate::error::Error;
use serde_json::Value;
use std::ffi::c_char;

/// Connects to every enabled server of an MCP config, lists its tools and
/// disconnects: no toolkit, no child process left running when it returns.
/// `mcp_config_json` is what a toolkit's `mcpConfig` takes, as JSON text: an
/// object (`mcpServers` / `servers` / `mcp`), or a JSON string holding a
/// path to an `mcp.json` file. `*out_json` receives `{"tools": {server:
/// [{name, description, inputSchema}]}, "status": {server: "connected" |
/// "disabled" | "failed"}, "errors": {server: message}}` — tools under
/// their original names, unfiltered by each server's `tools` allow-list — or
/// the error JSON (`invalid_json`, `invalid_config`). A server that fails is
/// a `failed` status, never an error of the call. Safe from any thread.
///
/// # Safety
/// `mcp_config_json` is NULL or NUL-terminated; `out_json` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tn_mcp_list_tools(
    mcp_config_json: *const c_char,
    out_json: *mut *mut c_char,
) -> tn_status {
    boundary(out_json, || {
        // SAFETY: forwarded from this function's contract.
        let text = unsafe { read_str(mcp_config_json, "mcp_config_json") }?;
        let v: Value =
            serde_json::from_str(text).map_err(|e| Error::invalid_json("mcp_config_json", &e))?;
        let config = crate::mcp::parse_config(&v)?;
        Ok(crate::mcp::list_tools(&config).to_json().to_string())
    })
}
