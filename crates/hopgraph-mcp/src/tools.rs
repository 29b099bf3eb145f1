//! Tool dispatch: raw JSON arguments -> typed `memory` requests -> structured result and
//! text block.
//!
//! Everything here is synchronous and may block on disk; the server runs it on tokio's
//! blocking pool.

use serde::Serialize;
use serde_json::{Map, Value};

use super::args::{Args, check_id, location};
use super::embed;
use super::store::{Access, DbHandle, Location, Stores};
use hopgraph::Direction;
use hopgraph::kernel::Budget;
use hopgraph_memory::aim;
use hopgraph_memory::edges::{self, LinkRequest};
use hopgraph_memory::history::{self, SupersedeRequest};
use hopgraph_memory::nodes::{self, CreateMemoryRequest, UpdateMemoryRequest};
use hopgraph_memory::path::{self, PathRequest};
use hopgraph_memory::ranges::Ranges;
use hopgraph_memory::search::{self, SearchRequest};
use hopgraph_memory::time::opt_time;
use hopgraph_memory::walk::{self, ExpandRequest, ListResult, RelatedRequest, TraverseRequest};
use hopgraph_memory::{ToolError, ToolErrorKind, stats};

/// Wall-clock limit of one traversal; running out is an answer (`limit_reached`).
pub const QUERY_TIME_MAX: std::time::Duration = std::time::Duration::from_secs(10);

pub use super::args::{ARGUMENTS_BYTES_MAX, ARGUMENTS_DEPTH_MAX};
pub use super::output::ToolOutput;

/// A wrapped bare list: `{results, truncated}` structured, the bare list as text.
fn wrapped<T: Serialize>(list: &ListResult<T>) -> Result<ToolOutput, ToolError> {
    let mut out = ToolOutput::json(list)?;
    out.text = out.structured["results"].to_string();
    Ok(out)
}

fn budget() -> Budget {
    Budget {
        deadline: Some(std::time::Instant::now() + QUERY_TIME_MAX),
        ..Budget::default()
    }
}

fn husk_direction(args: &Args<'_>) -> Result<Direction, ToolError> {
    Ok(
        match args
            .opt_enum("direction", &["outgoing", "incoming", "both"])?
            .as_deref()
        {
            Some("outgoing") => Direction::Out,
            Some("incoming") => Direction::In,
            _ => Direction::Both,
        },
    )
}

/// The optional `as_of` argument, in ms since the Unix epoch.
fn as_of(args: &Args<'_>) -> Result<Option<u64>, ToolError> {
    opt_time("as_of", args.opt_str("as_of")?.as_deref())
}

/// The fields of a new memory (`create_memory`, `supersede_memory`).
fn new_memory(args: &Args<'_>) -> Result<CreateMemoryRequest, ToolError> {
    let id = args.opt_str("id")?;
    if let Some(id) = &id {
        check_id("id", id)?;
    }
    Ok(CreateMemoryRequest {
        memory_type: args.req_str("type")?,
        content: args.req_str("content")?,
        embedding: args.opt_num_list("embedding")?,
        importance: args.opt_f64("importance")?,
        metadata: args.opt_obj("metadata")?,
        id,
        title: args.opt_str("title")?,
        echo_embedding: args.opt_bool("echo_embedding")?.unwrap_or(false),
        valid_from: args.opt_str("valid_from")?,
        valid_to: args.opt_str("valid_to")?,
    })
}

/// Fills in a new memory's embedding with the server's model (the caller's wins), before
/// the memory functions take the write lock.
fn embed_new(
    handle: &DbHandle,
    embedder: Option<&hopgraph_embed::Embedder>,
    req: &mut CreateMemoryRequest,
) -> Result<(), ToolError> {
    if let Some(e) = embedder
        && req.embedding.is_none()
    {
        embed::check_model(handle, e, true)?;
        let text = embed::memory_text(req.title.as_deref(), &req.content);
        req.embedding = Some(embed::embed_one(e, text)?);
    }
    Ok(())
}

/// Checks size and depth of a call's arguments.
///
/// # Errors
/// `Arguments are N bytes ...` / `Arguments are nested ...`.
pub fn check_arguments(arguments: Option<&Map<String, Value>>) -> Result<(), ToolError> {
    let Some(m) = arguments else {
        return Ok(());
    };
    // Depth: the object itself is 1. Neither check copies the arguments.
    let depth = 1 + m
        .values()
        .map(hopgraph_memory::json_depth)
        .max()
        .unwrap_or(0);
    if depth > ARGUMENTS_DEPTH_MAX {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArgument,
            format!("Arguments are nested {depth} levels deep, the limit is {ARGUMENTS_DEPTH_MAX}"),
        ));
    }
    let mut counter = ByteCount(0);
    // Writing into a counter cannot fail; a map of JSON values always serializes.
    let _ = serde_json::to_writer(&mut counter, m);
    let n = counter.0;
    if n > ARGUMENTS_BYTES_MAX {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArgument,
            format!("Arguments are {n} bytes, the limit is {ARGUMENTS_BYTES_MAX}"),
        ));
    }
    Ok(())
}

/// An `io::Write` that only counts bytes.
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The tools that create their context's database when it is missing. The read-only
/// tools answer as an empty store there, the other writes "No such context" (a delete,
/// unlink or link on an empty context could only fail anyway); none creates anything.
pub const CREATING_TOOLS: [&str; 2] = ["create_memory", "aim_memory_store"];

/// Runs tool `name` with `arguments` against `stores`.
///
/// # Errors
/// The tool's one-line error (bad arguments, unknown ids, limits, storage problems).
/// An unknown `name` is reported as a tool error too; the server checks names first and
/// answers JSON-RPC -32602 for them.
pub fn call(
    stores: &Stores,
    name: &str,
    arguments: Option<&Map<String, Value>>,
) -> Result<ToolOutput, ToolError> {
    check_arguments(arguments)?;
    if super::kg_tools::handles(name) {
        return super::kg_tools::call(stores, name, arguments);
    }
    let args = Args::new(arguments);
    let context = args.opt_str("context")?;
    let ctx = context.as_deref();
    let access = if CREATING_TOOLS.contains(&name) {
        Access::Create
    } else {
        Access::Existing
    };
    let db = |location: Option<Location>| stores.database(ctx, location, access);
    // A read on a context without a database sees an empty store; nothing is created.
    let read = |location: Option<Location>| stores.snapshot(ctx, location);
    let embedder = stores.config().embedder.as_deref();
    // A write call: noted for maintenance (even when it fails: cheap and harmless).
    let written = |location: Option<Location>| -> Result<DbHandle, ToolError> {
        let h = db(location)?;
        h.note_write();
        Ok(h)
    };
    match name {
        "create_memory" => {
            let mut req = new_memory(&args)?;
            let handle = written(None)?;
            embed_new(&handle, embedder, &mut req)?;
            ToolOutput::json(&nodes::create_memory(&handle, &req)?)
        }
        "supersede_memory" => {
            let by_id = args.opt_str("by_id")?;
            const NEW_FIELDS: [&str; 7] = [
                "type",
                "content",
                "title",
                "id",
                "importance",
                "metadata",
                "embedding",
            ];
            let new_fields = NEW_FIELDS.iter().any(|k| args.get(k).is_some());
            let mut req = SupersedeRequest {
                memory_id: args.req_id("memory_id")?,
                new_memory: None,
                at: args.opt_str("at")?,
                reason: args.opt_str("reason")?,
                derived_edge_types: args.opt_str_list("derived_edge_types")?,
                by_id,
            };
            match &req.by_id {
                Some(by) => {
                    check_id("by_id", by)?;
                    if new_fields {
                        return Err(ToolError::invalid_arg(
                            "by_id",
                            "give either by_id or the new memory's fields (type, content, ...), not both",
                        ));
                    }
                }
                None => req.new_memory = Some(new_memory(&args)?),
            }
            let handle = written(None)?;
            if let Some(m) = &mut req.new_memory {
                embed_new(&handle, embedder, m)?;
            }
            ToolOutput::json(&history::supersede_memory(
                &handle,
                &mut stores.scratch(),
                &req,
            )?)
        }
        "memory_history" => {
            let id = args.req_id("memory_id")?;
            ToolOutput::json(&history::memory_history(&read(None)?, &id)?)
        }
        "end_link" => {
            let id = args.req_id("edge_id")?;
            let at = args.opt_str("at")?;
            ToolOutput::json(&edges::end_link(&*written(None)?, &id, at.as_deref())?)
        }
        "update_memory" => {
            let mut req = UpdateMemoryRequest {
                memory_id: args.req_id("memory_id")?,
                content: args.opt_str("content")?,
                memory_type: args.opt_str("type")?,
                importance: args.opt_f64("importance")?,
                metadata: args.opt_obj("metadata")?,
                title: args.opt_str("title")?,
                embedding: args.opt_num_list("embedding")?,
                echo_embedding: args.opt_bool("echo_embedding")?.unwrap_or(false),
                valid_from: args.opt_str("valid_from")?,
                valid_to: args.opt_str("valid_to")?,
            };
            let handle = written(None)?;
            // A changed title or content gets the model's embedding of the new text,
            // computed before the commit (the caller's embedding wins).
            if let Some(e) = embedder
                && req.embedding.is_none()
                && req.changes_text()
            {
                let old = nodes::read_node(&handle.snapshot(), &req.memory_id)?
                    .ok_or_else(nodes::memory_not_found)?;
                embed::check_model(&handle, e, true)?;
                let title = req.title.as_deref().unwrap_or(&old.props.title);
                let content = req.content.as_deref().unwrap_or(&old.props.content);
                req.embedding = Some(embed::embed_one(
                    e,
                    embed::memory_text(Some(title), content),
                )?);
            }
            ToolOutput::json(&nodes::update_memory(&handle, &req)?)
        }
        "get_memory" => {
            let id = args.req_id("memory_id")?;
            let t = as_of(&args)?;
            ToolOutput::json(&nodes::get_memory_as_of(&read(None)?, &id, t)?)
        }
        "delete_memory" => {
            let id = args.req_id("memory_id")?;
            ToolOutput::json(&nodes::delete_memory(&*written(None)?, &id)?)
        }
        "memory_search" => {
            let mut req = SearchRequest {
                query: args.opt_str("query")?.unwrap_or_default(),
                // Ranges are the memory layer's to check (one place for each).
                limit: args.opt_integer("limit")?,
                offset: args.opt_integer("offset")?,
                memory_type: args.opt_str("type")?,
                min_importance: args.opt_f64("min_importance")?,
                created_after: args.opt_str("created_after")?,
                created_before: args.opt_str("created_before")?,
                embedding: args.opt_num_list("embedding")?,
                near: args.opt_str_list("near")?,
                max_hops: args.opt_integer("max_hops")?,
                edge_types: args.opt_str_list("edge_types")?,
                as_of: args.opt_str("as_of")?,
                include_history: args.opt_bool("include_history")?.unwrap_or(false),
                recency_half_life_days: args.opt_f64("recency_half_life_days")?,
                importance_weight: args.opt_f64("importance_weight")?,
            };
            let handle = stores.for_read(ctx, None)?;
            let snap = handle
                .as_ref()
                .map_or_else(hopgraph::Snapshot::empty, |h| h.snapshot());
            // A query without an embedding gets the model's embedding of the query, so the
            // memory layer fuses text and vector ranking (a context without a database has
            // no model record to check against).
            if let Some(e) = embedder
                && req.embedding.is_none()
                && !req.query.trim().is_empty()
            {
                if let Some(handle) = &handle {
                    embed::check_model(handle, e, false)?;
                }
                req.embedding = Some(embed::embed_one(e, req.query.clone())?);
            }
            ToolOutput::json(&search::memory_search_in(
                &snap,
                &mut stores.scratch(),
                &req,
            )?)
        }
        "link" => {
            let req = LinkRequest {
                source_id: args.req_id("source_id")?,
                target_id: args.req_id("target_id")?,
                edge_type: args.req_str("edge_type")?,
                metadata: args.opt_obj("metadata")?,
                weight: args.opt_f64("weight")?,
                valid_from: args.opt_str("valid_from")?,
                valid_to: args.opt_str("valid_to")?,
            };
            ToolOutput::json(&edges::link(&*written(None)?, &req)?)
        }
        "unlink" => {
            let id = args.req_id("edge_id")?;
            ToolOutput::json(&edges::unlink(&*written(None)?, &id)?)
        }
        "related" => {
            let req = RelatedRequest {
                memory_id: args.req_id("memory_id")?,
                edge_type: args.opt_str("edge_type")?,
                direction: husk_direction(&args)?,
                limit: args
                    .opt_integer("limit")?
                    .unwrap_or(Ranges::TOOLS.related_limit.default),
            };
            let t = as_of(&args)?;
            wrapped(&walk::related_as_of(&read(None)?, &req, t)?)
        }
        "traverse" => {
            let req = TraverseRequest {
                memory_id: args.req_id("memory_id")?,
                edge_types: args.opt_str_list("edge_types")?,
                max_depth: args
                    .opt_integer("max_depth")?
                    .unwrap_or(Ranges::TOOLS.traverse_depth.default),
                limit: args
                    .opt_integer("limit")?
                    .unwrap_or(Ranges::TOOLS.traverse_limit.default),
                direction: husk_direction(&args)?,
                budget: budget(),
            };
            let t = as_of(&args)?;
            let snap = read(None)?;
            wrapped(&walk::traverse_as_of(
                &snap,
                &mut stores.scratch(),
                &req,
                t,
            )?)
        }
        "memory_path" => {
            let req = PathRequest {
                from: args.req_id("from_id")?,
                to: args.req_id("to_id")?,
                max_hops: args
                    .opt_integer("max_hops")?
                    .unwrap_or(Ranges::TOOLS.path_hops.default),
                edge_types: args.opt_str_list("edge_types")?,
                direction: match args
                    .opt_enum("direction", &["both", "out", "in"])?
                    .as_deref()
                {
                    Some("out") => Direction::Out,
                    Some("in") => Direction::In,
                    _ => Direction::Both,
                },
                all_shortest: args.opt_bool("all_shortest")?.unwrap_or(false),
                budget: budget(),
            };
            let t = as_of(&args)?;
            let snap = read(None)?;
            let result = path::memory_path_as_of(&snap, &mut stores.scratch(), &req, t)?;
            let mut out = ToolOutput::json(&result)?;
            out.text = result.text();
            Ok(out)
        }
        "expand" => {
            let seeds = args.opt_str_list("seed_doc_ids")?.ok_or_else(|| {
                ToolError::new(
                    ToolErrorKind::InvalidArgument,
                    "Missing required argument `seed_doc_ids`",
                )
            })?;
            let (direction, one_way_routes) = walk::parse_expand_direction(
                args.opt_enum(
                    "direction",
                    &["both", "forward", "backward", "outgoing", "incoming", "any"],
                )?
                .as_deref()
                .unwrap_or("both"),
            )?;
            let req = ExpandRequest {
                seed_doc_ids: seeds,
                hops: args.req_integer("hops")?,
                direction,
                one_way_routes,
                edge_types: args.opt_str_list("edge_types")?,
                filter_properties: args.opt_obj("filter_properties")?,
                include_superseded: args.opt_bool("include_superseded")?.unwrap_or(false),
                include_route: args.opt_bool("include_route")?.unwrap_or(false),
                limit: args
                    .opt_integer("limit")?
                    .unwrap_or(Ranges::TOOLS.expand_limit.default),
                budget: budget(),
            };
            let t = as_of(&args)?;
            let snap = read(None)?;
            ToolOutput::json(&walk::expand_as_of(&snap, &mut stores.scratch(), &req, t)?)
        }
        "graph_stats" => {
            let s = match stores.for_read(ctx, None)? {
                Some(h) => stats::graph_stats(&h)?,
                None => stats::graph_stats_missing(&stores.dir(ctx, None)?),
            };
            let mut out = ToolOutput::json(&s)?;
            let (mode, model) = embed::stats_fields(embedder);
            if let Value::Object(m) = &mut out.structured {
                m.insert("search_mode".into(), mode);
                m.insert("embed_model".into(), model);
            }
            out.text = out.structured.to_string();
            Ok(out)
        }
        "aim_memory_store" => {
            let location = location(&args)?;
            let entities = super::kg_tools::entities(&args)?;
            let handle = written(location)?;
            let created = match embedder {
                None => aim::store_entities(&handle, &entities)?,
                Some(e) => super::kg_tools::store_entities_embedded(&handle, e, &entities)?,
            };
            ToolOutput::list(&created)
        }
        "aim_memory_link" => {
            let location = location(&args)?;
            let relations = super::kg_tools::relations(&args)?;
            ToolOutput::list(&aim::link_relations(&*written(location)?, &relations)?)
        }
        "list_contexts" => {
            let contexts = stores.list_contexts()?;
            ToolOutput::json(&serde_json::json!({
                "contexts": contexts,
                "default_context": stores.config().default_context,
            }))
        }
        other => Err(ToolError::new(
            ToolErrorKind::InvalidArgument,
            format!("Unknown tool: {other}"),
        )),
    }
}
