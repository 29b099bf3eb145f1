//! The server's own text embedding: with a model loaded (`--embed-model` or
//! `HOPGRAPH_EMBED_MODEL`), the dispatch fills in the embeddings a caller did not give,
//! before the memory functions run (and so outside any database lock), on the blocking
//! thread the call already runs on.
//!
//! A store keeps one embedding dimension, fixed by its first embedding (the engine refuses
//! others), and the server records which model made its embeddings in
//! [`MODEL_RECORD_FILE`] in the context's directory (`{id, fingerprint, dimension}`,
//! written durably before the first embedding the server computes for that context).
//! Before the server embeds anything for a context it checks both: a store whose
//! embeddings have another dimension, or were made by another model (another fingerprint,
//! even of the same dimension), is refused with a message naming both models, never
//! half-filled with vectors of two models. A store without a record (made before records
//! existed, or only with caller-supplied embeddings) is adopted by the first model whose
//! dimension agrees. Embeddings a caller passes are not checked against the record: the
//! caller's embedding always wins, and the server cannot know its model.

use std::path::Path;

use hopgraph::{Database, Snapshot};
use hopgraph_embed::Embedder;
pub use hopgraph_embed::{MODEL_RECORD_FILE, ModelRecord};
use hopgraph_memory::aim::Entity;
use hopgraph_memory::{ToolError, ToolErrorKind};
use serde_json::{Value, json};

/// Loads the model `spec` names (`--embed-model` or `HOPGRAPH_EMBED_MODEL`): a directory or a
/// Hugging Face model id, from the Hugging Face cache or downloaded into it with a progress
/// line on stderr (stdout carries the protocol). Returns the model and where it came from,
/// for the log.
///
/// # Errors
/// The loader's error (see [`hopgraph_embed::hub`]).
pub fn load_model(
    spec: &std::ffi::OsStr,
) -> Result<(Embedder, String), hopgraph_embed::EmbedError> {
    let mut line = hopgraph_embed::hub::ProgressLine::stderr("hopgraph-mcp");
    let (embedder, model) = Embedder::load_named(spec, |p| line.update(p))?;
    Ok((embedder, model.describe()))
}

/// The text embedded for a memory (see [`hopgraph_memory::embed_text`]).
pub fn memory_text(title: Option<&str>, content: &str) -> String {
    hopgraph_memory::embed_text::memory_text(title, content)
}

/// The text embedded for an AIM entity: its name, its type, then its observations, one per
/// line (see [`hopgraph_memory::embed_text`]).
pub fn entity_text(e: &Entity) -> String {
    hopgraph_memory::embed_text::entity_text(&e.name, &e.entity_type, &e.observations)
}

/// The model record of the store in `dir`, if it has one.
///
/// # Errors
/// A record that cannot be read or parsed, naming the file.
pub fn read_model_record(dir: &Path) -> Result<Option<ModelRecord>, ToolError> {
    ModelRecord::read(dir).map_err(|e| {
        let path = dir.join(MODEL_RECORD_FILE);
        ToolError::new(
            ToolErrorKind::Embedding,
            hopgraph_memory::one_line(&if e.kind() == std::io::ErrorKind::InvalidData {
                format!(
                    "Damaged embedding model record {}: {e}; delete it to let the server's model \
                 adopt this context",
                    path.display()
                )
            } else {
                format!("Storage error: cannot read {}: {e}", path.display())
            }),
        )
    })
}

/// Checks that the server's model may add its vectors to (`writing`) or search the store
/// `db`: the store's embeddings have the model's dimension (or there are none), and its
/// model record names this model (or there is none). Before the first write, a store
/// without a record gets this model's.
///
/// # Errors
/// `Embedding model mismatch: ...` naming both models; storage errors writing the record.
pub fn check_model(db: &Database, embedder: &Embedder, writing: bool) -> Result<(), ToolError> {
    check_dimension(&db.snapshot(), embedder)?;
    let ours = ModelRecord::of(embedder);
    match read_model_record(db.path())? {
        Some(rec) if rec.fingerprint != ours.fingerprint => Err(ToolError::new(
            ToolErrorKind::Embedding,
            format!(
                "Embedding model mismatch: this context's embeddings were made by model {} \
             (fingerprint {}, {} dimensions), the server's model is {} (fingerprint {}, {} \
             dimensions); start the server with that model for this context (or use another \
             context), or pass `embedding` yourself",
                rec.id, rec.fingerprint, rec.dimension, ours.id, ours.fingerprint, ours.dimension
            ),
        )),
        Some(_) => Ok(()),
        None if writing => ours.write(db.path()).map_err(|e| {
            ToolError::new(
                ToolErrorKind::Storage,
                hopgraph_memory::one_line(&format!(
                    "Storage error: cannot record the embedding model in {}: {e}",
                    db.path().display()
                )),
            )
        }),
        None => Ok(()),
    }
}

/// Checks that the store behind `snap` can take the model's vectors: it has none yet, or
/// they have the model's dimension.
///
/// # Errors
/// `Embedding model mismatch: ...` naming both dimensions and the model.
pub fn check_dimension(snap: &Snapshot, embedder: &Embedder) -> Result<(), ToolError> {
    match snap.embedding_dimension() {
        Some(d) if d != embedder.dimension() => Err(ToolError::new(
            ToolErrorKind::Embedding,
            format!(
                "Embedding model mismatch: this context's embeddings have {d} dimensions, the \
             server's model {} makes {}; use a model of {d} dimensions for this context (or \
             another context), or pass `embedding` yourself",
                embedder.model_id(),
                embedder.dimension()
            ),
        )),
        _ => Ok(()),
    }
}

/// Embeds `texts` (in order) as the `f64` lists the memory functions take.
///
/// # Errors
/// `Embedding failed: ...` with the model's error.
pub fn embed_all(embedder: &Embedder, texts: &[String]) -> Result<Vec<Vec<f64>>, ToolError> {
    let vectors = embedder.embed(texts).map_err(|e| {
        ToolError::new(
            ToolErrorKind::Embedding,
            hopgraph_memory::one_line(&format!("Embedding failed ({}): {e}", embedder.model_id())),
        )
    })?;
    Ok(vectors
        .into_iter()
        .map(|v| v.into_iter().map(f64::from).collect())
        .collect())
}

/// Embeds one text.
///
/// # Errors
/// As [`embed_all`].
pub fn embed_one(embedder: &Embedder, text: String) -> Result<Vec<f64>, ToolError> {
    let mut v = embed_all(embedder, &[text])?;
    v.pop().ok_or_else(|| {
        ToolError::new(
            ToolErrorKind::Embedding,
            "Embedding failed: the model returned no vector",
        )
    })
}

/// `search_mode` and `embed_model` of `graph_stats`.
pub fn stats_fields(embedder: Option<&Embedder>) -> (Value, Value) {
    match embedder {
        Some(e) => (
            json!("hybrid"),
            json!({"id": e.model_id(), "dimension": e.dimension(), "precision": e.kernel()}),
        ),
        None => (json!("text"), Value::Null),
    }
}
