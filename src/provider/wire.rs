//! The provider exchange, done on the calling thread with blocking sockets.
//!
//! A translate call is one request and one response. Driving it through the
//! async runtime costs thread hand-offs on every call: the runtime's I/O
//! thread is woken by the response and then wakes the caller. Here the caller
//! writes the request and reads the response itself, so a call on a pooled
//! connection costs the two wake-ups a TCP round trip costs anyway.
//!
//! Only opening a connection (name lookup, TCP connect, TLS handshake) still
//! runs on the shared runtime, through the very connector HTTP tools use; the
//! connected socket then leaves the runtime and is kept, blocking, in this
//! module's own keep-alive pool.
//!
//! The whole-call deadline becomes socket timeouts, re-armed to what is left
//! of it before every read and write the socket does (TLS records included),
//! so a provider that drips its answer a byte at a time still ends at the
//! deadline rather than one timeout per byte later.
//! Cancelling a [`CancelToken`] shuts down the socket of every exchange
//! registered with it, which ends a blocked read or write at once.
//!
//! The HTTP/1.1 response is parsed with `httparse` (hyper's own parser):
//! bodies framed by Content-Length, by chunked transfer coding or by the end
//! of the connection, at most [`RESPONSE_BODY_BYTES`] of them.
//!
//! A streamed exchange ([`exchange_streaming`], SPEC §8 Streaming) hands the
//! body of a 2xx answer to a sink piece by piece as it arrives, with the
//! chunked coding already removed, and keeps none of it; any other answer is
//! read whole as usual.

use crate::cancel::{CancelToken, OnCancel};
use crate::limits::RESPONSE_BODY_BYTES;
use crate::net::transport::{self, Failure, IdlePool};
use crate::runtime;
use bytes::Bytes;
use http::header::HeaderMap;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use url::Url;

/// The largest response head read before the answer is given up on.
const MAX_HEAD_BYTES: usize = 1 << 20;

/// Headers a response may carry (more fail the exchange, as in hyper).
const MAX_HEADERS: usize = 128;

/// The most read from the socket at once.
const READ_CHUNK: usize = 64 * 1024;
/// What the first read of a response asks for.
const FIRST_READ: usize = 4 * 1024;

/// Interim (1xx) responses skipped before the answer is given up on.
const MAX_INTERIM: usize = 16;

/// Why an exchange ended without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Failed(Failure),
    /// The deadline passed.
    TimedOut,
    /// The cancel token was triggered.
    Cancelled,
}

/// A response: its status, its `Retry-After` (the one header the caller
/// reads) and its whole body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub retry_after: Option<String>,
    pub body: Bytes,
}

/// A request as it goes on the wire, head and body, built once per call and
/// sent as it is on every attempt.
pub(crate) struct Outgoing {
    bytes: Vec<u8>,
    origin: String,
}

impl Outgoing {
    /// `POST` of `body` to `url` with `headers`. The Host and Content-Length
    /// headers are this module's own; any given in `headers` are left out,
    /// as are framing headers that would contradict the Content-Length.
    pub fn post(url: &Url, headers: &HeaderMap, body: &[u8]) -> Result<Outgoing, Failure> {
        let host = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            (None, _) => return Err(Failure::Transport),
        };
        let mut bytes = Vec::with_capacity(body.len() + 512);
        bytes.extend_from_slice(b"POST ");
        bytes.extend_from_slice(url.path().as_bytes());
        if let Some(q) = url.query() {
            bytes.push(b'?');
            bytes.extend_from_slice(q.as_bytes());
        }
        bytes.extend_from_slice(b" HTTP/1.1\r\nhost: ");
        bytes.extend_from_slice(host.as_bytes());
        bytes.extend_from_slice(b"\r\n");
        for (name, value) in headers {
            if matches!(
                name.as_str(),
                "host" | "content-length" | "transfer-encoding" | "connection"
            ) {
                continue;
            }
            bytes.extend_from_slice(name.as_str().as_bytes());
            bytes.extend_from_slice(b": ");
            bytes.extend_from_slice(value.as_bytes());
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(b"content-length: ");
        bytes.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
        bytes.extend_from_slice(b"\r\n\r\n");
        bytes.extend_from_slice(body);
        Ok(Outgoing {
            bytes,
            origin: transport::origin_key(url),
        })
    }
}

// ---------------------------------------------------------------------------
// streams
// ---------------------------------------------------------------------------

/// The TCP socket, shared with the cancel token that may shut it down, and
/// the deadline of the exchange it carries.
struct Sock {
    tcp: Arc<TcpStream>,
    deadline: Option<Instant>,
    /// Whether socket timeouts are currently set (they are cleared again for
    /// a call without a deadline).
    timed: bool,
}

impl Sock {
    /// Sets the socket timeouts to what is left before the deadline; a
    /// deadline already passed is a `TimedOut` error.
    fn arm(&mut self) -> io::Result<()> {
        let left = match self.deadline {
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::from(ErrorKind::TimedOut));
                }
                Some(left)
            }
            None if !self.timed => return Ok(()),
            None => None,
        };
        self.tcp.set_read_timeout(left)?;
        self.tcp.set_write_timeout(left)?;
        self.timed = left.is_some();
        Ok(())
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.arm()?;
        (&*self.tcp).read(buf)
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.arm()?;
        (&*self.tcp).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&*self.tcp).flush()
    }
}

enum Stream {
    Plain(Sock),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, Sock>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// An open connection to one origin.
struct Conn {
    stream: Stream,
    tcp: Arc<TcpStream>,
}

impl Conn {
    /// The connection the shared runtime opened, moved out of it.
    fn adopt(io: transport::Io) -> Result<Conn, Failure> {
        let (tcp, tls) = match io {
            hyper_rustls::MaybeHttpsStream::Http(io) => (io.into_inner(), None),
            hyper_rustls::MaybeHttpsStream::Https(tls) => {
                let (io, session) = tls.into_inner().into_inner();
                (io.into_inner().into_inner(), Some(session))
            }
        };
        let tcp = tcp.into_std().map_err(|_| Failure::Transport)?;
        tcp.set_nonblocking(false).map_err(|_| Failure::Transport)?;
        let tcp = Arc::new(tcp);
        let sock = Sock {
            tcp: Arc::clone(&tcp),
            deadline: None,
            timed: false,
        };
        let stream = match tls {
            None => Stream::Plain(sock),
            Some(session) => Stream::Tls(Box::new(rustls::StreamOwned::new(session, sock))),
        };
        Ok(Conn { stream, tcp })
    }

    /// Whether an idle connection is still open: nothing to read yet (an
    /// end of stream or an unasked-for byte both mean it is not usable).
    fn is_open(&self) -> bool {
        if self.tcp.set_nonblocking(true).is_err() {
            return false;
        }
        let open =
            matches!(self.tcp.peek(&mut [0u8; 1]), Err(e) if e.kind() == ErrorKind::WouldBlock);
        self.tcp.set_nonblocking(false).is_ok() && open
    }

    /// Makes `deadline` the one every read and write of the socket is held
    /// to from now on (it is past already: `TimedOut`).
    fn arm(&mut self, deadline: Option<Instant>) -> Result<(), Stop> {
        let sock = match &mut self.stream {
            Stream::Plain(s) => s,
            Stream::Tls(s) => &mut s.sock,
        };
        sock.deadline = deadline;
        match sock.arm() {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::TimedOut => Err(Stop::TimedOut),
            Err(_) => Err(Stop::Failed(Failure::Transport)),
        }
    }
}

// ---------------------------------------------------------------------------
// the pool
// ---------------------------------------------------------------------------

/// The idle connections of provider calls.
fn pool() -> &'static IdlePool<Conn> {
    static POOL: OnceLock<IdlePool<Conn>> = OnceLock::new();
    POOL.get_or_init(IdlePool::new)
}

/// A live idle connection to `origin`, if the pool has one.
fn checkout(origin: &str) -> Option<Conn> {
    pool().take(origin, |conn| conn.is_open())
}

fn checkin(origin: &str, conn: Conn) {
    pool().put(origin, conn);
}

// ---------------------------------------------------------------------------
// one exchange
// ---------------------------------------------------------------------------

/// Sends `outgoing` to `url` and reads the whole response, on a pooled
/// connection if one is open, else on a new one. A pooled connection that
/// turns out closed before any of the response arrived is replaced once.
pub(crate) fn exchange(
    url: &Url,
    outgoing: &Outgoing,
    deadline: Option<Instant>,
    cancel: Option<&CancelToken>,
) -> Result<Answer, Stop> {
    exchange_to(url, outgoing, deadline, cancel, None)
}

/// Where a streamed 2xx body goes: each piece as it arrives. A sink that
/// answers `false` stops the reading there (the connection is then not
/// reused).
pub(crate) type Sink<'f> = dyn FnMut(&[u8]) -> bool + 'f;

/// [`exchange`], with the body of a 2xx answer handed to `sink` as it
/// arrives instead of being gathered: the answer then has an empty body.
/// Any other status is read whole, into the answer, as [`exchange`] does.
pub(crate) fn exchange_streaming(
    url: &Url,
    outgoing: &Outgoing,
    deadline: Option<Instant>,
    cancel: Option<&CancelToken>,
    sink: &mut Sink<'_>,
) -> Result<Answer, Stop> {
    exchange_to(url, outgoing, deadline, cancel, Some(sink))
}

fn exchange_to(
    url: &Url,
    outgoing: &Outgoing,
    deadline: Option<Instant>,
    cancel: Option<&CancelToken>,
    mut sink: Option<&mut Sink<'_>>,
) -> Result<Answer, Stop> {
    if let Some(mut conn) = checkout(&outgoing.origin) {
        // Nothing reached the sink when nothing came back.
        match on_conn(&mut conn, outgoing, deadline, cancel, sink.as_deref_mut()) {
            Ok((answer, reusable)) => {
                if reusable {
                    checkin(&outgoing.origin, conn);
                }
                return Ok(answer);
            }
            Err((Stop::Failed(_), Progress::NothingBack)) => {}
            Err((stop, _)) => return Err(stop),
        }
    }
    let mut conn = open(url, deadline, cancel)?;
    let (answer, reusable) =
        on_conn(&mut conn, outgoing, deadline, cancel, sink).map_err(|(s, _)| s)?;
    if reusable {
        checkin(&outgoing.origin, conn);
    }
    Ok(answer)
}

/// How far a failed exchange got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Progress {
    /// Not one byte of a response arrived (a stale pooled connection).
    NothingBack,
    Partial,
}

/// A new connection, opened on the shared runtime within the deadline and
/// abandoned if the token is cancelled meanwhile.
fn open(url: &Url, deadline: Option<Instant>, cancel: Option<&CancelToken>) -> Result<Conn, Stop> {
    let connecting = async {
        let opened = async { transport::open(url).await.map_err(Stop::Failed) };
        let timed = async {
            match deadline {
                Some(d) => tokio::time::timeout_at(d.into(), opened)
                    .await
                    .unwrap_or(Err(Stop::TimedOut)),
                None => opened.await,
            }
        };
        let io = match cancel {
            Some(token) => tokio::select! {
                biased;
                _ = token.cancelled() => Err(Stop::Cancelled),
                r = timed => r,
            },
            None => timed.await,
        }?;
        // Moved out of the runtime while still inside it.
        Conn::adopt(io).map_err(Stop::Failed)
    };
    // A caller inside some async runtime cannot block on the shared one in
    // place: the wait moves to a short-lived thread.
    if tokio::runtime::Handle::try_current().is_err() {
        return runtime::block_on(connecting);
    }
    std::thread::scope(|s| {
        s.spawn(|| runtime::block_on(connecting))
            .join()
            .unwrap_or(Err(Stop::Failed(Failure::Transport)))
    })
}

/// One request and its response on `conn`, with the socket registered with
/// the cancel token meanwhile. Gives the answer and whether the connection
/// may carry another request.
fn on_conn(
    conn: &mut Conn,
    outgoing: &Outgoing,
    deadline: Option<Instant>,
    cancel: Option<&CancelToken>,
    sink: Option<&mut Sink<'_>>,
) -> Result<(Answer, bool), (Stop, Progress)> {
    let Some(token) = cancel else {
        return talk(conn, outgoing, deadline, sink);
    };
    let registered = token.register(&conn.tcp);
    let result = if registered {
        talk(conn, outgoing, deadline, sink)
    } else {
        Err((Stop::Cancelled, Progress::NothingBack))
    };
    token.deregister(&conn.tcp);
    match result {
        // Whatever went wrong, a cancelled token is why.
        Err(_) if token.is_cancelled() => Err((Stop::Cancelled, Progress::Partial)),
        other => other,
    }
}

fn talk(
    conn: &mut Conn,
    outgoing: &Outgoing,
    deadline: Option<Instant>,
    sink: Option<&mut Sink<'_>>,
) -> Result<(Answer, bool), (Stop, Progress)> {
    conn.arm(deadline).map_err(|s| (s, Progress::Partial))?;
    if let Err(e) = conn
        .stream
        .write_all(&outgoing.bytes)
        .and_then(|_| conn.stream.flush())
    {
        // A stale pooled connection may fail as soon as it is written to.
        return Err((stop_of(&e, deadline), Progress::NothingBack));
    }
    let mut reader = Reader {
        conn,
        buf: Vec::with_capacity(FIRST_READ),
        window: FIRST_READ,
        pos: 0,
        deadline,
    };
    reader.response(sink)
}

fn stop_of(e: &io::Error, deadline: Option<Instant>) -> Stop {
    let timed_out = matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
        && deadline.is_some_and(|d| Instant::now() >= d);
    if timed_out {
        Stop::TimedOut
    } else {
        Stop::Failed(Failure::Transport)
    }
}

/// Reads one response from a connection: the head, then the body as the
/// head frames it.
struct Reader<'c> {
    conn: &'c mut Conn,
    /// Bytes read; `pos` is where the unparsed ones start.
    buf: Vec<u8>,
    /// How many bytes the next read asks for (see [`Reader::fill`]).
    window: usize,
    pos: usize,
    deadline: Option<Instant>,
}

/// What a response head says.
struct Head {
    status: u16,
    retry_after: Option<String>,
    framing: Framing,
    /// Whether the connection may carry another request after this one.
    keep_alive: bool,
}

/// How the body of a response is delimited.
enum Framing {
    Empty,
    Length(usize),
    Chunked,
    UntilClose,
}

impl Reader<'_> {
    /// Reads more bytes; `Ok(false)` at the end of the stream.
    fn fill(&mut self) -> Result<bool, Stop> {
        loop {
            // Only the window read into is zeroed, not all the spare
            // capacity of a large buffer on every read; and the window
            // starts small (a whole answer of most calls, its head with
            // it) and doubles each time a read fills it, up to READ_CHUNK.
            let start = self.buf.len();
            let window = self.window;
            if self.buf.capacity() - start < window {
                self.buf.reserve(window);
            }
            self.buf.resize(start + window, 0);
            let read = self.conn.stream.read(&mut self.buf[start..]);
            match read {
                Ok(n) => {
                    self.buf.truncate(start + n);
                    if n == window {
                        self.window = (window * 2).min(READ_CHUNK);
                    }
                    return Ok(n > 0);
                }
                Err(e) => {
                    self.buf.truncate(start);
                    match e.kind() {
                        ErrorKind::Interrupted => continue,
                        ErrorKind::WouldBlock | ErrorKind::TimedOut => {
                            // Each read is armed to what is left of the
                            // deadline; one that fires early (rounding) is
                            // simply tried again.
                            match self.deadline {
                                None => return Err(Stop::Failed(Failure::Transport)),
                                Some(d) if Instant::now() >= d => return Err(Stop::TimedOut),
                                Some(_) => {}
                            }
                        }
                        _ => return Err(Stop::Failed(Failure::Transport)),
                    }
                }
            }
        }
    }

    fn response(
        &mut self,
        sink: Option<&mut Sink<'_>>,
    ) -> Result<(Answer, bool), (Stop, Progress)> {
        let mut interim = 0;
        let head = loop {
            match self.head() {
                Ok(Some(head)) => break head,
                // A 1xx interim response: the real one follows, unless the
                // server only ever sends those.
                Ok(None) if interim < MAX_INTERIM => {
                    interim += 1;
                    self.compact();
                }
                Ok(None) => return Err((Stop::Failed(Failure::Transport), Progress::Partial)),
                Err(stop) => {
                    let progress = if self.buf.is_empty() {
                        Progress::NothingBack
                    } else {
                        Progress::Partial
                    };
                    return Err((stop, progress));
                }
            }
        };
        if let Some(sink) = sink.filter(|_| (200..300).contains(&head.status)) {
            let finished = self
                .stream_body(head.framing, sink)
                .map_err(|s| (s, Progress::Partial))?;
            let reusable = finished && head.keep_alive && self.pos == self.buf.len();
            let answer = Answer {
                status: head.status,
                retry_after: head.retry_after,
                body: Bytes::new(),
            };
            return Ok((answer, reusable));
        }
        let body = self
            .body(head.framing)
            .map_err(|s| (s, Progress::Partial))?;
        // Bytes past the response were never asked for: the connection is
        // not reused.
        let reusable = head.keep_alive && self.pos == self.buf.len();
        Ok((
            Answer {
                status: head.status,
                retry_after: head.retry_after,
                body,
            },
            reusable,
        ))
    }

    /// Parses one response head; `None` for an interim (1xx) one, which is
    /// skipped.
    fn head(&mut self) -> Result<Option<Head>, Stop> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut response = httparse::Response::new(&mut headers);
            match response.parse(&self.buf[self.pos..]) {
                Ok(httparse::Status::Complete(len)) => {
                    let status = response.code.unwrap_or(0);
                    let version = response.version.unwrap_or(1);
                    let mut retry_after = None;
                    let mut length = None;
                    let mut chunked = false;
                    let mut close = version == 0;
                    for h in response.headers.iter() {
                        let value = std::str::from_utf8(h.value).ok().map(str::trim);
                        if h.name.eq_ignore_ascii_case("retry-after") {
                            retry_after = value.map(str::to_string);
                        } else if h.name.eq_ignore_ascii_case("content-length") {
                            let n = value
                                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                                .and_then(|v| v.parse::<usize>().ok())
                                .ok_or(Stop::Failed(Failure::Transport))?;
                            if length.is_some_and(|l| l != n) {
                                return Err(Stop::Failed(Failure::Transport));
                            }
                            length = Some(n);
                        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                            chunked = value.is_some_and(|v| {
                                v.rsplit(',')
                                    .next()
                                    .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"))
                            });
                        } else if h.name.eq_ignore_ascii_case("connection") {
                            for token in value.unwrap_or("").split(',') {
                                let token = token.trim();
                                if token.eq_ignore_ascii_case("close") {
                                    close = true;
                                } else if token.eq_ignore_ascii_case("keep-alive") && version == 0 {
                                    close = false;
                                }
                            }
                        }
                    }
                    self.pos += len;
                    if (100..200).contains(&status) && status != 101 {
                        return Ok(None);
                    }
                    let framing = if status == 204 || status == 304 {
                        Framing::Empty
                    } else if chunked {
                        Framing::Chunked
                    } else if let Some(n) = length {
                        Framing::Length(n)
                    } else {
                        Framing::UntilClose
                    };
                    let keep_alive = !close && !matches!(framing, Framing::UntilClose);
                    return Ok(Some(Head {
                        status,
                        retry_after,
                        framing,
                        keep_alive,
                    }));
                }
                Ok(httparse::Status::Partial) => {
                    if self.buf.len() - self.pos > MAX_HEAD_BYTES {
                        return Err(Stop::Failed(Failure::Transport));
                    }
                    if !self.fill()? {
                        return Err(Stop::Failed(Failure::Transport));
                    }
                }
                Err(_) => return Err(Stop::Failed(Failure::Transport)),
            }
        }
    }

    fn body(&mut self, framing: Framing) -> Result<Bytes, Stop> {
        match framing {
            Framing::Empty => Ok(Bytes::new()),
            Framing::Length(n) => {
                if n > RESPONSE_BODY_BYTES {
                    return Err(Stop::Failed(Failure::TooLarge));
                }
                let have = self.buf.len() - self.pos;
                if have < n {
                    self.buf.reserve(n - have);
                }
                while self.buf.len() - self.pos < n {
                    if !self.fill()? {
                        return Err(Stop::Failed(Failure::Transport));
                    }
                }
                Ok(self.take(n))
            }
            Framing::UntilClose => {
                while self.fill()? {
                    if self.buf.len() - self.pos > RESPONSE_BODY_BYTES {
                        return Err(Stop::Failed(Failure::TooLarge));
                    }
                }
                let n = self.buf.len() - self.pos;
                Ok(self.take(n))
            }
            Framing::Chunked => self.chunked(),
        }
    }

    /// The next `n` unparsed bytes (all present). When they are all that was
    /// read, the buffer itself becomes the body, uncopied.
    fn take(&mut self, n: usize) -> Bytes {
        let (start, end) = (self.pos, self.pos + n);
        if end == self.buf.len() {
            self.pos = 0;
            return Bytes::from(std::mem::take(&mut self.buf)).slice(start..end);
        }
        self.pos = end;
        Bytes::copy_from_slice(&self.buf[start..end])
    }

    /// The size line of the next chunk, consumed.
    fn chunk_size(&mut self) -> Result<u64, Stop> {
        let (used, size) = loop {
            match httparse::parse_chunk_size(&self.buf[self.pos..]) {
                Ok(httparse::Status::Complete(found)) => break found,
                // A size line never ending (endless extensions) is cut off.
                Ok(httparse::Status::Partial) if self.buf.len() - self.pos <= MAX_HEAD_BYTES => {
                    if !self.fill()? {
                        return Err(Stop::Failed(Failure::Transport));
                    }
                }
                _ => return Err(Stop::Failed(Failure::Transport)),
            }
        };
        self.pos += used;
        Ok(size)
    }

    /// A chunked body, its chunks joined; trailers are read and dropped.
    fn chunked(&mut self) -> Result<Bytes, Stop> {
        let mut body = Vec::new();
        loop {
            let size = self.chunk_size()?;
            if size == 0 {
                return self.trailers().map(|_| Bytes::from(body));
            }
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            if size > RESPONSE_BODY_BYTES - body.len() {
                return Err(Stop::Failed(Failure::TooLarge));
            }
            // The chunk and the CRLF after it.
            while self.buf.len() - self.pos < size + 2 {
                if !self.fill()? {
                    return Err(Stop::Failed(Failure::Transport));
                }
            }
            body.extend_from_slice(&self.buf[self.pos..self.pos + size]);
            if &self.buf[self.pos + size..self.pos + size + 2] != b"\r\n" {
                return Err(Stop::Failed(Failure::Transport));
            }
            self.pos += size + 2;
            self.compact();
        }
    }

    /// The trailer section after the last chunk, up to its empty line; at
    /// most [`MAX_HEAD_BYTES`] of it.
    fn trailers(&mut self) -> Result<(), Stop> {
        let start = self.pos;
        loop {
            if self.pos - start > MAX_HEAD_BYTES {
                return Err(Stop::Failed(Failure::Transport));
            }
            let rest = &self.buf[self.pos..];
            match rest.windows(2).position(|w| w == b"\r\n") {
                Some(0) => {
                    self.pos += 2;
                    return Ok(());
                }
                Some(end) => self.pos += end + 2,
                None => {
                    if rest.len() > MAX_HEAD_BYTES {
                        return Err(Stop::Failed(Failure::Transport));
                    }
                    if !self.fill()? {
                        return Err(Stop::Failed(Failure::Transport));
                    }
                }
            }
        }
    }

    /// A 2xx body handed to `sink` as it arrives, unframed; `Ok(false)` when
    /// the sink stopped it before its end.
    fn stream_body(&mut self, framing: Framing, sink: &mut Sink<'_>) -> Result<bool, Stop> {
        match framing {
            Framing::Empty => Ok(true),
            Framing::Length(n) => self.stream_exactly(n, sink),
            Framing::UntilClose => loop {
                if self.pos < self.buf.len() && !sink(&self.buf[self.pos..]) {
                    return Ok(false);
                }
                self.pos = self.buf.len();
                self.forget_parsed();
                if !self.fill()? {
                    return Ok(true);
                }
            },
            Framing::Chunked => loop {
                let size = self.chunk_size()?;
                if size == 0 {
                    return self.trailers().map(|_| true);
                }
                let size = usize::try_from(size).unwrap_or(usize::MAX);
                if !self.stream_exactly(size, sink)? {
                    return Ok(false);
                }
                while self.buf.len() - self.pos < 2 {
                    if !self.fill()? {
                        return Err(Stop::Failed(Failure::Transport));
                    }
                }
                if &self.buf[self.pos..self.pos + 2] != b"\r\n" {
                    return Err(Stop::Failed(Failure::Transport));
                }
                self.pos += 2;
                self.forget_parsed();
            },
        }
    }

    /// The next `n` body bytes handed to `sink` as they arrive.
    fn stream_exactly(&mut self, mut n: usize, sink: &mut Sink<'_>) -> Result<bool, Stop> {
        loop {
            let here = (self.buf.len() - self.pos).min(n);
            if here > 0 {
                if !sink(&self.buf[self.pos..self.pos + here]) {
                    return Ok(false);
                }
                self.pos += here;
                n -= here;
                self.forget_parsed();
            }
            if n == 0 {
                return Ok(true);
            }
            if !self.fill()? {
                return Err(Stop::Failed(Failure::Transport));
            }
        }
    }

    /// Empties the buffer once everything in it was handed on, so a long
    /// stream is read through one small buffer.
    fn forget_parsed(&mut self) {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else {
            self.compact();
        }
    }

    /// Drops the bytes already parsed, so a long chunked body does not keep
    /// every chunk twice.
    fn compact(&mut self) {
        if self.pos > 64 * 1024 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }
}

/// An exchange's socket is its cancel hook: shutting it down makes a read or
/// write blocked on it return at once.
impl OnCancel for TcpStream {
    fn on_cancel(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

#[cfg(test)]
mod tests {
    //! The TLS half of the exchange against a real rustls server on
    //! 127.0.0.1. Its certificate (tests/fixtures/tls, valid 2020–2120) is
    //! signed by a test CA whose key was thrown away; the client trusts that
    //! CA alone, so the connector here is the shared one's twin with another
    //! root store.

    use super::*;
    use hyper_util::client::legacy::connect::HttpConnector;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::net::TcpListener;
    use std::time::Duration;
    use tower_service::Service;

    const CA: &[u8] = include_bytes!("../../tests/fixtures/tls/ca.pem");
    const LEAF: &[u8] = include_bytes!("../../tests/fixtures/tls/leaf.pem");
    const KEY: &[u8] = include_bytes!("../../tests/fixtures/tls/leaf.key");

    fn provider() -> Arc<rustls::crypto::CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    /// A TLS server on 127.0.0.1 that answers `count` requests on its first
    /// connection with `reply N`, each framed by Content-Length, and keeps it
    /// open until the client closes it.
    fn tls_server(count: usize) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let leaf = CertificateDer::from_pem_slice(LEAF).expect("leaf certificate");
        let key = PrivateKeyDer::from_pem_slice(KEY).expect("leaf key");
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(vec![leaf], key)
            .expect("server config");
        std::thread::spawn(move || {
            let Ok((tcp, _)) = listener.accept() else {
                return;
            };
            let Ok(session) = rustls::ServerConnection::new(Arc::new(config)) else {
                return;
            };
            let mut tls = rustls::StreamOwned::new(session, tcp);
            let mut seen = Vec::new();
            for n in 0..count {
                // The head, then the body its Content-Length announces.
                let head_end = loop {
                    if let Some(i) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                    let mut buf = [0u8; 4096];
                    match tls.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(k) => seen.extend_from_slice(&buf[..k]),
                    }
                };
                let head = String::from_utf8_lossy(&seen[..head_end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while seen.len() < head_end + length {
                    let mut buf = [0u8; 4096];
                    match tls.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(k) => seen.extend_from_slice(&buf[..k]),
                    }
                }
                seen.drain(..head_end + length);
                let body = format!("reply {n}");
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                if tls
                    .write_all(response.as_bytes())
                    .and_then(|_| tls.flush())
                    .is_err()
                {
                    return;
                }
            }
            // Kept open until the client lets go of it.
            let mut rest = [0u8; 64];
            while matches!(tls.read(&mut rest), Ok(k) if k > 0) {}
        });
        port
    }

    #[test]
    fn a_tls_connection_moved_off_the_runtime_carries_request_after_request() {
        let port = tls_server(3);
        let url = Url::parse(&format!("https://127.0.0.1:{port}/v1/messages")).expect("url");
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(CA).expect("CA certificate"))
            .expect("CA accepted");
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        let mut connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_only()
            .enable_http1()
            .wrap_connector(http);
        let uri: http::Uri = url.as_str().parse().expect("uri");
        let mut conn = runtime::block_on(async {
            let io = connector.call(uri).await.expect("TLS handshake");
            Conn::adopt(io)
        })
        .expect("adopted");
        assert!(matches!(conn.stream, Stream::Tls(_)));
        let outgoing = Outgoing::post(&url, &HeaderMap::new(), b"{\"hello\":1}").expect("request");
        for n in 0..3 {
            let deadline = (n == 1).then(|| Instant::now() + Duration::from_secs(10));
            let (answer, reusable) = talk(&mut conn, &outgoing, deadline, None)
                .map_err(|(stop, _)| stop)
                .expect("an answer over TLS");
            assert_eq!(answer.status, 200);
            assert_eq!(&answer.body[..], format!("reply {n}").as_bytes());
            assert!(reusable);
            // Idle in the pool and out again: still open (session tickets
            // and the like were read with the answer).
            checkin(&outgoing.origin, conn);
            conn = checkout(&outgoing.origin).expect("the idle TLS connection is still open");
        }
    }

    #[test]
    fn the_request_head_carries_host_length_and_given_headers_only_once() {
        let url = Url::parse("http://example.test:8080/v1/messages?beta=true").expect("url");
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", "k".parse().expect("value"));
        headers.insert("content-length", "999".parse().expect("value"));
        headers.insert("host", "elsewhere".parse().expect("value"));
        let out = Outgoing::post(&url, &headers, b"{}").expect("request");
        assert_eq!(
            String::from_utf8_lossy(&out.bytes),
            "POST /v1/messages?beta=true HTTP/1.1\r\nhost: example.test:8080\r\n\
             x-api-key: k\r\ncontent-length: 2\r\n\r\n{}"
        );
        assert_eq!(out.origin, "http://example.test:8080");
    }
}
