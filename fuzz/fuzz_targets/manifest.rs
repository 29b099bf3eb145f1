//! `format::manifest::Manifest::decode` on arbitrary bytes: never panics, and a decoded
//! manifest re-encodes to exactly the input (the format has no slack).
#![no_main]

use hopgraph::format::manifest::Manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Manifest::decode(data) {
        // The reserved flags word is ignored on decode and written as zero.
        if data[12..16] == [0; 4] {
            assert_eq!(m.encode(), data, "manifest does not round-trip");
        }
    }
});
