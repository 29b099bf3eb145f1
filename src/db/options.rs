//! How a database is opened ([`Options`], [`Durability`]) and what a commit reports
//! ([`CommitInfo`]).

use std::sync::Arc;

use super::batch::OpResult;
use super::vector::HNSW_MIN_VECTORS;
use crate::storage::io::Io;

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
    /// [`Error::ReadOnly`](crate::Error::ReadOnly) and nothing on disk is created or changed.
    #[must_use]
    pub fn read_only(mut self, read_only: bool) -> Options {
        self.read_only = read_only;
        self
    }

    /// Checkpoint automatically once the WAL exceeds this many bytes (default 64 MiB).
    /// The automatic checkpoint runs on the committing thread with the writer lock held;
    /// a host that cannot have one commit wait for it sets this high (`u64::MAX`) and calls
    /// [`Database::checkpoint`](super::Database::checkpoint) from a thread of its own, which writes the segment without
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
