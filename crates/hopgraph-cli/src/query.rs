//! Graph questions: `path` (one pair or a batch), `neighbors`, `expand`, `traverse`.
//!
//! Each translates its options into a request of [`hopgraph_memory`], whose functions run
//! the traversal kernel and shape the answer; the same answers the MCP tools give.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use serde::Serialize;

use super::input::{Invalid, InvalidLines, LineReader};
use super::{CliError, CliResult, DbArg, json_line, open_read_only};
use hopgraph::kernel::{Budget, Scratch};
use hopgraph::{Direction, Snapshot};
use hopgraph_memory::path::{PathRequest, PathResult, memory_path_within};
use hopgraph_memory::ranges::{IntRange, Ranges};
use hopgraph_memory::walk::{
    ExpandRequest, MEMORY_NOT_FOUND, RelatedRequest, TraverseRequest, expand_within,
    related_within, traverse_within,
};
use hopgraph_memory::{ToolError, ToolErrorKind};

/// Which edges to follow from a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Dir {
    /// Both ways: the graph as undirected.
    Both,
    /// Edges leaving the node (source to target).
    #[value(alias = "outgoing", alias = "forward")]
    Out,
    /// Edges entering the node (target to source).
    #[value(alias = "incoming", alias = "backward")]
    In,
}

impl From<Dir> for Direction {
    fn from(d: Dir) -> Direction {
        match d {
            Dir::Both => Direction::Both,
            Dir::Out => Direction::Out,
            Dir::In => Direction::In,
        }
    }
}

/// The edge-type filter, the same option in every command: `--type T` repeated or
/// comma-separated (`--types` is the old spelling, kept hidden so scripts keep working).
#[derive(Debug, Args)]
pub(crate) struct TypeArgs {
    /// Follow only edges of this type (repeat or comma-separate for several).
    #[arg(
        long = "type",
        alias = "types",
        value_name = "TYPE",
        value_delimiter = ','
    )]
    pub types: Vec<String>,
}

impl TypeArgs {
    /// None for "every type", as the memory requests take it.
    pub fn get(&self) -> Option<Vec<String>> {
        (!self.types.is_empty()).then(|| self.types.clone())
    }
}

/// The moment a read answers as of: `--as-of TIME`, the same option in every read command.
#[derive(Debug, Args)]
pub(crate) struct AsOfArg {
    /// Answer as of TIME: only the nodes and edges valid then exist (RFC 3339 such as
    /// 2024-05-01T12:00:00Z, or milliseconds since 1970).
    #[arg(long, value_name = "TIME", value_parser = crate::records::parse_time)]
    pub as_of: Option<u64>,
}

/// Work limit options shared by the searches.
#[derive(Debug, Args)]
struct BudgetArgs {
    /// Stop a search after marking this many nodes visited (the answer then says
    /// limit_reached).
    #[arg(long, value_name = "N", default_value_t = Budget::VISITED_MAX_DEFAULT)]
    visited_max: u64,
}

impl BudgetArgs {
    fn budget(&self) -> Budget {
        Budget {
            visited_max: self.visited_max,
            ..Budget::default()
        }
    }
}

const PATH_ABOUT: &str = "\
Finds a shortest path between two nodes (by key), treating edges as undirected unless
--direction says otherwise. Prints it as `a \"Title\" → caused_by → b \"Title\"` (← for an edge
walked backwards), or with --json as one JSON object {found, hops, path[{id, title,
edge_type_to_next, direction_to_next, edge_id}], message?, paths?, limit_reached?}, the same
answer as the MCP tool memory_path; each hop's edge has its validity (valid_from, valid_to:
null when it never ends). No path, or an unknown key, is an answer (found: false and a
message) that exits with code 1, as grep does when nothing matches.

With --as-of TIME (RFC 3339, or ms since 1970) the path is looked for in the graph as it
was then: only nodes and edges valid at TIME (valid_from <= TIME < valid_to) exist, and an
endpoint not valid then is an unknown key.

With --pairs FILE (one `from<TAB>to` pair per line, # comments allowed; - reads standard
input) it answers every pair on one opened database (exit 0 whatever was found): one JSON
line per pair on stdout, the
answer plus `from` and `to`, and a timing summary on stderr (count, found, p50/p90/p99
latency of the first query and p50/p90/p99/max, total). Each pair is timed once, so the
first query also pays what a process does once: growing the search's scratch arrays to the
node count (72 bytes per node, zeroed) and the page faults of a freshly mapped database.
--warm reads every page of the database once and maps the search's scratch memory before
the first query (the state a long-running server reaches after its first queries; the MCP
server does this on a background thread when it opens a database) and reports how long
that took.";

const PATH_EXAMPLES: &str = "\
Examples:  (on the sample that `hopgraph --help` imports)
  hopgraph path --db ./mem deploy-auth-3-0 deploy-ledger-2-1
  hopgraph path --db ./mem incident-feature-flags-disk-4 \\
      incident-notifier-pool-4 --type caused_by,supersedes --direction out --json
  hopgraph path --db ./mem deploy-billing-api-2-3 incident-checkout-pool --all
  hopgraph path --db ./mem deploy-auth-3-0 deploy-ledger-2-1 \\
      --as-of 2100-01-01T00:00:00Z
  hopgraph path --db ./mem --pairs examples/memory-2k-text.pairs.tsv \\
      --max-hops 6 > answers.jsonl
  hopgraph path --db ./mem --type caused_by --warm \\
      --pairs examples/memory-2k-text.pairs-walk-caused_by.tsv > answers.jsonl";

/// Shortest path between two nodes, or for every pair of a file.
#[derive(Debug, Args)]
#[command(long_about = PATH_ABOUT, after_long_help = PATH_EXAMPLES)]
pub(crate) struct PathArgs {
    #[command(flatten)]
    db: DbArg,
    /// Start key.
    #[arg(value_name = "FROM", required_unless_present = "pairs")]
    from: Option<String>,
    /// End key.
    #[arg(value_name = "TO", required_unless_present = "pairs")]
    to: Option<String>,
    /// Answer every `from<TAB>to` pair of FILE (JSON lines; - reads standard input).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["from", "to"])]
    pairs: Option<PathBuf>,
    /// With --pairs: read every page of the database once before timing the first query.
    #[arg(long)]
    warm: bool,
    /// Longest path to look for (0-1000).
    #[arg(long, alias = "hops", alias = "max-depth", value_name = "N",
          default_value_t = Ranges::LOCAL.path_hops.default, allow_negative_numbers = true)]
    max_hops: i64,
    #[command(flatten)]
    types: TypeArgs,
    /// Which way edges may be walked.
    #[arg(long, value_enum, default_value_t = Dir::Both)]
    direction: Dir,
    /// Every shortest path (at most 16), not just one.
    #[arg(long)]
    all: bool,
    /// Print JSON instead of text (always on with --pairs).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    budget: BudgetArgs,
    #[command(flatten)]
    as_of: AsOfArg,
}

pub(crate) fn path(args: PathArgs) -> CliResult {
    usage_range(&Ranges::LOCAL.path_hops, args.max_hops)?;
    let db = open_read_only(&args.db.db)?;
    let snap = db.snapshot();
    let mut scratch = Scratch::new();
    // One request for every pair: each pair's keys are moved in before its timer starts,
    // so the latency is the query's alone (no per-pair copies of keys or type names).
    let mut request = PathRequest {
        from: String::new(),
        to: String::new(),
        max_hops: args.max_hops,
        edge_types: args.types.get(),
        direction: args.direction.into(),
        all_shortest: args.all,
        budget: args.budget.budget(),
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let Some(pairs_file) = &args.pairs else {
        let (Some(from), Some(to)) = (&args.from, &args.to) else {
            return Err(CliError::usage("give FROM and TO, or --pairs FILE"));
        };
        if args.warm {
            return Err(CliError::usage(
                "--warm goes with --pairs (one query has nothing to warm up for)",
            ));
        }
        request.from.clone_from(from);
        request.to.clone_from(to);
        let result = memory_path_within(
            &snap,
            &mut scratch,
            &request,
            args.as_of.as_of,
            &Ranges::LOCAL,
        )
        .map_err(tool)?;
        if args.json {
            json_line(&mut out, &result)?;
        } else {
            writeln!(out, "{}", result.text())?;
        }
        out.flush()?;
        // Like grep: the answer is printed either way, the code says whether it was found.
        return if result.found {
            Ok(())
        } else {
            Err(CliError::silent(super::Exit::NotFound))
        };
    };

    #[derive(Serialize)]
    struct PairAnswer<'a> {
        from: &'a str,
        to: &'a str,
        #[serde(flatten)]
        result: &'a PathResult<'a>,
    }
    let pairs = read_pairs(pairs_file)?;
    let warmed = args.warm.then(|| {
        let t = Instant::now();
        let bytes = snap.prefault();
        // The search's scratch too: the state of a process after its first queries.
        scratch.prefault(snap.node_bound());
        (bytes, t.elapsed())
    });
    let started = Instant::now();
    let pair_count = pairs.len();
    let mut latencies = Vec::with_capacity(pair_count);
    let (mut found, mut limited) = (0u64, 0u64);
    for (from, to) in pairs {
        (request.from, request.to) = (from, to);
        let t = Instant::now();
        let result = memory_path_within(
            &snap,
            &mut scratch,
            &request,
            args.as_of.as_of,
            &Ranges::LOCAL,
        )
        .map_err(tool)?;
        latencies.push(t.elapsed());
        found += u64::from(result.found);
        limited += u64::from(result.limit_reached);
        json_line(
            &mut out,
            &PairAnswer {
                from: &request.from,
                to: &request.to,
                result: &result,
            },
        )?;
    }
    out.flush()?;
    let total = started.elapsed();
    let first = latencies.first().map_or("-".to_owned(), |d| micros(*d));
    latencies.sort_unstable();
    let pct = |p: usize| {
        let i = (latencies.len() * p).div_ceil(100).saturating_sub(1);
        latencies.get(i).map_or("-".to_owned(), |d| micros(*d))
    };
    let warm = warmed.map_or(String::new(), |(bytes, took)| {
        format!(
            ", warmed {:.1} MiB in {:.1} ms",
            bytes as f64 / (1024.0 * 1024.0),
            took.as_secs_f64() * 1e3
        )
    });
    // One write, so the line is not interleaved with stdout on a terminal.
    let summary = format!(
        "pairs: {}, found: {found}, limit reached: {limited}, latency first {first} p50 {} \
         p90 {} p99 {} max {}, total {:.3} s{warm}\n",
        pair_count,
        pct(50),
        pct(90),
        pct(99),
        pct(100),
        total.as_secs_f64()
    );
    io::stderr().write_all(summary.as_bytes())?;
    Ok(())
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// Reads a pairs file completely, so that a bad line fails before any answer is printed.
fn read_pairs(path: &Path) -> CliResult<Vec<(String, String)>> {
    let mut lines = LineReader::open(path)?;
    let mut invalid = InvalidLines::new(false, "no pair was answered");
    let mut pairs = Vec::new();
    while let Some((line_no, line)) = lines.next_line(path)? {
        let pair = line.and_then(|line| {
            if line.is_empty() || line.starts_with('#') {
                return Ok(None);
            }
            let fields: Vec<&str> = line.split('\t').collect();
            match fields[..] {
                [from, to] if !from.is_empty() && !to.is_empty() => {
                    let header = line_no == 1
                        && from.eq_ignore_ascii_case("from")
                        && to.eq_ignore_ascii_case("to");
                    Ok((!header).then(|| (from.to_owned(), to.to_owned())))
                }
                _ => Err(Invalid::new(
                    "bad pair",
                    format!(
                        "expected two non-empty tab-separated keys (from, to), found {} fields",
                        fields.len()
                    ),
                )),
            }
        });
        match pair {
            Ok(Some(p)) => pairs.push(p),
            Ok(None) => {}
            Err(bad) => invalid.record(path, line_no, bad)?,
        }
    }
    Ok(pairs)
}

const NEIGHBORS_EXAMPLES: &str = "\
Examples:  (on the sample that `hopgraph --help` imports)
  hopgraph neighbors --db ./mem deploy-billing-api-2-3
  hopgraph neighbors --db ./mem incident-feature-flags-lag-3 \\
      --type caused_by --direction in --json
  hopgraph neighbors --db ./mem deploy-billing-api-2-3 \\
      --as-of 2100-01-01T00:00:00Z";

/// The edges at one node and the nodes at their other ends.
#[derive(Debug, Args)]
#[command(
    long_about = "Lists the edges at a node: one line per edge, `→ type → key \"summary\"` \
                  for an outgoing edge and `← type ← key` for an incoming one (with `(valid \
                  until TIME)` for an edge that ends), in the order of the MCP tool `related`. \
                  With --json: {results[{memory_id, edge_id, edge_type, direction, summary, \
                  valid_from, valid_to}], truncated}, as the MCP tool `related` (valid_to null: \
                  never ends). With --as-of TIME (RFC 3339, or ms since 1970) only the edges \
                  and nodes valid then (valid_from <= TIME < valid_to) are listed, and a node \
                  not valid then is an unknown key.",
    after_long_help = NEIGHBORS_EXAMPLES
)]
pub(crate) struct NeighborsArgs {
    #[command(flatten)]
    db: DbArg,
    /// The node's key.
    key: String,
    #[command(flatten)]
    types: TypeArgs,
    /// Outgoing, incoming or both.
    #[arg(long, value_enum, default_value_t = Dir::Both)]
    direction: Dir,
    /// Most edges listed.
    #[arg(long, value_name = "N", default_value_t = Ranges::LOCAL.related_limit.default,
          allow_negative_numbers = true)]
    limit: i64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    as_of: AsOfArg,
}

pub(crate) fn neighbors(args: NeighborsArgs) -> CliResult {
    // Checked before the loop below splits the limit between the types.
    usage_range(&Ranges::LOCAL.related_limit, args.limit)?;
    let db = open_read_only(&args.db.db)?;
    let snap = db.snapshot();
    let mut request = RelatedRequest {
        memory_id: args.key.clone(),
        edge_type: None,
        direction: args.direction.into(),
        limit: args.limit,
    };
    // Several types: the edges of each in turn, up to --limit in all (the memory tool
    // takes one type).
    let mut types: Vec<Option<String>> = args.types.types.iter().cloned().map(Some).collect();
    types.dedup();
    if types.is_empty() {
        types.push(None);
    }
    let mut result = hopgraph_memory::walk::ListResult {
        results: Vec::new(),
        truncated: false,
    };
    for t in types {
        request.edge_type = t;
        request.limit = args
            .limit
            .saturating_sub(i64::try_from(result.results.len()).unwrap_or(i64::MAX));
        if request.limit <= 0 {
            result.truncated = true;
            break;
        }
        let part = related_within(&snap, &request, args.as_of.as_of, &Ranges::LOCAL)
            .map_err(|e| not_found(e, &args.key))?;
        result.results.extend(part.results);
        result.truncated |= part.truncated;
    }
    let mut out = BufWriter::new(io::stdout().lock());
    if args.json {
        json_line(&mut out, &result)?;
    } else {
        for r in &result.results {
            let arrow = if r.direction == "outgoing" {
                '→'
            } else {
                '←'
            };
            write!(out, "{arrow} {} {arrow} {}", r.edge_type, r.memory_id)?;
            if let Some(to) = &r.validity.valid_to {
                write!(out, " (valid until {to})")?;
            }
            summary(&mut out, &r.summary)?;
        }
        truncated_note(&mut out, result.truncated)?;
    }
    out.flush()?;
    Ok(())
}

/// Expansion directions, with the MCP tool's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ExpandDir {
    /// Union of a forward-only and a backward-only sweep from each seed.
    Both,
    /// Source to target only.
    #[value(alias = "outgoing", alias = "out")]
    Forward,
    /// Target to source only.
    #[value(alias = "incoming", alias = "in")]
    Backward,
    /// Either way at every hop (mixed-direction routes).
    Any,
}

impl ExpandDir {
    /// The kernel's direction and `one_way_routes`.
    fn kernel(self) -> (Direction, bool) {
        match self {
            ExpandDir::Both => (Direction::Both, true),
            ExpandDir::Forward => (Direction::Out, false),
            ExpandDir::Backward => (Direction::In, false),
            ExpandDir::Any => (Direction::Both, false),
        }
    }
}

const EXPAND_EXAMPLES: &str = "\
Examples:  (on the sample that `hopgraph --help` imports)
  hopgraph expand --db ./mem deploy-billing-api-2-3 --max-hops 2
  hopgraph expand --db ./mem deploy-billing-api-2-3 deploy-auth-3-0 \\
      --max-hops 3 --direction any --type caused_by --route --json
  hopgraph expand --db ./mem deploy-billing-api-2-3 --max-hops 2 \\
      --filter '{\"type\":\"decision\"}' --include-superseded
  hopgraph expand --db ./mem deploy-billing-api-2-3 --max-hops 2 \\
      --as-of 2100-01-01T00:00:00Z";

/// The nodes within a few hops of one or more seeds.
#[derive(Debug, Args)]
#[command(
    long_about = "Expands from seed nodes: every node within --max-hops hops, once, with the seed, \
                  hop count, edge type and direction that reached it first (fewest hops, then \
                  lower seed key, then lower edge type, then forward before backward). Seeds \
                  are never results. --filter and --include-superseded filter results, not the \
                  walk. With --as-of TIME (RFC 3339, or ms since 1970) the walk sees only the \
                  nodes and edges valid then (valid_from <= TIME < valid_to; a seed not valid \
                  then is unknown). With --json: {documents[...], warnings[...], truncated}, \
                  as the MCP tool `expand`; unknown seeds are warnings, not errors.",
    after_long_help = EXPAND_EXAMPLES
)]
pub(crate) struct ExpandArgs {
    #[command(flatten)]
    db: DbArg,
    /// Seed keys.
    #[arg(required = true, value_name = "SEED")]
    seeds: Vec<String>,
    /// Most hops from a seed (1-100).
    #[arg(long, alias = "hops", alias = "max-depth", value_name = "N",
          default_value_t = Ranges::LOCAL.expand_hops.default, allow_negative_numbers = true)]
    max_hops: i64,
    /// Which way edges are walked.
    #[arg(long, value_enum, default_value_t = ExpandDir::Both)]
    direction: ExpandDir,
    #[command(flatten)]
    types: TypeArgs,
    /// Keep only nodes whose properties equal these (a JSON object).
    #[arg(long, value_name = "JSON", value_parser = parse_json_object)]
    filter: Option<serde_json::Map<String, serde_json::Value>>,
    /// Keep nodes whose status is `superseded`.
    #[arg(long)]
    include_superseded: bool,
    /// Report each result's full route from its seed.
    #[arg(long)]
    route: bool,
    /// Most nodes listed.
    #[arg(long, value_name = "N", default_value_t = Ranges::LOCAL.expand_limit.default,
          allow_negative_numbers = true)]
    limit: i64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    budget: BudgetArgs,
    #[command(flatten)]
    as_of: AsOfArg,
}

pub(crate) fn parse_json_object(
    s: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str(s) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(_) => Err("expected a JSON object such as {\"type\":\"decision\"}".into()),
        Err(e) => Err(format!("invalid JSON: {e}")),
    }
}

pub(crate) fn expand_cmd(args: ExpandArgs) -> CliResult {
    usage_range(&Ranges::LOCAL.expand_hops, args.max_hops)?;
    usage_range(&Ranges::LOCAL.expand_limit, args.limit)?;
    let db = open_read_only(&args.db.db)?;
    let (direction, one_way_routes) = args.direction.kernel();
    let request = ExpandRequest {
        seed_doc_ids: args.seeds,
        hops: args.max_hops,
        direction,
        one_way_routes,
        edge_types: args.types.get(),
        filter_properties: args.filter,
        include_superseded: args.include_superseded,
        include_route: args.route,
        limit: args.limit,
        budget: args.budget.budget(),
    };
    let snap = db.snapshot();
    let result = expand_within(
        &snap,
        &mut Scratch::new(),
        &request,
        args.as_of.as_of,
        &Ranges::LOCAL,
    )
    .map_err(tool)?;
    let mut out = BufWriter::new(io::stdout().lock());
    if args.json {
        json_line(&mut out, &result)?;
        out.flush()?;
        return Ok(());
    }
    for w in &result.warnings {
        writeln!(io::stderr(), "warning: unknown seed {}", w.seed_doc_id)?;
    }
    for d in &result.documents {
        let v = &d.via;
        let arrow = if v.direction == "forward" {
            '→'
        } else {
            '←'
        };
        write!(out, "hop {}  {}", v.hop, d.doc_id)?;
        if let Some(t) = &d.title {
            write!(out, " {t:?}")?;
        }
        match &v.route {
            Some(route) => {
                write!(out, "  via {}", v.seed_doc_id)?;
                for h in route {
                    let a = if h.direction == "forward" {
                        '→'
                    } else {
                        '←'
                    };
                    write!(out, " {a} {} {a} {}", h.edge_type, h.node)?;
                }
                writeln!(out)?;
            }
            None => writeln!(
                out,
                "  via seed {}, last edge {arrow} {} {arrow}",
                v.seed_doc_id, v.edge_type
            )?,
        }
    }
    truncated_note(&mut out, result.truncated)?;
    if result.limit_reached {
        writeln!(
            out,
            "(search budget reached: results cover the completed hop levels)"
        )?;
    }
    out.flush()?;
    Ok(())
}

const TRAVERSE_EXAMPLES: &str = "\
Examples:  (on the sample that `hopgraph --help` imports)
  hopgraph traverse --db ./mem deploy-billing-api-2-3
  hopgraph traverse --db ./mem deploy-billing-api-2-3 --max-hops 5 \\
      --type caused_by --type supersedes --direction out --json
  hopgraph traverse --db ./mem deploy-billing-api-2-3 \\
      --as-of 2100-01-01T00:00:00Z";

/// A breadth-first walk from one node.
#[derive(Debug, Args)]
#[command(
    long_about = "Walks breadth-first from a node (edges undirected unless --direction says \
                  otherwise) and lists the nodes reached, depth never decreasing, the start \
                  excluded, each with the edges of its path (an edge that ends shows `(until \
                  TIME)`). With --as-of TIME (RFC 3339, or ms since 1970) only the nodes and \
                  edges valid then (valid_from <= TIME < valid_to) are walked, and a start not \
                  valid then is an unknown key. With --json: {results[{memory_id, depth, \
                  path[{edge_id, edge_type, direction, valid_from, valid_to}], summary}], \
                  truncated}, as the MCP tool `traverse`.",
    after_long_help = TRAVERSE_EXAMPLES
)]
pub(crate) struct TraverseArgs {
    #[command(flatten)]
    db: DbArg,
    /// Start key.
    key: String,
    #[command(flatten)]
    types: TypeArgs,
    /// Most hops from the start (1-100).
    #[arg(long, alias = "max-depth", alias = "hops", value_name = "N",
          default_value_t = Ranges::LOCAL.traverse_depth.default, allow_negative_numbers = true)]
    max_hops: i64,
    /// Which way edges are walked.
    #[arg(long, value_enum, default_value_t = Dir::Both)]
    direction: Dir,
    /// Most nodes listed.
    #[arg(long, value_name = "N", default_value_t = Ranges::LOCAL.traverse_limit.default,
          allow_negative_numbers = true)]
    limit: i64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    budget: BudgetArgs,
    #[command(flatten)]
    as_of: AsOfArg,
}

pub(crate) fn traverse_cmd(args: TraverseArgs) -> CliResult {
    usage_range(&Ranges::LOCAL.traverse_depth, args.max_hops)?;
    usage_range(&Ranges::LOCAL.traverse_limit, args.limit)?;
    let db = open_read_only(&args.db.db)?;
    let request = TraverseRequest {
        memory_id: args.key.clone(),
        edge_types: args.types.get(),
        max_depth: args.max_hops,
        limit: args.limit,
        direction: args.direction.into(),
        budget: args.budget.budget(),
    };
    let snap: Snapshot = db.snapshot();
    let result = traverse_within(
        &snap,
        &mut Scratch::new(),
        &request,
        args.as_of.as_of,
        &Ranges::LOCAL,
    )
    .map_err(|e| not_found(e, &args.key))?;
    let mut out = BufWriter::new(io::stdout().lock());
    if args.json {
        json_line(&mut out, &result)?;
    } else {
        for r in &result.results {
            write!(out, "depth {}  via", r.depth)?;
            for h in &r.path {
                let a = if h.direction == "outgoing" {
                    '→'
                } else {
                    '←'
                };
                write!(out, " {a} {}", h.edge_type)?;
                if let Some(to) = &h.validity.valid_to {
                    write!(out, " (until {to})")?;
                }
            }
            write!(out, "  {}", r.memory_id)?;
            summary(&mut out, &r.summary)?;
        }
        truncated_note(&mut out, result.truncated)?;
    }
    out.flush()?;
    Ok(())
}

/// Ends a line with the quoted summary, when there is one.
fn summary(out: &mut impl Write, summary: &str) -> io::Result<()> {
    if summary.is_empty() {
        writeln!(out)
    } else {
        writeln!(out, " {summary:?}")
    }
}

fn truncated_note(out: &mut impl Write, truncated: bool) -> io::Result<()> {
    if truncated {
        writeln!(out, "(truncated: raise --limit to see more)")?;
    }
    Ok(())
}

/// A tool error as a CLI error; its kind picks the exit code.
/// Runs the memory layer's check of a ranged option before any work, so that a value out
/// of range is a usage error (exit 2, as for other bad options) with the memory layer's
/// text; the tool function checks it again with the same rule.
fn usage_range(range: &IntRange, value: i64) -> CliResult {
    range
        .check(value)
        .map(|_| ())
        .map_err(|e| CliError::usage(e.into_message()))
}

pub(crate) fn tool(e: ToolError) -> CliError {
    match e.kind() {
        ToolErrorKind::NotFound => CliError::not_found(e.into_message()),
        ToolErrorKind::Storage => CliError::io(e.into_message()),
        _ => CliError::new(e.into_message()),
    }
}

/// The contract's "Memory not found." with the key it is about (exit 1).
pub(crate) fn not_found(e: ToolError, key: &str) -> CliError {
    if e.message() == MEMORY_NOT_FOUND {
        CliError::not_found(format!("unknown node key: {key}"))
    } else {
        tool(e)
    }
}
