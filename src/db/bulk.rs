//! Bulk load: many nodes and edges written straight into one new segment.
//!
//! A [`BulkLoad`] accumulates keys, node properties and edges in memory; on
//! [`Database::bulk_load`] the writer checkpoints the delta, maps keys to ids (existing
//! nodes keep theirs), drops duplicate triples (within the input, first occurrence wins,
//! and against the database), assigns dense edge ids in input order and writes one segment.
//! The manifest switch is the commit point, so a bulk load is all or nothing. Cost:
//! O(E + N) plus sorting each node's out-edges, with no WAL traffic.
//!
//! Keys are interned in one string behind an open-addressing table (see `keys`): no
//! allocation per key, and a look-up mostly reads one cache line. Edges are kept as
//! columns of local numbers (a load made by [`BulkLoad::spilling_into`] moves them to a
//! scratch file in chunks as they are added, see `added`). Duplicates are found by
//! building the out-direction CSR of all input edges, where equal triples sit next to each
//! other in input order; that CSR, less the duplicates, is the segment's out-direction as
//! it is. Nodes' texts are analysed on
//! worker threads (see `analyze`).

use std::collections::{BTreeMap, HashMap};

use foldhash::fast::RandomState;

use super::batch::{check_key, check_type_name};
use super::build::{Csr, EdgeRows, SegmentContent, write_segment};
use super::commit::now_ms;
use super::handle::Database;
use super::segment::Segment;
use super::state::{SegmentSet, State};
use crate::error::{Error, Result};
use crate::format::manifest::Manifest;
use crate::format::record::encode_edge_props;
use crate::graph::{NodeId, TypeId, limits};
use crate::model::{EdgeProps, Node, NodeProps};

mod added;
mod analyze;
mod external;
mod keep;
mod keys;
mod merge;
mod order;
mod spill;

use added::AddedEdges;
use keep::Keep;
use keys::Keys;

/// Nodes and edges to load in one atomic step.
#[derive(Debug, Default)]
pub struct BulkLoad {
    keys: Keys,
    /// Properties given for nodes, by local index (the last given wins).
    props: BTreeMap<u32, NodeProps>,
    types: HashMap<Box<str>, u16, RandomState>,
    type_list: Vec<Box<str>>,
    /// Edges by local index: source, target and type, in memory or partly spilled (see
    /// `added`).
    edges: AddedEdges,
    /// `f32::to_bits` of every edge's weight; None while all are 1.0.
    weights: Option<Vec<u32>>,
    edge_props: Vec<(u32, String)>,
    /// Given validity intervals of edges, by edge index (`None` start: the load's time).
    edge_validity: Vec<(u32, Option<u64>, Option<u64>)>,
    /// Given validity intervals of nodes, by local index (the last given wins).
    node_validity: BTreeMap<u32, (Option<u64>, Option<u64>)>,
    /// The time written for the load (node and edge timestamps, the manifest's checkpoint
    /// time); None: now.
    timestamp_ms: Option<u64>,
    /// Store the vectors without their HNSW graph (see [`BulkLoad::defer_vector_graph`]).
    defer_vector_graph: bool,
    /// The memory the edge build may take (see [`BulkLoad::memory_limit`]); None: the
    /// default, [`default_memory_limit`].
    memory_limit: Option<u64>,
}

/// A phase of [`Database::bulk_load_with_progress`], in the order they run. Each is
/// reported with (done, total) in its own unit, starting at 0 and ending at total.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BulkPhase {
    /// Keys to node ids (unit: keys).
    Ids,
    /// Out of core only: the input edges (read back from their scratch file when the load
    /// spilled them as they were added, see [`BulkLoad::spilling_into`]) sorted in runs
    /// that fit the memory limit and written to scratch files, before the nodes (unit:
    /// edges).
    Spill,
    /// Nodes' records, embeddings and the analysis of their texts for the text index
    /// (unit: keys, each key a new or updated node or one left as it is); most of a
    /// text-heavy load.
    Nodes,
    /// Out of core only: the runs merged into the out-direction, with the duplicate check;
    /// the in-direction's runs are written meanwhile (unit: edges).
    MergeOut,
    /// Out of core only: the in-direction's runs merged (unit: kept edges).
    MergeIn,
    /// The out-direction CSR of every input edge and the duplicate check (unit: edges; in
    /// memory only).
    BuildOut,
    /// The in-direction CSR (unit: edges; runs on a second thread alongside `Write`; in
    /// memory only).
    BuildIn,
    /// Writing the segment's sections (unit: steps).
    Write,
    /// fsync of the new file, its verification and the manifest switch (unit: steps).
    Sync,
}

impl BulkPhase {
    /// A short name for progress lines: `ids`, `spill runs`, `nodes`, `merge out-CSR`,
    /// `merge in-CSR`, `build out-CSR`, `build in-CSR`, `write`, `fsync`.
    pub fn name(self) -> &'static str {
        match self {
            BulkPhase::Ids => "ids",
            BulkPhase::Nodes => "nodes",
            BulkPhase::Spill => "spill runs",
            BulkPhase::MergeOut => "merge out-CSR",
            BulkPhase::MergeIn => "merge in-CSR",
            BulkPhase::BuildOut => "build out-CSR",
            BulkPhase::BuildIn => "build in-CSR",
            BulkPhase::Write => "write",
            BulkPhase::Sync => "fsync",
        }
    }
}

/// A progress callback: `(phase, done, total)`. Called from the loading thread and from
/// the thread that builds the in-direction, often (keep it cheap: a few atomic stores).
pub type BulkProgress<'a> = &'a (dyn Fn(BulkPhase, u64, u64) + Sync);

/// Progress reports within a phase are at most this many items apart.
const PROGRESS_EVERY: usize = 1 << 20;

/// Progress reports of [`BulkPhase::Nodes`] are at most this many nodes apart (a node
/// costs microseconds there, not nanoseconds: a million nodes take seconds).
const NODE_PROGRESS_EVERY: usize = 1 << 14;

/// What a bulk load did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BulkReport {
    /// Nodes created.
    pub nodes_created: u64,
    /// Existing nodes whose properties were replaced.
    pub nodes_updated: u64,
    /// Edges created.
    pub edges_created: u64,
    /// Edges skipped because the triple repeated in the input or already existed.
    pub duplicates_skipped: u64,
    /// The segment written (None when there was nothing to load).
    pub segment: Option<u64>,
    /// Its size.
    pub bytes: u64,
}

impl BulkLoad {
    /// An empty load. Its edges stay in memory as they are added (10 bytes each) until
    /// [`Database::bulk_load`]; for a load whose memory is bounded while it is added, see
    /// [`BulkLoad::spilling_into`].
    pub fn new() -> BulkLoad {
        BulkLoad::default()
    }

    /// An empty load for `db` whose edges are bounded in memory while they are added:
    /// whenever the edges held take an eighth of `memory_limit` (bytes; see
    /// [`BulkLoad::memory_limit`], which this sets), they are appended to a scratch file in
    /// `db`'s directory (`bulk-input-*.tmp`, 10 bytes per edge) and freed; the load reads
    /// them back in input order. The load's result, and the segment's bytes, are the same
    /// as with [`BulkLoad::new`]. The file is removed when the load is loaded, fails or is
    /// dropped unused, and by the next writable open after a crash. Load it into `db` (it
    /// would work with another database, but the scratch file stays in `db`'s directory).
    /// Pass [`default_memory_limit`] for the default.
    ///
    /// [`BulkLoad::edge`] may then fail with an I/O error of the scratch file; the edge is
    /// not added then, and the load is otherwise unchanged.
    ///
    /// # Errors
    /// `ReadOnly` for a database opened read-only.
    pub fn spilling_into(db: &Database, memory_limit: u64) -> Result<BulkLoad> {
        if db.shared.lock.is_none() {
            return Err(Error::ReadOnly);
        }
        let mut load = BulkLoad::new();
        load.memory_limit = Some(memory_limit);
        load.edges.target = Some(added::Target {
            io: std::sync::Arc::clone(&db.shared.options.io),
            dir: db.shared.dir.clone(),
        });
        Ok(load)
    }

    /// Writes `ms` (milliseconds since the Unix epoch) as the time of every node and edge
    /// the load writes and of the manifest switch, instead of the clock: the same input
    /// into a new database then gives the same bytes except for the random database id
    /// (and the checksums that cover it).
    pub fn set_timestamp(&mut self, ms: u64) {
        self.timestamp_ms = Some(ms);
    }

    /// Store the loaded embeddings flat, without the approximate-search (HNSW) graph a
    /// segment of at least [`Options::vector_graph_min`](crate::Options::vector_graph_min)
    /// vectors otherwise
    /// gets: the load skips the graph build (most of a large load's time) and vector
    /// searches scan those rows exactly until [`Database::index_vectors`] adds the graph
    /// (as vector stores without an index do). Results are the same either way, up to the
    /// approximate search's misses; only speed differs.
    pub fn defer_vector_graph(&mut self, defer: bool) {
        self.defer_vector_graph = defer;
    }

    /// Bounds the memory the load's edge build takes (the duplicate check and both CSR
    /// directions) to about `bytes`: when the in-memory build would need more, the edges
    /// are sorted out of core, in runs spilled to scratch files in the database's
    /// directory, and merged into the segment. The segment's bytes are the same either
    /// way; only time, memory and scratch disk space (about 27 bytes per edge at most)
    /// differ. The build's working memory is what `bytes` leaves after what the load
    /// holds meanwhile (the edges held, the key table, the node records). Default:
    /// [`default_memory_limit`].
    ///
    /// The edges as added (10 bytes each) are bounded by it only in a load made by
    /// [`BulkLoad::spilling_into`], which keeps at most an eighth of `bytes` of them in
    /// memory and spills the rest to a scratch file as they are added; in a
    /// [`BulkLoad::new`] load they stay in memory until the load. Not bounded by it in
    /// either: the key table (the keys' bytes plus about 16 bytes per key), the node
    /// records and properties, the edges' weights (4 bytes per edge once one is not 1.0),
    /// properties and validity intervals as added.
    pub fn memory_limit(&mut self, bytes: u64) {
        self.memory_limit = Some(bytes);
    }

    fn local(&mut self, key: &str) -> Result<u32> {
        let next = self.keys.len();
        self.keys.intern(key, |key| {
            check_key(key)?;
            u32::try_from(next)
                .ok()
                .filter(|&i| u64::from(i) < limits::NODES_MAX)
                .ok_or_else(|| Error::invalid("too many nodes in one bulk load"))
        })
    }

    /// Adds node `key` with `props` (replacing the properties of an existing node).
    ///
    /// # Errors
    /// `InvalidArgument` for a bad key or properties over the limits.
    pub fn node(&mut self, key: &str, props: NodeProps) -> Result<()> {
        super::batch::check_props(&props)?;
        let i = self.local(key)?;
        self.props.insert(i, props);
        Ok(())
    }

    /// Gives node `key` the validity interval [`valid_from`, `valid_to`) (ms since the
    /// Unix epoch; `None` start: the load's time, or the node's own start when it exists;
    /// `None` end: never). Applies when the load writes the node: a new one, or an
    /// existing one given properties with [`BulkLoad::node`].
    ///
    /// # Errors
    /// `InvalidArgument` for a bad key or an interval that ends before it starts.
    pub fn node_validity(
        &mut self,
        key: &str,
        valid_from: Option<u64>,
        valid_to: Option<u64>,
    ) -> Result<()> {
        if let Some(from) = valid_from {
            super::batch::check_interval(from, valid_to)?;
        }
        let i = self.local(key)?;
        self.node_validity.insert(i, (valid_from, valid_to));
        Ok(())
    }

    /// Adds edge `source -edge_type-> target`; missing nodes are created with default
    /// properties.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad key, type name or properties; for a load made by
    /// [`BulkLoad::spilling_into`], I/O errors of its scratch file (the edge is not added
    /// then).
    pub fn edge(
        &mut self,
        source: &str,
        edge_type: &str,
        target: &str,
        props: EdgeProps,
    ) -> Result<()> {
        check_type_name(edge_type)?;
        check_key(source)?;
        check_key(target)?;
        super::batch::check_edge_props(&props)?;
        // Before anything changes: an I/O error leaves the load as it was.
        self.edges.make_room(self.memory_limit)?;
        let s = self.local(source)?;
        let t = self.local(target)?;
        let ty = match self.types.get(edge_type) {
            Some(&x) => x,
            None => {
                let x = u16::try_from(self.type_list.len())
                    .ok()
                    .filter(|&x| (x as usize) < limits::EDGE_TYPES_MAX)
                    .ok_or_else(|| Error::invalid("too many edge types"))?;
                self.types.insert(edge_type.into(), x);
                self.type_list.push(edge_type.into());
                x
            }
        };
        let idx = self.edges.len();
        if props.valid_from.is_some() || props.valid_to.is_some() {
            if let Some(from) = props.valid_from {
                super::batch::check_interval(from, props.valid_to)?;
            }
            let idx = u32::try_from(idx)
                .map_err(|_| Error::invalid("too many edges in one bulk load"))?;
            self.edge_validity
                .push((idx, props.valid_from, props.valid_to));
        }
        if !props.props.is_empty() {
            let idx = u32::try_from(idx)
                .map_err(|_| Error::invalid("too many edges in one bulk load"))?;
            self.edge_props.push((idx, encode_edge_props(&props.props)));
        }
        let weight = props.weight.to_bits();
        match &mut self.weights {
            Some(w) => w.push(weight),
            None if weight == 1.0f32.to_bits() => {}
            None => {
                let mut w = vec![1.0f32.to_bits(); idx];
                w.push(weight);
                self.weights = Some(w);
            }
        }
        self.edges.push(s, t, ty);
        if self.edges.len() as u64 > limits::SEGMENT_EDGES_MAX {
            return Err(Error::invalid("too many edges in one bulk load"));
        }
        Ok(())
    }

    /// Fetches the index entries of `keys` from memory together, ahead of the
    /// [`edge`](BulkLoad::edge) calls that name them; changes nothing else.
    ///
    /// Optional: on loads of millions of distinct keys, each key look-up waits for memory;
    /// calling this with the keys of the next few edges (say 16) lets those waits overlap
    /// instead of queueing, which made adding Kronecker scale-20 edges about twice as fast.
    pub fn prefetch(&self, keys: &[&str]) {
        self.keys.warm(keys);
    }

    /// Nodes named so far.
    pub fn node_count(&self) -> usize {
        self.keys.len()
    }

    /// Edges added so far (duplicates included).
    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }
}

impl Database {
    /// Loads `load` atomically by building one segment directly. Far faster than one
    /// commit per edge; the delta is checkpointed first.
    ///
    /// # Errors
    /// `InvalidArgument` past a limit; I/O errors; `ReadOnly`; `WriterPoisoned`. On error
    /// nothing of the load is visible.
    pub fn bulk_load(&self, load: BulkLoad) -> Result<BulkReport> {
        self.bulk_load_with_progress(load, &|_, _, _| {})
    }

    /// [`Database::bulk_load`], reporting each [`BulkPhase`] to `progress` as it goes.
    ///
    /// # Errors
    /// As [`Database::bulk_load`].
    pub fn bulk_load_with_progress(
        &self,
        load: BulkLoad,
        progress: BulkProgress<'_>,
    ) -> Result<BulkReport> {
        let mut w = self.shared.writer.lock();
        let r = self.bulk_load_locked(&mut w, load, progress);
        w.poison_on_io("bulk load", r)
    }

    fn bulk_load_locked(
        &self,
        w: &mut super::handle::Writer,
        load: BulkLoad,
        progress: BulkProgress<'_>,
    ) -> Result<BulkReport> {
        self.checkpoint_locked(w)?;
        let lock = self.shared.lock.as_ref().ok_or(Error::ReadOnly)?;
        let _g = lock.lock()?;
        super::open::catch_up(
            &self.shared.options.io,
            &self.shared.dir,
            w,
            true,
            &mut super::open::RecoveryReport::default(),
        )?;
        // Commits from other processes may have arrived between the checkpoint and the
        // lock; the new segment must come after everything, so flush them too.
        if !w.state.delta.is_empty() {
            self.checkpoint_held(w)?;
        }
        let st = w.state.clone();
        let now = load.timestamp_ms.unwrap_or_else(now_ms);
        let mut report = BulkReport::default();
        let mut next = State::clone(&st);
        let BulkLoad {
            keys,
            mut props,
            type_list,
            edges,
            mut weights,
            edge_props,
            edge_validity,
            mut node_validity,
            defer_vector_graph,
            memory_limit,
            ..
        } = load;

        let nkeys = keys.len() as u64;
        let (existing, ids) = assign_ids(&st, &mut next, &keys, &edges, &mut report, progress)?;
        let type_map = map_types(&mut next, &type_list)?;
        // Edges to global ids, in place, a chunk at a time (see `added`).
        let to_global =
            |sources: &mut [u32], targets: &mut [u32], types: &mut [u16]| -> Result<()> {
                for x in sources.iter_mut().chain(targets.iter_mut()) {
                    *x = ids.get(*x as usize).copied().ok_or_else(bad_local)?;
                }
                for t in types.iter_mut() {
                    *t = type_map.get(*t as usize).copied().ok_or_else(bad_local)?;
                }
                Ok(())
            };
        let stored = |s: u32, t: u16, n: u32| {
            s < st.node_bound
                && n < st.node_bound
                && st.edge_by_triple(NodeId(s), TypeId(t), NodeId(n)).is_some()
        };
        let dir = &self.shared.dir;
        let seg_id = w.manifest.next_segment_id;
        let io = self.shared.io();
        // The scratch files of an out-of-core build, removed when this returns.
        let mut spill = spill::Spill::new(io, dir, seg_id);
        let limit = memory_limit.unwrap_or_else(default_memory_limit);
        // Out of core, the edges are spilled in sorted runs before the nodes' records are
        // made, so that the input columns are freed before the records fill memory.
        let input = if external::fits_in_memory(limit, edges.len(), next.node_bound) {
            let mut columns = edges.into_columns()?;
            to_global(&mut columns.0, &mut columns.1, &mut columns.2)?;
            EdgeInput::Columns(columns)
        } else {
            // What the load holds meanwhile: the edges in memory, the key table, the ids.
            let resident = edges.heap_bytes()
                + weights.as_ref().map_or(0, heap_bytes)
                + keys.heap_bytes()
                + heap_bytes(&existing)
                + heap_bytes(&ids);
            let runs = external::spill(
                &mut spill,
                limit,
                resident,
                next.node_bound,
                edges,
                &to_global,
                progress,
            )?;
            EdgeInput::Runs(runs)
        };
        progress(BulkPhase::Nodes, 0, nkeys);
        let mut content = SegmentContent {
            embedding_dim: st.embedding_dim(),
            vector_graph_min: (!defer_vector_graph).then_some(self.shared.options.vector_graph_min),
            ..SegmentContent::default()
        };
        let mut embedding_dim = content.embedding_dim;
        // The embeddings' rows in one allocation (a dimension that differs is refused below).
        let mut embeddings = props.values().filter_map(|p| p.embedding.as_ref());
        if let Some(first) = embeddings.next() {
            content.vectors.reserve(1 + embeddings.count(), first.len());
        }
        // Nodes' texts are analysed on worker threads (see `analyze`).
        analyze::push_nodes(&mut content, |sink| {
            for (i, (&id, old)) in ids.iter().zip(&existing).enumerate() {
                if i > 0 && i.is_multiple_of(NODE_PROGRESS_EVERY) {
                    progress(BulkPhase::Nodes, i as u64, nkeys);
                }
                let key = keys.get(i);
                let (id, old) = (NodeId(id), old.is_some());
                // Local indices fit in u32 (`local` checks).
                let given = u32::try_from(i).ok().and_then(|i| props.remove(&i));
                let props = match (given, old) {
                    (Some(p), _) => Some(p),
                    (None, false) => Some(NodeProps::default()),
                    (None, true) => None,
                };
                if let Some(props) = props {
                    if let Some(e) = &props.embedding {
                        super::vector::check_dimension(embedding_dim, e.len(), "an embedding")?;
                        embedding_dim = embedding_dim.or(u32::try_from(e.len()).ok());
                    }
                    // A replaced node keeps its creation time and interval, unless the
                    // load gives one.
                    let (created_at, mut valid_from, mut valid_to) = if old {
                        report.nodes_updated += 1;
                        st.node(id)?.map_or((now, now, None), |n| {
                            (n.created_at, n.valid_from, n.valid_to)
                        })
                    } else {
                        (now, now, None)
                    };
                    let given = u32::try_from(i).ok().and_then(|i| node_validity.remove(&i));
                    if let Some((from, to)) = given {
                        valid_from = from.unwrap_or(valid_from);
                        valid_to = to;
                        super::batch::check_interval(valid_from, valid_to)?;
                    }
                    sink.push(Node {
                        id,
                        key: key.to_string(),
                        props,
                        created_at,
                        updated_at: now,
                        valid_from,
                        valid_to,
                    })?;
                }
            }
            Ok(())
        })?;
        content.embedding_dim = embedding_dim;
        drop(keys);
        drop(ids);
        drop(existing);
        progress(BulkPhase::Nodes, nkeys, nkeys);
        let built = match input {
            EdgeInput::Columns(columns) => {
                build_in_memory(next.node_bound, columns, &stored, progress)?
            }
            EdgeInput::Runs(runs) => {
                let ntypes = next.types.len();
                // What the load holds meanwhile: the node records, their text index
                // documents, the weights.
                // (A record's buffer counted to the allocator's 16-byte granule.)
                let resident = heap_bytes(&content.nodes)
                    + content
                        .nodes
                        .iter()
                        .map(|(_, r)| heap_bytes(r).next_multiple_of(16))
                        .sum::<u64>()
                    + (content.text.docs() * 16) as u64
                    + weights.as_ref().map_or(0, heap_bytes);
                let ext = external::merge(&mut spill, runs, resident, ntypes, &stored, progress)?;
                BuiltEdges {
                    keep: ext.keep,
                    dropped: ext.dropped,
                    type_counts: ext.type_counts,
                    directions: Directions::Spilled(Box::new(ext.edges)),
                }
            }
        };
        let keep = &built.keep;
        if let Some(w) = &mut weights {
            retain_kept(w, keep);
        }
        let (rows_props, rows_validity) = kept_rows(keep, edge_props, edge_validity, now)?;
        for (t, &c) in built.type_counts.iter().enumerate() {
            if let Some(count) = next.type_counts.get_mut(t) {
                *count += c;
            }
        }
        let kept = keep.kept();
        report.duplicates_skipped = built.dropped;
        report.edges_created = kept;
        let base = next.next_edge_id;
        next.next_edge_id = base + kept;
        if kept == 0 && content.nodes.is_empty() {
            return Ok(report);
        }
        match built.directions {
            Directions::Memory { columns, out } => {
                content.edges = EdgeRows::dense(base, now, columns, weights, &rows_props)?;
                content.out_csr = Some(out);
            }
            Directions::Spilled(edges) => {
                let len = usize::try_from(kept)
                    .map_err(|_| Error::invalid("too many edges in one bulk load"))?;
                content.edges =
                    EdgeRows::dense_without_columns(base, now, len, weights, &rows_props)?;
                content.spilled = Some(*edges);
            }
        }
        for (row, from, to) in rows_validity {
            content.edges.set_validity(base + row, now, from, to);
        }
        content.progress = Some(super::build::ProgressHook(progress));
        content.summary = super::maintenance::summary_of(&next);
        report.bytes = write_segment(io, dir, seg_id, self.shared.db_id, st.lsn, content)
            .inspect_err(|_| discard_unpublished(io, dir, seg_id))?;
        drop(spill);
        self.publish_loaded(w, &st, seg_id, now)?;
        report.segment = Some(seg_id);
        progress(BulkPhase::Sync, 1, 1);
        Ok(report)
    }

    /// Opens and verifies the load's new segment `seg_id` and makes it part of the
    /// database: a new manifest listing it after the segments of `st`, and the state
    /// read from them.
    fn publish_loaded(
        &self,
        w: &mut super::handle::Writer,
        st: &State,
        seg_id: u64,
        now: u64,
    ) -> Result<()> {
        let dir = &self.shared.dir;
        let io = &self.shared.options.io;
        // Verified without keeping the new file's pages mapped: the process's resident
        // memory does not grow with the segment (see `verify_releasing`).
        let seg = Segment::open(io, dir, seg_id, self.shared.db_id)
            .and_then(|seg| seg.file.verify_releasing().map(|()| seg))
            .inspect_err(|_| discard_unpublished(&**io, dir, seg_id))?;
        let mut segments = st.segs.segments.clone();
        segments.push(seg);
        let m = Manifest {
            generation: w.manifest.generation + 1,
            checkpoint_time_ms: now,
            next_segment_id: seg_id + 1,
            segments: segments.iter().map(|s| s.file.id).collect(),
            ..w.manifest.clone()
        };
        self.switch_manifest(
            w,
            m,
            State::from_segments(SegmentSet::new(segments), 0, st.lsn),
            None,
        )
    }
}

/// Removes what a failed load wrote of segment `seg_id` before any manifest named it (the
/// staging file or the segment), so a large load that fails does not hold its size on
/// disk until the next open collects it. Best effort: what cannot be removed now, that
/// open removes.
fn discard_unpublished(io: &dyn crate::storage::io::Io, dir: &std::path::Path, seg_id: u64) {
    let name = crate::storage::segment_file_name(seg_id);
    let _ = io.remove_file(&dir.join(format!("{name}.tmp")));
    let _ = io.remove_file(&dir.join(name));
}

/// Keys to ids: existing nodes keep theirs (returned as `existing`, one per key), new
/// ones are numbered hubs first (see `order`) from `next.node_bound` on, counted in
/// `next` and `report`. Returns `(existing, ids)`, the id of each key.
fn assign_ids(
    st: &State,
    next: &mut State,
    keys: &Keys,
    edges: &AddedEdges,
    report: &mut BulkReport,
    progress: BulkProgress<'_>,
) -> Result<(Vec<Option<NodeId>>, Vec<u32>)> {
    let nkeys = keys.len() as u64;
    progress(BulkPhase::Ids, 0, nkeys);
    let existing: Vec<Option<NodeId>> = (0..keys.len())
        .map(|i| {
            if i > 0 && i.is_multiple_of(PROGRESS_EVERY) {
                progress(BulkPhase::Ids, i as u64, nkeys);
            }
            st.node_id(keys.get(i))
        })
        .collect();
    let degree = edges.degrees(keys.len())?;
    let mut ids: Vec<u32> = existing.iter().map(|e| e.map_or(0, |id| id.0)).collect();
    // `existing`, `degree` and `ids` have one entry per key, and the order names local
    // numbers below `degree.len()`, so neither index can be out of bounds.
    for local in order::new_node_order(&degree, |i| existing[i].is_none()) {
        ids[local as usize] = next.node_bound;
        next.node_bound = next
            .node_bound
            .checked_add(1)
            .filter(|&b| u64::from(b) <= limits::NODES_MAX)
            .ok_or_else(|| Error::invalid("node id space exhausted"))?;
        next.live_nodes += 1;
        report.nodes_created += 1;
    }
    drop(degree);
    progress(BulkPhase::Ids, nkeys, nkeys);
    Ok((existing, ids))
}

/// The load's edge type names to type ids, new types added to `next` (as a commit's
/// `NewType` would).
fn map_types(next: &mut State, type_list: &[Box<str>]) -> Result<Vec<u16>> {
    let mut type_map = Vec::with_capacity(type_list.len());
    for name in type_list {
        let id = match next.type_ids.get(&**name) {
            Some(&t) => t,
            None => {
                // The database's types and the load's together stay within the limit.
                let id = super::batch::next_type_id(next)?;
                let op = crate::format::record::WalOp::NewType {
                    id,
                    name: name.to_string(),
                };
                next.apply(&op).map_err(Error::invalid)?;
                id.0
            }
        };
        type_map.push(id);
    }
    Ok(type_map)
}

/// The properties and validity intervals given for edges (by input index), moved to the
/// rows of the edges kept: edge ids are dense in input order, so the row of a kept edge
/// is its rank. A validity without a start starts at `now`.
#[allow(clippy::type_complexity, reason = "two row lists, named at the call")]
fn kept_rows(
    keep: &Keep,
    edge_props: Vec<(u32, String)>,
    edge_validity: Vec<(u32, Option<u64>, Option<u64>)>,
    now: u64,
) -> Result<(Vec<(u32, String)>, Vec<(u64, u64, Option<u64>)>)> {
    let mut rows_props = Vec::with_capacity(edge_props.len());
    for (i, p) in edge_props {
        if keep.get(i as usize) {
            rows_props.push((row_of(keep, i)?, p));
        }
    }
    let mut rows_validity = Vec::with_capacity(edge_validity.len());
    for (i, from, to) in edge_validity {
        if keep.get(i as usize) {
            let from = from.unwrap_or(now);
            super::batch::check_interval(from, to)?;
            rows_validity.push((u64::from(row_of(keep, i)?), from, to));
        }
    }
    Ok((rows_props, rows_validity))
}

/// The memory limit of a bulk load that sets none ([`BulkLoad::memory_limit`]): half the
/// physical memory (`MemTotal` of `/proc/meminfo` on Linux), or 4 GiB where that cannot be
/// read.
pub fn default_memory_limit() -> u64 {
    const FALLBACK: u64 = 4 << 30;
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| mem_total(&m))
        .map_or(FALLBACK, |total| total / 2)
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The input edges once mapped to global ids: in memory, or spilled as sorted runs.
enum EdgeInput {
    Columns(external::Columns),
    Runs(external::SpilledRuns),
}

/// The edges built: which are kept, and both directions in memory or in scratch files.
struct BuiltEdges {
    keep: Keep,
    dropped: u64,
    /// Kept edges per type id.
    type_counts: Vec<u64>,
    directions: Directions,
}

/// Where a bulk load's built edges are.
enum Directions {
    /// The kept rows' columns and their out-direction (the writer builds the in-direction).
    Memory {
        columns: external::Columns,
        out: Csr,
    },
    /// Both directions in scratch files.
    Spilled(Box<super::build::SpilledEdges>),
}

/// The in-memory edge build: the out-direction CSR of every input edge, in which equal
/// triples are neighbors in input order, so the first of each run of equals is the first
/// occurrence; it is dropped too when the triple is `stored` already. That CSR, less the
/// duplicates, is the segment's out-direction as it is.
fn build_in_memory(
    node_bound: u32,
    mut columns: external::Columns,
    stored: &dyn Fn(u32, u16, u32) -> bool,
    progress: BulkProgress<'_>,
) -> Result<BuiltEdges> {
    let nedges = columns.0.len() as u64;
    progress(BulkPhase::BuildOut, 0, nedges);
    let mut out = Csr::build(node_bound, &columns.0, &columns.1, &columns.2)?;
    // The sort is most of the phase; the duplicate check below is the rest.
    progress(BulkPhase::BuildOut, nedges * 3 / 4, nedges);
    let mut keep = Keep::all(columns.0.len());
    let mut dropped = 0u64;
    for (node, w) in (0u32..).zip(out.offsets.windows(2)) {
        let run = w[0] as usize..w[1] as usize;
        if node > 0 && (node as usize).is_multiple_of(PROGRESS_EVERY) {
            progress(BulkPhase::BuildOut, (nedges * 3 + w[0] as u64) / 4, nedges);
        }
        for i in run.clone() {
            let (t, n) = (out.types[i], out.neighbors[i]);
            let first = i == run.start || (out.types[i - 1], out.neighbors[i - 1]) != (t, n);
            if !first || stored(node, t, n) {
                keep.drop_edge(out.pos[i] as usize);
                dropped += 1;
            }
        }
    }
    keep.finish();
    progress(BulkPhase::BuildOut, nedges, nedges);
    if dropped > 0 {
        drop_rows(&mut out, &keep, &mut columns);
    }
    let mut type_counts = Vec::new();
    for &t in &columns.2 {
        let t = t as usize;
        if type_counts.len() <= t {
            type_counts.resize(t + 1, 0u64);
        }
        type_counts[t] += 1;
    }
    Ok(BuiltEdges {
        keep,
        dropped,
        type_counts,
        directions: Directions::Memory { columns, out },
    })
}

/// Bytes `v`'s buffer takes.
fn heap_bytes<T>(v: &Vec<T>) -> u64 {
    (v.capacity() * std::mem::size_of::<T>()) as u64
}

/// The row of kept input edge `i`.
fn row_of(keep: &Keep, i: u32) -> Result<u32> {
    u32::try_from(keep.rank(i as usize))
        .map_err(|_| Error::invalid("too many edges in one bulk load"))
}

fn bad_local() -> Error {
    Error::invalid("bulk load refers to an unknown local id")
}

/// Keeps the entries of `v` whose `keep` is set, in order.
fn retain_kept<T: Copy>(v: &mut Vec<T>, keep: &Keep) {
    let mut w = 0;
    for i in 0..v.len() {
        if keep.get(i) {
            v[w] = v[i];
            w += 1;
        }
    }
    v.truncate(w);
}

/// Removes the rows `keep` clears from the edge columns and from `out`, whose `pos` then
/// names rows of the remaining edges.
fn drop_rows(out: &mut Csr, keep: &Keep, columns: &mut external::Columns) {
    let (sources, targets, types) = columns;
    let mut w = 0usize;
    let mut start = 0usize;
    for node in 0..out.offsets.len().saturating_sub(1) {
        let end = out.offsets[node + 1] as usize;
        for i in start..end {
            let p = out.pos[i] as usize;
            if keep.get(p) {
                out.neighbors[w] = out.neighbors[i];
                out.types[w] = out.types[i];
                // Kept rows are fewer than the input's, which fit in u32.
                out.pos[w] = u32::try_from(keep.rank(p)).unwrap_or(u32::MAX);
                w += 1;
            }
        }
        // `w` counts kept entries, at most the input's rows, which fit in u32.
        out.offsets[node + 1] = u32::try_from(w).unwrap_or(u32::MAX);
        start = end;
    }
    out.neighbors.truncate(w);
    out.types.truncate(w);
    out.pos.truncate(w);
    retain_kept(sources, keep);
    retain_kept(targets, keep);
    retain_kept(types, keep);
}

#[cfg(test)]
mod tests;
