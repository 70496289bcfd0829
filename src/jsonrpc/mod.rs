//! The JSON-RPC line layer under both MCP sides: the MCP client's stdio
//! transport (`mcp/lines.rs`, with its direct tools/calls beside rmcp in
//! `mcp/direct.rs`) and the served toolkit's (`mcp_server/stdio.rs`, and
//! the plain requests of `mcp_server/plain.rs` on stdio and HTTP).
//!
//! - `lines.rs`: one line framing for both directions: the cap on a line,
//!   the `\r` and byte-order mark a line may carry, a reader that never
//!   writes (so `receive` never waits on the peer), and the pipe lock whose
//!   queue keeps lines in the order they were written.
//! - this file: [`plain_path`], the one rule that says whether a session
//!   may take the fast paths beside rmcp, asked by the client and by the
//!   served side alike.
//!
//! A room on the third floor: it imports only ground-floor modules
//! (`runtime`) and rmcp, never `mcp/` or `mcp_server/`.

pub mod lines;

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
