//! The served toolkit's request reader (issue 25): fuzzed bytes cut into
//! lines by the JSON-RPC line layer as stdio reads them, each line (and the
//! whole input, as an HTTP body) read by the gateway's one-pass plain read
//! and by rmcp's parse. They must agree on every request the plain read
//! takes, and text rmcp refuses must get a JSON answer (or none, for a
//! notification). The line layer must hand back every line it was given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolnexus::jsonrpc::lines::{LineReader, Next};
use toolnexus::jsonrpc::plain::check_request;

fuzz_target!(|data: &[u8]| {
    if let Err(why) = check_request(data) {
        panic!("HTTP body: {why}");
    }
    let lines = toolnexus::runtime::block_on(async {
        let mut reader = LineReader::new(data);
        let mut lines = Vec::new();
        loop {
            match reader.next().await {
                Next::Line => lines.push(reader.take()),
                Next::TooLong => panic!("a fuzzed input is never past the line cap"),
                Next::End => return lines,
            }
        }
    });
    let expected: Vec<&[u8]> = {
        let mut all: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
        // What follows the last newline is no line (a peer that ends
        // mid-line sent no message).
        all.pop();
        all
    };
    assert_eq!(
        lines.iter().map(Vec::as_slice).collect::<Vec<_>>(),
        expected,
        "the line layer changed the lines"
    );
    for line in &lines {
        let text = toolnexus::jsonrpc::lines::text(line);
        if let Err(why) = check_request(text) {
            panic!("line: {why}");
        }
    }
});
