//! Full single-source BFS, direction-optimizing.
//!
//! Implements the hybrid of S. Beamer, K. Asanović and D. Patterson, "Direction-Optimizing
//! Breadth-First Search", SC'12. A top-down step scans the frontier's edges; a bottom-up
//! step scans the *unvisited* nodes and stops at the first edge back into the frontier,
//! which is far cheaper when the frontier holds a large share of the graph. The paper's
//! heuristics pick the step:
//!
//! * top-down → bottom-up when `m_f > m_u / ALPHA` (m_f: edges to check from the frontier,
//!   m_u: edges to check from unexplored nodes), with `ALPHA = 14`;
//! * bottom-up → top-down when `n_f < n / BETA` (n_f: frontier size, n: nodes) and the
//!   frontier is shrinking, with `BETA = 24`.
//!
//! Edge counts come from [`Adjacency::degree_estimate`] (summed over a frontier only before
//! a top-down step; m_u is [`Adjacency::degree_total`] minus the edges of the top-down
//! frontiers so far, as GAP counts it); the bottom-up scan visits only the
//! nodes [`Adjacency::nodes_with_edges`] reports (all ids when it returns `None`) and uses
//! [`Adjacency::try_for_each_neighbor_run`] to stop early. Only depths are kept, so both steps
//! read neighbor ids alone.

use std::ops::ControlFlow;

use super::Adjacency;
use super::budget::{Budget, Completion, Meter};
use super::scratch::{Link, Scratch, Side, degree_sum};
use crate::graph::{Direction, NodeId, TypeFilter};

/// Beamer et al.'s α: go bottom-up when the frontier's edges exceed 1/α of the unexplored.
pub const ALPHA: u64 = 14;
/// Beamer et al.'s β: go back top-down when the frontier holds fewer than 1/β of the nodes.
pub const BETA: u64 = 24;

/// What a full BFS saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BfsStats {
    /// Nodes reached, the source included (0 when the source is not a node).
    pub reached: u64,
    /// Edge entries handed to the kernel by the graph (each physical direction of an edge
    /// counts once per read); bottom-up steps count only the entries read before stopping.
    pub edges_examined: u64,
    /// Depth of the deepest level reached.
    pub max_depth: u32,
    /// Levels run bottom-up.
    pub bottom_up_levels: u32,
    /// Whether the budget ran out (then the counts cover what was done).
    pub completion: Completion,
}

/// Breadth-first search from `source` over `types` edges in `direction`, to exhaustion.
///
/// # Complexity
///
/// O(V_r + E_r) for the top-down levels (V_r, E_r: reached nodes and their edges); a
/// bottom-up level costs O(candidates) plus the edges read before each unvisited node finds
/// a parent. When the graph does not report [`Adjacency::degree_total`], one O(node_bound)
/// pass of `degree_estimate` calls is made the first time a frontier becomes large enough
/// (m_f · α ≥ node_bound) for the switch test to matter.
pub fn bfs_levels<G: Adjacency>(
    graph: &G,
    scratch: &mut Scratch,
    source: NodeId,
    direction: Direction,
    types: &TypeFilter,
    budget: &Budget,
) -> BfsStats {
    let mut stats = BfsStats::default();
    let bound = graph.node_bound();
    if source.0 >= bound {
        return stats;
    }
    let mut meter = Meter::new(budget);
    let (base, sides) = scratch.begin(bound, u32::MAX);
    let side = &mut sides[0];
    let dirs = direction.dirs();
    let back_dirs = direction.reverse().dirs();
    let bound_us = bound as usize;
    if !meter.visit() {
        stats.completion = Completion::LimitReached { visited: 0 };
        return stats;
    }
    side.reach(base, source, 0, Link::default());
    side.frontier.push(source);
    stats.reached = 1;

    let mut level = 0u32;
    // Edges of top-down frontiers so far (bottom-up levels are not counted, as in GAP).
    let mut explored_edges = 0u64;
    let mut total_edges: Option<u64> = None;
    let mut candidates: Option<Option<roaring::RoaringBitmap>> = None;
    let mut bottom_up = false;
    let mut previous_len = 0usize;

    while !side.frontier.is_empty() {
        if !meter.check_deadline() {
            break;
        }
        // Choose the step (Beamer et al. §3).
        if !bottom_up {
            let frontier_edges = degree_sum(graph, &side.frontier, dirs);
            explored_edges = explored_edges.saturating_add(frontier_edges);
            if frontier_edges.saturating_mul(ALPHA) >= u64::from(bound) {
                let total = *total_edges.get_or_insert_with(|| {
                    let known: Option<u64> = dirs.iter().map(|&d| graph.degree_total(d)).sum();
                    known.unwrap_or_else(|| {
                        (0..bound)
                            .map(|v| degree_sum(graph, &[NodeId(v)], dirs))
                            .sum()
                    })
                });
                let unexplored = total.saturating_sub(explored_edges);
                bottom_up = frontier_edges > unexplored / ALPHA;
            }
        } else {
            let small = (side.frontier.len() as u64).saturating_mul(BETA) < u64::from(bound);
            if small && side.frontier.len() < previous_len {
                bottom_up = false;
            }
        }
        previous_len = side.frontier.len();
        let in_frontier = base.saturating_add(level);
        let next_stamp = base.saturating_add(level + 1);
        side.next.clear();
        let mut stopped = false;
        if bottom_up {
            stats.bottom_up_levels += 1;
            let cands = candidates.get_or_insert_with(|| {
                let mut union: Option<roaring::RoaringBitmap> = Some(roaring::RoaringBitmap::new());
                for &d in back_dirs {
                    match (graph.nodes_with_edges(d, types), union.as_mut()) {
                        (Some(b), Some(u)) => *u |= b,
                        _ => union = None,
                    }
                }
                // Iterating a bitmap that holds most ids costs more than the plain range.
                union.filter(|u| u.len().saturating_mul(2) < u64::from(bound))
            });
            let mut scan = |v: u32, side: &mut Side, stats: &mut BfsStats| -> bool {
                let vi = v as usize;
                if vi >= bound_us || side.seen[vi] >= base {
                    return true;
                }
                let mut found = false;
                for &d in back_dirs {
                    let flow = graph.try_for_each_neighbor_run(NodeId(v), d, types, |run, _| {
                        for &n in run {
                            stats.edges_examined += 1;
                            let u = n as usize;
                            if u < bound_us && side.seen[u] == in_frontier {
                                return ControlFlow::Break(());
                            }
                        }
                        ControlFlow::Continue(())
                    });
                    if flow.is_break() {
                        found = true;
                        break;
                    }
                }
                if found {
                    if !meter.visit() {
                        return false;
                    }
                    side.seen[vi] = base.saturating_add(level + 1);
                    side.next.push(NodeId(v));
                }
                true
            };
            match cands {
                Some(bitmap) => {
                    for v in bitmap.iter() {
                        if !scan(v, side, &mut stats) {
                            stopped = true;
                            break;
                        }
                    }
                }
                None => {
                    for v in 0..bound {
                        if !scan(v, side, &mut stats) {
                            stopped = true;
                            break;
                        }
                    }
                }
            }
        } else {
            let Side {
                seen,
                frontier,
                next,
                ..
            } = &mut *side;
            for &u in frontier.iter() {
                for &d in dirs {
                    let _ = graph.try_for_each_neighbor_run(u, d, types, |run, _| {
                        stats.edges_examined += run.len() as u64;
                        for &n in run {
                            let v = n as usize;
                            if v >= bound_us || seen[v] >= base {
                                continue;
                            }
                            if !meter.visit() {
                                stopped = true;
                                return ControlFlow::Break(());
                            }
                            seen[v] = next_stamp;
                            next.push(NodeId(n));
                        }
                        ControlFlow::Continue(())
                    });
                }
                if stopped {
                    break;
                }
            }
        }
        stats.reached += side.next.len() as u64;
        if !side.next.is_empty() {
            level += 1;
            stats.max_depth = level;
        }
        side.advance();
        if stopped {
            break;
        }
    }
    scratch.end(base, stats.max_depth);
    if meter.status().is_err() {
        stats.completion = Completion::LimitReached {
            visited: meter.visited(),
        };
    }
    stats
}
