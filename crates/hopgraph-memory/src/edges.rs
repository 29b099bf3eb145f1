//! `link` and `unlink` (HUSK's graph tools).

use serde::Serialize;
use serde_json::Value;

use super::{
    ToolError, ToolErrorKind, check_edge_type, check_metadata, engine_error, number_f32, rfc3339,
};
use hopgraph::Database;
use hopgraph::Error;
use hopgraph::{Edge, EdgeProps, Props};
use hopgraph::{EdgeId, limits};
use hopgraph::{OpResult, Snapshot, WriteBatch};

/// A `link` request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkRequest {
    /// Source memory id.
    pub source_id: String,
    /// Target memory id.
    pub target_id: String,
    /// Edge type (free string; `caused_by`, `contradicts`, `supersedes`, `related_to`
    /// recommended).
    pub edge_type: String,
    /// Edge metadata, at most 4 KB of compact JSON.
    pub metadata: Option<Props>,
    /// Edge weight (default 1.0).
    pub weight: Option<f64>,
}

/// An edge as `link` returns it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EdgeView {
    /// The edge id (a decimal string).
    pub id: String,
    /// Source memory id.
    pub source_memory_id: String,
    /// Target memory id.
    pub target_memory_id: String,
    /// Edge type.
    pub edge_type: String,
    /// Edge metadata (`{}` when none).
    pub metadata: Props,
    /// Edge weight.
    pub weight: Value,
    /// Creation time (RFC 3339).
    pub created_at: String,
}

impl EdgeView {
    /// The view of `edge` as seen in `snap`.
    ///
    /// # Errors
    /// A storage error when an endpoint record does not decode.
    pub fn of(snap: &Snapshot, edge: &Edge) -> Result<EdgeView, ToolError> {
        let key = |id| -> Result<String, ToolError> {
            Ok(snap
                .node(id)
                .map_err(|e| engine_error(&e))?
                .map(|n| n.key.clone())
                .unwrap_or_default())
        };
        Ok(EdgeView {
            id: edge.id.0.to_string(),
            source_memory_id: key(edge.source)?,
            target_memory_id: key(edge.target)?,
            edge_type: snap.type_name(edge.edge_type).unwrap_or("").to_owned(),
            metadata: edge.props.clone(),
            weight: number_f32(edge.weight),
            created_at: rfc3339(edge.created_at),
        })
    }
}

/// `link`: creates the edge `source -edge_type-> target`.
///
/// # Errors
/// `Source memory not found.`, `Target memory not found.`,
/// `Edge <type> already exists between <source> and <target>`, invalid arguments
/// (oversized metadata, a weight that is not a finite number), storage errors.
pub fn link(db: &Database, req: &LinkRequest) -> Result<EdgeView, ToolError> {
    check_edge_type("edge_type", &req.edge_type)?;
    let metadata = req.metadata.clone().unwrap_or_default();
    check_metadata("metadata", &metadata, limits::EDGE_PROPS_BYTES_MAX)?;
    let weight = req.weight.unwrap_or(1.0);
    #[allow(clippy::cast_possible_truncation)] // finiteness checked below
    let weight32 = weight as f32;
    if !weight32.is_finite() {
        return Err(ToolError::invalid_arg(
            "weight",
            format!("must be a finite 32-bit float, got {weight}"),
        ));
    }
    let source_missing = || ToolError::new(ToolErrorKind::NotFound, "Source memory not found.");
    let target_missing = || ToolError::new(ToolErrorKind::NotFound, "Target memory not found.");
    let snap = db.snapshot();
    if snap.node_id(&req.source_id).is_none() {
        return Err(source_missing());
    }
    if snap.node_id(&req.target_id).is_none() {
        return Err(target_missing());
    }
    let mut batch = WriteBatch::new();
    batch.link(
        req.source_id.clone(),
        req.edge_type.clone(),
        req.target_id.clone(),
        EdgeProps {
            weight: weight32,
            props: metadata,
            ..EdgeProps::default()
        },
    );
    let info = match db.commit(batch) {
        Ok(info) => info,
        // Another writer deleted an endpoint since our snapshot.
        Err(Error::NodeNotFound { key }) if key == req.source_id => return Err(source_missing()),
        Err(Error::NodeNotFound { .. }) => return Err(target_missing()),
        Err(e) => return Err(engine_error(&e)),
    };
    let Some(&OpResult::Linked { edge, created }) = info.results.first() else {
        return Err(ToolError::new(
            ToolErrorKind::Internal,
            "Storage error: link returned no edge",
        ));
    };
    if !created {
        return Err(ToolError::new(
            ToolErrorKind::AlreadyExists,
            format!(
                "Edge {} already exists between {} and {}",
                req.edge_type, req.source_id, req.target_id
            ),
        ));
    }
    let snap = db.snapshot();
    let e = snap
        .edge(edge)
        .map_err(|e| engine_error(&e))?
        .ok_or_else(|| ToolError::new(ToolErrorKind::NotFound, "Edge not found."))?;
    EdgeView::of(&snap, &e)
}

/// What `unlink` returns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnlinkResult {
    /// The removed edge.
    pub edge_id: String,
    /// Always true.
    pub removed: bool,
}

/// Parses an edge id as the tools render it (a decimal string).
pub fn parse_edge_id(s: &str) -> Option<EdgeId> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().map(EdgeId)
}

/// `unlink`: removes an edge by id.
///
/// # Errors
/// `Edge not found.`; storage errors.
pub fn unlink(db: &Database, edge_id: &str) -> Result<UnlinkResult, ToolError> {
    let not_found = || ToolError::new(ToolErrorKind::NotFound, "Edge not found.");
    let edge = parse_edge_id(edge_id).ok_or_else(not_found)?;
    let mut batch = WriteBatch::new();
    batch.unlink(edge);
    let info = db.commit(batch).map_err(|e| engine_error(&e))?;
    match info.results.first() {
        Some(OpResult::Unlinked { edge: Some(_) }) => Ok(UnlinkResult {
            edge_id: edge_id.to_owned(),
            removed: true,
        }),
        _ => Err(not_found()),
    }
}
