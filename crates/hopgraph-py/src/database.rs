//! `Database` and `Snapshot`: engine handles. Every engine call runs with the GIL
//! released, so other Python threads run meanwhile.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use hopgraph::{Durability, NodeFilter, Options, PathSpec, TextQuery, VectorQuery};

use crate::batch::WriteBatch;
use crate::convert::{self, error, invalid};
use crate::results::{Edge, Hit, Neighbor, Node, Path, Reached, Visit};

/// A hopgraph database: a directory of memory-mapped segments and a write-ahead log.
///
/// ```python
/// import hopgraph
/// with hopgraph.open("memory.hg") as db:
///     with db.batch() as b:
///         b.link("outage", "caused_by", "deploy-42", create_missing=True)
///     print(db.shortest_path("outage", "deploy-42"))
/// ```
/// Reads on the handle see the latest commit; `db.snapshot()` pins one consistent view.
/// A handle is safe to share between threads. Several processes may open one directory.
#[pyclass(frozen, module = "hopgraph")]
pub struct Database {
    inner: RwLock<Option<Arc<hopgraph::Database>>>,
    path: PathBuf,
}

impl Database {
    fn db(&self) -> PyResult<Arc<hopgraph::Database>> {
        self.inner.read().clone().ok_or_else(|| {
            convert::HopgraphError::new_err(format!(
                "the database {} is closed",
                self.path.display()
            ))
        })
    }

    pub(crate) fn commit_inner(
        &self,
        py: Python<'_>,
        batch: hopgraph::WriteBatch,
    ) -> PyResult<Py<PyAny>> {
        let db = self.db()?;
        let info = py.detach(|| db.commit(batch)).map_err(error)?;
        let d = PyDict::new(py);
        d.set_item("lsn", info.lsn)?;
        d.set_item("operations", info.results.len())?;
        Ok(d.into_any().unbind())
    }
}

/// Opens (by default creating) the database in directory `path`.
///
/// `read_only=True` opens an existing database without taking the writer lock (writes
/// raise `ReadOnlyError`); `create=False` raises `NotFoundError` where there is none;
/// `durability="buffered"` skips the fsync per commit (a crash of the machine may lose
/// the last commits, never corrupts).
#[pyfunction]
#[pyo3(signature = (path, *, read_only = false, create = true, durability = "sync"))]
pub fn open(
    py: Python<'_>,
    path: PathBuf,
    read_only: bool,
    create: bool,
    durability: &str,
) -> PyResult<Database> {
    let durability = match durability {
        "sync" => Durability::Sync,
        "buffered" => Durability::Buffered,
        other => {
            return Err(invalid(
                "durability",
                format!("must be \"sync\" or \"buffered\", got {other:?}"),
            ));
        }
    };
    let options = Options::default()
        .read_only(read_only)
        .create_if_missing(create && !read_only)
        .durability(durability);
    let dir = path.clone();
    let db = py
        .detach(|| hopgraph::Database::open_with(&dir, options))
        .map_err(error)?;
    Ok(Database {
        inner: RwLock::new(Some(Arc::new(db))),
        path,
    })
}

fn report(py: Python<'_>, pairs: &[(&str, Py<PyAny>)]) -> PyResult<Py<PyAny>> {
    let d = PyDict::new(py);
    for (k, v) in pairs {
        d.set_item(k, v)?;
    }
    Ok(d.into_any().unbind())
}

#[pymethods]
impl Database {
    /// The database directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// A consistent read view of the latest commit; it stays valid while writes go on.
    fn snapshot(&self) -> PyResult<Snapshot> {
        Ok(Snapshot {
            inner: self.db()?.snapshot(),
        })
    }

    /// A new `WriteBatch` that commits to this database when its `with` block ends.
    fn batch(slf: Py<Self>) -> WriteBatch {
        WriteBatch {
            inner: hopgraph::WriteBatch::new(),
            target: Some(slf),
        }
    }

    /// Applies `batch` atomically and durably (fsynced before this returns); returns
    /// `{"lsn": ..., "operations": ...}`. On error nothing of the batch is applied.
    fn commit(&self, py: Python<'_>, batch: &Bound<'_, WriteBatch>) -> PyResult<Py<PyAny>> {
        let inner = std::mem::take(&mut batch.borrow_mut().inner);
        self.commit_inner(py, inner)
    }

    /// Loads many nodes and edges at once, atomically, straight into one new segment (far
    /// faster than batches; no WAL traffic). `nodes`: dicts with `key` and any of `type`,
    /// `title`, `content`, `importance`, `status`, `metadata`, `embedding` (an existing
    /// key is updated). `edges`: `(source, type, target)` tuples; unknown endpoints are
    /// created, duplicate triples dropped. Returns the counts. The GIL is released while
    /// the segment is built.
    ///
    /// `memory_limit` (bytes; default half the machine's memory) bounds the edges held
    /// while they are read (beyond an eighth of it they move to a scratch file in the
    /// database's directory) and the build (sorted out of core when it would need more);
    /// the result is the same whatever the limit. Node records and keys stay in memory.
    #[pyo3(signature = (nodes = None, edges = None, *, memory_limit = None))]
    fn bulk_load(
        &self,
        py: Python<'_>,
        nodes: Option<&Bound<'_, PyAny>>,
        edges: Option<&Bound<'_, PyAny>>,
        memory_limit: Option<u64>,
    ) -> PyResult<Py<PyAny>> {
        let db = self.db()?;
        let limit = memory_limit.unwrap_or_else(hopgraph::default_memory_limit);
        let mut load = hopgraph::BulkLoad::spilling_into(&db, limit).map_err(error)?;
        if let Some(nodes) = nodes {
            for item in nodes.try_iter()? {
                let item = item?;
                let d = item
                    .cast::<PyDict>()
                    .map_err(|_| invalid("nodes", "each node is a dict with a `key`"))?;
                let get = |k: &str| d.get_item(k);
                let key: String = get("key")?
                    .ok_or_else(|| invalid("nodes", "a node dict without `key`"))?
                    .extract()?;
                let text = |k: &str| -> PyResult<String> {
                    Ok(get(k)?
                        .filter(|v| !v.is_none())
                        .map(|v| v.extract::<String>())
                        .transpose()?
                        .unwrap_or_default())
                };
                let props = hopgraph::NodeProps {
                    kind: text("type")?,
                    title: text("title")?,
                    content: text("content")?,
                    importance: get("importance")?
                        .filter(|v| !v.is_none())
                        .map(|v| v.extract::<f32>())
                        .transpose()?
                        .unwrap_or(0.0),
                    status: text("status")?,
                    props: convert::object("metadata", get("metadata")?.as_ref())?,
                    embedding: get("embedding")?
                        .filter(|v| !v.is_none())
                        .map(|v| convert::embedding(&v))
                        .transpose()?,
                };
                load.node(&key, props).map_err(error)?;
            }
        }
        if let Some(edges) = edges {
            for item in edges.try_iter()? {
                let (source, edge_type, target): (String, String, String) =
                    item?.extract().map_err(|_| {
                        invalid(
                            "edges",
                            "each edge is a (source, type, target) tuple of strings",
                        )
                    })?;
                load.edge(&source, &edge_type, &target, hopgraph::EdgeProps::default())
                    .map_err(error)?;
            }
        }
        let r = py.detach(|| db.bulk_load(load)).map_err(error)?;
        report(
            py,
            &[
                (
                    "nodes_created",
                    r.nodes_created.into_pyobject(py)?.into_any().unbind(),
                ),
                (
                    "nodes_updated",
                    r.nodes_updated.into_pyobject(py)?.into_any().unbind(),
                ),
                (
                    "edges_created",
                    r.edges_created.into_pyobject(py)?.into_any().unbind(),
                ),
                (
                    "duplicates_skipped",
                    r.duplicates_skipped.into_pyobject(py)?.into_any().unbind(),
                ),
            ],
        )
    }

    /// Counts and storage state: nodes, edges, edge types, segments, WAL bytes, ...
    fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let db = self.db()?;
        let s = py.detach(|| db.stats()).map_err(error)?;
        let types = PyDict::new(py);
        for (name, count) in &s.edge_types {
            types.set_item(name, count)?;
        }
        report(
            py,
            &[
                ("nodes", s.nodes.into_pyobject(py)?.into_any().unbind()),
                ("edges", s.edges.into_pyobject(py)?.into_any().unbind()),
                ("edge_types", types.into_any().unbind()),
                (
                    "segments",
                    s.segments.len().into_pyobject(py)?.into_any().unbind(),
                ),
                (
                    "wal_bytes",
                    s.wal_bytes.into_pyobject(py)?.into_any().unbind(),
                ),
                (
                    "disk_bytes",
                    s.disk_bytes.into_pyobject(py)?.into_any().unbind(),
                ),
                ("lsn", s.lsn.into_pyobject(py)?.into_any().unbind()),
                (
                    "checkpoint_lsn",
                    s.checkpoint_lsn.into_pyobject(py)?.into_any().unbind(),
                ),
            ],
        )
    }

    /// Reads and checksums every file; raises `CorruptError` naming the first damage.
    /// Returns `{"segments", "wal_records", "bytes"}`. With `deep=True` it also rebuilds
    /// each segment's text index from its records and compares it byte for byte (as
    /// long as building the index took; catches an index written wrong), adding
    /// `"text_segments"` and `"text_records"` (those compared) and
    /// `"text_older_format"` (segment ids of an earlier format, not compared).
    #[pyo3(signature = (deep = false))]
    fn check(&self, py: Python<'_>, deep: bool) -> PyResult<Py<PyAny>> {
        let db = self.db()?;
        let (r, text) = py
            .detach(|| {
                let r = db.verify()?;
                let text = if deep {
                    Some(db.verify_text_index(&|_, _, _| {})?)
                } else {
                    None
                };
                Ok((r, text))
            })
            .map_err(error)?;
        let mut fields = vec![
            (
                "segments",
                r.segments.into_pyobject(py)?.into_any().unbind(),
            ),
            (
                "wal_records",
                r.wal_records.into_pyobject(py)?.into_any().unbind(),
            ),
            ("bytes", r.bytes.into_pyobject(py)?.into_any().unbind()),
        ];
        if let Some(t) = text {
            let older: Vec<u64> = t.older_format.iter().map(|(id, _)| *id).collect();
            fields.push((
                "text_segments",
                t.segments.into_pyobject(py)?.into_any().unbind(),
            ));
            fields.push((
                "text_records",
                t.records.into_pyobject(py)?.into_any().unbind(),
            ));
            fields.push((
                "text_older_format",
                older.into_pyobject(py)?.into_any().unbind(),
            ));
        }
        report(py, &fields)
    }

    /// Writes the WAL's changes into a new segment and truncates the log.
    fn checkpoint(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let db = self.db()?;
        let r = py.detach(|| db.checkpoint()).map_err(error)?;
        report(
            py,
            &[
                ("segment", r.segment.into_pyobject(py)?.into_any().unbind()),
                ("lsn", r.lsn.into_pyobject(py)?.into_any().unbind()),
                ("bytes", r.bytes.into_pyobject(py)?.into_any().unbind()),
            ],
        )
    }

    /// Merges all segments into one (dropping deleted data) in the current format.
    fn compact(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let db = self.db()?;
        let r = py.detach(|| db.compact()).map_err(error)?;
        report(
            py,
            &[
                (
                    "segments_merged",
                    r.segments_merged.into_pyobject(py)?.into_any().unbind(),
                ),
                ("segment", r.segment.into_pyobject(py)?.into_any().unbind()),
                ("edges", r.edges.into_pyobject(py)?.into_any().unbind()),
                ("bytes", r.bytes.into_pyobject(py)?.into_any().unbind()),
            ],
        )
    }

    /// Closes the handle (also at the end of a `with` block). Snapshots taken before stay
    /// readable; calls on the handle raise `hopgraph.Error` afterwards.
    fn close(&self, py: Python<'_>) {
        let db = self.inner.write().take();
        py.detach(|| drop(db));
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        let state = if self.inner.read().is_some() {
            "open"
        } else {
            "closed"
        };
        format!("Database({:?}, {state})", self.path.display().to_string())
    }

    // Reads on the latest commit: each is the `Snapshot` method of the same name.

    /// See `Snapshot.get`.
    #[pyo3(signature = (key, *, as_of = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &str,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Node>> {
        self.snapshot()?.get(py, key, as_of)
    }

    /// See `Snapshot.edge`.
    fn edge(&self, py: Python<'_>, edge_id: u64) -> PyResult<Option<Edge>> {
        self.snapshot()?.edge(py, edge_id)
    }

    /// See `Snapshot.shortest_path`.
    #[pyo3(signature = (source, target, *, types = None, direction = "both", max_hops = 10, visited_max = None, timeout = None, as_of = None))]
    #[allow(clippy::too_many_arguments)]
    fn shortest_path(
        &self,
        py: Python<'_>,
        source: &str,
        target: &str,
        types: Option<&Bound<'_, PyAny>>,
        direction: &str,
        max_hops: u32,
        visited_max: Option<u64>,
        timeout: Option<f64>,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Path>> {
        self.snapshot()?.shortest_path(
            py,
            source,
            target,
            types,
            direction,
            max_hops,
            visited_max,
            timeout,
            as_of,
        )
    }

    /// See `Snapshot.all_shortest_paths`.
    #[pyo3(signature = (source, target, *, types = None, direction = "both", max_hops = 10, max_paths = 100, as_of = None))]
    #[allow(clippy::too_many_arguments)]
    fn all_shortest_paths(
        &self,
        py: Python<'_>,
        source: &str,
        target: &str,
        types: Option<&Bound<'_, PyAny>>,
        direction: &str,
        max_hops: u32,
        max_paths: usize,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Path>> {
        self.snapshot()?.all_shortest_paths(
            py, source, target, types, direction, max_hops, max_paths, as_of,
        )
    }

    /// See `Snapshot.neighbors`.
    #[pyo3(signature = (key, *, types = None, direction = "both", as_of = None))]
    fn neighbors(
        &self,
        py: Python<'_>,
        key: &str,
        types: Option<&Bound<'_, PyAny>>,
        direction: &str,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Neighbor>> {
        self.snapshot()?.neighbors(py, key, types, direction, as_of)
    }

    /// See `Snapshot.expand`.
    #[pyo3(signature = (seeds, *, hops = 2, types = None, direction = "both", limit = 1000, as_of = None))]
    #[allow(clippy::too_many_arguments)]
    fn expand(
        &self,
        py: Python<'_>,
        seeds: Vec<String>,
        hops: u32,
        types: Option<&Bound<'_, PyAny>>,
        direction: &str,
        limit: usize,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Reached>> {
        self.snapshot()?
            .expand(py, seeds, hops, types, direction, limit, as_of)
    }

    /// See `Snapshot.traverse`.
    #[pyo3(signature = (start, *, max_depth = 3, types = None, direction = "out", limit = 1000, as_of = None))]
    #[allow(clippy::too_many_arguments)]
    fn traverse(
        &self,
        py: Python<'_>,
        start: &str,
        max_depth: u32,
        types: Option<&Bound<'_, PyAny>>,
        direction: &str,
        limit: usize,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Visit>> {
        self.snapshot()?
            .traverse(py, start, max_depth, types, direction, limit, as_of)
    }

    /// See `Snapshot.search`.
    #[pyo3(signature = (query, *, limit = 10, offset = 0, kinds = None, min_importance = None, as_of = None, snippets = true))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        query: String,
        limit: usize,
        offset: usize,
        kinds: Option<&Bound<'_, PyAny>>,
        min_importance: Option<f32>,
        as_of: Option<&Bound<'_, PyAny>>,
        snippets: bool,
    ) -> PyResult<Vec<Hit>> {
        self.snapshot()?.search(
            py,
            query,
            limit,
            offset,
            kinds,
            min_importance,
            as_of,
            snippets,
        )
    }

    /// See `Snapshot.search_vector`.
    #[pyo3(signature = (embedding, *, limit = 10, kinds = None, ef = None, as_of = None))]
    fn search_vector(
        &self,
        py: Python<'_>,
        embedding: &Bound<'_, PyAny>,
        limit: usize,
        kinds: Option<&Bound<'_, PyAny>>,
        ef: Option<usize>,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Hit>> {
        self.snapshot()?
            .search_vector(py, embedding, limit, kinds, ef, as_of)
    }
}

/// A consistent, immutable view of a database at one commit; reads on it never see later
/// writes. Cheap to take, safe to share between threads.
///
/// Every read takes `as_of=` (a `datetime`, an RFC 3339 string or milliseconds since
/// 1970): it then sees the graph as it was at that moment, only the nodes and edges valid
/// then (`valid_from <= as_of < valid_to`); a key not valid then is unknown. Without it
/// nothing is filtered by time.
#[pyclass(frozen, module = "hopgraph")]
pub struct Snapshot {
    inner: hopgraph::Snapshot,
}

impl Snapshot {
    /// The engine's snapshot (for `WriteBatch.expect_node`).
    pub(crate) fn engine(&self) -> &hopgraph::Snapshot {
        &self.inner
    }
}

fn spec(
    types: Option<&Bound<'_, PyAny>>,
    direction: &str,
    max_hops: u32,
    as_of: Option<&Bound<'_, PyAny>>,
) -> PyResult<PathSpec> {
    let spec = PathSpec::new()
        .types(convert::types(types)?)
        .direction(convert::direction(direction)?)
        .max_hops(max_hops);
    Ok(match convert::opt_time("as_of", as_of)? {
        Some(t) => spec.as_of(t),
        None => spec,
    })
}

/// The search filter of `kinds` and `as_of`.
fn kind_filter(
    kinds: Option<&Bound<'_, PyAny>>,
    as_of: Option<&Bound<'_, PyAny>>,
) -> PyResult<NodeFilter> {
    let kinds = convert::types(kinds)?;
    let filter = if kinds.is_empty() {
        NodeFilter::any()
    } else {
        NodeFilter::any().kinds(kinds)
    };
    Ok(match convert::opt_time("as_of", as_of)? {
        Some(t) => filter.valid_at(t),
        None => filter,
    })
}

#[pymethods]
impl Snapshot {
    /// The log sequence number of the last commit this view sees.
    #[getter]
    fn lsn(&self) -> u64 {
        self.inner.lsn()
    }

    /// Live nodes.
    #[getter]
    fn node_count(&self) -> u64 {
        self.inner.node_count()
    }

    /// Live edges.
    #[getter]
    fn edge_count(&self) -> u64 {
        self.inner.edge_count()
    }

    fn __contains__(&self, key: &str) -> bool {
        self.inner.node_id(key).is_some()
    }

    fn __repr__(&self) -> String {
        format!(
            "Snapshot(lsn={}, nodes={}, edges={})",
            self.inner.lsn(),
            self.inner.node_count(),
            self.inner.edge_count()
        )
    }

    /// The node with `key`, or None (also when it was not valid at `as_of`).
    #[pyo3(signature = (key, *, as_of = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &str,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Node>> {
        let as_of = convert::opt_time("as_of", as_of)?;
        let snap = &self.inner;
        let node = py.detach(|| snap.node_by_key(key)).map_err(error)?;
        node.filter(|n| as_of.is_none_or(|t| n.valid_at(t)))
            .map(|n| Node::new(py, &n))
            .transpose()
    }

    /// The edge with id `edge_id`, or None.
    fn edge(&self, py: Python<'_>, edge_id: u64) -> PyResult<Option<Edge>> {
        let snap = &self.inner;
        let Some(e) = py
            .detach(|| snap.edge(hopgraph::EdgeId(edge_id)))
            .map_err(error)?
        else {
            return Ok(None);
        };
        let key = |id| -> PyResult<String> {
            Ok(snap
                .node_label(id)
                .map_err(error)?
                .map(|(k, _)| k.to_owned())
                .unwrap_or_default())
        };
        let t = snap.type_name(e.edge_type).unwrap_or_default().to_owned();
        Edge::new(py, &e, key(e.source)?, t, key(e.target)?).map(Some)
    }

    /// A shortest path from `source` to `target` (keys), or None when there is none within
    /// `max_hops`. `types`: an edge type or a list of them (None: all); `direction`:
    /// "out" (follow edges forward), "in" (backward) or "both". `visited_max` and
    /// `timeout` (seconds) bound the work: past them `LimitReachedError`. Unknown keys:
    /// `NotFoundError` (also for a key not valid at `as_of`).
    #[pyo3(signature = (source, target, *, types = None, direction = "both", max_hops = 10, visited_max = None, timeout = None, as_of = None))]
    #[allow(clippy::too_many_arguments)]
    fn shortest_path(
        &self,
        py: Python<'_>,
        source: &str,
        target: &str,
        types: Option<&Bound<'_, PyAny>>,
        direction: &str,
        max_hops: u32,
        visited_max: Option<u64>,
        timeout: Option<f64>,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Path>> {
        let mut spec = spec(types, direction, max_hops, as_of)?;
        if let Some(v) = visited_max {
            spec = spec.visited_max(v);
        }
        if let Some(t) = timeout {
            let t = Duration::try_from_secs_f64(t)
                .map_err(|_| invalid("timeout", "must be a non-negative number of seconds"))?;
            spec = spec.timeout(t);
        }
        let snap = &self.inner;
        let path = py
            .detach(|| snap.shortest_path(source, target, &spec))
            .map_err(error)?;
        Ok(path.as_ref().map(Path::new))
    }

    /// Every shortest path from `source` to `target` (at most `max_paths`, in a fixed
    /// order); empty when there is none. Arguments as `shortest_path`.
    #[pyo3(signature = (source, target, *, types = None, direction = "both", max_hops = 10, max_paths = 100, as_of = None))]
    #[allow(clippy::too_many_arguments)]
    fn all_shortest_paths(
        &self,
        py: Python<'_>,
        source: &str,
        target: &str,
        types: Option<&Bound<'_, PyAny>>,
        direction: &str,
        max_hops: u32,
        max_paths: usize,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Path>> {
        let spec = spec(types, direction, max_hops, as_of)?;
        let snap = &self.inner;
        let found = py
            .detach(|| snap.all_shortest_paths(source, target, &spec, max_paths))
            .map_err(error)?;
        Ok(found.paths.iter().map(Path::new).collect())
    }

    /// The nodes one edge away from `key`, by (type, neighbor, edge).
    #[pyo3(signature = (key, *, types = None, direction = "both", as_of = None))]
    fn neighbors(
        &self,
        py: Python<'_>,
        key: &str,
        types: Option<&Bound<'_, PyAny>>,
        direction: &str,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Neighbor>> {
        let types = convert::types(types)?;
        let direction = convert::direction(direction)?;
        let as_of = convert::opt_time("as_of", as_of)?;
        let snap = &self.inner;
        let found = py
            .detach(|| snap.neighbors_of_at(key, direction, &types, as_of))
            .map_err(error)?;
        Ok(found.iter().map(Neighbor::new).collect())
    }

    /// The nodes within `hops` of any of `seeds`, each once, from its nearest seed, in
    /// (hops, seed, key id) order, at most `limit`; the seeds are not reported.
    #[pyo3(signature = (seeds, *, hops = 2, types = None, direction = "both", limit = 1000, as_of = None))]
    #[allow(clippy::too_many_arguments)]
    fn expand(
        &self,
        py: Python<'_>,
        seeds: Vec<String>,
        hops: u32,
        types: Option<&Bound<'_, PyAny>>,
        direction: &str,
        limit: usize,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Reached>> {
        let spec = spec(types, direction, hops, as_of)?;
        let snap = &self.inner;
        let found = py
            .detach(|| snap.expand_from(&seeds, &spec, limit))
            .map_err(error)?;
        Ok(found.nodes.iter().map(Reached::new).collect())
    }

    /// Breadth-first walk from `start` up to `max_depth` hops: the first `limit` nodes in
    /// (depth, id) order, each with the steps taken.
    #[pyo3(signature = (start, *, max_depth = 3, types = None, direction = "out", limit = 1000, as_of = None))]
    #[allow(clippy::too_many_arguments)]
    fn traverse(
        &self,
        py: Python<'_>,
        start: &str,
        max_depth: u32,
        types: Option<&Bound<'_, PyAny>>,
        direction: &str,
        limit: usize,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Visit>> {
        let spec = spec(types, direction, max_depth, as_of)?;
        let snap = &self.inner;
        let found = py
            .detach(|| snap.traverse_from(start, &spec, limit))
            .map_err(error)?;
        Ok(found.visits.iter().map(Visit::new).collect())
    }

    /// Full-text search over titles, contents and metadata strings (BM25F; words, stems,
    /// identifiers, phrases in quotes). `kinds`: only nodes of these types; `as_of`: only
    /// nodes valid then; `snippets=False`: hits without a snippet (`None`), faster.
    #[pyo3(signature = (query, *, limit = 10, offset = 0, kinds = None, min_importance = None, as_of = None, snippets = true))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        query: String,
        limit: usize,
        offset: usize,
        kinds: Option<&Bound<'_, PyAny>>,
        min_importance: Option<f32>,
        as_of: Option<&Bound<'_, PyAny>>,
        snippets: bool,
    ) -> PyResult<Vec<Hit>> {
        let mut filter = kind_filter(kinds, as_of)?;
        if let Some(m) = min_importance {
            filter = filter.min_importance(m);
        }
        let q = TextQuery::new(query)
            .limit(limit)
            .offset(offset)
            .filter(filter)
            .snippets(snippets);
        let snap = &self.inner;
        let hits = py.detach(|| snap.search_text(&q)).map_err(error)?;
        hits.iter()
            .map(|h| {
                Ok(Hit {
                    key: label(snap, h.node)?,
                    score: h.score,
                    field: Some(h.field.name()),
                    snippet: snippets.then(|| h.snippet.clone()),
                })
            })
            .collect()
    }

    /// The nodes whose embeddings are most similar (cosine) to `embedding`: a 1-d numpy
    /// array or a list of numbers. `ef`: search breadth (larger:
    /// better recall, slower); exact below 100,000 embeddings per segment.
    #[pyo3(signature = (embedding, *, limit = 10, kinds = None, ef = None, as_of = None))]
    fn search_vector(
        &self,
        py: Python<'_>,
        embedding: &Bound<'_, PyAny>,
        limit: usize,
        kinds: Option<&Bound<'_, PyAny>>,
        ef: Option<usize>,
        as_of: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Hit>> {
        let mut q = VectorQuery::new(convert::embedding(embedding)?)
            .limit(limit)
            .filter(kind_filter(kinds, as_of)?);
        if let Some(ef) = ef {
            q = q.ef(ef);
        }
        let snap = &self.inner;
        let hits = py.detach(|| snap.search_vector(&q)).map_err(error)?;
        hits.iter()
            .map(|h| {
                Ok(Hit {
                    key: label(snap, h.node)?,
                    score: f64::from(h.similarity),
                    field: None,
                    snippet: None,
                })
            })
            .collect()
    }
}

/// The key of a node a search just returned.
fn label(snap: &hopgraph::Snapshot, id: hopgraph::NodeId) -> PyResult<String> {
    Ok(snap
        .node_label(id)
        .map_err(error)?
        .map(|(k, _)| k.to_owned())
        .unwrap_or_default())
}
