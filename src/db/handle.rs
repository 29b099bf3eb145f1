//! The [`Database`] handle and the state its clones share: the published state, the
//! writer (WAL, manifest, poisoning), the commit queue, the writer lock and the probe that
//! notices other processes' commits.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::commit;
use super::open::{self, RecoveryReport};
use super::options::Options;
use super::snapshot::Snapshot;
use super::state::State;
use crate::error::Error;
use crate::format::manifest::Manifest;
use crate::storage::io::Io;
use crate::storage::lock::WriterLock;
use crate::storage::wal::WalFile;
use crate::sync::{Mutex, Published};

impl Writer {
    /// Poisons the writer when `r` failed on I/O (or found a damaged file) while the disk
    /// was being changed: what is on disk is then unknown, so no further write is tried
    /// until the database is reopened and recovery decides from the bytes. Returns `r`.
    pub(super) fn poison_on_io<T>(&mut self, what: &str, r: crate::Result<T>) -> crate::Result<T> {
        if let Err(e @ (Error::Io { .. } | Error::Corrupt { .. })) = &r {
            self.poisoned = Some(format!("{what} failed: {e}"));
        }
        r
    }
}

/// Writer-side state, guarded by `Shared::writer`.
#[derive(Debug)]
pub(super) struct Writer {
    /// The newest state (published after every commit group).
    pub(super) state: Arc<State>,
    pub(super) wal: WalFile,
    /// End of the last valid record in `wal`.
    pub(super) wal_end: u64,
    pub(super) manifest: Manifest,
    /// Identity of the MANIFEST file we loaded (inode, length, mtime).
    pub(super) manifest_stamp: open::FileStamp,
    pub(super) poisoned: Option<String>,
    /// The last automatic checkpoint or compaction failure, kept for `stats`.
    pub(super) last_maintenance_error: Option<String>,
    /// False for read-only handles: files are opened read-only.
    pub(super) writable: bool,
}

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) dir: PathBuf,
    pub(super) options: Options,
    pub(super) db_id: u128,
    pub(super) published: Published<State>,
    pub(super) writer: Mutex<Writer>,
    pub(super) queue: commit::CommitQueue,
    pub(super) lock: Option<WriterLock>,
    pub(super) recovery: Mutex<RecoveryReport>,
    /// What the files looked like at the last publication (for cheap change checks).
    pub(super) probe: Mutex<Probe>,
    /// Held for the whole of a [`Database::checkpoint`], so that this process runs one
    /// at a time (the writer mutex is held only at its start and its end).
    pub(super) checkpointing: Mutex<()>,
    /// Held for the whole of a [`Database::index_vectors`] with the index lock file
    /// (`flock` excludes other handles; this, other threads on this one).
    pub(super) indexing: Mutex<()>,
}

impl Shared {
    /// The file system.
    pub(super) fn io(&self) -> &dyn Io {
        &*self.options.io
    }
}

#[derive(Debug)]
pub(super) struct Probe {
    pub(super) manifest_stamp: open::FileStamp,
    pub(super) wal_path: PathBuf,
    pub(super) wal_len_seen: u64,
}

/// An open database. Clone it freely: clones share one handle.
#[derive(Clone, Debug)]
pub struct Database {
    pub(super) shared: Arc<Shared>,
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
