//! `WriteBatch`: writes collected in Python, committed atomically by the engine.

use pyo3::prelude::*;

use hopgraph::{EdgeId, EdgeProps, NodePatch, NodeProps};

use crate::convert::{error, invalid, object, opt_time, time};
use crate::database::{Database, Snapshot};

/// Writes applied atomically and durably by one `Database.commit` (all or none).
///
/// ```python
/// with db.batch() as b:                      # commits when the block ends without error
///     b.put_node("outage", type="incident", title="API outage")
///     b.link("outage", "caused_by", "deploy-42", create_missing=True)
/// ```
/// Or build one with `hopgraph.WriteBatch()` and pass it to `db.commit(batch)`.
///
/// Times (`valid_from`, `valid_to`, `at`) are a `datetime` (naive: UTC), an RFC 3339
/// string or milliseconds since 1970. A node or edge is valid over
/// `[valid_from, valid_to)`: by default from its commit, never ending.
#[pyclass(module = "hopgraph")]
pub struct WriteBatch {
    pub(crate) inner: hopgraph::WriteBatch,
    /// The database `with db.batch()` commits to.
    pub(crate) target: Option<Py<Database>>,
}

#[pymethods]
impl WriteBatch {
    #[new]
    fn new() -> WriteBatch {
        WriteBatch {
            inner: hopgraph::WriteBatch::new(),
            target: None,
        }
    }

    /// Writes node `key` with these properties, replacing any earlier ones (upsert); with
    /// `create_only=True` a node that exists already makes the commit fail instead.
    /// `valid_from` / `valid_to` set its validity interval (a replaced node otherwise keeps
    /// its own; a new one is valid from the commit, never ending).
    #[pyo3(signature = (key, *, r#type = "", title = "", content = "", importance = 0.0, status = "", metadata = None, embedding = None, create_only = false, valid_from = None, valid_to = None))]
    #[allow(clippy::too_many_arguments)]
    fn put_node<'py>(
        mut slf: PyRefMut<'py, Self>,
        key: String,
        r#type: &str,
        title: &str,
        content: &str,
        importance: f32,
        status: &str,
        metadata: Option<&Bound<'py, PyAny>>,
        embedding: Option<&Bound<'py, PyAny>>,
        create_only: bool,
        valid_from: Option<&Bound<'py, PyAny>>,
        valid_to: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let valid_from = opt_time("valid_from", valid_from)?;
        let valid_to = opt_time("valid_to", valid_to)?;
        let props = NodeProps {
            kind: r#type.to_owned(),
            title: title.to_owned(),
            content: content.to_owned(),
            importance,
            status: status.to_owned(),
            props: object("metadata", metadata)?,
            embedding: embedding
                .filter(|e| !e.is_none())
                .map(crate::convert::embedding)
                .transpose()?,
        };
        let interval = (valid_from.is_some() || valid_to.is_some()).then(|| NodePatch {
            valid_from,
            valid_to: valid_to.map(Some),
            ..NodePatch::default()
        });
        if create_only {
            slf.inner.create_node(key.clone(), props);
        } else {
            slf.inner.upsert_node(key.clone(), props);
        }
        // The interval as a second request of the same atomic batch.
        if let Some(patch) = interval {
            slf.inner.update_node(key, patch);
        }
        Ok(slf)
    }

    /// Changes only the given properties of existing node `key` (`metadata` replaces the
    /// whole dict, `merge_metadata` sets some of its keys; `embedding=None` keeps it,
    /// `clear_embedding=True` removes it). `valid_from` / `valid_to` change its validity
    /// interval (`valid_to` ends it; `clear_valid_to=True` makes it never end). An unknown
    /// key fails the commit.
    #[pyo3(signature = (key, *, r#type = None, title = None, content = None, importance = None, status = None, metadata = None, merge_metadata = None, embedding = None, clear_embedding = false, valid_from = None, valid_to = None, clear_valid_to = false))]
    #[allow(clippy::too_many_arguments)]
    fn update_node<'py>(
        mut slf: PyRefMut<'py, Self>,
        key: String,
        r#type: Option<String>,
        title: Option<String>,
        content: Option<String>,
        importance: Option<f32>,
        status: Option<String>,
        metadata: Option<&Bound<'py, PyAny>>,
        merge_metadata: Option<&Bound<'py, PyAny>>,
        embedding: Option<&Bound<'py, PyAny>>,
        clear_embedding: bool,
        valid_from: Option<&Bound<'py, PyAny>>,
        valid_to: Option<&Bound<'py, PyAny>>,
        clear_valid_to: bool,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let valid_to = match (opt_time("valid_to", valid_to)?, clear_valid_to) {
            (Some(_), true) => {
                return Err(invalid(
                    "valid_to",
                    "give valid_to or clear_valid_to=True, not both",
                ));
            }
            (Some(t), false) => Some(Some(t)),
            (None, true) => Some(None),
            (None, false) => None,
        };
        let embedding = match (embedding.filter(|e| !e.is_none()), clear_embedding) {
            (Some(_), true) => {
                return Err(invalid(
                    "embedding",
                    "give an embedding or clear_embedding=True, not both",
                ));
            }
            (Some(e), false) => Some(Some(crate::convert::embedding(e)?)),
            (None, true) => Some(None),
            (None, false) => None,
        };
        let patch = NodePatch {
            kind: r#type,
            title,
            content,
            importance,
            status,
            props: metadata
                .filter(|m| !m.is_none())
                .map(|m| object("metadata", Some(m)))
                .transpose()?,
            merge_props: merge_metadata
                .filter(|m| !m.is_none())
                .map(|m| object("merge_metadata", Some(m)))
                .transpose()?,
            embedding,
            valid_from: opt_time("valid_from", valid_from)?,
            valid_to,
        };
        slf.inner.update_node(key, patch);
        Ok(slf)
    }

    /// Deletes node `key` and its edges (a key that does not exist is no error).
    fn delete_node(mut slf: PyRefMut<'_, Self>, key: String) -> PyRefMut<'_, Self> {
        slf.inner.delete_node(key);
        slf
    }

    /// Adds the edge `source -type-> target` (an existing identical triple is kept, not
    /// duplicated). Unknown endpoints fail the commit unless `create_missing=True`, which
    /// creates them as empty nodes. `valid_from` / `valid_to`: the edge's validity
    /// interval (default: from the commit, never ending).
    #[pyo3(signature = (source, r#type, target, *, weight = 1.0, metadata = None, create_missing = false, valid_from = None, valid_to = None))]
    #[allow(clippy::too_many_arguments)]
    fn link<'py>(
        mut slf: PyRefMut<'py, Self>,
        source: String,
        r#type: String,
        target: String,
        weight: f32,
        metadata: Option<&Bound<'py, PyAny>>,
        create_missing: bool,
        valid_from: Option<&Bound<'py, PyAny>>,
        valid_to: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let props = EdgeProps {
            weight,
            props: object("metadata", metadata)?,
            valid_from: opt_time("valid_from", valid_from)?,
            valid_to: opt_time("valid_to", valid_to)?,
        };
        if create_missing {
            slf.inner
                .link_creating_missing(source, r#type, target, props);
        } else {
            slf.inner.link(source, r#type, target, props);
        }
        Ok(slf)
    }

    /// Removes an edge: by id (`unlink(edge_id)`) or by triple
    /// (`unlink(source, type, target)`). A missing edge is no error.
    #[pyo3(signature = (edge_or_source, r#type = None, target = None))]
    fn unlink<'py>(
        mut slf: PyRefMut<'py, Self>,
        edge_or_source: &Bound<'py, PyAny>,
        r#type: Option<String>,
        target: Option<String>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        match (r#type, target) {
            (None, None) => {
                let id: u64 = edge_or_source
                    .extract()
                    .map_err(|_| invalid("edge", "unlink(edge_id) takes an integer edge id"))?;
                slf.inner.unlink(EdgeId(id));
            }
            (Some(t), Some(target)) => {
                let source: String = edge_or_source.extract()?;
                slf.inner.unlink_triple(source, t, target);
            }
            _ => {
                return Err(invalid(
                    "unlink",
                    "give an edge id, or source, type and target",
                ));
            }
        }
        Ok(slf)
    }

    /// Ends edge `edge_id`'s validity at `at` (exclusive): it stays stored, and reads
    /// `as_of` a moment before `at` still see it. An unknown or already ended edge, or
    /// `at` not after its start, fails the commit.
    fn end_edge<'py>(
        mut slf: PyRefMut<'py, Self>,
        edge_id: u64,
        at: &Bound<'py, PyAny>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let at = time("at", at)?;
        slf.inner.end_edge(EdgeId(edge_id), at);
        Ok(slf)
    }

    /// Makes the batch conditional: it commits only if no commit landed after `lsn`
    /// (usually `snapshot.lsn` of the snapshot the writes were decided on), and otherwise
    /// raises `ConflictError` and writes nothing. Read, decide, write, and on a conflict
    /// take a new snapshot and decide again:
    ///
    /// ```python
    /// while True:
    ///     snap = db.snapshot()
    ///     b = hopgraph.WriteBatch().expect_lsn(snap.lsn)
    ///     ...                                  # writes decided from snap
    ///     try:
    ///         db.commit(b)
    ///         break
    ///     except hopgraph.ConflictError:
    ///         continue
    /// ```
    fn expect_lsn(mut slf: PyRefMut<'_, Self>, lsn: u64) -> PyRefMut<'_, Self> {
        slf.inner.expect_lsn(lsn);
        slf
    }

    /// Makes the batch conditional on one node: it commits only if node `key` is still
    /// as it was in `snapshot` (the same record, or still absent when the snapshot had no
    /// such node), and otherwise raises `ConflictError` and writes nothing. Unlike
    /// `expect_lsn`, commits that touch other nodes do not conflict, so a busy database
    /// does not starve the batch:
    ///
    /// ```python
    /// while True:
    ///     snap = db.snapshot()
    ///     node = snap.get("alice")
    ///     b = hopgraph.WriteBatch().expect_node("alice", snap)
    ///     ...                                  # writes decided from node
    ///     try:
    ///         db.commit(b)
    ///         break
    ///     except hopgraph.ConflictError:
    ///         continue
    /// ```
    fn expect_node<'py>(
        mut slf: PyRefMut<'py, Self>,
        py: Python<'py>,
        key: &str,
        snapshot: PyRef<'py, Snapshot>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let snap = snapshot.engine();
        let read = py.detach(|| snap.node_by_key(key)).map_err(error)?;
        slf.inner.expect_node(key, read);
        Ok(slf)
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!("WriteBatch({} operations)", self.inner.len())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Commits to the database of `db.batch()` when the block raised nothing; discards
    /// the batch otherwise.
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let batch = std::mem::take(&mut self.inner);
        if exc_type.is_some_and(|t| !t.is_none()) {
            return Ok(false);
        }
        let Some(db) = self.target.take() else {
            return Err(invalid(
                "batch",
                "a WriteBatch() made directly is committed with db.commit(batch); use db.batch() for a with-block",
            ));
        };
        db.borrow(py).commit_inner(py, batch)?;
        Ok(false)
    }
}
