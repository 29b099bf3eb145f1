//! Integration tests of hopgraph, one binary with a module per area.

mod common;
mod engine;
