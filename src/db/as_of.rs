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
use std::ops::ControlFlow;

use crate::graph::{EdgeDir, EdgeId, NodeId, RunEntry, TypeFilter, TypeId};
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

    #[inline]
    fn runs_carry_entries(&self) -> bool {
        true
    }

    #[inline]
    fn neighbor_runs<F: FnMut(&[u32], RunEntry) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        f: &mut F,
    ) -> Option<ControlFlow<()>> {
        self.state
            .timed_neighbor_runs(node, dir, types, &self.cut, f)
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
    /// every start; see the module docs for the costs otherwise. A kernel does not ask
    /// whether its own start and end nodes exist: check them with
    /// [`Snapshot::node_valid_at`] (the key-level queries with [`PathSpec::as_of`](
    /// crate::PathSpec::as_of) do).
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

impl State {
    /// The neighbor runs of `node` as of `cut` when only edges need checks (no node is
    /// timed, `t` is at or after every start, no edge is deleted, the delta changed no
    /// segment edge's interval): each segment run is
    /// handed out as slices of the neighbor array between the entries of timed edges
    /// (found in the segment set's entry bitsets, 1 bit per CSR entry, read
    /// sequentially), each timed entry checked on its own; delta edges one at a time.
    /// `None` in every other case (the view then checks each edge).
    pub(crate) fn timed_neighbor_runs<F: FnMut(&[u32], RunEntry) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        cut: &TimeCut,
        f: &mut F,
    ) -> Option<ControlFlow<()>> {
        if cut.all_nodes
            || cut.all_edges
            || cut.timed_nodes
            || self.segs.any_edge_tombstones
            || !self.delta.deleted_edges.is_empty()
            || !self.delta.edge_validity.is_empty()
        {
            return None;
        }
        let entries = self.segs.timed_entry_bits();
        Some(self.timed_runs(node, dir, types, cut, entries, f))
    }

    fn timed_runs<F: FnMut(&[u32], RunEntry) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        cut: &TimeCut,
        entries: &super::state::TimedEntries,
        f: &mut F,
    ) -> ControlFlow<()> {
        // One segment and no delta edges: runs carry handles (see
        // `State::run_entries_named`); the first handed-out entry naming a neighbour is
        // then the least accepted edge joining the two, which is what the view's
        // `least_edge_between` answers.
        let named = self.run_entries_named();
        let handle = |range: &std::ops::Range<usize>| {
            if named {
                super::state::run_entry(dir, range)
            } else {
                RunEntry::NONE
            }
        };
        let changed = entries.changes;
        // At or after every end (and, the caller checked, every start), an ended entry is
        // out and every other one in: only the ended ones are skipped, none looked up.
        let settled = cut.t >= entries.end_max;
        let marks = if settled {
            &entries.ended
        } else {
            &entries.bits
        };
        for (s, seg_bits) in self.segs.segments.iter().zip(marks) {
            let v = s.view(dir);
            let run = v.run(node);
            if run.is_empty() {
                continue;
            }
            let words = &seg_bits[dir.index()];
            let columns = (!settled && !changed).then(|| s.row_validity_columns());
            let marked = |i: usize| words.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1);
            let accepted = |i: usize| {
                if !marked(i) {
                    true
                } else if settled {
                    false
                } else if let Some(columns) = &columns {
                    let (from, to) = columns.of(v.row(i));
                    crate::model::valid_at(from, to, cut.t)
                } else {
                    self.edge_valid(v.edge_id(i), cut)
                }
            };
            let mut emit = |range: std::ops::Range<usize>| -> ControlFlow<()> {
                let nbrs = v.neighbors();
                let Some(all) = nbrs.get(range.clone()) else {
                    return ControlFlow::Continue(());
                };
                let Some(first) = next_marked(words, range.clone()) else {
                    return f(all, handle(&range));
                };
                // The clean start keeps its handle; from the first marked entry on, the
                // accepted neighbours are gathered and handed out in chunks (one call per
                // chunk instead of one per piece between marked entries).
                if range.start < first {
                    f(&all[..first - range.start], handle(&(range.start..first)))?;
                }
                let mut buf = [0u32; 64];
                let mut len = 0;
                for (i, &n) in (first..range.end).zip(&all[first - range.start..]) {
                    if accepted(i) {
                        buf[len] = n;
                        len += 1;
                        if len == buf.len() {
                            f(&buf, RunEntry::NONE)?;
                            len = 0;
                        }
                    }
                }
                if len > 0 {
                    f(&buf[..len], RunEntry::NONE)?;
                }
                ControlFlow::Continue(())
            };
            match types {
                TypeFilter::All => emit(run)?,
                TypeFilter::Only(list) => {
                    for t in list {
                        emit(v.type_run(run.clone(), *t))?;
                    }
                }
            }
        }
        let delta = &self.delta.adj[dir.index()];
        if !delta.is_empty()
            && let Some(list) = delta.get(&node.0)
        {
            for e in list {
                if types.allows(TypeId(e.edge_type)) && self.edge_valid(EdgeId(e.edge), cut) {
                    f(&[e.neighbor], RunEntry::NONE)?;
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// The first entry of `range` whose bit is set in `words`, a word at a time.
#[inline]
fn next_marked(words: &[u64], range: std::ops::Range<usize>) -> Option<usize> {
    let mut i = range.start;
    while i < range.end {
        let w = *words.get(i / 64)? & (u64::MAX << (i % 64));
        if w != 0 {
            let at = (i / 64) * 64 + w.trailing_zeros() as usize;
            return (at < range.end).then_some(at);
        }
        i = (i / 64 + 1) * 64;
    }
    None
}
