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
pub use layout::{RELEASE_WINDOW, Release, SectionEntry, SegmentLayout};
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
    KeyHash = 26, 4, "Open-addressing hash index of keys (optional, version 2 on): `u32[slots]`, record index + 1 per slot (with a hash tag above it from version 3), 0 empty; from version 6 16-byte slots holding the node id and the key or its record's offset (see `KeySlotTable`).";
    TextStats = 30, 1, "Text index collection statistics (see `format::text`); optional, with 31–33.";
    TextTerms = 31, 1, "Text index term dictionary: an `fst` map term → postings offset.";
    TextPostings = 32, 1, "Text index postings lists, delta-coded with per-field term frequencies.";
    TextDocLens = 33, 4, "`u32[records × 3]`: terms per field (title, content, props) of each record (up to version 6; from version 7 `TextFieldLens`).";
    TextFieldLens = 34, 2, "`u16[records × 3]`: terms per field (title, content, props) of each record, capped at 65,535 (version 7 on; replaces `TextDocLens`).";
    TextPairs = 35, 8, "`u64[records × 4]`: each record's 256-bit phrase-pair filter (`format::text::PairFilter`; version 11 on, with the text index).";
    TextPairSet = 36, 8, "`u64[1 + 2^k / 64]`: the segment's phrase-pair set, k then the bits (`format::text::pair_set_log2`; version 13 on, with the text index).";
    VectorMeta = 40, 1, "Vector index header: the store's embedding dimension, vector count and HNSW layer sizes (optional, see `VectorMeta`).";
    VectorIds = 41, 4, "`u32[vectors]`: node ids of the records with an embedding, increasing (with `VectorMeta`).";
    VectorData = 42, 4, "`f32[vectors * dim]`: those embeddings row by row (with `VectorMeta`): as written from version 8 (the records keep no copy), L2-normalised before.";
    HnswOffsets = 43, 4, "`u32[sum(layer rows + 1)]`: per HNSW layer, each row's start in `HnswNeighbors` (only when the segment has an HNSW graph).";
    HnswNeighbors = 44, 4, "`u32[links]`: HNSW neighbour rows (indices into `VectorIds`), all layers.";
    HnswMembers = 45, 4, "`u32[sum(layer rows), layers 1..]`: rows of each HNSW layer above 0, increasing per layer.";
    EdgeValidFrom = 50, 8, "`u64[edges]`: start of validity per row (version 9 on); absent when every row's equals its creation time.";
    EdgeValidTo = 51, 8, "`u64[edges]`: end of validity per row, `u64::MAX` for none (version 9 on); absent when no row has an end.";
    EdgeValidity = 52, 8, "`u64[3 × n]`: (edge id, valid_from, valid_to) of edges of older segments whose interval changed in this segment's interval, by id (version 9 on; absent when none).";
    TimedNodes = 53, 1, "Roaring bitmap: node ids of records here whose interval is not [created_at, never) (version 9 on).";
    TimedEdges = 54, 1, "Roaring treemap: edge ids of rows here whose interval is not [created_at, never), and of every edge in `EdgeValidity` (version 9 on).";
    TimeBounds = 55, 8, "`u64[2]`: the greatest valid_from of the records here, and of the rows and `EdgeValidity` entries here (0: none; version 9 on).";
    VectorScales = 46, 4, "`f32[vectors]`: per `VectorData` row, the factor that scales it to unit length (`vector::row_scale`; version 8 on, with `VectorMeta` of a nonzero dimension).";
}

/// The text index sections: present all together or not at all, with exactly one of
/// [`TEXT_LENS_SECTIONS`].
pub const TEXT_SECTIONS: &[SectionKind] = &[
    SectionKind::TextStats,
    SectionKind::TextTerms,
    SectionKind::TextPostings,
];

/// The two encodings of a text index's field lengths: `u32` (up to version 6) and capped
/// `u16` (version 7 on). A segment with a text index holds exactly one.
pub const TEXT_LENS_SECTIONS: &[SectionKind] =
    &[SectionKind::TextDocLens, SectionKind::TextFieldLens];

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

/// Bytes of one `KeyHash` slot from version 6 on.
pub const KEY_SLOT_LEN: usize = 16;
/// Keys of at most this many bytes are stored inside their version 6 slot.
pub const KEY_INLINE_MAX: usize = 11;
/// Slot byte 4 of an empty version 6 slot.
const SLOT_EMPTY: u8 = 0;
/// Slot byte 4 of a version 6 slot whose key is stored in its record only.
const SLOT_OUT_OF_LINE: u8 = 0xFF;
/// Bytes 5..9 (the tag) and 4 (the marker) of a slot, as bits of the slot read as a
/// little-endian `u128`.
const SLOT_TAG_MASK: u128 = 0xFF_FFFF_FFFF << 32;
/// Every byte of a slot but the node id (bytes 0..4).
const SLOT_KEY_MASK: u128 = !0xFFFF_FFFF;
/// Record offsets in a version 6 slot take 7 bytes.
const SLOT_OFFSET_MAX: u64 = (1 << 56) - 1;

/// The hash of a node key in a version 6 `KeyHash` index: each 8-byte little-endian chunk
/// of the key (the last zero-padded) is xored into a state seeded with the key's length,
/// which is then multiplied by a constant and folded; the result goes through the 64-bit
/// finalizer of MurmurHash3. Part of the format (see DESIGN.md, section 26).
#[inline]
pub fn key_hash64(key: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = K ^ key.len() as u64;
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(K);
        h ^= h >> 29;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(K);
        h ^= h >> 29;
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

/// Slots of a version 6 `KeyHash` index for `records` keys: `records + ⌈records / 3⌉ + 1`,
/// a load of at most 3/4 with at least one empty slot. Part of the format.
pub fn key_slot_count(records: usize) -> usize {
    records
        .saturating_add(records.div_ceil(3))
        .saturating_add(1)
}

/// Asks the CPU to start loading `s[i]` into its caches: a hint, with no effect when `i` is
/// out of bounds or on targets other than x86-64.
#[inline]
pub fn prefetch_at<T>(s: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = s.get(i) {
        // SAFETY: a prefetch is a hint that never faults and changes no program state; the
        // pointer is in bounds of a live slice besides.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                std::ptr::from_ref(x).cast(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (s, i);
}

/// Asks the CPU to start loading `s[start..start + len]` (clipped to `s`), one hint per
/// 64-byte cache line and one for the last element (a span that starts mid-line touches
/// one line more than its length).
#[inline]
pub fn prefetch_span<T>(s: &[T], start: usize, len: usize) {
    // Clipped first: a span from a damaged array can name billions of entries past `s`
    // (a fuzzed HNSW graph hung here, one hint per 16 missing entries).
    let end = start.saturating_add(len).min(s.len());
    if end <= start {
        return;
    }
    let step = (64 / std::mem::size_of::<T>().max(1)).max(1);
    let mut at = start;
    while at < end {
        prefetch_at(s, at);
        at = at.saturating_add(step);
    }
    prefetch_at(s, end - 1);
}

/// The tag of a key whose hash is `hash`: the hash's low 32 bits.
#[inline]
fn key_tag(hash: u64) -> u32 {
    #[allow(
        clippy::cast_possible_truncation,
        reason = "the low 32 bits are the tag"
    )]
    let tag = hash as u32;
    tag
}

/// The home slot of a key whose hash is `hash` among `slots` slots: `⌊hash · slots / 2⁶⁴⌋`,
/// below `slots` (for `slots > 0`).
#[inline]
fn home_slot(hash: u64, slots: usize) -> usize {
    let home = (u128::from(hash) * slots as u128) >> 64;
    // Below `slots`, a usize.
    usize::try_from(home).unwrap_or(0)
}

/// A key prepared for look-ups in version 6 `KeyHash` indexes: its hash (computed once for
/// every segment asked) and the slot bits that identify it.
#[derive(Clone, Copy, Debug)]
pub struct KeyQuery<'k> {
    key: &'k [u8],
    hash: u64,
    /// The slot bits under `mask` of a slot holding this key.
    want: u128,
    mask: u128,
}

impl<'k> KeyQuery<'k> {
    /// The key.
    #[inline]
    pub fn key(&self) -> &'k [u8] {
        self.key
    }

    /// Prepares `key`.
    #[inline]
    pub fn new(key: &'k [u8]) -> KeyQuery<'k> {
        let hash = key_hash64(key);
        let (want, mask) = match key_slot_bytes(key) {
            Some(tail) => {
                let mut slot = [0u8; KEY_SLOT_LEN];
                slot[4..].copy_from_slice(&tail);
                (u128::from_le_bytes(slot), SLOT_KEY_MASK)
            }
            None => {
                let mut slot = [0u8; KEY_SLOT_LEN];
                slot[4] = SLOT_OUT_OF_LINE;
                slot[5..9].copy_from_slice(&key_tag(hash).to_le_bytes());
                (u128::from_le_bytes(slot), SLOT_TAG_MASK)
            }
        };
        KeyQuery {
            key,
            hash,
            want,
            mask,
        }
    }
}

/// Bytes 4..16 of the slot of an inline key (`None` for a key too long to be inline):
/// its length + 1, then the key, zero-padded.
fn key_slot_bytes(key: &[u8]) -> Option<[u8; KEY_SLOT_LEN - 4]> {
    if key.len() > KEY_INLINE_MAX {
        return None;
    }
    let mut tail = [0u8; KEY_SLOT_LEN - 4];
    // At most 11 (checked above), so the length + 1 fits the byte.
    tail[0] = u8::try_from(key.len() + 1).ok()?;
    tail[1..=key.len()].copy_from_slice(key);
    Some(tail)
}

/// The version 6 `KeyHash` index of a segment, read in place: `slots` 16-byte slots
/// (see DESIGN.md, section 26), each
///
/// ```text
///  0  node id  u32
///  4  marker   u8     0: empty; 1..=12: the key is inline, its length + 1; 0xFF: out of line
///  5  inline:  the key's bytes, zero-padded to 11
///  5  out of line: tag u32 (the low 32 bits of `key_hash64`), then the byte offset of the
///     key's record in `NodeBlob` as a 7-byte little-endian integer
/// ```
///
/// A key's home slot is `⌊key_hash64(key) · slots / 2⁶⁴⌋`; it is stored in the first empty
/// slot from there (wrapping at the end), records in index order. A look-up therefore
/// learns the node id in the slot it matches, compares short keys in the slot itself and
/// reads a record only for a long key whose tag agrees.
#[derive(Clone, Copy, Debug)]
pub struct KeySlotTable<'a> {
    slots: &'a [[u8; KEY_SLOT_LEN]],
    blob: &'a [u8],
}

impl<'a> KeySlotTable<'a> {
    /// The index in `table` (the section's bytes), with `blob` the segment's `NodeBlob`.
    /// `None` when the bytes are not whole slots or hold none.
    pub fn new(table: &'a [u8], blob: &'a [u8]) -> Option<KeySlotTable<'a>> {
        let slots: &[[u8; KEY_SLOT_LEN]] = bytemuck::try_cast_slice(table).ok()?;
        (!slots.is_empty()).then_some(KeySlotTable { slots, blob })
    }

    /// The home slot of `q`.
    #[inline]
    pub fn home(&self, q: &KeyQuery<'_>) -> usize {
        home_slot(q.hash, self.slots.len())
    }

    /// Asks the CPU to start loading slot `i` (see [`prefetch_at`]), so that the misses of
    /// several look-ups overlap.
    #[inline]
    pub fn prefetch(&self, i: usize) {
        prefetch_at(self.slots, i);
    }

    /// The node id stored with `q`'s key, probing from slot `home` (see [`Self::home`]).
    #[inline]
    pub fn find(&self, q: &KeyQuery<'_>, home: usize) -> Option<u32> {
        let n = self.slots.len();
        let mut i = home;
        // At most every slot; a table built by `build_key_slots` has an empty one.
        for _ in 0..n {
            let bytes = self.slots.get(i)?;
            if bytes[4] == SLOT_EMPTY {
                return None;
            }
            let slot = u128::from_le_bytes(*bytes);
            if slot & q.mask == q.want
                && (q.mask == SLOT_KEY_MASK || self.out_of_line_key(bytes) == Some(q.key))
            {
                return Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
        None
    }

    /// The key of an out-of-line slot, read from its record (`None` when out of bounds).
    #[inline]
    fn out_of_line_key(&self, slot: &[u8; KEY_SLOT_LEN]) -> Option<&'a [u8]> {
        let mut offset = [0u8; 8];
        offset[..7].copy_from_slice(&slot[9..]);
        let at = usize::try_from(u64::from_le_bytes(offset)).ok()?;
        let len = self.blob.get(at..at.checked_add(4)?)?;
        let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
        self.blob.get(at + 4..(at + 4).checked_add(len)?)
    }
}

/// Builds the version 6 `KeyHash` index (see [`KeySlotTable`]) of records given in index
/// order as (key, node id, byte offset of the record in `NodeBlob`). `None` when a record
/// offset does not fit the slot's 7 bytes (a blob of 64 PiB).
pub fn build_key_slots<'a>(
    records: impl ExactSizeIterator<Item = (&'a [u8], u32, u64)>,
) -> Option<Vec<u8>> {
    let n = key_slot_count(records.len());
    let mut slots = vec![[0u8; KEY_SLOT_LEN]; n];
    for (key, id, offset) in records {
        let q = KeyQuery::new(key);
        let mut slot = [0u8; KEY_SLOT_LEN];
        slot[..4].copy_from_slice(&id.to_le_bytes());
        match key_slot_bytes(key) {
            Some(tail) => slot[4..].copy_from_slice(&tail),
            None => {
                if offset > SLOT_OFFSET_MAX {
                    return None;
                }
                slot[4] = SLOT_OUT_OF_LINE;
                slot[5..9].copy_from_slice(&key_tag(q.hash).to_le_bytes());
                slot[9..].copy_from_slice(&offset.to_le_bytes()[..7]);
            }
        }
        let mut i = home_slot(q.hash, n);
        while slots[i][4] != SLOT_EMPTY {
            i = if i + 1 == n { 0 } else { i + 1 };
        }
        slots[i] = slot;
    }
    Some(slots.into_iter().flatten().collect())
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
    /// Starts a segment of database `db_id` that declares format `version`, writing the
    /// header: this build's `FORMAT_VERSION`, or an older segment's when its sections are
    /// copied (they must keep the version they were written in).
    ///
    /// # Errors
    /// I/O errors of `out`.
    pub fn with_version(mut out: W, db_id: u128, version: u32) -> io::Result<SegmentEncoder<W>> {
        debug_assert!((super::FORMAT_VERSION_MIN..=super::FORMAT_VERSION).contains(&version));
        let mut w = ByteWriter::new();
        w.raw(&SEGMENT_MAGIC);
        w.u32(version);
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

    /// Pads with zeros to a multiple of `to` bytes (a power of two, at least 8), so that the
    /// next section starts there.
    ///
    /// # Errors
    /// I/O errors of the output.
    pub fn align(&mut self, to: u64) -> io::Result<()> {
        let pad = (to - self.pos % to) % to;
        for _ in 0..pad / 8 {
            self.out.write_all(&[0u8; 8])?;
        }
        self.pos += pad / 8 * 8;
        self.pad()
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

    /// Appends one section whose bytes are `parts` back to back (not gathered into one
    /// buffer first).
    ///
    /// # Errors
    /// I/O errors of the output.
    pub fn section_parts<'b>(
        &mut self,
        kind: SectionKind,
        parts: impl IntoIterator<Item = &'b [u8]>,
    ) -> io::Result<()> {
        self.pad()?;
        let mut crc = crc32fast::Hasher::new();
        let mut len = 0u64;
        for part in parts {
            self.out.write_all(part)?;
            crc.update(part);
            len += part.len() as u64;
        }
        self.table.push((kind, self.pos, len, crc.finalize()));
        self.pos += len;
        Ok(())
    }

    /// Appends one section whose bytes `fill` hands to the sink it is given, part by part
    /// (streamed from elsewhere, e.g. a bulk load's spill files, never gathered in memory).
    /// The bytes are those of [`SegmentEncoder::section`] with the parts back to back.
    ///
    /// # Errors
    /// I/O errors of the output, or of `fill`.
    pub fn section_from(
        &mut self,
        kind: SectionKind,
        fill: impl FnOnce(&mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<()>,
    ) -> io::Result<()> {
        self.pad()?;
        let mut crc = crc32fast::Hasher::new();
        let mut len = 0u64;
        let out = &mut self.out;
        fill(&mut |part: &[u8]| {
            out.write_all(part)?;
            crc.update(part);
            len += part.len() as u64;
            Ok(())
        })?;
        self.table.push((kind, self.pos, len, crc.finalize()));
        self.pos += len;
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
    #![allow(clippy::cast_possible_truncation, reason = "test sizes are small")]

    /// A span far past the slice (a damaged offsets array) is clipped, not walked: this
    /// returned only after ~2^60 steps before (the fuzzer's timeout in `vector_sections`).
    #[test]
    fn prefetch_span_clips_to_the_slice() {
        let s = [1u32, 2, 3, 4];
        super::prefetch_span(&s, 0, usize::MAX);
        super::prefetch_span(&s, 3, usize::MAX);
        super::prefetch_span(&s, usize::MAX - 1, usize::MAX);
        super::prefetch_span(&s, 9, 5);
        super::prefetch_span::<u32>(&[], 0, 7);
    }

    use super::{
        KEY_INLINE_MAX, KEY_SLOT_LEN, KeyQuery, KeySlotTable, KeySlots, build_key_hash,
        build_key_slots, key_hash, key_slot_count,
    };

    /// The chunked monotonicity check answers as the obvious one, for decreases anywhere,
    /// at chunk boundaries included.
    #[test]
    fn non_decreasing_matches_windows() {
        use super::layout::non_decreasing;
        let obvious = |xs: &[u32]| !xs.windows(2).any(|w| w[0] > w[1]);
        for len in [0usize, 1, 2, 3, 1023, 1024, 1025, 2048, 2049, 5000] {
            let rising: Vec<u32> = (0..len as u32).map(|i| i / 3 + 1).collect();
            assert!(non_decreasing(&rising), "len {len}");
            for at in [
                1usize,
                2,
                1023,
                1024,
                1025,
                2047,
                2048,
                len.saturating_sub(1),
            ] {
                if at == 0 || at >= len {
                    continue;
                }
                let mut xs = rising.clone();
                xs[at] = xs[at - 1] - 1;
                assert_eq!(non_decreasing(&xs), obvious(&xs), "len {len}, dip at {at}");
                assert!(!non_decreasing(&xs), "len {len}, dip at {at}");
            }
        }
        let equal = vec![7u64; 3000];
        assert!(non_decreasing(&equal));
    }

    /// Records as a blob holds them (a u32 length, the key, then other bytes), with their
    /// offsets.
    fn blob_of(keys: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
        let mut blob = Vec::new();
        let mut offs = Vec::new();
        for k in keys {
            offs.push(blob.len() as u64);
            blob.extend_from_slice(&(k.len() as u32).to_le_bytes());
            blob.extend_from_slice(k);
            blob.extend_from_slice(b"rest of the record");
        }
        (blob, offs)
    }

    /// Version 6 slots: every key, short (inline) or long (in its record), is found with
    /// its node id, keys that are not there (including prefixes, extensions and keys that
    /// differ only past the inline length) are not, and the table has the specified size.
    #[test]
    fn key_slot_tables_find_their_keys() {
        for n in [0usize, 1, 2, 3, 7, 100, 5000] {
            let keys: Vec<Vec<u8>> = (0..n)
                .map(|i| match i % 3 {
                    0 => format!("{i}").into_bytes(),
                    1 => format!("memory-{i:08}-long-key").into_bytes(),
                    _ => format!("k{i:09}x").into_bytes(),
                })
                .collect();
            let (blob, offs) = blob_of(&keys);
            let ids: Vec<u32> = (0..n as u32).map(|i| i * 7 + 3).collect();
            let bytes = build_key_slots(
                keys.iter()
                    .zip(&ids)
                    .zip(&offs)
                    .map(|((k, id), off)| (k.as_slice(), *id, *off)),
            )
            .unwrap();
            assert_eq!(bytes.len(), key_slot_count(n) * KEY_SLOT_LEN);
            let table = KeySlotTable::new(&bytes, &blob).unwrap();
            let find = |k: &[u8]| {
                let q = KeyQuery::new(k);
                table.find(&q, table.home(&q))
            };
            for (k, id) in keys.iter().zip(&ids) {
                assert_eq!(
                    find(k),
                    Some(*id),
                    "{n} keys, {:?}",
                    String::from_utf8_lossy(k)
                );
            }
            for absent in [
                &b"absent"[..],
                b"",
                b"memory-00000001-long-kez",
                b"memory-00000001-long-key-and-more",
                b"k000000002",
                b"k000000002xy",
            ] {
                assert_eq!(find(absent), None, "{n} keys");
            }
        }
    }

    /// The key hash is part of the format: these values are what DESIGN.md's definition
    /// gives (computed independently), and must never change.
    #[test]
    fn key_hash64_is_pinned() {
        assert_eq!(super::key_hash64(b""), 0x9ca0_66f1_a4ab_2eea);
        assert_eq!(super::key_hash64(b"alpha"), 0x7c37_3591_7ddc_c70a);
        assert_eq!(
            super::key_hash64(b"memory-0000-0001-long"),
            0x3a29_5e76_2bb3_f12c
        );
    }

    /// The slot bytes are what the format says: node id, then the inline key after its
    /// length + 1, or 0xFF, the tag and the record offset.
    #[test]
    fn key_slot_layout() {
        let keys = vec![b"abc".to_vec(), vec![b'z'; KEY_INLINE_MAX + 1]];
        let (blob, offs) = blob_of(&keys);
        let bytes = build_key_slots(
            keys.iter()
                .zip([5u32, 9])
                .zip(&offs)
                .map(|((k, id), off)| (k.as_slice(), id, *off)),
        )
        .unwrap();
        let slots: Vec<&[u8]> = bytes.chunks(KEY_SLOT_LEN).filter(|s| s[4] != 0).collect();
        assert_eq!(slots.len(), 2);
        let short = slots.iter().find(|s| s[0] == 5).unwrap();
        assert_eq!(&short[4..9], &[4, b'a', b'b', b'c', 0]);
        assert!(short[9..].iter().all(|&b| b == 0));
        let long = slots.iter().find(|s| s[0] == 9).unwrap();
        assert_eq!(long[4], 0xFF);
        let tag = super::key_tag(super::key_hash64(&keys[1]));
        assert_eq!(&long[5..9], &tag.to_le_bytes());
        let mut off = [0u8; 8];
        off[..7].copy_from_slice(&long[9..]);
        assert_eq!(u64::from_le_bytes(off), offs[1]);
        assert!(KeySlotTable::new(&bytes, &blob).is_some());
        // Not whole slots, or none at all: no table.
        assert!(KeySlotTable::new(&bytes[1..], &blob).is_none());
        assert!(KeySlotTable::new(&[], &blob).is_none());
    }

    /// A damaged table (no empty slot, record offsets past the blob) answers `None`
    /// without panicking.
    #[test]
    fn damaged_key_slots_do_not_panic() {
        let long = [b'y'; 40];
        let tag = super::key_tag(super::key_hash64(&long));
        let mut full = vec![0u8; 4 * KEY_SLOT_LEN];
        for s in full.chunks_mut(KEY_SLOT_LEN) {
            s[4] = 0xFF;
            s[5..9].copy_from_slice(&tag.to_le_bytes());
            s[9..].copy_from_slice(&[0xFF; 7]);
        }
        let table = KeySlotTable::new(&full, b"tiny").unwrap();
        for k in [&b"x"[..], &long[..]] {
            let q = KeyQuery::new(k);
            assert_eq!(table.find(&q, table.home(&q)), None);
            assert_eq!(table.find(&q, 1000), None);
        }
    }

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
