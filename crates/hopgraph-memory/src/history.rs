//! Supersession, the staleness cascade and the history chain: `supersede_memory` and
//! `memory_history`.
//!
//! A memory is superseded by another in one atomic, durable commit: the new memory (valid
//! from the moment `at`), the edge `new -supersedes-> old` (valid from `at`, with
//! `metadata.reason`), and the old memory's end of validity (`valid_to = at`) and status
//! `superseded`. In the same commit every current memory derived from the old one is
//! flagged stale: X is derived from Y when an edge `X -t-> Y` has a type t of the
//! request's `derived_edge_types`; the cascade walks such edges backwards from the old
//! memory, at most [`STALE_HOPS_MAX`] of them, through memories and edges that are current
//! (valid now), with the engine's expansion kernel on the snapshot as of now. The flag
//! (`{since, because, hops}`, see [`crate::time`]) is a property of the node, so it is
//! written by the same commit and read with the node; `update_memory` clears it.
//!
//! The checks and the cascade are computed on a snapshot, and the batch commits only if
//! the memory superseded (and `by_id`'s) is unchanged since (see [`crate::planned`]);
//! otherwise they are computed again on a newer snapshot. So of two concurrent
//! supersessions of one memory only the first succeeds (the second then finds it no
//! longer current). A derivation edge that another client adds between the snapshot and
//! the commit is not seen by the cascade (its memory is not flagged); making the batch
//! conditional on the whole store (`WriteBatch::expect_lsn`) would close that too, but
//! under steady concurrent writes such a batch rarely commits.

use serde::Serialize;
use serde_json::Value;

use crate::nodes::{
    CreateMemoryRequest, GetMemoryResult, NewMemory, commit_error, get_memory, memory_not_found,
    prepare_memory, read_node,
};
use crate::planned::commit_planned;
use crate::time::{STALE_KEY, Validity, now_ms, opt_time, stale_value};
use crate::{
    ToolError, ToolErrorKind, check_edge_type, check_key, engine_error, non_empty, rfc3339,
};
use hopgraph::kernel::{self, ExpandQuery, Scratch};
use hopgraph::{
    Database, Direction, EdgeProps, Error, NodeId, NodePatch, OpResult, Props, Snapshot,
};
use hopgraph::{TypeFilter, WriteBatch};

/// The edge type that links a memory to the one it replaces.
pub const SUPERSEDES: &str = "supersedes";
/// `derived_edge_types` when the request gives none.
pub const DERIVED_EDGE_TYPES: [&str; 3] = ["derived_from", "depends_on", "based_on"];
/// Most derivation edges between a stale memory and the superseded one.
pub const STALE_HOPS_MAX: u32 = 5;
/// Most memories one supersession flags stale (the nearest first).
pub const STALE_MAX: usize = 10_000;
/// Most stale memories listed in a `supersede_memory` result (the nearest first).
pub const STALE_LISTED_MAX: usize = 100;
/// Most entries of a `memory_history` answer.
pub const HISTORY_MAX: usize = 100;
/// Most names in `derived_edge_types`.
pub const DERIVED_TYPES_MAX: usize = 100;
/// Longest `reason`, in bytes (it is edge metadata, at most 4 KB).
pub const REASON_BYTES_MAX: usize = 2048;

/// A `supersede_memory` request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SupersedeRequest {
    /// The memory being replaced.
    pub memory_id: String,
    /// An existing memory that replaces it (or give `new_memory`).
    pub by_id: Option<String>,
    /// The replacing memory to create (its `valid_from`/`valid_to` are ignored: it is
    /// valid from `at`).
    pub new_memory: Option<CreateMemoryRequest>,
    /// When the old memory stops being valid and the new one starts (RFC 3339; default
    /// now). Must be after the old memory's `valid_from`.
    pub at: Option<String>,
    /// Why (stored as the `supersedes` edge's `metadata.reason`).
    pub reason: Option<String>,
    /// The edge types that mean "derived from" (default [`DERIVED_EDGE_TYPES`]).
    pub derived_edge_types: Option<Vec<String>>,
}

/// A memory flagged stale by a supersession.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StaleEntry {
    /// Its id.
    pub id: String,
    /// Its title (`null` when none).
    pub title: Option<String>,
    /// Derivation edges between it and the superseded memory.
    pub hops: u32,
}

/// What `supersede_memory` returns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SupersedeResult {
    /// The superseded memory, as `get_memory` shows it now.
    pub old: GetMemoryResult,
    /// The memory that replaces it.
    pub new: GetMemoryResult,
    /// The `supersedes` edge.
    pub edge_id: String,
    /// The memories flagged stale, nearest first, then by id (at most
    /// [`STALE_LISTED_MAX`]).
    pub stale: Vec<StaleEntry>,
    /// More memories were flagged than `stale` lists, or the cascade stopped at
    /// [`STALE_MAX`].
    pub truncated: bool,
}

/// The error for an old memory that is not current.
fn not_current(snap: &Snapshot, key: &str, node: &hopgraph::Node, now: u64) -> ToolError {
    let detail = if node.valid_from > now {
        format!("valid from {}", rfc3339(node.valid_from))
    } else {
        let until = rfc3339(node.valid_to.unwrap_or(now));
        let by = snap
            .type_id(SUPERSEDES)
            .map(|t| snap.neighbors(node.id, Direction::In, &TypeFilter::only([t])))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|n| snap.node(n.node).ok().flatten())
            .map(|n| n.key.clone())
            .min();
        match by {
            Some(by) => format!("superseded by {by} at {until}"),
            None => format!("valid until {until}"),
        }
    };
    ToolError::new(
        ToolErrorKind::InvalidArgument,
        format!("Memory {key} is not current ({detail})"),
    )
}

/// `supersede_memory`: replaces a current memory by a new or an existing one, in one
/// durable commit, and flags what was derived from it stale (see the module docs).
///
/// # Errors
/// `Memory not found.` (old or `by_id`); `by_id` equal to `memory_id`; both or neither of
/// `by_id` and a new memory; an old memory that is not current (`Memory <id> is not
/// current (superseded by <id> at <time>)`, `(valid until <time>)`, or `(valid from
/// <time>)` for one whose validity has not begun); `at` not after the old memory's
/// `valid_from`; a new memory's invalid fields or taken id; an existing
/// `new -supersedes-> old` edge; storage errors. Nothing is written on an error.
pub fn supersede_memory(
    db: &Database,
    scratch: &mut Scratch,
    req: &SupersedeRequest,
) -> Result<SupersedeResult, ToolError> {
    check_key("memory_id", &req.memory_id)?;
    let now = now_ms();
    let at = opt_time("at", req.at.as_deref())?.unwrap_or(now);
    let derived: Vec<String> = match &req.derived_edge_types {
        Some(t) => t.clone(),
        None => DERIVED_EDGE_TYPES.iter().map(|&s| s.to_owned()).collect(),
    };
    if derived.len() > DERIVED_TYPES_MAX {
        return Err(ToolError::invalid_arg(
            "derived_edge_types",
            format!(
                "must list at most {DERIVED_TYPES_MAX} types, got {}",
                derived.len()
            ),
        ));
    }
    for t in &derived {
        check_edge_type("derived_edge_types", t)?;
    }
    let mut edge_props = Props::new();
    if let Some(r) = &req.reason {
        if r.len() > REASON_BYTES_MAX {
            return Err(ToolError::invalid_arg(
                "reason",
                format!("is {} bytes, the limit is {REASON_BYTES_MAX}", r.len()),
            ));
        }
        edge_props.insert("reason".into(), Value::String(r.clone()));
    }
    let new_memory = match (&req.by_id, &req.new_memory) {
        (Some(_), Some(_)) => {
            return Err(ToolError::invalid_arg(
                "by_id",
                "give either by_id or the new memory's fields (type, content, ...), not both",
            ));
        }
        (None, None) => {
            return Err(ToolError::invalid_arg(
                "by_id",
                "give by_id (an existing memory) or the new memory's type and content",
            ));
        }
        (Some(by), None) => {
            check_key("by_id", by)?;
            if *by == req.memory_id {
                return Err(ToolError::invalid_arg(
                    "by_id",
                    "must differ from memory_id (a memory cannot supersede itself)",
                ));
            }
            None
        }
        (None, Some(m)) => {
            let plain = CreateMemoryRequest {
                valid_from: None,
                valid_to: None,
                ..m.clone()
            };
            Some(prepare_memory(&plain)?)
        }
    };

    // An optimistic transaction (`crate::planned`): two concurrent supersessions of one
    // memory cannot both succeed.
    let (info, (new_key, stale, cut)) = commit_planned(
        Some(db),
        |snap| {
            let (batch, new_key, stale, cut) = plan(
                snap,
                scratch,
                req,
                new_memory.clone(),
                &derived,
                &edge_props,
                now,
                at,
            )?;
            Ok((batch, (new_key, stale, cut)))
        },
        |e| match e {
            Error::NodeNotFound { .. } => memory_not_found(),
            e => commit_error(e),
        },
    )?;
    let info = info.ok_or_else(|| {
        ToolError::new(
            ToolErrorKind::Internal,
            "Storage error: a supersession planned no writes",
        )
    })?;
    let edge = info
        .results
        .iter()
        .find_map(|r| match r {
            OpResult::Linked { edge, .. } => Some(*edge),
            _ => None,
        })
        .ok_or_else(|| {
            ToolError::new(
                ToolErrorKind::Internal,
                "Storage error: link returned no edge",
            )
        })?;
    let after = db.snapshot();
    let truncated = cut || stale.len() > STALE_LISTED_MAX;
    let mut listed = stale;
    listed.truncate(STALE_LISTED_MAX);
    Ok(SupersedeResult {
        old: get_memory(&after, &req.memory_id)?,
        new: get_memory(&after, &new_key)?,
        edge_id: edge.0.to_string(),
        stale: listed,
        truncated,
    })
}

/// What one supersession writes, planned on `snap`: the batch (the new memory if any, the
/// `supersedes` edge, the old memory's end, the stale flags), the new memory's id, the
/// memories flagged stale and whether [`STALE_MAX`] cut them.
#[allow(clippy::too_many_arguments)]
fn plan(
    snap: &Snapshot,
    scratch: &mut Scratch,
    req: &SupersedeRequest,
    mut new_memory: Option<NewMemory>,
    derived: &[String],
    edge_props: &Props,
    now: u64,
    at: u64,
) -> Result<(WriteBatch, String, Vec<StaleEntry>, bool), ToolError> {
    let old = read_node(snap, &req.memory_id)?.ok_or_else(memory_not_found)?;
    if !old.valid_at(now) {
        return Err(not_current(snap, &req.memory_id, &old, now));
    }
    if at <= old.valid_from {
        return Err(ToolError::invalid_arg(
            "at",
            format!(
                "must be after the old memory's valid_from {}, got {}",
                rfc3339(old.valid_from),
                rfc3339(at)
            ),
        ));
    }
    let new_key = match (&req.by_id, &mut new_memory) {
        (Some(by), _) => {
            let by_node = read_node(snap, by)?.ok_or_else(memory_not_found)?;
            let exists = snap
                .type_id(SUPERSEDES)
                .and_then(|t| snap.edge_by_triple(by_node.id, t, old.id));
            if exists.is_some() {
                return Err(ToolError::new(
                    ToolErrorKind::AlreadyExists,
                    format!(
                        "Edge {SUPERSEDES} already exists between {by} and {}",
                        req.memory_id
                    ),
                ));
            }
            by.clone()
        }
        (None, Some(m)) => {
            if m.id == req.memory_id {
                return Err(ToolError::new(
                    ToolErrorKind::AlreadyExists,
                    format!("Memory {} already exists.", m.id),
                ));
            }
            m.valid_from(at);
            m.id.clone()
        }
        (None, None) => return Err(memory_not_found()),
    };
    let exclude = snap.node_id(&new_key);
    let (stale, cut) = cascade(snap, scratch, old.id, exclude, derived, now)?;

    let mut batch = WriteBatch::new();
    // Conditional on the memory superseded (and the one superseding it, if it exists):
    // of two concurrent supersessions of one memory the second plans again and finds
    // it no longer current.
    batch.expect_node(req.memory_id.clone(), Some(old.clone()));
    if let Some(by) = &req.by_id {
        batch.expect_node(by.clone(), read_node(snap, by)?);
    }
    if let Some(m) = new_memory {
        m.write(&mut batch);
    }
    batch.link(
        new_key.clone(),
        SUPERSEDES,
        req.memory_id.clone(),
        EdgeProps {
            props: edge_props.clone(),
            valid_from: Some(at),
            ..EdgeProps::default()
        },
    );
    let mut merge = Props::new();
    merge.insert("status".into(), Value::String("superseded".into()));
    // Superseding a stale memory moves the question on to what was derived from it.
    merge.insert(STALE_KEY.into(), Value::Null);
    batch.update_node(
        req.memory_id.clone(),
        NodePatch {
            status: Some("superseded".into()),
            merge_props: Some(merge),
            valid_to: Some(Some(at)),
            ..NodePatch::default()
        },
    );
    for s in &stale {
        let mut flag = Props::new();
        flag.insert(STALE_KEY.into(), stale_value(at, &req.memory_id, s.hops));
        batch.update_node(
            s.id.clone(),
            NodePatch {
                merge_props: Some(flag),
                ..NodePatch::default()
            },
        );
    }
    Ok((batch, new_key, stale, cut))
}

/// The current memories derived from `old` (edges of the `derived` types walked
/// backwards, at most [`STALE_HOPS_MAX`], through current memories and edges), nearest
/// first, then by id; `exclude` (the replacing memory) is never one of them. The flag says
/// whether [`STALE_MAX`] cut the list.
fn cascade(
    snap: &Snapshot,
    scratch: &mut Scratch,
    old: NodeId,
    exclude: Option<NodeId>,
    derived: &[String],
    now: u64,
) -> Result<(Vec<StaleEntry>, bool), ToolError> {
    let types = snap.type_filter(derived);
    if derived.is_empty() {
        return Ok((Vec::new(), false));
    }
    let view = snap.as_of(now);
    let seeds = [old];
    let keep = |n: NodeId| Some(n) != exclude;
    let mut query = ExpandQuery::new(&seeds, STALE_HOPS_MAX, Direction::In);
    query.types = &types;
    query.filter = &keep;
    query.limit = STALE_MAX;
    let out = kernel::expand(&view, scratch, &query);
    let mut stale = Vec::with_capacity(out.results.len());
    for r in &out.results {
        let Some(node) = snap.node(r.node).map_err(|e| engine_error(&e))? else {
            continue;
        };
        stale.push(StaleEntry {
            id: node.key.clone(),
            title: non_empty(&node.props.title),
            hops: r.hop,
        });
    }
    stale.sort_by(|a, b| a.hops.cmp(&b.hops).then_with(|| a.id.cmp(&b.id)));
    Ok((stale, out.truncated))
}

/// One memory of a supersession chain.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HistoryEntry {
    /// Its id.
    pub id: String,
    /// Its title (`null` when none).
    pub title: Option<String>,
    /// Its validity.
    #[serde(flatten)]
    pub validity: Validity,
    /// Why it replaced its predecessor (the `reason` of its `supersedes` edge; `null`
    /// for the first of the chain or when none was given).
    pub reason: Option<String>,
}

/// What `memory_history` returns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HistoryResult {
    /// The chain, oldest first (by `valid_from`, then id).
    pub history: Vec<HistoryEntry>,
    /// The chain has more than [`HISTORY_MAX`] memories; the ones nearest the given
    /// memory are listed.
    pub truncated: bool,
}

/// `memory_history`: the memories linked to this one by `supersedes` edges (either way,
/// transitively, ended edges included), the given memory included, oldest first; at most
/// [`HISTORY_MAX`], the nearest in the chain kept.
///
/// # Errors
/// `Memory not found.`; storage errors.
pub fn memory_history(snap: &Snapshot, memory_id: &str) -> Result<HistoryResult, ToolError> {
    let start = read_node(snap, memory_id)?.ok_or_else(memory_not_found)?;
    let supersedes = snap.type_id(SUPERSEDES);
    let filter = supersedes.map_or_else(|| TypeFilter::only([]), |t| TypeFilter::only([t]));
    let mut seen = vec![start.id];
    let mut queue = std::collections::VecDeque::from([start.id]);
    let mut truncated = false;
    let mut entries = Vec::new();
    while let Some(id) = queue.pop_front() {
        let Some(node) = snap.node(id).map_err(|e| engine_error(&e))? else {
            continue;
        };
        let mut reason: Option<(hopgraph::EdgeId, Option<String>)> = None;
        if supersedes.is_some() {
            let mut links = snap.neighbors(id, Direction::Both, &filter);
            links.sort_by_key(|n| n.edge);
            for n in links {
                if n.dir == hopgraph::EdgeDir::Out && reason.is_none() {
                    let r = snap
                        .edge(n.edge)
                        .map_err(|e| engine_error(&e))?
                        .and_then(|e| {
                            e.props
                                .get("reason")
                                .and_then(Value::as_str)
                                .map(str::to_owned)
                        });
                    reason = Some((n.edge, r));
                }
                if !seen.contains(&n.node) {
                    if seen.len() >= HISTORY_MAX {
                        truncated = true;
                        continue;
                    }
                    seen.push(n.node);
                    queue.push_back(n.node);
                }
            }
        }
        entries.push(HistoryEntry {
            id: node.key.clone(),
            title: non_empty(&node.props.title),
            validity: Validity::of(node.valid_from, node.valid_to),
            reason: reason.and_then(|r| r.1),
        });
    }
    entries.sort_by(|a, b| {
        a.validity
            .valid_from
            .cmp(&b.validity.valid_from)
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(HistoryResult {
        history: entries,
        truncated,
    })
}
