//! Multi-seed expansion with provenance.
//!
//! From a ranked list of seeds, every node within `hops` hops is reported once, with the
//! seed it was reached from, the hop count and the last edge (and, on request, the full
//! route). Seeds are never results. The result predicate filters what is *reported*; the
//! traversal still passes through filtered nodes.
//!
//! # Directions
//!
//! [`ExpandQuery::direction`] is the [`Direction`] every kernel takes:
//!
//! * [`Direction::Out`]: every hop follows an edge from source to target.
//! * [`Direction::In`]: every hop follows an edge from target to source.
//! * [`Direction::Both`]: each hop may go either way (mixed-direction routes), as in the
//!   path kernels; with [`ExpandQuery::one_way_routes`], instead the union of an out-only
//!   sweep and an in-only sweep from every seed (each route keeps one direction; a node
//!   reached by both keeps the better provenance, below).
//!
//! # Provenance (one result per node)
//!
//! Among all ways of reaching a node the least of (hop count, seed rank, type rank of the
//! last edge, forward before backward, last `EdgeId`) wins. Seed rank is the index in
//! [`ExpandQuery::seeds`] (a seed listed twice keeps its first index). The type rank of a
//! type is `type_rank[type_id]` when a table is given (types beyond the table rank last) and
//! the `TypeId` itself otherwise. Within one sweep the rule is applied level by level: a
//! node's provenance is the least over the parents in the previous level, each parent
//! carrying its own seed; because every parent at the previous level was itself reached at
//! its least hop count from its least-ranked seed, this yields the global minimum. The
//! route reported is the parent chain of the winning sweep.
//!
//! # Order and limit
//!
//! Results are ordered by (hop, seed rank, node id). `limit` counts results after the
//! predicate; `truncated` is set only when a further result was actually found.

use super::Adjacency;
use super::budget::{Budget, Completion, Meter};
use super::scratch::{Link, Scratch, Side, expand_level};
use crate::graph::{Direction, EdgeDir, EdgeId, NodeId, TypeFilter, TypeId};

/// One hop of a route: the node reached by the hop, the edge, its type, and whether the
/// edge was walked from its source to its target.
pub type RouteStep = (NodeId, EdgeId, TypeId, bool);

/// Parameters of [`expand`].
#[derive(Clone, Copy)]
pub struct ExpandQuery<'a> {
    /// Seeds in tie-break rank order (rank = index).
    pub seeds: &'a [NodeId],
    /// Maximum hops from a seed (0 yields nothing).
    pub hops: u32,
    /// Which edges a hop follows (see the module docs).
    pub direction: Direction,
    /// With [`Direction::Both`]: keep each route to one direction (the union of an out-only
    /// and an in-only sweep) instead of letting each hop go either way. Ignored otherwise.
    pub one_way_routes: bool,
    /// Edge types to follow.
    pub types: &'a TypeFilter,
    /// Rank of each `TypeId` for tie-breaks; `None` ranks types by id.
    pub type_rank: Option<&'a [u32]>,
    /// Which reached nodes are reported (traversal continues through the others).
    pub filter: &'a dyn Fn(NodeId) -> bool,
    /// Maximum number of results reported.
    pub limit: usize,
    /// Whether to report each result's full route.
    pub include_route: bool,
    /// Work limit.
    pub budget: Budget,
}

/// Accepts every node: the default result predicate.
pub fn accept_all(_: NodeId) -> bool {
    true
}

impl<'a> ExpandQuery<'a> {
    /// A query with all types, mixed-direction routes, no type ranks, no predicate, no
    /// limit, no routes reported and the default budget.
    pub fn new(seeds: &'a [NodeId], hops: u32, direction: Direction) -> ExpandQuery<'a> {
        static ALL: TypeFilter = TypeFilter::All;
        ExpandQuery {
            seeds,
            hops,
            direction,
            one_way_routes: false,
            types: &ALL,
            type_rank: None,
            filter: &accept_all,
            limit: usize::MAX,
            include_route: false,
            budget: Budget::default(),
        }
    }
}

/// One reported node and how it was reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reached {
    /// The node.
    pub node: NodeId,
    /// Index of the seed it was reached from.
    pub seed: usize,
    /// Hops from that seed (at least 1).
    pub hop: u32,
    /// The last edge walked.
    pub edge: EdgeId,
    /// Its type.
    pub edge_type: TypeId,
    /// Whether the last edge was walked from its source to its target.
    pub forward: bool,
    /// With `include_route`: the hops from the seed to the node, in walking order.
    pub route: Option<Vec<RouteStep>>,
}

/// Result of [`expand`].
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ExpandOutcome {
    /// Reported nodes in (hop, seed rank, node id) order.
    pub results: Vec<Reached>,
    /// More results existed than `limit`.
    pub truncated: bool,
    /// Whether the budget ran out; then `results` covers the completed hop levels.
    pub completion: Completion,
}

/// Multi-seed expansion; see the module docs for the rules.
///
/// # Complexity
///
/// O(V_h + E_h) (nodes within `hops` of the seeds and their edges; twice for `Both`), plus
/// O(R log R) to order each level's results and O(R · hops) for routes, R = results.
/// Stops after the level in which the limit is exceeded.
pub fn expand<G: Adjacency>(
    graph: &G,
    scratch: &mut Scratch,
    query: &ExpandQuery<'_>,
) -> ExpandOutcome {
    let mut out = ExpandOutcome::default();
    let mut meter = Meter::new(&query.budget);
    let bound = graph.node_bound();
    let sweeps: &[&[EdgeDir]] = match (query.direction, query.one_way_routes) {
        (Direction::Out, _) => &[&[EdgeDir::Out]],
        (Direction::In, _) => &[&[EdgeDir::In]],
        (Direction::Both, false) => &[&[EdgeDir::Out, EdgeDir::In]],
        (Direction::Both, true) => &[&[EdgeDir::Out], &[EdgeDir::In]],
    };
    let policy = scratch.sparse_policy();
    let mut sparse = policy.tables;
    let (base, sides) = scratch.begin_with(bound, query.hops, !sparse);
    let bound = bound as usize;
    if sparse {
        for side in sides.iter_mut() {
            side.sparse_links.begin(base);
        }
    }
    for (rank, &s) in query.seeds.iter().enumerate() {
        let rank = u32::try_from(rank).unwrap_or(u32::MAX);
        for side in sides.iter_mut().take(sweeps.len()) {
            if s.index() >= bound || side.depth_in(sparse, base, s).is_some() {
                continue;
            }
            if !meter.visit() {
                out.completion = Completion::LimitReached {
                    visited: meter.visited(),
                };
                return out;
            }
            side.reach_in(
                sparse,
                base,
                s,
                0,
                Link {
                    parent: s,
                    seed: rank,
                    ..Link::default()
                },
            );
            side.frontier.push(s);
        }
    }
    let rank_of = |t: TypeId| match query.type_rank {
        Some(table) => table.get(usize::from(t.0)).copied().unwrap_or(u32::MAX),
        None => u32::from(t.0),
    };
    let key = |l: &Link| (l.seed, rank_of(l.edge_type), !l.forward, l.edge);

    for level in 0..query.hops {
        if sides
            .iter()
            .take(sweeps.len())
            .all(|s| s.frontier.is_empty())
        {
            break;
        }
        if sparse && sides.iter().map(|s| s.sparse_links.len()).sum::<usize>() > policy.max_marks {
            // A large expansion: the arrays serve it better from here on.
            for side in sides.iter_mut() {
                side.links_to_arrays(bound);
            }
            sparse = false;
        }
        for (side, dirs) in sides.iter_mut().zip(sweeps) {
            let step = expand_level(
                graph,
                side,
                sparse,
                base,
                bound,
                level,
                dirs,
                true,
                query.types,
                &mut meter,
                Some(key),
            );
            if let Err(e) = step {
                out.completion = Completion::LimitReached { visited: e.visited };
                return out;
            }
        }
        // This level's new nodes, each with its winning sweep.
        let depth = level + 1;
        let mut found: Vec<(u32, NodeId, usize)> = Vec::new();
        let both = sweeps.len() == 2;
        for (k, this) in sides.iter().enumerate().take(sweeps.len()) {
            let other = &sides[1 - k];
            for &v in &this.next {
                let mut winner = k;
                if both {
                    match other.depth_in(sparse, base, v) {
                        // Reported at an earlier level by the other sweep.
                        Some(d) if d < depth => continue,
                        // Same level: decided when sweep 0 saw it.
                        Some(_) if k == 1 => continue,
                        Some(_)
                            if key(&other.link_in(sparse, v)) < key(&this.link_in(sparse, v)) =>
                        {
                            winner = 1 - k;
                        }
                        Some(_) | None => {}
                    }
                }
                if (query.filter)(v) {
                    found.push((sides[winner].link_in(sparse, v).seed, v, winner));
                }
            }
        }
        found.sort_unstable_by_key(|&(seed, v, _)| (seed, v));
        for (seed, v, k) in found {
            if out.results.len() >= query.limit {
                out.truncated = true;
                return out;
            }
            let side = &sides[k];
            let link = side.link_in(sparse, v);
            let route = query.include_route.then(|| route(side, sparse, base, v));
            out.results.push(Reached {
                node: v,
                seed: seed as usize,
                hop: depth,
                edge: link.edge,
                edge_type: link.edge_type,
                forward: link.forward,
                route,
            });
        }
        for side in sides.iter_mut() {
            side.advance();
        }
    }
    out
}

/// The route from the sweep's seed to `v`, in walking order.
fn route(side: &Side, sparse: bool, base: u32, v: NodeId) -> Vec<RouteStep> {
    let steps = side.depth_in(sparse, base, v).unwrap_or(0);
    let mut route = Vec::with_capacity(steps as usize);
    let mut cur = v;
    for _ in 0..steps {
        let l = side.link_in(sparse, cur);
        route.push((cur, l.edge, l.edge_type, l.forward));
        cur = l.parent;
    }
    route.reverse();
    route
}
