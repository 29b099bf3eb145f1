//! The traversal kernel: breadth-first searches over a narrow adjacency trait.
//!
//! The kernels here are pure compute. They read a graph only through [`Adjacency`], which a
//! database snapshot implements over its memory-mapped segments plus the in-memory delta,
//! and which a ten-line `Vec<Vec<_>>` graph implements in tests and benches. Per-query memory
//! lives in a reusable [`Scratch`] whose visit marks are stamped per query (in small hash
//! tables of the nodes a search reached, or a `u32` per node and side once a search grows
//! large), so no query clears O(nodes) state; a [`ScratchPool`] hands one scratch to each
//! concurrent query.
//!
//! | function | what it answers |
//! |---|---|
//! | [`shortest_path`] | one shortest path, bidirectional BFS, deterministic tie-breaks |
//! | [`all_shortest_paths`] | every shortest path up to a cap, in a deterministic order |
//! | [`k_shortest_simple_paths`] | Yen's k shortest loopless paths (small k) |
//! | [`bfs_levels`] | full single-source BFS, direction-optimizing (Beamer et al.) |
//! | [`expand()`] | multi-seed expansion with provenance, filter, limit |
//! | [`traverse`] / [`neighbors`] | depth-limited BFS with paths; one hop, sorted |
//!
//! Every kernel takes a [`Budget`]; running out of it is an answer
//! ([`Completion::LimitReached`] / [`PathOutcome::LimitReached`]), never an error. No kernel
//! recurses, and no input panics: node ids at or above [`Adjacency::node_bound`] are treated
//! as nodes that do not exist (no edges, never found), and so are neighbor ids a graph
//! reports at or above its bound.
//!
//! # Determinism
//!
//! Every answer is a function of the graph's edge *set*, never of the order in which
//! [`Adjacency::for_each_edge`] yields edges: whenever several candidates tie, the kernels
//! pick a minimum under a total order stated in each module's docs (see [`path`] for the
//! path tie-break rules, [`expand`](mod@expand) for expansion provenance and [`walk`] for
//! `traverse` / `neighbors`).
//!
//! # The adjacency trait
//!
//! Besides the required methods, [`Adjacency::try_for_each_edge`] (provided, forwarding to
//! `for_each_edge`) lets a scan stop early, and [`Adjacency::try_for_each_neighbor_run`] yields
//! neighbor ids only, so a graph can skip reading edge ids and types where a kernel needs
//! just reachability; a graph that can do either cheaply should override them.
//! [`Adjacency::nodes_with_edges`] restricts bottom-up scans to nodes that have an edge of an
//! allowed type, and [`Adjacency::degree_total`] spares BFS a pass over the nodes.
//! Direction-optimizing steps are used by [`bfs_levels`] only: the bidirectional path search
//! already keeps both frontiers small.

use std::ops::ControlFlow;

pub use crate::graph::RunEntry;
use crate::graph::{EdgeDir, EdgeId, EdgeRef, NodeId, TypeFilter, TypeId};

mod allpaths;
mod bfs;
mod budget;
pub mod expand;
pub mod filtered;
mod marks;
pub mod path;
mod scratch;
pub mod walk;
mod yen;

#[cfg(test)]
mod expand_tests;
#[cfg(test)]
mod path_tests;
#[cfg(test)]
mod testgraph;

pub use bfs::{BfsStats, bfs_levels};
pub use budget::{Budget, Completion};
pub use expand::{ExpandOutcome, ExpandQuery, Reached, RouteStep, expand};
pub use filtered::{ElementFilter, Filtered};

pub use allpaths::all_shortest_paths;
pub use path::{Path, PathHop, PathOutcome, PathQuery, PathsOutcome, shortest_path};
pub use scratch::{PooledScratch, Scratch, ScratchPool};
pub use walk::{NeighborStep, TraverseOutcome, Visit, WalkStep, neighbors, traverse};

pub use yen::k_shortest_simple_paths;

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

    /// A hint that [`degree_estimate`](Adjacency::degree_estimate) (and the edges) of
    /// `node` in `dir` will be read soon: a graph whose look-ups miss the caches starts
    /// loading them, so that the misses of several nodes overlap. No effect on answers; the
    /// default does nothing.
    #[inline]
    fn prefetch_degree(&self, node: NodeId, dir: EdgeDir) {
        let _ = (node, dir);
    }

    /// A hint that the edges of `node` in `dir` will be scanned soon: a graph whose reads
    /// miss the caches starts loading the first of them. No effect on answers; the default
    /// does nothing.
    #[inline]
    fn prefetch_edges(&self, node: NodeId, dir: EdgeDir) {
        let _ = (node, dir);
    }

    /// The sum of [`degree_estimate`](Adjacency::degree_estimate) over every node in `dir`,
    /// when the graph knows it without a pass over the nodes (`None`: the kernels sum it
    /// themselves). Direction-optimizing BFS uses it to size the unexplored part.
    fn degree_total(&self, dir: EdgeDir) -> Option<u64> {
        let _ = dir;
        None
    }

    /// A superset of the nodes that have at least one edge in `dir` whose type passes
    /// `types`, when the graph keeps per-type node bitmaps; `None` means "unknown, assume
    /// every node". Used by bottom-up BFS steps to skip nodes that cannot contribute.
    fn nodes_with_edges(&self, dir: EdgeDir, types: &TypeFilter) -> Option<roaring::RoaringBitmap> {
        let _ = (dir, types);
        None
    }

    /// Like [`for_each_edge`](Adjacency::for_each_edge), but stops as soon as `f` returns
    /// `ControlFlow::Break`, and returns `Break` if it did. Bottom-up BFS steps use it to
    /// stop scanning a node once a parent is found (the point of the bottom-up step).
    ///
    /// The default implementation forwards to `for_each_edge` and ignores the remaining
    /// edges after a break (correct, but the graph still walks them); graphs that can stop
    /// early should override it.
    fn try_for_each_edge<F: FnMut(EdgeRef) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) -> ControlFlow<()> {
        let mut flow = ControlFlow::Continue(());
        self.for_each_edge(node, dir, types, |e| {
            if flow.is_continue() {
                flow = f(e);
            }
        });
        flow
    }

    /// Calls `f` with runs of neighbor ids: together, the other end of every live edge at
    /// `node` in physical direction `dir` whose type passes `types`, once per edge (a
    /// neighbor joined by parallel edges comes more than once), stopping when `f` breaks.
    /// Kernels that need only reachability use it: a graph hands out slices of its own
    /// neighbor arrays, so the kernel's per-edge work is a plain loop over memory (no call
    /// per edge) and edge ids and types are never read. Ids at or above
    /// [`node_bound`](Adjacency::node_bound) can come only from a damaged graph; callers
    /// skip them. The default forwards `try_for_each_edge` one neighbor at a time.
    ///
    /// With each run comes the [`RunEntry`] of its first neighbor (entry `i` of the run is
    /// [`RunEntry::nth`]`(i)`), or [`RunEntry::NONE`]; see
    /// [`run_entry_edge`](Adjacency::run_entry_edge). The default hands out `NONE`.
    fn try_for_each_neighbor_run<F: FnMut(&[u32], RunEntry) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) -> ControlFlow<()> {
        self.try_for_each_edge(node, dir, types, |e| f(&[e.neighbor.0], RunEntry::NONE))
    }

    /// The edge behind `entry`, an entry of a run that
    /// [`try_for_each_neighbor_run`](Adjacency::try_for_each_neighbor_run) handed out for
    /// some node `x`: the physical direction it was handed out in, its type and its id.
    ///
    /// The promise that makes it useful: if `entry` was the *first* entry naming a
    /// neighbor `n` among the runs handed out for `x` in that direction with that filter,
    /// the edge is the least (`TypeId`, `EdgeId`) allowed edge joining `x` and `n` in that
    /// direction, i.e. what [`least_edge_between`](Adjacency::least_edge_between) answers.
    /// The path search records the first entry that reached each node and so resolves
    /// most hops of its answer without a search. A graph that cannot promise this (several
    /// sources of edges, deleted edges) hands out [`RunEntry::NONE`]. The default: `None`.
    fn run_entry_edge(&self, entry: RunEntry) -> Option<(EdgeDir, TypeId, EdgeId)> {
        let _ = entry;
        None
    }

    /// Calls `f` for every live edge at `node` in physical direction `dir` whose type passes
    /// `types` and whose other end is `neighbor`: the same edges, as
    /// [`for_each_edge`](Adjacency::for_each_edge) yields with `neighbor == neighbor`, in an
    /// unspecified order.
    ///
    /// The default implementation scans `for_each_edge` and filters. Graphs that keep each
    /// node's edges sorted by neighbor should override it with a search (and set
    /// [`INDEXED_EDGES_BETWEEN`](Adjacency::INDEXED_EDGES_BETWEEN)): the path search then
    /// tests a few node pairs for adjacency instead of scanning a hub's whole edge list.
    fn edges_between<F: FnMut(EdgeRef)>(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) {
        self.for_each_edge(node, dir, types, |e| {
            if e.neighbor == neighbor {
                f(e);
            }
        });
    }

    /// The least edge by (`TypeId`, `EdgeId`) among those
    /// [`edges_between`](Adjacency::edges_between) yields, if any. The same edges are
    /// `neighbor`'s in the opposite direction, so an implementation should search from the
    /// end with fewer edges (the path search calls this with a hub at either end). The
    /// default does that with [`degree_estimate`](Adjacency::degree_estimate) and takes the
    /// minimum over `edges_between`; graphs with sorted runs can stop at the first type that
    /// has an edge.
    fn least_edge_between(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
    ) -> Option<EdgeRef> {
        least_edge_by_scan(self, node, neighbor, dir, types)
    }

    /// [`least_edge_between`](Adjacency::least_edge_between) for a caller that needs only
    /// edges of type at most `max_type` (it compares the answer with one it already has):
    /// an implementation may skip greater types, so the answer is `None` or any allowed
    /// edge when no smaller one exists. The default ignores the bound.
    fn least_edge_between_upto(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        max_type: TypeId,
    ) -> Option<EdgeRef> {
        let _ = max_type;
        self.least_edge_between(node, neighbor, dir, types)
    }

    /// Whether [`edges_between`](Adjacency::edges_between) costs about a binary search per
    /// type run (true) rather than a scan of the node's edges (the default, false). Kernels
    /// use it only to choose between equivalent strategies; answers never depend on it.
    const INDEXED_EDGES_BETWEEN: bool = false;
}

/// The least edge by (`TypeId`, `EdgeId`) among those `g.edges_between` yields between
/// `node` and `neighbor`, scanned from the end with fewer edges: the default of
/// [`Adjacency::least_edge_between`], and the fallback of views that filter edges.
pub(crate) fn least_edge_by_scan<G: Adjacency + ?Sized>(
    g: &G,
    node: NodeId,
    neighbor: NodeId,
    dir: EdgeDir,
    types: &TypeFilter,
) -> Option<EdgeRef> {
    let mut best: Option<EdgeRef> = None;
    let mut offer = |e: EdgeRef| {
        if best.is_none_or(|b| (e.edge_type, e.edge) < (b.edge_type, b.edge)) {
            best = Some(EdgeRef { neighbor, ..e });
        }
    };
    let back = dir.reverse();
    if g.degree_estimate(neighbor, back) < g.degree_estimate(node, dir) {
        g.edges_between(neighbor, node, back, types, &mut offer);
    } else {
        g.edges_between(node, neighbor, dir, types, &mut offer);
    }
    best
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
    fn prefetch_degree(&self, node: NodeId, dir: EdgeDir) {
        (**self).prefetch_degree(node, dir);
    }
    fn prefetch_edges(&self, node: NodeId, dir: EdgeDir) {
        (**self).prefetch_edges(node, dir);
    }
    fn nodes_with_edges(&self, dir: EdgeDir, types: &TypeFilter) -> Option<roaring::RoaringBitmap> {
        (**self).nodes_with_edges(dir, types)
    }
    fn degree_total(&self, dir: EdgeDir) -> Option<u64> {
        (**self).degree_total(dir)
    }
    fn try_for_each_edge<F: FnMut(EdgeRef) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        f: F,
    ) -> ControlFlow<()> {
        (**self).try_for_each_edge(node, dir, types, f)
    }
    fn edges_between<F: FnMut(EdgeRef)>(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        f: F,
    ) {
        (**self).edges_between(node, neighbor, dir, types, f)
    }
    fn try_for_each_neighbor_run<F: FnMut(&[u32], RunEntry) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        f: F,
    ) -> ControlFlow<()> {
        (**self).try_for_each_neighbor_run(node, dir, types, f)
    }
    fn run_entry_edge(&self, entry: RunEntry) -> Option<(EdgeDir, TypeId, EdgeId)> {
        (**self).run_entry_edge(entry)
    }

    fn least_edge_between(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
    ) -> Option<EdgeRef> {
        (**self).least_edge_between(node, neighbor, dir, types)
    }
    fn least_edge_between_upto(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        max_type: TypeId,
    ) -> Option<EdgeRef> {
        (**self).least_edge_between_upto(node, neighbor, dir, types, max_type)
    }
    const INDEXED_EDGES_BETWEEN: bool = A::INDEXED_EDGES_BETWEEN;
}
