//! Our side of bench/litellm_python.py (issue 29): the conversion of one
//! OpenAI-shaped request to a provider body, and the streaming translate
//! of a recorded SSE replay, timed here in rounds that the Python script
//! interleaves with LiteLLM's rounds of the same work in the same run.
//!
//!     cargo build --release --example litellm_peer
//!     target/release/examples/litellm_peer WORKLOAD.json ANTHROPIC.sse GEMINI.sse
//!
//! WORKLOAD.json is `{"client": {…}, "request": {…}}` minus the style
//! (the client of each style is that client with `style` set). Commands,
//! one a line on stdin, each answered with one line on stdout:
//!
//! - `convert STYLE N`: N conversions of the workload for STYLE
//!   (`anthropic`, `gemini`, `responses`, `openai`), JSON text in and out
//!   as `tn_translate` does it: the request text parsed into a fresh arena,
//!   validated, the provider body built and encoded. Answers `ns BYTES`:
//!   the nanoseconds of all N, and the size of one body.
//! - `stream STYLE N`: N replays of STYLE's SSE file (`anthropic` or
//!   `gemini`) through streaming translate's own reader and writer (the
//!   SSE parser, the style's stream assembler, the OpenAI chunk writer into
//!   a sink that keeps only the byte count), no socket. Answers `ns EVENTS
//!   CHUNKS`: the nanoseconds of all N, the upstream events of one replay
//!   and the OpenAI chunks written for it.
//! - `body STYLE`: the provider body of the workload, as JSON (a check).
//! - `quit`.

use serde_json::Value;
use std::hint::black_box;
use std::io::{BufRead, Write};
use std::time::Instant;
use toolnexus::provider::chunks::ChunkWriter;
use toolnexus::provider::sse::SseParser;
use toolnexus::provider::stream::Assembler;
use toolnexus::provider::Style;
use toolnexus::translate::{node, provider_body, ClientConfig, Request};

fn config(client: &Value, style: &str) -> ClientConfig {
    let mut client = client.clone();
    client["style"] = Value::String(style.into());
    ClientConfig::from_json(&client).expect("a valid client")
}

/// One conversion, JSON text in and out.
fn convert(config: &ClientConfig, request_text: &str) -> Vec<u8> {
    let bump = bumpalo::Bump::with_capacity(3 * request_text.len());
    let (request, source) = node::parse_source(&bump, request_text).expect("request JSON");
    let parsed = Request::from_node(request).expect("a valid request");
    provider_body(&bump, config, &parsed, &[]).to_vec_from(&[source], request_text.len() + 1024)
}

/// One replay through the stream reader and the chunk writer; gives the
/// upstream events and the chunks written.
fn replay(style: Style, sse: &[u8]) -> (usize, usize) {
    let mut bytes = 0usize;
    let mut sink = |chunk: &str| {
        bytes += chunk.len();
        true
    };
    let mut writer = ChunkWriter::new("chatcmpl-bench".into(), "bench-model", &mut sink);
    let mut assembler = Assembler::new(style);
    let mut parser = SseParser::new();
    let mut events = 0usize;
    parser
        .feed(sse, &mut |name, data| {
            events += 1;
            assembler.event(name, data, &mut writer)
        })
        .expect("the replay parses");
    parser
        .finish(&mut |name, data| {
            events += 1;
            assembler.event(name, data, &mut writer)
        })
        .expect("the replay ends");
    writer.end().expect("the stream ends");
    let chunks = writer.written;
    black_box(bytes);
    (events, chunks)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [workload, anthropic_sse, gemini_sse] = args.as_slice() else {
        eprintln!("usage: litellm_peer WORKLOAD.json ANTHROPIC.sse GEMINI.sse");
        std::process::exit(2);
    };
    let workload: Value =
        serde_json::from_str(&std::fs::read_to_string(workload).expect("workload")).expect("JSON");
    let request_text = workload["request"].to_string();
    let client = &workload["client"];
    let anthropic_sse = std::fs::read(anthropic_sse).expect("anthropic replay");
    let gemini_sse = std::fs::read(gemini_sse).expect("gemini replay");
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.expect("stdin");
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer = match words.as_slice() {
            ["convert", style, n] => {
                let config = config(client, style);
                let n: u32 = n.parse().expect("a count");
                let size = convert(&config, &request_text).len();
                let start = Instant::now();
                for _ in 0..n {
                    black_box(convert(&config, black_box(&request_text)));
                }
                format!("{} {size}", start.elapsed().as_nanos())
            }
            ["stream", style, n] => {
                let (style, sse) = match *style {
                    "anthropic" => (Style::Anthropic, &anthropic_sse),
                    "gemini" => (Style::Gemini, &gemini_sse),
                    other => panic!("no replay for {other}"),
                };
                let n: u32 = n.parse().expect("a count");
                let (events, chunks) = replay(style, sse);
                let start = Instant::now();
                for _ in 0..n {
                    black_box(replay(style, black_box(sse)));
                }
                format!("{} {events} {chunks}", start.elapsed().as_nanos())
            }
            ["body", style] => {
                String::from_utf8(convert(&config(client, style), &request_text)).expect("UTF-8")
            }
            ["quit"] => break,
            _ => format!("error: unknown command {line:?}"),
        };
        writeln!(out, "{answer}").expect("stdout");
        out.flush().expect("stdout");
    }
}
