//! The input edges of a bulk load as added: columns of local numbers in memory, and, for a
//! load made by [`BulkLoad::spilling_into`](super::BulkLoad::spilling_into), chunks of
//! them moved to an append-only scratch file while they are added.
//!
//! Such a load knows its memory limit and its database's directory when edges are added:
//! once the in-memory columns reach [`ADD_SHARE`] of the limit, they are appended to the
//! scratch file `bulk-input-<random>.tmp` (a name `collect_garbage` removes at the next
//! writable open, should the process die) as one chunk, and cleared. The chunk holds the
//! sources and targets (`u32` each) and the types (`u16`) in the platform's byte order,
//! column after column: 10 bytes per edge, as in memory. The degree of every local node
//! over the spilled edges is counted meanwhile (4 bytes per node), so the load does not
//! read the chunks to number the nodes. At load, the chunks are read back in input order,
//! one at a time, into the edge build (see `external::spill`), or into memory when the
//! in-memory build fits; the file is removed then, and in any case when the
//! [`AddedEdges`] is dropped (on success, error, panic, or a load never made).
//!
//! The file is read through the descriptor that wrote it, so another process's open that
//! removes `.tmp` files meanwhile (on Unix) does not lose the chunks.

use std::path::PathBuf;
use std::sync::Arc;

use crate::db::build::SpillFile;
use crate::error::{Error, Result};
use crate::storage::io::Io;

/// Bytes per edge of the source, target and type columns.
pub(super) const EDGE_BYTES: u64 = 10;

/// The in-memory columns are spilled when they take this fraction (1 / `ADD_SHARE`) of
/// the memory limit.
pub(super) const ADD_SHARE: u64 = 8;

/// Where an add-time spill goes.
#[derive(Debug, Clone)]
pub(super) struct Target {
    pub io: Arc<dyn Io>,
    pub dir: PathBuf,
}

/// One chunk of the input scratch file.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    /// Its first byte.
    at: u64,
    /// Edges it holds.
    edges: usize,
}

/// The input scratch file and its chunks; removes the file when dropped.
#[derive(Debug)]
struct Spilled {
    io: Arc<dyn Io>,
    file: SpillFile,
    chunks: Vec<Chunk>,
    /// The end of the last chunk written whole.
    end: u64,
    /// Edges in the chunks.
    edges: usize,
    /// The largest chunk's edges.
    largest: usize,
    /// Degree of each local node over the spilled edges (shorter than the key count when
    /// the last keys have no spilled edge).
    degree: Vec<u32>,
}

impl Drop for Spilled {
    fn drop(&mut self) {
        // Best effort: what remains is removed by the next writable open.
        let _ = self.io.remove_file(self.file.path());
    }
}

/// The edges added to a bulk load, by local numbers, in input order.
#[derive(Debug, Default)]
pub(super) struct AddedEdges {
    /// The edges not spilled (the last ones added).
    pub sources: Vec<u32>,
    pub targets: Vec<u32>,
    pub types: Vec<u16>,
    /// Where to spill; None: never (a [`BulkLoad::new`](super::BulkLoad::new) load).
    pub target: Option<Target>,
    spilled: Option<Spilled>,
}

/// Reads one chunk of `file` into the three buffers (resized to the chunk).
fn read_chunk(
    file: &SpillFile,
    chunk: Chunk,
    sources: &mut Vec<u32>,
    targets: &mut Vec<u32>,
    types: &mut Vec<u16>,
) -> Result<()> {
    let err = |e| Error::io(file.path(), e);
    let n = chunk.edges;
    sources.resize(n, 0);
    targets.resize(n, 0);
    types.resize(n, 0);
    // The chunk's columns start at bytes `at`, `at + 4n` and `at + 8n`.
    read_bytes(file, chunk.at, bytemuck::cast_slice_mut(sources)).map_err(err)?;
    read_bytes(
        file,
        chunk.at + 4 * n as u64,
        bytemuck::cast_slice_mut(targets),
    )
    .map_err(err)?;
    read_bytes(
        file,
        chunk.at + 8 * n as u64,
        bytemuck::cast_slice_mut(types),
    )
    .map_err(err)?;
    Ok(())
}

/// Fills `out` from byte `at` of `file`.
fn read_bytes(file: &SpillFile, at: u64, out: &mut [u8]) -> std::io::Result<()> {
    file.read_values::<u8>(at, out)
}

impl AddedEdges {
    /// Edges added, spilled or not.
    pub fn len(&self) -> usize {
        self.spilled.as_ref().map_or(0, |s| s.edges) + self.sources.len()
    }

    /// Appends an edge (call [`AddedEdges::make_room`] first).
    pub fn push(&mut self, s: u32, t: u32, ty: u16) {
        self.sources.push(s);
        self.targets.push(t);
        self.types.push(ty);
    }

    /// Spills the in-memory edges when they take [`ADD_SHARE`] of `limit` and the load
    /// has a [`Target`]. On error nothing changes (the edges stay in memory).
    ///
    /// # Errors
    /// I/O errors of the scratch file.
    pub fn make_room(&mut self, limit: Option<u64>) -> Result<()> {
        let (Some(target), Some(limit)) = (&self.target, limit) else {
            return Ok(());
        };
        let share = (limit / ADD_SHARE).max(EDGE_BYTES);
        if (self.sources.len() as u64).saturating_mul(EDGE_BYTES) < share {
            return Ok(());
        }
        if self.spilled.is_none() {
            let name = format!("bulk-input-{}.tmp", uuid::Uuid::new_v4().simple());
            let path = target.dir.join(name);
            // Written at explicit offsets, never through the file's buffer.
            let file = SpillFile::create(&*target.io, &path, 0)?;
            self.spilled = Some(Spilled {
                io: Arc::clone(&target.io),
                file,
                chunks: Vec::new(),
                end: 0,
                edges: 0,
                largest: 0,
                degree: Vec::new(),
            });
        }
        let Some(spilled) = &mut self.spilled else {
            return Ok(());
        };
        // The chunk counts only once written whole: after an error, the next chunk
        // overwrites whatever part of this one reached the file.
        let n = self.sources.len();
        let at = spilled.end;
        let err = |e| Error::io(spilled.file.path(), e);
        let columns: [&[u8]; 3] = [
            bytemuck::cast_slice(&self.sources),
            bytemuck::cast_slice(&self.targets),
            bytemuck::cast_slice(&self.types),
        ];
        let mut end = at;
        for column in columns {
            spilled.file.write_values::<u8>(end, column).map_err(err)?;
            end += column.len() as u64;
        }
        spilled.end = end;
        spilled.chunks.push(Chunk { at, edges: n });
        spilled.edges += n;
        spilled.largest = spilled.largest.max(n);
        for &x in self.sources.iter().chain(&self.targets) {
            let x = x as usize;
            if spilled.degree.len() <= x {
                spilled.degree.resize(x + 1, 0);
            }
            spilled.degree[x] = spilled.degree[x].saturating_add(1);
        }
        // The buffers keep their capacity: the next chunk fills them without growing.
        self.sources.clear();
        self.targets.clear();
        self.types.clear();
        Ok(())
    }

    /// The degree of each of `keys` local nodes over all edges (a self-loop counts twice).
    ///
    /// # Errors
    /// `InvalidArgument` when an edge names a local number not below `keys`.
    pub fn degrees(&self, keys: usize) -> Result<Vec<u32>> {
        let mut degree = vec![0u32; keys];
        if let Some(s) = &self.spilled {
            if s.degree.len() > keys {
                return Err(super::bad_local());
            }
            degree[..s.degree.len()].copy_from_slice(&s.degree);
        }
        for &x in self.sources.iter().chain(&self.targets) {
            let d = degree.get_mut(x as usize).ok_or_else(super::bad_local)?;
            *d = d.saturating_add(1);
        }
        Ok(degree)
    }

    /// Bytes the load holds for the edges while they are read back: the in-memory columns
    /// and the buffers of one chunk.
    pub fn heap_bytes(&self) -> u64 {
        let largest = self.spilled.as_ref().map_or(0, |s| s.largest) as u64;
        super::heap_bytes(&self.sources)
            + super::heap_bytes(&self.targets)
            + super::heap_bytes(&self.types)
            + largest * EDGE_BYTES
    }

    /// Calls `f` with the edges' columns in input order, a chunk at a time (the spilled
    /// chunks, then the in-memory edges), and frees them: the scratch file is removed
    /// after the last chunk.
    ///
    /// # Errors
    /// I/O errors of the scratch file, and `f`'s.
    pub fn drain(
        mut self,
        mut f: impl FnMut(&mut [u32], &mut [u32], &mut [u16]) -> Result<()>,
    ) -> Result<()> {
        if let Some(spilled) = self.spilled.take() {
            let cap = spilled.largest;
            let (mut s, mut t, mut ty) = (
                Vec::with_capacity(cap),
                Vec::with_capacity(cap),
                Vec::with_capacity(cap),
            );
            for &chunk in &spilled.chunks {
                read_chunk(&spilled.file, chunk, &mut s, &mut t, &mut ty)?;
                f(&mut s, &mut t, &mut ty)?;
            }
            // Removed here (best effort), before the in-memory edges' turn.
            drop(spilled);
        }
        f(&mut self.sources, &mut self.targets, &mut self.types)
    }

    /// All edges in memory, in input order (the scratch file removed).
    ///
    /// # Errors
    /// I/O errors of the scratch file.
    pub fn into_columns(self) -> Result<(Vec<u32>, Vec<u32>, Vec<u16>)> {
        if self.spilled.is_none() {
            let AddedEdges {
                sources,
                targets,
                types,
                ..
            } = self;
            return Ok((sources, targets, types));
        }
        let n = self.len();
        let mut columns = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        self.drain(|s, t, ty| {
            columns.0.extend_from_slice(s);
            columns.1.extend_from_slice(t);
            columns.2.extend_from_slice(ty);
            Ok(())
        })?;
        Ok(columns)
    }

    /// Whether edges were spilled (for tests).
    #[cfg(test)]
    pub fn spilled_edges(&self) -> usize {
        self.spilled.as_ref().map_or(0, |s| s.edges)
    }
}
