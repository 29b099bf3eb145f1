//! A k-way merge of the sorted runs of one [`Runs`] file.
//!
//! Each run is read through a buffer of its own (the caller's memory share divided among
//! the runs) and a binary heap picks the least head. Entries are distinct integers (each
//! holds its input position), so the merged order is the total order of all entries.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::spill::Runs;
use crate::error::{Error, Result};

/// Entries read per run at least, however small the memory share.
const READ_MIN: usize = 16;

/// A run being read.
struct Cursor {
    /// The next entry to read from the file, and the run's end.
    next: u64,
    end: u64,
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
    /// Starts the merge of `runs` (flushed), reading with `memory` bytes of buffers in all.
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn new(runs: &'a Runs, memory: usize) -> Result<Merge<'a>> {
        let per_run = (memory / 16 / runs.runs.len().max(1)).max(READ_MIN);
        let mut merge = Merge {
            runs,
            cursors: Vec::with_capacity(runs.runs.len()),
            heap: BinaryHeap::with_capacity(runs.runs.len()),
        };
        for (i, &(first, len)) in runs.runs.iter().enumerate() {
            let cap = usize::try_from(len).unwrap_or(usize::MAX).min(per_run);
            merge.cursors.push(Cursor {
                next: first,
                end: first + len,
                buf: Vec::with_capacity(cap),
                at: 0,
            });
            if let Some(head) = merge.advance(i)? {
                merge.heap.push(Reverse((head, i)));
            }
        }
        Ok(merge)
    }

    /// The next entry of run `i`, refilling its buffer from the file when it is used up.
    fn advance(&mut self, i: usize) -> Result<Option<u128>> {
        let Some(c) = self.cursors.get_mut(i) else {
            return Ok(None);
        };
        if c.at == c.buf.len() {
            if c.next == c.end {
                c.buf = Vec::new();
                return Ok(None);
            }
            let n = usize::try_from(c.end - c.next)
                .unwrap_or(usize::MAX)
                .min(c.buf.capacity().max(1));
            c.buf.resize(n, 0);
            let file = &self.runs.file;
            file.read_values(c.next, &mut c.buf)
                .map_err(|e| Error::io(file.path(), e))?;
            c.next += n as u64;
            c.at = 0;
        }
        let x = c.buf.get(c.at).copied();
        c.at += 1;
        Ok(x)
    }

    /// The least entry not yet returned; None at the end.
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn next_entry(&mut self) -> Result<Option<u128>> {
        let Some(Reverse((x, i))) = self.heap.pop() else {
            return Ok(None);
        };
        if let Some(head) = self.advance(i)? {
            self.heap.push(Reverse((head, i)));
        }
        Ok(Some(x))
    }
}
