//! The manifest: which segments and which WAL file make up the current database.
//!
//! ```text
//!   0  magic            [u8; 8]  "HOPGMAN\0"
//!   8  version          u32
//!  12  flags            u32      (0)
//!  16  db_id            u128
//!  32  generation       u64      +1 on every replacement
//!  40  wal_seq          u64      the live WAL file is wal-<wal_seq>.log
//!  48  checkpoint_lsn   u64      every commit <= this LSN is in the segments
//!  56  checkpoint_time  u64      ms since the Unix epoch (0 = never)
//!  64  next_segment_id  u64
//!  72  segment_count    u32
//!  76  segment_ids      [u64; segment_count], oldest first
//!   …  crc              u32      crc32 of every byte before it
//! ```
//! The file is replaced atomically (write `MANIFEST.tmp`, fsync, rename, fsync directory).

use super::FORMAT_VERSION;
use super::codec::{ByteReader, ByteWriter, DecodeError};
use crate::graph::Lsn;

/// Magic bytes of the manifest.
pub const MANIFEST_MAGIC: [u8; 8] = *b"HOPGMAN\0";
/// Most segments a manifest may list (compaction keeps far fewer).
pub const SEGMENTS_MAX: usize = 4096;

/// The decoded manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// Format version.
    pub version: u32,
    /// Database id.
    pub db_id: u128,
    /// Replacement counter.
    pub generation: u64,
    /// Live WAL file number.
    pub wal_seq: u64,
    /// Commits up to this LSN live in the segments.
    pub checkpoint_lsn: Lsn,
    /// Time of the last checkpoint (ms since the epoch; 0 = never).
    pub checkpoint_time_ms: u64,
    /// Id for the next segment file.
    pub next_segment_id: u64,
    /// Segment ids, oldest first.
    pub segments: Vec<u64>,
}

impl Manifest {
    /// Encodes the manifest with its trailing checksum.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = ByteWriter::new();
        w.raw(&MANIFEST_MAGIC);
        w.u32(self.version);
        w.u32(0);
        w.u128(self.db_id);
        w.u64(self.generation);
        w.u64(self.wal_seq);
        w.u64(self.checkpoint_lsn);
        w.u64(self.checkpoint_time_ms);
        w.u64(self.next_segment_id);
        w.u32(u32::try_from(self.segments.len()).unwrap_or(u32::MAX));
        for s in &self.segments {
            w.u64(*s);
        }
        let crc = crc32fast::hash(&w.buf);
        w.u32(crc);
        w.buf
    }

    /// Decodes and checks a manifest (magic, checksum, counts). The version is returned as
    /// found for the caller to compare with the supported range.
    pub fn decode(buf: &[u8]) -> Result<Manifest, DecodeError> {
        if buf.len() < 80 {
            return Err(DecodeError::new(
                0,
                format!("manifest is {} bytes, too short", buf.len()),
            ));
        }
        let body = &buf[..buf.len() - 4];
        let mut crc_bytes = [0u8; 4];
        crc_bytes.copy_from_slice(&buf[buf.len() - 4..]);
        let mut r = ByteReader::new(body);
        if r.take(8, "magic")? != MANIFEST_MAGIC {
            return Err(DecodeError::new(0, "not a hopgraph manifest (bad magic)"));
        }
        if u32::from_le_bytes(crc_bytes) != crc32fast::hash(body) {
            return Err(DecodeError::new(body.len(), "manifest checksum mismatch"));
        }
        let version = r.u32("version")?;
        let _flags = r.u32("flags")?;
        let db_id = r.u128("db id")?;
        let generation = r.u64("generation")?;
        let wal_seq = r.u64("wal seq")?;
        let checkpoint_lsn = r.u64("checkpoint lsn")?;
        let checkpoint_time_ms = r.u64("checkpoint time")?;
        let next_segment_id = r.u64("next segment id")?;
        let at = r.pos();
        let count = r.u32("segment count")? as usize;
        if count > SEGMENTS_MAX || count * 8 != r.remaining() {
            return Err(DecodeError::new(
                at,
                format!("segment count {count} does not match the file size"),
            ));
        }
        let mut segments = Vec::with_capacity(count);
        for _ in 0..count {
            segments.push(r.u64("segment id")?);
        }
        if segments.windows(2).any(|w| w[0] >= w[1])
            || segments.iter().any(|&s| s >= next_segment_id)
        {
            return Err(DecodeError::new(
                at,
                "segment ids are not increasing below next_segment_id",
            ));
        }
        Ok(Manifest {
            version,
            db_id,
            generation,
            wal_seq,
            checkpoint_lsn,
            checkpoint_time_ms,
            next_segment_id,
            segments,
        })
    }

    /// The manifest of a new, empty database.
    pub fn new(db_id: u128) -> Manifest {
        Manifest {
            version: FORMAT_VERSION,
            db_id,
            generation: 1,
            wal_seq: 1,
            checkpoint_lsn: 0,
            checkpoint_time_ms: 0,
            next_segment_id: 1,
            segments: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let mut m = Manifest::new(99);
        m.segments = vec![1, 4];
        m.next_segment_id = 5;
        let b = m.encode();
        assert_eq!(Manifest::decode(&b).unwrap(), m);
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x01;
            assert!(Manifest::decode(&c).is_err(), "flip at {i} passed");
        }
        for cut in 0..b.len() {
            assert!(Manifest::decode(&b[..cut]).is_err());
        }
    }
}
