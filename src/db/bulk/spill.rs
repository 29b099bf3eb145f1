//! The scratch files of an out-of-core bulk load and their removal.
//!
//! Every file is `bulk-<segment id>-<name>.tmp` in the database's directory (the input
//! file of a load spilled while added, `bulk-input-<random>.tmp`, is `added`'s): on the same
//! file system as the segment, and a name that `collect_garbage` removes on the next
//! writable open, so a crash leaves nothing for long. [`Spill`] removes every file it made
//! when it is dropped: after the load succeeds, and when it fails or panics. The files are
//! never fsynced: nothing needs them after the load, and a crash makes them garbage.
//!
//! [`Runs`] is one file of sorted runs of packed entries (see `external`), written run after
//! run in compressed blocks and read back through a [`Merge`](super::merge::Merge).

use std::path::PathBuf;

use crate::db::build::SpillFile;
use crate::error::{Error, Result};
use crate::storage::io::Io;

/// The scratch files of one bulk load; removes them when dropped.
pub(super) struct Spill<'a> {
    io: &'a dyn Io,
    dir: &'a std::path::Path,
    prefix: String,
    made: Vec<PathBuf>,
}

impl<'a> Spill<'a> {
    /// Scratch files in `dir` for the load that writes segment `segment`.
    pub fn new(io: &'a dyn Io, dir: &'a std::path::Path, segment: u64) -> Spill<'a> {
        Spill {
            io,
            dir,
            prefix: format!("bulk-{segment}-"),
            made: Vec::new(),
        }
    }

    /// Creates scratch file `name` with a write buffer of `buffer` bytes. A file of that
    /// name is a crashed load's leftover (the caller holds the writer lock) and is replaced.
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn file(&mut self, name: &str, buffer: usize) -> Result<SpillFile> {
        let path = self.dir.join(format!("{}{name}.tmp", self.prefix));
        match self.io.remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io(&path, e));
            }
            _ => {}
        }
        self.made.push(path.clone());
        SpillFile::create(self.io, &path, buffer)
    }

    /// Closes and removes `file` now (its disk space is free for the next phase).
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn remove(&mut self, file: SpillFile) -> Result<()> {
        let path = file.path().to_path_buf();
        drop(file);
        self.io
            .remove_file(&path)
            .map_err(|e| Error::io(&path, e))?;
        // Forgotten only once gone: a failed unlink is tried again on drop.
        self.made.retain(|p| *p != path);
        Ok(())
    }
}

impl Drop for Spill<'_> {
    fn drop(&mut self) {
        for path in self.made.drain(..) {
            // Best effort: what remains is removed by the next writable open.
            let _ = self.io.remove_file(&path);
        }
    }
}

/// Entries per block of a run at most.
const BLOCK_ENTRIES: usize = 4096;

/// One block of a run in a [`Runs`] file.
#[derive(Clone, Copy, Debug)]
pub(super) struct Block {
    /// Its first byte in the file, and its length in bytes.
    pub at: u64,
    pub bytes: u32,
    /// Entries it holds (1 to [`BLOCK_ENTRIES`]).
    pub entries: u32,
}

/// Sorted runs of packed entries back to back in one scratch file, in compressed blocks
/// (see [`encode_block`]; about 5 to 7 bytes per entry instead of 16).
#[derive(Debug)]
pub(super) struct Runs {
    pub file: SpillFile,
    /// Every block of every run, in file order.
    pub blocks: Vec<Block>,
    /// Each run's blocks, as a range of `blocks`.
    pub runs: Vec<std::ops::Range<usize>>,
    /// The block being encoded.
    buf: Vec<u8>,
}

impl Runs {
    /// Runs in `file`.
    pub fn new(file: SpillFile) -> Runs {
        Runs {
            file,
            blocks: Vec::new(),
            runs: Vec::new(),
            buf: Vec::new(),
        }
    }

    /// Appends the sorted run `entries` (nothing for none).
    ///
    /// # Errors
    /// I/O errors with the path; `InvalidArgument` when `entries` is not strictly
    /// ascending.
    pub fn push(&mut self, entries: &[u128]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let first = self.blocks.len();
        for block in entries.chunks(BLOCK_ENTRIES) {
            self.buf.clear();
            encode_block(block, &mut self.buf)?;
            let at = self.file.len();
            self.file.append(&self.buf)?;
            self.blocks.push(Block {
                at,
                // A block holds at most BLOCK_ENTRIES entries of at most 30 bytes each.
                bytes: u32::try_from(self.buf.len()).unwrap_or(u32::MAX),
                entries: u32::try_from(block.len()).unwrap_or(u32::MAX),
            });
        }
        self.runs.push(first..self.blocks.len());
        Ok(())
    }
}

/// Appends `v` in its low `bits` bits to the bit stream `(acc, n)` in `out`.
fn put_bits(out: &mut Vec<u8>, acc: &mut u64, n: &mut u32, v: u32, bits: u32) {
    *acc |= u64::from(v) << *n;
    *n += bits;
    while *n >= 8 {
        out.push(acc.to_le_bytes()[0]);
        *acc >>= 8;
        *n -= 8;
    }
}

/// Encodes the strictly ascending packed entries `block` (see `external::pack`: owner,
/// type, neighbor, position) into `out`:
///
/// - the least position `p0` (u32, little-endian) and the bit width `w` (u8) of the
///   largest `position - p0`; then every entry's `position - p0` in `w` bits, packed
///   from the low bits of each byte up, padded to a byte;
/// - then per entry one varint `v` whose low two bits say what changed from the previous
///   entry (the first compares with all zeros): `0`: owner and type the same, `v >> 2` is
///   the neighbor's increase; `1`: the owner the same, `v >> 2` is the type, and a varint
///   neighbor follows; `2`: `v >> 2` is the owner's increase, and varints of type and
///   neighbor follow.
///
/// # Errors
/// `InvalidArgument` when `block` is not strictly ascending.
pub(super) fn encode_block(block: &[u128], out: &mut Vec<u8>) -> Result<()> {
    use crate::format::text::put_varint;
    let fields = |x: u128| super::external::unpack(x);
    let p0 = block.iter().map(|&x| fields(x).3).min().unwrap_or(0);
    let span = block.iter().map(|&x| fields(x).3 - p0).max().unwrap_or(0);
    let w = u32::BITS - span.leading_zeros();
    out.extend_from_slice(&p0.to_le_bytes());
    out.push(u8::try_from(w).unwrap_or(32));
    let (mut acc, mut n) = (0u64, 0u32);
    for &x in block {
        put_bits(out, &mut acc, &mut n, fields(x).3 - p0, w);
    }
    if n > 0 {
        out.push(acc.to_le_bytes()[0]);
    }
    let mut prev = (0u32, 0u16, 0u32);
    let mut last = None;
    for &x in block {
        if last.is_some_and(|l| l >= x) {
            return Err(Error::invalid("a scratch run is not sorted"));
        }
        last = Some(x);
        let (own, t, other, _) = fields(x);
        if own != prev.0 {
            put_varint(out, u64::from(own - prev.0) << 2 | 2);
            put_varint(out, u64::from(t));
            put_varint(out, u64::from(other));
        } else if t != prev.1 {
            put_varint(out, u64::from(t) << 2 | 1);
            put_varint(out, u64::from(other));
        } else {
            put_varint(out, u64::from(other - prev.2) << 2);
        }
        prev = (own, t, other);
    }
    Ok(())
}

/// Decodes a block of `entries` entries written by [`encode_block`], appending them to
/// `out`.
///
/// # Errors
/// `InvalidArgument` for bytes that are no such block (a damaged scratch file).
pub(super) fn decode_block(bytes: &[u8], entries: usize, out: &mut Vec<u128>) -> Result<()> {
    decode(bytes, entries, out).ok_or_else(|| {
        Error::invalid(
            "a scratch file of the bulk load is damaged (was it changed during the load?); \
             run the load again",
        )
    })
}

fn decode(bytes: &[u8], entries: usize, out: &mut Vec<u128>) -> Option<()> {
    use crate::format::text::get_varint;
    let p0 = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
    let w = u32::from(*bytes.get(4)?);
    if w > 32 {
        return None;
    }
    let packed = (entries * w as usize).div_ceil(8);
    let bits = bytes.get(5..5 + packed)?;
    let mut at = 5 + packed;
    let start = out.len();
    let mask = if w == 32 {
        u64::from(u32::MAX)
    } else {
        (1u64 << w) - 1
    };
    let (mut acc, mut n, mut next) = (0u64, 0u32, 0usize);
    for _ in 0..entries {
        while n < w {
            acc |= u64::from(*bits.get(next)?) << n;
            next += 1;
            n += 8;
        }
        let p = u32::try_from(acc & mask).ok()?.checked_add(p0)?;
        acc >>= w;
        n -= w;
        out.push(u128::from(p));
    }
    let mut prev = (0u32, 0u16, 0u32);
    for x in &mut out[start..] {
        let v = get_varint(bytes, &mut at).ok()?;
        let small = |v: u64| u32::try_from(v).ok();
        prev = match v & 3 {
            0 => (prev.0, prev.1, prev.2.checked_add(small(v >> 2)?)?),
            1 => {
                let t = u16::try_from(v >> 2).ok()?;
                (prev.0, t, small(get_varint(bytes, &mut at).ok()?)?)
            }
            2 => {
                let own = prev.0.checked_add(small(v >> 2)?)?;
                let t = u16::try_from(get_varint(bytes, &mut at).ok()?).ok()?;
                (own, t, small(get_varint(bytes, &mut at).ok()?)?)
            }
            _ => return None,
        };
        // `x` holds the position (below 2^32) so far.
        let pos = u32::try_from(*x).ok()?;
        *x = super::external::pack(prev.0, prev.1, prev.2, pos);
    }
    (at == bytes.len()).then_some(())
}

#[cfg(test)]
mod tests {
    use super::super::external::pack;
    use super::*;

    fn xorshift(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut x = seed;
        move |n| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        }
    }

    #[test]
    fn blocks_decode_to_the_entries_encoded_and_damage_is_an_error() {
        let mut next = xorshift(3);
        // Hubs and leaves, extreme field values, one block full and one partial.
        let mut entries: Vec<u128> = (0..6000u32)
            .map(|i| {
                let own = if i % 3 == 0 {
                    u32::MAX
                } else {
                    u32::try_from(next(2000)).unwrap()
                };
                let t = u16::try_from(next(4)).unwrap() * 16383;
                let other = u32::try_from(next(1 << 32)).unwrap();
                pack(own, t, other, i * 700_000)
            })
            .collect();
        entries.sort_unstable();
        for block in entries.chunks(BLOCK_ENTRIES) {
            let mut bytes = Vec::new();
            encode_block(block, &mut bytes).unwrap();
            let mut back = Vec::new();
            decode_block(&bytes, block.len(), &mut back).unwrap();
            assert_eq!(back, block);
            for cut in [0, 3, 5, bytes.len() / 2, bytes.len() - 1] {
                let mut out = Vec::new();
                assert!(decode_block(&bytes[..cut], block.len(), &mut out).is_err());
            }
            let mut out = Vec::new();
            assert!(decode_block(&bytes, block.len() + 1, &mut out).is_err());
        }
        let mut bytes = Vec::new();
        let unsorted = [entries[1], entries[0]];
        assert!(encode_block(&unsorted, &mut bytes).is_err());
    }

    #[test]
    fn a_graph_like_run_takes_under_seven_bytes_per_entry() {
        // 100,000 edges over 20,000 nodes, hubs first, positions of a 2^20-entry input.
        let mut next = xorshift(11);
        let mut entries: Vec<u128> = (0..100_000u32)
            .map(|i| {
                let own = u32::try_from(next(20_000) * next(20_000) / 20_000).unwrap();
                let other = u32::try_from(next(20_000)).unwrap();
                pack(own, u16::try_from(next(4)).unwrap(), other, i * 10 + 3)
            })
            .collect();
        entries.sort_unstable();
        let mut bytes = 0;
        for block in entries.chunks(BLOCK_ENTRIES) {
            let mut buf = Vec::new();
            encode_block(block, &mut buf).unwrap();
            bytes += buf.len();
        }
        assert!(bytes < 7 * entries.len(), "{bytes} bytes");
    }
}
