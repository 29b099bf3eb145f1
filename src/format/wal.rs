//! WAL file layout: a fixed header followed by length-prefixed, checksummed records.
//!
//! ```text
//! header (56 bytes)
//!   0  magic      [u8; 8]  "HOPGWAL\0"
//!   8  version    u32
//!  12  flags      u32      (0)
//!  16  db_id      u128     the database this log belongs to
//!  32  wal_seq    u64      the file's number (wal-<seq>.log)
//!  40  start_lsn  u64      LSN of the first record in this file
//!  48  reserved   u32      (0)
//!  52  crc        u32      crc32 of bytes 0..52
//! record (16-byte frame + payload)
//!   0  len        u32      payload length (1..=WAL_RECORD_BYTES_MAX)
//!   4  crc        u32      crc32(db_id ‖ lsn ‖ len ‖ payload), all little-endian
//!   8  lsn        u64      must equal previous record's lsn + 1 (start_lsn for the first)
//!  16  payload    [u8; len]
//! ```
//! The crc covers the database id and the LSN, so zeroed bytes, a stale record left from
//! another file or a record of another database can never pass as the next valid record.

use super::FORMAT_VERSION;
use super::codec::{ByteReader, ByteWriter, DecodeError};
use crate::graph::{Lsn, limits};

/// Magic bytes at the start of every WAL file.
pub const WAL_MAGIC: [u8; 8] = *b"HOPGWAL\0";
/// Size of the WAL header.
pub const WAL_HEADER_LEN: usize = 56;
/// Size of a record frame before its payload.
pub const FRAME_LEN: usize = 16;

/// The decoded WAL header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalHeader {
    /// Format version.
    pub version: u32,
    /// Owning database.
    pub db_id: u128,
    /// File number.
    pub wal_seq: u64,
    /// LSN of the first record.
    pub start_lsn: Lsn,
}

impl WalHeader {
    /// Encodes the header (56 bytes).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = ByteWriter::new();
        w.raw(&WAL_MAGIC);
        w.u32(self.version);
        w.u32(0);
        w.u128(self.db_id);
        w.u64(self.wal_seq);
        w.u64(self.start_lsn);
        w.u32(0);
        let crc = crc32fast::hash(&w.buf);
        w.u32(crc);
        debug_assert_eq!(w.buf.len(), WAL_HEADER_LEN);
        w.buf
    }

    /// Decodes and checks a header. The version is returned as found; the caller compares
    /// it with the supported range so that it can report the file name.
    pub fn decode(buf: &[u8]) -> Result<WalHeader, DecodeError> {
        if buf.len() < WAL_HEADER_LEN {
            return Err(DecodeError::new(
                0,
                format!(
                    "WAL header needs {WAL_HEADER_LEN} bytes, file has {}",
                    buf.len()
                ),
            ));
        }
        let mut r = ByteReader::new(&buf[..WAL_HEADER_LEN]);
        if r.take(8, "magic")? != WAL_MAGIC {
            return Err(DecodeError::new(0, "not a hopgraph WAL file (bad magic)"));
        }
        let version = r.u32("version")?;
        let _flags = r.u32("flags")?;
        let db_id = r.u128("db id")?;
        let wal_seq = r.u64("wal seq")?;
        let start_lsn = r.u64("start lsn")?;
        let _reserved = r.u32("reserved")?;
        let crc = r.u32("header crc")?;
        if crc != crc32fast::hash(&buf[..52]) {
            return Err(DecodeError::new(52, "WAL header checksum mismatch"));
        }
        Ok(WalHeader {
            version,
            db_id,
            wal_seq,
            start_lsn,
        })
    }

    /// A header for a new file of the current format version.
    pub fn new(db_id: u128, wal_seq: u64, start_lsn: Lsn) -> WalHeader {
        WalHeader {
            version: FORMAT_VERSION,
            db_id,
            wal_seq,
            start_lsn,
        }
    }
}

fn record_crc(db_id: u128, lsn: Lsn, len: u32, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&db_id.to_le_bytes());
    h.update(&lsn.to_le_bytes());
    h.update(&len.to_le_bytes());
    h.update(payload);
    h.finalize()
}

/// Appends one framed record to `out`.
///
/// # Errors
/// `LimitExceeded` when the payload is larger than `WAL_RECORD_BYTES_MAX`; `Internal`
/// when it is empty (a commit always has an operation).
pub fn encode_record(
    out: &mut Vec<u8>,
    db_id: u128,
    lsn: Lsn,
    payload: &[u8],
) -> Result<(), crate::error::Error> {
    let too_large = || {
        crate::error::Error::limit(
            "WAL record bytes",
            payload.len() as u64,
            limits::WAL_RECORD_BYTES_MAX as u64,
        )
    };
    if payload.is_empty() {
        return Err(crate::error::Error::Internal("empty WAL record".into()));
    }
    if payload.len() > limits::WAL_RECORD_BYTES_MAX {
        return Err(too_large());
    }
    let len = u32::try_from(payload.len()).map_err(|_| too_large())?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&record_crc(db_id, lsn, len, payload).to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(payload);
    Ok(())
}

/// What is at a position of the log.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A valid record with the expected LSN; `len` is the whole frame length.
    Record {
        /// The record's LSN.
        lsn: Lsn,
        /// The payload.
        payload: &'a [u8],
        /// Frame plus payload length.
        len: usize,
    },
    /// Not a valid record (short, bad length, bad crc or unexpected LSN), with the reason.
    Invalid(String),
}

/// Decodes the record at the start of `buf`, expecting LSN `expected`.
pub fn decode_record(buf: &[u8], db_id: u128, expected: Lsn) -> Frame<'_> {
    if buf.len() < FRAME_LEN {
        return Frame::Invalid(format!(
            "{} bytes left, a record frame needs {FRAME_LEN}",
            buf.len()
        ));
    }
    let le32 = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let len = le32(&buf[0..4]);
    let crc = le32(&buf[4..8]);
    let mut lsn_bytes = [0u8; 8];
    lsn_bytes.copy_from_slice(&buf[8..16]);
    let lsn = u64::from_le_bytes(lsn_bytes);
    let n = len as usize;
    if n == 0 || n > limits::WAL_RECORD_BYTES_MAX {
        return Frame::Invalid(format!(
            "record length {n} is outside 1..={}",
            limits::WAL_RECORD_BYTES_MAX
        ));
    }
    if buf.len() - FRAME_LEN < n {
        return Frame::Invalid(format!("record of {n} bytes runs past the end of the file"));
    }
    let payload = &buf[FRAME_LEN..FRAME_LEN + n];
    if record_crc(db_id, lsn, len, payload) != crc {
        return Frame::Invalid("record checksum mismatch".into());
    }
    if lsn != expected {
        return Frame::Invalid(format!("record has LSN {lsn}, expected {expected}"));
    }
    Frame::Record {
        lsn,
        payload,
        len: FRAME_LEN + n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_checksum() {
        let h = WalHeader::new(0xabcdef, 3, 17);
        let mut b = h.encode();
        assert_eq!(WalHeader::decode(&b).unwrap(), h);
        b[20] ^= 1;
        assert!(WalHeader::decode(&b).is_err());
    }

    #[test]
    fn record_checks_lsn_db_and_bytes() {
        let mut b = Vec::new();
        encode_record(&mut b, 7, 5, b"hello").unwrap();
        assert!(matches!(
            decode_record(&b, 7, 5),
            Frame::Record {
                lsn: 5,
                len: 21,
                ..
            }
        ));
        assert!(matches!(decode_record(&b, 8, 5), Frame::Invalid(_)));
        assert!(matches!(decode_record(&b, 7, 6), Frame::Invalid(_)));
        assert!(matches!(decode_record(&[0u8; 64], 7, 5), Frame::Invalid(_)));
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x10;
            assert!(
                matches!(decode_record(&c, 7, 5), Frame::Invalid(_)),
                "flip at {i} passed"
            );
        }
    }
}
