//! `search`: ranked full-text search, the MCP tool `memory_search` from a shell.

use std::io::{self, BufWriter, Write};

use clap::Args;

use super::{CliResult, DbArg, json_line, open_read_only};
use hopgraph_memory::search::{SearchRequest, memory_search};

const SEARCH_EXAMPLES: &str = "Examples:
  hopgraph search --db mem.hg \"connection pooling\"
  hopgraph search --db mem.hg \"deploy failures\" --type event --limit 5 --json
  hopgraph search --db mem.hg \"rollback\" --near m-17 --near m-42 --max-hops 3
  hopgraph search --db mem.hg \"cause\" --near m-17 --edge-type caused_by,follows";

/// Ranked full-text search over titles, contents and metadata text.
#[derive(Debug, Args)]
#[command(
    long_about = "Ranked full-text search (BM25) over node titles, contents and the string \
                  values of their metadata (AIM observations). Case, punctuation and \
                  inflections do not matter; any word may match, nodes matching every word \
                  or the phrase rank higher. One line per hit: score, key, the field that \
                  matched and a snippet of it. With --json: {results[{id, title, score, type, \
                  field, snippet}], truncated}, as the MCP tool `memory_search`. With --near ID \
                  (repeatable): only nodes within --max-hops (1-6, default 2) of one of \
                  those nodes, edges walked both ways (only --edge-type types when given); \
                  closer nodes rank higher (score × (1 + 2^-hops)) and each hit shows its \
                  hop count.",
    after_long_help = SEARCH_EXAMPLES
)]
pub(crate) struct SearchArgs {
    #[command(flatten)]
    db: DbArg,
    /// The words to find.
    query: String,
    /// Only nodes of this type (kind).
    #[arg(long = "type", value_name = "TYPE")]
    node_type: Option<String>,
    /// Most hits listed (1-50).
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=50))]
    limit: u64,
    /// Only nodes within --max-hops of this node (repeat it or comma-separate for several).
    #[arg(long, value_name = "ID", value_delimiter = ',')]
    near: Vec<String>,
    /// With --near: hops from those nodes (1-6, default 2).
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=6))]
    max_hops: Option<u64>,
    /// With --near: walk only edges of these types (repeat or comma-separate).
    #[arg(long = "edge-type", value_name = "TYPE", value_delimiter = ',')]
    edge_types: Vec<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: SearchArgs) -> CliResult {
    let db = open_read_only(&args.db.db)?;
    let request = SearchRequest {
        query: args.query,
        limit: Some(args.limit),
        memory_type: args.node_type,
        near: (!args.near.is_empty()).then_some(args.near),
        max_hops: args.max_hops,
        edge_types: (!args.edge_types.is_empty()).then_some(args.edge_types),
        ..SearchRequest::default()
    };
    let result = memory_search(&db.snapshot(), &request).map_err(crate::query::tool)?;
    let mut out = BufWriter::new(io::stdout().lock());
    if args.json {
        json_line(&mut out, &result)?;
    } else {
        for h in &result.results {
            write!(out, "{:.4}  {}", h.score, h.id)?;
            if let Some(n) = h.hops {
                write!(out, "  ({n} hops)")?;
            }
            if let Some(f) = h.field {
                write!(out, "  [{f}]")?;
            }
            if let Some(s) = &h.snippet {
                // One line per hit: line breaks of the snippet become spaces.
                let flat: String = s
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect();
                write!(out, "  {flat}")?;
            }
            writeln!(out)?;
        }
        if result.truncated {
            writeln!(out, "(truncated: raise --limit to see more)")?;
        }
    }
    out.flush()?;
    Ok(())
}
