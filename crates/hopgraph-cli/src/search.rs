//! `search`: ranked full-text search, the MCP tool `memory_search` from a shell.

use std::io::{self, BufWriter, Write};

use clap::Args;

use super::{CliError, CliResult, DbArg, json_line, open_read_only};
use hopgraph_memory::embed_model::{ModelCheckError, ModelUse, check_model};
use hopgraph_memory::search::{SearchRequest, memory_search};

const SEARCH_EXAMPLES: &str = "\
Examples:  (on the sample that `hopgraph --help` imports)
  hopgraph search --db ./mem \"pooled connections\"
  hopgraph search --db ./mem \"p99 latency\" --kind incident --limit 5 --json
  hopgraph search --db ./mem \"rolled back\" --near deploy-auth-3-0 \\
      --near deploy-ledger-2-1 --max-hops 3
  hopgraph search --db ./mem \"disk\" --near deploy-auth-3-0 \\
      --edge-type caused_by,related_to
  hopgraph search --db ./mem \"pooled connections\" \\
      --as-of 2100-01-01T00:00:00Z
  hopgraph search --db ./mem \"why did checkout fail\" \\
      --embed-model sentence-transformers/all-MiniLM-L6-v2";

/// Ranked full-text search over titles, contents and metadata text.
#[derive(Debug, Args)]
#[command(
    long_about = "Ranked full-text search (BM25) over node titles, contents and the string \
                  values of their metadata (AIM observations). Case, punctuation and \
                  inflections do not matter; any word may match, nodes matching every word \
                  or the phrase rank higher. One line per hit: score, key, the field that \
                  matched and a snippet of it. With --json: {results[{id, title, score, type, \
                  field, snippet}], truncated}, as the MCP tool `memory_search` (its `type` \
                  is the node's kind). --kind K keeps nodes of kind K (what `add node \
                  --kind` and the kind field of an import set). With --near ID \
                  (repeatable): only nodes within --max-hops (1-6, default 2) of one of \
                  those nodes, edges walked both ways (only --edge-type types when given: \
                  here --type is not the edge-type filter it is in other commands); closer \
                  nodes rank higher (score × (1 + 2^-hops)) and each hit shows its hop \
                  count. With --embed-model MODEL (a sentence-transformers directory or a \
                  Hugging Face model id; or $HOPGRAPH_EMBED_MODEL) the query is embedded \
                  too and the ranking is hybrid (BM25 fused with cosine similarity, as \
                  `memory_search` with a server model); the store's embeddings must come \
                  from the same model (`hopgraph reembed` makes them). Time: only the nodes \
                  valid now are searched (valid_from <= now < valid_to), with --as-of TIME \
                  (RFC 3339, or ms since 1970) those valid at TIME (and --near walks only \
                  the edges valid then), with --include-history every node (hits then say \
                  whether they are current); every hit has its valid_from and valid_to \
                  (null: never ends), and the text shows `(valid until TIME)` for one that \
                  ends.",
    after_long_help = SEARCH_EXAMPLES
)]
pub(crate) struct SearchArgs {
    #[command(flatten)]
    db: DbArg,
    /// The words to find.
    query: String,
    /// Only nodes of this kind (e.g. decision, incident).
    #[arg(long, value_name = "KIND")]
    kind: Option<String>,
    /// The old spelling of --kind: a node kind here, unlike --type elsewhere (deprecated,
    /// hidden; says so on stderr).
    #[arg(
        long = "type",
        value_name = "KIND",
        hide = true,
        conflicts_with = "kind"
    )]
    deprecated_type: Option<String>,
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
    /// Embed the query with this model (a directory or a Hugging Face model id) and rank
    /// by text and meaning together.
    #[arg(
        long = "embed-model",
        value_name = "MODEL",
        env = "HOPGRAPH_EMBED_MODEL"
    )]
    embed_model: Option<std::path::PathBuf>,
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    as_of: crate::query::AsOfArg,
    /// Search every node, not only those valid now (hits say whether they are current).
    #[arg(long, conflicts_with = "as_of")]
    include_history: bool,
}

pub(crate) fn run(args: SearchArgs) -> CliResult {
    let kind = match args.deprecated_type {
        Some(kind) => {
            let mut err = io::stderr().lock();
            writeln!(
                err,
                "warning: `search --type {kind}` is deprecated: the node-kind filter is \
                 --kind (--type filters edge types in the other commands; search's is \
                 --edge-type)"
            )?;
            Some(kind)
        }
        None => args.kind,
    };
    let db = open_read_only(&args.db.db)?;
    let request = SearchRequest {
        query: args.query,
        limit: i64::try_from(args.limit).ok(),
        memory_type: kind,
        near: (!args.near.is_empty()).then_some(args.near),
        max_hops: args.max_hops.and_then(|h| i64::try_from(h).ok()),
        edge_types: (!args.edge_types.is_empty()).then_some(args.edge_types),
        as_of: args.as_of.as_of.map(hopgraph_memory::rfc3339),
        include_history: args.include_history,
        ..SearchRequest::default()
    };
    let mut request = request;
    let snap = db.snapshot();
    if let Some(model) = &args.embed_model {
        request.embedding = Some(embed_query(&db, &snap, model, &request.query)?);
    }
    let result = memory_search(&snap, &request).map_err(crate::query::tool)?;
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
            if h.current == Some(false) {
                write!(out, "  (not current)")?;
            }
            if let Some(to) = &h.valid_to {
                write!(out, "  (valid until {to})")?;
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

/// The query's embedding by `model`, after checking that the store's embeddings are
/// comparable (same dimension, and the model its record names, when it has one).
fn embed_query(
    db: &hopgraph::Database,
    snap: &hopgraph::Snapshot,
    model: &std::path::Path,
    query: &str,
) -> CliResult<Vec<f64>> {
    let embedder = crate::reembed::load_model(model, false)?;
    if snap.embedding_dimension().is_none() {
        return Err(CliError::new(format!(
            "this store has no embeddings to compare with: run `hopgraph reembed --db {} \
             --model {}` first",
            db.path().display(),
            model.display()
        )));
    }
    let ours = crate::reembed::record_of(&embedder);
    match check_model(db, &ours, ModelUse::Compare) {
        Ok(()) => {}
        Err(ModelCheckError::Dimension { store: d, .. }) => {
            return Err(CliError::new(format!(
                "this store's embeddings have {d} dimensions, model {} makes {}",
                embedder.model_id(),
                embedder.dimension()
            )));
        }
        Err(ModelCheckError::OtherModel { recorded: rec, .. }) => {
            return Err(CliError::new(format!(
                "this store's embeddings were made by model {} (fingerprint {}), not by {}: \
                 search with that model, or re-embed the store with `hopgraph reembed`",
                rec.id,
                rec.fingerprint,
                embedder.model_id()
            )));
        }
        Err(e) => {
            return Err(CliError::io(format!(
                "reading the store's model record: {e}"
            )));
        }
    }
    let v = embedder
        .embed_one(query)
        .map_err(|e| CliError::new(format!("embedding the query failed: {e}")))?;
    Ok(v.into_iter().map(f64::from).collect())
}
