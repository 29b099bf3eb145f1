//! Integration tests of hopgraph, one binary with a module per area.

mod common;
mod corruption;
mod crash;
mod engine;
