//! A tiny in-memory graph for the kernel's tests, plus a plain-BFS oracle.

// Test code: small graphs (ids and lengths far below u32::MAX), oracle loops over indices.
#![allow(
    clippy::cast_possible_truncation,
    clippy::needless_range_loop,
    clippy::too_many_arguments
)]

use std::collections::VecDeque;
use std::ops::ControlFlow;

use proptest::prelude::*;

use super::Adjacency;
use crate::graph::{Direction, EdgeDir, EdgeId, EdgeRef, NodeId, TypeFilter, TypeId};

/// (source, target, type, edge id)
pub(crate) type EdgeSpec = (u32, u32, u16, u64);

/// Adjacency lists in both directions, in edge-list order.
#[derive(Clone, Debug, Default)]
pub(crate) struct VecGraph {
    pub(crate) out: Vec<Vec<EdgeRef>>,
    pub(crate) inn: Vec<Vec<EdgeRef>>,
}

impl VecGraph {
    pub(crate) fn new(nodes: u32, edges: &[EdgeSpec]) -> VecGraph {
        let n = nodes as usize;
        let mut g = VecGraph {
            out: vec![Vec::new(); n],
            inn: vec![Vec::new(); n],
        };
        for &(s, t, ty, id) in edges {
            let (edge, edge_type) = (EdgeId(id), TypeId(ty));
            g.out[s as usize].push(EdgeRef {
                neighbor: NodeId(t),
                edge,
                edge_type,
            });
            g.inn[t as usize].push(EdgeRef {
                neighbor: NodeId(s),
                edge,
                edge_type,
            });
        }
        g
    }

    fn list(&self, node: NodeId, dir: EdgeDir) -> &[EdgeRef] {
        let lists = match dir {
            EdgeDir::Out => &self.out,
            EdgeDir::In => &self.inn,
        };
        lists.get(node.index()).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Steps from `u` in `direction`: (neighbor, edge, type, forward).
    pub(crate) fn steps(
        &self,
        u: NodeId,
        direction: Direction,
        types: &TypeFilter,
    ) -> Vec<(NodeId, EdgeRef, bool)> {
        let mut v = Vec::new();
        for &d in direction.dirs() {
            for e in self.list(u, d) {
                if types.allows(e.edge_type) {
                    v.push((e.neighbor, *e, d == EdgeDir::Out));
                }
            }
        }
        v
    }

    /// Plain BFS distances from `s` (None = unreachable).
    pub(crate) fn distances(
        &self,
        s: NodeId,
        direction: Direction,
        types: &TypeFilter,
    ) -> Vec<Option<u32>> {
        let mut dist = vec![None; self.out.len()];
        if s.index() >= dist.len() {
            return dist;
        }
        dist[s.index()] = Some(0);
        let mut queue = VecDeque::from([s]);
        while let Some(u) = queue.pop_front() {
            let du = dist[u.index()].unwrap_or(0);
            for (v, _, _) in self.steps(u, direction, types) {
                if dist[v.index()].is_none() {
                    dist[v.index()] = Some(du + 1);
                    queue.push_back(v);
                }
            }
        }
        dist
    }

    /// Checks that `hop` leads from `a` to `b` along a real edge allowed by the query.
    pub(crate) fn valid_hop(
        &self,
        a: NodeId,
        b: NodeId,
        edge: EdgeId,
        ty: TypeId,
        forward: bool,
        direction: Direction,
        types: &TypeFilter,
    ) -> bool {
        self.steps(a, direction, types)
            .iter()
            .any(|(v, e, f)| *v == b && e.edge == edge && e.edge_type == ty && *f == forward)
    }
}

impl Adjacency for VecGraph {
    fn node_bound(&self) -> u32 {
        u32::try_from(self.out.len()).unwrap_or(u32::MAX)
    }
    fn for_each_edge<F: FnMut(EdgeRef)>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) {
        for e in self.list(node, dir) {
            if types.allows(e.edge_type) {
                f(*e);
            }
        }
    }
    fn degree_estimate(&self, node: NodeId, dir: EdgeDir) -> u32 {
        u32::try_from(self.list(node, dir).len()).unwrap_or(u32::MAX)
    }
    fn nodes_with_edges(&self, dir: EdgeDir, types: &TypeFilter) -> Option<roaring::RoaringBitmap> {
        let lists = match dir {
            EdgeDir::Out => &self.out,
            EdgeDir::In => &self.inn,
        };
        let mut b = roaring::RoaringBitmap::new();
        for (i, l) in lists.iter().enumerate() {
            if l.iter().any(|e| types.allows(e.edge_type)) {
                b.insert(u32::try_from(i).unwrap_or(u32::MAX));
            }
        }
        Some(b)
    }
    fn try_for_each_edge<F: FnMut(EdgeRef) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) -> ControlFlow<()> {
        for e in self.list(node, dir) {
            if types.allows(e.edge_type) {
                f(*e)?;
            }
        }
        ControlFlow::Continue(())
    }
}

/// A random small typed multigraph: node count and edge list (self loops, parallel edges of
/// different types and isolated nodes all occur). Edge ids are distinct but not in order.
pub(crate) fn arb_graph(
    max_nodes: u32,
    max_edges: usize,
) -> impl Strategy<Value = (u32, Vec<EdgeSpec>)> {
    (1..=max_nodes).prop_flat_map(move |n| {
        let edge = (0..n, 0..n, 0u16..4);
        (Just(n), proptest::collection::vec(edge, 0..=max_edges)).prop_map(|(n, es)| {
            let edges = es
                .into_iter()
                .enumerate()
                .map(|(i, (s, t, ty))| (s, t, ty, (i as u64).wrapping_mul(7919) % 10_007))
                .collect::<Vec<_>>();
            (n, edges)
        })
    })
}

pub(crate) fn arb_direction() -> impl Strategy<Value = Direction> {
    prop_oneof![
        Just(Direction::Out),
        Just(Direction::In),
        Just(Direction::Both)
    ]
}

pub(crate) fn arb_types() -> impl Strategy<Value = TypeFilter> {
    prop_oneof![
        2 => Just(TypeFilter::All),
        3 => proptest::collection::vec(0u16..4, 0..3).prop_map(|v| TypeFilter::only(v.into_iter().map(TypeId))),
    ]
}

/// `edges` reversed and rotated: the same edge set in a different insertion order.
pub(crate) fn reordered(edges: &[EdgeSpec]) -> Vec<EdgeSpec> {
    let mut e: Vec<EdgeSpec> = edges.iter().rev().copied().collect();
    let k = e.len() / 3;
    e.rotate_left(k);
    e
}
