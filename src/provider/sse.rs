//! The one reader of server-sent events (the WHATWG `text/event-stream`
//! rules), for a provider's streamed answer and for MCP's legacy SSE leg:
//! bytes in as they arrive, whole events out; and the one writer of an
//! event ([`event`]).

use crate::error::{Error, ErrorCode};
use crate::limits::EVENT_BYTES;

/// One server-sent event carrying `data`, as every SSE writer of the crate
/// sends one (streaming translate's chunks, the A2A agent's stream): a
/// single `data:` line, so `data` must hold no line break (compact JSON).
pub fn event(data: &str) -> String {
    format!("data: {data}\n\n")
}

/// An incremental reader of the `text/event-stream` format (the WHATWG
/// rules): lines end in CRLF, LF or CR, possibly split across reads; `:`
/// starts a comment; `data` lines join with newlines; a blank line ends an
/// event. An event still open when the stream ends is delivered too (a
/// server that closes without the last blank line loses nothing).
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    /// The last byte seen was a CR: an LF right after it ends nothing.
    after_cr: bool,
    started: bool,
}

pub(crate) fn too_large() -> Error {
    Error::new(
        ErrorCode::ProviderError,
        format!(
            "the provider's stream sent an event of more than {} MiB",
            EVENT_BYTES >> 20
        ),
    )
}

impl SseParser {
    pub fn new() -> Self {
        SseParser::default()
    }

    /// Reads `bytes`, calling `on_event(name, data)` for each event they
    /// complete (`name` is `message` when the event named none).
    pub fn feed(
        &mut self,
        mut bytes: &[u8],
        on_event: &mut dyn FnMut(&str, &str) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if !self.started && !bytes.is_empty() {
            self.started = true;
            bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
        }
        while !bytes.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if bytes[0] == b'\n' {
                    bytes = &bytes[1..];
                    continue;
                }
            }
            match memchr::memchr2(b'\n', b'\r', bytes) {
                Some(end) => {
                    self.line.extend_from_slice(&bytes[..end]);
                    self.after_cr = bytes[end] == b'\r';
                    bytes = &bytes[end + 1..];
                    self.end_line(on_event)?;
                }
                None => {
                    if self.line.len() + bytes.len() > EVENT_BYTES {
                        return Err(too_large());
                    }
                    self.line.extend_from_slice(bytes);
                    bytes = &[];
                }
            }
        }
        Ok(())
    }

    /// The end of the stream: a last unterminated line and a last open
    /// event are delivered.
    pub fn finish(
        &mut self,
        on_event: &mut dyn FnMut(&str, &str) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if !self.line.is_empty() {
            self.end_line(on_event)?;
        }
        self.dispatch(on_event)
    }

    fn end_line(
        &mut self,
        on_event: &mut dyn FnMut(&str, &str) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let line = std::mem::take(&mut self.line);
        let result = self.field(&line, on_event);
        // The line's buffer is kept for the next one.
        self.line = line;
        self.line.clear();
        result
    }

    fn field(
        &mut self,
        line: &[u8],
        on_event: &mut dyn FnMut(&str, &str) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if line.is_empty() {
            return self.dispatch(on_event);
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (name, value) = match crate::sys::bytes::find(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        let value = String::from_utf8_lossy(value);
        match name {
            b"data" => {
                if self.data.len() + value.len() > EVENT_BYTES {
                    return Err(too_large());
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&value);
            }
            // id and retry matter to a reconnecting browser, not here.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(
        &mut self,
        on_event: &mut dyn FnMut(&str, &str) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if !self.has_data {
            self.event.clear();
            return Ok(());
        }
        let name = if self.event.is_empty() {
            "message"
        } else {
            &self.event
        };
        let result = on_event(name, &self.data);
        self.event.clear();
        self.data.clear();
        self.has_data = false;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]]) -> Vec<(String, String)> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut |n, d| {
                out.push((n.to_string(), d.to_string()));
                Ok(())
            })
            .expect("feed");
        }
        p.finish(&mut |n, d| {
            out.push((n.to_string(), d.to_string()));
            Ok(())
        })
        .expect("finish");
        out
    }

    fn pair(n: &str, d: &str) -> (String, String) {
        (n.to_string(), d.to_string())
    }

    #[test]
    fn sse_lines_split_anywhere_and_every_line_ending_give_the_same_events() {
        let text = "\u{feff}: comment\nevent: a\ndata: one\ndata:two\n\ndata: x\r\n\r\nid: 7\nretry: 10\ndata\n\nevent: b\r\rdata: last";
        let whole = events(&[text.as_bytes()]);
        assert_eq!(
            whole,
            [
                pair("a", "one\ntwo"),
                pair("message", "x"),
                pair("message", ""),
                pair("message", "last"),
            ]
        );
        // The same bytes one at a time (CRLF split between reads included).
        let bytes = text.as_bytes();
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(events(&singles), whole);
        for cut in 1..bytes.len() {
            assert_eq!(
                events(&[&bytes[..cut], &bytes[cut..]]),
                whole,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn an_event_name_without_data_is_dropped_and_does_not_leak_into_the_next() {
        assert_eq!(
            events(&[b"event: ping\n\ndata: d\n\n"]),
            [pair("message", "d")]
        );
    }
}
