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

use std::io::{self, Write};
use std::ops::Range;

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
    OutNeighbors = 3, 4, "`u32[edges]`: targets, per node sorted by (type, neighbour, edge id).";
    OutTypes = 4, 2, "`u16[edges]`: edge type of each out-CSR entry.";
    OutEdgePos = 5, 4, "`u32[edges]`: row of each out-CSR entry in the edge columns.";
    InOffsets = 6, 4, "`u32[node_bound + 1]`: start of each node's run in the in-CSR.";
    InNeighbors = 7, 4, "`u32[edges]`: sources, per node sorted by (type, neighbour, edge id).";
    InTypes = 8, 2, "`u16[edges]`: edge type of each in-CSR entry.";
    InEdgePos = 9, 4, "`u32[edges]`: row of each in-CSR entry in the edge columns.";
    EdgeIds = 10, 8, "`u64[edges]`: edge id per row, increasing; absent when ids are dense.";
    EdgeSources = 11, 4, "`u32[edges]`: source per row.";
    EdgeTargets = 12, 4, "`u32[edges]`: target per row.";
    EdgeTypes = 13, 2, "`u16[edges]`: type per row.";
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
}

/// Sections every segment must have.
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
    SectionKind::EdgeSources,
    SectionKind::EdgeTargets,
    SectionKind::EdgeTypes,
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

/// One entry of the section table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionEntry {
    /// Byte range in the file.
    pub range: Range<usize>,
    /// Checksum of the bytes.
    pub crc: u32,
}

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
    table_offset: usize,
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
        let mut sections: Vec<Option<SectionEntry>> = vec![None; SectionKind::ALL.len() + 1];
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

    fn err_at(&self, kind: SectionKind, what: String) -> DecodeError {
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
            (K::EdgeSources, rows),
            (K::EdgeTargets, rows),
            (K::EdgeTypes, rows),
            (K::NodeIds, recs),
            (K::KeyOrder, recs),
            (K::NodeOffsets, recs + 1),
        ];
        for (kind, present) in [
            (K::EdgeIds, s.dense_edge_base.is_none()),
            (K::EdgeCreated, s.uniform_created_at.is_none()),
        ] {
            if present {
                expect.push((kind, rows));
            } else if self.entry(kind).is_some() {
                return Err(self.err_at(
                    kind,
                    format!("{kind:?} present although the summary elides it"),
                ));
            }
        }
        if self.entry(K::EdgeWeights).is_some() {
            expect.push((K::EdgeWeights, rows));
        }
        if self.entry(K::EdgePropsOffsets).is_some() {
            expect.push((K::EdgePropsOffsets, rows + 1));
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
                || offs.windows(2).any(|w| w[0] > w[1])
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
        if offs.first() != Some(&0)
            || offs.last() != Some(&blob_len)
            || offs.windows(2).any(|w| w[0] > w[1])
        {
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
            if offs.first() != Some(&0)
                || offs.last() != Some(&blob_len)
                || offs.windows(2).any(|w| w[0] > w[1])
            {
                return Err(self.err_at(
                    K::EdgePropsOffsets,
                    "edge props offsets are not monotone within the blob".into(),
                ));
            }
        }
        Ok(())
    }

    fn sorted_ranges(&self) -> Vec<Range<usize>> {
        let mut r: Vec<Range<usize>> = self
            .sections
            .iter()
            .flatten()
            .map(|e| e.range.clone())
            .collect();
        r.sort_by_key(|x| (x.start, x.end));
        r
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
        for kind in SectionKind::ALL {
            if let Some(e) = self.entry(*kind) {
                let data = bytes.get(e.range.clone()).unwrap_or(&[]);
                if crc32fast::hash(data) != e.crc {
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

/// One entry of the `TypeBitmaps` section: direction (0 = out, 1 = in), type id and the
/// serialized roaring bitmap of node ids.
pub fn encode_type_bitmaps(entries: &[(u8, u16, roaring::RoaringBitmap)]) -> Vec<u8> {
    let mut w = ByteWriter::new();
    w.u32(u32::try_from(entries.len()).unwrap_or(u32::MAX));
    for (dir, t, bm) in entries {
        w.u8(*dir);
        w.u16(*t);
        let mut b = Vec::with_capacity(bm.serialized_size());
        // Writing into a Vec cannot fail.
        let _ = bm.serialize_into(&mut b);
        w.bytes(&b);
    }
    w.buf
}

/// Decodes the `TypeBitmaps` section.
pub fn decode_type_bitmaps(
    buf: &[u8],
) -> Result<Vec<(u8, u16, roaring::RoaringBitmap)>, DecodeError> {
    let mut r = ByteReader::new(buf);
    let n = r.u32("bitmap count")? as usize;
    if n > 2 * limits::EDGE_TYPES_MAX {
        return Err(DecodeError::new(
            0,
            format!("{n} type bitmaps is impossible"),
        ));
    }
    let mut out = Vec::with_capacity(n.min(buf.len() / 7));
    for _ in 0..n {
        let at = r.pos();
        let dir = r.u8("bitmap direction")?;
        let t = r.u16("bitmap type")?;
        let bytes = r.bytes(buf.len(), "bitmap")?;
        if dir > 1 {
            return Err(DecodeError::new(at, format!("bitmap direction {dir}")));
        }
        let bm = roaring::RoaringBitmap::deserialize_from(bytes)
            .map_err(|e| DecodeError::new(at, format!("type bitmap: {e}")))?;
        out.push((dir, t, bm));
    }
    if !r.is_empty() {
        return Err(DecodeError::new(
            r.pos(),
            "trailing bytes after type bitmaps",
        ));
    }
    Ok(out)
}

/// Serializes a roaring bitmap section.
pub fn encode_bitmap(bm: &roaring::RoaringBitmap) -> Vec<u8> {
    let mut b = Vec::with_capacity(bm.serialized_size());
    let _ = bm.serialize_into(&mut b);
    b
}

/// Serializes a roaring treemap section.
pub fn encode_treemap(tm: &roaring::RoaringTreemap) -> Vec<u8> {
    let mut b = Vec::with_capacity(tm.serialized_size());
    let _ = tm.serialize_into(&mut b);
    b
}

impl SegmentLayout {
    /// Decodes the node-tombstone section.
    pub fn node_tombstones(&self, bytes: &[u8]) -> Result<roaring::RoaringBitmap, DecodeError> {
        let e = self.bytes(bytes, SectionKind::NodeTombstones);
        roaring::RoaringBitmap::deserialize_from(e).map_err(|err| {
            self.err_at(
                SectionKind::NodeTombstones,
                format!("node tombstones: {err}"),
            )
        })
    }

    /// Decodes the edge-tombstone section.
    pub fn edge_tombstones(&self, bytes: &[u8]) -> Result<roaring::RoaringTreemap, DecodeError> {
        let e = self.bytes(bytes, SectionKind::EdgeTombstones);
        roaring::RoaringTreemap::deserialize_from(e).map_err(|err| {
            self.err_at(
                SectionKind::EdgeTombstones,
                format!("edge tombstones: {err}"),
            )
        })
    }

    /// Decodes the type-bitmap section.
    pub fn type_bitmaps(
        &self,
        bytes: &[u8],
    ) -> Result<Vec<(u8, u16, roaring::RoaringBitmap)>, DecodeError> {
        decode_type_bitmaps(self.bytes(bytes, SectionKind::TypeBitmaps)).map_err(|e| {
            DecodeError::new(
                self.entry(SectionKind::TypeBitmaps)
                    .map(|x| x.range.start)
                    .unwrap_or(0)
                    + e.offset,
                e.what,
            )
        })
    }

    /// Deep content checks: every id in bounds, CSR runs sorted, both CSRs consistent with
    /// the edge columns (each row appears exactly once per direction), node records decode
    /// and the key order is sorted. Cost: O(file size).
    pub fn verify_contents(&self, bytes: &[u8]) -> Result<(), DecodeError> {
        use SectionKind as K;
        // Alignment padding between sections (and before the table) is zero.
        let mut at = HEADER_LEN;
        for r in self
            .sorted_ranges()
            .into_iter()
            .chain(std::iter::once(self.table_offset..self.table_offset))
        {
            if bytes
                .get(at..r.start)
                .is_some_and(|gap| gap.iter().any(|&b| b != 0))
            {
                return Err(DecodeError::new(at, "non-zero padding between sections"));
            }
            at = at.max(r.end);
        }
        let s = &self.summary;
        let bound = s.node_bound;
        let ntypes = s.types.len();
        let sources = self.u32s(bytes, K::EdgeSources);
        let targets = self.u32s(bytes, K::EdgeTargets);
        let etypes = self.u16s(bytes, K::EdgeTypes);
        let rows = sources.len();
        for r in 0..rows {
            if sources[r] >= bound || targets[r] >= bound || etypes[r] as usize >= ntypes {
                return Err(self.err_at(
                    K::EdgeSources,
                    format!("edge row {r} has an id out of range"),
                ));
            }
        }
        let ids = self.u64s(bytes, K::EdgeIds);
        if ids.windows(2).any(|w| w[0] >= w[1]) {
            return Err(self.err_at(K::EdgeIds, "edge ids are not increasing".into()));
        }
        if let Some(last) = ids.last().copied().or(s
            .dense_edge_base
            .and_then(|b| b.checked_add(rows as u64))
            .filter(|_| rows > 0)
            .map(|e| e - 1))
            && last >= s.next_edge_id
        {
            return Err(self.err_at(K::Summary, "an edge id is not below next_edge_id".into()));
        }
        for (offs, nbrs, types, pos, own_is_source) in [
            (
                K::OutOffsets,
                K::OutNeighbors,
                K::OutTypes,
                K::OutEdgePos,
                true,
            ),
            (
                K::InOffsets,
                K::InNeighbors,
                K::InTypes,
                K::InEdgePos,
                false,
            ),
        ] {
            let o = self.u32s(bytes, offs);
            let n = self.u32s(bytes, nbrs);
            let t = self.u16s(bytes, types);
            let p = self.u32s(bytes, pos);
            let mut seen = vec![false; rows];
            for node in 0..bound {
                let at = node as usize;
                let run = o[at] as usize..o[at + 1] as usize;
                for i in run.clone() {
                    let row = p[i] as usize;
                    let ok_row = row < rows && !std::mem::replace(&mut seen[row], true);
                    let (own, other) = if own_is_source {
                        (sources.get(row), targets.get(row))
                    } else {
                        (targets.get(row), sources.get(row))
                    };
                    if !ok_row
                        || own != Some(&node)
                        || other != Some(&n[i])
                        || etypes.get(row) != Some(&t[i])
                    {
                        return Err(self.err_at(
                            nbrs,
                            format!("{nbrs:?} entry {i} disagrees with the edge columns"),
                        ));
                    }
                    if i > run.start && (t[i - 1], n[i - 1]) > (t[i], n[i]) {
                        return Err(self.err_at(
                            nbrs,
                            format!(
                                "{nbrs:?} run of node {node} is not sorted by (type, neighbour)"
                            ),
                        ));
                    }
                }
            }
        }
        let node_ids = self.u32s(bytes, K::NodeIds);
        if node_ids.windows(2).any(|w| w[0] >= w[1]) || node_ids.last().is_some_and(|&x| x >= bound)
        {
            return Err(self.err_at(
                K::NodeIds,
                "node ids are not increasing below node_bound".into(),
            ));
        }
        let offs = self.u64s(bytes, K::NodeOffsets);
        let blob = self.bytes(bytes, K::NodeBlob);
        let mut keys: Vec<&[u8]> = Vec::with_capacity(node_ids.len());
        for (i, id) in node_ids.iter().enumerate() {
            // parse() checked the offsets are monotone and end at the blob length.
            let rec = usize::try_from(offs[i])
                .ok()
                .zip(usize::try_from(offs[i + 1]).ok())
                .and_then(|(a, z)| blob.get(a..z))
                .ok_or_else(|| {
                    self.err_at(K::NodeOffsets, format!("node record {i} is out of bounds"))
                })?;
            let mut rd = ByteReader::new(rec);
            super::record::decode_node(&mut rd, crate::graph::NodeId(*id))
                .map_err(|e| self.err_at(K::NodeBlob, format!("node record {i}: {}", e.what)))?;
            let mut kr = ByteReader::new(rec);
            keys.push(
                kr.bytes(limits::NODE_KEY_BYTES_MAX, "key")
                    .map_err(|e| self.err_at(K::NodeBlob, e.what))?,
            );
        }
        let order = self.u32s(bytes, K::KeyOrder);
        let mut seen = vec![false; order.len()];
        for (j, &k) in order.iter().enumerate() {
            let k = k as usize;
            if k >= keys.len() || std::mem::replace(&mut seen[k], true) {
                return Err(self.err_at(K::KeyOrder, "key order is not a permutation".into()));
            }
            if j > 0 && keys[order[j - 1] as usize] >= keys[k] {
                return Err(self.err_at(K::KeyOrder, "keys are not strictly increasing".into()));
            }
        }
        self.node_tombstones(bytes)?;
        self.edge_tombstones(bytes)?;
        for (_, t, _) in self.type_bitmaps(bytes)? {
            if t as usize >= ntypes {
                return Err(self.err_at(K::TypeBitmaps, format!("bitmap for unknown type {t}")));
            }
        }
        if self.entry(K::EdgePropsOffsets).is_some() {
            let offs = self.u64s(bytes, K::EdgePropsOffsets);
            let blob = self.bytes(bytes, K::EdgePropsBlob);
            for r in 0..rows {
                let bytes = usize::try_from(offs[r])
                    .ok()
                    .zip(usize::try_from(offs[r + 1]).ok())
                    .and_then(|(a, z)| blob.get(a..z))
                    .ok_or_else(|| {
                        self.err_at(
                            K::EdgePropsOffsets,
                            format!("edge row {r} props are out of bounds"),
                        )
                    })?;
                let text = std::str::from_utf8(bytes).map_err(|_| {
                    self.err_at(
                        K::EdgePropsBlob,
                        format!("edge row {r} props are not UTF-8"),
                    )
                })?;
                super::record::decode_edge_props(text).map_err(|e| {
                    self.err_at(K::EdgePropsBlob, format!("edge row {r}: {}", e.what))
                })?;
            }
        }
        Ok(())
    }
}
