//! Which model made a store's embeddings, and whether a model may search them, add to
//! them or replace them: the one check every front end runs (the MCP server before it
//! embeds, `hopgraph search --embed-model`, `hopgraph reembed`).
//!
//! Vectors of two models do not compare, even when their dimensions agree. So a store
//! keeps a record of the model that embedded into it ([`MODEL_RECORD_FILE`]: `{id,
//! fingerprint, dimension}`), written before that model's first vector, and a model whose
//! fingerprint differs is refused. The record is one of the engine's application files
//! ([`Database::write_app_file`]): read and replaced through the engine's I/O seam, under
//! its writer lock, atomically and durably. The engine keeps the other half of the rule:
//! a store has one embedding dimension, fixed by its first embedding.
//!
//! A store without a record (made before records existed, or holding only embeddings its
//! callers computed) is adopted by the first model that adds to it and whose dimension
//! agrees. Embeddings a caller passes are not checked against the record: the caller's
//! embedding always wins, and nothing can know its model.
//!
//! The record's layout is this module's [`ModelRecord`], the only reader and writer of
//! the file (a second, lock-free copy in hopgraph-embed was removed in 2026-11).

use std::fmt;
use std::path::PathBuf;

use hopgraph::Database;

/// The record's file name in a store's directory.
pub const MODEL_RECORD_FILE: &str = "embedding-model.json";

/// Which model made a store's embeddings (what [`MODEL_RECORD_FILE`] holds), or which
/// model a caller runs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ModelRecord {
    /// The model's id (a Hugging Face model id or a directory name).
    pub id: String,
    /// The model's fingerprint: weights, tokenizer, pooling, window. Two models with the
    /// same fingerprint make the same vectors.
    pub fingerprint: String,
    /// Its output dimension.
    pub dimension: usize,
}

/// What a caller means to do with a model's vectors in a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelUse {
    /// Compare the model's vectors with the store's (a search; or adding next to them
    /// later, after its own record write): same dimension, same model. Writes nothing.
    Compare,
    /// Add the model's vectors to the store: as [`ModelUse::Compare`], and a store without
    /// a record gets this model's before this returns.
    Add,
    /// Replace every vector of the store with the model's (a full re-embedding): the
    /// dimension must agree; the record is the caller's to write before its first vector.
    Replace,
}

/// Why a model may not be used on a store, with the evidence for a message.
#[derive(Debug)]
#[non_exhaustive]
pub enum ModelCheckError {
    /// The store's embeddings have another dimension than the model's vectors.
    Dimension {
        /// The store's dimension.
        store: usize,
        /// The model.
        model: ModelRecord,
    },
    /// The store's embeddings were made by another model (another fingerprint).
    OtherModel {
        /// The store's record.
        recorded: ModelRecord,
        /// The model.
        model: ModelRecord,
    },
    /// The store's record does not parse.
    Damaged {
        /// The record's path.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// The record could not be read or written.
    Storage {
        /// The record's path.
        path: PathBuf,
        /// Whether it was being written (else read).
        writing: bool,
        /// The engine's error.
        source: hopgraph::Error,
    },
}

impl fmt::Display for ModelCheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelCheckError::Dimension { store, model } => write!(
                f,
                "the store's embeddings have {store} dimensions, model {} makes {}",
                model.id, model.dimension
            ),
            ModelCheckError::OtherModel { recorded, model } => write!(
                f,
                "the store's embeddings were made by model {} (fingerprint {}), not by {} \
                 (fingerprint {})",
                recorded.id, recorded.fingerprint, model.id, model.fingerprint
            ),
            ModelCheckError::Damaged { path, detail } => {
                write!(
                    f,
                    "damaged embedding model record {}: {detail}",
                    path.display()
                )
            }
            ModelCheckError::Storage {
                path,
                writing,
                source,
            } => {
                let verb = if *writing { "write" } else { "read" };
                write!(f, "cannot {verb} {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for ModelCheckError {}

/// The model record of the store `db`, if it has one.
///
/// # Errors
/// [`ModelCheckError::Damaged`] for a record that does not parse;
/// [`ModelCheckError::Storage`] when it cannot be read.
pub fn read_model_record(db: &Database) -> Result<Option<ModelRecord>, ModelCheckError> {
    let bytes = db
        .read_app_file(MODEL_RECORD_FILE)
        .map_err(|source| storage(db, false, source))?;
    match bytes {
        None => Ok(None),
        Some(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| ModelCheckError::Damaged {
                path: db.path().join(MODEL_RECORD_FILE),
                detail: e.to_string(),
            }),
    }
}

/// Records `model` as the model of the store `db`'s embeddings (replacing any record),
/// durably and under the writer lock.
///
/// # Errors
/// [`ModelCheckError::Storage`] (the old record, if any, is then left as it was).
pub fn write_model_record(db: &Database, model: &ModelRecord) -> Result<(), ModelCheckError> {
    db.write_app_file(MODEL_RECORD_FILE, &record_bytes(model))
        .map_err(|source| storage(db, true, source))
}

/// Checks that `model` may be used on the store `db` as `use_` says: the store's
/// embeddings have the model's dimension (or there are none), and, unless they are to be
/// replaced, its record names this model (or there is none). With [`ModelUse::Add`], a
/// store without a record gets `model`'s before this returns.
///
/// ```
/// use hopgraph_memory::embed_model::{ModelCheckError, ModelRecord, ModelUse, check_model};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let tmp = std::env::temp_dir().join(format!("hopgraph-model-doc-{}", std::process::id()));
/// let db = hopgraph::Database::open(&tmp)?;
/// let a = ModelRecord { id: "a".into(), fingerprint: "aaaa".into(), dimension: 3 };
/// let b = ModelRecord { fingerprint: "bbbb".into(), ..a.clone() };
/// check_model(&db, &a, ModelUse::Compare)?; // a new store: anything goes, nothing recorded
/// check_model(&db, &a, ModelUse::Add)?; // `a` adopts the store
/// assert!(matches!(
///     check_model(&db, &b, ModelUse::Add),
///     Err(ModelCheckError::OtherModel { .. })
/// ));
/// check_model(&db, &b, ModelUse::Replace)?; // a full re-embedding may switch models
/// # drop(db); std::fs::remove_dir_all(&tmp).ok();
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`ModelCheckError::Dimension`], [`ModelCheckError::OtherModel`]; a damaged or
/// unreadable record; a record that cannot be written.
pub fn check_model(
    db: &Database,
    model: &ModelRecord,
    use_: ModelUse,
) -> Result<(), ModelCheckError> {
    if let Some(store) = db.snapshot().embedding_dimension()
        && store != model.dimension
    {
        return Err(ModelCheckError::Dimension {
            store,
            model: model.clone(),
        });
    }
    if use_ == ModelUse::Replace {
        return Ok(());
    }
    let recorded = match read_model_record(db)? {
        // Adopted under the writer lock: of two models adopting the store at once, one
        // wins and the other is then compared with it.
        None if use_ == ModelUse::Add => {
            if db
                .create_app_file(MODEL_RECORD_FILE, &record_bytes(model))
                .map_err(|source| storage(db, true, source))?
            {
                return Ok(());
            }
            read_model_record(db)?
        }
        other => other,
    };
    match recorded {
        Some(recorded) if recorded.fingerprint != model.fingerprint => {
            Err(ModelCheckError::OtherModel {
                recorded,
                model: model.clone(),
            })
        }
        _ => Ok(()),
    }
}

/// The record's bytes: pretty JSON and a newline.
fn record_bytes(model: &ModelRecord) -> Vec<u8> {
    // A struct of strings and an integer always serializes.
    let mut bytes = serde_json::to_vec_pretty(model).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

fn storage(db: &Database, writing: bool, source: hopgraph::Error) -> ModelCheckError {
    ModelCheckError::Storage {
        path: db.path().join(MODEL_RECORD_FILE),
        writing,
        source,
    }
}
