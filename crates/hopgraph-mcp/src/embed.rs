//! The server's own text embedding: with a model loaded (`--embed-model` or
//! `HOPGRAPH_EMBED_MODEL`), the dispatch fills in the embeddings a caller did not give,
//! before the memory functions run (and so outside any database lock), on the blocking
//! thread the call already runs on.
//!
//! Before the server embeds anything for a context it runs the memory layer's model check
//! ([`hopgraph_memory::embed_model`], shared with the CLI): a store whose embeddings have
//! another dimension, or were made by another model (another fingerprint, even of the same
//! dimension), is refused with a message naming both models, never half-filled with
//! vectors of two models; a store without a record is adopted by the first model whose
//! dimension agrees ([`MODEL_RECORD_FILE`], written durably through the engine under its
//! writer lock before the first embedding the server computes for that context).
//! Embeddings a caller passes are not checked against the record: the caller's embedding
//! always wins, and the server cannot know its model. This module only turns the check's
//! typed answer into the server's messages.

use std::path::Path;

use hopgraph::Database;
use hopgraph_embed::Embedder;
use hopgraph_memory::aim::Entity;
use hopgraph_memory::embed_model::{self, ModelCheckError, ModelUse};
pub use hopgraph_memory::embed_model::{MODEL_RECORD_FILE, ModelRecord};
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

/// The model record of the store in `dir`, if it has one (read through a read-only
/// handle: for tests and tools; the server reads it through its open database).
///
/// # Errors
/// A record that cannot be read or parsed, naming the file; a directory that is not a
/// database.
pub fn read_model_record(dir: &Path) -> Result<Option<ModelRecord>, ToolError> {
    let db = Database::open_with(dir, hopgraph::Options::default().read_only(true))
        .map_err(|e| hopgraph_memory::engine_error(&e))?;
    embed_model::read_model_record(&db).map_err(|e| model_error(&e, db.path()))
}

/// The record of the server's model.
pub fn record_of(embedder: &Embedder) -> ModelRecord {
    ModelRecord {
        id: embedder.model_id().to_owned(),
        fingerprint: embedder.fingerprint().to_owned(),
        dimension: embedder.dimension(),
    }
}

/// Checks that the server's model may add its vectors to (`writing`) or search the store
/// `db` (the memory layer's [`embed_model::check_model`]): the store's embeddings have the
/// model's dimension (or there are none), and its model record names this model (or there
/// is none). Before the first write, a store without a record gets this model's.
///
/// # Errors
/// `Embedding model mismatch: ...` naming both models; a damaged record; storage errors
/// reading or writing the record.
pub fn check_model(db: &Database, embedder: &Embedder, writing: bool) -> Result<(), ToolError> {
    let use_ = if writing {
        ModelUse::Add
    } else {
        ModelUse::Compare
    };
    embed_model::check_model(db, &record_of(embedder), use_).map_err(|e| model_error(&e, db.path()))
}

/// The server's message for a model that may not be used on the store in `dir`.
fn model_error(e: &ModelCheckError, dir: &Path) -> ToolError {
    let (kind, message) = match e {
        ModelCheckError::Dimension { store: d, model } => (
            ToolErrorKind::Embedding,
            format!(
                "Embedding model mismatch: this context's embeddings have {d} dimensions, the \
             server's model {} makes {}; use a model of {d} dimensions for this context (or \
             another context), or pass `embedding` yourself",
                model.id, model.dimension
            ),
        ),
        ModelCheckError::OtherModel {
            recorded: rec,
            model: ours,
        } => (
            ToolErrorKind::Embedding,
            format!(
                "Embedding model mismatch: this context's embeddings were made by model {} \
             (fingerprint {}, {} dimensions), the server's model is {} (fingerprint {}, {} \
             dimensions); start the server with that model for this context (or use another \
             context), or pass `embedding` yourself",
                rec.id, rec.fingerprint, rec.dimension, ours.id, ours.fingerprint, ours.dimension
            ),
        ),
        ModelCheckError::Damaged { path, detail } => (
            ToolErrorKind::Embedding,
            format!(
                "Damaged embedding model record {}: {detail}; delete it to let the server's \
                 model adopt this context",
                path.display()
            ),
        ),
        ModelCheckError::Storage {
            writing: true,
            source,
            ..
        } => (
            ToolErrorKind::Storage,
            format!(
                "Storage error: cannot record the embedding model in {}: {source}",
                dir.display()
            ),
        ),
        ModelCheckError::Storage { path, source, .. } => (
            ToolErrorKind::Embedding,
            format!("Storage error: cannot read {}: {source}", path.display()),
        ),
        other => (ToolErrorKind::Embedding, other.to_string()),
    };
    ToolError::new(kind, hopgraph_memory::one_line(&message))
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
