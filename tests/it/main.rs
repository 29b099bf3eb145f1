//! Integration tests of hopgraph, one binary with a module per area.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly by design"
)]

#[cfg(feature = "cli")]
mod cli;
mod common;
mod corruption;
mod crash;
mod design_doc;
mod engine;
mod faults;
mod fixture;
#[cfg(feature = "mcp")]
mod mcp;
mod memory_tools;
mod model;
mod paths;
mod processes;
