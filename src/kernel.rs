//! The id-level traversal kernels, for hot loops.
//!
//! The key-level calls ([`Database::shortest_path`](crate::Database::shortest_path),
//! [`Snapshot::neighbors_of`](crate::Snapshot::neighbors_of), ...) cover the common case
//! and pool their scratch memory internally. A loop that runs thousands of queries calls the
//! kernels here instead: node ids instead of keys (resolve them once with
//! [`Snapshot::node_id`](crate::Snapshot::node_id)), a [`Scratch`] reused across queries
//! (its visit marks are stamped per query, so no query clears O(nodes) memory), and a
//! [`Budget`] that bounds each query's work.
//!
//! Every kernel reads a graph through the [`Adjacency`] trait: a
//! [`Snapshot`](crate::Snapshot) implements it over its memory-mapped segments plus the
//! in-memory delta, and a plain in-memory graph can implement it in a few lines.
//!
//! ```
//! use hopgraph::kernel::{Budget, PathOutcome, PathQuery, Scratch, shortest_path};
//! use hopgraph::{Database, Direction, EdgeProps, TypeFilter, WriteBatch};
//!
//! # fn main() -> hopgraph::Result<()> {
//! # let tmp = std::env::temp_dir().join(format!("hopgraph-kernel-doc-{}", std::process::id()));
//! let db = Database::open(&tmp)?;
//! let mut batch = WriteBatch::new();
//! batch
//!     .link_creating_missing("a", "next", "b", EdgeProps::default())
//!     .link_creating_missing("b", "next", "c", EdgeProps::default());
//! db.commit(batch)?;
//!
//! let snap = db.snapshot();
//! let (a, c) = (snap.node_id("a").expect("a exists"), snap.node_id("c").expect("c exists"));
//! let mut scratch = Scratch::new(); // reuse this one across every query of the loop
//! let query = PathQuery {
//!     direction: Direction::Out,
//!     types: TypeFilter::All,
//!     max_hops: 6,
//!     budget: Budget::default(),
//! };
//! match shortest_path(&snap, &mut scratch, a, c, &query) {
//!     PathOutcome::Found(path) => assert_eq!(path.len(), 2),
//!     other => panic!("expected a path, got {other:?}"),
//! }
//! # drop(snap); drop(db); std::fs::remove_dir_all(&tmp).ok();
//! # Ok(())
//! # }
//! ```

pub use crate::traverse::{
    Adjacency, BfsStats, Budget, Completion, ElementFilter, ExpandOutcome, ExpandQuery, Filtered,
    NeighborStep, Path, PathHop, PathOutcome, PathQuery, PathsOutcome, PooledScratch, Reached,
    RouteStep, RunEntry, Scratch, ScratchPool, TraverseOutcome, Visit, WalkStep,
    all_shortest_paths, bfs_levels, expand, k_shortest_simple_paths, neighbors, shortest_path,
    traverse,
};
