//! Edge directions kept in spill files rather than memory: what an out-of-core bulk load
//! (see `bulk/external.rs`) hands the segment writer.
//!
//! A [`SpillFile`] is a scratch file in the database's directory, written through the
//! engine's [`Io`] with a bounded buffer and read back in bounded chunks; it is never
//! fsynced (a crash loses nothing of value: the load had not committed, and the next open
//! removes the file, whose name ends in `.tmp`). A [`SpilledDirection`] is one CSR
//! direction as three such column files plus its offsets in memory (four bytes per node).
//! [`SpilledEdges::write_and_remove`] streams them into the segment's sections, byte for
//! byte what the in-memory writer produces from a [`Csr`], removing each file once written.
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

    /// Writes both directions' sections and `EdgeOutPos`, calling `wrote` after each step
    /// as the in-memory writer does. Each column file is removed through `io` as soon as
    /// the segment holds it, so the segment and all of the column files never take disk
    /// space together: at most the segment's edge sections and four bytes per row.
    ///
    /// # Errors
    /// I/O errors.
    pub fn write_and_remove<W: io::Write>(
        self,
        enc: &mut SegmentEncoder<W>,
        io: &dyn Io,
        wrote: &dyn Fn(),
    ) -> io::Result<()> {
        let chunk = (self.buffer / 4).max(1);
        let rows = self.len();
        let SpilledEdges { out, inn, .. } = self;
        enc.array(K::OutOffsets, &out.offsets)?;
        stream::<u32, W>(enc, K::OutNeighbors, &out.neighbors, chunk)?;
        remove(io, out.neighbors)?;
        wrote();
        stream::<u16, W>(enc, K::OutTypes, &out.types, chunk)?;
        remove(io, out.types)?;
        stream::<u32, W>(enc, K::OutEdgePos, &out.pos, chunk)?;
        wrote();
        write_edge_out_pos(enc, &out.pos, rows, chunk)?;
        remove(io, out.pos)?;
        wrote();
        wrote();
        enc.array(K::InOffsets, &inn.offsets)?;
        stream::<u32, W>(enc, K::InNeighbors, &inn.neighbors, chunk)?;
        remove(io, inn.neighbors)?;
        stream::<u16, W>(enc, K::InTypes, &inn.types, chunk)?;
        remove(io, inn.types)?;
        stream::<u32, W>(enc, K::InEdgePos, &inn.pos, chunk)?;
        remove(io, inn.pos)?;
        wrote();
        wrote();
        Ok(())
    }
}

/// Closes `file` and removes it through `io`.
fn remove(io: &dyn Io, file: SpillFile) -> io::Result<()> {
    let path = file.path.clone();
    drop(file);
    io.remove_file(&path)
}

/// `EdgeOutPos`, each of the `rows` rows' out-CSR entry (the inverse of the
/// out-direction's rows in `pos`), in passes over `pos`, each filling the next `chunk`
/// rows.
fn write_edge_out_pos<W: io::Write>(
    enc: &mut SegmentEncoder<W>,
    pos: &SpillFile,
    rows: u64,
    chunk: usize,
) -> io::Result<()> {
    let per_pass = chunk as u64;
    enc.section_from(K::EdgeOutPos, |sink| {
        let mut first = 0u64;
        while first < rows {
            let end = rows.min(first + per_pass);
            let mut slots = vec![0u32; usize::try_from(end - first).unwrap_or(0)];
            let mut entry = 0u32;
            pos.for_each_chunk::<u32>(chunk, |part| {
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
