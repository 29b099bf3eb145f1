//! Vector search over a state's segments and delta, and the store's embedding dimension.
//!
//! - **Dimension**: the first embedding written fixes it ([`State::embedding_dim`]); the
//!   batch resolver and the bulk load refuse an embedding of another dimension
//!   ([`check_dimension`]) and a query of another dimension is refused too. Segments record
//!   it in their `VectorMeta` section, so a reopen knows it without reading records.
//! - **Segments**: each segment's vector sections hold the embeddings of its node records
//!   as written, each with its inverse norm (so an embedding is stored once: the record
//!   keeps a marker; segments before format version 8 hold unit rows and inline copies),
//!   and from `Options::vector_graph_min` on (default [`HNSW_MIN_VECTORS`], 100,000) an
//!   HNSW graph, unless a bulk load deferred it (see
//!   `vector_index`), written by the segment builder ([`BuiltVectors`]). A row counts only
//!   from the node's newest version: it is skipped when the node is deleted, has a record
//!   in the delta or in a newer segment. A segment with fewer rows than the searching
//!   handle's bound is scanned exactly even when it has a graph (one written under a lower
//!   bound), so a store below the bound always answers exactly.
//! - **Delta**: recent writes are scanned exactly from `Delta::nodes` (the delta is bounded
//!   by automatic checkpoints), so a write is searchable once acknowledged.
//! - **Filters** are applied during the search: a row the filter rejects is traversed by
//!   HNSW but never enters the result. When the graph search returns fewer than `limit`
//!   hits, asks about more than `SELECTIVE_RATIO · max(ef, limit) · M0` rows, or the rows
//!   it asked about were accepted less than one time in [`SELECTIVE_RATIO`] (a selective
//!   filter, or many superseded rows, where best-first search loses recall), the segment
//!   is scanned exactly instead.
//! - Segments written before vector sections existed have no `VectorMeta`: their records
//!   are decoded once, on first use, into [`LegacyVectors`] (and compaction rewrites them
//!   with sections).

use std::cell::RefCell;
use std::io::Write;

use super::segment::Segment;
use super::state::State;
use crate::error::{Error, Result};
use crate::filter::NodeFilter;
use crate::format::segment::{
    SectionKind as K, SegmentEncoder, VECTOR_LEVELS_MAX, VectorMeta, VectorSections,
};
use crate::graph::{NodeId, limits};
use crate::vector::hnsw::{self, Flat, FlatView, Visited};
use crate::vector::{Scored, TopK, Vectors, dot_wide, exact, normalize, row_scale};

/// By default a segment with at least this many vectors gets an HNSW graph and is searched
/// approximately; smaller ones are scanned exactly, so that a store below it answers
/// exactly ([`Options::vector_graph_min`](super::Options::vector_graph_min) sets another
/// bound; a scan of 100,000 rows took 1.5 ms at dimension 128 and 5 ms at 384 here).
pub const HNSW_MIN_VECTORS: usize = 100_000;
/// A segment with more vectors than this gets no graph (its link offsets are `u32`).
pub const HNSW_VECTORS_MAX: usize = 1 << 26;
/// Most hits one query may ask for.
pub const VECTOR_LIMIT_MAX: usize = 10_000;
/// Largest search breadth a query may ask for.
pub const VECTOR_EF_MAX: usize = 100_000;
/// The filtered-search fallback: when fewer than one in this many rows the HNSW search
/// asked about were accepted, the segment is scanned exactly instead.
pub const SELECTIVE_RATIO: u64 = 10;

const _: () = assert!(hnsw::LEVELS_MAX == VECTOR_LEVELS_MAX);

/// A nearest-neighbour query by embedding: cosine similarity, best first.
///
/// ```
/// use hopgraph::{NodeFilter, VectorQuery};
/// let q = VectorQuery::new(vec![0.1, 0.7, 0.2])
///     .limit(5)
///     .filter(NodeFilter::any().kinds(["fact"]))
///     .ef(128);
/// assert_eq!(q.limit_value(), 5);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct VectorQuery {
    embedding: Vec<f32>,
    limit: usize,
    filter: NodeFilter,
    ef: Option<usize>,
}

impl VectorQuery {
    /// A query for the nodes whose embeddings are most similar to `embedding` (10 hits,
    /// no filter, the default search breadth).
    pub fn new(embedding: impl Into<Vec<f32>>) -> VectorQuery {
        VectorQuery {
            embedding: embedding.into(),
            limit: 10,
            filter: NodeFilter::any(),
            ef: None,
        }
    }

    /// At most `limit` hits (at most 10,000).
    #[must_use]
    pub fn limit(mut self, limit: usize) -> VectorQuery {
        self.limit = limit;
        self
    }

    /// Only nodes `filter` accepts (applied during the search, so `limit` hits come back
    /// when enough nodes match).
    #[must_use]
    pub fn filter(mut self, filter: NodeFilter) -> VectorQuery {
        self.filter = filter;
        self
    }

    /// The HNSW search breadth (default 128, at least `limit`, at
    /// most 100,000): larger finds more of the true nearest neighbours, slower.
    #[must_use]
    pub fn ef(mut self, ef: usize) -> VectorQuery {
        self.ef = Some(ef);
        self
    }

    /// The hit limit.
    pub fn limit_value(&self) -> usize {
        self.limit
    }
}

/// One hit of a vector search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VectorHit {
    /// The node.
    pub node: NodeId,
    /// Cosine similarity of its embedding to the query, in [-1, 1] (0 for a zero vector).
    pub similarity: f32,
}

/// Appends `v` scaled to unit length to `out`, or zeros when it has no direction (its
/// similarity to anything is then 0): the rows of segments written before format version 8.
fn push_unit_or_zero(v: &[f32], out: &mut Vec<f32>) {
    if crate::vector::normalize_into(v, out).is_none() {
        out.extend(std::iter::repeat_n(0.0, v.len()));
    }
}

/// A segment's rows as the kernels read them: as written with their scales from format
/// version 8 on, unit rows before.
pub(crate) fn segment_rows<'a>(a: &VectorSections<'a>, dim: usize, version: u32) -> Vectors<'a> {
    if version >= crate::format::EMBEDDING_ROWS_VERSION {
        Vectors::scaled(a.data, dim, a.scales)
    } else {
        Vectors::new(a.data, dim)
    }
}

/// Checks an embedding of `len` dimensions against the store's dimension `store`.
///
/// # Errors
/// `InvalidArgument` naming both dimensions.
pub(crate) fn check_dimension(store: Option<u32>, len: usize, what: &str) -> Result<()> {
    match store {
        Some(d) if d as usize != len => Err(Error::invalid_arg(
            "embedding",
            format!(
                "{what} has {len} dimensions, but this store's embeddings have {d} (the first \
             embedding written fixes the dimension)"
            ),
        )),
        _ => Ok(()),
    }
}

/// The embeddings of a segment written before vector sections existed, decoded from its
/// records: rows of the first dimension found (0: none).
#[derive(Debug, Default)]
pub(crate) struct LegacyVectors {
    dim: u32,
    ids: Vec<u32>,
    data: Vec<f32>,
}

fn legacy(s: &Segment) -> &LegacyVectors {
    s.legacy_vectors.get_or_init(|| {
        let mut l = LegacyVectors::default();
        for &id in s.node_ids() {
            // A record that does not decode is reported by every other read of it and by
            // `verify`; here it only contributes no vector.
            let Ok(Some(n)) = s.node(NodeId(id)) else {
                continue;
            };
            let Some(e) = &n.props.embedding else {
                continue;
            };
            if l.dim == 0 {
                l.dim = u32::try_from(e.len()).unwrap_or(0);
            }
            if e.len() == l.dim as usize {
                l.ids.push(id);
                push_unit_or_zero(e, &mut l.data);
            }
        }
        l
    })
}

thread_local! {
    /// HNSW visit stamps, reused by the queries of a thread (4 bytes per row of the largest
    /// segment searched).
    static VISITED: RefCell<Visited> = RefCell::new(Visited::default());
}

impl State {
    /// The store's embedding dimension: fixed by the first embedding written; `None` while
    /// the store has none.
    pub(crate) fn embedding_dim(&self) -> Option<u32> {
        self.embedding_dim.or_else(|| {
            self.segs
                .segments
                .iter()
                .filter(|s| s.vector_meta.is_none())
                .map(|s| legacy(s).dim)
                .find(|&d| d > 0)
        })
    }

    /// Whether the row of node `id` in segment `i` is its newest live version.
    fn newest_in(&self, i: usize, id: u32) -> bool {
        !self.segs.node_tombstones.contains(id)
            && !self.delta.deleted_nodes.contains(&id)
            && !self.delta.nodes.contains_key(&id)
            && self
                .segs
                .segments
                .get(i + 1..)
                .unwrap_or(&[])
                .iter()
                .all(|s| !s.has_node(NodeId(id)))
    }

    /// The nodes whose embeddings are most similar to the query's, best first (ties: lower
    /// node id first).
    pub(crate) fn search_vector(
        &self,
        q: &VectorQuery,
        graph_min: usize,
    ) -> Result<Vec<VectorHit>> {
        let lean;
        let q = match self.lean_filter(&q.filter) {
            Some(filter) => {
                lean = VectorQuery {
                    filter,
                    ..q.clone()
                };
                &lean
            }
            None => q,
        };
        let len = q.embedding.len();
        if len == 0 || len > limits::EMBEDDING_DIMS_MAX {
            return Err(Error::invalid_arg(
                "embedding",
                format!(
                    "query embedding must have 1..={} dimensions, got {len}",
                    limits::EMBEDDING_DIMS_MAX
                ),
            ));
        }
        if q.embedding.iter().any(|x| !x.is_finite()) {
            return Err(Error::invalid_arg(
                "embedding",
                "query embedding values must be finite numbers",
            ));
        }
        if q.limit > VECTOR_LIMIT_MAX {
            return Err(Error::invalid_arg(
                "embedding",
                format!("vector search limit {} exceeds {VECTOR_LIMIT_MAX}", q.limit),
            ));
        }
        let ef = q.ef.unwrap_or(hnsw::EF_SEARCH_DEFAULT);
        if ef > VECTOR_EF_MAX {
            return Err(Error::invalid_arg(
                "embedding",
                format!("vector search ef {ef} exceeds {VECTOR_EF_MAX}"),
            ));
        }
        let Some(dim) = self.embedding_dim() else {
            return Ok(Vec::new());
        };
        check_dimension(Some(dim), len, "the query embedding")?;
        let query = normalize(&q.embedding).ok_or_else(|| {
            Error::invalid_arg("embedding", "the query embedding has zero length (norm 0)")
        })?;
        if q.limit == 0 {
            return Ok(Vec::new());
        }
        let dim = dim as usize;
        let mut top = TopK::new(q.limit);
        let mut error = None;
        for (i, s) in self.segs.segments.iter().enumerate() {
            for hit in self.search_segment(i, s, &query, dim, q, ef, graph_min, &mut error) {
                top.offer(hit);
            }
            if let Some(e) = error {
                return Err(e);
            }
        }
        for (&id, node) in self.delta.nodes.iter() {
            let Some(e) = &node.props.embedding else {
                continue;
            };
            if e.len() != dim || !(q.filter.is_empty() || q.filter.matches(node)) {
                continue;
            }
            top.offer(Scored {
                // As a segment row scores (`Vectors::sim`).
                sim: dot_wide(e, &query) * row_scale(e),
                index: id,
            });
        }
        Ok(top
            .into_sorted()
            .into_iter()
            .map(|s| VectorHit {
                node: NodeId(s.index),
                similarity: s.sim,
            })
            .collect())
    }

    /// The best hits of segment `i` (indexed by node id), newest versions only. A record
    /// that fails to decode while filtering is stored in `error`.
    #[allow(clippy::too_many_arguments)]
    /// A segment with fewer rows than `graph_min` is scanned exactly, graph or not.
    fn search_segment(
        &self,
        i: usize,
        s: &Segment,
        query: &[f32],
        dim: usize,
        q: &VectorQuery,
        ef: usize,
        graph_min: usize,
        error: &mut Option<Error>,
    ) -> Vec<Scored> {
        let b = s.file.bytes();
        let (ids, vectors, graph) = match &s.vector_meta {
            Some(meta) => {
                let a = s.file.layout.vector_arrays(b);
                let use_graph = !meta.layer_sizes.is_empty() && meta.count as usize >= graph_min;
                let graph = use_graph.then(|| {
                    FlatView::new(
                        meta.entry,
                        &meta.layer_sizes,
                        a.members,
                        a.offsets,
                        a.neighbors,
                    )
                });
                let rows = segment_rows(&a, meta.dim as usize, s.file.layout.version);
                (a.ids, rows, graph)
            }
            None => {
                let l = legacy(s);
                (&l.ids[..], Vectors::new(&l.data, l.dim as usize), None)
            }
        };
        if vectors.dim() != dim {
            return Vec::new();
        }
        let filter = &q.filter;
        let rows = if filter.is_empty() && !self.may_supersede(i, s) {
            // Every row is its node's newest live version and no filter applies: the
            // search accepts rows without reading their ids (a random read per
            // candidate); the hits' ids are checked against the records below.
            let n = vectors.len();
            rows_of_segment(graph.as_ref(), vectors, query, q, ef, |row| {
                (row as usize) < n
            })
        } else {
            let accept = |row: u32| -> bool {
                let Some(&id) = ids.get(row as usize) else {
                    return false;
                };
                if !self.newest_in(i, id) || !s.has_node(NodeId(id)) {
                    return false;
                }
                if filter.is_empty() {
                    return true;
                }
                match s.node(NodeId(id)) {
                    Ok(Some(n)) => filter.matches(&n),
                    Ok(None) => false,
                    Err(e) => {
                        error.get_or_insert(e);
                        false
                    }
                }
            };
            rows_of_segment(graph.as_ref(), vectors, query, q, ef, accept)
        };
        // `has_node` keeps a damaged id (the section is checksummed by `verify`, not at
        // open) from naming a node this segment has no record of.
        rows.into_iter()
            .filter_map(|r| {
                let id = *ids.get(r.index as usize)?;
                s.has_node(NodeId(id)).then_some(Scored {
                    sim: r.sim,
                    index: id,
                })
            })
            .collect()
    }

    /// Whether some node with a row in segment `i` may have a newer version or be deleted:
    /// a tombstone, a delta write or a newer segment within the segment's node id range.
    /// Cost: O(delta) (the search scans the delta anyway) plus a range count per newer
    /// segment.
    fn may_supersede(&self, i: usize, s: &Segment) -> bool {
        let ids = s.node_ids();
        let (Some(&lo), Some(&hi)) = (ids.first(), ids.last()) else {
            return false;
        };
        let within = |id: u32| (lo..=hi).contains(&id);
        self.segs.node_tombstones.range_cardinality(lo..=hi) > 0
            || self.delta.deleted_nodes.iter().any(|&id| within(id))
            || self.delta.nodes.keys().any(|&id| within(id))
            || self
                .segs
                .segments
                .get(i + 1..)
                .unwrap_or(&[])
                .iter()
                .any(|later| {
                    let l = later.node_ids();
                    matches!((l.first(), l.last()), (Some(&a), Some(&b)) if a <= hi && lo <= b)
                })
    }
}

/// The best rows of one segment's vectors among those `accept` admits: by its HNSW
/// graph when it has one and the search is not too selective (see the module doc),
/// else by an exact scan.
fn rows_of_segment(
    graph: Option<&FlatView<'_>>,
    vectors: Vectors<'_>,
    query: &[f32],
    q: &VectorQuery,
    ef: usize,
    mut accept: impl FnMut(u32) -> bool,
) -> Vec<Scored> {
    if let Some(g) = graph {
        // An unfiltered search asks about roughly ef · M0 rows; a predicate accepting
        // one row in SELECTIVE_RATIO needs that many times more.
        let budget = (ef.max(q.limit) as u64)
            .saturating_mul(hnsw::M0 as u64)
            .saturating_mul(SELECTIVE_RATIO);
        let (found, stats) = VISITED.with(|v| {
            hnsw::search(
                g,
                vectors,
                query,
                q.limit,
                ef,
                &mut v.borrow_mut(),
                &mut accept,
                budget,
            )
        });
        if found.len() >= q.limit
            && !stats.exhausted
            && stats.accepted * SELECTIVE_RATIO >= stats.asked
        {
            return found;
        }
    }
    exact(vectors, query, q.limit, accept)
}

/// The vector sections of a segment being built.
#[derive(Debug, Default)]
pub(crate) struct BuiltVectors {
    meta: VectorMeta,
    ids: Vec<u32>,
    data: Vec<f32>,
    scales: Vec<f32>,
    graph: Option<Flat>,
}

/// The embeddings of a segment being built, copied into one row array as they are added
/// (so that a bulk load holds each as one row, not as its parsed vector too until the
/// segment is written), each with its scale ([`row_scale`]).
#[derive(Debug, Default)]
pub(crate) struct VectorRows {
    ids: Vec<u32>,
    /// Rows of `dim` floats as written, in `ids` order.
    data: Vec<f32>,
    /// Per row, its inverse norm.
    scales: Vec<f32>,
    /// The first row's dimension.
    dim: usize,
    /// The first row whose dimension is not `dim` (its node and dimension): refused by
    /// [`BuiltVectors::new`].
    other_dim: Option<(u32, usize)>,
    /// Whether ids were added in increasing order.
    unordered: bool,
}

impl VectorRows {
    /// Room for `rows` more rows of `dim` floats.
    pub fn reserve(&mut self, rows: usize, dim: usize) {
        self.ids.reserve(rows);
        self.scales.reserve(rows);
        self.data.reserve(rows.saturating_mul(dim));
    }

    /// Adds node `id`'s embedding `v`.
    pub fn push(&mut self, id: u32, v: &[f32]) {
        if self.ids.is_empty() {
            self.dim = v.len();
        } else if v.len() != self.dim {
            self.other_dim.get_or_insert((id, v.len()));
            return;
        }
        if self.ids.last().is_some_and(|&last| last >= id) {
            self.unordered = true;
        }
        self.ids.push(id);
        self.data.extend_from_slice(v);
        self.scales.push(row_scale(v));
    }
}

impl BuiltVectors {
    /// Sections for the node records' embeddings `rows` of segment `segment_id`, in a
    /// store of dimension `dim` (taken from the first embedding when `None`). With
    /// `graph_min`, when [`wants_graph`], builds the HNSW graph with levels seeded from the
    /// segment id.
    ///
    /// # Errors
    /// `InvalidArgument` when an embedding has another dimension.
    pub fn new(
        segment_id: u64,
        dim: Option<u32>,
        rows: VectorRows,
        graph_min: Option<usize>,
    ) -> Result<BuiltVectors> {
        let VectorRows {
            mut ids,
            mut data,
            mut scales,
            dim: row_dim,
            other_dim,
            unordered,
        } = rows;
        let dim = dim.or_else(|| {
            (!ids.is_empty())
                .then(|| u32::try_from(row_dim).ok())
                .flatten()
        });
        if let Some(&first) = ids.first() {
            check_dimension(dim, row_dim, &format!("the embedding of node {first}"))?;
        }
        if let Some((id, len)) = other_dim {
            check_dimension(dim, len, &format!("the embedding of node {id}"))?;
        }
        let d = dim.unwrap_or(0) as usize;
        if unordered {
            let mut order: Vec<usize> = (0..ids.len()).collect();
            order.sort_unstable_by_key(|&i| ids[i]);
            let mut sorted = Vec::with_capacity(data.len());
            for &i in &order {
                sorted.extend_from_slice(&data[i * d..(i + 1) * d]);
            }
            ids = order.iter().map(|&i| ids[i]).collect();
            scales = order.iter().map(|&i| scales[i]).collect();
            data = sorted;
        }
        let count = u32::try_from(ids.len())
            .map_err(|_| Error::invalid("too many vectors for one segment"))?;
        let graph = graph_min
            .is_some_and(|min| wants_graph(ids.len(), min))
            .then(|| build_graph(Vectors::scaled(&data, d, &scales), segment_id));
        let meta = graph_meta(dim.unwrap_or(0), count, graph.as_ref());
        Ok(BuiltVectors {
            meta,
            ids,
            data,
            scales,
            graph,
        })
    }

    /// Appends the sections.
    ///
    /// # Errors
    /// I/O errors of the output.
    pub fn write<W: Write>(&self, enc: &mut SegmentEncoder<W>) -> std::io::Result<()> {
        enc.section(K::VectorMeta, &self.meta.encode())?;
        if self.meta.dim > 0 {
            enc.array(K::VectorIds, &self.ids)?;
            enc.array(K::VectorData, &self.data)?;
            enc.array(K::VectorScales, &self.scales)?;
        }
        if let Some(g) = &self.graph {
            write_graph(enc, g)?;
        }
        Ok(())
    }
}

/// Whether a segment of `rows` vectors gets an HNSW graph when the bound is `min`
/// (smaller ones are scanned exactly; larger ones than [`HNSW_VECTORS_MAX`] cannot have
/// one).
pub(crate) fn wants_graph(rows: usize, min: usize) -> bool {
    (min.max(1)..=HNSW_VECTORS_MAX).contains(&rows)
}

/// The HNSW graph of the rows `vectors` of segment `segment_id` (its levels
/// are drawn from a seed derived from the id, so a graph built later is the one an
/// immediate build would have made).
pub(crate) fn build_graph(vectors: Vectors<'_>, segment_id: u64) -> Flat {
    build_graph_reporting(vectors, segment_id, &mut |_| {})
}

/// [`build_graph`], telling `progress` how many rows are in the graph as it grows.
pub(crate) fn build_graph_reporting(
    vectors: Vectors<'_>,
    segment_id: u64,
    progress: &mut dyn FnMut(usize),
) -> Flat {
    hnsw::build_reporting(
        vectors,
        segment_id ^ 0x6873_776e_5eed_0001,
        hnsw::EF_CONSTRUCTION,
        progress,
    )
}

/// The `VectorMeta` of `count` rows of dimension `dim` with `graph`, if any.
pub(crate) fn graph_meta(dim: u32, count: u32, graph: Option<&Flat>) -> VectorMeta {
    VectorMeta {
        dim,
        count,
        m: graph.map_or(0, |_| u32::try_from(hnsw::M).unwrap_or(0)),
        ef_construction: graph.map_or(0, |_| u32::try_from(hnsw::EF_CONSTRUCTION).unwrap_or(0)),
        entry: graph.map_or(0, |g| g.entry),
        layer_sizes: graph.map_or_else(Vec::new, |g| g.layer_sizes.clone()),
    }
}

/// Appends the three HNSW sections of `g`.
///
/// # Errors
/// I/O errors of the output.
pub(crate) fn write_graph<W: Write>(enc: &mut SegmentEncoder<W>, g: &Flat) -> std::io::Result<()> {
    enc.array(K::HnswOffsets, &g.offsets)?;
    enc.array(K::HnswNeighbors, &g.neighbors)?;
    enc.array(K::HnswMembers, &g.members)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows added in any order come out sorted by node, as written, each with its inverse
    /// norm (0 for a zero vector); a row of another dimension, or rows of another
    /// dimension than the store's, are refused naming the node and both dimensions.
    #[test]
    fn vector_rows_sort_scale_and_check_dimensions() {
        let mut rows = VectorRows::default();
        rows.reserve(3, 2);
        rows.push(9, &[3.0, 4.0]);
        rows.push(2, &[0.0, 0.0]);
        rows.push(5, &[0.0, 2.0]);
        let built = BuiltVectors::new(1, None, rows, None).unwrap();
        assert_eq!(built.ids, vec![2, 5, 9]);
        assert_eq!(built.data, vec![0.0, 0.0, 0.0, 2.0, 3.0, 4.0]);
        assert_eq!(built.scales, vec![0.0, 0.5, 0.2]);
        assert_eq!(built.meta.dim, 2);

        let mut rows = VectorRows::default();
        rows.push(1, &[1.0, 0.0]);
        rows.push(4, &[1.0, 0.0, 0.0]);
        let e = BuiltVectors::new(1, None, rows, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("node 4") && e.contains("3 dimensions"), "{e}");

        let mut rows = VectorRows::default();
        rows.push(1, &[1.0, 0.0]);
        let e = BuiltVectors::new(1, Some(3), rows, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("node 1") && e.contains("have 3"), "{e}");
    }
}
