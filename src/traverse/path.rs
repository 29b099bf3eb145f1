//! Shortest paths by bidirectional, level-synchronous BFS.
//!
//! # Algorithm
//!
//! A forward side grows from `from` and a backward side from `to`. Direction `Out` means the
//! forward side follows [`EdgeDir::Out`] and the backward side [`EdgeDir::In`]; `In` is the
//! opposite; `Both` reads both physical directions on both sides. Each step expands one full
//! level of the side whose frontier is cheaper (sum of [`Adjacency::degree_estimate`] over
//! its directions; ties go to the forward side). When a level produces nodes already reached
//! by the other side, the level is finished and *every* such meeting node is considered, so
//! the result is a shortest path: before the level the two balls were disjoint, hence the
//! distance exceeded the sum of the depths, and after it the minimum over meeting nodes
//! equals the distance.
//!
//! # Tie-break rules (independent of the order `for_each_edge` yields edges)
//!
//! 1. *Parent within a level*: a node reached from several nodes of the level just expanded
//!    keeps the candidate with the least (parent `NodeId`, `TypeId`, `EdgeId`, forward
//!    before backward), where "parent" is the neighbour on the side's own origin's side and
//!    "forward" means the edge is walked from its source to its target along the path from
//!    `from` to `to` (on the forward side that is an edge found in `Out`, on the backward
//!    side one found in `In`).
//! 2. *Meeting node*: among meeting candidates, the least total length, then the least
//!    meeting `NodeId`. The path is the forward side's parent chain from `from` to the
//!    meeting node followed by the backward side's chain to `to`.
//!
//! The side that gets expanded depends only on degree estimates, so answers are stable for
//! a given graph value. [`all_shortest_paths`](super::all_shortest_paths) orders paths lexicographically by their hop
//! sequence, each hop compared by (next `NodeId`, `TypeId`, `EdgeId`, forward first).
//!
//! A path of exactly `max_hops` hops is found; a longer one is not. `from == to` yields the
//! zero-hop path. Node ids at or above the graph's bound are not nodes: `NotFound`.

use super::Adjacency;
use super::budget::{Budget, Completion, Exhausted, Meter};
use super::scratch::{FIRST_PARENT, Link, Scratch, Side, degree_sum, expand_level};
use crate::graph::{Direction, EdgeDir, EdgeId, NodeId, TypeFilter, TypeId};

/// Parameters of a path query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathQuery {
    /// Which edges a path may use, as seen walking from `from` to `to`.
    pub direction: Direction,
    /// Edge types a path may use.
    pub types: TypeFilter,
    /// Longest path length (in hops) to look for.
    pub max_hops: u32,
    /// Work limit.
    pub budget: Budget,
}

/// One hop of a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PathHop {
    /// The edge walked.
    pub edge: EdgeId,
    /// Its type.
    pub edge_type: TypeId,
    /// Whether the edge was walked from its source to its target.
    pub forward: bool,
}

/// A path: `nodes[i]` and `nodes[i + 1]` are joined by `hops[i]`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Path {
    /// The nodes from `from` to `to`, both included; one more than `hops`.
    pub nodes: Vec<NodeId>,
    /// The edges walked.
    pub hops: Vec<PathHop>,
}

impl Path {
    /// Number of hops.
    pub fn len(&self) -> usize {
        self.hops.len()
    }

    /// Whether this is the zero-hop path.
    pub fn is_empty(&self) -> bool {
        self.hops.is_empty()
    }
}

/// Result of [`shortest_path`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathOutcome {
    /// A shortest path within `max_hops`.
    Found(Path),
    /// No path of at most `max_hops` hops exists.
    NotFound,
    /// The budget ran out before the question was settled.
    LimitReached {
        /// Nodes visited when the budget ran out.
        visited: u64,
    },
}

/// Result of [`all_shortest_paths`](super::all_shortest_paths) and [`k_shortest_simple_paths`](super::k_shortest_simple_paths).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PathsOutcome {
    /// The paths, in the documented order; empty when none exists.
    pub paths: Vec<Path>,
    /// More paths exist than were returned.
    pub truncated: bool,
    /// Whether the budget ran out (then `paths` is empty or, for Yen, a prefix).
    pub completion: Completion,
}

/// Where the two sides met.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Meet {
    pub(crate) node: NodeId,
    pub(crate) total: u32,
    /// Depths reached by the forward and backward sides.
    pub(crate) levels: [u32; 2],
    /// The side whose level produced the meeting.
    pub(crate) last: usize,
}

/// The physical directions of each side, and whether `Out` is walked forward on it.
pub(crate) fn side_dirs(direction: Direction) -> [&'static [EdgeDir]; 2] {
    [direction.dirs(), direction.reverse().dirs()]
}
const FORWARD_ON_OUT: [bool; 2] = [true, false];

/// Runs the bidirectional search, leaving both sides' state in `scratch` for reconstruction.
#[allow(clippy::too_many_arguments)]
pub(crate) fn bidirectional<G: Adjacency>(
    graph: &G,
    scratch: &mut Scratch,
    from: NodeId,
    to: NodeId,
    direction: Direction,
    types: &TypeFilter,
    max_hops: u32,
    meter: &mut Meter,
) -> Result<Option<Meet>, Exhausted> {
    let bound = graph.node_bound();
    if from.0 >= bound || to.0 >= bound {
        return Ok(None);
    }
    let (base, sides) = scratch.begin(bound, max_hops);
    let bound = bound as usize;
    let dirs = side_dirs(direction);
    let origin = [from, to];
    let mut levels = [0u32; 2];
    let mut cost = [0u64; 2];
    for s in 0..2 {
        if !meter.visit() {
            return Err(meter.exhausted());
        }
        let root = Link {
            parent: origin[s],
            ..Link::default()
        };
        sides[s].reach(base, origin[s], 0, root);
        sides[s].frontier.push(origin[s]);
        cost[s] = degree_sum(graph, &sides[s].frontier, dirs[s]);
        if from == to {
            return Ok(Some(Meet {
                node: from,
                total: 0,
                levels,
                last: 0,
            }));
        }
    }
    loop {
        if levels[0] + levels[1] >= max_hops
            || sides[0].frontier.is_empty()
            || sides[1].frontier.is_empty()
        {
            return Ok(None);
        }
        let s = if cost[0] <= cost[1] { 0 } else { 1 };
        let [forward, backward] = &mut *sides;
        let (this, other): (&mut Side, &mut Side) = if s == 0 {
            (forward, backward)
        } else {
            (backward, forward)
        };
        expand_level(
            graph,
            this,
            base,
            bound,
            levels[s],
            dirs[s],
            FORWARD_ON_OUT[s],
            types,
            meter,
            FIRST_PARENT,
        )?;
        levels[s] += 1;
        let mut best: Option<(u32, NodeId)> = None;
        for &v in &this.next {
            if let Some(d) = other.depth_of(base, v) {
                let cand = (levels[s] + d, v);
                if best.is_none_or(|b| cand < b) {
                    best = Some(cand);
                }
            }
        }
        this.advance();
        if let Some((total, node)) = best {
            return Ok(Some(Meet {
                node,
                total,
                levels,
                last: s,
            }));
        }
        // Only a level that may be expanded later needs its cost.
        cost[s] = degree_sum(graph, &this.frontier, dirs[s]);
    }
}

/// The hop from `parent` to `child` that rule 1 prefers: the least (`TypeId`, `EdgeId`,
/// forward first) among the edges joining them in the side's directions. The search keeps
/// only the least parent (first to reach the node in a sorted frontier), so the choice among
/// that parent's parallel edges is made here, once per path hop.
fn best_hop<G: Adjacency>(
    graph: &G,
    s: usize,
    direction: Direction,
    types: &TypeFilter,
    parent: NodeId,
    child: NodeId,
    fallback: PathHop,
) -> PathHop {
    let mut best: Option<(TypeId, EdgeId, bool)> = None;
    for &d in side_dirs(direction)[s] {
        let forward = (d == EdgeDir::Out) == FORWARD_ON_OUT[s];
        graph.for_each_edge(parent, d, types, |e| {
            let cand = (e.edge_type, e.edge, !forward);
            if e.neighbor == child && best.is_none_or(|b| cand < b) {
                best = Some(cand);
            }
        });
    }
    best.map_or(fallback, |(edge_type, edge, backward)| PathHop {
        edge,
        edge_type,
        forward: !backward,
    })
}

/// Builds the path through `meet` from the state `bidirectional` left in `scratch`: the
/// forward side's parent chain from `from` to `meet`, then the backward side's to `to`.
fn build_path<G: Adjacency>(
    graph: &G,
    scratch: &mut Scratch,
    direction: Direction,
    types: &TypeFilter,
    meet: NodeId,
) -> Path {
    let (base, sides) = scratch.current();
    let mut nodes = vec![meet];
    let mut hops = Vec::new();
    for (s, side) in sides.iter().enumerate() {
        if s == 1 {
            nodes.reverse();
            hops.reverse();
        }
        let mut cur = meet;
        for _ in 0..side.depth_of(base, meet).unwrap_or(0) {
            let link = side.link[cur.index()];
            let fallback = PathHop {
                edge: link.edge,
                edge_type: link.edge_type,
                forward: link.forward,
            };
            hops.push(best_hop(
                graph,
                s,
                direction,
                types,
                link.parent,
                cur,
                fallback,
            ));
            nodes.push(link.parent);
            cur = link.parent;
        }
    }
    Path { nodes, hops }
}

/// Shortest path with a caller-owned meter (shared by Yen's spur searches).
#[allow(clippy::too_many_arguments)]
pub(crate) fn shortest_metered<G: Adjacency>(
    graph: &G,
    scratch: &mut Scratch,
    from: NodeId,
    to: NodeId,
    direction: Direction,
    types: &TypeFilter,
    max_hops: u32,
    meter: &mut Meter,
) -> Result<Option<Path>, Exhausted> {
    let meet = bidirectional(graph, scratch, from, to, direction, types, max_hops, meter)?;
    Ok(meet.map(|m| build_path(graph, scratch, direction, types, m.node)))
}

/// One shortest path from `from` to `to` of at most `query.max_hops` hops.
///
/// # Complexity
///
/// O(V' + E') time, where V' and E' are the nodes reached and edges read by the two balls
/// (typically far fewer than a one-sided BFS: about twice the square root of it on expander-
/// like graphs), plus O(V') degree-estimate calls. No O(node_bound) work except growing the
/// scratch the first time a larger graph is seen.
pub fn shortest_path<G: Adjacency>(
    graph: &G,
    scratch: &mut Scratch,
    from: NodeId,
    to: NodeId,
    query: &PathQuery,
) -> PathOutcome {
    let mut meter = Meter::new(&query.budget);
    let found = shortest_metered(
        graph,
        scratch,
        from,
        to,
        query.direction,
        &query.types,
        query.max_hops,
        &mut meter,
    );
    match found {
        Ok(Some(path)) => PathOutcome::Found(path),
        Ok(None) => PathOutcome::NotFound,
        Err(e) => PathOutcome::LimitReached { visited: e.visited },
    }
}
