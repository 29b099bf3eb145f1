//! The immutable database state that a snapshot holds: segments, their tombstones and the
//! in-memory delta of commits since the last checkpoint.
//!
//! A `State` is a value. A commit clones it (cheap: the delta uses persistent maps from
//! `imbl`, so a clone is O(1) and an update copies O(log n) nodes), applies resolved
//! operations and publishes the result; snapshots keep whatever state they were given.
//! [`State::apply`] is the single place where a resolved operation changes state, used
//! alike by commits, by recovery and by processes catching up with another's commits.

use std::ops::ControlFlow;
use std::sync::Arc;

use imbl::{HashMap as PMap, HashSet as PSet, Vector as PVec};
use roaring::{RoaringBitmap, RoaringTreemap};

use super::segment::{SegView, Segment};
use crate::error::Result;
use crate::format::record::WalOp;
use crate::format::segment::KeyQuery;
use crate::graph::{EdgeDir, EdgeId, EdgeRef, Lsn, NodeId, RunEntry, TypeFilter, TypeId};
use crate::model::{Edge, Node};

/// The bit of a [`RunEntry`] handed out by [`State`] that marks the in-CSR; the bits
/// below it are the entry's position in that direction's arrays.
const RUN_ENTRY_IN: u32 = 1 << 31;

/// The handle of the first entry of `range` in `dir`'s CSR, or `NONE` when a position of
/// the range does not fit below [`RUN_ENTRY_IN`] (a segment of over 2^31 entries: its
/// hops are then found by search).
#[inline]
pub(crate) fn run_entry(dir: EdgeDir, range: &std::ops::Range<usize>) -> RunEntry {
    let tag = if dir == EdgeDir::In { RUN_ENTRY_IN } else { 0 };
    match (u32::try_from(range.start), u32::try_from(range.end)) {
        (Ok(start), Ok(end)) if end < RUN_ENTRY_IN => RunEntry(tag | start),
        _ => RunEntry::NONE,
    }
}

/// One edge in the delta adjacency of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeltaEdge {
    pub neighbor: u32,
    pub edge_type: u16,
    pub edge: u64,
}

/// Runs of at most this many entries are scanned by `State::edges_between` instead of
/// binary-searched per type run (a scan of 32 entries costs about what a few searches do).
/// Unit tests use 2, so that their small graphs exercise the searches.
const EDGES_BETWEEN_SCAN_MAX: usize = if cfg!(test) { 2 } else { 32 };
/// `State::least_edge_between` tries each type id of a run's type span in turn when the
/// span holds at most this many types; beyond, it scans the run.
const LEAST_EDGE_TYPES_MAX: usize = 16;

/// Changes since the last checkpoint, in persistent (structurally shared) maps.
#[derive(Clone, Debug, Default)]
pub(crate) struct Delta {
    /// Records of nodes created or updated since the checkpoint (live ones only).
    pub nodes: PMap<u32, Arc<Node>>,
    /// Keys of nodes created since the checkpoint (live ones only).
    pub keys: PMap<Arc<str>, u32>,
    /// Nodes deleted since the checkpoint, wherever they were created.
    pub deleted_nodes: PSet<u32>,
    /// Per direction: node → edges added since the checkpoint (live ones only).
    pub adj: [PMap<u32, PVec<DeltaEdge>>; 2],
    /// Edges added since the checkpoint (live ones only).
    pub edges: PMap<u64, Arc<Edge>>,
    /// (source, type, target) → edge id, for edges in `edges`.
    pub triples: PMap<(u32, u16, u32), u64>,
    /// Segment edges deleted since the checkpoint.
    pub deleted_edges: PSet<u64>,
    /// Resolved operations applied since the checkpoint.
    pub ops: u64,
    /// Text index of the nodes in `nodes` (see `db::text`).
    pub text: super::text::TextDelta,
    /// Nodes written since the checkpoint whose interval is not [created, never).
    pub timed_nodes: PSet<u32>,
    /// Edges added or changed since the checkpoint whose interval is not [created, never).
    pub timed_edges: PSet<u64>,
    /// Changed intervals of segment edges (live ones only).
    pub edge_validity: PMap<u64, (u64, Option<u64>)>,
    /// The greatest start of validity of a node and of an edge written since the
    /// checkpoint (0: none).
    pub time_bounds: [u64; 2],
}

impl Delta {
    /// Whether a checkpoint would have anything to write.
    pub fn is_empty(&self) -> bool {
        self.ops == 0
    }
}

/// Unions over all segments, rebuilt when the segment list changes.
#[derive(Debug, Default)]
pub(crate) struct SegmentSet {
    /// Oldest first.
    pub segments: Vec<Arc<Segment>>,
    /// Union of every segment's edge tombstones.
    pub edge_tombstones: RoaringTreemap,
    /// Union of every segment's node tombstones.
    pub node_tombstones: RoaringBitmap,
    /// Whether `edge_tombstones` is non-empty (cached: the scans ask on every call, and
    /// `RoaringTreemap::is_empty` walks its map).
    pub any_edge_tombstones: bool,
    /// Union of every segment's `timed_nodes`.
    pub timed_nodes: RoaringBitmap,
    /// Union of every segment's `timed_edges`.
    pub timed_edges: RoaringTreemap,
    /// The greatest start of validity of a node and of an edge in any segment written
    /// from format version 9 on (older segments: `legacy_bounds`).
    pub time_bounds: [u64; 2],
    /// `time_bounds` with the older segments' bounds found by reading them
    /// (`Segment::known_time_bounds`), on the first "as of" read; unused when every
    /// segment is of version 9 on.
    legacy_bounds: std::sync::OnceLock<[u64; 2]>,
    /// Per segment and direction, one bit per CSR entry: the entry's edge is in
    /// `timed_edges` (empty: no entry is). Built on the first "as of" read that uses it.
    timed_entry_bits: std::sync::OnceLock<TimedEntries>,
}

impl SegmentSet {
    pub fn new(segments: Vec<Arc<Segment>>) -> SegmentSet {
        let mut edge_tombstones = RoaringTreemap::new();
        let mut node_tombstones = RoaringBitmap::new();
        let mut timed_nodes = RoaringBitmap::new();
        let mut timed_edges = RoaringTreemap::new();
        let mut time_bounds = [0u64; 2];
        for s in &segments {
            edge_tombstones |= &s.edge_tombstones;
            node_tombstones |= &s.node_tombstones;
            timed_nodes |= &s.timed_nodes;
            timed_edges |= &s.timed_edges;
            if s.time_bounds != [u64::MAX; 2] {
                for (bound, seg) in time_bounds.iter_mut().zip(s.time_bounds) {
                    *bound = (*bound).max(seg);
                }
            }
        }
        SegmentSet {
            legacy_bounds: std::sync::OnceLock::new(),
            timed_entry_bits: std::sync::OnceLock::new(),
            timed_nodes,
            timed_edges,
            time_bounds,
            segments,
            any_edge_tombstones: !edge_tombstones.is_empty(),
            edge_tombstones,
            node_tombstones,
        }
    }
}

/// What an "as of `t`" read must check, decided once per query from the state's time
/// summary: whether `t` is before the latest start of some node or edge (then every
/// element is looked up), and whether any element has an interval other than
/// [created, never) (then those are).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimeCut {
    /// The moment.
    pub t: u64,
    /// Every node must be looked up.
    pub all_nodes: bool,
    /// Every edge must be looked up.
    pub all_edges: bool,
    /// Some node is timed (those are looked up).
    pub timed_nodes: bool,
    /// Some edge is timed (those are looked up).
    pub timed_edges: bool,
}

impl TimeCut {
    /// Whether no element needs a look-up: the read sees the whole state.
    pub fn is_trivial(&self) -> bool {
        !(self.all_nodes || self.all_edges || self.timed_nodes || self.timed_edges)
    }
}

impl SegmentSet {
    /// The greatest start of validity of a node and of an edge in any segment, the older
    /// segments' read from their records and rows once (see `legacy_bounds`).
    pub fn starts_max(&self) -> [u64; 2] {
        if self.segments.iter().all(|s| s.time_bounds != [u64::MAX; 2]) {
            return self.time_bounds;
        }
        *self.legacy_bounds.get_or_init(|| {
            let mut b = self.time_bounds;
            for s in &self.segments {
                for (bound, seg) in b.iter_mut().zip(s.known_time_bounds()) {
                    *bound = (*bound).max(seg);
                }
            }
            b
        })
    }

    /// Per segment and direction, the bitset of CSR entries whose edge is timed (see
    /// `timed_entry_bits`), built on first use: the timed edges' rows are found by id
    /// (O(timed · log rows)), then each direction's entry-to-row array of a segment that
    /// holds one is read once (O(rows)).
    pub fn timed_entry_bits(&self) -> &TimedEntries {
        self.timed_entry_bits.get_or_init(|| {
            // Per segment, bitsets over its rows: timed, and of those, ended.
            let mut rows: Vec<[Vec<u64>; 2]> = vec![[Vec::new(), Vec::new()]; self.segments.len()];
            let mut end_max = 0u64;
            for id in &self.timed_edges {
                let id = EdgeId(id);
                let Some((i, row)) = self
                    .segments
                    .iter()
                    .enumerate()
                    .rev()
                    .find_map(|(i, s)| s.edge_row(id).map(|row| (i, row)))
                else {
                    continue;
                };
                // The newest interval: a change by a newer segment, else the row's own.
                let (_, to) = self.segments[i + 1..]
                    .iter()
                    .rev()
                    .find_map(|s| s.edge_validity_change(id))
                    .unwrap_or_else(|| self.segments[i].row_validity(row));
                let n = usize::try_from(self.segments[i].edge_rows()).unwrap_or(0);
                for (k, words) in rows[i].iter_mut().enumerate() {
                    if k == 1 && to.is_none() {
                        continue;
                    }
                    if words.is_empty() {
                        words.resize(n.div_ceil(64), 0);
                    }
                    if let Some(w) = words.get_mut(row / 64) {
                        *w |= 1 << (row % 64);
                    }
                }
                end_max = end_max.max(to.unwrap_or(0));
            }
            let per_entry = |s: &Segment, dir: EdgeDir, rows: &[u64]| {
                if rows.is_empty() {
                    return Vec::new();
                }
                let pos = s.entry_rows(dir);
                let mut words = vec![0u64; pos.len().div_ceil(64)];
                for (i, &row) in pos.iter().enumerate() {
                    let row = row as usize;
                    if rows.get(row / 64).is_some_and(|w| w >> (row % 64) & 1 == 1) {
                        words[i / 64] |= 1 << (i % 64);
                    }
                }
                words
            };
            let (mut bits, mut ended) = (Vec::new(), Vec::new());
            for (s, [timed, done]) in self.segments.iter().zip(&rows) {
                bits.push([EdgeDir::Out, EdgeDir::In].map(|d| per_entry(s, d, timed)));
                ended.push([EdgeDir::Out, EdgeDir::In].map(|d| per_entry(s, d, done)));
            }
            TimedEntries {
                bits,
                ended,
                end_max,
                changes: self.segments.iter().any(|s| s.changes_edge_validity()),
            }
        })
    }
}

/// The segment set's timed CSR entries (see [`SegmentSet::timed_entry_bits`]).
#[derive(Debug, Default)]
pub(crate) struct TimedEntries {
    /// Per segment and direction, one bit per CSR entry (empty: none timed).
    pub bits: Vec<[Vec<u64>; 2]>,
    /// The same for the timed entries whose edge has an end.
    pub ended: Vec<[Vec<u64>; 2]>,
    /// The latest end of a timed edge (0: none). A moment at or after it and after every
    /// start sees every ended edge gone and every other one there: no look-up needed.
    pub end_max: u64,
    /// Whether some segment changed an older segment's edge (`EdgeValidity`): then a
    /// timed entry's interval is looked up by id, not read from its row.
    pub changes: bool,
}

/// A consistent database state.
#[derive(Clone, Debug)]
pub(crate) struct State {
    /// LSN of the last commit applied.
    pub lsn: Lsn,
    /// Manifest generation this state was built from.
    pub generation: u64,
    /// LSN covered by the segments.
    pub checkpoint_lsn: Lsn,
    pub segs: Arc<SegmentSet>,
    pub delta: Delta,
    /// Exclusive bound of node ids allocated so far.
    pub node_bound: u32,
    pub next_edge_id: u64,
    pub live_nodes: u64,
    /// Type names, index = type id.
    pub types: PVec<Arc<str>>,
    pub type_ids: PMap<Arc<str>, u16>,
    /// Live edges per type id.
    pub type_counts: PVec<u64>,
    /// The store's embedding dimension as the segments' `VectorMeta` and the delta name it
    /// (the first embedding written fixes it); see `db/vector.rs` for older segments.
    pub embedding_dim: Option<u32>,
}

impl State {
    /// The state described by a segment list plus an empty delta.
    pub fn from_segments(segs: SegmentSet, generation: u64, checkpoint_lsn: Lsn) -> State {
        let mut st = State {
            lsn: checkpoint_lsn,
            generation,
            checkpoint_lsn,
            segs: Arc::new(SegmentSet::default()),
            delta: Delta::default(),
            node_bound: 0,
            next_edge_id: 0,
            live_nodes: 0,
            types: PVec::new(),
            type_ids: PMap::new(),
            type_counts: PVec::new(),
            embedding_dim: segs
                .segments
                .iter()
                .rev()
                .find_map(|s| s.vector_meta.as_ref())
                .and_then(|m| (m.dim > 0).then_some(m.dim)),
        };
        if let Some(last) = segs.segments.last() {
            let s = last.summary();
            st.node_bound = s.node_bound;
            st.next_edge_id = s.next_edge_id;
            st.live_nodes = s.live_nodes;
            for (i, (name, count)) in s.types.iter().enumerate() {
                let name: Arc<str> = Arc::from(name.as_str());
                // Summaries hold at most EDGE_TYPES_MAX (u16) types: checked on decode.
                st.type_ids
                    .insert(name.clone(), u16::try_from(i).unwrap_or(u16::MAX));
                st.types.push_back(name);
                st.type_counts.push_back(*count);
            }
        }
        st.segs = Arc::new(segs);
        st
    }

    /// Total live edges.
    pub fn live_edges(&self) -> u64 {
        self.type_counts.iter().sum()
    }

    /// Applies one resolved operation. Errors describe an operation that does not fit the
    /// state (only possible with a damaged or foreign log); the caller adds the location.
    pub fn apply(&mut self, op: &WalOp) -> Result<(), String> {
        self.delta.ops += 1;
        match op {
            WalOp::NewType { id, name } => {
                if id.0 as usize != self.types.len() {
                    return Err(format!(
                        "new type {name:?} has id {}, expected {}",
                        id.0,
                        self.types.len()
                    ));
                }
                let name: Arc<str> = Arc::from(name.as_str());
                self.type_ids.insert(name.clone(), id.0);
                self.types.push_back(name);
                self.type_counts.push_back(0);
            }
            WalOp::PutNode(node) => {
                let id = node.id.0;
                if id == self.node_bound {
                    self.node_bound = id.checked_add(1).ok_or("node id space exhausted")?;
                    self.live_nodes += 1;
                    self.delta.keys.insert(Arc::from(node.key.as_str()), id);
                } else if id > self.node_bound || !self.is_live(node.id) {
                    return Err(format!("update of node {id}, which does not exist"));
                }
                self.delta.text.put(node);
                self.delta.time_bounds[0] = self.delta.time_bounds[0].max(node.valid_from);
                if node.valid_from != node.created_at || node.valid_to.is_some() {
                    self.delta.timed_nodes.insert(id);
                }
                if self.embedding_dim.is_none()
                    && let Some(e) = &node.props.embedding
                {
                    self.embedding_dim = u32::try_from(e.len()).ok();
                }
                self.delta.nodes.insert(id, Arc::new(node.clone()));
            }
            WalOp::DeleteNode { id } => {
                if !self.is_live(*id) {
                    return Err(format!("delete of node {}, which does not exist", id.0));
                }
                if let Some(n) = self.delta.nodes.remove(&id.0) {
                    self.delta.keys.remove(n.key.as_str());
                }
                self.delta.text.remove(id.0);
                self.delta.deleted_nodes.insert(id.0);
                self.live_nodes = self.live_nodes.saturating_sub(1);
            }
            WalOp::AddEdge(e) => {
                let t = e.edge_type.0;
                if t as usize >= self.types.len()
                    || e.source.0 >= self.node_bound
                    || e.target.0 >= self.node_bound
                {
                    return Err(format!("edge {} refers to an unknown node or type", e.id.0));
                }
                if e.id.0 < self.next_edge_id {
                    return Err(format!("edge id {} was already allocated", e.id.0));
                }
                self.next_edge_id = e.id.0 + 1;
                let d = &mut self.delta;
                d.time_bounds[1] = d.time_bounds[1].max(e.valid_from);
                if e.valid_from != e.created_at || e.valid_to.is_some() {
                    d.timed_edges.insert(e.id.0);
                }
                d.edges.insert(e.id.0, Arc::new(e.clone()));
                d.triples.insert((e.source.0, t, e.target.0), e.id.0);
                let out = DeltaEdge {
                    neighbor: e.target.0,
                    edge_type: t,
                    edge: e.id.0,
                };
                let inn = DeltaEdge {
                    neighbor: e.source.0,
                    ..out
                };
                d.adj[0].entry(e.source.0).or_default().push_back(out);
                d.adj[1].entry(e.target.0).or_default().push_back(inn);
                if let Some(c) = self.type_counts.get_mut(t as usize) {
                    *c += 1;
                }
            }
            WalOp::SetEdgeValidity {
                id,
                valid_from,
                valid_to,
            } => {
                if valid_to.is_some_and(|to| to <= *valid_from) {
                    return Err(format!("edge {} would end before it starts", id.0));
                }
                if let Some(e) = self.delta.edges.get(&id.0) {
                    let mut e = Edge::clone(e);
                    e.valid_from = *valid_from;
                    e.valid_to = *valid_to;
                    self.delta.edges.insert(id.0, Arc::new(e));
                } else if id.0 < self.next_edge_id && self.segment_edge_live(id.0) {
                    self.delta
                        .edge_validity
                        .insert(id.0, (*valid_from, *valid_to));
                } else {
                    return Err(format!("validity of edge {}, which does not exist", id.0));
                }
                let d = &mut self.delta;
                d.time_bounds[1] = d.time_bounds[1].max(*valid_from);
                d.timed_edges.insert(id.0);
            }
            WalOp::RemoveEdge {
                id,
                source,
                target,
                edge_type,
            } => {
                let d = &mut self.delta;
                d.edge_validity.remove(&id.0);
                if d.edges.remove(&id.0).is_some() {
                    d.triples.remove(&(source.0, edge_type.0, target.0));
                    for (dir, node) in [(0, source.0), (1, target.0)] {
                        if let Some(list) = d.adj[dir].get_mut(&node) {
                            list.retain(|x| x.edge != id.0);
                        }
                    }
                } else if d.deleted_edges.insert(id.0).is_some() {
                    return Err(format!("edge {} removed twice", id.0));
                }
                if let Some(c) = self.type_counts.get_mut(edge_type.0 as usize) {
                    *c = c.saturating_sub(1);
                }
            }
        }
        Ok(())
    }

    /// Whether `id` is a node that exists now.
    pub fn is_live(&self, id: NodeId) -> bool {
        if id.0 >= self.node_bound || self.node_deleted(id) {
            return false;
        }
        self.delta.nodes.contains_key(&id.0)
            || self.segs.segments.iter().rev().any(|s| s.has_node(id))
    }

    /// The id of the live node with `key`.
    pub fn node_id(&self, key: &str) -> Option<NodeId> {
        // An empty persistent map still hashes the key (SipHash) before finding nothing.
        if !self.delta.keys.is_empty()
            && let Some(&id) = self.delta.keys.get(key)
        {
            return Some(NodeId(id));
        }
        let q = KeyQuery::new(key.as_bytes());
        let id = self
            .segs
            .segments
            .iter()
            .rev()
            .find_map(|s| s.node_id_by_query(&q))?;
        (!self.node_deleted(id)).then_some(id)
    }

    /// The ids of the live nodes with keys `a` and `b`, as [`State::node_id`] answers each:
    /// the keys are hashed once for every segment, and in each segment both slots are
    /// loaded before either is compared, so their cache misses overlap.
    pub fn node_id_pair(&self, a: &str, b: &str) -> [Option<NodeId>; 2] {
        let keys = [a, b];
        let mut found: [Option<NodeId>; 2] = [None, None];
        let mut from_delta = [false; 2];
        if !self.delta.keys.is_empty() {
            for i in 0..2 {
                if let Some(&id) = self.delta.keys.get(keys[i]) {
                    found[i] = Some(NodeId(id));
                    from_delta[i] = true;
                }
            }
        }
        let qs = keys.map(|k| KeyQuery::new(k.as_bytes()));
        for s in self.segs.segments.iter().rev() {
            if found[0].is_some() && found[1].is_some() {
                break;
            }
            let ask = [0, 1].map(|i| found[i].is_none().then_some(&qs[i]));
            let got = s.node_ids_by_queries(ask);
            for i in 0..2 {
                found[i] = found[i].or(got[i]);
            }
        }
        [0, 1].map(|i| found[i].filter(|&id| from_delta[i] || !self.node_deleted(id)))
    }

    /// Whether `id` was deleted, in the delta or by a segment tombstone.
    #[inline]
    pub(crate) fn node_deleted(&self, id: NodeId) -> bool {
        (!self.delta.deleted_nodes.is_empty() && self.delta.deleted_nodes.contains(&id.0))
            || self.segs.node_tombstones.contains(id.0)
    }

    /// The record of live node `id`.
    pub fn node(&self, id: NodeId) -> Result<Option<Arc<Node>>> {
        if id.0 >= self.node_bound || self.node_deleted(id) {
            return Ok(None);
        }
        if let Some(n) = self.delta.nodes.get(&id.0) {
            return Ok(Some(n.clone()));
        }
        for s in self.segs.segments.iter().rev() {
            if let Some(n) = s.node(id)? {
                return Ok(Some(Arc::new(n)));
            }
        }
        Ok(None)
    }

    /// The texts of live node `id`'s newest version, reading as little as it can: the
    /// delta's node as it is, or a segment record's title and content only.
    pub fn node_texts(&self, id: NodeId) -> Result<Option<crate::text::NodeTexts<'_>>> {
        use crate::text::NodeTexts;
        if id.0 >= self.node_bound || self.node_deleted(id) {
            return Ok(None);
        }
        if let Some(n) = self.delta.nodes.get(&id.0) {
            return Ok(Some(NodeTexts::Node(n.clone())));
        }
        for s in self.segs.segments.iter().rev() {
            if let Some(t) = s.node_texts(id)? {
                return Ok(Some(NodeTexts::Record(t)));
            }
        }
        Ok(None)
    }

    /// A hint that [`State::node_texts`] of `id` will be asked: starts loading the record
    /// of its newest segment version when `near`, else that record's offset (nothing for
    /// a node of the delta).
    pub fn prefetch_node_texts(&self, id: NodeId, near: bool) {
        if id.0 >= self.node_bound || self.delta.nodes.contains_key(&id.0) {
            return;
        }
        for s in self.segs.segments.iter().rev() {
            if s.prefetch_texts(id, near) {
                return;
            }
        }
    }

    /// The key and title of live node `id`, without decoding the rest of its record.
    pub fn node_label(&self, id: NodeId) -> Result<Option<(&str, &str)>> {
        if id.0 >= self.node_bound || self.node_deleted(id) {
            return Ok(None);
        }
        if !self.delta.nodes.is_empty()
            && let Some(n) = self.delta.nodes.get(&id.0)
        {
            return Ok(Some((&n.key, &n.props.title)));
        }
        for s in self.segs.segments.iter().rev() {
            if let Some(label) = s.node_label(id)? {
                return Ok(Some(label));
            }
        }
        Ok(None)
    }

    fn segment_edge_live(&self, id: u64) -> bool {
        !self.segs.edge_tombstones.contains(id) && !self.delta.deleted_edges.contains(&id)
    }

    /// The live edge `id`.
    pub fn edge(&self, id: EdgeId) -> Result<Option<Arc<Edge>>> {
        if let Some(e) = self.delta.edges.get(&id.0) {
            return Ok(Some(e.clone()));
        }
        if !self.segment_edge_live(id.0) {
            return Ok(None);
        }
        for s in self.segs.segments.iter().rev() {
            if let Some(row) = s.edge_row(id) {
                let Some(mut e) = s.edge_at(row)? else {
                    return Ok(None);
                };
                if let Some((from, to)) = self.edge_validity_change(id) {
                    (e.valid_from, e.valid_to) = (from, to);
                }
                return Ok(Some(Arc::new(e)));
            }
        }
        Ok(None)
    }

    /// The interval of segment edge `id` as changed after its row was written (in the
    /// delta or by a newer segment's `EdgeValidity`), if it was.
    fn edge_validity_change(&self, id: EdgeId) -> Option<(u64, Option<u64>)> {
        if !self.delta.edge_validity.is_empty()
            && let Some(&v) = self.delta.edge_validity.get(&id.0)
        {
            return Some(v);
        }
        if self.segs.timed_edges.is_empty() {
            return None;
        }
        self.segs
            .segments
            .iter()
            .rev()
            .find_map(|s| s.edge_validity_change(id))
    }

    /// The validity interval of live edge `id` (`None`: no such edge), reading only its
    /// creation time and interval.
    ///
    /// # Errors
    /// None today (the columns are checked at open); kept for damaged records to come.
    pub fn edge_interval(&self, id: EdgeId) -> Option<(u64, Option<u64>)> {
        if let Some(e) = self.delta.edges.get(&id.0) {
            return Some((e.valid_from, e.valid_to));
        }
        if let Some(v) = self.edge_validity_change(id) {
            return Some(v);
        }
        self.segs
            .segments
            .iter()
            .rev()
            .find_map(|s| s.edge_row(id).map(|row| s.row_validity(row)))
    }

    /// The validity interval of live node `id` (`None`: no such node), reading only its
    /// record's creation time and interval.
    ///
    /// # Errors
    /// `Corrupt` when the record does not decode.
    pub fn node_interval(&self, id: NodeId) -> Result<Option<(u64, Option<u64>)>> {
        if id.0 >= self.node_bound || self.node_deleted(id) {
            return Ok(None);
        }
        if let Some(n) = self.delta.nodes.get(&id.0) {
            return Ok(Some((n.valid_from, n.valid_to)));
        }
        for s in self.segs.segments.iter().rev() {
            if let Some((_, from, to)) = s.node_validity(id)? {
                return Ok(Some((from, to)));
            }
        }
        Ok(None)
    }

    /// What an "as of `t`" read of this state has to check: see [`TimeCut`].
    pub fn time_cut(&self, t: u64) -> TimeCut {
        let starts = self.segs.starts_max();
        let bound = |i: usize| starts[i].max(self.delta.time_bounds[i]);
        TimeCut {
            t,
            all_nodes: t < bound(0),
            all_edges: t < bound(1),
            timed_nodes: !self.segs.timed_nodes.is_empty() || !self.delta.timed_nodes.is_empty(),
            timed_edges: !self.segs.timed_edges.is_empty() || !self.delta.timed_edges.is_empty(),
        }
    }

    /// Whether live node `id` is valid at `cut.t` (a node whose record does not decode is
    /// not). Costs nothing unless `cut` says the node may need a look-up: then a bitmap
    /// probe, and a record read for a node that is timed or when `t` is before some start.
    #[inline]
    pub fn node_valid(&self, id: NodeId, cut: &TimeCut) -> bool {
        let look = cut.all_nodes
            || (cut.timed_nodes
                && (self.segs.timed_nodes.contains(id.0)
                    || (!self.delta.timed_nodes.is_empty()
                        && self.delta.timed_nodes.contains(&id.0))));
        if !look {
            return true;
        }
        matches!(self.node_interval(id), Ok(Some((from, to))) if crate::model::valid_at(from, to, cut.t))
    }

    /// Whether live edge `id` is valid at `cut.t` (its endpoints are not checked), at the
    /// costs [`State::node_valid`] states.
    #[inline]
    pub fn edge_valid(&self, id: EdgeId, cut: &TimeCut) -> bool {
        let look = cut.all_edges
            || (cut.timed_edges
                && (self.segs.timed_edges.contains(id.0)
                    || (!self.delta.timed_edges.is_empty()
                        && self.delta.timed_edges.contains(&id.0))));
        if !look {
            return true;
        }
        matches!(self.edge_interval(id), Some((from, to)) if crate::model::valid_at(from, to, cut.t))
    }

    /// The live edge (source, type, target), if any.
    pub fn edge_by_triple(&self, source: NodeId, t: TypeId, target: NodeId) -> Option<EdgeId> {
        if let Some(&e) = self.delta.triples.get(&(source.0, t.0, target.0)) {
            return Some(EdgeId(e));
        }
        for s in self.segs.segments.iter().rev() {
            let v = s.view(EdgeDir::Out);
            let run = v.type_run(v.run(source), t);
            let nbrs = v.neighbors().get(run.clone()).unwrap_or(&[]);
            let lo = nbrs.partition_point(|&x| x < target.0);
            for (i, &n) in nbrs.iter().enumerate().skip(lo) {
                if n != target.0 {
                    break;
                }
                let eid = v.edge_id(run.start + i);
                if self.segment_edge_live(eid.0) {
                    return Some(eid);
                }
            }
        }
        None
    }

    /// Calls `f` for every live edge at `node` in `dir` whose type passes `types`: segment
    /// edges oldest segment first, each run in (type, neighbor) order, then delta edges in
    /// commit order.
    #[inline]
    pub fn for_each_edge<F: FnMut(EdgeRef)>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) {
        let _ = self.try_for_each_edge(node, dir, types, |e| {
            f(e);
            ControlFlow::Continue(())
        });
    }

    /// Calls `emit` with each segment's view and every index range of `node`'s run in `dir`
    /// that holds allowed types (the whole run for `All`, one sub-run per listed type),
    /// oldest segment first, stopping when `emit` breaks. The shared walk of
    /// [`State::try_for_each_edge`] and [`State::try_for_each_neighbor_run`].
    #[inline]
    fn try_for_each_segment_run<F>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut emit: F,
    ) -> ControlFlow<()>
    where
        F: FnMut(SegView<'_>, std::ops::Range<usize>) -> ControlFlow<()>,
    {
        for s in &self.segs.segments {
            let v = s.view(dir);
            let run = v.run(node);
            if run.is_empty() {
                continue;
            }
            match types {
                TypeFilter::All => emit(v, run)?,
                TypeFilter::Only(list) => {
                    for t in list {
                        emit(v, v.type_run(run.clone(), *t))?;
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }

    /// The delta's edges at `node` in `dir` (all types, commit order), if any.
    #[inline]
    fn delta_edges(&self, node: NodeId, dir: EdgeDir) -> Option<&PVec<DeltaEdge>> {
        let delta = &self.delta.adj[dir.index()];
        if delta.is_empty() {
            None
        } else {
            delta.get(&node.0)
        }
    }

    /// Like [`State::for_each_edge`], stopping as soon as `f` breaks. Neighbor ids beyond
    /// the node bound (possible only in a damaged segment that passed structural checks)
    /// are skipped, never indexed.
    #[inline]
    pub fn try_for_each_edge<F: FnMut(EdgeRef) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) -> ControlFlow<()> {
        let check_dead = self.segs.any_edge_tombstones || !self.delta.deleted_edges.is_empty();
        let bound = self.node_bound;
        self.try_for_each_segment_run(node, dir, types, |v, range| {
            for (n, t, edge) in v.entries(range) {
                if n >= bound || (check_dead && !self.segment_edge_live(edge.0)) {
                    continue;
                }
                f(EdgeRef {
                    neighbor: NodeId(n),
                    edge,
                    edge_type: TypeId(t),
                })?;
            }
            ControlFlow::Continue(())
        })?;
        for e in self.delta_edges(node, dir).into_iter().flatten() {
            if types.allows(TypeId(e.edge_type)) {
                f(EdgeRef {
                    neighbor: NodeId(e.neighbor),
                    edge: EdgeId(e.edge),
                    edge_type: TypeId(e.edge_type),
                })?;
            }
        }
        ControlFlow::Continue(())
    }

    /// Like [`State::try_for_each_edge`], yielding only neighbor ids, in runs (see
    /// [`Adjacency::try_for_each_neighbor_run`](crate::traverse::Adjacency::try_for_each_neighbor_run)).
    /// Without tombstones each segment type run is one slice of the mapped neighbor array
    /// (4 bytes per edge read instead of 10); with them, and for delta edges, runs are
    /// single neighbors. Ids are not checked against the node bound: callers do.
    ///
    /// Runs come with [`RunEntry`] handles (see [`State::run_entry_edge`]) only while the
    /// state is one segment and nothing else: no delta edges, no deleted edges. Then a
    /// node's runs are its one sorted CSR run (or its allowed type runs, ascending), so
    /// the first entry naming a neighbor is the least (type, edge id) joining the two.
    #[inline]
    pub fn try_for_each_neighbor_run<F: FnMut(&[u32], RunEntry) -> ControlFlow<()>>(
        &self,
        node: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) -> ControlFlow<()> {
        let check_dead = self.segs.any_edge_tombstones || !self.delta.deleted_edges.is_empty();
        if check_dead {
            return self
                .try_for_each_edge(node, dir, types, |e| f(&[e.neighbor.0], RunEntry::NONE));
        }
        let named = self.run_entries_named();
        self.try_for_each_segment_run(node, dir, types, |v, range| {
            let entry = if named {
                run_entry(dir, &range)
            } else {
                RunEntry::NONE
            };
            f(v.neighbors().get(range).unwrap_or(&[]), entry)
        })?;
        for e in self.delta_edges(node, dir).into_iter().flatten() {
            if types.allows(TypeId(e.edge_type)) {
                f(&[e.neighbor], RunEntry::NONE)?;
            }
        }
        ControlFlow::Continue(())
    }

    /// Whether neighbor runs carry [`RunEntry`] handles: one segment, no delta edges and
    /// no deleted edges (see [`State::try_for_each_neighbor_run`]).
    #[inline]
    pub(crate) fn run_entries_named(&self) -> bool {
        self.segs.segments.len() == 1
            && !self.segs.any_edge_tombstones
            && self.delta.deleted_edges.is_empty()
            && self.delta.adj.iter().all(|a| a.is_empty())
    }

    /// The edge behind a handle [`State::try_for_each_neighbor_run`] handed out: its
    /// direction, type and id, read from the one segment's CSR entry. `None` for `NONE`,
    /// for a state that hands out no handles, and for a position beyond the arrays (only a
    /// handle from another state could name one).
    pub fn run_entry_edge(&self, entry: RunEntry) -> Option<(EdgeDir, TypeId, EdgeId)> {
        if entry == RunEntry::NONE || !self.run_entries_named() {
            return None;
        }
        let dir = if entry.0 & RUN_ENTRY_IN != 0 {
            EdgeDir::In
        } else {
            EdgeDir::Out
        };
        let at = (entry.0 & !RUN_ENTRY_IN) as usize;
        let v = self.segs.segments.first()?.view(dir);
        let t = *v.types().get(at)?;
        Some((dir, TypeId(t), v.edge_id(at)))
    }

    /// Calls `f` for every live edge at `node` in `dir` whose type passes `types` and whose
    /// other end is `neighbor`: the edges [`State::for_each_edge`] yields with that
    /// neighbor, found by a binary search per type run and segment (runs are sorted by
    /// type, then neighbor) plus a scan of the shorter of the two delta lists (`node`'s in
    /// `dir`, `neighbor`'s in the other direction; `apply` keeps them in step).
    pub fn edges_between<F: FnMut(EdgeRef)>(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) {
        let bound = self.node_bound;
        if neighbor.0 >= bound {
            return;
        }
        let check_dead = self.segs.any_edge_tombstones || !self.delta.deleted_edges.is_empty();
        for s in &self.segs.segments {
            let v = s.view(dir);
            let run = v.run(node);
            if run.is_empty() {
                continue;
            }
            if run.len() <= EDGES_BETWEEN_SCAN_MAX {
                // A short run is cheaper to scan than to search type run by type run.
                self.scan_run_between(v, run, neighbor, types, check_dead, &mut f);
                continue;
            }
            let mut emit = |type_run: std::ops::Range<usize>| {
                for (n, t, edge) in v.entries(v.neighbor_run(type_run, neighbor.0)) {
                    if n != neighbor.0 || (check_dead && !self.segment_edge_live(edge.0)) {
                        continue;
                    }
                    f(EdgeRef {
                        neighbor,
                        edge,
                        edge_type: TypeId(t),
                    });
                }
            };
            match types {
                TypeFilter::All => {
                    let mut rest = run;
                    while !rest.is_empty() {
                        let type_run = v.first_type_run(rest.clone());
                        if type_run.is_empty() {
                            break;
                        }
                        rest.start = type_run.end;
                        emit(type_run);
                    }
                }
                TypeFilter::Only(list) => {
                    for t in list {
                        emit(v.type_run(run.clone(), *t));
                    }
                }
            }
        }
        self.edges_between_delta(node, neighbor, dir, types, f);
    }

    /// The live entries of `run` (a node's run in segment view `v`) whose neighbor is
    /// `neighbor` and whose type passes `types`, found by scanning the run's neighbor ids
    /// (types and edge ids are read only for matches): the short-run path of
    /// [`State::edges_between`] and [`State::least_edge_between`].
    fn scan_run_between<F: FnMut(EdgeRef)>(
        &self,
        v: SegView<'_>,
        run: std::ops::Range<usize>,
        neighbor: NodeId,
        types: &TypeFilter,
        check_dead: bool,
        mut f: F,
    ) {
        let nbrs = v.neighbors().get(run.clone()).unwrap_or(&[]);
        for (i, &n) in nbrs.iter().enumerate() {
            if n != neighbor.0 {
                continue;
            }
            let at = run.start + i;
            // The type first: the edge id costs a random read of the position array.
            let Some(&t) = v.types().get(at) else {
                continue;
            };
            if !types.allows(TypeId(t)) {
                continue;
            }
            let edge = v.edge_id(at);
            if !check_dead || self.segment_edge_live(edge.0) {
                f(EdgeRef {
                    neighbor,
                    edge,
                    edge_type: TypeId(t),
                });
            }
        }
    }

    /// The delta's part of [`State::edges_between`]: a scan of the shorter of the two delta
    /// lists (`node`'s in `dir`, `neighbor`'s in the other direction; `apply` keeps them in
    /// step).
    fn edges_between_delta<F: FnMut(EdgeRef)>(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        mut f: F,
    ) {
        let (fwd, rev) = (
            &self.delta.adj[dir.index()],
            &self.delta.adj[1 - dir.index()],
        );
        if fwd.is_empty() {
            return;
        }
        let (Some(mine), Some(theirs)) = (fwd.get(&node.0), rev.get(&neighbor.0)) else {
            return;
        };
        let (list, other_end) = if mine.len() <= theirs.len() {
            (mine, neighbor.0)
        } else {
            (theirs, node.0)
        };
        for e in list {
            if e.neighbor == other_end && types.allows(TypeId(e.edge_type)) {
                f(EdgeRef {
                    neighbor,
                    edge: EdgeId(e.edge),
                    edge_type: TypeId(e.edge_type),
                });
            }
        }
    }

    /// The least live edge by (type, edge id) among those [`State::edges_between`] yields.
    /// Per segment, in the shorter of `node`'s run in `dir` and `neighbor`'s in the opposite
    /// direction (a hub is never the end searched when the other end is small), the allowed
    /// types within the run's type span are tried in ascending order, each with one binary
    /// search for (type, neighbor) in the run (runs are sorted by type, neighbor, edge id),
    /// stopping at the first type that has a live edge; short runs, and runs spanning more
    /// than [`LEAST_EDGE_TYPES_MAX`] types when every type is allowed, are scanned.
    pub fn least_edge_between(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
    ) -> Option<EdgeRef> {
        self.least_edge_between_upto(node, neighbor, dir, types, TypeId(u16::MAX))
    }

    /// [`State::least_edge_between`] for a caller that needs only edges of type at most
    /// `max_type`: sorted runs are not searched for greater types, so the answer is `None`
    /// or an edge of greater type when no smaller one exists.
    pub fn least_edge_between_upto(
        &self,
        node: NodeId,
        neighbor: NodeId,
        dir: EdgeDir,
        types: &TypeFilter,
        max_type: TypeId,
    ) -> Option<EdgeRef> {
        if neighbor.0 >= self.node_bound {
            return None;
        }
        let check_dead = self.segs.any_edge_tombstones || !self.delta.deleted_edges.is_empty();
        let mut best: Option<(u16, u64)> = None;
        let mut offer = |t: u16, e: u64| {
            if best.is_none_or(|b| (t, e) < b) {
                best = Some((t, e));
            }
        };
        for s in &self.segs.segments {
            // Every edge node → neighbor in `dir` is also in neighbor's run in the opposite
            // direction (same id and type), so the shorter of the two runs is searched.
            let (out, back) = (s.view(dir), s.view(dir.reverse()));
            let (run, back_run) = (out.run(node), back.run(neighbor));
            if run.is_empty() || back_run.is_empty() {
                continue;
            }
            let (v, run, target) = if back_run.len() < run.len() {
                (back, back_run, node)
            } else {
                (out, run, neighbor)
            };
            // A short run is scanned by its neighbor ids alone (its types are read only on
            // a match), so its type span is not even looked up.
            let span = if run.len() <= EDGES_BETWEEN_SCAN_MAX {
                None
            } else {
                v.type_span(run.clone())
            };
            let many_types = |(lo, hi): (u16, u16)| {
                // (A damaged, unsorted run can have hi < lo: then nothing is tried.)
                matches!(types, TypeFilter::All)
                    && usize::from(hi.saturating_sub(lo)) >= LEAST_EDGE_TYPES_MAX
            };
            let Some((lo, hi)) = span.filter(|&s| !many_types(s)) else {
                self.scan_run_between(v, run, target, types, check_dead, |e| {
                    offer(e.edge_type.0, e.edge.0)
                });
                continue;
            };
            // Whether type `t` joins the pair; offers this segment's least such edge.
            // The entry is checked before its edge id is read: the id costs a random read
            // of the position array, and most searches find no entry.
            let (nbrs, tys) = (v.neighbors(), v.types());
            let mut try_type = |t: u16| -> bool {
                for i in v.pair_run(run.clone(), TypeId(t), target.0) {
                    if nbrs.get(i) != Some(&target.0) || tys.get(i) != Some(&t) {
                        return false;
                    }
                    let edge = v.edge_id(i);
                    if !check_dead || self.segment_edge_live(edge.0) {
                        // Ascending types and edge ids: the first live entry is the least.
                        offer(t, edge.0);
                        return true;
                    }
                }
                false
            };
            match types {
                TypeFilter::Only(list) => {
                    for t in list {
                        if (lo..=hi.min(max_type.0)).contains(&t.0) && try_type(t.0) {
                            break;
                        }
                    }
                }
                TypeFilter::All => {
                    for t in lo..=hi.min(max_type.0) {
                        if try_type(t) {
                            break;
                        }
                    }
                }
            }
        }
        self.edges_between_delta(node, neighbor, dir, types, |e| {
            offer(e.edge_type.0, e.edge.0)
        });
        best.map(|(t, e)| EdgeRef {
            neighbor,
            edge: EdgeId(e),
            edge_type: TypeId(t),
        })
    }

    /// Stored edges at `node` in `dir` (tombstoned ones included): a cheap upper bound.
    #[inline]
    pub fn degree_estimate(&self, node: NodeId, dir: EdgeDir) -> u32 {
        let mut d: u32 = self
            .segs
            .segments
            .iter()
            .map(|s| s.view(dir).degree(node))
            .fold(0, u32::saturating_add);
        let delta = &self.delta.adj[dir.index()];
        if !delta.is_empty()
            && let Some(list) = delta.get(&node.0)
        {
            d = d.saturating_add(u32::try_from(list.len()).unwrap_or(u32::MAX));
        }
        d
    }

    /// Starts loading the CSR run bounds of `node` in `dir` in every segment (see
    /// [`Adjacency::prefetch_degree`](crate::traverse::Adjacency::prefetch_degree)).
    #[inline]
    pub fn prefetch_degree(&self, node: NodeId, dir: EdgeDir) {
        for s in &self.segs.segments {
            crate::format::segment::prefetch_at(s.file.csr().offsets[dir.index()], node.index());
        }
    }

    /// Starts loading the first neighbour ids and types of `node`'s run in `dir` in every
    /// segment (see [`Adjacency::prefetch_edges`](crate::traverse::Adjacency::prefetch_edges));
    /// reads the run bounds, which a degree look-up usually brought into cache already.
    #[inline]
    pub fn prefetch_edges(&self, node: NodeId, dir: EdgeDir) {
        for s in &self.segs.segments {
            let view = s.view(dir);
            let run = view.run(node);
            if !run.is_empty() {
                view.prefetch_entry(run.start);
            }
        }
    }

    /// The sum of `degree_estimate` over all nodes in `dir`: every stored segment entry
    /// plus every delta edge, O(segments).
    pub fn degree_total(&self, dir: EdgeDir) -> u64 {
        let stored: u64 = self
            .segs
            .segments
            .iter()
            .map(|s| s.view(dir).neighbors().len() as u64)
            .sum();
        stored + self.delta.edges.len() as u64
    }

    /// Nodes that may have an edge of an allowed type in `dir`.
    pub fn nodes_with_edges(&self, dir: EdgeDir, types: &TypeFilter) -> RoaringBitmap {
        let mut out = RoaringBitmap::new();
        for s in &self.segs.segments {
            let bms = &s.type_bitmaps[dir.index()];
            match types {
                TypeFilter::All => bms.iter().for_each(|b| out |= b),
                TypeFilter::Only(list) => list
                    .iter()
                    .filter_map(|t| bms.get(t.0 as usize))
                    .for_each(|b| out |= b),
            }
        }
        for (node, list) in &self.delta.adj[dir.index()] {
            if list.iter().any(|e| types.allows(TypeId(e.edge_type))) {
                out.insert(*node);
            }
        }
        out
    }

    /// Every live edge incident to `node` (both directions; a self-loop once).
    pub fn incident_edges(&self, node: NodeId) -> Vec<(EdgeId, NodeId, NodeId, TypeId)> {
        let mut out = Vec::new();
        self.for_each_edge(node, EdgeDir::Out, &TypeFilter::All, |e| {
            out.push((e.edge, node, e.neighbor, e.edge_type))
        });
        self.for_each_edge(node, EdgeDir::In, &TypeFilter::All, |e| {
            if e.neighbor != node {
                out.push((e.edge, e.neighbor, node, e.edge_type));
            }
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{RUN_ENTRY_IN, run_entry};
    use crate::graph::{EdgeDir, RunEntry};

    /// Handles name (direction, position); a run reaching the direction bit gets none, and
    /// `nth` of `NONE` stays `NONE`.
    #[test]
    fn run_entry_handles_fit_below_the_direction_bit() {
        assert_eq!(run_entry(EdgeDir::Out, &(0..5)), RunEntry(0));
        assert_eq!(
            run_entry(EdgeDir::In, &(7..9)).nth(1),
            RunEntry(RUN_ENTRY_IN | 8)
        );
        let last = RUN_ENTRY_IN as usize - 1;
        assert_eq!(
            run_entry(EdgeDir::In, &(3..last)).nth(last - 4).0,
            u32::MAX - 1
        );
        assert_eq!(run_entry(EdgeDir::Out, &(3..last + 1)), RunEntry::NONE);
        assert_eq!(run_entry(EdgeDir::In, &(3..last + 1)), RunEntry::NONE);
        assert_eq!(RunEntry::NONE.nth(3), RunEntry::NONE);
    }
}
