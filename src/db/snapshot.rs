//! Consistent read views.
//!
//! A [`Snapshot`] is an `Arc` of one immutable [`State`]: taking one costs a reference-count
//! increment, it is `Send + Sync`, and it stays valid (segments stay mapped) while writes,
//! checkpoints and compactions publish newer states.

use std::sync::Arc;

use super::state::State;
use crate::error::Result;
use crate::graph::{Direction, EdgeDir, EdgeId, Lsn, NodeId, TypeFilter, TypeId};
use crate::model::{Edge, Node};

/// A consistent, immutable view of the database.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub(crate) state: Arc<State>,
    /// Segments with fewer embeddings are searched exactly ([`Options::vector_graph_min`](
    /// super::Options::vector_graph_min)).
    pub(crate) vector_graph_min: usize,
}

/// One edge seen from a node, with the physical direction it was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Neighbor {
    /// The node at the other end.
    pub node: NodeId,
    /// The edge.
    pub edge: EdgeId,
    /// Its type.
    pub edge_type: TypeId,
    /// `Out` when the edge leaves the queried node, `In` when it enters it.
    pub dir: EdgeDir,
}

impl Snapshot {
    /// A snapshot of an empty store that has no directory: no nodes, no edges, LSN 0.
    ///
    /// For hosts that answer reads on a database that does not exist yet as on an empty
    /// one without creating anything (the MCP server's contexts do).
    pub fn empty() -> Snapshot {
        Snapshot {
            state: Arc::new(State::from_segments(
                super::state::SegmentSet::default(),
                0,
                0,
            )),
            vector_graph_min: super::HNSW_MIN_VECTORS,
        }
    }

    /// LSN of the last commit visible in this snapshot.
    pub fn lsn(&self) -> Lsn {
        self.state.lsn
    }

    /// Reads every page of the snapshot's segment files once, so that queries that follow
    /// take no page faults: the state a long-running process reaches after its first
    /// queries, reached up front (opening stays lazy; this is the caller's choice). Costs
    /// one pass over the files, a few milliseconds per hundred MB of page-cached data.
    /// Returns the bytes covered.
    pub fn prefault(&self) -> u64 {
        self.state
            .segs
            .segments
            .iter()
            .map(|s| s.file.prefault())
            .sum()
    }

    /// [`Snapshot::prefault`] within a byte budget, for a caller that does not know how
    /// large the database is (a server warming a database it just opened): every file
    /// when they all fit in `max_bytes`; else only the sections read once per node
    /// touched (CSR run starts, key index, record boundaries) of the newest segments
    /// whose sections fit, so a database larger than memory is not read whole. Returns
    /// the bytes covered.
    pub fn prefault_within(&self, max_bytes: u64) -> u64 {
        let segments = &self.state.segs.segments;
        if self.segment_bytes() <= max_bytes {
            return self.prefault();
        }
        let mut covered = 0u64;
        for s in segments.iter().rev() {
            if covered.saturating_add(s.file.node_index_bytes()) > max_bytes {
                break;
            }
            covered += s.file.prefault_node_index();
        }
        covered
    }

    /// Total bytes of the snapshot's segment files.
    pub fn segment_bytes(&self) -> u64 {
        self.state
            .segs
            .segments
            .iter()
            .map(|s| s.file.len_bytes())
            .sum()
    }

    /// The live nodes whose embeddings are most similar (cosine) to `query`'s, best first
    /// (equal similarities: lower node id first), among those its filter accepts. Each
    /// node counts once, from its newest version; deleted nodes never appear. Segments of
    /// at least [`Options::vector_graph_min`](crate::Options::vector_graph_min) vectors
    /// (default `HNSW_MIN_VECTORS`, 100,000) are searched through their HNSW graph
    /// (approximate: recall@10 above 0.95 at the default breadth), smaller ones and recent
    /// writes exactly: a store below it answers exactly.
    ///
    /// # Errors
    /// `InvalidArgument` when the query embedding is empty, longer than 4096, not finite, of
    /// norm 0 or of another dimension than the store's, or `limit`/`ef` exceed their
    /// limits; `Corrupt` when a record read for the filter does not decode.
    ///
    /// # Complexity
    /// Per segment with a graph about `ef · 32 · log n` similarity computations; per
    /// other segment and for the delta one per vector.
    pub fn search_vector(
        &self,
        query: &super::vector::VectorQuery,
    ) -> Result<Vec<super::vector::VectorHit>> {
        self.state.search_vector(query, self.vector_graph_min)
    }

    /// The store's embedding dimension: fixed by the first embedding ever written, `None`
    /// while there has been none.
    pub fn embedding_dimension(&self) -> Option<usize> {
        self.state.embedding_dim().map(|d| d as usize)
    }

    /// The id of the live node with `key`. Cost: a hash probe per segment (about one cache
    /// miss in a segment of format 6 for a key of at most 11 bytes), newest first.
    pub fn node_id(&self, key: &str) -> Option<NodeId> {
        self.state.node_id(key)
    }

    /// The ids of the live nodes with keys `a` and `b`: the same answers as two calls of
    /// [`Snapshot::node_id`], with the two look-ups' memory reads overlapped (the key-level
    /// path queries look up both endpoints this way). Cost: about one cache miss for
    /// both keys of at most 11 bytes in a segment written by format 6.
    pub fn node_id_pair(&self, a: &str, b: &str) -> [Option<NodeId>; 2] {
        self.state.node_id_pair(a, b)
    }

    /// The live node `id`.
    ///
    /// # Errors
    /// `Corrupt` when its stored record does not decode.
    pub fn node(&self, id: NodeId) -> Result<Option<Arc<Node>>> {
        self.state.node(id)
    }

    /// The key and title of live node `id`, borrowed from the snapshot and decoding nothing
    /// else of its record (cheaper than [`Snapshot::node`]: no allocation, however long the
    /// node's content or many its properties).
    ///
    /// # Errors
    /// `Corrupt` when its stored record does not decode.
    pub fn node_label(&self, id: NodeId) -> Result<Option<(&str, &str)>> {
        self.state.node_label(id)
    }

    /// Ranked full-text search over the nodes' `title`, `content` and the string values of
    /// their `props` (BM25 with per-field weights; see DESIGN.md §13): any query word may
    /// match, documents matching every word and the phrase rank higher, exact word forms
    /// above stem-only matches; among equal scores the shorter document (fewer tokens in
    /// all its fields) first, then the lower node id. The filter applies during the
    /// search. A query of stop words and punctuation only returns no hits.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use hopgraph::{Database, NodeProps, TextQuery, WriteBatch};
    /// let db = Database::open(dir.path())?;
    /// let mut b = WriteBatch::new();
    /// b.upsert_node("m1", NodeProps { title: "Connection pooling".into(), ..Default::default() });
    /// db.commit(b)?;
    /// let hits = db.snapshot().search_text(&TextQuery::new("pooled connections").limit(5))?;
    /// assert_eq!(hits.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Complexity
    /// O(postings of the query's terms · segments) plus the candidates' sort; no scan of
    /// the store.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty or over-long (> 4 KiB) query, `limit` outside 1..=10,000,
    /// `offset` above 100,000 or a bad weight; `Corrupt` when a text section or a node
    /// record is damaged.
    pub fn search_text(&self, query: &crate::text::TextQuery) -> Result<Vec<crate::text::TextHit>> {
        self.state.search_text(query)
    }

    /// The live node with `key`.
    ///
    /// # Errors
    /// `Corrupt` when its stored record does not decode.
    pub fn node_by_key(&self, key: &str) -> Result<Option<Arc<Node>>> {
        match self.node_id(key) {
            Some(id) => self.node(id),
            None => Ok(None),
        }
    }

    /// Whether `id` is a live node.
    pub fn contains_node(&self, id: NodeId) -> bool {
        self.state.is_live(id)
    }

    /// The live edge `id`.
    ///
    /// # Errors
    /// `Corrupt` when its stored properties do not decode.
    pub fn edge(&self, id: EdgeId) -> Result<Option<Arc<Edge>>> {
        self.state.edge(id)
    }

    /// The live edge (source, type, target).
    pub fn edge_by_triple(
        &self,
        source: NodeId,
        edge_type: TypeId,
        target: NodeId,
    ) -> Option<EdgeId> {
        self.state.edge_by_triple(source, edge_type, target)
    }

    /// The id of an edge type name.
    pub fn type_id(&self, name: &str) -> Option<TypeId> {
        self.state.type_ids.get(name).map(|&t| TypeId(t))
    }

    /// The name of an edge type id.
    pub fn type_name(&self, id: TypeId) -> Option<&str> {
        self.state.types.get(id.0 as usize).map(|s| &**s)
    }

    /// Every edge type with its live edge count, by id.
    pub fn edge_types(&self) -> Vec<(TypeId, String, u64)> {
        self.state
            .types
            .iter()
            .zip(self.state.type_counts.iter())
            .enumerate()
            .map(|(i, (n, c))| {
                (
                    TypeId(u16::try_from(i).unwrap_or(u16::MAX)),
                    n.to_string(),
                    *c,
                )
            })
            .collect()
    }

    /// A whitelist filter from type names. Names that no edge ever had are dropped, so a
    /// list of only unknown names matches nothing.
    pub fn type_filter<S: AsRef<str>>(&self, names: &[S]) -> TypeFilter {
        TypeFilter::only(names.iter().filter_map(|n| self.type_id(n.as_ref())))
    }

    /// Live nodes.
    pub fn node_count(&self) -> u64 {
        self.state.live_nodes
    }

    /// Live edges.
    pub fn edge_count(&self) -> u64 {
        self.state.live_edges()
    }

    /// Exclusive upper bound of node ids allocated so far.
    pub fn node_bound(&self) -> u32 {
        self.state.node_bound
    }

    /// Calls `f` for each live edge at `node` in `direction` passing `types` (out edges
    /// first). Cost: O(segments + degree).
    pub fn for_each_neighbor<F: FnMut(Neighbor)>(
        &self,
        node: NodeId,
        direction: Direction,
        types: &TypeFilter,
        mut f: F,
    ) {
        for &dir in direction.dirs() {
            self.state.for_each_edge(node, dir, types, |e| {
                f(Neighbor {
                    node: e.neighbor,
                    edge: e.edge,
                    edge_type: e.edge_type,
                    dir,
                })
            });
        }
    }

    /// The live edges at `node`, sorted by (direction, type, neighbor, edge id).
    pub fn neighbors(
        &self,
        node: NodeId,
        direction: Direction,
        types: &TypeFilter,
    ) -> Vec<Neighbor> {
        let mut v = Vec::new();
        self.for_each_neighbor(node, direction, types, |n| v.push(n));
        v.sort_unstable_by_key(|n| (n.dir.index(), n.edge_type, n.node, n.edge));
        v
    }

    /// Number of live edges at `node` in `direction` passing `types` (a self-loop counts
    /// once per direction).
    pub fn degree(&self, node: NodeId, direction: Direction, types: &TypeFilter) -> u64 {
        let mut n = 0u64;
        self.for_each_neighbor(node, direction, types, |_| n += 1);
        n
    }

    /// Candidates for a case-insensitive substring search: a superset of the live nodes
    /// one of whose texts contains `query` once both are lowercased with
    /// `str::to_lowercase`, in increasing id order, or `None` when `query` has no letter
    /// or digit (then any node may match: scan [`Snapshot::node_ids`]). The texts are the
    /// key, kind, title, content, status, and every string value and string item of an
    /// array value of the props (top level), each lowercased on its own; a caller checks
    /// the candidates against the texts it cares about (a subset of these).
    ///
    /// Cost: the first call on a segment reads all its node records once to list their
    /// distinct words (kept with the segment and shared by every snapshot); each call then
    /// looks each of the query's longest alphanumeric runs (up to three) up in each
    /// segment's distinct words, intersects the nodes found per run, and adds every node
    /// written since the last checkpoint. See `db/substring.rs` for
    /// why no match is lost.
    ///
    /// # Errors
    /// `Corrupt` when a segment's node record does not decode.
    pub fn substring_candidates(&self, query: &str) -> Result<Option<Vec<NodeId>>> {
        let runs = super::substring::query_runs(query);
        if runs.is_empty() {
            return Ok(None);
        }
        let mut ids: Option<Vec<u32>> = None;
        for run in &runs {
            let mut found: Vec<u32> = Vec::new();
            for seg in &self.state.segs.segments {
                seg.words()?.collect(run, &mut found);
            }
            found.extend(self.state.delta.nodes.keys().copied());
            found.sort_unstable();
            found.dedup();
            ids = Some(match ids {
                None => found,
                Some(mut prev) => {
                    prev.retain(|id| found.binary_search(id).is_ok());
                    prev
                }
            });
        }
        let ids = ids.unwrap_or_default();
        Ok(Some(
            ids.into_iter()
                .map(NodeId)
                .filter(|&id| self.state.is_live(id))
                .collect(),
        ))
    }

    /// Live node ids in increasing order. Cost: O(node_bound × segments) over the whole
    /// iteration.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.state.node_bound)
            .map(NodeId)
            .filter(|&id| self.state.is_live(id))
    }
}
