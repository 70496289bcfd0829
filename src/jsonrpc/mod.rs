//! The JSON-RPC line layer under both MCP sides: the MCP client's stdio
//! transport (`mcp/lines.rs`, with its direct tools/calls beside rmcp in
//! `mcp/direct.rs`) and the served toolkit's (`mcp_server/stdio.rs`, and
//! its plain requests on stdio and HTTP, `mcp_server/http.rs`). The rooms
//! above keep the sessions (pipes, ids in flight, timeouts, cancels); what
//! goes on the wire is decided here.
//!
//! - `lines.rs`: one line framing for both directions: the cap on a line,
//!   the `\r` and byte-order mark a line may carry, a reader that never
//!   writes (so `receive` never waits on the peer), and the pipe lock whose
//!   queue keeps lines in the order they were written.
//! - `plain.rs`: the plain `tools/call` codec, both directions side by
//!   side: the request the client writes and the server reads, the answer
//!   the server writes and the client reads, each the bytes or message
//!   rmcp would write or read (`None` where it does not know, for rmcp);
//!   the JSON-RPC errors of text that is no message. `plain_tests.rs`:
//!   one differential harness of all of it against rmcp's serde types.
//! - `refuse.rs`: the JSON-RPC errors of text that is no message (a batch
//!   included), read in one pass that never holds a tree of it.
//! - `onepass.rs`: the one-pass JSON reads `plain.rs` is made of (values
//!   checked as a tree checks them, written compact, keys borrowed).
//! - `shape.rs`: a tools/call result each way: an MCP result as a
//!   `ToolResult` (SPEC §2), a `ToolResult` as an MCP result.
//! - this file: [`plain_path`], the one rule that says whether a session
//!   may take the fast paths beside rmcp, asked by the client and by the
//!   served side alike (and [`plain_path_named`], [`plain_path_takes`]).
//!
//! A room on the third floor: it imports only lower floors (`runtime`,
//! `limits`, `tool`, `parts`) and rmcp, never `mcp/` or `mcp_server/`.

pub mod lines;
mod onepass;
pub mod plain;
mod refuse;
pub mod shape;

use rmcp::model::ProtocolVersion;

/// Whether a session of protocol `version` may take the fast paths beside
/// rmcp (a tools/call written and read without rmcp's service loop, on
/// either side): its protocol opens with `initialize`, so rmcp puts no
/// client metadata in each request's `_meta`, gives results their legacy
/// shape (no `resultType`), and lets a server ask the client something
/// whenever. From 2026-07-28 on none of that holds, and every message is
/// rmcp's.
pub fn plain_path(version: &ProtocolVersion) -> bool {
    version.has_initialize()
}

/// [`plain_path`] for a version named in text (an HTTP request's
/// `MCP-Protocol-Version` header): only a version rmcp knows.
pub fn plain_path_named(version: &str) -> bool {
    ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|known| known.as_str() == version)
        .is_some_and(plain_path)
}

/// Whether the served side, on a session [`plain_path`] let through,
/// answers the plain request `plain` itself: a list always; a call unless
/// the client asked for log messages (`logs_wanted`, after a
/// `logging/setLevel`), which rmcp's path streams while the call runs.
pub fn plain_path_takes(plain: &plain::Plain, logs_wanted: bool) -> bool {
    !(logs_wanted && matches!(plain, plain::Plain::Call { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three checks this rule replaced (the client's `has_initialize`,
    /// the served stdio's `< 2026-07-28`, the HTTP header's `<
    /// STANDARD_HEADERS` among known versions) say the same of every
    /// version.
    #[test]
    fn one_rule_says_what_each_side_said() {
        let mut versions: Vec<ProtocolVersion> = ProtocolVersion::KNOWN_VERSIONS.to_vec();
        for other in [
            "2024-10-07",
            "2025-12-31",
            "2026-07-29",
            "2099-01-01",
            "",
            "x",
        ] {
            versions.push(serde_json::from_value(other.into()).unwrap_or_default());
        }
        let mut took = 0;
        for v in &versions {
            assert_eq!(plain_path(v), v.has_initialize(), "{v}");
            assert_eq!(
                plain_path(v),
                v.as_str() < ProtocolVersion::V_2026_07_28.as_str(),
                "{v}"
            );
            let known = ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .any(|k| k.as_str() == v.as_str());
            assert_eq!(
                plain_path_named(v.as_str()),
                v.as_str() < ProtocolVersion::STANDARD_HEADERS.as_str() && known,
                "{v}"
            );
            took += usize::from(plain_path(v));
        }
        assert!(took >= 4, "{took}");
        assert!(!plain_path(&ProtocolVersion::V_2026_07_28));
    }
}
