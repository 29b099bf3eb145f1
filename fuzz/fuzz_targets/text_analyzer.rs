//! The text analyzer and query parser on arbitrary strings: never panic, and every token
//! is non-empty, at most `TERM_BYTES_MAX` bytes, free of whitespace, and starts at a
//! character boundary inside the text.
#![no_main]

use hopgraph::text::analyze::{Analyzer, TERM_BYTES_MAX};
use hopgraph::text::{ParsedQuery, snippet};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let a = Analyzer::new();
    for t in a.tokens(text) {
        assert!(!t.text.is_empty() && t.text.len() <= TERM_BYTES_MAX, "{t:?}");
        assert!(t.start < text.len() && text.is_char_boundary(t.start), "{t:?}");
        assert!(!t.text.chars().any(char::is_whitespace), "{t:?}");
    }
    a.for_each_term(text, |term| assert!(term.len() <= TERM_BYTES_MAX + 1));
    if let Ok(q) = ParsedQuery::parse(&a, text) {
        let s = snippet(&a, text, &q);
        assert!(s.chars().count() <= 200);
    }
});
