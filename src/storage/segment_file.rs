//! Writing a segment file and mapping it read-only.
//!
//! A segment is written to `seg-N.hgs.tmp` with ordinary buffered writes, fsynced, made
//! read-only, renamed into place and the directory fsynced; only then is it mapped. Once
//! mapped it is never written or truncated by any hopgraph process, only unlinked when no
//! snapshot of this process uses it any more (see [`SegmentFile::mark_obsolete`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use memmap2::Mmap;
use parking_lot::Mutex;

use super::chunk_writer::ChunkWriter;
use super::io::{Io, OpenMode};
use crate::error::{Error, Result};
use crate::format::segment::{SectionKind, SegmentEncoder, SegmentLayout};
use crate::format::{FORMAT_VERSION, FORMAT_VERSION_MIN};

/// The typed CSR arrays the traversal hot path reads, per direction (0 = out, 1 = in).
#[derive(Clone, Copy, Debug, Default)]
pub struct CsrArrays<'a> {
    /// `u32[node_bound + 1]` run starts.
    pub offsets: [&'a [u32]; 2],
    /// Neighbor per entry.
    pub neighbors: [&'a [u32]; 2],
    /// Edge type per entry.
    pub types: [&'a [u16]; 2],
    /// Edge row per entry.
    pub edge_pos: [&'a [u32]; 2],
    /// Edge id per row (empty when ids are dense).
    pub edge_ids: &'a [u64],
}

/// The sections a query reads once per node it touches (CSR run starts, the key index,
/// node record boundaries), O(nodes) in size where the rest is O(edges) or record bytes:
/// what [`SegmentFile::prefault_node_index`] reads of a file too large to read whole.
pub const NODE_INDEX_SECTIONS: [SectionKind; 7] = [
    SectionKind::Summary,
    SectionKind::OutOffsets,
    SectionKind::InOffsets,
    SectionKind::KeyHash,
    SectionKind::KeyOrder,
    SectionKind::NodeIds,
    SectionKind::NodeOffsets,
];

/// A mapped, structurally validated segment.
#[derive(Debug)]
pub struct SegmentFile {
    /// Segment id (also in the file name and footer).
    pub id: u64,
    path: PathBuf,
    /// Views into `mmap`, cast once at open. Private: only ever handed out with the
    /// lifetime of `&self` (see `csr`).
    csr: CsrArrays<'static>,
    mmap: Mmap,
    /// Whether the kernel took the advice to map `mmap` with huge pages.
    huge_pages: bool,
    /// Where each section is.
    pub layout: SegmentLayout,
    obsolete: AtomicBool,
    /// Unlinks the file once obsolete.
    io: Arc<dyn Io>,
}

impl SegmentFile {
    /// Opens and maps segment `id` of `dir`, validating its structure (not its checksums:
    /// see [`SegmentFile::verify`]).
    ///
    /// # Errors
    /// I/O errors, `Corrupt` with the offset of the first structural problem, a foreign
    /// database id or an unsupported version.
    pub fn open(io: &Arc<dyn Io>, dir: &Path, id: u64, db_id: u128) -> Result<SegmentFile> {
        let path = dir.join(super::segment_file_name(id));
        let file = super::fs::open_read(&**io, &path)?;
        let mmap = super::fs::map_readonly(&*file, &path)?;
        drop(file);
        let huge_pages = super::fs::advise_huge_pages(&mmap);
        let layout = SegmentLayout::parse(&mmap)
            .map_err(|e| Error::corrupt(&path, e.offset as u64, e.what))?;
        if !(FORMAT_VERSION_MIN..=FORMAT_VERSION).contains(&layout.version) {
            return Err(Error::UnsupportedVersion {
                path,
                found: layout.version,
                min: FORMAT_VERSION_MIN,
                max: FORMAT_VERSION,
            });
        }
        if layout.db_id != db_id {
            return Err(Error::ForeignFile {
                path,
                found: layout.db_id,
                expected: db_id,
            });
        }
        if layout.segment_id != id {
            return Err(Error::corrupt(
                &path,
                0,
                format!(
                    "footer names segment {}, file name says {id}",
                    layout.segment_id
                ),
            ));
        }
        // SAFETY: `bytes` points into the read-only mapping owned by `mmap`, which lives
        // exactly as long as this `SegmentFile`: the mapping's address does not change when
        // the `Mmap` value moves, and it is unmapped only when the `SegmentFile` is dropped.
        // The 'static views derived from it are private and only returned by `csr`, whose
        // signature shortens their lifetime to that of `&self`, so none outlives the map.
        // (The mapped bytes themselves never change: see `map_readonly`.)
        let bytes: &'static [u8] = unsafe { std::slice::from_raw_parts(mmap.as_ptr(), mmap.len()) };
        let csr = csr_arrays(&layout, bytes);
        Ok(SegmentFile {
            id,
            path,
            csr,
            mmap,
            huge_pages,
            layout,
            obsolete: AtomicBool::new(false),
            io: io.clone(),
        })
    }

    /// The typed CSR arrays (cast once at open).
    #[inline]
    pub fn csr(&self) -> &CsrArrays<'_> {
        &self.csr
    }

    /// The mapped bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.mmap
    }

    /// Makes every page of the mapping resident and mapped: asks the kernel to read the
    /// file ahead, then reads one byte per page. A later query then takes no page faults
    /// on this file (until memory pressure evicts pages). Returns the bytes covered.
    pub fn prefault(&self) -> u64 {
        self.prefault_range(0..self.mmap.len())
    }

    /// Bytes of the sections a query reads per node it touches rather than per edge
    /// (see [`NODE_INDEX_SECTIONS`]).
    pub fn node_index_bytes(&self) -> u64 {
        NODE_INDEX_SECTIONS
            .iter()
            .filter_map(|&k| self.layout.entry(k))
            .map(|e| e.range.len() as u64)
            .sum()
    }

    /// [`SegmentFile::prefault`] for the [`NODE_INDEX_SECTIONS`] only: what a file too
    /// large to read whole gets. Returns the bytes covered.
    pub fn prefault_node_index(&self) -> u64 {
        NODE_INDEX_SECTIONS
            .iter()
            .filter_map(|&k| self.layout.entry(k))
            .map(|e| self.prefault_range(e.range.clone()))
            .sum()
    }

    /// Advises read-ahead for `range` (in bounds: section ranges are validated at open),
    /// then reads one byte per page of it. With huge pages the advice is left out: the
    /// kernel's read-ahead for it fills the page cache with small pages, while the faults
    /// of the reads bring the file in as huge ones.
    fn prefault_range(&self, range: std::ops::Range<usize>) -> u64 {
        /// Smallest page size of the platforms we run on; a larger page is only touched
        /// more than once.
        const PAGE: usize = 4096;
        let Some(bytes) = self.mmap.get(range.clone()) else {
            return 0;
        };
        #[cfg(unix)]
        if !self.huge_pages {
            // Advice only: if it fails, the reads below fault the pages in one by one.
            let _ = self
                .mmap
                .advise_range(memmap2::Advice::WillNeed, range.start, bytes.len());
        }
        let folded = bytes.iter().step_by(PAGE).fold(0u8, |a, &b| a ^ b);
        std::hint::black_box(folded);
        bytes.len() as u64
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// File size in bytes.
    pub fn len_bytes(&self) -> u64 {
        self.mmap.len() as u64
    }

    /// Full verification: every section checksum and every id inside bounds and order.
    ///
    /// # Errors
    /// `Corrupt` with the offset of the first problem.
    pub fn verify(&self) -> Result<()> {
        self.layout
            .verify_checksums(&self.mmap)
            .and_then(|()| self.layout.verify_contents(&self.mmap))
            .map_err(|e| Error::corrupt(&self.path, e.offset as u64, e.what))
    }

    /// [`SegmentFile::verify`] (the same checks) without keeping the file's pages mapped:
    /// the pages of each part read are dropped from this process's mapping behind the scan
    /// (`MADV_DONTNEED`; the page cache keeps them for whoever reads them next), and all of
    /// them at the end. The process's resident memory then does not grow with the file,
    /// beyond the node records and keys, which the checks hold until the end. Best for a
    /// file no query is reading yet (a bulk load's, checkpoint's or compaction's output)
    /// or a one-off check: a query reading beside it faults its pages back in.
    ///
    /// # Errors
    /// `Corrupt` with the offset of the first problem.
    pub fn verify_releasing(&self) -> Result<()> {
        self.verify_releasing_reporting(&|_| {}, &|_| {})
    }

    /// [`SegmentFile::verify_releasing`], telling `checksummed` and `checked` how many
    /// bytes the checksum pass and then the content pass have read so far: running
    /// totals, at most the file's length, and the file's length when the pass is done.
    ///
    /// # Errors
    /// `Corrupt` with the offset of the first problem.
    pub fn verify_releasing_reporting(
        &self,
        checksummed: &(dyn Fn(u64) + Sync),
        checked: &(dyn Fn(u64) + Sync),
    ) -> Result<()> {
        // The content pass checks both directions on two threads: the count is reported
        // under its lock, so the reports never go back.
        let counted = |done: &Mutex<u64>, part: &[u8], report: &(dyn Fn(u64) + Sync)| {
            self.release(part);
            let mut done = done.lock();
            *done += part.len() as u64;
            report(*done);
        };
        let (summed, read) = (Mutex::new(0), Mutex::new(0));
        let r = self
            .layout
            .verify_checksums_releasing(&self.mmap, &|part| counted(&summed, part, checksummed))
            .and_then(|()| {
                checksummed(self.mmap.len() as u64);
                self.layout
                    .verify_contents_releasing(&self.mmap, &|part| counted(&read, part, checked))
            })
            .map(|()| checked(self.mmap.len() as u64))
            .map_err(|e| Error::corrupt(&self.path, e.offset as u64, e.what));
        self.release(&self.mmap);
        r
    }

    /// Drops the pages of `part` (a sub-slice of the mapping; others are ignored) from
    /// this process's mapping, from the page holding its first byte to the one holding its
    /// last. Advice only: errors are ignored, and a later read faults the same bytes back
    /// in from the file.
    fn release(&self, part: &[u8]) {
        /// Smallest page size of the platforms we run on (`madvise` wants the start
        /// aligned to the page).
        const PAGE: usize = 4096;
        let base = self.mmap.as_ptr() as usize;
        let start = (part.as_ptr() as usize).wrapping_sub(base);
        if part.is_empty() || start >= self.mmap.len() || part.len() > self.mmap.len() - start {
            return;
        }
        let aligned = start - start % PAGE;
        #[cfg(unix)]
        {
            // SAFETY: `mmap` is a read-only shared mapping of the segment file (see
            // `Io::map_readonly`), which nobody modifies or truncates while it is mapped
            // (see `fs::map_readonly`). MADV_DONTNEED on such a mapping only drops the
            // page-table entries: the range stays mapped, and the next read of any byte
            // faults the page back in from the page cache or the file with the same
            // contents. So every `&[u8]` into the mapping (ours, the 'static views of
            // `csr`, a caller's) keeps reading the same bytes; nothing is written or freed
            // that a reference points to. The range is within the mapping (checked above).
            let _ = unsafe {
                self.mmap.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    aligned,
                    start + part.len() - aligned,
                )
            };
        }
        #[cfg(not(unix))]
        let _ = aligned;
    }

    /// Marks the file for deletion once the last user of this mapping drops it.
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }
}

impl Drop for SegmentFile {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) {
            // Failure only leaves an unreferenced file behind, which `open` ignores and the
            // next checkpoint's garbage collection removes.
            let _ = self.io.remove_file(&self.path);
        }
    }
}

fn csr_arrays<'a>(l: &SegmentLayout, b: &'a [u8]) -> CsrArrays<'a> {
    use crate::format::segment::SectionKind as K;
    CsrArrays {
        offsets: [l.u32s(b, K::OutOffsets), l.u32s(b, K::InOffsets)],
        neighbors: [l.u32s(b, K::OutNeighbors), l.u32s(b, K::InNeighbors)],
        types: [l.u16s(b, K::OutTypes), l.u16s(b, K::InTypes)],
        edge_pos: [l.u32s(b, K::OutEdgePos), l.u32s(b, K::InEdgePos)],
        edge_ids: l.u64s(b, K::EdgeIds),
    }
}

/// What a segment file's header and footer name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentStamp {
    /// The segment id.
    pub id: u64,
    /// The database it belongs to.
    pub db_id: u128,
    /// The LSN its contents cover.
    pub lsn: u64,
    /// Its format version: this build's `FORMAT_VERSION`, or an older segment's when its
    /// sections are copied (they keep the format they were written in).
    pub version: u32,
}

/// Writes the segment `stamp` names durably (fsynced, read-only) under the file name
/// `staging` in `dir` and returns its size, without making it a segment of the directory
/// yet: [`publish_staged_segment`] does that. A staging name ends in `.tmp`, so a crash
/// leaves nothing a later open does not remove.
///
/// # Errors
/// I/O errors with the path involved.
pub fn write_segment_staged(
    io: &dyn Io,
    dir: &Path,
    staging: &str,
    stamp: SegmentStamp,
    build: impl FnOnce(&mut SegmentEncoder<ChunkWriter>) -> std::io::Result<()>,
) -> Result<u64> {
    // `build` appends the sections; the footer is written by the encoder.
    debug_assert!(
        staging.ends_with(".tmp"),
        "staging names are garbage after a crash"
    );
    let tmp = dir.join(staging);
    let err = |e| Error::io(&tmp, e);
    let file = io.open(&tmp, OpenMode::Truncate).map_err(err)?;
    let mut enc = SegmentEncoder::with_version(ChunkWriter::new(file), stamp.db_id, stamp.version)
        .map_err(err)?;
    build(&mut enc).map_err(err)?;
    let (out, len) = enc.finish(stamp.id, stamp.lsn).map_err(err)?;
    let file = out.finish().map_err(err)?;
    file.sync_all().map_err(err)?;
    io.set_readonly(&tmp).map_err(err)?;
    drop(file);
    Ok(len)
}

/// Renames the staged file `staging` (written by [`write_segment_staged`]) to segment
/// `id`'s name and fsyncs the directory.
///
/// # Errors
/// I/O errors with the path involved.
pub fn publish_staged_segment(io: &dyn Io, dir: &Path, staging: &str, id: u64) -> Result<()> {
    let path = dir.join(super::segment_file_name(id));
    io.rename(&dir.join(staging), &path)
        .map_err(|e| Error::io(&path, e))?;
    super::fs::sync_dir(io, dir)
}
