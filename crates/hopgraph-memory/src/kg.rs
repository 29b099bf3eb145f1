//! The knowledge-graph tools of the official MCP memory server (`@modelcontextprotocol/
//! server-memory`), served by hopgraph-mcp's `server-memory` profile: `create_entities`,
//! `create_relations`, `add_observations`, `delete_entities`, `delete_observations`,
//! `delete_relations`, `read_graph`, `search_nodes`, `open_nodes`.
//!
//! The contract (names, result shapes, messages) is recorded in
//! `docs/reference/server-memory.tools.md`. An entity is the same node an AIM entity is
//! (key = name, kind = entityType, `metadata.observations`), so the AIM tools and these
//! share one graph; a relation is an edge (type = relationType). Every call is one atomic
//! commit, where the original rewrites its whole JSONL file. The write tools that only
//! change what exists take `Option<&Database>`: `None` is a context that has no database
//! yet, answered as an empty graph (as the original answers on an empty file) without
//! creating one; the reads take a snapshot (`Snapshot::empty()` there).
//!
//! Differences, documented: `read_graph` pages its answer (`limit` entities per page, with
//! a `nextCursor`) so that a large graph never arrives as megabytes of text, a graph of at
//! most [`READ_GRAPH_PAGE_DEFAULT`] entities answers in one page exactly as the original;
//! `search_nodes` keeps the original's case-insensitive substring match over name,
//! entityType and observations, a scan of the entities (O(entities) per call, as the
//! original's).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use serde_json::Value;

use super::aim::{self, Entity, Relation};
use super::{ToolError, ToolErrorKind, engine_error};
use crate::planned::commit_planned;
use hopgraph::{
    Database, Direction, Node, NodeId, NodePatch, OpResult, Snapshot, TypeFilter, WriteBatch,
};

/// Entities per `read_graph` page when the call gives no `limit`.
pub const READ_GRAPH_PAGE_DEFAULT: usize = 1000;
/// Largest `read_graph` `limit`.
pub const READ_GRAPH_PAGE_MAX: usize = 10_000;
/// Longest `search_nodes` query, in characters (as the original's schema).
pub const SEARCH_QUERY_CHARS_MAX: usize = 2048;

/// A graph or a part of one, as `read_graph`, `search_nodes` and `open_nodes` answer it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Graph {
    /// Entities, in node id order.
    pub entities: Vec<Entity>,
    /// Relations with at least one endpoint among `entities` (for `read_graph`: those
    /// whose `from` is on this page).
    pub relations: Vec<Relation>,
    /// `read_graph` only: the cursor of the next page, when there is one.
    #[serde(rename = "nextCursor", skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One `add_observations` item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservationAdd {
    /// The entity.
    pub entity_name: String,
    /// Observations to append (those already present are skipped).
    pub contents: Vec<String>,
}

/// What `add_observations` did for one item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AddedObservations {
    /// The entity.
    #[serde(rename = "entityName")]
    pub entity_name: String,
    /// The observations appended, in order.
    #[serde(rename = "addedObservations")]
    pub added_observations: Vec<String>,
}

/// One `delete_observations` item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservationDelete {
    /// The entity.
    pub entity_name: String,
    /// Observations to remove.
    pub observations: Vec<String>,
}

/// The answer of the delete tools.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Always true (a failed call is an error instead).
    pub success: bool,
    /// What was done, in the original's words.
    pub message: String,
}

/// The error of a missing entity, in the original's words.
pub fn entity_not_found(name: &str) -> ToolError {
    ToolError::new(
        ToolErrorKind::NotFound,
        format!("Entity with name {name} not found"),
    )
}

/// The entity view of a node: its key, kind and `metadata.observations` (strings only).
pub fn entity_of(node: &Node) -> Entity {
    Entity {
        name: node.key.clone(),
        entity_type: node.props.kind.clone(),
        observations: observations_of(node),
    }
}

fn observations_of(node: &Node) -> Vec<String> {
    node.props
        .props
        .get("observations")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|o| o.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `create_entities`: as `aim_memory_store` (names already stored, and repeats within the
/// call, are skipped; the ones created are returned in input order).
///
/// # Errors
/// Invalid arguments, storage errors.
pub fn create_entities(db: &Database, entities: &[Entity]) -> Result<Vec<Entity>, ToolError> {
    aim::store_entities(db, entities)
}

/// `create_relations`: creates the relations not stored yet (repeats skipped) and returns
/// them; if an endpoint is missing (checked `from`, then `to`, relation by relation) the
/// call fails with `Entity with name <name> not found` and writes nothing. `db` `None`:
/// the context has no database, answered as an empty graph (nothing is created).
///
/// # Errors
/// A missing entity, invalid arguments, storage errors.
pub fn create_relations(
    db: Option<&Database>,
    relations: &[Relation],
) -> Result<Vec<Relation>, ToolError> {
    let snap = db.map_or_else(Snapshot::empty, Database::snapshot);
    for r in relations {
        for name in [&r.from, &r.to] {
            if snap.node_id(name).is_none() {
                return Err(entity_not_found(name));
            }
        }
    }
    match db {
        Some(db) => aim::link_relations(db, relations),
        // Every endpoint was found, so there were no relations.
        None => Ok(Vec::new()),
    }
}

/// `add_observations`: appends to each entity the contents it does not hold yet (checked
/// against its observations before this item, as the original does), all in one commit.
/// `db` `None`: the context has no database, answered as an empty graph.
///
/// # Errors
/// `Entity with name <name> not found` (nothing written), storage errors.
pub fn add_observations(
    db: Option<&Database>,
    items: &[ObservationAdd],
) -> Result<Vec<AddedObservations>, ToolError> {
    add_observations_embedded(db, items, None)
}

/// Embeds texts (one vector per text, in order), for [`add_observations_embedded`].
pub type EmbedFn<'a> = &'a dyn Fn(&[String]) -> Result<Vec<Vec<f32>>, ToolError>;

/// [`add_observations`]; with `embed`, each changed entity also gets the embedding of its
/// new text ([`crate::embed_text::entity_text`]), computed before the commit and written
/// in it.
///
/// # Errors
/// As [`add_observations`]; the embedder's error.
pub fn add_observations_embedded(
    db: Option<&Database>,
    items: &[ObservationAdd],
    embed: Option<EmbedFn<'_>>,
) -> Result<Vec<AddedObservations>, ToolError> {
    // Planned on a snapshot and committed only if the entities it rewrites are unchanged
    // since (planned again otherwise), so a concurrent writer's observations are never
    // overwritten.
    let (_, results) = commit_planned(
        db,
        |snap| plan_additions(snap, items, embed),
        |e| engine_error(&e),
    )?;
    Ok(results)
}

/// [`add_observations_embedded`]'s batch and results, planned on `snap`.
fn plan_additions(
    snap: &Snapshot,
    items: &[ObservationAdd],
    embed: Option<EmbedFn<'_>>,
) -> Result<(WriteBatch, Vec<AddedObservations>), ToolError> {
    // Working copies: a second item for the same entity sees the first one's additions.
    let mut current: HashMap<&str, (std::sync::Arc<Node>, Vec<String>)> = HashMap::new();
    let mut results = Vec::with_capacity(items.len());
    for item in items {
        let name = item.entity_name.as_str();
        if !current.contains_key(name) {
            let node = snap
                .node_by_key(name)
                .map_err(|e| engine_error(&e))?
                .ok_or_else(|| entity_not_found(name))?;
            let obs = observations_of(&node);
            current.insert(name, (node, obs));
        }
        let Some((_, obs)) = current.get_mut(name) else {
            return Err(entity_not_found(name));
        };
        let added: Vec<String> = item
            .contents
            .iter()
            .filter(|c| !obs.contains(c))
            .cloned()
            .collect();
        obs.extend(added.iter().cloned());
        results.push(AddedObservations {
            entity_name: item.entity_name.clone(),
            added_observations: added,
        });
    }
    let changed: Vec<(&str, std::sync::Arc<Node>, Vec<String>)> = current
        .into_iter()
        .filter(|(_, (node, obs))| *obs != observations_of(node))
        .map(|(name, (node, obs))| (name, node, obs))
        .collect();
    let vectors = match embed {
        Some(f) if !changed.is_empty() => {
            let texts: Vec<String> = changed
                .iter()
                .map(|(_, node, obs)| {
                    crate::embed_text::entity_text(&node.key, &node.props.kind, obs)
                })
                .collect();
            f(&texts)?
        }
        _ => Vec::new(),
    };
    let mut batch = WriteBatch::new();
    for (i, (name, node, obs)) in changed.into_iter().enumerate() {
        let mut patch = observations_patch(&node, obs)?;
        if let Some(v) = vectors.get(i) {
            patch.embedding = Some(Some(v.clone()));
        }
        batch.update_node(name, patch).expect_node(name, Some(node));
    }
    Ok((batch, results))
}

/// The patch that sets `node`'s observations to `obs`, keeping its other metadata.
fn observations_patch(node: &Node, obs: Vec<String>) -> Result<NodePatch, ToolError> {
    let mut props = node.props.props.clone();
    props.insert(
        "observations".into(),
        Value::Array(obs.into_iter().map(Value::String).collect()),
    );
    let n = Value::Object(props.clone()).to_string().len();
    if n > hopgraph::limits::NODE_PROPS_BYTES_MAX {
        return Err(ToolError::invalid_arg(
            "observations",
            format!(
                "of {} would be {n} bytes serialized, the limit is {}",
                node.key,
                hopgraph::limits::NODE_PROPS_BYTES_MAX
            ),
        ));
    }
    Ok(NodePatch {
        props: Some(props),
        ..NodePatch::default()
    })
}

/// `delete_entities`: deletes the named entities and every relation touching them. The
/// message counts as the original does, over the names as given (a name given twice
/// counts twice). `db` `None`: the context has no database, answered as an empty graph
/// (every name missing; nothing is created).
///
/// # Errors
/// Storage errors.
pub fn delete_entities(db: Option<&Database>, names: &[String]) -> Result<Outcome, ToolError> {
    let snap = db.map_or_else(Snapshot::empty, Database::snapshot);
    let mut seen = HashSet::new();
    let mut missing = Vec::new();
    let mut batch = WriteBatch::new();
    let mut deleted = 0usize;
    for name in names {
        if snap.node_id(name).is_some() {
            deleted += 1;
            if seen.insert(name.as_str()) {
                batch.delete_node(name.clone());
            }
        } else {
            missing.push(name.as_str());
        }
    }
    // Without a database nothing was found, so the batch is empty.
    if let Some(db) = db
        && !batch.is_empty()
    {
        db.commit(batch).map_err(|e| engine_error(&e))?;
    }
    let message = if missing.is_empty() {
        "Entities deleted successfully".to_owned()
    } else {
        format!(
            "Deleted {deleted} of {} entities. Not found: {}",
            names.len(),
            missing.join(", ")
        )
    };
    Ok(Outcome {
        success: true,
        message,
    })
}

/// `delete_observations`: removes the given observations from each entity (every copy).
/// The message counts as the original does: the copies removed against the
/// observations asked for, and each item naming a missing entity. `db` `None`: the
/// context has no database, answered as an empty graph.
///
/// # Errors
/// Storage errors.
pub fn delete_observations(
    db: Option<&Database>,
    items: &[ObservationDelete],
) -> Result<Outcome, ToolError> {
    // Planned on a snapshot and committed only if the entities it rewrites are unchanged
    // since (planned again otherwise), so a concurrent writer's observations are never
    // overwritten.
    let (_, (missing, requested, removed)) =
        commit_planned(db, |snap| plan_deletions(snap, items), |e| engine_error(&e))?;
    let message = if removed == requested {
        "Observations deleted successfully".to_owned()
    } else {
        let mut m = format!("Deleted {removed} of {requested} observations.");
        if !missing.is_empty() {
            m.push_str(&format!(" Entities not found: {}", missing.join(", ")));
        }
        m
    };
    Ok(Outcome {
        success: true,
        message,
    })
}

/// What [`delete_observations`] found: the entities not found, and the observations
/// asked for and removed.
type Deletions<'a> = (Vec<&'a str>, usize, usize);

/// [`delete_observations`]'s batch, planned on `snap`, and what it found.
fn plan_deletions<'a>(
    snap: &Snapshot,
    items: &'a [ObservationDelete],
) -> Result<(WriteBatch, Deletions<'a>), ToolError> {
    let mut current: BTreeMap<&str, (std::sync::Arc<Node>, Vec<String>)> = BTreeMap::new();
    let mut missing: Vec<&str> = Vec::new();
    let (mut requested, mut removed) = (0usize, 0usize);
    for item in items {
        requested += item.observations.len();
        let name = item.entity_name.as_str();
        if !current.contains_key(name) {
            match snap.node_by_key(name).map_err(|e| engine_error(&e))? {
                Some(node) => {
                    let obs = observations_of(&node);
                    current.insert(name, (node, obs));
                }
                None => {
                    missing.push(name);
                    continue;
                }
            }
        }
        let Some((_, obs)) = current.get_mut(name) else {
            continue;
        };
        let before = obs.len();
        obs.retain(|x| !item.observations.contains(x));
        removed += before - obs.len();
    }
    let mut batch = WriteBatch::new();
    for (name, (node, obs)) in current {
        if obs == observations_of(&node) {
            continue;
        }
        let patch = observations_patch(&node, obs)?;
        batch.update_node(name, patch).expect_node(name, Some(node));
    }
    Ok((batch, (missing, requested, removed)))
}

/// `delete_relations`: deletes the given relations. `db` `None`: the context has no
/// database, answered as an empty graph (none matches).
///
/// # Errors
/// Storage errors.
pub fn delete_relations(
    db: Option<&Database>,
    relations: &[Relation],
) -> Result<Outcome, ToolError> {
    let mut batch = WriteBatch::new();
    let mut seen = HashSet::new();
    for r in relations {
        if seen.insert((&r.from, &r.to, &r.relation_type)) {
            batch.unlink_triple(r.from.clone(), r.relation_type.clone(), r.to.clone());
        }
    }
    let deleted = match db {
        None => 0,
        Some(_) if batch.is_empty() => 0,
        Some(db) => {
            let info = db.commit(batch).map_err(|e| engine_error(&e))?;
            info.results
                .iter()
                .filter(|r| matches!(r, OpResult::Unlinked { edge: Some(_) }))
                .count()
        }
    };
    let message = if deleted == relations.len() {
        "Relations deleted successfully".to_owned()
    } else {
        format!(
            "Deleted {deleted} of {} relations. The rest matched nothing.",
            relations.len()
        )
    };
    Ok(Outcome {
        success: true,
        message,
    })
}

/// The relations leaving (`Direction::Out`) or entering (`In`) node `id`.
fn relations_at(
    snap: &Snapshot,
    id: NodeId,
    direction: Direction,
    out: &mut BTreeMap<u64, Relation>,
) -> Result<(), ToolError> {
    for n in snap.neighbors(id, direction, &TypeFilter::All) {
        if out.contains_key(&n.edge.0) {
            continue;
        }
        let (Some(this), Some(other)) = (
            snap.node_label(id).map_err(|e| engine_error(&e))?,
            snap.node_label(n.node).map_err(|e| engine_error(&e))?,
        ) else {
            continue;
        };
        let (from, to) = if direction == Direction::Out {
            (this.0, other.0)
        } else {
            (other.0, this.0)
        };
        out.insert(
            n.edge.0,
            Relation {
                from: from.to_owned(),
                to: to.to_owned(),
                relation_type: snap.type_name(n.edge_type).unwrap_or_default().to_owned(),
            },
        );
    }
    Ok(())
}

/// Which relations a partial graph (`search_nodes`, `open_nodes`) includes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelationScope {
    /// Those with at least one endpoint among the entities (server-memory).
    Touching,
    /// Those with both endpoints among the entities (AIM's `aim_memory_search` and
    /// `aim_memory_get`).
    Between,
}

/// The graph of `ids` (entities in id order) with the relations `scope` selects.
fn graph_of(snap: &Snapshot, ids: &[NodeId], scope: RelationScope) -> Result<Graph, ToolError> {
    let mut entities = Vec::with_capacity(ids.len());
    let mut relations = BTreeMap::new();
    for &id in ids {
        let Some(node) = snap.node(id).map_err(|e| engine_error(&e))? else {
            continue;
        };
        entities.push(entity_of(&node));
        relations_at(snap, id, Direction::Out, &mut relations)?;
        relations_at(snap, id, Direction::In, &mut relations)?;
    }
    let mut relations: Vec<Relation> = relations.into_values().collect();
    if scope == RelationScope::Between {
        let names: HashSet<&str> = entities.iter().map(|e| e.name.as_str()).collect();
        relations.retain(|r| names.contains(r.from.as_str()) && names.contains(r.to.as_str()));
    }
    Ok(Graph {
        entities,
        relations,
        next_cursor: None,
    })
}

/// AIM's human-readable form of a graph (`format: "pretty"`): a header naming the
/// database, the entities with their type and observations, the relations as arrows.
pub fn pretty(graph: &Graph, context: &str) -> String {
    let mut lines = vec![format!("=== {context} database ==="), String::new()];
    if graph.entities.is_empty() {
        lines.push("ENTITIES: (none)".into());
    } else {
        lines.push(format!("ENTITIES ({}):", graph.entities.len()));
        for e in &graph.entities {
            lines.push(format!("  {} [{}]", e.name, e.entity_type));
            for o in &e.observations {
                lines.push(format!("    - {o}"));
            }
        }
    }
    lines.push(String::new());
    if graph.relations.is_empty() {
        lines.push("RELATIONS: (none)".into());
    } else {
        lines.push(format!("RELATIONS ({}):", graph.relations.len()));
        for r in &graph.relations {
            lines.push(format!("  {} --{}--> {}", r.from, r.relation_type, r.to));
        }
    }
    lines.join("\n")
}

/// `read_graph`: the entities in node id order, `limit` per page (default
/// [`READ_GRAPH_PAGE_DEFAULT`]), starting at `cursor` (from a previous page's
/// `nextCursor`), with the relations whose `from` is on the page (each relation is on
/// exactly one page).
///
/// # Errors
/// A cursor this server did not make, an out-of-range limit, storage errors.
pub fn read_graph(
    snap: &Snapshot,
    cursor: Option<&str>,
    limit: Option<i64>,
) -> Result<Graph, ToolError> {
    // Both bounds are small constants: they fit an i64 and a checked value fits a usize.
    let max = i64::try_from(READ_GRAPH_PAGE_MAX).unwrap_or(i64::MAX);
    let default = i64::try_from(READ_GRAPH_PAGE_DEFAULT).unwrap_or(max);
    let limit = crate::ranges::IntRange::new("limit", 1, max, default).check_or_default(limit)?;
    let limit = usize::try_from(limit).unwrap_or(READ_GRAPH_PAGE_DEFAULT);
    let start = match cursor {
        None => 0,
        Some(c) => c
            .strip_prefix("n")
            .and_then(|n| n.parse::<u32>().ok())
            .ok_or_else(|| {
                ToolError::invalid_arg("cursor", "is not a nextCursor this server returned")
            })?,
    };
    let mut ids: Vec<NodeId> = snap
        .node_ids()
        .filter(|id| id.0 >= start)
        .take(limit + 1)
        .collect();
    let next_cursor = (ids.len() > limit).then(|| {
        let next = ids.pop().map_or(0, |id| id.0);
        format!("n{next}")
    });
    let mut entities = Vec::with_capacity(ids.len());
    let mut relations = BTreeMap::new();
    for &id in &ids {
        let Some(node) = snap.node(id).map_err(|e| engine_error(&e))? else {
            continue;
        };
        entities.push(entity_of(&node));
        relations_at(snap, id, Direction::Out, &mut relations)?;
    }
    Ok(Graph {
        entities,
        relations: relations.into_values().collect(),
        next_cursor,
    })
}

/// `search_nodes`: the entities whose name, entityType or any observation contains
/// `query` (case-insensitive), with the relations touching them.
///
/// Only the nodes of `Snapshot::substring_candidates` (a superset of the matches, from the
/// engine's per-segment word index) are checked; a query without a letter or digit checks
/// every node. The answer is the full scan's.
///
/// # Errors
/// A query over [`SEARCH_QUERY_CHARS_MAX`] characters, storage errors.
pub fn search_nodes(snap: &Snapshot, query: &str) -> Result<Graph, ToolError> {
    search_nodes_in(snap, query, RelationScope::Touching)
}

/// [`search_nodes`] with the relations `scope` selects.
///
/// # Errors
/// As [`search_nodes`].
pub fn search_nodes_in(
    snap: &Snapshot,
    query: &str,
    scope: RelationScope,
) -> Result<Graph, ToolError> {
    search_nodes_check(query)?;
    let q = query.to_lowercase();
    let mut ids = Vec::new();
    // The engine's word index narrows the nodes to check (a superset of the matches);
    // a query without a letter or digit checks every node.
    let candidates: Box<dyn Iterator<Item = NodeId>> = match snap
        .substring_candidates(query)
        .map_err(|e| engine_error(&e))?
    {
        Some(c) => Box::new(c.into_iter()),
        None => Box::new(snap.node_ids()),
    };
    for id in candidates {
        let Some(node) = snap.node(id).map_err(|e| engine_error(&e))? else {
            continue;
        };
        let hit = node.key.to_lowercase().contains(&q)
            || node.props.kind.to_lowercase().contains(&q)
            || observations_of(&node)
                .iter()
                .any(|o| o.to_lowercase().contains(&q));
        if hit {
            ids.push(id);
        }
    }
    graph_of(snap, &ids, scope)
}

/// Checks a `search_nodes` query against [`SEARCH_QUERY_CHARS_MAX`].
///
/// # Errors
/// A query over the limit.
pub fn search_nodes_check(query: &str) -> Result<(), ToolError> {
    let chars = query.chars().count();
    if chars > SEARCH_QUERY_CHARS_MAX {
        return Err(ToolError::invalid_arg(
            "query",
            format!("is {chars} characters, the limit is {SEARCH_QUERY_CHARS_MAX}"),
        ));
    }
    Ok(())
}

/// `open_nodes`: the named entities that exist (in node id order), with the relations
/// touching them.
///
/// # Errors
/// Storage errors.
pub fn open_nodes(snap: &Snapshot, names: &[String]) -> Result<Graph, ToolError> {
    open_nodes_in(snap, names, RelationScope::Touching)
}

/// [`open_nodes`] with the relations `scope` selects.
///
/// # Errors
/// As [`open_nodes`].
pub fn open_nodes_in(
    snap: &Snapshot,
    names: &[String],
    scope: RelationScope,
) -> Result<Graph, ToolError> {
    let mut ids: Vec<NodeId> = names.iter().filter_map(|n| snap.node_id(n)).collect();
    ids.sort_unstable();
    ids.dedup();
    graph_of(snap, &ids, scope)
}
