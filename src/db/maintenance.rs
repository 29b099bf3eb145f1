//! Checkpoint, compaction, verification and statistics.
//!
//! Checkpoint protocol (writer mutex and inter-process lock held; see DESIGN.md):
//! 1. catch up with the log; nothing to do when the delta is empty;
//! 2. write the delta as segment N (`seg-N.hgs.tmp`, fsync, rename, fsync directory);
//! 3. create the next WAL file with `start_lsn = lsn + 1` (fsync file and directory);
//! 4. replace the manifest (new segment list, new WAL, `checkpoint_lsn = lsn`; tmp, fsync,
//!    rename, fsync directory) — the commit point;
//! 5. publish the new state (segments + empty delta) and delete the old WAL.
//!
//! A crash before step 4 leaves the old manifest, old WAL and an unreferenced segment or
//! WAL that the next writer removes; after step 4 the new files are complete and durable.
//! `Database::checkpoint` does step 2 without the locks: it freezes the state and reserves
//! the segment id under them, writes the segment under a private staging name
//! (`seg-N.hgs.checkpoint-*.tmp`) without them, then under them again renames it, creates
//! the next WAL holding a byte copy of the records committed meanwhile, rebuilds the delta
//! from those records, and does steps 4–5. Compaction likewise merges without the locks (a
//! private staging file, `seg-N.hgs.compact-*.tmp`) and then commits like a checkpoint
//! with the merged segment replacing the segments it merged (segments that checkpoints
//! appended meanwhile stay after it), else it merges again under the locks; old segment
//! files are unlinked when the last snapshot of this process drops them.

use std::sync::Arc;

use super::build::{SegmentContent, write_segment, write_segment_staged};
use super::commit::now_ms;
use super::handle::{Database, Writer};
use super::open::{RecoveryReport, catch_up, stamp};
use super::segment::Segment;
use super::state::{SegmentSet, State};
use super::text_check::{Rechecked, recheck_text_index};
use crate::error::{Error, Result};
use crate::format::manifest::Manifest;
use crate::format::segment::Summary;
use crate::format::wal::WalHeader;
use crate::graph::NodeId;
use crate::storage::fs::write_atomic;
use crate::storage::io::Io;
use crate::storage::segment_file::publish_staged_segment;
use crate::storage::wal::WalFile;
use crate::storage::{MANIFEST_FILE, wal_file_name};

/// What a checkpoint did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointReport {
    /// The new segment, or None when the delta was empty.
    pub segment: Option<u64>,
    /// LSN now covered by segments.
    pub lsn: u64,
    /// Edge rows written.
    pub edges: u64,
    /// Node records written.
    pub nodes: u64,
    /// Size of the new segment file.
    pub bytes: u64,
    /// Commits made while the segment was being written, carried over to the new WAL
    /// (they stay in the delta).
    pub carried: u64,
}

/// What a compaction did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactReport {
    /// Segments merged.
    pub segments_merged: usize,
    /// The merged segment, or None when there was nothing to do.
    pub segment: Option<u64>,
    /// Live edges kept.
    pub edges: u64,
    /// Deleted edges dropped.
    pub edges_dropped: u64,
    /// Size of the merged segment file.
    pub bytes: u64,
}

/// What [`Database::verify_with_progress`] is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum VerifyPhase {
    /// Each segment's section checksums (bytes of segments).
    Checksums,
    /// Each segment's structure and ids (bytes of segments).
    Contents,
    /// The write-ahead log's records (records).
    Wal,
    /// Text indexes rebuilt from their segments' records ([`Database::verify_text_index`];
    /// records).
    TextIndex,
}

/// A verification's progress callback: `(phase, done, total)` (see
/// [`Database::verify_with_progress`]).
pub type VerifyProgress<'a> = &'a (dyn Fn(VerifyPhase, u64, u64) + Sync);

/// What `verify` checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Segments whose every checksum and id was checked.
    pub segments: usize,
    /// WAL records decoded.
    pub wal_records: u64,
    /// Bytes after the last valid WAL record (a torn tail awaiting truncation).
    pub wal_trailing_bytes: u64,
    /// Total bytes checked.
    pub bytes: u64,
}

/// What [`Database::verify_text_index`] checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TextIndexReport {
    /// Segments whose text index, rebuilt from their records, equals the stored one.
    pub segments: usize,
    /// Records analysed again.
    pub records: u64,
    /// Segments not compared, as (segment id, format version): written by an earlier
    /// format, whose index this build does not write ([`Database::compact`] rewrites
    /// them).
    pub older_format: Vec<(u64, u32)>,
}

/// Database statistics.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Live nodes.
    pub nodes: u64,
    /// Live edges.
    pub edges: u64,
    /// (type name, live edges) by type id.
    pub edge_types: Vec<(String, u64)>,
    /// (segment id, file bytes, edge rows), oldest first.
    pub segments: Vec<(u64, u64, u64)>,
    /// The on-disk format version of each segment, in `segments` order (older than
    /// [`FORMAT_VERSION`](crate::FORMAT_VERSION): [`Database::compact`] rewrites it in the
    /// current one).
    pub segment_formats: Vec<u32>,
    /// Bytes of the live WAL file.
    pub wal_bytes: u64,
    /// Bytes of all files in the directory.
    pub disk_bytes: u64,
    /// LSN of the last commit.
    pub lsn: u64,
    /// LSN covered by segments.
    pub checkpoint_lsn: u64,
    /// Time of the last checkpoint (ms since the epoch; 0 = never).
    pub last_checkpoint_ms: u64,
    /// Manifest generation.
    pub generation: u64,
    /// What recovery did at open.
    pub recovery: RecoveryReport,
    /// The last automatic maintenance error, if any.
    pub maintenance_error: Option<String>,
}

pub(super) fn summary_of(st: &State) -> Summary {
    Summary {
        node_bound: st.node_bound,
        next_edge_id: st.next_edge_id,
        live_nodes: st.live_nodes,
        types: st
            .types
            .iter()
            .zip(st.type_counts.iter())
            .map(|(n, c)| (n.to_string(), *c))
            .collect(),
        ..Summary::default()
    }
}

impl Database {
    pub(super) fn maintenance_guard<'a>(
        &'a self,
        w: &mut Writer,
    ) -> Result<crate::storage::lock::WriterLockGuard<'a>> {
        if let Some(why) = &w.poisoned {
            return Err(Error::WriterPoisoned(why.clone()));
        }
        let lock = self.shared.lock.as_ref().ok_or(Error::ReadOnly)?;
        let g = lock.lock()?;
        catch_up(
            &self.shared.options.io,
            &self.shared.dir,
            w,
            true,
            &mut RecoveryReport::default(),
        )?;
        Ok(g)
    }

    /// Writes the in-memory delta as a new segment and starts a fresh WAL. Neither readers
    /// nor writers wait for the segment to be written.
    ///
    /// Under the locks this freezes the state (an `Arc`, no copy) and reserves the next
    /// segment id; without them it writes the frozen delta as a segment under a private
    /// staging name; then, under the locks again, it renames the segment into place,
    /// creates the next WAL holding the records committed meanwhile (copied byte for
    /// byte: a record's checksum covers the database id and its LSN, not its position),
    /// rebuilds the delta from those records on top of the new segment list, as recovery
    /// would, and switches the manifest (the commit point). Writers wait only for that last
    /// step, whose cost follows the commits made during the write, not the size of the
    /// delta. If another checkpoint or a bulk load changed the log meanwhile, the staged
    /// file is dropped and the checkpoint runs under the locks. See DESIGN.md §6.
    ///
    /// # Errors
    /// I/O errors; `ReadOnly`; `WriterPoisoned`. An error while the segment is staged
    /// changes nothing and leaves the handle usable; an I/O error in the final step
    /// poisons the handle.
    pub fn checkpoint(&self) -> Result<CheckpointReport> {
        let _one_at_a_time = self.shared.checkpointing.lock();
        let frozen = {
            let mut w = self.shared.writer.lock();
            let r = self.maintenance_guard(&mut w).map(|_g| {
                if w.state.delta.is_empty() {
                    return None;
                }
                let seg_id = w.manifest.next_segment_id;
                // Reserved in memory: a checkpoint or compaction of this process that
                // commits meanwhile takes a later id. Never written unless used.
                w.manifest.next_segment_id += 1;
                Some(Frozen {
                    state: w.state.clone(),
                    seg_id,
                    wal_seq: w.manifest.wal_seq,
                    wal_end: w.wal_end,
                })
            });
            match w.poison_on_io("checkpoint", r)? {
                Some(f) => f,
                // Nothing to write but maybe a log to restart: cheap under the locks.
                None => return self.checkpoint_locked(&mut w),
            }
        };
        let st = &frozen.state;
        let dir = &self.shared.dir;
        let io = self.shared.io();
        let staging = format!(
            "{}.checkpoint-{}-{}.tmp",
            crate::storage::segment_file_name(frozen.seg_id),
            std::process::id(),
            now_ms()
        );
        let (nodes, edges) = (st.delta.nodes.len() as u64, st.delta.edges.len() as u64);
        let bytes = match write_segment_staged(
            io,
            dir,
            &staging,
            frozen.seg_id,
            self.shared.db_id,
            st.lsn,
            delta_content(st, self.shared.options.vector_graph_min),
        ) {
            Ok(b) => b,
            Err(e) => {
                // Nothing shared was touched: the handle stays usable.
                let _ = io.remove_file(&dir.join(&staging));
                return Err(e);
            }
        };
        let mut w = self.shared.writer.lock();
        let r = self.maintenance_guard(&mut w).and_then(|_g| {
            let unchanged = w.manifest.wal_seq == frozen.wal_seq
                && w.manifest.checkpoint_lsn == st.checkpoint_lsn
                && w.manifest.next_segment_id > frozen.seg_id
                && !w.manifest.segments.contains(&frozen.seg_id)
                && w.wal_end >= frozen.wal_end;
            if !unchanged {
                let _ = io.remove_file(&dir.join(&staging));
                return self.checkpoint_held(&mut w);
            }
            let tail = w.wal.scan(frozen.wal_end, st.lsn + 1)?;
            if tail.end != w.wal_end {
                // The writer is caught up to `wal_end`, so the scan must end there.
                let _ = io.remove_file(&dir.join(&staging));
                return self.checkpoint_held(&mut w);
            }
            publish_staged_segment(io, dir, &staging, frozen.seg_id)?;
            let seg = self.open_verified(frozen.seg_id)?;
            let (wal_seq, wal) = self.create_next_wal(&w, st.lsn + 1)?;
            let tail_len = tail.end - frozen.wal_end;
            let tail_bytes = usize::try_from(tail_len)
                .ok()
                .and_then(|n| tail.buf.get(..n))
                .ok_or_else(|| Error::Internal("WAL tail larger than read".into()))?;
            if !tail_bytes.is_empty() {
                wal.write_at(tail_bytes, WalFile::data_start())?;
                wal.sync()?;
            }
            let mut segments = w.state.segs.segments.clone();
            segments.push(seg);
            let mut state = State::from_segments(SegmentSet::new(segments), 0, st.lsn);
            super::open::apply_scan(&mut state, &tail, w.wal.path(), frozen.wal_end)?;
            let m = Manifest {
                generation: w.manifest.generation + 1,
                wal_seq,
                checkpoint_lsn: st.lsn,
                checkpoint_time_ms: now_ms(),
                segments: state.segs.segments.iter().map(|s| s.file.id).collect(),
                ..w.manifest.clone()
            };
            self.switch_manifest(&mut w, m, state, Some(wal))?;
            w.wal_end = WalFile::data_start() + tail_len;
            Ok(CheckpointReport {
                segment: Some(frozen.seg_id),
                lsn: st.lsn,
                edges,
                nodes,
                bytes,
                carried: tail.records.len() as u64,
            })
        });
        w.poison_on_io("checkpoint", r)
    }

    /// Maps segment `id` of this database and checks it completely. The segment is new
    /// (a checkpoint's or a compaction's output) and no query reads it yet, so the check
    /// drops its mapped pages behind it (`SegmentFile::verify_releasing`): verifying a
    /// large output does not grow the process's resident memory.
    pub(super) fn open_verified(&self, id: u64) -> Result<Arc<Segment>> {
        let seg = Segment::open(
            &self.shared.options.io,
            &self.shared.dir,
            id,
            self.shared.db_id,
        )?;
        seg.file.verify_releasing()?;
        Ok(seg)
    }

    /// Creates the WAL after `w`'s (fsynced with its directory), whose first record will be
    /// `start_lsn`; returns its sequence number and the file.
    fn create_next_wal(&self, w: &Writer, start_lsn: u64) -> Result<(u64, WalFile)> {
        let (io, dir) = (self.shared.io(), &self.shared.dir);
        let wal_seq = w.manifest.wal_seq + 1;
        let wal_name = wal_file_name(wal_seq);
        // An unreferenced file of that name can only be a leftover of a crashed checkpoint.
        let _ = io.remove_file(&dir.join(&wal_name));
        let header = WalHeader::new(self.shared.db_id, wal_seq, start_lsn);
        Ok((wal_seq, WalFile::create(io, dir, &wal_name, header)?))
    }

    /// Checkpoint (and automatic compaction) with the writer mutex held. An I/O failure
    /// poisons the handle.
    pub(super) fn checkpoint_locked(&self, w: &mut Writer) -> Result<CheckpointReport> {
        let r = self.checkpoint_guarded(w);
        w.poison_on_io("checkpoint", r)
    }

    fn checkpoint_guarded(&self, w: &mut Writer) -> Result<CheckpointReport> {
        let _g = self.maintenance_guard(w)?;
        let r = self.checkpoint_held(w)?;
        if w.state.segs.segments.len() > self.shared.options.compaction_segments_max {
            // The checkpoint stands; a failed compaction is reported through `stats` and,
            // when it failed on I/O, poisons the handle like any other failed disk change.
            let compacted = self.compact_held(w);
            if let Err(e) = w.poison_on_io("automatic compaction", compacted) {
                w.last_maintenance_error = Some(format!("automatic compaction failed: {e}"));
            }
        }
        Ok(r)
    }

    /// Checkpoint with the lock held and the writer caught up.
    pub(super) fn checkpoint_held(&self, w: &mut Writer) -> Result<CheckpointReport> {
        let st = w.state.clone();
        if st.delta.is_empty() && w.wal_end == WalFile::data_start() {
            return Ok(CheckpointReport {
                lsn: st.lsn,
                ..CheckpointReport::default()
            });
        }
        let dir = &self.shared.dir;
        let content = delta_content(&st, self.shared.options.vector_graph_min);
        let (edges, nodes) = (content.edges.len() as u64, content.nodes.len() as u64);
        let seg_id = w.manifest.next_segment_id;
        let io = self.shared.io();
        let bytes = write_segment(io, dir, seg_id, self.shared.db_id, st.lsn, content)?;
        let seg = self.open_verified(seg_id)?;
        let (wal_seq, wal) = self.create_next_wal(w, st.lsn + 1)?;
        let mut segments = st.segs.segments.clone();
        segments.push(seg);
        let lsn = st.lsn;
        // The replaced state (and its delta) must be freed by `publish`'s retirement, off
        // the writer mutex, not by this reference at the end of the function.
        drop(st);
        let m = Manifest {
            generation: w.manifest.generation + 1,
            wal_seq,
            checkpoint_lsn: lsn,
            checkpoint_time_ms: now_ms(),
            next_segment_id: seg_id + 1,
            segments: segments.iter().map(|s| s.file.id).collect(),
            ..w.manifest.clone()
        };
        self.switch_manifest(
            w,
            m,
            State::from_segments(SegmentSet::new(segments), 0, lsn),
            Some(wal),
        )?;
        Ok(CheckpointReport {
            segment: Some(seg_id),
            lsn,
            edges,
            nodes,
            bytes,
            carried: 0,
        })
    }

    /// Makes `m` the manifest (the commit point of checkpoint, compaction and bulk load) and
    /// publishes `state` (whose generation is set here). With a new WAL, the old one is
    /// deleted afterwards.
    pub(super) fn switch_manifest(
        &self,
        w: &mut Writer,
        m: Manifest,
        mut state: State,
        wal: Option<WalFile>,
    ) -> Result<()> {
        let dir = &self.shared.dir;
        let io = self.shared.io();
        write_atomic(io, dir, MANIFEST_FILE, &m.encode())?;
        state.generation = m.generation;
        let old_segments: Vec<Arc<Segment>> = w.state.segs.segments.clone();
        for s in &old_segments {
            if !m.segments.contains(&s.file.id) {
                s.file.mark_obsolete();
            }
        }
        if let Some(wal) = wal {
            let old = w.wal.path().to_owned();
            w.wal = wal;
            w.wal_end = WalFile::data_start();
            // Other processes may still read the old WAL through open descriptors.
            let _ = io.remove_file(&old);
        }
        w.manifest = m;
        w.manifest_stamp = stamp(io, &dir.join(MANIFEST_FILE))?;
        w.state = Arc::new(state);
        self.publish(w);
        Ok(())
    }

    /// Merges all segments into one, dropping deleted edges and nodes; a store of one
    /// segment written in an older format is rewritten in the current one (how a store is
    /// upgraded). Nothing to do: one current-format segment without tombstones.
    ///
    /// The merge runs without the locks, so writers and checkpoints go on meanwhile (a
    /// commit never waits for a compaction's reading and writing): under the locks this
    /// notes which segments to merge and reserves the id the merged segment will take,
    /// then writes the merged segment under a private staging name, then takes the locks
    /// again and, if the segment list still begins with the merged segments (checkpoints
    /// may have appended newer ones, which stay after the merged segment), renames it into
    /// place and switches the manifest (the commit point). If another compaction or a bulk
    /// load changed the list meanwhile, it discards the staged file and merges again under
    /// the locks. See DESIGN.md §6.
    ///
    /// # Errors
    /// I/O errors; `ReadOnly`; `WriterPoisoned`. An error before the final step changes
    /// nothing and leaves the handle usable.
    pub fn compact(&self) -> Result<CompactReport> {
        let (st, seg_id) = {
            let mut w = self.shared.writer.lock();
            let r = self.maintenance_guard(&mut w).map(|_g| {
                let seg_id = w.manifest.next_segment_id;
                // Reserved in memory, as a checkpoint does (see `checkpoint`).
                w.manifest.next_segment_id += 1;
                (w.state.clone(), seg_id)
            });
            w.poison_on_io("compaction", r)?
        };
        let Some(merged) = merge_content(&st, self.shared.options.vector_graph_min)? else {
            return Ok(CompactReport::default());
        };
        let staging = format!(
            "{}.compact-{}-{}.tmp",
            crate::storage::segment_file_name(seg_id),
            std::process::id(),
            now_ms()
        );
        let dir = &self.shared.dir;
        let io = self.shared.io();
        let (edges, dropped, lsn, segments) =
            (merged.edges, merged.dropped, merged.lsn, merged.segments);
        let bytes = match write_segment_staged(
            io,
            dir,
            &staging,
            seg_id,
            self.shared.db_id,
            lsn,
            merged.content,
        ) {
            Ok(b) => b,
            Err(e) => {
                // Nothing shared was touched: the handle stays usable.
                let _ = io.remove_file(&dir.join(&staging));
                return Err(e);
            }
        };
        let mut w = self.shared.writer.lock();
        let r = self.maintenance_guard(&mut w).and_then(|_g| {
            // Checkpoints may have appended segments meanwhile: they stay, after the merged
            // one (their data is newer). Anything else (another compaction, a bulk load,
            // another process's change) means merging again under the locks.
            let unchanged = w.manifest.next_segment_id > seg_id
                && !w.manifest.segments.contains(&seg_id)
                && starts_with_segments(&w.state.segs, &st.segs);
            if !unchanged {
                let _ = io.remove_file(&dir.join(&staging));
                return self.compact_held(&mut w);
            }
            let newer: Vec<Arc<Segment>> = w.state.segs.segments[st.segs.segments.len()..].to_vec();
            publish_staged_segment(io, dir, &staging, seg_id)?;
            let seg = self.open_verified(seg_id)?;
            let mut kept = vec![seg];
            kept.extend(newer);
            let m = Manifest {
                generation: w.manifest.generation + 1,
                segments: kept.iter().map(|s| s.file.id).collect(),
                ..w.manifest.clone()
            };
            let mut state = State::clone(&w.state);
            state.segs = Arc::new(SegmentSet::new(kept));
            self.switch_manifest(&mut w, m, state, None)?;
            Ok(CompactReport {
                segments_merged: segments,
                segment: Some(seg_id),
                edges,
                edges_dropped: dropped,
                bytes,
            })
        });
        w.poison_on_io("compaction", r)
    }

    /// Compaction with the writer mutex and lock held (the commit path's automatic one,
    /// and the fallback of [`Database::compact`]).
    fn compact_held(&self, w: &mut Writer) -> Result<CompactReport> {
        let st = w.state.clone();
        let Some(merged) = merge_content(&st, self.shared.options.vector_graph_min)? else {
            return Ok(CompactReport::default());
        };
        let dir = &self.shared.dir;
        let seg_id = w.manifest.next_segment_id;
        let bytes = write_segment(
            self.shared.io(),
            dir,
            seg_id,
            self.shared.db_id,
            merged.lsn,
            merged.content,
        )?;
        let seg = self.open_verified(seg_id)?;
        let m = Manifest {
            generation: w.manifest.generation + 1,
            next_segment_id: seg_id + 1,
            segments: vec![seg_id],
            ..w.manifest.clone()
        };
        let mut state = State::clone(&st);
        state.segs = Arc::new(SegmentSet::new(vec![seg]));
        self.switch_manifest(w, m, state, None)?;
        Ok(CompactReport {
            segments_merged: merged.segments,
            segment: Some(seg_id),
            edges: merged.edges,
            edges_dropped: merged.dropped,
            bytes,
        })
    }

    /// Checks every file completely: each segment's checksums and ids, every WAL record.
    ///
    /// Each segment is read through its mapping and its pages are dropped from this
    /// process's mapping behind the scan (`SegmentFile::verify_releasing`), so checking a
    /// database larger than memory does not fill the process's resident memory with it.
    /// Queries running beside the check still read the same bytes; pages they had in
    /// their working set fault back in (from the page cache, usually).
    ///
    /// # Errors
    /// `Corrupt` naming the file and offset of the first problem; I/O errors.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.verify_with_progress(&|_, _, _| {})
    }

    /// [`Database::verify`], reporting how far it has got to `progress` as it goes:
    /// `(phase, done, total)` in bytes of segments for [`VerifyPhase::Checksums`] and
    /// [`VerifyPhase::Contents`] (the content checks read at most `total`, usually less:
    /// their last report is `(Contents, total, total)`), in records for
    /// [`VerifyPhase::Wal`]. Called often from the verifying threads: keep it cheap.
    ///
    /// # Errors
    /// As [`Database::verify`].
    pub fn verify_with_progress(&self, progress: VerifyProgress<'_>) -> Result<VerifyReport> {
        let snap = self.snapshot();
        let mut report = VerifyReport::default();
        let total: u64 = snap
            .state
            .segs
            .segments
            .iter()
            .map(|s| s.file.len_bytes())
            .sum();
        let mut before = 0;
        for s in &snap.state.segs.segments {
            let len = s.file.len_bytes();
            // Each pass reports at most the file's length, and the length when it is done.
            let at = |n: u64| before + n.min(len);
            s.file.verify_releasing_reporting(
                &|n| progress(VerifyPhase::Checksums, at(n), total),
                &|n| progress(VerifyPhase::Contents, at(n), total),
            )?;
            before += len;
            report.segments += 1;
            report.bytes += len;
        }
        let w = self.shared.writer.lock();
        let scan = w
            .wal
            .scan(WalFile::data_start(), w.manifest.checkpoint_lsn + 1)?;
        let records = scan.records.len() as u64;
        for (i, (lsn, range)) in scan.records.iter().enumerate() {
            if i.is_multiple_of(1024) {
                progress(VerifyPhase::Wal, i as u64, records);
            }
            crate::format::record::decode_commit(&scan.buf[range.clone()]).map_err(|e| {
                Error::corrupt(
                    w.wal.path(),
                    WalFile::data_start() + range.start as u64,
                    format!("record LSN {lsn}: {}", e.what),
                )
            })?;
        }
        progress(VerifyPhase::Wal, records, records);
        report.wal_records = records;
        report.wal_trailing_bytes = scan.trailing_bytes;
        report.bytes += scan.end;
        Ok(report)
    }

    /// The deep check of the text indexes: each segment's is rebuilt from the segment's
    /// node records with this build's analysis and compared with the stored one, byte for
    /// byte. [`Database::verify`]'s checksums catch damage to the bytes; this catches an
    /// index that was written wrong (a bug in analysis or in one of the paths that build
    /// an index). Segments of an earlier format are listed, not compared.
    ///
    /// Costs about what building the indexes cost (every record is analysed again), and
    /// memory for one segment's rebuilt index (about the size of its text sections).
    /// `progress` gets `(VerifyPhase::TextIndex, records done, records in all segments)`.
    /// The delta (writes since the last checkpoint) is not covered: its index is rebuilt
    /// from the log at every open.
    ///
    /// # Errors
    /// `Corrupt` naming the segment file and the first section that differs; `Corrupt`
    /// for a record that does not decode.
    pub fn verify_text_index(&self, progress: VerifyProgress<'_>) -> Result<TextIndexReport> {
        let snap = self.snapshot();
        let segments = &snap.state.segs.segments;
        let total: u64 = segments
            .iter()
            .map(|s| s.file.layout.summary.node_records)
            .sum();
        let mut report = TextIndexReport::default();
        let mut before = 0;
        for s in segments {
            let seen = |n: u64| progress(VerifyPhase::TextIndex, before + n, total);
            match recheck_text_index(s, &seen)? {
                Rechecked::Equal { records } => {
                    report.segments += 1;
                    report.records += records;
                }
                Rechecked::NoIndex => {}
                Rechecked::OlderFormat { version } => {
                    report.older_format.push((s.file.id, version));
                }
            }
            before += s.file.layout.summary.node_records;
        }
        progress(VerifyPhase::TextIndex, total, total);
        Ok(report)
    }

    /// Counts, storage state and what recovery did.
    ///
    /// # Errors
    /// I/O errors reading the directory.
    pub fn stats(&self) -> Result<Stats> {
        let snap = self.snapshot();
        let st = &snap.state;
        let w = self.shared.writer.lock();
        let mut disk_bytes = 0;
        let (io, dir): (&dyn Io, _) = (self.shared.io(), &self.shared.dir);
        for name in io.read_dir(dir).map_err(|e| Error::io(dir, e))? {
            disk_bytes += io.metadata(&dir.join(name)).map(|m| m.len()).unwrap_or(0);
        }
        Ok(Stats {
            nodes: st.live_nodes,
            edges: st.live_edges(),
            edge_types: st
                .types
                .iter()
                .zip(st.type_counts.iter())
                .map(|(n, c)| (n.to_string(), *c))
                .collect(),
            segments: st
                .segs
                .segments
                .iter()
                .map(|s| (s.file.id, s.file.len_bytes(), s.edge_rows()))
                .collect(),
            segment_formats: st
                .segs
                .segments
                .iter()
                .map(|s| s.file.layout.version)
                .collect(),
            wal_bytes: w.wal.file_len()?,
            disk_bytes,
            lsn: st.lsn,
            checkpoint_lsn: st.checkpoint_lsn,
            last_checkpoint_ms: w.manifest.checkpoint_time_ms,
            generation: w.manifest.generation,
            recovery: self.shared.recovery.lock().clone(),
            maintenance_error: w.last_maintenance_error.clone(),
        })
    }
}

/// What [`Database::checkpoint`] noted under the locks before writing without them.
struct Frozen {
    /// The state whose delta becomes the segment.
    state: Arc<State>,
    /// The segment id reserved for it.
    seg_id: u64,
    /// The WAL it was read from, and the end of the records it covers.
    wal_seq: u64,
    wal_end: u64,
}

/// The delta of `st` as the content of one segment (its vectors get a graph from
/// `vector_graph_min` on).
fn delta_content(st: &State, vector_graph_min: usize) -> SegmentContent<'static> {
    let mut content = SegmentContent {
        summary: summary_of(st),
        embedding_dim: st.embedding_dim(),
        vector_graph_min: Some(vector_graph_min),
        ..SegmentContent::default()
    };
    for node in st.delta.nodes.values() {
        content.push_node_record(node);
    }
    // The delta's text index holds exactly the live delta nodes' entries, as analysis
    // made them: written term by term instead of analyzing every text again (which
    // was most of a checkpoint's time).
    st.delta.text.write_into(&mut content.text);
    for e in st.delta.edges.values() {
        content.edges.push_edge(e);
    }
    content.edge_validity = st
        .delta
        .edge_validity
        .iter()
        .map(|(&id, &(from, to))| [id, from, crate::format::record::valid_to_code(to)])
        .collect();
    content.edge_tombstones = st.delta.deleted_edges.iter().copied().collect();
    content.node_tombstones = st.delta.deleted_nodes.iter().copied().collect();
    content
}

/// The merged content of every segment of `st`, or `None` when there is nothing to merge.
struct Merged<'a> {
    content: SegmentContent<'a>,
    /// Live edges kept.
    edges: u64,
    /// Tombstoned edges dropped.
    dropped: u64,
    /// The LSN the merged segment covers (the newest merged segment's).
    lsn: u64,
    /// Segments merged.
    segments: usize,
}

/// Reads every live edge and the newest record of every live node out of `st`'s segments;
/// `None` when there is nothing to gain: one segment, no tombstones, and written in the
/// current format (an older one is rewritten, so compaction also upgrades a store). The
/// vectors get a graph from `vector_graph_min` on.
fn merge_content(st: &State, vector_graph_min: usize) -> Result<Option<Merged<'static>>> {
    let segs = &st.segs;
    let tombstoned = !segs.edge_tombstones.is_empty() || !segs.node_tombstones.is_empty();
    let old_format = segs
        .segments
        .iter()
        .any(|s| s.file.layout.version < crate::format::FORMAT_VERSION);
    if segs.segments.len() < 2 && !tombstoned && !old_format {
        return Ok(None);
    }
    let Some(last) = segs.segments.last() else {
        return Ok(None);
    };
    let mut content = SegmentContent {
        summary: last.summary().clone(),
        embedding_dim: st.embedding_dim(),
        vector_graph_min: Some(vector_graph_min),
        ..SegmentContent::default()
    };
    let mut dropped = 0u64;
    for s in &segs.segments {
        for row in 0..usize::try_from(s.edge_rows()).unwrap_or(0) {
            let Some(mut e) = s.edge_at(row)? else {
                continue;
            };
            if segs.edge_tombstones.contains(e.id.0) {
                dropped += 1;
                continue;
            }
            // A newer segment may have changed the edge's interval: the merged row
            // carries the newest (the delta's changes stay in the delta).
            if segs.timed_edges.contains(e.id.0)
                && let Some((from, to)) = segs
                    .segments
                    .iter()
                    .rev()
                    .find_map(|x| x.edge_validity_change(e.id))
            {
                (e.valid_from, e.valid_to) = (from, to);
            }
            content.edges.push_edge(&e);
        }
    }
    // The newest record of each node wins; deleted nodes are dropped.
    let mut taken = roaring::RoaringBitmap::new();
    for s in segs.segments.iter().rev() {
        for &id in s.node_ids() {
            if segs.node_tombstones.contains(id) || !taken.insert(id) {
                continue;
            }
            if let Some(n) = s.node(NodeId(id))? {
                content.push_node(&n);
            }
        }
    }
    Ok(Some(Merged {
        edges: content.edges.len() as u64,
        content,
        dropped,
        lsn: last.file.layout.lsn,
        segments: segs.segments.len(),
    }))
}

/// Whether `a`'s segment files begin with all of `b`'s, in the same order.
fn starts_with_segments(a: &SegmentSet, b: &SegmentSet) -> bool {
    a.segments.len() >= b.segments.len()
        && a.segments
            .iter()
            .zip(&b.segments)
            .all(|(x, y)| x.file.id == y.file.id)
}
