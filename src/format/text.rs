//! The full-text index sections of a segment (codes 30–36): pure bytes ↔ values.
//!
//! ```text
//! TextStats (30)     layout u32 (3; 2 in formats 5–9, 1 in format 4), fields u32 (3),
//!                    docs u64, field_len_total [u64; 3], terms u64, postings_len u64
//! TextTerms (31)     an `fst` map: term bytes → byte offset of its postings list in 32
//! TextPostings (32)  per term, in term order, back to back, one list (layouts 2 and 3):
//!                      df varint (≥ 1)
//!                      if df > 128: the list's BlockMeta, then one BlockMeta per block of
//!                        128 postings (the last block may be shorter)
//!                      the blocks' postings, back to back; gap = record index −
//!                        (previous record index + 1) (the list's first: the record index)
//!                    a block of n postings, layout 3 (bit-packed):
//!                      widths [u8; 4]    bits per value (0–32) of the gaps, then of the
//!                                        tfs of fields 0, 1, 2
//!                      four arrays: the n gaps, then the n tfs of each field (0 where
//!                        the field does not hold the term; every posting has some tf
//!                        > 0), each n values of its width packed least significant bit
//!                        first, padded to a whole byte
//!                    a block, layout 2 (formats 5–9): n postings, each: v varint =
//!                      gap << 3 | code; code 1–7: the field mask, tf 1 in each of its
//!                      fields; code 0: then mask varint (1–7), tf varint (≥ 1) per set
//!                      bit, lowest field first
//!                    BlockMeta (17 bytes, little-endian):
//!                      last u32          record index of the block's last posting
//!                      end u32           byte offset just past the block, from the first posting
//!                      len_min [u16; 3]  per field: least length (capped at 65,535) of a
//!                                        document of the block holding the term there
//!                                        (65,535 when none)
//!                      tf_max [u8; 3]    per field: greatest tf (capped: 255 = "255 or
//!                                        more"; 0 when no document holds it there)
//!                    layout 1 (format 4): df varint, then per posting node_delta varint
//!                      (the first: the node id; then id − previous id ≥ 1), field_mask
//!                      varint (≠ 0), tf varint (≥ 1) per set bit
//! TextFieldLens (34) u16[records × 3]: terms per field of each node record of the segment,
//!                    in record (node id) order, capped at 65,535 (format 7 on)
//! TextDocLens (33)   the same as u32, uncapped (formats 4–6)
//! TextPairs (35)     u64[records × 4] (format 11 on): per record, in record order, its
//!                    phrase-pair filter, 256 bits (bit i: word i / 64, bit i % 64); bit
//!                    pair_hash(unit_hash(a), unit_hash(b)) >> 24 set for every two units
//!                    a, b (words and bigrams, not whole identifiers) that follow each other
//!                    in one field; unit_hash = 64-bit FNV-1a of the unit's bytes
//!                    (lowercased); pair_hash(a, b) = the top 32 bits of
//!                    (rotl(a, 23) ^ b) × 0x9e3779b97f4a7c15 (wrapping)
//! TextPairSet (36)   u64[1 + 2^k / 64] (format 13 on): the segment's phrase-pair set:
//!                    word 0 = k = pair_set_log2(records) = log2 of 64 × records rounded up
//!                    to a power of two, within 12–28; then 2^k bits (bit i: word 1 + i / 64,
//!                    bit i % 64), bit pair_hash(a, b) >> (32 − k) set for every two units
//!                    a, b that follow each other in one field of any record
//! ```
//! Fields are 0 title, 1 content, 2 props (see `text::TextField`). Varints are unsigned
//! LEB128 (at most 10 bytes). Stats, terms, postings and one lengths section are present
//! together or not at all. A field longer than 65,535 terms scores as one of 65,535 (BM25
//! barely changes there; the block bounds cap lengths the same way); `TextStats` keeps the
//! exact totals.
//! Layouts 2 and 3 name postings by record index (the position of the node's record in the
//! segment) and carry, per block of 128 postings, where the block ends and bounds from
//! which a query computes the most any document of the block can score for the term —
//! what lets a search skip blocks (see `text::maxscore`). Layout 3 packs a block's values
//! at fixed widths, so a block decodes without a branch per posting (a varint's length is
//! one). This build writes layout 3 and reads all three.
//!
//! Decoding is checked: every read is bounds-checked and every count is limited by the
//! bytes left, so no input makes a decoder panic or allocate unboundedly. The one exception
//! is the `fst` crate's map, which may panic on damaged bytes: callers check the sections'
//! crcs before handing the term section to [`TextIndexView::parse`] (the engine does so on
//! the first text search of each segment and in `verify`).

use std::collections::HashMap;

use super::codec::{ByteReader, ByteWriter, DecodeError};

/// Number of indexed fields (title, content, props).
pub const TEXT_FIELDS: usize = 3;
/// Version of the text section layout this build writes (inside `TextStats`).
pub const TEXT_LAYOUT_VERSION: u32 = 3;
/// The first layout with record-indexed, blocked postings and block bounds (format 5).
pub const TEXT_LAYOUT_BLOCKED: u32 = 2;
/// The first layout whose blocks are bit-packed (format 10).
pub const TEXT_LAYOUT_PACKED: u32 = 3;
/// Most bits of a packed block's value (a gap or a tf is a `u32`).
const PACKED_WIDTH_MAX: u8 = 32;
/// Postings per block (layouts 2 and 3).
pub const POSTINGS_BLOCK: usize = 128;
/// [`POSTINGS_BLOCK`] as a posting count.
const BLOCK_U32: u32 = 128;
const _: () = assert!(BLOCK_U32 as usize == POSTINGS_BLOCK);
/// Longest list (bytes of postings) [`PostingList::same_as`] compares.
pub const SAME_LIST_BYTES_MAX: usize = 64 << 10;
/// Encoded length of a [`BlockMeta`].
pub const BLOCK_META_LEN: usize = 17;
/// The most a `TextFieldLens` entry holds: longer fields are stored as this.
pub const FIELD_LEN_MAX: u32 = u16::MAX as u32;
/// Length of the `TextStats` section.
pub const TEXT_STATS_LEN: usize = 4 + 4 + 8 + 8 * TEXT_FIELDS + 8 + 8;

/// `u64` words of a document's phrase-pair filter (`TextPairs`, format 11): 256 bits.
pub const PAIR_FILTER_WORDS: usize = 4;
/// Bits of a phrase-pair filter.
pub const PAIR_FILTER_BITS: usize = 64 * PAIR_FILTER_WORDS;
// `pair_filter_bit` answers the top 8 bits of a pair hash.
const _: () = assert!(PAIR_FILTER_BITS == 1 << 8);

/// Bits of a segment's phrase-pair set per record, before rounding up to a power of two
/// ([`pair_set_log2`]). On the text comparison corpus (3.5 M distinct pairs of adjacent
/// words in 975,872 documents) about one bit in twenty is set; documents of 45 pairs none
/// of which repeat would set about half, and a phrase of three units would then pass a
/// segment lacking it about one time in four.
pub const PAIR_SET_BITS_PER_RECORD: u64 = 64;
/// Least log2 of a phrase-pair set's bits (512 bytes).
pub const PAIR_SET_LOG2_MIN: u32 = 12;
/// Greatest log2 of a phrase-pair set's bits (32 MiB, from about 4 million records).
pub const PAIR_SET_LOG2_MAX: u32 = 28;

/// The log2 of the bits of the phrase-pair set of a segment of `records` records:
/// [`PAIR_SET_BITS_PER_RECORD`] × `records` rounded up to a power of two, within
/// [`PAIR_SET_LOG2_MIN`]..=[`PAIR_SET_LOG2_MAX`]. Part of the format.
#[must_use]
pub fn pair_set_log2(records: u64) -> u32 {
    let bits = records.saturating_mul(PAIR_SET_BITS_PER_RECORD).max(1);
    let log2 = u64::BITS - (bits - 1).leading_zeros();
    log2.clamp(PAIR_SET_LOG2_MIN, PAIR_SET_LOG2_MAX)
}

/// The length in words of the `TextPairSet` section of a segment of `records` records.
#[must_use]
pub fn pair_set_words(records: u64) -> u64 {
    1 + (1u64 << pair_set_log2(records)) / 64
}

/// A document's phrase-pair filter (format 11): bit [`pair_filter_bit`]`(`[`pair_hash`]`(a, b))` is set for every
/// two units `a`, `b` (words and bigrams, stop words included: what a phrase is made of)
/// that follow each other in one of its fields. A phrase can only occur in a document
/// whose filter holds the bits of each two consecutive units of the phrase; most
/// documents that hold a phrase's words but not the phrase miss one of them.
pub type PairFilter = [u64; PAIR_FILTER_WORDS];

/// The hash of a phrase unit (its lowercased text) that [`pair_hash`] combines: 64-bit
/// FNV-1a of its UTF-8 bytes. Part of the format.
#[inline]
pub fn unit_hash(unit: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in unit.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The hash of unit `a` followed by unit `b`, from their [`unit_hash`]es: the top 32
/// bits of `(rotl(a, 23) ^ b) × 0x9e37_79b9_7f4a_7c15` (wrapping). A record's filter bit
/// is its top 8 bits ([`pair_filter_bit`]), a segment's set bit its top k
/// ([`pair_set_log2`]). Part of the format.
#[inline]
pub fn pair_hash(a: u64, b: u64) -> u32 {
    ((a.rotate_left(23) ^ b).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32
}

/// The filter bit (0–255) of a [`pair_hash`]: its top 8 bits. Part of the format.
#[inline]
pub fn pair_filter_bit(hash: u32) -> usize {
    (hash >> 24) as usize
}

/// The phrase-pair filter of a document whose pairs hash to `hashes` ([`pair_hash`]).
#[must_use]
pub fn pair_filter_of(hashes: &[u32]) -> PairFilter {
    let mut filter = PairFilter::default();
    for &h in hashes {
        set_pair_bit(&mut filter, pair_filter_bit(h));
    }
    filter
}

/// Sets bit `bit` (0–255) of `filter`.
#[inline]
pub fn set_pair_bit(filter: &mut PairFilter, bit: usize) {
    set_bit(filter, bit);
}

/// Whether `filter` holds every bit of `wanted`.
#[inline]
pub fn filter_holds(filter: &PairFilter, wanted: &PairFilter) -> bool {
    filter.iter().zip(wanted).all(|(f, w)| f & w == *w)
}

/// Collection statistics of one segment's text index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TextStats {
    /// Layout version (1 or 2).
    pub layout: u32,
    /// Documents (node records) indexed.
    pub docs: u64,
    /// Sum of the documents' lengths (terms) per field.
    pub field_len_total: [u64; TEXT_FIELDS],
    /// Distinct terms.
    pub terms: u64,
    /// Bytes of the postings section.
    pub postings_len: u64,
}

impl TextStats {
    /// Encodes the stats section.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = ByteWriter::new();
        w.u32(self.layout);
        w.u32(3); // TEXT_FIELDS
        w.u64(self.docs);
        for t in self.field_len_total {
            w.u64(t);
        }
        w.u64(self.terms);
        w.u64(self.postings_len);
        w.buf
    }

    /// Decodes the stats section.
    ///
    /// # Errors
    /// A wrong length, layout version or field count.
    pub fn decode(buf: &[u8]) -> Result<TextStats, DecodeError> {
        if buf.len() != TEXT_STATS_LEN {
            return Err(DecodeError::new(
                0,
                format!(
                    "text stats are {} bytes, expected {TEXT_STATS_LEN}",
                    buf.len()
                ),
            ));
        }
        let mut r = ByteReader::new(buf);
        let layout = r.u32("text layout")?;
        if !(1..=TEXT_LAYOUT_VERSION).contains(&layout) {
            return Err(DecodeError::new(0, format!("text layout {layout} unknown")));
        }
        let fields = r.u32("text fields")?;
        if fields as usize != TEXT_FIELDS {
            return Err(DecodeError::new(
                4,
                format!("{fields} text fields, expected 3"),
            ));
        }
        let docs = r.u64("text docs")?;
        let mut field_len_total = [0u64; TEXT_FIELDS];
        for t in &mut field_len_total {
            *t = r.u64("field length total")?;
        }
        Ok(TextStats {
            layout,
            docs,
            field_len_total,
            terms: r.u64("text terms")?,
            postings_len: r.u64("postings length")?,
        })
    }
}

/// Appends `v` as an unsigned LEB128 varint.
pub fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v.to_le_bytes()[0] & 0x7f) | 0x80);
        v >>= 7;
    }
    buf.push(v.to_le_bytes()[0]);
}

/// Reads an unsigned LEB128 varint at `*pos`, advancing it.
///
/// # Errors
/// Truncated input or a varint longer than 10 bytes / above `u64::MAX`.
#[inline]
pub fn get_varint(bytes: &[u8], pos: &mut usize) -> Result<u64, DecodeError> {
    // Most varints of a postings list (gaps, masks, frequencies) are one or two bytes.
    if let Some(&b) = bytes.get(*pos) {
        if b < 0x80 {
            *pos += 1;
            return Ok(u64::from(b));
        }
        if let Some(&c) = bytes.get(*pos + 1)
            && c < 0x80
        {
            *pos += 2;
            return Ok(u64::from(b & 0x7f) | u64::from(c) << 7);
        }
    }
    get_varint_long(bytes, pos)
}

/// [`get_varint`] past its one-byte case.
fn get_varint_long(bytes: &[u8], pos: &mut usize) -> Result<u64, DecodeError> {
    let mut v = 0u64;
    for shift in (0..70).step_by(7) {
        let Some(&b) = bytes.get(*pos) else {
            return Err(DecodeError::new(*pos, "truncated varint"));
        };
        *pos += 1;
        let part = u64::from(b & 0x7f);
        if shift == 63 && part > 1 {
            return Err(DecodeError::new(*pos - 1, "varint overflows u64"));
        }
        v |= part << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(DecodeError::new(*pos, "varint longer than 10 bytes"))
}

/// One entry of a postings list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Posting {
    /// The node (document).
    pub node: u32,
    /// Occurrences per field.
    pub tf: [u32; TEXT_FIELDS],
}

/// Appends one layout-1 postings list (entries sorted by node id, distinct, each with some
/// tf > 0): what format 4 wrote; kept for tests of reading it.
#[cfg(any(test, feature = "internals"))]
pub fn encode_postings(buf: &mut Vec<u8>, postings: &[Posting]) {
    put_varint(buf, postings.len() as u64);
    let mut prev = None;
    for p in postings {
        put_varint(buf, u64::from(p.node - prev.unwrap_or(0)));
        prev = Some(p.node);
        let mut mask = 0u64;
        for (f, &tf) in p.tf.iter().enumerate() {
            if tf > 0 {
                mask |= 1 << f;
            }
        }
        put_varint(buf, mask);
        for &tf in p.tf.iter().filter(|&&tf| tf > 0) {
            put_varint(buf, u64::from(tf));
        }
    }
}

/// A checked reader of one postings list.
#[derive(Clone, Debug)]
pub struct PostingsReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    left: u64,
    prev: Option<u32>,
    df: u64,
}

impl<'a> PostingsReader<'a> {
    /// The list starting at `offset` of the postings section `bytes`.
    ///
    /// # Errors
    /// An offset out of bounds, or a document count the remaining bytes cannot hold
    /// (each entry takes at least 3 bytes).
    pub fn new(bytes: &'a [u8], offset: u64) -> Result<PostingsReader<'a>, DecodeError> {
        let mut pos = usize::try_from(offset)
            .ok()
            .filter(|&p| p < bytes.len())
            .ok_or_else(|| {
                DecodeError::new(0, format!("postings offset {offset} out of bounds"))
            })?;
        let at = pos;
        let df = get_varint(bytes, &mut pos)?;
        if df == 0 || df > (bytes.len() - pos) as u64 / 3 {
            return Err(DecodeError::new(
                at,
                format!("postings count {df} is impossible"),
            ));
        }
        Ok(PostingsReader {
            bytes,
            pos,
            left: df,
            prev: None,
            df,
        })
    }

    /// The number of documents in the list.
    pub fn df(&self) -> u64 {
        self.df
    }

    /// Byte offset just past the entries read so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The next entry, `None` at the end of the list.
    ///
    /// # Errors
    /// Truncated or malformed entries: node ids not increasing or beyond `u32`, an empty
    /// field mask or a bit beyond the fields, a zero or oversized tf.
    pub fn next_posting(&mut self) -> Result<Option<Posting>, DecodeError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let at = self.pos;
        let delta = get_varint(self.bytes, &mut self.pos)?;
        let node = match self.prev {
            None => u32::try_from(delta).ok(),
            Some(p) if delta > 0 => u64::from(p)
                .checked_add(delta)
                .and_then(|n| u32::try_from(n).ok()),
            Some(_) => None,
        }
        .ok_or_else(|| DecodeError::new(at, "postings node ids not increasing"))?;
        self.prev = Some(node);
        let at = self.pos;
        let mask = get_varint(self.bytes, &mut self.pos)?;
        if mask == 0 || mask >> TEXT_FIELDS != 0 {
            return Err(DecodeError::new(
                at,
                format!("field mask {mask:#x} is invalid"),
            ));
        }
        let mut tf = [0u32; TEXT_FIELDS];
        for (f, slot) in tf.iter_mut().enumerate() {
            if mask & (1 << f) != 0 {
                let at = self.pos;
                let v = get_varint(self.bytes, &mut self.pos)?;
                *slot = u32::try_from(v)
                    .ok()
                    .filter(|&v| v > 0)
                    .ok_or_else(|| DecodeError::new(at, format!("term frequency {v}")))?;
            }
        }
        Ok(Some(Posting { node, tf }))
    }
}

/// The bounds of one block of a blocked postings list (or of the whole list): where it
/// ends and what its postings can score at most (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockMeta {
    /// Record index of the last posting.
    pub last: u32,
    /// Byte offset just past the last posting, from the list's first posting.
    pub end: u32,
    /// Per field, the least length (capped at `u16::MAX`) of a document holding the term
    /// in that field; `u16::MAX` when none does.
    pub len_min: [u16; TEXT_FIELDS],
    /// Per field, the greatest tf (capped at `u8::MAX`, meaning "255 or more"); 0 when
    /// no document holds the term in that field.
    pub tf_max: [u8; TEXT_FIELDS],
}

impl Default for BlockMeta {
    fn default() -> BlockMeta {
        BlockMeta {
            last: 0,
            end: 0,
            len_min: [u16::MAX; TEXT_FIELDS],
            tf_max: [0; TEXT_FIELDS],
        }
    }
}

impl BlockMeta {
    /// Widens the bounds to cover a posting of `tf` in a document of field lengths `lens`.
    pub fn cover(&mut self, tf: &[u32; TEXT_FIELDS], lens: &[u32; TEXT_FIELDS]) {
        for f in 0..TEXT_FIELDS {
            if tf[f] > 0 {
                let t = u8::try_from(tf[f]).unwrap_or(u8::MAX);
                let l = u16::try_from(lens[f]).unwrap_or(u16::MAX);
                self.tf_max[f] = self.tf_max[f].max(t);
                self.len_min[f] = self.len_min[f].min(l);
            }
        }
    }

    fn encode(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&self.last.to_le_bytes());
        buf.extend_from_slice(&self.end.to_le_bytes());
        for l in self.len_min {
            buf.extend_from_slice(&l.to_le_bytes());
        }
        buf.extend_from_slice(&self.tf_max);
    }

    /// Decodes the meta at `bytes[at..]`.
    fn decode(bytes: &[u8], at: usize) -> Option<BlockMeta> {
        let b: &[u8; BLOCK_META_LEN] = bytes
            .get(at..at.checked_add(BLOCK_META_LEN)?)?
            .try_into()
            .ok()?;
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Some(BlockMeta {
            last: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            end: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            len_min: [u16_at(8), u16_at(10), u16_at(12)],
            tf_max: [b[14], b[15], b[16]],
        })
    }
}

/// Appends `values`, each of at most `width` bits, packed least significant bit first and
/// padded to a whole byte.
fn put_packed(buf: &mut Vec<u8>, values: impl Iterator<Item = u32>, width: u8) {
    let (mut acc, mut bits) = (0u64, 0u8);
    for v in values {
        acc |= u64::from(v) << bits;
        bits += width;
        while bits >= 8 {
            buf.push(acc.to_le_bytes()[0]);
            acc >>= 8;
            bits -= 8;
        }
    }
    if bits > 0 {
        buf.push(acc.to_le_bytes()[0]);
    }
}

/// Bits needed for every value of `values` (0 when all are 0).
fn packed_width(values: impl Iterator<Item = u32>) -> u8 {
    let max = values.max().unwrap_or(0);
    // 32 − leading zeros ≤ 32.
    u8::try_from(u32::BITS - max.leading_zeros()).unwrap_or(PACKED_WIDTH_MAX)
}

/// Bytes of `n` values of `width` bits packed.
fn packed_len(n: usize, width: u8) -> usize {
    (n * usize::from(width)).div_ceil(8)
}

/// Unpacks `out.len()` (≤ 128) values of `width` (≤ 32) bits packed at `data[at..]`
/// ([`put_packed`]'s layout; the caller checked that `data` holds them): a fixed shift and
/// mask per value, no branch on the data. Each value is one unaligned eight-byte load,
/// from `data` itself where seven bytes follow the values (the block's next array or
/// the list's next block), else from a copy with that slack.
#[inline]
fn unpack(data: &[u8], at: usize, width: u8, out: &mut [u32]) {
    if width == 0 {
        out.fill(0);
        return;
    }
    let len = packed_len(out.len(), width);
    match data.get(at..at + len + 7) {
        Some(src) => unpack_from(src, width, out),
        None => {
            let mut buf = [0u8; POSTINGS_BLOCK * 4 + 8];
            let tail = data.get(at..).unwrap_or(&[]);
            let n = tail.len().min(len).min(POSTINGS_BLOCK * 4);
            buf[..n].copy_from_slice(&tail[..n]);
            unpack_from(&buf, width, out);
        }
    }
}

/// [`unpack`] from `src`, which holds the values and seven bytes more.
#[inline]
// A value is masked to `width` ≤ 32 bits before it is cast.
#[allow(clippy::cast_possible_truncation)]
fn unpack_from(src: &[u8], width: u8, out: &mut [u32]) {
    let mask = (1u64 << width) - 1;
    let width = usize::from(width);
    for (i, v) in out.iter_mut().enumerate() {
        let bit = i * width;
        let at = bit / 8;
        let word = src
            .get(at..at + 8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map_or(0, u64::from_le_bytes);
        // mask < 2^32.
        *v = ((word >> (bit % 8)) & mask) as u32;
    }
}

/// Appends one postings list in `layout` (2 or 3): `postings` (record index, tf per field),
/// sorted by record, distinct, each with some tf > 0; `lens(record)` gives a record's
/// field lengths for the block bounds.
///
/// # Errors
/// A list whose data exceeds `u32::MAX` bytes.
pub fn encode_postings_blocked(
    buf: &mut Vec<u8>,
    postings: &[(u32, [u32; TEXT_FIELDS])],
    lens: impl Fn(u32) -> [u32; TEXT_FIELDS],
    layout: u32,
) -> Result<(), String> {
    put_varint(buf, postings.len() as u64);
    let mut data = Vec::with_capacity(postings.len() * 2);
    let mut metas = Vec::new();
    let mut list = BlockMeta::default();
    let mut base = 0u64;
    for block in postings.chunks(POSTINGS_BLOCK) {
        let mut meta = BlockMeta::default();
        if layout >= TEXT_LAYOUT_PACKED {
            // rec ≥ base and rec − base ≤ u32::MAX: a record index is a u32.
            let gaps = block.iter().scan(base, |b, &(rec, _)| {
                let gap = u32::try_from(u64::from(rec) - *b).unwrap_or(u32::MAX);
                *b = u64::from(rec) + 1;
                Some(gap)
            });
            let widths = [
                packed_width(gaps.clone()),
                packed_width(block.iter().map(|p| p.1[0])),
                packed_width(block.iter().map(|p| p.1[1])),
                packed_width(block.iter().map(|p| p.1[2])),
            ];
            data.extend_from_slice(&widths);
            put_packed(&mut data, gaps, widths[0]);
            for f in 0..TEXT_FIELDS {
                put_packed(&mut data, block.iter().map(|p| p.1[f]), widths[1 + f]);
            }
        }
        for &(rec, tf) in block {
            let gap = u64::from(rec) - base;
            base = u64::from(rec) + 1;
            let l = lens(rec);
            meta.cover(&tf, &l);
            list.cover(&tf, &l);
            meta.last = rec;
            if layout >= TEXT_LAYOUT_PACKED {
                continue;
            }
            let mut mask = 0u64;
            for (f, &t) in tf.iter().enumerate() {
                if t > 0 {
                    mask |= 1 << f;
                }
            }
            if tf.iter().all(|&t| t <= 1) {
                put_varint(&mut data, gap << 3 | mask);
            } else {
                put_varint(&mut data, gap << 3);
                put_varint(&mut data, mask);
                for &t in tf.iter().filter(|&&t| t > 0) {
                    put_varint(&mut data, u64::from(t));
                }
            }
        }
        meta.end = u32::try_from(data.len()).map_err(|_| "a postings list over 4 GiB")?;
        metas.push(meta);
    }
    if postings.len() > POSTINGS_BLOCK {
        list.last = metas.last().map_or(0, |m| m.last);
        list.end = metas.last().map_or(0, |m| m.end);
        list.encode(buf);
        for m in &metas {
            m.encode(buf);
        }
    }
    buf.extend_from_slice(&data);
    Ok(())
}

/// A layout-2 or layout-3 postings list: its document count, bounds and postings, not yet
/// decoded.
#[derive(Clone, Copy, Debug)]
pub struct PostingList<'a> {
    df: u32,
    /// Its blocks are bit-packed (layout 3), not varints (layout 2).
    packed: bool,
    /// The whole list's bounds (lists over one block only).
    bound: Option<BlockMeta>,
    /// The block metas (lists over one block only).
    metas: &'a [u8],
    /// The postings, to the end of the list (over one block) or of the section.
    data: &'a [u8],
    /// Offset of `data` in the postings section (for error offsets).
    data_at: usize,
}

impl<'a> PostingList<'a> {
    /// The list starting at `offset` of the postings section `bytes`, of text layout
    /// `layout` (2 or 3; `TextStats::layout`).
    ///
    /// # Errors
    /// An offset out of bounds, a document count the bytes cannot hold, damaged bounds.
    pub fn new(bytes: &'a [u8], offset: u64, layout: u32) -> Result<PostingList<'a>, DecodeError> {
        let packed = layout >= TEXT_LAYOUT_PACKED;
        let mut pos = usize::try_from(offset)
            .ok()
            .filter(|&p| p < bytes.len())
            .ok_or_else(|| {
                DecodeError::new(0, format!("postings offset {offset} out of bounds"))
            })?;
        let at = pos;
        let df = get_varint(bytes, &mut pos)?;
        let impossible = || DecodeError::new(at, format!("postings count {df} is impossible"));
        // The least a list of df postings takes: a byte each (layout 2), four bytes of
        // widths a block (layout 3).
        let least = if packed {
            df.div_ceil(BLOCK_U32.into()).saturating_mul(4)
        } else {
            df
        };
        if df == 0 || least > (bytes.len() - pos) as u64 {
            return Err(impossible());
        }
        let df = u32::try_from(df).map_err(|_| impossible())?;
        if df as usize <= POSTINGS_BLOCK {
            return Ok(PostingList {
                df,
                packed,
                bound: None,
                metas: &[],
                data: &bytes[pos..],
                data_at: pos,
            });
        }
        let blocks = (df as usize).div_ceil(POSTINGS_BLOCK);
        let bound = BlockMeta::decode(bytes, pos).ok_or_else(impossible)?;
        let metas_at = pos + BLOCK_META_LEN;
        let metas_len = blocks * BLOCK_META_LEN;
        let metas = bytes
            .get(metas_at..metas_at + metas_len)
            .ok_or_else(impossible)?;
        let data_at = metas_at + metas_len;
        let data = bytes
            .get(data_at..)
            .and_then(|d| d.get(..bound.end as usize))
            .ok_or_else(|| DecodeError::new(at, "postings list runs past its section"))?;
        Ok(PostingList {
            df,
            packed,
            bound: Some(bound),
            metas,
            data,
            data_at,
        })
    }

    /// Documents in the list.
    pub fn df(&self) -> u32 {
        self.df
    }

    /// The whole list's bounds; `None` for a list of one block (read it whole).
    pub fn bound(&self) -> Option<BlockMeta> {
        self.bound
    }

    /// Number of blocks with metas (0 for a list of one block).
    pub fn blocks(&self) -> usize {
        self.metas.len() / BLOCK_META_LEN
    }

    /// The meta of block `b`, if it has one.
    pub fn meta(&self, b: usize) -> Option<BlockMeta> {
        BlockMeta::decode(self.metas, b.checked_mul(BLOCK_META_LEN)?)
    }

    /// A cursor before the first posting.
    pub fn cursor(self) -> PostingCursor<'a> {
        PostingCursor::new(self)
    }

    /// Whether `other`, a list of the same postings section, holds the same postings:
    /// their encodings are equal byte for byte. A word whose only form in a segment is
    /// the one the query wrote has equal exact and stem lists, and a search then walks
    /// one of them for both terms. Lists longer than [`SAME_LIST_BYTES_MAX`] are not
    /// compared (`false`): comparing costs a read of both, and a search seeks through
    /// long lists without reading most of them.
    ///
    /// # Errors
    /// Postings of a list of one block that do not decode.
    pub fn same_as(&self, other: &PostingList<'_>) -> Result<bool, DecodeError> {
        if self.df != other.df || self.packed != other.packed {
            return Ok(false);
        }
        match (self.bound, other.bound) {
            // `data` ends at the list's end (`bound.end`), so equal bounds mean equal
            // lengths.
            (Some(a), Some(b)) => Ok(a == b
                && self.data.len() <= SAME_LIST_BYTES_MAX
                && self.metas == other.metas
                && self.data == other.data),
            (None, None) => {
                let len = self.single_block_len()?;
                // Both lists hold `len` bytes, and the same ones.
                Ok(self
                    .data
                    .get(..len)
                    .is_some_and(|a| other.data.get(..len) == Some(a)))
            }
            _ => Ok(false),
        }
    }

    /// Bytes of the postings of a list of one block (its `data` runs to the end of the
    /// section), found by skipping them.
    fn single_block_len(&self) -> Result<usize, DecodeError> {
        let data = self.data;
        if self.packed {
            let n = self.df as usize;
            return match data.get(..4) {
                Some(w) => Ok(4 + w.iter().map(|&w| packed_len(n, w)).sum::<usize>()),
                None => Err(DecodeError::new(self.data_at, "truncated block widths")),
            };
        }
        let mut pos = 0;
        let mut skip = || -> Result<(), DecodeError> {
            if get_varint(data, &mut pos)? & 7 == 0 {
                let mask = get_varint(data, &mut pos)?;
                for _ in 0..(mask & 7).count_ones() {
                    get_varint(data, &mut pos)?;
                }
            }
            Ok(())
        };
        for _ in 0..self.df {
            skip().map_err(|e| DecodeError::new(self.data_at + e.offset, e.what))?;
        }
        Ok(pos)
    }
}

/// Walks a blocked postings list forward a block at a time: entering a block decodes its
/// postings (at most [`POSTINGS_BLOCK`]) into the cursor's buffer, and
/// [`PostingCursor::advance`] then steps through the buffer; [`PostingCursor::seek`] skips
/// whole blocks by their metas without decoding them. Each block's end is checked against
/// its meta as it is decoded, so damaged metas are errors, not wrong answers.
#[derive(Clone, Debug)]
pub struct PostingCursor<'a> {
    list: PostingList<'a>,
    /// Byte offset in `list.data` of the next block to decode.
    pos: usize,
    /// The least record the next block's first posting can name (previous record + 1).
    base: u64,
    /// Postings before the buffered block (a multiple of [`POSTINGS_BLOCK`]).
    block_start: u32,
    /// Postings in the buffered block (0 before the first block is decoded).
    block_len: u32,
    /// Postings read so far: the current posting is `read - 1`.
    read: u32,
    /// The buffered block's records and, per field, its postings' frequencies (a field
    /// array all zeros stays so from block to block while the field is absent: `zeroed`).
    recs: [u32; POSTINGS_BLOCK],
    tfs: [[u32; POSTINGS_BLOCK]; TEXT_FIELDS],
    /// Per field, whether its `tfs` array holds only zeros.
    zeroed: [bool; TEXT_FIELDS],
    /// Record of the current posting (valid after a successful `advance`/`seek`).
    pub rec: u32,
    /// Per-field tf of the current posting.
    pub tf: [u32; TEXT_FIELDS],
    done: bool,
}

impl<'a> PostingCursor<'a> {
    fn new(list: PostingList<'a>) -> PostingCursor<'a> {
        PostingCursor {
            list,
            pos: 0,
            base: 0,
            block_start: 0,
            block_len: 0,
            read: 0,
            recs: [0; POSTINGS_BLOCK],
            tfs: [[0; POSTINGS_BLOCK]; TEXT_FIELDS],
            zeroed: [true; TEXT_FIELDS],
            rec: 0,
            tf: [0; TEXT_FIELDS],
            done: false,
        }
    }

    /// Postings read so far (the current one included).
    pub fn postings_read(&self) -> u32 {
        self.read
    }

    /// Whether the cursor has passed the last posting.
    pub fn done(&self) -> bool {
        self.done
    }

    /// The list being walked.
    pub fn list(&self) -> &PostingList<'a> {
        &self.list
    }

    fn err(&self, what: impl Into<String>) -> DecodeError {
        DecodeError::new(self.list.data_at + self.pos, what)
    }

    fn shift(&self, e: DecodeError) -> DecodeError {
        DecodeError::new(self.list.data_at + e.offset, e.what)
    }

    /// Decodes the block after the buffered one into the buffer (the caller checked that
    /// postings are left).
    fn decode_block(&mut self) -> Result<(), DecodeError> {
        let start = self.block_start + self.block_len;
        let n = (self.list.df - start).min(BLOCK_U32);
        if self.list.packed {
            self.decode_packed(n as usize)?;
        } else {
            self.decode_varints(n as usize)?;
        }
        if self.list.bound.is_some() {
            let b = start as usize / POSTINGS_BLOCK;
            let last = self.recs[n as usize - 1];
            match self.list.meta(b) {
                Some(m) if m.last == last && m.end as usize == self.pos => {}
                _ => return Err(self.err(format!("postings block {b} disagrees with its meta"))),
            }
        }
        self.block_start = start;
        self.block_len = n;
        Ok(())
    }

    /// Decodes a layout-3 block of `n` (1–128) postings at `self.pos` into the buffer,
    /// moving `pos` and `base` past it.
    fn decode_packed(&mut self, n: usize) -> Result<(), DecodeError> {
        let data = self.list.data;
        let Some(&[wg, w0, w1, w2]) = data.get(self.pos..self.pos + 4) else {
            return Err(self.err("truncated block widths"));
        };
        let widths = [wg, w0, w1, w2];
        if widths.iter().any(|&w| w > PACKED_WIDTH_MAX) {
            return Err(self.err(format!("block widths {widths:?} over 32 bits")));
        }
        let mut at = self.pos + 4;
        let mut starts = [0usize; 4];
        for (start, &w) in starts.iter_mut().zip(&widths) {
            *start = at;
            at += packed_len(n, w);
        }
        if at > data.len() {
            return Err(self.err("truncated postings block"));
        }
        // Each posting occurs in some field: the fields' tfs ORed are never 0. A field
        // of width 0 is all zeros (its array stays so while the field stays absent).
        let mut any = [0u32; POSTINGS_BLOCK];
        for f in 0..TEXT_FIELDS {
            if widths[1 + f] == 0 {
                if !self.zeroed[f] {
                    self.tfs[f].fill(0);
                    self.zeroed[f] = true;
                }
                continue;
            }
            let tfs = &mut self.tfs[f][..n];
            unpack(data, starts[1 + f], widths[1 + f], tfs);
            self.zeroed[f] = false;
            for (a, v) in any[..n].iter_mut().zip(tfs.iter()) {
                *a |= *v;
            }
        }
        if any[..n].contains(&0) {
            return Err(self.err("a posting without occurrences"));
        }
        let mut values = [0u32; POSTINGS_BLOCK];
        unpack(data, starts[0], widths[0], &mut values[..n]);
        let mut base = self.base;
        for (rec, &gap) in self.recs[..n].iter_mut().zip(&values[..n]) {
            let r = base + u64::from(gap);
            // Truncated here, checked below once (records ascend): the block is an error
            // if its last record is past u32::MAX.
            #[allow(clippy::cast_possible_truncation)]
            {
                *rec = r as u32;
            }
            base = r + 1;
        }
        if base - 1 > u64::from(u32::MAX) {
            return Err(self.err("postings record index beyond u32"));
        }
        self.pos = at;
        self.base = base;
        Ok(())
    }

    /// Decodes a layout-2 block of `n` (1–128) postings at `self.pos` into the buffer,
    /// moving `pos` and `base` past it.
    fn decode_varints(&mut self, n: usize) -> Result<(), DecodeError> {
        let data = self.list.data;
        let mut pos = self.pos;
        let mut base = self.base;
        // Every field's tf is written for each posting.
        self.zeroed = [false; TEXT_FIELDS];
        for i in 0..n {
            let v = get_varint(data, &mut pos).map_err(|e| self.shift(e))?;
            let gap = v >> 3;
            let code = v & 7;
            let rec = base
                .checked_add(gap)
                .and_then(|r| u32::try_from(r).ok())
                .ok_or_else(|| self.err("postings record index beyond u32"))?;
            let mut tf = [0u32; TEXT_FIELDS];
            if code != 0 {
                for (f, slot) in tf.iter_mut().enumerate() {
                    *slot = u32::from(code & (1 << f) != 0);
                }
            } else {
                let mask = get_varint(data, &mut pos).map_err(|e| self.shift(e))?;
                if mask == 0 || mask >> TEXT_FIELDS != 0 {
                    return Err(self.err(format!("field mask {mask:#x} is invalid")));
                }
                for (f, slot) in tf.iter_mut().enumerate() {
                    if mask & (1 << f) != 0 {
                        let v = get_varint(data, &mut pos).map_err(|e| self.shift(e))?;
                        *slot = u32::try_from(v)
                            .ok()
                            .filter(|&v| v > 0)
                            .ok_or_else(|| self.err(format!("term frequency {v}")))?;
                    }
                }
            }
            self.recs[i] = rec;
            for (f, &t) in tf.iter().enumerate() {
                self.tfs[f][i] = t;
            }
            base = u64::from(rec) + 1;
        }
        self.pos = pos;
        self.base = base;
        Ok(())
    }

    /// Moves to the next posting; `false` (and `done`) at the end.
    ///
    /// # Errors
    /// Truncated or malformed postings, or a block end that disagrees with its meta.
    #[inline]
    pub fn advance(&mut self) -> Result<bool, DecodeError> {
        if self.read >= self.list.df {
            self.done = true;
            return Ok(false);
        }
        if self.read >= self.block_start + self.block_len {
            self.decode_block()?;
        }
        let i = (self.read - self.block_start) as usize % POSTINGS_BLOCK;
        self.rec = self.recs[i];
        self.tf = std::array::from_fn(|f| self.tfs[f][i]);
        self.read += 1;
        Ok(true)
    }

    /// The record `k` postings after the current one when the buffered block holds it
    /// (for prefetching what a walk will read next).
    #[inline]
    pub fn ahead(&self, k: u32) -> Option<u32> {
        let i = self.read.checked_sub(1)?.checked_add(k)?;
        (i < self.block_start + self.block_len)
            .then(|| self.recs[(i - self.block_start) as usize % POSTINGS_BLOCK])
    }

    /// The block (index and meta) holding the first posting at or after `target` among
    /// the current posting and those after it, found from the metas without decoding;
    /// `None` when the list has no metas or no such posting. (A cursor sought past a
    /// target sits on a posting a later target may name: its block is the answer, even
    /// when the posting is its block's last.)
    pub fn block_for(&self, target: u32) -> Option<(usize, BlockMeta)> {
        self.block_for_from(target, 0)
    }

    /// As [`PostingCursor::block_for`], searching from block `from` on when it is past the
    /// cursor: the caller knows no earlier block holds the answer (a block this returned
    /// for a target ≤ `target`).
    pub fn block_for_from(&self, target: u32, from: usize) -> Option<(usize, BlockMeta)> {
        let blocks = self.list.blocks();
        let current = self.read.saturating_sub(1) as usize / POSTINGS_BLOCK;
        let mut b = current.max(from);
        // Gallop, then binary search, over the metas' last records.
        let mut step = 1usize;
        let mut lo = b;
        loop {
            let m = self.list.meta(b)?;
            if m.last >= target {
                break;
            }
            lo = b + 1;
            if lo >= blocks {
                return None;
            }
            b = (b + step).min(blocks - 1);
            step *= 2;
        }
        let mut hi = b;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.list.meta(mid)?.last >= target {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some((lo, self.list.meta(lo)?))
    }

    /// Moves to the first posting whose record is ≥ `target` (staying when the current one
    /// is), skipping whole blocks by their metas; `false` (and `done`) when none is left.
    ///
    /// # Errors
    /// As [`PostingCursor::advance`].
    pub fn seek(&mut self, target: u32) -> Result<bool, DecodeError> {
        if self.done {
            return Ok(false);
        }
        if self.read > 0 && self.rec >= target {
            return Ok(true);
        }
        if self.list.bound.is_some() {
            let Some((b, _)) = self.block_for(target) else {
                self.done = true;
                return Ok(false);
            };
            let first = b * POSTINGS_BLOCK;
            if b > 0 && first > self.read as usize {
                let prev = self
                    .list
                    .meta(b - 1)
                    .ok_or_else(|| self.err("postings block meta missing"))?;
                self.pos = prev.end as usize;
                self.base = u64::from(prev.last) + 1;
                // `first` < df ≤ u32::MAX.
                let first = u32::try_from(first).map_err(|_| self.err("postings count"))?;
                // Block `b` is the next to decode; nothing is buffered.
                self.read = first;
                self.block_start = first;
                self.block_len = 0;
            }
        }
        while self.advance()? {
            if self.rec >= target {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The block (index and meta) holding the current posting; `None` for a list of one
    /// block or before the first posting.
    pub fn current_block(&self) -> Option<(usize, BlockMeta)> {
        let b = (self.read as usize).checked_sub(1)? / POSTINGS_BLOCK;
        Some((b, self.list.meta(b)?))
    }

    /// The index of the block holding the current posting (no meta decoded); `None`
    /// before the first posting.
    #[inline]
    pub fn current_block_index(&self) -> Option<usize> {
        Some((self.read as usize).checked_sub(1)? / POSTINGS_BLOCK)
    }

    /// Byte offset in the list's data just past what was read (for `verify`).
    fn data_pos(&self) -> usize {
        self.list.data_at + self.pos
    }
}

/// The encoded text sections of one segment.
#[derive(Clone, Debug, Default)]
pub struct TextSections {
    /// `TextStats`.
    pub stats: Vec<u8>,
    /// `TextTerms` (fst).
    pub terms: Vec<u8>,
    /// `TextPostings`.
    pub postings: Vec<u8>,
    /// `TextFieldLens` (capped at [`FIELD_LEN_MAX`]).
    pub doc_lens: Vec<u16>,
    /// `TextPairs`: each record's [`PairFilter`], in record order.
    pub pairs: Vec<u64>,
    /// `TextPairSet`: the segment's phrase-pair set ([`pair_set_log2`]).
    pub pair_set: Vec<u64>,
}

/// A segment's phrase-pair set as a writer gathers it: the documents' pair hashes, until
/// there are so many that they are kept as a bitset at the greatest size instead (folded
/// down to the segment's size at the end), so a large build holds at most 32 MiB of them.
#[derive(Debug, Default)]
struct PairSetBuilder {
    hashes: Vec<u32>,
    /// `2^PAIR_SET_LOG2_MAX` bits once the hashes passed [`PAIR_SET_HASHES_KEPT`].
    wide: Vec<u64>,
}

/// Pair hashes a [`PairSetBuilder`] keeps as a list (16 MiB).
const PAIR_SET_HASHES_KEPT: usize = 1 << 22;

impl PairSetBuilder {
    fn add(&mut self, hashes: &[u32]) {
        if self.wide.is_empty() {
            self.hashes.extend_from_slice(hashes);
            if self.hashes.len() > PAIR_SET_HASHES_KEPT {
                self.wide = vec![0; (1usize << PAIR_SET_LOG2_MAX) / 64];
                let hashes = std::mem::take(&mut self.hashes);
                self.add(&hashes);
            }
        } else {
            for &h in hashes {
                set_bit(&mut self.wide, (h >> (32 - PAIR_SET_LOG2_MAX)) as usize);
            }
        }
    }

    /// The `TextPairSet` section of a segment of `records` records.
    fn finish(self, records: u64) -> Vec<u64> {
        let log2 = pair_set_log2(records);
        let mut out = vec![0u64; 1 + (1usize << log2) / 64];
        out[0] = u64::from(log2);
        let bits = &mut out[1..];
        for &h in &self.hashes {
            set_bit(bits, (h >> (32 - log2)) as usize);
        }
        // A wide bit i is hash >> (32 - MAX): its top `log2` bits are i >> (MAX - log2).
        for (w, &word) in self.wide.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                let i = w * 64 + word.trailing_zeros() as usize;
                set_bit(bits, i >> (PAIR_SET_LOG2_MAX - log2));
                word &= word - 1;
            }
        }
        out
    }
}

/// Sets bit `i` of `bits` (nothing when out of range).
#[inline]
fn set_bit(bits: &mut [u64], i: usize) {
    if let Some(w) = bits.get_mut(i / 64) {
        *w |= 1u64 << (i % 64);
    }
}

/// A segment's per-record field lengths, in either encoding.
#[derive(Clone, Copy, Debug)]
pub enum FieldLens<'a> {
    /// `TextDocLens`, formats 4–6.
    Wide(&'a [u32]),
    /// `TextFieldLens`, format 7 on.
    Narrow(&'a [u16]),
}

impl FieldLens<'_> {
    /// Entries (records × fields).
    pub fn entries(&self) -> usize {
        match self {
            FieldLens::Wide(v) => v.len(),
            FieldLens::Narrow(v) => v.len(),
        }
    }

    /// Entry `i` (0 when out of range).
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        match self {
            FieldLens::Wide(v) => v.get(i).copied().unwrap_or(0),
            FieldLens::Narrow(v) => v.get(i).copied().map_or(0, u32::from),
        }
    }

    /// Starts loading record `index`'s lengths into the CPU's caches (a hint).
    #[inline]
    pub fn prefetch(&self, index: usize) {
        let at = index.saturating_mul(TEXT_FIELDS);
        match self {
            FieldLens::Wide(v) => super::segment::prefetch_at(v, at),
            FieldLens::Narrow(v) => super::segment::prefetch_at(v, at),
        }
    }

    /// The field lengths of record `index` (zeros when out of range).
    #[inline]
    pub fn record(&self, index: usize) -> [u32; TEXT_FIELDS] {
        let at = index.saturating_mul(TEXT_FIELDS);
        let mut out = [0u32; TEXT_FIELDS];
        match self {
            FieldLens::Wide(v) => {
                if let Some(s) = v.get(at..at.saturating_add(TEXT_FIELDS)) {
                    out.copy_from_slice(s);
                }
            }
            FieldLens::Narrow(v) => {
                if let Some(s) = v.get(at..at.saturating_add(TEXT_FIELDS)) {
                    for (o, &l) in out.iter_mut().zip(s) {
                        *o = u32::from(l);
                    }
                }
            }
        }
        out
    }
}

/// Gathers analyzed documents and encodes the text sections.
#[derive(Debug, Default)]
pub struct TextIndexWriter {
    /// Hashed with foldhash: a build's private map needs no DoS resistance, and SipHash
    /// showed in bulk-load profiles.
    terms: HashMap<TermKey, GatheredPostings, foldhash::fast::RandomState>,
    docs: Vec<(u32, [u32; TEXT_FIELDS], PairFilter)>,
    /// The documents' pairs, for the segment's phrase-pair set.
    pair_set: PairSetBuilder,
    /// The layout to write, when not [`TEXT_LAYOUT_VERSION`] (tests of reading older
    /// layouts).
    layout: Option<u32>,
}

/// A term as a [`TextIndexWriter`] keys it: terms of up to [`TermKey::INLINE`] bytes (most)
/// are held in the key itself, so that a look-up compares them without a read through a
/// pointer (a cache miss on a large index) and the sort in `finish` compares them in place.
/// Hashes and compares as its bytes.
#[derive(Clone)]
enum TermKey {
    Inline(u8, [u8; TermKey::INLINE]),
    Heap(Box<[u8]>),
}

impl TermKey {
    /// Bytes held inline: the key is then as large as a `Vec`.
    const INLINE: usize = 22;

    fn new(term: &[u8]) -> TermKey {
        let mut inline = [0u8; TermKey::INLINE];
        match (inline.get_mut(..term.len()), u8::try_from(term.len())) {
            (Some(head), Ok(len)) => {
                head.copy_from_slice(term);
                TermKey::Inline(len, inline)
            }
            _ => TermKey::Heap(term.into()),
        }
    }

    fn as_bytes(&self) -> &[u8] {
        match self {
            // `new` stores lengths up to INLINE only; `unwrap_or` is never taken.
            TermKey::Inline(len, b) => b.get(..usize::from(*len)).unwrap_or(b),
            TermKey::Heap(b) => b,
        }
    }
}

impl std::fmt::Debug for TermKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_bytes().fmt(f)
    }
}

impl PartialEq for TermKey {
    fn eq(&self, other: &TermKey) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for TermKey {}

impl std::hash::Hash for TermKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // As `[u8]` hashes, so that a `&[u8]` looks the key up (`Borrow`).
        self.as_bytes().hash(state);
    }
}

impl std::borrow::Borrow<[u8]> for TermKey {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// The index of `target` in the increasing `records`, searched from index `from` on by
/// galloping then binary search: O(log distance).
fn gallop(records: &[u32], from: usize, target: u32) -> Option<usize> {
    let rest = records.get(from..)?;
    let mut hi = 1usize;
    while hi < rest.len() && rest[hi - 1] < target {
        hi *= 2;
    }
    let hi = hi.min(rest.len());
    let lo = hi / 2;
    rest[lo..hi]
        .binary_search(&target)
        .ok()
        .map(|i| from + lo + i)
}

impl TextIndexWriter {
    /// An empty writer.
    #[cfg(any(test, feature = "internals"))]
    pub fn new() -> TextIndexWriter {
        TextIndexWriter::default()
    }

    /// This writer, writing text layout `layout` (2 or 3) instead of this build's: what
    /// tests of reading older segments build.
    #[cfg(any(test, feature = "internals"))]
    pub fn with_layout(mut self, layout: u32) -> TextIndexWriter {
        self.layout = Some(layout);
        self
    }

    /// Adds document `node` (each node at most once) with its field lengths, the
    /// [`pair_hash`]es of the units that follow each other in its fields, and its terms
    /// with their per-field frequencies.
    pub fn add_doc(
        &mut self,
        node: u32,
        lens: [u32; TEXT_FIELDS],
        pairs: &[u32],
        terms: impl IntoIterator<Item = (Vec<u8>, [u32; TEXT_FIELDS])>,
    ) {
        self.add_doc_lens(node, lens, pairs);
        for (term, tf) in terms {
            self.terms
                .entry(TermKey::new(&term))
                .or_default()
                .push(node, tf);
        }
    }

    /// [`TextIndexWriter::add_doc`] with borrowed terms: a term already in the index
    /// allocates nothing.
    pub fn add_doc_borrowed<'t>(
        &mut self,
        node: u32,
        lens: [u32; TEXT_FIELDS],
        pairs: &[u32],
        terms: impl IntoIterator<Item = (&'t [u8], [u32; TEXT_FIELDS])>,
    ) {
        self.add_doc_lens(node, lens, pairs);
        for (term, tf) in terms {
            match self.terms.get_mut(term) {
                Some(list) => list.push(node, tf),
                None => {
                    let mut list = GatheredPostings::default();
                    list.push(node, tf);
                    self.terms.insert(TermKey::new(term), list);
                }
            }
        }
    }

    /// Adds document `node` (each node at most once) by its field lengths and pair hashes
    /// only; its terms come through [`TextIndexWriter::add_term`] (an index built term by
    /// term, such as the in-memory delta's at a checkpoint).
    pub fn add_doc_lens(&mut self, node: u32, lens: [u32; TEXT_FIELDS], pairs: &[u32]) {
        self.docs.push((node, lens, pair_filter_of(pairs)));
        self.pair_set.add(pairs);
    }

    /// Adds `term`'s postings: the documents holding it with their per-field frequencies,
    /// in any order (`finish` sorts them).
    pub fn add_term(
        &mut self,
        term: &[u8],
        postings: impl IntoIterator<Item = (u32, [u32; TEXT_FIELDS])>,
    ) {
        let list = self.terms.entry(TermKey::new(term)).or_default();
        for (node, tf) in postings {
            list.push(node, tf);
        }
    }

    /// Documents added so far.
    pub fn docs(&self) -> usize {
        self.docs.len()
    }

    /// Encodes the sections. Documents come out in node id order; `records` must be the
    /// node ids of the segment's records (increasing) and every added document one of them.
    ///
    /// Large indexes are encoded on several threads (see [`TextIndexWriter::finish_on`]);
    /// the bytes do not depend on how many.
    ///
    /// # Errors
    /// When the added documents are not exactly `records`, or the fst cannot be built.
    pub fn finish(self, records: &[u32]) -> Result<TextSections, String> {
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .min(FINISH_THREADS_MAX);
        self.finish_on(records, threads)
    }

    /// [`TextIndexWriter::finish`] on at most `threads` threads (this one included).
    ///
    /// The terms are dealt into buckets by their first two bytes, so that the buckets in
    /// order are the term order at its coarsest; runs of consecutive buckets of about equal
    /// postings are each sorted and encoded on their own thread into their own buffer
    /// (a list's bytes do not depend on where it starts), and the buffers are joined and
    /// the fst built here, each term's offset shifted by its run's start. An index of
    /// fewer than `PARALLEL_POSTINGS_MIN` postings is sorted whole on this thread.
    ///
    /// # Errors
    /// As [`TextIndexWriter::finish`].
    pub fn finish_on(self, records: &[u32], threads: usize) -> Result<TextSections, String> {
        self.finish_with(records, threads, PARALLEL_POSTINGS_MIN)
    }

    /// [`TextIndexWriter::finish_on`], sorting whole below `small_max` postings.
    fn finish_with(
        mut self,
        records: &[u32],
        threads: usize,
        small_max: u64,
    ) -> Result<TextSections, String> {
        self.docs.sort_unstable_by_key(|d| d.0);
        if self.docs.len() != records.len() || self.docs.iter().zip(records).any(|(d, &r)| d.0 != r)
        {
            return Err("text documents do not match the segment's node records".into());
        }
        let layout = self.layout.unwrap_or(TEXT_LAYOUT_VERSION);
        let mut stats = TextStats {
            layout,
            docs: self.docs.len() as u64,
            ..TextStats::default()
        };
        let mut doc_lens: Vec<u16> = Vec::with_capacity(self.docs.len() * TEXT_FIELDS);
        let mut pairs: Vec<u64> = Vec::with_capacity(self.docs.len() * PAIR_FILTER_WORDS);
        for (_, lens, filter) in &self.docs {
            for (f, &l) in lens.iter().enumerate() {
                stats.field_len_total[f] += u64::from(l);
                doc_lens.push(u16::try_from(l).unwrap_or(u16::MAX));
            }
            pairs.extend_from_slice(filter);
        }
        drop(self.docs);
        let pair_set = std::mem::take(&mut self.pair_set).finish(records.len() as u64);
        let postings_total: u64 = self.terms.values().map(|list| list.len).sum();
        let small = postings_total < small_max;
        let threads = if small { 1 } else { threads.max(1) };
        let runs = if small {
            // One run of one bucket, sorted whole: the order the buckets give, without
            // dealing into 66,049 of them (most of a small index's build time).
            vec![vec![self.terms.into_iter().collect()]]
        } else if threads == 1 {
            split_runs(self.terms, 1)
        } else {
            split_runs(self.terms, threads * RUNS_PER_THREAD)
        };
        // Scored with the lengths a reader sees: the capped ones.
        let lens_of = |rec: u32| FieldLens::Narrow(&doc_lens).record(rec as usize);
        let mut postings = Vec::new();
        let mut builder = fst::MapBuilder::memory();
        let mut terms_count = 0u64;
        encode_runs(runs, threads, records, &lens_of, layout, |run| {
            let base = postings.len() as u64;
            for (term, at) in &run.terms {
                builder
                    .insert(term.as_bytes(), base + at)
                    .map_err(|e| format!("text term index: {e}"))?;
            }
            terms_count += run.terms.len() as u64;
            drop(run.terms);
            postings.extend_from_slice(&run.postings);
            Ok(())
        })?;
        stats.terms = terms_count;
        stats.postings_len = postings.len() as u64;
        let terms = builder
            .into_inner()
            .map_err(|e| format!("text term index: {e}"))?;
        Ok(TextSections {
            stats: stats.encode(),
            terms,
            postings,
            doc_lens,
            pairs,
            pair_set,
        })
    }
}

/// A term with its postings, as gathered.
type TermPostings = (TermKey, GatheredPostings);

/// The terms dealt into buckets by their first two bytes (so the buckets in order are the
/// term order at its coarsest), grouped into `nruns` runs of consecutive buckets of about
/// equal postings each.
fn split_runs(
    terms: HashMap<TermKey, GatheredPostings, foldhash::fast::RandomState>,
    nruns: usize,
) -> Vec<Vec<Vec<TermPostings>>> {
    let mut buckets: Vec<Vec<TermPostings>> = (0..TERM_BUCKETS).map(|_| Vec::new()).collect();
    let mut weights = vec![0u64; TERM_BUCKETS];
    for (term, list) in terms {
        let b = term_bucket(term.as_bytes());
        // `term_bucket` answers below TERM_BUCKETS.
        weights[b] += list.len + TERM_WEIGHT;
        buckets[b].push((term, list));
    }
    let total: u64 = weights.iter().sum();
    let mut runs: Vec<Vec<Vec<TermPostings>>> = Vec::with_capacity(nruns);
    let mut run = Vec::new();
    let mut acc = 0u64;
    for (bucket, w) in buckets.into_iter().zip(weights) {
        run.push(bucket);
        acc += w;
        let share = total * (runs.len() as u64 + 1) / nruns as u64;
        if acc >= share && runs.len() + 1 < nruns {
            runs.push(std::mem::take(&mut run));
        }
    }
    runs.push(run);
    runs
}

/// A term's postings as a [`TextIndexWriter`] gathers them, compactly (a bulk load holds
/// every posting of its text in memory until `finish`: at 16 bytes each they were most of
/// its memory and of the page faults that came with it). Per posting, back to back: the
/// node as the zigzag varint of its difference from the previous node (the first from
/// 0), a byte with bit `f` set when field `f` occurs, and each occurring field's frequency
/// as a varint. About 3 bytes a posting when nodes come in increasing order, as they do
/// from a bulk load.
#[derive(Debug, Default)]
struct GatheredPostings {
    bytes: Vec<u8>,
    /// Postings pushed.
    len: u64,
    /// The last node pushed.
    last: u32,
    /// Whether nodes were pushed in strictly increasing order.
    unordered: bool,
}

impl GatheredPostings {
    fn push(&mut self, node: u32, tf: [u32; TEXT_FIELDS]) {
        let delta = i64::from(node) - i64::from(self.last);
        if self.len > 0 && delta <= 0 {
            self.unordered = true;
        }
        // Zigzag: small differences of either sign are small numbers.
        put_varint(&mut self.bytes, ((delta << 1) ^ (delta >> 63)) as u64);
        let mut mask = 0u8;
        for (f, &n) in tf.iter().enumerate() {
            if n > 0 {
                mask |= 1 << f;
            }
        }
        self.bytes.push(mask);
        for &n in tf.iter().filter(|&&n| n > 0) {
            put_varint(&mut self.bytes, u64::from(n));
        }
        self.len += 1;
        self.last = node;
    }

    /// The postings in increasing node order, into `out` (cleared first).
    fn sorted_into(&self, out: &mut Vec<Posting>) -> Result<(), String> {
        out.clear();
        let bad = |e: DecodeError| format!("gathered postings: {e:?}");
        let mut pos = 0usize;
        let mut node = 0i64;
        while pos < self.bytes.len() {
            let z = get_varint(&self.bytes, &mut pos).map_err(bad)?;
            node += ((z >> 1) as i64) ^ -((z & 1) as i64);
            let mask = *self.bytes.get(pos).ok_or("gathered postings: truncated")?;
            pos += 1;
            let mut tf = [0u32; TEXT_FIELDS];
            for (f, slot) in tf.iter_mut().enumerate() {
                if mask & (1 << f) != 0 {
                    let n = get_varint(&self.bytes, &mut pos).map_err(bad)?;
                    *slot = u32::try_from(n).map_err(|_| "gathered postings: tf over u32")?;
                }
            }
            let node = u32::try_from(node).map_err(|_| "gathered postings: node out of range")?;
            out.push(Posting { node, tf });
        }
        if self.unordered {
            out.sort_unstable_by_key(|p| p.node);
        }
        Ok(())
    }
}

/// The term buckets of [`TextIndexWriter::finish_on`] (see [`term_bucket`]).
const TERM_BUCKETS: usize = 257 * 257;

/// The bucket of `term` by its first two bytes, in term order: a byte `b` counts as
/// `b + 1` and a missing one as 0, so that a term sorts before its extensions. (By two
/// bytes, not one: the exact forms all start with the same marker byte.)
fn term_bucket(term: &[u8]) -> usize {
    let digit = |i: usize| term.get(i).map_or(0, |&b| usize::from(b) + 1);
    digit(0) * 257 + digit(1)
}

/// A term's weight in [`TextIndexWriter::finish_on`]'s split, in postings (its sort and fst
/// entry).
const TERM_WEIGHT: u64 = 4;

/// Postings from which [`TextIndexWriter::finish`] uses more than one thread.
const PARALLEL_POSTINGS_MIN: u64 = 1 << 16;

/// At most this many threads encode a text index.
const FINISH_THREADS_MAX: usize = 8;

/// A run of buckets encoded: its terms in order with their lists' offsets in `postings`.
struct EncodedRun {
    terms: Vec<(TermKey, u64)>,
    postings: Vec<u8>,
}

/// Runs of buckets per encoding thread in [`TextIndexWriter::finish_on`].
const RUNS_PER_THREAD: usize = 4;

/// Encodes `runs` on up to `threads` threads of their own (here when none can be started)
/// and hands each encoded run to `take`, here, in run order, as soon as it and the runs
/// before it are done. Stops at the first error, of an encoding or of `take`.
fn encode_runs<L: Fn(u32) -> [u32; TEXT_FIELDS] + Sync>(
    runs: Vec<Vec<Vec<TermPostings>>>,
    threads: usize,
    records: &[u32],
    lens: &L,
    layout: u32,
    mut take: impl FnMut(EncodedRun) -> Result<(), String>,
) -> Result<(), String> {
    if threads <= 1 || runs.len() <= 1 {
        for run in runs {
            take(encode_run(run, records, lens, layout)?)?;
        }
        return Ok(());
    }
    let count = runs.len();
    let queue = parking_lot::Mutex::new(runs.into_iter().enumerate());
    let (done_tx, done_rx) = std::sync::mpsc::channel::<(usize, Result<EncodedRun, String>)>();
    std::thread::scope(|s| {
        let mut started = 0usize;
        for _ in 0..threads {
            let (queue, done_tx) = (&queue, done_tx.clone());
            let worker = std::thread::Builder::new()
                .name("hopgraph-text".into())
                .spawn_scoped(s, move || {
                    loop {
                        let next = queue.lock().next();
                        let Some((i, run)) = next else { return };
                        // The receiver is gone only when the collection stopped on an error.
                        if done_tx
                            .send((i, encode_run(run, records, lens, layout)))
                            .is_err()
                        {
                            return;
                        }
                    }
                });
            started += usize::from(worker.is_ok());
        }
        drop(done_tx);
        let mut early = std::collections::BTreeMap::new();
        let mut next = 0usize;
        let mut collect = || -> Result<(), String> {
            if started == 0 {
                // No thread: encode here, in order.
                loop {
                    let Some((_, run)) = queue.lock().next() else {
                        return Ok(());
                    };
                    take(encode_run(run, records, lens, layout)?)?;
                }
            }
            // Every run is sent once; the channel closes when the workers are done.
            for (i, run) in &done_rx {
                early.insert(i, run);
                while let Some(run) = early.remove(&next) {
                    take(run?)?;
                    next += 1;
                }
            }
            if next == count {
                Ok(())
            } else {
                Err("a text index thread stopped".into())
            }
        };
        let result = collect();
        if result.is_err() {
            // Nothing more to encode: the workers finish their current run and stop.
            while queue.lock().next().is_some() {}
        }
        result
    })
}

/// Sorts and encodes one run of buckets (see [`TextIndexWriter::finish_on`]).
fn encode_run<L: Fn(u32) -> [u32; TEXT_FIELDS] + Sync>(
    run: Vec<Vec<TermPostings>>,
    records: &[u32],
    lens: &L,
    layout: u32,
) -> Result<EncodedRun, String> {
    let mut out = EncodedRun {
        terms: Vec::with_capacity(run.iter().map(Vec::len).sum()),
        postings: Vec::new(),
    };
    let mut list: Vec<(u32, [u32; TEXT_FIELDS])> = Vec::new();
    let mut nodes: Vec<Posting> = Vec::new();
    // Records that are a run of consecutive node ids (a bulk load's) are found by
    // subtraction rather than search.
    let dense = match (records.first(), records.last()) {
        (Some(&first), Some(&last))
            if last
                .checked_sub(first)
                .is_some_and(|d| d as usize + 1 == records.len()) =>
        {
            Some(first)
        }
        _ => None,
    };
    for mut bucket in run {
        bucket.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        for (term, gathered) in bucket {
            gathered.sorted_into(&mut nodes)?;
            drop(gathered);
            out.terms.push((term, out.postings.len() as u64));
            list.clear();
            // Nodes ascend, so each record is found by galloping on from the previous one.
            let mut from = 0usize;
            for &p in &nodes {
                let found = match dense {
                    Some(first) => p
                        .node
                        .checked_sub(first)
                        .map(|r| r as usize)
                        .filter(|&r| r >= from && r < records.len()),
                    None => gallop(records, from, p.node),
                };
                let rec = found
                    .ok_or_else(|| format!("text postings name node {}, not a record", p.node))?;
                from = rec + 1;
                let rec = u32::try_from(rec).map_err(|_| "over u32::MAX records")?;
                list.push((rec, p.tf));
            }
            encode_postings_blocked(&mut out.postings, &list, lens, layout)?;
        }
    }
    Ok(out)
}

/// Terms from which [`TextIndexView::verify`] checks the postings on two threads.
const VERIFY_SPLIT_TERMS_MIN: usize = 1 << 16;

/// A structurally checked view of a segment's text sections.
pub struct TextIndexView<'a> {
    /// Collection statistics.
    pub stats: TextStats,
    terms: fst::Map<&'a [u8]>,
    postings: &'a [u8],
    doc_lens: FieldLens<'a>,
    /// `TextPairs` (format 11 on): [`PAIR_FILTER_WORDS`] words per record.
    pairs: Option<&'a [u64]>,
    /// `TextPairSet` (format 13 on): its log2 and its bits.
    pair_set: Option<(u32, &'a [u64])>,
}

impl std::fmt::Debug for TextIndexView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextIndexView")
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<'a> TextIndexView<'a> {
    /// Checks the sections' shapes against each other and `records` (the segment's node
    /// record count). O(1). The caller has checked the crc of `terms` (see the module doc).
    ///
    /// # Errors
    /// Inconsistent sizes or counts, a damaged fst header.
    pub fn parse(
        stats: &[u8],
        terms: &'a [u8],
        postings: &'a [u8],
        doc_lens: FieldLens<'a>,
        records: u64,
    ) -> Result<TextIndexView<'a>, DecodeError> {
        let stats = TextStats::decode(stats)?;
        if stats.docs != records
            || doc_lens.entries() as u64 != records.saturating_mul(TEXT_FIELDS as u64)
            || stats.postings_len != postings.len() as u64
        {
            return Err(DecodeError::new(
                0,
                format!(
                    "text sections disagree: {} docs, {} records, {} lengths, postings {} of {} bytes",
                    stats.docs,
                    records,
                    doc_lens.entries(),
                    postings.len(),
                    stats.postings_len
                ),
            ));
        }
        let terms = fst::Map::new(terms)
            .map_err(|e| DecodeError::new(0, format!("text term index: {e}")))?;
        if terms.len() as u64 != stats.terms {
            return Err(DecodeError::new(
                0,
                format!("{} terms, the stats say {}", terms.len(), stats.terms),
            ));
        }
        Ok(TextIndexView {
            stats,
            terms,
            postings,
            doc_lens,
            pairs: None,
            pair_set: None,
        })
    }

    /// This view with the segment's `TextPairs` section (format 11 on): one
    /// [`PairFilter`] per record.
    ///
    /// # Errors
    /// A section whose length is not the records' filters.
    pub fn with_pairs(mut self, pairs: &'a [u64]) -> Result<TextIndexView<'a>, DecodeError> {
        let want = self.stats.docs.saturating_mul(PAIR_FILTER_WORDS as u64);
        if pairs.len() as u64 != want {
            return Err(DecodeError::new(
                0,
                format!(
                    "text pair filters: {} words for {} records, expected {want}",
                    pairs.len(),
                    self.stats.docs
                ),
            ));
        }
        self.pairs = Some(pairs);
        Ok(self)
    }

    /// This view with the segment's `TextPairSet` section (format 13 on).
    ///
    /// # Errors
    /// A section whose length or stated size is not the one of this many records.
    pub fn with_pair_set(mut self, set: &'a [u64]) -> Result<TextIndexView<'a>, DecodeError> {
        let log2 = pair_set_log2(self.stats.docs);
        let want = pair_set_words(self.stats.docs);
        if set.len() as u64 != want || set.first() != Some(&u64::from(log2)) {
            return Err(DecodeError::new(
                0,
                format!(
                    "text pair set: {} words of log2 {:?} for {} records, expected {want} of {log2}",
                    set.len(),
                    set.first(),
                    self.stats.docs
                ),
            ));
        }
        self.pair_set = Some((log2, &set[1..]));
        Ok(self)
    }

    /// Whether each pair of `hashes` ([`pair_hash`]) may occur in some record of the
    /// segment (each in its own, perhaps); `None` when the segment has no phrase-pair set
    /// (before format 13). `Some(false)` is certain: no record holds them all.
    #[must_use]
    pub fn pair_set_holds(&self, hashes: &[u32]) -> Option<bool> {
        let (log2, bits) = self.pair_set?;
        Some(hashes.iter().all(|&h| {
            let i = (h >> (32 - log2)) as usize;
            bits.get(i / 64)
                .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
        }))
    }

    /// Record `index`'s phrase-pair filter; `None` when the segment has none (before
    /// format 11) or `index` is out of range.
    #[inline]
    pub fn pair_filter(&self, index: usize) -> Option<&'a PairFilter> {
        let at = index.checked_mul(PAIR_FILTER_WORDS)?;
        let words = self.pairs?.get(at..at.checked_add(PAIR_FILTER_WORDS)?)?;
        words.try_into().ok()
    }

    /// The layout version of these sections (1: format 4, 2: formats 5–9, 3: format 10).
    pub fn layout(&self) -> u32 {
        self.stats.layout
    }

    /// The layout-1 postings list of `term`, if indexed.
    ///
    /// # Errors
    /// A damaged list head, or sections of layout 2 or 3 (read those with
    /// [`TextIndexView::list`]).
    pub fn postings(&self, term: &[u8]) -> Result<Option<PostingsReader<'a>>, DecodeError> {
        if self.stats.layout >= TEXT_LAYOUT_BLOCKED {
            return Err(DecodeError::new(0, "blocked postings read as layout 1"));
        }
        match self.terms.get(term) {
            Some(offset) => PostingsReader::new(self.postings, offset).map(Some),
            None => Ok(None),
        }
    }

    /// The blocked (layout 2 or 3) postings list of `term`, if indexed.
    ///
    /// # Errors
    /// A damaged list head or bounds, or sections of layout 1 (read those with
    /// [`TextIndexView::postings`]).
    pub fn list(&self, term: &[u8]) -> Result<Option<PostingList<'a>>, DecodeError> {
        if self.stats.layout < TEXT_LAYOUT_BLOCKED {
            return Err(DecodeError::new(
                0,
                "layout 1 postings read as blocked ones",
            ));
        }
        match self.terms.get(term) {
            Some(offset) => PostingList::new(self.postings, offset, self.stats.layout).map(Some),
            None => Ok(None),
        }
    }

    /// The number of documents holding `term` (0 when not indexed), in either layout.
    ///
    /// # Errors
    /// A damaged list head.
    pub fn df(&self, term: &[u8]) -> Result<u64, DecodeError> {
        if self.stats.layout >= TEXT_LAYOUT_BLOCKED {
            Ok(self.list(term)?.map_or(0, |l| u64::from(l.df())))
        } else {
            Ok(self.postings(term)?.map_or(0, |r| r.df()))
        }
    }

    /// Field lengths of record `index` (capped at [`FIELD_LEN_MAX`] from format 7).
    #[inline]
    pub fn doc_len(&self, index: usize) -> [u32; TEXT_FIELDS] {
        self.doc_lens.record(index)
    }

    /// Starts loading record `index`'s field lengths (a hint for a record about to be
    /// scored).
    #[inline]
    pub fn prefetch_doc_len(&self, index: usize) {
        self.doc_lens.prefetch(index);
    }

    /// Full check, O(sections): the fst's own checksum, terms in order with postings lists
    /// that tile the postings section exactly in term order, every list decodes, every
    /// node id is one of `records` (the segment's node ids, increasing), and the field
    /// totals match the document lengths.
    ///
    /// # Errors
    /// The first inconsistency found.
    pub fn verify(&self, records: &[u32]) -> Result<(), DecodeError> {
        self.terms
            .as_fst()
            .verify()
            .map_err(|e| DecodeError::new(0, format!("text term index: {e}")))?;
        // The totals are exact; capped entries (format 7) may only have lost some.
        let mut totals = [0u64; TEXT_FIELDS];
        let mut capped = [false; TEXT_FIELDS];
        for i in 0..self.doc_lens.entries() {
            let l = self.doc_lens.get(i);
            totals[i % TEXT_FIELDS] += u64::from(l);
            capped[i % TEXT_FIELDS] |=
                matches!(self.doc_lens, FieldLens::Narrow(_)) && l == FIELD_LEN_MAX;
        }
        let consistent = (0..TEXT_FIELDS).all(|f| {
            let (sum, total) = (totals[f], self.stats.field_len_total[f]);
            if capped[f] {
                sum <= total
            } else {
                sum == total
            }
        });
        if !consistent {
            return Err(DecodeError::new(0, "text field length totals disagree"));
        }
        // The lists lie back to back from 0 in term order: list i spans offsets[i] to
        // offsets[i + 1] (the last to the end). Large indexes are checked in two halves
        // on two threads.
        let mut offsets = Vec::with_capacity(usize::try_from(self.stats.terms).unwrap_or(0));
        let mut stream = fst::IntoStreamer::into_stream(&self.terms);
        while let Some((term, offset)) = fst::Streamer::next(&mut stream) {
            if term.is_empty() {
                return Err(DecodeError::new(0, "empty text term"));
            }
            offsets.push(offset);
        }
        let check = |lists: std::ops::Range<usize>| -> Result<(), DecodeError> {
            for i in lists {
                let offset = offsets[i];
                let end = if self.stats.layout >= TEXT_LAYOUT_BLOCKED {
                    self.verify_list(offset, records.len())?
                } else {
                    let mut r = PostingsReader::new(self.postings, offset)?;
                    while let Some(p) = r.next_posting()? {
                        if records.binary_search(&p.node).is_err() {
                            return Err(DecodeError::new(
                                r.pos(),
                                format!("postings name node {}, which has no record here", p.node),
                            ));
                        }
                    }
                    r.pos()
                };
                match offsets.get(i + 1) {
                    Some(&next) if next != end as u64 => {
                        return Err(DecodeError::new(
                            end,
                            format!("postings of a term start at {next}, expected {end}"),
                        ));
                    }
                    None if end != self.postings.len() => {
                        return Err(DecodeError::new(
                            end,
                            "trailing bytes after the last postings list",
                        ));
                    }
                    _ => {}
                }
            }
            Ok(())
        };
        match offsets.first() {
            None if !self.postings.is_empty() => {
                return Err(DecodeError::new(
                    0,
                    "trailing bytes after the last postings list",
                ));
            }
            Some(&first) if first != 0 => {
                return Err(DecodeError::new(
                    0,
                    format!("postings of a term start at {first}, expected 0"),
                ));
            }
            _ => {}
        }
        let n = offsets.len();
        if n < VERIFY_SPLIT_TERMS_MIN
            || std::thread::available_parallelism().map_or(1, |p| p.get()) < 2
        {
            return check(0..n);
        }
        let (a, b) = std::thread::scope(|s| {
            let second = s.spawn(|| check(n / 2..n));
            let first = check(0..n / 2);
            (first, second.join())
        });
        a?;
        // A panic in the checker would be a bug; report it as damage rather than unwind.
        b.unwrap_or_else(|_| Err(DecodeError::new(0, "text postings check failed")))
    }

    /// Decodes the blocked list at `offset` whole and checks it against its metas: record
    /// indices below `records`, each block's last record, end and bounds exactly as the
    /// postings give them, and the list's bounds covering all blocks. Returns the byte
    /// offset just past the list.
    fn verify_list(&self, offset: u64, records: usize) -> Result<usize, DecodeError> {
        let list = PostingList::new(self.postings, offset, self.stats.layout)?;
        let mut c = list.cursor();
        let mut metas = Vec::new();
        let mut block = BlockMeta::default();
        let mut whole = BlockMeta::default();
        while c.advance()? {
            if c.rec as usize >= records {
                return Err(DecodeError::new(
                    c.data_pos(),
                    format!("postings name record {}, of {records}", c.rec),
                ));
            }
            let lens = self.doc_len(c.rec as usize);
            block.cover(&c.tf, &lens);
            whole.cover(&c.tf, &lens);
            block.last = c.rec;
            if (c.read as usize).is_multiple_of(POSTINGS_BLOCK) || c.read == list.df() {
                block.end = u32::try_from(c.pos).unwrap_or(u32::MAX);
                metas.push(std::mem::take(&mut block));
            }
        }
        if let Some(bound) = list.bound() {
            whole.last = c.rec;
            whole.end = u32::try_from(c.pos).unwrap_or(u32::MAX);
            let stored: Vec<Option<BlockMeta>> = (0..list.blocks()).map(|b| list.meta(b)).collect();
            let want: Vec<Option<BlockMeta>> = metas.into_iter().map(Some).collect();
            if bound != whole || stored != want {
                return Err(DecodeError::new(
                    list.data_at,
                    "postings block metas disagree with the postings",
                ));
            }
        }
        Ok(c.data_pos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The phrase-pair filter of a document without units (what tests of the postings
    /// give every document).
    const NO_PAIRS: PairFilter = [0; PAIR_FILTER_WORDS];

    /// The view of sections a writer just made for `records` node records.
    fn fresh_view(s: &TextSections, records: u64) -> TextIndexView<'_> {
        TextIndexView::parse(
            &s.stats,
            &s.terms,
            &s.postings,
            FieldLens::Narrow(&s.doc_lens),
            records,
        )
        .expect("fresh sections parse")
    }

    /// Keys inline and on the heap look up by their bytes and keep their bytes; a key is
    /// no larger than the `Vec` it replaced.
    #[test]
    fn term_keys_are_their_bytes() {
        let mut m: HashMap<TermKey, u32> = HashMap::new();
        let terms: Vec<Vec<u8>> = (0..40).map(|n| vec![b'x'; n]).collect();
        for (i, t) in (0u32..).zip(&terms) {
            m.insert(TermKey::new(t), i);
        }
        for (i, t) in (0u32..).zip(&terms) {
            assert_eq!(m.get(&t[..]), Some(&i));
            assert_eq!(TermKey::new(t).as_bytes(), &t[..]);
        }
        assert!(matches!(
            TermKey::new(&[7; TermKey::INLINE]),
            TermKey::Inline(..)
        ));
        assert!(matches!(
            TermKey::new(&[7; TermKey::INLINE + 1]),
            TermKey::Heap(_)
        ));
        assert!(std::mem::size_of::<TermKey>() <= std::mem::size_of::<Vec<u8>>());
    }

    /// Gathered postings give back what was pushed, sorted by node: in increasing order
    /// (a bulk load), in any order (a checkpoint's `add_term`), with large gaps, large and
    /// zero frequencies; and the sections a writer fed in reverse order are those of one fed
    /// in order.
    #[test]
    fn gathered_postings_round_trip() {
        let cases: Vec<Vec<(u32, [u32; TEXT_FIELDS])>> = vec![
            vec![],
            vec![(0, [1, 0, 0])],
            vec![(5, [0, 0, 7]), (6, [1, 2, 3]), (u32::MAX, [u32::MAX, 0, 1])],
            vec![
                (900, [0, 1, 0]),
                (3, [2, 0, 0]),
                (u32::MAX, [0, 0, 1]),
                (0, [1, 1, 1]),
            ],
        ];
        for case in cases {
            let mut g = GatheredPostings::default();
            for &(node, tf) in &case {
                g.push(node, tf);
            }
            let mut want: Vec<Posting> = case
                .iter()
                .map(|&(node, tf)| Posting { node, tf })
                .collect();
            want.sort_unstable_by_key(|p| p.node);
            let mut got = vec![Posting::default()];
            g.sorted_into(&mut got).unwrap();
            assert_eq!(got, want);
            assert_eq!(g.len, case.len() as u64);
        }
        let feed = |reverse: bool| {
            let mut w = TextIndexWriter::new();
            let mut nodes: Vec<u32> = (0..200).collect();
            if reverse {
                nodes.reverse();
            }
            for &n in &nodes {
                w.add_doc_lens(n, [1, 2, 0], &[]);
            }
            for t in 0..20u32 {
                let list: Vec<(u32, [u32; TEXT_FIELDS])> = nodes
                    .iter()
                    .filter(|&&n| n % (t + 1) == 0)
                    .map(|&n| (n, [n % 2, 1 + n % 3, 0]))
                    .collect();
                w.add_term(format!("t{t}").as_bytes(), list);
            }
            w.finish_on(&(0..200).collect::<Vec<u32>>(), 1).unwrap()
        };
        let (a, b) = (feed(false), feed(true));
        assert_eq!(a.postings, b.postings);
        assert_eq!(a.terms, b.terms);
    }

    /// The sections do not depend on how many threads encode them, empty, one-byte and
    /// marker-prefixed terms included.
    #[test]
    fn finish_on_threads_agree() {
        let build = || {
            let mut w = TextIndexWriter::new();
            for node in 0..3000u32 {
                let mut terms: Vec<(Vec<u8>, [u32; TEXT_FIELDS])> = Vec::new();
                for k in 0..40u32 {
                    let v = (node.wrapping_mul(2_654_435_761) >> 7).wrapping_add(k * 97) % 5000;
                    let term = match v % 7 {
                        0 => format!("={v}").into_bytes(),
                        1 => vec![b'a' + (v % 26) as u8],
                        2 if v < 30 => Vec::new(),
                        _ => format!("t{}", v % 1500).into_bytes(),
                    };
                    if !terms.iter().any(|t| t.0 == term) {
                        terms.push((term, [k % 3, 1, (v % 300) / 100]));
                    }
                }
                w.add_doc(node * 2 + 1, [node % 5, 40, 3], &[], terms);
            }
            w
        };
        let records: Vec<u32> = (0..3000u32).map(|n| n * 2 + 1).collect();
        let one = build().finish_on(&records, 1).unwrap();
        // Sorted whole (the path of small indexes) or by buckets: the same bytes.
        let whole = build().finish_with(&records, 1, u64::MAX).unwrap();
        assert_eq!(
            (&one.stats, &one.terms, &one.postings),
            (&whole.stats, &whole.terms, &whole.postings)
        );
        for threads in [2, 3, 8] {
            let many = build().finish_on(&records, threads).unwrap();
            assert_eq!(one.stats, many.stats);
            assert_eq!(one.terms, many.terms);
            assert_eq!(one.postings, many.postings);
            assert_eq!(one.doc_lens, many.doc_lens);
        }
        let view = TextIndexView::parse(
            &one.stats,
            &one.terms,
            &one.postings,
            FieldLens::Narrow(&one.doc_lens),
            3000,
        )
        .unwrap();
        // (`verify` refuses the empty term, which no analyzer makes.)
        assert!(view.df(b"").unwrap() > 0);
        assert!(view.df(b"t7").unwrap() > 0);
    }

    #[test]
    fn varints_round_trip_and_reject_garbage() {
        let mut buf = Vec::new();
        let values = [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        for v in values {
            put_varint(&mut buf, v);
        }
        let mut pos = 0;
        for v in values {
            assert_eq!(get_varint(&buf, &mut pos), Ok(v));
        }
        assert_eq!(pos, buf.len());
        assert!(get_varint(&[0x80], &mut 0).is_err());
        assert!(get_varint(&[0xff; 11], &mut 0).is_err());
        assert!(
            get_varint(
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                &mut 0
            )
            .is_err()
        );
    }

    /// A field longer than `u16` holds is stored capped; the stats keep the exact total
    /// and `verify` accepts the difference only where an entry is capped.
    #[test]
    fn long_fields_are_capped_and_verify() {
        let mut w = TextIndexWriter::new();
        w.add_doc(1, [2, 70_000, 0], &[], vec![(b"=a".to_vec(), [1, 3, 0])]);
        w.add_doc(2, [1, 5, 0], &[], vec![(b"=a".to_vec(), [1, 0, 0])]);
        let s = w.finish(&[1, 2]).expect("docs match records");
        assert_eq!(s.doc_lens, vec![2, u16::MAX, 0, 1, 5, 0]);
        let v = fresh_view(&s, 2);
        assert_eq!(v.stats.field_len_total, [3, 70_005, 0]);
        assert_eq!(v.doc_len(0), [2, FIELD_LEN_MAX, 0]);
        v.verify(&[1, 2]).expect("capped lengths verify");
        // An uncapped entry that disagrees with the totals does not.
        let mut bad = s.doc_lens.clone();
        bad[3] = 9;
        let v = TextIndexView::parse(&s.stats, &s.terms, &s.postings, FieldLens::Narrow(&bad), 2)
            .expect("parse");
        assert!(v.verify(&[1, 2]).is_err());
    }

    #[test]
    fn sections_round_trip_and_verify() {
        let mut w = TextIndexWriter::new();
        w.add_doc(
            7,
            [1, 2, 0],
            &[],
            vec![(b"=a".to_vec(), [1, 0, 0]), (b"=b".to_vec(), [0, 2, 0])],
        );
        w.add_doc(3, [0, 1, 1], &[], vec![(b"=a".to_vec(), [0, 1, 1])]);
        let s = w.finish(&[3, 7]).expect("docs match records");
        let v = fresh_view(&s, 2);
        v.verify(&[3, 7]).expect("fresh sections verify");
        assert!(v.verify(&[3]).is_err());
        assert_eq!(v.layout(), TEXT_LAYOUT_VERSION);
        // Postings name records: node 3 is record 0, node 7 record 1.
        let list = v.list(b"=a").expect("ok").expect("indexed");
        assert_eq!((list.df(), list.bound()), (2, None));
        let mut c = list.cursor();
        assert_eq!(c.ahead(1), None, "nothing read yet");
        assert_eq!(c.advance(), Ok(true));
        assert_eq!((c.rec, c.tf), (0, [0, 1, 1]));
        assert_eq!(
            c.ahead(1),
            Some(1),
            "the buffered block holds the next posting"
        );
        assert_eq!(c.advance(), Ok(true));
        assert_eq!((c.rec, c.tf), (1, [1, 0, 0]));
        assert_eq!(c.ahead(1), None, "past the list's end");
        assert_eq!(c.advance(), Ok(false));
        assert!(c.done());
        assert!(v.list(b"=zz").expect("ok").is_none());
        assert_eq!(v.df(b"=a"), Ok(2));
        assert!(
            v.postings(b"=a").is_err(),
            "blocked postings are not read as layout 1"
        );
        assert_eq!(v.doc_len(1), [1, 2, 0]);
        assert_eq!(v.stats.field_len_total, [1, 3, 1]);
        // Wrong record count or a wrong document set is refused.
        assert!(
            TextIndexView::parse(
                &s.stats,
                &s.terms,
                &s.postings,
                FieldLens::Narrow(&s.doc_lens),
                3
            )
            .is_err()
        );
        let mut w = TextIndexWriter::new();
        w.add_doc(1, [0; 3], &[], vec![]);
        assert!(w.finish(&[2]).is_err());
    }

    /// `same_as` finds lists equal exactly when their postings are, in both layouts.
    #[test]
    fn same_lists_are_found_equal_and_others_not() {
        // Over two sizes (one block, several): `=a` and `=b` hold the same postings,
        // `=c` the same documents with one tf changed, `=d` one document fewer, `=e` one
        // document's occurrences in another field.
        for (docs, layout) in [50u32, 1000]
            .into_iter()
            .flat_map(|d| [(d, TEXT_LAYOUT_BLOCKED), (d, TEXT_LAYOUT_PACKED)])
        {
            let records: Vec<u32> = (0..docs).collect();
            let mut w = TextIndexWriter::new().with_layout(layout);
            for rec in 0..docs {
                let lens = [3, 40, 0];
                let tf = [rec % 2, 1 + rec % 3, 0];
                let mut terms = vec![(b"=a".to_vec(), tf), (b"=b".to_vec(), tf)];
                let changed = rec == docs / 2;
                terms.push((
                    b"=c".to_vec(),
                    if changed { [tf[0], tf[1] + 1, 0] } else { tf },
                ));
                if rec != docs - 1 {
                    terms.push((b"=d".to_vec(), tf));
                }
                let moved = if changed { [tf[0] + tf[1], 0, 0] } else { tf };
                terms.push((b"=e".to_vec(), moved));
                w.add_doc(rec, lens, &[], terms);
            }
            let s = w.finish(&records).expect("docs match records");
            let v = fresh_view(&s, u64::from(docs));
            let list = |t: &[u8]| v.list(t).expect("ok").expect("indexed");
            let a = list(b"=a");
            assert_eq!(a.blocks() > 0, docs > BLOCK_U32);
            assert_eq!(a.same_as(&list(b"=b")), Ok(true), "{docs} documents");
            assert_eq!(list(b"=b").same_as(&a), Ok(true));
            for other in [&b"=c"[..], b"=d", b"=e"] {
                let o = list(other);
                assert_eq!(a.same_as(&o), Ok(false), "{other:?}, {docs} documents");
                assert_eq!(o.same_as(&a), Ok(false), "{other:?}, {docs} documents");
            }
        }
    }

    /// A list of many blocks, in both layouts: every posting comes back in order, `seek`
    /// lands on the first record at or after its target from any position, and the block
    /// bounds are what the postings hold.
    #[test]
    fn blocked_lists_round_trip_and_seek() {
        for layout in [TEXT_LAYOUT_BLOCKED, TEXT_LAYOUT_PACKED] {
            blocked_lists_round_trip_and_seek_in(layout);
        }
    }

    /// A field present in some blocks of a list and absent from others (a block packs
    /// such a field at width 0) reads back as written, walking and seeking, in both
    /// blocked layouts.
    #[test]
    fn fields_absent_from_some_blocks_read_back() {
        for layout in [TEXT_LAYOUT_BLOCKED, TEXT_LAYOUT_PACKED] {
            let records: Vec<u32> = (0..1000).collect();
            let mut w = TextIndexWriter::new().with_layout(layout);
            let mut want = Vec::new();
            for rec in 0u32..1000 {
                // Blocks 0, 3, 4 and 7 hold the term in the title too; block 5 only there.
                let block = rec as usize / POSTINGS_BLOCK;
                let title = u32::from(matches!(block, 0 | 3 | 4 | 5 | 7)) * (1 + rec % 4);
                let content = u32::from(block != 5) * (1 + rec % 3);
                let tf = [title, content, u32::from(rec % 97 == 0)];
                w.add_doc(rec, [5, 20, 1], &[], vec![(b"=w".to_vec(), tf)]);
                want.push((rec, tf));
            }
            let s = w.finish(&records).expect("docs match records");
            let v = fresh_view(&s, 1000);
            v.verify(&records).expect("fresh sections verify");
            let list = v.list(b"=w").expect("ok").expect("indexed");
            let mut c = list.cursor();
            for &(rec, tf) in &want {
                assert_eq!(c.advance(), Ok(true));
                assert_eq!((c.rec, c.tf), (rec, tf), "layout {layout}");
            }
            assert_eq!(c.advance(), Ok(false));
            for targets in [[100u32, 300, 700], [650, 651, 999], [0, 900, 901]] {
                let mut c = list.cursor();
                for target in targets {
                    assert_eq!(c.seek(target), Ok(true));
                    assert_eq!((c.rec, c.tf), want[target as usize], "layout {layout}");
                }
            }
        }
    }

    /// `block_for` answers for the postings from the current one on: a cursor on the
    /// last posting of a block, asked for that posting's record, names that block (not
    /// the next, whose bounds may be lower).
    #[test]
    fn block_for_includes_the_current_posting() {
        for layout in [TEXT_LAYOUT_BLOCKED, TEXT_LAYOUT_PACKED] {
            let records: Vec<u32> = (0..600).collect();
            let mut w = TextIndexWriter::new().with_layout(layout);
            for rec in 0u32..600 {
                // Block 1 holds the term in the title 9 times; the others once.
                let tf = if rec as usize / POSTINGS_BLOCK == 1 {
                    9
                } else {
                    1
                };
                w.add_doc(rec, [10, 10, 0], &[], vec![(b"=w".to_vec(), [tf, 0, 0])]);
            }
            let s = w.finish(&records).expect("docs match records");
            let v = fresh_view(&s, 600);
            let list = v.list(b"=w").expect("ok").expect("indexed");
            let mut c = list.cursor();
            let last_of_1 = 2 * BLOCK_U32 - 1;
            assert_eq!(c.seek(last_of_1), Ok(true));
            assert_eq!(c.rec, last_of_1);
            let (b, meta) = c.block_for(last_of_1).expect("a block holds it");
            assert_eq!(
                (b, meta.last, meta.tf_max[0]),
                (1, last_of_1, 9),
                "layout {layout}"
            );
            assert_eq!(c.block_for_from(last_of_1, 1).map(|(b, _)| b), Some(1));
            // The next record is the next block's.
            assert_eq!(c.block_for(last_of_1 + 1).map(|(b, _)| b), Some(2));
        }
    }

    fn blocked_lists_round_trip_and_seek_in(layout: u32) {
        let records: Vec<u32> = (0..2000).map(|i| i * 3 + 1).collect();
        let mut w = TextIndexWriter::new().with_layout(layout);
        let mut want = Vec::new();
        for (rec, &node) in (0u32..).zip(&records) {
            let lens = [1 + rec % 5, 10 + rec % 50, 0];
            let mut terms = vec![(b"=all".to_vec(), [0, 1 + rec % 3, 0])];
            if rec.is_multiple_of(7) {
                terms.push((b"=some".to_vec(), [1, 300, 0]));
                want.push((rec, [1, 300, 0], lens));
            }
            w.add_doc(node, lens, &[], terms);
        }
        let s = w.finish(&records).expect("docs match records");
        let v = fresh_view(&s, 2000);
        v.verify(&records).expect("fresh sections verify");
        assert_eq!(v.layout(), layout);
        let list = v.list(b"=some").expect("ok").expect("indexed");
        assert_eq!(list.df() as usize, want.len());
        assert_eq!(list.blocks(), want.len().div_ceil(POSTINGS_BLOCK));
        let bound = list.bound().expect("a list of several blocks has bounds");
        assert_eq!(bound.tf_max, [1, 255, 0]);
        assert_eq!(bound.len_min, [1, 10, u16::MAX]);
        let mut c = list.cursor();
        for &(rec, tf, _) in &want {
            assert_eq!(c.advance(), Ok(true));
            assert_eq!((c.rec, c.tf), (rec, tf));
        }
        assert_eq!(c.advance(), Ok(false));
        for start in [0u32, 5, 700, 1300] {
            for target in [0u32, 1, 7, 8, 895, 896, 897, 1500, 1995, 1996, 1999, 5000] {
                let mut c = list.cursor();
                if start > 0 {
                    assert_eq!(c.seek(start), Ok(true));
                }
                let expect = want
                    .iter()
                    .map(|x| x.0)
                    .find(|&r| r >= target.max(if start > 0 { c.rec } else { 0 }));
                let found = c.seek(target).expect("seek");
                assert_eq!(
                    found.then_some(c.rec),
                    expect,
                    "start {start} target {target}"
                );
            }
        }
        // A damaged block meta is an error on the way, not a wrong answer.
        let mut bad = s.postings.clone();
        let off = usize::try_from(
            fst::Map::new(&s.terms[..])
                .expect("fst")
                .get(b"=some")
                .expect("indexed"),
        )
        .expect("a small offset");
        let meta0 = off + 2 + BLOCK_META_LEN; // df varint (2 bytes), list bound, block 0
        bad[meta0 + 4] ^= 1; // block 0's end
        let v = TextIndexView::parse(
            &s.stats,
            &s.terms,
            &bad,
            FieldLens::Narrow(&s.doc_lens),
            2000,
        )
        .expect("shapes unchanged");
        assert!(v.verify(&records).is_err());
        let mut c = v.list(b"=some").expect("ok").expect("indexed").cursor();
        let mut failed = false;
        for _ in 0..want.len() {
            if c.advance().is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed);
    }

    /// Packed values read back as written at every width, for every count up to a block.
    #[test]
    fn packed_values_round_trip_at_every_width() {
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        for width in 0..=PACKED_WIDTH_MAX {
            for n in [1usize, 2, 7, 8, 9, 63, 127, 128] {
                let values: Vec<u32> = (0..n)
                    .map(|i| {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        let max = if width == 0 {
                            0
                        } else {
                            u32::MAX >> (32 - width)
                        };
                        // The largest value of the width first, then random ones.
                        if i == 0 {
                            max
                        } else {
                            u32::try_from(rng >> 32).unwrap_or(0) & max
                        }
                    })
                    .collect();
                assert_eq!(packed_width(values.iter().copied()), width, "{values:?}");
                let mut buf = Vec::new();
                put_packed(&mut buf, values.iter().copied(), width);
                assert_eq!(buf.len(), packed_len(n, width));
                let mut out = vec![u32::MAX; n];
                unpack(&buf, 0, width, &mut out);
                assert_eq!(out, values, "width {width}, {n} values");
                // Followed by other bytes (read from in place, not copied).
                buf.extend_from_slice(&[0xff; 9]);
                let mut out = vec![u32::MAX; n];
                unpack(&buf, 0, width, &mut out);
                assert_eq!(out, values, "width {width}, {n} values, in place");
            }
        }
    }

    /// A layout-3 list whose records reach `u32::MAX` reads back; a block claiming a
    /// record past it, a width over 32 or a posting without occurrences is an error.
    #[test]
    fn packed_blocks_at_the_limits() {
        let postings = [(0, [1, 0, 0]), (7, [0, 70_000, 0]), (u32::MAX, [0, 0, 1])];
        let mut buf = Vec::new();
        encode_postings_blocked(&mut buf, &postings, |_| [1, 1, 1], TEXT_LAYOUT_PACKED).unwrap();
        let read = |bytes: &[u8]| -> Result<Vec<(u32, [u32; 3])>, DecodeError> {
            let mut c = PostingList::new(bytes, 0, TEXT_LAYOUT_PACKED)?.cursor();
            let mut out = Vec::new();
            while c.advance()? {
                out.push((c.rec, c.tf));
            }
            Ok(out)
        };
        assert_eq!(read(&buf).unwrap(), postings);
        // df, then the widths: gaps 32 bits, tfs 1, 17 and 1.
        assert_eq!(buf[1..5], [32, 1, 17, 1]);
        let mut wide = buf.clone();
        wide[1] = 33;
        assert!(read(&wide).is_err());
        // The last gap one more: record 2^32.
        let mut past = buf.clone();
        let gaps_end = 5 + packed_len(3, 32);
        past[gaps_end - 4..gaps_end].copy_from_slice(&(u32::MAX - 7).to_le_bytes());
        assert!(read(&past).is_err(), "{:?}", read(&past));
        // The third posting's props tf (its only one) cleared: no occurrences left.
        let mut empty = buf.clone();
        empty[gaps_end + 1 + packed_len(3, 17)] &= !0b100;
        assert!(read(&empty).is_err());
        for cut in 0..buf.len() {
            assert!(read(&buf[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// Sections of layout 1 (format 4) still parse, verify and read.
    #[test]
    fn layout_1_sections_still_read() {
        let mut postings = Vec::new();
        encode_postings(
            &mut postings,
            &[
                Posting {
                    node: 3,
                    tf: [0, 1, 1],
                },
                Posting {
                    node: 7,
                    tf: [1, 0, 0],
                },
            ],
        );
        let mut b = fst::MapBuilder::memory();
        b.insert(b"=a", 0).expect("fst");
        let terms = b.into_inner().expect("fst");
        let stats = TextStats {
            layout: 1,
            docs: 2,
            field_len_total: [1, 3, 1],
            terms: 1,
            postings_len: postings.len() as u64,
        }
        .encode();
        let lens: [u32; 6] = [0, 1, 1, 1, 2, 0];
        let v = TextIndexView::parse(&stats, &terms, &postings, FieldLens::Wide(&lens), 2)
            .expect("parse");
        v.verify(&[3, 7]).expect("verify");
        assert_eq!(v.layout(), 1);
        assert_eq!(v.df(b"=a"), Ok(2));
        assert!(v.list(b"=a").is_err());
        let mut r = v.postings(b"=a").expect("ok").expect("indexed");
        assert_eq!(r.next_posting().expect("ok").map(|p| p.node), Some(3));
        let mut bad = stats.clone();
        bad[0] = 4;
        assert!(
            TextStats::decode(&bad).is_err(),
            "unknown layouts are refused"
        );
    }

    /// Damaged postings bytes give errors, never panics (a small exhaustive bit-flip run;
    /// the fuzz target `text_sections` covers arbitrary bytes).
    #[test]
    fn verify_in_halves_finds_damage_in_either() {
        let terms = VERIFY_SPLIT_TERMS_MIN + 100;
        let mut w = TextIndexWriter::new();
        for node in 0..4u32 {
            w.add_doc_lens(node, [1, 1, 0], &[]);
        }
        for t in 0..terms {
            let n = u32::try_from(t % 4).unwrap();
            w.add_term(format!("t{t:06}").as_bytes(), [(n, [1, 0, 0])]);
        }
        let records: Vec<u32> = (0..4).collect();
        let sections = w.finish_on(&records, 2).unwrap();
        let view = |postings: &[u8]| {
            TextIndexView::parse(
                &sections.stats,
                &sections.terms,
                postings,
                FieldLens::Narrow(&sections.doc_lens),
                4,
            )
            .and_then(|v| v.verify(&records))
        };
        view(&sections.postings).unwrap();
        // A block of the first list and of the last claiming values of 127 bits: each
        // half reports it.
        let last = fst::Map::new(&sections.terms[..])
            .unwrap()
            .get(format!("t{:06}", terms - 1))
            .unwrap();
        for at in [1, usize::try_from(last).unwrap() + 1] {
            let mut bad = sections.postings.clone();
            bad[at] = 0x7f;
            assert!(view(&bad).is_err(), "damage at byte {at} went unseen");
        }
    }

    /// Reads the whole list at `offset` of `bytes`: its postings, or the first error.
    fn read_postings(bytes: &[u8], offset: u64) -> Result<Vec<Posting>, DecodeError> {
        let mut r = PostingsReader::new(bytes, offset)?;
        let mut out = Vec::new();
        while let Some(p) = r.next_posting()? {
            out.push(p);
        }
        assert_eq!(
            out.len() as u64,
            r.df(),
            "a list read whole holds df postings"
        );
        Ok(out)
    }

    /// Postings lists carry no checksum of their own (the section's covers them), so a bit
    /// flip may still decode, e.g. to another term frequency. The reader's promise: every
    /// damaged input is an `Err` or a list as well-formed as an encoder could write (node
    /// ids increasing, every posting in at least one field with a tf > 0), never a panic;
    /// and every truncation and each damage that breaks the format is an `Err` saying what.
    #[test]
    fn damaged_postings_are_errors_or_well_formed() {
        let postings = [
            Posting {
                node: 5,
                tf: [1, 0, 3],
            },
            Posting {
                node: 9,
                tf: [0, 2, 0],
            },
        ];
        let mut buf = Vec::new();
        encode_postings(&mut buf, &postings);
        // df 2 | node 5, mask 0b101, tf 1, tf 3 | node +4, mask 0b010, tf 2
        assert_eq!(buf, [2, 5, 5, 1, 3, 4, 2, 2]);
        assert_eq!(read_postings(&buf, 0).unwrap(), postings);

        // Every single-bit flip: an error or a well-formed list, never a panic.
        let mut detected = 0;
        for i in 0..buf.len() {
            for bit in 0..8 {
                let mut b = buf.clone();
                b[i] ^= 1 << bit;
                let r = std::panic::catch_unwind(|| read_postings(&b, 0))
                    .unwrap_or_else(|_| panic!("byte {i} bit {bit}: the reader panicked"));
                match r {
                    Err(_) => detected += 1,
                    Ok(list) => {
                        assert!(
                            list.windows(2).all(|w| w[0].node < w[1].node),
                            "byte {i} bit {bit}: node ids not increasing in {list:?}"
                        );
                        assert!(
                            list.iter().all(|p| p.tf.iter().any(|&t| t > 0)),
                            "byte {i} bit {bit}: a posting in no field in {list:?}"
                        );
                    }
                }
            }
        }
        assert!(
            detected >= buf.len(),
            "only {detected} of 64 flips were errors"
        );

        // Every truncation is an error (the list runs past the end).
        for len in 1..buf.len() {
            assert!(
                read_postings(&buf[..len], 0).is_err(),
                "truncation to {len} bytes went unseen"
            );
        }
        // Each damage that breaks the format, with what the error says.
        let damaged = |at: usize, value: u8| {
            let mut b = buf.clone();
            b[at] = value;
            read_postings(&b, 0).expect_err("damage went unseen").what
        };
        assert!(damaged(0, 0).contains("postings count 0 is impossible"));
        assert!(damaged(0, 3).contains("postings count 3 is impossible"));
        assert!(damaged(2, 0).contains("field mask 0x0 is invalid"));
        assert!(damaged(2, 1 << TEXT_FIELDS).contains("is invalid"));
        assert!(damaged(3, 0).contains("term frequency 0"));
        assert!(damaged(5, 0).contains("node ids not increasing"));
        assert!(damaged(7, 0x80).contains("truncated varint"));
        let e = read_postings(&buf, buf.len() as u64).expect_err("offset past the end");
        assert!(e.what.contains("out of bounds"), "{e:?}");
    }

    /// The phrase-pair filter's hashes are part of the format: pinned here, so that a
    /// change shows as a test failure rather than as phrases missed in old segments.
    #[test]
    fn pair_filter_hashes_are_pinned() {
        // FNV-1a 64: the offset basis, and the published value for "a".
        assert_eq!(unit_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(unit_hash("a"), 0xaf63_dc4c_8601_ec8c);
        let new_york = pair_hash(unit_hash("new"), unit_hash("york"));
        assert_eq!(new_york, 0x2ac2_c5af, "{new_york:#x}");
        // The filter bit of formats 11 and 12: the top 8 bits of the same product.
        assert_eq!(pair_filter_bit(new_york), 0x2a);
        assert_ne!(
            new_york,
            pair_hash(unit_hash("york"), unit_hash("new")),
            "a pair's order counts"
        );
        assert_eq!(
            (pair_set_log2(0), pair_set_log2(64), pair_set_log2(65)),
            (12, 12, 13)
        );
        assert_eq!(pair_set_log2(1_000_000), 26);
        assert_eq!(pair_set_log2(u64::MAX), 28);
        assert_eq!(pair_set_words(1_000_000), 1 + (1 << 20));
        let mut f = NO_PAIRS;
        for bit in [0, 63, 64, 200, 255] {
            set_pair_bit(&mut f, bit);
        }
        assert_eq!(f, [1 | 1 << 63, 1, 0, 1 << 8 | 1 << 63]);
        let mut want = NO_PAIRS;
        set_pair_bit(&mut want, 200);
        assert!(filter_holds(&f, &want) && filter_holds(&f, &NO_PAIRS));
        set_pair_bit(&mut want, 201);
        assert!(!filter_holds(&f, &want));
    }

    /// A writer stores each document's filter at its record, whatever order documents
    /// came in; a view reads them back, and refuses a section of the wrong length.
    #[test]
    fn pair_filters_are_stored_per_record() {
        let mut w = TextIndexWriter::new();
        // Filter bits 9 and 200 + node, from hashes whose low bits differ.
        let hashes = |n: u32| [9 << 24 | n, (200 + n) << 24, (200 + n) << 24 | 77];
        for node in [9u32, 4, 7] {
            w.add_doc(
                node,
                [1, 0, 0],
                &hashes(node),
                vec![(b"=a".to_vec(), [1, 0, 0])],
            );
        }
        let s = w.finish(&[4, 7, 9]).expect("sections");
        assert_eq!(s.pairs.len(), 3 * PAIR_FILTER_WORDS);
        let view = fresh_view(&s, 3);
        assert_eq!(view.pair_filter(0), None, "no section given: no filter");
        let view = view.with_pairs(&s.pairs).expect("the records' filters");
        for (rec, node) in [4u32, 7, 9].into_iter().enumerate() {
            let mut want = NO_PAIRS;
            set_pair_bit(&mut want, 9);
            set_pair_bit(&mut want, 200 + node as usize);
            assert_eq!(view.pair_filter(rec), Some(&want));
        }
        assert_eq!(view.pair_filter(3), None);
        assert_eq!(view.pair_filter(usize::MAX), None);
        for len in [0, s.pairs.len() - 1, s.pairs.len() + PAIR_FILTER_WORDS] {
            let mut other = s.pairs.clone();
            other.resize(len, 0);
            let e = fresh_view(&s, 3)
                .with_pairs(&other)
                .expect_err("wrong length");
            assert!(e.what.contains("text pair filters"), "{e:?}");
        }
    }

    /// A segment's phrase-pair set holds a bit for each pair hash of each document, at
    /// the segment's size; a view answers whether a phrase's pairs are all there, and
    /// refuses a section of the wrong length or stated size. A build with so many pairs
    /// that it keeps them as a wide bitset writes the same bytes.
    #[test]
    fn pair_set_holds_every_pair_of_the_segment() {
        let mut w = TextIndexWriter::new();
        let pairs: [&[u32]; 3] = [&[0x1234_5678, 0xffff_ffff], &[], &[0, 0x8000_0000]];
        for (node, p) in (0u32..).zip(pairs) {
            w.add_doc(node, [1, 0, 0], p, vec![(b"=a".to_vec(), [1, 0, 0])]);
        }
        let s = w.finish(&[0, 1, 2]).expect("sections");
        assert_eq!(s.pair_set.len() as u64, pair_set_words(3));
        assert_eq!(s.pair_set[0], 12);
        let ones: u32 = s.pair_set[1..].iter().map(|w| w.count_ones()).sum();
        assert_eq!(ones, 4);
        let view = fresh_view(&s, 3);
        assert_eq!(view.pair_set_holds(&[1]), None, "no section: unknown");
        let view = view.with_pairs(&s.pairs).expect("filters");
        let view = view.with_pair_set(&s.pair_set).expect("the set");
        assert_eq!(view.pair_set_holds(&[]), Some(true));
        assert_eq!(view.pair_set_holds(&[0x1234_5678, 0x8000_0000]), Some(true));
        // The same top 12 bits: the set cannot tell them apart.
        assert_eq!(view.pair_set_holds(&[0x1230_0000]), Some(true));
        assert_eq!(
            view.pair_set_holds(&[0x1234_5678, 0x4000_0000]),
            Some(false)
        );
        for bad in [
            s.pair_set[..s.pair_set.len() - 1].to_vec(),
            [&s.pair_set[..], &[0]].concat(),
            [&[13u64][..], &s.pair_set[1..]].concat(),
            Vec::new(),
        ] {
            let e = fresh_view(&s, 3)
                .with_pair_set(&bad)
                .expect_err("wrong length or size");
            assert!(e.what.contains("text pair set"), "{e:?}");
        }
        // Folding a wide bitset down gives the bits hashing at the size gives.
        let hashes: Vec<u32> = (0..5000u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
        for records in [0u64, 100, 5000, 1 << 22] {
            let mut listed = PairSetBuilder::default();
            listed.add(&hashes);
            let mut wide = PairSetBuilder {
                wide: vec![0; (1usize << PAIR_SET_LOG2_MAX) / 64],
                ..PairSetBuilder::default()
            };
            wide.add(&hashes);
            assert_eq!(
                listed.finish(records),
                wide.finish(records),
                "{records} records"
            );
        }
    }
}
