//! Key-level queries: the one-call API a host application starts from.
//!
//! The kernels in [`crate::traverse`] work on dense [`NodeId`]s with caller-owned scratch
//! memory, which is what a hot loop wants. This module sits above both the database and the
//! kernels (it is the only place that joins them) and answers the common questions by
//! string key in one call:
//!
//! ```no_run
//! # fn main() -> hopgraph::Result<()> {
//! use hopgraph::{Database, PathSpec};
//! let db = Database::open("memory.hg")?;
//! let path = db.shortest_path("outage", "deploy", &PathSpec::new().types(["caused_by"]).max_hops(6))?;
//! if let Some(p) = path { println!("{}", p.keys().join(" -> ")); }
//! # Ok(()) }
//! ```
//!
//! Scratch memory is kept per thread and reused across calls (the kernels stamp their
//! visit marks per query, so reuse costs nothing per call). It also holds the one
//! [`Adjacency`] implementation of [`Snapshot`], so that `db` never depends on `traverse`.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use crate::db::{Database, Snapshot};
use crate::error::{Error, Result};
use crate::graph::{Direction, EdgeDir, EdgeId, EdgeRef, NodeId, RunEntry, TypeFilter, TypeId};
use crate::traverse::{
    self, Adjacency, Budget, Completion, ElementFilter, PathOutcome, PathQuery, Scratch,
};

thread_local! {
    /// One traversal scratch per thread for the key-level calls.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::new());
}

/// Runs a kernel call on a snapshot, or on its view as of a moment when one is given:
/// `on_view!(snap, as_of, |g| kernel::shortest_path(g, ...))` (`$g` names the graph
/// inside the call; the two arms are two monomorphized kernel calls, so a read without a
/// moment pays nothing for the view).
#[macro_export]
macro_rules! on_view {
    ($snap:expr, $as_of:expr, |$g:ident| $call:expr) => {
        match $as_of {
            None => {
                let $g = $snap;
                $call
            }
            Some(t) => {
                let view = $snap.as_of(t);
                let $g = &view;
                $call
            }
        }
    };
}

/// Runs `f` with this thread's scratch. A re-entrant call (from inside `f`) gets a fresh
/// scratch instead of panicking on the borrow.
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => f(&mut s),
        Err(_) => f(&mut Scratch::new()),
    })
}

/// What a key-level path query may use: edge types, direction, hop and work limits.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PathSpec {
    /// Edge type names a path may use; empty: every type.
    pub types: Vec<String>,
    /// Which edges a path may follow, as seen walking from the first key to the second.
    pub direction: Direction,
    /// Longest path (in hops) to look for.
    pub max_hops: u32,
    /// Most nodes the search may visit before it gives up with [`Error::LimitReached`].
    pub visited_max: u64,
    /// Longest the search may run before it gives up with [`Error::LimitReached`].
    pub timeout: Option<Duration>,
    /// Read the graph as of this moment (ms since the Unix epoch): only nodes and edges
    /// valid then exist (see [`Snapshot::as_of`]); `None`: everything.
    pub as_of: Option<u64>,
}

impl Default for PathSpec {
    fn default() -> PathSpec {
        PathSpec {
            types: Vec::new(),
            direction: Direction::Both,
            max_hops: PathSpec::MAX_HOPS_DEFAULT,
            visited_max: Budget::VISITED_MAX_DEFAULT,
            timeout: None,
            as_of: None,
        }
    }
}

impl PathSpec {
    /// Default [`PathSpec::max_hops`].
    pub const MAX_HOPS_DEFAULT: u32 = 10;

    /// Every edge type, both directions, at most 10 hops.
    pub fn new() -> PathSpec {
        PathSpec::default()
    }

    /// Only edges of these types (by name). A name no edge has matches nothing.
    #[must_use]
    pub fn types<S: Into<String>>(mut self, types: impl IntoIterator<Item = S>) -> PathSpec {
        self.types = types.into_iter().map(Into::into).collect();
        self
    }

    /// Which edges to follow (default [`Direction::Both`]).
    #[must_use]
    pub fn direction(mut self, direction: Direction) -> PathSpec {
        self.direction = direction;
        self
    }

    /// Longest path in hops (default 10).
    #[must_use]
    pub fn max_hops(mut self, max_hops: u32) -> PathSpec {
        self.max_hops = max_hops;
        self
    }

    /// Most nodes the search may visit (default [`Budget::VISITED_MAX_DEFAULT`]).
    #[must_use]
    pub fn visited_max(mut self, visited_max: u64) -> PathSpec {
        self.visited_max = visited_max;
        self
    }

    /// Longest the search may run.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> PathSpec {
        self.timeout = Some(timeout);
        self
    }

    /// Reads as of `t` (ms since the Unix epoch): only nodes and edges valid at `t`
    /// exist for the query; an endpoint or seed not valid then is `NodeNotFound`.
    #[must_use]
    pub fn as_of(mut self, t: u64) -> PathSpec {
        self.as_of = Some(t);
        self
    }

    fn budget(&self) -> Budget {
        Budget {
            visited_max: self.visited_max,
            deadline: self.timeout.map(|t| Instant::now() + t),
        }
    }

    fn type_filter(&self, snap: &Snapshot) -> TypeFilter {
        if self.types.is_empty() {
            TypeFilter::All
        } else {
            snap.type_filter(&self.types)
        }
    }
}

/// One hop of a [`FoundPath`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PathStep {
    /// The edge walked.
    pub edge: EdgeId,
    /// Its type name.
    pub edge_type: String,
    /// Whether the edge was walked from its source to its target.
    pub forward: bool,
}

/// A shortest path between two keys: `nodes[i]` and `nodes[i + 1]` are joined by
/// `steps[i]`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FoundPath {
    /// The nodes from the first key to the second, both included: (id, key).
    pub nodes: Vec<(NodeId, String)>,
    /// The hops, one fewer than the nodes.
    pub steps: Vec<PathStep>,
}

impl FoundPath {
    /// The keys along the path.
    pub fn keys(&self) -> Vec<&str> {
        self.nodes.iter().map(|(_, k)| k.as_str()).collect()
    }

    /// Number of hops.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether this is the zero-hop path (both keys name the same node).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

/// What [`Snapshot::all_shortest_paths`] found: paths with their keys ([`FoundPath`]), or,
/// from [`Snapshot::all_shortest_path_ids`], the kernel's id-level
/// [`Path`](crate::kernel::Path)s.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShortestPaths<P = FoundPath> {
    /// The paths, all of the same (shortest) length; empty when there is none.
    pub paths: Vec<P>,
    /// More shortest paths exist than were returned.
    pub truncated: bool,
}

/// One node reached by [`Snapshot::expand_from`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Expanded {
    /// The node.
    pub node: NodeId,
    /// Its key.
    pub key: String,
    /// The seed it was reached from (the nearest; ties: the earlier seed).
    pub seed: String,
    /// Hops from that seed (at least 1).
    pub hops: u32,
    /// The last edge walked.
    pub edge: EdgeId,
    /// Its type name.
    pub edge_type: String,
    /// Whether the last edge was walked from its source to its target.
    pub forward: bool,
}

/// What [`Snapshot::expand_from`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Expansion {
    /// Reached nodes in (hops, seed, node id) order.
    pub nodes: Vec<Expanded>,
    /// More nodes were within reach than the limit.
    pub truncated: bool,
}

/// One node reached by [`Snapshot::traverse_from`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Visited {
    /// The node.
    pub node: NodeId,
    /// Its key.
    pub key: String,
    /// Hops from the start.
    pub depth: u32,
    /// The hops from the start to the node.
    pub steps: Vec<PathStep>,
}

/// What [`Snapshot::traverse_from`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Traversal {
    /// Reached nodes (the start excluded) in (depth, node id) order.
    pub visits: Vec<Visited>,
    /// More nodes were within reach than the limit.
    pub truncated: bool,
}

/// A node one hop away, as [`Snapshot::neighbors_of`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NeighborOf {
    /// The node at the other end.
    pub node: NodeId,
    /// Its key.
    pub key: String,
    /// The edge.
    pub edge: EdgeId,
    /// The edge's type name.
    pub edge_type: String,
    /// Whether the edge leaves the queried node.
    pub outgoing: bool,
}

impl Snapshot {
    fn require(&self, key: &str) -> Result<NodeId> {
        self.node_id(key).ok_or_else(|| Error::NodeNotFound {
            key: key.to_owned(),
        })
    }

    /// The node with `key`, which must be valid at `as_of` when given.
    fn require_at(&self, key: &str, as_of: Option<u64>) -> Result<NodeId> {
        let id = self.require(key)?;
        match as_of {
            Some(t) if !self.node_valid_at(id, t) => Err(Error::NodeNotFound {
                key: key.to_owned(),
            }),
            _ => Ok(id),
        }
    }

    /// `id` found for `key`, checked valid at `as_of` when given.
    fn valid_or_missing(
        &self,
        id: Option<NodeId>,
        key: &str,
        as_of: Option<u64>,
    ) -> Result<NodeId> {
        match id {
            Some(id) if as_of.is_none_or(|t| self.node_valid_at(id, t)) => Ok(id),
            _ => Err(Error::NodeNotFound {
                key: key.to_owned(),
            }),
        }
    }

    fn key_of(&self, id: NodeId) -> Result<String> {
        match self.node_label(id)? {
            Some((key, _)) => Ok(key.to_owned()),
            // A path only holds live nodes of this snapshot.
            None => Err(Error::NodeNotFound {
                key: format!("#{}", id.0),
            }),
        }
    }

    /// A shortest path from `from` to `to` (by key) within `spec`; `None` when no path of at
    /// most `spec.max_hops` hops exists. Ties are broken deterministically (least
    /// parent, least (type, edge) hop, least meeting node; the rules are stated in DESIGN.md,
    /// "Traversal kernel"), so the same graph always gives the same path.
    ///
    /// # Errors
    /// `NodeNotFound` for an unknown key; `LimitReached` when the search ran out of its
    /// visit or time budget before it could answer; corruption of a record read.
    pub fn shortest_path(
        &self,
        from: &str,
        to: &str,
        spec: &PathSpec,
    ) -> Result<Option<FoundPath>> {
        match with_scratch(|s| self.shortest_path_ids(s, from, to, spec))? {
            Some(p) => Ok(Some(self.found_path(&p)?)),
            None => Ok(None),
        }
    }

    /// [`Snapshot::shortest_path`] with the path left as node and edge ids, and the
    /// caller's [`Scratch`]: for a caller that labels the path itself (borrowing keys and
    /// titles from the snapshot with [`Snapshot::node_label`], type names with
    /// [`Snapshot::type_name`]) in a loop of many queries. Keys, validity at
    /// `spec.as_of`, the type filter and the budget are resolved exactly as there; the same
    /// graph gives the same path.
    ///
    /// ```
    /// use hopgraph::kernel::Scratch;
    /// use hopgraph::{Database, EdgeProps, PathSpec, WriteBatch};
    ///
    /// # fn main() -> hopgraph::Result<()> {
    /// # let tmp = std::env::temp_dir().join(format!("hopgraph-path-ids-doc-{}", std::process::id()));
    /// let db = Database::open(&tmp)?;
    /// let mut batch = WriteBatch::new();
    /// batch
    ///     .link_creating_missing("a", "next", "b", EdgeProps::default())
    ///     .link_creating_missing("b", "next", "c", EdgeProps::default());
    /// db.commit(batch)?;
    ///
    /// let snap = db.snapshot();
    /// let mut scratch = Scratch::new(); // reused by every query of a loop
    /// let path = snap.shortest_path_ids(&mut scratch, "a", "c", &PathSpec::new())?;
    /// let path = path.expect("a reaches c");
    /// assert_eq!(path.len(), 2);
    /// let (key, _title) = snap.node_label(path.nodes[1])?.expect("a live node");
    /// assert_eq!(key, "b");
    /// assert_eq!(snap.type_name(path.hops[0].edge_type), Some("next"));
    /// // An unknown key is a typed error naming it.
    /// let err = snap.shortest_path_ids(&mut scratch, "a", "nope", &PathSpec::new());
    /// assert!(matches!(err, Err(hopgraph::Error::NodeNotFound { key }) if key == "nope"));
    /// # drop(snap); drop(db); std::fs::remove_dir_all(&tmp).ok();
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Snapshot::shortest_path`]: `NodeNotFound` names the first unknown key (`from`
    /// before `to`); `LimitReached` when the budget ran out.
    ///
    /// # Complexity
    /// Bidirectional BFS: O(edges examined) within `spec.max_hops`, bounded by the budget.
    pub fn shortest_path_ids(
        &self,
        scratch: &mut Scratch,
        from: &str,
        to: &str,
        spec: &PathSpec,
    ) -> Result<Option<traverse::Path>> {
        let (a, b, query) = self.path_query(from, to, spec)?;
        match on_view!(self, spec.as_of, |g| traverse::shortest_path(
            g, scratch, a, b, &query
        )) {
            PathOutcome::Found(p) => Ok(Some(p)),
            PathOutcome::NotFound => Ok(None),
            PathOutcome::LimitReached { visited } => Err(Error::LimitReached { visited }),
        }
    }

    /// The endpoints of a path query (both keys at once: their key-index reads overlap;
    /// each must be valid at `spec.as_of`) and the kernel query `spec` makes.
    fn path_query(
        &self,
        from: &str,
        to: &str,
        spec: &PathSpec,
    ) -> Result<(NodeId, NodeId, PathQuery)> {
        let [a, b] = self.node_id_pair(from, to);
        let a = self.valid_or_missing(a, from, spec.as_of)?;
        let b = self.valid_or_missing(b, to, spec.as_of)?;
        let query = PathQuery {
            direction: spec.direction,
            types: spec.type_filter(self),
            max_hops: spec.max_hops,
            budget: spec.budget(),
        };
        Ok((a, b, query))
    }

    /// Every shortest path from `from` to `to` within `spec`, at most `max_paths` of them
    /// in a deterministic order (hop by hop: next node id, type, edge; see
    /// [`kernel::all_shortest_paths`](crate::kernel::all_shortest_paths)); parallel edges
    /// make distinct paths. Empty when no path of at most `spec.max_hops` hops exists.
    ///
    /// # Errors
    /// As [`Snapshot::shortest_path`].
    pub fn all_shortest_paths(
        &self,
        from: &str,
        to: &str,
        spec: &PathSpec,
        max_paths: usize,
    ) -> Result<ShortestPaths> {
        let found = with_scratch(|s| self.all_shortest_path_ids(s, from, to, spec, max_paths))?;
        Ok(ShortestPaths {
            paths: found
                .paths
                .iter()
                .map(|p| self.found_path(p))
                .collect::<Result<_>>()?,
            truncated: found.truncated,
        })
    }

    /// [`Snapshot::all_shortest_paths`] with the paths left as node and edge ids, and the
    /// caller's [`Scratch`] (see [`Snapshot::shortest_path_ids`] for why).
    ///
    /// ```
    /// use hopgraph::kernel::Scratch;
    /// use hopgraph::{Database, EdgeProps, PathSpec, WriteBatch};
    ///
    /// # fn main() -> hopgraph::Result<()> {
    /// # let tmp = std::env::temp_dir().join(format!("hopgraph-all-ids-doc-{}", std::process::id()));
    /// let db = Database::open(&tmp)?;
    /// let mut batch = WriteBatch::new();
    /// batch
    ///     .link_creating_missing("a", "via", "b1", EdgeProps::default())
    ///     .link_creating_missing("a", "via", "b2", EdgeProps::default())
    ///     .link_creating_missing("b1", "via", "c", EdgeProps::default())
    ///     .link_creating_missing("b2", "via", "c", EdgeProps::default());
    /// db.commit(batch)?;
    ///
    /// let snap = db.snapshot();
    /// let mut scratch = Scratch::new();
    /// let spec = PathSpec::new().max_hops(4);
    /// let all = snap.all_shortest_path_ids(&mut scratch, "a", "c", &spec, 16)?;
    /// assert_eq!(all.paths.len(), 2);
    /// assert!(!all.truncated);
    /// let one = snap.all_shortest_path_ids(&mut scratch, "a", "c", &spec, 1)?;
    /// assert_eq!((one.paths.len(), one.truncated), (1, true));
    /// # drop(snap); drop(db); std::fs::remove_dir_all(&tmp).ok();
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Snapshot::shortest_path_ids`] (the kernel returns no path when its budget ran
    /// out, so `LimitReached` loses nothing).
    ///
    /// # Complexity
    /// See [`kernel::all_shortest_paths`](crate::kernel::all_shortest_paths).
    pub fn all_shortest_path_ids(
        &self,
        scratch: &mut Scratch,
        from: &str,
        to: &str,
        spec: &PathSpec,
        max_paths: usize,
    ) -> Result<ShortestPaths<traverse::Path>> {
        let (a, b, query) = self.path_query(from, to, spec)?;
        let outcome = on_view!(self, spec.as_of, |g| traverse::all_shortest_paths(
            g, scratch, a, b, &query, max_paths
        ));
        if let Completion::LimitReached { visited } = outcome.completion {
            return Err(Error::LimitReached { visited });
        }
        Ok(ShortestPaths {
            paths: outcome.paths,
            truncated: outcome.truncated,
        })
    }

    /// The nodes within `spec.max_hops` hops of any of `seeds` (by key) over `spec`'s
    /// types and direction, each reported once, from the nearest seed (ties: the earlier
    /// seed), in (hops, seed, node id) order; the seeds themselves are not reported. At
    /// most `limit` results.
    ///
    /// # Errors
    /// `NodeNotFound` for an unknown seed; `LimitReached` when the visit or time budget
    /// ran out; corruption of a record read.
    pub fn expand_from<S: AsRef<str>>(
        &self,
        seeds: &[S],
        spec: &PathSpec,
        limit: usize,
    ) -> Result<Expansion> {
        let ids = seeds
            .iter()
            .map(|k| self.require_at(k.as_ref(), spec.as_of))
            .collect::<Result<Vec<_>>>()?;
        let types = spec.type_filter(self);
        let mut query = traverse::ExpandQuery::new(&ids, spec.max_hops, spec.direction);
        query.types = &types;
        query.limit = limit;
        query.budget = spec.budget();
        let outcome =
            with_scratch(|s| on_view!(self, spec.as_of, |g| traverse::expand(g, s, &query)));
        if let Completion::LimitReached { visited } = outcome.completion {
            return Err(Error::LimitReached { visited });
        }
        let nodes = outcome
            .results
            .iter()
            .map(|r| {
                Ok(Expanded {
                    node: r.node,
                    key: self.key_of(r.node)?,
                    seed: seeds
                        .get(r.seed)
                        .map(|k| k.as_ref().to_owned())
                        .unwrap_or_default(),
                    hops: r.hop,
                    edge: r.edge,
                    edge_type: self.type_name(r.edge_type).unwrap_or_default().to_owned(),
                    forward: r.forward,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Expansion {
            nodes,
            truncated: outcome.truncated,
        })
    }

    /// Breadth-first traversal from `start` (by key) up to `spec.max_hops` hops over
    /// `spec`'s types and direction: the first `limit` nodes reached (the start excluded)
    /// in (depth, node id) order, each with the path taken.
    ///
    /// # Errors
    /// As [`Snapshot::expand_from`].
    pub fn traverse_from(&self, start: &str, spec: &PathSpec, limit: usize) -> Result<Traversal> {
        let id = self.require_at(start, spec.as_of)?;
        let types = spec.type_filter(self);
        let budget = spec.budget();
        let outcome = with_scratch(|s| {
            on_view!(self, spec.as_of, |g| traverse::traverse(
                g,
                s,
                id,
                spec.direction,
                &types,
                spec.max_hops,
                limit,
                &budget,
            ))
        });
        if let Completion::LimitReached { visited } = outcome.completion {
            return Err(Error::LimitReached { visited });
        }
        let visits = outcome
            .visits
            .iter()
            .map(|v| {
                Ok(Visited {
                    node: v.node,
                    key: self.key_of(v.node)?,
                    depth: v.depth,
                    steps: v
                        .path
                        .iter()
                        .map(|&(edge, t, forward)| PathStep {
                            edge,
                            edge_type: self.type_name(t).unwrap_or_default().to_owned(),
                            forward,
                        })
                        .collect(),
                })
            })
            .collect::<Result<_>>()?;
        Ok(Traversal {
            visits,
            truncated: outcome.truncated,
        })
    }

    /// A kernel path with its node keys and type names.
    fn found_path(&self, path: &traverse::Path) -> Result<FoundPath> {
        let nodes = path
            .nodes
            .iter()
            .map(|&id| Ok((id, self.key_of(id)?)))
            .collect::<Result<Vec<_>>>()?;
        let steps = path
            .hops
            .iter()
            .map(|h| PathStep {
                edge: h.edge,
                edge_type: self.type_name(h.edge_type).unwrap_or_default().to_owned(),
                forward: h.forward,
            })
            .collect();
        Ok(FoundPath { nodes, steps })
    }

    /// The neighbors of `key` over edges of `types` (by name; empty: all) in `direction`,
    /// ordered by (edge type, neighbor id, edge id).
    ///
    /// # Errors
    /// `NodeNotFound` for an unknown key; corruption of a record read.
    pub fn neighbors_of<S: AsRef<str>>(
        &self,
        key: &str,
        direction: Direction,
        types: &[S],
    ) -> Result<Vec<NeighborOf>> {
        self.neighbors_of_at(key, direction, types, None)
    }

    /// [`Snapshot::neighbors_of`] as of `as_of` when given (ms since the Unix epoch): only
    /// edges and neighbors valid then; `key` itself must be (else `NodeNotFound`).
    ///
    /// # Errors
    /// As [`Snapshot::neighbors_of`].
    pub fn neighbors_of_at<S: AsRef<str>>(
        &self,
        key: &str,
        direction: Direction,
        types: &[S],
        as_of: Option<u64>,
    ) -> Result<Vec<NeighborOf>> {
        let id = self.require_at(key, as_of)?;
        let filter = if types.is_empty() {
            TypeFilter::All
        } else {
            self.type_filter(types)
        };
        let view = as_of.map(|t| self.as_of(t));
        self.neighbors(id, direction, &filter)
            .into_iter()
            .filter(|n| {
                view.as_ref()
                    .is_none_or(|v| v.filter().edge_ok(n.edge) && v.filter().node_ok(n.node))
            })
            .map(|n| {
                Ok(NeighborOf {
                    node: n.node,
                    key: self.key_of(n.node)?,
                    edge: n.edge,
                    edge_type: self.type_name(n.edge_type).unwrap_or_default().to_owned(),
                    outgoing: n.dir == EdgeDir::Out,
                })
            })
            .collect()
    }
}

impl Database {
    /// [`Snapshot::shortest_path`] on a fresh snapshot.
    ///
    /// # Errors
    /// As [`Snapshot::shortest_path`].
    pub fn shortest_path(
        &self,
        from: &str,
        to: &str,
        spec: &PathSpec,
    ) -> Result<Option<FoundPath>> {
        self.snapshot().shortest_path(from, to, spec)
    }

    /// [`Snapshot::neighbors_of`] on a fresh snapshot.
    ///
    /// # Errors
    /// As [`Snapshot::neighbors_of`].
    pub fn neighbors_of<S: AsRef<str>>(
        &self,
        key: &str,
        direction: Direction,
        types: &[S],
    ) -> Result<Vec<NeighborOf>> {
        self.snapshot().neighbors_of(key, direction, types)
    }
}

/// The kernels read a snapshot through this: segments plus delta, by node id.
impl Adjacency for Snapshot {
    #[inline]
    fn node_bound(&self) -> u32 {
        self.state.node_bound
    }

    #[inline]
    fn for_each_edge<F: FnMut(EdgeRef)>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        f: F,
    ) {
        self.state.for_each_edge(node, dir, types, f)
    }

    #[inline]
    fn try_for_each_edge<F: FnMut(EdgeRef) -> std::ops::ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        f: F,
    ) -> std::ops::ControlFlow<()> {
        self.state.try_for_each_edge(node, dir, types, f)
    }

    #[inline]
    fn try_for_each_neighbor_run<F: FnMut(&[u32], RunEntry) -> std::ops::ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        f: F,
    ) -> std::ops::ControlFlow<()> {
        self.state.try_for_each_neighbor_run(node, dir, types, f)
    }

    #[inline]
    fn run_entry_edge(&self, entry: RunEntry) -> Option<(EdgeDir, TypeId, EdgeId)> {
        self.state.run_entry_edge(entry)
    }

    #[inline]
    fn degree_estimate(&self, node: NodeId, dir: EdgeDir) -> u32 {
        self.state.degree_estimate(node, dir)
    }

    #[inline]
    fn prefetch_degree(&self, node: NodeId, dir: EdgeDir) {
        self.state.prefetch_degree(node, dir);
    }

    #[inline]
    fn prefetch_edges(&self, node: NodeId, dir: EdgeDir) {
        self.state.prefetch_edges(node, dir);
    }

    fn degree_total(&self, dir: EdgeDir) -> Option<u64> {
        Some(self.state.degree_total(dir))
    }

    fn nodes_with_edges(&self, dir: EdgeDir, types: &TypeFilter) -> Option<roaring::RoaringBitmap> {
        Some(self.state.nodes_with_edges(dir, types))
    }

    #[inline]
    fn edges_between<F: FnMut(EdgeRef)>(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        f: F,
    ) {
        self.state.edges_between(node, neighbor, dir, types, f)
    }

    #[inline]
    fn least_edge_between(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
    ) -> Option<EdgeRef> {
        self.state.least_edge_between(node, neighbor, dir, types)
    }

    #[inline]
    fn least_edge_between_upto(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        max_type: TypeId,
    ) -> Option<EdgeRef> {
        self.state
            .least_edge_between_upto(node, neighbor, dir, types, max_type)
    }

    const INDEXED_EDGES_BETWEEN: bool = true;
}
