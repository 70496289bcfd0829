//! The translate conversion without the network: fuzzed JSON text read by
//! the arena reader (checked against serde_json: same acceptance, same
//! value, same error, same bytes written back, with and without copying the
//! source text), then as a request turned into the provider body, and as a
//! provider answer read back into the OpenAI shape. Every body and answer
//! must be JSON, written the same with and without the source copy.
//!
//! The first byte picks: bits 0-1 the style (`Style::ALL`'s order: openai,
//! anthropic, gemini, responses), bit 2 a client with systemPrompt and
//! requestParams, bit 3 a declared toolkit tool.
#![no_main]

use bumpalo::Bump;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use std::sync::OnceLock;
use toolnexus::provider::Style;
use toolnexus::translate::node::{self, Node};
use toolnexus::translate::{provider_body, read_response, ClientConfig, Request};

fn clients() -> &'static [ClientConfig; 8] {
    static C: OnceLock<[ClientConfig; 8]> = OnceLock::new();
    C.get_or_init(|| {
        let client = |style: Style, extras: bool| {
            let style = style.name();
            let mut c = json!({"baseUrl": "http://127.0.0.1:9", "style": style, "model": "m-1"});
            if extras {
                c["systemPrompt"] = json!("Be terse.");
                c["requestParams"] = json!({"temperature": 0.5, "stream": true, "top_p": 1});
            }
            ClientConfig::from_json(&c).expect("a valid client")
        };
        let [a, b, c, d] = Style::ALL;
        [
            client(a, false),
            client(b, false),
            client(c, false),
            client(d, false),
            client(a, true),
            client(b, true),
            client(c, true),
            client(d, true),
        ]
    })
}

fn declared() -> &'static Value {
    static D: OnceLock<Value> = OnceLock::new();
    D.get_or_init(|| {
        json!({"type": "function", "function": {"name": "skill", "description": "Load a skill.",
               "parameters": {"type": "object", "properties": {"name": {"type": "string"}}}}})
    })
}

/// The reader agrees with serde_json on `text`; gives what it read.
fn read_like_serde<'a>(bump: &'a Bump, text: &'a str) -> Option<(Node<'a>, node::Source<'a>)> {
    let theirs = serde_json::from_str::<Value>(text);
    let ours = node::parse(bump, text);
    let with_source = node::parse_source(bump, text);
    match (ours, with_source, theirs) {
        (Ok(a), Ok((b, source)), Ok(v)) => {
            let expected = v.to_string().into_bytes();
            assert_eq!(a.to_value(), v);
            assert_eq!(a.to_vec(), expected);
            assert_eq!(b.to_vec(), expected);
            assert_eq!(b.to_vec_from(std::slice::from_ref(&source), 0), expected);
            Some((b, source))
        }
        (Err(a), Err(b), Err(v)) => {
            assert_eq!(a.to_string(), v.to_string());
            assert_eq!(b.to_string(), v.to_string());
            None
        }
        (a, b, v) => panic!(
            "reader and serde_json disagree: {a:?} / {:?} / {v:?}",
            b.map(|x| x.0)
        ),
    }
}

/// Written JSON: parses, and the source copy changed no byte.
fn check_written(n: Node, sources: &[node::Source]) {
    let plain = n.to_vec();
    assert_eq!(
        n.to_vec_from(sources, 0),
        plain,
        "the source copy changed the bytes"
    );
    let text = std::str::from_utf8(&plain).expect("written JSON is UTF-8");
    serde_json::from_str::<Value>(text).expect("written JSON parses");
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let config = &clients()[usize::from(pick & 7)];
    let bump = Bump::new();
    let Ok(text) = std::str::from_utf8(rest) else {
        // Provider answers are bytes: they must fail as serde_json fails.
        let ours = node::parse_slice(&bump, rest).map(|_| ());
        let theirs = serde_json::from_slice::<Value>(rest).map(|_| ());
        assert_eq!(ours.is_ok(), theirs.is_ok());
        return;
    };
    let Some((doc, source)) = read_like_serde(&bump, text) else {
        return;
    };
    let sources = [source];
    let declared_value = declared();
    let declared: Vec<Node> = if pick & 8 != 0 {
        vec![node::from_value(&bump, declared_value)]
    } else {
        Vec::new()
    };
    if let Ok(request) = Request::from_node(doc) {
        check_written(provider_body(&bump, config, &request, &declared), &sources);
    }
    let answer = read_response(&bump, config.style, "m-1", doc);
    check_written(answer, &sources);
});
