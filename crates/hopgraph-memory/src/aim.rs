//! `aim_memory_store` and `aim_memory_link` (mcp-knowledge-graph).
//!
//! An AIM entity is a node keyed by its name, with `type` = entityType, `title` = name and
//! `metadata.observations` = its observations. An AIM relation is an edge
//! `from -relationType-> to`.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::Serialize;
use serde_json::Value;

use super::{ToolError, ToolErrorKind, check_edge_type, check_key, engine_error};
use hopgraph::Database;
use hopgraph::Error;
use hopgraph::limits;
use hopgraph::{EdgeProps, NodeProps, Props};
use hopgraph::{OpResult, WriteBatch};

/// Most entities or relations in one call.
pub const AIM_BATCH_MAX: usize = 1000;

/// An AIM entity, as given to `aim_memory_store` and returned by it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Entity {
    /// Unique name (the node key).
    pub name: String,
    /// Entity type (the node kind).
    #[serde(rename = "entityType")]
    pub entity_type: String,
    /// Observations, in order.
    pub observations: Vec<String>,
}

/// An AIM relation, as given to `aim_memory_link` and returned by it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Relation {
    /// Subject entity name.
    pub from: String,
    /// Object entity name.
    pub to: String,
    /// The verb (edge type).
    #[serde(rename = "relationType")]
    pub relation_type: String,
}

fn check_batch(name: &str, n: usize) -> Result<(), ToolError> {
    if n > AIM_BATCH_MAX {
        return Err(ToolError::invalid_arg(
            name,
            format!("has {n} items, the limit is {AIM_BATCH_MAX}"),
        ));
    }
    Ok(())
}

/// `aim_memory_store`: creates the entities whose names do not exist yet and returns them,
/// in input order. Existing names and repeated names within the call are skipped.
///
/// # Errors
/// Invalid arguments (empty or oversized names, too many entities, oversized
/// observations), storage errors.
pub fn store_entities(db: &Database, entities: &[Entity]) -> Result<Vec<Entity>, ToolError> {
    store_entities_embedded(db, entities, &HashMap::new())
}

/// [`store_entities`], giving each created entity the embedding `vectors` holds for its
/// name (computed by the caller before, outside any lock), in the same atomic commit: an
/// entity is never stored without the embedding it was given.
///
/// # Errors
/// As [`store_entities`]; an embedding of another dimension than the store's.
pub fn store_entities_embedded(
    db: &Database,
    entities: &[Entity],
    vectors: &HashMap<String, Vec<f32>>,
) -> Result<Vec<Entity>, ToolError> {
    check_batch("entities", entities.len())?;
    for (i, e) in entities.iter().enumerate() {
        check_key(&format!("entities[{i}].name"), &e.name)?;
        if e.entity_type.len() > 4096 {
            return Err(ToolError::invalid_arg(
                &format!("entities[{i}].entityType"),
                "is longer than 4096 bytes",
            ));
        }
    }
    // Another process may create one of the names between our check and our commit; the
    // engine then rejects the batch with `NodeExists` and we retry with a fresh view.
    for _attempt in 0..3 {
        let snap = db.snapshot();
        let mut seen = HashSet::new();
        let mut batch = WriteBatch::new();
        let mut created = Vec::new();
        for (i, e) in entities.iter().enumerate() {
            if snap.node_id(&e.name).is_some() || !seen.insert(e.name.as_str()) {
                continue;
            }
            let mut props = Props::new();
            props.insert(
                "observations".into(),
                Value::Array(e.observations.iter().cloned().map(Value::String).collect()),
            );
            let n = Value::Object(props.clone()).to_string().len();
            if n > limits::NODE_PROPS_BYTES_MAX {
                return Err(ToolError::invalid_arg(
                    &format!("entities[{i}].observations"),
                    format!(
                        "are {n} bytes serialized, the limit is {}",
                        limits::NODE_PROPS_BYTES_MAX
                    ),
                ));
            }
            batch.create_node(
                e.name.clone(),
                NodeProps {
                    kind: e.entity_type.clone(),
                    title: e.name.clone(),
                    props,
                    embedding: vectors.get(&e.name).cloned(),
                    ..NodeProps::default()
                },
            );
            created.push(e.clone());
        }
        if batch.is_empty() {
            return Ok(created);
        }
        match db.commit(batch) {
            Ok(_) => return Ok(created),
            Err(Error::NodeExists { .. }) => continue,
            Err(e) => return Err(engine_error(&e)),
        }
    }
    Err(ToolError::new(
        ToolErrorKind::Storage,
        "Storage error: entities kept changing under concurrent writers; retry",
    ))
}

/// `aim_memory_link`: creates the relations that do not exist yet and returns them, in
/// input order. Relations already stored and repeats within the call are skipped. Both
/// entities of every relation must exist; otherwise nothing is written.
///
/// # Errors
/// `Entity not found: <names>` / `Entities not found: <names>` (comma-separated, sorted),
/// invalid arguments, storage errors.
pub fn link_relations(db: &Database, relations: &[Relation]) -> Result<Vec<Relation>, ToolError> {
    check_batch("relations", relations.len())?;
    for (i, r) in relations.iter().enumerate() {
        check_key(&format!("relations[{i}].from"), &r.from)?;
        check_key(&format!("relations[{i}].to"), &r.to)?;
        check_edge_type(&format!("relations[{i}].relationType"), &r.relation_type)?;
    }
    let snap = db.snapshot();
    let missing: BTreeSet<&str> = relations
        .iter()
        .flat_map(|r| [r.from.as_str(), r.to.as_str()])
        .filter(|k| snap.node_id(k).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(entities_missing(missing.into_iter()));
    }
    let mut batch = WriteBatch::new();
    for r in relations {
        batch.link(
            r.from.clone(),
            r.relation_type.clone(),
            r.to.clone(),
            EdgeProps::default(),
        );
    }
    let info = match db.commit(batch) {
        Ok(info) => info,
        Err(Error::NodeNotFound { key }) => {
            return Err(entities_missing([key.as_str()].into_iter()));
        }
        Err(e) => return Err(engine_error(&e)),
    };
    // A repeat within the batch sees the edge its first occurrence created, so only first
    // occurrences report `created`.
    Ok(relations
        .iter()
        .zip(&info.results)
        .filter(|(_, res)| matches!(res, OpResult::Linked { created: true, .. }))
        .map(|(r, _)| r.clone())
        .collect())
}

fn entities_missing<'a>(names: impl Iterator<Item = &'a str>) -> ToolError {
    let names: Vec<&str> = names.collect();
    let noun = if names.len() == 1 {
        "Entity"
    } else {
        "Entities"
    };
    ToolError::new(
        ToolErrorKind::NotFound,
        super::one_line(&format!("{noun} not found: {}", names.join(", "))),
    )
}
