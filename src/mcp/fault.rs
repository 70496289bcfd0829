//! What went wrong with an MCP server, as a value. Every failure reads
//! `mcp server "NAME" failed at PHASE: DETAIL` ([`super::session::failure`]);
//! DETAIL is a [`Fault`], written out by its `Display` alone, so code that
//! decides something by the failure asks the variant (`Fault::PeerEof`,
//! [`Fault::stdin_closed`]) where it matched a prefix of the text. The texts
//! are the ones the status messages, the vectors and the tests pin.

use std::fmt;
use std::process::ExitStatus;
use std::time::Duration;

/// The detail of a failure, starting with a stable name.
#[derive(Debug)]
pub enum Fault {
    /// `invalid config (WHY)`.
    InvalidConfig(String),
    /// `transport (spawn-failed): WHY`: the server's process did not start.
    SpawnFailed(String),
    /// `transport (connect-failed)`: nothing answered at the address.
    ConnectFailed,
    /// `transport (WHAT)`: any other failure of the transport. `stdin_closed`:
    /// it was a write into the stdin a stdio server had closed.
    Transport { what: String, stdin_closed: bool },
    /// `timeout (WHAT)`, or `timeout` alone when `None`.
    Timeout(Option<String>),
    /// `peer-exited (…)`: the stdio server's process ended.
    PeerExited(ExitStatus),
    /// `peer-eof (WHY)`: the connection ended.
    PeerEof(&'static str),
    /// `rpc-error (code N)`: the server answered a JSON-RPC error.
    RpcError(i32),
    /// `http-status (N)`.
    HttpStatus(u16),
    /// `malformed-result`, or `malformed-result (WHY)`.
    Malformed(Option<String>),
    /// `closed (the toolkit was closed)`.
    Closed,
    /// `cancelled (the caller cancelled the call)`.
    Cancelled,
    /// `auth (WHY)`: an OAuth step that failed, worded and redacted by
    /// `super::auth` (the whole text, `auth (` included).
    Auth(String),
    /// `http-status (N): WHY`: a status whose meaning the detail spells out
    /// (401 without authorization, 403 for a missing scope).
    HttpStatusWhy(u16, &'static str),
    /// `FIRST; the legacy SSE fallback also failed: THEN`.
    FallbackFailed { first: Box<Fault>, then: Box<Fault> },
}

impl Fault {
    /// `timeout (no answer within N ms)`.
    pub fn no_answer_within(t: Duration) -> Fault {
        Fault::Timeout(Some(format!("no answer within {} ms", t.as_millis())))
    }

    /// `timeout (no answer within the maxTotalTimeout of N ms)`: a call
    /// that went on reporting progress past its server's cap.
    pub fn total_timeout(t: Duration) -> Fault {
        Fault::Timeout(Some(format!(
            "no answer within the maxTotalTimeout of {} ms",
            t.as_millis()
        )))
    }

    /// `transport (WHAT)`, not a closed stdin.
    pub fn transport(what: impl Into<String>) -> Fault {
        Fault::Transport {
            what: what.into(),
            stdin_closed: false,
        }
    }

    /// Whether the failure was a write into the stdin the server had
    /// closed (see `stdio::PipeStdin`), however it was reported.
    pub fn stdin_closed(&self) -> bool {
        match self {
            Fault::Transport { stdin_closed, .. } => *stdin_closed,
            _ => false,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::InvalidConfig(why) => write!(f, "invalid config ({why})"),
            Fault::SpawnFailed(why) => write!(f, "transport (spawn-failed): {why}"),
            Fault::ConnectFailed => f.write_str("transport (connect-failed)"),
            Fault::Transport { what, .. } => write!(f, "transport ({what})"),
            Fault::Timeout(None) => f.write_str("timeout"),
            Fault::Timeout(Some(what)) => write!(f, "timeout ({what})"),
            Fault::PeerExited(status) => {
                use std::os::unix::process::ExitStatusExt;
                match (status.code(), status.signal()) {
                    (Some(code), _) => write!(f, "peer-exited (status {code})"),
                    (None, Some(sig)) => write!(f, "peer-exited (signal {sig})"),
                    (None, None) => f.write_str("peer-exited"),
                }
            }
            Fault::PeerEof(why) => write!(f, "peer-eof ({why})"),
            Fault::RpcError(code) => write!(f, "rpc-error (code {code})"),
            Fault::HttpStatus(status) => write!(f, "http-status ({status})"),
            Fault::Malformed(None) => f.write_str("malformed-result"),
            Fault::Malformed(Some(why)) => write!(f, "malformed-result ({why})"),
            Fault::Closed => f.write_str("closed (the toolkit was closed)"),
            Fault::Cancelled => f.write_str("cancelled (the caller cancelled the call)"),
            Fault::Auth(text) => f.write_str(text),
            Fault::HttpStatusWhy(status, why) => write!(f, "http-status ({status}): {why}"),
            Fault::FallbackFailed { first, then } => {
                write!(f, "{first}; the legacy SSE fallback also failed: {then}")
            }
        }
    }
}

/// The error text of a write into a stdio server's closed stdin.
pub const BROKEN_PIPE: &str = "broken pipe (the server closed its stdin)";

/// The mark of an `io::Error` that is a write into a stdio server's closed
/// stdin (`stdio::PipeStdin`): its text is [`BROKEN_PIPE`].
#[derive(Debug)]
pub struct StdinClosed;

impl fmt::Display for StdinClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(BROKEN_PIPE)
    }
}

impl std::error::Error for StdinClosed {}

/// Whether `e`, or any error it was caused by, is [`StdinClosed`].
pub fn is_stdin_closed(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut at: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(e) = at {
        if e.is::<StdinClosed>() {
            return true;
        }
        if let Some(inner) = e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            if inner.is::<StdinClosed>() {
                return true;
            }
        }
        at = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    /// The texts the status messages and vectors pin.
    #[test]
    fn each_fault_reads_as_before() {
        let cases = [
            (Fault::InvalidConfig("x".into()), "invalid config (x)"),
            (
                Fault::SpawnFailed("cannot start 'p': e".into()),
                "transport (spawn-failed): cannot start 'p': e",
            ),
            (Fault::ConnectFailed, "transport (connect-failed)"),
            (
                Fault::transport("send failed: y"),
                "transport (send failed: y)",
            ),
            (Fault::Timeout(None), "timeout"),
            (
                Fault::no_answer_within(Duration::from_millis(1500)),
                "timeout (no answer within 1500 ms)",
            ),
            (
                Fault::PeerExited(ExitStatus::from_raw(3 << 8)),
                "peer-exited (status 3)",
            ),
            (
                Fault::PeerExited(ExitStatus::from_raw(9)),
                "peer-exited (signal 9)",
            ),
            (
                Fault::PeerEof("the connection is closed"),
                "peer-eof (the connection is closed)",
            ),
            (Fault::RpcError(-32602), "rpc-error (code -32602)"),
            (Fault::HttpStatus(401), "http-status (401)"),
            (Fault::Malformed(None), "malformed-result"),
            (Fault::Malformed(Some("m".into())), "malformed-result (m)"),
            (Fault::Closed, "closed (the toolkit was closed)"),
            (
                Fault::Cancelled,
                "cancelled (the caller cancelled the call)",
            ),
            (
                Fault::FallbackFailed {
                    first: Box::new(Fault::HttpStatus(405)),
                    then: Box::new(Fault::HttpStatus(404)),
                },
                "http-status (405); the legacy SSE fallback also failed: http-status (404)",
            ),
        ];
        for (fault, text) in cases {
            assert_eq!(fault.to_string(), text);
        }
    }

    #[test]
    fn a_closed_stdin_is_known_by_its_mark_not_its_text() {
        let closed = std::io::Error::new(std::io::ErrorKind::BrokenPipe, StdinClosed);
        assert_eq!(closed.to_string(), BROKEN_PIPE);
        assert!(is_stdin_closed(&closed));
        let other = std::io::Error::new(std::io::ErrorKind::BrokenPipe, BROKEN_PIPE);
        assert!(!is_stdin_closed(&other));
    }
}
