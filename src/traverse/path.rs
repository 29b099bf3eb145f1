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
//! # Probing the meeting level
//!
//! In the level where the two sides first meet, every meeting candidate has the same total
//! length (an edge from the expanding frontier into the other side's interior would have
//! produced an earlier meeting), and the candidates are exactly the nodes of the other
//! side's frontier joined to the expanding frontier by an allowed edge. So before scanning
//! a level whose degree sum dwarfs |frontier| · |other frontier| adjacency tests, and only
//! when the graph answers [`Adjacency::edges_between`] by search
//! ([`Adjacency::INDEXED_EDGES_BETWEEN`]), the search first tests those pairs. If some pair
//! is joined, the meeting node is the least such node of the other frontier and its parent
//! the least node of this frontier joined to it — exactly what the full level would pick
//! under rule 1 and 2 — and the level is not scanned; otherwise the level is expanded as
//! usual. Answers are the same either way; a probe that finds the meeting visits only the
//! meeting node, so it can answer where the full level would have run out of budget (never
//! the reverse).
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

/// Whether the search tests frontier pairs for adjacency before expanding a level (see
/// "Probing the meeting level" in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Never: every level is expanded in full, so the meeting level's state (both sides'
    /// frontiers and marks) is complete. [`all_shortest_paths`](super::all_shortest_paths)
    /// needs that.
    Off,
    /// When the graph's look-ups are indexed and the pairs are far cheaper than the level.
    Auto,
    /// Before every level (tests: exercises the probe on small graphs).
    #[cfg(test)]
    Always,
}

/// Factor by which the estimated probe cost must stay below the level's degree sum (a
/// fruitless probe then costs at most about as much as the level it precedes).
const PROBE_MARGIN: u64 = 1;
/// Type runs assumed per node and direction when every type is allowed.
const PROBE_TYPES_ALL: u64 = 4;

/// Whether to probe before expanding a frontier of `f_len` nodes (degree sum `cost`) against
/// an opposite frontier of `b_len` nodes: each of the `f_len · b_len · dirs` look-ups costs
/// about a binary search per allowed type run.
fn probe_pays<G: Adjacency>(
    probe: Probe,
    f_len: usize,
    b_len: usize,
    dirs: usize,
    types: &TypeFilter,
    cost: u64,
) -> bool {
    match probe {
        Probe::Off => false,
        #[cfg(test)]
        Probe::Always => true,
        Probe::Auto => {
            if !G::INDEXED_EDGES_BETWEEN {
                return false;
            }
            let type_runs = match types {
                TypeFilter::All => PROBE_TYPES_ALL,
                TypeFilter::Only(list) => list.len() as u64,
            };
            let search = u64::from(64 - cost.leading_zeros()) + 1;
            let pairs = (f_len as u64)
                .saturating_mul(b_len as u64)
                .saturating_mul(dirs as u64);
            pairs
                .saturating_mul(type_runs.max(1))
                .saturating_mul(search)
                .saturating_mul(PROBE_MARGIN)
                <= cost
        }
    }
}

/// Tests every pair of `this.frontier` (depth `level`) and `other.frontier` for an allowed
/// edge, in ascending (other node, this node) order, before `this` expands its level. On the
/// first joined pair, marks the other-side node as reached by `this` at `level + 1` through
/// the least joined node of `this.frontier` and returns it: the meeting node the full level
/// would pick (see the module docs). Both frontiers end up sorted, which the expansion that
/// follows a fruitless probe would do anyway.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn probe_meeting<G: Adjacency>(
    graph: &G,
    this: &mut Side,
    other: &mut Side,
    base: u32,
    level: u32,
    dirs: &[EdgeDir],
    forward_on_out: bool,
    types: &TypeFilter,
    meter: &mut Meter,
) -> Result<Option<NodeId>, Exhausted> {
    if !meter.check_deadline() {
        return Err(meter.exhausted());
    }
    this.frontier.sort_unstable();
    other.frontier.sort_unstable();
    let mut found: Option<(NodeId, Link)> = None;
    'pairs: for &v in &other.frontier {
        for &u in &this.frontier {
            for &d in dirs {
                let forward = (d == EdgeDir::Out) == forward_on_out;
                graph.edges_between(u, v, d, types, |e| {
                    if found.is_none() {
                        let link = Link {
                            parent: u,
                            seed: this.link[u.index()].seed,
                            edge: e.edge,
                            edge_type: e.edge_type,
                            forward,
                        };
                        found = Some((v, link));
                    }
                });
                if found.is_some() {
                    break 'pairs;
                }
            }
        }
    }
    let Some((v, link)) = found else {
        return Ok(None);
    };
    if !meter.visit() {
        return Err(meter.exhausted());
    }
    this.reach(base, v, level + 1, link);
    Ok(Some(v))
}

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
    probe: Probe,
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
        let o = 1 - s;
        if probe_pays::<G>(
            probe,
            this.frontier.len(),
            other.frontier.len(),
            dirs[s].len(),
            types,
            cost[s],
        ) && let Some(node) = probe_meeting(
            graph,
            this,
            other,
            base,
            levels[s],
            dirs[s],
            FORWARD_ON_OUT[s],
            types,
            meter,
        )? {
            levels[s] += 1;
            return Ok(Some(Meet {
                node,
                total: levels[s] + levels[o],
                levels,
                last: s,
            }));
        }
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
        graph.edges_between(parent, child, d, types, |e| {
            let cand = (e.edge_type, e.edge, !forward);
            if best.is_none_or(|b| cand < b) {
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
    shortest_probed(
        graph,
        scratch,
        from,
        to,
        direction,
        types,
        max_hops,
        meter,
        Probe::Auto,
    )
}

/// [`shortest_metered`] with an explicit probe policy (tests compare the policies).
#[allow(clippy::too_many_arguments)]
pub(crate) fn shortest_probed<G: Adjacency>(
    graph: &G,
    scratch: &mut Scratch,
    from: NodeId,
    to: NodeId,
    direction: Direction,
    types: &TypeFilter,
    max_hops: u32,
    meter: &mut Meter,
    probe: Probe,
) -> Result<Option<Path>, Exhausted> {
    let meet = bidirectional(
        graph, scratch, from, to, direction, types, max_hops, meter, probe,
    )?;
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
