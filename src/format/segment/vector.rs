//! The optional vector sections of a segment: the embeddings of its node records (the only
//! copy from version 8: a record keeps a marker, see `record::EMBEDDING_IN_ROW`) with
//! their inverse norms, and, for large segments, their HNSW graph as per-layer CSR arrays.
//!
//! ```text
//! VectorMeta (section 40, 24 + 4·levels bytes)
//!   0  dim              u32   the store's embedding dimension as of the segment's LSN (0: none yet)
//!   4  count            u32   vectors here (rows of VectorIds and VectorData)
//!   8  m                u32   HNSW links per row above layer 0 (0 without a graph)
//!  12  ef_construction  u32   HNSW build breadth (0 without a graph)
//!  16  entry            u32   HNSW entry row, a member of the top layer (0 without a graph)
//!  20  levels           u32   HNSW layers (0: no graph, queries scan VectorData)
//!  24  layer_sizes      u32[levels]  rows per layer, layer 0 first (= count), non-increasing
//! VectorIds     (41)  u32[count]               node ids, increasing, each with a record here
//! VectorData    (42)  f32[count * dim]         row i: node VectorIds[i]'s embedding as written
//!                                              (before version 8: divided by its L2 norm)
//! HnswOffsets   (43)  u32[Σ (layer_sizes[l] + 1)]  per layer, each row's first link (absolute)
//! HnswNeighbors (44)  u32[HnswOffsets.last]    links: rows (indices into VectorIds)
//! HnswMembers   (45)  u32[Σ layer_sizes[1..]]  per layer above 0, its rows, increasing
//! VectorScales  (46)  f32[count]               row i's inverse norm (`vector::row_scale`: 0
//!                                              for a row without direction); version 8 on
//! ```
//! Layer 0 is indexed by row; layer `l > 0` by position in its member list. Every segment
//! this build writes has `VectorMeta` (with `dim` 0 and `count` 0 before the store has a
//! dimension), so the newest segment names the dimension after a reopen, and a segment
//! without it was written before vector sections existed. The three HNSW sections are
//! present exactly when `levels > 0`; `VectorScales` exactly when the version is 8 or later
//! and `dim > 0`. Cosine similarity of a query unit vector `q` to row i is
//! `dot(q, row i) · VectorScales[i]` (before version 8, the rows are unit vectors and the
//! factor is 1).
//!
//! [`SegmentLayout::vector_sections`] validates shapes at open (O(rows)): lengths, the
//! offsets monotone from 0 to the link count. [`SegmentLayout::verify_vectors`] (run by
//! `verify`) checks contents: ids, finite rows, unit rows or scales that agree with the
//! rows' norms, member lists, link bounds.

use super::{SectionKind as K, SegmentLayout};
use crate::format::codec::{ByteReader, ByteWriter, DecodeError};
use crate::graph::limits;

/// At most this many HNSW layers.
pub const VECTOR_LEVELS_MAX: usize = 16;

/// The decoded `VectorMeta` section.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct VectorMeta {
    /// The store's embedding dimension (0: the store had none yet).
    pub dim: u32,
    /// Vectors in this segment.
    pub count: u32,
    /// HNSW links per row above layer 0.
    pub m: u32,
    /// HNSW build breadth.
    pub ef_construction: u32,
    /// HNSW entry row.
    pub entry: u32,
    /// Rows per HNSW layer, layer 0 first; empty without a graph.
    pub layer_sizes: Vec<u32>,
}

impl VectorMeta {
    /// Encodes the section.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = ByteWriter::new();
        for v in [
            self.dim,
            self.count,
            self.m,
            self.ef_construction,
            self.entry,
        ] {
            w.u32(v);
        }
        w.u32(u32::try_from(self.layer_sizes.len()).unwrap_or(u32::MAX));
        for &s in &self.layer_sizes {
            w.u32(s);
        }
        w.buf
    }

    /// Decodes and checks the section on its own: dimension in range, layer sizes
    /// non-increasing from `count`, the entry row in range.
    ///
    /// # Errors
    /// The offset within `buf` of the first problem.
    pub fn decode(buf: &[u8]) -> Result<VectorMeta, DecodeError> {
        let mut r = ByteReader::new(buf);
        let dim = r.u32("vector dimension")?;
        if dim as usize > limits::EMBEDDING_DIMS_MAX {
            return Err(DecodeError::new(
                0,
                format!("vector dimension {dim} is out of range"),
            ));
        }
        let count = r.u32("vector count")?;
        if dim == 0 && count > 0 {
            return Err(DecodeError::new(
                4,
                format!("{count} vectors of dimension 0"),
            ));
        }
        let m = r.u32("hnsw m")?;
        let ef_construction = r.u32("hnsw ef_construction")?;
        let at = r.pos();
        let entry = r.u32("hnsw entry")?;
        let levels_at = r.pos();
        let levels = r.u32("hnsw levels")? as usize;
        if levels > VECTOR_LEVELS_MAX || levels * 4 != r.remaining() {
            return Err(DecodeError::new(
                levels_at,
                format!("{levels} hnsw layers do not fit the section"),
            ));
        }
        let mut layer_sizes = Vec::with_capacity(levels);
        for _ in 0..levels {
            layer_sizes.push(r.u32("hnsw layer size")?);
        }
        if let Some(&first) = layer_sizes.first()
            && (first != count
                || layer_sizes.windows(2).any(|w| w[0] < w[1])
                || layer_sizes.contains(&0)
                || entry >= count)
        {
            return Err(DecodeError::new(
                at,
                format!("hnsw layers {layer_sizes:?} / entry {entry} do not fit {count} vectors"),
            ));
        }
        Ok(VectorMeta {
            dim,
            count,
            m,
            ef_construction,
            entry,
            layer_sizes,
        })
    }
}

/// A segment's vector sections, borrowed from its bytes and shape-checked.
#[derive(Clone, Copy, Debug)]
pub struct VectorSections<'a> {
    /// Node id per row.
    pub ids: &'a [u32],
    /// Rows, `dim` floats each: as written when `scales` is not empty, else unit rows.
    pub data: &'a [f32],
    /// Per row, its inverse norm (version 8 on; empty before).
    pub scales: &'a [f32],
    /// HNSW per-layer link starts (empty without a graph).
    pub offsets: &'a [u32],
    /// HNSW links.
    pub neighbors: &'a [u32],
    /// HNSW members of layers above 0.
    pub members: &'a [u32],
}

/// Whether `scale` is `row`'s inverse norm as `vector::row_scale` computes it (which this
/// layer cannot call): within 0.1% of `1 / |row|`, or 0 for a row whose squared norm in
/// `f32` is zero, not finite or too small to invert, judged in `f64` with a margin at both
/// ends (where a row may round either way, either answer is accepted).
pub fn scale_fits(row: &[f32], scale: f32) -> bool {
    let sq: f64 = row.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
    // f32 squares underflow below ~1e-38 per term and the sum overflows above ~3.4e38.
    let degenerate_may = !(1e-36..=1e38).contains(&sq);
    if scale == 0.0 {
        return degenerate_may;
    }
    scale.is_finite() && scale > 0.0 && (f64::from(scale) * sq.sqrt() - 1.0).abs() < 1e-3
}

impl<'a> VectorSections<'a> {
    /// The row of node `id` (`dim` floats, as stored), `None` when it has none here. Cost:
    /// a binary search of `ids`.
    pub fn row_of(&self, id: u32, dim: usize) -> Option<&'a [f32]> {
        let i = self.ids.binary_search(&id).ok()?;
        let start = i.checked_mul(dim)?;
        self.data.get(start..start.checked_add(dim)?)
    }
}

impl SegmentLayout {
    /// The decoded `VectorMeta` section, `None` when the segment has none.
    ///
    /// # Errors
    /// A damaged section, or vector sections without it.
    pub fn vector_meta(&self, bytes: &[u8]) -> Result<Option<VectorMeta>, DecodeError> {
        let Some(e) = self.entry(K::VectorMeta) else {
            for kind in [
                K::VectorIds,
                K::VectorData,
                K::VectorScales,
                K::HnswOffsets,
                K::HnswNeighbors,
                K::HnswMembers,
            ] {
                if self.entry(kind).is_some() {
                    return Err(self.err_at(kind, format!("{kind:?} present without VectorMeta")));
                }
            }
            return Ok(None);
        };
        VectorMeta::decode(self.bytes(bytes, K::VectorMeta))
            .map(Some)
            .map_err(|x| DecodeError::new(e.range.start + x.offset, x.what))
    }

    /// The vector sections shaped as `meta` says: lengths agree and the HNSW offsets run
    /// monotonically from 0 to the link count. Cost: O(rows).
    ///
    /// # Errors
    /// The offset of the first section that does not fit.
    pub fn vector_sections<'a>(
        &self,
        bytes: &'a [u8],
        meta: &VectorMeta,
    ) -> Result<VectorSections<'a>, DecodeError> {
        let count = meta.count as usize;
        let graph = !meta.layer_sizes.is_empty();
        let members: usize = meta.layer_sizes.iter().skip(1).map(|&s| s as usize).sum();
        let offsets: usize = meta.layer_sizes.iter().map(|&s| s as usize + 1).sum();
        let s = self.vector_arrays(bytes);
        let mut expect = vec![
            (K::VectorIds, Some(count)),
            (K::VectorData, count.checked_mul(meta.dim as usize)),
        ];
        if self.version >= crate::format::EMBEDDING_ROWS_VERSION && meta.dim > 0 {
            expect.push((K::VectorScales, Some(count)));
        } else if self.entry(K::VectorScales).is_some() {
            return Err(self.err_at(
                K::VectorScales,
                format!(
                    "VectorScales present in a version {} segment of dimension {}",
                    self.version, meta.dim
                ),
            ));
        }
        for (kind, n) in [(K::HnswMembers, members), (K::HnswOffsets, offsets)] {
            if graph {
                expect.push((kind, Some(n)));
            } else if self.entry(kind).is_some() {
                return Err(self.err_at(kind, format!("{kind:?} present without an HNSW graph")));
            }
        }
        if !graph && self.entry(K::HnswNeighbors).is_some() {
            return Err(self.err_at(
                K::HnswNeighbors,
                "HnswNeighbors present without an HNSW graph".into(),
            ));
        }
        for (kind, n) in expect {
            let len = self
                .entry(kind)
                .map(|e| e.range.len() / kind.elem_size())
                .unwrap_or(0);
            if Some(len) != n {
                return Err(
                    self.err_at(kind, format!("{kind:?} has {len} elements, expected {n:?}"))
                );
            }
        }
        if graph
            && (s.offsets.first() != Some(&0)
                || s.offsets.last().map(|&x| x as usize) != Some(s.neighbors.len())
                || !super::layout::non_decreasing(s.offsets))
        {
            return Err(self.err_at(
                K::HnswOffsets,
                "HNSW offsets are not monotone from 0 to the link count".into(),
            ));
        }
        Ok(s)
    }

    /// The vector sections as typed slices (empty when absent), without the shape checks
    /// of [`SegmentLayout::vector_sections`] (which a reader runs once at open): the
    /// per-query accessor. Readers must not trust lengths or ids from it beyond that check.
    pub fn vector_arrays<'a>(&self, bytes: &'a [u8]) -> VectorSections<'a> {
        VectorSections {
            ids: self.u32s(bytes, K::VectorIds),
            data: self.f32s(bytes, K::VectorData),
            scales: self.f32s(bytes, K::VectorScales),
            offsets: self.u32s(bytes, K::HnswOffsets),
            neighbors: self.u32s(bytes, K::HnswNeighbors),
            members: self.u32s(bytes, K::HnswMembers),
        }
    }

    /// Deep checks of the vector sections (`verify`): ids increasing and each with a node
    /// record here, rows finite, each scale its row's inverse norm (version 8 on; see
    /// [`scale_fits`]) or each row of norm 1 (or 0) before, member lists increasing and nested,
    /// the entry in the top layer, every link a member of its layer. Cost: O(links · log
    /// rows + rows · dim).
    ///
    /// # Errors
    /// The offset of the first problem.
    pub fn verify_vectors(&self, bytes: &[u8]) -> Result<(), DecodeError> {
        let Some(meta) = self.vector_meta(bytes)? else {
            return Ok(());
        };
        let s = self.vector_sections(bytes, &meta)?;
        if s.ids.windows(2).any(|w| w[0] >= w[1]) {
            return Err(self.err_at(K::VectorIds, "vector ids are not increasing".into()));
        }
        let records = self.u32s(bytes, K::NodeIds);
        if let Some(id) = s.ids.iter().find(|id| records.binary_search(id).is_err()) {
            return Err(self.err_at(
                K::VectorIds,
                format!("vector of node {id}, which has no record here"),
            ));
        }
        let dim = meta.dim as usize;
        let scaled = self.version >= crate::format::EMBEDDING_ROWS_VERSION;
        for (i, row) in s.data.chunks_exact(dim.max(1)).enumerate() {
            if row.iter().any(|x| !x.is_finite()) {
                return Err(self.err_at(
                    K::VectorData,
                    format!("vector row {i} holds a value that is not finite"),
                ));
            }
            if scaled {
                if !s.scales.get(i).is_some_and(|&x| scale_fits(row, x)) {
                    return Err(self.err_at(
                        K::VectorScales,
                        format!("the scale of vector row {i} is not its inverse norm"),
                    ));
                }
                continue;
            }
            let norm: f32 = row.iter().map(|x| x * x).sum();
            if !norm.is_finite() || (norm != 0.0 && (norm - 1.0).abs() > 1e-3) {
                return Err(self.err_at(
                    K::VectorData,
                    format!("vector row {i} is not a unit vector"),
                ));
            }
        }
        let mut layer_rows: Vec<&[u32]> = Vec::new();
        let mut at = 0usize;
        for &size in meta.layer_sizes.iter().skip(1) {
            let rows = s.members.get(at..at + size as usize).unwrap_or(&[]);
            at += size as usize;
            let below = layer_rows.last().copied();
            if rows.windows(2).any(|w| w[0] >= w[1])
                || rows.iter().any(|&r| r >= meta.count)
                || below.is_some_and(|b| rows.iter().any(|r| b.binary_search(r).is_err()))
            {
                return Err(self.err_at(
                    K::HnswMembers,
                    "HNSW member lists are not increasing and nested".into(),
                ));
            }
            layer_rows.push(rows);
        }
        if let Some(top) = layer_rows.last()
            && top.binary_search(&meta.entry).is_err()
        {
            return Err(self.err_at(
                K::HnswMembers,
                "the HNSW entry is not in the top layer".into(),
            ));
        }
        let mut o = 0usize;
        for (l, &size) in meta.layer_sizes.iter().enumerate() {
            let offs = s.offsets.get(o..o + size as usize + 1).unwrap_or(&[]);
            o += size as usize + 1;
            let links = match (offs.first(), offs.last()) {
                (Some(&a), Some(&b)) => s.neighbors.get(a as usize..b as usize).unwrap_or(&[]),
                _ => &[],
            };
            let ok = |r: &u32| match l {
                0 => *r < meta.count,
                _ => layer_rows
                    .get(l - 1)
                    .is_some_and(|m| m.binary_search(r).is_ok()),
            };
            if !links.iter().all(ok) {
                return Err(self.err_at(
                    K::HnswNeighbors,
                    format!("an HNSW link of layer {l} names a row outside it"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::VectorMeta;

    #[test]
    fn meta_round_trips_and_rejects_bad_shapes() {
        let m = VectorMeta {
            dim: 3,
            count: 10,
            m: 16,
            ef_construction: 128,
            entry: 4,
            layer_sizes: vec![10, 2],
        };
        assert_eq!(VectorMeta::decode(&m.encode()).unwrap(), m);
        let plain = VectorMeta {
            dim: 3,
            ..VectorMeta::default()
        };
        assert_eq!(VectorMeta::decode(&plain.encode()).unwrap(), plain);
        let none = VectorMeta::default();
        assert_eq!(VectorMeta::decode(&none.encode()).unwrap(), none);
        for bad in [
            VectorMeta {
                dim: 0,
                ..m.clone()
            },
            VectorMeta {
                dim: 0,
                count: 1,
                ..plain.clone()
            },
            VectorMeta {
                dim: 5000,
                ..m.clone()
            },
            VectorMeta {
                layer_sizes: vec![9, 2],
                ..m.clone()
            },
            VectorMeta {
                layer_sizes: vec![10, 11],
                ..m.clone()
            },
            VectorMeta {
                layer_sizes: vec![10, 0],
                ..m.clone()
            },
            VectorMeta {
                entry: 10,
                ..m.clone()
            },
            VectorMeta {
                layer_sizes: vec![10; 17],
                ..m.clone()
            },
        ] {
            assert!(VectorMeta::decode(&bad.encode()).is_err(), "{bad:?}");
        }
        let mut bytes = m.encode();
        bytes.push(0);
        assert!(VectorMeta::decode(&bytes).is_err());
        assert!(VectorMeta::decode(&bytes[..7]).is_err());
    }
}
