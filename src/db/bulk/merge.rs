//! A k-way merge of the sorted runs of one [`Runs`] file.
//!
//! Each run is read through a buffer of its own (the caller's memory share divided among
//! the runs), a few of its compressed blocks at a time, and a binary heap picks the least
//! head. Entries are distinct integers (each holds its input position), so the merged
//! order is the total order of all entries.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::spill::{Runs, decode_block};
use crate::error::{Error, Result};

/// A run being read.
struct Cursor {
    /// The run's next block to read, and its end (indices of `Runs::blocks`).
    next: usize,
    end: usize,
    /// Entries to decode per refill at most (at least one block is read).
    cap: usize,
    bytes: Vec<u8>,
    buf: Vec<u128>,
    at: usize,
}

/// The entries of every run of a [`Runs`] file, in order.
pub(super) struct Merge<'a> {
    runs: &'a Runs,
    cursors: Vec<Cursor>,
    heap: BinaryHeap<Reverse<(u128, usize)>>,
}

impl<'a> Merge<'a> {
    /// Starts the merge of `runs` (flushed), reading with about `memory` bytes of buffers
    /// in all (a block per run at least).
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn new(runs: &'a Runs, memory: usize) -> Result<Merge<'a>> {
        // An entry takes 16 bytes decoded and, as read, its block's bytes: 5 to 8 mostly.
        let per_run = memory / (16 + 8) / runs.runs.len().max(1);
        let mut merge = Merge {
            runs,
            cursors: Vec::with_capacity(runs.runs.len()),
            heap: BinaryHeap::with_capacity(runs.runs.len()),
        };
        for (i, blocks) in runs.runs.iter().enumerate() {
            let mut c = Cursor {
                next: blocks.start,
                end: blocks.end,
                cap: per_run,
                bytes: Vec::new(),
                buf: Vec::new(),
                at: 0,
            };
            if let Some(head) = advance(runs, &mut c)? {
                merge.heap.push(Reverse((head, i)));
            }
            merge.cursors.push(c);
        }
        Ok(merge)
    }

    /// The least entry not yet returned; None at the end.
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn next_entry(&mut self) -> Result<Option<u128>> {
        let Some(mut top) = self.heap.peek_mut() else {
            return Ok(None);
        };
        let Reverse((x, i)) = *top;
        let next = match self.cursors.get_mut(i) {
            Some(c) => advance(self.runs, c)?,
            None => None,
        };
        match next {
            Some(head) => *top = Reverse((head, i)),
            None => drop(std::collections::binary_heap::PeekMut::pop(top)),
        }
        Ok(Some(x))
    }
}

/// The next entry of the run `c` reads, refilling its buffer from the file when it is used
/// up.
fn advance(runs: &Runs, c: &mut Cursor) -> Result<Option<u128>> {
    if c.at == c.buf.len() {
        if c.next >= c.end {
            c.buf = Vec::new();
            c.bytes = Vec::new();
            return Ok(None);
        }
        // Whole blocks, as many as the share holds (one at least), in one read.
        let blocks = runs.blocks.get(c.next..c.end).unwrap_or_default();
        let mut n = 0usize;
        let mut entries = 0usize;
        for b in blocks {
            if n > 0 && entries + b.entries as usize > c.cap {
                break;
            }
            entries += b.entries as usize;
            n += 1;
        }
        let read = &blocks[..n];
        let (Some(first), Some(last)) = (read.first(), read.last()) else {
            return Ok(None);
        };
        let len = last.at + u64::from(last.bytes) - first.at;
        c.bytes
            .resize(usize::try_from(len).unwrap_or(usize::MAX), 0);
        let file = &runs.file;
        file.read_values(first.at, &mut c.bytes)
            .map_err(|e| Error::io(file.path(), e))?;
        c.buf.clear();
        for b in read {
            let from = usize::try_from(b.at - first.at).unwrap_or(usize::MAX);
            let to = from.saturating_add(b.bytes as usize);
            let bytes = c.bytes.get(from..to).unwrap_or_default();
            decode_block(bytes, b.entries as usize, &mut c.buf)?;
        }
        c.next += n;
        c.at = 0;
    }
    let x = c.buf.get(c.at).copied();
    c.at += 1;
    Ok(x)
}
