//! Opening, recovery, and catching up with commits made through other handles.
//!
//! One routine serves all three: load the state named by the manifest (segments plus an
//! empty delta), then apply the WAL records after the last known position. At open that
//! replays the whole WAL tail; later, a writer (under the lock) or a snapshot refresh
//! applies just the records other processes appended since. A changed manifest
//! (a checkpoint or compaction elsewhere) makes the handle reload from the new manifest,
//! reusing the segments it has mapped already.

use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::handle::{Database, Probe, Shared, Writer};
use super::options::Options;
use super::segment::Segment;
use super::state::{SegmentSet, State};
use crate::error::{Error, Result};
use crate::format::manifest::Manifest;
use crate::format::record::decode_commit;
use crate::format::wal::WalHeader;
use crate::format::{FORMAT_VERSION, FORMAT_VERSION_MIN};
use crate::storage::fs::{create_dir_durable, sync_dir, write_atomic};
use crate::storage::io::Io;
use crate::storage::lock::WriterLock;
use crate::storage::wal::{WalFile, WalScan};
use crate::storage::{MANIFEST_FILE, segment_file_name, wal_file_name};
use crate::sync::{Mutex, Published};

/// What opening (recovery) found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecoveryReport {
    /// The database was created by this open.
    pub created: bool,
    /// Segments mapped.
    pub segments: usize,
    /// WAL records replayed into the delta.
    pub wal_records_replayed: u64,
    /// WAL bytes those records took.
    pub wal_bytes_replayed: u64,
    /// Bytes of a torn last record that were discarded (truncated by a writer handle).
    pub torn_tail_bytes: u64,
    /// Why the torn tail was not a valid record.
    pub torn_tail_reason: Option<String>,
    /// Leftover files removed (temporary files, unreferenced segments and WALs).
    pub files_removed: Vec<String>,
}

/// Identity of a file version: replacing a file by rename changes the inode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FileStamp {
    ino: u64,
    len: u64,
    mtime_ns: i64,
}

pub(crate) fn stamp(io: &dyn Io, path: &Path) -> Result<FileStamp> {
    let m = io.metadata(path).map_err(|e| Error::io(path, e))?;
    Ok(FileStamp {
        ino: m.ino(),
        len: m.len(),
        mtime_ns: m
            .mtime()
            .saturating_mul(1_000_000_000)
            .saturating_add(m.mtime_nsec()),
    })
}

fn read_manifest(io: &dyn Io, dir: &Path) -> Result<(Manifest, FileStamp)> {
    let path = dir.join(MANIFEST_FILE);
    // Stamp first: if the file is replaced between the two calls, the stamp is stale and the
    // next check reloads again, which is harmless.
    let st = stamp(io, &path)?;
    let bytes = io.read(&path).map_err(|e| Error::io(&path, e))?;
    let m = Manifest::decode(&bytes).map_err(|e| Error::corrupt(&path, e.offset as u64, e.what))?;
    if !(FORMAT_VERSION_MIN..=FORMAT_VERSION).contains(&m.version) {
        return Err(Error::UnsupportedVersion {
            path,
            found: m.version,
            min: FORMAT_VERSION_MIN,
            max: FORMAT_VERSION,
        });
    }
    Ok((m, st))
}

/// A random database id (the 128 bits of a version-4 UUID).
fn new_db_id() -> u128 {
    uuid::Uuid::new_v4().as_u128()
}

/// Names of leftovers a crash while creating a database can leave in its directory: the
/// lock file, a first WAL, temporary files. Anything else means the directory holds
/// something that is not (yet) a hopgraph database.
fn creation_leftover(name: &str) -> bool {
    name == crate::storage::LOCK_FILE
        || name.ends_with(".tmp")
        || (name.starts_with("wal-") && name.ends_with(".log"))
}

/// Refuses to create a database in a directory holding anything but creation leftovers.
/// Returns the leftovers other than the lock file.
fn check_creatable(io: &dyn Io, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut leftovers = Vec::new();
    for name in io.read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let name = name.to_string_lossy().into_owned();
        if !creation_leftover(&name) {
            return Err(Error::not_a_database(
                dir,
                format!(
                    "not empty and holds no hopgraph database (found {name:?}, no MANIFEST); \
                     choose an empty or new directory"
                ),
            ));
        }
        if name != crate::storage::LOCK_FILE {
            leftovers.push(dir.join(name));
        }
    }
    Ok(leftovers)
}

/// Creates an empty database in `dir` (the caller holds the writer lock): the first WAL
/// (fsynced, directory fsynced), then the manifest naming it (the commit point). On failure
/// before the manifest is in place, the WAL is removed again (best effort).
fn create(io: &dyn Io, dir: &Path, report: &mut RecoveryReport) -> Result<()> {
    for p in check_creatable(io, dir)? {
        io.remove_file(&p).map_err(|e| Error::io(&p, e))?;
        report.files_removed.push(p.display().to_string());
    }
    let db_id = new_db_id();
    let wal_name = wal_file_name(1);
    WalFile::create(io, dir, &wal_name, WalHeader::new(db_id, 1, 1))?;
    if let Err(e) = write_atomic(io, dir, MANIFEST_FILE, &Manifest::new(db_id).encode()) {
        // Once the rename happened (only the directory fsync failed) the database exists
        // and its WAL must stay. Before it, these are leftovers the next creation removes
        // anyway.
        if io
            .metadata(&dir.join(MANIFEST_FILE))
            .is_err_and(|e| e.kind() == ErrorKind::NotFound)
        {
            let _ = io.remove_file(&dir.join(format!("{MANIFEST_FILE}.tmp")));
            let _ = io.remove_file(&dir.join(&wal_name));
        }
        return Err(e);
    }
    // The directory may have been made just before by someone who did not fsync its
    // parent; the database is durable only once the directory's own entry is.
    if let Some(parent) = dir.parent() {
        sync_dir(io, parent)?;
    }
    report.created = true;
    Ok(())
}

/// Loads the state a manifest describes, reusing already mapped segments from `old`.
fn load(
    io: &Arc<dyn Io>,
    dir: &Path,
    m: &Manifest,
    old: Option<&State>,
    writable: bool,
) -> Result<(State, WalFile)> {
    let mut segments = Vec::with_capacity(m.segments.len());
    for &id in &m.segments {
        let reused = old.and_then(|s| s.segs.segments.iter().find(|x| x.file.id == id).cloned());
        segments.push(match reused {
            Some(s) => s,
            None => Segment::open(io, dir, id, m.db_id)?,
        });
    }
    if let Some(last) = segments.last()
        && last.file.layout.lsn != m.checkpoint_lsn
    {
        return Err(Error::corrupt(
            last.file.path(),
            0,
            format!(
                "segment covers LSN {}, the manifest says {}",
                last.file.layout.lsn, m.checkpoint_lsn
            ),
        ));
    }
    let state = State::from_segments(SegmentSet::new(segments), m.generation, m.checkpoint_lsn);
    let wal_path = dir.join(wal_file_name(m.wal_seq));
    // A read-only handle opens the WAL read-only: it may lack write permission.
    let wal = WalFile::open(&**io, &wal_path, m.db_id, writable)?;
    if wal.header.wal_seq != m.wal_seq || wal.header.start_lsn != m.checkpoint_lsn + 1 {
        return Err(Error::corrupt(
            &wal_path,
            0,
            format!(
                "WAL header (seq {}, start LSN {}) does not continue the manifest (seq {}, checkpoint LSN {})",
                wal.header.wal_seq, wal.header.start_lsn, m.wal_seq, m.checkpoint_lsn
            ),
        ));
    }
    Ok((state, wal))
}

/// Applies the WAL records after `w.wal_end` to `w.state`. With `may_truncate` (the caller
/// holds the writer lock) a torn tail is truncated away.
fn replay_tail(w: &mut Writer, may_truncate: bool, report: &mut RecoveryReport) -> Result<()> {
    let scan = w.wal.scan(w.wal_end, w.state.lsn + 1)?;
    if !scan.records.is_empty() {
        let mut st = State::clone(&w.state);
        apply_scan(&mut st, &scan, w.wal.path(), w.wal_end)?;
        report.wal_records_replayed += scan.records.len() as u64;
        report.wal_bytes_replayed += scan.end - w.wal_end;
        w.state = Arc::new(st);
        w.wal_end = scan.end;
    }
    if let Some(reason) = scan.torn
        && may_truncate
    {
        report.torn_tail_bytes += scan.trailing_bytes;
        report.torn_tail_reason = Some(reason);
        w.wal.truncate(w.wal_end)?;
    }
    Ok(())
}

/// Applies the records of `scan` (read from `wal_path` at file offset `offset`) to `st`.
pub(super) fn apply_scan(
    st: &mut State,
    scan: &WalScan,
    wal_path: &Path,
    offset: u64,
) -> Result<()> {
    for (lsn, range) in &scan.records {
        let at = offset + range.start as u64 - crate::format::wal::FRAME_LEN as u64;
        let payload = decode_commit(&scan.buf[range.clone()])
            .map_err(|e| Error::corrupt(wal_path, at, format!("record LSN {lsn}: {}", e.what)))?;
        for op in &payload.ops {
            st.apply(op).map_err(|e| {
                // An intact record that does not fit the state means the state is
                // wrong or the record is: blame a segment that fails full
                // verification if there is one, else the log.
                st.segs
                    .segments
                    .iter()
                    .find_map(|s| s.file.verify().err())
                    .unwrap_or_else(|| {
                        Error::corrupt(wal_path, at, format!("record LSN {lsn}: {e}"))
                    })
            })?;
        }
        st.lsn = *lsn;
    }
    Ok(())
}

/// Brings `w` up to date with the files: reloads after a manifest change, then replays
/// the WAL tail.
pub(super) fn catch_up(
    io: &Arc<dyn Io>,
    dir: &Path,
    w: &mut Writer,
    may_truncate: bool,
    report: &mut RecoveryReport,
) -> Result<()> {
    let st = stamp(&**io, &dir.join(MANIFEST_FILE))?;
    if st != w.manifest_stamp {
        let (m, st) = read_manifest(&**io, dir)?;
        if m.generation != w.manifest.generation {
            let (state, wal) = load(io, dir, &m, Some(&w.state), w.writable)?;
            w.state = Arc::new(state);
            w.wal = wal;
            w.wal_end = WalFile::data_start();
            w.manifest = m;
        }
        w.manifest_stamp = st;
    }
    replay_tail(w, may_truncate, report)
}

/// Removes temporary files, segments the manifest does not list and old WALs. The caller
/// holds the writer lock, so no other process is writing any of them.
pub(super) fn collect_garbage(
    io: &dyn Io,
    dir: &Path,
    m: &Manifest,
    report: &mut RecoveryReport,
) -> Result<()> {
    let keep_wal = wal_file_name(m.wal_seq);
    let keep_segs: Vec<String> = m.segments.iter().map(|&s| segment_file_name(s)).collect();
    let mut removed = false;
    for name in io.read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let name = name.to_string_lossy().into_owned();
        let stale = name.ends_with(".tmp")
            || (name.starts_with("wal-") && name.ends_with(".log") && name != keep_wal)
            || (name.starts_with("seg-") && name.ends_with(".hgs") && !keep_segs.contains(&name));
        if stale {
            let path = dir.join(&name);
            io.remove_file(&path).map_err(|e| Error::io(&path, e))?;
            report.files_removed.push(name);
            removed = true;
        }
    }
    if removed {
        sync_dir(io, dir)?;
    }
    Ok(())
}

/// What a failed open removes again, so that it leaves the directory as it found it.
#[derive(Debug, Default)]
struct Undo {
    /// Directories created, outermost first.
    dirs: Vec<PathBuf>,
    /// The lock file, when this open created it.
    lock_file: Option<PathBuf>,
}

impl Undo {
    /// Best effort: a failure leaves an empty lock file or directory, harmless to the next
    /// open.
    fn run(self, io: &dyn Io) {
        if let Some(p) = &self.lock_file {
            let _ = io.remove_file(p);
        }
        for d in self.dirs.iter().rev() {
            let _ = io.remove_dir(d);
        }
    }
}

/// Whether `dir` holds a manifest; refuses a path that exists but is not a directory.
fn has_manifest(io: &dyn Io, dir: &Path) -> Result<bool> {
    match io.metadata(dir) {
        Ok(m) if !m.is_dir() => {
            return Err(Error::not_a_database(
                dir,
                "not a directory; a hopgraph database is a directory",
            ));
        }
        Ok(_) => {}
        // Missing, or below a file: creation (if asked for) reports which component.
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(false);
        }
        Err(e) => return Err(Error::io(dir, e)),
    }
    let path = dir.join(MANIFEST_FILE);
    match io.metadata(&path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Opens the database in `dir`. Everything that can be checked without changing the disk
/// is checked first (path kind, emptiness, manifest version); what a failed open did
/// create (directories, the lock file) is removed again.
pub(super) fn open(dir: &Path, options: Options) -> Result<Database> {
    let io = options.io.clone();
    let mut undo = Undo::default();
    let r = open_inner(dir, options, &mut undo);
    if r.is_err() {
        undo.run(&*io);
    }
    r
}

fn open_inner(dir: &Path, options: Options, undo: &mut Undo) -> Result<Database> {
    let io = options.io.clone();
    let mut report = RecoveryReport::default();
    if has_manifest(&*io, dir)? {
        // Refuse a newer format before the lock file is created.
        read_manifest(&*io, dir)?;
    } else {
        if options.read_only || !options.create_if_missing {
            return Err(Error::not_a_database(
                dir,
                "no hopgraph database here (no MANIFEST file)",
            ));
        }
        if io.metadata(dir).is_ok() {
            check_creatable(&*io, dir)?;
        }
        undo.dirs = create_dir_durable(&*io, dir)?;
    }
    // Path resolution only (reads no file, changes nothing), so not routed through `Io`.
    let dir = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
    let lock = if options.read_only {
        None
    } else {
        let path = dir.join(crate::storage::LOCK_FILE);
        let existed = io.metadata(&path).is_ok();
        let lock = WriterLock::open(&*io, &dir)?;
        if !existed {
            undo.lock_file = Some(path);
        }
        Some(lock)
    };
    if let Some(lock) = &lock
        && !has_manifest(&*io, &dir)?
    {
        let _g = lock.lock()?;
        if !has_manifest(&*io, &dir)? {
            create(&*io, &dir, &mut report)?;
        }
    }
    // A compaction elsewhere can delete a segment between our reading the manifest and
    // mapping it; then the manifest has changed and we simply load again.
    let mut attempt = 0;
    let (m, manifest_stamp, state, wal) = loop {
        let (m, st) = read_manifest(&*io, &dir)?;
        match load(&io, &dir, &m, None, !options.read_only) {
            Ok((state, wal)) => break (m, st, state, wal),
            Err(Error::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound && attempt < 8 =>
            {
                attempt += 1
            }
            Err(e) => return Err(e),
        }
    };
    report.segments = m.segments.len();
    let mut w = Writer {
        state: Arc::new(state),
        wal,
        wal_end: WalFile::data_start(),
        manifest: m,
        manifest_stamp,
        poisoned: None,
        last_maintenance_error: None,
        writable: !options.read_only,
    };
    replay_tail(&mut w, false, &mut report)?;
    if let Some(lock) = &lock {
        // Under the lock a torn tail is really torn (nobody is mid-append), so drop it, and
        // clear leftovers of crashed checkpoints.
        let _g = lock.lock()?;
        catch_up(&io, &dir, &mut w, true, &mut report)?;
        collect_garbage(&*io, &dir, &w.manifest, &mut report)?;
    }
    let probe = Probe {
        manifest_stamp: w.manifest_stamp,
        wal_path: w.wal.path().to_owned(),
        wal_len_seen: w.wal.file_len()?,
    };
    let db_id = w.manifest.db_id;
    let published = Published::new(w.state.clone());
    Ok(Database {
        shared: Arc::new(Shared {
            dir,
            options,
            db_id,
            published,
            writer: Mutex::new(w),
            queue: super::commit::CommitQueue::new(),
            lock,
            recovery: Mutex::new(report),
            probe: Mutex::new(probe),
            checkpointing: Mutex::new(()),
            indexing: Mutex::new(()),
        }),
    })
}

/// Delta size (nodes) from which a replaced state is freed on a thread of its own.
const RETIRE_ON_THREAD_NODES: usize = 1024;

/// Drops `old`, a state just replaced by `new`. Freeing a large delta (its maps and text
/// index are many small allocations: ~100 ms for 5,000 nodes) happened while the writer
/// mutex was held, and every writer waited for it after each checkpoint; so a large delta
/// that `new` no longer shares (a checkpoint replaced it with an empty one) is dropped on a
/// short-lived thread instead. A commit's new delta shares all but the changed paths of
/// the old one (persistent maps), so dropping the old state is cheap and stays here: a
/// thread per commit cost more than it saved. (If a reader still holds the state, the last
/// reader frees it.)
fn retire(old: Arc<State>, new: &State) {
    if old.delta.nodes.len() < RETIRE_ON_THREAD_NODES || old.checkpoint_lsn == new.checkpoint_lsn {
        return;
    }
    // A thread that cannot be started drops the closure, and with it `old`, right here.
    let _ = std::thread::Builder::new()
        .name("hopgraph-retire".to_owned())
        .spawn(move || drop(old));
}

impl Database {
    /// Publishes `w.state` and records what the files look like now.
    pub(super) fn publish(&self, w: &Writer) {
        retire(self.shared.published.store(w.state.clone()), &w.state);
        let mut p = self.shared.probe.lock();
        p.manifest_stamp = w.manifest_stamp;
        p.wal_path = w.wal.path().to_owned();
        p.wal_len_seen = w.wal_end.max(w.wal.file_len().unwrap_or(0));
    }

    /// Cheap check (two `stat` calls) for commits, checkpoints or compactions made through
    /// other handles; when something changed, catch up under the writer mutex.
    pub(super) fn refresh_if_changed(&self) {
        let changed = {
            let p = self.shared.probe.lock();
            let io = self.shared.io();
            let manifest_changed = stamp(io, &self.shared.dir.join(MANIFEST_FILE))
                .map(|s| s != p.manifest_stamp)
                .unwrap_or(true);
            let wal_grew = io
                .metadata(&p.wal_path)
                .map(|m| m.len() > p.wal_len_seen)
                .unwrap_or(true);
            manifest_changed || wal_grew
        };
        if changed {
            let mut w = self.shared.writer.lock();
            let mut report = RecoveryReport::default();
            match catch_up(
                &self.shared.options.io,
                &self.shared.dir,
                &mut w,
                false,
                &mut report,
            ) {
                Ok(()) => self.publish(&w),
                // Keep serving the last good state; the writer path reports the error.
                Err(e) => w.last_maintenance_error = Some(format!("refresh failed: {e}")),
            }
        }
    }
}
