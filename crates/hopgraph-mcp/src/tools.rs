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
    let c = Call {
        stores,
        context: args.opt_str("context")?,
        args,
        access: if CREATING_TOOLS.contains(&name) {
            Access::Create
        } else {
            Access::Existing
        },
        embedder: stores.config().embedder.as_deref(),
    };
    match name {
        "create_memory" => create_memory(&c),
        "supersede_memory" => supersede_memory(&c),
        "memory_history" => memory_history(&c),
        "end_link" => end_link(&c),
        "update_memory" => update_memory(&c),
        "get_memory" => get_memory(&c),
        "delete_memory" => delete_memory(&c),
        "memory_search" => memory_search(&c),
        "link" => link(&c),
        "unlink" => unlink(&c),
        "related" => related(&c),
        "traverse" => traverse(&c),
        "memory_path" => memory_path(&c),
        "expand" => expand(&c),
        "graph_stats" => graph_stats(&c),
        "aim_memory_store" => aim_memory_store(&c),
        "aim_memory_link" => aim_memory_link(&c),
        "list_contexts" => list_contexts(&c),
        other => Err(ToolError::new(
            ToolErrorKind::InvalidArgument,
            format!("Unknown tool: {other}"),
        )),
    }
}

/// One call of a memory tool: its arguments, and the stores and model it runs against.
struct Call<'a> {
    stores: &'a Stores,
    args: Args<'a>,
    /// The `context` argument.
    context: Option<String>,
    /// Whether the call may create its context's database (see [`CREATING_TOOLS`]).
    access: Access,
    /// The server's embedding model, if it has one.
    embedder: Option<&'a hopgraph_embed::Embedder>,
}

impl Call<'_> {
    fn ctx(&self) -> Option<&str> {
        self.context.as_deref()
    }

    /// A snapshot to read: an empty one on a context without a database (nothing is
    /// created).
    fn read(&self, location: Option<Location>) -> Result<hopgraph::Snapshot, ToolError> {
        self.stores.snapshot(self.ctx(), location)
    }

    /// The database a write goes to (see [`Stores::for_write`]).
    fn written(&self, location: Option<Location>) -> Result<DbHandle, ToolError> {
        self.stores.for_write(self.ctx(), location, self.access)
    }
}

// One function per tool, named after it: its arguments into the memory layer's request,
// the request to the memory layer, its answer out.

fn create_memory(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let mut req = new_memory(&c.args)?;
    let handle = c.written(None)?;
    embed_new(&handle, c.embedder, &mut req)?;
    ToolOutput::json(&nodes::create_memory(&handle, &req)?)
}

fn supersede_memory(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let by_id = c.args.opt_str("by_id")?;
    const NEW_FIELDS: [&str; 7] = [
        "type",
        "content",
        "title",
        "id",
        "importance",
        "metadata",
        "embedding",
    ];
    let new_fields = NEW_FIELDS.iter().any(|k| c.args.get(k).is_some());
    let mut req = SupersedeRequest {
        memory_id: c.args.req_id("memory_id")?,
        new_memory: None,
        at: c.args.opt_str("at")?,
        reason: c.args.opt_str("reason")?,
        derived_edge_types: c.args.opt_str_list("derived_edge_types")?,
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
        None => req.new_memory = Some(new_memory(&c.args)?),
    }
    let handle = c.written(None)?;
    if let Some(m) = &mut req.new_memory {
        embed_new(&handle, c.embedder, m)?;
    }
    ToolOutput::json(&history::supersede_memory(
        &handle,
        &mut c.stores.scratch(),
        &req,
    )?)
}

fn memory_history(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let id = c.args.req_id("memory_id")?;
    ToolOutput::json(&history::memory_history(&c.read(None)?, &id)?)
}

fn end_link(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let id = c.args.req_id("edge_id")?;
    let at = c.args.opt_str("at")?;
    ToolOutput::json(&edges::end_link(&*c.written(None)?, &id, at.as_deref())?)
}

fn update_memory(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let mut req = UpdateMemoryRequest {
        memory_id: c.args.req_id("memory_id")?,
        content: c.args.opt_str("content")?,
        memory_type: c.args.opt_str("type")?,
        importance: c.args.opt_f64("importance")?,
        metadata: c.args.opt_obj("metadata")?,
        title: c.args.opt_str("title")?,
        embedding: c.args.opt_num_list("embedding")?,
        echo_embedding: c.args.opt_bool("echo_embedding")?.unwrap_or(false),
        valid_from: c.args.opt_str("valid_from")?,
        valid_to: c.args.opt_str("valid_to")?,
    };
    let handle = c.written(None)?;
    // A changed title or content gets the model's embedding of the new text,
    // computed before the commit (the caller's embedding wins).
    if let Some(e) = c.embedder
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

fn get_memory(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let id = c.args.req_id("memory_id")?;
    let t = as_of(&c.args)?;
    ToolOutput::json(&nodes::get_memory_as_of(&c.read(None)?, &id, t)?)
}

fn delete_memory(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let id = c.args.req_id("memory_id")?;
    ToolOutput::json(&nodes::delete_memory(&*c.written(None)?, &id)?)
}

fn memory_search(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let mut req = SearchRequest {
        query: c.args.opt_str("query")?.unwrap_or_default(),
        // Ranges are the memory layer's to check (one place for each).
        limit: c.args.opt_integer("limit")?,
        offset: c.args.opt_integer("offset")?,
        memory_type: c.args.opt_str("type")?,
        min_importance: c.args.opt_f64("min_importance")?,
        created_after: c.args.opt_str("created_after")?,
        created_before: c.args.opt_str("created_before")?,
        embedding: c.args.opt_num_list("embedding")?,
        near: c.args.opt_str_list("near")?,
        max_hops: c.args.opt_integer("max_hops")?,
        edge_types: c.args.opt_str_list("edge_types")?,
        as_of: c.args.opt_str("as_of")?,
        include_history: c.args.opt_bool("include_history")?.unwrap_or(false),
        recency_half_life_days: c.args.opt_f64("recency_half_life_days")?,
        importance_weight: c.args.opt_f64("importance_weight")?,
    };
    let handle = c.stores.for_read(c.ctx(), None)?;
    let snap = handle
        .as_ref()
        .map_or_else(hopgraph::Snapshot::empty, |h| h.snapshot());
    // A query without an embedding gets the model's embedding of the query, so the
    // memory layer fuses text and vector ranking (a context without a database has
    // no model record to check against).
    if let Some(e) = c.embedder
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
        &mut c.stores.scratch(),
        &req,
    )?)
}

fn link(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let req = LinkRequest {
        source_id: c.args.req_id("source_id")?,
        target_id: c.args.req_id("target_id")?,
        edge_type: c.args.req_str("edge_type")?,
        metadata: c.args.opt_obj("metadata")?,
        weight: c.args.opt_f64("weight")?,
        valid_from: c.args.opt_str("valid_from")?,
        valid_to: c.args.opt_str("valid_to")?,
    };
    ToolOutput::json(&edges::link(&*c.written(None)?, &req)?)
}

fn unlink(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let id = c.args.req_id("edge_id")?;
    ToolOutput::json(&edges::unlink(&*c.written(None)?, &id)?)
}

fn related(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let req = RelatedRequest {
        memory_id: c.args.req_id("memory_id")?,
        edge_type: c.args.opt_str("edge_type")?,
        direction: husk_direction(&c.args)?,
        limit: c
            .args
            .opt_integer("limit")?
            .unwrap_or(Ranges::TOOLS.related_limit.default),
    };
    let t = as_of(&c.args)?;
    wrapped(&walk::related_as_of(&c.read(None)?, &req, t)?)
}

fn traverse(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let req = TraverseRequest {
        memory_id: c.args.req_id("memory_id")?,
        edge_types: c.args.opt_str_list("edge_types")?,
        max_depth: c
            .args
            .opt_integer("max_depth")?
            .unwrap_or(Ranges::TOOLS.traverse_depth.default),
        limit: c
            .args
            .opt_integer("limit")?
            .unwrap_or(Ranges::TOOLS.traverse_limit.default),
        direction: husk_direction(&c.args)?,
        budget: budget(),
    };
    let t = as_of(&c.args)?;
    let snap = c.read(None)?;
    wrapped(&walk::traverse_as_of(
        &snap,
        &mut c.stores.scratch(),
        &req,
        t,
    )?)
}

fn memory_path(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let req = PathRequest {
        from: c.args.req_id("from_id")?,
        to: c.args.req_id("to_id")?,
        max_hops: c
            .args
            .opt_integer("max_hops")?
            .unwrap_or(Ranges::TOOLS.path_hops.default),
        edge_types: c.args.opt_str_list("edge_types")?,
        direction: match c
            .args
            .opt_enum("direction", &["both", "out", "in"])?
            .as_deref()
        {
            Some("out") => Direction::Out,
            Some("in") => Direction::In,
            _ => Direction::Both,
        },
        all_shortest: c.args.opt_bool("all_shortest")?.unwrap_or(false),
        budget: budget(),
    };
    let t = as_of(&c.args)?;
    let snap = c.read(None)?;
    let result = path::memory_path_as_of(&snap, &mut c.stores.scratch(), &req, t)?;
    let mut out = ToolOutput::json(&result)?;
    out.text = result.text();
    Ok(out)
}

fn expand(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let seeds = c.args.opt_str_list("seed_doc_ids")?.ok_or_else(|| {
        ToolError::new(
            ToolErrorKind::InvalidArgument,
            "Missing required argument `seed_doc_ids`",
        )
    })?;
    let (direction, one_way_routes) = walk::parse_expand_direction(
        c.args
            .opt_enum(
                "direction",
                &["both", "forward", "backward", "outgoing", "incoming", "any"],
            )?
            .as_deref()
            .unwrap_or("both"),
    )?;
    let req = ExpandRequest {
        seed_doc_ids: seeds,
        hops: c.args.req_integer("hops")?,
        direction,
        one_way_routes,
        edge_types: c.args.opt_str_list("edge_types")?,
        filter_properties: c.args.opt_obj("filter_properties")?,
        include_superseded: c.args.opt_bool("include_superseded")?.unwrap_or(false),
        include_route: c.args.opt_bool("include_route")?.unwrap_or(false),
        limit: c
            .args
            .opt_integer("limit")?
            .unwrap_or(Ranges::TOOLS.expand_limit.default),
        budget: budget(),
    };
    let t = as_of(&c.args)?;
    let snap = c.read(None)?;
    ToolOutput::json(&walk::expand_as_of(
        &snap,
        &mut c.stores.scratch(),
        &req,
        t,
    )?)
}

fn graph_stats(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let s = match c.stores.for_read(c.ctx(), None)? {
        Some(h) => stats::graph_stats(&h)?,
        None => stats::graph_stats_missing(&c.stores.dir(c.ctx(), None)?),
    };
    let mut out = ToolOutput::json(&s)?;
    let (mode, model) = embed::stats_fields(c.embedder);
    if let Value::Object(m) = &mut out.structured {
        m.insert("search_mode".into(), mode);
        m.insert("embed_model".into(), model);
    }
    out.text = out.structured.to_string();
    Ok(out)
}

fn aim_memory_store(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let location = location(&c.args)?;
    let entities = super::kg_tools::entities(&c.args)?;
    let handle = c.written(location)?;
    let created = match c.embedder {
        None => aim::store_entities(&handle, &entities)?,
        Some(e) => super::kg_tools::store_entities_embedded(&handle, e, &entities)?,
    };
    ToolOutput::list(&created)
}

fn aim_memory_link(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let location = location(&c.args)?;
    let relations = super::kg_tools::relations(&c.args)?;
    ToolOutput::list(&aim::link_relations(&*c.written(location)?, &relations)?)
}

fn list_contexts(c: &Call<'_>) -> Result<ToolOutput, ToolError> {
    let contexts = c.stores.list_contexts()?;
    ToolOutput::json(&serde_json::json!({
        "contexts": contexts,
        "default_context": c.stores.config().default_context,
    }))
}
