//! Single-record commands: `get` (one node with its properties and edge counts) and `add`
//! (one node or one edge, committed through a [`WriteBatch`]).

use std::collections::BTreeMap;
use std::io::{self, Write};

use clap::{Args, Subcommand};
use serde::Serialize;

use super::records::NodeRecord;
use super::{CliError, CliResult, DbArg, json_line, open_existing, open_read_only};
use hopgraph::{Direction, EdgeProps, NodeProps, OpResult, Props, TypeFilter, WriteBatch};

const GET_EXAMPLES: &str = "\
Examples:  (on the sample that `hopgraph --help` imports)
  hopgraph get --db ./mem deploy-billing-api-2-3
  hopgraph get --db ./mem deploy-billing-api-2-3 --json | jq .edges
  hopgraph get --db ./mem deploy-billing-api-2-3 --as-of 2100-01-01T00:00:00Z";

/// Show one node: its properties and how many edges it has, per type.
#[derive(Debug, Args)]
#[command(
    long_about = "Shows one node by key: kind, title, status, importance, content, free-form \
                  properties, timestamps, validity interval and its edge counts (out, in, per \
                  type). Exits 1 when the key does not exist, or with --as-of TIME when the \
                  node was not valid then (valid_from <= TIME < valid_to); the edge counts then \
                  count the edges valid at TIME. With --json: one object {key, kind, title, \
                  content, importance, status, props, embedding, created_at, updated_at, \
                  valid_from, valid_to, edges{out, in, by_type[{type, out, in}]}} (the node \
                  fields are those of an exported {\"node\":...} line; times in RFC 3339, UTC; \
                  valid_to null: never ends).",
    after_long_help = GET_EXAMPLES
)]
pub(crate) struct GetArgs {
    #[command(flatten)]
    db: DbArg,
    /// The node's key.
    key: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    as_of: super::query::AsOfArg,
}

/// A node's edge counts.
#[derive(Debug, Default, Serialize)]
struct EdgeCounts {
    out: u64,
    #[serde(rename = "in")]
    incoming: u64,
    by_type: Vec<TypeCount>,
}

#[derive(Debug, Serialize)]
struct TypeCount {
    #[serde(rename = "type")]
    edge_type: String,
    out: u64,
    #[serde(rename = "in")]
    incoming: u64,
}

#[derive(Serialize)]
struct GetAnswer {
    #[serde(flatten)]
    node: NodeRecord,
    edges: EdgeCounts,
}

pub(crate) fn get(args: GetArgs) -> CliResult {
    let db = open_read_only(&args.db.db)?;
    let snap = db.snapshot();
    let as_of = args.as_of.as_of;
    let node = snap.node_by_key(&args.key)?;
    let Some(node) = node.filter(|n| as_of.is_none_or(|t| n.valid_at(t))) else {
        let when = as_of.map_or(String::new(), |t| {
            format!(" (as of {})", hopgraph_memory::rfc3339(t))
        });
        return Err(CliError::not_found(format!(
            "unknown node key: {}{when}",
            args.key
        )));
    };
    let mut per_type: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut counts = EdgeCounts::default();
    for (dir, outgoing) in [(Direction::Out, true), (Direction::In, false)] {
        for nb in snap.neighbors(node.id, dir, &TypeFilter::All) {
            if let Some(t) = as_of
                && !(snap.edge_valid_at(nb.edge, t) && snap.node_valid_at(nb.node, t))
            {
                continue;
            }
            let name = snap.type_name(nb.edge_type).unwrap_or("?").to_owned();
            let slot = per_type.entry(name).or_default();
            if outgoing {
                counts.out += 1;
                slot.0 += 1;
            } else {
                counts.incoming += 1;
                slot.1 += 1;
            }
        }
    }
    counts.by_type = per_type
        .into_iter()
        .map(|(edge_type, (out, incoming))| TypeCount {
            edge_type,
            out,
            incoming,
        })
        .collect();
    let answer = GetAnswer {
        node: NodeRecord::from_node(&node),
        edges: counts,
    };
    let mut out = io::stdout().lock();
    if args.json {
        return json_line(&mut out, &answer);
    }
    let n = &answer.node;
    writeln!(out, "key         {}", n.key)?;
    for (label, value) in [
        ("kind", &n.kind),
        ("title", &n.title),
        ("status", &n.status),
    ] {
        if !value.is_empty() {
            writeln!(out, "{label:<12}{value}")?;
        }
    }
    if n.importance != 0.0 {
        writeln!(out, "importance  {}", n.importance)?;
    }
    if !n.props.is_empty() {
        writeln!(
            out,
            "props       {}",
            serde_json::Value::Object(n.props.clone())
        )?;
    }
    if let Some(e) = &n.embedding {
        writeln!(out, "embedding   {} dimensions", e.len())?;
    }
    for (label, ms) in [("created", n.created_at), ("updated", n.updated_at)] {
        if let Some(ms) = ms {
            writeln!(out, "{label:<12}{}", hopgraph_memory::rfc3339(ms.0))?;
        }
    }
    if let Some(from) = n.valid_from {
        let to = n.valid_to.map_or("never ends".to_owned(), |t| {
            format!("until {}", hopgraph_memory::rfc3339(t.0))
        });
        writeln!(
            out,
            "valid       from {}, {to}",
            hopgraph_memory::rfc3339(from.0)
        )?;
    }
    let c = &answer.edges;
    write!(out, "edges       {} out, {} in", c.out, c.incoming)?;
    for t in &c.by_type {
        write!(out, "; {} {}→ {}←", t.edge_type, t.out, t.incoming)?;
    }
    writeln!(out)?;
    if !n.content.is_empty() {
        writeln!(out, "\n{}", n.content)?;
    }
    Ok(())
}

const ADD_EXAMPLES: &str = "\
Examples:  (on the sample that `hopgraph --help` imports)
  hopgraph add --db ./mem node note-cache-misses --kind decision \\
      --title \"Cache misses\" --content \"Raise cache_ttl on checkout to 300 s.\"
  hopgraph add --db ./mem node note-cache-misses \\
      --title \"Cache misses, revised\" --replace
  hopgraph add --db ./mem edge note-cache-misses caused_by deploy-auth-3-0
  hopgraph add --db ./mem edge outage-friday caused_by deploy-friday \\
      --create-missing --weight 0.5";

/// Add one node or one edge (one atomic commit).
#[derive(Debug, Args)]
#[command(
    long_about = "Adds one node or one edge in one atomic commit (through the write-ahead \
                  log, like any writer; the database must exist). A node key that exists \
                  already is an error (exit 5) unless --replace replaces its properties. An edge \
                  needs both endpoints to exist (exit 1 otherwise) unless --create-missing \
                  creates them with empty properties; an edge that exists already is reported, \
                  not duplicated.",
    after_long_help = ADD_EXAMPLES
)]
pub(crate) struct AddArgs {
    #[command(flatten)]
    db: DbArg,
    #[command(subcommand)]
    what: AddWhat,
    /// Print the result as one JSON object.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum AddWhat {
    /// A node: add node KEY [--title T] [--kind K] [--content C] ...
    Node(AddNode),
    /// An edge: add edge FROM TYPE TO
    Edge(AddEdge),
}

#[derive(Debug, Args)]
struct AddNode {
    /// The new node's key.
    key: String,
    /// Short title.
    #[arg(long)]
    title: Option<String>,
    /// What kind of thing it is (a memory or entity type).
    #[arg(long)]
    kind: Option<String>,
    /// Body text.
    #[arg(long)]
    content: Option<String>,
    /// Lifecycle status (e.g. active, superseded).
    #[arg(long)]
    status: Option<String>,
    /// Importance score.
    #[arg(long)]
    importance: Option<f32>,
    /// Free-form properties (a JSON object).
    #[arg(long, value_name = "JSON", value_parser = super::query::parse_json_object)]
    props: Option<Props>,
    /// Replace the properties of an existing node instead of failing.
    #[arg(long)]
    replace: bool,
}

#[derive(Debug, Args)]
struct AddEdge {
    /// Source key.
    from: String,
    /// Edge type.
    #[arg(value_name = "TYPE")]
    edge_type: String,
    /// Target key.
    to: String,
    /// Edge weight.
    #[arg(long, default_value_t = 1.0)]
    weight: f32,
    /// Create either endpoint that does not exist yet (empty properties).
    #[arg(long)]
    create_missing: bool,
}

pub(crate) fn add(args: AddArgs) -> CliResult {
    let db = open_existing(&args.db.db)?;
    let mut batch = WriteBatch::new();
    match &args.what {
        AddWhat::Node(n) => {
            let props = NodeProps {
                kind: n.kind.clone().unwrap_or_default(),
                title: n.title.clone().unwrap_or_default(),
                content: n.content.clone().unwrap_or_default(),
                status: n.status.clone().unwrap_or_default(),
                importance: n.importance.unwrap_or(0.0),
                props: n.props.clone().unwrap_or_default(),
                embedding: None,
            };
            if n.replace {
                batch.upsert_node(n.key.clone(), props);
            } else {
                batch.create_node(n.key.clone(), props);
            }
        }
        AddWhat::Edge(e) => {
            if !e.weight.is_finite() {
                return Err(CliError::new(format!(
                    "weight {} is not a finite number",
                    e.weight
                )));
            }
            let props = EdgeProps {
                weight: e.weight,
                ..EdgeProps::default()
            };
            if e.create_missing {
                batch.link_creating_missing(&*e.from, &*e.edge_type, &*e.to, props);
            } else {
                batch.link(&*e.from, &*e.edge_type, &*e.to, props);
            }
        }
    }
    let info = db.commit(batch)?;
    let mut out = io::stdout().lock();
    // The last result is the request asked for (ensure_node results come first).
    match (info.results.last(), &args.what) {
        (Some(OpResult::Node { id, created }), AddWhat::Node(n)) => {
            if args.json {
                json_line(
                    &mut out,
                    &serde_json::json!({"node": n.key, "id": id.0, "created": created}),
                )?;
            } else {
                let verb = if *created { "created" } else { "replaced" };
                writeln!(out, "{verb} node {}", n.key)?;
            }
        }
        (Some(OpResult::Linked { edge, created }), AddWhat::Edge(e)) => {
            if args.json {
                json_line(
                    &mut out,
                    &serde_json::json!({"source": e.from, "type": e.edge_type, "target": e.to,
                                        "edge_id": edge.0, "created": created}),
                )?;
            } else {
                let verb = if *created {
                    "created"
                } else {
                    "exists already:"
                };
                writeln!(out, "{verb} edge {} -{}-> {}", e.from, e.edge_type, e.to)?;
            }
        }
        (other, _) => {
            return Err(CliError::io(format!(
                "the commit answered {other:?}, not the request's result"
            )));
        }
    }
    Ok(())
}
