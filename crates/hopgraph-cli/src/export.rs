//! `hopgraph export`: one snapshot written as JSONL (lossless), TSV/CSV edge lists, the MCP
//! reference memory server's JSONL, Graphviz DOT, GraphML, or node/edge CSV tables for
//! Neo4j's and Kuzu's bulk importers or for Spark GraphFrames; the whole graph or the
//! neighborhood of seed nodes.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, ValueEnum};

use super::input::csv_field;
use super::query::TypeArgs;
use super::records::{
    EdgeRecord, EntityOut, JSONL_VERSION, Line, NodeRecord, RelationOut, observations,
};
use super::{CliError, CliResult, DbArg, json_line as json, open_read_only};
use hopgraph::{Direction, Node, NodeId, Snapshot, TypeFilter};

const LONG_ABOUT: &str = "\
Writes the whole database, as of one consistent snapshot, to a file or stdout.

Formats:
  jsonl          lossless: a header line {\"hopgraph\":\"export\",\"version\":1}, one
                 {\"node\":{key,kind,title,content,importance,status,props,embedding,created_at,
                 updated_at,valid_from,valid_to}} line per node, one {\"edge\":{source,target,
                 type,weight,props,id,created_at,valid_from,valid_to}} line per edge, and a
                 closing {\"hopgraph\":\"end\",\"nodes\":N,\"edges\":M} line by which import
                 detects a truncated file. Times are RFC 3339 (\"2024-05-01T12:00:00.000Z\");
                 valid_from/valid_to are the validity interval (valid_to null: never ends),
                 ended edges included. Import gives the same graph with the same intervals
                 (ids and commit timestamps are assigned anew).
  tsv            edges only: source<TAB>target<TAB>type, plus <TAB>weight when it is not 1.
                 Keys containing a tab, CR or LF, or a source starting with #, cannot be
                 written: use jsonl.
  csv            the same with commas, quoting fields where needed
  server-memory  the MCP reference memory server's file: one entity per node (name = key,
                 entityType = kind, observations = props.observations, preceded by the
                 node's title when it differs from the key and its content, when they are
                 not among the observations already) and one relation per edge. Other node
                 properties and edge weights are not kept.
  dot            Graphviz: a digraph, nodes labelled key and title, edges labelled by type
                 (`dot -Tsvg`), each with valid_from (and valid_to, drawn dashed, when it
                 has ended). Meant for a neighborhood: see --seed.
  graphml        GraphML (Gephi, yEd, NetworkX, igraph): node data kind, title, content,
                 status, importance; edge data type, weight; both valid_from and (when it
                 ends) valid_to, RFC 3339 UTC.
  csv-tables     --out DIR gets DIR/nodes.csv and DIR/edges.csv, with headers for
                 `neo4j-admin database import full --nodes=Node=nodes.csv
                 --relationships=edges.csv --multiline-fields=true`:
                   key:ID,kind,title,content,importance:float,status,props,
                     valid_from:datetime,valid_to:datetime
                   :START_ID,:END_ID,:TYPE,weight:float,props,valid_from:datetime,
                     valid_to:datetime
                 The label comes from the command line (Node= above): there is no
                 :LABEL column, as a kind is free text and may hold `;`, the array
                 delimiter; kind is a property. Leave --legacy-style-quoting false (its
                 default): a backslash before a quote in a field is text, not an escape;
                 and --multiline-fields-format at v1 (its default): v2 wants every text
                 field quoted, and fields are quoted only where needed.
                 Kuzu reads the same files by column position (header=true):
                   CREATE NODE TABLE Node(key STRING PRIMARY KEY, kind STRING, title STRING,
                     content STRING, importance FLOAT, status STRING, props STRING,
                     valid_from TIMESTAMP, valid_to TIMESTAMP);
                   CREATE REL TABLE Edge(FROM Node TO Node, type STRING, weight FLOAT,
                     props STRING, valid_from TIMESTAMP, valid_to TIMESTAMP);
                   COPY Node FROM 'DIR/nodes.csv' (header=true);
                   COPY Edge FROM 'DIR/edges.csv' (header=true);
                 props is a JSON object in one field; valid_from/valid_to are the validity
                 interval in RFC 3339 UTC (2024-05-01T12:00:00.000Z), valid_to an empty
                 field (null: no property in Neo4j) when it never ends; fields are quoted as
                 RFC 4180 says (quotes doubled; empty text, and text with a line break,
                 comma, quote or leading/trailing space, in quotes); Kuzu needs
                 parallel=false when a field holds a line break.
  graphframes    --out DIR gets DIR/vertices.csv and DIR/edges.csv for Spark GraphFrames:
                 the same rows as csv-tables under GraphFrames' column names, and the
                 edge id:
                   id,kind,title,content,importance,status,props,valid_from,valid_to
                   src,dst,relationship,weight,props,valid_from,valid_to,edge_id
                 (id = node key, relationship = edge type). CSV with a header, not
                 Parquet: see DESIGN.md. In PySpark, with these read options (escape:
                 Spark's default escape is a backslash, which JSON props hold; nullValue:
                 by default a quoted empty field would read as null, not empty text):
                   opts = dict(header=True, multiLine=True, escape='\"',
                               nullValue='\\u0000', mode='FAILFAST')
                   v = spark.read.csv('DIR/vertices.csv', **opts, schema=
                     'id STRING, kind STRING, title STRING, content STRING, '
                     'importance DOUBLE, status STRING, props STRING, '
                     'valid_from TIMESTAMP, valid_to TIMESTAMP')
                   e = spark.read.csv('DIR/edges.csv', **opts, schema=
                     'src STRING, dst STRING, relationship STRING, weight DOUBLE, '
                     'props STRING, valid_from TIMESTAMP, valid_to TIMESTAMP, '
                     'edge_id LONG')
                   g = GraphFrame(v, e)
                 valid_to is null for \"never ends\"; the current graph is the rows with
                 valid_to null or in the future (ended nodes and edges are exported too).
                 multiLine makes each file one Spark task: for large graphs write the two
                 DataFrames out as Parquet once and read that afterwards.

--seed KEY (repeatable) with --max-hops N exports only the nodes within N hops of the seeds
(edges walked either way, or as --direction and --type say) and the edges among them, in
every format.

Nodes come in id order, and each node's outgoing edges by (type, target).";

const EXAMPLES: &str = "\
Examples:  (on the sample that `hopgraph --help` imports)
  hopgraph export --db ./mem --out backup.jsonl
  hopgraph export --db ./mem --format tsv | sort > edges.tsv
  hopgraph export --db ./mem --format server-memory --out memory.json
  hopgraph export --db ./mem --format dot --seed deploy-billing-api-2-3 \\
      --max-hops 2 | dot -Tsvg > billing.svg
  hopgraph export --db ./mem --format graphml --seed deploy-billing-api-2-3 \\
      --max-hops 3 --out billing.graphml
  hopgraph export --db ./mem --format csv-tables --out ./tables
  hopgraph export --db ./mem --format graphframes --out ./spark-tables";

/// Export the database as JSONL, TSV/CSV, DOT, GraphML, or tables for Neo4j, Kuzu or
/// Spark GraphFrames.
#[derive(Debug, Args)]
#[command(long_about = LONG_ABOUT, after_long_help = EXAMPLES)]
pub(crate) struct ExportArgs {
    #[command(flatten)]
    db: DbArg,
    /// Output format (see --help).
    #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
    format: ExportFormat,
    /// Write to FILE (replaced atomically when complete) instead of stdout; a directory
    /// for csv-tables and graphframes.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Export only the neighborhood of this node (repeat for several seeds).
    #[arg(long, value_name = "KEY")]
    seed: Vec<String>,
    /// With --seed: how many hops from the seeds to include.
    #[arg(
        long,
        alias = "hops",
        value_name = "N",
        default_value_t = 1,
        requires = "seed"
    )]
    max_hops: u32,
    /// With --seed: which way edges are walked to find the neighborhood.
    #[arg(long, value_enum, default_value_t = Dir::Both, requires = "seed")]
    direction: Dir,
    /// With --seed: walk only edges of these types.
    #[command(flatten)]
    types: TypeArgs,
}

/// Which way the neighborhood walk follows edges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Dir {
    Both,
    Out,
    In,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ExportFormat {
    Jsonl,
    Tsv,
    Csv,
    ServerMemory,
    Dot,
    Graphml,
    CsvTables,
    Graphframes,
}

/// The formats written as a node table and an edge table into `--out DIR`: the same rows
/// (one writer), different headers and file names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tables {
    /// `csv-tables`: `neo4j-admin database import` headers; Kuzu reads it by position.
    Neo4j,
    /// `graphframes`: the column names GraphFrames looks for (`id`; `src`, `dst`), and
    /// each edge's id.
    GraphFrames,
}

impl Tables {
    fn of(format: ExportFormat) -> Option<Tables> {
        match format {
            ExportFormat::CsvTables => Some(Tables::Neo4j),
            ExportFormat::Graphframes => Some(Tables::GraphFrames),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Tables::Neo4j => "csv-tables",
            Tables::GraphFrames => "graphframes",
        }
    }

    fn files(self) -> [&'static str; 2] {
        match self {
            Tables::Neo4j => ["nodes.csv", "edges.csv"],
            Tables::GraphFrames => ["vertices.csv", "edges.csv"],
        }
    }

    fn node_columns(self) -> &'static [&'static str] {
        match self {
            Tables::Neo4j => &NEO4J_NODE_COLUMNS,
            Tables::GraphFrames => &GRAPHFRAMES_NODE_COLUMNS,
        }
    }

    fn edge_columns(self) -> &'static [&'static str] {
        match self {
            Tables::Neo4j => &NEO4J_EDGE_COLUMNS,
            Tables::GraphFrames => &GRAPHFRAMES_EDGE_COLUMNS,
        }
    }
}

/// The node table's header for `neo4j-admin database import` (`<name>:<field_type>`; the
/// key is the import's ID and is kept as the property `key`; no type means string). No
/// `:LABEL` column: the label is given on the command line (`--nodes=Node=nodes.csv`),
/// because a kind is free text that may hold `;`, the array delimiter, and Kuzu reads
/// these files by position.
const NEO4J_NODE_COLUMNS: [&str; 9] = [
    "key:ID",
    "kind",
    "title",
    "content",
    "importance:float",
    "status",
    "props",
    "valid_from:datetime",
    "valid_to:datetime",
];
const NEO4J_EDGE_COLUMNS: [&str; 7] = [
    ":START_ID",
    ":END_ID",
    ":TYPE",
    "weight:float",
    "props",
    "valid_from:datetime",
    "valid_to:datetime",
];
/// GraphFrames' vertex table: `id` plus properties, in the order of the Neo4j table.
const GRAPHFRAMES_NODE_COLUMNS: [&str; 9] = [
    "id",
    "kind",
    "title",
    "content",
    "importance",
    "status",
    "props",
    "valid_from",
    "valid_to",
];
/// GraphFrames' edge table: `src`, `dst`, then `relationship` (the edge type, the name
/// GraphFrames' own examples use), properties, and hopgraph's edge id last.
const GRAPHFRAMES_EDGE_COLUMNS: [&str; 8] = [
    "src",
    "dst",
    "relationship",
    "weight",
    "props",
    "valid_from",
    "valid_to",
    "edge_id",
];

pub(crate) fn run(args: ExportArgs) -> CliResult {
    let db = open_read_only(&args.db.db)?;
    let snap = db.snapshot();
    let nodes = if args.seed.is_empty() {
        nodes(&snap)?
    } else {
        neighborhood(&snap, &args)?
    };
    if let Some(tables) = Tables::of(args.format) {
        let Some(dir) = &args.out else {
            let [n, e] = tables.files();
            return Err(CliError::usage(format!(
                "--format {} writes two files ({n} and {e}): give --out DIR",
                tables.name()
            )));
        };
        if dir.is_file() {
            return Err(CliError::usage(format!(
                "--out {} is a file; --format {} writes a directory",
                dir.display(),
                tables.name()
            )));
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::io(format!("cannot create {}: {e}", dir.display())))?;
        let [node_file, edge_file] = tables.files();
        write_file(&dir.join(node_file), |out| node_table(tables, &nodes, out))?;
        return write_file(&dir.join(edge_file), |out| {
            write(&snap, &nodes, args.format, out)
        });
    }
    match &args.out {
        None => {
            let mut out = BufWriter::new(io::stdout().lock());
            write(&snap, &nodes, args.format, &mut out)?;
            out.flush()?;
            Ok(())
        }
        Some(path) => write_file(path, |out| write(&snap, &nodes, args.format, out)),
    }
}

/// The nodes within `--max-hops` of the seeds (breadth-first), in id order.
fn neighborhood(snap: &Snapshot, args: &ExportArgs) -> CliResult<Vec<Arc<Node>>> {
    let direction = match args.direction {
        Dir::Both => Direction::Both,
        Dir::Out => Direction::Out,
        Dir::In => Direction::In,
    };
    let types = if args.types.types.is_empty() {
        TypeFilter::All
    } else {
        snap.type_filter(&args.types.types)
    };
    let mut seen: BTreeSet<NodeId> = BTreeSet::new();
    let mut frontier = Vec::new();
    for key in &args.seed {
        let id = snap
            .node_id(key)
            .ok_or_else(|| CliError::not_found(format!("unknown node key: {key}")))?;
        if seen.insert(id) {
            frontier.push(id);
        }
    }
    for _ in 0..args.max_hops {
        let mut next = Vec::new();
        for &id in &frontier {
            snap.for_each_neighbor(id, direction, &types, |nb| {
                if seen.insert(nb.node) {
                    next.push(nb.node);
                }
            });
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    let mut v = Vec::with_capacity(seen.len());
    for id in seen {
        if let Some(n) = snap.node(id)? {
            v.push(n);
        }
    }
    Ok(v)
}

/// Writes `path` through a temporary file renamed into place, so that a failed export
/// leaves no partial file behind.
fn write_file(path: &Path, body: impl FnOnce(&mut BufWriter<File>) -> CliResult) -> CliResult {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let io_err = |e: io::Error| CliError::io(format!("cannot write {}: {e}", tmp.display()));
    let result = (|| {
        let mut out = BufWriter::new(File::create(&tmp).map_err(io_err)?);
        body(&mut out)?;
        let file = out.into_inner().map_err(|e| io_err(e.into_error()))?;
        file.sync_all().map_err(io_err)?;
        std::fs::rename(&tmp, path)
            .map_err(|e| CliError::io(format!("cannot write {}: {e}", path.display())))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn write(
    snap: &Snapshot,
    nodes: &[Arc<Node>],
    format: ExportFormat,
    out: &mut impl Write,
) -> CliResult {
    let mut keys: Vec<Option<&str>> = vec![None; snap.node_bound() as usize];
    for n in nodes {
        keys[n.id.index()] = Some(&n.key);
    }
    let whole = nodes.len() as u64 == snap.node_count();
    // An edge to a node outside the exported set: an error for the whole graph (the node
    // has no record), skipped for a neighborhood.
    let key = |id: hopgraph::NodeId| match keys.get(id.index()).copied().flatten() {
        Some(k) => Ok(Some(k)),
        None if whole => Err(CliError::io(format!(
            "an edge refers to node {id}, which has no record"
        ))),
        None => Ok(None),
    };
    match format {
        ExportFormat::Dot => writeln!(out, "digraph hopgraph {{\n  node [shape=box];")?,
        ExportFormat::Graphml => out.write_all(GRAPHML_HEAD.as_bytes())?,
        ExportFormat::CsvTables | ExportFormat::Graphframes => {
            let tables = Tables::of(format).unwrap_or(Tables::Neo4j);
            writeln!(out, "{}", tables.edge_columns().join(","))?;
        }
        _ => {}
    }
    if format == ExportFormat::Jsonl {
        let header = Line {
            hopgraph: Some("export".into()),
            version: Some(JSONL_VERSION),
            ..Line::default()
        };
        json(out, &header)?;
    }
    for n in nodes {
        write_node(n, format, out)?;
    }
    let mut edges = 0u64;
    for n in nodes {
        for nb in snap.neighbors(n.id, Direction::Out, &TypeFilter::All) {
            let Some(e) = snap.edge(nb.edge)? else {
                continue;
            };
            let Some(target) = key(nb.node)? else {
                continue;
            };
            let source = n.key.as_str();
            let edge_type = snap
                .type_name(nb.edge_type)
                .ok_or_else(|| CliError::new(format!("edge {} has an unknown type id", nb.edge)))?;
            edges += 1;
            write_edge(&e, (source, target, edge_type), format, out)?;
        }
    }
    if format == ExportFormat::Jsonl {
        let trailer = Line {
            hopgraph: Some("end".into()),
            nodes: Some(nodes.len() as u64),
            edges: Some(edges),
            ..Line::default()
        };
        json(out, &trailer)?;
    }
    match format {
        ExportFormat::Dot => writeln!(out, "}}")?,
        ExportFormat::Graphml => out.write_all(b"  </graph>\n</graphml>\n")?,
        _ => {}
    }
    Ok(())
}

/// Writes node `n`'s line in `format` (the formats whose nodes have lines: the others
/// write only edges).
fn write_node(n: &Node, format: ExportFormat, out: &mut impl Write) -> CliResult {
    match format {
        ExportFormat::Jsonl => json(
            out,
            &Line {
                node: Some(NodeRecord::from_node(n)),
                ..Line::default()
            },
        )?,
        ExportFormat::ServerMemory => json(
            out,
            &EntityOut {
                line_type: "entity",
                name: &n.key,
                entity_type: &n.props.kind,
                observations: entity_observations(n),
            },
        )?,
        ExportFormat::Dot => {
            let label = if n.props.title.is_empty() || n.props.title == n.key {
                n.key.clone()
            } else {
                format!("{}\n{}", n.key, n.props.title)
            };
            writeln!(
                out,
                "  {} [label={}{}];",
                dot_id(&n.key),
                dot_id(&label),
                dot_validity(n.valid_from, n.valid_to)
            )?;
        }
        ExportFormat::Graphml => {
            let p = &n.props;
            write!(out, "    <node id=\"{}\">", xml(&n.key))?;
            for (k, v) in [
                ("kind", &p.kind),
                ("title", &p.title),
                ("content", &p.content),
                ("status", &p.status),
            ] {
                if !v.is_empty() {
                    write!(out, "<data key=\"{k}\">{}</data>", xml(v))?;
                }
            }
            if p.importance != 0.0 {
                write!(out, "<data key=\"importance\">{}</data>", p.importance)?;
            }
            writeln!(out, "{}</node>", graphml_validity(n.valid_from, n.valid_to))?;
        }
        ExportFormat::Tsv
        | ExportFormat::Csv
        | ExportFormat::CsvTables
        | ExportFormat::Graphframes => {}
    }
    Ok(())
}

/// Writes edge `e` from `source` to `target` of type `edge_type` in `format`.
fn write_edge(
    e: &hopgraph::Edge,
    (source, target, edge_type): (&str, &str, &str),
    format: ExportFormat,
    out: &mut impl Write,
) -> CliResult {
    match format {
        ExportFormat::Jsonl => json(
            out,
            &Line {
                edge: Some(EdgeRecord::from_edge(
                    e,
                    source.into(),
                    target.into(),
                    edge_type.into(),
                )),
                ..Line::default()
            },
        )?,
        ExportFormat::ServerMemory => json(
            out,
            &RelationOut {
                line_type: "relation",
                from: source,
                to: target,
                relation_type: edge_type,
            },
        )?,
        ExportFormat::Tsv => {
            for f in [source, target, edge_type] {
                if f.contains(['\t', '\r', '\n']) {
                    return Err(CliError::new(format!(
                        "{f:?} contains a tab or line break and cannot be written as \
                         TSV; use --format jsonl or csv"
                    )));
                }
            }
            if source.starts_with('#') {
                return Err(CliError::new(format!(
                    "source {source:?} starts with # and would read back as a comment; \
                     use --format jsonl or csv"
                )));
            }
            write!(out, "{source}\t{target}\t{edge_type}")?;
            weight(out, e.weight, '\t')?;
        }
        ExportFormat::Csv => {
            let (s, t, ty) = (csv_field(source), csv_field(target), csv_field(edge_type));
            write!(out, "{s},{t},{ty}")?;
            weight(out, e.weight, ',')?;
        }
        ExportFormat::Dot => {
            writeln!(
                out,
                "  {} -> {} [label={}{}];",
                dot_id(source),
                dot_id(target),
                dot_id(edge_type),
                dot_validity(e.valid_from, e.valid_to)
            )?;
        }
        ExportFormat::Graphml => {
            writeln!(
                out,
                "    <edge source=\"{}\" target=\"{}\"><data key=\"type\">{}</data>\
                 <data key=\"weight\">{}</data>{}</edge>",
                xml(source),
                xml(target),
                xml(edge_type),
                e.weight,
                graphml_validity(e.valid_from, e.valid_to)
            )?;
        }
        ExportFormat::CsvTables | ExportFormat::Graphframes => {
            let props = serde_json::Value::Object(e.props.clone()).to_string();
            write!(
                out,
                "{},{},{},{},{},{}",
                table_field(source),
                table_field(target),
                table_field(edge_type),
                e.weight,
                table_field(&props),
                table_validity(e.valid_from, e.valid_to)
            )?;
            if format == ExportFormat::Graphframes {
                write!(out, ",{}", e.id.0)?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

const GRAPHML_HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="kind" for="node" attr.name="kind" attr.type="string"/>
  <key id="title" for="node" attr.name="title" attr.type="string"/>
  <key id="content" for="node" attr.name="content" attr.type="string"/>
  <key id="status" for="node" attr.name="status" attr.type="string"/>
  <key id="importance" for="node" attr.name="importance" attr.type="double"/>
  <key id="type" for="edge" attr.name="type" attr.type="string"/>
  <key id="weight" for="edge" attr.name="weight" attr.type="double"/>
  <key id="valid_from" for="all" attr.name="valid_from" attr.type="string"/>
  <key id="valid_to" for="all" attr.name="valid_to" attr.type="string"/>
  <graph id="hopgraph" edgedefault="directed">
"#;

/// The node table of `csv-tables` (Neo4j header; Kuzu reads it by position) or
/// `graphframes` (GraphFrames' names): one row writer, two headers.
fn node_table(tables: Tables, nodes: &[Arc<Node>], out: &mut impl Write) -> CliResult {
    writeln!(out, "{}", tables.node_columns().join(","))?;
    for n in nodes {
        let p = &n.props;
        let props = serde_json::Value::Object(p.props.clone()).to_string();
        writeln!(
            out,
            "{},{},{},{},{},{},{},{}",
            table_field(&n.key),
            table_field(&p.kind),
            table_field(&p.title),
            table_field(&p.content),
            p.importance,
            table_field(&p.status),
            table_field(&props),
            table_validity(n.valid_from, n.valid_to)
        )?;
    }
    Ok(())
}

/// GraphML data of a node's or edge's validity: `valid_from` (RFC 3339 UTC), and
/// `valid_to` only when it ends.
fn graphml_validity(from: u64, to: Option<u64>) -> String {
    let mut d = format!(
        "<data key=\"valid_from\">{}</data>",
        hopgraph_memory::rfc3339(from)
    );
    if let Some(to) = to {
        d.push_str(&format!(
            "<data key=\"valid_to\">{}</data>",
            hopgraph_memory::rfc3339(to)
        ));
    }
    d
}

/// DOT attributes of a node's or edge's validity: `valid_from` (Graphviz keeps attributes
/// it does not draw), and for an element that ends, `valid_to` and a dashed outline, so
/// history stands apart from what is current in the drawing.
fn dot_validity(from: u64, to: Option<u64>) -> String {
    let mut a = format!(", valid_from={}", dot_id(&hopgraph_memory::rfc3339(from)));
    if let Some(to) = to {
        a.push_str(&format!(
            ", valid_to={}, style=dashed",
            dot_id(&hopgraph_memory::rfc3339(to))
        ));
    }
    a
}

/// The last two fields of a table row, `valid_from,valid_to`: RFC 3339 UTC, and an empty
/// (unquoted: null) end when the element never ends.
fn table_validity(from: u64, to: Option<u64>) -> String {
    let to = to.map(hopgraph_memory::rfc3339).unwrap_or_default();
    format!("{},{to}", hopgraph_memory::rfc3339(from))
}

/// A CSV field for the bulk importers and Spark: quoted as RFC 4180 says (quotes doubled)
/// unless plainly safe. Unlike [`csv_field`] a leading `#` needs no quotes (the importers
/// know no comments), but an empty field is quoted so that it reads as an empty string,
/// not null, and so is one with leading or trailing white space, which
/// `neo4j-admin database import --trim-strings=true` would strip from a bare field.
fn table_field(field: &str) -> std::borrow::Cow<'_, str> {
    let padded = field.starts_with(char::is_whitespace) || field.ends_with(char::is_whitespace);
    if field.is_empty() || padded || field.contains([',', '"', '\r', '\n']) {
        std::borrow::Cow::Owned(format!("\"{}\"", field.replace('"', "\"\"")))
    } else {
        std::borrow::Cow::Borrowed(field)
    }
}

/// A DOT identifier: a double-quoted string with `"` and `\` escaped (line breaks kept as
/// `\n`, which DOT draws as a centred line break).
fn dot_id(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => {}
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Text escaped for XML content and attribute values; characters XML 1.0 forbids (most
/// control characters) are dropped.
fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' | '\n' | '\r' => o.push(c),
            c if (c as u32) < 0x20 => {}
            c => o.push(c),
        }
    }
    o
}

/// A node's observations for the memory server's file: the title (when it is not just the
/// key) and the content, when not among the observations already, then `props.observations`.
fn entity_observations(n: &Node) -> Vec<&str> {
    let mut obs = observations(&n.props.props);
    let mut first = Vec::new();
    for extra in [&n.props.title, &n.props.content] {
        if !extra.is_empty() && *extra != n.key && !obs.contains(&extra.as_str()) {
            first.push(extra.as_str());
        }
    }
    first.append(&mut obs);
    first
}

/// Ends an edge line, with the weight when it is not the default 1.
fn weight(out: &mut impl Write, weight: f32, sep: char) -> io::Result<()> {
    if weight == 1.0 {
        writeln!(out)
    } else {
        writeln!(out, "{sep}{weight}")
    }
}

/// Every live node, in id order.
fn nodes(snap: &Snapshot) -> CliResult<Vec<Arc<Node>>> {
    let mut v = Vec::with_capacity(usize::try_from(snap.node_count()).unwrap_or(0));
    for id in snap.node_ids() {
        if let Some(n) = snap.node(id)? {
            v.push(n);
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The property types of the Neo4j import header format (operations manual, "Import
    /// header format": int, long, float, ..., duration; `[]` appended for arrays).
    const NEO4J_TYPES: [&str; 16] = [
        "int",
        "long",
        "float",
        "double",
        "boolean",
        "byte",
        "short",
        "char",
        "string",
        "point",
        "date",
        "localtime",
        "time",
        "localdatetime",
        "datetime",
        "duration",
    ];

    /// Checks one header of `neo4j-admin database import` against the documented grammar
    /// `<name>:<field_type>` and returns its keywords (`ID`, `LABEL`, `START_ID`, ...) in
    /// order, or what is wrong.
    fn neo4j_keywords(header: &str, nodes: bool) -> Result<Vec<String>, String> {
        let mut keywords = Vec::new();
        let mut names = BTreeSet::new();
        for column in header.split(',') {
            let (name, field_type) = column.rsplit_once(':').unwrap_or((column, ""));
            let base = field_type.strip_suffix("[]").unwrap_or(field_type);
            let keyword = match field_type {
                "ID" | "LABEL" if nodes => true,
                "START_ID" | "END_ID" | "TYPE" if !nodes => true,
                "IGNORE" => true,
                _ => false,
            };
            if keyword {
                if field_type != "ID" && !name.is_empty() {
                    return Err(format!("{column}: the name of :{field_type} is ignored"));
                }
                keywords.push(field_type.to_owned());
            } else if !field_type.is_empty() && !NEO4J_TYPES.contains(&base) {
                return Err(format!("{column}: unknown field type {field_type}"));
            }
            if !name.is_empty() && !names.insert(name) {
                return Err(format!("{column}: property {name} twice"));
            }
        }
        Ok(keywords)
    }

    /// A strict RFC 4180 reader for one record (quotes doubled inside quoted fields).
    fn rfc4180(record: &str) -> Vec<String> {
        let mut fields = vec![String::new()];
        let mut chars = record.chars().peekable();
        let mut quoted = false;
        let mut at_start = true;
        while let Some(c) = chars.next() {
            let field = fields.last_mut().unwrap();
            match c {
                '"' if at_start => quoted = true,
                '"' if quoted && chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' if quoted => {
                    quoted = false;
                    assert!(
                        matches!(chars.peek(), None | Some(',')),
                        "text after a closing quote in {record:?}"
                    );
                }
                '"' => panic!("a bare quote in an unquoted field of {record:?}"),
                ',' if !quoted => {
                    fields.push(String::new());
                    at_start = true;
                    continue;
                }
                c => field.push(c),
            }
            at_start = false;
        }
        assert!(!quoted, "unterminated quote in {record:?}");
        fields
    }

    fn row(fields: &[&str]) -> String {
        fields
            .iter()
            .map(|f| table_field(f))
            .collect::<Vec<_>>()
            .join(",")
    }

    #[test]
    fn neo4j_headers_follow_the_documented_format() {
        // The grammar check accepts the manual's own headers and rejects near misses.
        for (doc, nodes, want) in [
            (
                "movieId:ID,title,year:int,:LABEL",
                true,
                &["ID", "LABEL"][..],
            ),
            ("personId:ID,name,:LABEL", true, &["ID", "LABEL"]),
            (
                ":START_ID,role,:END_ID,:TYPE",
                false,
                &["START_ID", "END_ID", "TYPE"],
            ),
            (
                ":ID,name,joined:date,active:boolean,points:int",
                true,
                &["ID"],
            ),
            (
                "personId:ID,name,:IGNORE,:LABEL",
                true,
                &["ID", "IGNORE", "LABEL"],
            ),
            (":ID,tags:string[]", true, &["ID"]),
        ] {
            assert_eq!(neo4j_keywords(doc, nodes).unwrap(), want, "{doc}");
        }
        for bad in [
            "key:ID,importance:real",
            "key:ID,kind,kind",
            "key:ID,x:TYPE",
            "key:ID,l:LABEL",
        ] {
            assert!(neo4j_keywords(bad, true).is_err(), "{bad}");
        }

        let nodes = Tables::Neo4j.node_columns().join(",");
        let edges = Tables::Neo4j.edge_columns().join(",");
        assert_eq!(
            nodes,
            "key:ID,kind,title,content,importance:float,status,props,valid_from:datetime,\
             valid_to:datetime"
        );
        assert_eq!(
            edges,
            ":START_ID,:END_ID,:TYPE,weight:float,props,valid_from:datetime,valid_to:datetime"
        );
        // One named ID (the key is kept as the property `key`); the label comes from
        // `--nodes=Node=nodes.csv`.
        assert_eq!(neo4j_keywords(&nodes, true).unwrap(), ["ID"]);
        assert!(nodes.starts_with("key:ID,"));
        assert_eq!(
            neo4j_keywords(&edges, false).unwrap(),
            ["START_ID", "END_ID", "TYPE"]
        );
        // The GraphFrames layout keeps the columns, in the same order, with plain names.
        let plain = |c: &&str| {
            let (name, _) = c.rsplit_once(':').unwrap_or((c, ""));
            name.to_owned()
        };
        let gf: Vec<String> = Tables::GraphFrames
            .node_columns()
            .iter()
            .map(|c| c.to_string())
            .collect();
        let mut neo: Vec<String> = Tables::Neo4j.node_columns().iter().map(plain).collect();
        neo[0] = "id".into();
        assert_eq!(gf, neo);
        assert_eq!(
            Tables::GraphFrames.edge_columns()[..3],
            ["src", "dst", "relationship"]
        );
        assert_eq!(Tables::GraphFrames.edge_columns().last(), Some(&"edge_id"));
    }

    #[test]
    fn table_rows_escape_as_the_neo4j_manual_shows() {
        // The manual's rows, read as RFC 4180, are what our writer writes for the same
        // values; where the manual quotes only because it must, the bytes agree too.
        for doc in [
            r#"tt0133093,"The Matrix",1999,Movie"#,
            r#"tt0234215,"The Matrix Reloaded",2003,Movie;Sequel"#,
            r#"keanu,"Neo",tt0133093,ACTED_IN"#,
            "user01,Joe Soap,2017-05-05,true,10",
            r#"city01,"Malmö","{latitude:55.6121514, longitude:12.9950357}""#,
            r#"city03,"San Mateo","{latitude:37.554167, longitude:-122.313056, height: 100, crs:'WGS-84-3D'}""#,
            "1,\"John\",\"October 1st\",2000,\"New York\",\"This is a multiline\ndescription\"",
        ] {
            let fields = rfc4180(doc);
            let refs: Vec<&str> = fields.iter().map(String::as_str).collect();
            let ours = row(&refs);
            assert_eq!(rfc4180(&ours), fields, "{doc}");
            // A field is quoted exactly when it must be.
            for f in &refs {
                let must = f.contains([',', '\n', '"']) || f.trim() != *f || f.is_empty();
                assert_eq!(table_field(f).starts_with('"'), must, "{f:?}");
            }
        }
        assert_eq!(
            row(&[
                "city01",
                "Malmö",
                "{latitude:55.6121514, longitude:12.9950357}"
            ]),
            r#"city01,Malmö,"{latitude:55.6121514, longitude:12.9950357}""#
        );
        // Quotes doubled, never backslash-escaped (--legacy-style-quoting stays false);
        // a backslash is text.
        assert_eq!(
            row(&[r#"say "hi""#, r#"{"a":"\"x\""}"#, r"C:\dir\"]),
            r#""say ""hi""","{""a"":""\""x\""""}",C:\dir\"#
        );
        // Line breaks (--multiline-fields=true), empty text (not null), leading or
        // trailing space (kept even with --trim-strings=true) and non-ASCII.
        assert_eq!(
            row(&["a\r\nb", "", " x", "y\t", "ünïcødé — ✓"]),
            "\"a\r\nb\",\"\",\" x\",\"y\t\",ünïcødé — ✓"
        );
        for tricky in ["a\r\nb", "", " x", r#""q""#, "x,y", "#c", r"\"] {
            assert_eq!(rfc4180(&row(&[tricky, "z"])), [tricky, "z"], "{tricky:?}");
        }
    }
}
