//! The database: catalog, delta, snapshots, commits, checkpoint, compaction, bulk load.
//!
//! - [`Database`] is the handle a host opens; it is `Send + Sync` and cheap to share.
//! - [`WriteBatch`] collects writes; [`Database::commit`] makes them durable atomically.
//! - [`Snapshot`] is a consistent read view.
//!
//! Submodules: `handle` (the `Database` handle and what its clones share), `options`
//! (`Options`, `Durability`, `CommitInfo`), `state` (the immutable state value and its one `apply`), `batch`
//! (resolving requests into WAL operations), `group` (the group-commit protocol: queue,
//! leader, result hand-off, publication, poisoning; model-checked with loom), `commit` (the
//! WAL writer it drives), `open` (recovery and
//! catching up with other processes), `maintenance` (checkpoint, compaction, verify),
//! `bulk` (bulk load), `build` (segment writing), `segment` (segment reading),
//! `text` (the delta's text index and
//! text search over segments plus delta), `vector` (vector search across segments and
//! delta, the store's embedding dimension), `vector_index` (adding the HNSW graph to
//! segments whose vectors a bulk load stored flat).

mod app_file;
mod as_of;
mod batch;
mod build;
mod bulk;
mod commit;
mod group;
mod handle;
mod maintenance;
mod open;
mod options;
mod segment;
mod snapshot;
mod state;
mod substring;
mod text;
mod text_check;
mod vector;
mod vector_index;

pub use app_file::APP_FILE_BYTES_MAX;
pub use as_of::{AsOf, ValidAt};
pub use batch::{NodePatch, OpResult, WriteBatch, check_interval};
pub use bulk::{BulkLoad, BulkPhase, BulkProgress, BulkReport, default_memory_limit};
pub use handle::Database;
pub use maintenance::{
    CheckpointReport, CompactReport, Stats, TextIndexReport, VerifyPhase, VerifyProgress,
    VerifyReport,
};
pub use open::RecoveryReport;
pub use options::{CommitInfo, Durability, Options};
pub use snapshot::{Neighbor, Snapshot};
pub use vector::{HNSW_MIN_VECTORS, VectorHit, VectorQuery};
pub use vector_index::VectorIndexReport;
