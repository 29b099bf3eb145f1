//! Sequential file writes in aligned 2 MiB chunks, so a new segment lands in the page cache
//! as huge pages.
//!
//! A segment is read through a read-only mapping (see [`super::fs::map_readonly`]) at
//! random: key slots, CSR runs, postings. With 4 KiB pages every such read on a large file
//! is likely a TLB miss, which under virtualisation costs a two-level page walk. Linux maps
//! a file with 2 MiB page-table entries when the mapping is advised `MADV_HUGEPAGE` *and*
//! the page cache holds the file in 2 MiB folios. The kernel makes such folios when it
//! reads the file in for a mapping advised that way, and (on file systems with large
//! folios, e.g. ext4 from Linux 6.16) when a single `write` covers a whole aligned 2 MiB
//! range. Smaller writes leave the file in small folios until it is evicted. So the segment
//! writer goes through a [`ChunkWriter`]: every write it issues, except the last, is
//! exactly [`WRITE_CHUNK`] bytes at an offset that is a multiple of it. On other systems the
//! chunking costs one copy through a 2 MiB buffer and nothing else.

use std::io;

use super::io::IoFile;

/// Bytes of each write a [`ChunkWriter`] issues (the last may be shorter): the x86-64
/// huge-page size, and a multiple of the other platforms' page sizes.
pub const WRITE_CHUNK: usize = 2 << 20;

/// Adapts an [`IoFile`] to `std::io::Write`, writing sequentially from offset 0 in
/// [`WRITE_CHUNK`]-byte, [`WRITE_CHUNK`]-aligned writes. Call [`ChunkWriter::finish`] (or
/// `flush`) before syncing: buffered bytes are not in the file until then. A `flush` in
/// the middle writes a short piece; the writes after it end at chunk boundaries again.
pub struct ChunkWriter {
    file: Box<dyn IoFile>,
    /// Bytes written to the file so far.
    pos: u64,
    /// Bytes not yet written: they end at or before the next multiple of [`WRITE_CHUNK`].
    buf: Vec<u8>,
}

impl std::fmt::Debug for ChunkWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkWriter")
            .field("pos", &self.pos)
            .field("buffered", &self.buf.len())
            .finish_non_exhaustive()
    }
}

impl ChunkWriter {
    /// A writer at the start of `file`.
    pub fn new(file: Box<dyn IoFile>) -> ChunkWriter {
        ChunkWriter {
            file,
            pos: 0,
            buf: Vec::with_capacity(WRITE_CHUNK),
        }
    }

    /// Writes what is buffered and returns the file, for fsync.
    ///
    /// # Errors
    /// The write's.
    pub fn finish(mut self) -> io::Result<Box<dyn IoFile>> {
        self.write_buffered()?;
        Ok(self.file)
    }

    /// Bytes the buffer may still take before it reaches the next chunk boundary of the
    /// file (0: it ends there and is written out).
    fn room(&self) -> usize {
        // The remainder is below WRITE_CHUNK, so it fits a usize.
        let into_file = usize::try_from(self.pos % WRITE_CHUNK as u64).unwrap_or(0);
        let into_chunk = into_file + self.buf.len();
        WRITE_CHUNK - into_chunk
    }

    /// Writes the buffered bytes at `pos`.
    fn write_buffered(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.file.write_all_at(&self.buf, self.pos)?;
        self.pos += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }
}

impl io::Write for ChunkWriter {
    fn write(&mut self, mut bytes: &[u8]) -> io::Result<usize> {
        let taken = bytes.len();
        while !bytes.is_empty() {
            let n = self.room().min(bytes.len());
            let (now, rest) = bytes.split_at(n);
            self.buf.extend_from_slice(now);
            bytes = rest;
            if self.room() == 0 {
                // The buffer ends at a chunk boundary.
                self.write_buffered()?;
            }
        }
        Ok(taken)
    }

    /// Writes what is buffered (a short write unless it ends at a chunk boundary).
    fn flush(&mut self) -> io::Result<()> {
        self.write_buffered()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A positioned write: its offset and bytes.
    type Positioned = (u64, Vec<u8>);

    /// Records every positioned write.
    #[derive(Default, Clone, Debug)]
    struct Recorder(Arc<Mutex<Vec<Positioned>>>);

    impl IoFile for Recorder {
        fn read_exact_at(&self, _: &mut [u8], _: u64) -> io::Result<()> {
            Err(io::Error::other("not read"))
        }
        fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
            self.0
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?
                .push((offset, buf.to_vec()));
            Ok(())
        }
        fn sync_all(&self) -> io::Result<()> {
            Ok(())
        }
        fn sync_data(&self) -> io::Result<()> {
            Ok(())
        }
        fn set_len(&self, _: u64) -> io::Result<()> {
            Ok(())
        }
        fn file_len(&self) -> io::Result<u64> {
            Ok(0)
        }
        fn map_readonly(&self) -> io::Result<memmap2::Mmap> {
            Err(io::Error::other("not mapped"))
        }
        fn lock(&self) -> io::Result<()> {
            Ok(())
        }
        fn try_lock(&self) -> io::Result<bool> {
            Ok(true)
        }
        fn unlock(&self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn writes_whole_aligned_chunks_then_the_tail() {
        let rec = Recorder::default();
        let mut w = ChunkWriter::new(Box::new(rec.clone()));
        // Pieces of awkward sizes, one larger than a chunk.
        let mut expected = Vec::new();
        for (i, len) in [7usize, WRITE_CHUNK + 13, 100_000, 3, WRITE_CHUNK]
            .into_iter()
            .enumerate()
        {
            let piece: Vec<u8> = (0..len).map(|j| (i * 31 + j).to_le_bytes()[0]).collect();
            w.write_all(&piece).expect("write");
            expected.extend_from_slice(&piece);
        }
        w.finish().expect("finish");
        let writes = rec.0.lock().expect("lock").clone();
        let mut file = Vec::new();
        for (k, (offset, bytes)) in writes.iter().enumerate() {
            assert_eq!(*offset, file.len() as u64, "sequential");
            assert_eq!(*offset % WRITE_CHUNK as u64, 0, "aligned");
            if k + 1 < writes.len() {
                assert_eq!(bytes.len(), WRITE_CHUNK, "whole chunks but the last");
            }
            file.extend_from_slice(bytes);
        }
        assert_eq!(file, expected);
    }

    #[test]
    fn a_flush_in_the_middle_keeps_later_writes_on_chunk_boundaries() {
        let rec = Recorder::default();
        let mut w = ChunkWriter::new(Box::new(rec.clone()));
        let first = vec![1u8; 1000];
        let second = vec![2u8; 2 * WRITE_CHUNK + 5];
        w.write_all(&first).expect("write");
        w.flush().expect("flush");
        w.write_all(&second).expect("write");
        w.finish().expect("finish");
        let writes = rec.0.lock().expect("lock").clone();
        let shape: Vec<(u64, usize)> = writes.iter().map(|(o, b)| (*o, b.len())).collect();
        let chunk = WRITE_CHUNK as u64;
        assert_eq!(
            shape,
            vec![
                (0, 1000),
                (1000, WRITE_CHUNK - 1000),
                (chunk, WRITE_CHUNK),
                (2 * chunk, 1005),
            ]
        );
        let file: Vec<u8> = writes.into_iter().flat_map(|(_, b)| b).collect();
        assert_eq!(file, [first, second].concat());
    }
}
