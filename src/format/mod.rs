//! Pure bytes ↔ values: record framing, segment layout, manifest, checksums.
//!
//! Nothing here does I/O or takes locks, so every decoder can be fuzzed and property-tested
//! on plain byte vectors. Decoders never panic and check every length before allocating.

pub mod codec;
pub mod manifest;
pub mod record;
pub mod segment;
pub mod wal;

/// The on-disk format version written by this build.
pub const FORMAT_VERSION: u32 = 1;
/// The oldest format version this build reads.
pub const FORMAT_VERSION_MIN: u32 = 1;
