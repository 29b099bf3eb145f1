//! The crate's integration tests: the code path on tiny random models written by
//! `tiny_model` (always run), and agreement with sentence-transformers on the real
//! all-MiniLM-L6-v2 (`#[ignore]`d: `HOPGRAPH_EMBED_MODEL=DIR cargo test -p hopgraph-embed
//! --test it -- --ignored` runs them, and they fail without the variable).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly by design"
)]

mod code_path;
mod directory;
// The test Hub is an HTTP server: the built-in client fetches from it.
#[cfg(feature = "download")]
mod hub;
mod plain_bert;
mod reference;
mod tokenizer;
