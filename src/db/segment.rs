//! Read access to one mapped segment: CSR runs, edge rows, node records and keys.
//!
//! A [`Segment`] wraps a [`SegmentFile`] with the few small structures decoded once at open
//! (tombstones and per-type node bitmaps). Everything else is read in place from the map.
//! [`SegView`] borrows the typed arrays once so the traversal hot path does no per-node
//! bounds bookkeeping beyond slice indexing.

use std::sync::Arc;

use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{Error, Result};
use crate::format::codec::{ByteReader, DecodeError};
use crate::format::record::{
    EmbeddingRows, RecordTexts, decode_edge_props, decode_node, decode_node_texts,
    decode_node_validity, valid_to_of,
};
use crate::format::segment::{
    KeyQuery, KeySlotTable, KeySlots, SectionKind as K, Summary, key_hash, prefetch_at,
};
use crate::graph::{EdgeDir, EdgeId, NodeId, TypeId, limits};
use crate::model::{Edge, Node, Props};
use crate::storage::segment_file::SegmentFile;

/// How much of a node record [`Segment::prefetch_texts`] asks to load: three cache lines,
/// key, kind, title and the start of the content of a typical record (the rest follows in
/// order, which the CPU's own prefetcher picks up; more lines per record, for eight
/// records in flight, would queue behind the core's outstanding misses).
const TEXTS_PREFETCH_BYTES: usize = 192;

/// A mapped segment plus its decoded small sections.
#[derive(Debug)]
pub struct Segment {
    /// The mapped file.
    pub file: SegmentFile,
    /// Edge ids of older segments deleted in this segment's interval.
    pub edge_tombstones: RoaringTreemap,
    /// Node ids deleted in this segment's interval.
    pub node_tombstones: RoaringBitmap,
    /// `bitmaps[dir][type]`: nodes with at least one edge of that type in that direction.
    pub type_bitmaps: [Vec<RoaringBitmap>; 2],
    /// Nodes whose record here has an interval other than [created, never).
    pub timed_nodes: RoaringBitmap,
    /// Edges of rows here with an interval other than [created, never), and edges of
    /// older segments whose interval changed in this segment's interval.
    pub timed_edges: RoaringTreemap,
    /// The greatest start of validity of the records and of the rows here (`u64::MAX`:
    /// unknown, a segment written before format version 9; see
    /// [`Segment::legacy_time_bounds`]).
    pub time_bounds: [u64; 2],
    /// For a segment written before format version 9, its bounds found by reading every
    /// record's and row's creation time, once, on first use.
    legacy_bounds: std::sync::OnceLock<[u64; 2]>,
    /// The first node id when this segment's record ids are dense (every bulk load):
    /// record `i` then belongs to node `first + i`, and neither direction between ids and
    /// records has to read the id array.
    dense_node_base: Option<u32>,
    /// The outcome of checking the text sections' crcs, done once on the first text
    /// search (the term dictionary is only handed to `fst` after it): `Some((offset,
    /// what))` when they are damaged.
    text_checked: std::sync::OnceLock<Option<(usize, String)>>,
    /// The decoded `VectorMeta` section (shapes of the vector sections checked at open);
    /// `None` for a segment written before vector sections existed.
    pub vector_meta: Option<crate::format::segment::VectorMeta>,
    /// The embeddings of such an older segment, decoded from its records on first use.
    pub(crate) legacy_vectors: std::sync::OnceLock<super::vector::LegacyVectors>,
    /// The distinct words of the nodes' texts, built on the first substring search.
    pub(crate) words: std::sync::OnceLock<Arc<super::substring::WordIndex>>,
}

/// Typed views of one direction of a segment's CSR, borrowed for the length of a call.
#[derive(Clone, Copy, Debug)]
pub struct SegView<'a> {
    offsets: &'a [u32],
    neighbors: &'a [u32],
    types: &'a [u16],
    edge_pos: &'a [u32],
    edge_ids: &'a [u64],
    dense_base: Option<u64>,
    rows: usize,
}

impl Segment {
    /// Opens segment `id` and decodes its tombstones and bitmaps.
    ///
    /// # Errors
    /// Anything [`SegmentFile::open`] reports; damaged bitmaps as `Corrupt`.
    pub fn open(
        io: &Arc<dyn crate::storage::io::Io>,
        dir: &std::path::Path,
        id: u64,
        db_id: u128,
    ) -> Result<Arc<Segment>> {
        let file = SegmentFile::open(io, dir, id, db_id)?;
        let b = file.bytes();
        let l = &file.layout;
        let corrupt = |e: crate::format::codec::DecodeError| {
            Error::corrupt(file.path(), e.offset as u64, e.what)
        };
        // Sections decoded or trusted at open are checksummed now (the CSR offsets too: they
        // are scanned for monotonicity anyway); the rest waits for `verify`.
        for kind in [
            K::EdgeTombstones,
            K::NodeTombstones,
            K::TypeBitmaps,
            K::OutOffsets,
            K::InOffsets,
            K::VectorMeta,
            K::HnswOffsets,
            K::TimedNodes,
            K::TimedEdges,
            K::TimeBounds,
        ] {
            l.verify_section(b, kind).map_err(corrupt)?;
        }
        let edge_tombstones = l.edge_tombstones(b).map_err(corrupt)?;
        let node_tombstones = l.node_tombstones(b).map_err(corrupt)?;
        let ntypes = l.summary.types.len();
        let mut type_bitmaps = [
            vec![RoaringBitmap::new(); ntypes],
            vec![RoaringBitmap::new(); ntypes],
        ];
        for (dir, t, bm) in l.type_bitmaps(b).map_err(corrupt)? {
            if let Some(slot) = type_bitmaps[dir as usize].get_mut(t as usize) {
                *slot = bm;
            }
        }
        let dense_node_base = dense_base(l.u32s(b, K::NodeIds));
        let timed_nodes = l.timed_nodes(b).map_err(corrupt)?;
        let timed_edges = l.timed_edges(b).map_err(corrupt)?;
        let time_bounds = l.time_bounds(b);
        let vector_meta = l.vector_meta(b).map_err(corrupt)?;
        if let Some(meta) = &vector_meta {
            l.vector_sections(b, meta).map_err(corrupt)?;
        }
        Ok(Arc::new(Segment {
            file,
            edge_tombstones,
            node_tombstones,
            type_bitmaps,
            timed_nodes,
            timed_edges,
            time_bounds,
            legacy_bounds: std::sync::OnceLock::new(),
            dense_node_base,
            text_checked: std::sync::OnceLock::new(),
            vector_meta,
            legacy_vectors: std::sync::OnceLock::new(),
            words: std::sync::OnceLock::new(),
        }))
    }

    /// The segment's word index for substring search, built on first use (one read of
    /// every node record) and kept for the segment's life.
    ///
    /// # Errors
    /// `Corrupt` when a record does not decode (nothing is kept; the next call retries).
    pub fn words(&self) -> Result<Arc<super::substring::WordIndex>> {
        if let Some(w) = self.words.get() {
            return Ok(w.clone());
        }
        let built = Arc::new(super::substring::WordIndex::build(self)?);
        // Two threads may build it at once; both results are equal, the first is kept.
        Ok(self.words.get_or_init(|| built).clone())
    }

    /// The cumulative summary stored in this segment.
    pub fn summary(&self) -> &Summary {
        &self.file.layout.summary
    }

    /// Typed views of the CSR of one direction.
    #[inline]
    pub fn view(&self, dir: EdgeDir) -> SegView<'_> {
        let c = self.file.csr();
        let d = dir.index();
        SegView {
            offsets: c.offsets[d],
            neighbors: c.neighbors[d],
            types: c.types[d],
            edge_pos: c.edge_pos[d],
            edge_ids: c.edge_ids,
            dense_base: self.file.layout.summary.dense_edge_base,
            rows: usize::try_from(self.file.layout.summary.edge_rows).unwrap_or(0),
        }
    }

    /// The edge row of each CSR entry in `dir` (`OutEdgePos` / `InEdgePos`).
    pub fn entry_rows(&self, dir: EdgeDir) -> &[u32] {
        self.file.csr().edge_pos[dir.index()]
    }

    /// Number of edge rows.
    pub fn edge_rows(&self) -> u64 {
        self.summary().edge_rows
    }

    fn record_bytes(&self, index: usize) -> Option<&[u8]> {
        let b = self.file.bytes();
        let l = &self.file.layout;
        let offs = l.u64s(b, K::NodeOffsets);
        let blob = l.bytes(b, K::NodeBlob);
        let start = usize::try_from(*offs.get(index)?).ok()?;
        let end = usize::try_from(*offs.get(index + 1)?).ok()?;
        blob.get(start..end)
    }

    fn corrupt_record(&self, what: String) -> Error {
        let at = self
            .file
            .layout
            .entry(K::NodeBlob)
            .map(|e| e.range.start as u64)
            .unwrap_or(0);
        Error::corrupt(self.file.path(), at, what)
    }

    /// Where this segment's records keep their embeddings when they say "in my row"
    /// (format version 8 on); `None` for older segments, whose records keep them inline.
    fn embedding_rows(&self) -> Option<EmbeddingRows<'_>> {
        let meta = self.vector_meta.as_ref()?;
        let l = &self.file.layout;
        (l.version >= crate::format::EMBEDDING_ROWS_VERSION).then(|| EmbeddingRows {
            sections: l.vector_arrays(self.file.bytes()),
            dim: meta.dim as usize,
        })
    }

    /// The node record for `id` stored here, if any.
    ///
    /// # Errors
    /// `Corrupt` when the record does not decode.
    pub fn node(&self, id: NodeId) -> Result<Option<Node>> {
        let rows = self.embedding_rows();
        let validity = self.file.layout.record_validity();
        self.decode_record(id, |r| decode_node(r, id, rows.as_ref(), validity))
    }

    /// The creation time and validity interval of the node record for `id` stored here,
    /// decoding nothing else.
    ///
    /// # Errors
    /// `Corrupt` when the record does not decode.
    pub fn node_validity(&self, id: NodeId) -> Result<Option<(u64, u64, Option<u64>)>> {
        let validity = self.file.layout.record_validity();
        self.decode_record(id, |r| decode_node_validity(r, validity))
    }

    /// The greatest start of validity of the records and of the rows here: the stored
    /// bounds, or for a segment written before format version 9 (whose elements start at
    /// their creation) the greatest creation time, found once by reading every record's
    /// creation time and the rows' column (O(records + rows), on the first "as of" read
    /// of such a store; a record that does not decode makes that bound unknown).
    pub fn known_time_bounds(&self) -> [u64; 2] {
        if self.time_bounds != [u64::MAX; 2] {
            return self.time_bounds;
        }
        *self.legacy_bounds.get_or_init(|| {
            let mut nodes = 0u64;
            for &id in self.node_ids() {
                match self.node_validity(NodeId(id)) {
                    Ok(Some((_, from, _))) => nodes = nodes.max(from),
                    Ok(None) => {}
                    Err(_) => {
                        nodes = u64::MAX;
                        break;
                    }
                }
            }
            let rows = usize::try_from(self.edge_rows()).unwrap_or(0);
            let edges = match self.file.layout.summary.uniform_created_at {
                Some(t) => t,
                None => self
                    .file
                    .layout
                    .u64s(self.file.bytes(), K::EdgeCreated)
                    .iter()
                    .take(rows)
                    .copied()
                    .max()
                    .unwrap_or(0),
            };
            [nodes, edges]
        })
    }

    /// The interval of edge `id` as changed in this segment's interval, when this segment
    /// changed it (`EdgeValidity`, for edges of older segments).
    pub fn edge_validity_change(&self, id: EdgeId) -> Option<(u64, Option<u64>)> {
        let entries = self.file.layout.edge_validity(self.file.bytes());
        let i = entries.binary_search_by_key(&id.0, |e| e[0]).ok()?;
        let [_, from, to] = entries[i];
        Some((from, valid_to_of(to)))
    }

    /// Whether this segment changed the interval of an older segment's edge
    /// (`EdgeValidity` has entries).
    pub fn changes_edge_validity(&self) -> bool {
        !self.file.layout.edge_validity(self.file.bytes()).is_empty()
    }

    /// The creation time of edge row `row` (0 for a row beyond the columns: a damaged
    /// file).
    pub fn row_created(&self, row: usize) -> u64 {
        let l = &self.file.layout;
        match l.summary.uniform_created_at {
            Some(t) => t,
            None => l
                .u64s(self.file.bytes(), K::EdgeCreated)
                .get(row)
                .copied()
                .unwrap_or(0),
        }
    }

    /// The rows' validity columns, borrowed once for many look-ups (see
    /// [`RowValidity::of`]).
    pub fn row_validity_columns(&self) -> RowValidity<'_> {
        let b = self.file.bytes();
        let l = &self.file.layout;
        RowValidity {
            from: l.u64s(b, K::EdgeValidFrom),
            to: l.u64s(b, K::EdgeValidTo),
            created: l.u64s(b, K::EdgeCreated),
            uniform_created: l.summary.uniform_created_at,
        }
    }

    /// The validity interval of edge row `row` as stored with the row.
    pub fn row_validity(&self, row: usize) -> (u64, Option<u64>) {
        let b = self.file.bytes();
        let l = &self.file.layout;
        let from = match l.u64s(b, K::EdgeValidFrom) {
            [] => self.row_created(row),
            froms => froms.get(row).copied().unwrap_or(0),
        };
        let to = l
            .u64s(b, K::EdgeValidTo)
            .get(row)
            .copied()
            .and_then(valid_to_of);
        (from, to)
    }

    /// `decode` run over the node record for `id` stored here, if any; its error becomes
    /// `Corrupt` naming the record.
    fn decode_record<'s, T>(
        &'s self,
        id: NodeId,
        decode: impl FnOnce(&mut ByteReader<'s>) -> std::result::Result<T, DecodeError>,
    ) -> Result<Option<T>> {
        let Some(i) = self.record_index(id) else {
            return Ok(None);
        };
        let rec = self
            .record_bytes(i)
            .ok_or_else(|| self.corrupt_record(format!("node record {i} out of bounds")))?;
        decode(&mut ByteReader::new(rec))
            .map(Some)
            .map_err(|e| self.corrupt_record(format!("node record {i}: {}", e.what)))
    }

    /// The segment's text index, `None` when it has none. The first call checks the text
    /// sections' crcs (O(text sections), once per segment); later calls cost O(1).
    ///
    /// # Errors
    /// `Corrupt` when the text sections are damaged.
    pub fn text_view(&self) -> Result<Option<crate::format::text::TextIndexView<'_>>> {
        let b = self.file.bytes();
        let l = &self.file.layout;
        if !l.has_text() {
            return Ok(None);
        }
        let checked = self
            .text_checked
            .get_or_init(|| l.verify_text_checksums(b).err().map(|e| (e.offset, e.what)));
        if let Some((offset, what)) = checked {
            return Err(Error::corrupt(
                self.file.path(),
                *offset as u64,
                what.clone(),
            ));
        }
        l.text_view(b)
            .map_err(|e| Error::corrupt(self.file.path(), e.offset as u64, e.what))
    }

    /// Whether this segment holds a record for `id`.
    pub fn has_node(&self, id: NodeId) -> bool {
        self.record_index(id).is_some()
    }

    /// The index of `id`'s record. Ids are stored increasing, so when they are dense from
    /// the first one (every bulk load) the record sits at `id - first`, found without
    /// reading the id array; otherwise a guess at that index, then a binary search.
    #[inline]
    fn record_index(&self, id: NodeId) -> Option<usize> {
        let ids = self.node_ids();
        if let Some(base) = self.dense_node_base {
            let i = usize::try_from(id.0.checked_sub(base)?).ok()?;
            return (i < ids.len()).then_some(i);
        }
        let guess = usize::try_from(id.0.checked_sub(*ids.first()?)?).ok()?;
        if ids.get(guess) == Some(&id.0) {
            return Some(guess);
        }
        ids.binary_search(&id.0).ok()
    }

    /// The index of `id`'s record for ids asked in increasing order (a posting list walk):
    /// `hint` carries the previous answer, and the search gallops forward from it, so a
    /// walk costs O(1) amortized per id instead of a binary search each (see
    /// [`gallop_find`]).
    #[inline]
    pub fn record_of_from(&self, id: NodeId, hint: &mut usize) -> Option<usize> {
        if self.dense_node_base.is_some() {
            return self.record_index(id);
        }
        gallop_find(self.node_ids(), id.0, hint)
    }

    /// The node whose record is `index` (see `dense_node_base`).
    #[inline]
    fn node_of_record(&self, ids: &[u32], index: usize) -> Option<NodeId> {
        if index >= ids.len() {
            return None;
        }
        match self.dense_node_base {
            // Dense ids end at `base + len - 1`, a u32, so neither step can fail.
            Some(base) => u32::try_from(index)
                .ok()
                .and_then(|i| base.checked_add(i))
                .map(NodeId),
            None => ids.get(index).map(|&x| NodeId(x)),
        }
    }

    /// The version 6 key index of this segment (`None` for an older segment or one without
    /// a key index).
    #[inline]
    pub fn key_slots(&self) -> Option<KeySlotTable<'_>> {
        let l = &self.file.layout;
        if l.version < crate::format::KEY_SLOTS_VERSION {
            return None;
        }
        let b = self.file.bytes();
        KeySlotTable::new(l.bytes(b, K::KeyHash), l.bytes(b, K::NodeBlob))
    }

    /// Looks a prepared key up in this segment's key index. From version 6 the slot that
    /// matches holds the node id, and a key of at most 11 bytes is compared in the slot
    /// itself, so a look-up reads about one cache line (two for a longer key: its record).
    /// Older segments: see `node_id_by_key_v5`.
    #[inline]
    pub fn node_id_by_query(&self, q: &KeyQuery<'_>) -> Option<NodeId> {
        match self.key_slots() {
            Some(t) => t.find(q, t.home(q)).map(NodeId),
            None => self.node_id_by_key_v5(q.key()),
        }
    }

    /// Looks up two prepared keys (`None`: not asked) with their slots' loads started
    /// before either is compared, so that the two cache misses overlap; then starts
    /// loading the CSR run starts of the nodes found (the path search reads them first).
    #[inline]
    pub fn node_ids_by_queries(&self, qs: [Option<&KeyQuery<'_>>; 2]) -> [Option<NodeId>; 2] {
        let found = match self.key_slots() {
            Some(t) => {
                let homes = qs.map(|q| q.map(|q| t.home(q)));
                for h in homes.into_iter().flatten() {
                    t.prefetch(h);
                }
                [0, 1].map(|i| match (qs[i], homes[i]) {
                    (Some(q), Some(h)) => t.find(q, h).map(NodeId),
                    _ => None,
                })
            }
            None => qs.map(|q| q.and_then(|q| self.node_id_by_key_v5(q.key()))),
        };
        let c = self.file.csr();
        for id in found.into_iter().flatten() {
            for offsets in c.offsets {
                prefetch_at(offsets, id.index());
            }
        }
        found
    }

    /// Looks a key up in the key index of a segment older than version 6: the `KeyHash`
    /// table when present, else a binary search over the sorted keys. At the table's load
    /// (at most 3/4) a look-up probes about 1.8 slots; from version 3 the slots' hash tags
    /// let it pass the slots of other keys without reading their records, so it compares
    /// about one key. The section slices are fetched once per call.
    fn node_id_by_key_v5(&self, key: &[u8]) -> Option<NodeId> {
        let b = self.file.bytes();
        let l = &self.file.layout;
        let order = l.u32s(b, K::KeyOrder);
        let ids = l.u32s(b, K::NodeIds);
        let offs = l.u64s(b, K::NodeOffsets);
        let blob = l.bytes(b, K::NodeBlob);
        // A record starts with its key: a little-endian u32 length, then the bytes.
        let key_at = |rec: usize| -> Option<&[u8]> {
            let start = usize::try_from(*offs.get(rec)?).ok()?;
            let end = usize::try_from(*offs.get(rec + 1)?).ok()?;
            let record = blob.get(start..end)?;
            let len = u32::from_le_bytes(record.get(..4)?.try_into().ok()?) as usize;
            record.get(4..4 + len.min(limits::NODE_KEY_BYTES_MAX))
        };
        let table = l.u32s(b, K::KeyHash);
        if !table.is_empty() {
            // `parse` checked the length is a power of two above the record count, so there
            // is an empty slot and the probe ends within `table.len()` steps.
            let mask = table.len() - 1;
            let split = KeySlots::new(l.version, ids.len());
            let hash = key_hash(key);
            let mut i = hash as usize & mask;
            for _ in 0..table.len() {
                let slot = table[i];
                let record = split.record(slot) as usize;
                if record == 0 {
                    return None;
                }
                // Another key's slot (tags differ) is passed without reading its record.
                if split.may_hold(slot, hash) && key_at(record - 1)? == key {
                    return self.node_of_record(ids, record - 1);
                }
                i = (i + 1) & mask;
            }
            return None;
        }
        let (mut lo, mut hi) = (0usize, order.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let rec = order[mid] as usize;
            match key_at(rec)?.cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return self.node_of_record(ids, rec),
            }
        }
        None
    }

    /// The title and content of the node record for `id` stored here, borrowed from the
    /// segment (a phrase check in those fields needs nothing else).
    ///
    /// # Errors
    /// `Corrupt` when those fields do not decode.
    pub fn node_texts(&self, id: NodeId) -> Result<Option<RecordTexts<'_>>> {
        self.decode_record(id, decode_node_texts)
    }

    /// Starts loading the first [`TEXTS_PREFETCH_BYTES`] of the node record for `id` when
    /// `near`, else the record's offset, if the record is stored here (a hint for
    /// [`Segment::node_texts`]); whether it is. The record is found by its offset: a
    /// random read unless the offset was asked for before.
    pub fn prefetch_texts(&self, id: NodeId, near: bool) -> bool {
        let Some(i) = self.record_index(id) else {
            return false;
        };
        let b = self.file.bytes();
        let l = &self.file.layout;
        let offs = l.u64s(b, K::NodeOffsets);
        if !near {
            prefetch_at(offs, i);
        } else if let Some(start) = offs.get(i).and_then(|&o| usize::try_from(o).ok()) {
            crate::format::segment::prefetch_span(
                l.bytes(b, K::NodeBlob),
                start,
                TEXTS_PREFETCH_BYTES,
            );
        }
        true
    }

    /// The key and title of the node record for `id` stored here, decoding only those two
    /// fields (a path answer needs nothing else; `node` would decode content and props).
    ///
    /// # Errors
    /// `Corrupt` when the record's first fields do not decode.
    pub fn node_label(&self, id: NodeId) -> Result<Option<(&str, &str)>> {
        self.decode_record(id, |r| {
            let key = r.str(limits::NODE_KEY_BYTES_MAX, "node key")?;
            // Skipped, not decoded: the label does not show it.
            r.bytes(limits::NODE_SHORT_TEXT_BYTES_MAX, "node kind")?;
            let title = r.str(limits::NODE_SHORT_TEXT_BYTES_MAX, "node title")?;
            Ok((key, title))
        })
    }

    /// All node ids with records here, increasing.
    pub fn node_ids(&self) -> &[u32] {
        self.file.layout.u32s(self.file.bytes(), K::NodeIds)
    }

    /// The row of edge `id`, if stored here.
    pub fn edge_row(&self, id: EdgeId) -> Option<usize> {
        let rows = self.edge_rows();
        match self.summary().dense_edge_base {
            Some(base) => {
                id.0.checked_sub(base)
                    .filter(|&r| r < rows)
                    .and_then(|r| usize::try_from(r).ok())
            }
            None => self.view(EdgeDir::Out).edge_ids.binary_search(&id.0).ok(),
        }
    }

    /// The full edge record at `row`.
    ///
    /// # Errors
    /// `Corrupt` when its props do not decode.
    pub fn edge_at(&self, row: usize) -> Result<Option<Edge>> {
        let b = self.file.bytes();
        let l = &self.file.layout;
        let s = &l.summary;
        let Some((source, target, t)) = l.edge_endpoints(b, row) else {
            return Ok(None);
        };
        let id = match s.dense_edge_base {
            Some(base) => match base.checked_add(row as u64) {
                Some(x) => x,
                None => return Ok(None),
            },
            None => match l.u64s(b, K::EdgeIds).get(row) {
                Some(&x) => x,
                None => return Ok(None),
            },
        };
        let weight = l.f32s(b, K::EdgeWeights).get(row).copied().unwrap_or(1.0);
        let created_at = self.row_created(row);
        let (valid_from, valid_to) = self.row_validity(row);
        let mut props = Props::new();
        let offs = l.u64s(b, K::EdgePropsOffsets);
        if let (Some(&a), Some(&z)) = (offs.get(row), offs.get(row + 1)) {
            let blob = l.bytes(b, K::EdgePropsBlob);
            let text = usize::try_from(a)
                .ok()
                .zip(usize::try_from(z).ok())
                .and_then(|(a, z)| blob.get(a..z))
                .and_then(|x| std::str::from_utf8(x).ok());
            let at = l
                .entry(K::EdgePropsBlob)
                .map(|e| e.range.start as u64)
                .unwrap_or(0);
            let Some(text) = text else {
                return Err(Error::corrupt(
                    self.file.path(),
                    at,
                    format!("edge row {row} props out of bounds"),
                ));
            };
            props = decode_edge_props(text)
                .map_err(|e| Error::corrupt(self.file.path(), at, e.what))?;
        }
        Ok(Some(Edge {
            id: EdgeId(id),
            source: NodeId(source),
            target: NodeId(target),
            edge_type: TypeId(t),
            weight,
            props,
            created_at,
            valid_from,
            valid_to,
        }))
    }
}

/// A segment's row validity columns (section 50, 51 and the creation times), borrowed.
#[derive(Clone, Copy, Debug)]
pub struct RowValidity<'a> {
    from: &'a [u64],
    to: &'a [u64],
    created: &'a [u64],
    uniform_created: Option<u64>,
}

impl RowValidity<'_> {
    /// The interval of row `row` (a row beyond the columns: starts at 0, never ends).
    #[inline]
    pub fn of(&self, row: usize) -> (u64, Option<u64>) {
        let from = match self.from.get(row) {
            Some(&f) => f,
            None if self.from.is_empty() => self
                .uniform_created
                .unwrap_or_else(|| self.created.get(row).copied().unwrap_or(0)),
            None => 0,
        };
        let to = self.to.get(row).copied().and_then(valid_to_of);
        (from, to)
    }
}

/// The first id of `ids` when they run densely from it (`ids` is increasing, so the first
/// and last entries and the length settle it), else `None`.
fn dense_base(ids: &[u32]) -> Option<u32> {
    let (&first, &last) = (ids.first()?, ids.last()?);
    // A damaged array can end below its start: then it is not dense.
    let span = u64::from(last).checked_sub(u64::from(first))?;
    (span + 1 == ids.len() as u64).then_some(first)
}

impl<'a> SegView<'a> {
    /// The CSR run of `node` as an index range (empty for nodes beyond this segment's
    /// bound).
    #[inline]
    pub fn run(&self, node: NodeId) -> std::ops::Range<usize> {
        let i = node.index();
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => a as usize..b as usize,
            _ => 0..0,
        }
    }

    /// Starts loading entry `i`'s neighbour id and type (see
    /// [`prefetch_at`](crate::format::segment::prefetch_at)).
    #[inline]
    pub fn prefetch_entry(&self, i: usize) {
        crate::format::segment::prefetch_at(self.neighbors, i);
        crate::format::segment::prefetch_at(self.types, i);
    }

    /// The sub-run of `run` holding edges of type `t` (runs are sorted by type).
    #[inline]
    pub fn type_run(&self, run: std::ops::Range<usize>, t: TypeId) -> std::ops::Range<usize> {
        let types = self.types.get(run.clone()).unwrap_or(&[]);
        let lo = types.partition_point(|&x| x < t.0);
        let hi = lo + types[lo..].partition_point(|&x| x <= t.0);
        run.start + lo..run.start + hi
    }

    /// The least and greatest type of `run` (runs are sorted by type); `None` for an empty
    /// or out-of-bounds run.
    #[inline]
    pub fn type_span(&self, run: std::ops::Range<usize>) -> Option<(u16, u16)> {
        let types = self.types.get(run)?;
        Some((*types.first()?, *types.last()?))
    }

    /// The sub-run of `run` holding the type of its first entry (runs are sorted by type);
    /// empty for an empty or out-of-bounds run.
    #[inline]
    pub fn first_type_run(&self, run: std::ops::Range<usize>) -> std::ops::Range<usize> {
        match self.types.get(run.clone()) {
            Some(types) if !types.is_empty() => {
                let t = types[0];
                run.start..run.start + types.partition_point(|&x| x <= t)
            }
            _ => run.start..run.start,
        }
    }

    /// The entries of `run` (a sub-run of one type, sorted by neighbor) whose neighbor is
    /// `n`.
    #[inline]
    pub fn neighbor_run(&self, run: std::ops::Range<usize>, n: u32) -> std::ops::Range<usize> {
        let nbrs = self.neighbors.get(run.clone()).unwrap_or(&[]);
        let lo = nbrs.partition_point(|&x| x < n);
        let hi = lo + nbrs[lo..].partition_point(|&x| x <= n);
        run.start + lo..run.start + hi
    }

    /// The entries of `run` (one node's run, sorted by (type, neighbor)) from the first one
    /// at or after (`t`, `n`) to the end of the run: one binary search on the pair.
    #[inline]
    pub fn pair_run(
        &self,
        run: std::ops::Range<usize>,
        t: TypeId,
        n: u32,
    ) -> std::ops::Range<usize> {
        let types = self.types.get(run.clone()).unwrap_or(&[]);
        let nbrs = self.neighbors.get(run.clone()).unwrap_or(&[]);
        let (mut lo, mut hi) = (0usize, types.len().min(nbrs.len()));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if (types[mid], nbrs[mid]) < (t.0, n) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        run.start + lo..run.end
    }

    /// Neighbor ids.
    #[inline]
    pub fn neighbors(&self) -> &'a [u32] {
        self.neighbors
    }

    /// Entry types (each run sorted by type).
    #[inline]
    pub fn types(&self) -> &'a [u16] {
        self.types
    }

    /// The edge row of CSR entry `i` (`usize::MAX` for a damaged position).
    #[inline]
    pub fn row(&self, i: usize) -> usize {
        self.edge_pos.get(i).map_or(usize::MAX, |&r| r as usize)
    }

    /// The edge id of CSR entry `i`; `u64::MAX` (no edge) for a damaged position.
    #[inline]
    pub fn edge_id(&self, i: usize) -> EdgeId {
        let row = self.edge_pos.get(i).copied().unwrap_or(u32::MAX) as usize;
        EdgeId(match self.dense_base {
            // Rows beyond the columns (a damaged position array) map to no edge.
            Some(base) if row < self.rows => base.saturating_add(row as u64),
            Some(_) => u64::MAX,
            None => self.edge_ids.get(row).copied().unwrap_or(u64::MAX),
        })
    }

    /// The entries of `range` as (neighbor, type, edge id), walking the three arrays in
    /// step (no per-entry bounds checks beyond the slicing).
    #[inline]
    pub fn entries(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (u32, u16, EdgeId)> + 'a {
        let n = self.neighbors.get(range.clone()).unwrap_or(&[]);
        let t = self.types.get(range.clone()).unwrap_or(&[]);
        let p = self.edge_pos.get(range).unwrap_or(&[]);
        let (dense, rows, ids) = (self.dense_base, self.rows, self.edge_ids);
        n.iter().zip(t).zip(p).map(move |((&n, &t), &row)| {
            let row = row as usize;
            let id = match dense {
                Some(base) if row < rows => base.saturating_add(row as u64),
                Some(_) => u64::MAX,
                None => ids.get(row).copied().unwrap_or(u64::MAX),
            };
            (n, t, EdgeId(id))
        })
    }

    /// Number of entries at `node`.
    #[inline]
    pub fn degree(&self, node: NodeId) -> u32 {
        let r = self.run(node);
        u32::try_from(r.end - r.start).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::dense_base;

    #[test]
    fn dense_base_only_for_ids_without_gaps() {
        assert_eq!(dense_base(&[]), None);
        assert_eq!(dense_base(&[5]), Some(5));
        assert_eq!(dense_base(&[5, 6, 7]), Some(5));
        assert_eq!(dense_base(&[0, 1, u32::MAX]), None);
        assert_eq!(dense_base(&[5, 7]), None);
        // A damaged array that ends below its start is not dense (and does not overflow).
        assert_eq!(dense_base(&[7, 5]), None);
        assert_eq!(dense_base(&[u32::MAX - 1, u32::MAX]), Some(u32::MAX - 1));
    }
}

/// The index of `id` in the increasing `ids`, searching forward from `*hint` (from the
/// start when `ids[*hint]` is already past `id`) by doubling steps, then by bisection in
/// the last step's window; `*hint` becomes the answer. Looking up increasing ids one after
/// another therefore costs O(log gap) each, O(1) amortized over a dense walk.
pub(crate) fn gallop_find(ids: &[u32], id: u32, hint: &mut usize) -> Option<usize> {
    let start = match ids.get(*hint) {
        Some(&x) if x <= id => *hint,
        _ => 0,
    };
    // Invariant: every id before `lo` is below `id`.
    let (mut lo, mut hi, mut step) = (start, start, 1usize);
    while hi < ids.len() && ids[hi] < id {
        lo = hi + 1;
        hi = hi.saturating_add(step);
        step = step.saturating_mul(2);
    }
    let hi = hi.min(ids.len().checked_sub(1)?);
    let i = lo + ids.get(lo..=hi)?.binary_search(&id).ok()?;
    *hint = i;
    Some(i)
}

#[cfg(test)]
mod gallop_tests {
    use super::gallop_find;
    use proptest::prelude::*;

    proptest! {
        /// Walking increasing ids (present and absent) with one hint answers exactly as a
        /// binary search per id, and so does any id asked out of order.
        #[test]
        fn gallop_agrees_with_binary_search(
            set in proptest::collection::btree_set(0u32..2000, 0..300),
            asks in proptest::collection::vec(0u32..2100, 0..200),
            shuffled in any::<bool>(),
        ) {
            let ids: Vec<u32> = set.into_iter().collect();
            let mut asks = asks;
            if !shuffled {
                asks.sort_unstable();
            }
            let mut hint = 0usize;
            for id in asks {
                let want = ids.binary_search(&id).ok();
                prop_assert_eq!(gallop_find(&ids, id, &mut hint), want);
            }
        }
    }
}
