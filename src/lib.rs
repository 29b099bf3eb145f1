//! # hopgraph
//!
//! An embedded graph database for typed, directed edges — the shape of agent memory.
//!
//! A database is a directory: a write-ahead log for durability plus immutable,
//! memory-mapped CSR segments holding each node's edges sorted by (type, neighbor), one
//! adjacency per direction. Writes are atomic batches; reads come from consistent snapshots
//! that stay valid while writes, checkpoints and compactions go on. See `DESIGN.md` for the
//! architecture, the on-disk formats and the durability argument.
//!
//! ```
//! use hopgraph::{Database, EdgeProps, NodeProps, PathSpec, WriteBatch};
//!
//! # fn main() -> hopgraph::Result<()> {
//! # let tmp = std::env::temp_dir().join(format!("hopgraph-doc-{}", std::process::id()));
//! let db = Database::open(&tmp)?; // creates the directory and an empty database
//!
//! // One atomic, durable batch; missing endpoints are created on the way.
//! let mut batch = WriteBatch::new();
//! batch
//!     .upsert_node("outage", NodeProps { title: "API outage".into(), ..Default::default() })
//!     .link_creating_missing("outage", "caused_by", "deploy", EdgeProps::default())
//!     .link_creating_missing("deploy", "caused_by", "config-change", EdgeProps::default());
//! db.commit(batch)?;
//!
//! // A shortest path between two keys, over one edge type.
//! let spec = PathSpec::new().types(["caused_by"]).max_hops(6);
//! let path = db.shortest_path("outage", "config-change", &spec)?.expect("connected");
//! assert_eq!(path.keys(), ["outage", "deploy", "config-change"]);
//!
//! // A snapshot is a consistent view: later writes do not change it.
//! let snap = db.snapshot();
//! let mut more = WriteBatch::new();
//! more.delete_node("deploy");
//! db.commit(more)?;
//! assert!(snap.node_id("deploy").is_some());
//! assert!(db.snapshot().node_id("deploy").is_none());
//! # drop(snap); drop(db); std::fs::remove_dir_all(&tmp).ok();
//! # Ok(())
//! # }
//! ```
//!
//! Hot loops use the id-level kernels in [`traverse`] with a reusable [`traverse::Scratch`]
//! instead of the key-level calls.
//!
//! The layers depend downward only:
//! `format` (bytes) < `storage` (files, mmap) < `db` (catalog, delta, snapshots) <
//! `traverse` (BFS kernels) < `query` (key-level calls joining the two). The agent-memory
//! semantics (`hopgraph-memory`), the CLI (`hopgraph-cli`) and the MCP server
//! (`hopgraph-mcp`) are crates of their own beside this one.

#![cfg_attr(not(test), warn(missing_docs))]

#[cfg(not(target_endian = "little"))]
compile_error!(
    "hopgraph's on-disk formats are little-endian; big-endian targets are not supported"
);

pub mod error;
pub mod filter;
pub mod graph;
pub(crate) mod sync;

pub mod format;
pub mod model;
pub mod storage;

pub mod db;

pub mod text;
pub mod traverse;
pub mod vector;

mod query;

pub use db::{
    BulkLoad, BulkPhase, BulkProgress, CommitInfo, Database, Durability, Neighbor, NodePatch,
    OpResult, Options, Snapshot, WriteBatch,
};
pub use db::{VectorHit, VectorQuery};
pub use error::{Error, Result};
pub use filter::NodeFilter;
pub use graph::{Direction, EdgeDir, EdgeId, EdgeRef, Lsn, NodeId, TypeFilter, TypeId, TypeSet};
pub use model::{Edge, EdgeProps, Node, NodeProps, Props};
pub use query::{FoundPath, NeighborOf, PathSpec, PathStep};
pub use text::{TextField, TextHit, TextQuery};

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
