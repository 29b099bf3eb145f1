//! The structurally validated view of a segment: where each section is, and the checks
//! that run at open.

use std::ops::Range;

use super::{
    FOOTER_LEN, HEADER_LEN, REQUIRED, SECTIONS_MAX, SEGMENT_END_MAGIC, SEGMENT_MAGIC, SectionKind,
    Summary, TABLE_ENTRY_LEN,
};
use crate::format::codec::{ByteReader, DecodeError};
use crate::graph::limits;

/// One entry of the section table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionEntry {
    /// Byte range in the file.
    pub range: Range<usize>,
    /// Checksum of the bytes.
    pub crc: u32,
}

/// Told of each part of a segment's bytes (a sub-slice of the bytes verified) that a
/// verification has read, as it goes, so that a caller verifying a mapping can drop the
/// pages behind the scan (see `SegmentFile::verify_releasing`): memory then does not grow
/// with the file. Advice only: the verification may read a released part again (which
/// reads it back from the file), and what it checks does not depend on it.
pub type Release<'a> = &'a (dyn Fn(&[u8]) + Sync);

/// The bytes a verification reads of a section between two calls of its [`Release`] at
/// most (besides the parts it keeps: node records and keys, O(nodes)).
pub const RELEASE_WINDOW: usize = 32 << 20;

/// A structurally validated segment: where each section is, plus the decoded summary.
#[derive(Clone, Debug)]
pub struct SegmentLayout {
    /// Format version.
    pub version: u32,
    /// Owning database.
    pub db_id: u128,
    /// Segment id from the footer.
    pub segment_id: u64,
    /// LSN covered.
    pub lsn: u64,
    /// Decoded summary.
    pub summary: Summary,
    sections: Vec<Option<SectionEntry>>,
    pub(super) table_offset: usize,
}

impl SegmentLayout {
    /// Validates the structure of a whole segment file held in `bytes`. Cost: O(sections +
    /// node_bound) (CSR offsets are checked to be monotone and within bounds), no per-edge
    /// work. The version is returned as found for the caller to compare.
    pub fn parse(bytes: &[u8]) -> Result<SegmentLayout, DecodeError> {
        if bytes.len() < HEADER_LEN + FOOTER_LEN {
            return Err(DecodeError::new(
                0,
                format!("file is {} bytes, too short for a segment", bytes.len()),
            ));
        }
        let mut h = ByteReader::new(&bytes[..HEADER_LEN]);
        if h.take(8, "magic")? != SEGMENT_MAGIC {
            return Err(DecodeError::new(0, "not a hopgraph segment (bad magic)"));
        }
        let version = h.u32("version")?;
        let _flags = h.u32("flags")?;
        let db_id = h.u128("db id")?;
        let foot_at = bytes.len() - FOOTER_LEN;
        let mut f = ByteReader::new(&bytes[foot_at..]);
        let segment_id = f.u64("segment id")?;
        let lsn = f.u64("lsn")?;
        let table_offset = f.u64("table offset")?;
        let file_len = f.u64("file length")?;
        let count = f.u32("section count")? as usize;
        let crc = f.u32("footer crc")?;
        if f.take(8, "end magic")? != SEGMENT_END_MAGIC {
            return Err(DecodeError::new(
                bytes.len() - 8,
                "segment end magic missing (truncated file?)",
            ));
        }
        if file_len != bytes.len() as u64 {
            return Err(DecodeError::new(
                foot_at + 24,
                format!("footer says {file_len} bytes, file has {}", bytes.len()),
            ));
        }
        let table_len = count
            .checked_mul(TABLE_ENTRY_LEN)
            .filter(|_| count <= SECTIONS_MAX);
        let table_range = table_len
            .and_then(|l| {
                usize::try_from(table_offset)
                    .ok()
                    .map(|o| o..o.saturating_add(l))
            })
            .filter(|r| r.start >= HEADER_LEN && r.end == foot_at);
        let Some(table_range) = table_range else {
            return Err(DecodeError::new(
                foot_at + 16,
                "section table bounds are invalid",
            ));
        };
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&bytes[..HEADER_LEN]);
        hasher.update(&bytes[table_range.clone()]);
        hasher.update(&bytes[foot_at..foot_at + 36]);
        if hasher.finalize() != crc {
            return Err(DecodeError::new(
                foot_at + 36,
                "segment header/table checksum mismatch",
            ));
        }
        // Indexed by code; codes are not dense (vector sections start at 40).
        let slots = SectionKind::ALL
            .iter()
            .map(|&k| k as usize)
            .max()
            .unwrap_or(0)
            + 1;
        let mut sections: Vec<Option<SectionEntry>> = vec![None; slots];
        let mut t = ByteReader::new(&bytes[table_range.clone()]);
        for i in 0..count {
            let at = table_range.start + i * TABLE_ENTRY_LEN;
            let code = t.u32("section kind")?;
            let _flags = t.u32("section flags")?;
            let offset = t.u64("section offset")?;
            let len = t.u64("section length")?;
            let crc = t.u32("section crc")?;
            let _reserved = t.u32("reserved")?;
            let Some(kind) = SectionKind::from_code(code) else {
                return Err(DecodeError::new(at, format!("unknown section kind {code}")));
            };
            let end = offset.checked_add(len).filter(|&e| e <= table_offset);
            let (Some(end), true) = (end, offset >= HEADER_LEN as u64 && offset % 8 == 0) else {
                return Err(DecodeError::new(
                    at,
                    format!("section {kind:?} at {offset}+{len} is out of bounds or misaligned"),
                ));
            };
            if len % kind.elem_size() as u64 != 0 {
                return Err(DecodeError::new(
                    at,
                    format!("section {kind:?} length {len} is not a whole number of elements"),
                ));
            }
            let slot = &mut sections[code as usize];
            if slot.is_some() {
                return Err(DecodeError::new(
                    at,
                    format!("section {kind:?} appears twice"),
                ));
            }
            // Both bounds are <= table_offset <= bytes.len(), so they fit in usize.
            let (Ok(start), Ok(end)) = (usize::try_from(offset), usize::try_from(end)) else {
                return Err(DecodeError::new(
                    at,
                    format!("section {kind:?} offset overflows"),
                ));
            };
            *slot = Some(SectionEntry {
                range: start..end,
                crc,
            });
        }
        for kind in REQUIRED {
            if sections[*kind as usize].is_none() {
                return Err(DecodeError::new(
                    table_range.start,
                    format!("required section {kind:?} is missing"),
                ));
            }
        }
        let summary_range = sections[SectionKind::Summary as usize]
            .as_ref()
            .map(|e| e.range.clone())
            .unwrap_or(0..0);
        // The summary is decoded at open and trusted by replay, so its bytes are checked.
        let summary_bytes = &bytes[summary_range.clone()];
        let summary_crc = sections[SectionKind::Summary as usize]
            .as_ref()
            .map(|e| e.crc);
        if summary_crc != Some(crc32fast::hash(summary_bytes)) {
            return Err(DecodeError::new(
                summary_range.start,
                "summary section checksum mismatch",
            ));
        }
        let summary = Summary::decode(summary_bytes)
            .map_err(|e| DecodeError::new(summary_range.start + e.offset, e.what))?;
        let layout = SegmentLayout {
            version,
            db_id,
            segment_id,
            lsn,
            summary,
            sections,
            table_offset: table_range.start,
        };
        let mut ranges = layout.sorted_ranges();
        ranges.dedup();
        if ranges.windows(2).any(|w| w[0].end > w[1].start) {
            return Err(DecodeError::new(table_range.start, "sections overlap"));
        }
        layout.check_shapes(bytes)?;
        Ok(layout)
    }

    /// Whether rows are located through `EdgeOutPos` (version 2 on) rather than stored in
    /// the `EdgeSources` / `EdgeTargets` / `EdgeTypes` columns (version 1).
    pub fn has_out_pos(&self) -> bool {
        self.version >= crate::format::SEGMENT_OUT_POS_VERSION
    }

    /// Source, target and type of edge row `row`: the stored columns in version 1, the
    /// out-CSR entry `EdgeOutPos[row]` (its owner node, neighbor and type) from version 2
    /// on. `None` when the row or its position is out of range (a damaged file).
    pub fn edge_endpoints(&self, bytes: &[u8], row: usize) -> Option<(u32, u32, u16)> {
        use SectionKind as K;
        if !self.has_out_pos() {
            return Some((
                *self.u32s(bytes, K::EdgeSources).get(row)?,
                *self.u32s(bytes, K::EdgeTargets).get(row)?,
                *self.u16s(bytes, K::EdgeTypes).get(row)?,
            ));
        }
        let p = *self.u32s(bytes, K::EdgeOutPos).get(row)?;
        let offsets = self.u32s(bytes, K::OutOffsets);
        // `parse` checked the offsets run monotonically from 0 to the row count, so the
        // owner is the last node whose run starts at or before `p`.
        let owner = offsets.partition_point(|&o| o <= p).checked_sub(1)?;
        Some((
            u32::try_from(owner).ok()?,
            *self.u32s(bytes, K::OutNeighbors).get(p as usize)?,
            *self.u16s(bytes, K::OutTypes).get(p as usize)?,
        ))
    }

    /// Whether this segment's node records end with their validity interval.
    pub fn record_validity(&self) -> crate::format::record::RecordValidity {
        if self.version >= crate::format::VALIDITY_VERSION {
            crate::format::record::RecordValidity::Stored
        } else {
            crate::format::record::RecordValidity::Implied
        }
    }

    pub(super) fn err_at(&self, kind: SectionKind, what: String) -> DecodeError {
        DecodeError::new(self.entry(kind).map(|e| e.range.start).unwrap_or(0), what)
    }

    fn check_shapes(&self, bytes: &[u8]) -> Result<(), DecodeError> {
        use SectionKind as K;
        let s = &self.summary;
        let rows = usize::try_from(s.edge_rows)
            .map_err(|_| self.err_at(K::Summary, "edge rows overflow".into()))?;
        if s.edge_rows > limits::SEGMENT_EDGES_MAX {
            return Err(self.err_at(
                K::Summary,
                format!("{rows} edge rows exceed the segment limit"),
            ));
        }
        let nodes = s.node_bound as usize + 1;
        let recs = usize::try_from(s.node_records)
            .map_err(|_| self.err_at(K::Summary, "record count overflow".into()))?;
        let mut expect = vec![
            (K::OutOffsets, nodes),
            (K::InOffsets, nodes),
            (K::OutNeighbors, rows),
            (K::OutTypes, rows),
            (K::OutEdgePos, rows),
            (K::InNeighbors, rows),
            (K::InTypes, rows),
            (K::InEdgePos, rows),
            (K::NodeIds, recs),
            (K::KeyOrder, recs),
            (K::NodeOffsets, recs + 1),
        ];
        let v2 = self.has_out_pos();
        for (kind, present) in [
            (K::EdgeIds, s.dense_edge_base.is_none()),
            (K::EdgeCreated, s.uniform_created_at.is_none()),
            (K::EdgeSources, !v2),
            (K::EdgeTargets, !v2),
            (K::EdgeTypes, !v2),
            (K::EdgeOutPos, v2),
        ] {
            if present {
                expect.push((kind, rows));
            } else if self.entry(kind).is_some() {
                return Err(self.err_at(
                    kind,
                    format!(
                        "{kind:?} present although the summary or the version {} elides it",
                        self.version
                    ),
                ));
            }
        }
        if self.entry(K::EdgeWeights).is_some() {
            expect.push((K::EdgeWeights, rows));
        }
        let timed = self.version >= crate::format::VALIDITY_VERSION;
        for kind in [
            K::EdgeValidFrom,
            K::EdgeValidTo,
            K::EdgeValidity,
            K::TimedNodes,
            K::TimedEdges,
            K::TimeBounds,
        ] {
            if !timed && self.entry(kind).is_some() {
                return Err(self.err_at(
                    kind,
                    format!("{kind:?} present in a version {} segment", self.version),
                ));
            }
        }
        if timed {
            for kind in [K::EdgeValidFrom, K::EdgeValidTo] {
                if self.entry(kind).is_some() {
                    expect.push((kind, rows));
                }
            }
            expect.push((K::TimeBounds, 2));
            let n = self.entry(K::EdgeValidity).map_or(0, |e| e.range.len() / 8);
            if !n.is_multiple_of(3) {
                return Err(self.err_at(
                    K::EdgeValidity,
                    format!("EdgeValidity has {n} elements, not a multiple of 3"),
                ));
            }
        }
        if self.entry(K::KeyHash).is_some() {
            if !v2 {
                return Err(self.err_at(
                    K::KeyHash,
                    format!("KeyHash present in a version {} segment", self.version),
                ));
            }
            // From version 6 each slot is 16 bytes, four of the section's u32 elements.
            let elems = if self.version >= crate::format::KEY_SLOTS_VERSION {
                super::key_slot_count(recs).saturating_mul(super::KEY_SLOT_LEN / 4)
            } else {
                super::key_hash_slots(recs)
            };
            expect.push((K::KeyHash, elems));
        }
        if self.entry(K::EdgePropsOffsets).is_some() {
            expect.push((K::EdgePropsOffsets, rows + 1));
        }
        // The text index (codes 30–32, with its lengths in 33 or 34) is optional, but all
        // or nothing.
        let text = super::TEXT_SECTIONS
            .iter()
            .filter(|k| self.entry(**k).is_some())
            .count();
        let lens: Vec<SectionKind> = super::TEXT_LENS_SECTIONS
            .iter()
            .copied()
            .filter(|k| self.entry(*k).is_some())
            .collect();
        let want_lens = usize::from(text != 0);
        if text != 0 && text != super::TEXT_SECTIONS.len() || lens.len() != want_lens {
            return Err(self.err_at(
                K::TextStats,
                format!(
                    "{text} of the {} text index sections and {} length sections present",
                    super::TEXT_SECTIONS.len(),
                    lens.len()
                ),
            ));
        }
        for kind in lens {
            expect.push((kind, recs.saturating_mul(crate::format::text::TEXT_FIELDS)));
        }
        // The phrase-pair filters come with the text index from version 11, the phrase-pair
        // set from version 13, never before.
        let pair_set_words = crate::format::text::pair_set_words(recs as u64);
        for (kind, since, n) in [
            (
                K::TextPairs,
                crate::format::TEXT_PAIRS_VERSION,
                recs.saturating_mul(crate::format::text::PAIR_FILTER_WORDS),
            ),
            (
                K::TextPairSet,
                crate::format::TEXT_PAIR_SET_VERSION,
                usize::try_from(pair_set_words).unwrap_or(usize::MAX),
            ),
        ] {
            if self.version >= since && text != 0 {
                expect.push((kind, n));
            } else if self.entry(kind).is_some() {
                let without = if text == 0 {
                    " without a text index"
                } else {
                    ""
                };
                return Err(self.err_at(
                    kind,
                    format!(
                        "{kind:?} present in a version {} segment{without}",
                        self.version
                    ),
                ));
            }
        }
        for (kind, n) in expect {
            let len = self.entry(kind).map(|e| e.range.len() / kind.elem_size());
            if len != Some(n) {
                return Err(
                    self.err_at(kind, format!("{kind:?} has {len:?} elements, expected {n}"))
                );
            }
        }
        if let Some(base) = s.dense_edge_base
            && base
                .checked_add(s.edge_rows)
                .is_none_or(|end| end > s.next_edge_id)
        {
            return Err(self.err_at(
                K::Summary,
                format!(
                    "dense edge ids {base}+{} pass next_edge_id {}",
                    s.edge_rows, s.next_edge_id
                ),
            ));
        }
        for (kind, total) in [(K::OutOffsets, rows as u64), (K::InOffsets, rows as u64)] {
            let offs = self.u32s(bytes, kind);
            if offs.first() != Some(&0)
                || offs.last().map(|&x| u64::from(x)) != Some(total)
                || !non_decreasing(offs)
            {
                return Err(
                    self.err_at(kind, format!("{kind:?} is not monotone from 0 to {total}"))
                );
            }
        }
        let blob_len = self
            .entry(K::NodeBlob)
            .map(|e| e.range.len() as u64)
            .unwrap_or(0);
        let offs = self.u64s(bytes, K::NodeOffsets);
        if offs.first() != Some(&0) || offs.last() != Some(&blob_len) || !non_decreasing(offs) {
            return Err(self.err_at(
                K::NodeOffsets,
                "node record offsets are not monotone within the blob".into(),
            ));
        }
        if self.entry(K::EdgePropsOffsets).is_some() {
            let blob_len = self
                .entry(K::EdgePropsBlob)
                .map(|e| e.range.len() as u64)
                .unwrap_or(0);
            let offs = self.u64s(bytes, K::EdgePropsOffsets);
            if offs.first() != Some(&0) || offs.last() != Some(&blob_len) || !non_decreasing(offs) {
                return Err(self.err_at(
                    K::EdgePropsOffsets,
                    "edge props offsets are not monotone within the blob".into(),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn sorted_ranges(&self) -> Vec<Range<usize>> {
        let mut r: Vec<Range<usize>> = self
            .sections
            .iter()
            .flatten()
            .map(|e| e.range.clone())
            .collect();
        r.sort_by_key(|x| (x.start, x.end));
        r
    }

    /// Every section present, in file order.
    pub fn entries(&self) -> Vec<(SectionKind, &SectionEntry)> {
        let mut v: Vec<(SectionKind, &SectionEntry)> = (0u32..)
            .zip(&self.sections)
            .filter_map(|(code, e)| Some((SectionKind::from_code(code)?, e.as_ref()?)))
            .collect();
        v.sort_by_key(|(_, e)| (e.range.start, e.range.end));
        v
    }

    /// Where a section is, if present.
    pub fn entry(&self, kind: SectionKind) -> Option<&SectionEntry> {
        self.sections.get(kind as usize).and_then(|e| e.as_ref())
    }

    /// A section's raw bytes (empty when absent).
    pub fn bytes<'a>(&self, bytes: &'a [u8], kind: SectionKind) -> &'a [u8] {
        self.entry(kind)
            .and_then(|e| bytes.get(e.range.clone()))
            .unwrap_or(&[])
    }

    /// A `u32` array section (empty when absent). `parse` checked length and alignment, so
    /// the checked cast succeeds for the bytes it validated.
    pub fn u32s<'a>(&self, bytes: &'a [u8], kind: SectionKind) -> &'a [u32] {
        bytemuck::try_cast_slice(self.bytes(bytes, kind)).unwrap_or(&[])
    }

    /// A `u16` array section (empty when absent).
    pub fn u16s<'a>(&self, bytes: &'a [u8], kind: SectionKind) -> &'a [u16] {
        bytemuck::try_cast_slice(self.bytes(bytes, kind)).unwrap_or(&[])
    }

    /// A `u64` array section (empty when absent).
    pub fn u64s<'a>(&self, bytes: &'a [u8], kind: SectionKind) -> &'a [u64] {
        bytemuck::try_cast_slice(self.bytes(bytes, kind)).unwrap_or(&[])
    }

    /// An `f32` array section (empty when absent).
    pub fn f32s<'a>(&self, bytes: &'a [u8], kind: SectionKind) -> &'a [f32] {
        bytemuck::try_cast_slice(self.bytes(bytes, kind)).unwrap_or(&[])
    }

    /// Checks one section's crc (a no-op for an absent section).
    ///
    /// # Errors
    /// The section's offset when its bytes do not match.
    pub fn verify_section(&self, bytes: &[u8], kind: SectionKind) -> Result<(), DecodeError> {
        match self.entry(kind) {
            Some(e) if crc32fast::hash(bytes.get(e.range.clone()).unwrap_or(&[])) != e.crc => Err(
                DecodeError::new(e.range.start, format!("section {kind:?} checksum mismatch")),
            ),
            _ => Ok(()),
        }
    }

    /// Checks every section's crc. Cost: O(file size).
    pub fn verify_checksums(&self, bytes: &[u8]) -> Result<(), DecodeError> {
        self.verify_checksums_releasing(bytes, &|_| {})
    }

    /// [`SegmentLayout::verify_checksums`], telling `release` of each window of
    /// [`RELEASE_WINDOW`] bytes once hashed.
    pub fn verify_checksums_releasing(
        &self,
        bytes: &[u8],
        release: Release<'_>,
    ) -> Result<(), DecodeError> {
        for kind in SectionKind::ALL {
            if let Some(e) = self.entry(*kind) {
                let data = bytes.get(e.range.clone()).unwrap_or(&[]);
                let mut crc = crc32fast::Hasher::new();
                for window in data.chunks(RELEASE_WINDOW) {
                    crc.update(window);
                    release(window);
                }
                if crc.finalize() != e.crc {
                    return Err(DecodeError::new(
                        e.range.start,
                        format!("section {kind:?} checksum mismatch"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Whether `xs` never decreases. Open scans every segment's offset arrays with it (O(nodes)
/// per open), so it compares in chunks without an early exit inside a chunk, which the
/// compiler turns into vector code: on kron-24 (141 MB of offsets) about 6 ms instead of the
/// ~21 ms of `windows(2).any(..)`, which exits early but does not vectorise.
pub(crate) fn non_decreasing<T: Copy + Ord>(xs: &[T]) -> bool {
    /// Elements compared per chunk before the result is checked.
    const CHUNK: usize = 1024;
    let (Some(head), Some(tail)) = (xs.get(..xs.len().saturating_sub(1)), xs.get(1..)) else {
        return true;
    };
    head.chunks(CHUNK)
        .zip(tail.chunks(CHUNK))
        .all(|(a, b)| a.iter().zip(b).fold(true, |ok, (x, y)| ok & (x <= y)))
}
