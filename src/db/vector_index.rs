//! Adding the HNSW graph to segments whose vectors were stored flat.
//!
//! A bulk load may leave a large segment's vectors without their graph
//! ([`BulkLoad::defer_vector_graph`](super::BulkLoad::defer_vector_graph)): vector
//! searches then scan that segment exactly. [`Database::index_vectors`] builds the missing
//! graphs, one segment at a time, the way compaction merges: under the locks it notes the
//! segment and reserves the id of its replacement; without them it builds the graph from
//! the segment's mapped rows (minutes at a million vectors: writers, checkpoints and
//! readers go on meanwhile) and writes the replacement under a private staging name —
//! every section of the old file copied byte for byte (each checked against its checksum
//! as it is copied, so damage is refused, not laundered), `VectorMeta` rewritten and the
//! three HNSW sections appended; then, under the locks again, if the segment is still in
//! the manifest, it renames the replacement into place and switches the manifest with the
//! replacement at the old segment's position (the commit point). If a compaction or
//! another process's index build replaced the segment meanwhile, the staged file is
//! dropped and nothing changes. The graph's levels are seeded from the old segment's id,
//! so the graph is the one an immediate build would have made. One build runs at a time
//! per database: a call holds the index lock (`flock` on `INDEX.LOCK`, and a mutex for
//! the threads of one handle) throughout, so a second process's call waits and then
//! finds the graphs built, instead of building graphs of which one would be dropped.

use std::sync::Arc;

use super::commit::now_ms;
use super::handle::Database;
use super::segment::Segment;
use super::state::{SegmentSet, State};
use super::vector::{build_graph_reporting, graph_meta, segment_rows, wants_graph, write_graph};
use crate::error::{Error, Result};
use crate::format::manifest::Manifest;
use crate::format::segment::SectionKind as K;
use crate::storage::lock::WriterLock;
use crate::storage::segment_file::{SegmentStamp, publish_staged_segment, write_segment_staged};

/// What [`Database::index_vectors`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VectorIndexReport {
    /// Segments that got their graph: (old segment id, its replacement's id).
    pub segments: Vec<(u64, u64)>,
    /// Vectors indexed by those graphs.
    pub vectors: u64,
    /// Vectors still stored without a graph that needs one (another process or a
    /// compaction replaced a segment while its graph was being built).
    pub pending: u64,
}

/// Whether `s` holds vectors that should have a graph (at least `min`) and have none.
fn awaits_graph(s: &Segment, min: usize) -> bool {
    s.vector_meta.as_ref().is_some_and(|m| {
        m.dim > 0 && m.layer_sizes.is_empty() && wants_graph(m.count as usize, min)
    })
}

impl Database {
    /// Vectors stored in segments without the HNSW graph their number calls for (a bulk
    /// load with [`BulkLoad::defer_vector_graph`](super::BulkLoad::defer_vector_graph)):
    /// searches scan them exactly until [`Database::index_vectors`] runs. O(segments).
    pub fn vectors_awaiting_index(&self) -> u64 {
        let snap = self.snapshot();
        snap.state
            .segs
            .segments
            .iter()
            .filter(|s| awaits_graph(s, self.shared.options.vector_graph_min))
            .filter_map(|s| s.vector_meta.as_ref())
            .map(|m| u64::from(m.count))
            .sum()
    }

    /// Builds the HNSW graph of every segment whose vectors were stored flat (see the
    /// module doc of `vector_index` and DESIGN.md §14). Writers, checkpoints and readers
    /// are not held up by the build; each segment's replacement commits atomically. Does
    /// nothing when no segment awaits a graph.
    ///
    /// One build runs at a time per database: a call made while another handle or process
    /// builds (see [`Database::vector_index_build_running`]) waits for it to end, then
    /// builds what is left (usually nothing), instead of building graphs of which only
    /// one could be kept.
    ///
    /// # Errors
    /// I/O errors; `Corrupt` when a copied section fails its checksum; `ReadOnly`;
    /// `WriterPoisoned`. An error before a segment's final step changes nothing and leaves
    /// the handle usable.
    pub fn index_vectors(&self) -> Result<VectorIndexReport> {
        self.index_vectors_reporting(&mut |_, _| {})
    }

    /// [`Database::index_vectors`], telling `progress` `(vectors in a graph so far, vectors
    /// awaiting one when the call began)` as the graphs grow: from the calling thread,
    /// after each batch of rows linked (at most 256); the last report has `done == total`
    /// unless a segment was replaced meanwhile.
    ///
    /// # Errors
    /// As [`Database::index_vectors`].
    pub fn index_vectors_reporting(
        &self,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<VectorIndexReport> {
        if self.vectors_awaiting_index() == 0 {
            return Ok(VectorIndexReport::default());
        }
        let lock_file = self.index_lock_file()?;
        let _in_process = self.shared.indexing.lock();
        let _between_processes = lock_file.lock()?;
        // What waits once the lock is held: another build may have ended meanwhile (a
        // snapshot reads a changed manifest).
        let total = self.vectors_awaiting_index();
        let mut report = VectorIndexReport::default();
        // Segments tried in this call: one replaced meanwhile is not tried again.
        let mut tried: Vec<u64> = Vec::new();
        loop {
            let picked = {
                let mut w = self.shared.writer.lock();
                let r = self.maintenance_guard(&mut w).map(|_g| {
                    let seg = w
                        .state
                        .segs
                        .segments
                        .iter()
                        .find(|s| {
                            awaits_graph(s, self.shared.options.vector_graph_min)
                                && !tried.contains(&s.file.id)
                        })
                        .cloned();
                    seg.map(|seg| {
                        let new_id = w.manifest.next_segment_id;
                        // Reserved in memory, as compaction does.
                        w.manifest.next_segment_id += 1;
                        (seg, new_id)
                    })
                });
                w.poison_on_io("vector index", r)?
            };
            let Some((old, new_id)) = picked else { break };
            tried.push(old.file.id);
            let count = old.vector_meta.as_ref().map_or(0, |m| u64::from(m.count));
            let before = report.vectors + report.pending;
            let mut rows_done = |rows: usize| {
                progress((before + rows as u64).min(total), total);
            };
            if self.replace_with_graph(&old, new_id, &mut rows_done)? {
                report.segments.push((old.file.id, new_id));
                report.vectors += count;
            } else {
                report.pending += count;
            }
        }
        Ok(report)
    }

    /// Whether another handle (of this process or another) is building vector graphs for
    /// this database now ([`Database::index_vectors`]): a call would wait for it. False on
    /// a read-only handle or when the lock file cannot be opened.
    pub fn vector_index_build_running(&self) -> bool {
        let Ok(lock_file) = self.index_lock_file() else {
            return false;
        };
        let Some(_in_process) = self.shared.indexing.try_lock() else {
            return true;
        };
        matches!(lock_file.try_lock(), Ok(None))
    }

    /// The index lock file (`INDEX.LOCK`), opened (created if missing) for this call.
    fn index_lock_file(&self) -> Result<WriterLock> {
        if self.shared.lock.is_none() {
            return Err(Error::ReadOnly);
        }
        WriterLock::open_named(
            self.shared.io(),
            &self.shared.dir,
            crate::storage::INDEX_LOCK_FILE,
        )
    }

    /// Writes segment `old` again as segment `new_id` with its graph and, if `old` is still
    /// in the manifest, puts the new one in its place. Answers whether it did.
    fn replace_with_graph(
        &self,
        old: &Arc<Segment>,
        new_id: u64,
        progress: &mut dyn FnMut(usize),
    ) -> Result<bool> {
        let dir = &self.shared.dir;
        let io = self.shared.io();
        let staging = format!(
            "{}.index-{}-{}.tmp",
            crate::storage::segment_file_name(new_id),
            std::process::id(),
            now_ms()
        );
        let written = write_with_graph(self, old, new_id, &staging, progress);
        if let Err(e) = written {
            let _ = io.remove_file(&dir.join(&staging));
            return Err(e);
        }
        let mut w = self.shared.writer.lock();
        let r = self.maintenance_guard(&mut w).and_then(|_g| {
            let at = w
                .state
                .segs
                .segments
                .iter()
                .position(|s| s.file.id == old.file.id);
            let Some(at) = at.filter(|_| !w.manifest.segments.contains(&new_id)) else {
                let _ = io.remove_file(&dir.join(&staging));
                return Ok(false);
            };
            publish_staged_segment(io, dir, &staging, new_id)?;
            let seg = self.open_verified(new_id)?;
            let mut segments = w.state.segs.segments.clone();
            segments[at] = seg;
            let m = Manifest {
                generation: w.manifest.generation + 1,
                segments: segments.iter().map(|s| s.file.id).collect(),
                ..w.manifest.clone()
            };
            let mut state = State::clone(&w.state);
            state.segs = Arc::new(SegmentSet::new(segments));
            self.switch_manifest(&mut w, m, state, None)?;
            Ok(true)
        });
        w.poison_on_io("vector index", r)
    }
}

/// Writes `old` with its HNSW graph as segment `new_id` under the staging name `staging`.
fn write_with_graph(
    db: &Database,
    old: &Segment,
    new_id: u64,
    staging: &str,
    progress: &mut dyn FnMut(usize),
) -> Result<u64> {
    let file = &old.file;
    let b = file.bytes();
    let layout = &file.layout;
    let meta = old
        .vector_meta
        .as_ref()
        .ok_or_else(|| Error::invalid("segment has no vector sections"))?;
    let a = layout.vector_arrays(b);
    let vectors = segment_rows(&a, meta.dim as usize, layout.version);
    if vectors.len() != meta.count as usize || a.ids.len() != meta.count as usize {
        return Err(Error::corrupt(
            file.path(),
            0,
            "vector sections disagree with VectorMeta's count",
        ));
    }
    // Every section is checked before minutes of work (and again as it is copied).
    file.verify()?;
    let graph = build_graph_reporting(vectors, file.id, progress);
    let new_meta = graph_meta(meta.dim, meta.count, Some(&graph));
    let entries = layout.entries();
    let mut bad: Option<(usize, K)> = None;
    let bad_slot = &mut bad;
    let stamp = SegmentStamp {
        id: new_id,
        db_id: db.shared.db_id,
        lsn: layout.lsn,
        // The copied sections keep the format they were written in.
        version: layout.version,
    };
    let r = write_segment_staged(db.shared.io(), &db.shared.dir, staging, stamp, move |enc| {
        for (kind, entry) in &entries {
            if matches!(kind, K::HnswOffsets | K::HnswNeighbors | K::HnswMembers) {
                continue;
            }
            if *kind == K::VectorMeta {
                enc.section(K::VectorMeta, &new_meta.encode())?;
                continue;
            }
            let bytes = b.get(entry.range.clone()).unwrap_or(&[]);
            if crc32fast::hash(bytes) != entry.crc {
                *bad_slot = Some((entry.range.start, *kind));
                return Err(std::io::Error::other("section checksum mismatch"));
            }
            // Keep each section's alignment (the key hash table's 16 bytes; every
            // other section needs 8, which the encoder always gives).
            if entry.range.start % 16 == 0 {
                enc.align(16)?;
            }
            enc.section(*kind, bytes)?;
        }
        write_graph(enc, &graph)
    });
    match (r, bad) {
        (_, Some((at, kind))) => Err(Error::corrupt(
            file.path(),
            at as u64,
            format!("section {kind:?} fails its checksum; run `hopgraph check`"),
        )),
        (r, None) => r,
    }
}
