//! `memory_path` (memento-mcp): the shortest path between two memories.
//!
//! Asks the engine's key-level path queries ([`Snapshot::shortest_path_ids`],
//! [`Snapshot::all_shortest_path_ids`]: key resolution, validity at a moment, the edge-type
//! filter and the budget are theirs) and shapes the answer exactly as the contract says: `found`, `hops`, `path[{id, title,
//! edge_type_to_next, direction_to_next, edge_id}]` (the last three absent on the last
//! entry), `message` when nothing was found, `paths` with `all_shortest`.
//!
//! A found answer borrows its keys, titles and type names from the snapshot and keeps edge
//! ids as numbers until it is serialized, so shaping it allocates only its entry vectors
//! (an owned answer made four allocations per node of the path).

use serde::{Serialize, Serializer};

use crate::ranges::Ranges;
use crate::{ToolError, ToolErrorKind};
use hopgraph::kernel::{Budget, Path, Scratch};
use hopgraph::{Direction, EdgeId, Error, PathSpec, Snapshot};

/// Most paths returned with `all_shortest`.
pub const ALL_SHORTEST_MAX: usize = 16;

/// A shortest-path question.
#[derive(Clone, Debug)]
pub struct PathRequest {
    /// Start key.
    pub from: String,
    /// End key.
    pub to: String,
    /// Longest path to look for, as given (the tool contract: 1..=10; checked by the tool
    /// function against its [`Ranges`]).
    pub max_hops: i64,
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
            max_hops: Ranges::TOOLS.path_hops.default,
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
/// `max_hops` outside [`Ranges::TOOLS`] (``Invalid argument `max_hops`: ...``); a damaged
/// node record (`ToolError` with the engine's corruption message).
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
    memory_path_within(snap, scratch, req, as_of, &Ranges::TOOLS)
}

/// [`memory_path_as_of`] with `max_hops` checked against `ranges` instead of the tool
/// contract's.
///
/// # Errors
/// As [`memory_path`].
pub fn memory_path_within<'s>(
    snap: &'s Snapshot,
    scratch: &mut Scratch,
    req: &PathRequest,
    as_of: Option<u64>,
    ranges: &Ranges,
) -> Result<PathResult<'s>, ToolError> {
    let max_hops = ranges.path_hops.check_u32(req.max_hops)?;
    let spec = spec_of(req, max_hops, as_of);
    let no_path = || {
        format!(
            "No path from {} to {} within {} hops",
            req.from, req.to, req.max_hops
        )
    };
    // The engine's answers that are not paths: an unknown endpoint (the first unknown of
    // from, to) and a budget that ran out are normal results here, with the contract's
    // messages.
    let not_a_path = |e: Error| match e {
        Error::NodeNotFound { key } => {
            Ok(PathResult::not_found(format!("Unknown memory id: {key}")))
        }
        Error::LimitReached { visited } => {
            let mut r = PathResult::not_found(format!(
                "Search budget exhausted after visiting {visited} nodes; no path from {} to {} was settled within {} hops",
                req.from, req.to, req.max_hops
            ));
            r.limit_reached = true;
            Ok(r)
        }
        other => Err(ToolError::from(other)),
    };
    if req.all_shortest {
        let out = match snap.all_shortest_path_ids(
            scratch,
            &req.from,
            &req.to,
            &spec,
            ALL_SHORTEST_MAX,
        ) {
            Ok(out) => out,
            Err(e) => return not_a_path(e),
        };
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
    match snap.shortest_path_ids(scratch, &req.from, &req.to, &spec) {
        Ok(Some(p)) => Ok(PathResult {
            found: true,
            hops: u32::try_from(p.hops.len()).unwrap_or(u32::MAX),
            path: entries(snap, &p)?,
            message: None,
            paths: None,
            truncated: false,
            limit_reached: false,
        }),
        Ok(None) => Ok(PathResult::not_found(no_path())),
        Err(e) => not_a_path(e),
    }
}

/// The engine's [`PathSpec`] of a request: its direction, hop cap, budget (a deadline
/// becomes the time left until it) and moment. A type list names the types a path may
/// use; an empty list admits no edge at all, which leaves only the 0-hop path (the
/// engine's empty list means every type), so it is asked as a 0-hop question.
fn spec_of(req: &PathRequest, max_hops: u32, as_of: Option<u64>) -> PathSpec {
    let mut spec = PathSpec::new()
        .direction(req.direction)
        .max_hops(max_hops)
        .visited_max(req.budget.visited_max);
    match &req.edge_types {
        None => {}
        Some(names) if names.is_empty() => spec = spec.max_hops(0),
        Some(names) => spec = spec.types(names.iter().map(String::as_str)),
    }
    if let Some(deadline) = req.budget.deadline {
        spec = spec.timeout(deadline.saturating_duration_since(std::time::Instant::now()));
    }
    if let Some(t) = as_of {
        spec = spec.as_of(t);
    }
    spec
}
