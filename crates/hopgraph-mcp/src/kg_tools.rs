//! Dispatch of the `server-memory` profile: the official MCP memory server's nine tools
//! (semantics in [`hopgraph_memory::kg`]), answered as that server answers: the text block
//! is the result pretty-printed as JSON with two spaces (the bare list for
//! `create_entities`, `create_relations` and `add_observations`; the message for the delete
//! tools), `structuredContent` the object.
//!
//! The original has no `context`: these tools work on the server's default context. On a
//! server whose default context does not exist yet, the read tools answer an empty graph
//! and the others answer as on an empty graph, and nothing is created, except by
//! `create_entities`.

use std::collections::{HashMap, HashSet};

use hopgraph::Database;
use hopgraph_memory::aim::{Entity, Relation};
use hopgraph_memory::kg::{self, Graph, ObservationAdd, ObservationDelete, Outcome, RelationScope};
use hopgraph_memory::{ToolError, ToolErrorKind};
use serde::Serialize;
use serde_json::{Map, Value};

use super::args::location;
use super::args::{Args, in_item, item_obj};
use super::embed;
use super::output::ToolOutput;
use super::schema::{AIM_TOOLS, SERVER_MEMORY_TOOLS};
use super::store::{Access, DbHandle, Location, Stores};

/// Pretty JSON (two spaces) of `text_value` as text, `structured` as structured content.
fn output<T: Serialize, S: Serialize>(
    text_value: &T,
    structured: &S,
) -> Result<ToolOutput, ToolError> {
    let encode = |e: serde_json::Error| {
        ToolError::new(
            ToolErrorKind::Internal,
            format!("Internal error: cannot encode the result: {e}"),
        )
    };
    Ok(ToolOutput {
        text: serde_json::to_string_pretty(text_value).map_err(encode)?,
        structured: serde_json::to_value(structured).map_err(encode)?,
    })
}

fn outcome(o: &Outcome) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput {
        text: o.message.clone(),
        structured: serde_json::to_value(o).map_err(|e| {
            ToolError::new(
                ToolErrorKind::Internal,
                format!("Internal error: cannot encode the result: {e}"),
            )
        })?,
    })
}

fn graph(g: &Graph) -> Result<ToolOutput, ToolError> {
    output(g, g)
}

/// The `entities` argument of `create_entities` and `aim_memory_store`.
pub(crate) fn entities(args: &Args<'_>) -> Result<Vec<Entity>, ToolError> {
    args.req_array("entities")?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let p = format!("entities[{i}]");
            let a = item_obj(&p, v)?;
            let read = || -> Result<Entity, ToolError> {
                Ok(Entity {
                    name: a.req_str("name")?,
                    entity_type: a.req_str("entityType")?,
                    observations: a.opt_str_list("observations")?.ok_or_else(|| {
                        ToolError::new(
                            ToolErrorKind::InvalidArgument,
                            "Missing required argument `observations`",
                        )
                    })?,
                })
            };
            read().map_err(|e| in_item(&p, e))
        })
        .collect()
}

/// The `relations` argument of `create_relations`, `delete_relations` and
/// `aim_memory_link`.
pub(crate) fn relations(args: &Args<'_>) -> Result<Vec<Relation>, ToolError> {
    args.req_array("relations")?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let p = format!("relations[{i}]");
            let a = item_obj(&p, v)?;
            let read = || -> Result<Relation, ToolError> {
                Ok(Relation {
                    from: a.req_str("from")?,
                    to: a.req_str("to")?,
                    relation_type: a.req_str("relationType")?,
                })
            };
            read().map_err(|e| in_item(&p, e))
        })
        .collect()
}

/// `(entityName, list)` items of `add_observations` (`contents`) and
/// `delete_observations` (`observations`).
fn named_lists(
    args: &Args<'_>,
    name: &str,
    list: &str,
) -> Result<Vec<(String, Vec<String>)>, ToolError> {
    args.req_array(name)?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let p = format!("{name}[{i}]");
            let a = item_obj(&p, v)?;
            let read = || -> Result<(String, Vec<String>), ToolError> {
                Ok((
                    a.req_str("entityName")?,
                    a.opt_str_list(list)?.ok_or_else(|| {
                        ToolError::new(
                            ToolErrorKind::InvalidArgument,
                            format!("Missing required argument `{list}`"),
                        )
                    })?,
                ))
            };
            read().map_err(|e| in_item(&p, e))
        })
        .collect()
}

fn string_list(args: &Args<'_>, name: &str) -> Result<Vec<String>, ToolError> {
    args.opt_str_list(name)?.ok_or_else(|| {
        ToolError::new(
            ToolErrorKind::InvalidArgument,
            format!("Missing required argument `{name}`"),
        )
    })
}

/// Whether `name` is a tool this module runs (server-memory's, and AIM's beyond
/// `aim_memory_store` and `aim_memory_link`).
pub fn handles(name: &str) -> bool {
    SERVER_MEMORY_TOOLS.contains(&name)
        || (AIM_TOOLS.contains(&name) && !matches!(name, "aim_memory_store" | "aim_memory_link"))
}

/// The knowledge-graph operation a tool name stands for, and how it answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    CreateEntities,
    CreateRelations,
    AddObservations,
    DeleteEntities,
    DeleteObservations,
    DeleteRelations,
    ReadGraph,
    Search,
    Open,
    ListStores,
}

fn op_of(name: &str) -> Option<Op> {
    Some(match name {
        "create_entities" => Op::CreateEntities,
        "create_relations" => Op::CreateRelations,
        "add_observations" | "aim_memory_add_facts" => Op::AddObservations,
        "delete_entities" | "aim_memory_forget" => Op::DeleteEntities,
        "delete_observations" | "aim_memory_remove_facts" => Op::DeleteObservations,
        "delete_relations" | "aim_memory_unlink" => Op::DeleteRelations,
        "read_graph" | "aim_memory_read_all" => Op::ReadGraph,
        "search_nodes" | "aim_memory_search" => Op::Search,
        "open_nodes" | "aim_memory_get" => Op::Open,
        "aim_memory_list_stores" => Op::ListStores,
        _ => return None,
    })
}

/// AIM answers a delete with a fixed message, whatever matched.
fn aim_outcome(o: &Outcome, fixed: &str) -> Result<ToolOutput, ToolError> {
    outcome(&Outcome {
        success: o.success,
        message: fixed.to_owned(),
    })
}

/// Stores the entities whose names are new, each with the model's embedding of its name,
/// type and observations, in one atomic commit (`create_entities` and `aim_memory_store`
/// with a server model). The texts are embedded before the commit, outside the writer
/// lock; a name a concurrent writer created meanwhile is skipped by the store.
///
/// # Errors
/// Another model's context; an embedding failure; the store's errors.
pub(crate) fn store_entities_embedded(
    db: &hopgraph::Database,
    embedder: &hopgraph_embed::Embedder,
    entities: &[Entity],
) -> Result<Vec<Entity>, ToolError> {
    embed::check_model(db, embedder, true)?;
    let snap = db.snapshot();
    // The first entity of each new name (the store skips repeats).
    let mut seen = HashSet::new();
    let todo: Vec<&Entity> = entities
        .iter()
        .filter(|x| snap.node_id(&x.name).is_none() && seen.insert(x.name.as_str()))
        .collect();
    drop(snap);
    let texts: Vec<String> = todo.iter().map(|t| embed::entity_text(t)).collect();
    let vectors = if texts.is_empty() {
        Vec::new()
    } else {
        embed::embed_all(embedder, &texts)?
    };
    let mut by_name = HashMap::with_capacity(todo.len());
    for (x, v) in todo.iter().zip(&vectors) {
        by_name.insert(
            x.name.clone(),
            hopgraph_memory::nodes::check_embedding("embedding", v)?,
        );
    }
    hopgraph_memory::aim::store_entities_embedded(db, entities, &by_name)
}

/// Runs server-memory or AIM tool `name`.
///
/// # Errors
/// The tool's one-line error (bad arguments, a missing entity, storage problems).
pub fn call(
    stores: &Stores,
    name: &str,
    arguments: Option<&Map<String, Value>>,
) -> Result<ToolOutput, ToolError> {
    let args = Args::new(arguments);
    let op = op_of(name).ok_or_else(|| {
        ToolError::new(
            ToolErrorKind::InvalidArgument,
            format!("Unknown tool: {name}"),
        )
    })?;
    let aim = name.starts_with("aim_");
    // server-memory has no context: the default one. AIM names one (and a location).
    let (context, location) = if aim {
        (args.opt_str("context")?, location(&args)?)
    } else {
        (None, None)
    };
    if op == Op::ListStores {
        return list_stores(stores);
    }
    let c = KgCall {
        stores,
        op,
        aim,
        exists: Database::exists(stores.dir(context.as_deref(), location)?),
        embedder: stores.config().embedder.as_deref(),
        pretty_format: aim
            && args.opt_enum("format", &["json", "pretty"])?.as_deref() == Some("pretty"),
        args,
        context,
        location,
    };
    match op {
        Op::CreateEntities => create_entities(&c),
        Op::CreateRelations => create_relations(&c),
        Op::AddObservations => add_observations(&c),
        Op::DeleteEntities => delete_entities(&c),
        Op::DeleteObservations => delete_observations(&c),
        Op::DeleteRelations => delete_relations(&c),
        Op::ReadGraph | Op::Search | Op::Open => read(&c),
        Op::ListStores => list_stores(stores),
    }
}

/// One call of a server-memory or AIM tool: its arguments, where it goes, and what the
/// two tool sets answer differently.
struct KgCall<'a> {
    stores: &'a Stores,
    op: Op,
    args: Args<'a>,
    /// AIM's `aim_*` tools (otherwise server-memory's).
    aim: bool,
    /// AIM's `context` argument (server-memory has none: the default context).
    context: Option<String>,
    /// AIM's `location` argument.
    location: Option<Location>,
    /// Whether the context has a database yet.
    exists: bool,
    /// The server's embedding model, if it has one.
    embedder: Option<&'a hopgraph_embed::Embedder>,
    /// AIM's `format: "pretty"`.
    pretty_format: bool,
}

impl KgCall<'_> {
    fn ctx(&self) -> Option<&str> {
        self.context.as_deref()
    }

    /// Which relations a search or an open returns: AIM's, between the nodes found;
    /// server-memory's, touching them.
    fn scope(&self) -> RelationScope {
        if self.aim {
            RelationScope::Between
        } else {
            RelationScope::Touching
        }
    }

    /// The database a write goes to, created if `access` says so (see
    /// [`Stores::for_write`]).
    fn written(&self, access: Access) -> Result<DbHandle, ToolError> {
        self.stores.for_write(self.ctx(), self.location, access)
    }

    /// The database of a write that only changes what exists: `None` when the context has
    /// none yet, which the memory layer answers as an empty graph (nothing is created).
    fn existing(&self) -> Result<Option<DbHandle>, ToolError> {
        if self.exists {
            self.written(Access::Existing).map(Some)
        } else {
            Ok(None)
        }
    }
}

/// The database of an [`KgCall::existing`] handle.
fn database(handle: &Option<DbHandle>) -> Option<&Database> {
    handle.as_deref().map(|open| &**open)
}

// One function per tool (the three reads share one), named after it.

fn create_entities(c: &KgCall<'_>) -> Result<ToolOutput, ToolError> {
    let entities = entities(&c.args)?;
    let db = c.written(Access::Create)?;
    let created = match c.embedder {
        None => kg::create_entities(&db, &entities)?,
        Some(e) => store_entities_embedded(&db, e, &entities)?,
    };
    let mut m = Map::new();
    m.insert(
        "entities".into(),
        serde_json::to_value(&created).unwrap_or_default(),
    );
    output(&created, &m)
}

fn create_relations(c: &KgCall<'_>) -> Result<ToolOutput, ToolError> {
    let relations = relations(&c.args)?;
    let db = c.existing()?;
    let created = kg::create_relations(database(&db), &relations)?;
    let mut m = Map::new();
    m.insert(
        "relations".into(),
        serde_json::to_value(&created).unwrap_or_default(),
    );
    output(&created, &m)
}

fn add_observations(c: &KgCall<'_>) -> Result<ToolOutput, ToolError> {
    let items: Vec<ObservationAdd> = named_lists(&c.args, "observations", "contents")?
        .into_iter()
        .map(|(entity_name, contents)| ObservationAdd {
            entity_name,
            contents,
        })
        .collect();
    let db = c.existing()?;
    let results = match (c.embedder, &db) {
        (Some(e), Some(db)) => {
            embed::check_model(db, e, true)?;
            let f = |texts: &[String]| -> Result<Vec<Vec<f32>>, ToolError> {
                embed::embed_all(e, texts)?
                    .iter()
                    .map(|v| hopgraph_memory::nodes::check_embedding("embedding", v))
                    .collect()
            };
            kg::add_observations_embedded(Some(db), &items, Some(&f))?
        }
        // No model, or no database (nothing to embed: no entity exists).
        _ => kg::add_observations(database(&db), &items)?,
    };
    let mut m = Map::new();
    m.insert(
        "results".into(),
        serde_json::to_value(&results).unwrap_or_default(),
    );
    output(&results, &m)
}

fn delete_entities(c: &KgCall<'_>) -> Result<ToolOutput, ToolError> {
    let names = string_list(&c.args, "entityNames")?;
    let o = kg::delete_entities(database(&c.existing()?), &names)?;
    if c.aim {
        aim_outcome(&o, "Entities deleted successfully")
    } else {
        outcome(&o)
    }
}

fn delete_observations(c: &KgCall<'_>) -> Result<ToolOutput, ToolError> {
    let items: Vec<ObservationDelete> = named_lists(&c.args, "deletions", "observations")?
        .into_iter()
        .map(|(entity_name, observations)| ObservationDelete {
            entity_name,
            observations,
        })
        .collect();
    let o = kg::delete_observations(database(&c.existing()?), &items)?;
    if c.aim {
        aim_outcome(&o, "Observations deleted successfully")
    } else {
        outcome(&o)
    }
}

fn delete_relations(c: &KgCall<'_>) -> Result<ToolOutput, ToolError> {
    let relations = relations(&c.args)?;
    let o = kg::delete_relations(database(&c.existing()?), &relations)?;
    if c.aim {
        aim_outcome(&o, "Relations deleted successfully")
    } else {
        outcome(&o)
    }
}

fn read(c: &KgCall<'_>) -> Result<ToolOutput, ToolError> {
    // Arguments are checked before the context is looked at.
    let request = match c.op {
        Op::ReadGraph => Read::Graph(
            c.args.opt_str("cursor")?,
            // The memory layer checks the range.
            c.args.opt_integer("limit")?,
        ),
        Op::Search => Read::Search(c.args.req_str("query")?),
        _ => Read::Open(string_list(&c.args, "names")?),
    };
    // A context without a database reads as an empty graph; nothing is created.
    let snap = c.stores.snapshot(c.ctx(), c.location)?;
    let g = match request {
        Read::Graph(cursor, limit) => kg::read_graph(&snap, cursor.as_deref(), limit)?,
        Read::Search(q) => kg::search_nodes_in(&snap, &q, c.scope())?,
        Read::Open(names) => kg::open_nodes_in(&snap, &names, c.scope())?,
    };
    if c.pretty_format {
        let label = c.ctx().unwrap_or(&c.stores.config().default_context);
        Ok(ToolOutput {
            text: kg::pretty(&g, label),
            structured: serde_json::to_value(&g).map_err(|e| {
                ToolError::new(
                    ToolErrorKind::Internal,
                    format!("Internal error: cannot encode the result: {e}"),
                )
            })?,
        })
    } else {
        graph(&g)
    }
}

/// `aim_memory_list_stores`: the contexts (databases) under the project's `.hopgraph`
/// directory and under the data directory, and where calls go by default.
fn list_stores(stores: &Stores) -> Result<ToolOutput, ToolError> {
    let contexts_in = |dir: &std::path::Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|it| {
                it.filter_map(Result::ok)
                    .filter(|e| Database::exists(e.path()))
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    let global_dir = stores.config().data_dir.clone();
    let project_dir = stores
        .dir(None, Some(Location::Project))
        .ok()
        .and_then(|d| d.parent().map(std::path::Path::to_path_buf))
        .filter(|d| *d != global_dir);
    let (project, current) = match &project_dir {
        Some(d) if d.is_dir() => (contexts_in(d), "project (.hopgraph directory detected)"),
        Some(_) => (Vec::new(), "global (no .hopgraph directory in project)"),
        None => (
            Vec::new(),
            "global (no project detected, or an explicit data directory)",
        ),
    };
    let result = serde_json::json!({
        "project_databases": project,
        "global_databases": contexts_in(&global_dir),
        "current_location": current,
    });
    output(&result, &result)
}
/// A read tool's checked arguments.
enum Read {
    Graph(Option<String>, Option<i64>),
    Search(String),
    Open(Vec<String>),
}
