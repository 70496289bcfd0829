//! The provider stream path without the network (issue 25): fuzzed bytes
//! read by the one SSE reader, fed whole and in pieces cut where the input
//! says, and every event given to the stream assembler of each style
//! (openai, anthropic, gemini, responses), with streaming translate's chunk
//! writer as the sink of its pieces (the relay's path).
//! The two feeds must see the same events; the assembler must never panic,
//! and whatever it finishes with is a JSON object (or an error); every
//! chunk written is one whole server-sent event.
//!
//! The first byte picks: bits 0-1 the style (`Style::ALL`'s order: openai,
//! anthropic, gemini, responses); the second byte the piece size of the cut
//! feed (1..=256).
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolnexus::provider::chunks::ChunkWriter;
use toolnexus::provider::sse::SseParser;
use toolnexus::provider::stream::Assembler;
use toolnexus::provider::Style;

/// Every event of `chunks` fed in order, then the end of the stream.
fn events(chunks: &[&[u8]]) -> Result<Vec<(String, String)>, String> {
    let mut parser = SseParser::new();
    let mut seen = Vec::new();
    let mut on_event = |name: &str, data: &str| {
        seen.push((name.to_string(), data.to_string()));
        Ok(())
    };
    for chunk in chunks {
        parser.feed(chunk, &mut on_event).map_err(|e| e.message)?;
    }
    parser.finish(&mut on_event).map_err(|e| e.message)?;
    Ok(seen)
}

fuzz_target!(|data: &[u8]| {
    let [pick, size, rest @ ..] = data else {
        return;
    };
    let style = Style::ALL[usize::from(pick & 3)];
    let whole = events(&[rest]);
    let piece = usize::from(*size).max(1);
    let cut: Vec<&[u8]> = rest.chunks(piece).collect();
    let pieces = events(&cut);
    assert_eq!(whole, pieces, "the events depend on how the bytes arrived");
    let Ok(seen) = whole else {
        return;
    };
    let mut assembler = Assembler::new(style);
    let mut out = |chunk: &str| {
        assert!(
            chunk.starts_with("data: ") && chunk.ends_with("\n\n"),
            "not one whole event: {chunk:?}"
        );
        true
    };
    let mut writer = ChunkWriter::new("chatcmpl-fuzz".into(), "m", &mut out);
    for (name, data) in &seen {
        if assembler.event(name, data, &mut writer).is_err() {
            return;
        }
    }
    writer.end().expect("the writer's sink never stops");
    let answer = assembler.finish();
    assert!(
        answer.is_object(),
        "the finished answer is no object: {answer}"
    );
});
