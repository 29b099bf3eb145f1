//! WAL framing: the header decoder and a scan of records over arbitrary bytes.
//!
//! The first 16 bytes choose the database id the records are checked against (so the
//! fuzzer can learn valid checksums); the rest is decoded as a header and, independently,
//! as a run of records the way `storage::wal::WalFile::scan` walks them.
#![no_main]

use hopgraph::format::wal::{FRAME_LEN, Frame, WalHeader, decode_record};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = WalHeader::decode(data);
    let (db_id, rest) = match data.split_first_chunk::<16>() {
        Some((id, rest)) => (u128::from_le_bytes(*id), rest),
        None => (0, data),
    };
    let mut pos = 0usize;
    let mut lsn = 1u64;
    while pos < rest.len() {
        match decode_record(&rest[pos..], db_id, lsn) {
            Frame::Record {
                lsn: got,
                payload,
                len,
            } => {
                assert_eq!(got, lsn);
                assert_eq!(len, FRAME_LEN + payload.len());
                assert!(len <= rest.len() - pos);
                // A valid frame's payload must decode or fail cleanly.
                let _ = hopgraph::format::record::decode_commit(payload);
                pos += len;
                lsn += 1;
            }
            Frame::Invalid(_) => break,
        }
    }
});
