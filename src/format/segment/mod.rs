//! Segment file layout: immutable sections of CSR adjacency, edge columns and node catalog.
//!
//! ```text
//! header (32 bytes)
//!   0  magic    [u8; 8]  "HOPGSEG\0"
//!   8  version  u32
//!  12  flags    u32      (0)
//!  16  db_id    u128
//! sections, each starting at an 8-byte aligned offset (zero padding between)
//! section table: section_count entries of 32 bytes
//!   0  kind     u32      a `SectionKind`
//!   4  flags    u32      (0)
//!   8  offset   u64
//!  16  len      u64
//!  24  crc      u32      crc32 of the section's bytes
//!  28  reserved u32
//! footer (48 bytes, at file end)
//!   0  segment_id    u64
//!   8  lsn           u64   every commit <= lsn is covered (cumulative summary)
//!  16  table_offset  u64
//!  24  file_len      u64
//!  32  section_count u32
//!  36  crc           u32   crc32(header ‖ table ‖ footer[0..36])
//!  40  magic         [u8; 8] "HOPGEND\0"
//! ```
//! The writer appends sections, then the table and the footer, so a segment is written
//! front to back with ordinary writes and cannot be finished without its checksums.
//! Opening validates structure only (header, footer, table crc, bounds, alignment, array
//! lengths, monotone CSR offsets); `verify` checks every section's crc and every id.

mod bitmaps;
mod layout;
mod text;
mod vector;
mod verify;

pub use bitmaps::{decode_type_bitmaps, encode_bitmap, encode_treemap, encode_type_bitmaps};
#[cfg_attr(not(feature = "internals"), allow(unused_imports))] // fuzz and tests use them
pub use layout::{SectionEntry, SegmentLayout};
#[cfg_attr(not(feature = "internals"), allow(unused_imports))] // fuzz and tests use them
pub use vector::{VECTOR_LEVELS_MAX, VectorMeta, VectorSections};

use std::io::{self, Write};

use super::codec::{ByteReader, ByteWriter, DecodeError};
use crate::graph::limits;

/// Magic bytes at the start of a segment.
pub const SEGMENT_MAGIC: [u8; 8] = *b"HOPGSEG\0";
/// Magic bytes at the end of a segment.
pub const SEGMENT_END_MAGIC: [u8; 8] = *b"HOPGEND\0";
/// Header size.
pub const HEADER_LEN: usize = 32;
/// Footer size.
pub const FOOTER_LEN: usize = 48;
/// Section table entry size.
pub const TABLE_ENTRY_LEN: usize = 32;
/// At most this many sections (guards the table allocation).
pub const SECTIONS_MAX: usize = 64;

macro_rules! section_kinds {
    ($($name:ident = $code:expr, $elem:expr, $doc:expr;)*) => {
        /// The kinds of sections a segment holds. Codes are part of the format.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum SectionKind {
            $(#[doc = $doc] $name = $code,)*
        }
        impl SectionKind {
            /// Every kind, in code order.
            pub const ALL: &'static [SectionKind] = &[$(SectionKind::$name,)*];
            /// The kind with this code.
            pub fn from_code(code: u32) -> Option<SectionKind> {
                match code { $($code => Some(SectionKind::$name),)* _ => None }
            }
            /// Element size in bytes for array sections (1 for byte blobs).
            pub fn elem_size(self) -> usize {
                match self { $(SectionKind::$name => $elem,)* }
            }
        }
    };
}

section_kinds! {
    Summary = 1, 1, "Cumulative catalog summary (codec-encoded, see `Summary`).";
    OutOffsets = 2, 4, "`u32[node_bound + 1]`: start of each node's run in the out-CSR.";
    OutNeighbors = 3, 4, "`u32[edges]`: targets, per node sorted by (type, neighbor, edge id).";
    OutTypes = 4, 2, "`u16[edges]`: edge type of each out-CSR entry.";
    OutEdgePos = 5, 4, "`u32[edges]`: row of each out-CSR entry in the edge columns.";
    InOffsets = 6, 4, "`u32[node_bound + 1]`: start of each node's run in the in-CSR.";
    InNeighbors = 7, 4, "`u32[edges]`: sources, per node sorted by (type, neighbor, edge id).";
    InTypes = 8, 2, "`u16[edges]`: edge type of each in-CSR entry.";
    InEdgePos = 9, 4, "`u32[edges]`: row of each in-CSR entry in the edge columns.";
    EdgeIds = 10, 8, "`u64[edges]`: edge id per row, increasing; absent when ids are dense.";
    EdgeSources = 11, 4, "`u32[edges]`: source per row (version 1 only).";
    EdgeTargets = 12, 4, "`u32[edges]`: target per row (version 1 only).";
    EdgeTypes = 13, 2, "`u16[edges]`: type per row (version 1 only).";
    EdgeWeights = 14, 4, "`f32[edges]`: weight per row; absent when every weight is 1.0.";
    EdgeCreated = 15, 8, "`u64[edges]`: creation time per row; absent when uniform.";
    EdgePropsOffsets = 16, 8, "`u64[edges + 1]` into `EdgePropsBlob`; absent when no props.";
    EdgePropsBlob = 17, 1, "Concatenated compact-JSON edge props.";
    TypeBitmaps = 18, 1, "Per (direction, type): roaring bitmap of nodes with such edges.";
    EdgeTombstones = 19, 1, "Roaring treemap of edge ids deleted from older segments.";
    NodeTombstones = 20, 1, "Roaring bitmap of node ids deleted from older segments.";
    NodeIds = 21, 4, "`u32[records]`: node ids with a record here, increasing.";
    NodeOffsets = 22, 8, "`u64[records + 1]`: record boundaries in `NodeBlob`.";
    NodeBlob = 23, 1, "Concatenated node records (see `record::encode_node`).";
    KeyOrder = 24, 4, "`u32[records]`: record indices sorted by key bytes.";
    EdgeOutPos = 25, 4, "`u32[edges]`: out-CSR entry of each row (version 2 on; source, target and type are read there).";
    KeyHash = 26, 4, "`u32[slots]`: open-addressing hash index of keys, record index + 1 per slot (with a hash tag above it from version 3), 0 empty (optional, version 2 on).";
    TextStats = 30, 1, "Text index collection statistics (see `format::text`); optional, with 31–33.";
    TextTerms = 31, 1, "Text index term dictionary: an `fst` map term → postings offset.";
    TextPostings = 32, 1, "Text index postings lists, delta-coded with per-field term frequencies.";
    TextDocLens = 33, 4, "`u32[records × 3]`: terms per field (title, content, props) of each record.";
    VectorMeta = 40, 1, "Vector index header: the store's embedding dimension, vector count and HNSW layer sizes (optional, see `VectorMeta`).";
    VectorIds = 41, 4, "`u32[vectors]`: node ids of the records with an embedding, increasing (with `VectorMeta`).";
    VectorData = 42, 4, "`f32[vectors * dim]`: those embeddings L2-normalised, row by row (with `VectorMeta`).";
    HnswOffsets = 43, 4, "`u32[sum(layer rows + 1)]`: per HNSW layer, each row's start in `HnswNeighbors` (only when the segment has an HNSW graph).";
    HnswNeighbors = 44, 4, "`u32[links]`: HNSW neighbour rows (indices into `VectorIds`), all layers.";
    HnswMembers = 45, 4, "`u32[sum(layer rows), layers 1..]`: rows of each HNSW layer above 0, increasing per layer.";
}

/// The text index sections: present all together or not at all.
pub const TEXT_SECTIONS: &[SectionKind] = &[
    SectionKind::TextStats,
    SectionKind::TextTerms,
    SectionKind::TextPostings,
    SectionKind::TextDocLens,
];

/// The hash of a node key in the `KeyHash` index: CRC-32 (IEEE, as `crc32fast` computes it)
/// of the key bytes. Part of the format.
pub fn key_hash(key: &[u8]) -> u32 {
    crc32fast::hash(key)
}

/// Slots of the `KeyHash` index for `records` keys: the least power of two holding them at
/// a load of at most 3/4 (at least 1). Part of the format (readers check it).
pub fn key_hash_slots(records: usize) -> usize {
    records
        .saturating_mul(4)
        .div_ceil(3)
        .max(1)
        .checked_next_power_of_two()
        .unwrap_or(usize::MAX)
}

/// How a `KeyHash` slot splits into a record part and a tag part. The record part is the
/// low `b` bits, `b` the bit length of the segment's record count, and holds the record
/// index plus one (0: empty slot). From version 3 the bits above it hold the same bits of
/// the key's hash (its top `32 - b` bits), so a probe compares a key's bytes only when the
/// tags agree: a slot of another key costs no read of its record. Version 2 slots are the
/// record part alone. Part of the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeySlots {
    record_mask: u32,
}

impl KeySlots {
    /// The split for a segment of `version` with `records` node records.
    pub fn new(version: u32, records: usize) -> KeySlots {
        let bits = u32::try_from(records).map_or(32, |n| 32 - n.leading_zeros());
        let record_mask = if version < super::KEY_HASH_TAG_VERSION || bits >= 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        };
        KeySlots { record_mask }
    }

    /// The slot value for `r`, a record index plus one (at most the record count), of a
    /// key whose hash is `hash`.
    #[inline]
    pub fn slot(&self, hash: u32, r: u32) -> u32 {
        (hash & !self.record_mask) | (r & self.record_mask)
    }

    /// The record index plus one stored in `slot`; 0 for an empty slot.
    #[inline]
    pub fn record(&self, slot: u32) -> u32 {
        slot & self.record_mask
    }

    /// Whether `slot` may hold a key whose hash is `hash` (its tag agrees).
    #[inline]
    pub fn may_hold(&self, slot: u32, hash: u32) -> bool {
        (slot ^ hash) & !self.record_mask == 0
    }
}

/// Builds the `KeyHash` index of a segment of `version`: record `r` (key `keys[r]`) goes to
/// the first empty slot at or after `key_hash(key) & (slots - 1)`, records in index order,
/// wrapping at the end; the slot's value is [`KeySlots::slot`].
pub fn build_key_hash<'a>(version: u32, keys: impl ExactSizeIterator<Item = &'a [u8]>) -> Vec<u32> {
    let slots = key_hash_slots(keys.len());
    let split = KeySlots::new(version, keys.len());
    let mask = slots - 1;
    let mut table = vec![0u32; slots];
    for (r, key) in (1u32..).zip(keys) {
        let hash = key_hash(key);
        let mut i = hash as usize & mask;
        while table[i] != 0 {
            i = (i + 1) & mask;
        }
        table[i] = split.slot(hash, r);
    }
    table
}

/// Sections every segment must have (plus, by version, `EdgeSources`, `EdgeTargets` and
/// `EdgeTypes` in version 1 or `EdgeOutPos` from version 2 on; see `SegmentLayout`).
pub const REQUIRED: &[SectionKind] = &[
    SectionKind::Summary,
    SectionKind::OutOffsets,
    SectionKind::OutNeighbors,
    SectionKind::OutTypes,
    SectionKind::OutEdgePos,
    SectionKind::InOffsets,
    SectionKind::InNeighbors,
    SectionKind::InTypes,
    SectionKind::InEdgePos,
    SectionKind::TypeBitmaps,
    SectionKind::EdgeTombstones,
    SectionKind::NodeTombstones,
    SectionKind::NodeIds,
    SectionKind::NodeOffsets,
    SectionKind::NodeBlob,
    SectionKind::KeyOrder,
];

/// The cumulative catalog state as of the segment's LSN plus this segment's own counts.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Summary {
    /// Exclusive bound of node ids allocated so far (the CSR offset arrays have this + 1).
    pub node_bound: u32,
    /// Next edge id to allocate.
    pub next_edge_id: u64,
    /// Live nodes in the database as of `lsn`.
    pub live_nodes: u64,
    /// Rows in this segment's edge columns.
    pub edge_rows: u64,
    /// Node records in this segment.
    pub node_records: u64,
    /// When `Some(base)`, row `i` has edge id `base + i` and `EdgeIds` is absent.
    pub dense_edge_base: Option<u64>,
    /// When `Some(t)`, every row was created at `t` and `EdgeCreated` is absent.
    pub uniform_created_at: Option<u64>,
    /// Every edge type interned so far (index = type id) with its live edge count.
    pub types: Vec<(String, u64)>,
}

impl Summary {
    /// Encodes the summary section.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = ByteWriter::new();
        w.u32(self.node_bound);
        w.u64(self.next_edge_id);
        w.u64(self.live_nodes);
        w.u64(self.edge_rows);
        w.u64(self.node_records);
        for opt in [self.dense_edge_base, self.uniform_created_at] {
            w.u8(u8::from(opt.is_some()));
            w.u64(opt.unwrap_or(0));
        }
        w.u32(u32::try_from(self.types.len()).unwrap_or(u32::MAX));
        for (name, count) in &self.types {
            w.str(name);
            w.u64(*count);
        }
        w.buf
    }

    /// Decodes the summary section.
    pub fn decode(buf: &[u8]) -> Result<Summary, DecodeError> {
        let mut r = ByteReader::new(buf);
        let node_bound = r.u32("node bound")?;
        let next_edge_id = r.u64("next edge id")?;
        let live_nodes = r.u64("live nodes")?;
        let edge_rows = r.u64("edge rows")?;
        let node_records = r.u64("node records")?;
        let mut opts = [None, None];
        for o in &mut opts {
            let flag = r.u8("option flag")?;
            let v = r.u64("option value")?;
            *o = (flag == 1).then_some(v);
        }
        let at = r.pos();
        let n = r.u32("type count")? as usize;
        if n > limits::EDGE_TYPES_MAX || n > r.remaining() / 12 {
            return Err(DecodeError::new(
                at,
                format!("type count {n} is impossible"),
            ));
        }
        let mut types = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.str(limits::EDGE_TYPE_BYTES_MAX, "type name")?.to_owned();
            types.push((name, r.u64("type count")?));
        }
        if !r.is_empty() {
            return Err(DecodeError::new(r.pos(), "trailing bytes in summary"));
        }
        Ok(Summary {
            node_bound,
            next_edge_id,
            live_nodes,
            edge_rows,
            node_records,
            dense_edge_base: opts[0],
            uniform_created_at: opts[1],
            types,
        })
    }
}

/// Writes a segment front to back: sections, then table and footer.
pub struct SegmentEncoder<W: Write> {
    out: W,
    pos: u64,
    header: Vec<u8>,
    table: Vec<(SectionKind, u64, u64, u32)>,
}

impl<W: Write> SegmentEncoder<W> {
    /// Starts a segment of database `db_id`, writing the header.
    ///
    /// # Errors
    /// I/O errors of `out`.
    pub fn new(mut out: W, db_id: u128) -> io::Result<SegmentEncoder<W>> {
        let mut w = ByteWriter::new();
        w.raw(&SEGMENT_MAGIC);
        w.u32(super::FORMAT_VERSION);
        w.u32(0);
        w.u128(db_id);
        out.write_all(&w.buf)?;
        Ok(SegmentEncoder {
            out,
            pos: HEADER_LEN as u64,
            header: w.buf,
            table: Vec::new(),
        })
    }

    fn pad(&mut self) -> io::Result<()> {
        let pad = (8 - (self.pos % 8)) % 8;
        if pad > 0 {
            self.out.write_all(&[0u8; 8][..pad as usize])?;
            self.pos += pad;
        }
        Ok(())
    }

    /// Appends one section.
    ///
    /// # Errors
    /// I/O errors of the output.
    pub fn section(&mut self, kind: SectionKind, bytes: &[u8]) -> io::Result<()> {
        self.pad()?;
        self.out.write_all(bytes)?;
        self.table
            .push((kind, self.pos, bytes.len() as u64, crc32fast::hash(bytes)));
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// Appends an array section.
    ///
    /// # Errors
    /// I/O errors of the output.
    pub fn array<T: bytemuck::Pod>(&mut self, kind: SectionKind, values: &[T]) -> io::Result<()> {
        self.section(kind, bytemuck::cast_slice(values))
    }

    /// Writes the table and footer; returns the output and the file length.
    ///
    /// # Errors
    /// I/O errors of the output.
    pub fn finish(mut self, segment_id: u64, lsn: u64) -> io::Result<(W, u64)> {
        self.pad()?;
        let table_offset = self.pos;
        let mut t = ByteWriter::new();
        for (kind, offset, len, crc) in &self.table {
            t.u32(*kind as u32);
            t.u32(0);
            t.u64(*offset);
            t.u64(*len);
            t.u32(*crc);
            t.u32(0);
        }
        let file_len = table_offset + t.buf.len() as u64 + FOOTER_LEN as u64;
        let mut f = ByteWriter::new();
        f.u64(segment_id);
        f.u64(lsn);
        f.u64(table_offset);
        f.u64(file_len);
        f.u32(u32::try_from(self.table.len()).unwrap_or(u32::MAX));
        let mut h = crc32fast::Hasher::new();
        h.update(&self.header);
        h.update(&t.buf);
        h.update(&f.buf);
        f.u32(h.finalize());
        f.raw(&SEGMENT_END_MAGIC);
        self.out.write_all(&t.buf)?;
        self.out.write_all(&f.buf)?;
        Ok((self.out, file_len))
    }
}

#[cfg(test)]
mod tests {
    use super::{KeySlots, build_key_hash, key_hash};

    /// A slot gives back its record part for every record count, and its tag accepts the
    /// hash it was built from; version 2 slots are the record part alone.
    #[test]
    fn key_slots_split_record_and_tag() {
        let hash = 0xdead_beef;
        for records in [
            0usize,
            1,
            5,
            1 << 20,
            (1 << 31) - 1,
            1 << 31,
            u32::MAX as usize,
        ] {
            let v3 = KeySlots::new(3, records);
            let most = u32::try_from(records).unwrap_or(u32::MAX);
            // Record parts run from 1 to the record count.
            for r in [1, most].into_iter().filter(|&r| r >= 1 && r <= most) {
                let slot = v3.slot(hash, r);
                assert_eq!(v3.record(slot), r, "{records} records");
                assert!(v3.may_hold(slot, hash));
            }
            let v2 = KeySlots::new(2, records);
            assert_eq!(v2.slot(hash, 7), 7);
            assert!(v2.may_hold(7, hash));
        }
        // 5 records need 3 bits: the other 29 are the hash's.
        let v3 = KeySlots::new(3, 5);
        assert_eq!(v3.slot(hash, 5), (hash & !7) | 5);
        assert!(!v3.may_hold(v3.slot(hash, 5), hash ^ (1 << 10)));
        assert!(v3.may_hold(v3.slot(hash, 5), hash ^ 2));
    }

    /// Every key of a table is found by probing as a reader does, in both versions, and a
    /// key that is not in it is not.
    #[test]
    fn key_hash_tables_find_their_keys() {
        let keys: Vec<Vec<u8>> = (0..3000).map(|i| format!("k{i}").into_bytes()).collect();
        for version in [2, 3] {
            let table = build_key_hash(version, keys.iter().map(Vec::as_slice));
            let split = KeySlots::new(version, keys.len());
            let find = |key: &[u8]| {
                let hash = key_hash(key);
                let mut i = hash as usize & (table.len() - 1);
                let mut compared = 0;
                loop {
                    let r = split.record(table[i]) as usize;
                    if r == 0 {
                        return (None, compared);
                    }
                    if split.may_hold(table[i], hash) {
                        compared += 1;
                        if keys[r - 1] == key {
                            return (Some(r - 1), compared);
                        }
                    }
                    i = (i + 1) & (table.len() - 1);
                }
            };
            let mut compared = 0;
            for (r, key) in keys.iter().enumerate() {
                let (found, c) = find(key);
                assert_eq!(found, Some(r));
                compared += c;
            }
            assert_eq!(find(b"absent").0, None);
            // Tags leave about one comparison per look-up; without them, about 1.8.
            let per_key = f64::from(compared) / keys.len() as f64;
            if version == 3 {
                assert!(per_key < 1.05, "{per_key}");
            } else {
                assert!(per_key > 1.3, "{per_key}");
            }
        }
    }
}
