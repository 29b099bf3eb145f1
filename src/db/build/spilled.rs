//! Edge directions kept in spill files rather than memory: what an out-of-core bulk load
//! (see `bulk/external.rs`) hands the segment writer.
//!
//! A [`SpillFile`] is a scratch file in the database's directory, written through the
//! engine's [`Io`] with a bounded buffer and read back in bounded chunks; it is never
//! fsynced (a crash loses nothing of value: the load had not committed, and the next open
//! removes the file, whose name ends in `.tmp`). A [`SpilledDirection`] is one CSR
//! direction as three such column files plus its offsets in memory (four bytes per node).
//! [`SpilledEdges::write_out`] and [`SpilledEdges::write_in`] stream them into the
//! segment's sections, byte for byte what the in-memory writer produces from a [`Csr`].
//!
//! [`Csr`]: super::Csr

use std::io;
use std::path::{Path, PathBuf};

use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::format::segment::{SectionKind as K, SegmentEncoder};
use crate::storage::io::{Io, IoFile, OpenMode};

/// A scratch file written front to back through a buffer, then read at random.
pub(crate) struct SpillFile {
    path: PathBuf,
    file: Box<dyn IoFile>,
    /// Bytes in the file (the buffer's not included).
    written: u64,
    buf: Vec<u8>,
    /// The buffer is written out when it holds this many bytes.
    cap: usize,
}

impl std::fmt::Debug for SpillFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpillFile")
            .field("path", &self.path)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl SpillFile {
    /// Creates `path` (which must not exist) with a write buffer of `buffer` bytes.
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn create(io: &dyn Io, path: &Path, buffer: usize) -> Result<SpillFile> {
        let file = io
            .open(path, OpenMode::CreateNew)
            .map_err(|e| Error::io(path, e))?;
        Ok(SpillFile {
            path: path.to_path_buf(),
            file,
            written: 0,
            buf: Vec::new(),
            cap: buffer.max(64),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes appended so far.
    pub fn len(&self) -> u64 {
        self.written + self.buf.len() as u64
    }

    /// Appends `bytes`.
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn append(&mut self, bytes: &[u8]) -> Result<()> {
        if self.buf.len() + bytes.len() > self.cap {
            self.flush()?;
        }
        if bytes.len() >= self.cap {
            return self.write_direct(bytes);
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(self.cap);
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// Appends `values` in the platform's byte order (the segment format's).
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn append_values<T: bytemuck::Pod>(&mut self, values: &[T]) -> Result<()> {
        self.append(bytemuck::cast_slice(values))
    }

    fn write_direct(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all_at(bytes, self.written)
            .map_err(|e| Error::io(&self.path, e))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Writes the buffer out and frees it: the file is complete (more may be appended).
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn flush(&mut self) -> Result<()> {
        let buf = std::mem::take(&mut self.buf);
        if !buf.is_empty() {
            self.write_direct(&buf)?;
        }
        Ok(())
    }

    /// Fills `out` with the values from value number `first` on (call after `flush`).
    ///
    /// # Errors
    /// I/O errors, e.g. when the file ends first.
    pub fn read_values<T: bytemuck::Pod>(&self, first: u64, out: &mut [T]) -> io::Result<()> {
        let size = std::mem::size_of::<T>() as u64;
        self.file
            .read_exact_at(bytemuck::cast_slice_mut(out), first * size)
    }

    /// Overwrites values from value number `first` on with `values` (call after `flush`).
    ///
    /// # Errors
    /// I/O errors.
    pub fn write_values<T: bytemuck::Pod>(&self, first: u64, values: &[T]) -> io::Result<()> {
        let size = std::mem::size_of::<T>() as u64;
        self.file
            .write_all_at(bytemuck::cast_slice(values), first * size)
    }

    /// Calls `f` with the file's values front to back, at most `chunk` values at a time.
    ///
    /// # Errors
    /// I/O errors, and `f`'s.
    pub fn for_each_chunk<T: bytemuck::Pod>(
        &self,
        chunk: usize,
        mut f: impl FnMut(&[T]) -> io::Result<()>,
    ) -> io::Result<()> {
        let size = std::mem::size_of::<T>() as u64;
        let total = self.written / size;
        let mut buf = vec![T::zeroed(); chunk.max(1).min(usize::try_from(total).unwrap_or(0))];
        let mut at = 0u64;
        while at < total {
            let n = buf
                .len()
                .min(usize::try_from(total - at).unwrap_or(usize::MAX));
            self.read_values(at, &mut buf[..n])?;
            f(&buf[..n])?;
            at += n as u64;
        }
        Ok(())
    }
}

/// One CSR direction in spill files: node `n`'s entries are `offsets[n]..offsets[n + 1]`
/// of the three column files, as in [`Csr`](super::Csr).
#[derive(Debug)]
pub(crate) struct SpilledDirection {
    pub offsets: Vec<u32>,
    /// `u32` per entry.
    pub neighbors: SpillFile,
    /// `u16` per entry.
    pub types: SpillFile,
    /// `u32` per entry: the entry's row.
    pub pos: SpillFile,
}

impl SpilledDirection {
    /// Entries.
    pub fn len(&self) -> u64 {
        self.offsets.last().copied().map_or(0, u64::from)
    }

    /// Closes the direction's files and removes them through `io`.
    ///
    /// # Errors
    /// I/O errors.
    fn remove(self, io: &dyn Io) -> io::Result<()> {
        for file in [self.neighbors, self.types, self.pos] {
            let path = file.path.clone();
            drop(file);
            io.remove_file(&path)?;
        }
        Ok(())
    }

    /// Writes the four sections of the direction: offsets, neighbors, types, rows.
    fn write<W: io::Write>(
        &self,
        enc: &mut SegmentEncoder<W>,
        kinds: [K; 4],
        chunk: usize,
    ) -> io::Result<()> {
        enc.array(kinds[0], &self.offsets)?;
        stream::<u32, W>(enc, kinds[1], &self.neighbors, chunk)?;
        stream::<u16, W>(enc, kinds[2], &self.types, chunk)?;
        stream::<u32, W>(enc, kinds[3], &self.pos, chunk)
    }
}

/// Writes the values of `file` as section `kind`, `chunk` values at a time.
fn stream<T: bytemuck::Pod, W: io::Write>(
    enc: &mut SegmentEncoder<W>,
    kind: K,
    file: &SpillFile,
    chunk: usize,
) -> io::Result<()> {
    enc.section_from(kind, |sink| {
        file.for_each_chunk::<T>(chunk, |values| sink(bytemuck::cast_slice(values)))
    })
}

/// Both directions of a segment's edges in spill files, with their per-type node bitmaps.
#[derive(Debug)]
pub(crate) struct SpilledEdges {
    pub out: SpilledDirection,
    pub inn: SpilledDirection,
    /// The per-(direction, type) node bitmaps, out-direction first (see `type_bitmaps`).
    pub bitmaps: Vec<(u8, u16, RoaringBitmap)>,
    /// Bytes a buffer of the writer may take: a read chunk, and one pass's share of the
    /// inverse permutation `EdgeOutPos`.
    pub buffer: usize,
}

impl SpilledEdges {
    /// Rows.
    pub fn len(&self) -> u64 {
        self.out.len()
    }

    /// Values per read chunk.
    fn chunk<T>(&self) -> usize {
        (self.buffer / std::mem::size_of::<T>()).max(1)
    }

    /// Writes the out-direction's sections and `EdgeOutPos`, calling `wrote` after each
    /// step as the in-memory writer does.
    fn write_out<W: io::Write>(
        &self,
        enc: &mut SegmentEncoder<W>,
        wrote: &dyn Fn(),
    ) -> io::Result<()> {
        let chunk = self.chunk::<u32>();
        enc.array(K::OutOffsets, &self.out.offsets)?;
        stream::<u32, W>(enc, K::OutNeighbors, &self.out.neighbors, chunk)?;
        wrote();
        stream::<u16, W>(enc, K::OutTypes, &self.out.types, chunk)?;
        stream::<u32, W>(enc, K::OutEdgePos, &self.out.pos, chunk)?;
        wrote();
        self.write_edge_out_pos(enc)?;
        wrote();
        Ok(())
    }

    /// Writes both directions' sections and `EdgeOutPos` (see [`SpilledEdges::write_out`]),
    /// calling `wrote` after each step as the in-memory writer does. Each direction's
    /// files are removed through `io` as soon as they are written, so that the segment
    /// and all of the scratch files never take disk space together.
    ///
    /// # Errors
    /// I/O errors.
    pub fn write_and_remove<W: io::Write>(
        self,
        enc: &mut SegmentEncoder<W>,
        io: &dyn Io,
        wrote: &dyn Fn(),
    ) -> io::Result<()> {
        self.write_out(enc, wrote)?;
        let chunk = self.chunk::<u32>();
        let SpilledEdges { out, inn, .. } = self;
        out.remove(io)?;
        wrote();
        let kinds = [K::InOffsets, K::InNeighbors, K::InTypes, K::InEdgePos];
        inn.write(enc, kinds, chunk)?;
        inn.remove(io)?;
        wrote();
        wrote();
        Ok(())
    }

    /// `EdgeOutPos`, each row's out-CSR entry (the inverse of the out-direction's rows), in
    /// passes over the out-direction's row file, each filling the next `buffer` bytes of it.
    fn write_edge_out_pos<W: io::Write>(&self, enc: &mut SegmentEncoder<W>) -> io::Result<()> {
        let rows = self.len();
        let per_pass = self.chunk::<u32>() as u64;
        let chunk = self.chunk::<u32>();
        enc.section_from(K::EdgeOutPos, |sink| {
            let mut first = 0u64;
            while first < rows {
                let end = rows.min(first + per_pass);
                let mut slots = vec![0u32; usize::try_from(end - first).unwrap_or(0)];
                let mut entry = 0u32;
                self.out.pos.for_each_chunk::<u32>(chunk, |part| {
                    for &row in part {
                        let row = u64::from(row);
                        if (first..end).contains(&row)
                            && let Some(slot) = usize::try_from(row - first)
                                .ok()
                                .and_then(|i| slots.get_mut(i))
                        {
                            *slot = entry;
                        }
                        entry = entry.wrapping_add(1);
                    }
                    Ok(())
                })?;
                sink(bytemuck::cast_slice(&slots))?;
                first = end;
            }
            Ok(())
        })
    }
}
