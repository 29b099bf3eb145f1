//! `link` and `unlink` (HUSK's graph tools), and `end_link`.

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

use crate::time::{check_interval, now_ms, opt_time, parse_time};

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
    /// Start of validity (RFC 3339); default: when it is written.
    pub valid_from: Option<String>,
    /// End of validity (RFC 3339, exclusive); default: never ends.
    pub valid_to: Option<String>,
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
    /// Start of validity (RFC 3339).
    pub valid_from: String,
    /// End of validity (RFC 3339); `null`: still valid.
    pub valid_to: Option<String>,
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
            valid_from: rfc3339(edge.valid_from),
            valid_to: edge.valid_to.map(rfc3339),
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
    let valid_from = opt_time("valid_from", req.valid_from.as_deref())?;
    let valid_to = opt_time("valid_to", req.valid_to.as_deref())?;
    check_interval(valid_from.unwrap_or_else(now_ms), valid_to)?;
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
            valid_from,
            valid_to,
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

/// What `end_link` returns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EndLinkResult {
    /// The edge.
    pub edge_id: String,
    /// Its end of validity now (RFC 3339).
    pub valid_to: String,
}

/// `end_link`: the edge stays in the store (for history and `as_of` reads) and stops being
/// valid at `at` (RFC 3339; default now).
///
/// # Errors
/// `Edge not found.`; `Edge <id> already ended (valid_to <time>).`; an `at` not after the
/// edge's `valid_from`; storage errors. Nothing is written on an error.
pub fn end_link(
    db: &Database,
    edge_id: &str,
    at: Option<&str>,
) -> Result<EndLinkResult, ToolError> {
    let not_found = || ToolError::new(ToolErrorKind::NotFound, "Edge not found.");
    let at = match at {
        Some(s) => parse_time("at", s)?,
        None => now_ms(),
    };
    let id = parse_edge_id(edge_id).ok_or_else(not_found)?;
    let edge = db
        .snapshot()
        .edge(id)
        .map_err(|e| engine_error(&e))?
        .ok_or_else(not_found)?;
    if let Some(to) = edge.valid_to {
        return Err(already_ended(edge_id, to));
    }
    if at <= edge.valid_from {
        return Err(ToolError::invalid_arg(
            "at",
            format!(
                "must be after the edge's valid_from {}, got {}",
                rfc3339(edge.valid_from),
                rfc3339(at)
            ),
        ));
    }
    let mut batch = WriteBatch::new();
    batch.end_edge(id, at);
    match db.commit(batch) {
        Ok(_) => {}
        Err(e) => {
            // Another writer got there first: answer as if we had seen it.
            let snap = db.snapshot();
            return Err(match snap.edge(id) {
                Ok(None) => not_found(),
                Ok(Some(edge)) if edge.valid_to.is_some() => {
                    already_ended(edge_id, edge.valid_to.unwrap_or_default())
                }
                _ => engine_error(&e),
            });
        }
    }
    Ok(EndLinkResult {
        edge_id: edge_id.to_owned(),
        valid_to: rfc3339(at),
    })
}

fn already_ended(edge_id: &str, valid_to: u64) -> ToolError {
    ToolError::new(
        ToolErrorKind::InvalidArgument,
        format!(
            "Edge {edge_id} already ended (valid_to {}).",
            rfc3339(valid_to)
        ),
    )
}
