//! The database: catalog, delta, snapshots, commits, checkpoint, compaction, bulk load.
//!
//! - [`Database`] is the handle a host opens; it is `Send + Sync` and cheap to share.
//! - [`WriteBatch`] collects writes; [`Database::commit`] makes them durable atomically.
//! - [`Snapshot`] is a consistent read view.
//!
//! Submodules: `state` (the immutable state value and its one `apply`), `batch`
//! (resolving requests into WAL operations), `commit` (group commit), `open` (recovery and
//! catching up with other processes), `maintenance` (checkpoint, compaction, verify),
//! `bulk` (bulk load), `build` (segment writing), `segment` (segment reading),
//! `text` (the delta's text index and
//! text search over segments plus delta), `vector` (vector search across segments and
//! delta, the store's embedding dimension), `vector_index` (adding the HNSW graph to
//! segments whose vectors a bulk load stored flat).

mod batch;
mod build;
mod bulk;
mod commit;
mod maintenance;
mod open;
mod segment;
mod snapshot;
mod state;
mod substring;
mod text;
mod vector;
mod vector_index;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Error;
use crate::format::manifest::Manifest;
use crate::storage::io::Io;
use crate::storage::lock::WriterLock;
use crate::storage::wal::WalFile;
use crate::sync::{Mutex, Published};

pub use batch::{NodePatch, OpResult, WriteBatch};
pub use bulk::{BulkLoad, BulkPhase, BulkProgress, BulkReport};
pub use maintenance::{CheckpointReport, CompactReport, Stats, VerifyReport};
pub use open::RecoveryReport;
pub use snapshot::{Neighbor, Snapshot};
pub use vector::{HNSW_MIN_VECTORS, VectorHit, VectorQuery};
pub use vector_index::VectorIndexReport;

use state::State;

/// When a commit returns relative to the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Durability {
    /// fsync the WAL before a commit returns (concurrent committers share one fsync).
    /// Survives power loss.
    #[default]
    Sync,
    /// Write the WAL to the OS before returning, without fsync. Survives a process crash;
    /// power loss may lose the most recent commits but never corrupts the database.
    Buffered,
}

/// How a database is opened. Build it from [`Options::default`] with the methods below:
///
/// ```
/// use hopgraph::{Durability, Options};
/// let options = Options::default().durability(Durability::Buffered).read_only(false);
/// # let _ = options;
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// Commit durability (default `Sync`).
    pub durability: Durability,
    /// Create the directory and an empty database when missing (default true).
    pub create_if_missing: bool,
    /// Open without ever taking the writer lock; writes fail with `ReadOnly`.
    pub read_only: bool,
    /// Checkpoint automatically once the WAL exceeds this many bytes (default 64 MiB).
    pub checkpoint_wal_bytes: u64,
    /// Compact automatically once there are more segments than this (default 8).
    pub compaction_segments_max: usize,
    /// Segments holding at least this many embeddings get an HNSW graph and are searched
    /// approximately through it; smaller ones are scanned exactly, so a store below it
    /// answers vector searches exactly (default [`HNSW_MIN_VECTORS`], 100,000).
    pub vector_graph_min: usize,
    /// The file system every file operation goes through (default: the operating
    /// system's). This repository's fault tests put an injector here through
    /// `with_io` (behind the `internals` feature).
    pub(crate) io: Arc<dyn Io>,
}

impl Options {
    /// These options with file operations going through `io` (e.g. a fault injector).
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    #[must_use]
    pub fn with_io(mut self, io: Arc<dyn Io>) -> Options {
        self.io = io;
        self
    }

    /// When a commit returns relative to the disk (default [`Durability::Sync`]).
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> Options {
        self.durability = durability;
        self
    }

    /// Whether opening a missing directory creates an empty database (default true).
    #[must_use]
    pub fn create_if_missing(mut self, create: bool) -> Options {
        self.create_if_missing = create;
        self
    }

    /// Open without ever taking the writer lock (default false); writes then fail with
    /// [`Error::ReadOnly`] and nothing on disk is created or changed.
    #[must_use]
    pub fn read_only(mut self, read_only: bool) -> Options {
        self.read_only = read_only;
        self
    }

    /// Checkpoint automatically once the WAL exceeds this many bytes (default 64 MiB).
    /// The automatic checkpoint runs on the committing thread with the writer lock held;
    /// a host that cannot have one commit wait for it sets this high (`u64::MAX`) and calls
    /// [`Database::checkpoint`] from a thread of its own, which writes the segment without
    /// the lock (see DESIGN.md §6).
    #[must_use]
    pub fn checkpoint_wal_bytes(mut self, bytes: u64) -> Options {
        self.checkpoint_wal_bytes = bytes;
        self
    }

    /// Compact automatically once there are more segments than this (default 8).
    #[must_use]
    pub fn compaction_segments_max(mut self, segments: usize) -> Options {
        self.compaction_segments_max = segments;
        self
    }

    /// The fewest embeddings a segment needs for an HNSW graph (default
    /// [`HNSW_MIN_VECTORS`], 100,000; at least 1): segments with fewer are scanned exactly
    /// (a scan of 100,000 rows took 1.5 ms at dimension 128 and 5 ms at 384 here), larger
    /// ones are searched through their graph (sub-millisecond, recall@10 about 0.96–0.99 at
    /// the default `ef`). It applies to segments this handle writes and to its searches: a
    /// search scans a segment below it exactly even when an earlier setting gave it a
    /// graph. Lower it for faster searches of mid-sized stores at a small loss of recall.
    #[must_use]
    pub fn vector_graph_min(mut self, vectors: usize) -> Options {
        self.vector_graph_min = vectors.max(1);
        self
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            durability: Durability::Sync,
            create_if_missing: true,
            read_only: false,
            checkpoint_wal_bytes: 64 << 20,
            compaction_segments_max: 8,
            vector_graph_min: HNSW_MIN_VECTORS,
            io: crate::storage::io::real(),
        }
    }
}

/// What one commit did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitInfo {
    /// The LSN the commit got (unchanged when the batch changed nothing).
    pub lsn: crate::graph::Lsn,
    /// One result per request, in order.
    pub results: Vec<OpResult>,
}

impl Writer {
    /// Poisons the writer when `r` failed on I/O (or found a damaged file) while the disk
    /// was being changed: what is on disk is then unknown, so no further write is tried
    /// until the database is reopened and recovery decides from the bytes. Returns `r`.
    fn poison_on_io<T>(&mut self, what: &str, r: crate::Result<T>) -> crate::Result<T> {
        if let Err(e @ (Error::Io { .. } | Error::Corrupt { .. })) = &r {
            self.poisoned = Some(format!("{what} failed: {e}"));
        }
        r
    }
}

/// Writer-side state, guarded by `Shared::writer`.
#[derive(Debug)]
struct Writer {
    /// The newest state (published after every commit group).
    state: Arc<State>,
    wal: WalFile,
    /// End of the last valid record in `wal`.
    wal_end: u64,
    manifest: Manifest,
    /// Identity of the MANIFEST file we loaded (inode, length, mtime).
    manifest_stamp: open::FileStamp,
    poisoned: Option<String>,
    /// The last automatic checkpoint or compaction failure, kept for `stats`.
    last_maintenance_error: Option<String>,
    /// False for read-only handles: files are opened read-only.
    writable: bool,
}

#[derive(Debug)]
struct Shared {
    dir: PathBuf,
    options: Options,
    db_id: u128,
    published: Published<State>,
    writer: Mutex<Writer>,
    queue: Mutex<Vec<Arc<commit::Pending>>>,
    lock: Option<WriterLock>,
    recovery: Mutex<RecoveryReport>,
    /// What the files looked like at the last publication (for cheap change checks).
    probe: Mutex<Probe>,
    /// Held for the whole of a [`Database::checkpoint`], so that this process runs one
    /// at a time (the writer mutex is held only at its start and its end).
    checkpointing: Mutex<()>,
    /// Held for the whole of a [`Database::index_vectors`] with the index lock file
    /// (`flock` excludes other handles; this, other threads on this one).
    indexing: Mutex<()>,
}

impl Shared {
    /// The file system.
    fn io(&self) -> &dyn Io {
        &*self.options.io
    }
}

#[derive(Debug)]
struct Probe {
    manifest_stamp: open::FileStamp,
    wal_path: PathBuf,
    wal_len_seen: u64,
}

/// An open database. Clone it freely: clones share one handle.
#[derive(Clone, Debug)]
pub struct Database {
    shared: Arc<Shared>,
}

impl Database {
    /// Opens (or creates) the database in `dir` with default options.
    ///
    /// # Errors
    /// I/O errors, corruption, or a directory that is not a hopgraph database.
    pub fn open(dir: impl AsRef<Path>) -> crate::Result<Database> {
        Database::open_with(dir, Options::default())
    }

    /// Whether `dir` holds a hopgraph database (its `MANIFEST` file is there). Cheap: one
    /// `stat`; it neither opens nor validates the database.
    pub fn exists(dir: impl AsRef<Path>) -> bool {
        dir.as_ref().join(crate::storage::MANIFEST_FILE).is_file()
    }

    /// Opens (or creates) the database in `dir`. Cost: O(segments + WAL tail); the graph
    /// itself is not parsed.
    ///
    /// # Errors
    /// I/O errors, corruption, or a directory that is not a hopgraph database.
    pub fn open_with(dir: impl AsRef<Path>, options: Options) -> crate::Result<Database> {
        open::open(dir.as_ref(), options)
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.shared.dir
    }

    /// A consistent read view including every commit acknowledged before this call (in
    /// this process, and in other processes sharing the directory).
    pub fn snapshot(&self) -> Snapshot {
        self.refresh_if_changed();
        Snapshot {
            state: self.shared.published.load(),
            vector_graph_min: self.shared.options.vector_graph_min,
        }
    }

    /// The options this handle was opened with.
    pub fn options(&self) -> &Options {
        &self.shared.options
    }

    /// What recovery did when this handle opened the database (or last reloaded it).
    pub fn recovery_report(&self) -> RecoveryReport {
        self.shared.recovery.lock().clone()
    }
}
