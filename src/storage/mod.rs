//! The only layer that touches `std::fs` and memmap2.
//!
//! - [`fs`]: atomic file replacement, directory fsync and the `unsafe` mmap call.
//! - [`wal`]: appending to and scanning a write-ahead log file.
//! - [`segment_file`]: writing a segment file and mapping it read-only.
//! - [`lock`]: the inter-process writer lock.

pub mod fs;
pub mod lock;
pub mod segment_file;
pub mod wal;

/// File name of the manifest.
pub const MANIFEST_FILE: &str = "MANIFEST";
/// File name of the writer lock.
pub const LOCK_FILE: &str = "LOCK";

/// File name of WAL number `seq`.
pub fn wal_file_name(seq: u64) -> String {
    format!("wal-{seq:06}.log")
}

/// File name of segment `id`.
pub fn segment_file_name(id: u64) -> String {
    format!("seg-{id:06}.hgs")
}
