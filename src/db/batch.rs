//! Write batches: what a caller asks for, and how it is resolved into WAL operations.
//!
//! A [`WriteBatch`] holds requests by key. At commit time [`resolve`] validates every
//! request against the current state (limits, existence, triple uniqueness), assigns ids
//! and timestamps, and produces the resolved [`WalOp`]s plus one [`OpResult`] per request.
//! Any error rejects the whole batch: nothing of it is written.

use std::sync::Arc;

use super::state::State;
use crate::error::{Error, Result};
use crate::format::record::WalOp;
use crate::graph::{EdgeId, Lsn, NodeId, TypeId, limits};
use crate::model::{Edge, EdgeProps, Node, NodeProps, Props};

/// Changes to some of a node's properties; `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodePatch {
    /// New kind.
    pub kind: Option<String>,
    /// New title.
    pub title: Option<String>,
    /// New content.
    pub content: Option<String>,
    /// New importance.
    pub importance: Option<f32>,
    /// New status.
    pub status: Option<String>,
    /// Replaces the whole props object.
    pub props: Option<Props>,
    /// Keys merged into the props object (a `null` value removes the key).
    pub merge_props: Option<Props>,
    /// `Some(None)` removes the embedding, `Some(Some(v))` sets it.
    pub embedding: Option<Option<Vec<f32>>>,
    /// New start of validity (ms since the Unix epoch).
    pub valid_from: Option<u64>,
    /// `Some(Some(t))` ends the node's validity at `t` (exclusive), `Some(None)` makes it
    /// never end.
    pub valid_to: Option<Option<u64>>,
}

#[derive(Clone, Debug)]
enum Request {
    Upsert {
        key: String,
        props: NodeProps,
    },
    Create {
        key: String,
        props: NodeProps,
    },
    Ensure {
        key: String,
    },
    Update {
        key: String,
        patch: NodePatch,
    },
    Delete {
        key: String,
    },
    Link {
        source: String,
        edge_type: String,
        target: String,
        props: EdgeProps,
    },
    Unlink {
        edge: EdgeId,
    },
    UnlinkTriple {
        source: String,
        edge_type: String,
        target: String,
    },
    EndEdge {
        edge: EdgeId,
        at: u64,
    },
    EndEdgeTriple {
        source: String,
        edge_type: String,
        target: String,
        at: u64,
    },
}

/// The outcome of one request of a committed batch, in request order.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpResult {
    /// A node was written: its id and whether it was created by this request.
    Node {
        /// The node.
        id: NodeId,
        /// True when the node did not exist before.
        created: bool,
    },
    /// A node delete: the id (None when the key did not exist) and how many edges went.
    NodeDeleted {
        /// The deleted node, if it existed.
        id: Option<NodeId>,
        /// Incident edges removed with it.
        edges_removed: u64,
    },
    /// A link: the edge id and whether it was created (false: the triple existed).
    Linked {
        /// The edge.
        edge: EdgeId,
        /// True when newly created.
        created: bool,
    },
    /// An unlink: the removed edge, or None when no such edge existed.
    Unlinked {
        /// The removed edge.
        edge: Option<EdgeId>,
    },
    /// An edge's validity was ended.
    Ended {
        /// The edge.
        edge: EdgeId,
        /// Its end of validity now.
        valid_to: u64,
    },
}

/// An atomic group of writes. Requests apply in order; later requests see earlier ones.
#[derive(Clone, Debug, Default)]
pub struct WriteBatch {
    requests: Vec<Request>,
    /// Commit only if the store's LSN is still this one ([`WriteBatch::expect_lsn`]).
    expect_lsn: Option<Lsn>,
    /// Commit only if these nodes are still as read ([`WriteBatch::expect_node`]).
    expect_nodes: Vec<(String, Option<Arc<Node>>)>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Number of requests.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether the batch has no requests.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Makes the batch conditional: it commits only if no commit landed after `lsn`
    /// (usually [`Snapshot::lsn`](crate::Snapshot::lsn) of the snapshot the batch was
    /// computed from), and otherwise fails with [`Error::Conflict`] and writes nothing.
    /// This turns "read a snapshot, decide, write" into an optimistic transaction: on a
    /// conflict, take a new snapshot, decide again and retry. Any commit counts, also one
    /// that touched nothing the batch read, so keep such read-decide-write steps short.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use hopgraph::{Database, Error, WriteBatch};
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::open(dir.path())?;
    /// let seen = db.snapshot().lsn();
    /// let mut other = WriteBatch::new();
    /// other.ensure_node("a");
    /// db.commit(other)?; // lands after `seen`
    /// let mut late = WriteBatch::new();
    /// late.ensure_node("b").expect_lsn(seen);
    /// assert!(matches!(db.commit(late), Err(Error::Conflict { .. })));
    /// assert!(db.snapshot().node_id("b").is_none());
    /// # Ok(()) }
    /// ```
    pub fn expect_lsn(&mut self, lsn: Lsn) -> &mut Self {
        self.expect_lsn = Some(lsn);
        self
    }

    /// Makes the batch conditional on one node: it commits only if node `key` is still
    /// `read` (the record a snapshot gave, or `None` for "no such node") when the batch
    /// is applied, and otherwise fails with [`Error::Conflict`] and writes nothing. The
    /// finer-grained sibling of [`WriteBatch::expect_lsn`] for "read a node, change it,
    /// write it back": commits that touch other nodes do not conflict. Records are
    /// compared whole (properties, timestamps, interval), so an unchanged node passes
    /// even if it was rewritten with the same contents.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use hopgraph::{Database, Error, NodePatch, NodeProps, WriteBatch};
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::open(dir.path())?;
    /// let mut b = WriteBatch::new();
    /// b.upsert_node("a", NodeProps::default()).upsert_node("b", NodeProps::default());
    /// db.commit(b)?;
    /// let read = db.snapshot().node_by_key("a")?;
    /// let mut other = WriteBatch::new();
    /// other.update_node("b", NodePatch { title: Some("B".into()), ..NodePatch::default() });
    /// db.commit(other)?; // another node: no conflict
    /// let mut mine = WriteBatch::new();
    /// mine.update_node("a", NodePatch { title: Some("A".into()), ..NodePatch::default() })
    ///     .expect_node("a", read.clone());
    /// db.commit(mine)?;
    /// let mut stale = WriteBatch::new();
    /// stale.update_node("a", NodePatch { title: Some("Z".into()), ..NodePatch::default() })
    ///     .expect_node("a", read); // "a" changed since
    /// assert!(matches!(db.commit(stale), Err(Error::Conflict { .. })));
    /// # Ok(()) }
    /// ```
    pub fn expect_node(&mut self, key: impl Into<String>, read: Option<Arc<Node>>) -> &mut Self {
        self.expect_nodes.push((key.into(), read));
        self
    }

    /// Creates node `key` with `props`, or replaces all properties of the existing node.
    pub fn upsert_node(&mut self, key: impl Into<String>, props: NodeProps) -> &mut Self {
        self.requests.push(Request::Upsert {
            key: key.into(),
            props,
        });
        self
    }

    /// Creates node `key`; the commit fails with `NodeExists` if it exists.
    pub fn create_node(&mut self, key: impl Into<String>, props: NodeProps) -> &mut Self {
        self.requests.push(Request::Create {
            key: key.into(),
            props,
        });
        self
    }

    /// Creates node `key` with default properties unless it exists (then leaves it as is).
    pub fn ensure_node(&mut self, key: impl Into<String>) -> &mut Self {
        self.requests.push(Request::Ensure { key: key.into() });
        self
    }

    /// Changes some properties of existing node `key` (`NodeNotFound` otherwise).
    pub fn update_node(&mut self, key: impl Into<String>, patch: NodePatch) -> &mut Self {
        self.requests.push(Request::Update {
            key: key.into(),
            patch,
        });
        self
    }

    /// Deletes node `key` and every edge incident to it. A missing key is not an error
    /// (`OpResult::NodeDeleted { id: None, .. }`).
    pub fn delete_node(&mut self, key: impl Into<String>) -> &mut Self {
        self.requests.push(Request::Delete { key: key.into() });
        self
    }

    /// Links `source -edge_type-> target` (both nodes must exist, possibly created earlier
    /// in this batch). An existing triple is left unchanged and reported with
    /// `created: false`.
    pub fn link(
        &mut self,
        source: impl Into<String>,
        edge_type: impl Into<String>,
        target: impl Into<String>,
        props: EdgeProps,
    ) -> &mut Self {
        self.requests.push(Request::Link {
            source: source.into(),
            edge_type: edge_type.into(),
            target: target.into(),
            props,
        });
        self
    }

    /// Links `source -edge_type-> target` like [`WriteBatch::link`], first creating either
    /// endpoint that does not exist yet (with default properties, as
    /// [`WriteBatch::ensure_node`] does). The whole batch stays atomic.
    pub fn link_creating_missing(
        &mut self,
        source: impl Into<String>,
        edge_type: impl Into<String>,
        target: impl Into<String>,
        props: EdgeProps,
    ) -> &mut Self {
        let (source, target) = (source.into(), target.into());
        self.ensure_node(source.clone())
            .ensure_node(target.clone())
            .link(source, edge_type, target, props)
    }

    /// Removes edge `edge`; a missing edge is reported, not an error.
    pub fn unlink(&mut self, edge: EdgeId) -> &mut Self {
        self.requests.push(Request::Unlink { edge });
        self
    }

    /// Ends edge `edge`'s validity at `at` (ms since the Unix epoch, exclusive): the edge
    /// stays in the store, and reads "as of" `at` or later no longer see it. The commit
    /// fails with `NotFound`-like `InvalidArgument` for an unknown edge, one already
    /// ended, or `at` not after its start.
    pub fn end_edge(&mut self, edge: EdgeId, at: u64) -> &mut Self {
        self.requests.push(Request::EndEdge { edge, at });
        self
    }

    /// [`WriteBatch::end_edge`] for the edge (source, type, target); a missing edge is
    /// an `InvalidArgument` error.
    pub fn end_edge_triple(
        &mut self,
        source: impl Into<String>,
        edge_type: impl Into<String>,
        target: impl Into<String>,
        at: u64,
    ) -> &mut Self {
        self.requests.push(Request::EndEdgeTriple {
            source: source.into(),
            edge_type: edge_type.into(),
            target: target.into(),
            at,
        });
        self
    }

    /// Removes the edge (source, type, target); a missing edge is reported, not an error.
    pub fn unlink_triple(
        &mut self,
        source: impl Into<String>,
        edge_type: impl Into<String>,
        target: impl Into<String>,
    ) -> &mut Self {
        self.requests.push(Request::UnlinkTriple {
            source: source.into(),
            edge_type: edge_type.into(),
            target: target.into(),
        });
        self
    }
}

/// Checks a node key against the documented limits.
///
/// # Errors
/// `InvalidArgument` naming the field and the rule.
pub fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > limits::NODE_KEY_BYTES_MAX {
        return Err(Error::invalid_arg(
            "node key",
            format!(
                "must be 1..={} bytes, got {}",
                limits::NODE_KEY_BYTES_MAX,
                key.len()
            ),
        ));
    }
    Ok(())
}

/// Checks an edge type name against the documented limits.
///
/// # Errors
/// `InvalidArgument` naming the field and the rule.
pub fn check_type_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > limits::EDGE_TYPE_BYTES_MAX {
        return Err(Error::invalid_arg(
            "edge type",
            format!(
                "must be 1..={} bytes, got {}",
                limits::EDGE_TYPE_BYTES_MAX,
                name.len()
            ),
        ));
    }
    Ok(())
}

fn json_len(p: &Props) -> usize {
    if p.is_empty() {
        0
    } else {
        serde_json::Value::Object(p.clone()).to_string().len()
    }
}

pub(crate) fn check_props(p: &NodeProps) -> Result<()> {
    for (name, v) in [
        ("kind", &p.kind),
        ("title", &p.title),
        ("status", &p.status),
    ] {
        if v.len() > limits::NODE_SHORT_TEXT_BYTES_MAX {
            return Err(Error::invalid_arg(
                name,
                format!(
                    "is {} bytes, limit {}",
                    v.len(),
                    limits::NODE_SHORT_TEXT_BYTES_MAX
                ),
            ));
        }
    }
    if p.content.len() > limits::NODE_CONTENT_BYTES_MAX {
        return Err(Error::invalid_arg(
            "content",
            format!(
                "is {} bytes, limit {}",
                p.content.len(),
                limits::NODE_CONTENT_BYTES_MAX
            ),
        ));
    }
    if !p.importance.is_finite() {
        return Err(Error::invalid_arg("importance", "must be a finite number"));
    }
    let n = json_len(&p.props);
    if n > limits::NODE_PROPS_BYTES_MAX {
        return Err(Error::invalid_arg(
            "node props",
            format!(
                "are {n} bytes serialized, limit {}",
                limits::NODE_PROPS_BYTES_MAX
            ),
        ));
    }
    if let Some(e) = &p.embedding {
        if e.is_empty() || e.len() > limits::EMBEDDING_DIMS_MAX {
            return Err(Error::invalid_arg(
                "embedding",
                format!(
                    "must have 1..={} dimensions, got {}",
                    limits::EMBEDDING_DIMS_MAX,
                    e.len()
                ),
            ));
        }
        if e.iter().any(|x| !x.is_finite()) {
            return Err(Error::invalid_arg(
                "embedding",
                "values must be finite numbers",
            ));
        }
    }
    Ok(())
}

/// Checks an embedding against the store's dimension (fixed by the first one written,
/// which may be earlier in this batch: `state` is advanced request by request).
fn check_embedding(state: &State, p: &NodeProps) -> Result<()> {
    match &p.embedding {
        Some(e) => super::vector::check_dimension(state.embedding_dim(), e.len(), "the embedding"),
        None => Ok(()),
    }
}

/// Checks that an interval ends after it starts.
///
/// # Errors
/// `InvalidArgument` naming `valid_to`.
pub fn check_interval(from: u64, to: Option<u64>) -> Result<()> {
    match to {
        Some(to) if to <= from => Err(Error::invalid_arg(
            "valid_to",
            format!("must be after valid_from ({to} <= {from} ms)"),
        )),
        _ => Ok(()),
    }
}

pub(crate) fn check_edge_props(p: &EdgeProps) -> Result<()> {
    if !p.weight.is_finite() {
        return Err(Error::invalid_arg("weight", "must be a finite number"));
    }
    let n = json_len(&p.props);
    if n > limits::EDGE_PROPS_BYTES_MAX {
        return Err(Error::invalid_arg(
            "edge props",
            format!(
                "are {n} bytes serialized, limit {}",
                limits::EDGE_PROPS_BYTES_MAX
            ),
        ));
    }
    Ok(())
}

fn apply_patch(props: &mut NodeProps, patch: &NodePatch) {
    let set = |dst: &mut String, src: &Option<String>| {
        if let Some(v) = src {
            dst.clone_from(v);
        }
    };
    set(&mut props.kind, &patch.kind);
    set(&mut props.title, &patch.title);
    set(&mut props.content, &patch.content);
    set(&mut props.status, &patch.status);
    if let Some(i) = patch.importance {
        props.importance = i;
    }
    if let Some(p) = &patch.props {
        props.props = p.clone();
    }
    if let Some(m) = &patch.merge_props {
        for (k, v) in m {
            if v.is_null() {
                props.props.remove(k);
            } else {
                props.props.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(e) = &patch.embedding {
        props.embedding = e.clone();
    }
}

/// The batch's conditions ([`WriteBatch::expect_lsn`], [`WriteBatch::expect_node`])
/// against the state it would apply to.
fn check_expectations(state: &State, batch: &WriteBatch) -> Result<()> {
    if let Some(expected) = batch.expect_lsn
        && state.lsn != expected
    {
        return Err(Error::Conflict {
            what: format!("the store (LSN {expected}, now {})", state.lsn),
        });
    }
    for (key, read) in &batch.expect_nodes {
        let now = match state.node_id(key) {
            Some(id) => state.node(id)?,
            None => None,
        };
        let same = match (read, &now) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || **a == **b,
            _ => false,
        };
        if !same {
            return Err(Error::Conflict {
                what: format!("node {key:?}"),
            });
        }
    }
    Ok(())
}

/// Resolves `batch` against `state` (which it advances), returning the WAL operations and
/// per-request results.
///
/// # Errors
/// `InvalidArgument`, `NodeNotFound` or `NodeExists`; `state` is then partly advanced and
/// must be discarded by the caller.
pub(crate) fn resolve(
    state: &mut State,
    batch: &WriteBatch,
    now_ms: u64,
) -> Result<(Vec<WalOp>, Vec<OpResult>)> {
    if batch.requests.len() > limits::BATCH_OPS_MAX {
        return Err(Error::limit(
            "requests in one batch",
            batch.requests.len() as u64,
            limits::BATCH_OPS_MAX as u64,
        ));
    }
    check_expectations(state, batch)?;
    let mut ops = Vec::with_capacity(batch.requests.len());
    let mut results = Vec::with_capacity(batch.requests.len());
    for req in &batch.requests {
        let result = match req {
            Request::Upsert { key, props } | Request::Create { key, props } => {
                let create = matches!(req, Request::Create { .. });
                put_node(state, &mut ops, key, props, create, now_ms)?
            }
            Request::Ensure { key } => ensure_node(state, &mut ops, key, now_ms)?,
            Request::Update { key, patch } => update_node(state, &mut ops, key, patch, now_ms)?,
            Request::Delete { key } => delete_node(state, &mut ops, key)?,
            Request::Link {
                source,
                edge_type,
                target,
                props,
            } => link(state, &mut ops, (source, edge_type, target), props, now_ms)?,
            Request::Unlink { edge } => match state.edge(*edge)? {
                None => OpResult::Unlinked { edge: None },
                Some(e) => {
                    remove_edge(state, &mut ops, &e)?;
                    OpResult::Unlinked { edge: Some(e.id) }
                }
            },
            Request::EndEdge { edge, at } => end_edge(state, &mut ops, *edge, *at)?,
            Request::EndEdgeTriple {
                source,
                edge_type,
                target,
                at,
            } => {
                let edge = edge_by_keys(state, source, edge_type, target).ok_or_else(|| {
                    Error::invalid_arg("edge", format!("no edge {source} -{edge_type}-> {target}"))
                })?;
                end_edge(state, &mut ops, edge, *at)?
            }
            Request::UnlinkTriple {
                source,
                edge_type,
                target,
            } => {
                let found = edge_by_keys(state, source, edge_type, target);
                match found.map(|id| state.edge(id)).transpose()?.flatten() {
                    None => OpResult::Unlinked { edge: None },
                    Some(e) => {
                        remove_edge(state, &mut ops, &e)?;
                        OpResult::Unlinked { edge: Some(e.id) }
                    }
                }
            }
        };
        results.push(result);
    }
    Ok((ops, results))
}

/// An `Upsert` (or, with `create`, a `Create`) of node `key`: a replaced node keeps its
/// id, creation time and interval.
fn put_node(
    state: &mut State,
    ops: &mut Vec<WalOp>,
    key: &str,
    props: &NodeProps,
    create: bool,
    now_ms: u64,
) -> Result<OpResult> {
    check_key(key)?;
    check_props(props)?;
    check_embedding(state, props)?;
    let existing = state.node_id(key);
    if existing.is_some() && create {
        return Err(Error::NodeExists {
            key: key.to_string(),
        });
    }
    let (id, old) = match existing {
        Some(id) => (id, state.node(id)?),
        None => (new_node_id(state)?, None),
    };
    let (created_at, valid_from, valid_to) = old.map_or((now_ms, now_ms, None), |n| {
        (n.created_at, n.valid_from, n.valid_to)
    });
    let node = Node {
        id,
        key: key.to_string(),
        props: props.clone(),
        created_at,
        updated_at: now_ms,
        valid_from,
        valid_to,
    };
    push_op(state, ops, WalOp::PutNode(node))?;
    Ok(OpResult::Node {
        id,
        created: existing.is_none(),
    })
}

/// An `Ensure` of node `key`: created empty if missing, left as it is otherwise.
fn ensure_node(
    state: &mut State,
    ops: &mut Vec<WalOp>,
    key: &str,
    now_ms: u64,
) -> Result<OpResult> {
    check_key(key)?;
    if let Some(id) = state.node_id(key) {
        return Ok(OpResult::Node { id, created: false });
    }
    let id = new_node_id(state)?;
    let node = Node {
        id,
        key: key.to_string(),
        props: NodeProps::default(),
        created_at: now_ms,
        updated_at: now_ms,
        valid_from: now_ms,
        valid_to: None,
    };
    push_op(state, ops, WalOp::PutNode(node))?;
    Ok(OpResult::Node { id, created: true })
}

/// An `Update` of existing node `key` by `patch`.
fn update_node(
    state: &mut State,
    ops: &mut Vec<WalOp>,
    key: &str,
    patch: &NodePatch,
    now_ms: u64,
) -> Result<OpResult> {
    let not_found = || Error::NodeNotFound {
        key: key.to_string(),
    };
    let id = state.node_id(key).ok_or_else(not_found)?;
    let old = state.node(id)?.ok_or_else(not_found)?;
    let mut node = Node::clone(&old);
    apply_patch(&mut node.props, patch);
    if let Some(from) = patch.valid_from {
        node.valid_from = from;
    }
    if let Some(to) = patch.valid_to {
        node.valid_to = to;
    }
    check_interval(node.valid_from, node.valid_to)?;
    check_props(&node.props)?;
    check_embedding(state, &node.props)?;
    node.updated_at = now_ms;
    push_op(state, ops, WalOp::PutNode(node))?;
    Ok(OpResult::Node { id, created: false })
}

/// A `Delete` of node `key` with its edges (nothing when it does not exist).
fn delete_node(state: &mut State, ops: &mut Vec<WalOp>, key: &str) -> Result<OpResult> {
    let Some(id) = state.node_id(key) else {
        return Ok(OpResult::NodeDeleted {
            id: None,
            edges_removed: 0,
        });
    };
    let incident = state.incident_edges(id);
    let n = incident.len() as u64;
    for (edge, source, target, edge_type) in incident {
        push_op(
            state,
            ops,
            WalOp::RemoveEdge {
                id: edge,
                source,
                target,
                edge_type,
            },
        )?;
    }
    push_op(state, ops, WalOp::DeleteNode { id })?;
    Ok(OpResult::NodeDeleted {
        id: Some(id),
        edges_removed: n,
    })
}

/// A `Link` from `source` to `target` of type `edge_type` (both nodes must exist; an
/// existing edge of that triple is left as it is).
fn link(
    state: &mut State,
    ops: &mut Vec<WalOp>,
    (source, edge_type, target): (&str, &str, &str),
    props: &EdgeProps,
    now_ms: u64,
) -> Result<OpResult> {
    check_type_name(edge_type)?;
    check_edge_props(props)?;
    let s = state.node_id(source).ok_or_else(|| Error::NodeNotFound {
        key: source.to_string(),
    })?;
    let t = state.node_id(target).ok_or_else(|| Error::NodeNotFound {
        key: target.to_string(),
    })?;
    let ty = intern_type(state, ops, edge_type)?;
    if let Some(edge) = state.edge_by_triple(s, ty, t) {
        return Ok(OpResult::Linked {
            edge,
            created: false,
        });
    }
    let edge = EdgeId(state.next_edge_id);
    let valid_from = props.valid_from.unwrap_or(now_ms);
    check_interval(valid_from, props.valid_to)?;
    let e = Edge {
        id: edge,
        source: s,
        target: t,
        edge_type: ty,
        weight: props.weight,
        props: props.props.clone(),
        created_at: now_ms,
        valid_from,
        valid_to: props.valid_to,
    };
    push_op(state, ops, WalOp::AddEdge(e))?;
    Ok(OpResult::Linked {
        edge,
        created: true,
    })
}

/// The live edge `source -edge_type-> target`, by keys and type name.
fn edge_by_keys(state: &State, source: &str, edge_type: &str, target: &str) -> Option<EdgeId> {
    match (
        state.node_id(source),
        state.type_ids.get(edge_type),
        state.node_id(target),
    ) {
        (Some(s), Some(&t), Some(d)) => state.edge_by_triple(s, TypeId(t), d),
        _ => None,
    }
}

/// Ends live edge `edge`'s validity at `at`.
fn end_edge(state: &mut State, ops: &mut Vec<WalOp>, edge: EdgeId, at: u64) -> Result<OpResult> {
    let e = state
        .edge(edge)?
        .ok_or_else(|| Error::invalid_arg("edge", format!("edge {} does not exist", edge.0)))?;
    if let Some(to) = e.valid_to {
        return Err(Error::invalid_arg(
            "edge",
            format!("edge {} already ended (valid_to {to} ms)", edge.0),
        ));
    }
    check_interval(e.valid_from, Some(at))?;
    let op = WalOp::SetEdgeValidity {
        id: e.id,
        valid_from: e.valid_from,
        valid_to: Some(at),
    };
    push_op(state, ops, op)?;
    Ok(OpResult::Ended {
        edge: e.id,
        valid_to: at,
    })
}

/// Applies a resolved operation to the working state and records it for the WAL.
fn push_op(state: &mut State, ops: &mut Vec<WalOp>, op: WalOp) -> Result<()> {
    state.apply(&op).map_err(|e| {
        Error::Internal(format!("a resolved operation does not fit the state: {e}"))
    })?;
    ops.push(op);
    Ok(())
}

fn remove_edge(state: &mut State, ops: &mut Vec<WalOp>, e: &Arc<Edge>) -> Result<()> {
    let op = WalOp::RemoveEdge {
        id: e.id,
        source: e.source,
        target: e.target,
        edge_type: e.edge_type,
    };
    push_op(state, ops, op)
}

fn new_node_id(state: &State) -> Result<NodeId> {
    if u64::from(state.node_bound) >= limits::NODES_MAX {
        return Err(Error::limit(
            "node ids allocated",
            u64::from(state.node_bound) + 1,
            limits::NODES_MAX,
        ));
    }
    Ok(NodeId(state.node_bound))
}

fn intern_type(state: &mut State, ops: &mut Vec<WalOp>, name: &str) -> Result<TypeId> {
    if let Some(&t) = state.type_ids.get(name) {
        return Ok(TypeId(t));
    }
    let id = next_type_id(state)?;
    let op = WalOp::NewType {
        id,
        name: name.to_owned(),
    };
    push_op(state, ops, op)?;
    Ok(id)
}

/// The id a new edge type of `state` gets, within [`limits::EDGE_TYPES_MAX`] (commits and
/// bulk loads both take their new types' ids here).
pub(super) fn next_type_id(state: &State) -> Result<TypeId> {
    u16::try_from(state.types.len())
        .ok()
        .filter(|&x| (x as usize) < limits::EDGE_TYPES_MAX)
        .map(TypeId)
        .ok_or_else(|| {
            Error::limit(
                "edge types",
                state.types.len() as u64 + 1,
                limits::EDGE_TYPES_MAX as u64,
            )
        })
}
