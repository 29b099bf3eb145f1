//! The MCP adapter: serves the memory tools of [`hopgraph_memory`] to MCP clients over stdio
//! or MCP's streamable HTTP transport.
//!
//! - `command`: the `hopgraph-mcp` command line (flags, environment, start and shutdown);
//! - `limits`: request limits checked on the raw line before any value is built;
//! - `args`: reading tool arguments from raw JSON with messages that name the argument;
//! - `output`: a tool's successful answer (structured content and text);
//! - `log`: log lines on stderr;
//! - `schema`: the tool list (names, descriptions, input and output schemas, annotations);
//! - `embed`: the server's own text embedding (`--embed-model`), filled in before dispatch;
//! - `tools`: dispatch from a tool name and its arguments to `memory` functions;
//! - `store`: data directory, contexts, the bounded cache of open databases and their
//!   automatic checkpoints and compaction;
//! - `server`: the rmcp handler and the line gate in front of it (stdio);
//! - `http`: the streamable HTTP transport (`--http`): bearer token, body limit and the
//!   same limit check in front of rmcp's HTTP service.
//!
//! This is the only code that knows JSON-RPC, rmcp and tokio; tool semantics live in
//! `memory`, storage in `db`.

pub mod args;
pub mod command;
pub mod embed;
pub mod http;
pub mod kg_tools;
pub mod limits;
pub mod log;
pub mod output;
pub mod schema;
pub mod server;
pub mod store;
pub mod tools;

pub use server::{HopgraphServer, serve};
pub use store::{Access, Location, StoreConfig, Stores};
