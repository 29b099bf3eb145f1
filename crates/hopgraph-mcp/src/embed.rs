//! The server's own text embedding: with a model loaded (`--embed-model` or
//! `HOPGRAPH_EMBED_MODEL`), the dispatch fills in the embeddings a caller did not give,
//! before the memory functions run (and so outside any database lock), on the blocking
//! thread the call already runs on.
//!
//! A store keeps one embedding dimension, fixed by its first embedding (the engine refuses
//! others). Before the server embeds anything for a context it compares that dimension with
//! the model's, so a store made with another model is refused with a message naming both,
//! not half-filled. Only the dimension is recorded (by the engine); the model's fingerprint
//! is not stored, so two different models of the same dimension can share a store
//! unnoticed (see SERVER.md).

use hopgraph::Snapshot;
use hopgraph_embed::Embedder;
use hopgraph_memory::ToolError;
use hopgraph_memory::aim::Entity;
use serde_json::{Value, json};

/// The text embedded for a memory: its title and content, one per line (an empty title
/// adds nothing).
pub fn memory_text(title: Option<&str>, content: &str) -> String {
    match title.filter(|t| !t.is_empty()) {
        Some(t) => format!("{t}\n{content}"),
        None => content.to_owned(),
    }
}

/// The text embedded for an AIM entity: its name, its type, then its observations, one per
/// line.
pub fn entity_text(e: &Entity) -> String {
    let mut s = format!("{}\n{}", e.name, e.entity_type);
    for o in &e.observations {
        s.push('\n');
        s.push_str(o);
    }
    s
}

/// Checks that the store behind `snap` can take the model's vectors: it has none yet, or
/// they have the model's dimension.
///
/// # Errors
/// `Embedding model mismatch: ...` naming both dimensions and the model.
pub fn check_dimension(snap: &Snapshot, embedder: &Embedder) -> Result<(), ToolError> {
    match snap.embedding_dimension() {
        Some(d) if d != embedder.dimension() => Err(ToolError(format!(
            "Embedding model mismatch: this context's embeddings have {d} dimensions, the \
             server's model {} makes {}; use a model of {d} dimensions for this context (or \
             another context), or pass `embedding` yourself",
            embedder.model_id(),
            embedder.dimension()
        ))),
        _ => Ok(()),
    }
}

/// Embeds `texts` (in order) as the `f64` lists the memory functions take.
///
/// # Errors
/// `Embedding failed: ...` with the model's error.
pub fn embed_all(embedder: &Embedder, texts: &[String]) -> Result<Vec<Vec<f64>>, ToolError> {
    let vectors = embedder.embed(texts).map_err(|e| {
        ToolError(hopgraph_memory::one_line(&format!(
            "Embedding failed ({}): {e}",
            embedder.model_id()
        )))
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
    v.pop()
        .ok_or_else(|| ToolError("Embedding failed: the model returned no vector".into()))
}

/// `search_mode` and `embed_model` of `graph_stats`.
pub fn stats_fields(embedder: Option<&Embedder>) -> (Value, Value) {
    match embedder {
        Some(e) => (
            json!("hybrid"),
            json!({"id": e.model_id(), "dimension": e.dimension()}),
        ),
        None => (json!("text"), Value::Null),
    }
}
