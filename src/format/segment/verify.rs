//! Full content verification of a segment (`verify()`, `hopgraph check`): O(file size).

use super::{HEADER_LEN, RELEASE_WINDOW, Release, SectionKind, SegmentLayout, decode_type_bitmaps};
use crate::format::codec::{ByteReader, DecodeError};
use crate::graph::limits;

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

    /// Decodes the `TimedNodes` section (empty when absent: an older segment).
    pub fn timed_nodes(&self, bytes: &[u8]) -> Result<roaring::RoaringBitmap, DecodeError> {
        let e = self.bytes(bytes, SectionKind::TimedNodes);
        if e.is_empty() {
            return Ok(roaring::RoaringBitmap::new());
        }
        roaring::RoaringBitmap::deserialize_from(e)
            .map_err(|err| self.err_at(SectionKind::TimedNodes, format!("timed nodes: {err}")))
    }

    /// Decodes the `TimedEdges` section (empty when absent: an older segment).
    pub fn timed_edges(&self, bytes: &[u8]) -> Result<roaring::RoaringTreemap, DecodeError> {
        let e = self.bytes(bytes, SectionKind::TimedEdges);
        if e.is_empty() {
            return Ok(roaring::RoaringTreemap::new());
        }
        roaring::RoaringTreemap::deserialize_from(e)
            .map_err(|err| self.err_at(SectionKind::TimedEdges, format!("timed edges: {err}")))
    }

    /// The greatest start of validity of the records and of the rows (with `EdgeValidity`)
    /// here; `u64::MAX` for each when unknown (a segment written before version 9, whose
    /// elements start at their creation, a time not summarised).
    pub fn time_bounds(&self, bytes: &[u8]) -> [u64; 2] {
        match self.u64s(bytes, SectionKind::TimeBounds) {
            [nodes, edges] => [*nodes, *edges],
            _ => [u64::MAX; 2],
        }
    }

    /// The `EdgeValidity` entries: (edge id, valid_from, valid_to code), by id.
    pub fn edge_validity<'a>(&self, bytes: &'a [u8]) -> &'a [[u64; 3]] {
        bytemuck::try_cast_slice(self.bytes(bytes, SectionKind::EdgeValidity)).unwrap_or(&[])
    }

    /// Checks the validity sections of a version 9 segment against its records and rows:
    /// every interval ends after it starts, `EdgeValidity` is sorted by id, every element
    /// with an interval other than [created, never) is in its timed set, and no start is
    /// past the bounds. `records` yields each record's (node id, created_at, valid_from,
    /// valid_to), `created(row)` each row's creation time.
    pub(super) fn verify_time(
        &self,
        bytes: &[u8],
        records: &[(u32, u64, u64, Option<u64>)],
        row_ids: impl Fn(usize) -> u64,
        created: impl Fn(usize) -> u64,
        rows: usize,
    ) -> Result<(), DecodeError> {
        use SectionKind as K;
        if self.version < crate::format::VALIDITY_VERSION {
            return Ok(());
        }
        let timed_nodes = self.timed_nodes(bytes)?;
        let timed_edges = self.timed_edges(bytes)?;
        let [node_max, edge_max] = self.time_bounds(bytes);
        for &(id, created_at, from, to) in records {
            if from > node_max {
                return Err(self.err_at(K::TimeBounds, format!("node {id} starts after the bound")));
            }
            if (from != created_at || to.is_some()) && !timed_nodes.contains(id) {
                return Err(self.err_at(
                    K::TimedNodes,
                    format!("node {id} has an interval but is not timed"),
                ));
            }
        }
        let froms = self.u64s(bytes, K::EdgeValidFrom);
        let tos = self.u64s(bytes, K::EdgeValidTo);
        for row in 0..rows {
            let c = created(row);
            let from = froms.get(row).copied().unwrap_or(c);
            let to = tos
                .get(row)
                .copied()
                .unwrap_or(crate::format::record::VALID_TO_NONE);
            if to <= from {
                return Err(self.err_at(
                    K::EdgeValidTo,
                    format!("edge row {row} ends before it starts"),
                ));
            }
            if from > edge_max {
                return Err(self.err_at(
                    K::TimeBounds,
                    format!("edge row {row} starts after the bound"),
                ));
            }
            if (from != c || to != crate::format::record::VALID_TO_NONE)
                && !timed_edges.contains(row_ids(row))
            {
                return Err(self.err_at(
                    K::TimedEdges,
                    format!("edge row {row} has an interval but is not timed"),
                ));
            }
        }
        let mut last = None;
        for &[id, from, to] in self.edge_validity(bytes) {
            if last.is_some_and(|l| l >= id) {
                return Err(
                    self.err_at(K::EdgeValidity, "entries are not sorted by edge id".into())
                );
            }
            last = Some(id);
            if to <= from || from > edge_max || !timed_edges.contains(id) {
                return Err(self.err_at(
                    K::EdgeValidity,
                    format!("entry of edge {id} is inconsistent"),
                ));
            }
        }
        Ok(())
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

    /// Every row's source, target and type as a version-1 segment stores them.
    fn edge_columns<'a>(&self, bytes: &'a [u8]) -> (&'a [u32], &'a [u32], &'a [u16]) {
        use SectionKind as K;
        (
            self.u32s(bytes, K::EdgeSources),
            self.u32s(bytes, K::EdgeTargets),
            self.u16s(bytes, K::EdgeTypes),
        )
    }

    /// Deep content checks: every id in bounds, CSR runs sorted, both CSRs consistent with
    /// the edge columns (each row appears exactly once per direction), node records decode
    /// and the key order is sorted. Cost: O(file size).
    pub fn verify_contents(&self, bytes: &[u8]) -> Result<(), DecodeError> {
        self.verify_contents_releasing(bytes, &|_| {})
    }

    /// [`SegmentLayout::verify_contents`], telling `release` of the parts of the CSR
    /// sections (O(edges)) read, at most [`RELEASE_WINDOW`] bytes of each apart.
    pub fn verify_contents_releasing(
        &self,
        bytes: &[u8],
        release: Release<'_>,
    ) -> Result<(), DecodeError> {
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
        let rows = usize::try_from(s.edge_rows).unwrap_or(usize::MAX);
        // Version 2 on (no stored row columns): both CSRs in one sequential pass each.
        let v1_columns = if self.has_out_pos() {
            None
        } else {
            Some(self.edge_columns(bytes))
        };
        if let Some((sources, targets, etypes)) = v1_columns {
            for r in 0..rows {
                let (Some(&src), Some(&dst), Some(&ty)) =
                    (sources.get(r), targets.get(r), etypes.get(r))
                else {
                    return Err(self.err_at(K::EdgeSources, format!("edge row {r} is missing")));
                };
                if src >= bound || dst >= bound || ty as usize >= ntypes {
                    return Err(self.err_at(
                        K::EdgeSources,
                        format!("edge row {r} has an id out of range"),
                    ));
                }
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
        // The in-direction and then the text index are checked on a second thread while
        // this one checks the out-direction and the node records (the checksums, text
        // included, were checked before).
        // One direction's check; version 1 compares entries with the stored columns (and
        // has no fingerprint to compare: 0 on both sides).
        let check_dir = |own_is_source: bool| match v1_columns {
            Some((sources, targets, etypes)) => {
                let cols = EdgeColumns {
                    sources,
                    targets,
                    etypes,
                };
                self.check_csr(bytes, &cols, own_is_source, bound)
                    .map(|()| 0)
            }
            None => self.scan_csr(bytes, own_is_source, rows, bound, ntypes, release),
        };
        let (in_check, rest) = std::thread::scope(|scope| {
            let inn = scope.spawn(|| (check_dir(false), self.verify_text(bytes)));
            let rest = check_dir(true).and_then(|fp| {
                self.verify_nodes_and_rest(bytes, rows, bound, ntypes)
                    .map(|()| fp)
            });
            (inn.join(), rest)
        });
        // A panic in the checker would be a bug; report it as corruption rather than unwind.
        let (in_fp, text) = in_check.unwrap_or_else(|_| {
            let failed = self.err_at(K::InNeighbors, "in-CSR check failed".into());
            (Err(failed), Ok(()))
        });
        let in_fp = in_fp?;
        let out_fp = rest?;
        if in_fp != out_fp {
            return Err(self.err_at(
                K::InNeighbors,
                "the in-CSR does not hold the same edges as the out-CSR".into(),
            ));
        }
        text?;
        self.verify_vectors(bytes)
    }

    /// Checks one CSR direction of a version-2 segment in a single sequential pass: every
    /// neighbor and type in range, runs sorted by (type, neighbor), every row named
    /// exactly once (a bitmap, 1 bit per row), and for the out-direction `EdgeOutPos` the
    /// inverse of `OutEdgePos` (equal fingerprints of their (entry, row) pairs). Returns a
    /// fingerprint of the direction's edge set: the wrapping sum of a 64-bit mix of (row,
    /// source, target, type) over its entries. The two directions hold the same edges
    /// exactly when (beyond a 2^-64 chance for a change that is not crafted to collide)
    /// their fingerprints agree; that replaces a comparison of every entry with the row's
    /// columns, which costs a cache miss per entry.
    fn scan_csr(
        &self,
        bytes: &[u8],
        own_is_source: bool,
        rows: usize,
        bound: u32,
        ntypes: usize,
        release: Release<'_>,
    ) -> Result<u64, DecodeError> {
        use SectionKind as K;
        let (offs, nbrs, types, pos) = if own_is_source {
            (K::OutOffsets, K::OutNeighbors, K::OutTypes, K::OutEdgePos)
        } else {
            (K::InOffsets, K::InNeighbors, K::InTypes, K::InEdgePos)
        };
        let o = self.u32s(bytes, offs);
        let (n, t, p) = (
            self.u32s(bytes, nbrs),
            self.u16s(bytes, types),
            self.u32s(bytes, pos),
        );
        let out_pos = own_is_source.then(|| self.u32s(bytes, K::EdgeOutPos));
        let bad = |what: String| self.err_at(nbrs, what);
        let mut seen = vec![0u64; rows.div_ceil(64)];
        let mut fingerprint = 0u64;
        // The wrapping sum of a mix of (entry, row) over OutEdgePos; EdgeOutPos must give
        // the same sum over (its entry, row), see below.
        let mut pos_fingerprint = 0u64;
        let mut entries = 0usize;
        // The nodes and entries up to which the arrays were released.
        let mut released = (0usize, 0usize);
        let release_upto = |released: &mut (usize, usize), nodes: usize, entries: usize| {
            let (a, b) = *released;
            release(bytemuck::cast_slice(o.get(a..nodes).unwrap_or(&[])));
            release(bytemuck::cast_slice(n.get(b..entries).unwrap_or(&[])));
            release(bytemuck::cast_slice(t.get(b..entries).unwrap_or(&[])));
            release(bytemuck::cast_slice(p.get(b..entries).unwrap_or(&[])));
            *released = (nodes, entries);
        };
        for node in 0..bound {
            let at = node as usize;
            let (Some(&start), Some(&end)) = (o.get(at), o.get(at + 1)) else {
                return Err(bad(format!("{offs:?} has no entry for node {node}")));
            };
            let run = start as usize..end as usize;
            let (Some(rn), Some(rt), Some(rp)) =
                (n.get(run.clone()), t.get(run.clone()), p.get(run.clone()))
            else {
                return Err(bad(format!("{nbrs:?} run of node {node} is out of range")));
            };
            let mut last: Option<(u16, u32)> = None;
            for (k, ((&nb, &ty), &row)) in rn.iter().zip(rt).zip(rp).enumerate() {
                let i = run.start + k;
                let row = row as usize;
                if nb >= bound || ty as usize >= ntypes || row >= rows {
                    return Err(bad(format!("{nbrs:?} entry {i} has an id out of range")));
                }
                let (word, bit) = (row / 64, 1u64 << (row % 64));
                if seen[word] & bit != 0 {
                    return Err(bad(format!("{nbrs:?} entry {i} names row {row} again")));
                }
                seen[word] |= bit;
                if out_pos.is_some() {
                    pos_fingerprint = pos_fingerprint.wrapping_add(pos_mix(i, row));
                }
                if last.is_some_and(|l| l > (ty, nb)) {
                    return Err(bad(format!(
                        "{nbrs:?} run of node {node} is not sorted by (type, neighbor)"
                    )));
                }
                last = Some((ty, nb));
                let (src, dst) = if own_is_source {
                    (node, nb)
                } else {
                    (nb, node)
                };
                fingerprint = fingerprint.wrapping_add(edge_mix(row, src, dst, ty));
            }
            entries += run.len();
            if run.end - released.1 >= RELEASE_WINDOW / 4 {
                release_upto(&mut released, at + 1, run.end);
            }
        }
        release_upto(&mut released, o.len(), n.len().max(t.len()).max(p.len()));
        if entries != rows {
            return Err(bad(format!(
                "{nbrs:?} holds {entries} entries for {rows} edge rows"
            )));
        }
        // OutEdgePos names every row once (the bitmap above), so it is a permutation, and
        // EdgeOutPos is its inverse exactly when it holds the same (entry, row) pairs: the
        // same fingerprint, summed here in one sequential pass instead of a random read of
        // EdgeOutPos per entry (a cache miss each).
        if let Some(out_pos) = out_pos {
            let mut inverse = 0u64;
            const WINDOW: usize = RELEASE_WINDOW / 4;
            for (c, part) in out_pos.chunks(WINDOW).enumerate() {
                for (k, &e) in part.iter().enumerate() {
                    let row = c * WINDOW + k;
                    if e as usize >= rows {
                        return Err(self.err_at(
                            K::EdgeOutPos,
                            format!("row {row} names out-CSR entry {e} of {rows}"),
                        ));
                    }
                    inverse = inverse.wrapping_add(pos_mix(e as usize, row));
                }
                release(bytemuck::cast_slice(part));
            }
            if out_pos.len() != rows || inverse != pos_fingerprint {
                return Err(self.err_at(
                    K::EdgeOutPos,
                    "EdgeOutPos is not the inverse of OutEdgePos".into(),
                ));
            }
        }
        Ok(fingerprint)
    }

    /// Checks one CSR direction against the row columns: every row exactly once, owner,
    /// neighbor and type equal to the row's, runs sorted by (type, neighbor). For the
    /// out-direction of a version-2 segment the columns were derived from it, so only the
    /// order is checked.
    fn check_csr(
        &self,
        bytes: &[u8],
        cols: &EdgeColumns<'_>,
        own_is_source: bool,
        bound: u32,
    ) -> Result<(), DecodeError> {
        use SectionKind as K;
        let (offs, nbrs, types, pos) = if own_is_source {
            (K::OutOffsets, K::OutNeighbors, K::OutTypes, K::OutEdgePos)
        } else {
            (K::InOffsets, K::InNeighbors, K::InTypes, K::InEdgePos)
        };
        let cross_check = !(own_is_source && self.has_out_pos());
        let (sources, targets, etypes) = (cols.sources, cols.targets, cols.etypes);
        let rows = sources.len();
        let o = self.u32s(bytes, offs);
        let n = self.u32s(bytes, nbrs);
        let t = self.u16s(bytes, types);
        let p = self.u32s(bytes, pos);
        let mut seen = vec![false; if cross_check { rows } else { 0 }];
        for node in 0..bound {
            let at = node as usize;
            let run = o[at] as usize..o[at + 1] as usize;
            for i in run.clone() {
                if cross_check {
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
                }
                if i > run.start && (t[i - 1], n[i - 1]) > (t[i], n[i]) {
                    return Err(self.err_at(
                        nbrs,
                        format!("{nbrs:?} run of node {node} is not sorted by (type, neighbor)"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The checks after the CSRs: node ids, records and key index, tombstones, bitmaps and
    /// edge props.
    fn verify_nodes_and_rest(
        &self,
        bytes: &[u8],
        rows: usize,
        bound: u32,
        ntypes: usize,
    ) -> Result<(), DecodeError> {
        use SectionKind as K;
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
        // Records of version 8 on keep their embeddings in the vector rows (whose shapes
        // `vector_sections` checks).
        let embedding_rows = match self.vector_meta(bytes)? {
            Some(meta) if self.version >= crate::format::EMBEDDING_ROWS_VERSION => {
                Some(crate::format::record::EmbeddingRows {
                    sections: self.vector_sections(bytes, &meta)?,
                    dim: meta.dim as usize,
                })
            }
            _ => None,
        };
        let validity = self.record_validity();
        let mut intervals = Vec::new();
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
            let node = crate::format::record::decode_node(
                &mut rd,
                crate::graph::NodeId(*id),
                embedding_rows.as_ref(),
                validity,
            )
            .map_err(|e| self.err_at(K::NodeBlob, format!("node record {i}: {}", e.what)))?;
            if !rd.is_empty() {
                return Err(self.err_at(K::NodeBlob, format!("node record {i} has trailing bytes")));
            }
            intervals.push((*id, node.created_at, node.valid_from, node.valid_to));
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
        if self.entry(K::KeyHash).is_some() {
            // Same records, same slots: the index must be exactly what the writer builds.
            let same = if self.version >= crate::format::KEY_SLOTS_VERSION {
                let want = super::build_key_slots(
                    keys.iter()
                        .zip(node_ids)
                        .zip(offs)
                        .map(|((k, id), off)| (*k, *id, *off)),
                );
                want.as_deref() == Some(self.bytes(bytes, K::KeyHash))
            } else {
                let want = super::build_key_hash(self.version, keys.iter().copied());
                self.u32s(bytes, K::KeyHash) == &want[..]
            };
            if !same {
                return Err(
                    self.err_at(K::KeyHash, "key hash index does not match the keys".into())
                );
            }
        }
        let dense = self.summary.dense_edge_base;
        let ids = self.u64s(bytes, K::EdgeIds);
        let created = self.u64s(bytes, K::EdgeCreated);
        let uniform = self.summary.uniform_created_at;
        self.verify_time(
            bytes,
            &intervals,
            |row| match dense {
                Some(base) => base.saturating_add(row as u64),
                None => ids.get(row).copied().unwrap_or(u64::MAX),
            },
            |row| uniform.unwrap_or_else(|| created.get(row).copied().unwrap_or(0)),
            rows,
        )?;
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
                crate::format::record::decode_edge_props(text).map_err(|e| {
                    self.err_at(K::EdgePropsBlob, format!("edge row {r}: {}", e.what))
                })?;
            }
        }
        Ok(())
    }
}

/// A 64-bit mix of one edge entry (SplitMix64's finalizer over both halves), summed into a
/// CSR direction's fingerprint by [`SegmentLayout::scan_csr`].
fn edge_mix(row: usize, src: u32, dst: u32, ty: u16) -> u64 {
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let a = ((row as u64) << 16) ^ u64::from(ty);
    let b = (u64::from(src) << 32) | u64::from(dst);
    mix(a.wrapping_add(mix(b.wrapping_add(0x9e37_79b9_7f4a_7c15))))
}

/// A 64-bit mix of one (CSR entry, edge row) pair, summed by [`SegmentLayout::scan_csr`] to
/// compare `OutEdgePos` with its inverse `EdgeOutPos`.
fn pos_mix(entry: usize, row: usize) -> u64 {
    edge_mix(row, 0, u32::try_from(entry).unwrap_or(u32::MAX), u16::MAX)
}

/// Each row's source, target and type as stored by a version-1 segment.
struct EdgeColumns<'a> {
    sources: &'a [u32],
    targets: &'a [u32],
    etypes: &'a [u16],
}
