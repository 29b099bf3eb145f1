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
//! Hot loops use the id-level kernels in [`kernel`] with a reusable [`kernel::Scratch`]
//! instead of the key-level calls.
//!
//! Inside, the layers depend downward only: `format` (bytes, checksums) < `storage` (files,
//! mmap, fsync) < the kernels (`traverse`, `text`, `vector`: pure compute over narrow traits)
//! < `db` (catalog, delta, snapshots, checkpoint, compaction) < `query` (key-level calls);
//! `tests/it/layers.rs` fails on an upward import. Only the curated items below are public. The agent-memory
//! semantics (`hopgraph-memory`), the CLI (`hopgraph-cli`) and the MCP server
//! (`hopgraph-mcp`) are crates of their own beside this one.

#![deny(missing_docs)]
#![warn(unnameable_types)]

#[cfg(not(target_endian = "little"))]
compile_error!(
    "hopgraph's on-disk formats are little-endian; big-endian targets are not supported"
);

// Layer 0: shared vocabulary (ids, directions, limits, the error type, the data model).
mod error;
mod filter;
mod graph;
mod model;
pub(crate) mod sync;

// The engine's internal layers are private: what a user needs is re-exported below, so a
// refactor inside a layer is not a breaking change. The `internals` feature (off by
// default, `#[doc(hidden)]`, no stability promise) opens them to this repository's own
// fuzz targets, white-box tests and benches, which enable it as a dev-dependency.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod db;
#[cfg(not(feature = "internals"))]
mod db;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod format;
#[cfg(not(feature = "internals"))]
mod format;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod storage;
#[cfg(not(feature = "internals"))]
mod storage;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod text;
#[cfg(not(feature = "internals"))]
mod text;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod traverse;
#[cfg(not(feature = "internals"))]
mod traverse;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod vector;
#[cfg(not(feature = "internals"))]
mod vector;

mod query;

pub mod kernel;

pub use db::{APP_FILE_BYTES_MAX, HNSW_MIN_VECTORS, VectorHit, VectorIndexReport, VectorQuery};
pub use db::{
    AsOf, BulkLoad, BulkPhase, BulkProgress, BulkReport, CheckpointReport, CommitInfo,
    CompactReport, Database, Durability, Neighbor, NodePatch, OpResult, Options, RecoveryReport,
    Snapshot, Stats, TextIndexReport, ValidAt, VerifyPhase, VerifyProgress, VerifyReport,
    WriteBatch, check_interval, default_memory_limit,
};
pub use error::{Error, Result};
pub use filter::NodeFilter;
/// The on-disk format version this build writes (it reads every version from 1 on; see
/// [`Stats::segment_formats`] and [`Database::compact`]).
pub use format::FORMAT_VERSION;
/// Documented size limits, checked before any work or allocation; exceeding one is
/// [`Error::LimitExceeded`] or [`Error::InvalidArgument`], never a panic.
pub mod limits {
    pub use crate::graph::limits::*;
    pub use crate::text::{
        QUERY_BYTES_MAX as TEXT_QUERY_BYTES_MAX, QUERY_TERMS_MAX as TEXT_QUERY_TERMS_MAX,
        SNIPPET_CHARS_MAX as TEXT_SNIPPET_CHARS_MAX, TEXT_LIMIT_MAX, TEXT_OFFSET_MAX,
    };
}
pub use graph::{Direction, EdgeDir, EdgeId, EdgeRef, Lsn, NodeId, TypeFilter, TypeId, TypeSet};
pub use model::{Edge, EdgeProps, Node, NodeProps, Props, valid_at};
pub use query::{
    Expanded, Expansion, FoundPath, NeighborOf, PathSpec, PathStep, ShortestPaths, Traversal,
    Visited,
};
pub use text::{TextField, TextHit, TextQuery};

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
