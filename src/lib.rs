//! # hopgraph
//!
//! An embedded graph database for typed, directed edges — the shape of agent memory.
//!
//! A database is a directory: a write-ahead log for durability plus immutable,
//! memory-mapped CSR segments holding each node's edges sorted by (type, neighbour), one
//! adjacency per direction. Writes are atomic batches; reads come from consistent snapshots
//! that stay valid while writes, checkpoints and compactions go on. See `DESIGN.md` for the
//! architecture, the on-disk formats and the durability argument.
//!
//! The layers depend downward only:
//! `format` (bytes) < `storage` (files, mmap) < `db` (catalog, delta, snapshots) <
//! `traverse` (BFS kernels), `vector` (similarity scan and HNSW). The agent-memory semantics (`hopgraph-memory`), the CLI
//! (`hopgraph-cli`) and the MCP server (`hopgraph-mcp`) are crates of their own beside this one.

#![cfg_attr(not(test), warn(missing_docs))]

#[cfg(not(target_endian = "little"))]
compile_error!(
    "hopgraph's on-disk formats are little-endian; big-endian targets are not supported"
);

pub mod error;
pub mod graph;
pub(crate) mod sync;

pub mod format;
pub mod model;
pub mod storage;

pub mod db;

pub mod traverse;
pub mod vector;

pub use db::{
    BulkLoad, CommitInfo, Database, Durability, Neighbor, NodeFilter, NodePatch, OpResult, Options,
    Snapshot, WriteBatch,
};
pub use db::{VectorHit, VectorQuery};
pub use error::{Error, Result};
pub use graph::{Direction, EdgeDir, EdgeId, EdgeRef, Lsn, NodeId, TypeFilter, TypeId, TypeSet};
pub use model::{Edge, EdgeProps, Node, NodeProps, Props};

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
