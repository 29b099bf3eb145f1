//! [`Filtered`]: a graph seen through an [`ElementFilter`], in which only the nodes and
//! edges the filter accepts exist. The database's "as of a moment" reads are this view
//! with a filter of validity intervals; every kernel runs on it unchanged.
//!
//! A rejected node has no edges, and no edge leads to it; a rejected edge is not there.
//! Whether a query's own start (or end) node is accepted is the caller's to check: a
//! kernel does not ask (a path from a node to itself is found without an edge).
//! When the filter accepts everything ([`ElementFilter::accepts_all`], decided once per
//! query) every call goes straight to the graph, so the view costs a branch per call.
//! Otherwise each edge the graph yields is checked (edge, then the node at its other
//! end), neighbor runs come one neighbor at a time and carry no [`RunEntry`] handles (the
//! graph's promise about first entries does not survive the filter), and
//! [`Adjacency::least_edge_between`] takes the least *accepted* edge.

use std::ops::ControlFlow;

use super::Adjacency;
use crate::graph::{EdgeDir, EdgeId, EdgeRef, NodeId, RunEntry, TypeFilter, TypeId};

/// Which nodes and edges exist for a query.
pub trait ElementFilter {
    /// Whether every node and edge is accepted (then the view is the graph itself).
    fn accepts_all(&self) -> bool;
    /// Whether node `node` exists.
    fn node_ok(&self, node: NodeId) -> bool;
    /// Whether edge `edge` exists (its endpoints are checked separately).
    fn edge_ok(&self, edge: EdgeId) -> bool;

    /// Whether the runs [`ElementFilter::neighbor_runs`] hands out carry the graph's
    /// [`RunEntry`] handles, with the graph's promise holding for the accepted edges (the
    /// first handed-out entry naming a neighbour is the least accepted edge joining the
    /// two); the view then resolves them with the graph's
    /// [`Adjacency::run_entry_edge`]. Default: no (handles are `NONE`).
    fn runs_carry_entries(&self) -> bool {
        false
    }

    /// The filtered neighbor runs of `node` (which the view has accepted), when the filter
    /// can hand them out faster than one checked edge at a time (e.g. as slices of a
    /// graph's arrays split around the rejected entries); `None`: it cannot, the view
    /// checks each edge. The runs must be exactly the accepted edges'
    /// (see [`Adjacency::try_for_each_neighbor_run`]), with [`RunEntry::NONE`] handles
    /// unless [`ElementFilter::runs_carry_entries`].
    fn neighbor_runs<F: FnMut(&[u32], RunEntry) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        f: &mut F,
    ) -> Option<ControlFlow<()>> {
        let _ = (node, dir, types, f);
        None
    }
}

/// `graph` with only the elements `filter` accepts.
#[derive(Clone, Debug)]
pub struct Filtered<'g, G, P> {
    graph: &'g G,
    filter: P,
    all: bool,
}

impl<'g, G: Adjacency, P: ElementFilter> Filtered<'g, G, P> {
    /// The view of `graph` through `filter`.
    pub fn new(graph: &'g G, filter: P) -> Filtered<'g, G, P> {
        let all = filter.accepts_all();
        Filtered { graph, filter, all }
    }

    /// The graph under the view.
    pub fn graph(&self) -> &'g G {
        self.graph
    }

    /// The filter.
    pub fn filter(&self) -> &P {
        &self.filter
    }

    /// Whether `node` exists in this view.
    #[inline]
    pub fn node_ok(&self, node: NodeId) -> bool {
        self.all || self.filter.node_ok(node)
    }

    #[inline]
    fn edge_ref_ok(&self, e: &EdgeRef) -> bool {
        self.filter.edge_ok(e.edge) && self.filter.node_ok(e.neighbor)
    }
}

impl<G: Adjacency, P: ElementFilter> Adjacency for Filtered<'_, G, P> {
    #[inline]
    fn node_bound(&self) -> u32 {
        self.graph.node_bound()
    }

    #[inline]
    fn for_each_edge<F: FnMut(EdgeRef)>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) {
        if self.all {
            return self.graph.for_each_edge(node, dir, types, f);
        }
        if !self.filter.node_ok(node) {
            return;
        }
        self.graph.for_each_edge(node, dir, types, |e| {
            if self.edge_ref_ok(&e) {
                f(e);
            }
        });
    }

    #[inline]
    fn degree_estimate(&self, node: NodeId, dir: EdgeDir) -> u32 {
        self.graph.degree_estimate(node, dir)
    }

    #[inline]
    fn prefetch_degree(&self, node: NodeId, dir: EdgeDir) {
        self.graph.prefetch_degree(node, dir);
    }

    #[inline]
    fn prefetch_edges(&self, node: NodeId, dir: EdgeDir) {
        self.graph.prefetch_edges(node, dir);
    }

    fn degree_total(&self, dir: EdgeDir) -> Option<u64> {
        self.graph.degree_total(dir)
    }

    fn nodes_with_edges(&self, dir: EdgeDir, types: &TypeFilter) -> Option<roaring::RoaringBitmap> {
        // A superset stays a superset when edges go.
        self.graph.nodes_with_edges(dir, types)
    }

    #[inline]
    fn try_for_each_edge<F: FnMut(EdgeRef) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) -> ControlFlow<()> {
        if self.all {
            return self.graph.try_for_each_edge(node, dir, types, f);
        }
        if !self.filter.node_ok(node) {
            return ControlFlow::Continue(());
        }
        self.graph.try_for_each_edge(node, dir, types, |e| {
            if self.edge_ref_ok(&e) {
                f(e)
            } else {
                ControlFlow::Continue(())
            }
        })
    }

    #[inline]
    fn try_for_each_neighbor_run<F: FnMut(&[u32], RunEntry) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) -> ControlFlow<()> {
        if self.all {
            return self.graph.try_for_each_neighbor_run(node, dir, types, f);
        }
        if !self.filter.node_ok(node) {
            return ControlFlow::Continue(());
        }
        if let Some(flow) = self.filter.neighbor_runs(node, dir, types, &mut f) {
            return flow;
        }
        self.try_for_each_edge(node, dir, types, |e| f(&[e.neighbor.0], RunEntry::NONE))
    }

    #[inline]
    fn run_entry_edge(&self, entry: RunEntry) -> Option<(EdgeDir, TypeId, EdgeId)> {
        if self.all || self.filter.runs_carry_entries() {
            self.graph.run_entry_edge(entry)
        } else {
            None
        }
    }

    #[inline]
    fn edges_between<F: FnMut(EdgeRef)>(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) {
        if self.all {
            return self.graph.edges_between(node, neighbor, dir, types, f);
        }
        if !self.filter.node_ok(node) || !self.filter.node_ok(neighbor) {
            return;
        }
        self.graph.edges_between(node, neighbor, dir, types, |e| {
            if self.filter.edge_ok(e.edge) {
                f(e);
            }
        });
    }

    fn least_edge_between(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
    ) -> Option<EdgeRef> {
        if self.all {
            return self.graph.least_edge_between(node, neighbor, dir, types);
        }
        if !self.filter.node_ok(node) || !self.filter.node_ok(neighbor) {
            return None;
        }
        // The graph's least edge, when accepted, is the least accepted one (the usual
        // case: few edges are rejected); else every edge between the two is scanned.
        match self.graph.least_edge_between(node, neighbor, dir, types) {
            None => return None,
            Some(e) if self.filter.edge_ok(e.edge) => return Some(e),
            Some(_) => {}
        }
        super::least_edge_by_scan(self, node, neighbor, dir, types)
    }

    fn least_edge_between_upto(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        max_type: TypeId,
    ) -> Option<EdgeRef> {
        if self.all {
            return self
                .graph
                .least_edge_between_upto(node, neighbor, dir, types, max_type);
        }
        if !self.filter.node_ok(node) || !self.filter.node_ok(neighbor) {
            return None;
        }
        // An accepted answer of the graph is the least accepted edge up to `max_type`;
        // `None` means there is no edge up to it at all.
        match self
            .graph
            .least_edge_between_upto(node, neighbor, dir, types, max_type)
        {
            None => None,
            Some(e) if self.filter.edge_ok(e.edge) => Some(e),
            Some(_) => self.least_edge_between(node, neighbor, dir, types),
        }
    }

    const INDEXED_EDGES_BETWEEN: bool = G::INDEXED_EDGES_BETWEEN;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traverse::testgraph::VecGraph;
    use crate::traverse::{PathQuery, Scratch, shortest_path};

    /// Drops one node and one edge.
    struct Drop1 {
        node: u32,
        edge: u64,
    }

    impl ElementFilter for Drop1 {
        fn accepts_all(&self) -> bool {
            false
        }
        fn node_ok(&self, node: NodeId) -> bool {
            node.0 != self.node
        }
        fn edge_ok(&self, edge: EdgeId) -> bool {
            edge.0 != self.edge
        }
    }

    fn path(g: &impl Adjacency, scratch: &mut Scratch) -> Option<Vec<u32>> {
        let q = PathQuery {
            direction: crate::graph::Direction::Out,
            types: TypeFilter::All,
            max_hops: 10,
            budget: crate::traverse::Budget::unlimited(),
        };
        match shortest_path(g, scratch, NodeId(0), NodeId(3), &q) {
            crate::traverse::PathOutcome::Found(p) => Some(p.nodes.iter().map(|n| n.0).collect()),
            _ => None,
        }
    }

    /// A path that goes through a dropped node or edge is not found; the next shortest
    /// one is.
    #[test]
    fn paths_avoid_what_the_filter_drops() {
        // 0 -> 1 -> 3 (edges 0, 1), 0 -> 2 -> 3 (edges 2, 3), 0 -> 4 -> 5 -> 3 (4, 5, 6)
        let g = VecGraph::new(
            6,
            &[
                (0, 1, 0, 0),
                (1, 3, 0, 1),
                (0, 2, 0, 2),
                (2, 3, 0, 3),
                (0, 4, 0, 4),
                (4, 5, 0, 5),
                (5, 3, 0, 6),
            ],
        );
        let mut scratch = Scratch::new();
        assert_eq!(path(&g, &mut scratch), Some(vec![0, 1, 3]));
        let v = Filtered::new(&g, Drop1 { node: 1, edge: 3 });
        assert_eq!(path(&v, &mut scratch), Some(vec![0, 4, 5, 3]));
        let v = Filtered::new(&g, Drop1 { node: 4, edge: 1 });
        assert_eq!(path(&v, &mut scratch), Some(vec![0, 2, 3]));
        let v = Filtered::new(&g, Drop1 { node: 3, edge: 99 });
        assert_eq!(path(&v, &mut scratch), None);
    }

    /// Drops the nodes and edges in two sets.
    struct DropSets {
        nodes: std::collections::BTreeSet<u32>,
        edges: std::collections::BTreeSet<u64>,
    }

    impl ElementFilter for DropSets {
        fn accepts_all(&self) -> bool {
            self.nodes.is_empty() && self.edges.is_empty()
        }
        fn node_ok(&self, node: NodeId) -> bool {
            !self.nodes.contains(&node.0)
        }
        fn edge_ok(&self, edge: EdgeId) -> bool {
            !self.edges.contains(&edge.0)
        }
    }

    proptest::proptest! {
        /// A graph seen through a filter answers every path query, every least edge
        /// between two nodes and every node's edges as the graph with the rejected
        /// elements removed does.
        #[test]
        fn filtered_view_is_the_graph_without_what_it_drops(
            (n, edges) in crate::traverse::testgraph::arb_graph(12, 40),
            drop_nodes in proptest::collection::btree_set(0u32..12, 0..4),
            drop_edge_picks in proptest::collection::vec(0usize..40, 0..10),
            direction in crate::traverse::testgraph::arb_direction(),
            types in crate::traverse::testgraph::arb_types(),
        ) {
            let drop_edges: std::collections::BTreeSet<u64> = drop_edge_picks
                .iter()
                .filter_map(|&i| edges.get(i).map(|e| e.3))
                .collect();
            let kept: Vec<_> = edges
                .iter()
                .copied()
                .filter(|e| {
                    !drop_edges.contains(&e.3)
                        && !drop_nodes.contains(&e.0)
                        && !drop_nodes.contains(&e.1)
                })
                .collect();
            let g = VecGraph::new(n, &edges);
            let want = VecGraph::new(n, &kept);
            let view = Filtered::new(&g, DropSets { nodes: drop_nodes.clone(), edges: drop_edges });
            let mut scratch = Scratch::new();
            let q = PathQuery {
                direction,
                types: types.clone(),
                max_hops: 12,
                budget: crate::traverse::Budget::unlimited(),
            };
            for a in 0..n {
                let dist = want.distances(NodeId(a), direction, &types);
                for b in 0..n {
                    let got = match shortest_path(&view, &mut scratch, NodeId(a), NodeId(b), &q) {
                        crate::traverse::PathOutcome::Found(p) => u32::try_from(p.hops.len()).ok(),
                        _ => None,
                    };
                    // Endpoints are the caller's to check (a kernel does not ask whether
                    // its start exists): only paths between accepted nodes are compared.
                    if !drop_nodes.contains(&a) && !drop_nodes.contains(&b) {
                        proptest::prop_assert_eq!(got, dist[b as usize], "{} -> {}", a, b);
                    }
                    for dir in [EdgeDir::Out, EdgeDir::In] {
                        proptest::prop_assert_eq!(
                            view.least_edge_between(NodeId(a), NodeId(b), dir, &types),
                            want.least_edge_between(NodeId(a), NodeId(b), dir, &types)
                        );
                    }
                }
                for dir in [EdgeDir::Out, EdgeDir::In] {
                    let mut got = Vec::new();
                    view.for_each_edge(NodeId(a), dir, &types, |e| got.push(e));
                    let mut expect = Vec::new();
                    want.for_each_edge(NodeId(a), dir, &types, |e| expect.push(e));
                    proptest::prop_assert_eq!(got, expect);
                }
            }
        }
    }
}
