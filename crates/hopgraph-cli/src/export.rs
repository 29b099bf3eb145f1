//! `hopgraph export`: one snapshot written as JSONL (lossless), TSV/CSV edge lists, or the
//! MCP reference memory server's JSONL.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::input::csv_field;
use super::records::{
    EdgeRecord, EntityOut, JSONL_VERSION, Line, NodeRecord, RelationOut, observations,
};
use super::{CliError, CliResult, DbArg, json_line as json, open_read_only};
use hopgraph::{Direction, Node, Snapshot, TypeFilter};

const LONG_ABOUT: &str = "\
Writes the whole database, as of one consistent snapshot, to a file or stdout.

Formats:
  jsonl          lossless: a header line {\"hopgraph\":\"export\",\"version\":1}, one
                 {\"node\":{key,kind,title,content,importance,status,props,embedding,created_at,
                 updated_at}} line per node, one {\"edge\":{source,target,type,weight,props,id,
                 created_at}} line per edge, and a closing {\"hopgraph\":\"end\",\"nodes\":N,
                 \"edges\":M} line by which import detects a truncated file. Import gives the same
                 graph (ids and timestamps are assigned anew).
  tsv            edges only: source<TAB>target<TAB>type, plus <TAB>weight when it is not 1.
                 Keys containing a tab, CR or LF, or a source starting with #, cannot be
                 written: use jsonl.
  csv            the same with commas, quoting fields where needed
  server-memory  the MCP reference memory server's file: one entity per node (name = key,
                 entityType = kind, observations = props.observations) and one relation per
                 edge. Other node properties and edge weights are not kept.

Nodes come in id order, and each node's outgoing edges by (type, target).";

const EXAMPLES: &str = "\
Examples:
  hopgraph export --db ./mem --out backup.jsonl
  hopgraph export --db ./mem --format tsv | sort > edges.tsv
  hopgraph export --db ./mem --format server-memory --out memory.json";

/// Export the database as JSONL, TSV/CSV or the memory server's format.
#[derive(Debug, Args)]
#[command(long_about = LONG_ABOUT, after_long_help = EXAMPLES)]
pub(crate) struct ExportArgs {
    #[command(flatten)]
    db: DbArg,
    /// Output format (see --help).
    #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
    format: ExportFormat,
    /// Write to FILE (replaced atomically when complete) instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ExportFormat {
    Jsonl,
    Tsv,
    Csv,
    ServerMemory,
}

pub(crate) fn run(args: ExportArgs) -> CliResult {
    let db = open_read_only(&args.db.db)?;
    let snap = db.snapshot();
    match &args.out {
        None => {
            let mut out = BufWriter::new(io::stdout().lock());
            write(&snap, args.format, &mut out)?;
            out.flush()?;
            Ok(())
        }
        Some(path) => write_file(path, |out| write(&snap, args.format, out)),
    }
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

fn write(snap: &Snapshot, format: ExportFormat, out: &mut impl Write) -> CliResult {
    let nodes = nodes(snap)?;
    let mut keys: Vec<Option<&str>> = vec![None; snap.node_bound() as usize];
    for n in &nodes {
        keys[n.id.index()] = Some(&n.key);
    }
    let key = |id: hopgraph::NodeId| {
        keys.get(id.index()).copied().flatten().ok_or_else(|| {
            CliError::new(format!("an edge refers to node {id}, which has no record"))
        })
    };
    if format == ExportFormat::Jsonl {
        let header = Line {
            hopgraph: Some("export".into()),
            version: Some(JSONL_VERSION),
            ..Line::default()
        };
        json(out, &header)?;
    }
    for n in &nodes {
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
                    observations: observations(&n.props.props),
                },
            )?,
            ExportFormat::Tsv | ExportFormat::Csv => {}
        }
    }
    let mut edges = 0u64;
    for n in &nodes {
        for nb in snap.neighbors(n.id, Direction::Out, &TypeFilter::All) {
            let Some(e) = snap.edge(nb.edge)? else {
                continue;
            };
            let (source, target) = (n.key.as_str(), key(nb.node)?);
            let edge_type = snap
                .type_name(nb.edge_type)
                .ok_or_else(|| CliError::new(format!("edge {} has an unknown type id", nb.edge)))?;
            edges += 1;
            match format {
                ExportFormat::Jsonl => json(
                    out,
                    &Line {
                        edge: Some(EdgeRecord::from_edge(
                            &e,
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
            }
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
    Ok(())
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
fn nodes(snap: &Snapshot) -> CliResult<Vec<std::sync::Arc<Node>>> {
    let mut v = Vec::with_capacity(usize::try_from(snap.node_count()).unwrap_or(0));
    for id in snap.node_ids() {
        if let Some(n) = snap.node(id)? {
            v.push(n);
        }
    }
    Ok(v)
}
