//! Building segment files: the shared back end of checkpoint, compaction and bulk load.
//!
//! Callers gather a [`SegmentContent`] (edge rows, node records, tombstones and the
//! cumulative summary); [`write_segment`] sorts the rows into both CSR directions with a
//! counting sort by owner node, orders each run by (type, neighbour, edge id), derives the
//! per-(direction, type) node bitmaps and writes every section.

use std::path::Path;

use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{Error, Result};
use crate::format::codec::ByteWriter;
use crate::format::record::encode_node;
use crate::format::segment::{
    SectionKind as K, Summary, build_key_hash, encode_bitmap, encode_treemap, encode_type_bitmaps,
};
use crate::graph::limits;
use crate::model::{Edge, Node};
use crate::storage::segment_file;

/// Edge rows of a segment, sorted by id.
#[derive(Debug, Default)]
pub(crate) struct EdgeRows {
    pub ids: Vec<u64>,
    pub sources: Vec<u32>,
    pub targets: Vec<u32>,
    pub types: Vec<u16>,
    pub weights: Vec<f32>,
    pub created: Vec<u64>,
    /// Compact JSON per row, empty for none.
    pub props: Vec<String>,
}

impl EdgeRows {
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    #[allow(clippy::too_many_arguments, reason = "one argument per column")]
    pub fn push(
        &mut self,
        id: u64,
        source: u32,
        target: u32,
        t: u16,
        weight: f32,
        created: u64,
        props: String,
    ) {
        self.ids.push(id);
        self.sources.push(source);
        self.targets.push(target);
        self.types.push(t);
        self.weights.push(weight);
        self.created.push(created);
        self.props.push(props);
    }

    /// Appends a stored edge.
    pub fn push_edge(&mut self, e: &Edge) {
        let props = crate::format::record::encode_edge_props(&e.props);
        self.push(
            e.id.0,
            e.source.0,
            e.target.0,
            e.edge_type.0,
            e.weight,
            e.created_at,
            props,
        );
    }

    /// Sorts rows by edge id (a no-op when already sorted).
    pub fn sort_by_id(&mut self) {
        if self.ids.windows(2).all(|w| w[0] < w[1]) {
            return;
        }
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_unstable_by_key(|&i| self.ids[i]);
        fn permute<T: Clone>(v: &mut Vec<T>, order: &[usize]) {
            *v = order.iter().map(|&i| v[i].clone()).collect();
        }
        permute(&mut self.ids, &order);
        permute(&mut self.sources, &order);
        permute(&mut self.targets, &order);
        permute(&mut self.types, &order);
        permute(&mut self.weights, &order);
        permute(&mut self.created, &order);
        permute(&mut self.props, &order);
    }
}

/// Everything one segment holds.
#[derive(Debug, Default)]
pub(crate) struct SegmentContent {
    pub edges: EdgeRows,
    /// Encoded node records (see `encode_node`), sorted by id, with their keys.
    pub nodes: Vec<(u32, Vec<u8>)>,
    pub edge_tombstones: RoaringTreemap,
    pub node_tombstones: RoaringBitmap,
    /// Cumulative summary; `edge_rows`, `node_records`, `dense_edge_base` and
    /// `uniform_created_at` are filled in by `write_segment`.
    pub summary: Summary,
}

impl SegmentContent {
    /// Adds a node record.
    pub fn push_node(&mut self, node: &Node) {
        let mut w = ByteWriter::new();
        encode_node(&mut w, node);
        self.nodes.push((node.id.0, w.buf));
    }
}

/// A CSR of one direction.
struct Csr {
    offsets: Vec<u32>,
    neighbors: Vec<u32>,
    types: Vec<u16>,
    pos: Vec<u32>,
}

fn build_csr(node_bound: u32, own: &[u32], other: &[u32], rows: &EdgeRows) -> Result<Csr> {
    let n = node_bound as usize;
    let mut offsets = vec![0u32; n + 1];
    for &o in own {
        offsets[o as usize + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut cursor = offsets.clone();
    let mut pos = vec![0u32; own.len()];
    for (row, &o) in own.iter().enumerate() {
        let c = &mut cursor[o as usize];
        pos[*c as usize] =
            u32::try_from(row).map_err(|_| Error::invalid("segment edge limit exceeded"))?;
        *c += 1;
    }
    for i in 0..n {
        let run = &mut pos[offsets[i] as usize..offsets[i + 1] as usize];
        if run.len() > 1 {
            run.sort_unstable_by_key(|&r| {
                (
                    rows.types[r as usize],
                    other[r as usize],
                    rows.ids[r as usize],
                )
            });
        }
    }
    let neighbors = pos.iter().map(|&r| other[r as usize]).collect();
    let types = pos.iter().map(|&r| rows.types[r as usize]).collect();
    Ok(Csr {
        offsets,
        neighbors,
        types,
        pos,
    })
}

fn type_bitmaps(dir: u8, csr: &Csr, ntypes: usize) -> Vec<(u8, u16, RoaringBitmap)> {
    let mut bms = vec![RoaringBitmap::new(); ntypes];
    for (node, w) in (0u32..).zip(csr.offsets.windows(2)) {
        let run = w[0] as usize..w[1] as usize;
        let mut last = None;
        for &t in &csr.types[run] {
            if last != Some(t) {
                if let Some(b) = bms.get_mut(t as usize) {
                    // Node ids ascend, so this appends.
                    b.insert(node);
                }
                last = Some(t);
            }
        }
    }
    bms.into_iter()
        .enumerate()
        .filter(|(_, b)| !b.is_empty())
        .filter_map(|(t, b)| Some((dir, u16::try_from(t).ok()?, b)))
        .collect()
}

/// Writes `content` as segment `id` and returns the file size.
///
/// # Errors
/// `InvalidInput` when a limit is exceeded (e.g. more than `SEGMENT_EDGES_MAX` rows), I/O
/// errors otherwise.
pub(crate) fn write_segment(
    dir: &Path,
    id: u64,
    db_id: u128,
    lsn: u64,
    mut content: SegmentContent,
) -> Result<u64> {
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
    content.nodes.sort_unstable_by_key(|(id, _)| *id);
    let mut summary = content.summary.clone();
    summary.edge_rows = m as u64;
    summary.node_records = content.nodes.len() as u64;
    summary.dense_edge_base = rows
        .ids
        .first()
        .copied()
        .filter(|&b| rows.ids.iter().enumerate().all(|(i, &x)| x == b + i as u64));
    if m == 0 {
        summary.dense_edge_base = Some(0);
    }
    summary.uniform_created_at = rows
        .created
        .first()
        .copied()
        .filter(|&c| rows.created.iter().all(|&x| x == c));
    if m == 0 {
        summary.uniform_created_at = Some(0);
    }
    let out = build_csr(bound, &rows.sources, &rows.targets, rows)?;
    let inn = build_csr(bound, &rows.targets, &rows.sources, rows)?;
    let ntypes = summary.types.len();
    let mut bitmaps = type_bitmaps(0, &out, ntypes);
    bitmaps.extend(type_bitmaps(1, &inn, ntypes));

    // Node records: blob, offsets, and key order.
    let mut blob = Vec::new();
    let mut offsets = Vec::with_capacity(content.nodes.len() + 1);
    let mut ids = Vec::with_capacity(content.nodes.len());
    offsets.push(0u64);
    for (nid, rec) in &content.nodes {
        ids.push(*nid);
        blob.extend_from_slice(rec);
        offsets.push(blob.len() as u64);
    }
    let key_of = |rec: &[u8]| -> Vec<u8> {
        let mut r = crate::format::codec::ByteReader::new(rec);
        r.bytes(limits::NODE_KEY_BYTES_MAX, "key")
            .map(<[u8]>::to_vec)
            .unwrap_or_default()
    };
    let keys: Vec<Vec<u8>> = content.nodes.iter().map(|(_, rec)| key_of(rec)).collect();
    let records = u32::try_from(content.nodes.len())
        .map_err(|_| Error::invalid("too many node records for one segment"))?;
    let mut order: Vec<u32> = (0..records).collect();
    order.sort_unstable_by(|&a, &b| keys[a as usize].cmp(&keys[b as usize]));

    let has_props = rows.props.iter().any(|p| !p.is_empty());
    let weights_default = rows.weights.iter().all(|&w| w == 1.0);
    segment_file::write_segment(dir, id, db_id, lsn, |enc| {
        enc.section(K::Summary, &summary.encode())?;
        enc.array(K::OutOffsets, &out.offsets)?;
        enc.array(K::OutNeighbors, &out.neighbors)?;
        enc.array(K::OutTypes, &out.types)?;
        enc.array(K::OutEdgePos, &out.pos)?;
        enc.array(K::InOffsets, &inn.offsets)?;
        enc.array(K::InNeighbors, &inn.neighbors)?;
        enc.array(K::InTypes, &inn.types)?;
        enc.array(K::InEdgePos, &inn.pos)?;
        if summary.dense_edge_base.is_none() {
            enc.array(K::EdgeIds, &rows.ids)?;
        }
        // Format version 2: each row's out-CSR entry replaces copies of its source, target
        // and type.
        let mut out_pos = vec![0u32; m];
        for (p, &row) in (0u32..).zip(&out.pos) {
            out_pos[row as usize] = p;
        }
        enc.array(K::EdgeOutPos, &out_pos)?;
        if !weights_default {
            enc.array(K::EdgeWeights, &rows.weights)?;
        }
        if summary.uniform_created_at.is_none() {
            enc.array(K::EdgeCreated, &rows.created)?;
        }
        if has_props {
            let mut offs = Vec::with_capacity(m + 1);
            let mut pblob = Vec::new();
            offs.push(0u64);
            for p in &rows.props {
                pblob.extend_from_slice(p.as_bytes());
                offs.push(pblob.len() as u64);
            }
            enc.array(K::EdgePropsOffsets, &offs)?;
            enc.section(K::EdgePropsBlob, &pblob)?;
        }
        enc.section(K::TypeBitmaps, &encode_type_bitmaps(&bitmaps))?;
        enc.section(K::EdgeTombstones, &encode_treemap(&content.edge_tombstones))?;
        enc.section(K::NodeTombstones, &encode_bitmap(&content.node_tombstones))?;
        enc.array(K::NodeIds, &ids)?;
        enc.array(K::NodeOffsets, &offsets)?;
        enc.section(K::NodeBlob, &blob)?;
        enc.array(K::KeyOrder, &order)?;
        enc.array(K::KeyHash, &build_key_hash(keys.iter().map(Vec::as_slice)))?;
        Ok(())
    })
}
