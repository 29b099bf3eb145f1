//! Integration tests of hopgraph, one binary with a module per area.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly by design"
)]

mod api;
mod common;
mod corruption;
mod crash;
mod design_doc;
mod engine;
mod faults;
mod fixture;
mod layers;
mod model;
mod paths;
mod processes;
mod substring;
mod text;
mod time;
mod vector;
