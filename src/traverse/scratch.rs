//! Reusable per-query memory.
//!
//! A [`Scratch`] holds two "sides" (forward and backward halves of a bidirectional search, or
//! two sweeps of an expansion), each with a generation-stamped visited mark, a BFS depth, a
//! parent link and a seed index per node, plus frontier vectors. Starting a query bumps the
//! generation, which invalidates every mark at once; only when the 32-bit generation wraps
//! around are the marks cleared (once per four billion queries). The arrays grow lazily to
//! the graph's [`node_bound`](super::Adjacency::node_bound) and never shrink, so a scratch
//! can serve graphs of different sizes in turn.
//!
//! A [`ScratchPool`] keeps idle scratches so that concurrent queries on several threads each
//! borrow their own.

use std::ops::{Deref, DerefMut};

use super::Adjacency;
use super::budget::{Exhausted, Meter};
use crate::graph::{EdgeDir, EdgeId, NodeId, TypeFilter, TypeId};
use crate::sync::{Mutex, MutexGuard};

/// How a node was reached: the previous node on the way from the side's origin, the edge and
/// whether the edge was walked from its source to its target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) parent: NodeId,
    pub(crate) edge: EdgeId,
    pub(crate) edge_type: TypeId,
    pub(crate) forward: bool,
}

/// Per-node state of one search side. Entries are meaningful only where `mark == generation`.
#[derive(Debug, Default)]
pub(crate) struct Side {
    pub(crate) mark: Vec<u32>,
    pub(crate) depth: Vec<u32>,
    pub(crate) link: Vec<Link>,
    pub(crate) seed: Vec<u32>,
    pub(crate) frontier: Vec<NodeId>,
    pub(crate) next: Vec<NodeId>,
}

impl Side {
    fn grow(&mut self, bound: usize) {
        if self.mark.len() < bound {
            self.mark.resize(bound, 0);
            self.depth.resize(bound, 0);
            self.link.resize(bound, Link::default());
            self.seed.resize(bound, 0);
        }
    }

    /// Marks `v` (which must be below the scratch bound) as reached at `depth`.
    #[inline]
    pub(crate) fn reach(&mut self, generation: u32, v: NodeId, depth: u32, link: Link, seed: u32) {
        let i = v.index();
        self.mark[i] = generation;
        self.depth[i] = depth;
        self.link[i] = link;
        self.seed[i] = seed;
    }

    /// The depth of `v` on this side, if reached in this generation.
    #[inline]
    pub(crate) fn depth_of(&self, generation: u32, v: NodeId) -> Option<u32> {
        let i = v.index();
        match self.mark.get(i) {
            Some(&m) if m == generation => self.depth.get(i).copied(),
            _ => None,
        }
    }

    /// Moves the freshly built level into the frontier.
    pub(crate) fn advance(&mut self) {
        std::mem::swap(&mut self.frontier, &mut self.next);
        self.next.clear();
    }
}

/// Reusable memory for the traversal kernels. Create one per thread (or borrow one from a
/// [`ScratchPool`]) and pass it to every query; it is never cleared in O(nodes) per query.
#[derive(Debug, Default)]
pub struct Scratch {
    generation: u32,
    bound: usize,
    sides: [Side; 2],
}

impl Scratch {
    /// An empty scratch; arrays are allocated on first use.
    pub fn new() -> Scratch {
        Scratch::default()
    }

    /// Number of nodes the arrays currently cover.
    pub fn capacity_nodes(&self) -> usize {
        self.sides[0].mark.len()
    }

    /// Starts a query on a graph with `bound` node ids: grows the arrays if needed, bumps
    /// the generation and empties the frontiers. O(1) amortized (O(bound) when growing, and
    /// once per 2^32 queries when the generation wraps).
    pub(crate) fn begin(&mut self, bound: u32) -> (u32, &mut [Side; 2]) {
        let bound = bound as usize;
        for side in &mut self.sides {
            side.grow(bound);
            side.frontier.clear();
            side.next.clear();
        }
        self.bound = bound;
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            for side in &mut self.sides {
                side.mark.fill(0);
            }
            self.generation = 1;
        }
        (self.generation, &mut self.sides)
    }

    /// The generation and sides of the query started by the last [`Scratch::begin`].
    pub(crate) fn current(&mut self) -> (u32, &mut [Side; 2]) {
        (self.generation, &mut self.sides)
    }

    /// The node bound of the current query.
    pub(crate) fn bound(&self) -> usize {
        self.bound
    }

    #[cfg(test)]
    pub(crate) fn force_generation(&mut self, generation: u32) {
        self.generation = generation;
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

/// Expands every node of `side.frontier` (all at depth `level`) one hop along `dirs` into
/// `side.next` (depth `level + 1`). A node reached from several frontier nodes keeps the
/// candidate link with the least `key(link, seeds)`, so the choice does not depend on the
/// order edges are yielded. `forward_on_out` says whether an edge found in `EdgeDir::Out` is
/// walked source-to-target from this side's point of view (true for a forward side).
///
/// Errors when the budget runs out; the level is then incomplete.
#[allow(clippy::too_many_arguments)]
pub(crate) fn expand_level<G, K, F>(
    graph: &G,
    side: &mut Side,
    generation: u32,
    bound: usize,
    level: u32,
    dirs: &[EdgeDir],
    forward_on_out: bool,
    types: &TypeFilter,
    meter: &mut Meter,
    key: F,
) -> Result<(), Exhausted>
where
    G: Adjacency,
    K: Ord,
    F: Fn(&Link, &[u32]) -> K,
{
    if !meter.check_deadline() {
        return Err(meter.exhausted());
    }
    let Side {
        mark,
        depth,
        link,
        seed,
        frontier,
        next,
    } = side;
    next.clear();
    let mut stopped = false;
    for &u in frontier.iter() {
        for &d in dirs {
            let forward = (d == EdgeDir::Out) == forward_on_out;
            graph.for_each_edge(u, d, types, |e| {
                let v = e.neighbor.index();
                if stopped || v >= bound {
                    return;
                }
                let cand = Link {
                    parent: u,
                    edge: e.edge,
                    edge_type: e.edge_type,
                    forward,
                };
                if mark[v] != generation {
                    if !meter.visit() {
                        stopped = true;
                        return;
                    }
                    mark[v] = generation;
                    depth[v] = level + 1;
                    link[v] = cand;
                    seed[v] = seed[u.index()];
                    next.push(e.neighbor);
                } else if depth[v] == level + 1 && key(&cand, seed) < key(&link[v], seed) {
                    link[v] = cand;
                    seed[v] = seed[u.index()];
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

    /// A pool keeping at most `keep_max` idle scratches (each holds ~56 bytes per node).
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
        #[cfg(not(loom))]
        {
            self.free.lock()
        }
        #[cfg(loom)]
        {
            self.free
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        }
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
