//! Yen's k shortest loopless paths (J. Y. Yen, "Finding the K Shortest Loopless Paths in a
//! Network", Management Science 17(11), 1971), with hop count as the length and the
//! bidirectional kernel of [`path`](super::path) as the inner shortest-path search.
//!
//! Edges are identified by [`EdgeId`], so parallel edges are different paths. Candidates of
//! equal length are taken in the order of [`Path`]'s `Ord` (node sequence, then hops), which
//! makes the answer deterministic.

use std::collections::{BTreeSet, HashSet};
use std::ops::ControlFlow;

use super::Adjacency;
use super::budget::{Completion, Meter};
use super::path::{Path, PathQuery, PathsOutcome, shortest_metered};
use super::scratch::Scratch;
use crate::graph::{EdgeDir, EdgeId, EdgeRef, NodeId, TypeFilter};

/// A view of a graph with some nodes and edges removed (Yen's spur-graph).
struct Masked<'a, G> {
    inner: &'a G,
    banned_nodes: &'a HashSet<NodeId>,
    banned_edges: &'a HashSet<EdgeId>,
}

impl<G: Adjacency> Masked<'_, G> {
    #[inline]
    fn allowed(&self, e: &EdgeRef) -> bool {
        !self.banned_edges.contains(&e.edge) && !self.banned_nodes.contains(&e.neighbor)
    }
}

impl<G: Adjacency> Adjacency for Masked<'_, G> {
    fn node_bound(&self) -> u32 {
        self.inner.node_bound()
    }
    fn for_each_edge<F: FnMut(EdgeRef)>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) {
        if self.banned_nodes.contains(&node) {
            return;
        }
        self.inner.for_each_edge(node, dir, types, |e| {
            if self.allowed(&e) {
                f(e)
            }
        });
    }
    fn degree_estimate(&self, node: NodeId, dir: EdgeDir) -> u32 {
        self.inner.degree_estimate(node, dir)
    }
    fn nodes_with_edges(&self, dir: EdgeDir, types: &TypeFilter) -> Option<roaring::RoaringBitmap> {
        self.inner.nodes_with_edges(dir, types)
    }
    fn try_for_each_edge<F: FnMut(EdgeRef) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) -> ControlFlow<()> {
        if self.banned_nodes.contains(&node) {
            return ControlFlow::Continue(());
        }
        self.inner.try_for_each_edge(node, dir, types, |e| {
            if self.allowed(&e) {
                f(e)
            } else {
                ControlFlow::Continue(())
            }
        })
    }
}

/// Up to `k` shortest simple (loopless) paths from `from` to `to` within `query.max_hops`,
/// shortest first; equal lengths are ordered by [`Path`]'s `Ord`. `truncated` means `k`
/// paths were returned and the search stopped (more may exist). The budget is shared by all
/// inner searches; when it runs out, the paths found so far are returned with
/// `Completion::LimitReached`.
///
/// # Complexity
///
/// O(k · L) inner bidirectional searches (L = longest path returned), each as in
/// [`shortest_path`](super::shortest_path), plus O(k · L · k) prefix comparisons. Meant for
/// small k.
pub fn k_shortest_simple_paths<G: Adjacency>(
    graph: &G,
    scratch: &mut Scratch,
    from: NodeId,
    to: NodeId,
    query: &PathQuery,
    k: usize,
) -> PathsOutcome {
    let mut meter = Meter::new(&query.budget);
    let mut out = PathsOutcome::default();
    if k == 0 {
        return out;
    }
    let (direction, types) = (query.direction, &query.types);
    let limit = |meter: &Meter| Completion::LimitReached {
        visited: meter.visited(),
    };
    match shortest_metered(
        graph,
        scratch,
        from,
        to,
        direction,
        types,
        query.max_hops,
        &mut meter,
    ) {
        Err(_) => {
            out.completion = limit(&meter);
            return out;
        }
        Ok(None) => return out,
        Ok(Some(p)) => out.paths.push(p),
    }
    let mut candidates: BTreeSet<(usize, Path)> = BTreeSet::new();
    let mut banned_nodes = HashSet::new();
    let mut banned_edges = HashSet::new();
    while out.paths.len() < k {
        let Some(prev) = out.paths.last().cloned() else {
            break;
        };
        for i in 0..prev.hops.len() {
            let spur = prev.nodes[i];
            let root_nodes = &prev.nodes[..=i];
            let root_hops = &prev.hops[..i];
            banned_edges.clear();
            for p in &out.paths {
                if p.hops.len() > i && p.nodes[..=i] == *root_nodes && p.hops[..i] == *root_hops {
                    banned_edges.insert(p.hops[i].edge);
                }
            }
            banned_nodes.clear();
            banned_nodes.extend(root_nodes[..i].iter().copied());
            let masked = Masked {
                inner: graph,
                banned_nodes: &banned_nodes,
                banned_edges: &banned_edges,
            };
            let hops_left = query
                .max_hops
                .saturating_sub(u32::try_from(i).unwrap_or(u32::MAX));
            let spur_path = match shortest_metered(
                &masked, scratch, spur, to, direction, types, hops_left, &mut meter,
            ) {
                Err(_) => {
                    out.completion = limit(&meter);
                    return out;
                }
                Ok(p) => p,
            };
            if let Some(sp) = spur_path {
                let mut nodes = root_nodes.to_vec();
                nodes.extend_from_slice(&sp.nodes[1..]);
                let mut hops = root_hops.to_vec();
                hops.extend_from_slice(&sp.hops);
                let total = Path { nodes, hops };
                if !out.paths.contains(&total) {
                    candidates.insert((total.len(), total));
                }
            }
        }
        match candidates.pop_first() {
            Some((_, best)) => out.paths.push(best),
            None => break,
        }
    }
    out.truncated = out.paths.len() == k;
    out
}
