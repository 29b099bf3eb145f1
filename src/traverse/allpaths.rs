//! Every shortest path between two nodes, up to a cap.
//!
//! After the bidirectional search of [`path`](super::path) settles the distance `L`, the
//! backward side knows the exact distance to `to` for every node within its depth. A second,
//! backward pass through the forward side's levels extends that knowledge to every node of
//! the shortest-path DAG. An iterative depth-first enumeration from `from` then only takes
//! steps that lower the distance to `to` by one, so it never hits a dead end and its work is
//! proportional to the output.

use super::Adjacency;
use super::budget::{Completion, Meter};
use super::path::{Path, PathHop, PathQuery, PathsOutcome, Settle, bidirectional, side_dirs};
use super::scratch::{Link, Scratch, Side};
use crate::graph::{EdgeDir, NodeId};

/// One candidate step of the enumeration.
type Step = (NodeId, PathHop);

/// Every distinct shortest path from `from` to `to` within `query.max_hops`, at most `cap`
/// of them, ordered lexicographically by hop sequence (each hop compared by next `NodeId`,
/// `TypeId`, `EdgeId`, forward first). Parallel edges make distinct paths. `truncated` is set
/// when more than `cap` paths exist. Running out of budget yields no paths and
/// `Completion::LimitReached`.
///
/// # Complexity
///
/// The bidirectional search (see [`shortest_path`](super::shortest_path)), plus
/// O(E_dag) for the backward pass over the forward ball's shortest-path DAG, plus
/// O((cap + 1) · L · (d + d log d)) for the enumeration, where d is the degree of the nodes
/// on the paths.
pub fn all_shortest_paths<G: Adjacency>(
    graph: &G,
    scratch: &mut Scratch,
    from: NodeId,
    to: NodeId,
    query: &PathQuery,
    cap: usize,
) -> PathsOutcome {
    let mut meter = Meter::new(&query.budget);
    let (direction, types) = (query.direction, &query.types);
    let meet = match bidirectional(
        graph,
        scratch,
        from,
        to,
        direction,
        types,
        query.max_hops,
        &mut meter,
        Settle::Complete,
    ) {
        Err(e) => {
            return PathsOutcome {
                completion: Completion::LimitReached { visited: e.visited },
                ..PathsOutcome::default()
            };
        }
        Ok(None) => return PathsOutcome::default(),
        Ok(Some(meet)) => meet,
    };
    if meet.total == 0 {
        let path = Path {
            nodes: vec![from],
            hops: Vec::new(),
        };
        return PathsOutcome {
            paths: vec![path],
            truncated: cap == 0,
            completion: Completion::Complete,
        };
    }
    let total = meet.total;
    let dirs = side_dirs(direction);
    let bound = scratch.bound();
    let (base, sides) = scratch.current();
    let [forward, backward] = &mut *sides;

    // The meeting layer sits at forward depth `levels[0]`; its nodes are exactly those of
    // the last expanded level whose depth on the other side completes the total.
    let other_level = meet.levels[1 - meet.last];
    let (last, other): (&Side, &Side) = if meet.last == 0 {
        (forward, backward)
    } else {
        (backward, forward)
    };
    let mut layer: Vec<NodeId> = last
        .frontier
        .iter()
        .copied()
        .filter(|&v| other.depth_of(base, v) == Some(other_level))
        .collect();

    // Backward pass: give every DAG node before the meeting layer its distance to `to`.
    for position in (0..meet.levels[0]).rev() {
        let mut next = Vec::new();
        let mut stopped = false;
        for &v in &layer {
            for &d in dirs[1] {
                graph.for_each_edge(v, d, types, |e| {
                    let u = e.neighbor;
                    if stopped
                        || u.index() >= bound
                        || forward.depth_of(base, u) != Some(position)
                        || backward.depth_of(base, u).is_some()
                    {
                        return;
                    }
                    if !meter.visit() {
                        stopped = true;
                        return;
                    }
                    backward.reach(base, u, total - position, Link::default());
                    next.push(u);
                });
            }
        }
        if stopped {
            let visited = meter.visited();
            return PathsOutcome {
                completion: Completion::LimitReached { visited },
                ..PathsOutcome::default()
            };
        }
        layer = next;
    }

    let backward: &Side = backward;
    let steps_of = |u: NodeId, remaining: u32| -> Vec<Step> {
        let mut steps = Vec::new();
        if remaining == 0 {
            return steps;
        }
        for &d in dirs[0] {
            graph.for_each_edge(u, d, types, |e| {
                if backward.depth_of(base, e.neighbor) == Some(remaining - 1) {
                    let hop = PathHop {
                        edge: e.edge,
                        edge_type: e.edge_type,
                        forward: d == EdgeDir::Out,
                    };
                    steps.push((e.neighbor, hop));
                }
            });
        }
        steps.sort_unstable_by_key(|(v, h)| (*v, h.edge_type, h.edge, !h.forward));
        steps
    };
    enumerate(from, to, total, cap, steps_of)
}

/// Iterative depth-first enumeration of the DAG given by `steps_of(node, remaining hops)`.
fn enumerate(
    from: NodeId,
    to: NodeId,
    total: u32,
    cap: usize,
    steps_of: impl Fn(NodeId, u32) -> Vec<Step>,
) -> PathsOutcome {
    let mut out = PathsOutcome::default();
    // Frame k holds the candidate steps out of nodes[k] and the index of the next one.
    let mut stack: Vec<(Vec<Step>, usize)> = vec![(steps_of(from, total), 0)];
    let mut nodes = vec![from];
    let mut hops: Vec<PathHop> = Vec::new();
    while let Some((steps, next)) = stack.last_mut() {
        let Some(&(v, hop)) = steps.get(*next) else {
            stack.pop();
            nodes.pop();
            hops.pop();
            continue;
        };
        *next += 1;
        nodes.push(v);
        hops.push(hop);
        if v == to {
            if out.paths.len() == cap {
                out.truncated = true;
                break;
            }
            out.paths.push(Path {
                nodes: nodes.clone(),
                hops: hops.clone(),
            });
            nodes.pop();
            hops.pop();
        } else {
            let remaining = total.saturating_sub(u32::try_from(hops.len()).unwrap_or(u32::MAX));
            stack.push((steps_of(v, remaining), 0));
        }
    }
    out
}
