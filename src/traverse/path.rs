//! Shortest paths by bidirectional, level-synchronous BFS.
//!
//! # Algorithm
//!
//! A forward side grows from `from` and a backward side from `to`. Direction `Out` means the
//! forward side follows [`EdgeDir::Out`] and the backward side [`EdgeDir::In`]; `In` is the
//! opposite; `Both` reads both physical directions on both sides. Each step expands one
//! level of the side whose frontier is cheaper (sum of [`Adjacency::degree_estimate`] over
//! its directions; ties go to the forward side), visiting the frontier in ascending node id
//! order. The search stops at the first frontier node with an allowed edge to a node the
//! other side has reached, and finishes only that node's edges. That is a shortest path:
//! before the level the two balls were disjoint, so the distance exceeded the sum of the
//! depths, and any node the other side has reached that is adjacent to this frontier lies on
//! the other side's frontier (an edge into its interior would have met one level earlier),
//! so every meeting in this level has the same total length.
//!
//! # Tie-break rules (independent of the order `for_each_edge` yields edges)
//!
//! 1. *Parent within a level*: a node reached from several nodes of the level being
//!    expanded keeps the least parent `NodeId` (the first in ascending order), and the hop
//!    from that parent is a forward edge if one joins them, else a backward one, and among
//!    those the least (`TypeId`, `EdgeId`); "forward" means the edge is walked from its
//!    source to its target along the path from `from` to `to` (on the forward side that is
//!    an edge found in `Out`, on the backward side one found in `In`). Each side scans its
//!    forward direction first, so the entry that first reached a node names this edge and
//!    the path is built without searching for it.
//! 2. *Meeting*: in the level where the sides meet, the least node `x` of the expanding
//!    frontier that has an allowed edge to the other side's frontier, then the least such
//!    neighbor `y` of `x`. The path is the expanding side's parent chain to `x`, the hop
//!    `x`–`y` under rule 1, and the other side's chain from `y`.
//!
//! Rule 2 is what lets the search stop early: on graphs with hubs the meeting level is
//! usually the most expensive one, and a whole-level rule ("least meeting node") would have
//! to scan every hub of it. [`all_shortest_paths`](super::all_shortest_paths) does expand
//! the meeting level in full (`Settle::Complete`), since it needs every meeting node.
//!
//! # Probing
//!
//! Before scanning the edges of a frontier node whose degree dwarfs |other frontier| ·
//! (allowed type runs) binary searches, and only when the graph answers
//! [`Adjacency::edges_between`] by search ([`Adjacency::INDEXED_EDGES_BETWEEN`]), the search
//! tests that node against every node of the other frontier in ascending order (with
//! [`Adjacency::least_edge_between`], from whichever end of the pair has fewer edges). A
//! joined pair is exactly the meeting rule 2 picks for that node, and the node's edges are
//! not scanned; a fruitless probe costs a fraction of the scan that follows it. When even
//! the whole frontier's look-ups against the other frontier cost a fraction of the level's
//! scan (|this| · |other| · directions · 16 edges, at most half of the degree sum), every
//! node is probed before any edge is scanned, so a meeting in that level scans nothing.
//! Answers are the same either way; a probe that finds the meeting visits fewer nodes, so it
//! can answer where the scan would have run out of budget (never the reverse). The same
//! look-up, from the smaller end, resolves each hop of the finished path (rule 1's edge)
//! that the run entry recorded for it does not name (see `best_hop`), and, after a
//! scan finds a meeting, checks whether a smaller node of the other
//! frontier is joined too.
//!
//! The side that gets expanded depends only on degree estimates, so answers are stable for
//! a given graph value. [`all_shortest_paths`](super::all_shortest_paths) orders paths lexicographically by their hop
//! sequence, each hop compared by (next `NodeId`, `TypeId`, `EdgeId`, forward first).
//!
//! A path of exactly `max_hops` hops is found; a longer one is not. `from == to` yields the
//! zero-hop path. Node ids at or above the graph's bound are not nodes: `NotFound`.

use std::ops::ControlFlow;

use super::Adjacency;
use super::budget::{Budget, Completion, Exhausted, Meter};
use super::marks::{DenseMarks, DenseStamps, Marks, Stamps};
use super::scratch::{
    FIRST_PARENT, Link, Parent, Scratch, Side, degree_sum, expand_level, prefetch_bounds_ahead,
    prefetch_frontier, prefetch_frontier_start, sort_nodes,
};
use crate::graph::{Direction, EdgeDir, EdgeId, NodeId, RunEntry, TypeFilter, TypeId};

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
    /// Whether the sides' marks are in their hash tables (`Side::sparse`) rather than the
    /// per-node arrays.
    pub(crate) sparse: bool,
}

/// The physical directions of each side, in scan order: the forward one first (`Out` on
/// the forward side, `In` on the backward side), so that the first entry naming a node is
/// a forward edge whenever one joins it to its parent (rule 1 then needs no search).
pub(crate) fn side_dirs(direction: Direction) -> [&'static [EdgeDir]; 2] {
    const BACKWARD_BOTH: [EdgeDir; 2] = [EdgeDir::In, EdgeDir::Out];
    let backward = match direction {
        Direction::Both => &BACKWARD_BOTH[..],
        d => d.reverse().dirs(),
    };
    [direction.dirs(), backward]
}
const FORWARD_ON_OUT: [bool; 2] = [true, false];

/// Whether the search tests node pairs for adjacency instead of scanning a frontier node's
/// edges (see "Probing" in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Never: every frontier node's edges are scanned (tests compare it with `Always`).
    #[cfg(test)]
    Off,
    /// When the graph's look-ups are indexed and the pairs are far cheaper than the scan.
    Auto,
    /// Before scanning every frontier node (tests: exercises the probe on small graphs).
    #[cfg(test)]
    Always,
    /// Every node of a level before any of its edges are scanned (tests).
    #[cfg(test)]
    Level,
}

/// How [`bidirectional`] settles the level in which the two sides meet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Settle {
    /// Stop at the first meeting in scan order (rule 2), probing as the policy says.
    First(Probe),
    /// Expand the meeting level in full and pick the least meeting node, leaving both sides'
    /// state complete. [`all_shortest_paths`](super::all_shortest_paths) needs that.
    Complete,
}

/// Factor by which the estimated probe cost must stay below the node's degree (a fruitless
/// probe then adds at most about that share to the scan it precedes).
const PROBE_MARGIN: u64 = 4;
/// Type runs assumed per node and direction when every type is allowed.
const PROBE_TYPES_ALL: u64 = 4;

/// The least degree (summed over the side's directions) at which a frontier node is probed
/// against an opposite frontier of `other_len` nodes, or `None` when no node of a frontier
/// whose degree sum is `level_cost` can reach it. Each of the `other_len · dirs` look-ups
/// costs about a binary search per allowed type run.
fn probe_min_degree<G: Adjacency>(
    probe: Probe,
    other_len: usize,
    dirs: usize,
    types: &TypeFilter,
    level_cost: u64,
) -> Option<u64> {
    match probe {
        #[cfg(test)]
        Probe::Off => None,
        #[cfg(test)]
        Probe::Always => Some(0),
        #[cfg(test)]
        Probe::Level => None,
        Probe::Auto => {
            if !G::INDEXED_EDGES_BETWEEN {
                return None;
            }
            let type_runs = match types {
                TypeFilter::All => PROBE_TYPES_ALL,
                TypeFilter::Only(list) => list.len() as u64,
            };
            // A search over at most `level_cost` edges.
            let search = u64::from(64 - level_cost.leading_zeros()) + 1;
            let min = (other_len as u64)
                .saturating_mul(dirs as u64)
                .saturating_mul(type_runs.max(1))
                .saturating_mul(search)
                .saturating_mul(PROBE_MARGIN);
            (min <= level_cost).then_some(min)
        }
    }
}

/// Edges a frontier scan reads (and mostly writes: stamp, link, next frontier) in about the
/// time of one pair look-up with [`Adjacency::least_edge_between`].
const PROBE_COST_EDGES: u64 = 16;
/// Factor by which the level's probes must stay below its scan (a fruitless level-first
/// probe then adds at most about half to the scan that follows).
const PROBE_LEVEL_MARGIN: u64 = 2;

/// Whether the search tests every node of a frontier of `this_len` nodes against the
/// opposite frontier of `other_len` before scanning any edges: when the meeting is in this
/// level, no edge of it is scanned at all. Chosen when the look-ups cost a fraction of the
/// level's scan (`level_cost` edges) and the graph answers them by search.
fn probe_level_first<G: Adjacency>(
    probe: Probe,
    this_len: usize,
    other_len: usize,
    dirs: usize,
    level_cost: u64,
) -> bool {
    match probe {
        #[cfg(test)]
        Probe::Off | Probe::Always => false,
        #[cfg(test)]
        Probe::Level => true,
        Probe::Auto => {
            G::INDEXED_EDGES_BETWEEN
                && (this_len as u64)
                    .saturating_mul(other_len as u64)
                    .saturating_mul(dirs as u64)
                    .saturating_mul(PROBE_COST_EDGES * PROBE_LEVEL_MARGIN)
                    <= level_cost
        }
    }
}

/// The least node of `other_frontier` (sorted) joined to `x` by an allowed edge in `dirs`,
/// found by look-ups in ascending order.
fn probe_node<G: Adjacency>(
    graph: &G,
    x: NodeId,
    other_frontier: &[NodeId],
    dirs: &[EdgeDir],
    types: &TypeFilter,
) -> Option<NodeId> {
    other_frontier.iter().copied().find(|&y| {
        dirs.iter()
            .any(|&d| graph.least_edge_between(x, y, d, types).is_some())
    })
}

/// The least node of `other_frontier` (in any order) joined to `x` by an allowed edge in
/// `dirs`, given that `first` is one: look-ups of the smaller candidates, in ascending order,
/// when the graph answers them by search and they are far fewer than `x`'s edges, else a
/// rescan of `x`'s edges. `buf` holds the candidates (no sort of the whole frontier).
#[allow(clippy::too_many_arguments)]
fn least_joined<G: Adjacency, S: Stamps>(
    graph: &G,
    x: NodeId,
    first: NodeId,
    other_frontier: &[NodeId],
    other_seen: &S,
    bound: usize,
    base: u32,
    dirs: &[EdgeDir],
    types: &TypeFilter,
    buf: &mut Vec<NodeId>,
) -> NodeId {
    let smaller = other_frontier.iter().filter(|&&y| y < first).count();
    if smaller == 0 {
        return first;
    }
    let degree = degree_sum(graph, &[x], dirs);
    if G::INDEXED_EDGES_BETWEEN
        && probe_min_degree::<G>(Probe::Auto, smaller, dirs.len(), types, degree).is_some()
    {
        buf.clear();
        buf.extend(other_frontier.iter().copied().filter(|&y| y < first));
        buf.sort_unstable();
        for &y in buf.iter() {
            for &d in dirs {
                if graph.least_edge_between(x, y, d, types).is_some() {
                    return y;
                }
            }
        }
        return first;
    }
    let mut least = first;
    for &d in dirs {
        let _ = graph.try_for_each_neighbor_run(x, d, types, |run, _| {
            for &n in run {
                let v = n as usize;
                if v < bound && n < least.0 && other_seen.stamp(v) >= base {
                    least = NodeId(n);
                }
            }
            ControlFlow::Continue(())
        });
    }
    least
}

/// Expands `this.frontier` (depth `level`) one hop, in ascending node order, until a
/// frontier node `x` has an allowed edge to a node `y` the other side has reached (rule 2):
/// then marks the least such `y` as reached by `this` at `level + 1` through `x` and returns
/// it, leaving the rest of the level unexpanded. Returns `None` after expanding the whole
/// level into `this.next` when no such edge exists. `level_cost` is the frontier's degree
/// sum; a node whose degree dwarfs the opposite frontier is first probed with
/// [`Adjacency::edges_between`] (same answer, see the module docs). `sparse` says where both
/// sides keep their marks: the hash tables (`Side::sparse`) or the per-node arrays.
#[allow(clippy::too_many_arguments)]
fn expand_until_meet<G: Adjacency>(
    graph: &G,
    this: &mut Side,
    other: &mut Side,
    sparse: bool,
    base: u32,
    bound: usize,
    level: u32,
    dirs: &[EdgeDir],
    types: &TypeFilter,
    meter: &mut Meter,
    probe: Probe,
    level_cost: u64,
    other_cost: &mut FrontierCost,
) -> Result<Option<NodeId>, Exhausted> {
    if !meter.check_deadline() {
        return Err(meter.exhausted());
    }
    let level_first = probe_level_first::<G>(
        probe,
        this.frontier.len(),
        other.frontier.len(),
        dirs.len(),
        level_cost,
    );
    // After a fruitless level-first probe no node of this level can meet, so the scan only
    // expands and per-node probes would repeat work.
    let min_degree = if level_first {
        None
    } else {
        probe_min_degree::<G>(probe, other.frontier.len(), dirs.len(), types, level_cost)
    };
    let Side {
        seen,
        parent,
        sparse: table,
        frontier,
        next,
        spare,
        ..
    } = this;
    let Side {
        seen: other_seen,
        sparse: other_table,
        frontier: other_frontier,
        spare: other_spare,
        ..
    } = other;
    let lists = Lists {
        frontier,
        next,
        spare,
        other_frontier,
        other_spare,
    };
    let level = LevelPlan {
        base,
        bound,
        current: base.saturating_add(level + 1),
        dirs,
        types,
        level_first,
        min_degree,
    };
    if sparse {
        scan_until_meet(
            graph,
            table,
            &*other_table,
            lists,
            &level,
            meter,
            other_cost,
        )
    } else {
        let mut marks = DenseMarks { seen, parent };
        let other_marks = DenseStamps(other_seen);
        scan_until_meet(
            graph,
            &mut marks,
            &other_marks,
            lists,
            &level,
            meter,
            other_cost,
        )
    }
}

/// The frontier vectors of both sides that one level's scan uses.
struct Lists<'a> {
    frontier: &'a mut Vec<NodeId>,
    next: &'a mut Vec<NodeId>,
    spare: &'a mut Vec<NodeId>,
    other_frontier: &'a mut Vec<NodeId>,
    other_spare: &'a mut Vec<NodeId>,
}

/// What one level's scan was told by [`expand_until_meet`].
struct LevelPlan<'a> {
    base: u32,
    bound: usize,
    /// The stamp of a node reached in this level.
    current: u32,
    dirs: &'a [EdgeDir],
    types: &'a TypeFilter,
    /// Probe every frontier node before scanning any edge.
    level_first: bool,
    /// Probe a frontier node of at least this degree before scanning its edges.
    min_degree: Option<u64>,
}

/// The body of [`expand_until_meet`] over either mark store.
fn scan_until_meet<G: Adjacency, M: Marks<Parent>, S: Stamps>(
    graph: &G,
    marks: &mut M,
    other_marks: &S,
    lists: Lists<'_>,
    plan: &LevelPlan<'_>,
    meter: &mut Meter,
    other_cost: &mut FrontierCost,
) -> Result<Option<NodeId>, Exhausted> {
    let Lists {
        frontier,
        next,
        spare,
        other_frontier,
        other_spare,
    } = lists;
    let LevelPlan {
        base,
        bound,
        current,
        dirs,
        types,
        level_first,
        min_degree,
    } = *plan;
    let mut other_sorted = false;
    sort_nodes(frontier, spare, bound);
    next.clear();
    // (the other side's node y, this side's node x, the entry of x's runs that named y)
    // of the meeting edge.
    let mut meet: Option<(NodeId, NodeId, RunEntry)> = None;
    if level_first {
        sort_other(other_frontier, other_spare, bound, other_cost);
        other_sorted = true;
        for &x in frontier.iter() {
            meet =
                probe_node(graph, x, other_frontier, dirs, types).map(|y| (y, x, RunEntry::NONE));
            if meet.is_some() {
                break;
            }
        }
    }
    prefetch_frontier_start(graph, frontier, dirs);
    for (k, &x) in frontier.iter().enumerate() {
        if meet.is_some() {
            break;
        }
        prefetch_frontier(graph, frontier, k, dirs);
        if let Some(min) = min_degree
            && degree_sum(graph, &[x], dirs) >= min
        {
            if !other_sorted {
                sort_other(other_frontier, other_spare, bound, other_cost);
                other_sorted = true;
            }
            meet =
                probe_node(graph, x, other_frontier, dirs, types).map(|y| (y, x, RunEntry::NONE));
            if meet.is_some() {
                break;
            }
        }
        // The hop's edge is chosen by `best_hop` when the path is built, so the scan reads
        // neighbor ids only and records the parent and the entry that named the node.
        let mut hit: Option<(NodeId, RunEntry)> = None;
        let mut stopped = false;
        for &d in dirs {
            let _ = graph.try_for_each_neighbor_run(x, d, types, |run, entry| {
                for (i, &n) in run.iter().enumerate() {
                    let v = n as usize;
                    if v >= bound || marks.stamp(v) >= base {
                        continue;
                    }
                    if other_marks.stamp(v) >= base {
                        hit = Some((NodeId(n), entry.nth(i)));
                        return ControlFlow::Break(());
                    }
                    if !meter.visit() {
                        stopped = true;
                        return ControlFlow::Break(());
                    }
                    marks.set(
                        v,
                        current,
                        Parent {
                            node: x,
                            via: entry.nth(i),
                        },
                    );
                    next.push(NodeId(n));
                }
                ControlFlow::Continue(())
            });
            if stopped {
                return Err(meter.exhausted());
            }
            if hit.is_some() {
                break;
            }
        }
        if let Some((first, first_via)) = hit {
            let y = least_joined(
                graph,
                x,
                first,
                other_frontier,
                other_marks,
                bound,
                base,
                dirs,
                types,
                other_spare,
            );
            let via = if y == first {
                first_via
            } else {
                RunEntry::NONE
            };
            meet = Some((y, x, via));
            break;
        }
    }
    let Some((y, x, via)) = meet else {
        return Ok(None);
    };
    if !meter.visit() {
        return Err(meter.exhausted());
    }
    marks.set(y.index(), current, Parent { node: x, via });
    Ok(Some(y))
}

/// Sorts the opposite frontier for probing. A partial degree sum covers a prefix that the
/// sort reorders, so it starts over; a complete one stays valid.
fn sort_other(
    frontier: &mut Vec<NodeId>,
    spare: &mut Vec<NodeId>,
    bound: usize,
    cost: &mut FrontierCost,
) {
    sort_nodes(frontier, spare, bound);
    if cost.counted < frontier.len() {
        *cost = FrontierCost::default();
    }
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
    settle: Settle,
) -> Result<Option<Meet>, Exhausted> {
    let bound = graph.node_bound();
    if from.0 >= bound || to.0 >= bound {
        return Ok(None);
    }
    let policy = scratch.sparse_policy();
    // Only the stop-at-first-meeting search knows the table; the complete one keeps both
    // sides' state in the arrays for `all_shortest_paths`.
    let mut sparse = matches!(settle, Settle::First(_)) && policy.tables;
    let (base, sides) = scratch.begin_with(bound, max_hops, !sparse);
    let bound = bound as usize;
    let dirs = side_dirs(direction);
    let origin = [from, to];
    let mut levels = [0u32; 2];
    let mut cost = [FrontierCost::default(); 2];
    if sparse {
        for side in sides.iter_mut() {
            side.sparse.begin(base);
        }
    }
    for s in 0..2 {
        if !meter.visit() {
            return Err(meter.exhausted());
        }
        if sparse {
            let root = Parent {
                node: origin[s],
                via: RunEntry::NONE,
            };
            sides[s].sparse.set(origin[s].index(), base, root);
        } else {
            let root = Link {
                parent: origin[s],
                ..Link::default()
            };
            sides[s].reach(base, origin[s], 0, root);
        }
        sides[s].frontier.push(origin[s]);
        if from == to {
            return Ok(Some(Meet {
                node: from,
                total: 0,
                levels,
                last: 0,
                sparse,
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
        if sparse && sides[0].sparse.len() + sides[1].sparse.len() > policy.max_marks {
            // A large search: the arrays serve it better from here on.
            for side in sides.iter_mut() {
                side.marks_to_arrays(bound);
            }
            sparse = false;
        }
        let s = cheaper_side(graph, sides, &dirs, &mut cost);
        let level_cost = cost[s].sum;
        let o = 1 - s;
        let [forward, backward] = &mut *sides;
        let (this, other): (&mut Side, &mut Side) = if s == 0 {
            (forward, backward)
        } else {
            (backward, forward)
        };
        let meet = match settle {
            Settle::First(probe) => expand_until_meet(
                graph,
                this,
                other,
                sparse,
                base,
                bound,
                levels[s],
                dirs[s],
                types,
                meter,
                probe,
                level_cost,
                &mut cost[o],
            )?,
            Settle::Complete => {
                expand_level(
                    graph,
                    this,
                    false,
                    base,
                    bound,
                    levels[s],
                    dirs[s],
                    FORWARD_ON_OUT[s],
                    types,
                    meter,
                    FIRST_PARENT,
                )?;
                // Every meeting candidate has the same total (see the module docs), so the
                // least node decides.
                this.next
                    .iter()
                    .copied()
                    .filter(|&v| other.depth_of(base, v).is_some())
                    .min()
            }
        };
        levels[s] += 1;
        this.advance();
        if let Some(node) = meet {
            return Ok(Some(Meet {
                node,
                total: levels[s] + levels[o],
                levels,
                last: s,
                sparse,
            }));
        }
        cost[s] = FrontierCost::default();
    }
}

/// A frontier's degree sum, computed lazily: `sum` covers `frontier[..counted]`.
#[derive(Clone, Copy, Debug, Default)]
struct FrontierCost {
    sum: u64,
    counted: usize,
}

/// The side whose frontier has the smaller degree sum (the forward side on a tie), summing
/// only as much of the two frontiers as the comparison needs: the partial sums race, the
/// smaller one is extended, and a complete sum that does not exceed the other's partial
/// sum decides. The chosen side's sum is always complete (the probe policy needs it); the
/// other side's partial sum is kept for the next step, as its frontier has not changed.
/// A meeting level usually ends the search before the unchosen frontier is ever summed in
/// full, so this saves a degree look-up per node of it.
fn cheaper_side<G: Adjacency>(
    graph: &G,
    sides: &[Side; 2],
    dirs: &[&[EdgeDir]; 2],
    cost: &mut [FrontierCost; 2],
) -> usize {
    for s in 0..2 {
        if cost[s].counted == 0 {
            prefetch_frontier_start(graph, &sides[s].frontier, dirs[s]);
        }
    }
    loop {
        let complete = [0, 1].map(|s| cost[s].counted >= sides[s].frontier.len());
        match complete {
            [true, true] => return if cost[0].sum <= cost[1].sum { 0 } else { 1 },
            [true, false] if cost[0].sum <= cost[1].sum => return 0,
            [false, true] if cost[1].sum < cost[0].sum => return 1,
            _ => {}
        }
        let s = match complete {
            [false, false] => usize::from(cost[1].sum < cost[0].sum),
            [true, _] => 1,
            [false, _] => 0,
        };
        let v = sides[s].frontier[cost[s].counted];
        // The bounds of a node some places ahead start loading now, so that the cache
        // misses of consecutive nodes overlap instead of each waiting for the last.
        prefetch_bounds_ahead(graph, &sides[s].frontier, cost[s].counted, dirs[s]);
        cost[s].sum += degree_sum(graph, &[v], dirs[s]);
        cost[s].counted += 1;
    }
}

/// The hop from `parent` to `child` that rule 1 prefers: a forward edge if one joins them,
/// else a backward one, and within that the least (`TypeId`, `EdgeId`). The search keeps
/// only the least parent (first to reach the node in a sorted frontier), so the choice among
/// that parent's parallel edges is made here, once per path hop.
///
/// `via` is the entry of the parent's runs that first named `child`. The side scans its
/// forward direction first (see [`side_dirs`]), so when the graph can read that entry's
/// edge ([`Adjacency::run_entry_edge`]) it is the hop: the least edge in its direction, and
/// if that direction is backward, no forward edge joins the two (the scan would have named
/// `child` there first). The edge is resolved from the position in hand, with no search.
/// Otherwise (a graph that cannot name entries, a meeting found by a probe) the forward
/// direction is searched, then the backward one.
fn best_hop<G: Adjacency>(
    graph: &G,
    s: usize,
    direction: Direction,
    types: &TypeFilter,
    parent: NodeId,
    child: NodeId,
    via: RunEntry,
) -> PathHop {
    let dirs = side_dirs(direction)[s];
    let hop = |d: EdgeDir, edge_type: TypeId, edge: EdgeId| PathHop {
        edge,
        edge_type,
        forward: (d == EdgeDir::Out) == FORWARD_ON_OUT[s],
    };
    if let Some((d, t, e)) = graph.run_entry_edge(via)
        && dirs.contains(&d)
    {
        return hop(d, t, e);
    }
    for &d in dirs {
        if let Some(e) = graph.least_edge_between(parent, child, d, types) {
            return hop(d, e.edge_type, e.edge);
        }
    }
    // The search linked `child` to `parent` through an allowed edge in these directions,
    // so only a damaged graph (neighbor ids that disagree with the edges around them) has
    // none; the hop then names no edge and no type (ids no graph hands out).
    PathHop {
        edge: EdgeId(u64::MAX),
        edge_type: TypeId(u16::MAX),
        forward: s == 0,
    }
}

/// Builds the path through `meet` from the state `bidirectional` left in `scratch`: the
/// forward side's parent chain from `from` to `meet`, then the backward side's to `to`.
fn build_path<G: Adjacency>(
    graph: &G,
    scratch: &mut Scratch,
    direction: Direction,
    types: &TypeFilter,
    meet: Meet,
) -> Path {
    let (base, sides) = scratch.current();
    let Meet {
        node: meet, sparse, ..
    } = meet;
    let mut nodes = vec![meet];
    let mut hops = Vec::new();
    for (s, side) in sides.iter().enumerate() {
        if s == 1 {
            nodes.reverse();
            hops.reverse();
        }
        let depth = if sparse {
            side.sparse.stamp(meet.index()).checked_sub(base)
        } else {
            side.depth_of(base, meet)
        };
        let mut cur = meet;
        for _ in 0..depth.unwrap_or(0) {
            let Parent { node: parent, via } = if sparse {
                side.sparse.parent(cur.index())
            } else {
                side.parent[cur.index()]
            };
            hops.push(best_hop(graph, s, direction, types, parent, cur, via));
            nodes.push(parent);
            cur = parent;
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
        graph,
        scratch,
        from,
        to,
        direction,
        types,
        max_hops,
        meter,
        Settle::First(probe),
    )?;
    Ok(meet.map(|m| build_path(graph, scratch, direction, types, m)))
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
