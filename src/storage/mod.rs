//! The only layer that touches the file system, and only through [`io::Io`].
//!
//! - [`io`]: the narrow file-system interface ([`io::Io`], [`io::IoFile`]), the real
//!   implementation and the `unsafe` mmap call.
//! - [`chunk_writer`]: sequential writes in aligned 2 MiB chunks (segments land in the
//!   page cache as huge pages).
//! - [`fault`]: a test implementation that injects I/O errors and simulates power loss.
//! - [`fs`]: atomic file replacement, directory fsync, durable directory creation.
//! - [`wal`]: appending to and scanning a write-ahead log file.
//! - [`segment_file`]: writing a segment file and mapping it read-only.
//! - [`lock`]: the inter-process writer lock.

pub mod chunk_writer;
#[cfg(any(test, feature = "internals"))]
pub mod fault;
pub mod fs;
pub mod io;
pub mod lock;
pub mod segment_file;
pub mod wal;

/// File name of the manifest.
pub const MANIFEST_FILE: &str = "MANIFEST";
/// File name of the writer lock.
pub const LOCK_FILE: &str = "LOCK";
/// File name of the lock held while a process builds vector graphs
/// ([`Database::index_vectors`](crate::Database::index_vectors)).
pub const INDEX_LOCK_FILE: &str = "INDEX.LOCK";

/// File name of WAL number `seq`.
pub fn wal_file_name(seq: u64) -> String {
    format!("wal-{seq:06}.log")
}

/// File name of segment `id`.
pub fn segment_file_name(id: u64) -> String {
    format!("seg-{id:06}.hgs")
}
