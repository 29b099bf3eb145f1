//! `graph_stats`: counts, the edge-type histogram, storage state and what recovery did.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{ToolError, engine_error, rfc3339};
use hopgraph::Database;

/// One segment file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SegmentStats {
    /// Segment number.
    pub id: u64,
    /// File size.
    pub bytes: u64,
    /// Edge rows stored (deleted edges included until compaction).
    pub edge_rows: u64,
}

/// Storage state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StorageStats {
    /// The database directory.
    pub path: String,
    /// Segment files, oldest first.
    pub segments: Vec<SegmentStats>,
    /// Bytes of the live write-ahead log.
    pub wal_bytes: u64,
    /// Bytes of all files of the database.
    pub disk_bytes: u64,
    /// LSN of the last commit.
    pub lsn: u64,
    /// LSN covered by segments.
    pub checkpoint_lsn: u64,
    /// Time of the last checkpoint (RFC 3339), `null` when never.
    pub last_checkpoint_at: Option<String>,
    /// Manifest generation.
    pub generation: u64,
    /// The last automatic checkpoint/compaction failure, `null` when none.
    pub maintenance_error: Option<String>,
    /// Embeddings an import stored without their HNSW graph: searched exactly until the
    /// graph is built (the server builds it in the background; 0 when none wait).
    pub vectors_awaiting_index: u64,
}

/// What recovery did when the database was opened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RecoveryStats {
    /// The database was created by that open.
    pub created: bool,
    /// Segments mapped.
    pub segments: usize,
    /// Log records replayed.
    pub wal_records_replayed: u64,
    /// Log bytes replayed.
    pub wal_bytes_replayed: u64,
    /// Bytes of a torn last record discarded.
    pub torn_tail_bytes: u64,
    /// Why the torn tail was invalid, `null` when there was none.
    pub torn_tail_reason: Option<String>,
    /// Leftover files removed.
    pub files_removed: Vec<String>,
}

/// What `graph_stats` returns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GraphStats {
    /// Live nodes.
    pub nodes: u64,
    /// Live edges.
    pub edges: u64,
    /// Live edges per type name (types without live edges are left out).
    pub edge_types: BTreeMap<String, u64>,
    /// Storage state.
    pub storage: StorageStats,
    /// What the last recovery did.
    pub recovery: RecoveryStats,
}

/// `graph_stats`.
///
/// # Errors
/// Storage errors reading the directory.
pub fn graph_stats(db: &Database) -> Result<GraphStats, ToolError> {
    let s = db.stats().map_err(|e| engine_error(&e))?;
    let r = &s.recovery;
    Ok(GraphStats {
        nodes: s.nodes,
        edges: s.edges,
        edge_types: s
            .edge_types
            .iter()
            .filter(|(_, c)| *c > 0)
            .cloned()
            .collect(),
        storage: StorageStats {
            path: db.path().display().to_string(),
            segments: s
                .segments
                .iter()
                .map(|&(id, bytes, edge_rows)| SegmentStats {
                    id,
                    bytes,
                    edge_rows,
                })
                .collect(),
            wal_bytes: s.wal_bytes,
            disk_bytes: s.disk_bytes,
            lsn: s.lsn,
            checkpoint_lsn: s.checkpoint_lsn,
            last_checkpoint_at: (s.last_checkpoint_ms > 0).then(|| rfc3339(s.last_checkpoint_ms)),
            generation: s.generation,
            maintenance_error: s.maintenance_error.clone(),
            vectors_awaiting_index: db.vectors_awaiting_index(),
        },
        recovery: RecoveryStats {
            created: r.created,
            segments: r.segments,
            wal_records_replayed: r.wal_records_replayed,
            wal_bytes_replayed: r.wal_bytes_replayed,
            torn_tail_bytes: r.torn_tail_bytes,
            torn_tail_reason: r.torn_tail_reason.clone(),
            files_removed: r.files_removed.clone(),
        },
    })
}

/// `graph_stats` of a store that does not exist yet (at `path`): everything zero, nothing
/// created, as an empty store answers.
pub fn graph_stats_missing(path: &std::path::Path) -> GraphStats {
    GraphStats {
        nodes: 0,
        edges: 0,
        edge_types: BTreeMap::new(),
        storage: StorageStats {
            path: path.display().to_string(),
            segments: Vec::new(),
            wal_bytes: 0,
            disk_bytes: 0,
            lsn: 0,
            checkpoint_lsn: 0,
            last_checkpoint_at: None,
            generation: 0,
            maintenance_error: None,
            vectors_awaiting_index: 0,
        },
        recovery: RecoveryStats {
            created: false,
            segments: 0,
            wal_records_replayed: 0,
            wal_bytes_replayed: 0,
            torn_tail_bytes: 0,
            torn_tail_reason: None,
            files_removed: Vec::new(),
        },
    }
}
