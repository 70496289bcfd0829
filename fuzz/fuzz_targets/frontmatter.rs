//! The SKILL.md front-matter parser on fuzzed text: it never panics, and
//! what it reads is trimmed and non-blank.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolnexus::skill::frontmatter::{parse, FrontMatter};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let FrontMatter::Parsed {
        name, description, ..
    } = parse(text)
    {
        for s in [name, description].into_iter().flatten() {
            assert!(!s.is_empty(), "a blank value read as present");
            assert_eq!(s.trim(), s, "a value read untrimmed");
        }
    }
});
