//! Reads "as of" a moment: the snapshot seen through validity intervals.
//!
//! Every node and edge is valid over `[valid_from, valid_to)` in event time (ms since the
//! Unix epoch; see [`Node::valid_at`](crate::Node::valid_at)). [`Snapshot::as_of`] gives
//! the [`Adjacency`](crate::traverse::Adjacency) view in which only what was valid at `t`
//! exists, for every traversal kernel; searches take the same moment through
//! [`NodeFilter::valid_at`](crate::NodeFilter::valid_at).
//!
//! What a check costs is decided once per view from the state's time summary (a
//! [`TimeCut`]): when `t` is at or after every element's start and no element has an
//! interval other than [created, never), nothing is checked and the view is the snapshot.
//! Otherwise the elements in the timed bitmaps are looked up (a bitmap probe each, then
//! for those in it a read of the node record's interval or of the edge row's columns), and
//! when `t` is before some element's start, every element is.

use super::snapshot::Snapshot;
use super::state::{State, TimeCut};
use crate::graph::{EdgeId, NodeId};
use crate::traverse::{ElementFilter, Filtered};

/// The elements valid at one moment (the filter of an [`AsOf`] view).
#[derive(Clone, Copy, Debug)]
pub struct ValidAt<'a> {
    state: &'a State,
    cut: TimeCut,
}

impl ValidAt<'_> {
    /// The moment.
    pub fn time(&self) -> u64 {
        self.cut.t
    }
}

impl ElementFilter for ValidAt<'_> {
    #[inline]
    fn accepts_all(&self) -> bool {
        self.cut.is_trivial()
    }

    #[inline]
    fn node_ok(&self, node: NodeId) -> bool {
        self.state.node_valid(node, &self.cut)
    }

    #[inline]
    fn edge_ok(&self, edge: EdgeId) -> bool {
        self.state.edge_valid(edge, &self.cut)
    }
}

/// A snapshot as of a moment: only nodes and edges valid then exist. An
/// [`Adjacency`](crate::traverse::Adjacency): pass it to any kernel where the snapshot
/// would go.
pub type AsOf<'a> = Filtered<'a, Snapshot, ValidAt<'a>>;

impl Snapshot {
    /// This snapshot as of `t` (ms since the Unix epoch): a view in which only the nodes
    /// and edges valid at `t` exist (a node's edges go with it). Costs nothing measurable
    /// when no element has an interval other than [created, never) and `t` is at or after
    /// every start; see the module docs for the costs otherwise.
    pub fn as_of(&self, t: u64) -> AsOf<'_> {
        Filtered::new(
            self,
            ValidAt {
                state: &self.state,
                cut: self.state.time_cut(t),
            },
        )
    }

    /// Whether node `id` exists and is valid at `t`.
    pub fn node_valid_at(&self, id: NodeId, t: u64) -> bool {
        self.state.is_live(id) && self.state.node_valid(id, &self.state.time_cut(t))
    }

    /// Whether edge `id` exists and is valid at `t` (its endpoints are not checked).
    pub fn edge_valid_at(&self, id: EdgeId, t: u64) -> bool {
        self.state.edge_interval(id).is_some() && self.state.edge_valid(id, &self.state.time_cut(t))
    }
}

impl State {
    /// `filter` without its `valid_at` condition when no node needs checking at that
    /// moment (so that a search reads no record for it); `None` when it stays as it is.
    pub(crate) fn lean_filter(&self, filter: &crate::NodeFilter) -> Option<crate::NodeFilter> {
        let t = filter.valid_at?;
        let cut = self.time_cut(t);
        (!cut.all_nodes && !cut.timed_nodes).then(|| crate::NodeFilter {
            valid_at: None,
            ..filter.clone()
        })
    }
}
