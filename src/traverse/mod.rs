//! The traversal kernel: breadth-first searches over a narrow adjacency trait.
//!
//! The kernels here are pure compute. They read a graph only through [`Adjacency`], which a
//! database [`Snapshot`](crate::Snapshot) implements over its memory-mapped segments plus the
//! in-memory delta, and which a ten-line `Vec<Vec<_>>` graph implements in tests and benches.
//! Per-query memory lives in a reusable `Scratch` whose marks are generation-stamped, so no
//! query clears O(nodes) state.

use crate::graph::{EdgeDir, EdgeRef, NodeId, TypeFilter};

/// Read access to a typed, directed multigraph, as the kernels need it.
///
/// Implementations must be cheap to call per node: the kernels call `for_each_edge` once per
/// expanded node and direction.
pub trait Adjacency {
    /// Exclusive upper bound of node ids: every id passed to or returned by this graph is
    /// below it. Sizes the scratch arrays.
    fn node_bound(&self) -> u32;

    /// Calls `f` once for every live edge at `node` in physical direction `dir` whose type
    /// passes `types`. `EdgeRef::neighbor` is the node at the other end (the target for
    /// `Out`, the source for `In`). The order is deterministic for a given graph value but
    /// is not otherwise specified; kernels that promise an order impose it themselves.
    fn for_each_edge<F: FnMut(EdgeRef)>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        f: F,
    );

    /// The number of edges stored at `node` in `dir` over all types. May over-count (e.g.
    /// deleted edges not yet compacted away); used only to estimate frontier costs.
    fn degree_estimate(&self, node: NodeId, dir: EdgeDir) -> u32;

    /// A superset of the nodes that have at least one edge in `dir` whose type passes
    /// `types`, when the graph keeps per-type node bitmaps; `None` means "unknown, assume
    /// every node". Used by bottom-up BFS steps to skip nodes that cannot contribute.
    fn nodes_with_edges(&self, dir: EdgeDir, types: &TypeFilter) -> Option<roaring::RoaringBitmap> {
        let _ = (dir, types);
        None
    }
}

/// An `Adjacency` held by reference is an `Adjacency` too.
impl<A: Adjacency> Adjacency for &A {
    fn node_bound(&self) -> u32 {
        (**self).node_bound()
    }
    fn for_each_edge<F: FnMut(EdgeRef)>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        f: F,
    ) {
        (**self).for_each_edge(node, dir, types, f)
    }
    fn degree_estimate(&self, node: NodeId, dir: EdgeDir) -> u32 {
        (**self).degree_estimate(node, dir)
    }
    fn nodes_with_edges(&self, dir: EdgeDir, types: &TypeFilter) -> Option<roaring::RoaringBitmap> {
        (**self).nodes_with_edges(dir, types)
    }
}
