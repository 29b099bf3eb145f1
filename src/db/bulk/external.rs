//! The out-of-core edge build of a bulk load: both CSR directions and the duplicate check
//! by external sorting, within a memory limit.
//!
//! 1. *Spill* ([`BulkPhase::Spill`]): the input edges (read back chunk by chunk from the
//!    input scratch file when the load spilled them as they were added, see `added`, then
//!    the columns in memory), in runs that fit the limit, are packed as `(source, type,
//!    target, input position)` into one `u128` each, sorted and written as runs to a
//!    scratch file; the input columns and the input scratch file are freed.
//! 2. *Merge out* ([`BulkPhase::MergeOut`]): a k-way merge of the runs yields every edge in
//!    out-CSR order. Equal triples meet there, in input order: all but the first are
//!    dropped, and the first too when the database holds the triple. Kept entries go to
//!    the out-direction's column files (neighbor, type, input position), their counts per
//!    node to its offsets, their types to the type bitmaps; and repacked as
//!    `(target, type, source, input position)` into sorted runs of the in-direction.
//! 3. The out-direction's input positions become rows: a kept edge's row is the number of
//!    kept edges before it (see `keep`), which orders rows as positions, so runs sorted by
//!    position are sorted by row.
//! 4. *Merge in* ([`BulkPhase::MergeIn`]): the in-direction's runs merged into its column
//!    files and offsets.
//!
//! The segment writer then streams both directions into their sections (see
//! `build/spilled.rs`): the same bytes as the in-memory build, whatever the limit.
//!
//! Memory: the offsets of both directions (8 bytes per node), the keep bits and ranks (a
//! quarter byte per edge), the type bitmaps, and a working share of what the limit leaves
//! after those and after what the load holds meanwhile: half for the run being sorted, a
//! quarter for the merge's read buffers, a quarter for the write buffers of the scratch
//! files. Disk: about 5 to 7 bytes per edge for the compressed runs of one direction (see
//! `spill::encode_block`), 10 per kept edge for each direction's columns; runs are removed
//! as soon as they are merged, columns as soon as the segment holds them.

use super::added::AddedEdges;
use super::keep::Keep;
use super::merge::Merge;
use super::spill::{Runs, Spill};
use super::{BulkPhase, BulkProgress, PROGRESS_EVERY};
use crate::db::build::{SpillFile, SpilledDirection, SpilledEdges, TypeBitmaps};
use crate::error::{Error, Result};

/// Source, target and type columns of the input edges (global ids).
pub(super) type Columns = (Vec<u32>, Vec<u32>, Vec<u16>);

/// Per-(direction, type) node bitmaps, as the `TypeBitmaps` section lists them.
type Bitmaps = Vec<(u8, u16, roaring::RoaringBitmap)>;

/// Bytes per input edge the in-memory build takes at its peak, beyond the input columns:
/// the out-CSR (10), the in-CSR with its sort keys (18) and the inverse permutation (4)
/// while the in-CSR is built, plus the input columns, kept as edge rows (10).
pub(super) const IN_MEMORY_EDGE_BYTES: u64 = 42;

/// Bytes per node the in-memory build takes: both directions' offsets.
pub(super) const IN_MEMORY_NODE_BYTES: u64 = 8;

/// The least working memory an out-of-core build sorts and merges in.
const WORK_MIN: u64 = 1 << 10;

/// Whether the in-memory build of `edges` edges over `nodes` node ids fits `limit` bytes.
pub(super) fn fits_in_memory(limit: u64, edges: usize, nodes: u32) -> bool {
    let need = (edges as u64)
        .saturating_mul(IN_MEMORY_EDGE_BYTES)
        .saturating_add(u64::from(nodes).saturating_mul(IN_MEMORY_NODE_BYTES));
    need <= limit
}

/// How an out-of-core build divides its memory limit.
#[derive(Clone, Copy, Debug)]
struct Shares {
    /// Entries of a run sorted in memory.
    run_entries: usize,
    /// Bytes of the merge's read buffers, all runs together.
    read: usize,
    /// Bytes of each scratch file's write buffer.
    write: usize,
}

impl Shares {
    /// The shares of `limit` for a build of `edges` edges over `nodes` node ids while the
    /// load holds `resident` bytes besides (its input columns and key table in phase 1,
    /// its node records in the merges): the working share is what the limit leaves after
    /// the fixed part and `resident`, and at least [`WORK_MIN`].
    ///
    /// # Errors
    /// `InvalidArgument` when the limit does not cover the fixed part.
    fn new(limit: u64, resident: u64, edges: usize, nodes: u32) -> Result<Shares> {
        let fixed = (u64::from(nodes) + 1)
            .saturating_mul(IN_MEMORY_NODE_BYTES)
            .saturating_add(edges as u64 / 4);
        let need = fixed.saturating_add(WORK_MIN);
        if limit.checked_sub(fixed).is_none_or(|w| w < WORK_MIN) {
            return Err(Error::invalid(format!(
                "a memory limit of {limit} bytes is too small for this bulk load of {edges} edges \
                 over {nodes} node ids: its node tables and duplicate check alone need {fixed} \
                 bytes; raise the memory limit (--memory-limit) to at least {need} bytes, \
                 better many times that"
            )));
        }
        // A sixteenth of what is left is slack for the allocator and what the shares
        // do not count (a merge's heap, the type bitmaps).
        let left = limit.saturating_sub(fixed).saturating_sub(resident);
        let work = (left - left / 16).max(WORK_MIN);
        let work = usize::try_from(work).unwrap_or(usize::MAX);
        Ok(Shares {
            run_entries: (work / 2 / 16).max(1),
            read: work / 4,
            write: (work / 16).max(64),
        })
    }
}

/// Packs an entry: `(owner, type, neighbor, position)`, whose integer order is the tuple's.
pub(super) fn pack(own: u32, t: u16, other: u32, pos: u32) -> u128 {
    u128::from(own) << 80 | u128::from(t) << 64 | u128::from(other) << 32 | u128::from(pos)
}

/// The fields of a packed entry.
#[allow(
    clippy::cast_possible_truncation,
    reason = "each field is shifted down and truncated to its width on purpose"
)]
pub(super) fn unpack(x: u128) -> (u32, u16, u32, u32) {
    (
        (x >> 80) as u32,
        (x >> 64) as u16,
        (x >> 32) as u32,
        x as u32,
    )
}

/// What the out-of-core build made.
#[derive(Debug)]
pub(super) struct External {
    pub edges: SpilledEdges,
    pub keep: Keep,
    pub dropped: u64,
    /// Kept edges per type id.
    pub type_counts: Vec<u64>,
}

/// The input edges as sorted runs of out-direction entries (phase 1), and what the
/// merges need to know.
#[derive(Debug)]
pub(super) struct SpilledRuns {
    runs: Runs,
    limit: u64,
    edges: usize,
    node_bound: u32,
}

/// Maps a chunk of input edges from local numbers to global ids, in place.
pub(super) type ToGlobal<'a> = dyn Fn(&mut [u32], &mut [u32], &mut [u16]) -> Result<()> + 'a;

/// Phase 1: spills the input `edges` (mapped to global ids below `node_bound` by
/// `to_global`, a chunk at a time) as sorted runs, within `limit` bytes while the load
/// holds `resident` bytes besides (the edges in memory included), and frees them.
///
/// # Errors
/// `InvalidArgument` when the limit is too small for the node tables or a node id is at
/// or beyond `node_bound`; I/O errors of the scratch files.
pub(super) fn spill(
    spill: &mut Spill<'_>,
    limit: u64,
    resident: u64,
    node_bound: u32,
    edges: AddedEdges,
    to_global: &ToGlobal<'_>,
    progress: BulkProgress<'_>,
) -> Result<SpilledRuns> {
    let n = edges.len();
    let shares = Shares::new(limit, resident, n, node_bound)?;
    let runs = spill_runs(spill, shares, node_bound, edges, to_global, progress)?;
    Ok(SpilledRuns {
        runs,
        limit,
        edges: n,
        node_bound,
    })
}

/// Phases 2 to 4: both directions built from the runs of [`spill`] while the load holds
/// `resident` bytes besides (its node records); `stored` says whether the database holds
/// a triple already (those are dropped as duplicates).
///
/// # Errors
/// `InvalidArgument` when a node id is at or beyond the node bound; I/O errors of the
/// scratch files.
pub(super) fn merge(
    spill: &mut Spill<'_>,
    input: SpilledRuns,
    resident: u64,
    ntypes: usize,
    stored: &dyn Fn(u32, u16, u32) -> bool,
    progress: BulkProgress<'_>,
) -> Result<External> {
    let SpilledRuns {
        runs: out_runs,
        limit,
        edges,
        node_bound,
    } = input;
    let shares = Shares::new(limit, resident, edges, node_bound)?;
    let mut keep = Keep::all(edges);
    let nodes = node_bound as usize;
    let merged = merge_out(
        spill, shares, nodes, &out_runs, &mut keep, ntypes, stored, progress,
    )?;
    spill.remove(out_runs.file)?;
    keep.finish();
    positions_to_rows(&merged.out.pos, &keep, shares.read)?;
    let inn = merge_in(
        spill,
        shares,
        nodes,
        &merged.in_runs,
        &keep,
        ntypes,
        progress,
    )?;
    spill.remove(merged.in_runs.file)?;
    let mut bitmaps = merged.bitmaps;
    bitmaps.extend(inn.1);
    Ok(External {
        edges: SpilledEdges {
            out: merged.out,
            inn: inn.0,
            bitmaps,
            buffer: shares.read.max(64),
        },
        keep,
        dropped: merged.dropped,
        type_counts: merged.type_counts,
    })
}

/// Phase 1: the input as sorted runs of out-direction entries.
fn spill_runs(
    spill: &mut Spill<'_>,
    shares: Shares,
    node_bound: u32,
    edges: AddedEdges,
    to_global: &ToGlobal<'_>,
    progress: BulkProgress<'_>,
) -> Result<Runs> {
    let total = edges.len() as u64;
    progress(BulkPhase::Spill, 0, total);
    let mut runs = Runs::new(spill.file("out-runs", shares.write)?);
    let mut run = Vec::with_capacity(shares.run_entries.min(edges.len()));
    // Input positions fit in u32 (`BulkLoad::edge` checks the count).
    let mut pos = 0u32;
    edges.drain(|sources, targets, types| {
        to_global(sources, targets, types)?;
        for ((&s, &t), &ty) in sources.iter().zip(&*targets).zip(&*types) {
            if s >= node_bound || t >= node_bound {
                return Err(Error::invalid(
                    "an edge refers to a node id beyond the node bound",
                ));
            }
            run.push(pack(s, ty, t, pos));
            pos = pos.wrapping_add(1);
            if run.len() == shares.run_entries {
                run.sort_unstable();
                runs.push(&run)?;
                run.clear();
                progress(BulkPhase::Spill, u64::from(pos), total);
            }
        }
        Ok(())
    })?;
    run.sort_unstable();
    runs.push(&run)?;
    drop(run);
    runs.file.flush()?;
    progress(BulkPhase::Spill, total, total);
    Ok(runs)
}

/// One direction's column files being filled, its counts per node and type bitmaps.
struct DirectionWriter {
    counts: Vec<u32>,
    neighbors: SpillFile,
    types: SpillFile,
    pos: SpillFile,
    bitmaps: TypeBitmaps,
}

impl DirectionWriter {
    fn new(
        spill: &mut Spill<'_>,
        dir: u8,
        nodes: usize,
        ntypes: usize,
        write: usize,
    ) -> Result<Self> {
        let name = if dir == 0 { "out" } else { "in" };
        Ok(DirectionWriter {
            counts: vec![0u32; nodes + 1],
            neighbors: spill.file(&format!("{name}-neighbors"), write)?,
            types: spill.file(&format!("{name}-types"), write)?,
            pos: spill.file(&format!("{name}-pos"), write)?,
            bitmaps: TypeBitmaps::new(dir, ntypes),
        })
    }

    /// Appends an entry of node `own` (entries come in CSR order).
    fn push(&mut self, own: u32, t: u16, other: u32, pos: u32) -> Result<()> {
        let count = self
            .counts
            .get_mut(own as usize + 1)
            .ok_or_else(|| Error::invalid("an edge refers to a node id beyond the node bound"))?;
        *count += 1;
        self.neighbors.append_values(&[other])?;
        self.types.append_values(&[t])?;
        self.pos.append_values(&[pos])?;
        self.bitmaps.push(own, t);
        Ok(())
    }

    /// The direction, its files flushed, and its type bitmaps.
    fn finish(mut self) -> Result<(SpilledDirection, Bitmaps)> {
        for i in 1..self.counts.len() {
            self.counts[i] += self.counts[i - 1];
        }
        self.neighbors.flush()?;
        self.types.flush()?;
        self.pos.flush()?;
        let dir = SpilledDirection {
            offsets: self.counts,
            neighbors: self.neighbors,
            types: self.types,
            pos: self.pos,
        };
        Ok((dir, self.bitmaps.finish()))
    }
}

/// What the merge of the out-direction made.
struct MergedOut {
    out: SpilledDirection,
    bitmaps: Bitmaps,
    in_runs: Runs,
    dropped: u64,
    type_counts: Vec<u64>,
}

/// Phase 2: the out-direction merged, duplicates dropped, the in-direction's runs written.
#[allow(
    clippy::too_many_arguments,
    reason = "the phase's inputs, each used once"
)]
fn merge_out(
    spill: &mut Spill<'_>,
    shares: Shares,
    nodes: usize,
    runs: &Runs,
    keep: &mut Keep,
    ntypes: usize,
    stored: &dyn Fn(u32, u16, u32) -> bool,
    progress: BulkProgress<'_>,
) -> Result<MergedOut> {
    let total = keep.len() as u64;
    progress(BulkPhase::MergeOut, 0, total);
    let mut out = DirectionWriter::new(spill, 0, nodes, ntypes, shares.write)?;
    let mut in_runs = Runs::new(spill.file("in-runs", shares.write)?);
    let mut run = Vec::with_capacity(shares.run_entries.min(keep.len()));
    let mut merge = Merge::new(runs, shares.read)?;
    let (mut dropped, mut done) = (0u64, 0u64);
    let mut type_counts = vec![0u64; ntypes];
    let mut last = None;
    while let Some(x) = merge.next_entry()? {
        done += 1;
        if done.is_multiple_of(PROGRESS_EVERY as u64) {
            progress(BulkPhase::MergeOut, done, total);
        }
        let (own, t, other, pos) = unpack(x);
        let first = last != Some((own, t, other));
        last = Some((own, t, other));
        if !first || stored(own, t, other) {
            keep.drop_edge(pos as usize);
            dropped += 1;
            continue;
        }
        out.push(own, t, other, pos)?;
        if let Some(c) = type_counts.get_mut(t as usize) {
            *c += 1;
        }
        run.push(pack(other, t, own, pos));
        if run.len() == shares.run_entries {
            run.sort_unstable();
            in_runs.push(&run)?;
            run.clear();
        }
    }
    drop(merge);
    run.sort_unstable();
    in_runs.push(&run)?;
    drop(run);
    in_runs.file.flush()?;
    let (out, bitmaps) = out.finish()?;
    progress(BulkPhase::MergeOut, total, total);
    Ok(MergedOut {
        out,
        bitmaps,
        in_runs,
        dropped,
        type_counts,
    })
}

/// Phase 3: the input positions in `pos` replaced by rows, in place.
fn positions_to_rows(pos: &SpillFile, keep: &Keep, buffer: usize) -> Result<()> {
    let err = |e| Error::io(pos.path(), e);
    let total = pos.len() / 4;
    let mut buf = vec![
        0u32;
        (buffer / 4)
            .max(16)
            .min(usize::try_from(total).unwrap_or(0))
    ];
    let mut at = 0u64;
    while at < total {
        let n = buf
            .len()
            .min(usize::try_from(total - at).unwrap_or(usize::MAX));
        let part = &mut buf[..n];
        pos.read_values(at, part).map_err(err)?;
        for p in part.iter_mut() {
            *p = u32::try_from(keep.rank(*p as usize))
                .map_err(|_| Error::invalid("too many edges in one bulk load"))?;
        }
        pos.write_values(at, part).map_err(err)?;
        at += n as u64;
    }
    Ok(())
}

/// Phase 4: the in-direction merged from its runs, positions written as rows.
fn merge_in(
    spill: &mut Spill<'_>,
    shares: Shares,
    nodes: usize,
    runs: &Runs,
    keep: &Keep,
    ntypes: usize,
    progress: BulkProgress<'_>,
) -> Result<(SpilledDirection, Bitmaps)> {
    let total = keep.kept();
    progress(BulkPhase::MergeIn, 0, total);
    let mut inn = DirectionWriter::new(spill, 1, nodes, ntypes, shares.write)?;
    let mut merge = Merge::new(runs, shares.read)?;
    let mut done = 0u64;
    while let Some(x) = merge.next_entry()? {
        done += 1;
        if done.is_multiple_of(PROGRESS_EVERY as u64) {
            progress(BulkPhase::MergeIn, done, total);
        }
        let (own, t, other, pos) = unpack(x);
        let row = u32::try_from(keep.rank(pos as usize))
            .map_err(|_| Error::invalid("too many edges in one bulk load"))?;
        inn.push(own, t, other, row)?;
    }
    drop(merge);
    let built = inn.finish()?;
    progress(BulkPhase::MergeIn, total, total);
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_load_holds_comes_out_of_the_working_share() {
        let free = Shares::new(1 << 30, 0, 1000, 1000).unwrap();
        let held = Shares::new(1 << 30, 1 << 29, 1000, 1000).unwrap();
        // Half the limit held: about half the share, both less the slack.
        assert!(held.run_entries * 10 > free.run_entries * 4);
        assert!(held.run_entries * 10 < free.run_entries * 6);
        assert!(free.run_entries * 16 * 2 < 1 << 30);
        // More held than the limit: the least share, not an error (the fixed part fits).
        let full = Shares::new(1 << 30, 1 << 31, 1000, 1000).unwrap();
        assert_eq!(full.run_entries as u64, WORK_MIN / 2 / 16);
        assert!(Shares::new(1 << 10, 0, 1000, 1000).is_err());
    }
}
