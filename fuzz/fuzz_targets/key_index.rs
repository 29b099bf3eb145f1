//! The segment key index (`format::segment::KeySlotTable`, the version 6 `KeyHash`
//! section) on built and damaged tables: never panics, never loops, and a table the
//! builder wrote finds every key it holds.
//!
//! The input is split at 0xFF bytes into keys (the first 256 distinct ones are kept). A
//! table is built from them with a `NodeBlob` of length-prefixed keys, and every key must
//! come back with its node id while an absent key must not; then the input's bytes are
//! XORed over the table and the blob (a corrupted file read without its checksum check)
//! and every look-up must still return without panicking. Last, the raw input itself is
//! read as a table.
#![no_main]

use hopgraph::format::segment::{KeyQuery, KeySlotTable, build_key_slots};
use libfuzzer_sys::fuzz_target;

fn find(table: &KeySlotTable<'_>, key: &[u8]) -> Option<u32> {
    let q = KeyQuery::new(key);
    table.find(&q, table.home(&q))
}

fuzz_target!(|data: &[u8]| {
    let mut keys: Vec<&[u8]> = Vec::new();
    for k in data.split(|&b| b == 0xFF) {
        if keys.len() < 256 && !keys.contains(&k) {
            keys.push(k);
        }
    }
    // The record blob: each key as u32 length + bytes, at the offsets the slots name.
    let mut blob = Vec::new();
    let mut offsets = Vec::new();
    for k in &keys {
        offsets.push(blob.len() as u64);
        blob.extend_from_slice(&(k.len() as u32).to_le_bytes());
        blob.extend_from_slice(k);
    }
    let ids: Vec<u32> = (0..keys.len() as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let built = build_key_slots(
        keys.iter()
            .zip(&ids)
            .zip(&offsets)
            .map(|((k, id), off)| (*k, *id, *off)),
    )
    .expect("offsets are small");
    if let Some(table) = KeySlotTable::new(&built, &blob) {
        for (k, id) in keys.iter().zip(&ids) {
            assert_eq!(find(&table, k), Some(*id), "a built table finds its keys");
        }
        let absent: Vec<u8> = data.iter().map(|b| b ^ 0x5A).chain([0xFE, 0xFE]).collect();
        if !keys.contains(&absent.as_slice()) {
            assert_eq!(find(&table, &absent), None, "an absent key is not found");
        }
    }
    // Damaged: the input XORed over the table and the blob, cyclically.
    if !data.is_empty() {
        let mut table_bytes = built.clone();
        let mut blob_bytes = blob.clone();
        for (i, b) in table_bytes.iter_mut().enumerate() {
            *b ^= data[i % data.len()].rotate_left(i as u32 % 8);
        }
        for (i, b) in blob_bytes.iter_mut().enumerate() {
            *b ^= data[(i * 7) % data.len()];
        }
        for (t, bl) in [(&table_bytes, &blob), (&built, &blob_bytes), (&table_bytes, &blob_bytes)] {
            if let Some(table) = KeySlotTable::new(t, bl) {
                for k in &keys {
                    let _ = find(&table, k);
                }
            }
        }
    }
    // The raw input as a table (whole 16-byte slots only) over itself as the blob.
    let whole = data.len() / 16 * 16;
    if let Some(table) = KeySlotTable::new(&data[..whole], data) {
        for k in keys.iter().take(16) {
            let _ = find(&table, k);
        }
    }
});
