//! `memory_path` (memento-mcp): the shortest path between two memories.
//!
//! Resolves keys, runs the kernel's bidirectional BFS (or all shortest paths), and shapes
//! the answer exactly as the contract says: `found`, `hops`, `path[{id, title,
//! edge_type_to_next, direction_to_next, edge_id}]` (the last three absent on the last
//! entry), `message` when nothing was found, `paths` with `all_shortest`.
//!
//! A found answer borrows its keys, titles and type names from the snapshot and keeps edge
//! ids as numbers until it is serialized, so shaping it allocates only its entry vectors
//! (an owned answer made four allocations per node of the path).

use serde::{Serialize, Serializer};

use crate::{ToolError, ToolErrorKind};
use hopgraph::Snapshot;
use hopgraph::kernel::{self, Budget, Completion, Path, PathOutcome, PathQuery, Scratch};
use hopgraph::{Direction, EdgeId};

/// Most paths returned with `all_shortest`.
pub const ALL_SHORTEST_MAX: usize = 16;

/// A shortest-path question.
#[derive(Clone, Debug)]
pub struct PathRequest {
    /// Start key.
    pub from: String,
    /// End key.
    pub to: String,
    /// Longest path to look for.
    pub max_hops: u32,
    /// Edge types a path may use (`None` = all).
    pub edge_types: Option<Vec<String>>,
    /// `Both` treats edges as undirected; `Out` follows them forward from `from`.
    pub direction: Direction,
    /// Return every shortest path (at most [`ALL_SHORTEST_MAX`]).
    pub all_shortest: bool,
    /// Work limit.
    pub budget: Budget,
}

impl PathRequest {
    /// A request with the contract's defaults: 4 hops, all types, both directions.
    pub fn new(from: impl Into<String>, to: impl Into<String>) -> PathRequest {
        PathRequest {
            from: from.into(),
            to: to.into(),
            max_hops: 4,
            edge_types: None,
            direction: Direction::Both,
            all_shortest: false,
            budget: Budget::default(),
        }
    }
}

/// One node of a path, with the hop that leaves it (absent on the last node). Borrows from
/// the snapshot the path was found in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathEntry<'s> {
    /// The node's key.
    pub id: &'s str,
    /// Its title (`null` when it has none).
    pub title: Option<&'s str>,
    /// Type of the edge to the next node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge_type_to_next: Option<&'s str>,
    /// `forward` when that edge runs from this node to the next, else `backward`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction_to_next: Option<&'static str>,
    /// The edge's id, serialized as a decimal string (the contract's type).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "edge_id_text"
    )]
    pub edge_id: Option<EdgeId>,
    /// Start of that edge's validity (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    /// End of that edge's validity (RFC 3339; `null`: still valid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<Option<String>>,
}

/// Writes an edge id as the contract's decimal string, without an intermediate `String`.
fn edge_id_text<S: Serializer>(id: &Option<EdgeId>, s: S) -> Result<S::Ok, S::Error> {
    match id {
        Some(id) => s.serialize_str(itoa::Buffer::new().format(id.0)),
        None => s.serialize_none(),
    }
}

/// The answer of `memory_path`, borrowing from the snapshot it was asked of.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathResult<'s> {
    /// Whether a path was found.
    pub found: bool,
    /// Its length in hops (0 when not found).
    pub hops: u32,
    /// The path (empty when not found).
    pub path: Vec<PathEntry<'s>>,
    /// Why nothing was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// With `all_shortest`: every shortest path, at most [`ALL_SHORTEST_MAX`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<Vec<PathEntry<'s>>>>,
    /// With `all_shortest`: more shortest paths exist than `paths` holds.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The search budget ran out before the question was settled.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub limit_reached: bool,
}

impl PathResult<'_> {
    fn not_found(message: String) -> Self {
        PathResult {
            found: false,
            hops: 0,
            path: Vec::new(),
            message: Some(message),
            paths: None,
            truncated: false,
            limit_reached: false,
        }
    }

    /// The text form: `a "Title" → caused_by → b "Title"` for a forward hop,
    /// `b "Title" ← caused_by ← c "Title"` for a backward one; one line per path.
    pub fn text(&self) -> String {
        if !self.found {
            return self.message.clone().unwrap_or_default();
        }
        let paths: Vec<&Vec<PathEntry<'_>>> = match &self.paths {
            Some(p) => p.iter().collect(),
            None => vec![&self.path],
        };
        let lines: Vec<String> = paths.iter().map(|p| path_text(p)).collect();
        lines.join("\n")
    }
}

fn path_text(path: &[PathEntry<'_>]) -> String {
    let mut s = String::new();
    for e in path {
        s.push_str(e.id);
        if let Some(t) = &e.title {
            s.push_str(&format!(" {t:?}"));
        }
        if let Some(ty) = &e.edge_type_to_next {
            match e.direction_to_next {
                Some("backward") => s.push_str(&format!(" ← {ty} ← ")),
                _ => s.push_str(&format!(" → {ty} → ")),
            }
        }
    }
    s
}

fn entries<'s>(snap: &'s Snapshot, path: &Path) -> Result<Vec<PathEntry<'s>>, ToolError> {
    let mut out = Vec::with_capacity(path.nodes.len());
    for (i, &id) in path.nodes.iter().enumerate() {
        let (key, title) = snap.node_label(id)?.ok_or_else(|| {
            ToolError::new(
                ToolErrorKind::Internal,
                format!("internal error: path node {id} has no record"),
            )
        })?;
        let hop = path.hops.get(i);
        let validity = match hop {
            Some(h) => crate::edge_validity(snap, h.edge)?,
            None => None,
        };
        let (valid_from, valid_to) = match validity {
            Some(v) => (Some(v.valid_from), Some(v.valid_to)),
            None => (None, None),
        };
        out.push(PathEntry {
            id: key,
            title: (!title.is_empty()).then_some(title),
            edge_type_to_next: hop.map(|h| snap.type_name(h.edge_type).unwrap_or("?")),
            direction_to_next: hop.map(|h| if h.forward { "forward" } else { "backward" }),
            edge_id: hop.map(|h| h.edge),
            valid_from,
            valid_to,
        });
    }
    Ok(out)
}

/// Answers a `memory_path` request on `snap`, reusing `scratch`.
///
/// Unknown endpoints and unreachable targets are normal results (`found: false` with the
/// contract's message), not errors.
///
/// # Errors
/// Only a damaged node record (`ToolError` with the engine's corruption message).
///
/// # Complexity
/// Bidirectional BFS: O(edges examined) within `max_hops`, bounded by `budget`.
pub fn memory_path<'s>(
    snap: &'s Snapshot,
    scratch: &mut Scratch,
    req: &PathRequest,
) -> Result<PathResult<'s>, ToolError> {
    memory_path_as_of(snap, scratch, req, None)
}

/// [`memory_path`] as of `as_of` (ms since the Unix epoch) when given: only memories and
/// edges valid then exist (an endpoint not valid then is an unknown memory id).
///
/// # Errors
/// As [`memory_path`].
pub fn memory_path_as_of<'s>(
    snap: &'s Snapshot,
    scratch: &mut Scratch,
    req: &PathRequest,
    as_of: Option<u64>,
) -> Result<PathResult<'s>, ToolError> {
    // Both endpoints at once: their key-index reads overlap.
    let [from, to] = snap.node_id_pair(&req.from, &req.to);
    let valid = |id: Option<hopgraph::NodeId>| match (id, as_of) {
        (Some(id), Some(t)) => snap.node_valid_at(id, t).then_some(id),
        (id, _) => id,
    };
    let (from, to) = (valid(from), valid(to));
    let Some(from) = from else {
        return Ok(PathResult::not_found(format!(
            "Unknown memory id: {}",
            req.from
        )));
    };
    let Some(to) = to else {
        return Ok(PathResult::not_found(format!(
            "Unknown memory id: {}",
            req.to
        )));
    };
    let query = PathQuery {
        direction: req.direction,
        types: match &req.edge_types {
            None => hopgraph::TypeFilter::All,
            Some(names) => snap.type_filter(names),
        },
        max_hops: req.max_hops,
        budget: req.budget,
    };
    let no_path = || {
        format!(
            "No path from {} to {} within {} hops",
            req.from, req.to, req.max_hops
        )
    };
    let limit = |visited: u64| {
        let mut r = PathResult::not_found(format!(
            "Search budget exhausted after visiting {visited} nodes; no path from {} to {} was settled within {} hops",
            req.from, req.to, req.max_hops
        ));
        r.limit_reached = true;
        r
    };
    if req.all_shortest {
        let out = on_view!(snap, as_of, |g| kernel::all_shortest_paths(
            g,
            scratch,
            from,
            to,
            &query,
            ALL_SHORTEST_MAX
        ));
        if let Completion::LimitReached { visited } = out.completion
            && out.paths.is_empty()
        {
            return Ok(limit(visited));
        }
        let Some(first) = out.paths.first() else {
            return Ok(PathResult::not_found(no_path()));
        };
        let hops = u32::try_from(first.hops.len()).unwrap_or(u32::MAX);
        let mut paths = Vec::with_capacity(out.paths.len());
        for p in &out.paths {
            paths.push(entries(snap, p)?);
        }
        return Ok(PathResult {
            found: true,
            hops,
            path: paths[0].clone(),
            message: None,
            paths: Some(paths),
            truncated: out.truncated,
            limit_reached: false,
        });
    }
    match on_view!(snap, as_of, |g| kernel::shortest_path(
        g, scratch, from, to, &query
    )) {
        PathOutcome::Found(p) => Ok(PathResult {
            found: true,
            hops: u32::try_from(p.hops.len()).unwrap_or(u32::MAX),
            path: entries(snap, &p)?,
            message: None,
            paths: None,
            truncated: false,
            limit_reached: false,
        }),
        PathOutcome::NotFound => Ok(PathResult::not_found(no_path())),
        PathOutcome::LimitReached { visited } => Ok(limit(visited)),
    }
}
