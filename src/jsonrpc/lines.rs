//! One JSON-RPC message per line, each way: the framing both MCP sides
//! share (the client's pipe to a server, the served toolkit's stdio), and
//! the ACP session's reader (`provider::acp`).
//!
//! Reading never writes: what a side answers a line it cannot take is its
//! own business, done on a task of its own, never from inside `receive`
//! (rmcp polls `receive` in a `select!` and drops it whenever another
//! event comes first; a write waited for there also stalls the reading
//! when the peer's pipe is full, issue 14). A line longer than
//! [`LINE_BYTES`] (its newline not counted) is skipped to its end without ever holding more than that.

use crate::limits::LINE_BYTES;
use std::future::Future;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{Mutex, OwnedMutexGuard};

/// How much one read takes.
const READ_CHUNK: usize = 64 * 1024;

/// Reads lines, one at a time, into a buffer of its own. Cancel-safe: a
/// `next` dropped at its await loses nothing and repeats nothing, the next
/// call goes on where it stopped.
///
/// Reads go into the spare capacity of `buf` (tokio's `BufReader` zeroes
/// its whole buffer when made: 16 pages of fresh memory touched per server
/// before its first byte is read, on the path of every connect); only the
/// pages a read fills are ever touched.
pub struct LineReader<R> {
    read: R,
    /// Bytes read and not yet consumed are `buf[pos..]`.
    buf: Vec<u8>,
    pos: usize,
    /// The line read so far, without its newline.
    line: Vec<u8>,
    /// A line past [`LINE_BYTES`] is being skipped to its end.
    skipping: bool,
    /// The longest line kept ([`LINE_BYTES`] unless set lower).
    cap: usize,
}

/// What [`LineReader::next`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// A whole line, in [`LineReader::line`].
    Line,
    /// A line past [`LINE_BYTES`] ended; nothing of it was kept.
    TooLong,
    /// The end of the input, or a read error: the peer is gone.
    End,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(read: R) -> Self {
        LineReader {
            read,
            buf: Vec::with_capacity(READ_CHUNK),
            pos: 0,
            line: Vec::with_capacity(4096),
            skipping: false,
            cap: LINE_BYTES,
        }
    }

    /// Keeps lines of at most `cap` bytes (at most [`LINE_BYTES`]); a
    /// longer one is [`Next::TooLong`].
    pub fn with_cap(mut self, cap: usize) -> Self {
        self.cap = cap.min(LINE_BYTES);
        self
    }

    /// The line [`Next::Line`] announced, without its newline.
    pub fn line(&self) -> &[u8] {
        &self.line
    }

    /// The line [`Next::Line`] announced, taken out; give its buffer back
    /// with [`Self::recycle`] to keep its capacity.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.line)
    }

    /// Done with the line: its buffer (emptied) holds the next one.
    pub fn recycle(&mut self, mut line: Vec<u8>) {
        line.clear();
        self.line = line;
    }

    /// Done with the line in place.
    pub fn clear(&mut self) {
        self.line.clear();
    }

    /// Reads up to the end of the next line.
    pub async fn next(&mut self) -> Next {
        loop {
            if self.pos == self.buf.len() {
                // Everything read is consumed: read again from the start.
                // `read_buf` is cancel-safe (nothing is read when it is
                // dropped before it completes).
                self.buf.clear();
                self.pos = 0;
                match self.read.read_buf(&mut self.buf).await {
                    Ok(0) => return Next::End,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => return Next::End,
                }
            }
            let available = &self.buf[self.pos..];
            let newline = crate::sys::bytes::find(b'\n', available);
            let used = newline.map_or(available.len(), |i| i + 1);
            let body = &available[..newline.unwrap_or(available.len())];
            if !self.skipping {
                if self.line.len() + body.len() > self.cap {
                    self.line = Vec::new();
                    self.skipping = true;
                } else {
                    self.line.extend_from_slice(body);
                }
            }
            // No await between the copy above and this consume.
            self.pos += used;
            if newline.is_some() {
                if std::mem::take(&mut self.skipping) {
                    return Next::TooLong;
                }
                return Next::Line;
            }
        }
    }
}

/// A line without the `\r` before its newline and a leading byte-order
/// mark, both of which a peer may send.
pub fn text(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

/// A writer's lock: held now, or this caller's place in its queue.
pub enum Lock<W> {
    Now(OwnedMutexGuard<W>),
    Queued(std::pin::Pin<Box<dyn Future<Output = OwnedMutexGuard<W>> + Send>>),
}

/// Takes the writer's lock if it is free, else a place in its queue, now:
/// the lock is fair, but a caller is queued only when its `lock` is first
/// polled, so a lock taken later on a task of its own could be served
/// after a caller that asked after it (a request overtaken by its own
/// cancel, issue 25 M5). Lines go out in the order they were handed here.
pub fn in_line<W: Send + 'static>(writer: &Arc<Mutex<W>>) -> Lock<W> {
    if let Ok(held) = Arc::clone(writer).try_lock_owned() {
        return Lock::Now(held);
    }
    // Unconstrained: a task out of its cooperative budget would otherwise
    // be told to yield before it is queued.
    let mut lock = Box::pin(tokio::task::unconstrained(Arc::clone(writer).lock_owned()));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match lock.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(held) => Lock::Now(held),
        // Queued: polled again, the lock wakes the caller's task instead.
        std::task::Poll::Pending => Lock::Queued(lock),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// Gives its bytes a few at a time, so lines arrive split across reads.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        step: usize,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let n = self
                .step
                .min(self.data.len() - self.at)
                .min(buf.remaining());
            let at = self.at;
            buf.put_slice(&self.data[at..at + n]);
            self.at += n;
            Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn lines_split_across_reads_come_out_whole() {
        crate::runtime::block_on(async {
            let mut data = b"{\"a\":1}\n\n".to_vec();
            data.extend(std::iter::repeat_n(b'z', 300));
            data.extend_from_slice(b"\r\nlast");
            for step in [1, 2, 3, 7, 64] {
                let mut r = LineReader::new(Trickle {
                    data: data.clone(),
                    at: 0,
                    step,
                })
                .with_cap(200);
                let mut seen = Vec::new();
                loop {
                    let next = r.next().await;
                    if next == Next::End {
                        break;
                    }
                    seen.push((next, String::from_utf8_lossy(text(r.line())).into_owned()));
                    r.clear();
                }
                assert_eq!(
                    seen,
                    [
                        (Next::Line, "{\"a\":1}".to_string()),
                        (Next::Line, String::new()),
                        (Next::TooLong, String::new()),
                    ],
                    "{step} bytes a read"
                );
            }
        });
    }

    #[test]
    fn lines_are_read_whole_and_a_line_past_the_cap_is_skipped() {
        crate::runtime::block_on(async {
            let mut input = b"one\r\n\xEF\xBB\xBFtwo\n\n".to_vec();
            input.extend(std::iter::repeat_n(b'x', LINE_BYTES + 1));
            input.extend_from_slice(b"\nthree\n");
            input.extend(std::iter::repeat_n(b'y', LINE_BYTES));
            input.extend_from_slice(b"\nlast");
            let mut r = LineReader::new(input.as_slice());
            let mut seen = Vec::new();
            loop {
                let next = r.next().await;
                if next == Next::End {
                    break;
                }
                let line = r.take();
                seen.push((next, text(&line).len().min(8), line.first().copied()));
                r.recycle(line);
            }
            assert_eq!(
                seen,
                [
                    (Next::Line, 3, Some(b'o')),
                    (Next::Line, 3, Some(0xEF)),
                    (Next::Line, 0, None),
                    (Next::TooLong, 0, None),
                    (Next::Line, 5, Some(b't')),
                    // Exactly the cap, its newline not counted: kept.
                    (Next::Line, 8, Some(b'y')),
                ]
            );
        });
    }
}
