//! WAL framing: the header decoder and a scan of records over arbitrary bytes.
//!
//! The whole input is decoded as a header. Independently, its first 16 bytes choose the
//! database id and the next 8 the first LSN the records are checked against (so the fuzzer
//! can learn valid checksums), and the rest is walked as a run of records the way
//! `storage::wal::WalFile::scan` walks them.
#![no_main]

use hopgraph::format::wal::{FRAME_LEN, Frame, WalHeader, decode_record};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = WalHeader::decode(data);
    let Some((id, rest)) = data.split_first_chunk::<16>() else {
        return;
    };
    let Some((start, rest)) = rest.split_first_chunk::<8>() else {
        return;
    };
    let db_id = u128::from_le_bytes(*id);
    let mut lsn = u64::from_le_bytes(*start);
    let mut pos = 0usize;
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
                lsn = lsn.wrapping_add(1);
            }
            Frame::Invalid(_) => break,
        }
    }
});
