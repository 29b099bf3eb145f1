//! Building segment files: the shared back end of checkpoint, compaction and bulk load.
//!
//! Callers gather a [`SegmentContent`] (edge rows, node records, tombstones and the
//! cumulative summary); [`write_segment`] sorts the rows into both CSR directions (see
//! [`Csr::build`]: a counting sort by owner node, then each run by (type, neighbor, edge
//! id), the two directions on two threads), derives the per-(direction, type) node bitmaps
//! and writes every section. The text index is encoded (`TextIndexWriter::finish`, itself
//! on several threads when large) on a thread of its own while the sections before it are
//! prepared and written.

use std::path::Path;
use std::sync::mpsc;

use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{Error, Result};
use crate::format::codec::ByteWriter;
use crate::format::record::{EmbeddingAt, encode_node};
use crate::format::segment::{
    SectionKind as K, Summary, build_key_slots, encode_bitmap, encode_treemap, encode_type_bitmaps,
};
use crate::format::text::TextIndexWriter;
use crate::graph::limits;
use crate::model::Node;
use crate::storage::segment_file;
use crate::text::{Analyzer, doc_terms};

use super::vector::{BuiltVectors, VectorRows};

use super::bulk::{BulkPhase, BulkProgress};

mod csr;
mod rows;
mod spilled;

pub(crate) use csr::Csr;
use csr::{join, worth_a_thread};
pub(crate) use rows::EdgeRows;
pub(crate) use spilled::{SpillFile, SpilledDirection, SpilledEdges};

/// Everything one segment holds.
#[derive(Debug, Default)]
pub(crate) struct SegmentContent<'p> {
    /// Where [`write_segment`] reports building the in-direction and writing (bulk load
    /// only; see [`BulkPhase`]).
    pub progress: Option<ProgressHook<'p>>,
    pub edges: EdgeRows,
    /// The out-direction CSR of `edges` when the caller has it already (bulk load gets it
    /// from its duplicate check); it must be exactly what `Csr::build` makes of the rows.
    pub out_csr: Option<Csr>,
    /// Both CSR directions of `edges` in spill files (an out-of-core bulk load): then
    /// `edges` holds no source, target and type columns, and `out_csr` is unused.
    pub spilled: Option<SpilledEdges>,
    /// Encoded node records (see `encode_node`), sorted by id, with their keys.
    pub nodes: Vec<(u32, Vec<u8>)>,
    pub edge_tombstones: RoaringTreemap,
    pub node_tombstones: RoaringBitmap,
    /// Cumulative summary; `edge_rows`, `node_records`, `dense_edge_base` and
    /// `uniform_created_at` are filled in by `write_segment`.
    pub summary: Summary,
    /// The text index of the node records (see `format::text`).
    pub text: TextIndexWriter,
    /// The embeddings of `nodes` that have one, normalised, for the vector sections (see
    /// `db/vector.rs`).
    pub vectors: VectorRows,
    /// The store's embedding dimension as of this segment (`None`: none yet, or take the
    /// first of `vectors`).
    pub embedding_dim: Option<u32>,
    /// The fewest vectors that get an HNSW graph (the handle's
    /// [`Options::vector_graph_min`](super::Options::vector_graph_min)); `None`: no graph
    /// however many (the default, and a bulk load's choice to defer it:
    /// [`Database::index_vectors`](super::Database::index_vectors) adds it later).
    pub vector_graph_min: Option<usize>,
    /// Analyzes the texts of pushed nodes (one per build, so its stem memo carries over).
    pub analyzer: Analyzer,
    /// Nodes of `nodes` whose interval is not [created, never).
    pub timed_nodes: RoaringBitmap,
    /// The greatest start of validity of `nodes` (0: none).
    pub node_from_max: u64,
    /// Changed intervals of older segments' edges: (id, valid_from, valid_to code).
    pub edge_validity: Vec<[u64; 3]>,
}

/// A bulk load's progress callback, with a `Debug` for [`SegmentContent`].
#[derive(Clone, Copy)]
pub(crate) struct ProgressHook<'p>(pub BulkProgress<'p>);

impl std::fmt::Debug for ProgressHook<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressHook")
    }
}

impl ProgressHook<'_> {
    pub(crate) fn report(&self, phase: BulkPhase, done: u64, total: u64) {
        (self.0)(phase, done, total);
    }
}

impl SegmentContent<'_> {
    /// Adds a node record.
    pub fn push_node(&mut self, node: &Node) {
        let doc = doc_terms(&self.analyzer, node);
        self.push_node_indexed(node, doc);
    }

    /// [`SegmentContent::push_node`] with the node's text index entry already made.
    fn push_node_indexed(&mut self, node: &Node, doc: crate::text::DocTerms) {
        self.text
            .add_doc(node.id.0, doc.lens, &doc.pairs, doc.terms);
        self.push_node_record(node);
    }

    /// Adds `node`'s record and embedding but not its text: the caller feeds the text
    /// index writer `self.text` itself (a checkpoint writes the delta's index into it,
    /// which holds exactly the delta's nodes; `finish` checks the two sets agree).
    pub fn push_node_record(&mut self, node: &Node) {
        self.note_validity(node);
        self.push_encoded(node.id.0, encode_record(node), node.props.embedding.clone());
    }

    /// Notes `node`'s validity interval for the segment's time sections (every pushed
    /// node's must be: [`SegmentContent::push_node_record`] does it).
    pub fn note_validity(&mut self, node: &Node) {
        self.node_from_max = self.node_from_max.max(node.valid_from);
        if node.valid_from != node.created_at || node.valid_to.is_some() {
            self.timed_nodes.insert(node.id.0);
        }
    }

    /// Adds node `id`'s record, encoded by [`encode_record`], and its embedding, but not
    /// its text (see [`SegmentContent::push_node_record`]); the caller notes its validity
    /// ([`SegmentContent::note_validity`]).
    pub fn push_encoded(&mut self, id: u32, record: Vec<u8>, embedding: Option<Vec<f32>>) {
        self.nodes.push((id, record));
        if let Some(e) = embedding {
            self.vectors.push(id, &e);
        }
    }
}

/// `node`'s record as [`SegmentContent::nodes`] holds it.
pub(crate) fn encode_record(node: &Node) -> Vec<u8> {
    let mut w = ByteWriter::new();
    // Every embedding of a segment's records is one of its vector rows (`BuiltVectors`
    // refuses a segment whose embeddings differ in dimension).
    encode_node(&mut w, node, EmbeddingAt::Row);
    w.buf
}

fn type_bitmaps(dir: u8, csr: &Csr, ntypes: usize) -> Vec<(u8, u16, RoaringBitmap)> {
    let mut bms = TypeBitmaps::new(dir, ntypes);
    for (node, w) in (0u32..).zip(csr.offsets.windows(2)) {
        for &t in &csr.types[w[0] as usize..w[1] as usize] {
            bms.push(node, t);
        }
    }
    bms.finish()
}

/// The per-type node bitmaps of one direction, built from its entries in CSR order.
#[derive(Debug)]
pub(crate) struct TypeBitmaps {
    dir: u8,
    bms: Vec<RoaringBitmap>,
    last: Option<(u32, u16)>,
}

impl TypeBitmaps {
    /// Bitmaps of direction `dir` (0 out, 1 in) for types below `ntypes`.
    pub fn new(dir: u8, ntypes: usize) -> TypeBitmaps {
        TypeBitmaps {
            dir,
            bms: vec![RoaringBitmap::new(); ntypes],
            last: None,
        }
    }

    /// Notes an entry of `node` of type `t`; entries come by node, then type, ascending.
    pub fn push(&mut self, node: u32, t: u16) {
        if self.last != Some((node, t)) {
            if let Some(b) = self.bms.get_mut(t as usize) {
                // Node ids ascend, so this appends.
                b.insert(node);
            }
            self.last = Some((node, t));
        }
    }

    /// The bitmaps as the `TypeBitmaps` section lists them: (direction, type, nodes), empty
    /// ones left out.
    pub fn finish(self) -> Vec<(u8, u16, RoaringBitmap)> {
        let dir = self.dir;
        self.bms
            .into_iter()
            .enumerate()
            .filter(|(_, b)| !b.is_empty())
            .filter_map(|(t, b)| Some((dir, u16::try_from(t).ok()?, b)))
            .collect()
    }
}

/// The key of an encoded node record (empty if it cannot be read).
fn key_of(rec: &[u8]) -> &[u8] {
    let mut r = crate::format::codec::ByteReader::new(rec);
    r.bytes(limits::NODE_KEY_BYTES_MAX, "key")
        .unwrap_or_default()
}

/// The order of `keys` by bytes (they are distinct): integer compares of each key's first
/// eight bytes settle most comparisons without touching the keys themselves.
fn key_order(keys: &[&[u8]]) -> Result<Vec<u32>> {
    let head = |k: &[u8]| {
        let mut b = [0u8; 8];
        let n = k.len().min(8);
        b[..n].copy_from_slice(&k[..n]);
        u64::from_be_bytes(b)
    };
    let mut order = Vec::with_capacity(keys.len());
    for (i, k) in keys.iter().enumerate() {
        let i = u32::try_from(i)
            .map_err(|_| Error::invalid("too many node records for one segment"))?;
        order.push((head(k), i));
    }
    // Zero padding sorts a key before its extensions, so heads never contradict the
    // byte order; equal heads fall back to the keys.
    order.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| keys[a.1 as usize].cmp(keys[b.1 as usize]))
    });
    Ok(order.into_iter().map(|(_, i)| i).collect())
}

/// Writes `content` as segment `id` and returns the file size.
///
/// # Errors
/// `InvalidArgument` when a limit is exceeded (e.g. more than `SEGMENT_EDGES_MAX` rows), I/O
/// errors otherwise.
pub(crate) fn write_segment(
    io: &dyn crate::storage::io::Io,
    dir: &Path,
    id: u64,
    db_id: u128,
    lsn: u64,
    content: SegmentContent<'_>,
) -> Result<u64> {
    let staging = format!("{}.tmp", crate::storage::segment_file_name(id));
    let len = write_segment_staged(io, dir, &staging, id, db_id, lsn, content)?;
    segment_file::publish_staged_segment(io, dir, &staging, id)?;
    Ok(len)
}

/// [`write_segment`] under the file name `staging` (ending in `.tmp`), durably but not yet
/// a segment of `dir`: `segment_file::publish_staged_segment` renames it into place.
pub(crate) fn write_segment_staged(
    io: &dyn crate::storage::io::Io,
    dir: &Path,
    staging: &str,
    id: u64,
    db_id: u128,
    lsn: u64,
    mut content: SegmentContent<'_>,
) -> Result<u64> {
    let progress = content.progress;
    let report = |phase: BulkPhase, done: u64, total: u64| {
        if let Some(p) = progress {
            p.report(phase, done, total);
        }
    };
    let rows = &mut content.edges;
    rows.sort_by_id();
    let m = rows.len();
    if m as u64 > limits::SEGMENT_EDGES_MAX {
        return Err(Error::invalid(format!(
            "{m} edges exceed the per-segment limit {}",
            limits::SEGMENT_EDGES_MAX
        )));
    }
    let bound = content.summary.node_bound;
    if rows
        .sources
        .iter()
        .chain(&rows.targets)
        .any(|&x| x >= bound)
    {
        return Err(Error::invalid(
            "an edge refers to a node id beyond the node bound",
        ));
    }
    let row_validity = rows.validity();
    let rows = &content.edges;
    content.nodes.sort_unstable_by_key(|(id, _)| *id);
    content.edge_validity.sort_unstable_by_key(|e| e[0]);
    let mut timed_edges = row_validity.timed;
    let mut edge_from_max = row_validity.from_max;
    for &[id, from, _] in &content.edge_validity {
        timed_edges.insert(id);
        edge_from_max = edge_from_max.max(from);
    }
    let time_bounds = [content.node_from_max, edge_from_max];
    let (valid_from_col, valid_to_col) = (row_validity.from, row_validity.to);
    let record_ids: Vec<u32> = content.nodes.iter().map(|(id, _)| *id).collect();
    // The text index is encoded on a thread of its own while the sections before it are
    // prepared and written (it is written near the end).
    let text_writer = std::mem::take(&mut content.text);
    let text_thread = record_ids.len() >= TEXT_THREAD_RECORDS_MIN
        && std::thread::available_parallelism().is_ok_and(|p| p.get() > 1);
    let (text_tx, text_rx) = mpsc::sync_channel(1);
    let record_ids = &record_ids;
    let text_side = move || {
        // The receiver is gone only when writing failed already.
        let _ = text_tx.send(text_writer.finish(record_ids).map_err(Error::invalid));
    };
    let mut summary = content.summary.clone();
    summary.edge_rows = m as u64;
    summary.node_records = content.nodes.len() as u64;
    summary.dense_edge_base = rows.dense_base();
    summary.uniform_created_at = if m == 0 {
        Some(0)
    } else {
        rows.uniform_created_at()
    };
    // Rows are sorted by id, so a CSR's row order within equal (type, neighbor) is the
    // id order the format asks for.
    let in_csr = || Csr::build(bound, &rows.targets, &rows.sources, &rows.types);
    let spilled = content.spilled.take();
    let (out, inn) = match (content.out_csr.take(), &spilled) {
        (_, Some(s)) if s.len() == m as u64 && s.out.offsets.len() == bound as usize + 1 => {
            (None, None)
        }
        (_, Some(_)) => return Err(Error::invalid("the spilled edges do not fit the rows")),
        (Some(out), None) if out.offsets.len() == bound as usize + 1 && out.pos.len() == m => {
            (Some(out), None)
        }
        (Some(_), None) => return Err(Error::invalid("the given out-CSR does not fit the rows")),
        (None, None) => {
            let (out, inn) = join(
                worth_a_thread(m),
                || Csr::build(bound, &rows.sources, &rows.targets, &rows.types),
                in_csr,
            );
            (Some(out?), Some(inn?))
        }
    };
    let ntypes = summary.types.len();
    // When only the out-direction is ready, the in-direction is built on a second thread
    // while the sections before it are prepared and written (spilled: both are ready).
    let build_in = out.is_some();
    let (tx, rx) = mpsc::sync_channel(1);
    let (m64, report) = (m as u64, &report);
    let in_side = move || {
        if !build_in {
            return;
        }
        report(BulkPhase::BuildIn, 0, m64);
        let inn = inn.map_or_else(in_csr, Ok).map(|inn| {
            let bitmaps = type_bitmaps(1, &inn, ntypes);
            (inn, bitmaps)
        });
        report(BulkPhase::BuildIn, m64, m64);
        // The receiver is gone only when writing failed already.
        let _ = tx.send(inn);
    };
    // The first error of the in-direction's or the text index's thread, which stopped the
    // write: reported as itself, not as the write it stopped.
    let mut side_error = None;
    let side_error_slot = &mut side_error;
    let ((), ((), written)) = join(text_thread, text_side, || {
        join(worth_a_thread(m) && build_in, in_side, || {
            let mut bitmaps = match (&out, &spilled) {
                (Some(out), _) => type_bitmaps(0, out, ntypes),
                (None, Some(s)) => s.bitmaps.clone(),
                (None, None) => Vec::new(),
            };
            let nodes = NodeSections::new(&content.nodes)?;
            let vectors = BuiltVectors::new(
                id,
                content.embedding_dim,
                std::mem::take(&mut content.vectors),
                content.vector_graph_min,
            )?;
            let weights_default = rows.weights_default();
            // Write progress counts sections (of at most WRITE_STEPS), the waits for the
            // in-direction and the text index included; the file's fsync follows as its own
            // phase.
            let step = std::cell::Cell::new(0u64);
            let wrote = || {
                step.set(step.get() + 1);
                report(BulkPhase::Write, step.get().min(WRITE_STEPS), WRITE_STEPS);
            };
            report(BulkPhase::Write, 0, WRITE_STEPS);
            let stamp = segment_file::SegmentStamp {
                id,
                db_id,
                lsn,
                version: crate::format::FORMAT_VERSION,
            };
            segment_file::write_segment_staged(io, dir, staging, stamp, move |enc| {
                enc.section(K::Summary, &summary.encode())?;
                if let Some(s) = spilled {
                    s.write_and_remove(enc, io, &wrote)?;
                } else if let Some(out) = out {
                    write_out_direction(enc, out, &wrote)?;
                    let (inn, in_bitmaps) =
                        received(&rx, side_error_slot, "cannot build the in-direction CSR")?;
                    bitmaps.extend(in_bitmaps);
                    wrote();
                    enc.array(K::InOffsets, &inn.offsets)?;
                    enc.array(K::InNeighbors, &inn.neighbors)?;
                    wrote();
                    enc.array(K::InTypes, &inn.types)?;
                    enc.array(K::InEdgePos, &inn.pos)?;
                    wrote();
                    drop(inn);
                }
                if summary.dense_edge_base.is_none() {
                    enc.array(K::EdgeIds, &rows.ids())?;
                }
                if !weights_default {
                    enc.array(K::EdgeWeights, &rows.weight_bits())?;
                }
                if summary.uniform_created_at.is_none() {
                    enc.array(K::EdgeCreated, &rows.created())?;
                }
                if let Some((offsets, blob)) = rows.props() {
                    enc.array(K::EdgePropsOffsets, offsets)?;
                    enc.section(K::EdgePropsBlob, blob)?;
                }
                if let Some(from) = &valid_from_col {
                    enc.array(K::EdgeValidFrom, from)?;
                }
                if let Some(to) = &valid_to_col {
                    enc.array(K::EdgeValidTo, to)?;
                }
                if !content.edge_validity.is_empty() {
                    let flat: Vec<u64> = content.edge_validity.iter().flatten().copied().collect();
                    enc.array(K::EdgeValidity, &flat)?;
                }
                enc.section(K::TimedNodes, &encode_bitmap(&content.timed_nodes))?;
                enc.section(K::TimedEdges, &encode_treemap(&timed_edges))?;
                enc.array(K::TimeBounds, &time_bounds)?;
                enc.section(K::TypeBitmaps, &encode_type_bitmaps(&bitmaps))?;
                enc.section(K::EdgeTombstones, &encode_treemap(&content.edge_tombstones))?;
                enc.section(K::NodeTombstones, &encode_bitmap(&content.node_tombstones))?;
                enc.array(K::NodeIds, &nodes.ids)?;
                enc.array(K::NodeOffsets, &nodes.offsets)?;
                enc.section_parts(K::NodeBlob, content.nodes.iter().map(|(_, r)| &r[..]))?;
                enc.array(K::KeyOrder, &nodes.key_order)?;
                // 16-byte slots on 16-byte boundaries: a slot never straddles a cache line.
                enc.align(16)?;
                enc.section(K::KeyHash, &nodes.key_hash)?;
                // The vectors before the text index: written while it is still encoded.
                vectors.write(enc)?;
                let text = received(&text_rx, side_error_slot, "cannot encode the text index")?;
                enc.section(K::TextStats, &text.stats)?;
                enc.section(K::TextTerms, &text.terms)?;
                enc.section(K::TextPostings, &text.postings)?;
                enc.array(K::TextFieldLens, &text.doc_lens)?;
                enc.array(K::TextPairs, &text.pairs)?;
                enc.array(K::TextPairSet, &text.pair_set)?;
                wrote();
                report(BulkPhase::Sync, 0, 1);
                Ok(())
            })
        })
    });
    side_error.map_or(written, Err)
}

/// Writes the out-direction's sections and `EdgeOutPos`, calling `wrote` after each step;
/// frees `out` at the end, for the in-direction being built.
fn write_out_direction<W: std::io::Write>(
    enc: &mut crate::format::segment::SegmentEncoder<W>,
    out: Csr,
    wrote: &dyn Fn(),
) -> std::io::Result<()> {
    enc.array(K::OutOffsets, &out.offsets)?;
    enc.array(K::OutNeighbors, &out.neighbors)?;
    wrote();
    enc.array(K::OutTypes, &out.types)?;
    enc.array(K::OutEdgePos, &out.pos)?;
    wrote();
    // Format version 2: each row's out-CSR entry (the inverse permutation) replaces
    // copies of its source, target and type.
    let mut out_pos = vec![0u32; out.pos.len()];
    for (p, &row) in (0u32..).zip(&out.pos) {
        if let Some(slot) = out_pos.get_mut(row as usize) {
            *slot = p;
        }
    }
    enc.array(K::EdgeOutPos, &out_pos)?;
    wrote();
    Ok(())
}

/// What a helper thread of [`write_segment_staged`] sent: its value, or an I/O error that
/// stops the write, with the thread's own error kept in `slot` to be reported instead.
fn received<T>(
    rx: &mpsc::Receiver<Result<T>>,
    slot: &mut Option<Error>,
    what: &'static str,
) -> std::io::Result<T> {
    match rx.recv() {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => {
            *slot = Some(e);
            Err(std::io::Error::other(what))
        }
        Err(e) => Err(std::io::Error::other(e)),
    }
}

/// Node records from which a segment's text index is encoded on a thread of its own.
const TEXT_THREAD_RECORDS_MIN: usize = 1 << 12;

/// Progress steps of the write phase (the `wrote()` calls in [`write_segment`]).
const WRITE_STEPS: u64 = 7;

/// The node sections but the records themselves (written from the records as they are):
/// record ids, record boundaries, the key order and the key hash index.
struct NodeSections {
    ids: Vec<u32>,
    offsets: Vec<u64>,
    key_order: Vec<u32>,
    key_hash: Vec<u8>,
}

impl NodeSections {
    /// From encoded records sorted by id.
    fn new(records: &[(u32, Vec<u8>)]) -> Result<NodeSections> {
        let mut offsets = Vec::with_capacity(records.len() + 1);
        let mut ids = Vec::with_capacity(records.len());
        let mut end = 0u64;
        offsets.push(end);
        for (nid, rec) in records {
            ids.push(*nid);
            end += rec.len() as u64;
            offsets.push(end);
        }
        let keys: Vec<&[u8]> = records.iter().map(|(_, rec)| key_of(rec)).collect();
        let key_order = key_order(&keys)?;
        let key_hash = build_key_slots(
            keys.iter()
                .zip(&ids)
                .zip(&offsets)
                .map(|((k, id), off)| (*k, *id, *off)),
        )
        .ok_or_else(|| Error::invalid("node records too large for one segment's key index"))?;
        Ok(NodeSections {
            ids,
            offsets,
            key_order,
            key_hash,
        })
    }
}
