//! Neighborhood tools: `expand` (vault-memory), `related` and `traverse` (HUSK).
//!
//! Each resolves keys, runs the kernel (`traverse::{expand, neighbors, traverse}`) and
//! shapes the answer with the originals' words: `expand` says `forward`/`backward`,
//! `related` and `traverse` say `outgoing`/`incoming`.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::ranges::Ranges;
use crate::time::now_ms;
use crate::{
    ToolError, ToolErrorKind, edge_validity, node_properties, node_status, non_empty, rfc3339,
    summary,
};
use hopgraph::Node;
use hopgraph::Snapshot;
use hopgraph::kernel::{self, Budget, Completion, ExpandQuery, Scratch};
use hopgraph::{Direction, NodeId, TypeFilter};

/// Error text for an unknown `memory_id` (HUSK).
pub const MEMORY_NOT_FOUND: &str = "Memory not found.";

/// Parses `expand`'s direction words (`outgoing`/`incoming` are aliases).
///
/// # Errors
/// A one-line message naming the accepted words.
/// Returns the direction and `one_way_routes`: vault-memory's `both` is the union of a
/// forward-only and a backward-only sweep, `any` lets each hop go either way.
pub fn parse_expand_direction(s: &str) -> Result<(Direction, bool), ToolError> {
    match s {
        "both" => Ok((Direction::Both, true)),
        "forward" | "outgoing" => Ok((Direction::Out, false)),
        "backward" | "incoming" => Ok((Direction::In, false)),
        "any" => Ok((Direction::Both, false)),
        _ => Err(ToolError::new(
            ToolErrorKind::InvalidArgument,
            format!(
                "direction must be one of both, forward, backward, outgoing, incoming, any; got {s:?}"
            ),
        )),
    }
}

/// Parses HUSK's direction words.
///
/// # Errors
/// A one-line message naming the accepted words.
pub fn parse_husk_direction(s: &str) -> Result<Direction, ToolError> {
    match s {
        "both" => Ok(Direction::Both),
        "outgoing" => Ok(Direction::Out),
        "incoming" => Ok(Direction::In),
        _ => Err(ToolError::new(
            ToolErrorKind::InvalidArgument,
            format!("direction must be one of outgoing, incoming, both; got {s:?}"),
        )),
    }
}

fn filter_of(snap: &Snapshot, names: &Option<Vec<String>>) -> TypeFilter {
    match names {
        None => TypeFilter::All,
        Some(n) => snap.type_filter(n),
    }
}

fn type_name(snap: &Snapshot, t: hopgraph::TypeId) -> String {
    snap.type_name(t).unwrap_or("?").to_owned()
}

fn node_of(snap: &Snapshot, id: NodeId) -> Result<std::sync::Arc<Node>, ToolError> {
    snap.node(id)?.ok_or_else(|| {
        ToolError::new(
            ToolErrorKind::Internal,
            format!("internal error: node {id} has no record"),
        )
    })
}

// ---------------------------------------------------------------------------------------
// expand

/// An `expand` request.
#[derive(Clone, Debug)]
pub struct ExpandRequest {
    /// Seed keys (at least one).
    pub seed_doc_ids: Vec<String>,
    /// Hop cap, as given (the tool contract: 1..=5; checked by the tool function against
    /// its [`Ranges`]).
    pub hops: i64,
    /// Which edges a hop follows (`Out` = the tool's `forward`).
    pub direction: Direction,
    /// With `Both`: each route keeps one direction (the tool's `both`: the union of a
    /// forward-only and a backward-only sweep) instead of mixing them (the tool's `any`).
    pub one_way_routes: bool,
    /// Edge types to follow (`None` = all).
    pub edge_types: Option<Vec<String>>,
    /// Strict equality on node properties; filters results, not traversal.
    pub filter_properties: Option<Map<String, Value>>,
    /// Keep nodes whose status is `superseded` and nodes that are not current (valid now).
    pub include_superseded: bool,
    /// Report each result's full route.
    pub include_route: bool,
    /// Most documents returned, as given (the tool contract: 1..=1000).
    pub limit: i64,
    /// Work limit.
    pub budget: Budget,
}

/// One hop of a route.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RouteHop {
    /// The node this hop reaches.
    pub node: String,
    /// The edge walked.
    pub edge_id: String,
    /// Its type.
    pub edge_type: String,
    /// `forward` or `backward`.
    pub direction: &'static str,
}

/// Provenance of an expanded document.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Via {
    /// The seed it was reached from.
    pub seed_doc_id: String,
    /// Hops from that seed.
    pub hop: u32,
    /// Type of the last edge.
    pub edge_type: String,
    /// Direction of the last edge: `forward` or `backward`.
    pub direction: &'static str,
    /// With `include_route`: every hop from the seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<Vec<RouteHop>>,
}

/// One expanded document.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Document {
    /// Its key.
    pub doc_id: String,
    /// Its title (`null` when none).
    pub title: Option<String>,
    /// Its properties (metadata keys plus `type`, `title`, `importance`).
    pub properties: Map<String, Value>,
    /// Last change, RFC 3339.
    pub mtime: String,
    /// crc32 of the content, 8 hex digits.
    pub hash: String,
    /// How it was reached.
    pub via: Via,
}

/// A warning about the request (unknown seeds).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Warning {
    /// The seed concerned.
    pub seed_doc_id: String,
    /// `unknown_doc`.
    pub reason: &'static str,
}

/// The answer of `expand`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExpandResult {
    /// Reached documents in (hop, seed, node) order.
    pub documents: Vec<Document>,
    /// Always present; unknown seeds appear here.
    pub warnings: Vec<Warning>,
    /// `limit` cut the list.
    pub truncated: bool,
    /// The work budget ran out; documents cover the completed hop levels.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub limit_reached: bool,
}

fn matches(node: &Node, req: &ExpandRequest, now: u64) -> bool {
    if !req.include_superseded && (node_status(node) == "superseded" || !node.valid_at(now)) {
        return false;
    }
    match &req.filter_properties {
        None => true,
        Some(f) => {
            let props = node_properties(node);
            f.iter().all(|(k, v)| props.get(k) == Some(v))
        }
    }
}

/// Answers an `expand` request.
///
/// # Errors
/// An empty `seed_doc_ids`, `hops` or `limit` outside [`Ranges::TOOLS`]
/// (``Invalid argument `hops`: ...``); a damaged node record.
///
/// # Complexity
/// O(edges examined within `hops` of the seeds), bounded by `budget`, plus one record
/// read per reached node (for the filter) and per reported document.
pub fn expand(
    snap: &Snapshot,
    scratch: &mut Scratch,
    req: &ExpandRequest,
) -> Result<ExpandResult, ToolError> {
    expand_as_of(snap, scratch, req, None)
}

/// [`expand`] as of `as_of` (ms since the Unix epoch) when given: only memories and edges
/// valid then exist (a seed not valid then is an `unknown_doc`).
///
/// # Errors
/// As [`expand`].
pub fn expand_as_of(
    snap: &Snapshot,
    scratch: &mut Scratch,
    req: &ExpandRequest,
    as_of: Option<u64>,
) -> Result<ExpandResult, ToolError> {
    expand_within(snap, scratch, req, as_of, &Ranges::TOOLS)
}

/// [`expand_as_of`] with `hops` and `limit` checked against `ranges` instead of the tool
/// contract's.
///
/// # Errors
/// As [`expand`].
pub fn expand_within(
    snap: &Snapshot,
    scratch: &mut Scratch,
    req: &ExpandRequest,
    as_of: Option<u64>,
    ranges: &Ranges,
) -> Result<ExpandResult, ToolError> {
    if req.seed_doc_ids.is_empty() {
        return Err(ToolError::invalid_arg(
            "seed_doc_ids",
            "must hold at least one id",
        ));
    }
    let hops = ranges.expand_hops.check_u32(req.hops)?;
    let limit = ranges.expand_limit.check_usize(req.limit)?;
    let mut warnings = Vec::new();
    let mut seeds: Vec<(String, NodeId)> = Vec::new();
    let valid = |id: NodeId| as_of.is_none_or(|t| snap.node_valid_at(id, t));
    for key in &req.seed_doc_ids {
        match snap.node_id(key).filter(|&id| valid(id)) {
            Some(id) => seeds.push((key.clone(), id)),
            None => warnings.push(Warning {
                seed_doc_id: key.clone(),
                reason: "unknown_doc",
            }),
        }
    }
    // Tie-break rank: lower seed key first.
    seeds.sort();
    seeds.dedup();
    let seed_ids: Vec<NodeId> = seeds.iter().map(|s| s.1).collect();
    // Tie-break rank of edge types: by name.
    let types = snap.edge_types();
    let mut by_name: Vec<usize> = (0..types.len()).collect();
    by_name.sort_by(|&a, &b| types[a].1.cmp(&types[b].1));
    let mut type_rank = vec![0u32; types.len()];
    for (rank, &i) in by_name.iter().enumerate() {
        type_rank[i] = u32::try_from(rank).unwrap_or(u32::MAX);
    }
    let filter_types = filter_of(snap, &req.edge_types);
    let now = now_ms();
    let keep = |id: NodeId| matches!(snap.node(id), Ok(Some(n)) if matches(&n, req, now));
    let query = ExpandQuery {
        seeds: &seed_ids,
        hops,
        direction: req.direction,
        one_way_routes: req.one_way_routes,
        types: &filter_types,
        type_rank: Some(&type_rank),
        filter: &keep,
        limit,
        include_route: req.include_route,
        budget: req.budget,
    };
    let out = on_view!(snap, as_of, |g| kernel::expand(g, scratch, &query));
    let mut documents = Vec::with_capacity(out.results.len());
    let dir_word = |f: bool| if f { "forward" } else { "backward" };
    for r in &out.results {
        let node = node_of(snap, r.node)?;
        let route = match &r.route {
            None => None,
            Some(steps) => {
                let mut hops = Vec::with_capacity(steps.len());
                for &(n, e, t, fwd) in steps {
                    hops.push(RouteHop {
                        node: node_of(snap, n)?.key.clone(),
                        edge_id: e.0.to_string(),
                        edge_type: type_name(snap, t),
                        direction: dir_word(fwd),
                    });
                }
                Some(hops)
            }
        };
        documents.push(Document {
            doc_id: node.key.clone(),
            title: non_empty(&node.props.title),
            properties: node_properties(&node),
            mtime: rfc3339(node.updated_at),
            hash: format!("{:08x}", crc32fast::hash(node.props.content.as_bytes())),
            via: Via {
                seed_doc_id: seeds.get(r.seed).map(|s| s.0.clone()).unwrap_or_default(),
                hop: r.hop,
                edge_type: type_name(snap, r.edge_type),
                direction: dir_word(r.forward),
                route,
            },
        });
    }
    Ok(ExpandResult {
        documents,
        warnings,
        truncated: out.truncated,
        limit_reached: matches!(out.completion, Completion::LimitReached { .. }),
    })
}

// ---------------------------------------------------------------------------------------
// related and traverse

/// A list answer; `structuredContent` wraps the originals' bare lists like this.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ListResult<T> {
    /// The entries.
    pub results: Vec<T>,
    /// A limit cut the list (or the work budget ran out).
    pub truncated: bool,
}

/// A `related` request.
#[derive(Clone, Debug)]
pub struct RelatedRequest {
    /// The memory.
    pub memory_id: String,
    /// Only this edge type.
    pub edge_type: Option<String>,
    /// `Out` = outgoing, `In` = incoming.
    pub direction: Direction,
    /// Most entries, as given (the tool contract: 1..=100).
    pub limit: i64,
}

/// One neighbor.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RelatedEntry {
    /// The neighbor's key.
    pub memory_id: String,
    /// The edge.
    pub edge_id: String,
    /// Its type.
    pub edge_type: String,
    /// `outgoing` or `incoming`, seen from the requested memory.
    pub direction: &'static str,
    /// Title or the start of the content.
    pub summary: String,
    /// The edge's validity.
    #[serde(flatten)]
    pub validity: crate::time::Validity,
}

/// Answers `related`: direct neighbors, the limit applied after the type filter.
///
/// # Errors
/// A ranged argument outside [`Ranges::TOOLS`] (``Invalid argument `limit`: ...``, checked
/// first); `Memory not found.` for an unknown `memory_id`; a damaged record.
///
/// # Complexity
/// O(degree log degree) of the node.
pub fn related(
    snap: &Snapshot,
    req: &RelatedRequest,
) -> Result<ListResult<RelatedEntry>, ToolError> {
    related_as_of(snap, req, None)
}

/// The start memory of a walk: known, and valid at `as_of` when given.
fn start_node(snap: &Snapshot, key: &str, as_of: Option<u64>) -> Result<NodeId, ToolError> {
    snap.node_id(key)
        .filter(|&id| as_of.is_none_or(|t| snap.node_valid_at(id, t)))
        .ok_or_else(|| ToolError::new(ToolErrorKind::NotFound, MEMORY_NOT_FOUND))
}

/// An edge's validity, which every listed edge has.
fn validity_of(snap: &Snapshot, e: hopgraph::EdgeId) -> Result<crate::time::Validity, ToolError> {
    edge_validity(snap, e)?.ok_or_else(|| {
        ToolError::new(
            ToolErrorKind::Internal,
            format!("internal error: edge {} has no record", e.0),
        )
    })
}

/// [`related`] as of `as_of` (ms since the Unix epoch) when given: only the memories and
/// edges valid then exist (a `memory_id` not valid then is `Memory not found.`).
///
/// # Errors
/// As [`related`].
pub fn related_as_of(
    snap: &Snapshot,
    req: &RelatedRequest,
    as_of: Option<u64>,
) -> Result<ListResult<RelatedEntry>, ToolError> {
    related_within(snap, req, as_of, &Ranges::TOOLS)
}

/// [`related_as_of`] with `limit` checked against `ranges` instead of the tool contract's.
///
/// # Errors
/// As [`related`].
pub fn related_within(
    snap: &Snapshot,
    req: &RelatedRequest,
    as_of: Option<u64>,
    ranges: &Ranges,
) -> Result<ListResult<RelatedEntry>, ToolError> {
    let limit = ranges.related_limit.check_usize(req.limit)?;
    let id = start_node(snap, &req.memory_id, as_of)?;
    let types = filter_of(snap, &req.edge_type.clone().map(|t| vec![t]));
    let (steps, truncated) = on_view!(snap, as_of, |g| kernel::neighbors(
        g,
        id,
        req.direction,
        &types,
        limit
    ));
    let mut results = Vec::with_capacity(steps.len());
    for (n, e, t, fwd) in steps {
        let node = node_of(snap, n)?;
        results.push(RelatedEntry {
            memory_id: node.key.clone(),
            edge_id: e.0.to_string(),
            edge_type: type_name(snap, t),
            direction: if fwd { "outgoing" } else { "incoming" },
            summary: summary(&node),
            validity: validity_of(snap, e)?,
        });
    }
    Ok(ListResult { results, truncated })
}

/// A `traverse` request.
#[derive(Clone, Debug)]
pub struct TraverseRequest {
    /// Start memory.
    pub memory_id: String,
    /// Edge types to follow (`None` = all).
    pub edge_types: Option<Vec<String>>,
    /// Depth cap, as given (the tool contract: 1..=5).
    pub max_depth: i64,
    /// Most entries, as given (the tool contract: 1..=100).
    pub limit: i64,
    /// `Both` = undirected (default).
    pub direction: Direction,
    /// Work limit.
    pub budget: Budget,
}

/// One hop of a traversal path.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraverseHop {
    /// The edge.
    pub edge_id: String,
    /// Its type.
    pub edge_type: String,
    /// `outgoing` or `incoming`, seen from the node the hop leaves.
    pub direction: &'static str,
    /// The edge's validity.
    #[serde(flatten)]
    pub validity: crate::time::Validity,
}

/// One reached memory.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraverseEntry {
    /// Its key.
    pub memory_id: String,
    /// Hops from the start.
    pub depth: u32,
    /// The hops from the start.
    pub path: Vec<TraverseHop>,
    /// Title or the start of the content.
    pub summary: String,
}

/// Answers `traverse`: breadth-first, depth never decreases, the start excluded.
///
/// # Errors
/// A ranged argument outside [`Ranges::TOOLS`] (``Invalid argument `limit`: ...``, checked
/// first); `Memory not found.` for an unknown `memory_id`; a damaged record.
///
/// # Complexity
/// O(edges examined within `max_depth`), bounded by `budget`.
pub fn traverse(
    snap: &Snapshot,
    scratch: &mut Scratch,
    req: &TraverseRequest,
) -> Result<ListResult<TraverseEntry>, ToolError> {
    traverse_as_of(snap, scratch, req, None)
}

/// [`traverse`] as of `as_of` (ms since the Unix epoch) when given: only the memories and
/// edges valid then exist (a `memory_id` not valid then is `Memory not found.`).
///
/// # Errors
/// As [`traverse`].
pub fn traverse_as_of(
    snap: &Snapshot,
    scratch: &mut Scratch,
    req: &TraverseRequest,
    as_of: Option<u64>,
) -> Result<ListResult<TraverseEntry>, ToolError> {
    traverse_within(snap, scratch, req, as_of, &Ranges::TOOLS)
}

/// [`traverse_as_of`] with `max_depth` and `limit` checked against `ranges` instead of
/// the tool contract's.
///
/// # Errors
/// As [`traverse`].
pub fn traverse_within(
    snap: &Snapshot,
    scratch: &mut Scratch,
    req: &TraverseRequest,
    as_of: Option<u64>,
    ranges: &Ranges,
) -> Result<ListResult<TraverseEntry>, ToolError> {
    let max_depth = ranges.traverse_depth.check_u32(req.max_depth)?;
    let limit = ranges.traverse_limit.check_usize(req.limit)?;
    let id = start_node(snap, &req.memory_id, as_of)?;
    let types = filter_of(snap, &req.edge_types);
    let out = on_view!(snap, as_of, |g| kernel::traverse(
        g,
        scratch,
        id,
        req.direction,
        &types,
        max_depth,
        limit,
        &req.budget,
    ));
    let mut results = Vec::with_capacity(out.visits.len());
    for v in &out.visits {
        let node = node_of(snap, v.node)?;
        let mut path = Vec::with_capacity(v.path.len());
        for &(e, t, fwd) in &v.path {
            path.push(TraverseHop {
                edge_id: e.0.to_string(),
                edge_type: type_name(snap, t),
                direction: if fwd { "outgoing" } else { "incoming" },
                validity: validity_of(snap, e)?,
            });
        }
        results.push(TraverseEntry {
            memory_id: node.key.clone(),
            depth: v.depth,
            path,
            summary: summary(&node),
        });
    }
    Ok(ListResult {
        results,
        truncated: out.truncated || matches!(out.completion, Completion::LimitReached { .. }),
    })
}
