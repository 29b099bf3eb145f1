//! Depth-limited traversal with paths, and sorted one-hop neighborhoods.
//!
//! [`traverse`] is a BFS from one start node: a node reached from several nodes of the
//! previous level keeps the parent with the least (parent `NodeId`, `TypeId`, `EdgeId`,
//! forward before backward); results come level by level
//! (depth never decreases) and, within a level, by ascending `NodeId`.
//!
//! [`neighbors`] lists one hop sorted by (`TypeId`, neighbor `NodeId`, `EdgeId`, out
//! before in).

use super::Adjacency;
use super::budget::{Budget, Completion, Meter};
use super::scratch::{Link, Scratch, expand_level};
use crate::graph::{Direction, EdgeDir, EdgeId, NodeId, TypeFilter, TypeId};

/// One hop of a walk: the edge, its type, and whether it was walked source to target.
pub type WalkStep = (EdgeId, TypeId, bool);

/// One node reached by [`traverse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Visit {
    /// The node.
    pub node: NodeId,
    /// Hops from the start.
    pub depth: u32,
    /// The hops from the start to the node, in walking order.
    pub path: Vec<WalkStep>,
}

/// Result of [`traverse`].
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TraverseOutcome {
    /// Reached nodes (the start excluded) in (depth, node id) order.
    pub visits: Vec<Visit>,
    /// More nodes were reachable within `depth_max` than `limit`.
    pub truncated: bool,
    /// Whether the budget ran out; then `visits` covers the completed levels.
    pub completion: Completion,
}

/// One edge at a node: the neighbor, the edge, its type and whether it leaves the node
/// (walked from source to target).
pub type NeighborStep = (NodeId, EdgeId, TypeId, bool);

#[inline]
fn walk_key(link: &Link) -> (NodeId, TypeId, EdgeId, bool) {
    (link.parent, link.edge_type, link.edge, !link.forward)
}

/// Breadth-first traversal from `start` up to `depth_max` hops, keeping the first `limit`
/// nodes in (depth, node id) order, each with the path taken. A start that is not a node
/// yields nothing.
///
/// # Complexity
///
/// O(V_d + E_d) over the nodes within `depth_max` (stopping after the level where `limit`
/// is exceeded), plus O(R log R + R · depth) to order results and build their paths.
#[allow(clippy::too_many_arguments)]
pub fn traverse<G: Adjacency>(
    graph: &G,
    scratch: &mut Scratch,
    start: NodeId,
    direction: Direction,
    types: &TypeFilter,
    depth_max: u32,
    limit: usize,
    budget: &Budget,
) -> TraverseOutcome {
    let mut out = TraverseOutcome::default();
    let bound = graph.node_bound();
    if start.0 >= bound {
        return out;
    }
    let mut meter = Meter::new(budget);
    let policy = scratch.sparse_policy();
    let mut sparse = policy.tables;
    let (base, sides) = scratch.begin_with(bound, depth_max, !sparse);
    let side = &mut sides[0];
    if sparse {
        side.sparse_links.begin(base);
    }
    if !meter.visit() {
        out.completion = Completion::LimitReached { visited: 0 };
        return out;
    }
    side.reach_in(
        sparse,
        base,
        start,
        0,
        Link {
            parent: start,
            ..Link::default()
        },
    );
    side.frontier.push(start);
    let dirs = direction.dirs();
    for level in 0..depth_max {
        if side.frontier.is_empty() {
            break;
        }
        if sparse && side.sparse_links.len() > policy.max_marks {
            side.links_to_arrays(bound as usize);
            sparse = false;
        }
        let step = expand_level(
            graph,
            side,
            sparse,
            base,
            bound as usize,
            level,
            dirs,
            true,
            types,
            &mut meter,
            Some(walk_key),
        );
        if let Err(e) = step {
            out.completion = Completion::LimitReached { visited: e.visited };
            return out;
        }
        side.next.sort_unstable();
        for &v in &side.next {
            if out.visits.len() >= limit {
                out.truncated = true;
                return out;
            }
            let mut path = Vec::with_capacity(level as usize + 1);
            let mut cur = v;
            for _ in 0..=level {
                let l = side.link_in(sparse, cur);
                path.push((l.edge, l.edge_type, l.forward));
                cur = l.parent;
            }
            path.reverse();
            out.visits.push(Visit {
                node: v,
                depth: level + 1,
                path,
            });
        }
        side.advance();
    }
    out
}

/// The edges at `node` in `direction` whose type passes `types`, sorted by (`TypeId`,
/// neighbor, `EdgeId`, out before in), at most `limit` of them; the flag says whether
/// more existed. A node that does not exist has no neighbors.
///
/// # Complexity
///
/// O(d log d) for the d edges at `node` that pass the filter.
pub fn neighbors<G: Adjacency>(
    graph: &G,
    node: NodeId,
    direction: Direction,
    types: &TypeFilter,
    limit: usize,
) -> (Vec<NeighborStep>, bool) {
    let mut steps = Vec::new();
    if node.0 >= graph.node_bound() {
        return (steps, false);
    }
    for &d in direction.dirs() {
        graph.for_each_edge(node, d, types, |e| {
            steps.push((e.neighbor, e.edge, e.edge_type, d == EdgeDir::Out));
        });
    }
    steps.sort_unstable_by_key(|&(v, edge, ty, forward)| (ty, v, edge, !forward));
    let truncated = steps.len() > limit;
    steps.truncate(limit);
    (steps, truncated)
}
