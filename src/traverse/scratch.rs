//! Reusable per-query memory.
//!
//! A [`Scratch`] holds two "sides" (forward and backward halves of a bidirectional search, or
//! two sweeps of an expansion). Each side has a hot array of `u32` visit stamps (4 bytes per
//! node, as compact as a plain BFS's distance array, so it stays in cache) and a cold array
//! of parent links (with the seed index for expansions), plus frontier vectors.
//!
//! # Stamps
//!
//! A query reserves a range of stamp values `base ..= base + depth_cap` above every value
//! written by earlier queries, and writes `base + depth` for each node it reaches. So "reached
//! in this query" is `stamp >= base` and the depth is `stamp - base`, both from one load, and
//! starting a query invalidates every mark at once. Only when the 32-bit range runs out are
//! the stamps cleared (once per about 2^32 / depth levels, never per query). The arrays grow
//! lazily to the graph's [`node_bound`](super::Adjacency::node_bound) and never shrink, so a
//! scratch can serve graphs of different sizes in turn.
//!
//! The path search and the expansions keep their marks in per-side hash tables instead
//! (see [`super::marks`]), stamped the same way, and move them into these arrays only when
//! a search grows large; full-graph sweeps (`bfs_levels`) and `all_shortest_paths` use the
//! arrays from the start.
//!
//! A [`ScratchPool`] keeps idle scratches so that concurrent queries on several threads each
//! borrow their own.

use std::ops::{Deref, DerefMut};

use super::Adjacency;
use super::budget::{Exhausted, Meter};
use super::marks::{DenseMarks, Marks, SparseLinks, SparseMarks, Stamps};
use crate::graph::{EdgeDir, EdgeId, NodeId, RunEntry, TypeFilter, TypeId};
use crate::sync::{Mutex, MutexGuard};

/// How a node was reached: the previous node on the way from the side's origin, the edge,
/// whether the edge was walked from its source to its target, and the seed (expansions) the
/// chain started from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Zeroable)]
pub(crate) struct Link {
    pub(crate) parent: NodeId,
    pub(crate) seed: u32,
    pub(crate) edge: EdgeId,
    pub(crate) edge_type: TypeId,
    pub(crate) forward: bool,
}

/// How the shortest-path search reached a node: the previous node, and the entry of the
/// previous node's neighbor runs that named it ([`RunEntry::NONE`] when the graph hands
/// out none, or when a probe rather than a scan joined the two), from which the path's
/// hop is read without a search (see [`Adjacency::run_entry_edge`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Zeroable)]
pub(crate) struct Parent {
    pub(crate) node: NodeId,
    pub(crate) via: RunEntry,
}

/// Per-node state of one search side. `seen[v] >= base` for nodes reached in the current
/// query (then `seen[v] - base` is the depth and `link[v]` is meaningful).
#[derive(Debug, Default)]
pub(crate) struct Side {
    pub(crate) seen: Vec<u32>,
    pub(crate) link: Vec<Link>,
    /// The parent and the run entry it was reached by, for the shortest-path search: it
    /// needs nothing else per node, and an 8-byte array beside the stamps keeps its hot
    /// loop within 12 bytes per node instead of 28 (the links of a 64 Ki-node graph
    /// already overflow a 2 MiB L2 cache).
    pub(crate) parent: Vec<Parent>,
    /// The shortest-path search's marks, in place of `seen` and `parent` until a search
    /// grows large (see [`super::marks`] and [`SparsePolicy`]).
    pub(crate) sparse: SparseMarks,
    /// The expansions' marks in place of `seen` and `link`, the same way.
    pub(crate) sparse_links: SparseLinks,
    pub(crate) frontier: Vec<NodeId>,
    pub(crate) next: Vec<NodeId>,
    /// The radix sort's second buffer (see [`sort_nodes`]).
    pub(crate) spare: Vec<NodeId>,
}

impl Side {
    /// Covers node ids below `bound`. The first allocation asks the allocator for zeroed
    /// memory, which the operating system hands out as untouched pages: a query then pays
    /// only for the pages of the nodes it reaches, not 36 bytes per node of the whole
    /// graph (the first query of a process on a large graph was hundreds of times slower
    /// than the next). `link` and `parent` are read only for nodes reached in the current
    /// query, after `reach` wrote them, so their initial values never matter.
    pub(crate) fn grow(&mut self, bound: usize) {
        if self.seen.is_empty() {
            self.seen = bytemuck::zeroed_vec(bound);
            self.link = bytemuck::zeroed_vec(bound);
            self.parent = bytemuck::zeroed_vec(bound);
        } else if self.seen.len() < bound {
            self.seen.resize(bound, 0);
            self.link.resize(bound, Link::default());
            self.parent.resize(bound, Parent::default());
        }
    }

    /// Writes one element of every page of the arrays (the value it holds), so the pages
    /// are mapped now instead of faulting in one by one during queries.
    fn touch(&mut self) {
        fn pages<T: Copy>(v: &mut [T]) {
            let step = (4096 / std::mem::size_of::<T>().max(1)).max(1);
            for x in v.iter_mut().step_by(step) {
                // `black_box` keeps the store of an unchanged value from being elided.
                *x = std::hint::black_box(*x);
            }
        }
        pages(&mut self.seen);
        pages(&mut self.link);
        pages(&mut self.parent);
    }

    /// Marks `v` (which must be below the scratch bound) as reached at `depth` (at most the
    /// query's depth cap).
    #[inline]
    pub(crate) fn reach(&mut self, base: u32, v: NodeId, depth: u32, link: Link) {
        let i = v.index();
        self.seen[i] = base.saturating_add(depth);
        self.link[i] = link;
    }

    /// The depth of `v` on this side, if reached in this query.
    #[inline]
    pub(crate) fn depth_of(&self, base: u32, v: NodeId) -> Option<u32> {
        match self.seen.get(v.index()) {
            Some(&s) if s >= base => Some(s - base),
            _ => None,
        }
    }

    /// [`Side::depth_of`] in the expansions' store (`sparse`: the table, else the arrays).
    #[inline]
    pub(crate) fn depth_in(&self, sparse: bool, base: u32, v: NodeId) -> Option<u32> {
        if sparse {
            let s = self.sparse_links.stamp(v.index());
            (s >= base).then(|| s - base)
        } else {
            self.depth_of(base, v)
        }
    }

    /// The link of `v`, reached in this query, from the expansions' store.
    #[inline]
    pub(crate) fn link_in(&self, sparse: bool, v: NodeId) -> Link {
        if sparse {
            self.sparse_links.parent(v.index())
        } else {
            self.link[v.index()]
        }
    }

    /// [`Side::reach`] in the expansions' store.
    pub(crate) fn reach_in(&mut self, sparse: bool, base: u32, v: NodeId, depth: u32, link: Link) {
        if sparse {
            self.sparse_links
                .set(v.index(), base.saturating_add(depth), link);
        } else {
            self.reach(base, v, depth, link);
        }
    }

    /// Moves the path search's marks from the table into the arrays (grown to `bound`).
    pub(crate) fn marks_to_arrays(&mut self, bound: usize) {
        self.grow(bound);
        self.sparse.drain_into(&mut self.seen, &mut self.parent);
    }

    /// Moves the expansions' marks from the table into the arrays (grown to `bound`).
    pub(crate) fn links_to_arrays(&mut self, bound: usize) {
        self.grow(bound);
        self.sparse_links.drain_into(&mut self.seen, &mut self.link);
    }

    /// Moves the freshly built level into the frontier.
    pub(crate) fn advance(&mut self) {
        std::mem::swap(&mut self.frontier, &mut self.next);
        self.next.clear();
    }
}

/// Where the path search and the expansions keep their marks (see [`super::marks`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SparsePolicy {
    /// Start each search with the hash tables (the default: they were as fast as or faster
    /// than the arrays at p50 and p99 on kron-16, kron-20, kron-24 and the 1M-node memory
    /// graph, warm or not, DESIGN.md §11); `false` uses the arrays from the first mark on
    /// (tests compare the two stores).
    pub(crate) tables: bool,
    /// A search whose two sides hold more marks than this at the end of a level moves
    /// them into the arrays and goes on there.
    pub(crate) max_marks: usize,
}

impl SparsePolicy {
    /// Up to this many marks the tables (16 bytes per slot for the path search, 32 for the
    /// expansions, at most half full) stay within 2–4 MiB.
    pub(crate) const MAX_MARKS: usize = 1 << 16;

    /// The per-node arrays from the first mark on.
    #[cfg(test)]
    pub(crate) const DENSE: SparsePolicy = SparsePolicy {
        tables: false,
        max_marks: 0,
    };
}

impl Default for SparsePolicy {
    fn default() -> SparsePolicy {
        SparsePolicy {
            tables: true,
            max_marks: SparsePolicy::MAX_MARKS,
        }
    }
}

/// Reusable memory for the traversal kernels. Create one per thread (or borrow one from a
/// [`ScratchPool`]) and pass it to every query; it is never cleared in O(nodes) per query.
#[derive(Debug, Default)]
pub struct Scratch {
    /// First stamp value not yet used by any query (0 only before the first query).
    next_base: u32,
    /// Stamp base of the current query.
    base: u32,
    bound: usize,
    sides: [Side; 2],
    sparse: SparsePolicy,
}

impl Scratch {
    /// An empty scratch; arrays are allocated on first use.
    pub fn new() -> Scratch {
        Scratch::default()
    }

    /// Where the searches keep their marks (tests force either store).
    pub(crate) fn sparse_policy(&self) -> SparsePolicy {
        self.sparse
    }

    #[cfg(test)]
    pub(crate) fn set_sparse_policy(&mut self, policy: SparsePolicy) {
        self.sparse = policy;
    }

    /// Grows the arrays to cover `bound` node ids and maps every page of them now, so that
    /// queries on a graph of that size take no page faults in the scratch. The first
    /// allocation takes untouched zeroed pages (no O(nodes) fill before a first query); a
    /// long-running process calls this once, off the query path (hopgraph-mcp does, on its
    /// read-ahead thread right after opening a database). O(bound); answers do not change.
    pub fn prefault(&mut self, bound: u32) {
        let bound = bound as usize;
        for side in &mut self.sides {
            side.grow(bound);
            side.touch();
        }
    }

    /// Number of nodes the arrays currently cover (each costs 36 bytes per side).
    pub fn capacity_nodes(&self) -> usize {
        self.sides[0].seen.len()
    }

    /// Starts a query on a graph with `bound` node ids that writes depths of at most
    /// `depth_cap`: grows the arrays if needed, reserves the stamp range and empties the
    /// frontiers. Returns the query's stamp base. O(1) amortized (O(bound) when growing, and
    /// when the stamp range wraps, about once per 2^32 / depth_cap queries).
    pub(crate) fn begin(&mut self, bound: u32, depth_cap: u32) -> (u32, &mut [Side; 2]) {
        self.begin_with(bound, depth_cap, true)
    }

    /// [`Scratch::begin`] for a search that starts with its marks in the sides' hash
    /// tables: the per-node arrays are grown only if `dense` (a search that moves its marks
    /// into them later grows them first, with [`Side::grow`]), so a process whose searches
    /// stay small never maps them.
    pub(crate) fn begin_with(
        &mut self,
        bound: u32,
        depth_cap: u32,
        dense: bool,
    ) -> (u32, &mut [Side; 2]) {
        // No BFS depth reaches the node count.
        let cap = u64::from(depth_cap.min(bound));
        let bound = bound as usize;
        for side in &mut self.sides {
            if dense {
                side.grow(bound);
            }
            side.frontier.clear();
            side.next.clear();
        }
        self.bound = bound;
        // Fresh and grown stamps are 0, below every base: only a wrap needs clearing.
        if self.next_base == 0 {
            self.next_base = 1;
        } else if u64::from(self.next_base) + cap >= u64::from(u32::MAX) {
            for side in &mut self.sides {
                side.seen.fill(0);
                side.sparse.clear();
                side.sparse_links.clear();
            }
            self.next_base = 1;
        }
        let base = self.next_base;
        self.base = base;
        self.next_base = u32::try_from(u64::from(base) + cap + 1).unwrap_or(u32::MAX);
        (base, &mut self.sides)
    }

    /// Ends a query that started at `base` and wrote depths of at most `depth_used`, giving
    /// back the unused part of its reservation.
    pub(crate) fn end(&mut self, base: u32, depth_used: u32) {
        let used = u64::from(base) + u64::from(depth_used) + 1;
        if used < u64::from(self.next_base) {
            self.next_base = u32::try_from(used).unwrap_or(u32::MAX);
        }
    }

    /// The stamp base and sides of the query started by the last [`Scratch::begin`].
    pub(crate) fn current(&mut self) -> (u32, &mut [Side; 2]) {
        (self.base, &mut self.sides)
    }

    /// The node bound of the current query.
    pub(crate) fn bound(&self) -> usize {
        self.bound
    }

    #[cfg(test)]
    pub(crate) fn force_next_base(&mut self, next_base: u32) {
        self.next_base = next_base;
    }
}

/// How many places ahead of the node being scanned [`prefetch_frontier`] starts loading a
/// frontier node's run bounds.
const BOUNDS_AHEAD: usize = 8;
/// How many places ahead [`prefetch_frontier`] starts loading a node's first edges (by then
/// its bounds, asked for earlier, are usually in cache).
const EDGES_AHEAD: usize = 4;

/// Asks the graph to start loading what the scan of `frontier[k + …]` will read: the run
/// bounds of the node [`BOUNDS_AHEAD`] places ahead and the first edges of the one
/// [`EDGES_AHEAD`] places ahead, so that the cache misses of consecutive frontier nodes
/// overlap instead of each waiting for the last. Hints only: answers do not change.
#[inline]
pub(crate) fn prefetch_frontier<G: Adjacency>(
    graph: &G,
    frontier: &[NodeId],
    k: usize,
    dirs: &[EdgeDir],
) {
    prefetch_bounds_ahead(graph, frontier, k, dirs);
    if let Some(&v) = frontier.get(k + EDGES_AHEAD) {
        for &d in dirs {
            graph.prefetch_edges(v, d);
        }
    }
}

/// The bounds part of [`prefetch_frontier`] alone, for a pass that reads only degrees (the
/// side choice's degree sums).
#[inline]
pub(crate) fn prefetch_bounds_ahead<G: Adjacency>(
    graph: &G,
    frontier: &[NodeId],
    k: usize,
    dirs: &[EdgeDir],
) {
    if let Some(&v) = frontier.get(k + BOUNDS_AHEAD) {
        for &d in dirs {
            graph.prefetch_degree(v, d);
        }
    }
}

/// [`prefetch_frontier`] for the nodes a scan reaches before its look-ahead does: the run
/// bounds of the first [`BOUNDS_AHEAD`].
#[inline]
pub(crate) fn prefetch_frontier_start<G: Adjacency>(
    graph: &G,
    frontier: &[NodeId],
    dirs: &[EdgeDir],
) {
    for &v in frontier.iter().take(BOUNDS_AHEAD) {
        for &d in dirs {
            graph.prefetch_degree(v, d);
        }
    }
}

/// Sum of degree estimates of `nodes` over `dirs`.
pub(crate) fn degree_sum<G: Adjacency>(graph: &G, nodes: &[NodeId], dirs: &[EdgeDir]) -> u64 {
    let mut sum = 0u64;
    for &v in nodes {
        for &d in dirs {
            sum += u64::from(graph.degree_estimate(v, d));
        }
    }
    sum
}

/// Node lists at least this long are radix-sorted by [`sort_nodes`].
const RADIX_SORT_MIN: usize = 256;

/// Sorts `nodes` (ids below `bound`) ascending. Short lists get a comparison sort; long
/// ones an LSD radix sort on the id's bytes through `spare` (one pass per byte `bound`
/// needs, skipping a byte every id shares), which is O(n) where a frontier of thousands
/// would cost n log n comparisons. The two vectors may trade buffers.
pub(crate) fn sort_nodes(nodes: &mut Vec<NodeId>, spare: &mut Vec<NodeId>, bound: usize) {
    if nodes.len() < RADIX_SORT_MIN {
        nodes.sort_unstable();
        return;
    }
    let bits = usize::BITS - bound.saturating_sub(1).leading_zeros();
    spare.clear();
    spare.resize(nodes.len(), NodeId(0));
    for pass in 0..bits.div_ceil(8) {
        let shift = pass * 8;
        let digit = |v: NodeId| ((v.0 >> shift) & 0xff) as usize;
        let mut start = [0usize; 257];
        for &v in nodes.iter() {
            start[digit(v) + 1] += 1;
        }
        if start.contains(&nodes.len()) {
            continue;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        for &v in nodes.iter() {
            let d = digit(v);
            spare[start[d]] = v;
            start[d] += 1;
        }
        std::mem::swap(nodes, spare);
    }
}

/// No tie-break key: the first parent to reach a node keeps it (see [`expand_level`]).
pub(crate) const FIRST_PARENT: Option<fn(&Link) -> ()> = None;

/// Expands every node of `side.frontier` (all at depth `level`) one hop along `dirs` into
/// `side.next` (depth `level + 1`). `forward_on_out` says whether an edge found in
/// `EdgeDir::Out` is walked source-to-target from this side's point of view (true for a
/// forward side).
///
/// A node reached from several frontier nodes keeps, with `key = Some(k)`, the candidate link
/// with the least `k(link)`; with [`FIRST_PARENT`] the frontier is first sorted by node id
/// and the first parent to reach a node keeps it, i.e. the least parent id, leaving the
/// choice among that parent's edges to the caller (the hot loop then never reads a link).
/// Either way the choice does not depend on the order edges are yielded.
///
/// Errors when the budget runs out; the level is then incomplete.
#[allow(clippy::too_many_arguments)]
pub(crate) fn expand_level<G, K, F>(
    graph: &G,
    side: &mut Side,
    sparse: bool,
    base: u32,
    bound: usize,
    level: u32,
    dirs: &[EdgeDir],
    forward_on_out: bool,
    types: &TypeFilter,
    meter: &mut Meter,
    key: Option<F>,
) -> Result<(), Exhausted>
where
    G: Adjacency,
    K: Ord,
    F: Fn(&Link) -> K,
{
    if !meter.check_deadline() {
        return Err(meter.exhausted());
    }
    let Side {
        seen,
        link,
        sparse_links,
        frontier,
        next,
        spare,
        ..
    } = side;
    if key.is_none() {
        sort_nodes(frontier, spare, bound);
    }
    next.clear();
    let level = LevelSpec {
        base,
        bound,
        current: base.saturating_add(level + 1),
        dirs,
        forward_on_out,
        types,
    };
    if sparse {
        expand_level_in(graph, sparse_links, frontier, next, &level, meter, key)
    } else {
        let mut marks = DenseMarks { seen, parent: link };
        expand_level_in(graph, &mut marks, frontier, next, &level, meter, key)
    }
}

/// What [`expand_level`] hands its body besides the marks and lists.
struct LevelSpec<'a> {
    base: u32,
    bound: usize,
    /// The stamp of a node reached in this level.
    current: u32,
    dirs: &'a [EdgeDir],
    forward_on_out: bool,
    types: &'a TypeFilter,
}

/// The body of [`expand_level`] over either store of links.
fn expand_level_in<G, K, F, M>(
    graph: &G,
    marks: &mut M,
    frontier: &[NodeId],
    next: &mut Vec<NodeId>,
    spec: &LevelSpec<'_>,
    meter: &mut Meter,
    key: Option<F>,
) -> Result<(), Exhausted>
where
    G: Adjacency,
    K: Ord,
    F: Fn(&Link) -> K,
    M: Marks<Link>,
{
    let LevelSpec {
        base,
        bound,
        current,
        dirs,
        forward_on_out,
        types,
    } = *spec;
    let mut stopped = false;
    prefetch_frontier_start(graph, frontier, dirs);
    for (k, &u) in frontier.iter().enumerate() {
        prefetch_frontier(graph, frontier, k, dirs);
        let seed = marks.parent(u.index()).seed;
        for &d in dirs {
            let forward = (d == EdgeDir::Out) == forward_on_out;
            graph.for_each_edge(u, d, types, |e| {
                let v = e.neighbor.index();
                if stopped || v >= bound {
                    return;
                }
                let s = marks.stamp(v);
                let cand = Link {
                    parent: u,
                    seed,
                    edge: e.edge,
                    edge_type: e.edge_type,
                    forward,
                };
                if s < base {
                    if !meter.visit() {
                        stopped = true;
                        return;
                    }
                    marks.set(v, current, cand);
                    next.push(e.neighbor);
                } else if let Some(key) = &key
                    && s == current
                    && key(&cand) < key(&marks.parent(v))
                {
                    marks.replace(v, cand);
                }
            });
            if stopped {
                return Err(meter.exhausted());
            }
        }
    }
    Ok(())
}

/// A pool of idle scratches for concurrent queries: [`ScratchPool::get`] pops one (or makes
/// a new one) and the returned guard puts it back when dropped.
#[derive(Debug)]
pub struct ScratchPool {
    free: Mutex<Vec<Scratch>>,
    keep_max: usize,
}

impl Default for ScratchPool {
    fn default() -> ScratchPool {
        ScratchPool::new()
    }
}

impl ScratchPool {
    /// Idle scratches kept by [`ScratchPool::new`]; more are dropped on return.
    pub const KEEP_MAX_DEFAULT: usize = 16;

    /// A pool keeping at most [`ScratchPool::KEEP_MAX_DEFAULT`] idle scratches.
    pub fn new() -> ScratchPool {
        ScratchPool::with_keep_max(ScratchPool::KEEP_MAX_DEFAULT)
    }

    /// A pool keeping at most `keep_max` idle scratches (each holds its tables, and 72 bytes
    /// per node once a large search or a full BFS has grown its arrays).
    pub fn with_keep_max(keep_max: usize) -> ScratchPool {
        ScratchPool {
            free: Mutex::new(Vec::new()),
            keep_max,
        }
    }

    /// Borrows a scratch for one query. Never blocks for longer than a push or pop.
    pub fn get(&self) -> PooledScratch<'_> {
        let scratch = self.lock().pop().unwrap_or_default();
        PooledScratch {
            pool: self,
            scratch,
        }
    }

    /// Number of idle scratches.
    pub fn idle(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Scratch>> {
        // `crate::sync::Mutex` has parking_lot's poison-free API under loom too.
        self.free.lock()
    }
}

/// A scratch borrowed from a [`ScratchPool`]; dereferences to [`Scratch`] and returns to the
/// pool on drop.
#[derive(Debug)]
pub struct PooledScratch<'a> {
    pool: &'a ScratchPool,
    scratch: Scratch,
}

impl Deref for PooledScratch<'_> {
    type Target = Scratch;
    fn deref(&self) -> &Scratch {
        &self.scratch
    }
}

impl DerefMut for PooledScratch<'_> {
    fn deref_mut(&mut self) -> &mut Scratch {
        &mut self.scratch
    }
}

impl Drop for PooledScratch<'_> {
    fn drop(&mut self) {
        let scratch = std::mem::take(&mut self.scratch);
        let mut free = self.pool.lock();
        if free.len() < self.pool.keep_max {
            free.push(scratch);
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{NodeId, RADIX_SORT_MIN, sort_nodes};

    proptest! {
        /// The radix path (long lists, bounds of one to four bytes) sorts exactly as a
        /// comparison sort does, and so does the short-list path.
        #[test]
        fn sort_nodes_matches_sort(
            bound_bits in 1u32..=32,
            raw in prop::collection::vec(any::<u32>(), 0..RADIX_SORT_MIN * 4),
        ) {
            let bound = if bound_bits == 32 { u32::MAX } else { 1u32 << bound_bits };
            let mut nodes: Vec<NodeId> = raw.iter().map(|&v| NodeId(v % bound)).collect();
            let mut want = nodes.clone();
            want.sort_unstable();
            let mut spare = vec![NodeId(7); 3];
            sort_nodes(&mut nodes, &mut spare, bound as usize);
            prop_assert_eq!(nodes, want);
        }
    }
}
