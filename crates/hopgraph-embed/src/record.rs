//! Which model made a store's embeddings: a small JSON file in the store's directory.
//!
//! Vectors of two models do not compare, even when their dimensions agree. A program that
//! embeds into a store (the MCP server, `hopgraph reembed`) records its model there before
//! its first vector, and refuses a store whose record names another model. Programs with
//! an open database check and write the record through `hopgraph_memory::embed_model`
//! (the engine's I/O seam, under its writer lock); this reader (and [`ModelRecord::write`],
//! which takes no lock) serve programs without one, and a test in `hopgraph-mcp` holds
//! both to one layout. The engine does not read the file; it only keeps the
//! one-dimension-per-store rule.

use std::io::Write;
use std::path::Path;

use crate::Embedder;

/// The record's file name in a store's directory.
pub const MODEL_RECORD_FILE: &str = "embedding-model.json";

/// What [`MODEL_RECORD_FILE`] holds.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ModelRecord {
    /// The model's id ([`Embedder::model_id`]).
    pub id: String,
    /// The model's fingerprint ([`Embedder::fingerprint`]): weights, tokenizer, pooling,
    /// window.
    pub fingerprint: String,
    /// Its output dimension.
    pub dimension: usize,
}

impl ModelRecord {
    /// The record of `embedder`'s model.
    pub fn of(embedder: &Embedder) -> ModelRecord {
        ModelRecord {
            id: embedder.model_id().to_owned(),
            fingerprint: embedder.fingerprint().to_owned(),
            dimension: embedder.dimension(),
        }
    }

    /// Whether `embedder` runs the model this record names.
    pub fn matches(&self, embedder: &Embedder) -> bool {
        self.fingerprint == embedder.fingerprint()
    }

    /// The record of the store in `dir`, if it has one.
    ///
    /// # Errors
    /// The file cannot be read, or does not parse (`InvalidData`).
    pub fn read(dir: &Path) -> std::io::Result<Option<ModelRecord>> {
        let bytes = match std::fs::read(dir.join(MODEL_RECORD_FILE)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }

    /// Writes this record into the store in `dir`, durably: a temporary file, fsynced,
    /// renamed over the record, then the directory fsynced. It takes no lock: a program
    /// with the database open writes through `hopgraph_memory::embed_model` instead.
    ///
    /// # Errors
    /// Any I/O error on the way; the old record (if any) is then left as it was.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        // Not `.tmp`: the engine removes `*.tmp` files it finds in its directory.
        let tmp = dir.join(format!("{MODEL_RECORD_FILE}.new"));
        let mut bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, dir.join(MODEL_RECORD_FILE))?;
        std::fs::File::open(dir)?.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::{MODEL_RECORD_FILE, ModelRecord};

    #[test]
    fn round_trips_and_reports_damage() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(ModelRecord::read(tmp.path()).unwrap(), None);
        let r = ModelRecord {
            id: "m".into(),
            fingerprint: "0123456789abcdef".into(),
            dimension: 384,
        };
        r.write(tmp.path()).unwrap();
        assert_eq!(ModelRecord::read(tmp.path()).unwrap(), Some(r));
        std::fs::write(tmp.path().join(MODEL_RECORD_FILE), "{").unwrap();
        let err = ModelRecord::read(tmp.path()).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    }
}
