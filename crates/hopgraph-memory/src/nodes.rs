//! `create_memory`, `update_memory`, `get_memory` and `delete_memory`.

use serde::Serialize;
use serde_json::Value;

use super::{
    MEMORY_TYPES, ToolError, ToolErrorKind, check_key, check_metadata, check_range, engine_error,
    f32_to_f64, new_uuid_v4, node_status, non_empty, number_f32, rfc3339,
};
use hopgraph::Database;
use hopgraph::Error;
use hopgraph::kernel::Adjacency;
use hopgraph::{Direction, TypeFilter, limits};
use hopgraph::{Node, NodeProps, Props};
use hopgraph::{OpResult, Snapshot, WriteBatch};

use crate::time::{
    STALE_KEY, StaleView, check_interval, check_not_reserved, now_ms, opt_time, stale_of,
    visible_metadata,
};

/// The `Memory not found.` error of every tool that takes a `memory_id`.
pub fn memory_not_found() -> ToolError {
    ToolError::new(ToolErrorKind::NotFound, "Memory not found.")
}

/// A `create_memory` request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CreateMemoryRequest {
    /// One of [`MEMORY_TYPES`].
    pub memory_type: String,
    /// The text of the memory.
    pub content: String,
    /// Optional embedding, 1–4096 finite numbers.
    pub embedding: Option<Vec<f64>>,
    /// 0.0–1.0, default 0.0.
    pub importance: Option<f64>,
    /// Free-form metadata (default `{}`); `metadata.status` is the memory's status.
    pub metadata: Option<Props>,
    /// Caller-chosen id; a new UUID when `None`.
    pub id: Option<String>,
    /// Optional title.
    pub title: Option<String>,
    /// Return the embedding in the result.
    pub echo_embedding: bool,
    /// Start of validity (RFC 3339); default: when it is written.
    pub valid_from: Option<String>,
    /// End of validity (RFC 3339, exclusive); default: never ends.
    pub valid_to: Option<String>,
}

/// A memory as `create_memory` and `get_memory` return it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryView {
    /// The memory id (node key).
    pub id: String,
    /// The memory type (node kind); `null` when unset.
    #[serde(rename = "type")]
    pub memory_type: Option<String>,
    /// The title; `null` when unset.
    pub title: Option<String>,
    /// The content.
    pub content: String,
    /// The importance.
    pub importance: Value,
    /// The metadata object.
    pub metadata: Props,
    /// `metadata.status`, `null` when unset.
    pub status: Option<String>,
    /// Creation time (RFC 3339).
    pub created_at: String,
    /// Start of validity (RFC 3339).
    pub valid_from: String,
    /// End of validity (RFC 3339); `null`: still valid.
    pub valid_to: Option<String>,
    /// Set when the memory was derived from one that stopped being valid; `null` otherwise.
    pub stale: Option<StaleView>,
    /// The embedding, only when asked for (`echo_embedding`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Vec<f64>>,
}

impl MemoryView {
    /// The view of `node`; the embedding only when `with_embedding`.
    pub fn of(node: &Node, with_embedding: bool) -> MemoryView {
        MemoryView {
            id: node.key.clone(),
            memory_type: non_empty(&node.props.kind),
            title: non_empty(&node.props.title),
            content: node.props.content.clone(),
            importance: number_f32(node.props.importance),
            metadata: visible_metadata(&node.props.props),
            status: non_empty(node_status(node)),
            created_at: rfc3339(node.created_at),
            valid_from: rfc3339(node.valid_from),
            valid_to: node.valid_to.map(rfc3339),
            stale: stale_of(node),
            embedding: if with_embedding {
                node.props
                    .embedding
                    .as_ref()
                    .map(|e| e.iter().map(|&x| f32_to_f64(x)).collect())
            } else {
                None
            },
        }
    }
}

/// Checks an embedding given as argument `name` and converts it to `f32`.
///
/// # Errors
/// ``Invalid argument `name`: ...`` for a wrong length or a value that is not a finite
/// `f32`.
pub fn check_embedding(name: &str, e: &[f64]) -> Result<Vec<f32>, ToolError> {
    let max = limits::EMBEDDING_DIMS_MAX;
    if e.is_empty() || e.len() > max {
        return Err(ToolError::invalid_arg(
            name,
            format!("must have 1 to {max} numbers, got {}", e.len()),
        ));
    }
    e.iter()
        .map(|&x| {
            #[allow(clippy::cast_possible_truncation)] // range checked below
            let y = x as f32;
            if y.is_finite() {
                Ok(y)
            } else {
                Err(ToolError::invalid_arg(
                    name,
                    format!("values must be finite 32-bit floats, got {x}"),
                ))
            }
        })
        .collect()
}

/// `create_memory`: stores a new memory and returns it.
///
/// # Errors
/// Invalid arguments (type outside [`MEMORY_TYPES`], importance outside 0–1, bad embedding,
/// oversized metadata or content), `Memory <id> already exists.`, storage errors.
pub fn create_memory(db: &Database, req: &CreateMemoryRequest) -> Result<MemoryView, ToolError> {
    let new = prepare_memory(req)?;
    let id = new.id.clone();
    let mut batch = WriteBatch::new();
    new.write(&mut batch);
    commit_new(db, batch)?;
    let node = read_node(&db.snapshot(), &id)?.ok_or_else(memory_not_found)?;
    Ok(MemoryView::of(&node, req.echo_embedding))
}

/// A new memory, checked and ready to be written.
#[derive(Clone, Debug)]
pub(crate) struct NewMemory {
    /// Its key.
    pub id: String,
    props: NodeProps,
    valid_from: Option<u64>,
    valid_to: Option<u64>,
}

impl NewMemory {
    /// Adds the memory (and its interval) to `batch`.
    pub fn write(self, batch: &mut WriteBatch) {
        let (from, to) = (self.valid_from, self.valid_to);
        batch.create_node(self.id.clone(), self.props);
        if from.is_some() || to.is_some() {
            batch.update_node(self.id, interval_patch(from, to));
        }
    }

    /// Starts the memory's validity at `t` instead.
    pub fn valid_from(&mut self, t: u64) {
        self.valid_from = Some(t);
    }
}

/// Commits a batch that creates memories, with the contract's message for an id taken.
pub(crate) fn commit_new(
    db: &Database,
    batch: WriteBatch,
) -> Result<hopgraph::CommitInfo, ToolError> {
    db.commit(batch).map_err(commit_error)
}

/// The tool error of a failed commit that writes memories: an existing key is
/// "already exists", the rest as [`engine_error`].
pub(crate) fn commit_error(e: Error) -> ToolError {
    match e {
        Error::NodeExists { key } => ToolError::new(
            ToolErrorKind::AlreadyExists,
            format!("Memory {key} already exists."),
        ),
        e => engine_error(&e),
    }
}

/// Checks a `create_memory` request and builds the memory it asks for.
pub(crate) fn prepare_memory(req: &CreateMemoryRequest) -> Result<NewMemory, ToolError> {
    if !MEMORY_TYPES.contains(&req.memory_type.as_str()) {
        return Err(ToolError::invalid_arg(
            "type",
            format!(
                "must be one of {}, got {}",
                MEMORY_TYPES.join(", "),
                super::quote_short(&req.memory_type)
            ),
        ));
    }
    if req.content.len() > limits::NODE_CONTENT_BYTES_MAX {
        return Err(ToolError::invalid_arg(
            "content",
            format!(
                "is {} bytes, the limit is {}",
                req.content.len(),
                limits::NODE_CONTENT_BYTES_MAX
            ),
        ));
    }
    let importance = check_range("importance", req.importance.unwrap_or(0.0), 0.0, 1.0)?;
    let embedding = match &req.embedding {
        Some(e) => Some(check_embedding("embedding", e)?),
        None => None,
    };
    let metadata = req.metadata.clone().unwrap_or_default();
    check_metadata("metadata", &metadata, limits::NODE_PROPS_BYTES_MAX)?;
    check_not_reserved("metadata", &metadata)?;
    let valid_from = opt_time("valid_from", req.valid_from.as_deref())?;
    let valid_to = opt_time("valid_to", req.valid_to.as_deref())?;
    // Without `valid_from` the commit time starts the interval; now is its lower bound.
    check_interval(valid_from.unwrap_or_else(now_ms), valid_to)?;
    let title = req.title.clone().unwrap_or_default();
    if title.len() > TITLE_BYTES_MAX {
        return Err(ToolError::invalid_arg(
            "title",
            format!("is {} bytes, the limit is {TITLE_BYTES_MAX}", title.len()),
        ));
    }
    let id = match &req.id {
        Some(id) => {
            check_key("id", id)?;
            id.clone()
        }
        None => new_uuid_v4(),
    };
    let status = match metadata.get("status") {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    #[allow(clippy::cast_possible_truncation)] // 0.0..=1.0
    let importance = importance as f32;
    let props = NodeProps {
        kind: req.memory_type.clone(),
        title,
        content: req.content.clone(),
        importance,
        status,
        props: metadata,
        embedding,
    };
    Ok(NewMemory {
        id,
        props,
        valid_from,
        valid_to,
    })
}

/// The patch that gives a node the interval `[from, to)` (`None`: as it is).
pub(crate) fn interval_patch(from: Option<u64>, to: Option<u64>) -> hopgraph::NodePatch {
    hopgraph::NodePatch {
        valid_from: from,
        valid_to: to.map(Some),
        ..hopgraph::NodePatch::default()
    }
}

/// Longest title accepted, in bytes.
pub const TITLE_BYTES_MAX: usize = 4096;

/// An `update_memory` request: every field but `memory_id` optional; what is not given
/// stays as it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateMemoryRequest {
    /// The memory to change.
    pub memory_id: String,
    /// New content.
    pub content: Option<String>,
    /// New type (episodic, semantic, procedural, strategic).
    pub memory_type: Option<String>,
    /// New importance (0.0-1.0).
    pub importance: Option<f64>,
    /// New metadata: replaces the object (its `status` becomes the memory's status).
    pub metadata: Option<Props>,
    /// New title.
    pub title: Option<String>,
    /// New embedding (a server with a model computes one when content or title change
    /// and none is given).
    pub embedding: Option<Vec<f64>>,
    /// Return the embedding in the result.
    pub echo_embedding: bool,
    /// New start of validity (RFC 3339).
    pub valid_from: Option<String>,
    /// New end of validity (RFC 3339, exclusive).
    pub valid_to: Option<String>,
}

impl UpdateMemoryRequest {
    /// Whether the request changes the text a model embeds (title or content).
    pub fn changes_text(&self) -> bool {
        self.content.is_some() || self.title.is_some()
    }
}

/// `update_memory`: changes the given fields of an existing memory in one atomic commit,
/// keeping its id, `created_at` and edges; the engine re-indexes its text (and its
/// embedding when one is given) and sets `updated_at`. Any update clears the memory's
/// staleness flag (the agent has re-checked it).
///
/// # Errors
/// `Memory not found.`, invalid arguments (as `create_memory`'s; an interval that would
/// end before it starts), storage errors.
pub fn update_memory(db: &Database, req: &UpdateMemoryRequest) -> Result<MemoryView, ToolError> {
    check_key("memory_id", &req.memory_id)?;
    if let Some(t) = &req.memory_type
        && !MEMORY_TYPES.contains(&t.as_str())
    {
        return Err(ToolError::invalid_arg(
            "type",
            format!(
                "must be one of {}, got {}",
                MEMORY_TYPES.join(", "),
                super::quote_short(t)
            ),
        ));
    }
    if let Some(c) = &req.content
        && c.len() > limits::NODE_CONTENT_BYTES_MAX
    {
        return Err(ToolError::invalid_arg(
            "content",
            format!(
                "is {} bytes, the limit is {}",
                c.len(),
                limits::NODE_CONTENT_BYTES_MAX
            ),
        ));
    }
    if let Some(t) = &req.title
        && t.len() > TITLE_BYTES_MAX
    {
        return Err(ToolError::invalid_arg(
            "title",
            format!("is {} bytes, the limit is {TITLE_BYTES_MAX}", t.len()),
        ));
    }
    let importance = match req.importance {
        // 0.0..=1.0 after the check.
        #[allow(clippy::cast_possible_truncation)]
        Some(x) => Some(check_range("importance", x, 0.0, 1.0)? as f32),
        None => None,
    };
    if let Some(m) = &req.metadata {
        check_metadata("metadata", m, limits::NODE_PROPS_BYTES_MAX)?;
        check_not_reserved("metadata", m)?;
    }
    let valid_from = opt_time("valid_from", req.valid_from.as_deref())?;
    let valid_to = opt_time("valid_to", req.valid_to.as_deref())?;
    if valid_from.is_some() || valid_to.is_some() {
        // The interval the memory would have (the engine checks again in the commit).
        let old = read_node(&db.snapshot(), &req.memory_id)?.ok_or_else(memory_not_found)?;
        check_interval(
            valid_from.unwrap_or(old.valid_from),
            valid_to.or(old.valid_to),
        )?;
    }
    let embedding = match &req.embedding {
        Some(e) => Some(Some(check_embedding("embedding", e)?)),
        None => None,
    };
    let status = req.metadata.as_ref().map(|m| match m.get("status") {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    });
    // New metadata replaces the object (and with it the flag); else the flag is removed.
    let clear_stale = req.metadata.is_none().then(|| {
        let mut m = Props::new();
        m.insert(STALE_KEY.into(), Value::Null);
        m
    });
    let patch = hopgraph::NodePatch {
        kind: req.memory_type.clone(),
        title: req.title.clone(),
        content: req.content.clone(),
        importance,
        status,
        props: req.metadata.clone(),
        merge_props: clear_stale,
        embedding,
        valid_from,
        valid_to: valid_to.map(Some),
    };
    let mut batch = WriteBatch::new();
    batch.update_node(req.memory_id.clone(), patch);
    match db.commit(batch) {
        Ok(_) => {}
        Err(Error::NodeNotFound { .. }) => return Err(memory_not_found()),
        Err(e) => return Err(engine_error(&e)),
    }
    let node = read_node(&db.snapshot(), &req.memory_id)?.ok_or_else(memory_not_found)?;
    Ok(MemoryView::of(&node, req.echo_embedding))
}

/// The live node `key`, if any.
///
/// # Errors
/// A storage error when its record does not decode.
pub fn read_node(snap: &Snapshot, key: &str) -> Result<Option<std::sync::Arc<Node>>, ToolError> {
    snap.node_by_key(key).map_err(|e| engine_error(&e))
}

/// Edge counts of a memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EdgeCounts {
    /// Edges leaving the memory.
    pub outgoing: u64,
    /// Edges entering it.
    pub incoming: u64,
}

/// What `get_memory` returns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GetMemoryResult {
    /// The memory.
    #[serde(flatten)]
    pub memory: MemoryView,
    /// Last change (RFC 3339).
    pub updated_at: String,
    /// Edge counts.
    pub edges: EdgeCounts,
}

/// `get_memory`: one memory with its edge counts.
///
/// # Errors
/// `Memory not found.`; storage errors.
pub fn get_memory(snap: &Snapshot, memory_id: &str) -> Result<GetMemoryResult, ToolError> {
    get_memory_as_of(snap, memory_id, None)
}

/// `get_memory` with `as_of` (ms since the Unix epoch): a memory not valid then is
/// `Memory not found.`, and only the edges valid then are counted.
///
/// # Errors
/// `Memory not found.`; storage errors.
pub fn get_memory_as_of(
    snap: &Snapshot,
    memory_id: &str,
    as_of: Option<u64>,
) -> Result<GetMemoryResult, ToolError> {
    let node = read_node(snap, memory_id)?.ok_or_else(memory_not_found)?;
    let edges = match as_of {
        None => EdgeCounts {
            outgoing: snap.degree(node.id, Direction::Out, &TypeFilter::All),
            incoming: snap.degree(node.id, Direction::In, &TypeFilter::All),
        },
        Some(t) => {
            if !node.valid_at(t) {
                return Err(memory_not_found());
            }
            let view = snap.as_of(t);
            let count = |dir| {
                let mut n = 0u64;
                view.for_each_edge(node.id, dir, &TypeFilter::All, |_| n += 1);
                n
            };
            EdgeCounts {
                outgoing: count(hopgraph::EdgeDir::Out),
                incoming: count(hopgraph::EdgeDir::In),
            }
        }
    };
    Ok(GetMemoryResult {
        memory: MemoryView::of(&node, false),
        updated_at: rfc3339(node.updated_at),
        edges,
    })
}

/// What `delete_memory` returns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeleteMemoryResult {
    /// The deleted memory.
    pub id: String,
    /// Always true.
    pub deleted: bool,
    /// Edges removed with it.
    pub edges_removed: u64,
}

/// `delete_memory`: deletes a memory and its edges.
///
/// # Errors
/// `Memory not found.`; storage errors.
pub fn delete_memory(db: &Database, memory_id: &str) -> Result<DeleteMemoryResult, ToolError> {
    let mut batch = WriteBatch::new();
    batch.delete_node(memory_id);
    let info = db.commit(batch).map_err(|e| engine_error(&e))?;
    match info.results.first() {
        Some(OpResult::NodeDeleted {
            id: Some(_),
            edges_removed,
        }) => Ok(DeleteMemoryResult {
            id: memory_id.to_owned(),
            deleted: true,
            edges_removed: *edges_removed,
        }),
        _ => Err(memory_not_found()),
    }
}
